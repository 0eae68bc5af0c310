package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/store"
)

// Near passes the pending entries due before its bound, in due order, then the sending
// ones, a page at a time; FirstDue finds the earliest pending entry due at or after a time.
// Neither passes a finished entry.
func testNear(t *testing.T, s store.Store) {
	ctx := context.Background()
	ep := epoch(t, s)
	now := time.Now()
	at := func(d time.Duration) func(*store.NewEntry) {
		return func(n *store.NewEntry) { n.NotBefore = now.Add(d) }
	}
	// Enqueued out of due order.
	in3 := enqueue(t, s, "in3", at(3*time.Minute))
	in1 := enqueue(t, s, "in1", at(time.Minute))
	in2 := enqueue(t, s, "in2", at(2*time.Minute))
	far := enqueue(t, s, "far", at(24*time.Hour))
	farther := enqueue(t, s, "farther", at(48*time.Hour))
	sending := enqueue(t, s, "sending")
	_, err := s.MarkSending(ctx, sending.ID, ep, time.Minute)
	must(t, "mark sending", err)
	done := enqueue(t, s, "done", at(time.Minute))
	_, err = s.MarkSending(ctx, done.ID, ep, time.Minute)
	must(t, "mark sending", err)
	must(t, "complete", s.Complete(ctx, done.ID, ep))

	var got []string
	var pages []int
	err = s.Near(ctx, now.Add(time.Hour), 2, func(refs []store.Ref) {
		pages = append(pages, len(refs))
		for _, r := range refs {
			got = append(got, fmt.Sprint(r.ID, r.State))
		}
	})
	must(t, "near", err)
	want := []string{fmt.Sprint(in1.ID, store.StatePending), fmt.Sprint(in2.ID, store.StatePending),
		fmt.Sprint(in3.ID, store.StatePending), fmt.Sprint(sending.ID, store.StateSending)}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(pages) < 2 || pages[0] != 2 {
		t.Fatalf("near: %v in pages %v, want %v in pages of at most 2", got, pages, want)
	}

	for _, c := range []struct {
		from time.Time
		want time.Time
		ok   bool
	}{
		{now.Add(time.Hour), far.NextAttemptAt, true},
		{far.NextAttemptAt, far.NextAttemptAt, true},
		{far.NextAttemptAt.Add(time.Millisecond), farther.NextAttemptAt, true},
		{now.Add(72 * time.Hour), time.Time{}, false},
	} {
		first, ok, err := s.FirstDue(ctx, c.from)
		must(t, "first due", err)
		if ok != c.ok || !first.Equal(c.want) {
			t.Fatalf("first due from %v: %v %v, want %v %v", c.from, first, ok, c.want, c.ok)
		}
	}
}
