package heartbeat

import "github.com/schedd/schedd/internal/api"

// Status reports the global switch and every configured agent.
func (s *Service) Status() api.Heartbeat {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := api.Heartbeat{Enabled: s.enabledLocked(), Agents: make([]api.AgentStatus, 0, len(s.order)),
		NoAgentsConfigured: len(s.cfg.Agents) == 0}
	for _, a := range s.order {
		as := api.AgentStatus{ID: a.id, Enabled: a.runs, DisabledReason: a.why,
			IntervalMS: a.interval.Milliseconds(), Every: FormatEvery(a.interval)}
		if a.runs {
			due := a.nextDue
			as.NextDueAt = &due
		}
		if a.last != nil {
			last := *a.last
			as.Last = &last
		}
		if a.event != nil {
			ev := *a.event
			as.Event = &ev
		}
		as.ConfigError = a.configErr
		if !a.notBefore.IsZero() && a.notBefore.After(s.wall()) {
			until := a.notBefore
			as.RateLimitedUntil = &until
		}
		st.Agents = append(st.Agents, as)
	}
	return st
}
