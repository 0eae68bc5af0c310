package cron

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/sqlite"
)

// The config file's defaults for cron (internal/config's DefaultCron*; this package's
// tests do not import config, whose start-up would slow the helper processes).
const (
	testWorkers      = 4
	testQueueSize    = 1000
	testRetryMax     = 3
	testDisableAfter = 10
	testHistoryLimit = 100
	testTimeout      = 10 * time.Minute
)

var testRetrySchedule = []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}

// configured gives the settings a test leaves zero the config file's defaults, as the
// daemon would pass them: the service fills nothing in.
func configured(cfg Config) Config {
	if cfg.Workers == 0 {
		cfg.Workers = testWorkers
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = testQueueSize
	}
	cfg.Jobs = configuredJobs(cfg.Jobs)
	return cfg
}

// configuredJobs gives each job's fields the test leaves zero the config file's defaults.
// A test that means "no retries" or "never disable" cannot leave Retry.Max or DisableAfter
// zero here; none does.
func configuredJobs(jobs []Job) []Job {
	out := slices.Clone(jobs)
	for i := range out {
		j := &out[i]
		if j.Missed == "" {
			j.Missed = MissedRunOnce
		}
		if j.Concurrency == "" {
			j.Concurrency = Forbid
		}
		if j.Retry.Max == 0 {
			j.Retry.Max = testRetryMax
		}
		if j.Retry.Schedule == nil {
			j.Retry.Schedule = slices.Clone(testRetrySchedule)
		}
		if j.DisableAfter == 0 {
			j.DisableAfter = testDisableAfter
		}
		if j.HistoryLimit == 0 {
			j.HistoryLimit = testHistoryLimit
		}
		if j.Timeout == 0 {
			j.Timeout = testTimeout
		}
	}
	return out
}

// t0 is where every synctest bubble starts.
var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// instants is a fake schedule: a sorted list of run instants.
type instants []time.Time

func (s instants) Next(t time.Time) (time.Time, bool) {
	i, _ := slices.BinarySearchFunc(s, t, func(a, b time.Time) int {
		if a.After(b) {
			return 1
		}
		return -1 // never equal: find the first after t
	})
	if i == len(s) {
		return time.Time{}, false
	}
	return s[i], true
}

func (s instants) String() string { return fmt.Sprintf("instants(%d)", len(s)) }

// every is a fake schedule: origin + k*period.
type every struct {
	period time.Duration
	origin time.Time
}

func (e every) Next(t time.Time) (time.Time, bool) {
	if t.Before(e.origin) {
		return e.origin, true
	}
	k := t.Sub(e.origin)/e.period + 1
	return e.origin.Add(k * e.period), true
}

func (e every) String() string { return "every " + e.period.String() }

// run is one call a fakeAction saw.
type run struct {
	at   time.Time
	info RunInfo
}

// fakeAction records its runs; answer decides each result, hold (when set) blocks each run
// until it is closed or the run's ctx ends.
type fakeAction struct {
	mu     sync.Mutex
	runs   []run
	ends   []time.Time
	answer func(info RunInfo) error
	hold   chan struct{}
	live   atomic.Int32
	peak   atomic.Int32
}

func (*fakeAction) Kind() string      { return "fake" }
func (*fakeAction) Check(*Deps) error { return nil }

func (f *fakeAction) Run(ctx context.Context, _ *Deps, r RunInfo) (Result, error) {
	n := f.live.Add(1)
	defer f.live.Add(-1)
	for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
	}
	f.mu.Lock()
	f.runs = append(f.runs, run{at: time.Now().UTC(), info: r})
	answer, hold := f.answer, f.hold
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.ends = append(f.ends, time.Now().UTC())
		f.mu.Unlock()
	}()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return Result{}, context.Cause(ctx)
		}
	}
	if answer != nil {
		return Result{Output: []byte("out")}, answer(r)
	}
	return Result{Output: []byte("ok")}, nil
}

func (f *fakeAction) seen() []run {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.runs)
}

func (f *fakeAction) set(answer func(RunInfo) error, hold chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer, f.hold = answer, hold
}

// clock is a wall clock that can jump away from the bubble's monotonic clock.
type clock struct {
	offset atomic.Int64
	reads  atomic.Int64
}

func (c *clock) now() time.Time {
	c.reads.Add(1)
	return time.Now().Add(time.Duration(c.offset.Load()))
}
func (c *clock) jump(d time.Duration) { c.offset.Add(int64(d)) }

// harness is a running service in a bubble.
type harness struct {
	t    *testing.T
	dir  string
	cfg  Config
	svc  *Service
	clk  *clock
	logs *observer.ObservedLogs
	stop func() error
}

// start builds and runs a service on dir with cfg (Now and Logger filled in).
func start(t *testing.T, dir string, cfg Config, clk *clock) *harness {
	t.Helper()
	return startAsGiven(t, dir, configured(cfg), clk)
}

// startAsGiven is start without configured: the service gets cfg as it is.
func startAsGiven(t *testing.T, dir string, cfg Config, clk *clock) *harness {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	if clk == nil {
		clk = &clock{}
	}
	cfg.OpenStore, cfg.Now, cfg.Logger = sqliteAt(dir), clk.now, zap.New(core)
	svc, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h := &harness{t: t, dir: dir, cfg: cfg, svc: svc, clk: clk, logs: logs}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	stopped := false
	h.stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() {
		if err := h.stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	synctest.Wait()
	return h
}

// bubble runs f in a synctest bubble with a fresh state dir.
func bubble(t *testing.T, f func(t *testing.T, dir string)) {
	t.Helper()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) { f(t, dir) })
}

// sleepTo advances the bubble to t0+d and lets everything settle.
func sleepTo(d time.Duration) {
	if w := time.Until(t0.Add(d)); w > 0 {
		time.Sleep(w)
	}
	synctest.Wait()
}

// tasks lists every task of job, oldest first.
func (h *harness) tasks(job string) []api.Task {
	h.t.Helper()
	l, err := h.svc.Tasks(context.Background(), TaskFilter{Job: job, Limit: 1000})
	if err != nil {
		h.t.Fatalf("Tasks: %v", err)
	}
	slices.Reverse(l.Tasks)
	return l.Tasks
}

func (h *harness) job(name string) api.CronJob {
	h.t.Helper()
	for _, j := range h.svc.Status().Jobs {
		if j.Name == name {
			return j
		}
	}
	h.t.Fatalf("job %s not in the status", name)
	return api.CronJob{}
}

// offsets returns a Config.offset that gives each named job its offset (others 0).
func offsets(m map[string]time.Duration) func(string, time.Duration) time.Duration {
	return func(name string, _ time.Duration) time.Duration { return m[name] }
}

// at lists the instants of runs as offsets from t0.
func at(runs []run) []time.Duration {
	out := make([]time.Duration, len(runs))
	for i, r := range runs {
		out[i] = r.at.Sub(t0)
	}
	return out
}

// states lists task states as "kind:state[:reason]@attempt".
func states(ts []api.Task) []string {
	var out []string
	for _, t := range ts {
		s := string(t.Kind) + ":" + string(t.State)
		if t.Reason != "" {
			s += ":" + t.Reason
		}
		out = append(out, fmt.Sprintf("%s@%d", s, t.Attempt))
	}
	return out
}

var errBoom = errors.New("boom")

func mins(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Minute
	}
	return out
}

// waitFor polls cond until it holds, failing after 20 s of real time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sqliteAt opens the task store of one host in dir, as the daemon does.
func sqliteAt(dir string) func(ctx context.Context) (store.TaskStore, error) {
	return func(ctx context.Context) (store.TaskStore, error) {
		return sqlite.OpenTasks(ctx, filepath.Join(dir, sqlite.TasksFile), nil)
	}
}
