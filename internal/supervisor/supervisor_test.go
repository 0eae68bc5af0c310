package supervisor

import (
	"context"
	"errors"
	"slices"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/backoff"
	"github.com/schedd/schedd/internal/platform"
)

// testConfig is a config with exact, jitter-free timing.
func testConfig() Config {
	return Config{
		Argv:              []string{"gateway"},
		StopTimeout:       30 * time.Second,
		Backoff:           backoff.Policy{Initial: time.Second, Max: 60 * time.Second, Factor: 2},
		ResetAfter:        60 * time.Second,
		CrashLoopFailures: 5,
		CrashLoopWindow:   2 * time.Minute,
		StopSignal:        syscall.SIGTERM,
		MaxLinesPerSecond: 1000,
	}
}

// harness runs a supervisor in the current bubble.
type harness struct {
	t      *testing.T
	sup    *Supervisor
	fs     *fakeStarter
	cancel context.CancelFunc
	done   chan error
	t0     time.Time
	states chan api.Gateway
}

// start runs a supervisor of cfg with fs as its starter; opts come after the harness's own.
func start(t *testing.T, cfg Config, fs *fakeStarter, opts ...Option) *harness {
	t.Helper()
	h := &harness{t: t, fs: fs, done: make(chan error, 1), t0: time.Now(), states: make(chan api.Gateway, 1000)}
	sup, err := New(cfg, append([]Option{WithStarter(fs), WithRand(func() float64 { return 0 }),
		WithGroupOf(func(pid int) (int, error) { return pid, nil }),
		OnStateChange(func(st api.Gateway) { h.states <- st })}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	h.sup = sup
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- sup.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-h.done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	synctest.Wait()
	return h
}

// at returns the virtual time since the harness started.
func (h *harness) at() time.Duration { return time.Since(h.t0) }

// sleepTo advances virtual time to t0+d and lets everything settle.
func (h *harness) sleepTo(d time.Duration) {
	h.t.Helper()
	if now := h.at(); d < now {
		h.t.Fatalf("sleepTo(%v) but it is already %v", d, now)
	}
	time.Sleep(d - h.at())
	synctest.Wait()
}

func (h *harness) state() api.GatewayState { return h.sup.Status().State }

// TestCrashLoopBackoffSchedule pins the crash restart timing (R-CHILD-02): the first crash
// restarts at once, then 1, 2, 4, 8, 16, 32, 60, 60 s; crash_looping is entered at the
// fifth failure inside the window, and retries go on at the cap for ever.
func TestCrashLoopBackoffSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		h := start(t, testConfig(), fs)
		var starts []time.Duration
		want := []time.Duration{0, 0, 1, 3, 7, 15, 31, 63, 123, 183, 243}
		for i := range want {
			p := fs.next(t)
			starts = append(starts, h.at().Round(time.Millisecond)/time.Second)
			if i == len(want)-1 {
				break
			}
			p.exitCode(1)
			synctest.Wait()
			st := h.sup.Status()
			if st.ConsecutiveFailures != i+1 {
				t.Fatalf("after failure %d: consecutive_failures = %d", i+1, st.ConsecutiveFailures)
			}
			wantState := api.GatewayBackoff
			if i+1 >= 5 {
				wantState = api.GatewayCrashLooping
			}
			if i == 0 {
				// The first failure restarts at once: already starting again.
				continue
			}
			if st.State != wantState {
				t.Fatalf("after failure %d: state %s, want %s", i+1, st.State, wantState)
			}
			if got, want := st.NextStartAt.Sub(h.t0), want[i+1]*time.Second; got != want {
				t.Fatalf("after failure %d: next_start_at = t0+%v, want t0+%v", i+1, got, want)
			}
			time.Sleep(time.Until(st.NextStartAt) - time.Nanosecond)
			synctest.Wait()
			fs.none(t) // not a nanosecond early
			time.Sleep(time.Nanosecond)
			synctest.Wait()
		}
		if !slices.Equal(starts, want) {
			t.Fatalf("starts at %v s, want %v s", starts, want)
		}
		if e := h.sup.Status().LastExit; e == nil || e.Reason != api.ExitExited || e.Code == nil || *e.Code != 1 {
			t.Fatalf("last_exit = %+v, want exit code 1", e)
		}
	})
}

// TestBackoffResetAfterHealthyUptime is R-CHILD-03: five crashes, then ready for longer
// than the reset window, then one crash: the next start is immediate again and the
// crash_looping state is left.
func TestBackoffResetAfterHealthyUptime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		h := start(t, testConfig(), fs)
		var p *fakeProc
		for range 5 {
			p = fs.next(t)
			p.exitCode(2)
			synctest.Wait()
			if st := h.sup.Status(); !st.NextStartAt.IsZero() {
				time.Sleep(time.Until(st.NextStartAt))
				synctest.Wait()
			}
		}
		if s := h.state(); s != api.GatewayReady {
			t.Fatalf("state %s, want ready", s)
		}
		p = fs.next(t)
		time.Sleep(60*time.Second - time.Nanosecond)
		synctest.Wait()
		if n := h.sup.Status().ConsecutiveFailures; n != 5 {
			t.Fatalf("consecutive_failures before the reset window = %d, want 5", n)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n := h.sup.Status().ConsecutiveFailures; n != 0 {
			t.Fatalf("consecutive_failures after the reset window = %d, want 0", n)
		}
		crashAt := time.Now()
		p.exitCode(3)
		synctest.Wait()
		p2 := fs.next(t)
		if !p2.startedAt.Equal(crashAt) {
			t.Fatalf("restart after a healthy run took %v, want 0", p2.startedAt.Sub(crashAt))
		}
		if st := h.sup.Status(); st.ConsecutiveFailures != 1 || st.State != api.GatewayReady {
			t.Fatalf("status after one crash: %+v", st)
		}
		// The second consecutive failure waits the initial delay, not the old 16 s.
		p2.exitCode(3)
		synctest.Wait()
		if st := h.sup.Status(); st.State != api.GatewayBackoff || time.Until(st.NextStartAt) != time.Second {
			t.Fatalf("after the second failure: state %s, next start in %v; want backoff, 1s", st.State, time.Until(st.NextStartAt))
		}
	})
}

// TestRareCrashesNeverAccrue is R-CHILD-04: a crash once an hour never reaches backoff or
// crash_looping.
func TestRareCrashesNeverAccrue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		h := start(t, testConfig(), fs)
		for range 10 {
			p := fs.next(t)
			time.Sleep(time.Hour)
			p.exitCode(1)
			synctest.Wait()
			if st := h.sup.Status(); st.ConsecutiveFailures != 1 || st.State == api.GatewayCrashLooping {
				t.Fatalf("status after a rare crash: %+v", st)
			}
		}
	})
}

// TestSpawnFailureBacksOff is R-CHILD-01's timing: a spawn failure is classified apart
// and always waits (1, 2, 4 s...), so a missing binary never spins.
func TestSpawnFailureBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		fs.spawnErr = errFakeSpawn
		h := start(t, testConfig(), fs)
		var at []time.Duration
		for range 5 {
			<-fs.cmds
			at = append(at, h.at())
			st := h.sup.Status()
			if st.LastExit == nil || st.LastExit.Reason != api.ExitSpawnFailed || st.LastExit.Error != errFakeSpawn.Error() {
				t.Fatalf("last_exit = %+v, want spawn_failed with the error", st.LastExit)
			}
			time.Sleep(time.Until(st.NextStartAt))
			synctest.Wait()
		}
		want := []time.Duration{0, 1 * time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second}
		if !slices.Equal(at, want) {
			t.Fatalf("spawn attempts at %v, want %v", at, want)
		}
	})
}

// TestReadyThenDiesQuickly is R-CHILD-08: uptime counts from ready, so a gateway that is
// ready for 200 ms and dies is a failure that accrues.
func TestReadyThenDiesQuickly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		h := start(t, testConfig(), fs)
		for i := 1; i <= 3; i++ {
			p := fs.next(t)
			time.Sleep(200 * time.Millisecond)
			p.exitCode(1)
			synctest.Wait()
			if n := h.sup.Status().ConsecutiveFailures; n != i {
				t.Fatalf("consecutive_failures = %d, want %d", n, i)
			}
			if st := h.sup.Status(); !st.NextStartAt.IsZero() {
				time.Sleep(time.Until(st.NextStartAt))
				synctest.Wait()
			}
		}
	})
}

// TestNeverReady is R-CHILD-07: a gateway that never says READY=1 is stopped (TERM, then
// KILL) at the readiness timeout and counted as a failed start, never as success.
func TestNeverReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		fs.ignoreTerm = true
		cfg := testConfig()
		cfg.Readiness = Readiness{Notify: true, Timeout: 10 * time.Second}
		cfg.StopTimeout = 5 * time.Second
		h := start(t, cfg, fs)
		p := fs.next(t)
		if s := h.state(); s != api.GatewayStarting {
			t.Fatalf("state %s, want starting", s)
		}
		h.sleepTo(10*time.Second - time.Nanosecond)
		if len(p.sigs()) != 0 {
			t.Fatal("signalled before the readiness timeout")
		}
		h.sleepTo(10 * time.Second)
		if s := h.state(); s != api.GatewayStopping {
			t.Fatalf("state at the timeout %s, want stopping", s)
		}
		h.sleepTo(15 * time.Second)
		sigs := p.sigs()
		if len(sigs) != 2 || sigs[0].sig != syscall.SIGTERM || sigs[1].sig != syscall.SIGKILL ||
			sigs[0].at.Sub(h.t0) != 10*time.Second || sigs[1].at.Sub(h.t0) != 15*time.Second {
			t.Fatalf("signals %v, want SIGTERM at 10s then SIGKILL at 15s", sigs)
		}
		st := h.sup.Status()
		if st.LastExit == nil || st.LastExit.Reason != api.ExitReadinessTimeout || st.ConsecutiveFailures != 1 {
			t.Fatalf("status %+v, want last_exit readiness_timeout and one failure", st)
		}
		if st.ReadySince != (time.Time{}) {
			t.Fatal("a readiness timeout must never look ready")
		}
	})
}

// TestNotifyReady: READY=1 from the gateway's group makes it ready; from outside the
// group it is ignored.
func TestNotifyReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		cfg := testConfig()
		cfg.Readiness = Readiness{Notify: true, Timeout: time.Minute}
		h := start(t, cfg, fs)
		p := fs.next(t)
		ctx := t.Context()
		h.sup.HandleNotify(ctx, platform.NotifyMessage{PID: 99999, Fields: map[string]string{"READY": "1"}})
		synctest.Wait()
		if s := h.state(); s != api.GatewayStarting {
			t.Fatalf("a stranger's READY=1 made the state %s", s)
		}
		time.Sleep(3 * time.Second)
		h.sup.HandleNotify(ctx, platform.NotifyMessage{PID: p.pid, Fields: map[string]string{"READY": "1", "STATUS": "listening", "X_SCHEDD_INFLIGHT": "4"}})
		synctest.Wait()
		st := h.sup.Status()
		if st.State != api.GatewayReady || st.ReadySince.Sub(h.t0) != 3*time.Second || st.StatusText != "listening" || st.Inflight == nil || *st.Inflight != 4 {
			t.Fatalf("status %+v", st)
		}
	})
}

// TestStopIgnoringTERM is R-CHILD-10's timing: SIGKILL at exactly the stop timeout, and
// the exit is reported as killed_after_timeout. It is also R-SUP-05: no respawn after.
func TestStopIgnoringTERM(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		fs.ignoreTerm = true
		h := start(t, testConfig(), fs)
		p := fs.next(t)
		time.Sleep(time.Minute)
		h.cancel()
		synctest.Wait()
		t0 := time.Now()
		time.Sleep(30*time.Second - time.Nanosecond)
		synctest.Wait()
		if n := len(p.sigs()); n != 1 {
			t.Fatalf("%d signals before the stop timeout, want only SIGTERM", n)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		sigs := p.sigs()
		if len(sigs) != 2 || sigs[1].sig != syscall.SIGKILL || sigs[1].at.Sub(t0) != 30*time.Second {
			t.Fatalf("signals %v, want SIGKILL 30s after SIGTERM", sigs)
		}
		if err := <-h.done; err != nil {
			t.Fatal(err)
		}
		h.done <- nil // for the cleanup
		st := h.sup.Status()
		if st.State != api.GatewayStopped || st.LastExit.Reason != api.ExitKilledAfterTimeout || st.LastExit.Signal != "SIGKILL" {
			t.Fatalf("status %+v last_exit %+v", st, st.LastExit)
		}
		fs.none(t)
	})
}

// TestLongDrain_RCHILD11 is R-CHILD-11: a gateway that needs 40 s to drain, within a 30 s
// stop timeout it extends by 20 s, is never killed: it gets SIGTERM only, its exit is
// accepted as a stop, and schedd's own manager is asked for the time left at the start of
// the stop and again at the extension.
func TestLongDrain_RCHILD11(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		fs.ignoreTerm = true
		var waits []time.Duration
		h := start(t, testConfig(), fs, OnStopWait(func(d time.Duration) { waits = append(waits, d) }))
		p := fs.next(t)
		h.cancel()
		synctest.Wait()
		time.Sleep(25 * time.Second)
		h.sup.HandleNotify(context.Background(), platform.NotifyMessage{PID: p.pid,
			Fields: map[string]string{"EXTEND_TIMEOUT_USEC": "20000000", "STATUS": "draining"}})
		synctest.Wait()
		time.Sleep(15 * time.Second) // 40 s after SIGTERM: past the first timeout, inside the extension
		synctest.Wait()
		if sigs := p.sigs(); len(sigs) != 1 || sigs[0].sig != syscall.SIGTERM {
			t.Fatalf("signals %v during a drain within the timeout, want SIGTERM only", sigs)
		}
		if st := h.sup.Status(); st.StatusText != "draining" {
			t.Fatalf("status text %q while stopping, want the gateway's STATUS=draining", st.StatusText)
		}
		p.exitCode(0)
		if err := <-h.done; err != nil {
			t.Fatal(err)
		}
		h.done <- nil // for the cleanup
		st := h.sup.Status()
		if st.LastExit == nil || st.LastExit.Reason != api.ExitStop || st.StatusText != "" {
			t.Fatalf("status %+v last_exit %+v, want an accepted stop, the status text gone with the process", st, st.LastExit)
		}
		want := []time.Duration{30*time.Second + groupCleanupTimeout, 20*time.Second + groupCleanupTimeout}
		if !slices.Equal(waits, want) {
			t.Fatalf("asked the service manager for %v, want %v", waits, want)
		}
	})
}

// TestSecondStopEscalates is R-SIG-05's supervisor half: Kill during a graceful stop
// sends SIGKILL at once.
func TestSecondStopEscalates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		fs.ignoreTerm = true
		h := start(t, testConfig(), fs)
		p := fs.next(t)
		h.cancel()
		synctest.Wait()
		time.Sleep(100 * time.Millisecond)
		if err := h.sup.Kill(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		sigs := p.sigs()
		if len(sigs) != 2 || sigs[1].sig != syscall.SIGKILL || sigs[1].at.Sub(sigs[0].at) != 100*time.Millisecond {
			t.Fatalf("signals %v, want SIGKILL 100ms after SIGTERM", sigs)
		}
		<-h.done
		h.done <- nil
		if e := h.sup.Status().LastExit; e.Reason != api.ExitStop {
			t.Fatalf("last_exit %+v, want stop", e)
		}
		// Requests after Run returned fail cleanly.
		if err := h.sup.Kill(context.Background()); !errors.Is(err, ErrNotRunning) {
			t.Fatalf("Kill after Run: %v", err)
		}
	})
}

// TestStopDuringBackoff is R-SUP-05: a stop during a backoff sleep ends Run at once with
// no further start.
func TestStopDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		h := start(t, testConfig(), fs)
		fs.next(t).exitCode(1)
		synctest.Wait()
		fs.next(t).exitCode(1)
		synctest.Wait()
		if s := h.state(); s != api.GatewayBackoff {
			t.Fatalf("state %s, want backoff", s)
		}
		h.cancel()
		synctest.Wait()
		if s := h.state(); s != api.GatewayStopped {
			t.Fatalf("state %s, want stopped", s)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		fs.none(t)
	})
}

// TestStopDuringStartup is R-SUP-05: a stop while the gateway is not yet ready stops it
// and never respawns.
func TestStopDuringStartup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		cfg := testConfig()
		cfg.Readiness = Readiness{Notify: true, Timeout: time.Minute}
		h := start(t, cfg, fs)
		p := fs.next(t)
		h.cancel()
		synctest.Wait()
		if sigs := p.sigs(); len(sigs) != 1 || sigs[0].sig != syscall.SIGTERM {
			t.Fatalf("signals %v, want SIGTERM", sigs)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		fs.none(t)
		if st := h.sup.Status(); st.State != api.GatewayStopped || st.LastExit.Reason != api.ExitStop {
			t.Fatalf("status %+v", st)
		}
	})
}

// TestWatchdog is R-CHILD-09 with the notify watchdog: pings keep the gateway alive;
// silence is warned about after one interval and killed after Failures intervals.
func TestWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		cfg := testConfig()
		cfg.Liveness = Liveness{Watchdog: 10 * time.Second, Failures: 2}
		h := start(t, cfg, fs)
		p := fs.next(t)
		if env := <-fs.cmds; !slices.Contains(env.Env, "WATCHDOG_USEC=10000000") {
			t.Fatalf("WATCHDOG_USEC not passed: %v", env.Env)
		}
		ping := func() {
			h.sup.HandleNotify(context.Background(), platform.NotifyMessage{PID: p.pid, Fields: map[string]string{"WATCHDOG": "1"}})
			synctest.Wait()
		}
		for range 10 {
			time.Sleep(9 * time.Second)
			ping()
		}
		if len(p.sigs()) != 0 {
			t.Fatal("killed although it pinged")
		}
		last := time.Now()
		time.Sleep(20*time.Second - time.Nanosecond)
		synctest.Wait()
		if len(p.sigs()) != 0 {
			t.Fatal("killed before two missed intervals")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		sigs := p.sigs()
		if len(sigs) == 0 || sigs[0].at.Sub(last) != 20*time.Second {
			t.Fatalf("signals %v, want SIGTERM 20s after the last ping", sigs)
		}
		if e := h.sup.Status().LastExit; e == nil || e.Reason != api.ExitLivenessTimeout {
			t.Fatalf("last_exit %+v, want liveness_timeout", e)
		}
	})
}

// fakeChecker fails while fail is set.
type fakeChecker struct {
	results chan error
}

func (f fakeChecker) Check(ctx context.Context) error {
	select {
	case err := <-f.results:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestLivenessProbe is R-CHILD-09 with a probe: failures below the threshold warn, the
// threshold kills with liveness_timeout; a hung check counts as a failure at its timeout.
func TestLivenessProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		cfg := testConfig()
		fc := fakeChecker{results: make(chan error, 10)}
		cfg.Liveness = Liveness{Probe: fc, Every: 10 * time.Second, Timeout: 2 * time.Second, Failures: 3}
		h := start(t, cfg, fs)
		p := fs.next(t)
		fc.results <- nil
		fc.results <- errors.New("status 500")
		fc.results <- nil // recovers: the count starts again
		fc.results <- errors.New("status 500")
		fc.results <- errors.New("status 500")
		// the sixth check hangs and times out after 2 s
		h.sleepTo(59 * time.Second)
		if len(p.sigs()) != 0 {
			t.Fatal("killed too early")
		}
		h.sleepTo(62*time.Second - time.Nanosecond)
		if len(p.sigs()) != 0 {
			t.Fatal("killed before the hung check timed out")
		}
		h.sleepTo(62 * time.Second)
		if sigs := p.sigs(); len(sigs) != 1 {
			t.Fatalf("signals %v, want SIGTERM at 62s", sigs)
		}
		if e := h.sup.Status().LastExit; e == nil || e.Reason != api.ExitLivenessTimeout {
			t.Fatalf("last_exit %+v", e)
		}
	})
}

// TestRestart gives the gateway a fresh pid and reports both pids.
func TestRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		h := start(t, testConfig(), fs)
		p := fs.next(t)
		res, err := h.sup.Restart(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p2 := fs.next(t)
		if !res.OK || res.PreviousPID != p.pid || res.PID != p2.pid || p2.pid == p.pid {
			t.Fatalf("result %+v, old %d new %d", res, p.pid, p2.pid)
		}
		st := h.sup.Status()
		if st.Restarts != 1 || st.ConsecutiveFailures != 0 || st.LastExit.Reason != api.ExitRestart {
			t.Fatalf("status %+v", st)
		}
	})
}

// TestRestartDuringBackoff starts the gateway at once (R-SIG-06: accepted deterministically).
func TestRestartDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		h := start(t, testConfig(), fs)
		fs.next(t).exitCode(1)
		synctest.Wait()
		fs.next(t).exitCode(1)
		synctest.Wait()
		res, err := h.sup.Restart(context.Background())
		if err != nil || !res.OK {
			t.Fatalf("Restart: %+v, %v", res, err)
		}
		if h.at() != 0 {
			t.Fatalf("restart waited %v", h.at())
		}
		fs.next(t)
	})
}

// TestRestartFailsReadiness reports ok=false and leaves the crash backoff in charge.
func TestRestartFailsReadiness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		cfg := testConfig()
		cfg.Readiness = Readiness{Notify: true, Timeout: 10 * time.Second}
		h := start(t, cfg, fs)
		p := fs.next(t)
		h.sup.HandleNotify(context.Background(), platform.NotifyMessage{PID: p.pid, Fields: map[string]string{"READY": "1"}})
		synctest.Wait()
		res, err := h.sup.Restart(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.OK || res.Error == "" {
			t.Fatalf("result %+v, want a failure", res)
		}
		if h.at() != 10*time.Second {
			t.Fatalf("failure reported at %v, want at the 10s readiness timeout", h.at())
		}
		synctest.Wait()
		if st := h.sup.Status(); st.ConsecutiveFailures != 1 {
			t.Fatalf("status %+v", st)
		}
	})
}

// TestStateChangesReported: every state change reaches the hook, in order.
func TestStateChangesReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		h := start(t, testConfig(), fs)
		fs.next(t).exitCode(1)
		synctest.Wait()
		fs.next(t).exitCode(1)
		synctest.Wait()
		h.cancel()
		synctest.Wait()
		var got []api.GatewayState
		for len(h.states) > 0 {
			got = append(got, (<-h.states).State)
		}
		want := []api.GatewayState{api.GatewayStarting, api.GatewayReady, api.GatewayStarting, api.GatewayReady, api.GatewayBackoff, api.GatewayStopped}
		if !slices.Equal(got, want) {
			t.Fatalf("states %v, want %v", got, want)
		}
	})
}

// TestReloadNotify is the signal restart method: the gateway gets the signal, keeps its
// pid, and is ready again only after RELOADING=1 then READY=1.
func TestReloadNotify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		fs.ignoreTerm = true // the fake would exit on any signal it does not ignore
		cfg := testConfig()
		cfg.Readiness = Readiness{Notify: true, Timeout: 10 * time.Second}
		h := start(t, cfg, fs)
		p := fs.next(t)
		send := func(kv ...string) {
			f := map[string]string{}
			for i := 0; i < len(kv); i += 2 {
				f[kv[i]] = kv[i+1]
			}
			h.sup.HandleNotify(context.Background(), platform.NotifyMessage{PID: p.pid, Fields: f})
			synctest.Wait()
		}
		send("READY", "1")
		done := make(chan RestartResult, 1)
		go func() {
			res, err := h.sup.Reload(context.Background(), syscall.SIGHUP)
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		synctest.Wait()
		if sigs := p.sigs(); len(sigs) != 1 || sigs[0].sig != syscall.SIGHUP {
			t.Fatalf("signals %v, want SIGHUP", sigs)
		}
		if s := h.state(); s != api.GatewayStarting {
			t.Fatalf("state %s while reloading", s)
		}
		send("READY", "1") // stale: no RELOADING=1 yet
		if s := h.state(); s != api.GatewayStarting {
			t.Fatal("READY=1 before RELOADING=1 ended the reload")
		}
		time.Sleep(time.Second)
		send("RELOADING", "1")
		send("READY", "1")
		res := <-done
		if !res.OK || res.PID != p.pid || res.PreviousPID != p.pid {
			t.Fatalf("result %+v", res)
		}
		fs.none(t)
		if st := h.sup.Status(); st.State != api.GatewayReady || st.Restarts != 0 {
			t.Fatalf("status %+v", st)
		}
	})
}

// TestReloadTimeout: not ready again within the readiness timeout is a failed start.
func TestReloadTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		cfg := testConfig()
		cfg.Readiness = Readiness{Notify: true, Timeout: 10 * time.Second}
		cfg.StopSignal = syscall.SIGTERM
		h := start(t, cfg, fs)
		p := fs.next(t)
		p.ignoreTerm = true
		h.sup.HandleNotify(context.Background(), platform.NotifyMessage{PID: p.pid, Fields: map[string]string{"READY": "1"}})
		synctest.Wait()
		res, err := h.sup.Reload(context.Background(), syscall.SIGHUP)
		// Failed at the 10 s timeout; reported once the stop (SIGTERM ignored, SIGKILL at
		// the 30 s stop timeout) is done.
		if err != nil || res.OK || h.at() != 40*time.Second {
			t.Fatalf("result %+v %v at %v", res, err, h.at())
		}
	})
}

// TestReloadReadinessNone: without a readiness signal, the reload is done once signalled.
func TestReloadReadinessNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		fs.ignoreTerm = true
		h := start(t, testConfig(), fs)
		p := fs.next(t)
		res, err := h.sup.Reload(context.Background(), syscall.SIGHUP)
		if err != nil || !res.OK || res.PID != p.pid {
			t.Fatalf("result %+v %v", res, err)
		}
	})
}

// TestReconfigure: new settings apply at the next start, not to the running gateway.
func TestReconfigure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		h := start(t, testConfig(), fs)
		p := fs.next(t)
		cfg := testConfig()
		cfg.Argv = []string{"gateway-v2"}
		if err := h.sup.Reconfigure(cfg); err != nil {
			t.Fatal(err)
		}
		if c := <-fs.cmds; c.Argv[0] != "gateway" {
			t.Fatalf("first start ran %v", c.Argv)
		}
		p.exitCode(1)
		synctest.Wait()
		if c := <-fs.cmds; c.Argv[0] != "gateway-v2" {
			t.Fatalf("start after Reconfigure ran %v", c.Argv)
		}
	})
}
