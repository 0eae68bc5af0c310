package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/postgres/pgtest"
	"github.com/schedd/schedd/internal/store/storetest"
)

// keptCounts compares the sums of the slots with a GROUP BY over the rows.
func keptCounts(ctx context.Context, pool *pgxpool.Pool) error {
	var kept, rows [5]int64
	err := pool.QueryRow(ctx, `SELECT sum(pending), sum(sending), sum(delivered), sum(dead), sum(quarantined)
		FROM schedd_delivery_counts`).Scan(&kept[0], &kept[1], &kept[2], &kept[3], &kept[4])
	if err != nil {
		return err
	}
	err = pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'sending'),
		count(*) FILTER (WHERE state = 'delivered'), count(*) FILTER (WHERE state = 'dead'),
		count(*) FILTER (WHERE state = 'dead' AND quarantined) FROM schedd_deliveries`).Scan(&rows[0], &rows[1], &rows[2], &rows[3], &rows[4])
	if err != nil {
		return err
	}
	if kept != rows {
		return fmt.Errorf("kept counts %v, the rows %v (pending, sending, delivered, dead, quarantined)", kept, rows)
	}
	return nil
}

// openReady opens a store as host and waits until its schema is in place.
func openReady(t *testing.T, dsn, host string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, WithTestSettings(Options{HostID: host}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	<-s.Opened()
	if err := s.ready(); err != nil {
		t.Fatal(err)
	}
	return s
}

// The counts the slots keep equal a GROUP BY over the rows: after every step of random
// operations of one host, and after four hosts' random operations at once, whose
// statements contend for the slots.
func TestCountsKeptBySlots(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	a := openReady(t, dsn, "host-a")
	storetest.Churn(t, a, 3, 300, func(op string) {
		if err := keptCounts(ctx, a.pool); err != nil {
			t.Fatalf("after %s: %v", op, err)
		}
		storetest.CheckCounts(t, a)
	})
	t.Run("hosts", func(t *testing.T) {
		for i := range 4 {
			s := openReady(t, dsn, fmt.Sprint("host-", i))
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				storetest.Churn(t, s, uint64(10+i), 400, func(string) {})
			})
		}
	})
	if err := keptCounts(ctx, a.pool); err != nil {
		t.Fatal(err)
	}
	storetest.CheckCounts(t, a)

	// A writer that finds every slot held by other transactions does not wait for them:
	// its counts go to a new slot.
	var slots int
	if err := a.pool.QueryRow(ctx, "SELECT count(*) FROM schedd_delivery_counts").Scan(&slots); err != nil {
		t.Fatal(err)
	}
	tx, err := a.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM schedd_delivery_counts FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, _, err := a.Enqueue(wctx, store.NewEntry{Sink: "hook", Key: "all slots held", Payload: []byte("x")}); err != nil {
		t.Fatalf("enqueue while every slot is held: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var now int
	if err := a.pool.QueryRow(ctx, "SELECT count(*) FROM schedd_delivery_counts").Scan(&now); err != nil || now != slots+1 {
		t.Fatalf("slots %d, %v; want %d", now, err, slots+1)
	}
	if err := keptCounts(ctx, a.pool); err != nil {
		t.Fatal(err)
	}
}

// A database of the previous schema, with entries in every state, gets its counts filled
// from the rows when it is upgraded; the triggers keep them from then on, and a TRUNCATE
// zeroes them.
func TestCountsFilledOnUpgrade(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if v, err := Migrate(ctx, pool, Schema{VersionTable: deliveries.VersionTable, Steps: migrations[:2]}); err != nil || v != 2 {
		t.Fatalf("migrate to 2: %d, %v", v, err)
	}
	_, err = pool.Exec(ctx, `INSERT INTO schedd_deliveries
		(sink, idem_key, payload, payload_size, payload_hash, state, next_attempt_at, created_at, updated_at, quarantined)
		SELECT 'hook', 'k' || g, '\x00', 1, '\x00', (ARRAY['pending', 'sending', 'delivered', 'dead'])[g % 4 + 1],
			0, g, g, g % 8 = 3 FROM generate_series(1, 40) g`)
	if err != nil {
		t.Fatal(err)
	}
	s := openReady(t, dsn, "host-a")
	if s.Info().Schema != 4 || SchemaVersion != 4 {
		t.Fatalf("schema %d, SchemaVersion %d", s.Info().Schema, SchemaVersion)
	}
	if err := keptCounts(ctx, pool); err != nil {
		t.Fatal(err)
	}
	c, err := s.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.Counts{Pending: 10, Sending: 10, Delivered: 10, Dead: 10, Quarantined: 5, OldestAt: ms(1)}); c != want {
		t.Fatalf("counts after the upgrade %+v, want %+v", c, want)
	}
	if _, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "new", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if err := keptCounts(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "TRUNCATE schedd_deliveries"); err != nil {
		t.Fatal(err)
	}
	if err := keptCounts(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Counts(ctx); err != nil || c != (store.Counts{}) {
		t.Fatalf("counts after a truncate %+v, %v", c, err)
	}
}

// A statement's counts go to a slot found through the slots' key: it reads a few pages of
// the slots' table however many versions of the slot rows it holds. The table grows when a
// long transaction keeps the versions of its busy rows from being pruned; a pick that read
// every row read every one of those pages, in every statement that changed the deliveries.
func TestCountsSlotPickedByKey(t *testing.T) {
	ctx := context.Background()
	s := openReady(t, pgtest.DSN(t), "host-a")
	old, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(ctx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(ctx, "SELECT count(*) FROM schedd_delivery_counts"); err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		if _, err := s.pool.Exec(ctx, "UPDATE schedd_delivery_counts SET pending = pending WHERE slot = $1", i%16+1); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	var pages int64
	if err := c.QueryRow(ctx, "SELECT pg_relation_size('schedd_delivery_counts') / current_setting('block_size')::int").Scan(&pages); err != nil || pages < 20 {
		t.Fatalf("the slots' table has %d pages (%v); the test wants at least 20", pages, err)
	}
	blocks := func() int64 {
		t.Helper()
		var n int64
		if _, err := c.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
			t.Fatal(err)
		}
		err := c.QueryRow(ctx, `SELECT pg_stat_clear_snapshot()::text || '', COALESCE(heap_blks_hit, 0) + COALESCE(heap_blks_read, 0)
			FROM pg_statio_user_tables WHERE relname = 'schedd_delivery_counts'`).Scan(new(string), &n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The first pick of each slot steps over the index entries of its dead versions and
	// marks them so; the picks after that do not.
	const n = 50
	before := int64(0)
	for i := range 2 * n {
		if i == n {
			before = blocks()
		}
		_, err := c.Exec(ctx, `INSERT INTO schedd_deliveries (sink, idem_key, payload, payload_size, payload_hash,
			state, next_attempt_at, created_at, updated_at) VALUES ('hook', $1, '\x00', 1, '\x00', 'pending', 0, 0, 0)`, fmt.Sprint("pick-", i))
		if err != nil {
			t.Fatal(err)
		}
	}
	if per := float64(blocks()-before) / n; per > 8 {
		t.Errorf("each insert read %.1f pages of the slots' table (%d pages); want a few", per, pages)
	}
	if err := keptCounts(ctx, s.pool); err != nil {
		t.Fatal(err)
	}
}
