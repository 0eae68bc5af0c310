package cron

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/schedd/schedd/internal/api"
)

// DBName is the task store's file in the state dir.
const DBName = "cron.db"

// schema is the task store, one step per version: step i brings PRAGMA user_version from i
// to i+1. A released step is never edited; a change is a new step.
//
// jobs keeps, per job name, what must survive a restart: the last slot handled (so a slot
// is never run twice and missed slots are found), the schedule it belongs to (a changed
// schedule starts afresh instead of catching up), the enabled switch set through the API,
// the consecutive failures and the pending retry. Its rows outlive a job's removal, so a job
// that comes back keeps its history.
//
// tasks keeps every run. UNIQUE (run_key, attempt) is what makes a slot run at most once
// (P24): the run key of a slot is "job@slot", and a task is inserted, as queued or running,
// before its action starts. Instants are Unix nanoseconds.
var schema = []string{
	`CREATE TABLE jobs (
		name            TEXT PRIMARY KEY,
		schedule        TEXT NOT NULL,
		last_slot       INTEGER,
		enabled         INTEGER,
		disabled_reason TEXT NOT NULL DEFAULT '',
		failures        INTEGER NOT NULL DEFAULT 0,
		retry_at        INTEGER,
		retry_wait      INTEGER,
		retry_of        INTEGER,
		retry_key       TEXT,
		retry_attempt   INTEGER,
		retry_slot      INTEGER,
		updated_at      INTEGER NOT NULL
	) STRICT;
	CREATE TABLE tasks (
		id          INTEGER PRIMARY KEY AUTOINCREMENT,
		job         TEXT NOT NULL,
		kind        TEXT NOT NULL,
		run_key     TEXT NOT NULL,
		attempt     INTEGER NOT NULL,
		slot        INTEGER,
		due_at      INTEGER NOT NULL,
		state       TEXT NOT NULL,
		reason      TEXT NOT NULL DEFAULT '',
		queued_at   INTEGER NOT NULL,
		started_at  INTEGER,
		ended_at    INTEGER,
		exit_code   INTEGER,
		signal      TEXT NOT NULL DEFAULT '',
		http_status INTEGER NOT NULL DEFAULT 0,
		class       TEXT NOT NULL DEFAULT '',
		error       TEXT NOT NULL DEFAULT '',
		output      TEXT NOT NULL DEFAULT '',
		UNIQUE (run_key, attempt)
	) STRICT;
	CREATE INDEX tasks_job ON tasks(job, id);
	CREATE INDEX tasks_active ON tasks(state) WHERE state IN ('queued', 'running');`,
}

// SchemaVersion is the task store's schema version this build writes.
var SchemaVersion = len(schema)

// taskStore keeps the jobs' state and their tasks: the SQLite file of one host (store), or
// a fleet's tables on PostgreSQL (pgStore). Only the service's loop commits; the API's reads
// run beside it.
type taskStore interface {
	loadState(ctx context.Context) (snapshot, error)
	// commit writes b in one transaction. A new task whose (run key, attempt) is taken is
	// not written: it comes back in dups and must not run (P24). pruned says how many tasks
	// each prune deleted. A failure wraps ErrStore.
	commit(ctx context.Context, b *batch, now time.Time) (dups []*task, pruned map[string]int, err error)
	task(ctx context.Context, id int64) (*task, error)
	tasks(ctx context.Context, f TaskFilter) ([]*task, error)
	// where names the store for the status and logs: a path, or "postgres" (a DSN is a
	// secret).
	where() string
	close() error
}

// store is the task store: one SQLite file in WAL mode, every commit synced (FULL), written
// only by the service's loop; the API's reads run beside it.
type store struct {
	path  string
	db    *sql.DB
	stmts map[string]*sql.Stmt
}

func openStore(ctx context.Context, path string) (*store, error) {
	// Created 0600 first, so the WAL and shared-memory files SQLite derives from it are too.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open cron store: %w", err)
	}
	f.Close()
	dsn := path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open cron store %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	st := &store{path: path, db: db}
	err = st.init(ctx)
	if err == nil {
		err = st.prepare(ctx)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open cron store %s: %w", path, err)
	}
	return st, nil
}

func (st *store) init(ctx context.Context) error {
	var mode string
	if err := st.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q, want wal", mode)
	}
	var v int
	if err := st.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(schema) {
		return fmt.Errorf("schema version %d is newer than this schedd supports (%d)", v, len(schema))
	}
	for ; v < len(schema); v++ {
		// The step and its version bump commit together (PRAGMA takes no parameters; v+1 is
		// our own integer).
		step := schema[v] + fmt.Sprintf(";\nPRAGMA user_version = %d;", v+1)
		if err := st.inTx(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, step); return err }); err != nil {
			return fmt.Errorf("schema step %d: %w", v+1, err)
		}
	}
	return nil
}

func (st *store) where() string { return st.path }

func (st *store) close() error {
	for _, s := range st.stmts {
		s.Close()
	}
	return st.db.Close()
}

func (st *store) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// jobRow is a job's persisted state.
type jobRow struct {
	name           string
	schedule       string
	lastSlot       time.Time
	enabled        *bool
	disabledReason string
	failures       int
	retry          *pendingRetry
	// Loaded, never written: the last ended task and how many tasks the job has stored.
	last   *api.CronLast
	stored int
}

// pendingRetry is a retry waiting for its time: attempt of the run runKey, for slot.
type pendingRetry struct {
	at      time.Time
	wait    time.Duration // how long it waits; a clock stepping back never makes it longer
	of      int64         // the task it retries
	runKey  string
	attempt int
	slot    time.Time
}

// snapshot is what loadState read.
type snapshot struct {
	jobs   map[string]*jobRow
	active []*task // queued and running, by id
	nextID int64
}

const taskCols = `id, job, kind, run_key, attempt, slot, due_at, state, reason, queued_at, started_at,
	ended_at, exit_code, signal, http_status, class, error, output`

func (st *store) loadState(ctx context.Context) (snapshot, error) {
	snap := snapshot{jobs: map[string]*jobRow{}}
	rows, err := st.db.QueryContext(ctx, `SELECT name, schedule, last_slot, enabled, disabled_reason, failures,
		retry_at, retry_wait, retry_of, retry_key, retry_attempt, retry_slot FROM jobs`)
	if err != nil {
		return snap, err
	}
	for rows.Next() {
		var r jobRow
		var last, en, rAt, rWait, rOf, rAttempt, rSlot sql.NullInt64
		var rKey sql.NullString
		if err := rows.Scan(&r.name, &r.schedule, &last, &en, &r.disabledReason, &r.failures,
			&rAt, &rWait, &rOf, &rKey, &rAttempt, &rSlot); err != nil {
			rows.Close()
			return snap, err
		}
		r.lastSlot = fromNS(last)
		if en.Valid {
			on := en.Int64 != 0
			r.enabled = &on
		}
		if rAt.Valid {
			r.retry = &pendingRetry{at: fromNS(rAt), wait: time.Duration(rWait.Int64), of: rOf.Int64,
				runKey: rKey.String, attempt: int(rAttempt.Int64), slot: fromNS(rSlot)}
		}
		snap.jobs[r.name] = &r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return snap, err
	}
	row := func(name string) *jobRow {
		r := snap.jobs[name]
		if r == nil {
			r = &jobRow{name: name}
			snap.jobs[name] = r
		}
		return r
	}
	counts, err := st.db.QueryContext(ctx, `SELECT job, count(*) FROM tasks GROUP BY job`)
	if err != nil {
		return snap, err
	}
	for counts.Next() {
		var job string
		var n int
		if err := counts.Scan(&job, &n); err != nil {
			counts.Close()
			return snap, err
		}
		row(job).stored = n
	}
	counts.Close()
	if err := counts.Err(); err != nil {
		return snap, err
	}
	lasts, err := st.query(ctx, "SELECT "+taskCols+` FROM tasks WHERE id IN (SELECT max(id) FROM tasks
		WHERE state NOT IN ('queued', 'running') GROUP BY job)`)
	if err != nil {
		return snap, err
	}
	for _, t := range lasts {
		row(t.job).last = lastOf(t)
	}
	snap.active, err = st.query(ctx, "SELECT "+taskCols+" FROM tasks WHERE state IN ('queued', 'running') ORDER BY id")
	if err != nil {
		return snap, err
	}
	var seq sql.NullInt64
	err = st.db.QueryRowContext(ctx, `SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'tasks'), 0),
		coalesce((SELECT max(id) FROM tasks), 0))`).Scan(&seq)
	snap.nextID = seq.Int64 + 1
	return snap, err
}

// batch is what one turn of the loop writes, in one transaction.
type batch struct {
	tasks  []*task
	jobs   []*jobRow
	prunes map[string]int // job -> how many of its oldest ended tasks to delete
}

func (b *batch) empty() bool { return len(b.tasks) == 0 && len(b.jobs) == 0 && len(b.prunes) == 0 }

// The statements commit runs, prepared once.
const (
	sqlUpdateTask = `UPDATE tasks SET job=?, kind=?, run_key=?, attempt=?, slot=?, due_at=?, state=?, reason=?,
		queued_at=?, started_at=?, ended_at=?, exit_code=?, signal=?, http_status=?, class=?, error=?, output=?
		WHERE id=?`
	sqlInsertTask = `INSERT INTO tasks (job, kind, run_key, attempt, slot, due_at, state, reason, queued_at,
		started_at, ended_at, exit_code, signal, http_status, class, error, output, id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_key, attempt) DO NOTHING`
	sqlUpsertJob = `INSERT INTO jobs (name, schedule, last_slot, enabled, disabled_reason, failures, retry_at,
		retry_wait, retry_of, retry_key, retry_attempt, retry_slot, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET schedule=excluded.schedule,
		last_slot=excluded.last_slot, enabled=excluded.enabled, disabled_reason=excluded.disabled_reason,
		failures=excluded.failures, retry_at=excluded.retry_at, retry_wait=excluded.retry_wait,
		retry_of=excluded.retry_of, retry_key=excluded.retry_key, retry_attempt=excluded.retry_attempt,
		retry_slot=excluded.retry_slot, updated_at=excluded.updated_at`
	sqlPrune = `DELETE FROM tasks WHERE id IN (SELECT id FROM tasks
		WHERE job = ? AND state NOT IN ('queued', 'running') ORDER BY id LIMIT ?)`
)

func (st *store) prepare(ctx context.Context) error {
	st.stmts = map[string]*sql.Stmt{}
	for _, q := range []string{sqlUpdateTask, sqlInsertTask, sqlUpsertJob, sqlPrune} {
		s, err := st.db.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		st.stmts[q] = s
	}
	return nil
}

func (st *store) commit(ctx context.Context, b *batch, now time.Time) (dups []*task, pruned map[string]int, err error) {
	pruned = map[string]int{}
	err = st.inTx(ctx, func(tx *sql.Tx) error {
		exec := func(q string, args ...any) (sql.Result, error) {
			return tx.StmtContext(ctx, st.stmts[q]).ExecContext(ctx, args...)
		}
		for _, t := range b.tasks {
			args := []any{t.job, string(t.kind), t.runKey, t.attempt, ns(t.slot), ns(t.due), string(t.state), t.reason,
				ns(t.queued), ns(t.started), ns(t.ended), t.exitCode, t.signal, t.httpStatus, t.class, t.err, t.output, t.id}
			if t.stored {
				if _, err := exec(sqlUpdateTask, args...); err != nil {
					return fmt.Errorf("update task %d: %w", t.id, err)
				}
				continue
			}
			res, err := exec(sqlInsertTask, args...)
			if err != nil {
				return fmt.Errorf("insert task %d: %w", t.id, err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				dups = append(dups, t)
			}
		}
		for _, r := range b.jobs {
			var en any
			if r.enabled != nil {
				en = *r.enabled
			}
			var rAt, rWait, rOf, rKey, rAttempt, rSlot any
			if p := r.retry; p != nil {
				rAt, rWait, rOf, rKey, rAttempt, rSlot = ns(p.at), int64(p.wait), p.of, p.runKey, p.attempt, ns(p.slot)
			}
			if _, err := exec(sqlUpsertJob, r.name, r.schedule, ns(r.lastSlot), en, r.disabledReason, r.failures,
				rAt, rWait, rOf, rKey, rAttempt, rSlot, now.UnixNano()); err != nil {
				return fmt.Errorf("write job %s: %w", r.name, err)
			}
		}
		for job, n := range b.prunes {
			res, err := exec(sqlPrune, job, n)
			if err != nil {
				return fmt.Errorf("prune the history of %s: %w", job, err)
			}
			d, _ := res.RowsAffected()
			pruned[job] = int(d)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrStore, st.path, err)
	}
	return dups, pruned, nil
}

// TaskFilter selects tasks for Tasks.
type TaskFilter struct {
	Job    string
	State  api.TaskState
	Before int64 // a cursor: only tasks with a smaller id
	Limit  int   // 0: 100
}

func (st *store) task(ctx context.Context, id int64) (*task, error) {
	ts, err := st.query(ctx, "SELECT "+taskCols+" FROM tasks WHERE id = ?", id)
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("%w: %d", ErrUnknownTask, id)
	}
	return ts[0], nil
}

func (st *store) tasks(ctx context.Context, f TaskFilter) ([]*task, error) {
	var where []string
	var args []any
	if f.Job != "" {
		where, args = append(where, "job = ?"), append(args, f.Job)
	}
	if f.State != "" {
		where, args = append(where, "state = ?"), append(args, string(f.State))
	}
	if f.Before > 0 {
		where, args = append(where, "id < ?"), append(args, f.Before)
	}
	q := "SELECT " + taskCols + " FROM tasks"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return st.query(ctx, q+" ORDER BY id DESC LIMIT ?", append(args, f.Limit)...)
}

func (st *store) query(ctx context.Context, q string, args ...any) ([]*task, error) {
	rows, err := st.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*task
	for rows.Next() {
		t := &task{stored: true, qidx: -1}
		var slot, started, ended, code sql.NullInt64
		var due, queued int64
		var kind, state string
		if err := rows.Scan(&t.id, &t.job, &kind, &t.runKey, &t.attempt, &slot, &due, &state, &t.reason, &queued,
			&started, &ended, &code, &t.signal, &t.httpStatus, &t.class, &t.err, &t.output); err != nil {
			return nil, err
		}
		t.kind, t.state = api.TaskKind(kind), api.TaskState(state)
		t.slot, t.due, t.queued = fromNS(slot), time.Unix(0, due).UTC(), time.Unix(0, queued).UTC()
		t.started, t.ended = fromNS(started), fromNS(ended)
		if code.Valid {
			c := int(code.Int64)
			t.exitCode = &c
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func lastOf(t *task) *api.CronLast {
	return &api.CronLast{State: t.state, Reason: t.reason, At: t.ended, TaskID: t.id, Host: t.host}
}

// ns is t in Unix nanoseconds, NULL for the zero time.
func ns(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func fromNS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.Unix(0, v.Int64).UTC()
}

// Errors of the service.
var (
	// ErrStore wraps a failed commit of the task store. It ends Run: the guarantee that a
	// slot runs at most once rests on the store.
	ErrStore = errors.New("cron store")
	// ErrUnknownTask: no task has that id.
	ErrUnknownTask = errors.New("unknown task")
)
