package deliveries

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/postgres/pgtest"
	"github.com/schedd/schedd/internal/store/storetest"
)

// TestMain checks that no goroutine outlives the tests, once the PostgreSQL cluster that the
// fleet tests started, if any, is stopped.
func TestMain(m *testing.M) {
	pgtest.VerifyMain(m)
}

// send is one call a fakeSink saw.
type send struct {
	at      time.Time
	id      int64
	key     string
	attempt int
}

// fakeSink records every send and answers with script (nil: success).
type fakeSink struct {
	mu     sync.Mutex
	sends  []send
	script func(d Delivery) error
}

func (f *fakeSink) Send(ctx context.Context, d Delivery) error {
	f.mu.Lock()
	f.sends = append(f.sends, send{at: time.Now(), id: d.ID, key: d.Key, attempt: d.Attempt})
	script := f.script
	f.mu.Unlock()
	if script == nil {
		return nil
	}
	return script(d)
}

func (f *fakeSink) Sends() []send {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]send(nil), f.sends...)
}

// readySink is a fakeSink that also implements Readier.
type readySink struct {
	*fakeSink
	mu     sync.Mutex
	ok     bool
	checks []time.Time
}

func (r *readySink) Ready() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checks = append(r.checks, time.Now())
	return r.ok
}

func (r *readySink) set(ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ok = ok
}

func (r *readySink) Checks() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.checks...)
}

// upstreamSchedule is upstream's retry table (BACKOFF_MS), schedd's default.
func upstreamSchedule() []time.Duration {
	return []time.Duration{5 * time.Second, 25 * time.Second, 2 * time.Minute, 10 * time.Minute}
}

// productionConfig is the policy the daemon passes with the config's defaults.
func productionConfig() Config {
	return Config{
		MaxRetries:         5,
		Schedule:           upstreamSchedule(),
		Jitter:             0.2,
		RetryAfterMax:      time.Hour,
		RecoveryBudget:     60 * time.Second,
		ReplaySpacing:      250 * time.Millisecond,
		Workers:            16,
		DeliveredRetention: 30 * 24 * time.Hour,
	}
}

// parityConfig is the upstream policy with jitter off.
func parityConfig() Config {
	c := productionConfig()
	c.Jitter = 0
	return c
}

func newService(t *testing.T, cfg Config, ds store.Store, sinks map[string]Sink) *Service {
	t.Helper()
	s, err := New(cfg, ds, sinks, Deps{Log: testLogger(t)})
	if err != nil {
		t.Fatalf("new service: %v", err)
	}
	return s
}

// runHook starts a service with parityConfig and sink as its one sink, "hook", and stops
// it when the test ends.
func runHook(t *testing.T, ds store.Store, sink Sink) *Service {
	t.Helper()
	return runHookWorkers(t, ds, sink, parityConfig().Workers)
}

// runHookWorkers is runHook with workers workers.
func runHookWorkers(t *testing.T, ds store.Store, sink Sink, workers int) *Service {
	t.Helper()
	cfg := parityConfig()
	cfg.Workers = workers
	s := newService(t, cfg, ds, map[string]Sink{"hook": sink})
	t.Cleanup(start(t, s))
	return s
}

func testLogger(t *testing.T) *zap.Logger {
	if testing.Verbose() {
		return zaptest.NewLogger(t)
	}
	return zap.NewNop()
}

// start runs s in the background; the returned stop cancels it and waits for Run.
func start(t *testing.T, s *Service) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}
}

func mustGet(t *testing.T, s store.Store, id int64) store.Entry {
	t.Helper()
	e, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("get %d: %v", id, err)
	}
	return e
}

func enqueueReq(t *testing.T, s *Service, r Request) store.Entry {
	t.Helper()
	e, _, err := s.Enqueue(context.Background(), r)
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	return e
}

// putEntry stores an entry in a given state directly (the past of a crashed process).
func putEntry(m *storetest.Memory, e store.Entry) store.Entry {
	if e.Key == "" {
		e.Key = fmt.Sprint("put-", putSeq.Add(1))
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now()
	}
	if e.NextAttemptAt.IsZero() {
		e.NextAttemptAt = e.CreatedAt
	}
	if e.Payload == nil {
		e.Payload = []byte("payload")
	}
	m.Put(e)
	list, _ := m.List(context.Background(), store.Filter{Limit: 1000})
	return list[len(list)-1]
}

var (
	errBoom = errors.New("boom")
	putSeq  atomic.Int64
)
