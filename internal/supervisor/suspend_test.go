package supervisor

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

// freezer makes the whole of schedd stop running for a while, as a suspend, a paused VM or
// a frozen cgroup does: the supervisor goroutine is held in the gateway's Done (which it
// calls at every turn of its loop) while virtual time goes on, so its timers fire while
// nobody looks and are seen late, all at once.
type freezer struct {
	*fakeStarter
	gap chan time.Duration
}

func newFreezer() *freezer {
	return &freezer{fakeStarter: newFakeStarter(), gap: make(chan time.Duration, 1)}
}

func (f *freezer) Start(cmd platform.Command) (Proc, error) {
	p, err := f.fakeStarter.Start(cmd)
	if err != nil {
		return nil, err
	}
	return frozenProc{p.(*fakeProc), f.gap}, nil
}

type frozenProc struct {
	*fakeProc
	gap chan time.Duration
}

func (p frozenProc) Done() <-chan struct{} {
	select {
	case d := <-p.gap:
		time.Sleep(d)
	default:
	}
	return p.fakeProc.Done()
}

// freeze stops the supervisor for d from its next turn, which a STATUS message starts.
func (f *freezer) freeze(h *harness, pid int, d time.Duration) {
	f.gap <- d
	h.sup.HandleNotify(context.Background(), platform.NotifyMessage{PID: pid, Fields: map[string]string{"STATUS": "frozen"}})
}

// R-ENV-02: schedd and its gateway are frozen together for two hours. A timer that fires a
// whole period late means schedd was not running, so the gap is not counted against the
// gateway, even where one miss kills (failures: 1); the watchdog is armed again for a full
// period and a gateway that then goes silent is still killed one period after its last
// ping. A liveness check cut by the gap (its timeout passed while frozen) is not counted
// either, and the checks go on.
func TestSuspendResume_RENV02(t *testing.T) {
	const gap = 2 * time.Hour
	t.Run("watchdog", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fz := newFreezer()
			cfg := testConfig()
			cfg.Liveness = Liveness{Watchdog: 10 * time.Second, Failures: 1}
			h := start(t, cfg, fz.fakeStarter, WithStarter(fz))
			p := fz.next(t)
			ping := func() {
				h.sup.HandleNotify(context.Background(), platform.NotifyMessage{PID: p.pid, Fields: map[string]string{"WATCHDOG": "1"}})
				synctest.Wait()
			}
			for range 3 {
				time.Sleep(9 * time.Second)
				ping()
			}
			fz.freeze(h, p.pid, gap)
			time.Sleep(gap)
			synctest.Wait()
			if sigs := p.sigs(); len(sigs) != 0 {
				t.Fatalf("killed for the gap of a suspend: %v", sigs)
			}
			time.Sleep(9 * time.Second) // the gateway, woken too, pings within its period
			ping()
			last := time.Now()
			time.Sleep(10*time.Second - time.Nanosecond)
			synctest.Wait()
			if sigs := p.sigs(); len(sigs) != 0 {
				t.Fatalf("killed before a full period of silence after the gap: %v", sigs)
			}
			time.Sleep(time.Nanosecond)
			synctest.Wait()
			if sigs := p.sigs(); len(sigs) == 0 || sigs[0].at.Sub(last) != 10*time.Second {
				t.Fatalf("signals %v, want SIGTERM 10s after the last ping", sigs)
			}
			if e := h.sup.Status().LastExit; e == nil || e.Reason != api.ExitLivenessTimeout {
				t.Fatalf("last_exit %+v, want liveness_timeout", e)
			}
		})
	})
	t.Run("liveness probe", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fz := newFreezer()
			cfg := testConfig()
			frozen := make(chan struct{}, 1)
			var checks atomic.Int32
			probe := checkerFunc(func(ctx context.Context) error {
				checks.Add(1)
				select {
				case <-frozen: // frozen with schedd: it returns at the end of the gap
					time.Sleep(gap)
					return ctx.Err()
				case <-time.After(100 * time.Millisecond):
					return nil
				}
			})
			cfg.Liveness = Liveness{Probe: probe, Every: 10 * time.Second, Timeout: 2 * time.Second, Failures: 1}
			h := start(t, cfg, fz.fakeStarter, WithStarter(fz))
			p := fz.next(t)
			h.sleepTo(30 * time.Second)
			h.sleepTo(40*time.Second + 50*time.Millisecond) // the fourth check is in flight
			frozen <- struct{}{}
			fz.freeze(h, p.pid, gap)
			h.sleepTo(40*time.Second + gap + time.Minute)
			if sigs := p.sigs(); len(sigs) != 0 {
				t.Fatalf("killed for a liveness check cut by the gap: %v", sigs)
			}
			if n := checks.Load(); n < 10 {
				t.Fatalf("%d liveness checks; they stopped after the gap", n)
			}
			if st := h.state(); st != api.GatewayReady {
				t.Fatalf("state %s after the gap, want ready", st)
			}
		})
	})
}

type checkerFunc func(ctx context.Context) error

func (f checkerFunc) Check(ctx context.Context) error { return f(ctx) }
