package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/store"
)

// Bounds are the limits a conformance store is built with.
type Bounds struct {
	MaxEntries int
	MaxPayload int
}

// Factory builds an empty store for one subtest.
type Factory func(t *testing.T, b Bounds) store.Store

// Run checks that a Store implementation has the semantics store.Store documents.
func Run(t *testing.T, newStore Factory) {
	defaults := Bounds{MaxEntries: 1000, MaxPayload: 1024}
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s store.Store)
		b    Bounds
	}{
		{"EnqueueGet", testEnqueueGet, defaults},
		{"IdempotentEnqueue_P11", testIdempotent, defaults},
		{"Invalid", testInvalid, defaults},
		{"Bounds", testBounds, Bounds{MaxEntries: 3, MaxPayload: 16}},
		{"EnqueueBatch", testBatch, Bounds{MaxEntries: 1000, MaxPayload: 16}},
		{"EnqueueBatchQueueFull", testBatchFull, Bounds{MaxEntries: 3, MaxPayload: 16}},
		{"DeliverLifecycle", testDeliver, defaults},
		{"FailRelease", testFailRelease, defaults},
		{"DeadRetry", testDeadRetry, defaults},
		{"Drop", testDrop, defaults},
		{"Purge", testPurge, defaults},
		{"InterruptedAndFencing", testInterrupted, defaults},
		{"ClaimIfDue", testClaimIfDue, defaults},
		{"ListAndLive", testList, defaults},
		{"Counts", testCounts, defaults},
		{"CountsFollowRows", testCountsFollowRows, Bounds{MaxEntries: 40, MaxPayload: 16}},
		{"NearAndFirstDue", testNear, defaults},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, tc.b)
			tc.fn(t, s)
			// Whatever the case did, the counts are those of the rows it left.
			CheckCounts(t, s)
		})
	}
}

func enqueue(t *testing.T, s store.Store, key string, opts ...func(*store.NewEntry)) store.Entry {
	t.Helper()
	n := store.NewEntry{Sink: "hook", Key: key, Payload: []byte("payload " + key)}
	for _, o := range opts {
		o(&n)
	}
	e, created, err := s.Enqueue(context.Background(), n)
	if err != nil {
		t.Fatalf("enqueue %s: %v", key, err)
	}
	if !created {
		t.Fatalf("enqueue %s: created=false for a new key", key)
	}
	return e
}

func get(t *testing.T, s store.Store, id int64) store.Entry {
	t.Helper()
	e, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("get %d: %v", id, err)
	}
	return e
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func epoch(t *testing.T, s store.Store) int64 {
	t.Helper()
	ep, err := s.NewEpoch(context.Background())
	must(t, "new epoch", err)
	return ep
}

func testEnqueueGet(t *testing.T, s store.Store) {
	ctx := context.Background()
	before := time.Now().Add(-time.Second)
	e := enqueue(t, s, "k1", func(n *store.NewEntry) {
		n.Headers = map[string]string{"X-Trace": "abc"}
		n.Priority = 3
		n.ExpiresAt = before.Add(time.Hour)
	})
	if e.ID == 0 || e.State != store.StatePending || e.Attempts != 0 || e.Failures != 0 {
		t.Fatalf("new entry = %+v", e)
	}
	g := get(t, s, e.ID)
	if g.Sink != "hook" || g.Key != "k1" || g.Headers["X-Trace"] != "abc" || g.Priority != 3 ||
		!bytes.Equal(g.Payload, []byte("payload k1")) || g.PayloadSize != len("payload k1") {
		t.Fatalf("get = %+v", g)
	}
	if g.CreatedAt.Before(before) || g.NextAttemptAt.Before(g.CreatedAt) || g.ExpiresAt.IsZero() {
		t.Fatalf("times = created %v next %v expires %v", g.CreatedAt, g.NextAttemptAt, g.ExpiresAt)
	}
	_, err := s.Get(ctx, e.ID+100)
	wantErr(t, "get missing", err, store.ErrNotFound)

	notBefore := time.Now().Add(time.Hour)
	later := enqueue(t, s, "k2", func(n *store.NewEntry) { n.NotBefore = notBefore })
	if g := get(t, s, later.ID); g.NextAttemptAt.UnixMilli() < notBefore.UnixMilli() {
		t.Fatalf("next attempt = %v, want not before %v", g.NextAttemptAt, notBefore)
	}
}

func testIdempotent(t *testing.T, s store.Store) {
	ctx := context.Background()
	e := enqueue(t, s, "same")
	again, created, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "same", Payload: []byte("payload same")})
	must(t, "enqueue again", err)
	if created || again.ID != e.ID {
		t.Fatalf("second enqueue: created=%v id=%d, want false, %d", created, again.ID, e.ID)
	}
	_, _, err = s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "same", Payload: []byte("other")})
	wantErr(t, "same key, other payload", err, store.ErrKeyMismatch)
	_, _, err = s.Enqueue(ctx, store.NewEntry{Sink: "other", Key: "same", Payload: []byte("payload same")})
	wantErr(t, "same key, other sink", err, store.ErrKeyMismatch)
	if l, _ := s.List(ctx, store.Filter{}); len(l) != 1 {
		t.Fatalf("rows = %d, want 1", len(l))
	}
	// The key keeps deduplicating once delivered (tombstone, P2).
	ep := epoch(t, s)
	_, err = s.MarkSending(ctx, e.ID, ep, time.Minute)
	must(t, "mark sending", err)
	must(t, "complete", s.Complete(ctx, e.ID, ep))
	again, created, err = s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "same", Payload: []byte("payload same")})
	must(t, "enqueue after delivery", err)
	if created || again.ID != e.ID || again.State != store.StateDelivered {
		t.Fatalf("after delivery: created=%v %+v", created, again)
	}
}

func testInvalid(t *testing.T, s store.Store) {
	ctx := context.Background()
	for name, n := range map[string]store.NewEntry{
		"no sink":       {Key: "k", Payload: []byte("x")},
		"no key":        {Sink: "hook", Payload: []byte("x")},
		"header name":   {Sink: "hook", Key: "k", Headers: map[string]string{"Bad Name": "x"}},
		"header value":  {Sink: "hook", Key: "k", Headers: map[string]string{"X": "a\r\nInjected: 1"}},
		"key too large": {Sink: "hook", Key: string(bytes.Repeat([]byte("k"), store.MaxKeyLen+1))},
	} {
		_, _, err := s.Enqueue(ctx, n)
		wantErr(t, name, err, store.ErrInvalid)
	}
}

func testBounds(t *testing.T, s store.Store) {
	ctx := context.Background()
	_, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "big", Payload: make([]byte, 17)})
	wantErr(t, "payload 17 > 16", err, store.ErrPayloadTooLarge)
	var be *store.BoundError
	if !errors.As(err, &be) || be.Limit != 16 || be.Got != 17 {
		t.Fatalf("bound error = %#v", err)
	}
	var es []store.Entry
	for i := range 3 {
		es = append(es, enqueue(t, s, fmt.Sprint("k", i)))
	}
	_, _, err = s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "k3", Payload: []byte("x")})
	wantErr(t, "4th entry with max 3", err, store.ErrQueueFull)
	// A seen key still answers (P11), and nothing stored was touched.
	again, created, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "k0", Payload: []byte("payload k0")})
	must(t, "seen key while full", err)
	if created || again.ID != es[0].ID {
		t.Fatalf("seen key while full: created=%v id=%d", created, again.ID)
	}
	for _, e := range es {
		if g := get(t, s, e.ID); g.State != store.StatePending || !bytes.Equal(g.Payload, e.Payload) {
			t.Fatalf("entry %d touched: %+v", e.ID, g)
		}
	}
	// Delivering one makes room.
	ep := epoch(t, s)
	_, err = s.MarkSending(ctx, es[0].ID, ep, time.Minute)
	must(t, "mark", err)
	must(t, "complete", s.Complete(ctx, es[0].ID, ep))
	enqueue(t, s, "k3")
}

func testDeliver(t *testing.T, s store.Store) {
	ctx := context.Background()
	e := enqueue(t, s, "k")
	ep := epoch(t, s)
	m, err := s.MarkSending(ctx, e.ID, ep, time.Minute)
	must(t, "mark sending", err)
	if m.State != store.StateSending || m.Epoch != ep || m.Attempts != 1 || m.LastAttemptAt.IsZero() ||
		!bytes.Equal(m.Payload, e.Payload) || !m.LeaseUntil.After(m.LastAttemptAt) {
		t.Fatalf("claimed = %+v", m)
	}
	_, err = s.MarkSending(ctx, e.ID, ep, time.Minute)
	wantErr(t, "second claim, same epoch, lease live", err, store.ErrNotClaimable)
	wantErr(t, "complete by another epoch", s.Complete(ctx, e.ID, ep+1), store.ErrNotOwner)
	wantErr(t, "complete missing", s.Complete(ctx, e.ID+100, ep), store.ErrNotFound)
	must(t, "complete", s.Complete(ctx, e.ID, ep))
	g := get(t, s, e.ID)
	if g.State != store.StateDelivered || g.FinishedAt.IsZero() || g.Attempts != 1 {
		t.Fatalf("delivered = %+v", g)
	}
	// No resurrection (P2): a delivered entry is never claimable, nor dead-lettered, nor due.
	_, err = s.MarkSending(ctx, e.ID, ep+1, time.Minute)
	wantErr(t, "claim delivered", err, store.ErrNotClaimable)
	wantErr(t, "dead-letter delivered", s.Dead(ctx, e.ID, ep, "x", ""), store.ErrWrongState)
	_, err = s.ClaimIfDue(ctx, e.ID, ep+1, time.Minute, 5)
	wantErr(t, "claim delivered if due", err, store.ErrNotClaimable)
	_, err = s.MarkSending(ctx, e.ID+100, ep, time.Minute)
	wantErr(t, "claim missing", err, store.ErrNotFound)
}

func testFailRelease(t *testing.T, s store.Store) {
	ctx := context.Background()
	e := enqueue(t, s, "k")
	ep := epoch(t, s)
	_, err := s.MarkSending(ctx, e.ID, ep, time.Minute)
	must(t, "mark", err)
	next := time.Now().Add(25 * time.Second)
	wantErr(t, "fail by other epoch", s.Fail(ctx, e.ID, ep+1, store.Failure{Err: "x", NextAt: next}), store.ErrNotOwner)
	must(t, "fail", s.Fail(ctx, e.ID, ep, store.Failure{Err: "503 Service Unavailable", NextAt: next}))
	g := get(t, s, e.ID)
	if g.State != store.StatePending || g.Failures != 1 || g.LastError != "503 Service Unavailable" ||
		g.NextAttemptAt.UnixMilli() != next.UnixMilli() || g.Epoch != 0 {
		t.Fatalf("after fail = %+v", g)
	}
	_, err = s.ClaimIfDue(ctx, e.ID, ep, time.Minute, 5)
	wantErr(t, "claim before next_attempt_at", err, store.ErrNotClaimable)
	_, err = s.MarkSending(ctx, e.ID, ep, time.Minute)
	must(t, "mark again", err)
	must(t, "release", s.Release(ctx, e.ID, ep, next))
	g = get(t, s, e.ID)
	if g.State != store.StatePending || g.Failures != 1 || g.Attempts != 2 {
		t.Fatalf("after release = %+v", g)
	}
	wantErr(t, "release not claimed", s.Release(ctx, e.ID, ep, next), store.ErrNotOwner)
	// The last allowed failure dead-letters and still counts.
	_, err = s.MarkSending(ctx, e.ID, ep, time.Minute)
	must(t, "mark a third time", err)
	must(t, "last failure", s.Fail(ctx, e.ID, ep, store.Failure{Err: "HTTP 500", DeadReason: "max_retries"}))
	g = get(t, s, e.ID)
	if g.State != store.StateDead || g.Failures != 2 || g.DeadReason != "max_retries" || g.LastError != "HTTP 500" ||
		g.FinishedAt.IsZero() || g.Attempts != 3 {
		t.Fatalf("after last failure = %+v", g)
	}
	if c, _ := s.Counts(ctx); c.Pending+c.Sending != 0 || c.Dead != 1 {
		t.Fatalf("counts after last failure = %+v", c)
	}
}

func testDeadRetry(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := enqueue(t, s, "a")
	b := enqueue(t, s, "b")
	c := enqueue(t, s, "c")
	ep := epoch(t, s)
	must(t, "dead pending", s.Dead(ctx, a.ID, ep, "expired", ""))
	_, err := s.MarkSending(ctx, b.ID, ep, time.Minute)
	must(t, "mark b", err)
	must(t, "dead owned", s.Dead(ctx, b.ID, ep, "permanent", "404 Not Found"))
	g := get(t, s, b.ID)
	if g.State != store.StateDead || g.DeadReason != "permanent" || g.LastError != "404 Not Found" || g.Attempts != 1 {
		t.Fatalf("dead = %+v", g)
	}
	_, err = s.Retry(ctx, c.ID)
	wantErr(t, "retry pending", err, store.ErrWrongState)
	r, err := s.Retry(ctx, b.ID)
	must(t, "retry dead", err)
	if r.State != store.StatePending || r.Failures != 0 || r.DeadReason != "" || r.LastError != "404 Not Found" {
		t.Fatalf("retried = %+v", r)
	}
	_, err = s.Retry(ctx, 999)
	wantErr(t, "retry missing", err, store.ErrNotFound)
}

func testDrop(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := enqueue(t, s, "a")
	b := enqueue(t, s, "b")
	ep := epoch(t, s)
	_, err := s.MarkSending(ctx, b.ID, ep, time.Minute)
	must(t, "mark", err)
	wantErr(t, "drop sending", s.Drop(ctx, b.ID), store.ErrBusy)
	must(t, "drop pending", s.Drop(ctx, a.ID))
	_, err = s.Get(ctx, a.ID)
	wantErr(t, "get dropped", err, store.ErrNotFound)
	must(t, "complete", s.Complete(ctx, b.ID, ep))
	wantErr(t, "drop delivered", s.Drop(ctx, b.ID), store.ErrWrongState)
	wantErr(t, "drop missing", s.Drop(ctx, 999), store.ErrNotFound)
	again := enqueue(t, s, "a") // a dropped entry's key is free again
	if again.ID == a.ID {
		t.Fatalf("a dropped id was reused: %d", a.ID)
	}
}

func testPurge(t *testing.T, s store.Store) {
	ctx := context.Background()
	ep := epoch(t, s)
	d := enqueue(t, s, "delivered")
	_, err := s.MarkSending(ctx, d.ID, ep, time.Minute)
	must(t, "mark", err)
	must(t, "complete", s.Complete(ctx, d.ID, ep))
	x := enqueue(t, s, "dead")
	must(t, "dead", s.Dead(ctx, x.ID, ep, "r", ""))
	p := enqueue(t, s, "pending")
	_, err = s.Purge(ctx, store.PurgeFilter{State: store.StatePending, OlderThan: time.Now()})
	wantErr(t, "purge pending", err, store.ErrInvalid)
	n, err := s.Purge(ctx, store.PurgeFilter{State: store.StateDead, OlderThan: time.Now().Add(-time.Hour)})
	if err != nil || n != 0 {
		t.Fatalf("purge dead older than an hour ago = %d, %v", n, err)
	}
	n, err = s.Purge(ctx, store.PurgeFilter{State: store.StateDead, OlderThan: time.Now().Add(time.Hour)})
	if err != nil || n != 1 {
		t.Fatalf("purge dead = %d, %v", n, err)
	}
	n, err = s.Purge(ctx, store.PurgeFilter{State: store.StateDelivered, OlderThan: time.Now().Add(time.Hour)})
	if err != nil || n != 1 {
		t.Fatalf("purge delivered = %d, %v", n, err)
	}
	// With a limit, a purge goes in batches: at most Limit each, until none is left.
	for i := range 5 {
		x := enqueue(t, s, fmt.Sprintf("dead-%d", i))
		must(t, "dead", s.Dead(ctx, x.ID, ep, "r", ""))
	}
	for _, want := range []int{2, 2, 1, 0} {
		n, err = s.Purge(ctx, store.PurgeFilter{State: store.StateDead, OlderThan: time.Now().Add(time.Hour), Limit: 2})
		if err != nil || n != want {
			t.Fatalf("purge dead with limit 2 = %d, %v; want %d", n, err, want)
		}
	}
	if g := get(t, s, p.ID); g.State != store.StatePending {
		t.Fatalf("pending touched by purge: %+v", g)
	}
}

func testInterrupted(t *testing.T, s store.Store) {
	ctx := context.Background()
	e := enqueue(t, s, "k")
	old := epoch(t, s)
	_, err := s.MarkSending(ctx, e.ID, old, time.Hour)
	must(t, "mark", err)
	cur := epoch(t, s)
	if cur <= old {
		t.Fatalf("epochs not increasing: %d then %d", old, cur)
	}
	if g := get(t, s, e.ID); !g.Interrupted(cur) || g.Interrupted(old) {
		t.Fatalf("interrupted = %+v, want interrupted for %d, not for its own epoch %d", g, cur, old)
	}
	// The dead epoch's lease is void at once: the new epoch claims without waiting.
	m, err := s.MarkSending(ctx, e.ID, cur, time.Minute)
	must(t, "reclaim", err)
	if m.Attempts != 2 || m.Epoch != cur {
		t.Fatalf("reclaimed = %+v", m)
	}
	// An interrupted entry can be dead-lettered by the new epoch without a claim.
	x := enqueue(t, s, "x")
	_, err = s.MarkSending(ctx, x.ID, old, time.Hour)
	must(t, "mark x", err)
	must(t, "dead interrupted", s.Dead(ctx, x.ID, cur, "expired", ""))
	// Fencing: the old epoch can no longer record an outcome.
	wantErr(t, "complete by old epoch", s.Complete(ctx, e.ID, old), store.ErrNotOwner)
	wantErr(t, "fail by old epoch", s.Fail(ctx, e.ID, old, store.Failure{NextAt: time.Now()}), store.ErrNotOwner)
	must(t, "complete by new epoch", s.Complete(ctx, e.ID, cur))
	// An expired lease of the own epoch is claimable too.
	f := enqueue(t, s, "f")
	_, err = s.MarkSending(ctx, f.ID, cur, 0)
	must(t, "mark with zero lease", err)
	_, err = s.MarkSending(ctx, f.ID, cur, time.Minute)
	must(t, "claim expired lease", err)
}

func testList(t *testing.T, s store.Store) {
	ctx := context.Background()
	var ids []int64
	for i := range 5 {
		e := enqueue(t, s, fmt.Sprint("k", i), func(n *store.NewEntry) {
			if i%2 == 1 {
				n.Sink = "other"
			}
		})
		ids = append(ids, e.ID)
	}
	ep := epoch(t, s)
	must(t, "dead", s.Dead(ctx, ids[0], ep, "r", ""))
	page, err := s.List(ctx, store.Filter{Limit: 2})
	must(t, "list", err)
	if len(page) != 2 || page[0].ID != ids[0] || page[1].ID != ids[1] || page[0].Payload != nil {
		t.Fatalf("page 1 = %+v", page)
	}
	page, err = s.List(ctx, store.Filter{AfterID: page[1].ID, Limit: 2})
	must(t, "list page 2", err)
	if len(page) != 2 || page[0].ID != ids[2] {
		t.Fatalf("page 2 = %+v", page)
	}
	page, _ = s.List(ctx, store.Filter{Sink: "other"})
	if len(page) != 2 || page[0].ID != ids[1] || page[1].ID != ids[3] {
		t.Fatalf("sink filter = %+v", page)
	}
	page, _ = s.List(ctx, store.Filter{State: store.StateDead})
	if len(page) != 1 || page[0].ID != ids[0] {
		t.Fatalf("state filter = %+v", page)
	}
	refs, err := s.Live(ctx, 0, 3)
	must(t, "live", err)
	if len(refs) != 3 || refs[0].ID != ids[1] || refs[2].ID != ids[3] || refs[0].Sink != "other" {
		t.Fatalf("live = %+v", refs)
	}
	refs, _ = s.Live(ctx, refs[2].ID, 3)
	if len(refs) != 1 || refs[0].ID != ids[4] {
		t.Fatalf("live page 2 = %+v", refs)
	}
}

func testCounts(t *testing.T, s store.Store) {
	ctx := context.Background()
	c, err := s.Counts(ctx)
	must(t, "counts", err)
	if c != (store.Counts{}) {
		t.Fatalf("empty counts = %+v", c)
	}
	ep := epoch(t, s)
	a := enqueue(t, s, "a")
	b := enqueue(t, s, "b")
	enqueue(t, s, "c")
	d := enqueue(t, s, "d")
	_, err = s.MarkSending(ctx, a.ID, ep, time.Minute)
	must(t, "mark", err)
	must(t, "complete", s.Complete(ctx, a.ID, ep))
	_, err = s.MarkSending(ctx, b.ID, ep, time.Minute)
	must(t, "mark", err)
	must(t, "dead", s.Dead(ctx, d.ID, ep, "r", ""))
	c, err = s.Counts(ctx)
	must(t, "counts", err)
	if c.Pending != 1 || c.Sending != 1 || c.Delivered != 1 || c.Dead != 1 || !c.OldestAt.Equal(b.CreatedAt) {
		t.Fatalf("counts = %+v", c)
	}
}
