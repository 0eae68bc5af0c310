package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/store"
)

// ClaimIfDue claims a pending entry that is due, not expired and under the failures given,
// as MarkSending does; any other entry is left as it is, ErrNotClaimable.
func testClaimIfDue(t *testing.T, s store.Store) {
	ctx := context.Background()
	ep := epoch(t, s)
	due := enqueue(t, s, "due")
	later := enqueue(t, s, "later", func(n *store.NewEntry) { n.NotBefore = time.Now().Add(time.Hour) })
	expired := enqueue(t, s, "expired", func(n *store.NewEntry) { n.ExpiresAt = time.Now().Add(50 * time.Millisecond) })
	failed := enqueue(t, s, "failed")
	sending := enqueue(t, s, "sending")
	delivered := enqueue(t, s, "delivered")

	// failed: one failure, due again at once.
	_, err := s.MarkSending(ctx, failed.ID, ep, time.Minute)
	must(t, "claim failed", err)
	must(t, "fail", s.Fail(ctx, failed.ID, ep, store.Failure{Err: "503", NextAt: time.Now()}))
	// sending: held by another epoch.
	_, err = s.MarkSending(ctx, sending.ID, ep+1, time.Minute)
	must(t, "claim sending", err)
	_, err = s.MarkSending(ctx, delivered.ID, ep, time.Minute)
	must(t, "claim delivered", err)
	must(t, "complete", s.Complete(ctx, delivered.ID, ep))
	time.Sleep(60 * time.Millisecond) // expired is past its expiry

	for _, tc := range []struct {
		what string
		e    store.Entry
		max  int
	}{
		{"not due", later, 5},
		{"expired", expired, 5},
		{"failures at the bound", failed, 1},
		{"sending under another epoch", sending, 5},
		{"delivered", delivered, 5},
	} {
		before := get(t, s, tc.e.ID)
		_, err := s.ClaimIfDue(ctx, tc.e.ID, ep, time.Minute, tc.max)
		wantErr(t, tc.what, err, store.ErrNotClaimable)
		if after := get(t, s, tc.e.ID); after.State != before.State || after.Attempts != before.Attempts || after.Epoch != before.Epoch {
			t.Fatalf("%s: changed by a refused claim: %+v, was %+v", tc.what, after, before)
		}
	}
	_, err = s.ClaimIfDue(ctx, delivered.ID+100, ep, time.Minute, 5)
	wantErr(t, "missing", err, store.ErrNotFound)

	for _, e := range []store.Entry{due, failed} {
		before := get(t, s, e.ID)
		m, err := s.ClaimIfDue(ctx, e.ID, ep, time.Minute, 2)
		must(t, "claim "+e.Key, err)
		if m.State != store.StateSending || m.Epoch != ep || m.Attempts != before.Attempts+1 ||
			string(m.Payload) != string(e.Payload) || !m.LeaseUntil.After(m.LastAttemptAt) {
			t.Fatalf("claimed %s = %+v", e.Key, m)
		}
		if g := get(t, s, e.ID); g.State != store.StateSending || g.Epoch != ep {
			t.Fatalf("%s after the claim = %+v", e.Key, g)
		}
	}
	_, err = s.ClaimIfDue(ctx, due.ID, ep, time.Minute, 5)
	wantErr(t, "claimed already", err, store.ErrNotClaimable)
}
