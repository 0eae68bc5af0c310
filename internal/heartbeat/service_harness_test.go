package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// gotPulse is one pulse seen by fakeExec, at virtual time since the bubble began.
type gotPulse struct {
	at  time.Duration
	p   Pulse
	env []string
}

// fakeExec is a RunFunc recording pulses. answer decides the exit code and stdout; hold,
// when set, blocks each run until it is closed or the run's ctx ends.
type fakeExec struct {
	start  time.Time
	mu     sync.Mutex
	pulses []gotPulse
	answer func(p Pulse) (int, []byte, error)
	hold   chan struct{}
	live   atomic.Int32 // concurrent runs right now
	peak   atomic.Int32
}

func (f *fakeExec) run(ctx context.Context, argv, env []string, stdin []byte) (int, []byte, error) {
	var p Pulse
	if err := json.Unmarshal(stdin, &p); err != nil {
		return 1, nil, err
	}
	n := f.live.Add(1)
	defer f.live.Add(-1)
	if n > f.peak.Load() {
		f.peak.Store(n)
	}
	f.mu.Lock()
	f.pulses = append(f.pulses, gotPulse{at: time.Since(f.start), p: p, env: env})
	answer, hold := f.answer, f.hold
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return -1, nil, ctx.Err()
		}
	}
	if answer != nil {
		return answer(p)
	}
	return 0, nil, nil
}

func (f *fakeExec) setAnswer(a func(p Pulse) (int, []byte, error)) {
	f.mu.Lock()
	f.answer = a
	f.mu.Unlock()
}

func (f *fakeExec) setHold(c chan struct{}) {
	f.mu.Lock()
	f.hold = c
	f.mu.Unlock()
}

func (f *fakeExec) seen() []gotPulse {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]gotPulse(nil), f.pulses...)
}

// fakeGateway reports a settable in-flight count and readiness.
type fakeGateway struct {
	inflight atomic.Int32
	notReady atomic.Bool
	probes   atomic.Int32
}

func (g *fakeGateway) Inflight(context.Context) (int, bool) {
	g.probes.Add(1)
	return int(g.inflight.Load()), true
}
func (g *fakeGateway) Ready() bool { return !g.notReady.Load() }

// clock is a wall clock that can jump ahead of the bubble's monotonic clock (P20, P21).
type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time       { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) jump(d time.Duration) { c.offset.Add(int64(d)) }

type harness struct {
	t     *testing.T
	start time.Time
	svc   *Service
	exec  *fakeExec
	gw    *fakeGateway
	clk   *clock
	logs  *observer.ObservedLogs
	stop  func() error
}

// sleepTo advances the bubble to offset since the start and lets everything settle.
func (h *harness) sleepTo(offset time.Duration) {
	h.t.Helper()
	if d := offset - time.Since(h.start); d > 0 {
		time.Sleep(d)
	}
	synctest.Wait()
}

func (h *harness) wantPulses(n int) []gotPulse {
	h.t.Helper()
	got := h.exec.seen()
	if len(got) != n {
		h.t.Fatalf("at %v: %d pulses, want %d: %+v", time.Since(h.start), len(got), n, got)
	}
	return got
}

func (h *harness) agent(id string) api.AgentStatus {
	h.t.Helper()
	for _, a := range h.svc.Status().Agents {
		if a.ID == id {
			return a
		}
	}
	h.t.Fatalf("agent %s not in status", id)
	return api.AgentStatus{}
}

// slot is the first phase slot of agent id after the bubble's start (which sits on an
// epoch multiple of every whole-minute interval).
func slot(seed, id string, every time.Duration) time.Duration {
	if p := Phase(seed, id, every); p > 0 {
		return p
	}
	return every
}

const testSeed = "test-seed"

func execTarget() *Target {
	return &Target{Exec: &ExecTarget{Command: []string{"pulse"}, Timeout: testTimeout}}
}

// baseConfig runs one agent, "main", every minute, with an exec target.
func baseConfig(agents ...AgentConfig) Config {
	return Config{Seed: testSeed, Defaults: AgentConfig{Every: "1m", Target: execTarget()}, Agents: agents}
}

type harnessOpts struct {
	store   StateStore
	gateway bool
	observe Observer
	client  *http.Client // for http and openclaw targets
}

// serviceTest runs f in a bubble against a running service with a fake exec target.
func serviceTest(t *testing.T, cfg Config, opts harnessOpts, f func(t *testing.T, h *harness)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, cfg, opts)
		defer func() {
			if err := h.stop(); err != nil {
				t.Errorf("Run: %v", err)
			}
		}()
		f(t, h)
	})
}

// runService runs svc until the returned stop is called, which fails t if Run failed.
func runService(t *testing.T, svc *Service) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func startHarness(t *testing.T, cfg Config, opts harnessOpts) *harness {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	h := &harness{t: t, start: time.Now(), exec: &fakeExec{start: time.Now()}, clk: &clock{}, logs: logs}
	deps := Deps{Logger: zap.New(core), Run: runner(h.exec.run), Host: time.UTC, Now: h.clk.now, Store: opts.store, Observe: opts.observe, HTTPClient: opts.client}
	if opts.gateway {
		h.gw = &fakeGateway{}
		deps.Gateway = h.gw
	}
	svc, err := New(cfg, deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.svc = svc
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	synctest.Wait()
	h.stop = func() error {
		cancel()
		err := <-done
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	return h
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if len(kv) > len(key) && kv[:len(key)] == key && kv[len(key)] == '=' {
			return kv[len(key)+1:]
		}
	}
	return ""
}
