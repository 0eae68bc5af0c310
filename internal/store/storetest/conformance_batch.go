package storetest

import (
	"context"
	"testing"

	"github.com/schedd/schedd/internal/store"
)

func batch(t *testing.T, s store.Store, ns ...store.NewEntry) []store.EnqueueResult {
	t.Helper()
	res, err := s.EnqueueBatch(context.Background(), ns)
	must(t, "enqueue batch", err)
	if len(res) != len(ns) {
		t.Fatalf("%d results for %d entries", len(res), len(ns))
	}
	return res
}

// Each entry of a batch is stored or refused as Enqueue would store or refuse it alone,
// in order, and its error keeps out that entry only.
func testBatch(t *testing.T, s store.Store) {
	ctx := context.Background()
	before := enqueue(t, s, "before")
	entry := func(key, payload string) store.NewEntry {
		return store.NewEntry{Sink: "hook", Key: key, Payload: []byte(payload)}
	}
	res := batch(t, s,
		entry("a", "one"),
		store.NewEntry{Key: "no-sink", Payload: []byte("x")},
		entry("big", "seventeen bytes!!"),
		entry("a", "one"),   // the same key again in the batch: the first one's entry
		entry("a", "other"), // and with another payload: a mismatch
		entry("before", "payload before"),
		entry("b", "two"),
	)
	if !res[0].Created || res[0].Err != nil || res[0].Entry.ID == 0 || res[0].Entry.State != store.StatePending {
		t.Fatalf("[0] = %+v", res[0])
	}
	wantErr(t, "[1] no sink", res[1].Err, store.ErrInvalid)
	wantErr(t, "[2] payload 17 > 16", res[2].Err, store.ErrPayloadTooLarge)
	if res[3].Created || res[3].Err != nil || res[3].Entry.ID != res[0].Entry.ID {
		t.Fatalf("[3] = %+v, want entry %d, not created", res[3], res[0].Entry.ID)
	}
	wantErr(t, "[4] same key, other payload", res[4].Err, store.ErrKeyMismatch)
	if res[5].Created || res[5].Err != nil || res[5].Entry.ID != before.ID {
		t.Fatalf("[5] = %+v, want entry %d, not created", res[5], before.ID)
	}
	if !res[6].Created || res[6].Entry.ID <= res[0].Entry.ID {
		t.Fatalf("[6] = %+v", res[6])
	}
	for _, i := range []int{0, 6} {
		g := get(t, s, res[i].Entry.ID)
		if g.Key != res[i].Entry.Key || string(g.Payload) != map[int]string{0: "one", 6: "two"}[i] {
			t.Fatalf("stored [%d] = %+v", i, g)
		}
	}
	if l, _ := s.List(ctx, store.Filter{}); len(l) != 3 {
		t.Fatalf("%d entries stored, want 3 (before, a, b)", len(l))
	}
	if res, err := s.EnqueueBatch(ctx, nil); err != nil || len(res) != 0 {
		t.Fatalf("empty batch = %+v, %v", res, err)
	}
}

// A batch that fills the queue stores what fits, in order; the rest is ErrQueueFull, but
// a key seen before still gets its entry back.
func testBatchFull(t *testing.T, s store.Store) {
	seen := enqueue(t, s, "seen")
	res := batch(t, s,
		store.NewEntry{Sink: "hook", Key: "k1", Payload: []byte("1")},
		store.NewEntry{Sink: "hook", Key: "k2", Payload: []byte("2")},
		store.NewEntry{Sink: "hook", Key: "k3", Payload: []byte("3")},
		store.NewEntry{Sink: "hook", Key: "seen", Payload: []byte("payload seen")},
	)
	if !res[0].Created || !res[1].Created {
		t.Fatalf("results = %+v, want the first two created", res)
	}
	wantErr(t, "[2] the 4th live entry with max 3", res[2].Err, store.ErrQueueFull)
	if res[3].Err != nil || res[3].Created || res[3].Entry.ID != seen.ID {
		t.Fatalf("[3] = %+v, want entry %d", res[3], seen.ID)
	}
}
