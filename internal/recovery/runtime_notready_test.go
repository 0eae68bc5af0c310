package recovery

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/queue"
	"github.com/schedd/schedd/internal/queue/queuetest"
)

// A backlog for a sink that is not ready (the gateway down) costs no store reads while it
// waits; an entry that expires meanwhile is still dead-lettered (R-DLV-03), and the rest is
// sent once the sink is ready, with nothing charged.
func TestRuntimeNotReadyBacklogReadsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := queuetest.NewMemory()
		gw := &readySink{fakeSink: &fakeSink{}}
		s := newService(t, parityConfig(), store, map[string]Sink{"gateway": gw})
		stop := start(t, s)
		defer stop()
		synctest.Wait()
		var ids []int64
		for i := range 50 {
			ids = append(ids, enqueueReq(t, s, Request{Sink: "gateway", Key: fmt.Sprint("k", i), Payload: []byte("x")}).ID)
		}
		short := enqueueReq(t, s, Request{Sink: "gateway", Key: "short", Payload: []byte("x"), TTL: 90 * time.Second})
		synctest.Wait()
		gets := store.Calls("get")
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := store.Calls("get") - gets; n != 0 {
			t.Fatalf("%d store reads in a minute of waiting for the sink", n)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if g := mustGet(t, store, short.ID); g.State != queue.StateDead || g.DeadReason != ReasonExpired || g.Attempts != 0 {
			t.Fatalf("expired entry while the sink is not ready: %+v", g)
		}
		gw.set(true)
		time.Sleep(time.Second)
		synctest.Wait()
		for _, id := range ids {
			if g := mustGet(t, store, id); g.State != queue.StateDelivered || g.Failures != 0 || g.Attempts != 1 {
				t.Fatalf("entry %d = %+v", id, g)
			}
		}
	})
}
