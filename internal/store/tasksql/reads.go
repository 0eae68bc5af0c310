// Package tasksql is the SQL of cron's task store that the SQLite and PostgreSQL drivers
// share: the reads of the jobs' rows and the tasks, and the encoding of instants (Unix
// nanoseconds, NULL for never). The drivers differ in their table names, their
// placeholders and how a query runs.
package tasksql

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store"
)

// RowsScanner is a result set of database/sql or of pgx.
type RowsScanner interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// EachRow calls fn on every row of rows; the caller closes them.
func EachRow(rows RowsScanner, fn func(RowsScanner) error) error {
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Reads are the reads of a task store, in the SQL that SQLite and PostgreSQL share: the two
// stores differ in their table names, their placeholders and how a query runs.
type Reads struct {
	JobsTable, TasksTable string
	// Cols are the task columns, the host last (SQLite has none: '' AS host).
	Cols string
	// PH is the n-th placeholder of a query (from 1).
	PH func(n int) string
	// Each runs q and calls fn on every row.
	Each func(ctx context.Context, q string, fn func(RowsScanner) error, args ...any) error
}

// TaskCols are the columns of a task row, in the order Query scans them (the host after them).
const TaskCols = `id, job, kind, run_key, attempt, slot, due_at, state, reason, queued_at, started_at,
	ended_at, exit_code, signal, http_status, class, error, output`

// LoadJobs reads the jobs' persisted state, how many tasks each job has stored, its last
// ended task and the active tasks. The caller sets NextID.
func (r Reads) LoadJobs(ctx context.Context) (store.CronState, error) {
	snap := store.CronState{Jobs: map[string]*store.CronJob{}}
	err := r.Each(ctx, `SELECT name, schedule, last_slot, enabled, disabled_reason, failures, retry_at, retry_wait,
		retry_of, retry_key, retry_attempt, retry_slot FROM `+r.JobsTable, func(rows RowsScanner) error {
		var j store.CronJob
		var last, rAt, rWait, rOf, rSlot *int64
		var rAttempt *int
		var rKey *string
		if err := rows.Scan(&j.Name, &j.Schedule, &last, &j.Enabled, &j.DisabledReason, &j.Failures,
			&rAt, &rWait, &rOf, &rKey, &rAttempt, &rSlot); err != nil {
			return err
		}
		j.LastSlot = FromPtr(last)
		if rAt != nil {
			j.Retry = &store.PendingRetry{At: FromPtr(rAt), Wait: time.Duration(Deref(rWait)), Of: Deref(rOf),
				RunKey: Deref(rKey), Attempt: Deref(rAttempt), Slot: FromPtr(rSlot)}
		}
		snap.Jobs[j.Name] = &j
		return nil
	})
	if err != nil {
		return snap, err
	}
	row := func(name string) *store.CronJob {
		j := snap.Jobs[name]
		if j == nil {
			j = &store.CronJob{Name: name}
			snap.Jobs[name] = j
		}
		return j
	}
	err = r.Each(ctx, `SELECT job, count(*) FROM `+r.TasksTable+` GROUP BY job`, func(rows RowsScanner) error {
		var job string
		var n int
		err := rows.Scan(&job, &n)
		row(job).Stored = n
		return err
	})
	if err != nil {
		return snap, err
	}
	lasts, err := r.Query(ctx, "SELECT "+r.Cols+" FROM "+r.TasksTable+" WHERE id IN (SELECT max(id) FROM "+
		r.TasksTable+" WHERE state NOT IN ('queued', 'running') GROUP BY job)")
	if err != nil {
		return snap, err
	}
	for _, t := range lasts {
		row(t.Job).Last = store.LastOf(t)
	}
	snap.Active, err = r.Query(ctx, "SELECT "+r.Cols+" FROM "+r.TasksTable+" WHERE state IN ('queued', 'running') ORDER BY id")
	return snap, err
}

func (r Reads) Task(ctx context.Context, id int64) (*store.Task, error) {
	ts, err := r.Query(ctx, "SELECT "+r.Cols+" FROM "+r.TasksTable+" WHERE id = "+r.PH(1), id)
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("%w: %d", store.ErrUnknownTask, id)
	}
	return ts[0], nil
}

func (r Reads) Tasks(ctx context.Context, f store.TaskFilter) ([]*store.Task, error) {
	var where []string
	var args []any
	arg := func(cond string, v any) {
		args = append(args, v)
		where = append(where, cond+" "+r.PH(len(args)))
	}
	if f.Job != "" {
		arg("job =", f.Job)
	}
	if f.State != "" {
		arg("state =", string(f.State))
	}
	if f.Before > 0 {
		arg("id <", f.Before)
	}
	q := "SELECT " + r.Cols + " FROM " + r.TasksTable
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	args = append(args, f.Limit)
	return r.Query(ctx, q+" ORDER BY id DESC LIMIT "+r.PH(len(args)), args...)
}

func (r Reads) Query(ctx context.Context, q string, args ...any) ([]*store.Task, error) {
	var out []*store.Task
	err := r.Each(ctx, q, func(rows RowsScanner) error {
		t := &store.Task{Stored: true}
		var slot, started, ended *int64
		var due, queued int64
		var kind, state string
		if err := rows.Scan(&t.ID, &t.Job, &kind, &t.RunKey, &t.Attempt, &slot, &due, &state, &t.Reason, &queued,
			&started, &ended, &t.ExitCode, &t.Signal, &t.HTTPStatus, &t.Class, &t.Err, &t.Output, &t.Host); err != nil {
			return err
		}
		t.Kind, t.State = api.TaskKind(kind), api.TaskState(state)
		t.Slot, t.Due, t.Queued = FromPtr(slot), time.Unix(0, due).UTC(), time.Unix(0, queued).UTC()
		t.Started, t.Ended = FromPtr(started), FromPtr(ended)
		out = append(out, t)
		return nil
	}, args...)
	return out, err
}

// NsPtr is t in Unix nanoseconds, nil (NULL) for the zero time.
func NsPtr(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.UnixNano()
	return &n
}

// FromPtr is the instant of NsPtr.
func FromPtr(v *int64) time.Time {
	if v == nil {
		return time.Time{}
	}
	return time.Unix(0, *v).UTC()
}

// Deref is *p, or the zero value for nil.
func Deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}
