package deliveries

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

// passFixture is a store with one entry per recovery bucket, written as a crashed process
// (epoch 1) left it.
type passFixture struct {
	store *storetest.Memory
	ids   map[string]int64
	sinks map[string]Sink
	ok    *fakeSink
}

func newPassFixture(t *testing.T) *passFixture {
	t.Helper()
	now := time.Now()
	m := storetest.NewMemory()
	if ep, _ := m.NewEpoch(context.Background()); ep != 1 {
		t.Fatalf("epoch %d", ep)
	}
	f := &passFixture{store: m, ids: map[string]int64{}}
	put := func(name string, e store.Entry) {
		e.Key = name
		if e.State == "" {
			e.State = store.StatePending
		}
		f.ids[name] = putEntry(m, e).ID
	}
	put("recovered", store.Entry{Sink: "ok"})
	put("recovered-after-backoff", store.Entry{Sink: "ok", Failures: 1, LastAttemptAt: now.Add(-time.Minute),
		NextAttemptAt: now.Add(-35 * time.Second)})
	put("failed-transient", store.Entry{Sink: "flaky"})
	put("failed-permanent", store.Entry{Sink: "gone"})
	put("failed-unknown-sink", store.Entry{Sink: "removed"})
	put("skipped-max", store.Entry{Sink: "ok", Failures: 5, NextAttemptAt: now.Add(-time.Hour)})
	put("deferred-backoff", store.Entry{Sink: "ok", Failures: 2, NextAttemptAt: now.Add(time.Minute)})
	put("deferred-not-ready", store.Entry{Sink: "gateway"})
	put("expired", store.Entry{Sink: "ok", ExpiresAt: now.Add(-time.Second)})
	put("interrupted", store.Entry{Sink: "ok", State: store.StateSending, Epoch: 1, Attempts: 1,
		LastAttemptAt: now.Add(-time.Second), LeaseUntil: now.Add(time.Hour)})
	// Not live: never scanned.
	put("done", store.Entry{Sink: "ok", State: store.StateDelivered, FinishedAt: now})
	put("dead", store.Entry{Sink: "ok", State: store.StateDead, FinishedAt: now})
	f.ok = &fakeSink{}
	f.sinks = map[string]Sink{
		"ok":      f.ok,
		"flaky":   &fakeSink{script: func(Delivery) error { return TransientError(errors.New("HTTP 502")) }},
		"gone":    &fakeSink{script: func(Delivery) error { return &SendError{Class: Permanent, Err: errors.New("HTTP 410"), Status: 410} }},
		"gateway": &readySink{fakeSink: &fakeSink{}},
	}
	return f
}

func (f *passFixture) get(t *testing.T, name string) store.Entry {
	t.Helper()
	return mustGet(t, f.store, f.ids[name])
}

// P5: every live entry lands in exactly one bucket, the buckets add up to the entries live
// at scan start, and each counter matches what changed in the store.
func TestRecoverySummaryAccounting_P5(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newPassFixture(t)
		s := newService(t, parityConfig(), f.store, f.sinks)
		stop := start(t, s)
		defer stop()
		time.Sleep(time.Second) // replays to one sink are spaced 250 ms apart
		synctest.Wait()
		sum, ok := s.LastRecovery()
		if !ok {
			t.Fatal("no summary")
		}
		want := api.RecoverySummary{Scanned: 10, Recovered: 2, Failed: 3, SkippedMaxRetries: 1, DeferredBackoff: 1,
			DeferredNotReady: 1, Expired: 1, Interrupted: 1}
		got := sum
		got.At, got.DurationMS = time.Time{}, 0
		if got != want {
			t.Fatalf("summary = %+v\nwant      %+v", got, want)
		}
		if sum.Total() != sum.Scanned || sum.At.IsZero() {
			t.Fatalf("total %d != scanned %d", sum.Total(), sum.Scanned)
		}
		// Store diff, bucket by bucket.
		for name, want := range map[string]struct {
			state    store.State
			failures int
			reason   string
		}{
			"recovered":               {store.StateDelivered, 0, ""},
			"recovered-after-backoff": {store.StateDelivered, 1, ""},
			"failed-transient":        {store.StatePending, 1, ""},
			"failed-permanent":        {store.StateDead, 0, "permanent error (status 410)"},
			"failed-unknown-sink":     {store.StateDead, 0, ReasonUnknownSink},
			"skipped-max":             {store.StateDead, 5, ReasonMaxRetries},
			"deferred-backoff":        {store.StatePending, 2, ""},
			"deferred-not-ready":      {store.StatePending, 0, ""},
			"expired":                 {store.StateDead, 0, ReasonExpired},
			"interrupted":             {store.StateDelivered, 0, ""},
		} {
			e := f.get(t, name)
			if e.State != want.state || e.Failures != want.failures || e.DeadReason != want.reason {
				t.Errorf("%s: state %s failures %d reason %q; want %s %d %q", name, e.State, e.Failures,
					e.DeadReason, want.state, want.failures, want.reason)
			}
		}
		if e := f.get(t, "deferred-not-ready"); e.Attempts != 0 {
			t.Errorf("not-ready entry was claimed: %+v", e)
		}
		// R-DLV-01: the interrupted entry is resent with its own key, as attempt 2.
		var keys []string
		for _, sd := range f.ok.Sends() {
			keys = append(keys, fmt.Sprint(sd.key, "#", sd.attempt))
		}
		if fmt.Sprint(keys) != "[recovered#1 recovered-after-backoff#1 interrupted#2]" {
			t.Fatalf("sends to ok = %v", keys)
		}
	})
}

// The dry run predicts the pass without sending or writing anything.
func TestRecoverDryRunChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newPassFixture(t)
		s := newService(t, parityConfig(), f.store, f.sinks)
		before, _ := f.store.List(context.Background(), store.Filter{Limit: 1000})
		rep, err := s.RecoverDryRun(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		after, _ := f.store.List(context.Background(), store.Filter{Limit: 1000})
		if !reflect.DeepEqual(before, after) {
			t.Fatal("dry run changed the store")
		}
		if n := len(f.ok.Sends()); n != 0 {
			t.Fatalf("dry run sent %d", n)
		}
		for _, op := range []string{"mark_sending", "complete", "fail", "dead", "release"} {
			if n := f.store.Calls(op); n != 0 {
				t.Fatalf("dry run called %s %d times", op, n)
			}
		}
		got := rep.RecoverySummary
		got.At, got.DurationMS = time.Time{}, 0
		want := api.RecoverySummary{Scanned: 10, WouldReplay: 4, Failed: 1, SkippedMaxRetries: 1, DeferredBackoff: 1,
			DeferredNotReady: 1, Expired: 1, Interrupted: 1, DryRun: true}
		if got != want {
			t.Fatalf("dry run = %+v\nwant      %+v", got, want)
		}
		if len(rep.Actions) != 10 {
			t.Fatalf("actions = %+v", rep.Actions)
		}
		for _, a := range rep.Actions {
			if a.ID == f.ids["interrupted"] && a.Action != "replay_interrupted" ||
				a.ID == f.ids["expired"] && (a.Action != "dead_letter" || a.Reason != ReasonExpired) ||
				a.ID == f.ids["deferred-backoff"] && (a.Action != "defer_backoff" || a.DueAt.IsZero()) {
				t.Errorf("action %+v", a)
			}
		}
	})
}

// Replays to one sink start at least ReplaySpacing apart; other sinks are not held back.
func TestRecoveryReplaySpacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := storetest.NewMemory()
		for i := range 3 {
			putEntry(m, store.Entry{Sink: "a", Key: fmt.Sprint("a", i), State: store.StatePending})
			putEntry(m, store.Entry{Sink: "b", Key: fmt.Sprint("b", i), State: store.StatePending})
		}
		a, b := &fakeSink{}, &fakeSink{}
		s := newService(t, parityConfig(), m, map[string]Sink{"a": a, "b": b})
		t0 := time.Now()
		stop := start(t, s)
		defer stop()
		time.Sleep(time.Second)
		synctest.Wait()
		for name, sink := range map[string]*fakeSink{"a": a, "b": b} {
			var at []time.Duration
			for _, sd := range sink.Sends() {
				at = append(at, sd.at.Sub(t0))
			}
			if fmt.Sprint(at) != "[0s 250ms 500ms]" {
				t.Errorf("sink %s replays at %v, want [0s 250ms 500ms]", name, at)
			}
		}
	})
}

// Past the budget the rest is deferred without charging a retry, and the runtime takes it
// over right after the pass (the upstream bug: a budget that charged retries).
func TestRecoveryBudgetDefersWithoutCharge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := storetest.NewMemory()
		var ids []int64
		for i := range 10 {
			ids = append(ids, putEntry(m, store.Entry{Sink: "slow", Key: fmt.Sprint("k", i), State: store.StatePending, Failures: 1,
				NextAttemptAt: time.Now().Add(-time.Hour)}).ID)
		}
		slow := &fakeSink{script: func(Delivery) error {
			time.Sleep(20 * time.Second)
			return nil
		}}
		cfg := parityConfig()
		cfg.RecoveryBudget = time.Minute
		cfg.Workers = 1
		s := newService(t, cfg, m, map[string]Sink{"slow": slow})
		stop := start(t, s)
		defer stop()
		time.Sleep(61 * time.Second)
		synctest.Wait()
		sum, ok := s.LastRecovery()
		if !ok || sum.Recovered != 3 || sum.DeferredBudget != 7 || sum.Total() != 10 {
			t.Fatalf("summary = %+v", sum)
		}
		for _, id := range ids[3:] {
			if e := mustGet(t, m, id); e.Failures != 1 || e.Attempts != 0 && e.State != store.StateSending {
				t.Fatalf("deferred entry charged: %+v", e)
			}
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		for _, id := range ids {
			if e := mustGet(t, m, id); e.State != store.StateDelivered || e.Failures != 1 {
				t.Fatalf("entry after runtime: %+v", e)
			}
		}
	})
}

// A dry run over more than a page of live entries reports its progress after each page.
func TestRecoverDryRunProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := storetest.NewMemory()
		for i := range livePage*2 + 17 {
			m.Put(store.Entry{Sink: "hook", Key: fmt.Sprint("k", i), State: store.StatePending, Payload: []byte("x"),
				CreatedAt: time.Now(), NextAttemptAt: time.Now().Add(time.Hour)})
		}
		s := newService(t, parityConfig(), m, map[string]Sink{"hook": &fakeSink{}})
		var seen []int
		rep, err := s.RecoverDryRun(context.Background(), func(n int) { seen = append(seen, n) })
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{livePage, livePage * 2, livePage*2 + 17}; !reflect.DeepEqual(seen, want) || rep.Scanned != want[2] {
			t.Fatalf("progress %v, scanned %d; want %v", seen, rep.Scanned, want)
		}
	})
}
