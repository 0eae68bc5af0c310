package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/postgres/pgtest"
	"github.com/schedd/schedd/internal/store/storetest"
)

// cronPool is a pool on a database of its own with cron's tables.
func cronPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := FleetCronOn(pool).Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return pool
}

// The fleet's task store passes the conformance suite, the host included, and refuses
// every write of a term that is over.
func TestFleetTasks(t *testing.T) {
	pool := cronPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO schedd_cron_leader VALUES (1, 'a', 7, now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	storetest.RunTasks(t, newPGTasks(pool, "a", 7, 0), "a")
	on := false
	row := &store.CronJob{Name: "j", Schedule: "every 1m0s", Enabled: &on}
	at := time.Now()
	old := newPGTasks(pool, "a", 6, 0)
	if _, _, err := old.Commit(ctx, &store.TaskBatch{Jobs: []*store.CronJob{row}}, at); !errors.Is(err, store.ErrDeposed) || !errors.Is(err, store.ErrTaskStore) {
		t.Fatalf("commit of an old term: %v", err)
	}
}
