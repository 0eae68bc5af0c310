package deliveries

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

// A backlog found at start is replayed on Workers goroutines, not one entry at a time; with
// spacing, one sink's replays still start in enqueue order, spaced.
func TestRecoveryReplaysConcurrently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := storetest.NewMemory()
		for i := range 8 {
			putEntry(m, store.Entry{Sink: "slow", Key: fmt.Sprint("s", i), State: store.StatePending})
		}
		for i := range 3 {
			putEntry(m, store.Entry{Sink: "spaced", Key: fmt.Sprint("p", i), State: store.StatePending})
		}
		slow := &fakeSink{script: func(Delivery) error { time.Sleep(time.Second); return nil }}
		spaced := &fakeSink{}
		cfg := parityConfig()
		cfg.Workers = 4
		cfg.ReplaySpacing = 0
		s := newService(t, cfg, m, map[string]Sink{"slow": slow, "spaced": spaced})
		t0 := time.Now()
		stop := start(t, s)
		defer stop()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		sum, ok := s.LastRecovery()
		if !ok || sum.Recovered != 11 || sum.DurationMS != 2000 {
			t.Fatalf("summary %+v: want 11 recovered in 2 s (8 sends of 1 s on 4 workers)", sum)
		}
		var at []time.Duration
		for _, sd := range slow.Sends() {
			at = append(at, sd.at.Sub(t0))
		}
		if fmt.Sprint(at) != "[0s 0s 0s 0s 1s 1s 1s 1s]" {
			t.Fatalf("slow sends at %v", at)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		m := storetest.NewMemory()
		for i := range 4 {
			putEntry(m, store.Entry{Sink: "a", Key: fmt.Sprint("a", i), State: store.StatePending})
		}
		a := &fakeSink{}
		cfg := parityConfig()
		cfg.Workers = 4
		s := newService(t, cfg, m, map[string]Sink{"a": a})
		t0 := time.Now()
		stop := start(t, s)
		defer stop()
		time.Sleep(time.Second)
		synctest.Wait()
		var got []string
		for _, sd := range a.Sends() {
			got = append(got, fmt.Sprint(sd.key, "@", sd.at.Sub(t0)))
		}
		if fmt.Sprint(got) != "[a0@0s a1@250ms a2@500ms a3@750ms]" {
			t.Fatalf("spaced replays %v", got)
		}
	})
}

// The runtime takes over what the pass leaves pending, and neither reads every live entry
// (each reads what is near once at the start), and an entry enqueued while the pass runs
// is armed at once.
func TestRuntimeAdoptsThePass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := storetest.NewMemory()
		backoff := putEntry(m, store.Entry{Sink: "slow", Key: "backoff", State: store.StatePending, Failures: 1,
			NextAttemptAt: time.Now().Add(time.Minute)})
		putEntry(m, store.Entry{Sink: "slow", Key: "due", State: store.StatePending})
		slow := &fakeSink{script: func(d Delivery) error {
			if d.Key == "due" {
				time.Sleep(10 * time.Second) // the pass is busy with it
			}
			return nil
		}}
		s := newService(t, parityConfig(), m, map[string]Sink{"slow": slow})
		stop := start(t, s)
		defer stop()
		time.Sleep(time.Second)
		synctest.Wait()
		if _, ok := s.LastRecovery(); ok {
			t.Fatal("the pass ended early")
		}
		during := enqueueReq(t, s, Request{Sink: "slow", Key: "during", Payload: []byte("x")})
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if sum, ok := s.LastRecovery(); !ok || sum.Scanned != 2 || sum.Recovered != 1 || sum.DeferredBackoff != 1 {
			t.Fatalf("summary %+v", sum)
		}
		if g := mustGet(t, m, during.ID); g.State != store.StateDelivered {
			t.Fatalf("entry enqueued during the pass: %+v", g)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if g := mustGet(t, m, backoff.ID); g.State != store.StateDelivered {
			t.Fatalf("entry left to its backoff by the pass: %+v", g)
		}
		if n, near := m.Calls("live"), m.Calls("near"); n != 0 || near != 2 {
			t.Fatalf("%d scans of the store and %d reads of what is near, want none and two", n, near)
		}
	})
}
