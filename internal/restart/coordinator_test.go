package restart

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeRestarter records when restarts begin; each takes `took` of virtual time.
type fakeRestarter struct {
	took    time.Duration
	fail    bool
	mu      sync.Mutex
	calls   []time.Time
	methods []Method
	pid     int
}

func (f *fakeRestarter) Restart(ctx context.Context, m Method) (Outcome, error) {
	f.mu.Lock()
	f.calls = append(f.calls, time.Now())
	f.methods = append(f.methods, m)
	f.pid++
	pid := f.pid
	f.mu.Unlock()
	select {
	case <-time.After(f.took):
	case <-ctx.Done():
		return Outcome{}, ctx.Err()
	}
	if f.fail {
		return Outcome{PreviousPID: pid - 1, Error: "not ready within 10s"}, nil
	}
	return Outcome{OK: true, PID: pid, PreviousPID: pid - 1}, nil
}

func (f *fakeRestarter) at() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.calls...)
}

// fakeCounter answers with n; hang makes every check block until its context ends.
type fakeCounter struct {
	mu          sync.Mutex
	n           int
	err         error
	hang        bool
	asked       []time.Time
	active, max int // checks running at once
}

func (f *fakeCounter) Inflight(ctx context.Context) (int, error) {
	f.mu.Lock()
	f.asked = append(f.asked, time.Now())
	n, err, hang := f.n, f.err, f.hang
	f.active++
	f.max = max(f.max, f.active)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.active--
		f.mu.Unlock()
	}()
	if hang {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return n, err
}

func (f *fakeCounter) set(n int) {
	f.mu.Lock()
	f.n = n
	f.mu.Unlock()
}

// The config file's defaults for the coordinator: restart.delay, defer_until_idle.poll and
// max_wait, and an idle probe's timeout. The coordinator fills nothing in, so the tests give
// these values (TestTestValuesAreTheConfigDefaults keeps them equal).
const (
	testDelay        = 2 * time.Second
	testPoll         = 500 * time.Millisecond
	testMaxWait      = 300 * time.Second
	testProbeTimeout = 5 * time.Second
)

// configured gives the fields a test leaves zero the config file's defaults, as the daemon
// would pass them. Delay and Cooldown are taken as written: zero is a value there.
func configured(c Config) Config {
	if c.Method == "" {
		c.Method = MethodRespawn
	}
	if c.Poll == 0 {
		c.Poll = testPoll
	}
	if c.MaxWait == 0 {
		c.MaxWait = testMaxWait
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = testProbeTimeout
	}
	return c
}

// mustNew is New for a configuration the test knows to be good.
func mustNew(t *testing.T, cfg Config, r Restarter, log *zap.Logger, hooks Hooks) *Coordinator {
	t.Helper()
	c, err := New(configured(cfg), r, log, hooks)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type harness struct {
	t      *testing.T
	c      *Coordinator
	r      *fakeRestarter
	t0     time.Time
	cancel context.CancelFunc
	done   chan error
	begins chan api.RestartPending
}

func newHarness(t *testing.T, cfg Config, r *fakeRestarter) *harness {
	t.Helper()
	h := &harness{t: t, r: r, t0: time.Now(), done: make(chan error, 1), begins: make(chan api.RestartPending, 100)}
	h.c = mustNew(t, cfg, r, nil, Hooks{OnBegin: func(p api.RestartPending) { h.begins <- p }})
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-h.done; err != nil {
			t.Error(err)
		}
	})
	return h
}

// rel returns the restart start times relative to t0.
func (h *harness) rel() []time.Duration {
	var out []time.Duration
	for _, at := range h.r.at() {
		out = append(out, at.Sub(h.t0))
	}
	return out
}

// expectAt asserts that a restart begins exactly at t0+at and not a nanosecond before.
func (h *harness) expectAt(n int, at time.Duration) {
	h.t.Helper()
	time.Sleep(at - time.Since(h.t0) - time.Nanosecond)
	synctest.Wait()
	if got := len(h.r.at()); got != n-1 {
		h.t.Fatalf("at %v: %d restarts, want %d (restarts at %v)", time.Since(h.t0), got, n-1, h.rel())
	}
	time.Sleep(time.Nanosecond)
	synctest.Wait()
	if got := len(h.r.at()); got != n {
		h.t.Fatalf("at %v: %d restarts, want %d (restarts at %v)", time.Since(h.t0), got, n, h.rel())
	}
}

func dur(d time.Duration) *time.Duration { return &d }

func TestDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Delay: testDelay}, &fakeRestarter{})
		tk := h.c.Request(Request{Reason: "SIGUSR1", Source: api.SourceSignal})
		if tk.Coalesced || !tk.Pending.DueAt.Equal(h.t0.Add(2*time.Second)) {
			t.Fatalf("ticket %+v", tk)
		}
		h.expectAt(1, 2*time.Second)
		res, err := tk.Wait(context.Background())
		if err != nil || !res.OK || res.DelayMs != 2000 || res.Mode != ModeScheduled || res.Reason != "SIGUSR1" {
			t.Fatalf("result %+v %v", res, err)
		}
	})
}

func TestDelayClamped(t *testing.T) {
	for _, tc := range []struct {
		delay, want time.Duration
	}{
		{90 * time.Second, 60 * time.Second},
		{-time.Second, 0},
		{0, 0},
		{1500 * time.Millisecond, 1500 * time.Millisecond},
	} {
		t.Run(fmt.Sprint(tc.delay), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Config{Delay: testDelay}, &fakeRestarter{})
				h.c.Request(Request{Source: api.SourceCLI, Delay: dur(tc.delay)})
				if tc.want == 0 {
					synctest.Wait()
					if len(h.r.at()) != 1 {
						t.Fatal("a zero delay did not restart at once")
					}
					return
				}
				h.expectAt(1, tc.want)
			})
		})
	}
}

// TestCooldown: a second restart waits its delay plus what is left of the 30 s cooldown
// since the first began, and reports the cooldown it applied.
func TestCooldown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Delay: testDelay, Cooldown: 30 * time.Second}, &fakeRestarter{})
		h.c.Request(Request{Source: api.SourceSignal})
		h.expectAt(1, 2*time.Second)
		time.Sleep(8 * time.Second) // t = 10 s
		tk := h.c.Request(Request{Source: api.SourceSignal})
		// 2 s delay + (2 s + 30 s − 10 s) of cooldown left = due at 34 s.
		h.expectAt(2, 34*time.Second)
		res, _ := tk.Wait(context.Background())
		if res.CooldownMsApplied != 22000 || res.DelayMs != 2000 {
			t.Fatalf("result %+v", res)
		}
	})
}

// TestCoalescing is R-DRAIN-04's timing: N requests while one is pending make exactly one
// restart that keeps every reason.
func TestCoalescing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Delay: testDelay}, &fakeRestarter{})
		var tickets []Ticket
		for i := range 5 {
			tickets = append(tickets, h.c.Request(Request{Reason: fmt.Sprintf("config change %d", i), Source: api.SourceConfig}))
			time.Sleep(600 * time.Millisecond / 2)
		}
		h.expectAt(1, 2*time.Second)
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := len(h.r.at()); n != 1 {
			t.Fatalf("%d restarts, want 1", n)
		}
		for i, tk := range tickets {
			if tk.Coalesced != (i > 0) {
				t.Errorf("ticket %d coalesced = %v", i, tk.Coalesced)
			}
			res, err := tk.Wait(context.Background())
			if err != nil || res.Requests != 5 || !res.Coalesced || len(res.Reasons) != 5 || res.Reasons[4] != "config change 4" {
				t.Fatalf("ticket %d: %+v %v", i, res, err)
			}
		}
		if got := h.c.Status().Requests[api.SourceConfig]; got != 5 {
			t.Fatalf("requests counted %d, want 5", got)
		}
	})
}

// TestMethodOverride: a request may ask for the other method; merged requests restart by
// respawn if any asks for it, and the result names the method used.
func TestMethodOverride(t *testing.T) {
	for _, tc := range []struct {
		name       string
		configured Method
		asked      []Method
		want       Method
	}{
		{"configured", MethodSignal, []Method{""}, MethodSignal},
		{"signal asked", MethodRespawn, []Method{MethodSignal}, MethodSignal},
		{"respawn asked", MethodSignal, []Method{MethodRespawn}, MethodRespawn},
		{"respawn wins a merge", MethodSignal, []Method{MethodSignal, MethodRespawn, ""}, MethodRespawn},
		{"respawn wins either way", MethodRespawn, []Method{MethodRespawn, MethodSignal}, MethodRespawn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := &fakeRestarter{}
				h := newHarness(t, Config{Delay: testDelay, Method: tc.configured}, r)
				var tk Ticket
				for _, m := range tc.asked {
					tk = h.c.Request(Request{Reason: "test", Source: api.SourceCLI, Method: m})
				}
				res, err := tk.Wait(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				r.mu.Lock()
				defer r.mu.Unlock()
				if len(r.methods) != 1 || r.methods[0] != tc.want || res.Method != string(tc.want) {
					t.Fatalf("restarted by %v, result says %q; want %q", r.methods, res.Method, tc.want)
				}
			})
		})
	}
}

// TestPullEarlier: a merged request that wants the restart sooner moves it earlier; a
// later one never delays it.
func TestPullEarlier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Delay: testDelay}, &fakeRestarter{})
		h.c.Request(Request{Source: api.SourceCLI, Delay: dur(10 * time.Second)})
		time.Sleep(2 * time.Second)
		h.c.Request(Request{Source: api.SourceCLI, Delay: dur(time.Second)}) // due at 3 s
		h.c.Request(Request{Source: api.SourceCLI, Delay: dur(50 * time.Second)})
		h.expectAt(1, 3*time.Second)
	})
}

// TestDeferralPollBoundary: deferral asks the idle probe at once and every 500 ms; the
// gateway goes idle at 1.3 s into the deferral, so the restart happens at the 1.5 s poll.
func TestDeferralPollBoundary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idle := &fakeCounter{n: 3}
		h := newHarness(t, Config{Delay: testDelay, Idle: idle}, &fakeRestarter{})
		tk := h.c.Request(Request{Reason: "deploy", Source: api.SourceCLI})
		time.Sleep(2 * time.Second) // due: deferral starts
		synctest.Wait()
		st := h.c.Status()
		if st.Pending == nil || st.Pending.DeferredSince == nil || st.Pending.Inflight == nil || *st.Pending.Inflight != 3 ||
			!st.Pending.DeadlineAt.Equal(h.t0.Add(2*time.Second+testMaxWait)) {
			t.Fatalf("pending %+v", st.Pending)
		}
		time.Sleep(1300 * time.Millisecond)
		idle.set(0)
		h.expectAt(1, 3500*time.Millisecond)
		res, _ := tk.Wait(context.Background())
		if res.Mode != ModeDeferred || res.DeferredMs != 1500 || res.Forced {
			t.Fatalf("result %+v", res)
		}
		if asked := len(idle.asked); asked != 4 { // 0, 0.5, 1.0, 1.5 s
			t.Fatalf("idle asked %d times, want 4", asked)
		}
	})
}

// TestMaxWaitForces is R-DRAIN-02's timing: a gateway that never goes idle is restarted at
// exactly max_wait, marked forced.
func TestMaxWaitForces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idle := &fakeCounter{n: 1}
		h := newHarness(t, Config{Delay: testDelay, Idle: idle, MaxWait: 5 * time.Second}, &fakeRestarter{})
		tk := h.c.Request(Request{Source: api.SourceSignal})
		h.expectAt(1, 7*time.Second)
		res, _ := tk.Wait(context.Background())
		if !res.Forced || res.DeferredMs != 5000 || res.Mode != ModeDeferred {
			t.Fatalf("result %+v", res)
		}
	})
}

// TestMaxWaitPerRequest: `schedd restart --max-wait 1s` shortens the ceiling.
func TestMaxWaitPerRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Delay: testDelay, Idle: &fakeCounter{n: 1}}, &fakeRestarter{})
		h.c.Request(Request{Source: api.SourceCLI, MaxWait: time.Second})
		h.expectAt(1, 3*time.Second)
	})
}

// TestHungProbe is R-DRAIN-06: an idle check that hangs times out, counts as busy, and the
// restart is still forced at max_wait; no check overlaps another.
func TestHungProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idle := &fakeCounter{hang: true}
		h := newHarness(t, Config{Delay: testDelay, Idle: idle, MaxWait: 2900 * time.Millisecond, ProbeTimeout: 700 * time.Millisecond}, &fakeRestarter{})
		tk := h.c.Request(Request{Source: api.SourceSignal})
		h.expectAt(1, 4900*time.Millisecond)
		if res, _ := tk.Wait(context.Background()); !res.Forced {
			t.Fatalf("result %+v", res)
		}
		// Checks start at 0, 1.0 and 2.0 s into the deferral: each times out after 0.7 s
		// and the poll ticks at 0.5, 1.5 and 2.5 s find one still running and skip.
		if n := len(idle.asked); n != 3 || idle.max != 1 {
			t.Fatalf("idle asked %d times (%d at once), want 3 (1)", n, idle.max)
		}
	})
}

// TestProbeErrorIsBusy: an erroring check is not idle.
func TestProbeErrorIsBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idle := &fakeCounter{err: errors.New("connection refused")}
		h := newHarness(t, Config{Delay: testDelay, Idle: idle, MaxWait: 2 * time.Second}, &fakeRestarter{})
		h.c.Request(Request{Source: api.SourceSignal})
		h.expectAt(1, 4*time.Second)
	})
}

// TestNow skips the delay, the cooldown and the deferral.
func TestNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idle := &fakeCounter{n: 5}
		h := newHarness(t, Config{Delay: testDelay, Idle: idle, Cooldown: 30 * time.Second}, &fakeRestarter{})
		h.c.Request(Request{Source: api.SourceCLI, Now: true})
		synctest.Wait()
		time.Sleep(time.Second)
		tk := h.c.Request(Request{Source: api.SourceCLI, Now: true})
		synctest.Wait()
		if got := h.rel(); len(got) != 2 || got[0] != 0 || got[1] != time.Second {
			t.Fatalf("restarts at %v, want 0s and 1s", got)
		}
		if res, _ := tk.Wait(context.Background()); res.Mode != ModeImmediate || res.CooldownMsApplied != 0 {
			t.Fatalf("result %+v", res)
		}
	})
}

// TestNowEndsDeferral: --now while waiting for idle restarts at once.
func TestNowEndsDeferral(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Delay: testDelay, Idle: &fakeCounter{n: 2}}, &fakeRestarter{})
		h.c.Request(Request{Source: api.SourceSignal})
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if len(h.r.at()) != 0 {
			t.Fatal("restarted while busy")
		}
		h.c.Request(Request{Source: api.SourceCLI, Now: true})
		synctest.Wait()
		if got := h.rel(); len(got) != 1 || got[0] != 10*time.Second {
			t.Fatalf("restarts at %v", got)
		}
	})
}

// TestFollowUp is R-SIG-02's timing: requests during a running restart become exactly one
// follow-up, scheduled when it ends with the cooldown since it began.
func TestFollowUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Delay: testDelay, Cooldown: 30 * time.Second}, &fakeRestarter{took: 5 * time.Second})
		first := h.c.Request(Request{Source: api.SourceSignal})
		h.expectAt(1, 2*time.Second)
		time.Sleep(time.Second) // t = 3 s, the restart runs until 7 s
		var later []Ticket
		for range 10 {
			later = append(later, h.c.Request(Request{Source: api.SourceSignal}))
		}
		if st := h.c.Status(); !st.InProgress || st.Pending == nil || !st.Pending.FollowUp || st.Pending.Requests != 10 {
			t.Fatalf("status %+v pending %+v", st, st.Pending)
		}
		// Ends at 7 s; then 2 s delay + (2 + 30 − 7) s cooldown = 34 s.
		h.expectAt(2, 34*time.Second)
		if res, _ := first.Wait(context.Background()); res.Requests != 1 {
			t.Fatalf("first result %+v", res)
		}
		res, _ := later[9].Wait(context.Background())
		if res.Requests != 10 || res.CooldownMsApplied != 25000 {
			t.Fatalf("follow-up result %+v", res)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(h.r.at()); n != 2 {
			t.Fatalf("%d restarts, want 2", n)
		}
	})
}

// TestStorm is R-SIG-01's timing: 1,000 requests in a second, during and after a restart:
// one in progress and one pending at most, every request counted, two restarts in all.
func TestStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Delay: testDelay, Cooldown: 30 * time.Second}, &fakeRestarter{took: 500 * time.Millisecond})
		h.c.Request(Request{Source: api.SourceSignal, Now: true})
		// The restart has begun before the storm: a request at its very instant could
		// otherwise join it, and the second restart would serve 999.
		synctest.Wait()
		for range 1000 {
			h.c.Request(Request{Source: api.SourceSignal})
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		st := h.c.Status()
		if n := len(h.r.at()); n != 2 {
			t.Fatalf("%d restarts, want 2", n)
		}
		if st.Requests[api.SourceSignal] != 1001 || st.Last.Requests != 1000 {
			t.Fatalf("counted %d requests, last served %d", st.Requests[api.SourceSignal], st.Last.Requests)
		}
	})
}

// TestStopCancelsPending is R-SIG-04's coordinator half: a stop cancels a pending
// (deferred) restart; its waiters learn why; nothing runs.
func TestStopCancelsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Delay: testDelay, Idle: &fakeCounter{n: 1}}, &fakeRestarter{})
		tk := h.c.Request(Request{Source: api.SourceSignal})
		time.Sleep(5 * time.Second)
		h.cancel()
		if _, err := tk.Wait(context.Background()); !errors.Is(err, ErrStopping) {
			t.Fatalf("Wait: %v, want ErrStopping", err)
		}
		<-h.done
		h.done <- nil
		if len(h.r.at()) != 0 {
			t.Fatal("a restart ran after the stop")
		}
		// Requests after the stop are answered, not hung.
		if _, err := h.c.Request(Request{Source: api.SourceCLI}).Wait(context.Background()); !errors.Is(err, ErrStopping) {
			t.Fatalf("request after stop: %v", err)
		}
	})
}

// TestFailedRestart reports ok=false with the error.
func TestFailedRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Delay: testDelay}, &fakeRestarter{fail: true})
		res, err := h.c.Request(Request{Source: api.SourceCLI, Now: true}).Wait(context.Background())
		if err != nil || res.OK || res.Error == "" {
			t.Fatalf("result %+v %v", res, err)
		}
		if st := h.c.Status(); st.Last == nil || st.Last.OK {
			t.Fatalf("status %+v", st)
		}
	})
}

// TestHistory keeps the last 20 results.
func TestHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Delay: testDelay}, &fakeRestarter{})
		for i := range 25 {
			h.c.Request(Request{Reason: fmt.Sprint(i), Source: api.SourceCLI, Now: true}).Wait(context.Background())
		}
		st := h.c.Status()
		if len(st.History) != 20 || st.History[0].Reason != "5" || st.Last.Reason != "24" {
			t.Fatalf("history %d entries, first %q, last %q", len(st.History), st.History[0].Reason, st.Last.Reason)
		}
	})
}

func TestReasonCleaned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{Delay: testDelay}, &fakeRestarter{})
		long := make([]byte, 500)
		for i := range long {
			long[i] = 'x'
		}
		tk := h.c.Request(Request{Reason: "  a\nb " + string(long), Source: api.SourceCLI})
		if r := tk.Pending.Reasons[0]; len(r) != MaxReasonLen || r[:3] != "a b" {
			t.Fatalf("reason %q", r)
		}
		if r := h.c.Request(Request{Source: api.SourceSignal}).Pending.Reasons[1]; r != "signal" {
			t.Fatalf("empty reason became %q", r)
		}
	})
}
