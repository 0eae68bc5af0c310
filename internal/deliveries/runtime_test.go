package deliveries

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

// R-DLV-05, P6: with jitter off, attempt k+1 of a failing entry starts exactly at
// attempt k + schedule[min(k, 3)], and the entry is dead-lettered after max_retries failures.
func TestRuntimeRetryScheduleExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		sink := &fakeSink{script: func(Delivery) error { return TransientError(errors.New("HTTP 503")) }}
		s := runHook(t, ds, sink)
		synctest.Wait()
		t0 := time.Now()
		e := enqueueReq(t, s, Request{Sink: "hook", Key: "k", Payload: []byte("x")})
		time.Sleep(time.Hour)
		synctest.Wait()
		sends := sink.Sends()
		want := []time.Duration{0, 25 * time.Second, 25*time.Second + 2*time.Minute,
			25*time.Second + 12*time.Minute, 25*time.Second + 22*time.Minute}
		if len(sends) != len(want) {
			t.Fatalf("%d sends, want %d", len(sends), len(want))
		}
		for i, sd := range sends {
			if got := sd.at.Sub(t0); got != want[i] {
				t.Errorf("attempt %d at +%v, want +%v", i+1, got, want[i])
			}
			if sd.key != "k" || sd.attempt != i+1 {
				t.Errorf("attempt %d: key %q attempt %d", i+1, sd.key, sd.attempt)
			}
		}
		g := mustGet(t, ds, e.ID)
		if g.State != store.StateDead || g.DeadReason != ReasonMaxRetries || g.Failures != 5 || g.Attempts != 5 ||
			g.LastError != "HTTP 503" {
			t.Fatalf("final entry = %+v", g)
		}
	})
}

// A new entry is sent at the instant it is enqueued; a delivered one is never sent again.
func TestRuntimeSendsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		sink := &fakeSink{}
		s := runHook(t, ds, sink)
		time.Sleep(time.Minute)
		t0 := time.Now()
		e := enqueueReq(t, s, Request{Sink: "hook", Payload: []byte("x")})
		synctest.Wait()
		if got := sink.Sends(); len(got) != 1 || !got[0].at.Equal(t0) || got[0].key != e.Key {
			t.Fatalf("sends = %+v", got)
		}
		if g := mustGet(t, ds, e.ID); g.State != store.StateDelivered {
			t.Fatalf("state = %s", g.State)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(sink.Sends()); n != 1 {
			t.Fatalf("%d sends after an hour, want 1 (P2)", n)
		}
	})
}

// The 1 s floor: an entry whose sink is not ready is re-checked every second, with no
// store write and nothing charged, and sent at the first check after the sink is ready.
func TestRuntimeRearmFloorWhileNotReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		gw := &readySink{fakeSink: &fakeSink{}}
		s := newService(t, parityConfig(), ds, map[string]Sink{"gateway": gw})
		stop := start(t, s)
		defer stop()
		synctest.Wait()
		t0 := time.Now()
		e := enqueueReq(t, s, Request{Sink: "gateway", Payload: []byte("x")})
		time.Sleep(3500 * time.Millisecond)
		synctest.Wait()
		checks := gw.Checks()
		if len(checks) != 4 {
			t.Fatalf("%d readiness checks in 3.5 s, want 4 (at 0, 1, 2, 3 s)", len(checks))
		}
		for i, c := range checks {
			if c.Sub(t0) != time.Duration(i)*time.Second {
				t.Errorf("check %d at +%v", i, c.Sub(t0))
			}
		}
		if n := ds.Calls("mark_sending"); n != 0 {
			t.Fatalf("%d claims while not ready", n)
		}
		gw.set(true)
		time.Sleep(time.Second)
		synctest.Wait()
		sends := gw.Sends()
		if len(sends) != 1 || sends[0].at.Sub(t0) != 4*time.Second {
			t.Fatalf("sends = %+v, want one at +4s", sends)
		}
		if g := mustGet(t, ds, e.ID); g.State != store.StateDelivered || g.Failures != 0 || g.Attempts != 1 {
			t.Fatalf("entry = %+v", g)
		}
	})
}

// Store retry: a failed read of what is near is retried with backoff, after exactly 1 s,
// then 2 s, and a failed claim of one entry re-arms it after 1 s, so no entry is orphaned.
func TestRuntimeStoreReadRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		sink := &fakeSink{}
		s := newService(t, parityConfig(), ds, map[string]Sink{"hook": sink})
		e, _, _ := ds.Enqueue(context.Background(), store.NewEntry{Sink: "hook", Key: "k", Payload: []byte("x")})
		var mu sync.Mutex
		nearFails := 3 // the recovery pass's read and the first two runtime reads
		ds.SetReadFault(func(op string) error {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case op == "near" && nearFails > 0:
				nearFails--
				return errBoom
			}
			return nil
		})
		t0 := time.Now()
		stop := start(t, s)
		defer stop()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		sends := sink.Sends()
		if len(sends) != 1 || sends[0].at.Sub(t0) != 3*time.Second {
			t.Fatalf("sends = %+v, want one at +3s (reads at 0, 1, 3 s)", sends)
		}
		if got := ds.Calls("near"); got != 4 {
			t.Fatalf("%d reads, want 4 (recovery + 3 runtime)", got)
		}
		if got := ds.Calls("live"); got != 0 {
			t.Fatalf("%d reads of every live entry, want none", got)
		}
		_ = e

		// A failed claim of an armed entry (a due entry is claimed without a read): re-armed
		// after 1 s.
		claimFails := 2
		ds.SetWriteFault(func(op string) error {
			mu.Lock()
			defer mu.Unlock()
			if op == "mark_sending" && claimFails > 0 {
				claimFails--
				return errBoom
			}
			return nil
		})
		t1 := time.Now()
		enqueueReq(t, s, Request{Sink: "hook", Key: "k2", Payload: []byte("y")})
		time.Sleep(10 * time.Second)
		synctest.Wait()
		sends = sink.Sends()
		if len(sends) != 2 || sends[1].at.Sub(t1) != 2*time.Second {
			t.Fatalf("sends = %+v, want the second at +2s after enqueue", sends)
		}
	})
}

// An id armed twice keeps the earlier time; a later arm does not delay it.
func TestSchedulerEarlierArmWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		sink := &fakeSink{}
		s := runHook(t, ds, sink)
		synctest.Wait()
		t0 := time.Now()
		e := putEntry(ds, store.Entry{Sink: "hook", State: store.StatePending, NextAttemptAt: t0.Add(10 * time.Second)})
		s.rt.armEntry(e)
		e.NextAttemptAt = t0.Add(5 * time.Second)
		s.rt.armEntry(e) // earlier: wins
		e.NextAttemptAt = t0.Add(20 * time.Second)
		s.rt.armEntry(e) // later: ignored
		time.Sleep(30 * time.Second)
		synctest.Wait()
		// Fired at +5 s: not due in the store yet (due +10 s), so re-armed for +10 s.
		sends := sink.Sends()
		if len(sends) != 1 || sends[0].at.Sub(t0) != 10*time.Second {
			t.Fatalf("sends = %+v, want one at +10s", sends)
		}
		if n := ds.Calls("get"); n != 2 {
			// +5 s: the claim is refused (not due in the store), then the attempt's read and
			// the reload; +10 s: claimed without a read (delivered: no reload).
			t.Fatalf("%d reads, want 2", n)
		}
	})
}

// Generation fencing: whatever a stopped runtime armed or had in flight does not reach the
// next one.
func TestSchedulerGenerationFencing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		s := newService(t, parityConfig(), ds, map[string]Sink{"hook": &fakeSink{}})
		r := s.rt
		stop := start(t, s)
		synctest.Wait()
		r.mu.Lock()
		oldGen := r.gen
		r.mu.Unlock()
		stop()

		// Stopped: arms are dropped.
		r.armEntry(store.Entry{ID: 99, NextAttemptAt: time.Now()})
		r.mu.Lock()
		if r.active || r.timers.Len() != 0 {
			t.Fatalf("stopped runtime armed an entry")
		}
		r.mu.Unlock()

		stop = start(t, s)
		defer stop()
		synctest.Wait()
		r.mu.Lock()
		if r.gen == oldGen {
			t.Fatalf("generation not bumped by a restart")
		}
		// A result of the old generation neither clears a new claim nor re-arms.
		r.busy[7] = r.gen
		r.mu.Unlock()
		r.done(result{id: 7, gen: oldGen, rearm: true, delay: time.Second})
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.busy[7] != r.gen || r.timers.Len() != 0 {
			t.Fatalf("old-generation result leaked: busy=%v timers=%d", r.busy, r.timers.Len())
		}
		delete(r.busy, 7)
		// A heap item of the old generation is skipped.
		r.slots[8] = slot{due: r.at(time.Now()), seq: 1}
		r.timers = append(r.timers, item{id: 8, due: r.at(time.Now()), seq: 1, gen: oldGen})
		r.mu.Unlock()
		r.promote(time.Now())
		r.mu.Lock()
		if r.ready.Len() != 0 {
			t.Fatalf("old-generation item promoted")
		}
		delete(r.slots, 8)
	})
}

// Dispatch order is priority, then due time, then id (P30).
func TestRuntimeDispatchOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		release := make(chan struct{})
		sink := &fakeSink{script: func(d Delivery) error {
			if d.Key == "block" {
				<-release
			}
			return nil
		}}
		s := runHookWorkers(t, ds, sink, 1)
		synctest.Wait()
		enqueueReq(t, s, Request{Sink: "hook", Key: "block"}) // occupies the only worker
		synctest.Wait()
		for _, r := range []struct {
			key  string
			prio int
		}{{"p5-a", 5}, {"p0-a", 0}, {"p5-b", 5}, {"pm1", -1}, {"p0-b", 0}} {
			enqueueReq(t, s, Request{Sink: "hook", Key: r.key, Priority: r.prio})
			time.Sleep(time.Millisecond)
		}
		close(release)
		synctest.Wait()
		var order []string
		for _, sd := range sink.Sends()[1:] {
			order = append(order, sd.key)
		}
		if got, want := fmt.Sprint(order), "[pm1 p0-a p0-b p5-a p5-b]"; got != want {
			t.Fatalf("order = %s, want %s", got, want)
		}
	})
}

// P32: the number of concurrent sends never exceeds Workers.
func TestRuntimeBoundedConcurrency_P32(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		var mu sync.Mutex
		inflight, peak := 0, 0
		sink := &fakeSink{script: func(Delivery) error {
			mu.Lock()
			inflight++
			peak = max(peak, inflight)
			mu.Unlock()
			time.Sleep(time.Second)
			mu.Lock()
			inflight--
			mu.Unlock()
			return nil
		}}
		s := runHookWorkers(t, ds, sink, 3)
		synctest.Wait()
		t0 := time.Now()
		for i := range 10 {
			enqueueReq(t, s, Request{Sink: "hook", Key: fmt.Sprint("k", i)})
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		sends := sink.Sends()
		if len(sends) != 10 || peak != 3 {
			t.Fatalf("%d sends, peak %d; want 10 and 3", len(sends), peak)
		}
		if last := sends[9].at.Sub(t0); last != 3*time.Second {
			t.Fatalf("last send at +%v, want +3s (four waves of three)", last)
		}
	})
}

// goroutineID is the calling goroutine's number, from its stack's first line.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// The runtime's attempts run on goroutines it keeps, at most 2 x Workers of them, not on
// a new goroutine (with a new stack to grow) per attempt.
func TestRuntimeAttemptsReuseGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		var mu sync.Mutex
		seen := map[string]int{}
		sink := &fakeSink{script: func(Delivery) error {
			mu.Lock()
			seen[goroutineID()]++
			mu.Unlock()
			time.Sleep(time.Second)
			return nil
		}}
		s := runHookWorkers(t, ds, sink, 3)
		synctest.Wait()
		for i := range 30 {
			enqueueReq(t, s, Request{Sink: "hook", Key: fmt.Sprint("k", i)})
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if n := len(sink.Sends()); n != 30 || len(seen) > 2*3 {
			t.Fatalf("%d sends on %d goroutines (%v); want 30 on at most 6 (2 x workers)", n, len(seen), seen)
		}
	})
}

// P33: a send cut by shutdown returns its entry to pending with nothing charged; the next
// start sends it again with the same key.
func TestRuntimeShutdownMidSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		sink := &fakeSink{script: func(d Delivery) error {
			if d.Attempt == 1 {
				time.Sleep(time.Hour) // the destination hangs
				return errors.New("canceled")
			}
			return nil
		}}
		// The hanging send honours no context: make it return once shutdown starts.
		ctxSink := sinkFunc(func(ctx context.Context, d Delivery) error {
			if d.Attempt == 1 {
				<-ctx.Done()
				sink.Send(ctx, Delivery{ID: d.ID, Key: d.Key, Attempt: 99})
				return ctx.Err()
			}
			return sink.Send(ctx, d)
		})
		s := newService(t, parityConfig(), ds, map[string]Sink{"hook": ctxSink})
		stop := start(t, s)
		synctest.Wait()
		e := enqueueReq(t, s, Request{Sink: "hook", Key: "k"})
		time.Sleep(time.Second)
		stop()
		g := mustGet(t, ds, e.ID)
		if g.State != store.StatePending || g.Failures != 0 || g.Attempts != 1 {
			t.Fatalf("after shutdown mid-send: %+v", g)
		}
		stop = start(t, s)
		defer stop()
		synctest.Wait()
		if g := mustGet(t, ds, e.ID); g.State != store.StateDelivered || g.Attempts != 2 {
			t.Fatalf("after restart: %+v", g)
		}
		sum, _ := s.LastRecovery()
		if sum.Recovered != 1 || sum.Scanned != 1 {
			t.Fatalf("summary = %+v", sum)
		}
	})
}

type sinkFunc func(ctx context.Context, d Delivery) error

func (f sinkFunc) Send(ctx context.Context, d Delivery) error { return f(ctx, d) }

// P8: a Retry-After beyond the table is a floor for the next attempt; one past
// RetryAfterMax is clamped.
func TestRuntimeRetryAfterFloor(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retryAfter time.Duration
		want       time.Duration
	}{
		{"shorter than the table", 3 * time.Second, 25 * time.Second},
		{"longer than the table", 90 * time.Second, 90 * time.Second},
		{"clamped", 5 * time.Hour, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ds := storetest.NewMemory()
				sink := &fakeSink{script: func(d Delivery) error {
					if d.Attempt == 1 {
						return &SendError{Class: Transient, Err: errors.New("HTTP 429"), RetryAfter: tc.retryAfter}
					}
					return nil
				}}
				cfg := productionConfig() // jitter on: the floor holds whatever the jitter
				s, err := New(cfg, ds, map[string]Sink{"hook": sink}, Deps{Rand: func() float64 { return 0.999 }})
				if err != nil {
					t.Fatal(err)
				}
				stop := start(t, s)
				defer stop()
				synctest.Wait()
				t0 := time.Now()
				e := enqueueReq(t, s, Request{Sink: "hook", Key: "k"})
				synctest.Wait()
				if g := mustGet(t, ds, e.ID); g.NextAttemptAt.Sub(t0) < min(tc.retryAfter, time.Hour) {
					t.Fatalf("next_attempt_at = +%v, below the Retry-After floor", g.NextAttemptAt.Sub(t0))
				}
				time.Sleep(2 * time.Hour)
				synctest.Wait()
				sends := sink.Sends()
				if len(sends) != 2 {
					t.Fatalf("%d sends", len(sends))
				}
				got := sends[1].at.Sub(t0)
				if tc.retryAfter > 25*time.Second && got != tc.want {
					t.Fatalf("second attempt at +%v, want +%v", got, tc.want)
				}
				if tc.retryAfter <= 25*time.Second && (got > tc.want || got < tc.retryAfter) {
					t.Fatalf("second attempt at +%v, want in [%v, %v]", got, tc.retryAfter, tc.want)
				}
			})
		})
	}
}

// P7: a permanent error dead-letters at once: one attempt, no failure charged.
func TestRuntimePermanentErrorNoRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		sink := &fakeSink{script: func(Delivery) error { return errors.New("Telegram: Bad Request: CHAT NOT FOUND") }}
		s := runHook(t, ds, sink)
		synctest.Wait()
		e := enqueueReq(t, s, Request{Sink: "hook"})
		time.Sleep(time.Hour)
		synctest.Wait()
		g := mustGet(t, ds, e.ID)
		if len(sink.Sends()) != 1 || g.State != store.StateDead || g.Failures != 0 || g.Attempts != 1 ||
			g.DeadReason != "permanent error (matches /(?i)chat not found/)" {
			t.Fatalf("entry = %+v after %d sends", g, len(sink.Sends()))
		}
	})
}

// R-DLV-02: recovery runs before the gateway is ready: entries are deferred without charging
// a retry and delivered once it is ready; nothing is lost.
func TestRecoveryBeforeTransportReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		var ids []int64
		for i := range 5 {
			e, _, _ := ds.Enqueue(context.Background(), store.NewEntry{Sink: "gateway", Key: fmt.Sprint("k", i), Payload: []byte("x")})
			ids = append(ids, e.ID)
		}
		gw := &readySink{fakeSink: &fakeSink{}}
		s := newService(t, parityConfig(), ds, map[string]Sink{"gateway": gw})
		t0 := time.Now()
		stop := start(t, s)
		defer stop()
		synctest.Wait()
		sum, ok := s.LastRecovery()
		if !ok || sum.DeferredNotReady != 5 || sum.Total() != 5 {
			t.Fatalf("summary = %+v", sum)
		}
		time.Sleep(10 * time.Second) // the transport takes 10 s to connect
		gw.set(true)
		time.Sleep(time.Second)
		synctest.Wait()
		for _, id := range ids {
			if g := mustGet(t, ds, id); g.State != store.StateDelivered || g.Failures != 0 {
				t.Fatalf("entry %d = %+v", id, g)
			}
		}
		for _, sd := range gw.Sends() {
			if sd.at.Sub(t0) > 11*time.Second {
				t.Fatalf("sent at +%v, more than a floor after ready", sd.at.Sub(t0))
			}
		}
	})
}

// R-DLV-03: an entry past its TTL is dead-lettered with a reason, not sent.
func TestExpiredEntriesNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		sink := &fakeSink{}
		cfg := parityConfig()
		cfg.TTL = 12 * time.Hour
		s := newService(t, cfg, ds, map[string]Sink{"hook": sink})
		old := putEntry(ds, store.Entry{Sink: "hook", State: store.StatePending, Failures: 2,
			CreatedAt: time.Now().Add(-15 * time.Hour), ExpiresAt: time.Now().Add(-3 * time.Hour),
			NextAttemptAt: time.Now().Add(-14 * time.Hour)})
		stop := start(t, s)
		defer stop()
		synctest.Wait()
		fresh := enqueueReq(t, s, Request{Sink: "hook", Key: "fresh"})
		if fresh.ExpiresAt.Sub(fresh.CreatedAt) != 12*time.Hour {
			t.Fatalf("ttl not applied: %+v", fresh)
		}
		synctest.Wait()
		g := mustGet(t, ds, old.ID)
		if g.State != store.StateDead || g.DeadReason != ReasonExpired {
			t.Fatalf("old entry = %+v", g)
		}
		if sends := sink.Sends(); len(sends) != 1 || sends[0].key != "fresh" {
			t.Fatalf("sends = %+v", sends)
		}
		if sum, _ := s.LastRecovery(); sum.Expired != 1 {
			t.Fatalf("summary = %+v", sum)
		}
	})
}

// The retention purge deletes delivered tombstones past DeliveredRetention.
func TestRuntimePurgesTombstones(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		cfg := parityConfig()
		cfg.DeliveredRetention = 2 * time.Hour
		s := newService(t, cfg, ds, map[string]Sink{"hook": &fakeSink{}})
		stop := start(t, s)
		defer stop()
		synctest.Wait()
		e := enqueueReq(t, s, Request{Sink: "hook", Key: "k"})
		time.Sleep(2*time.Hour + time.Second)
		synctest.Wait()
		if _, err := ds.Get(context.Background(), e.ID); err != nil {
			t.Fatalf("purged early: %v", err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if _, err := ds.Get(context.Background(), e.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("tombstone kept past retention: %v", err)
		}
	})
}

// purgeCounter counts the retention purges that reach the store.
type purgeCounter struct {
	*storetest.Memory
	purges atomic.Int64
}

func (p *purgeCounter) Purge(ctx context.Context, f store.PurgeFilter) (int, error) {
	p.purges.Add(1)
	return p.Memory.Purge(ctx, f)
}

// An idle runtime (nothing pending, nothing finished) arms no periodic timer: hours pass
// with no purge. Once an entry is delivered, the purge is armed; once nothing finished is
// left, it is not armed again.
func TestRuntimeIdleArmsNoTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := &purgeCounter{Memory: storetest.NewMemory()}
		cfg := parityConfig()
		cfg.DeliveredRetention = 30 * time.Minute
		s := newService(t, cfg, ds, map[string]Sink{"hook": &fakeSink{}})
		stop := start(t, s)
		defer stop()
		time.Sleep(10 * time.Hour)
		synctest.Wait()
		if n := ds.purges.Load(); n != 0 {
			t.Fatalf("an idle runtime purged %d times in 10 h", n)
		}
		e := enqueueReq(t, s, Request{Sink: "hook", Key: "k"})
		synctest.Wait()
		time.Sleep(time.Hour + time.Second)
		synctest.Wait()
		if _, err := ds.Get(context.Background(), e.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("tombstone kept past retention: %v", err)
		}
		n := ds.purges.Load()
		if n == 0 {
			t.Fatal("no purge after a delivery")
		}
		time.Sleep(10 * time.Hour)
		synctest.Wait()
		if m := ds.purges.Load(); m != n {
			t.Fatalf("the purge ran %d more times with nothing left to purge", m-n)
		}
	})
}

// sharedMemory is a store that other hosts write too (store.Waker): entries put behind the
// service's back are what another host enqueued.
type sharedMemory struct {
	*storetest.Memory
	wake chan struct{}
	// lives and nears count the entries Live and Near returned.
	lives, nears atomic.Int64
}

func (m *sharedMemory) Wake() <-chan struct{}      { return m.wake }
func (m *sharedMemory) RescanEvery() time.Duration { return 15 * time.Second }

func (m *sharedMemory) Live(ctx context.Context, afterID int64, limit int) ([]store.Ref, error) {
	refs, err := m.Memory.Live(ctx, afterID, limit)
	m.lives.Add(int64(len(refs)))
	return refs, err
}

// Near is what the Postgres store's indexes give: the pending entries due before before,
// and the sending ones.
func (m *sharedMemory) Near(ctx context.Context, before time.Time, page int, f func([]store.Ref)) error {
	refs, err := m.Memory.Live(ctx, 0, math.MaxInt32)
	if err != nil {
		return err
	}
	near := slices.DeleteFunc(refs, func(r store.Ref) bool {
		return r.State == store.StatePending && !r.NextAttemptAt.Before(before)
	})
	m.nears.Add(int64(len(near)))
	for len(near) > 0 {
		k := min(page, len(near))
		f(near[:k])
		near = near[k:]
	}
	return nil
}

// A rescan of a shared store reads what is due soon and what is in flight, not the backlog:
// 500 entries due in a day are read by neither the pass at the start nor any of the
// rescans of the next two hours; an entry another host enqueued due in an hour, its
// notification lost, is found by a rescan before it is due and sent at its due time.
func TestRuntimeRescanReadsOnlyWhatIsNear(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := &sharedMemory{Memory: storetest.NewMemory(), wake: make(chan struct{}, 1)}
		for range 500 {
			putEntry(ds.Memory, store.Entry{Sink: "hook", State: store.StatePending, NextAttemptAt: time.Now().Add(24 * time.Hour)})
		}
		sink := &fakeSink{}
		stop := start(t, newService(t, parityConfig(), ds, map[string]Sink{"hook": sink}))
		defer stop()
		synctest.Wait()
		if n := ds.lives.Load() + ds.nears.Load(); n != 0 {
			t.Fatalf("the pass and the runtime read %d entries at the start, want none", n)
		}
		due := time.Now().Add(time.Hour)
		putEntry(ds.Memory, store.Entry{Sink: "hook", State: store.StatePending, NextAttemptAt: due})
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		if s := sink.Sends(); len(s) != 1 || !s[0].at.Equal(due) {
			t.Fatalf("sends %+v, want one at its due time, an hour after the start", s)
		}
		if n := ds.lives.Load(); n != 0 {
			t.Fatalf("the rescans read %d live entries: the whole backlog", n)
		}
		// 480 rescans in two hours; the entry was near for two of them.
		if n := ds.nears.Load(); n > 3 {
			t.Fatalf("the rescans read %d entries, want the one due within their horizon", n)
		}
	})
}

// A store that other hosts write is rescanned on its poll timer and when it signals; a store
// only this process writes (SQLite) is never rescanned, so an idle runtime on it arms no
// timer.
func TestRuntimeRescansSharedStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := &sharedMemory{Memory: storetest.NewMemory(), wake: make(chan struct{}, 1)}
		sink := &fakeSink{}
		stop := start(t, newService(t, parityConfig(), ds, map[string]Sink{"hook": sink}))
		defer stop()
		synctest.Wait()
		began := time.Now()
		putEntry(ds.Memory, store.Entry{Sink: "hook", State: store.StatePending})
		time.Sleep(15*time.Second - time.Millisecond)
		synctest.Wait()
		if n := len(sink.Sends()); n != 0 {
			t.Fatalf("sent %d before the rescan", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if s := sink.Sends(); len(s) != 1 || s[0].at.Sub(began) != 15*time.Second {
			t.Fatalf("sends %+v, want one at the rescan 15 s after the start", s)
		}
		time.Sleep(5 * time.Second)
		putEntry(ds.Memory, store.Entry{Sink: "hook", State: store.StatePending})
		woken := time.Now()
		ds.wake <- struct{}{}
		synctest.Wait()
		if s := sink.Sends(); len(s) != 2 || !s[1].at.Equal(woken) {
			t.Fatalf("sends %+v, want the second at once when the store signals", s)
		}

		plain := storetest.NewMemory()
		other := &fakeSink{}
		stopPlain := start(t, newService(t, parityConfig(), plain, map[string]Sink{"hook": other}))
		defer stopPlain()
		synctest.Wait()
		putEntry(plain, store.Entry{Sink: "hook", State: store.StatePending})
		time.Sleep(10 * time.Hour)
		synctest.Wait()
		if n := len(other.Sends()); n != 0 {
			t.Fatalf("a store that is not shared was rescanned: %d sends", n)
		}
	})
}
