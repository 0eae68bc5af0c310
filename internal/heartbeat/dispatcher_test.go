package heartbeat

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// handled is one handler call seen by a recorder, at virtual time since the bubble began.
type handled struct {
	at time.Duration
	w  Wake
}

// recorder is a WakeHandler that logs calls and answers with a scripted result.
type recorder struct {
	start  time.Time
	mu     sync.Mutex
	calls  []handled
	answer func(n int, w Wake) (RunResult, error) // n counts calls from 1
}

func newRecorder() *recorder { return &recorder{start: time.Now()} }

func (r *recorder) handle(_ context.Context, w Wake) (RunResult, error) {
	r.mu.Lock()
	r.calls = append(r.calls, handled{at: time.Since(r.start), w: w})
	n, answer := len(r.calls), r.answer
	r.mu.Unlock()
	if answer != nil {
		return answer(n, w)
	}
	return RunResult{Status: api.RunRan}, nil
}

func (r *recorder) seen() []handled {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]handled(nil), r.calls...)
}

// sleepTo advances the bubble to offset since r.start and lets every goroutine settle.
func (r *recorder) sleepTo(offset time.Duration) {
	time.Sleep(offset - time.Since(r.start))
	synctest.Wait()
}

func (r *recorder) wantCalls(t *testing.T, n int) []handled {
	t.Helper()
	got := r.seen()
	if len(got) != n {
		t.Fatalf("at %v: %d handler calls %+v, want %d", time.Since(r.start), len(got), got, n)
	}
	return got
}

func busyOnce(n int, _ Wake) (RunResult, error) {
	if n == 1 {
		return RunResult{Status: api.RunSkipped, Reason: SkipRequestsInFlight}, nil
	}
	return RunResult{Status: api.RunRan}, nil
}

func dispatcherTest(t *testing.T, f func(t *testing.T, d *Dispatcher, r *recorder)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		d := NewDispatcher()
		defer d.Close()
		f(t, d, newRecorder())
	})
}

func TestDispatcherCoalescesWithinWindow(t *testing.T) {
	dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
		d.SetHandler(r.handle)
		d.Request(Wake{Reason: "interval"}, 200*time.Millisecond)
		d.Request(Wake{Reason: "exec-event"}, 200*time.Millisecond)
		d.Request(Wake{Reason: "retry"}, 200*time.Millisecond)
		r.sleepTo(199 * time.Millisecond)
		r.wantCalls(t, 0)
		r.sleepTo(200 * time.Millisecond)
		got := r.wantCalls(t, 1)
		if got[0].at != 200*time.Millisecond || got[0].w.Reason != "exec-event" {
			t.Fatalf("call %+v, want exec-event at 200ms", got[0])
		}
		if d.HasPending() {
			t.Fatal("wake still pending after the batch")
		}
	})
}

func TestDispatcherBusyRetriesAfterExactlyOneSecond(t *testing.T) {
	dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
		r.answer = busyOnce
		d.SetHandler(r.handle)
		d.Request(Wake{Reason: "interval"}, 0)
		synctest.Wait()
		r.wantCalls(t, 1)
		r.sleepTo(501 * time.Millisecond)
		r.wantCalls(t, 1)
		r.sleepTo(999 * time.Millisecond)
		r.wantCalls(t, 1)
		r.sleepTo(1000 * time.Millisecond)
		got := r.wantCalls(t, 2)
		if got[1].w.Reason != "interval" {
			t.Fatalf("retried with reason %q, want interval", got[1].w.Reason)
		}
	})
}

func TestDispatcherHandlerErrorRetriesWholeBatch(t *testing.T) {
	dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
		r.answer = func(n int, w Wake) (RunResult, error) {
			if n == 2 {
				return RunResult{}, errors.New("boom")
			}
			return RunResult{Status: api.RunRan}, nil
		}
		d.SetHandler(r.handle)
		// A zero delay could fire between the two requests (timers run in parallel), so
		// give them a window to land in one batch.
		d.Request(Wake{Reason: "cron:a", AgentID: "a"}, 10*time.Millisecond)
		d.Request(Wake{Reason: "cron:b", AgentID: "b"}, 10*time.Millisecond)
		r.sleepTo(10 * time.Millisecond)
		r.wantCalls(t, 2)
		r.sleepTo(1009 * time.Millisecond)
		r.wantCalls(t, 2)
		r.sleepTo(1010 * time.Millisecond)
		got := r.wantCalls(t, 4)
		if got[2].w.Reason != "cron:a" || got[3].w.Reason != "cron:b" || got[2].at != 1010*time.Millisecond {
			t.Fatalf("retry batch %+v, want cron:a and cron:b at 1.01s", got[2:])
		}
	})
}

func TestDispatcherHandlerPanicCountsAsError(t *testing.T) {
	dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
		r.answer = func(n int, w Wake) (RunResult, error) {
			if n == 1 {
				panic("handler bug")
			}
			return RunResult{Status: api.RunRan}, nil
		}
		d.SetHandler(r.handle)
		d.Request(Wake{Reason: "manual"}, 0)
		r.sleepTo(time.Second)
		got := r.wantCalls(t, 2)
		if got[1].w.Reason != "manual" {
			t.Fatalf("retried %q, want manual", got[1].w.Reason)
		}
	})
}

func TestDispatcherRetryCooldownNotPreempted(t *testing.T) {
	dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
		r.answer = busyOnce
		d.SetHandler(r.handle)
		d.Request(Wake{Reason: "interval"}, 0)
		synctest.Wait()
		r.wantCalls(t, 1)
		r.sleepTo(10 * time.Millisecond)
		d.Request(Wake{Reason: "hook:wake"}, 0)
		r.sleepTo(999 * time.Millisecond)
		r.wantCalls(t, 1)
		r.sleepTo(1000 * time.Millisecond)
		got := r.wantCalls(t, 2)
		if got[1].w.Reason != "hook:wake" {
			t.Fatalf("retried with %q, want hook:wake (higher priority)", got[1].w.Reason)
		}
	})
}

func TestDispatcherStaleDisposer(t *testing.T) {
	dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
		disposeOld := d.SetHandler(r.handle)
		disposeNew := d.SetHandler(r.handle)
		disposeOld()
		if !d.HasHandler() {
			t.Fatal("stale disposer cleared the newer handler")
		}
		disposeNew()
		if d.HasHandler() {
			t.Fatal("current disposer left the handler registered")
		}
		disposeNew() // double dispose is harmless
	})
}

func TestDispatcherSoonerPreemptsLaterNeverDelays(t *testing.T) {
	t.Run("sooner preempts", func(t *testing.T) {
		dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
			d.SetHandler(r.handle)
			d.Request(Wake{Reason: "cron:first"}, 5*time.Second)
			d.Request(Wake{Reason: "cron:second"}, 100*time.Millisecond)
			r.sleepTo(99 * time.Millisecond)
			r.wantCalls(t, 0)
			r.sleepTo(100 * time.Millisecond)
			if got := r.wantCalls(t, 1); got[0].w.Reason != "cron:second" {
				t.Fatalf("reason %q, want the last one", got[0].w.Reason)
			}
			r.sleepTo(6 * time.Second)
			r.wantCalls(t, 1)
		})
	})
	t.Run("later does not delay", func(t *testing.T) {
		dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
			d.SetHandler(r.handle)
			d.Request(Wake{Reason: "cron:first"}, 100*time.Millisecond)
			d.Request(Wake{Reason: "cron:second"}, 5*time.Second)
			r.sleepTo(100 * time.Millisecond)
			r.wantCalls(t, 1)
		})
	})
}

func TestDispatcherNeverDowngrades(t *testing.T) {
	dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
		d.SetHandler(r.handle)
		d.Request(Wake{Reason: "exec-event"}, DefaultCoalesce)
		d.Request(Wake{Reason: "retry"}, DefaultCoalesce)
		d.Request(Wake{Reason: "interval"}, DefaultCoalesce)
		d.Request(Wake{Reason: "cron:x"}, DefaultCoalesce)
		r.sleepTo(DefaultCoalesce)
		if got := r.wantCalls(t, 1); got[0].w.Reason != "exec-event" {
			t.Fatalf("reason %q, want exec-event", got[0].w.Reason)
		}
	})
}

func TestDispatcherNewHandlerResetsStuckRun(t *testing.T) {
	dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
		release := make(chan struct{})
		stuck := func(ctx context.Context, w Wake) (RunResult, error) {
			<-release
			return RunResult{Status: api.RunRan}, nil
		}
		d.SetHandler(stuck)
		d.Request(Wake{Reason: "interval"}, 0)
		synctest.Wait() // the old handler is now stuck mid-run
		d.SetHandler(r.handle)
		d.Request(Wake{Reason: "manual"}, 0)
		synctest.Wait()
		if got := r.wantCalls(t, 1); got[0].w.Reason != "manual" {
			t.Fatalf("new handler got %q", got[0].w.Reason)
		}
		close(release)
		synctest.Wait()
		r.sleepTo(5 * time.Second) // the stale batch ends without re-arming anything
		r.wantCalls(t, 1)
	})
}

func TestDispatcherNewHandlerClearsStaleRetryCooldown(t *testing.T) {
	dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
		old := newRecorder()
		old.answer = func(int, Wake) (RunResult, error) {
			return RunResult{Status: api.RunSkipped, Reason: SkipRequestsInFlight}, nil
		}
		d.SetHandler(old.handle)
		d.Request(Wake{Reason: "interval"}, 0)
		synctest.Wait()
		old.wantCalls(t, 1) // a retry cooldown is armed now
		d.SetHandler(r.handle)
		d.Request(Wake{Reason: "manual"}, 0)
		synctest.Wait()
		got := r.wantCalls(t, 1)
		if got[0].at != 0 || got[0].w.Reason != "manual" {
			t.Fatalf("call %+v, want manual at once", got[0])
		}
		old.wantCalls(t, 1)
	})
}

func TestDispatcherPendingWithoutHandler(t *testing.T) {
	dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
		d.Request(Wake{Reason: "cron:x"}, DefaultCoalesce)
		r.sleepTo(time.Second)
		if !d.HasPending() {
			t.Fatal("wake dropped while no handler was registered")
		}
		d.SetHandler(r.handle)
		r.sleepTo(time.Second + 249*time.Millisecond)
		r.wantCalls(t, 0)
		r.sleepTo(time.Second + 250*time.Millisecond)
		if got := r.wantCalls(t, 1); got[0].w.Reason != "cron:x" {
			t.Fatalf("reason %q", got[0].w.Reason)
		}
	})
}

func TestDispatcherKeepsTargetAcrossRetries(t *testing.T) {
	dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
		r.answer = busyOnce
		d.SetHandler(r.handle)
		d.Request(Wake{Reason: " cron:job-1 ", AgentID: " ops ", SessionKey: "agent:ops:main"}, 0)
		r.sleepTo(time.Second)
		got := r.wantCalls(t, 2)
		for _, c := range got {
			if c.w.AgentID != "ops" || c.w.SessionKey != "agent:ops:main" || c.w.Reason != "cron:job-1" {
				t.Fatalf("call %+v lost its target", c)
			}
		}
	})
}

func TestDispatcherDistinctTargetsEachRun(t *testing.T) {
	dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
		d.SetHandler(r.handle)
		d.Request(Wake{Reason: "exec-event", AgentID: "a"}, DefaultCoalesce)
		d.Request(Wake{Reason: "exec-event", AgentID: "b"}, DefaultCoalesce)
		d.Request(Wake{Reason: "exec-event", AgentID: "a", SessionKey: " "}, DefaultCoalesce)
		r.sleepTo(DefaultCoalesce)
		got := r.wantCalls(t, 2)
		if got[0].w.AgentID != "a" || got[1].w.AgentID != "b" {
			t.Fatalf("calls %+v, want a then b", got)
		}
	})
}

func TestDispatcherRequestDuringBatchWaitsForNextTick(t *testing.T) {
	dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
		r.answer = func(n int, w Wake) (RunResult, error) {
			if n == 1 {
				time.Sleep(400 * time.Millisecond) // the first batch runs 250ms..650ms
			}
			return RunResult{Status: api.RunRan}, nil
		}
		d.SetHandler(r.handle)
		d.Request(Wake{Reason: "cron:a"}, DefaultCoalesce)
		r.sleepTo(300 * time.Millisecond)
		d.Request(Wake{Reason: "cron:b"}, DefaultCoalesce) // fires at 550 while running
		r.sleepTo(799 * time.Millisecond)
		r.wantCalls(t, 1)
		if !d.HasPending() {
			t.Fatal("parked timer not reported as pending")
		}
		r.sleepTo(800 * time.Millisecond) // the next tick of the parked 250ms timer
		if got := r.wantCalls(t, 2); got[1].w.Reason != "cron:b" {
			t.Fatalf("second call %+v", got[1])
		}
	})
}

func TestDispatcherZeroDelayDuringBatchRunsRightAfter(t *testing.T) {
	dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
		r.answer = func(n int, w Wake) (RunResult, error) {
			if n == 1 {
				time.Sleep(time.Second)
			}
			return RunResult{Status: api.RunRan}, nil
		}
		d.SetHandler(r.handle)
		d.Request(Wake{Reason: "manual"}, 0)
		r.sleepTo(100 * time.Millisecond)
		d.Request(Wake{Reason: "interval", AgentID: "x"}, 0)
		r.sleepTo(time.Second)
		got := r.wantCalls(t, 2)
		if got[1].at != time.Second {
			t.Fatalf("follow-up at %v, want 1s (right after the batch)", got[1].at)
		}
	})
}

func TestDispatcherDisposeMidBatchKeepsUnfinishedWakes(t *testing.T) {
	dispatcherTest(t, func(t *testing.T, d *Dispatcher, r *recorder) {
		release := make(chan struct{})
		var dispose func()
		first := func(ctx context.Context, w Wake) (RunResult, error) {
			if w.AgentID == "a" {
				<-release
			}
			return RunResult{Status: api.RunRan}, nil
		}
		dispose = d.SetHandler(first)
		d.Request(Wake{Reason: "cron:x", AgentID: "a"}, time.Millisecond)
		d.Request(Wake{Reason: "cron:x", AgentID: "b"}, time.Millisecond)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		dispose()
		close(release)
		synctest.Wait()
		if !d.HasPending() {
			t.Fatal("the unfinished wake for b was dropped")
		}
		d.SetHandler(r.handle)
		r.sleepTo(time.Millisecond + DefaultCoalesce)
		if got := r.wantCalls(t, 1); got[0].w.AgentID != "b" {
			t.Fatalf("handed over %+v, want b only", got)
		}
	})
}
