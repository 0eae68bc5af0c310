package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/store/storeid"
)

// schema is the tables of one file of the state dir, one step per version: step i brings
// PRAGMA user_version from i to i+1. A released step is never edited; a change is a new
// step. Each file (schedd.db, cron.db) keeps its own version, and one runner (open)
// migrates both.
type schema struct {
	name  string // for messages: "delivery store", "cron store"
	steps []string
	// metaFrom is the first version whose tables include meta, where the store's identity
	// (store_id, see package storeid) is kept.
	metaFrom int
}

// deliveriesSchema is the delivery store, schedd.db.
var deliveriesSchema = schema{name: "delivery store", metaFrom: 1, steps: []string{
	// 1: the deliveries table and the epoch counter.
	`CREATE TABLE meta (
		key   TEXT PRIMARY KEY,
		value INTEGER NOT NULL
	) STRICT;
	INSERT INTO meta(key, value) VALUES ('epoch', 0);
	CREATE TABLE deliveries (
		id              INTEGER PRIMARY KEY AUTOINCREMENT,
		sink            TEXT NOT NULL,
		idem_key        TEXT NOT NULL UNIQUE,
		headers         TEXT NOT NULL DEFAULT '{}',
		payload         BLOB NOT NULL,
		payload_size    INTEGER NOT NULL,
		payload_hash    BLOB NOT NULL,
		priority        INTEGER NOT NULL DEFAULT 0,
		state           TEXT NOT NULL,
		attempts        INTEGER NOT NULL DEFAULT 0,
		failures        INTEGER NOT NULL DEFAULT 0,
		next_attempt_at INTEGER NOT NULL,
		last_attempt_at INTEGER,
		last_error      TEXT,
		dead_reason     TEXT,
		created_at      INTEGER NOT NULL,
		updated_at      INTEGER NOT NULL,
		finished_at     INTEGER,
		expires_at      INTEGER,
		owner_epoch     INTEGER,
		lease_until     INTEGER,
		quarantined     INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX deliveries_due ON deliveries(priority, next_attempt_at, id) WHERE state = 'pending';
	CREATE INDEX deliveries_live ON deliveries(id) WHERE state IN ('pending', 'sending');
	CREATE INDEX deliveries_finished ON deliveries(state, finished_at) WHERE state IN ('delivered', 'dead');
	CREATE INDEX deliveries_state_sink ON deliveries(state, sink, id);`,
	// 2: fewer pages written per enqueue. Every index an insert touches is one more page in
	// the WAL at each commit: deliveries_due served only ClaimDue/Due, which the delivery
	// service does not use (they scan the live index now), and deliveries_state_sink only
	// List's filters; dead letters, which operators list, get a partial index that no
	// insert touches.
	`DROP INDEX deliveries_due;
	DROP INDEX deliveries_state_sink;
	CREATE INDEX deliveries_dead ON deliveries(id) WHERE state = 'dead';`,
	// 3: status counts the entries from indexes (countsSQL) instead of reading every row of
	// the table: the live index carries the state, so counting it reads no row, and the
	// sending rows, at most the workers, get an index no insert touches.
	`DROP INDEX deliveries_live;
	CREATE INDEX deliveries_live ON deliveries(id, state) WHERE state IN ('pending', 'sending');
	CREATE INDEX deliveries_sending ON deliveries(id) WHERE state = 'sending';`,
	// 4: status reads the counts the store keeps as it writes, not an index entry per
	// entry: delivery_counts holds the number of rows per (state, quarantined), kept by
	// triggers on every insert, change of state or mark, and delete, in the writer's own
	// transaction, so the counts cannot drift from the rows whatever statement changes
	// them. Upgrading fills the table from the rows once (one scan of the table, at the
	// first start of this version); the columns and their affinities are those of
	// deliveries, so a damaged value is keyed as the rows hold it.
	`CREATE TABLE delivery_counts (
		state       TEXT NOT NULL,
		quarantined INTEGER NOT NULL,
		n           INTEGER NOT NULL,
		PRIMARY KEY (state, quarantined)
	) WITHOUT ROWID;
	INSERT INTO delivery_counts (state, quarantined, n)
		SELECT state, quarantined, count(*) FROM deliveries GROUP BY state, quarantined;
	CREATE TRIGGER deliveries_count_insert AFTER INSERT ON deliveries BEGIN
		INSERT INTO delivery_counts (state, quarantined, n) VALUES (new.state, new.quarantined, 1)
			ON CONFLICT (state, quarantined) DO UPDATE SET n = n + 1;
	END;
	CREATE TRIGGER deliveries_count_update AFTER UPDATE OF state, quarantined ON deliveries
		WHEN old.state IS NOT new.state OR old.quarantined IS NOT new.quarantined BEGIN
		UPDATE delivery_counts SET n = n - 1 WHERE state = old.state AND quarantined = old.quarantined;
		INSERT INTO delivery_counts (state, quarantined, n) VALUES (new.state, new.quarantined, 1)
			ON CONFLICT (state, quarantined) DO UPDATE SET n = n + 1;
	END;
	CREATE TRIGGER deliveries_count_delete AFTER DELETE ON deliveries BEGIN
		UPDATE delivery_counts SET n = n - 1 WHERE state = old.state AND quarantined = old.quarantined;
	END;`,
	// 5: the delivery runtime arms only what is due within its horizon and reads the rest
	// when the horizon reaches it: Near and FirstDue read the pending entries in due order
	// from this index (near.go). An insert touches it: one more page per commit, at its
	// right edge when entries are due in the order they come. Upgrading builds it once.
	`CREATE INDEX deliveries_next ON deliveries(next_attempt_at, id) WHERE state = 'pending';`,
	// 6: the writer keeps delivery_counts itself, once per group commit (counts.go), and
	// the triggers of step 4 go. A trigger ran a program per row and made every insert
	// and change of state a statement of two tables, whose pages SQLite copies to a
	// statement journal as it writes: a sixth of the writer's CPU on a batch enqueue. The
	// counts stay as the triggers left them, exact.
	`DROP TRIGGER deliveries_count_insert;
	DROP TRIGGER deliveries_count_update;
	DROP TRIGGER deliveries_count_delete;`,
}}

// tasksSchema is cron's task store, cron.db (store.TaskStore says what its tables keep).
// Instants are Unix nanoseconds.
var tasksSchema = schema{name: "cron store", metaFrom: 2, steps: []string{
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
}}

// SchemaVersion is the delivery store's schema version this build writes.
var SchemaVersion = len(deliveriesSchema.steps)

// conn is what a schema is opened on: the delivery store's writer connection, or the task
// store's pool.
type conn interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// open brings the file at path, on c, to the schema's last step with its identity. It
// reads the version and the identity the database holds, before any step, and settles
// them against the identity record rec (a database that is not rec's store is an error
// wrapping storeid.ErrDamaged); applies the missing steps, each in its own transaction
// with its version bump; commits the identity; and only then writes the record, so a
// crash in between leaves a record to write at the next open, never a record without its
// store. A record that cannot be written is logged: the store works, and the next open
// writes it again. It returns the version now in place.
func (sc schema) open(ctx context.Context, c conn, rec storeid.Record, path string, log *zap.Logger) (int, error) {
	var v int
	if err := c.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if v > len(sc.steps) {
		return v, fmt.Errorf("schema version %d is newer than this schedd supports (%d)", v, len(sc.steps))
	}
	var held int64 // the identity the database holds
	if v >= sc.metaFrom {
		err := c.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'store_id'").Scan(&held)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return v, fmt.Errorf("read the store's identity: %w", err)
		}
	}
	id, err := rec.Settle(held, v > 0)
	if err != nil {
		return v, err
	}
	for ; v < len(sc.steps); v++ {
		tx, err := c.BeginTx(ctx, nil)
		if err != nil {
			return v, fmt.Errorf("begin migration %d: %w", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, sc.steps[v]); err != nil {
			_ = tx.Rollback()
			return v, fmt.Errorf("migration %d: %w", v+1, err)
		}
		// PRAGMA takes no bind parameters; v+1 is our own integer.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
			_ = tx.Rollback()
			return v, fmt.Errorf("migration %d: set version: %w", v+1, err)
		}
		if err := tx.Commit(); err != nil {
			return v, fmt.Errorf("commit migration %d: %w", v+1, err)
		}
	}
	if id != held {
		if _, err := c.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES ('store_id', ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, id); err != nil {
			return v, fmt.Errorf("write the store's identity: %w", err)
		}
	}
	if err := rec.Keep(id); err != nil {
		log.Warn(sc.name+": its identity record is not written; a lost database would not be noticed at the next start",
			zap.String("path", path), zap.Error(err))
	}
	return v, nil
}
