package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

// side opens a second connection to the store's file, as a hand editing it would: the
// tests damage rows and read the truth through it, not through the store.
func side(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// keptCounts compares delivery_counts with a GROUP BY over the rows: every
// (state, quarantined) the rows hold is kept with its number, none is negative, and
// a key with no row left is kept at zero if at all.
func keptCounts(db *sql.DB) error {
	read := func(q string) (map[string]int, error) {
		rows, err := db.Query(q)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		m := map[string]int{}
		for rows.Next() {
			var state, quarantined any
			var n int
			if err := rows.Scan(&state, &quarantined, &n); err != nil {
				return nil, err
			}
			if n < 0 {
				return nil, fmt.Errorf("count of %v/%v is %d", state, quarantined, n)
			}
			if n > 0 {
				m[fmt.Sprintf("%T %v/%T %v", state, state, quarantined, quarantined)] = n
			}
		}
		return m, rows.Err()
	}
	kept, err := read("SELECT state, quarantined, n FROM delivery_counts")
	if err != nil {
		return err
	}
	rows, err := read("SELECT state, quarantined, count(*) FROM deliveries GROUP BY state, quarantined")
	if err != nil {
		return err
	}
	if !maps.Equal(kept, rows) {
		return fmt.Errorf("kept counts %v, the rows %v", kept, rows)
	}
	return nil
}

// damage damages a random unmarked row of state by hand, through db: its headers, or its
// state (then the writer counts it again when it quarantines it). It returns the row's
// id, or 0 when there is none.
func damage(t *testing.T, db *sql.DB, rng *rand.Rand) int64 {
	var id int64
	state := []string{"pending", "sending", "dead"}[rng.IntN(3)]
	if err := db.QueryRow("SELECT id FROM deliveries WHERE state = ? AND quarantined = 0 ORDER BY random() LIMIT 1",
		state).Scan(&id); err != nil {
		return 0
	}
	change := "headers = '{not json'"
	if rng.IntN(2) == 0 {
		change = "state = 'sideways'"
	}
	if _, err := db.Exec("UPDATE deliveries SET "+change+" WHERE id = ?", id); err != nil {
		t.Error(err)
		return 0
	}
	return id
}

// The counts the writer keeps equal a GROUP BY over the rows after every step of random
// operations, quarantines of rows damaged by hand among them (a dead letter among them:
// its quarantine changes the mark alone), and Counts equals what List reads.
func TestCountsKeptByTheWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	s := openTest(t, path, Options{MaxEntries: 40})
	db := side(t, path)
	rng := rand.New(rand.NewPCG(7, 7))
	var quarantined int
	storetest.Churn(t, s, 7, 600, func(op string) {
		if rng.IntN(8) == 0 {
			if id := damage(t, db, rng); id != 0 {
				if g, err := s.Get(ctx, id); err != nil || !g.Quarantined {
					t.Fatalf("get of damaged %d: %+v, %v", id, g, err)
				}
				quarantined++
				op += ", then a quarantine"
			}
		}
		if err := keptCounts(db); err != nil {
			t.Fatalf("after %s: %v", op, err)
		}
		storetest.CheckCounts(t, s)
	})
	if quarantined == 0 {
		t.Fatal("no quarantine in the sequence")
	}
}

// The writer counts the rows again only for a row in a state it never writes: random
// operations on sound rows never make it, and the quarantine of a row whose state was
// damaged by hand makes it once.
func TestCountsRecountOnlyForDamage(t *testing.T) {
	ctx := context.Background()
	core, logs := observer.New(zap.WarnLevel)
	path := filepath.Join(t.TempDir(), "q.db")
	s := openTest(t, path, Options{Log: zap.New(core)})
	recounts := func() int { return logs.FilterMessageSnippet("counted again").Len() }
	storetest.Churn(t, s, 11, 400, func(op string) {
		if n := recounts(); n != 0 {
			t.Fatalf("after %s: %d recounts of sound rows", op, n)
		}
	})
	e := mustEnqueue(t, s, "to-damage")
	if _, err := side(t, path).Exec("UPDATE deliveries SET state = 'sideways' WHERE id = ?", e.ID); err != nil {
		t.Fatal(err)
	}
	if g, err := s.Get(ctx, e.ID); err != nil || !g.Quarantined {
		t.Fatalf("get of the damaged row: %+v, %v", g, err)
	}
	if n := recounts(); n != 1 {
		t.Fatalf("%d recounts after one damaged row's quarantine, want 1", n)
	}
	storetest.CheckCounts(t, s)
}

// Operations that share group commits keep the counts too: those that stood count, those
// refused or rolled back to their savepoint do not. Four sequences of random operations
// run at once on one store (and rows are damaged by hand as they run); then the counts
// equal the rows.
func TestCountsKeptAcrossSharedCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	s := openTest(t, path, Options{MaxEntries: 60})
	db := side(t, path)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			storetest.Churn(t, s, uint64(100+g), 300, func(string) {
				if rng.IntN(30) == 0 {
					damage(t, db, rng)
				}
			})
		})
	}
	wg.Wait()
	if st := s.Stats(); st.Ops <= st.Commits {
		t.Fatalf("stats %+v: no commit carried two operations", st)
	}
	// Reading every row quarantines what is still damaged.
	for after := int64(0); ; {
		page, err := s.List(context.Background(), store.Filter{AfterID: after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		after = page[len(page)-1].ID
	}
	storetest.CheckCounts(t, s)
	if err := keptCounts(db); err != nil {
		t.Fatal(err)
	}
	var live int
	if err := db.QueryRow("SELECT count(*) FROM deliveries WHERE state IN ('pending', 'sending')").Scan(&live); err != nil || s.live != live {
		t.Fatalf("the writer's live count %d, the rows %d (%v)", s.live, live, err)
	}
}

// A store of the previous schema, in every state and with quarantined and damaged rows,
// gets its counts filled from the rows when it is upgraded, and keeps them from then on.
func TestCountsFilledOnUpgrade(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v3.db")
	db := side(t, path)
	for _, q := range deliveriesSchema.steps[:3] {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec("PRAGMA user_version = 3"); err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		state       string
		quarantined int
		n           int
	}{{"pending", 0, 5}, {"sending", 0, 2}, {"delivered", 0, 7}, {"dead", 0, 3}, {"dead", 1, 2}, {"sideways", 0, 1}}
	var k int
	for _, r := range rows {
		for range r.n {
			k++
			if _, err := db.Exec(`INSERT INTO deliveries (sink, idem_key, payload, payload_size, payload_hash, state,
				next_attempt_at, created_at, updated_at, finished_at, quarantined) VALUES ('hook', ?, x'78', 1, x'00', ?, 1, ?, 1, 1, ?)`,
				fmt.Sprint("k", k), r.state, 1000+k, r.quarantined); err != nil {
				t.Fatal(err)
			}
		}
	}
	db.Close()
	s := openTest(t, path, Options{})
	if s.Info().Schema != SchemaVersion {
		t.Fatalf("schema %d after the upgrade", s.Info().Schema)
	}
	db = side(t, path)
	if err := keptCounts(db); err != nil {
		t.Fatal(err)
	}
	c, err := s.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.Counts{Pending: 5, Sending: 2, Delivered: 7, Dead: 5, Quarantined: 2}); c.Pending != want.Pending ||
		c.Sending != want.Sending || c.Delivered != want.Delivered || c.Dead != want.Dead || c.Quarantined != want.Quarantined {
		t.Fatalf("counts after the upgrade %+v, want %+v", c, want)
	}
	// From then on the writer keeps them.
	mustEnqueue(t, s, "new")
	if _, err := s.Purge(ctx, store.PurgeFilter{State: store.StateDelivered, OlderThan: fromMs(sql.NullInt64{Int64: 1 << 50, Valid: true})}); err != nil {
		t.Fatal(err)
	}
	if err := keptCounts(db); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Counts(ctx); c.Pending != 6 || c.Delivered != 0 {
		t.Fatalf("counts after an enqueue and a purge %+v", c)
	}
}
