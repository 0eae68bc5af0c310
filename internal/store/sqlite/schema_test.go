package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/schedd/schedd/internal/store"
)

// A store written by the first schema opens under the current one: every step runs once,
// the entries stay, and the indexes (and no trigger) are those of the last step.
func TestMigrateFromFirstSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{deliveriesSchema.steps[0], "PRAGMA user_version = 1",
		`INSERT INTO deliveries (sink, idem_key, payload, payload_size, payload_hash, state, next_attempt_at, created_at, updated_at)
		 VALUES ('hook', 'old', x'78', 1, x'00', 'pending', 1, 1, 1)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s := openTest(t, path, Options{})
	if s.Info().Schema != SchemaVersion || SchemaVersion != 6 {
		t.Fatalf("schema %d, SchemaVersion %d", s.Info().Schema, SchemaVersion)
	}
	var v int
	if err := s.rdb.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != SchemaVersion {
		t.Fatalf("user_version %d, %v", v, err)
	}
	rows, err := s.rdb.Query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'deliveries' AND sql IS NOT NULL ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	var idx []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		idx = append(idx, n)
	}
	rows.Close()
	if want := []string{"deliveries_dead", "deliveries_finished", "deliveries_live", "deliveries_next", "deliveries_sending"}; !slices.Equal(idx, want) {
		t.Fatalf("indexes %v, want %v", idx, want)
	}
	// The writer keeps the counts: no trigger is left on the table.
	var triggers int
	if err := s.rdb.QueryRow("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'").Scan(&triggers); err != nil || triggers != 0 {
		t.Fatalf("%d triggers after the migration (%v)", triggers, err)
	}
	l, err := s.List(context.Background(), store.Filter{})
	if err != nil || len(l) != 1 || l[0].Key != "old" {
		t.Fatalf("entries after the migration: %+v, %v", l, err)
	}
	// Listing dead letters and live entries uses the partial indexes.
	for state, index := range map[store.State]string{store.StateDead: "deliveries_dead", store.StatePending: "deliveries_live", store.StateSending: "deliveries_sending"} {
		q, args := listQuery(store.Filter{State: state, Limit: 10})
		var plan string
		err = s.rdb.QueryRow("EXPLAIN QUERY PLAN "+q, args...).Scan(new(int), new(int), new(int), &plan)
		if err != nil || plan != fmt.Sprintf("SEARCH deliveries USING INDEX %s (id>?)", index) {
			t.Errorf("listing %s: plan %q, %v", state, plan, err)
		}
	}
}

// Status reads the counts kept in delivery_counts, a few rows, and the oldest live entry
// from the first entry of the live index: nothing it reads grows with the queue.
func TestCountsReadKeptCounts(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "q.db"), Options{})
	if _, err := s.Counts(context.Background()); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		countsSQL: "SCAN delivery_counts",
		"SELECT created_at FROM deliveries WHERE state IN ('pending', 'sending') ORDER BY id LIMIT 1": "SCAN deliveries USING INDEX deliveries_live",
	} {
		rows, err := s.rdb.Query("EXPLAIN QUERY PLAN " + q)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var detail string
			if err := rows.Scan(new(int), new(int), new(int), &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if !slices.Equal(plan, []string{want}) {
			t.Errorf("plan of %s:\n%s\nwant %s", q, strings.Join(plan, "\n"), want)
		}
	}
}
