package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations are the schema steps in order; step i brings PRAGMA user_version from i to i+1.
// Never edit a released step: append a new one.
var migrations = []string{
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
}

// SchemaVersion is the schema this build writes.
var SchemaVersion = len(migrations)

// migrate applies the missing steps, each in its own transaction with its version bump.
func migrate(ctx context.Context, db *sql.Conn, path string) (int, error) {
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if v > len(migrations) {
		return v, fmt.Errorf("%s: schema version %d is newer than this schedd supports (%d)", path, v, len(migrations))
	}
	for ; v < len(migrations); v++ {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return v, fmt.Errorf("begin migration %d: %w", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
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
	return v, nil
}
