package postgres

import (
	"context"
	"fmt"
	"strings"

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
	// 2: the runtime's periodic rescan reads what is due soon and what is being sent, not
	// every live entry. An insert still touches as many indexes: the due index, led by
	// priority, could not serve a range on next_attempt_at alone, and gives way to one that
	// can; the sending rows, at most the workers of every host, get an index of their own.
	`DROP INDEX schedd_deliveries_due;
	CREATE INDEX schedd_deliveries_next ON schedd_deliveries(next_attempt_at, id) WHERE state = 'pending';
	CREATE INDEX schedd_deliveries_sending ON schedd_deliveries(id) WHERE state = 'sending';`,
	// 3: status reads the counts the store keeps as it writes, not an index entry per
	// entry. Several hosts write at once, so the counts are spread over slots, rows that
	// Counts sums: a statement's triggers (one per statement, over its transition tables,
	// not one per row) add what it changed to a slot no other transaction holds, taken
	// with SKIP LOCKED, or to a new slot when every one is held, so no writer ever waits
	// on another's counts (and no lock order can deadlock). The triggers run in the
	// writer's transaction: the counts commit or roll back with the rows. TRUNCATE zeroes
	// them. Upgrading fills the first slot from the rows once (one scan of the table);
	// creating the triggers first locks writers out until the migration commits, so no
	// write falls between the scan and the triggers.
	`CREATE TABLE schedd_delivery_counts (
		slot        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		pending     BIGINT NOT NULL DEFAULT 0,
		sending     BIGINT NOT NULL DEFAULT 0,
		delivered   BIGINT NOT NULL DEFAULT 0,
		dead        BIGINT NOT NULL DEFAULT 0,
		quarantined BIGINT NOT NULL DEFAULT 0
	);
` + countsFunction + `	CREATE TRIGGER schedd_deliveries_count_insert AFTER INSERT ON schedd_deliveries
		REFERENCING NEW TABLE AS schedd_counted_new
		FOR EACH STATEMENT EXECUTE FUNCTION schedd_count_deliveries();
	CREATE TRIGGER schedd_deliveries_count_update AFTER UPDATE ON schedd_deliveries
		REFERENCING OLD TABLE AS schedd_counted_old NEW TABLE AS schedd_counted_new
		FOR EACH STATEMENT EXECUTE FUNCTION schedd_count_deliveries();
	CREATE TRIGGER schedd_deliveries_count_delete AFTER DELETE ON schedd_deliveries
		REFERENCING OLD TABLE AS schedd_counted_old
		FOR EACH STATEMENT EXECUTE FUNCTION schedd_count_deliveries();
	CREATE TRIGGER schedd_deliveries_count_truncate AFTER TRUNCATE ON schedd_deliveries
		FOR EACH STATEMENT EXECUTE FUNCTION schedd_count_deliveries();
	INSERT INTO schedd_delivery_counts (pending, sending, delivered, dead, quarantined)
		SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'sending'),
			count(*) FILTER (WHERE state = 'delivered'), count(*) FILTER (WHERE state = 'dead'),
			count(*) FILTER (WHERE state = 'dead' AND quarantined)
		FROM schedd_deliveries;
	INSERT INTO schedd_delivery_counts (pending) SELECT 0 FROM generate_series(2, 16);`,
	// 4: a statement finds its slot through the slots' key: a random start among the first
	// 16, the next one no other transaction holds, else the first from the start. Ordered
	// by random(), the pick read every version of every slot row; their page is updated by
	// every writer at once, too busy to be pruned as it goes, and grew to hundreds of pages
	// while a million entries were written (each statement then read them all: the claims
	// of a drain took twice as long).
	countsFunctionByKey,
}

// countsFunction is the counts triggers' function of schema step 3, which adds what a
// statement changed to a slot; countsFunctionByKey is the same with the slot picked by its
// key (step 4).
const countsFunction = `	CREATE FUNCTION schedd_count_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
	DECLARE
		p BIGINT := 0; s BIGINT := 0; dl BIGINT := 0; dd BIGINT := 0; q BIGINT := 0;
	BEGIN
		IF TG_OP = 'TRUNCATE' THEN
			UPDATE schedd_delivery_counts SET pending = 0, sending = 0, delivered = 0, dead = 0, quarantined = 0;
			RETURN NULL;
		END IF;
		IF TG_OP <> 'DELETE' THEN
			SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'sending'),
				count(*) FILTER (WHERE state = 'delivered'), count(*) FILTER (WHERE state = 'dead'),
				count(*) FILTER (WHERE state = 'dead' AND quarantined)
			INTO p, s, dl, dd, q FROM schedd_counted_new;
		END IF;
		IF TG_OP <> 'INSERT' THEN
			SELECT p - count(*) FILTER (WHERE state = 'pending'), s - count(*) FILTER (WHERE state = 'sending'),
				dl - count(*) FILTER (WHERE state = 'delivered'), dd - count(*) FILTER (WHERE state = 'dead'),
				q - count(*) FILTER (WHERE state = 'dead' AND quarantined)
			INTO p, s, dl, dd, q FROM schedd_counted_old;
		END IF;
		IF p = 0 AND s = 0 AND dl = 0 AND dd = 0 AND q = 0 THEN
			RETURN NULL;
		END IF;
		UPDATE schedd_delivery_counts SET pending = pending + p, sending = sending + s,
			delivered = delivered + dl, dead = dead + dd, quarantined = quarantined + q
		WHERE slot = (SELECT slot FROM schedd_delivery_counts ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED);
		IF NOT FOUND THEN
			INSERT INTO schedd_delivery_counts (pending, sending, delivered, dead, quarantined) VALUES (p, s, dl, dd, q);
		END IF;
		RETURN NULL;
	END $$;
`

var countsFunctionByKey = strings.NewReplacer(
	"CREATE FUNCTION", "CREATE OR REPLACE FUNCTION",
	"q BIGINT := 0;", "q BIGINT := 0; start BIGINT := 1 + floor(random() * 16)::bigint; n BIGINT;",
	`		UPDATE schedd_delivery_counts SET pending = pending + p, sending = sending + s,
			delivered = delivered + dl, dead = dead + dd, quarantined = quarantined + q
		WHERE slot = (SELECT slot FROM schedd_delivery_counts ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED);`,
	`		SELECT slot INTO n FROM schedd_delivery_counts WHERE slot >= start ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED;
		IF NOT FOUND THEN
			SELECT slot INTO n FROM schedd_delivery_counts ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED;
		END IF;
		UPDATE schedd_delivery_counts SET pending = pending + p, sending = sending + s,
			delivered = delivered + dl, dead = dead + dd, quarantined = quarantined + q
		WHERE slot = n;`,
).Replace(countsFunction)

// SchemaVersion is the schema this build writes.
var SchemaVersion = len(migrations)

// deliveries is the delivery store's schema.
var deliveries = Schema{VersionTable: "schedd_schema_version", Steps: migrations}

// Schema is one component's tables in the database: its steps in order, step i bringing
// the version kept in VersionTable from i to i+1. Each component (the deliveries, cron) has
// its own version table, so each migrates its own tables.
type Schema struct {
	VersionTable string
	Steps        []string
}

// migrateLock is the pg_advisory_xact_lock key that serialises migrations ("schedd" in
// ASCII).
const migrateLock = 0x736368656464

// Migrate brings sc to its last step in one transaction that first takes an advisory lock:
// two hosts starting at once run it one after the other, and the second finds the work
// done. A failed step rolls everything back. It returns the version now in place.
func Migrate(ctx context.Context, pool *pgxpool.Pool, sc Schema) (int, error) {
	table := pgx.Identifier{sc.VersionTable}.Sanitize()
	var v int
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrateLock)); err != nil {
			return fmt.Errorf("lock for migration: %w", err)
		}
		if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+table+" (version INTEGER NOT NULL)"); err != nil {
			return fmt.Errorf("create schema version table %s: %w", sc.VersionTable, err)
		}
		if err := tx.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM "+table).Scan(&v); err != nil {
			return fmt.Errorf("read schema version from %s: %w", sc.VersionTable, err)
		}
		if v > len(sc.Steps) {
			return fmt.Errorf("schema version %d in %s is newer than this schedd supports (%d)", v, sc.VersionTable, len(sc.Steps))
		}
		if v == len(sc.Steps) {
			return nil
		}
		for ; v < len(sc.Steps); v++ {
			if _, err := tx.Exec(ctx, sc.Steps[v]); err != nil {
				return fmt.Errorf("migration %d of %s: %w", v+1, sc.VersionTable, err)
			}
		}
		if _, err := tx.Exec(ctx, "DELETE FROM "+table); err != nil {
			return fmt.Errorf("set schema version: %w", err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+table+" (version) VALUES ($1)", v); err != nil {
			return fmt.Errorf("set schema version: %w", err)
		}
		return nil
	})
	return v, err
}
