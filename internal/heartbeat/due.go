package heartbeat

import (
	"container/heap"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
)

const (
	// maxSleep caps every scheduler sleep so a wall-clock jump or a suspend is noticed
	// within it (P21): due times are wall-clock instants, timers run on the monotonic clock.
	maxSleep = 30 * time.Second
	// clockStepBack is how far the wall clock may step back between two scheduler passes
	// before the schedule is rebased (R-ENV-01).
	clockStepBack = 2 * time.Second
)

// agentHeap is a container/heap of agents, earliest at first. pos is where an agent keeps
// its index in the heap (-1 when it is not in it), so a changed or removed agent is found
// without a search.
type agentHeap struct {
	list []*agent
	at   func(*agent) time.Time
	pos  func(*agent) *int
}

// newDueHeap orders running agents by their next due time.
func newDueHeap() agentHeap {
	return agentHeap{at: func(a *agent) time.Time { return a.nextDue }, pos: func(a *agent) *int { return &a.dueIdx }}
}

// newDeferHeap orders agents with a deferred wake by the time it may run.
func newDeferHeap() agentHeap {
	return agentHeap{at: func(a *agent) time.Time { return a.deferred.at }, pos: func(a *agent) *int { return &a.deferIdx }}
}

func (h *agentHeap) Len() int           { return len(h.list) }
func (h *agentHeap) Less(i, j int) bool { return h.at(h.list[i]).Before(h.at(h.list[j])) }

func (h *agentHeap) Swap(i, j int) {
	h.list[i], h.list[j] = h.list[j], h.list[i]
	*h.pos(h.list[i]), *h.pos(h.list[j]) = i, j
}

func (h *agentHeap) Push(x any) {
	a := x.(*agent)
	*h.pos(a) = len(h.list)
	h.list = append(h.list, a)
}

func (h *agentHeap) Pop() any {
	n := len(h.list) - 1
	a := h.list[n]
	h.list[n] = nil
	h.list = h.list[:n]
	*h.pos(a) = -1
	return a
}

// set adds a, or moves it to its place after its time changed.
func (h *agentHeap) set(a *agent) {
	if i := *h.pos(a); i >= 0 {
		heap.Fix(h, i)
	} else {
		heap.Push(h, a)
	}
}

// remove takes a out of the heap if it is in it.
func (h *agentHeap) remove(a *agent) {
	if i := *h.pos(a); i >= 0 {
		heap.Remove(h, i)
	}
}

// first is the earliest time in the heap; ok is false when it is empty.
func (h *agentHeap) first() (at time.Time, ok bool) {
	if len(h.list) == 0 {
		return time.Time{}, false
	}
	return h.at(h.list[0]), true
}

// dueBy reports whether the earliest agent's time is at or before now.
func (h *agentHeap) dueBy(now time.Time) bool {
	at, ok := h.first()
	return ok && !at.After(now)
}

// dueAt lists the agents whose time is at or before now, earliest first (ties by id). It
// walks only the part of the heap that is due: in container/heap's layout the children
// of entry i, 2i+1 and 2i+2, are never earlier than i.
func (h *agentHeap) dueAt(now time.Time) []*agent {
	var out []*agent
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(h.list) || h.at(h.list[i]).After(now) {
			continue
		}
		out = append(out, h.list[i])
		stack = append(stack, 2*i+1, 2*i+2)
	}
	slices.SortFunc(out, func(x, y *agent) int {
		if c := h.at(x).Compare(h.at(y)); c != 0 {
			return c
		}
		return strings.Compare(x.id, y.id)
	})
	return out
}

func (s *Service) setDue(a *agent, t time.Time) {
	a.nextDue = t.UTC()
	s.due.set(a)
}

func (s *Service) unschedule(a *agent) {
	s.due.remove(a)
	s.deferq.remove(a)
	a.deferred = nil
}

// timerDelay is how long the scheduler may sleep: until the next deferred wake or due
// agent (unless an interval wake is already queued), at most maxSleep so that wall-clock
// steps are noticed. ok is false when no agent is scheduled and no wake is deferred:
// nothing is due, ever, until the config or the switch changes (which pokes Run).
func (s *Service) timerDelay() (d time.Duration, ok bool) {
	s.mu.Lock()
	idle := s.due.Len() == 0 && s.deferq.Len() == 0
	if idle {
		s.lastWall = time.Time{} // a step back while nothing runs needs no rebase
	}
	s.mu.Unlock()
	if idle {
		return 0, false
	}
	now := s.wall()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchClockLocked(now)
	d = maxSleep
	if at, ok := s.deferq.first(); ok {
		d = min(d, at.Sub(now))
	}
	if at, ok := s.due.first(); ok && !s.awaiting {
		d = min(d, at.Sub(now))
	}
	return max(d, 0), true
}

// onTimer re-issues deferred wakes that are due and requests an interval wake when an
// agent is due. With heartbeats switched off, due agents just move to their next slot.
func (s *Service) onTimer() {
	now := s.wall()
	var wakes []Wake
	s.mu.Lock()
	s.watchClockLocked(now)
	for s.deferq.dueBy(now) {
		a := heap.Pop(&s.deferq).(*agent)
		wakes = append(wakes, Wake{Reason: a.deferred.reason, AgentID: a.id, SessionKey: a.deferred.session})
		a.deferred = nil
	}
	interval := false
	if s.due.dueBy(now) {
		switch {
		case !s.enabledLocked():
			for s.due.dueBy(now) {
				a := s.due.list[0]
				s.setDue(a, advanceDue(now, KindInterval, a.interval, a.phase, a.window.Within))
			}
			s.dirty = true
		case !s.awaiting:
			s.awaiting = true
			interval = true
		}
	}
	s.mu.Unlock()
	for _, w := range wakes {
		s.disp.Request(w, 0)
	}
	if interval {
		s.disp.Request(Wake{Reason: ReasonInterval}, 0)
	}
}

// watchClockLocked notices the wall clock stepping back. Due times are wall instants, so
// after a step back of an hour they would sit an hour too far out, and run starts recorded
// before it would lie in the future and hold the cooldown gate shut. The schedule is
// rebased: fresh slots, future run starts dropped, deferred wakes released.
func (s *Service) watchClockLocked(now time.Time) {
	prev := s.lastWall
	s.lastWall = now
	if prev.IsZero() || !now.Before(prev.Add(-clockStepBack)) {
		return
	}
	s.log.Warn("wall clock stepped back; heartbeat schedule rebased", zap.Duration("step", prev.Sub(now)))
	for _, a := range s.order {
		if !a.runs {
			continue
		}
		if i := slices.IndexFunc(a.starts, func(t time.Time) bool { return t.After(now) }); i >= 0 {
			a.starts = slices.Clone(a.starts[:i])
		}
		s.setDue(a, SeekActive(NextSlot(now, a.interval, a.phase), a.interval, a.window.Within))
		if a.deferred != nil && a.deferred.at.After(now) {
			a.deferred.at = now
			s.deferq.set(a)
		}
	}
	s.dirty = true
}
