package cron

import (
	"container/heap"
	"math/bits"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/cron/schedule"
	"github.com/schedd/schedd/internal/store"
)

// jobState is a configured job with its persisted state and its active tasks.
type jobState struct {
	def     Job
	offset  time.Duration
	row     store.CronJob // what is persisted
	next    time.Time     // the next slot after row.lastSlot (without the offset); zero: none
	active  []*task       // in the order they were created
	running int
	held    *task // replace: a task waiting for the job's running ones to end
	last    *api.CronLast
	stored  int // the job's rows in the tasks table
	removed bool
	dirty   bool

	wake    time.Time // when the loop must look at the job: next slot or retry
	heapIdx int
	idx     int // in the config: jobs due together are queued in config order
}

// drop takes t out of j's active tasks.
func (j *jobState) drop(t *task) {
	if i := slices.Index(j.active, t); i >= 0 {
		j.active = slices.Delete(j.active, i, i+1)
	}
}

// enabled is the persisted switch, else the config's.
func (j *jobState) enabled() bool {
	if j.row.Enabled != nil {
		return *j.row.Enabled
	}
	return !j.def.Disabled
}

// minRefireGap is how far apart two slots of a job are at least when its schedule returns an
// instant that is not after the one asked about (P26): such a schedule cannot make a job
// spin.
const minRefireGap = 2 * time.Second

// step is the slot after t.
func step(sc schedule.Schedule, t time.Time) time.Time {
	n, ok := sc.Next(t)
	if !ok {
		return time.Time{}
	}
	if !n.After(t) {
		n = t.Add(minRefireGap)
	}
	return n.UTC()
}

// apply makes jobs (prepared) the configured set. Jobs keep their state by name.
func (s *Service) apply(jobs []Job) error {
	if len(jobs) > 0 {
		if err := s.ensureStore(); err != nil {
			return err
		}
	}
	now := s.wall()
	order := make([]*jobState, 0, len(jobs))
	keep := make(map[string]bool, len(jobs))
	for i, def := range jobs {
		j := s.jobs[def.Name]
		if j == nil {
			j = &jobState{heapIdx: -1, row: store.CronJob{Name: def.Name}}
			if r := s.rows[def.Name]; r != nil {
				delete(s.rows, def.Name)
				j.row, j.last, j.stored = *r, r.Last, r.Stored
			}
			s.jobs[def.Name] = j
		}
		j.def, j.removed, j.idx = def, false, i
		j.offset = 0
		if def.Jitter > 0 {
			j.offset = s.offsetOf(def.Name, def.Jitter)
		}
		sched := def.Schedule.String()
		if j.row.Schedule != sched || j.row.LastSlot.IsZero() {
			if j.row.Schedule != "" && j.row.Schedule != sched {
				s.log.Info("cron job schedule changed: it starts from now, without catching up",
					zap.String("job", def.Name), zap.String("was", j.row.Schedule), zap.String("schedule", sched))
			}
			// Persisted at once: a first slot missed while schedd is down is caught up.
			j.row.Schedule, j.row.LastSlot = sched, now
			s.markJob(j)
		}
		j.next = step(def.Schedule, j.row.LastSlot)
		s.reschedule(j)
		keep[def.Name] = true
		order = append(order, j)
	}
	for name, j := range s.jobs {
		if !keep[name] && !j.removed {
			s.remove(j, now)
		}
	}
	s.order = order
	return nil
}

// remove stops a job that is no longer configured: its queued tasks are cancelled, its
// pending retry is dropped, its running tasks finish. Its state stays for a later return.
func (s *Service) remove(j *jobState, now time.Time) {
	j.removed = true
	s.reschedule(j)
	s.dropRetry(j, api.ReasonRemoved, now)
	for _, t := range slices.Clone(j.active) { // end takes each out of j.active
		if t.State == api.TaskQueued {
			s.dequeue(t)
			s.end(t, api.TaskCancelled, api.ReasonRemoved, now)
		}
	}
	s.forgetIfIdle(j)
	s.log.Info("cron job removed", zap.String("job", j.def.Name))
}

// forgetIfIdle drops a removed job without active tasks; its row waits for its return.
func (s *Service) forgetIfIdle(j *jobState) {
	if !j.removed || len(j.active) > 0 {
		return
	}
	delete(s.jobs, j.def.Name)
	r := j.row
	r.Last, r.Stored = j.last, j.stored
	s.rows[j.def.Name] = &r
}

// setEnabled switches j and reports whether that changed it. reason is set when the
// service disables a job by itself.
func (s *Service) setEnabled(j *jobState, on bool, reason string) bool {
	was := j.enabled()
	now := s.wall()
	j.row.Enabled = &on
	j.row.DisabledReason = reason
	if on {
		j.row.Failures = 0
		if !was {
			// Slots that passed while it was off are not caught up.
			if now.After(j.row.LastSlot) {
				j.row.LastSlot = now
			}
			j.next = step(j.def.Schedule, j.row.LastSlot)
		}
	} else {
		s.dropRetry(j, api.ReasonDisabled, now)
	}
	s.markJob(j)
	s.reschedule(j)
	return was != on
}

// reschedule puts j in the due heap at its next slot or retry, whichever comes first, or
// takes it out when neither is pending.
func (s *Service) reschedule(j *jobState) {
	var w time.Time
	if !j.removed && j.enabled() {
		if !j.next.IsZero() {
			w = j.next.Add(j.offset)
		}
		if r := j.row.Retry; r != nil && (w.IsZero() || r.At.Before(w)) {
			w = r.At
		}
	}
	j.wake = w
	switch {
	case w.IsZero():
		if j.heapIdx >= 0 {
			heap.Remove(&s.due, j.heapIdx)
		}
	case j.heapIdx < 0:
		heap.Push(&s.due, j)
	default:
		s.due[j.heapIdx].wake, s.due[j.heapIdx].idx = w, j.idx
		if !s.heapStale { // else the pass rebuilds the heap once it is done
			heap.Fix(&s.due, j.heapIdx)
		}
	}
}

// dueBy is the jobs due by now, in the heap's order, still in the heap: the part of the
// heap whose wake is not after now hangs from its root, so it is found without popping.
func (s *Service) dueBy(now time.Time) []*jobState {
	found, oneWake := s.dueWalk(now)
	out := s.batch[:0]
	if oneWake && len(found) == len(s.due) {
		// Every scheduled job is due at one instant (a burst): they are in the config's
		// order already, without a sort.
		for _, j := range s.order {
			if j.heapIdx >= 0 {
				out = append(out, j)
			}
		}
		s.dueFound = found[:0]
		return out
	}
	// Config order, sorted as plain numbers: for a burst of 10,000 a tenth of the time of
	// comparing the jobs themselves.
	slices.Sort(found)
	for _, f := range found {
		out = append(out, s.due[uint32(f)].j)
	}
	if !oneWake { // after a downtime or a jump of the clock
		slices.SortStableFunc(out, func(a, b *jobState) int { return a.wake.Compare(b.wake) })
	}
	s.dueFound = found[:0]
	return out
}

// dueWalk finds the jobs of the due heap whose wake is not after now, each as its place in
// the config << 32 | its place in the heap, and reports whether they share one wake.
func (s *Service) dueWalk(now time.Time) (found []uint64, oneWake bool) {
	found = s.dueFound[:0]
	stack := append(s.dueStack[:0], 0)
	oneWake = true
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(s.due) || s.due[i].wake.After(now) {
			continue
		}
		e := s.due[i]
		oneWake = oneWake && e.wake.Equal(s.due[0].wake)
		found = append(found, uint64(e.idx)<<32|uint64(i))
		stack = append(stack, 2*i+2, 2*i+1)
	}
	s.dueStack = stack[:0]
	return found, oneWake
}

// reserveTasks allocates, while the loop waits for the next wake, a task for each job due
// at it, so that the pass allocates none: a burst of 10,000 jobs due at one instant then
// neither pays for 10,000 allocations nor sets off a collection of the heap, whose assists
// would slow the pass down, in its middle. It counts the jobs once per wake instant.
func (s *Service) reserveTasks() {
	w := s.due[0].wake
	if w.Equal(s.spareFor) {
		return
	}
	s.spareFor = w
	found, _ := s.dueWalk(w)
	n := len(found)
	s.dueFound = found[:0]
	if len(s.spare) > n { // a smaller pass than the last: the rest goes
		clear(s.spare[n:])
		s.spare = s.spare[:n]
	}
	for len(s.spare) < n {
		s.spare = append(s.spare, new(task))
	}
}

// spareTask is a task reserved before the pass, else a new one.
func (s *Service) spareTask() *task {
	n := len(s.spare)
	if n == 0 {
		return new(task)
	}
	t := s.spare[n-1]
	s.spare[n-1] = nil
	s.spare = s.spare[:n-1]
	return t
}

// bulkHeap reports whether a pass over k of the n jobs in the due heap rebuilds it once
// (about 2n comparisons) rather than fixing each job (about 2 log n each).
func bulkHeap(k, n int) bool { return k*bits.Len(uint(n)) > n }

// step is the package's step, shared by the jobs of a pass that have the same cron
// expression and zone and are at the same slot: a parsed expression does not change.
func (s *Service) step(sc schedule.Schedule, t time.Time) time.Time {
	c, ok := sc.(*schedule.Cron)
	if !ok {
		return step(sc, t)
	}
	m := &s.stepMemo
	if m.expr != c.String() || m.loc != c.Location() || !m.from.Equal(t) || m.from.IsZero() {
		*m = stepMemo{expr: c.String(), loc: c.Location(), from: t, next: step(sc, t)}
	}
	return m.next
}

type stepMemo struct {
	expr       string
	loc        *time.Location
	from, next time.Time
}

func (s *Service) markJob(j *jobState) {
	if !j.dirty {
		j.dirty = true
		s.dirtyJ = append(s.dirtyJ, j)
	}
}

func (s *Service) markTask(t *task) {
	if !t.dirty {
		t.dirty = true
		s.dirtyT = append(s.dirtyT, t)
	}
}

// dueHeap orders the scheduled jobs by wake time, then config order, with container/heap.
// Each entry holds a copy of its job's wake and place in the config, so that keeping the
// order reads no job.
type dueHeap []dueEntry

type dueEntry struct {
	wake time.Time
	idx  int
	j    *jobState
}

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(a, b int) bool {
	if c := h[a].wake.Compare(h[b].wake); c != 0 {
		return c < 0
	}
	return h[a].idx < h[b].idx
}
func (h dueHeap) Swap(a, b int) {
	h[a], h[b] = h[b], h[a]
	h[a].j.heapIdx, h[b].j.heapIdx = a, b
}

func (h *dueHeap) Push(x any) {
	j := x.(*jobState)
	j.heapIdx = len(*h)
	*h = append(*h, dueEntry{wake: j.wake, idx: j.idx, j: j})
}

func (h *dueHeap) Pop() any {
	old := *h
	n := len(old) - 1
	j := old[n].j
	old[n] = dueEntry{}
	*h = old[:n]
	j.heapIdx = -1
	return j
}
