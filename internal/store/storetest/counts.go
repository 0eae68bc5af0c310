package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/store"
)

// CheckCounts fails t unless s's Counts equal the entries List reads, state by state (and
// the quarantined dead letters), with the oldest live entry's creation time: the counts a
// store keeps as it writes are held to its rows.
func CheckCounts(t *testing.T, s store.Store) {
	t.Helper()
	if err := countsMatchRows(s); err != nil {
		t.Fatal(err)
	}
}

// countsMatchRows is CheckCounts' comparison: nil when they match.
func countsMatchRows(s store.Store) error {
	ctx := context.Background()
	var want store.Counts
	var after int64
	for {
		page, err := s.List(ctx, store.Filter{AfterID: after, Limit: 1000})
		if err != nil {
			return fmt.Errorf("list for the counts: %w", err)
		}
		for _, e := range page {
			switch e.State {
			case store.StatePending:
				want.Pending++
			case store.StateSending:
				want.Sending++
			case store.StateDelivered:
				want.Delivered++
			case store.StateDead:
				want.Dead++
				if e.Quarantined {
					want.Quarantined++
				}
			}
			if (e.State == store.StatePending || e.State == store.StateSending) && want.OldestAt.IsZero() {
				want.OldestAt = e.CreatedAt
			}
		}
		if len(page) == 0 {
			break
		}
		after = page[len(page)-1].ID
	}
	got, err := s.Counts(ctx)
	if err != nil {
		return fmt.Errorf("counts: %w", err)
	}
	if got.Pending != want.Pending || got.Sending != want.Sending || got.Delivered != want.Delivered ||
		got.Dead != want.Dead || got.Quarantined != want.Quarantined || !got.OldestAt.Equal(want.OldestAt) {
		return fmt.Errorf("counts %+v, the rows say %+v", got, want)
	}
	return nil
}

// Churn applies steps operations chosen at random (by seed) to s: enqueues one at a time
// and in batches (keys seen before among them), claims, completions, failures (some the
// last), releases, dead-letters, retries, drops and purges, on entries in every state, so
// most are refused as often as they succeed. After each it calls check with the
// operation's name. Refusals are the store's to make; any other error fails t.
func Churn(t *testing.T, s store.Store, seed uint64, steps int, check func(op string)) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, seed))
	ep := epoch(t, s)
	var ids []int64
	key := func() string { return fmt.Sprintf("k%d", rng.IntN(steps)) } // repeats on purpose
	pick := func() int64 {
		if len(ids) == 0 || rng.IntN(20) == 0 {
			return int64(rng.IntN(steps) + 1) // possibly no such entry
		}
		return ids[rng.IntN(len(ids))]
	}
	refused := func(err error) bool {
		for _, r := range []error{store.ErrNotFound, store.ErrNotClaimable, store.ErrNotOwner,
			store.ErrWrongState, store.ErrBusy, store.ErrQueueFull} {
			if errors.Is(err, r) {
				return true
			}
		}
		return false
	}
	for range steps {
		var op string
		var err error
		switch r := rng.IntN(100); {
		case r < 20:
			op = "enqueue"
			var e store.Entry
			e, _, err = s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: key(), Payload: []byte("p")})
			if err == nil {
				ids = append(ids, e.ID)
			}
		case r < 28:
			op = "enqueue batch"
			ns := make([]store.NewEntry, 1+rng.IntN(5))
			for i := range ns {
				ns[i] = store.NewEntry{Sink: "hook", Key: key(), Payload: []byte("p")}
			}
			var res []store.EnqueueResult
			res, err = s.EnqueueBatch(ctx, ns)
			for _, x := range res {
				if x.Err == nil {
					ids = append(ids, x.Entry.ID)
				}
			}
		case r < 45:
			op = "mark sending"
			_, err = s.MarkSending(ctx, pick(), ep, time.Minute)
		case r < 52:
			op = "claim if due"
			_, err = s.ClaimIfDue(ctx, pick(), ep, time.Minute, 3)
		case r < 62:
			op = "complete"
			err = s.Complete(ctx, pick(), ep)
		case r < 70:
			op = "fail"
			f := store.Failure{Err: "boom", NextAt: time.Now()}
			if rng.IntN(2) == 0 {
				f.DeadReason = "too many failures"
			}
			err = s.Fail(ctx, pick(), ep, f)
		case r < 75:
			op = "release"
			err = s.Release(ctx, pick(), ep, time.Now())
		case r < 82:
			op = "dead"
			err = s.Dead(ctx, pick(), ep, "by hand", "")
		case r < 89:
			op = "retry"
			_, err = s.Retry(ctx, pick())
		case r < 95:
			op = "drop"
			err = s.Drop(ctx, pick())
		default:
			op = "purge"
			f := store.PurgeFilter{State: store.StateDead, OlderThan: time.Now().Add(time.Hour), Limit: rng.IntN(3)}
			if rng.IntN(2) == 0 {
				f.State = store.StateDelivered
			}
			_, err = s.Purge(ctx, f)
		}
		if err != nil && !refused(err) {
			t.Fatalf("%s: %v", op, err)
		}
		check(op)
	}
}

// testCountsFollowRows churns a store and holds its counts to its rows after every step.
func testCountsFollowRows(t *testing.T, s store.Store) {
	Churn(t, s, 24, 300, func(op string) {
		if err := countsMatchRows(s); err != nil {
			t.Fatalf("after %s: %v", op, err)
		}
	})
}
