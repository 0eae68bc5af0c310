package heartbeat

import (
	"context"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/api"
	"go.uber.org/zap"
)

// note is a log line decided under the lock and written after it.
type note struct {
	agent, session string
	wake           Wake
	reason         string
	until          time.Time
}

func (s *Service) logNotes(notes []note) {
	for _, n := range notes {
		fields := []zap.Field{zap.String("agent", n.agent), zap.String("wake_reason", n.wake.Reason),
			zap.String("skip_reason", n.reason)}
		if n.session != "" {
			fields = append(fields, zap.String("session", n.session))
		}
		if !n.until.IsZero() {
			fields = append(fields, zap.Time("deferred_until", n.until))
		}
		s.log.Info("heartbeat skipped", fields...)
	}
}

// handle is the dispatcher's handler: it gates the wake and starts pulses. Pulses run on
// their own, so a slow target delays no other agent; a busy target re-queues its wake
// through the dispatcher's retry when it answers.
func (s *Service) handle(ctx context.Context, w Wake) (RunResult, error) {
	res := s.dispatch(ctx, w)
	if !(res.Status == api.RunSkipped && IsBusyReason(res.Reason)) {
		s.mu.Lock()
		s.awaiting = false
		s.mu.Unlock()
	}
	s.poke()
	return res, nil
}

func skipped(reason string) RunResult { return RunResult{Status: api.RunSkipped, Reason: reason} }

// dispatch applies the gates in upstream's order: disabled, quiet-hours, gateway busy
// (requests-in-flight), gateway-not-ready, alerts-disabled, cooldown.
func (s *Service) dispatch(ctx context.Context, w Wake) RunResult {
	now := s.wall()
	kind := KindOf(w.Reason)
	var notes []note
	defer func() { s.logNotes(notes) }()

	s.mu.Lock()
	if !s.enabledLocked() || s.stopping {
		s.mu.Unlock()
		notes = append(notes, note{agent: w.AgentID, wake: w, reason: SkipDisabled})
		return skipped(SkipDisabled)
	}
	var cands []*agent
	switch {
	case w.AgentID != "" || w.SessionKey != "":
		id := w.AgentID
		if id == "" {
			id = s.agentForSessionLocked(w.SessionKey)
		}
		a := s.agents[id]
		if a == nil || !a.runs {
			s.mu.Unlock()
			notes = append(notes, note{agent: id, session: w.SessionKey, wake: w, reason: SkipDisabled})
			return skipped(SkipDisabled)
		}
		cands = []*agent{a}
	case kind == KindInterval:
		cands = s.due.dueAt(now)
		if len(cands) == 0 {
			s.mu.Unlock()
			return skipped(SkipNotDue)
		}
	default:
		for _, a := range s.order {
			if a.runs {
				cands = append(cands, a)
			}
		}
		if len(cands) == 0 {
			s.mu.Unlock()
			return skipped(SkipDisabled)
		}
	}
	open := cands[:0:0]
	for _, a := range cands {
		if !a.window.Within(now) {
			notes = append(notes, s.skipLocked(a, w, kind, SkipQuietHours, now, true))
			continue
		}
		open = append(open, a)
	}
	s.mu.Unlock()
	if len(open) == 0 {
		return skipped(SkipQuietHours)
	}

	busy, ready := false, true
	if s.gw != nil {
		n, known := s.gw.Inflight(ctx)
		busy = known && n > 0
		if !busy {
			ready = s.gw.Ready()
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.enabledLocked() || s.stopping {
		return skipped(SkipDisabled)
	}
	if busy {
		// Not advanced and not started: the dispatcher's retry runs these again in 1 s, so
		// repeated busy skips never push a schedule out.
		for _, a := range open {
			if s.agents[a.id] == a {
				notes = append(notes, s.skipLocked(a, w, kind, SkipRequestsInFlight, now, false))
			}
		}
		return skipped(SkipRequestsInFlight)
	}
	started, last := 0, ""
	for _, a := range open {
		if s.agents[a.id] != a || !a.runs {
			continue // replaced by a config reload meanwhile
		}
		reason := ""
		switch {
		case !ready:
			reason = SkipGatewayNotReady
		case !a.vis.Any():
			reason = SkipAlertsDisabled
		case a.inflight:
			reason = SkipInProgress
		}
		if reason != "" {
			notes = append(notes, s.skipLocked(a, w, kind, reason, now, true))
			last = reason
			continue
		}
		if a.notBefore.After(now) {
			// The target's Retry-After: an interval slot is skipped, any other wake waits.
			if kind == KindInterval {
				notes = append(notes, s.skipLocked(a, w, kind, SkipRateLimited, now, true))
			} else {
				notes = append(notes, s.deferLocked(a, w, SkipRateLimited, a.notBefore))
			}
			last = SkipRateLimited
			continue
		}
		if until, why, deferred := cooldown(kind, a.starts, now); deferred {
			notes = append(notes, s.deferLocked(a, w, why, until))
			last = why
			continue
		}
		s.startPulseLocked(a, w, kind, now)
		started++
	}
	if started > 0 {
		return RunResult{Status: api.RunRan}
	}
	return skipped(last)
}

// agentForSessionLocked reads "agent:<id>:..." keys; other keys belong to the first
// configured agent (upstream's default agent).
func (s *Service) agentForSessionLocked(key string) string {
	if rest, ok := strings.CutPrefix(key, "agent:"); ok {
		id, _, _ := strings.Cut(rest, ":")
		return id
	}
	if len(s.order) > 0 {
		return s.order[0].id
	}
	return ""
}

// skipLocked records a skip. An interval wake's skip consumes its slot, so the schedule
// advances (unless told otherwise, for busy skips the retry owns). Any other skipped wake
// leaves the schedule alone: nothing ran, so there is no fresh run to count from.
func (s *Service) skipLocked(a *agent, w Wake, kind ReasonKind, reason string, now time.Time, advance bool) note {
	a.last = &api.HeartbeatRun{Status: api.RunSkipped, Reason: reason, At: now}
	s.obs.pulse(a.id, api.RunSkipped)
	if advance && kind == KindInterval {
		a.attempt, a.retrySched = 0, time.Time{}
		s.setDue(a, advanceDue(now, kind, a.interval, a.phase, a.window.Within))
	}
	s.dirty = true
	return note{agent: a.id, session: sessionFor(w, a), wake: w, reason: reason}
}

// deferLocked parks an event wake until the cooldown lets it run. A wake that could only
// run at or after the agent's next due time is dropped: that run covers it. A deferral is
// logged but is not an outcome, so the agent's last run stays what it was.
func (s *Service) deferLocked(a *agent, w Wake, why string, until time.Time) note {
	n := note{agent: a.id, session: sessionFor(w, a), wake: w, reason: why, until: until}
	if !until.Before(a.nextDue) {
		n.until = time.Time{}
		return n
	}
	d := &deferredWake{at: until, reason: w.Reason, session: w.SessionKey}
	if prev := a.deferred; prev != nil {
		if Priority(prev.reason) > Priority(d.reason) {
			d.reason, d.session = prev.reason, prev.session
		}
		if prev.at.Before(d.at) {
			d.at = prev.at
		}
	}
	a.deferred = d
	s.deferq.set(a)
	return n
}

func sessionFor(w Wake, a *agent) string {
	if w.SessionKey != "" {
		return w.SessionKey
	}
	return a.session
}
