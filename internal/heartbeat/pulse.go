package heartbeat

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/schedd/schedd/internal/api"
	"go.uber.org/zap"
)

const (
	// pulseWorkers is how many pulses may be in flight across all agents. Workers start
	// when pulses wait for one and then live as long as Run, so a daemon whose agents never
	// pulse keeps none.
	pulseWorkers = 64
	// pulseQueue is how many started pulses may wait for a worker before the handler
	// hands further ones to short-lived goroutines.
	pulseQueue = 1024
)

// pulseJob is a started pulse waiting for a worker.
type pulseJob struct {
	a *agent
	t pulser // the agent's target when the pulse started: a reload may replace it
	p Pulse
}

func (s *Service) startPulseLocked(a *agent, w Wake, kind ReasonKind, now time.Time) {
	sched := now
	if kind == KindInterval && !a.nextDue.After(now) {
		sched = a.nextDue
	}
	if a.attempt > 0 && !a.retrySched.IsZero() {
		sched = a.retrySched
	}
	p := Pulse{
		AgentID:     a.id,
		SessionKey:  sessionFor(w, a),
		Reason:      w.Reason,
		ReasonKind:  kind,
		Visibility:  a.vis,
		ScheduledAt: sched.UTC(),
		Attempt:     a.attempt + 1,
	}
	s.setDue(a, advanceDue(now, kind, a.interval, a.phase, a.window.Within))
	a.inflight = true
	s.dirty = true
	s.enqueueLocked(pulseJob{a: a, t: a.target, p: p})
}

// enqueueLocked hands job to the pulse workers. Each queued pulse counts on an idle worker
// (it takes one from idle) or on a worker started for it, up to pulseWorkers: a worker that
// has taken a pulse from the queue but not started it is not idle, so no pulse waits in
// the queue while there is room for a worker. Beyond pulseWorkers a pulse waits for a
// worker to finish.
func (s *Service) enqueueLocked(job pulseJob) {
	select {
	case s.jobs <- job:
		if !takeOne(&s.idle) && s.workers < pulseWorkers {
			s.workers++
			ctx := s.runCtx
			s.pulses.Go(func() { s.worker(ctx) })
		}
	default:
		// The queue is full (a broadcast to many agents): wait for room off the lock.
		ctx := s.runCtx
		s.pulses.Go(func() {
			select {
			case s.jobs <- job:
			case <-ctx.Done():
				s.drop(job)
			}
		})
	}
}

// worker runs queued pulses until ctx ends; it counts as idle after each one.
func (s *Service) worker(ctx context.Context) {
	for {
		select {
		case job := <-s.jobs:
			startWall, start := s.wall(), time.Now()
			res := safePulse(ctx, job.t, job.p, s.log)
			if res.outcome != outcomeBusy {
				s.obs.late(job.p.AgentID, startWall.Sub(job.p.ScheduledAt))
			}
			s.finish(job.a, job.p, res, startWall, time.Since(start))
			s.idle.Add(1)
		case <-ctx.Done():
			return
		}
	}
}

// takeOne takes one from n if it is above zero, and reports whether it did.
func takeOne(n *atomic.Int32) bool {
	for {
		v := n.Load()
		if v <= 0 {
			return false
		}
		if n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

// dropQueued records pulses still queued at shutdown as stopped.
func (s *Service) dropQueued() {
	for {
		select {
		case job := <-s.jobs:
			s.drop(job)
		default:
			return
		}
	}
}

// drop records a pulse the service stopped before it ran.
func (s *Service) drop(job pulseJob) {
	s.finish(job.a, job.p, pulseResult{outcome: outcomeFailed, reason: reasonStopped}, s.wall(), 0)
}

func safePulse(ctx context.Context, t pulser, p Pulse, log *zap.Logger) (res pulseResult) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("heartbeat target panic", zap.String("agent", p.AgentID), zap.Any("panic", r), zap.Stack("stack"))
			res = pulseResult{outcome: outcomeFailed, reason: fmt.Sprintf("panic: %v", r)}
		}
	}()
	return t.pulse(ctx, p)
}

// finish records a pulse's outcome. A busy answer is retried through the dispatcher after
// RetryDelay with the same reason and target, and does not count as a run start.
func (s *Service) finish(a *agent, p Pulse, res pulseResult, startWall time.Time, took time.Duration) {
	last := &api.HeartbeatRun{DurationMS: took.Milliseconds(), At: startWall, Reason: res.reason, Outcome: res.answer}
	s.mu.Lock()
	a.inflight = false
	switch res.outcome {
	case outcomeRan:
		last.Status = api.RunRan
	case outcomeBusy, outcomeLimited:
		last.Status = api.RunSkipped
	case outcomeFailed:
		last.Status = api.RunFailed
	}
	newConfigErr := s.noteRefusalLocked(a, p, res, startWall.Add(took))
	if res.outcome == outcomeBusy {
		a.attempt++
		a.retrySched = p.ScheduledAt
	} else {
		a.attempt, a.retrySched = 0, time.Time{}
		a.starts = recordStart(a.starts, startWall)
	}
	a.last = last
	if res.event != nil {
		ev := *res.event
		ev.At = startWall.Add(took)
		if a.vis.UseIndicator {
			ev.Indicator = indicatorFor(ev.Status)
		}
		a.event = &ev
	}
	s.dirty = true
	// Run arms the save timer when it next looks; a wake deferred by a Retry-After needs
	// the scheduler timer re-armed now.
	kick := !s.saveArmed || res.outcome == outcomeLimited
	s.mu.Unlock()

	s.obs.pulse(p.AgentID, last.Status)
	s.logPulse(p, res, last.Status, startWall, took)
	if newConfigErr {
		s.log.Error("heartbeat target refused the pulse: check its configuration; not retried, the agent keeps its schedule",
			zap.String("agent", p.AgentID), zap.String("error", res.configErr))
	}
	if res.outcome == outcomeBusy {
		s.disp.retry(Wake{Reason: p.Reason, AgentID: p.AgentID, SessionKey: p.SessionKey})
	}
	if kick {
		s.poke()
	}
}

// noteRefusalLocked keeps what the target said about itself: a refusal (reported whether
// it is new), an acceptance that clears it, a Retry-After that holds the agent back. The
// wake a Retry-After interrupted runs again when it ends, unless the agent's next slot comes
// first and covers it.
func (s *Service) noteRefusalLocked(a *agent, p Pulse, res pulseResult, end time.Time) (fresh bool) {
	switch {
	case res.configErr != "":
		fresh = a.configErr != res.configErr
		a.configErr = res.configErr
	case res.outcome == outcomeRan:
		a.configErr = ""
	case res.outcome == outcomeLimited:
		a.notBefore = end.Add(res.retryAfter)
		s.deferLocked(a, Wake{Reason: p.Reason, AgentID: p.AgentID, SessionKey: p.SessionKey}, SkipRateLimited, a.notBefore)
	}
	return fresh
}

// logPulse writes the line of a pulse that finished.
func (s *Service) logPulse(p Pulse, res pulseResult, status api.RunStatus, startWall time.Time, took time.Duration) {
	fields := []zap.Field{
		zap.String("agent", p.AgentID), zap.String("reason", p.Reason), zap.String("reason_kind", string(p.ReasonKind)),
		zap.String("status", string(status)), zap.Duration("duration", took), zap.Int("attempt", p.Attempt),
		zap.Time("scheduled_at", p.ScheduledAt), zap.Duration("late", startWall.Sub(p.ScheduledAt)),
	}
	if p.SessionKey != "" {
		fields = append(fields, zap.String("session", p.SessionKey))
	}
	if res.reason != "" {
		fields = append(fields, zap.String("detail", res.reason))
	}
	if res.event != nil {
		fields = append(fields, zap.String("event", res.event.Status))
	}
	if res.answer != "" {
		fields = append(fields, zap.String("outcome", res.answer))
	}
	s.log.Info("heartbeat pulse", fields...)
}
