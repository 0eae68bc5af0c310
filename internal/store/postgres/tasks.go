package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/tasksql"
)

// cronSchema is cron's part of a fleet's PostgreSQL database: the SQLite task store's jobs
// and tasks (a task also records the host that ran it) and the leader row (store.FleetCron
// says what they keep and how the leader is fenced). UNIQUE (run_key, attempt) makes a slot
// run once across the fleet (P24). Instants are Unix nanoseconds, as in SQLite; the
// leader's lease is on the database's clock, shared by every host.
var cronSchema = Schema{VersionTable: "schedd_cron_schema_version", Steps: []string{
	`CREATE TABLE schedd_cron_jobs (
		name            TEXT PRIMARY KEY,
		schedule        TEXT NOT NULL,
		last_slot       BIGINT,
		enabled         BOOLEAN,
		disabled_reason TEXT NOT NULL DEFAULT '',
		failures        INTEGER NOT NULL DEFAULT 0,
		retry_at        BIGINT,
		retry_wait      BIGINT,
		retry_of        BIGINT,
		retry_key       TEXT,
		retry_attempt   INTEGER,
		retry_slot      BIGINT,
		updated_at      BIGINT NOT NULL
	);
	CREATE TABLE schedd_cron_tasks (
		id          BIGINT PRIMARY KEY,
		job         TEXT NOT NULL,
		kind        TEXT NOT NULL,
		run_key     TEXT NOT NULL,
		attempt     INTEGER NOT NULL,
		slot        BIGINT,
		due_at      BIGINT NOT NULL,
		state       TEXT NOT NULL,
		reason      TEXT NOT NULL DEFAULT '',
		queued_at   BIGINT NOT NULL,
		started_at  BIGINT,
		ended_at    BIGINT,
		exit_code   INTEGER,
		signal      TEXT NOT NULL DEFAULT '',
		http_status INTEGER NOT NULL DEFAULT 0,
		class       TEXT NOT NULL DEFAULT '',
		error       TEXT NOT NULL DEFAULT '',
		output      TEXT NOT NULL DEFAULT '',
		host        TEXT NOT NULL DEFAULT '',
		UNIQUE (run_key, attempt)
	);
	CREATE INDEX schedd_cron_tasks_job ON schedd_cron_tasks(job, id);
	CREATE INDEX schedd_cron_tasks_active ON schedd_cron_tasks(state) WHERE state IN ('queued', 'running');
	CREATE TABLE schedd_cron_leader (
		id         INTEGER PRIMARY KEY CHECK (id = 1),
		host       TEXT NOT NULL,
		term       BIGINT NOT NULL,
		expires_at TIMESTAMPTZ NOT NULL
	);`,
}}

// pgTasks is the task store of a fleet: the tables of cronSchema, written by the leader of
// term term only. It borrows the pool of the delivery store and never closes it.
type pgTasks struct {
	tasksql.Reads
	pool *pgxpool.Pool
	host string
	term int64
	// timeout bounds each operation: a database that stopped answering must not hold the
	// service's loop (or a status request) for long.
	timeout time.Duration
}

func newPGTasks(pool *pgxpool.Pool, host string, term int64, timeout time.Duration) *pgTasks {
	st := &pgTasks{pool: pool, host: host, term: term, timeout: timeout}
	st.Reads = tasksql.Reads{JobsTable: "schedd_cron_jobs", TasksTable: "schedd_cron_tasks", Cols: tasksql.TaskCols + ", host",
		Each: st.each, PH: func(n int) string { return "$" + strconv.Itoa(n) }}
	return st
}

// bound is ctx with the store's timeout.
func (st *pgTasks) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if st.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, st.timeout)
}

// fenceSQL holds the leader row for the rest of the transaction, or finds nothing when this
// host's term is over.
const fenceSQL = `SELECT 1 FROM schedd_cron_leader WHERE id = 1 AND host = $1 AND term = $2 AND expires_at > now() FOR SHARE`

// Where is "postgres": the DSN is a secret.
func (st *pgTasks) Where() string { return "postgres" }

// Close closes nothing: the pool is the delivery store's.
func (st *pgTasks) Close() error { return nil }

// LoadState reads the fleet's jobs' rows, the active tasks and the next task id.
func (st *pgTasks) LoadState(ctx context.Context) (store.CronState, error) {
	ctx, cancel := st.bound(ctx)
	defer cancel()
	snap, err := st.LoadJobs(ctx)
	if err != nil {
		return snap, err
	}
	// One leader writes at a time, so the next id is the largest plus one.
	err = st.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) + 1 FROM schedd_cron_tasks`).Scan(&snap.NextID)
	return snap, err
}

// each runs q and calls fn on every row, within the store's timeout.
func (st *pgTasks) each(ctx context.Context, q string, fn func(tasksql.RowsScanner) error, args ...any) error {
	ctx, cancel := st.bound(ctx)
	defer cancel()
	rows, err := st.pool.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return tasksql.EachRow(rows, fn)
}

// The statements of commit. A task's host is the one that first wrote it: a task queued by
// a leader and run after a takeover says who queued it until it is updated.
const (
	pgUpdateTask = `UPDATE schedd_cron_tasks SET job=$1, kind=$2, run_key=$3, attempt=$4, slot=$5, due_at=$6,
		state=$7, reason=$8, queued_at=$9, started_at=$10, ended_at=$11, exit_code=$12, signal=$13,
		http_status=$14, class=$15, error=$16, output=$17, host=$18 WHERE id=$19`
	pgInsertTask = `INSERT INTO schedd_cron_tasks (job, kind, run_key, attempt, slot, due_at, state, reason,
		queued_at, started_at, ended_at, exit_code, signal, http_status, class, error, output, host, id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
		ON CONFLICT (run_key, attempt) DO NOTHING`
	pgUpsertJob = `INSERT INTO schedd_cron_jobs (name, schedule, last_slot, enabled, disabled_reason, failures,
		retry_at, retry_wait, retry_of, retry_key, retry_attempt, retry_slot, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (name) DO UPDATE SET
		schedule=excluded.schedule, last_slot=excluded.last_slot, enabled=excluded.enabled,
		disabled_reason=excluded.disabled_reason, failures=excluded.failures, retry_at=excluded.retry_at,
		retry_wait=excluded.retry_wait, retry_of=excluded.retry_of, retry_key=excluded.retry_key,
		retry_attempt=excluded.retry_attempt, retry_slot=excluded.retry_slot, updated_at=excluded.updated_at`
	pgPrune = `DELETE FROM schedd_cron_tasks WHERE id IN (SELECT id FROM schedd_cron_tasks
		WHERE job = $1 AND state NOT IN ('queued', 'running') ORDER BY id LIMIT $2)`
)

// Commit writes b in one transaction and one round trip after the fence's.
func (st *pgTasks) Commit(ctx context.Context, b *store.TaskBatch, now time.Time) (dups []*store.Task, pruned map[string]int, err error) {
	pruned = map[string]int{}
	ctx, cancel := st.bound(ctx)
	defer cancel()
	err = pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, fenceSQL, st.host, st.term).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w (term %d of %s is over)", store.ErrDeposed, st.term, st.host)
		} else if err != nil {
			return err
		}
		var q pgx.Batch
		for _, t := range b.Tasks {
			sql := pgInsertTask
			if t.Stored {
				sql = pgUpdateTask
			}
			q.Queue(sql, t.Job, string(t.Kind), t.RunKey, t.Attempt, tasksql.NsPtr(t.Slot), t.Due.UnixNano(), string(t.State),
				t.Reason, t.Queued.UnixNano(), tasksql.NsPtr(t.Started), tasksql.NsPtr(t.Ended), t.ExitCode, t.Signal, t.HTTPStatus,
				t.Class, t.Err, t.Output, t.Host, t.ID)
		}
		for _, r := range b.Jobs {
			var rAt, rWait, rOf, rKey, rAttempt, rSlot any
			if p := r.Retry; p != nil {
				rAt, rWait, rOf, rKey, rAttempt, rSlot = tasksql.NsPtr(p.At), int64(p.Wait), p.Of, p.RunKey, p.Attempt, tasksql.NsPtr(p.Slot)
			}
			q.Queue(pgUpsertJob, r.Name, r.Schedule, tasksql.NsPtr(r.LastSlot), r.Enabled, r.DisabledReason, r.Failures,
				rAt, rWait, rOf, rKey, rAttempt, rSlot, now.UnixNano())
		}
		jobs := make([]string, 0, len(b.Prunes))
		for job, n := range b.Prunes {
			jobs = append(jobs, job)
			q.Queue(pgPrune, job, n)
		}
		res := tx.SendBatch(ctx, &q)
		for _, t := range b.Tasks {
			tag, err := res.Exec()
			if err != nil {
				res.Close()
				return fmt.Errorf("write task %d: %w", t.ID, err)
			}
			if !t.Stored && tag.RowsAffected() == 0 {
				dups = append(dups, t)
			}
		}
		for _, r := range b.Jobs {
			if _, err := res.Exec(); err != nil {
				res.Close()
				return fmt.Errorf("write job %s: %w", r.Name, err)
			}
		}
		for _, job := range jobs {
			tag, err := res.Exec()
			if err != nil {
				res.Close()
				return fmt.Errorf("prune the history of %s: %w", job, err)
			}
			pruned[job] = int(tag.RowsAffected())
		}
		return res.Close()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: postgres: %w", store.ErrTaskStore, err)
	}
	return dups, pruned, nil
}
