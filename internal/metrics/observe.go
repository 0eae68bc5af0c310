package metrics

import (
	"time"

	"github.com/schedd/schedd/internal/api"
)

// The hooks below are what the daemon hands to the feature packages. Each is safe on a nil
// *Metrics, cheap, and never blocks.

// Gateway takes the supervisor's snapshot at each state change: it counts new starts after
// the first by the previous process's exit reason, and observes a start's time to ready.
func (m *Metrics) Gateway(st api.Gateway) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := st.Restarts - m.seenRestarts; n > 0 {
		reason := other
		if st.LastExit != nil {
			reason = oneOf(string(st.LastExit.Reason), exitReasons)
		}
		m.restarts.WithLabelValues(reason).Add(float64(n))
		m.seenRestarts = st.Restarts
	}
	if st.State == api.GatewayReady && !st.StartedAt.IsZero() && !st.ReadySince.IsZero() && !st.StartedAt.Equal(m.seenReady) {
		m.seenReady = st.StartedAt
		m.startDuration.Observe(seconds(st.ReadySince.Sub(st.StartedAt)))
	}
}

// RestartEnded observes a coordinated restart that ended.
func (m *Metrics) RestartEnded(r api.RestartResult) {
	if m == nil {
		return
	}
	m.restartDur.Observe(seconds(time.Duration(r.DurationMs) * time.Millisecond))
	if r.Mode == "deferred" || r.DeferredMs > 0 {
		m.deferral.Observe(seconds(time.Duration(r.DeferredMs) * time.Millisecond))
	}
	if r.Forced {
		m.forced.Inc()
	}
}

// Pulse counts a heartbeat outcome of a configured agent.
func (m *Metrics) Pulse(agent string, status api.RunStatus) {
	if m == nil {
		return
	}
	m.pulses.WithLabelValues(agent, oneOf(string(status), pulseStatuses)).Inc()
}

// PulseLate observes how late a pulse of a configured agent started.
func (m *Metrics) PulseLate(agent string, late time.Duration) {
	if m == nil {
		return
	}
	m.pulseLate.WithLabelValues(agent).Observe(seconds(late))
}

// Attempt counts one delivery send to a configured sink; sinceEnqueue is observed when it
// was delivered.
func (m *Metrics) Attempt(sink, result, class string, sinceEnqueue time.Duration) {
	if m == nil {
		return
	}
	result = oneOf(result, AttemptResults)
	m.attempts.WithLabelValues(sink, result, oneOf(class, AttemptClasses)).Inc()
	if result == "delivered" {
		m.delivered.WithLabelValues(sink).Observe(seconds(sinceEnqueue))
	}
}

// DeadLetter counts a delivery dead-lettered.
func (m *Metrics) DeadLetter(reason string) {
	if m == nil {
		return
	}
	m.dead.WithLabelValues(oneOf(reason, DeadReasons)).Inc()
}

// RecoveryPass counts a recovery pass and its entries by outcome.
func (m *Metrics) RecoveryPass(s api.RecoverySummary) {
	if m == nil {
		return
	}
	m.passes.Inc()
	for o, n := range map[string]int{
		"recovered": s.Recovered, "failed": s.Failed, "interrupted": s.Interrupted,
		"skipped_max_retries": s.SkippedMaxRetries, "expired": s.Expired,
		"deferred_backoff": s.DeferredBackoff, "deferred_not_ready": s.DeferredNotReady,
		"deferred_budget": s.DeferredBudget, "deferred_error": s.DeferredError, "already_gone": s.AlreadyGone,
	} {
		m.recovered.WithLabelValues(o).Add(float64(n))
	}
}

// Commit observes a delivery store commit: its duration when it succeeded, its kind
// (CommitErrorKinds) when it failed.
func (m *Metrics) Commit(took time.Duration, errKind string) {
	if m == nil {
		return
	}
	if errKind == "" {
		m.commitDur.Observe(seconds(took))
		return
	}
	m.commitErrs.WithLabelValues(oneOf(errKind, CommitErrorKinds)).Inc()
}

// CronEnded counts a cron task of a configured job that ended in state.
func (m *Metrics) CronEnded(job string, state api.TaskState) {
	if m == nil {
		return
	}
	m.cronRuns.WithLabelValues(job, oneOf(string(state), cronEndStates)).Inc()
}

// CronLate observes how late a cron task of a configured job started.
func (m *Metrics) CronLate(job string, late time.Duration) {
	if m == nil {
		return
	}
	m.cronLate.WithLabelValues(job).Observe(seconds(late))
}

// seconds is d in seconds, never negative (a wall clock stepped back is not "early").
func seconds(d time.Duration) float64 { return max(d, 0).Seconds() }
