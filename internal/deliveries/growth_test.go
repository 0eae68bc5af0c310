package deliveries

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

// downSink is a sink that is not ready while down is set; it keeps nothing per call, so
// hours of readiness checks cost the test nothing.
type downSink struct {
	down atomic.Bool
	sent atomic.Int64
}

func (d *downSink) Ready() bool { return !d.down.Load() }

func (d *downSink) Send(context.Context, Delivery) error {
	d.sent.Add(1)
	return nil
}

// armed counts what the runtime holds for entries: armed ids and parked items.
func (r *scheduler) armed() (slots, parked int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.parked {
		parked += len(p.items) - p.gone
	}
	return len(r.slots), parked
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// R-DLV-06: the sink stays down for six hours while an entry comes every ten seconds. The
// queue grows to max_entries and no further: later enqueues are refused with ErrQueueFull
// (the caller learns it; nothing is dropped silently), status shows the depth and the
// oldest entry, the runtime holds one item per stored entry, and the heap stops growing
// once the bound is reached. When the sink is back, the backlog goes and enqueues are taken
// again.
func TestQueueGrowthSinkDown_RDLV06(t *testing.T) {
	const bound = 1000
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		ds.MaxEntries = bound
		sink := &downSink{}
		sink.down.Store(true)
		s := newService(t, parityConfig(), ds, map[string]Sink{"gateway": sink})
		stop := start(t, s)
		defer stop()
		synctest.Wait()
		t0 := time.Now()
		payload := make([]byte, 512)
		var accepted, refused int
		var atBound uint64
		for i := range 6 * 360 {
			_, _, err := s.Enqueue(t.Context(), Request{Sink: "gateway", Key: fmt.Sprint("k", i), Payload: payload})
			switch {
			case err == nil:
				accepted++
			case errors.Is(err, store.ErrQueueFull):
				refused++
				if refused == 1 {
					synctest.Wait()
					atBound = heapInUse()
				}
			default:
				t.Fatalf("enqueue %d: %v", i, err)
			}
			time.Sleep(10 * time.Second)
		}
		synctest.Wait()
		if accepted != bound || refused != 6*360-bound {
			t.Fatalf("%d accepted, %d refused; want %d and %d", accepted, refused, bound, 6*360-bound)
		}
		if grew := int64(heapInUse()) - int64(atBound); grew > 256<<10 {
			t.Errorf("the heap grew by %d bytes over %d refused enqueues at the bound", grew, refused)
		}
		if slots, parked := s.rt.armed(); slots > bound || parked > bound {
			t.Errorf("the runtime holds %d armed ids and %d parked items for %d entries", slots, parked, bound)
		}
		st, err := s.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending != bound || st.OldestPendingAt == nil || !st.OldestPendingAt.Equal(t0) {
			t.Fatalf("status: pending %d, oldest %v; want %d, %v", st.Pending, st.OldestPendingAt, bound, t0)
		}
		if st.EnqueueError == nil {
			t.Errorf("status does not show the refused enqueues")
		}
		if sink.sent.Load() != 0 {
			t.Fatalf("%d sends while the sink was down", sink.sent.Load())
		}

		sink.down.Store(false)
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := sink.sent.Load(); n != bound {
			t.Fatalf("%d of the %d waiting entries sent once the sink was back", n, bound)
		}
		if st, err := s.Status(t.Context()); err != nil || st.EnqueueError != nil {
			t.Fatalf("status once the queue has room: %+v, %v", st.EnqueueError, err)
		}
		if _, _, err := s.Enqueue(t.Context(), Request{Sink: "gateway", Key: "after", Payload: payload}); err != nil {
			t.Fatalf("enqueue after the backlog drained: %v", err)
		}
	})
}
