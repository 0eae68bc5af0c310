package heartbeat

import (
	"fmt"
	"time"
)

const (
	// saveDelay batches state writes; SetEnabled and shutdown write at once.
	saveDelay = 5 * time.Second
	// saveBudget spaces timed state writes by this many times the last write's duration,
	// so that writing the state of many agents takes at most 0.05 % of a core. What a crash
	// loses is that much of the agents' last outcomes and run starts; their schedules are
	// epoch-aligned and never lost.
	saveBudget = 2000
)

// flush saves the state if it changed.
func (s *Service) flush() error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.Lock()
	if !s.dirty {
		s.mu.Unlock()
		return nil
	}
	st := s.snapshotLocked()
	s.dirty = false
	s.mu.Unlock()
	if err := s.store.Save(st); err != nil {
		s.mu.Lock()
		s.dirty = true
		s.mu.Unlock()
		return fmt.Errorf("save heartbeat state: %w", err)
	}
	return nil
}

// snapshotLocked is what the state file keeps. It shares the agents' last run, event and
// run starts: those are replaced, never modified in place.
func (s *Service) snapshotLocked() State {
	st := State{Version: StateVersion, Seed: s.seed, Enabled: s.switchVal, Agents: make(map[string]AgentState, len(s.order))}
	for _, a := range s.order {
		as := AgentState{Last: a.last, Event: a.event, Starts: a.starts}
		if a.runs {
			as.IntervalMS, as.PhaseMS, as.NextDueAt = a.interval.Milliseconds(), a.phase.Milliseconds(), a.nextDue
		}
		st.Agents[a.id] = as
	}
	return st
}

// setSaveArmed records whether Run's save timer is set and reports whether that changed.
func (s *Service) setSaveArmed(on bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := s.saveArmed != on
	s.saveArmed = on
	return changed
}

func (s *Service) isDirty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dirty
}
