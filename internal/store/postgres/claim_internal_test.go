package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/postgres/pgtest"
)

// One run of the workers' group claims, completes and explains each request as the calls
// one by one would: the same id claimed twice goes to the first, a completion by another
// epoch is refused, an unknown id is not found; and a batch that fails makes none of its
// changes.
func TestOpsGroupOneBatch(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, pgtest.DSN(t), WithTestSettings(Options{HostID: "host-a"}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []int64
	for i := range 4 {
		e, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: fmt.Sprint("k", i), Payload: []byte("p")})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	ep, _ := s.NewEpoch(ctx)
	if _, err := s.MarkSending(ctx, ids[0], ep, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkSending(ctx, ids[1], ep, time.Minute); err != nil {
		t.Fatal(err)
	}
	res, err := s.opsGroup(ctx, []opReq{
		{kind: opComplete, id: ids[0], epoch: ep},
		{kind: opClaim, id: ids[2], epoch: ep, lease: time.Minute},
		{kind: opClaim, id: ids[2], epoch: ep, lease: time.Minute}, // the same id again
		{kind: opComplete, id: ids[1], epoch: ep + 100},            // not its owner
		{kind: opClaim, id: 999999, epoch: ep, lease: time.Minute},
		{kind: opGet, id: ids[3]},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].err != nil {
		t.Fatalf("complete: %v", res[0].err)
	}
	if res[1].err != nil || res[1].e.ID != ids[2] || res[1].e.State != store.StateSending || string(res[1].e.Payload) != "p" {
		t.Fatalf("claim = %+v", res[1])
	}
	if !errors.Is(res[2].err, store.ErrNotClaimable) {
		t.Fatalf("second claim of the same id: %v", res[2].err)
	}
	if !errors.Is(res[3].err, store.ErrNotOwner) {
		t.Fatalf("completion by another epoch: %v", res[3].err)
	}
	if !errors.Is(res[4].err, store.ErrNotFound) {
		t.Fatalf("claim of an unknown id: %v", res[4].err)
	}
	if res[5].err != nil || res[5].e.ID != ids[3] {
		t.Fatalf("get = %+v", res[5])
	}
	for id, want := range map[int64]store.State{ids[0]: store.StateDelivered, ids[1]: store.StateSending, ids[2]: store.StateSending} {
		if e, err := s.Get(ctx, id); err != nil || e.State != want {
			t.Fatalf("entry %d: %+v %v, want %s", id, e.State, err, want)
		}
	}

	// A batch whose second statement fails: the completion in it is not made either.
	if _, err := s.MarkSending(ctx, ids[3], ep, time.Minute); err != nil {
		t.Fatal(err)
	}
	// An entry whose attempts are at the integer's largest: claiming it overflows them, and
	// the claim's statement fails.
	e, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "overflow", Payload: []byte("p")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "UPDATE schedd_deliveries SET attempts = 2147483647 WHERE id = $1", e.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.opsGroup(ctx, []opReq{
		{kind: opComplete, id: ids[3], epoch: ep},
		{kind: opClaim, id: e.ID, epoch: ep, lease: time.Minute},
	})
	if err == nil {
		t.Fatal("the batch with a failing claim succeeded")
	}
	if e, err := s.Get(ctx, ids[3]); err != nil || e.State != store.StateSending {
		t.Fatalf("entry %d after the failed batch: %+v %v, want still sending", ids[3], e.State, err)
	}
}

// The workers' claims and completions find their rows by id, whatever the statistics say.
// A backlog due tomorrow, analyzed, tells the planner that nothing is due now; the entries
// enqueued since are due now. A claim that let the planner search by the due time read every
// due entry for each claim of 16 (the drain of 20,000 entries behind 1,000,000 ran at half
// the empty store's rate); each statement's plan looks its ids up.
func TestClaimsFindTheirRowsByID(t *testing.T) {
	ctx := context.Background()
	s := openReady(t, pgtest.DSN(t), "claims")
	now := time.Now().UnixMilli()
	fill := func(from, to int, next int64) {
		t.Helper()
		_, err := s.pool.Exec(ctx, `INSERT INTO schedd_deliveries
			(sink, idem_key, payload, payload_size, payload_hash, state, next_attempt_at, created_at, updated_at)
			SELECT 'hook', 'claims-' || g, '\x00', 1, '\x00', 'pending', $3, 0, 0 FROM generate_series($1::int, $2::int) g`,
			from, to, next)
		if err != nil {
			t.Fatal(err)
		}
	}
	fill(1, 50000, now+24*time.Hour.Milliseconds())
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE schedd_deliveries"); err != nil {
		t.Fatal(err)
	}
	fill(50001, 52000, now)
	var ids []int64
	if err := s.pool.QueryRow(ctx, "SELECT array_agg(id) FROM schedd_deliveries WHERE idem_key LIKE 'claims-5000_'").Scan(&ids); err != nil || len(ids) != 10 {
		t.Fatalf("ids: %v %v", ids, err)
	}
	until := now + time.Minute.Milliseconds()
	for _, q := range []struct {
		name, sql string
		args      []any
	}{
		{"claim if due", claimDueManySQL, []any{now, int64(1), ids, until, 5}},
		{"claim", claimManySQL, []any{now, int64(1), ids, until, "claims"}},
		{"complete", completeManySQL, []any{now, ids, int64(1)}},
	} {
		p := explain(t, s.pool, q.sql, q.args...)
		byID := false
		for line := range strings.Lines(p) {
			byID = byID || strings.Contains(line, "Index Cond:") && strings.Contains(line, "id = ANY")
		}
		if !byID || strings.Contains(p, "schedd_deliveries_next") || strings.Contains(p, "Seq Scan on schedd_deliveries") {
			t.Errorf("%s: plan\n%s\nwant an index scan on the ids", q.name, p)
		}
	}
}
