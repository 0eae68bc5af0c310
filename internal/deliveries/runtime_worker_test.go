package deliveries

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

// slowComplete is a store whose Complete takes a second (a commit waiting for its disk).
type slowComplete struct {
	store.Store
}

func (s slowComplete) Complete(ctx context.Context, id, epoch int64) error {
	time.Sleep(time.Second)
	return s.Store.Complete(ctx, id, epoch)
}

// A worker is free once its sink returned: the next entry is sent while the last one's
// outcome is still being recorded, with at most Workers records pending at once. And a
// stop waits for the records: nothing sent stays sending.
func TestRuntimeSendsWhileRecording(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := storetest.NewMemory()
		sink := &fakeSink{}
		cfg := parityConfig()
		cfg.Workers = 1
		s := newService(t, cfg, slowComplete{mem}, map[string]Sink{"hook": sink})
		stop := start(t, s)
		synctest.Wait()
		t0 := time.Now()
		var ids []int64
		for i := range 3 {
			ids = append(ids, enqueueReq(t, s, Request{Sink: "hook", Key: fmt.Sprint("k", i)}).ID)
		}
		time.Sleep(1500 * time.Millisecond)
		var got []time.Duration
		for _, x := range sink.Sends() {
			got = append(got, x.at.Sub(t0))
		}
		// One worker: the second send does not wait for the first's record; the third
		// waits for the first record to end, as one send and one record are pending.
		stop()
		if want := []time.Duration{0, 0, time.Second}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("sends at %v, want %v", got, want)
		}
		for _, id := range ids {
			if e := mustGet(t, mem, id); e.State != store.StateDelivered {
				t.Fatalf("entry %d after stop: %s, want delivered", id, e.State)
			}
		}
	})
}

// A due entry is claimed without a read: its claim checks in the store that it is due, not
// expired and under max_retries. One that the claim refuses (here: not due in the store,
// though armed as due) is read and handled as before.
func TestRuntimeClaimsDueEntryWithoutRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := storetest.NewMemory()
		sink := &fakeSink{}
		s := runHook(t, mem, sink)
		synctest.Wait()
		e := enqueueReq(t, s, Request{Sink: "hook", Key: "k"})
		synctest.Wait()
		if g := mustGet(t, mem, e.ID); g.State != store.StateDelivered || len(sink.Sends()) != 1 {
			t.Fatalf("after the enqueue: %s, %d sends", g.State, len(sink.Sends()))
		}
		if n := mem.Calls("get"); n != 1 { // mustGet's
			t.Fatalf("%d reads of the entry, want none by the runtime", n-1)
		}

		later := putEntry(mem, store.Entry{Sink: "hook", State: store.StatePending, NextAttemptAt: time.Now().Add(time.Minute)})
		armed := later
		armed.NextAttemptAt = time.Now()
		s.rt.armEntry(armed) // armed as due, not due in the store
		synctest.Wait()
		if len(sink.Sends()) != 1 {
			t.Fatalf("an entry not due in the store was sent")
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if g := mustGet(t, mem, later.ID); g.State != store.StateDelivered || len(sink.Sends()) != 2 {
			t.Fatalf("a minute later: %s, %d sends", g.State, len(sink.Sends()))
		}
	})
}
