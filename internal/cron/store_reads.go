package cron

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// rowsScanner is a result set of database/sql or of pgx.
type rowsScanner interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// eachRow calls fn on every row of rows; the caller closes them.
func eachRow(rows rowsScanner, fn func(rowsScanner) error) error {
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// reads are the reads of a task store, in the SQL that SQLite and PostgreSQL share: the two
// stores differ in their table names, their placeholders and how a query runs.
type reads struct {
	jobsTable, tasksTable string
	// cols are the task columns, the host last (SQLite has none: '' AS host).
	cols string
	// ph is the n-th placeholder of a query (from 1).
	ph func(n int) string
	// each runs q and calls fn on every row.
	each func(ctx context.Context, q string, fn func(rowsScanner) error, args ...any) error
}

const taskCols = `id, job, kind, run_key, attempt, slot, due_at, state, reason, queued_at, started_at,
	ended_at, exit_code, signal, http_status, class, error, output`

// loadJobs reads the jobs' persisted state, how many tasks each job has stored, its last
// ended task and the active tasks. The caller sets snap.nextID.
func (r reads) loadJobs(ctx context.Context) (snapshot, error) {
	snap := snapshot{Jobs: map[string]*jobRow{}}
	err := r.each(ctx, `SELECT name, schedule, last_slot, enabled, disabled_reason, failures, retry_at, retry_wait,
		retry_of, retry_key, retry_attempt, retry_slot FROM `+r.jobsTable, func(rows rowsScanner) error {
		var j jobRow
		var last, rAt, rWait, rOf, rSlot *int64
		var rAttempt *int
		var rKey *string
		if err := rows.Scan(&j.Name, &j.Schedule, &last, &j.Enabled, &j.DisabledReason, &j.Failures,
			&rAt, &rWait, &rOf, &rKey, &rAttempt, &rSlot); err != nil {
			return err
		}
		j.LastSlot = fromPtr(last)
		if rAt != nil {
			j.Retry = &pendingRetry{At: fromPtr(rAt), Wait: time.Duration(deref(rWait)), Of: deref(rOf),
				RunKey: deref(rKey), Attempt: deref(rAttempt), Slot: fromPtr(rSlot)}
		}
		snap.Jobs[j.Name] = &j
		return nil
	})
	if err != nil {
		return snap, err
	}
	row := func(name string) *jobRow {
		j := snap.Jobs[name]
		if j == nil {
			j = &jobRow{Name: name}
			snap.Jobs[name] = j
		}
		return j
	}
	err = r.each(ctx, `SELECT job, count(*) FROM `+r.tasksTable+` GROUP BY job`, func(rows rowsScanner) error {
		var job string
		var n int
		err := rows.Scan(&job, &n)
		row(job).Stored = n
		return err
	})
	if err != nil {
		return snap, err
	}
	lasts, err := r.query(ctx, "SELECT "+r.cols+" FROM "+r.tasksTable+" WHERE id IN (SELECT max(id) FROM "+
		r.tasksTable+" WHERE state NOT IN ('queued', 'running') GROUP BY job)")
	if err != nil {
		return snap, err
	}
	for _, t := range lasts {
		row(t.Job).Last = lastOf(t)
	}
	snap.Active, err = r.query(ctx, "SELECT "+r.cols+" FROM "+r.tasksTable+" WHERE state IN ('queued', 'running') ORDER BY id")
	return snap, err
}

func (r reads) Task(ctx context.Context, id int64) (*task, error) {
	ts, err := r.query(ctx, "SELECT "+r.cols+" FROM "+r.tasksTable+" WHERE id = "+r.ph(1), id)
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("%w: %d", ErrUnknownTask, id)
	}
	return ts[0], nil
}

func (r reads) Tasks(ctx context.Context, f TaskFilter) ([]*task, error) {
	var where []string
	var args []any
	arg := func(cond string, v any) {
		args = append(args, v)
		where = append(where, cond+" "+r.ph(len(args)))
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
	q := "SELECT " + r.cols + " FROM " + r.tasksTable
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	args = append(args, f.Limit)
	return r.query(ctx, q+" ORDER BY id DESC LIMIT "+r.ph(len(args)), args...)
}

func (r reads) query(ctx context.Context, q string, args ...any) ([]*task, error) {
	var out []*task
	err := r.each(ctx, q, func(rows rowsScanner) error {
		t := &task{Stored: true, qidx: -1}
		var slot, started, ended *int64
		var due, queued int64
		var kind, state string
		if err := rows.Scan(&t.ID, &t.Job, &kind, &t.RunKey, &t.Attempt, &slot, &due, &state, &t.Reason, &queued,
			&started, &ended, &t.ExitCode, &t.Signal, &t.HTTPStatus, &t.Class, &t.Err, &t.Output, &t.Host); err != nil {
			return err
		}
		t.Kind, t.State = api.TaskKind(kind), api.TaskState(state)
		t.Slot, t.Due, t.Queued = fromPtr(slot), time.Unix(0, due).UTC(), time.Unix(0, queued).UTC()
		t.Started, t.Ended = fromPtr(started), fromPtr(ended)
		out = append(out, t)
		return nil
	}, args...)
	return out, err
}

func lastOf(t *task) *api.CronLast {
	return &api.CronLast{State: t.State, Reason: t.Reason, At: t.Ended, TaskID: t.ID, Host: t.Host}
}

// nsPtr is t in Unix nanoseconds, nil (NULL) for the zero time.
func nsPtr(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.UnixNano()
	return &n
}

func fromPtr(v *int64) time.Time {
	if v == nil {
		return time.Time{}
	}
	return time.Unix(0, *v).UTC()
}

// deref is *p, or the zero value for nil.
func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}
