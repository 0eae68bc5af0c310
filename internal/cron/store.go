package cron

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
	"modernc.org/sqlite" // the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/storeid"
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
	// 2: meta keeps the store's identity (store_id, see package storeid).
	`CREATE TABLE meta (
		key   TEXT PRIMARY KEY,
		value INTEGER NOT NULL
	) STRICT;`,
}

// SchemaVersion is the task store's schema version this build writes.
var SchemaVersion = len(schema)

// taskStore keeps the jobs' state and their tasks: the SQLite file of one host (store), or
// a fleet's tables on PostgreSQL (pgStore). Only the service's loop commits; the API's reads
// run beside it.
type taskStore interface {
	LoadState(ctx context.Context) (snapshot, error)
	// Commit writes b in one transaction. A new task whose (run key, attempt) is taken is
	// not written: it comes back in dups and must not run (P24). pruned says how many tasks
	// each prune deleted. A failure wraps ErrStore.
	Commit(ctx context.Context, b *batch, now time.Time) (dups []*task, pruned map[string]int, err error)
	Task(ctx context.Context, id int64) (*task, error)
	Tasks(ctx context.Context, f TaskFilter) ([]*task, error)
	// Where names the store for the status and logs: a path, or "postgres" (a DSN is a
	// secret).
	Where() string
	Close() error
}

// store is the task store: one SQLite file in WAL mode, every commit synced (FULL), written
// only by the service's loop; the API's reads run beside it.
type store struct {
	reads
	path  string
	db    *sql.DB
	stmts map[string]*sql.Stmt
}

// openStore opens the task store at path, creating it if needed. A store that cannot be
// trusted (not a database, failing its integrity check, or missing, emptied or replaced
// where its files show that a store was: package storeid) is an error that wraps
// storeid.ErrDamaged and says what to do. A log of nil logs nothing.
func openStore(ctx context.Context, path string, log *zap.Logger) (*store, error) {
	if log == nil {
		log = zap.NewNop()
	}
	// Before anything is created: a database that is missing or empty where a store was is
	// not opened as a new one.
	rec, err := storeid.Inspect(path)
	if err != nil {
		return nil, damaged(path, err)
	}
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
	st.reads = reads{jobsTable: "jobs", tasksTable: "tasks", cols: taskCols + ", '' AS host", each: st.each,
		ph: func(int) string { return "?" }}
	err = st.init(ctx, rec, log)
	if err == nil {
		err = st.prepare(ctx)
	}
	if err != nil {
		db.Close()
		if isCorrupt(err) || errors.Is(err, storeid.ErrDamaged) {
			return nil, damaged(path, err)
		}
		return nil, fmt.Errorf("open cron store %s: %w", path, err)
	}
	return st, nil
}

// damaged is the error of a task store that cannot be trusted, with what to do about it.
func damaged(path string, err error) error {
	return storeid.Refuse(fmt.Errorf("cron store %s: %w", path, err), path,
		"the task history, pending retries and the switches of `schedd cron enable`/`disable` are then lost, "+
			"and runs missed while schedd was down are not caught up")
}

// isCorrupt reports an SQLite error that says the file is damaged or not a database.
func isCorrupt(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB
}

func (st *store) init(ctx context.Context, rec storeid.Record, log *zap.Logger) error {
	var mode string
	if err := st.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q, want wal", mode)
	}
	if err := st.check(ctx); err != nil {
		return err
	}
	var v int
	if err := st.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(schema) {
		return fmt.Errorf("schema version %d is newer than this schedd supports (%d)", v, len(schema))
	}
	var held int64 // the identity the database holds: meta exists from step 2
	if v >= 2 {
		err := st.db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'store_id'").Scan(&held)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read the store's identity: %w", err)
		}
	}
	id, err := rec.Settle(held, v > 0)
	if err != nil {
		return err
	}
	for ; v < len(schema); v++ {
		// The step and its version bump commit together (PRAGMA takes no parameters; v+1 is
		// our own integer).
		step := schema[v] + fmt.Sprintf(";\nPRAGMA user_version = %d;", v+1)
		if err := st.inTx(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, step); return err }); err != nil {
			return fmt.Errorf("schema step %d: %w", v+1, err)
		}
	}
	// The identity is committed before its record is written: a crash in between leaves a
	// record to write at the next open, never a record without its store.
	if id != held {
		if _, err := st.db.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES ('store_id', ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, id); err != nil {
			return fmt.Errorf("write the store's identity: %w", err)
		}
	}
	if err := rec.Keep(id); err != nil {
		log.Warn("cron store: its identity record is not written; a lost database would not be noticed at the next start",
			zap.String("path", st.path), zap.Error(err))
	}
	return nil
}

// check runs SQLite's quick integrity check: a damaged file is refused at open, not found
// by the first commit that reaches its bad page.
func (st *store) check(ctx context.Context) error {
	rows, err := st.db.QueryContext(ctx, "PRAGMA quick_check(5)")
	if err != nil {
		return err
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return err
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(msgs) == 1 && msgs[0] == "ok" {
		return nil
	}
	return &storeid.Error{Path: st.path, Reason: "integrity check: " + strings.Join(msgs, "; ")}
}

func (st *store) Where() string { return st.path }

func (st *store) Close() error {
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
	Name           string
	Schedule       string
	LastSlot       time.Time
	Enabled        *bool
	DisabledReason string
	Failures       int
	Retry          *pendingRetry
	// Loaded, never written: the Last ended task and how many tasks the job has stored.
	Last   *api.CronLast
	Stored int
}

// pendingRetry is a retry waiting for its time: attempt of the run runKey, for slot.
type pendingRetry struct {
	At      time.Time
	Wait    time.Duration // how long it waits; a clock stepping back never makes it longer
	Of      int64         // the task it retries
	RunKey  string
	Attempt int
	Slot    time.Time
}

// snapshot is what loadState read.
type snapshot struct {
	Jobs   map[string]*jobRow
	Active []*task // queued and running, by id
	NextID int64
}

func (st *store) LoadState(ctx context.Context) (snapshot, error) {
	snap, err := st.loadJobs(ctx)
	if err != nil {
		return snap, err
	}
	var seq sql.NullInt64
	err = st.db.QueryRowContext(ctx, `SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'tasks'), 0),
		coalesce((SELECT max(id) FROM tasks), 0))`).Scan(&seq)
	snap.NextID = seq.Int64 + 1
	return snap, err
}

// each runs q and calls fn on every row.
func (st *store) each(ctx context.Context, q string, fn func(rowsScanner) error, args ...any) error {
	rows, err := st.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return eachRow(rows, fn)
}

// batch is what one turn of the loop writes, in one transaction.
type batch struct {
	Tasks  []*task
	Jobs   []*jobRow
	Prunes map[string]int // job -> how many of its oldest ended tasks to delete
}

func (b *batch) Empty() bool { return len(b.Tasks) == 0 && len(b.Jobs) == 0 && len(b.Prunes) == 0 }

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

func (st *store) Commit(ctx context.Context, b *batch, now time.Time) (dups []*task, pruned map[string]int, err error) {
	pruned = map[string]int{}
	err = st.inTx(ctx, func(tx *sql.Tx) error {
		exec := func(q string, args ...any) (sql.Result, error) {
			return tx.StmtContext(ctx, st.stmts[q]).ExecContext(ctx, args...)
		}
		for _, t := range b.Tasks {
			args := []any{t.Job, string(t.Kind), t.RunKey, t.Attempt, nsPtr(t.Slot), nsPtr(t.Due), string(t.State), t.Reason,
				nsPtr(t.Queued), nsPtr(t.Started), nsPtr(t.Ended), t.ExitCode, t.Signal, t.HTTPStatus, t.Class, t.Err, t.Output, t.ID}
			if t.Stored {
				if _, err := exec(sqlUpdateTask, args...); err != nil {
					return fmt.Errorf("update task %d: %w", t.ID, err)
				}
				continue
			}
			res, err := exec(sqlInsertTask, args...)
			if err != nil {
				return fmt.Errorf("insert task %d: %w", t.ID, err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				dups = append(dups, t)
			}
		}
		for _, r := range b.Jobs {
			var en any
			if r.Enabled != nil {
				en = *r.Enabled
			}
			var rAt, rWait, rOf, rKey, rAttempt, rSlot any
			if p := r.Retry; p != nil {
				rAt, rWait, rOf, rKey, rAttempt, rSlot = nsPtr(p.At), int64(p.Wait), p.Of, p.RunKey, p.Attempt, nsPtr(p.Slot)
			}
			if _, err := exec(sqlUpsertJob, r.Name, r.Schedule, nsPtr(r.LastSlot), en, r.DisabledReason, r.Failures,
				rAt, rWait, rOf, rKey, rAttempt, rSlot, now.UnixNano()); err != nil {
				return fmt.Errorf("write job %s: %w", r.Name, err)
			}
		}
		for job, n := range b.Prunes {
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

// Errors of the service.
var (
	// ErrStore wraps a failed commit of the task store. It ends Run: the guarantee that a
	// slot runs at most once rests on the store.
	ErrStore = errors.New("cron store")
	// ErrUnknownTask: no task has that id.
	ErrUnknownTask = errors.New("unknown task")
)
