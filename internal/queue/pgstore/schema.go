package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations are the schema steps in order; step i brings schedd_schema_version from i to
// i+1. Never edit a released step: append a new one.
var migrations = []string{
	// 1: the deliveries and the epochs of the hosts that claim them.
	`CREATE TABLE schedd_epochs (
		epoch       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		host_id     TEXT NOT NULL,
		started_at  BIGINT NOT NULL,
		alive_until BIGINT NOT NULL
	);
	CREATE TABLE schedd_deliveries (
		id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		sink            TEXT NOT NULL,
		idem_key        TEXT NOT NULL UNIQUE,
		headers         TEXT NOT NULL DEFAULT '{}',
		payload         BYTEA NOT NULL,
		payload_size    INTEGER NOT NULL,
		payload_hash    BYTEA NOT NULL,
		priority        INTEGER NOT NULL DEFAULT 0,
		state           TEXT NOT NULL,
		attempts        INTEGER NOT NULL DEFAULT 0,
		failures        INTEGER NOT NULL DEFAULT 0,
		next_attempt_at BIGINT NOT NULL,
		last_attempt_at BIGINT,
		last_error      TEXT,
		dead_reason     TEXT,
		created_at      BIGINT NOT NULL,
		updated_at      BIGINT NOT NULL,
		finished_at     BIGINT,
		expires_at      BIGINT,
		owner_epoch     BIGINT,
		lease_until     BIGINT,
		quarantined     BOOLEAN NOT NULL DEFAULT false
	);
	CREATE INDEX schedd_deliveries_due ON schedd_deliveries(priority, next_attempt_at, id) WHERE state = 'pending';
	CREATE INDEX schedd_deliveries_live ON schedd_deliveries(id) WHERE state IN ('pending', 'sending');
	CREATE INDEX schedd_deliveries_finished ON schedd_deliveries(state, finished_at) WHERE state IN ('delivered', 'dead');`,
}

// SchemaVersion is the schema this build writes.
var SchemaVersion = len(migrations)

// migrateLock is the pg_advisory_xact_lock key that serialises migrations ("schedd" in
// ASCII).
const migrateLock = 0x736368656464

// migrate brings the schema to SchemaVersion in one transaction that first takes an
// advisory lock: two hosts starting at once run it one after the other, and the second
// finds the work done. A failed step rolls everything back.
func migrate(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var v int
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrateLock)); err != nil {
			return fmt.Errorf("lock for migration: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schedd_schema_version (version INTEGER NOT NULL)`); err != nil {
			return fmt.Errorf("create schema version table: %w", err)
		}
		if err := tx.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schedd_schema_version").Scan(&v); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if v > len(migrations) {
			return fmt.Errorf("schema version %d is newer than this schedd supports (%d)", v, len(migrations))
		}
		if v == len(migrations) {
			return nil
		}
		for ; v < len(migrations); v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migration %d: %w", v+1, err)
			}
		}
		if _, err := tx.Exec(ctx, "DELETE FROM schedd_schema_version"); err != nil {
			return fmt.Errorf("set schema version: %w", err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schedd_schema_version (version) VALUES ($1)", v); err != nil {
			return fmt.Errorf("set schema version: %w", err)
		}
		return nil
	})
	return v, err
}
