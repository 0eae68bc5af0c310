//go:build unix

package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/backoff"
	"github.com/schedd/schedd/internal/platform"
	"github.com/schedd/schedd/internal/testgateway"
)

// These tests supervise real processes: the test binary re-executed as the fake gateway
// (internal/testgateway). Durations are short and real; assertions never depend on speed.

// realConfig runs the fake gateway with opts.
func realConfig(t *testing.T, opts ...string) Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	k, v, _ := strings.Cut(testgateway.Command(opts...), "=")
	return Config{
		Argv:              []string{exe},
		Env:               map[string]string{k: v, "GORACE": testgateway.GoRace},
		BaseEnv:           os.Environ(),
		StopTimeout:       5 * time.Second,
		Backoff:           backoff.Policy{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, Factor: 2},
		ResetAfter:        time.Minute,
		CrashLoopFailures: 3,
		CrashLoopWindow:   time.Minute,
		StopSignal:        syscall.SIGTERM,
		MaxLinesPerSecond: 1000,
	}
}

type realHarness struct {
	t      *testing.T
	sup    *Supervisor
	cancel context.CancelFunc
	done   chan error
	logs   *observer.ObservedLogs
	ns     *platform.NotifySocket
}

// runReal starts a supervisor for cfg; with notify it also serves a notify socket.
func runReal(t *testing.T, cfg Config, notify bool) *realHarness {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	h := &realHarness{t: t, done: make(chan error, 1), logs: logs}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	var readerDone chan struct{}
	if notify {
		ns, err := platform.ListenNotify(filepath.Join(shortTempDir(t), "n.sock"))
		if err != nil {
			t.Fatal(err)
		}
		h.ns = ns
		cfg.NotifySocket = ns.Path()
	}
	sup, err := New(cfg, WithLogger(zap.New(core)))
	if err != nil {
		t.Fatal(err)
	}
	h.sup = sup
	if h.ns != nil {
		readerDone = make(chan struct{})
		go func() {
			defer close(readerDone)
			for {
				m, err := h.ns.Recv()
				if err != nil {
					return
				}
				sup.HandleNotify(ctx, m)
			}
		}()
	}
	go func() { h.done <- sup.Run(ctx) }()
	t.Cleanup(func() {
		h.stop()
		if h.ns != nil {
			h.ns.Close()
			<-readerDone
		}
	})
	return h
}

// stop stops the supervisor and waits for Run to return (once).
func (h *realHarness) stop() {
	h.cancel()
	select {
	case err, ok := <-h.done:
		if ok && err != nil {
			h.t.Errorf("Run: %v", err)
		}
		if ok {
			close(h.done)
		}
	case <-time.After(30 * time.Second):
		h.t.Fatal("Run did not return within 30s of a stop")
	}
}

// waitFor polls cond until it holds or 10 s pass.
func (h *realHarness) waitFor(what string, cond func(api.Gateway) bool) api.Gateway {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := h.sup.Status()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; status %+v last_exit %+v", what, st, st.LastExit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// shortTempDir is a temp dir with a path short enough for a unix socket.
func shortTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// alive reports whether pid is a live process; a zombie waiting to be reaped by init is
// not alive.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) || !procMounted()
	}
	// The state follows the parenthesised command name.
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}

func procMounted() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

func readPIDs(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, n)
	}
	return pids
}

// TestRealSpawnFailure is R-CHILD-01: a missing binary, a file that is not executable and
// a missing working dir are spawn_failed with the errno in status, and are retried with
// backoff, never in a busy loop.
func TestRealSpawnFailure(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-exec")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
		mod        func(*Config)
	}{
		{"missing binary", "no such file", func(c *Config) { c.Argv = []string{filepath.Join(dir, "missing")} }},
		{"not executable", "permission denied", func(c *Config) { c.Argv = []string{notExec} }},
		{"missing workdir", "no such file", func(c *Config) { c.Dir = filepath.Join(dir, "nowhere") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := realConfig(t)
			cfg.Backoff = backoff.Policy{Initial: 100 * time.Millisecond, Max: time.Second, Factor: 2}
			tc.mod(&cfg)
			h := runReal(t, cfg, false)
			st := h.waitFor("two spawn failures", func(st api.Gateway) bool { return st.ConsecutiveFailures >= 2 })
			if st.LastExit == nil || st.LastExit.Reason != api.ExitSpawnFailed {
				t.Fatalf("last_exit %+v, want spawn_failed", st.LastExit)
			}
			if !strings.Contains(strings.ToLower(st.LastExit.Error), tc.want) {
				t.Fatalf("error %q does not say %q", st.LastExit.Error, tc.want)
			}
			// The second attempt came at least the initial delay after the first.
			var at []time.Time
			for _, e := range h.logs.FilterMessage("gateway could not be started").All() {
				at = append(at, e.Time)
			}
			if len(at) < 2 || at[1].Sub(at[0]) < 100*time.Millisecond {
				t.Fatalf("spawn attempts at %v: want ≥ 100ms apart", at)
			}
		})
	}
}

// TestRealCrashLoop is R-CHILD-02 with real processes: a gateway that exits at once is
// restarted with growing delays, reaches crash_looping with a next start, and is never
// given up on.
func TestRealCrashLoop(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	h := runReal(t, realConfig(t, "exit=1", "pid-file="+pids), false)
	st := h.waitFor("crash_looping", func(st api.Gateway) bool { return st.State == api.GatewayCrashLooping })
	if st.NextStartAt.IsZero() || st.ConsecutiveFailures < 3 {
		t.Fatalf("crash_looping status %+v", st)
	}
	h.waitFor("more starts after crash_looping", func(api.Gateway) bool { return len(readPIDs(t, pids)) >= 6 })
	if n := len(h.logs.FilterMessageSnippet("crash looping").All()); n != 1 {
		t.Fatalf("crash looping logged %d times, want once", n)
	}
}

// TestRealCleanExit is R-CHILD-05: exit 0 without a stop request is restarted and logged
// as an unexpected clean exit, not as a stop.
func TestRealCleanExit(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	h := runReal(t, realConfig(t, "exit=0", "after=50ms", "pid-file="+pids), false)
	st := h.waitFor("a restart", func(st api.Gateway) bool { return len(readPIDs(t, pids)) >= 2 && st.LastExit != nil })
	if e := st.LastExit; e.Reason != api.ExitExited || e.Code == nil || *e.Code != 0 {
		t.Fatalf("last_exit %+v, want exit with code 0", e)
	}
	if h.logs.FilterMessageSnippet("exited cleanly without a stop request").Len() == 0 {
		t.Fatal("no log line for the unexpected clean exit")
	}
}

// TestRealDeathBySignal is R-CHILD-06: SIGSEGV and an outside kill -9 are recorded with
// the signal's name and restarted.
func TestRealDeathBySignal(t *testing.T) {
	t.Run("SIGSEGV", func(t *testing.T) {
		// A Go program cannot die of a SIGSEGV sent to it (the runtime turns it into a
		// panic); a shell can.
		cfg := realConfig(t)
		cfg.Argv = []string{"/bin/sh", "-c", "sleep 0.02; kill -SEGV $$"}
		h := runReal(t, cfg, false)
		st := h.waitFor("a signal exit", func(st api.Gateway) bool { return st.LastExit != nil })
		if e := st.LastExit; e.Reason != api.ExitSignal || e.Signal != "SIGSEGV" || e.Code != nil {
			t.Fatalf("last_exit %+v, want signal SIGSEGV", e)
		}
	})
	t.Run("kill -9", func(t *testing.T) {
		h := runReal(t, realConfig(t), false)
		st := h.waitFor("ready", func(st api.Gateway) bool { return st.State == api.GatewayReady })
		if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		st2 := h.waitFor("a new gateway", func(s api.Gateway) bool { return s.State == api.GatewayReady && s.PID != st.PID })
		if e := st2.LastExit; e.Reason != api.ExitSignal || e.Signal != "SIGKILL" || e.PID != st.PID {
			t.Fatalf("last_exit %+v, want SIGKILL of pid %d", e, st.PID)
		}
		if st2.Restarts != 1 {
			t.Fatalf("restarts %d, want 1", st2.Restarts)
		}
	})
}

// TestRealNeverReady is R-CHILD-07: no READY=1 within the timeout is a failed start: the
// gateway is stopped and started again, and readiness_timeout is recorded.
func TestRealNeverReady(t *testing.T) {
	cfg := realConfig(t)
	cfg.Readiness = Readiness{Notify: true, Timeout: 300 * time.Millisecond}
	h := runReal(t, cfg, true)
	st := h.waitFor("a readiness timeout", func(st api.Gateway) bool { return st.LastExit != nil })
	if st.LastExit.Reason != api.ExitReadinessTimeout || !st.ReadySince.IsZero() {
		t.Fatalf("status %+v last_exit %+v", st, st.LastExit)
	}
	// The pid from the exit record: on a loaded machine the process may be stopped before
	// it has run far enough to write a pid file.
	first := st.LastExit.PID
	h.waitFor("the next start", func(st api.Gateway) bool { return st.PID != 0 && st.PID != first })
	if alive(first) {
		t.Fatalf("the gateway that never became ready (pid %d) is still alive", first)
	}
}

// TestRealNotifyReady: READY=1 from the real gateway makes it ready; STATUS= and
// X_SCHEDD_INFLIGHT= show in status; the gateway sees our NOTIFY_SOCKET and
// SCHEDD_SOCKET, never the parent's service-manager variables.
func TestRealNotifyReady(t *testing.T) {
	envFile := filepath.Join(t.TempDir(), "env")
	t.Setenv("WATCHDOG_USEC", "123")
	t.Setenv("INVOCATION_ID", "leaked")
	t.Setenv("SCHEDD_TEST_UNSET", "inherited") // removed by a null in gateway.env
	cfg := realConfig(t, "ready", "ready-delay=50ms", "status=serving", "inflight=2", "env-file="+envFile)
	cfg.BaseEnv = os.Environ()
	cfg.Unset = []string{"SCHEDD_TEST_UNSET"}
	cfg.ControlSocket = "/run/test/schedd.sock"
	cfg.Readiness = Readiness{Notify: true, Timeout: 10 * time.Second}
	h := runReal(t, cfg, true)
	st := h.waitFor("ready", func(st api.Gateway) bool { return st.State == api.GatewayReady })
	if st.StatusText != "serving" || st.Inflight == nil || *st.Inflight != 2 {
		t.Fatalf("status %+v", st)
	}
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, want := range []string{"NOTIFY_SOCKET=" + h.ns.Path(), "SCHEDD_SOCKET=/run/test/schedd.sock"} {
		if !slices.Contains(env, want) {
			t.Errorf("gateway env lacks %s", want)
		}
	}
	for _, v := range env {
		if strings.HasPrefix(v, "WATCHDOG_USEC=") || strings.HasPrefix(v, "INVOCATION_ID=") || strings.HasPrefix(v, "SCHEDD_TEST_UNSET=") {
			t.Errorf("gateway env has the parent's %s", v)
		}
	}
}

// TestRealReadyThenDies is R-CHILD-08: ready, then dead 200 ms later, again and again:
// the failures accrue and backoff applies.
func TestRealReadyThenDies(t *testing.T) {
	cfg := realConfig(t, "ready", "exit=1", "after=200ms")
	cfg.Readiness = Readiness{Notify: true, Timeout: 10 * time.Second}
	h := runReal(t, cfg, true)
	h.waitFor("three failures", func(st api.Gateway) bool { return st.ConsecutiveFailures >= 3 })
	if h.logs.FilterMessage("gateway ready").Len() < 3 {
		t.Fatal("the gateway should have been ready before each failure")
	}
}

// TestRealHungGateway is R-CHILD-09: a gateway frozen with SIGSTOP stops pinging the
// watchdog; it is warned about, then killed with liveness_timeout and restarted.
func TestRealHungGateway(t *testing.T) {
	cfg := realConfig(t, "ready", "watchdog=20ms")
	cfg.Readiness = Readiness{Notify: true, Timeout: 10 * time.Second}
	cfg.Liveness = Liveness{Watchdog: 200 * time.Millisecond, Failures: 2}
	cfg.StopTimeout = 200 * time.Millisecond
	h := runReal(t, cfg, true)
	st := h.waitFor("ready", func(st api.Gateway) bool { return st.State == api.GatewayReady })
	if err := syscall.Kill(st.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	st2 := h.waitFor("a new gateway", func(s api.Gateway) bool { return s.State == api.GatewayReady && s.PID != st.PID })
	if e := st2.LastExit; e.Reason != api.ExitLivenessTimeout || e.PID != st.PID {
		t.Fatalf("last_exit %+v, want liveness_timeout of pid %d", e, st.PID)
	}
	if h.logs.FilterMessage("gateway missed its watchdog ping").Len() == 0 {
		t.Fatal("no warning before the kill")
	}
	if alive(st.PID) {
		t.Fatal("the hung gateway is still alive")
	}
}

// TestRealIgnoresTERM is R-CHILD-10: a gateway that ignores SIGTERM and keeps writing is
// killed with SIGKILL at the stop timeout, its whole group is gone, and the stop is
// reported as killed_after_timeout.
func TestRealIgnoresTERM(t *testing.T) {
	gc := filepath.Join(t.TempDir(), "grandchild")
	cfg := realConfig(t, "ignore-term", "spew", "grandchild="+gc, "ready")
	cfg.StopTimeout = 300 * time.Millisecond
	cfg.Readiness = Readiness{Notify: true, Timeout: 10 * time.Second}
	h := runReal(t, cfg, true)
	st := h.waitFor("ready", func(st api.Gateway) bool { return st.State == api.GatewayReady })
	start := time.Now()
	h.stop()
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("stopped after %v, before the stop timeout", d)
	}
	end := h.sup.Status()
	if e := end.LastExit; e.Reason != api.ExitKilledAfterTimeout || e.Signal != "SIGKILL" {
		t.Fatalf("last_exit %+v, want killed_after_timeout by SIGKILL", e)
	}
	if end.State != api.GatewayStopped {
		t.Fatalf("state %s, want stopped", end.State)
	}
	for _, pid := range append(readPIDs(t, gc), st.PID) {
		if alive(pid) {
			t.Errorf("pid %d of the group survived", pid)
		}
	}
}

// TestRealGrandchildrenGone is R-CHILD-12: when the gateway dies (or is stopped), the
// grandchildren it left in its group are killed before the next gateway starts.
func TestRealGrandchildrenGone(t *testing.T) {
	dir := t.TempDir()
	gc := filepath.Join(dir, "grandchildren")
	pids := filepath.Join(dir, "pids")
	cfg := realConfig(t, "grandchild="+gc, "pid-file="+pids, "exit=1", "after=100ms")
	cfg.Backoff = backoff.Policy{Initial: 200 * time.Millisecond, Max: time.Second, Factor: 2}
	h := runReal(t, cfg, false)
	h.waitFor("a second gateway", func(api.Gateway) bool { return len(readPIDs(t, pids)) >= 2 })
	g := readPIDs(t, gc)
	if len(g) == 0 {
		t.Fatal("no grandchild was started")
	}
	if alive(g[0]) {
		t.Fatalf("grandchild %d of the first gateway is alive while the second runs", g[0])
	}
	h.stop()
	for _, pid := range readPIDs(t, gc) {
		if alive(pid) {
			t.Errorf("grandchild %d survived the stop", pid)
		}
	}
}

// TestRealFlood is R-CHILD-14: a gateway writing 50 MB as fast as it can is never blocked
// by us (it reaches READY=1 behind the flood), and our log is capped with a drop count.
func TestRealFlood(t *testing.T) {
	cfg := realConfig(t, "flood=50000000", "ready")
	cfg.Readiness = Readiness{Notify: true, Timeout: time.Minute}
	cfg.MaxLinesPerSecond = 100
	h := runReal(t, cfg, true)
	h.waitFor("ready after the flood", func(st api.Gateway) bool { return st.State == api.GatewayReady })
	if n := h.logs.FilterLoggerName("gateway").Len(); n > 10_000 {
		t.Fatalf("logged %d gateway lines; the cap should keep it near 100/s", n)
	}
	if h.logs.FilterMessage("gateway output dropped over the rate cap").Len() == 0 &&
		h.logs.FilterLoggerName("gateway").Len() < 100 {
		t.Fatal("neither output lines nor a drop count were logged")
	}
}

// TestRealClosedOutput is R-CHILD-15: a gateway that closes stdout and stderr and lives on
// is not mistaken for dead.
func TestRealClosedOutput(t *testing.T) {
	cfg := realConfig(t, "close-output", "ready")
	cfg.Readiness = Readiness{Notify: true, Timeout: 10 * time.Second}
	h := runReal(t, cfg, true)
	st := h.waitFor("ready", func(st api.Gateway) bool { return st.State == api.GatewayReady })
	time.Sleep(300 * time.Millisecond)
	st2 := h.sup.Status()
	if st2.State != api.GatewayReady || st2.PID != st.PID || st2.Restarts != 0 || st2.LastExit != nil {
		t.Fatalf("after closing its output: %+v", st2)
	}
	if !alive(st.PID) {
		t.Fatal("gateway is gone")
	}
}

// TestRealRestartFreshPID: every restart gives the gateway a new pid and the old one is
// gone when the new one starts.
func TestRealRestartFreshPID(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	h := runReal(t, realConfig(t, "pid-file="+pids), false)
	h.waitFor("ready", func(st api.Gateway) bool { return st.State == api.GatewayReady })
	seen := map[int]bool{}
	for range 3 {
		res, err := h.sup.Restart(context.Background())
		if err != nil || !res.OK {
			t.Fatalf("restart: %+v %v", res, err)
		}
		if seen[res.PID] || res.PID == res.PreviousPID {
			t.Fatalf("pid %d reused", res.PID)
		}
		seen[res.PID] = true
		if alive(res.PreviousPID) {
			t.Fatalf("previous gateway %d still alive", res.PreviousPID)
		}
	}
}

// TestRealBackoffReset is R-CHILD-03 with real processes: five crashes, then a gateway
// that stays ready for longer than the reset window; its next crash is restarted at once
// (no backoff) and counts as the first failure again.
func TestRealBackoffReset(t *testing.T) {
	crashing := filepath.Join(t.TempDir(), "crashing")
	if err := os.WriteFile(crashing, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := realConfig(t, "exit=1", "after=20ms", "exit-while="+crashing)
	// A crash 20 ms after the start must never outlast the reset window, even on a loaded
	// machine where the race detector slows the exit down: a second leaves room for that.
	cfg.ResetAfter = time.Second
	cfg.CrashLoopFailures = 10
	h := runReal(t, cfg, false)
	h.waitFor("five failures", func(st api.Gateway) bool { return st.ConsecutiveFailures >= 5 })
	os.Remove(crashing)
	st := h.waitFor("the reset", func(st api.Gateway) bool { return st.State == api.GatewayReady && st.ConsecutiveFailures == 0 })
	waits := h.logs.FilterMessage("gateway will be started again").Len()
	syscall.Kill(st.PID, syscall.SIGKILL)
	st2 := h.waitFor("the next gateway", func(s api.Gateway) bool { return s.State == api.GatewayReady && s.PID != st.PID })
	if st2.ConsecutiveFailures != 1 {
		t.Fatalf("consecutive_failures %d after one crash, want 1", st2.ConsecutiveFailures)
	}
	if n := h.logs.FilterMessage("gateway will be started again").Len(); n != waits {
		t.Fatalf("the crash after a healthy run went through backoff (%d waits, %d before)", n, waits)
	}
}
