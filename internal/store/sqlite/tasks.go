package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storeid"
	"github.com/schedd/schedd/internal/store/tasksql"
)

// TasksFile is the task store's file in the state dir.
const TasksFile = "cron.db"

// TasksSchemaVersion is the task store's schema version this build writes.
var TasksSchemaVersion = len(tasksSchema.steps)

// Tasks is cron's task store of one host: one SQLite file in WAL mode, every commit synced
// (FULL), written only by cron's loop; the API's reads run beside it.
type Tasks struct {
	tasksql.Reads
	path  string
	db    *sql.DB
	stmts map[string]*sql.Stmt
}

var _ store.TaskStore = (*Tasks)(nil)

// OpenTasks opens the task store at path, creating it if needed. A store that cannot be
// trusted (not a database, failing its integrity check, or missing, emptied or replaced
// where its files show that a store was: package storeid) is an error that wraps
// storeid.ErrDamaged and says what to do. A log of nil logs nothing.
func OpenTasks(ctx context.Context, path string, log *zap.Logger) (*Tasks, error) {
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
	st := &Tasks{path: path, db: db}
	st.Reads = tasksql.Reads{JobsTable: "jobs", TasksTable: "tasks", Cols: tasksql.TaskCols + ", '' AS host", Each: st.each,
		PH: func(int) string { return "?" }}
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

func (st *Tasks) init(ctx context.Context, rec storeid.Record, log *zap.Logger) error {
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
	_, err := tasksSchema.open(ctx, st.db, rec, st.path, log)
	return err
}

// check runs SQLite's quick integrity check: a damaged file is refused at open, not found
// by the first commit that reaches its bad page.
func (st *Tasks) check(ctx context.Context) error {
	msgs, err := integrity(ctx, st.db, "PRAGMA quick_check(5)")
	if err != nil || msgs == nil {
		return err
	}
	return &storeid.Error{Path: st.path, Reason: "integrity check: " + strings.Join(msgs, "; ")}
}

// Where is the file's path.
func (st *Tasks) Where() string { return st.path }

// Close closes the file.
func (st *Tasks) Close() error {
	for _, s := range st.stmts {
		s.Close()
	}
	return st.db.Close()
}

func (st *Tasks) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
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

// LoadState reads the jobs' rows, the active tasks and the next task id.
func (st *Tasks) LoadState(ctx context.Context) (store.CronState, error) {
	snap, err := st.LoadJobs(ctx)
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
func (st *Tasks) each(ctx context.Context, q string, fn func(tasksql.RowsScanner) error, args ...any) error {
	rows, err := st.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return tasksql.EachRow(rows, fn)
}

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

func (st *Tasks) prepare(ctx context.Context) error {
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

// Commit writes b in one transaction (store.TaskStore).
func (st *Tasks) Commit(ctx context.Context, b *store.TaskBatch, now time.Time) (dups []*store.Task, pruned map[string]int, err error) {
	pruned = map[string]int{}
	err = st.inTx(ctx, func(tx *sql.Tx) error {
		exec := func(q string, args ...any) (sql.Result, error) {
			return tx.StmtContext(ctx, st.stmts[q]).ExecContext(ctx, args...)
		}
		for _, t := range b.Tasks {
			args := []any{t.Job, string(t.Kind), t.RunKey, t.Attempt, tasksql.NsPtr(t.Slot), tasksql.NsPtr(t.Due), string(t.State), t.Reason,
				tasksql.NsPtr(t.Queued), tasksql.NsPtr(t.Started), tasksql.NsPtr(t.Ended), t.ExitCode, t.Signal, t.HTTPStatus, t.Class, t.Err, t.Output, t.ID}
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
				rAt, rWait, rOf, rKey, rAttempt, rSlot = tasksql.NsPtr(p.At), int64(p.Wait), p.Of, p.RunKey, p.Attempt, tasksql.NsPtr(p.Slot)
			}
			if _, err := exec(sqlUpsertJob, r.Name, r.Schedule, tasksql.NsPtr(r.LastSlot), en, r.DisabledReason, r.Failures,
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
		return nil, nil, fmt.Errorf("%w: %s: %w", store.ErrTaskStore, st.path, err)
	}
	return dups, pruned, nil
}
