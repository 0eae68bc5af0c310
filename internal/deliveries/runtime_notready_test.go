package deliveries

import (
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

// A backlog for a sink that is not ready (the gateway down) costs no store reads while it
// waits; an entry that expires meanwhile is still dead-lettered (R-DLV-03), and the rest is
// sent once the sink is ready, with nothing charged.
func TestRuntimeNotReadyBacklogReadsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		gw := &readySink{fakeSink: &fakeSink{}}
		s := newService(t, parityConfig(), ds, map[string]Sink{"gateway": gw})
		stop := start(t, s)
		defer stop()
		synctest.Wait()
		var ids []int64
		for i := range 50 {
			ids = append(ids, enqueueReq(t, s, Request{Sink: "gateway", Key: fmt.Sprint("k", i), Payload: []byte("x")}).ID)
		}
		short := enqueueReq(t, s, Request{Sink: "gateway", Key: "short", Payload: []byte("x"), TTL: 90 * time.Second})
		synctest.Wait()
		gets := ds.Calls("get")
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := ds.Calls("get") - gets; n != 0 {
			t.Fatalf("%d store reads in a minute of waiting for the sink", n)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if g := mustGet(t, ds, short.ID); g.State != store.StateDead || g.DeadReason != ReasonExpired || g.Attempts != 0 {
			t.Fatalf("expired entry while the sink is not ready: %+v", g)
		}
		gw.set(true)
		time.Sleep(time.Second)
		synctest.Wait()
		for _, id := range ids {
			if g := mustGet(t, ds, id); g.State != store.StateDelivered || g.Failures != 0 || g.Attempts != 1 {
				t.Fatalf("entry %d = %+v", id, g)
			}
		}
	})
}

// Waiting costs a readiness call per sink and second, not a pass over the parked entries:
// with 10,000 parked, a check copies none of them (a few bytes, where moving them took
// about a megabyte), and sends nothing while the sink is not ready.
func TestRuntimeParkedCheckIsPerSink(t *testing.T) {
	const n = 10000
	gw := &readySink{fakeSink: &fakeSink{}}
	s := newService(t, parityConfig(), storetest.NewMemory(), map[string]Sink{"gateway": gw})
	r := s.rt
	r.open(1) // arms are accepted; the loop is not running, the checks are called here
	defer r.close()
	t0 := time.Now()
	for i := range n {
		r.armEntry(store.Entry{ID: int64(i + 1), Sink: "gateway", NextAttemptAt: t0})
	}
	r.promote(t0.Add(RearmFloor)) // grows the maps a check uses, once
	asked := len(gw.Checks())
	var before, after runtime.MemStats
	const checks = 5
	runtime.ReadMemStats(&before)
	for k := range checks {
		r.promote(t0.Add(time.Duration(k+2) * RearmFloor))
	}
	runtime.ReadMemStats(&after)
	if b := (after.TotalAlloc - before.TotalAlloc) / checks; b > 16<<10 {
		t.Errorf("a check of %d parked entries allocated %d bytes", n, b)
	}
	if got := len(gw.Checks()) - asked; got != checks {
		t.Errorf("%d readiness calls in %d checks, want one each", got, checks)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.parked[r.sinkIdx["gateway"]]; r.ready.Len() != 0 || p == nil || len(p.items) != n {
		t.Fatalf("after the checks: %d ready, parked %+v", r.ready.Len(), p)
	}
}

// An enqueue that finds its sink ready again sends at once what was parked for it, without
// waiting for the next check.
func TestRuntimeEnqueueSendsParkedOnceReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		gw := &readySink{fakeSink: &fakeSink{}}
		s := newService(t, parityConfig(), ds, map[string]Sink{"gateway": gw})
		stop := start(t, s)
		defer stop()
		synctest.Wait()
		t0 := time.Now()
		for i := range 3 {
			enqueueReq(t, s, Request{Sink: "gateway", Key: fmt.Sprint("k", i), Payload: []byte("x")})
		}
		time.Sleep(500 * time.Millisecond)
		gw.set(true)
		enqueueReq(t, s, Request{Sink: "gateway", Key: "k3", Payload: []byte("x")})
		synctest.Wait()
		sends := gw.Sends()
		if len(sends) != 4 {
			t.Fatalf("%d sends at +500ms, want 4: %+v", len(sends), sends)
		}
		for _, sd := range sends {
			if sd.at.Sub(t0) != 500*time.Millisecond {
				t.Fatalf("sends = %+v, want all at +500ms", sends)
			}
		}
	})
}

// Parked entries whose TTL ends are dead-lettered at the next check while the others keep
// waiting for the sink, and are sent once it is ready.
func TestRuntimeParkedExpiries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		gw := &readySink{fakeSink: &fakeSink{}}
		s := newService(t, parityConfig(), ds, map[string]Sink{"gateway": gw})
		stop := start(t, s)
		defer stop()
		synctest.Wait()
		var short, long []int64
		for i := range 20 {
			r := Request{Sink: "gateway", Key: fmt.Sprint("k", i), Payload: []byte("x")}
			if i%4 != 0 {
				r.TTL = time.Duration(1+i%2) * time.Second
				short = append(short, enqueueReq(t, s, r).ID)
				continue
			}
			long = append(long, enqueueReq(t, s, r).ID)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		for _, id := range short {
			if g := mustGet(t, ds, id); g.State != store.StateDead || g.DeadReason != ReasonExpired {
				t.Fatalf("entry %d past its TTL = %+v", id, g)
			}
		}
		gw.set(true)
		time.Sleep(time.Second)
		synctest.Wait()
		for _, id := range long {
			if g := mustGet(t, ds, id); g.State != store.StateDelivered || g.Attempts != 1 {
				t.Fatalf("entry %d = %+v", id, g)
			}
		}
		if n := len(gw.Sends()); n != len(long) {
			t.Fatalf("%d sends, want %d", n, len(long))
		}
	})
}
