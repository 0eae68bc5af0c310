package deliveries

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/postgres"
	"github.com/schedd/schedd/internal/store/postgres/pgtest"
	"github.com/schedd/schedd/internal/store/storetest"
)

// A host dies with claims on entries it enqueued (it stops renewing its lease mid-send):
// another host, already running, delivers them within about 1.5 leases without a restart.
// Its notifications are hidden, so only the rescan timer can find them.
func TestFleetSurvivorRescuesDeadHostClaims(t *testing.T) {
	const lease = 2 * time.Second
	dsn := pgtest.DSN(t)
	storeA := openPG(t, dsn, "host-a", lease)
	storeB := openPG(t, dsn, "host-b", lease)
	sinkB := &fakeSink{}
	b := newService(t, parityConfig(), noWake{storeB}, map[string]Sink{"hook": sinkB})
	t.Cleanup(start(t, b))
	waitStarted(t, b)

	a := newService(t, parityConfig(), storeA, map[string]Sink{"hook": hangSink{}})
	stopA := start(t, a)
	defer stopA()
	waitStarted(t, a)
	var ids []int64
	for i := range 5 {
		ids = append(ids, enqueueReq(t, a, Request{Sink: "hook", Key: fmt.Sprint("k", i)}).ID)
	}
	for _, id := range ids {
		waitFor(t, storeB, id, 10*time.Second, func(e store.Entry) bool { return e.State == store.StateSending })
	}
	// host-a is gone: no more heartbeats, its sends never finish.
	died := time.Now()
	if err := storeA.Close(); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		waitFor(t, storeB, id, 3*lease, func(e store.Entry) bool { return e.State == store.StateDelivered })
	}
	took := time.Since(died)
	t.Logf("host-b delivered host-a's claims %v after host-a died (lease %v)", took, lease)
	if took > lease*3/2+time.Second {
		t.Errorf("rescue took %v, want about 1.5 leases (%v)", took, lease*3/2)
	}
	seen := map[int64]int{}
	for _, s := range sinkB.Sends() {
		seen[s.id]++
		if s.attempt != 2 {
			t.Errorf("entry %d sent by host-b as attempt %d, want 2 (the second, after host-a's)", s.id, s.attempt)
		}
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("entry %d sent %d times by host-b, want once", id, seen[id])
		}
	}
}

// An entry enqueued on a host that cannot deliver it (its sink is not ready) is delivered by
// an idle host, woken by the notification long before its next rescan.
func TestFleetNotifyWakesIdleHost(t *testing.T) {
	dsn := pgtest.DSN(t)
	storeA := openPG(t, dsn, "host-a", 2*time.Second)
	storeB := openPG(t, dsn, "host-b", time.Minute) // rescans every 30 s
	sinkA := &readySink{fakeSink: &fakeSink{}}
	sinkB := &fakeSink{}
	a := newService(t, parityConfig(), storeA, map[string]Sink{"hook": sinkA})
	t.Cleanup(start(t, a))
	b := newService(t, parityConfig(), storeB, map[string]Sink{"hook": sinkB})
	t.Cleanup(start(t, b))
	waitStarted(t, a)
	waitStarted(t, b)
	pgtest.WaitListening(t, dsn, postgres.Channel, 2)
	began := time.Now()
	e := enqueueReq(t, a, Request{Sink: "hook", Key: "k"})
	waitFor(t, storeB, e.ID, 10*time.Second, func(e store.Entry) bool { return e.State == store.StateDelivered })
	t.Logf("host-b delivered host-a's entry %v after its enqueue", time.Since(began))
	if n := len(sinkB.Sends()); n != 1 {
		t.Errorf("host-b sent %d times, want once", n)
	}
	if n := len(sinkA.Sends()); n != 0 {
		t.Errorf("host-a sent %d times with its sink not ready", n)
	}
}

// openPG opens the Postgres store of host on dsn, closed when the test ends.
func openPG(t *testing.T, dsn, host string, lease time.Duration) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{HostID: host, HostLease: lease, MaxConns: 4,
		MaxPayload: storetest.MaxPayload, MaxEntries: storetest.MaxEntries})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// noWake hides a shared store's notifications (as when they are lost): only the rescan
// timer finds what other hosts left.
type noWake struct{ *postgres.Store }

func (noWake) Wake() <-chan struct{} { return nil }

// hangSink never finishes a send before shutdown: a host that dies mid-send.
type hangSink struct{}

func (hangSink) Send(ctx context.Context, _ Delivery) error {
	<-ctx.Done()
	return ctx.Err()
}

// waitStarted waits until s ran its recovery pass: what is written after it is found by the
// runtime alone.
func waitStarted(t *testing.T, s *Service) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := s.LastRecovery(); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the service did not finish its recovery pass in 10 s")
		}
	}
}

// waitFor polls entry id until ok says yes.
func waitFor(t *testing.T, s store.Store, id int64, within time.Duration, ok func(store.Entry) bool) {
	t.Helper()
	var e store.Entry
	var err error
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if e, err = s.Get(context.Background(), id); err == nil && ok(e) {
			return
		}
	}
	t.Fatalf("entry %d after %v: %+v %v", id, within, e, err)
}
