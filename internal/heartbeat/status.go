package heartbeat

import "time"

// Status is the heartbeat block of the daemon's status (DESIGN.md).
type Status struct {
	Enabled bool          `json:"enabled"`
	Agents  []AgentStatus `json:"agents"`
}

// AgentStatus is one agent in Status, in config order.
type AgentStatus struct {
	ID             string     `json:"id"`
	Enabled        bool       `json:"enabled"`
	DisabledReason string     `json:"disabled_reason,omitempty"` // disabled | no interval | no target
	IntervalMS     int64      `json:"interval_ms"`
	NextDueAt      *time.Time `json:"next_due_at"`
	Last           *LastRun   `json:"last"`
	Event          *Event     `json:"event,omitempty"`
}

// Status reports the global switch and every configured agent.
func (s *Service) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Enabled: s.enabledLocked(), Agents: make([]AgentStatus, 0, len(s.order))}
	for _, a := range s.order {
		as := AgentStatus{ID: a.id, Enabled: a.runs, DisabledReason: a.why, IntervalMS: a.interval.Milliseconds()}
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
		st.Agents = append(st.Agents, as)
	}
	return st
}
