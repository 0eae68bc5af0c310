package deliveries

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// A reload changes the retry policy and the sinks of a running service: attempts that start
// afterwards use them; the settings that need a restart are named.
func TestReconfigureLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := storetest.NewMemory()
		failing := &fakeSink{script: func(Delivery) error { return TransientError(errBoom) }}
		cfg := parityConfig()
		cfg.Schedule = []time.Duration{time.Second, 10 * time.Second}
		s := newService(t, cfg, m, map[string]Sink{"hook": failing})
		stop := start(t, s)
		defer stop()
		e := enqueueReq(t, s, Request{Sink: "hook", Payload: []byte("x")})
		synctest.Wait()
		if g := mustGet(t, m, e.ID); g.Failures != 1 || g.State != store.StatePending {
			t.Fatalf("after the first attempt: %+v", g)
		}
		if _, _, err := s.Enqueue(context.Background(), Request{Sink: "other", Payload: []byte("y")}); !errors.Is(err, ErrUnknownSink) {
			t.Fatalf("enqueue to a sink not configured yet: %v", err)
		}

		next := cfg
		next.MaxRetries = 2
		next.Workers = 3
		other := &fakeSink{}
		restart, err := s.Reconfigure(next, map[string]Sink{"hook": failing, "other": other})
		if err != nil || !slices.Equal(restart, []string{"workers"}) {
			t.Fatalf("reconfigure = %v, %v", restart, err)
		}
		if got := s.Sinks(); !slices.Equal(got, []string{"hook", "other"}) {
			t.Fatalf("sinks = %v", got)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if g := mustGet(t, m, e.ID); g.State != store.StateDead || g.Failures != 2 || g.DeadReason != ReasonMaxRetries {
			t.Fatalf("with max_retries 2: %+v", g)
		}
		o := enqueueReq(t, s, Request{Sink: "other", Payload: []byte("y")})
		synctest.Wait()
		if g := mustGet(t, m, o.ID); g.State != store.StateDelivered {
			t.Fatalf("entry of the new sink: %+v", g)
		}

		bad := next
		bad.PermanentPatterns = []string{"("}
		if _, err := s.Reconfigure(bad, nil); err == nil {
			t.Fatal("a bad pattern was accepted")
		}
		if got := s.Sinks(); len(got) != 2 {
			t.Fatalf("a rejected reconfigure changed the sinks: %v", got)
		}
	})
}

// A zero replay spacing sends the replays of one sink back to back.
func TestRecoveryNoReplaySpacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := storetest.NewMemory()
		for i := range 3 {
			putEntry(m, store.Entry{Sink: "a", Key: fmt.Sprint("a", i), State: store.StatePending})
		}
		a := &fakeSink{}
		cfg := parityConfig()
		cfg.ReplaySpacing = 0
		s := newService(t, cfg, m, map[string]Sink{"a": a})
		t0 := time.Now()
		stop := start(t, s)
		defer stop()
		synctest.Wait()
		sends := a.Sends()
		if len(sends) != 3 {
			t.Fatalf("%d sends, want 3", len(sends))
		}
		for _, sd := range sends {
			if !sd.at.Equal(t0) {
				t.Fatalf("a replay waited %v", sd.at.Sub(t0))
			}
		}
	})
}

// R-ENV-04, status side: an enqueue the store fails is kept in status (with when it began)
// until an enqueue succeeds again; a refused request (unknown sink) is not a store failure.
func TestStatusEnqueueError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := storetest.NewMemory()
		full := true
		m.SetWriteFault(func(op string) error {
			if op == "enqueue" && full {
				return fmt.Errorf("%w: no space", store.ErrDiskFull)
			}
			return nil
		})
		s := newService(t, parityConfig(), m, map[string]Sink{"hook": &fakeSink{}})
		ctx := context.Background()
		if _, _, err := s.Enqueue(ctx, Request{Sink: "nope"}); !errors.Is(err, ErrUnknownSink) {
			t.Fatal(err)
		}
		if st, _ := s.Status(ctx); st.EnqueueError != nil {
			t.Fatalf("client error in status: %+v", st.EnqueueError)
		}
		t0 := time.Now()
		for range 2 {
			if _, _, err := s.Enqueue(ctx, Request{Sink: "hook", Payload: []byte("x")}); !errors.Is(err, store.ErrDiskFull) {
				t.Fatalf("enqueue = %v", err)
			}
			time.Sleep(time.Second)
		}
		st, _ := s.Status(ctx)
		if st.EnqueueError == nil || !st.EnqueueError.At.Equal(t0) || st.EnqueueError.Message == "" {
			t.Fatalf("enqueue_error = %+v", st.EnqueueError)
		}
		full = false
		enqueueReq(t, s, Request{Sink: "hook", Payload: []byte("x")})
		if st, _ := s.Status(ctx); st.EnqueueError != nil || !slices.Equal(st.Sinks, []string{"hook"}) {
			t.Fatalf("after a good enqueue: %+v", st)
		}
	})
}

// A store that cannot be read (its database is down) still has its status block: the counts
// read last, the store's health, and read_error since the first failure, until a read
// succeeds again.
func TestStatusStoreUnreadable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := storetest.NewMemory()
		putEntry(m, store.Entry{Sink: "hook", State: store.StatePending})
		s := newService(t, parityConfig(), m, map[string]Sink{"hook": &fakeSink{}})
		ctx := context.Background()
		if st, err := s.Status(ctx); err != nil || st.Pending != 1 || st.ReadError != nil {
			t.Fatalf("status = %+v, %v", st, err)
		}
		putEntry(m, store.Entry{Sink: "hook", State: store.StatePending}) // not seen while down
		down := true
		m.SetReadFault(func(op string) error {
			if down {
				return fmt.Errorf("%w (%w): connection refused", store.ErrUnavailable, store.ErrStorage)
			}
			return nil
		})
		t0 := time.Now()
		for range 2 {
			st, err := s.Status(ctx)
			if !errors.Is(err, store.ErrUnavailable) || st.Pending != 1 || st.Store != "memory" || st.Sinks == nil ||
				st.ReadError == nil || !st.ReadError.At.Equal(t0) || !strings.Contains(st.ReadError.Message, "connection refused") {
				t.Fatalf("status while unreadable = %+v, %v; want the last counts and read_error since %v", st, err, t0)
			}
			time.Sleep(time.Second)
		}
		down = false
		if st, err := s.Status(ctx); err != nil || st.Pending != 2 || st.ReadError != nil {
			t.Fatalf("status once readable = %+v, %v", st, err)
		}
	})
}

// The policy is taken as given: max_retries 0 is one attempt (as in the config file), and
// a value the service cannot run with is refused, not replaced by a default.
func TestConfigTakenAsGiven(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := storetest.NewMemory()
		failing := &fakeSink{script: func(Delivery) error { return TransientError(errBoom) }}
		cfg := parityConfig()
		cfg.MaxRetries = 0
		s := newService(t, cfg, m, map[string]Sink{"hook": failing})
		stop := start(t, s)
		defer stop()
		e := enqueueReq(t, s, Request{Sink: "hook", Payload: []byte("x")})
		synctest.Wait()
		if g := mustGet(t, m, e.ID); g.State != store.StateDead || g.Failures != 1 || g.DeadReason != ReasonMaxRetries {
			t.Fatalf("with max_retries 0: %+v", g)
		}
	})
	for name, mod := range map[string]func(*Config){
		"max retries":    func(c *Config) { c.MaxRetries = -1 },
		"schedule":       func(c *Config) { c.Schedule = nil },
		"retry-after":    func(c *Config) { c.RetryAfterMax = 0 },
		"budget":         func(c *Config) { c.RecoveryBudget = 0 },
		"workers":        func(c *Config) { c.Workers = 0 },
		"spacing":        func(c *Config) { c.ReplaySpacing = -1 },
		"retention":      func(c *Config) { c.DeliveredRetention = -1 },
		"dead retention": func(c *Config) { c.DeadRetention = -1 },
	} {
		cfg := parityConfig()
		mod(&cfg)
		if _, err := New(cfg, storetest.NewMemory(), nil, Deps{}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: New = %v, want an error naming it", name, err)
		}
	}
}

// A status read while schedd stops, after the store was closed, is no warning: a stop is
// clean, and the status shows the counts read last.
func TestStatusAfterStoreClosedIsQuiet(t *testing.T) {
	m := storetest.NewMemory()
	putEntry(m, store.Entry{Sink: "hook", State: store.StatePending})
	core, logs := observer.New(zap.DebugLevel)
	s, err := New(parityConfig(), m, map[string]Sink{"hook": &fakeSink{}}, Deps{Log: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if st, err := s.Status(ctx); err != nil || st.Pending != 1 {
		t.Fatalf("status = %+v, %v", st, err)
	}
	s.StoreClosing()
	m.SetReadFault(func(string) error { return store.ErrClosed })
	if st, _ := s.Status(ctx); st.Pending != 1 || st.ReadError != nil {
		t.Fatalf("status after close = %+v; want the last counts and no read_error", st)
	}
	if n := logs.FilterLevelExact(zap.WarnLevel).Len(); n != 0 {
		t.Fatalf("%d warnings after the store was closed: %v", n, logs.All())
	}
}
