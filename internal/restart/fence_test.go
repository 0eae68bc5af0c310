package restart

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// fakeFence answers prepare and status from a script (the last answer repeats); each call
// takes `took` of virtual time. It records every call.
type fakeFence struct {
	took     time.Duration
	mu       sync.Mutex
	statuses []string // answers to prepare/status, in order
	expires  time.Duration
	calls    []string
	at       []time.Time
}

func (f *fakeFence) record(name string) {
	f.mu.Lock()
	f.calls = append(f.calls, name)
	f.at = append(f.at, time.Now())
	f.mu.Unlock()
}

func (f *fakeFence) next(ctx context.Context, name string) (api.FenceState, error) {
	f.record(name)
	select {
	case <-time.After(f.took):
	case <-ctx.Done():
		return api.FenceState{}, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.statuses[0]
	if len(f.statuses) > 1 {
		f.statuses = f.statuses[1:]
	}
	if st == "error" {
		return api.FenceState{}, errors.New("UNAVAILABLE: try later")
	}
	out := api.FenceState{Status: st, SuspensionID: "s-1"}
	if f.expires > 0 {
		exp := time.Now().Add(f.expires)
		out.ExpiresAt = &exp
	}
	return out, nil
}

func (f *fakeFence) Prepare(ctx context.Context, id string) (api.FenceState, error) {
	return f.next(ctx, "prepare")
}

func (f *fakeFence) Status(ctx context.Context, id string) (api.FenceState, error) {
	if id != "s-1" {
		return api.FenceState{}, errors.New("status without the suspension id")
	}
	return f.next(ctx, "status")
}

func (f *fakeFence) Resume(ctx context.Context, id string) (bool, error) {
	f.record("resume:" + id)
	return true, nil
}

func (f *fakeFence) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func fenceConfig(f *fakeFence, idle Counter) Config {
	return Config{Delay: 0, Idle: idle, Fence: f, Poll: 5 * time.Second, ProbeTimeout: 20 * time.Second}
}

// TestFenceBeforeRestart: once idle, admission is closed (prepare) and the restart waits
// for the fence to report ready; a restart that respawned the gateway resumes nothing.
func TestFenceBeforeRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeFence{took: 4 * time.Second, statuses: []string{"draining", "draining", "ready"}}
		h := newHarness(t, fenceConfig(f, &fakeCounter{}), &fakeRestarter{})
		tk := h.c.Request(Request{Source: api.SourceCLI})
		time.Sleep(6 * time.Second) // prepare answered draining at 4 s
		synctest.Wait()
		st := h.c.Status()
		if st.Pending == nil || st.Pending.Fence == nil || st.Pending.Fence.Status != "draining" ||
			st.Pending.Fence.PreparedAt == nil || len(h.r.at()) != 0 {
			t.Fatalf("pending %+v, restarts %v", st.Pending, h.rel())
		}
		// polls at 5 s (busy: skipped until 4 s answered)... status at 5 s → 9 s, at 10 s → 14 s ready.
		h.expectAt(1, 14*time.Second)
		res, err := tk.Wait(context.Background())
		if err != nil || !res.OK || res.Fence == nil || !res.Fence.Ready || res.Fence.Resumed || res.Fence.WaitMs != 14000 {
			t.Fatalf("result %+v %v", res, err)
		}
		if got := f.log(); !slices.Equal(got, []string{"prepare", "status", "status"}) {
			t.Fatalf("fence calls %v", got)
		}
	})
}

// TestFenceResumed: a restart that failed leaves the old process in charge, and with
// method signal OpenClaw holds the restart while suspended: both reopen admission.
func TestFenceResumed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method Method
		r      *fakeRestarter
		ok     bool
	}{
		{"failed respawn", MethodRespawn, &fakeRestarter{fail: true}, false},
		{"signal", MethodSignal, &fakeRestarter{took: time.Second}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeFence{statuses: []string{"ready"}}
				cfg := fenceConfig(f, &fakeCounter{})
				cfg.Method = tc.method
				h := newHarness(t, cfg, tc.r)
				res, _ := h.c.Request(Request{Source: api.SourceCLI}).Wait(context.Background())
				if res.OK != tc.ok || res.Fence == nil || !res.Fence.Resumed {
					t.Fatalf("result %+v", res)
				}
				if got := f.log(); !slices.Equal(got, []string{"prepare", "resume:s-1"}) {
					t.Fatalf("fence calls %v", got)
				}
			})
		})
	}
}

// TestFenceResumedOnCancel: schedd stopping while the fence is held reopens admission.
func TestFenceResumedOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeFence{statuses: []string{"draining"}}
		h := newHarness(t, fenceConfig(f, &fakeCounter{}), &fakeRestarter{})
		tk := h.c.Request(Request{Source: api.SourceCLI})
		time.Sleep(time.Second)
		h.cancel()
		if err := <-h.done; err != nil {
			t.Fatal(err)
		}
		h.done <- nil // for the cleanup
		if _, err := tk.Wait(context.Background()); !errors.Is(err, ErrStopping) {
			t.Fatalf("wait: %v", err)
		}
		if got := f.log(); !slices.Equal(got, []string{"prepare", "resume:s-1"}) || len(h.r.at()) != 0 {
			t.Fatalf("fence calls %v, restarts %v", got, h.rel())
		}
	})
}

// TestFenceRenewed: a drain longer than the lease renews it (prepare again) before it ends.
func TestFenceRenewed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeFence{took: time.Second, statuses: []string{"draining"}, expires: 2 * time.Minute}
		h := newHarness(t, fenceConfig(f, &fakeCounter{}), &fakeRestarter{})
		h.c.Request(Request{Source: api.SourceCLI})
		time.Sleep(2*time.Minute + 10*time.Second)
		synctest.Wait()
		f.mu.Lock()
		var prepares []time.Duration
		for i, c := range f.calls {
			if c == "prepare" {
				prepares = append(prepares, f.at[i].Sub(h.t0))
			}
		}
		f.mu.Unlock()
		// first at 0; the lease from 1 s ends at 2m1s, renewed from 1m31s: the poll at 1m35s.
		if !slices.Equal(prepares, []time.Duration{0, 95 * time.Second}) {
			t.Fatalf("prepares at %v", prepares)
		}
	})
}

// TestFenceForcedAfterCall: max_wait ending while a fence call runs forces the restart
// once that call has answered, so its lease is known (and resumed if need be).
func TestFenceForcedAfterCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeFence{took: 4 * time.Second, statuses: []string{"draining"}}
		cfg := fenceConfig(f, &fakeCounter{})
		cfg.MaxWait = 7 * time.Second
		h := newHarness(t, cfg, &fakeRestarter{})
		tk := h.c.Request(Request{Source: api.SourceCLI})
		h.expectAt(1, 9*time.Second) // status call 5 s → 9 s spans the 7 s deadline
		res, _ := tk.Wait(context.Background())
		if !res.Forced || res.Fence == nil || res.Fence.Ready {
			t.Fatalf("result %+v", res)
		}
	})
}

// TestFenceErrorKeepsWaiting: a failed prepare is shown and retried at the next poll.
func TestFenceErrorKeepsWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeFence{statuses: []string{"error", "busy", "ready"}}
		h := newHarness(t, fenceConfig(f, &fakeCounter{}), &fakeRestarter{})
		tk := h.c.Request(Request{Source: api.SourceCLI})
		synctest.Wait()
		if st := h.c.Status(); st.Pending == nil || st.Pending.Fence == nil || st.Pending.Fence.Error == "" {
			t.Fatalf("pending %+v", st.Pending)
		}
		h.expectAt(1, 10*time.Second)
		if got := f.log(); !slices.Equal(got, []string{"prepare", "prepare", "prepare"}) {
			t.Fatalf("fence calls %v", got)
		}
		tk.Wait(context.Background())
	})
}

// detailCounter is an idle probe that explains itself, as the OpenClaw probe does.
type detailCounter struct{ fakeCounter }

func (d *detailCounter) InflightDetail(ctx context.Context) (int, *api.IdleDetail, error) {
	n, err := d.Inflight(ctx)
	if err != nil {
		return 0, nil, err
	}
	return n, &api.IdleDetail{Summary: "2 active", Counts: map[string]int{"totalActive": n}}, nil
}

// TestIdleDetailInStatus: why the gateway is busy, or why the check failed, is in status.
func TestIdleDetailInStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idle := &detailCounter{fakeCounter{n: 2}}
		h := newHarness(t, Config{Idle: idle}, &fakeRestarter{})
		h.c.Request(Request{Source: api.SourceCLI})
		synctest.Wait()
		p := h.c.Status().Pending
		if p == nil || p.IdleDetail == nil || p.IdleDetail.Summary != "2 active" || p.IdleError != "" {
			t.Fatalf("pending %+v", p)
		}
		idle.mu.Lock()
		idle.err = errors.New("UNAVAILABLE")
		idle.mu.Unlock()
		time.Sleep(testPoll)
		synctest.Wait()
		if p := h.c.Status().Pending; p.IdleError != "UNAVAILABLE" || p.Inflight != nil {
			t.Fatalf("pending %+v", p)
		}
	})
}
