package restart

import (
	"context"
	"strconv"
	"time"

	"github.com/schedd/schedd/internal/api"
	"go.uber.org/zap"
)

// DetailCounter is an idle probe that can also say why the gateway is busy; the detail is
// shown in the pending restart's status.
type DetailCounter interface {
	InflightDetail(ctx context.Context) (int, *api.IdleDetail, error)
}

// Fence closes the gateway's admission of new work so nothing starts between "idle" and
// the stop (an OpenClaw suspension). Prepare with the same request id renews the lease.
type Fence interface {
	Prepare(ctx context.Context, requestID string) (api.FenceState, error)
	Status(ctx context.Context, suspensionID string) (api.FenceState, error)
	Resume(ctx context.Context, suspensionID string) (resumed bool, err error)
}

// The fence states the coordinator acts on (as OpenClaw names them).
const (
	fenceReady    = "ready"
	fenceDraining = "draining"
)

// fenceLease is how long a fence holds when its reply gives no expiry (OpenClaw's lease);
// fenceRenewBefore is how early it is renewed (a call takes seconds).
const (
	fenceLease       = 2 * time.Minute
	fenceRenewBefore = 30 * time.Second
)

// fenceHold is a pending restart's fence, owned by the Run goroutine.
type fenceHold struct {
	fence      Fence // as configured when the fence began
	requestID  string
	firstAt    time.Time // the first prepare
	state      api.FenceState
	held       bool      // a prepare succeeded and no status said it ended: admission is closed
	renewAt    time.Time // prepare again from then on
	forceAfter *bool     // the restart must run once the call in flight returns (forced?)
}

type fenceResult struct {
	gen     int
	prepare bool
	st      api.FenceState
	err     error
}

// startFence begins the fence of p once the idle probe said idle.
func (s *run) startFence(p *pending) {
	now := time.Now()
	p.fence = &fenceHold{fence: s.c.cfg.Fence, requestID: "schedd-restart-" + strconv.FormatInt(now.UnixNano(), 36), firstAt: now}
	s.c.log.Info("gateway is idle; closing its admission before the restart")
	s.fenceCall()
}

// fenceCall prepares (or renews) the fence, or asks its status, unless a call runs.
func (s *run) fenceCall() {
	p := s.pend
	if s.probing || p == nil || p.fence == nil {
		return
	}
	f := p.fence
	prepare := !f.held || !time.Now().Before(f.renewAt)
	s.probing = true
	ctx, fence, timeout, gen := s.ctx, f.fence, s.c.cfg.ProbeTimeout, s.gen
	reqID, susID := f.requestID, f.state.SuspensionID
	s.wg.Go(func() {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var st api.FenceState
		var err error
		if prepare {
			st, err = fence.Prepare(cctx, reqID)
		} else {
			st, err = fence.Status(cctx, susID)
		}
		s.fenced <- fenceResult{gen, prepare, st, err}
	})
}

// fenceAnswered applies a fence call's answer: ready runs the restart; draining waits
// (renewing the lease in time); anything else retries the prepare at the next poll.
func (s *run) fenceAnswered(fr fenceResult) {
	p := s.pend
	if p == nil || p.fence == nil || fr.gen != s.gen {
		return
	}
	f := p.fence
	now := time.Now()
	if fr.err != nil {
		f.state.Error = fr.err.Error()
		s.c.log.Info("idle fence call failed; the restart keeps waiting", zap.Error(fr.err))
	} else {
		prepared := f.state.PreparedAt
		if fr.prepare {
			prepared = &now
			exp := now.Add(fenceLease)
			if fr.st.ExpiresAt != nil {
				exp = *fr.st.ExpiresAt
			}
			f.renewAt = exp.Add(-fenceRenewBefore)
		}
		if fr.st.SuspensionID == "" {
			fr.st.SuspensionID = f.state.SuspensionID
		}
		f.state = fr.st
		f.held = fr.st.Status == fenceReady || fr.st.Status == fenceDraining
		if f.held {
			f.state.PreparedAt = prepared
		}
		if !f.held {
			s.c.log.Info("idle fence not held; preparing it again at the next poll", zap.String("status", fr.st.Status))
		}
	}
	if forced := f.forceAfter; forced != nil {
		s.execute(*forced)
		return
	}
	if f.held && f.state.Status == fenceReady {
		s.c.log.Info("gateway admits no new work and is idle", zap.Duration("fence", now.Sub(f.firstAt)))
		s.execute(false)
		return
	}
	s.publish()
}

// fenceBusy reports whether a fence call is in flight; the restart then waits for its
// answer (at most a probe timeout), so no lease is left behind unknown.
func (s *run) fenceBusy(forced bool) bool {
	p := s.pend
	if p == nil || p.fence == nil || !s.probing {
		return false
	}
	p.fence.forceAfter = &forced
	return true
}

// resumeFence reopens admission after a restart that left the old process running (a
// signal restart, or one that failed before the stop), or one that was cancelled.
// It uses its own context: it runs after the coordinator's may have ended.
func resumeFence(ctx context.Context, fence Fence, timeout time.Duration, id string, log *zap.Logger) *api.FenceResult {
	begun := time.Now()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	resumed, err := fence.Resume(cctx, id)
	r := &api.FenceResult{Resumed: resumed, ResumeMs: time.Since(begun).Milliseconds()}
	if err != nil {
		r.Error = err.Error()
		log.Warn("could not reopen the gateway's admission; its lease ends it", zap.Error(err))
	} else {
		log.Info("gateway admission reopened", zap.Bool("resumed", resumed))
	}
	return r
}

// restartFenced runs one restart with the fence f (nil: none). With method signal the
// resume goes out with the signal: OpenClaw holds a signal restart while suspended and
// runs it as soon as admission reopens. After a respawn that worked the new process was
// never suspended; otherwise the old one may still be, and is resumed.
func (s *run) restartFenced(ctx context.Context, r Restarter, m Method, f *fenceHold) (Outcome, *api.FenceResult, error) {
	if f == nil || !f.held {
		o, err := r.Restart(ctx, m)
		return o, nil, err
	}
	fence, timeout, log, id := f.fence, s.c.cfg.ProbeTimeout, s.c.log, f.state.SuspensionID
	fr := &api.FenceResult{Ready: f.state.Status == fenceReady, WaitMs: time.Since(f.firstAt).Milliseconds()}
	merge := func(r *api.FenceResult) { fr.Resumed, fr.ResumeMs, fr.Error = r.Resumed, r.ResumeMs, r.Error }
	if m == MethodSignal {
		resumed := make(chan *api.FenceResult, 1)
		go func() { resumed <- resumeFence(ctx, fence, timeout, id, log) }()
		o, err := r.Restart(ctx, m)
		merge(<-resumed)
		return o, fr, err
	}
	o, err := r.Restart(ctx, m)
	if err != nil || !o.OK {
		merge(resumeFence(ctx, fence, timeout, id, log))
	}
	return o, fr, err
}
