package deliveries

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

// lostClaimReply is a store whose next claims (MarkSending, ClaimIfDue) record the claim and
// then fail, as a database does that goes away between its commit and its reply.
type lostClaimReply struct {
	*storetest.Memory
	lose atomic.Int32 // how many claims lose their reply
}

func (l *lostClaimReply) MarkSending(ctx context.Context, id, epoch int64, lease time.Duration) (store.Entry, error) {
	return l.lost(l.Memory.MarkSending(ctx, id, epoch, lease))
}

func (l *lostClaimReply) ClaimIfDue(ctx context.Context, id, epoch int64, lease time.Duration, maxFailures int) (store.Entry, error) {
	return l.lost(l.Memory.ClaimIfDue(ctx, id, epoch, lease, maxFailures))
}

// lost turns a claim into a failure while claims are to lose their reply.
func (l *lostClaimReply) lost(e store.Entry, err error) (store.Entry, error) {
	if err == nil && l.lose.Add(-1) >= 0 {
		return store.Entry{}, fmt.Errorf("claim %d: %w (%w): unexpected EOF", e.ID, store.ErrUnavailable, store.ErrStorage)
	}
	return e, err
}

// A claim that was stored though the store reported a failure (its reply was lost) is not
// left sending until its lease runs out: the retry finds it claimed by its own process and
// unsent, releases it and sends it, once. This holds for an entry enqueued while the
// runtime runs and for one the recovery pass finds at startup.
func TestLostClaimReplyIsReleased(t *testing.T) {
	for _, atStart := range []bool{false, true} {
		t.Run(fmt.Sprint("at_start=", atStart), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ds := &lostClaimReply{Memory: storetest.NewMemory()}
				ds.lose.Store(2)
				sink := &fakeSink{}
				var e store.Entry
				if atStart {
					e = putEntry(ds.Memory, store.Entry{Sink: "hook", Key: "k", State: store.StatePending})
				}
				s := newService(t, parityConfig(), ds, map[string]Sink{"hook": sink})
				stop := start(t, s)
				defer stop()
				synctest.Wait()
				if !atStart {
					e = enqueueReq(t, s, Request{Sink: "hook", Key: "k", Payload: []byte("x")})
				}
				time.Sleep(time.Minute) // the lease is 5 minutes
				synctest.Wait()
				g := mustGet(t, ds, e.ID)
				if sends := sink.Sends(); len(sends) != 1 || g.State != store.StateDelivered {
					t.Fatalf("after two lost claim replies: %d sends, entry %+v; want it delivered once", len(sends), g)
				}
			})
		})
	}
}

// An enqueue whose commit reply was lost stored its entry without arming it; when the
// producer enqueues it again with the same key (created=false), the pending entry is armed
// and sent at once, by Enqueue and by EnqueueBatch, rather than at the next rescan of the
// store (never, on a store that is not shared).
func TestEnqueueAgainArmsStoredEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		sink := &fakeSink{}
		s := runHook(t, ds, sink)
		synctest.Wait()
		// What the lost commits stored, unknown to the runtime.
		a := putEntry(ds, store.Entry{Sink: "hook", Key: "a", Payload: []byte("x"), State: store.StatePending})
		b := putEntry(ds, store.Entry{Sink: "hook", Key: "b", Payload: []byte("x"), State: store.StatePending})
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := len(sink.Sends()); n != 0 {
			t.Fatalf("%d sends of entries nobody armed", n)
		}
		if e, created, err := s.Enqueue(context.Background(), Request{Sink: "hook", Key: "a", Payload: []byte("x")}); err != nil || created || e.ID != a.ID {
			t.Fatalf("enqueue again = %+v, %v, %v", e, created, err)
		}
		res, err := s.EnqueueBatch(context.Background(), []Request{{Sink: "hook", Key: "b", Payload: []byte("x")}})
		if err != nil || res[0].Err != nil || res[0].Created || res[0].Entry.ID != b.ID {
			t.Fatalf("enqueue batch again = %+v, %v", res, err)
		}
		synctest.Wait()
		for _, e := range []store.Entry{a, b} {
			if g := mustGet(t, ds, e.ID); g.State != store.StateDelivered {
				t.Fatalf("entry %s enqueued again = %+v, want delivered at once", e.Key, g)
			}
		}
		if n := len(sink.Sends()); n != 2 {
			t.Fatalf("%d sends, want 2", n)
		}
	})
}
