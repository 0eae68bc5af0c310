package cron

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/cron/schedule"
	"github.com/schedd/schedd/internal/store"
)

const (
	// maxSleep caps every sleep while something is scheduled, so that a wall-clock jump or
	// a suspend is noticed within it: due instants are wall instants, timers run on the
	// monotonic clock. With nothing scheduled the loop has no timer at all.
	maxSleep = 30 * time.Second
	// missedAfter is how late a slot may be seen and still count as on time; later, it was
	// missed (schedd was down, the host slept, the clock jumped) and the missed policy
	// applies.
	missedAfter = time.Minute
	// countLimit bounds how many missed slots are counted, for the record (as Kubernetes'
	// 100): past it the count says "at least".
	countLimit = 100
	// clockStepBack is how far the wall clock may step back between two passes before
	// pending retries are pulled in.
	clockStepBack = 2 * time.Second
)

// Run schedules and runs the jobs until ctx ends, then lets running tasks finish for
// Config.Drain, cancels the rest (they are retried after the restart), commits and closes
// the store. Queued tasks stay queued in the store and run after the restart. It may be
// called once; it returns nil on a clean stop and an error wrapping ErrStore when the store
// could not commit.
func (s *Service) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.phase != phaseNew {
		s.mu.Unlock()
		return ErrRunning
	}
	s.phase = phaseRunning
	s.mu.Unlock()
	defer s.stopped()

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	err := s.turn(nil)
	rearm := true
	for err == nil {
		if rearm {
			s.arm(timer)
		}
		rearm = true
		var reqs []*request
		select {
		case <-ctx.Done():
			return s.drain(s.cfg.Drain)
		case <-timer.C:
			if rest := time.Until(s.wakeAt); rest > 0 { // the first sleep of a long one
				timer.Reset(rest)
				rearm = false
				continue
			}
			s.tick()
		case r := <-s.results:
			s.finish(r)
			s.takeResults()
		case r := <-s.reqs:
			if ferr := r.fn(); ferr != nil {
				r.done <- ferr
			} else {
				reqs = append(reqs, r)
			}
		}
		err = s.turn(reqs)
	}
	s.log.Error("cron stops: its store failed", zap.Error(err))
	_ = s.drain(0)
	return err
}

// turn takes over the tasks found in the store, starts what can start, commits, and then
// answers the requests with the commit's result.
func (s *Service) turn(reqs []*request) error {
	if len(s.recoverQ) > 0 {
		s.recover()
	}
	s.dispatch()
	err := s.flush()
	for _, r := range reqs {
		if err == nil && r.then != nil {
			r.then()
		}
		r.done <- err
	}
	return err
}

// takeResults takes the results that are already there, so that they commit together.
func (s *Service) takeResults() {
	for {
		select {
		case r := <-s.results:
			s.finish(r)
		default:
			return
		}
	}
}

// arm sets the timer for the next wake, at most maxSleep away, or stops it when nothing is
// scheduled: an idle daemon is never woken by cron.
func (s *Service) arm(timer *time.Timer) {
	if len(s.due) == 0 {
		timer.Stop()
		return
	}
	now := s.wall()
	s.watchClock(now)
	s.reserveTasks()
	d := max(min(s.due[0].wake.Sub(now), maxSleep), 0)
	s.wakeAt = time.Now().Add(d)
	timer.Reset(firstSleep(d))
}

// firstSleep is how long the loop sleeps first for a wake d away. Linux ends a sleep in
// epoll_wait, where the Go runtime waits for its timers, up to 0.1 % of its length late
// (10 ms after 10 s); so a sleep of more than a second ends 0.2 % early, and the loop
// sleeps the rest (µs of slack) before it looks at the clock: the wake is on time.
func firstSleep(d time.Duration) time.Duration {
	if d > time.Second {
		return d - d/500
	}
	return d
}

// clockEvery is how many jobs a pass handles per read of the clock. A pass over thousands
// of jobs records when each run was queued, to within the work of that many jobs (a few
// µs), without a read for every job.
const clockEvery = 32

// tick handles every job whose wake time has come, in the due heap's order (wake time, then
// config order), and then the jobs that came due meanwhile too.
func (s *Service) tick() {
	now := s.wall()
	s.watchClock(now)
	defer func() { s.passMono = time.Time{} }()
	for len(s.due) > 0 && !s.due[0].wake.After(now) {
		batch := s.dueBy(now)
		s.heapStale = bulkHeap(len(batch), len(s.due))
		for i, j := range batch {
			if i%clockEvery == 0 {
				if i > 0 {
					now = s.wall()
				}
				s.passMono = time.Now()
			}
			if !j.next.IsZero() && !j.next.Add(j.offset).After(now) {
				s.onSlots(j, now)
			}
			if r := j.row.Retry; r != nil && !r.At.After(now) {
				s.runRetry(j, now)
			}
			s.reschedule(j) // past now: the slot and the retry were consumed
		}
		if s.heapStale {
			s.heapStale = false
			heap.Init(&s.due)
		}
		s.batch = batch[:0]
		clear(batch)
		now = s.wall()
	}
}

// onSlots handles a job's slots that are due by now: usually one, on time; after downtime
// or a jump of the clock, possibly many. Whatever their number, at most one run comes of
// them, and the last of them is persisted as handled.
func (s *Service) onSlots(j *jobState, now time.Time) {
	sc := j.def.Schedule
	upTo := now.Add(-j.offset) // a slot is due once slot+offset <= now
	first, newest, n := j.next, j.next, 1
	if nx := s.step(sc, newest); nx.IsZero() || nx.After(upTo) {
		j.next = nx
	} else {
		newest = newestUpTo(sc, nx, upTo)
		n = countSlots(sc, j.row.LastSlot, upTo)
		j.next = step(sc, newest)
	}
	j.row.LastSlot = newest
	s.markJob(j)
	onTime := now.Sub(newest.Add(j.offset)) <= missedAfter
	missed := n - 1
	if !onTime {
		missed = n
	}
	// The run to come (or the missed slots) stands for the job's work now: an older retry is
	// moot.
	s.dropRetry(j, api.ReasonSuperseded, now)
	if missed == 0 {
		s.admitSlot(j, api.KindScheduled, newest, now)
		return
	}
	last := newest
	if onTime {
		last = first // the slot before the newest one is not known; the first missed one is
	}
	count := fmt.Sprint(missed)
	if n >= countLimit {
		count = "at least " + count
	}
	s.log.Warn("cron job missed runs", zap.String("job", j.def.Name), zap.String("missed", count),
		zap.Time("since", first), zap.String("policy", string(j.def.Missed)))
	if j.def.Missed == MissedSkip {
		t := s.newTask(j, api.KindCatchUp, "", 1, last, last.Add(j.offset), now)
		t.Err = fmt.Sprintf("%s missed runs, the first for slot %s", count, first.Format(time.RFC3339))
		s.end(t, api.TaskSkipped, api.ReasonMissed, now)
		if onTime {
			s.admitSlot(j, api.KindScheduled, newest, now)
		}
		return
	}
	s.admitSlot(j, api.KindCatchUp, newest, now)
}

// newestUpTo is the last slot of sc at or before upTo, given that from is one: found by
// looking back from upTo in doubling windows, without walking every missed slot.
func newestUpTo(sc schedule.Schedule, from, upTo time.Time) time.Time {
	for w := time.Minute; ; w *= 2 {
		lo := upTo.Add(-w)
		if !lo.After(from) {
			return walkUpTo(sc, from, upTo)
		}
		if s := step(sc, lo); !s.IsZero() && !s.After(upTo) {
			return walkUpTo(sc, s, upTo)
		}
	}
}

// walkUpTo follows the slots from s while they are at or before upTo.
func walkUpTo(sc schedule.Schedule, s, upTo time.Time) time.Time {
	for {
		n := step(sc, s)
		if n.IsZero() || n.After(upTo) {
			return s
		}
		s = n
	}
}

// countSlots counts the slots in (after, upTo], up to countLimit.
func countSlots(sc schedule.Schedule, after, upTo time.Time) int {
	n := 0
	for s := step(sc, after); !s.IsZero() && !s.After(upTo) && n < countLimit; s = step(sc, s) {
		n++
	}
	return max(n, 1)
}

// watchClock notices the wall clock stepping back: a pending retry would then wait longer
// than its wait, so it is pulled in to now plus its wait. Slots need nothing: they are wall
// instants, and one handled is never run again.
func (s *Service) watchClock(now time.Time) {
	back := s.lastWall.Sub(now) // hugely negative at the first pass
	s.lastWall = now
	if back <= clockStepBack {
		return
	}
	s.log.Warn("wall clock stepped back", zap.Duration("step", back))
	for _, j := range s.jobs {
		if r := j.row.Retry; r != nil && r.At.After(now.Add(r.Wait)) {
			r.At = now.Add(r.Wait)
			s.markJob(j)
			s.reschedule(j)
		}
	}
}

// recover takes over the tasks the store held as active: a running one was cut off by a
// crash and is lost (a transient failure, retried per the job's policy); a queued one never
// started and is queued again, attempt unchanged.
func (s *Service) recover() {
	now := s.wall()
	for _, t := range s.recoverQ {
		j := s.jobs[t.Job]
		if j != nil {
			j.active = append(j.active, t)
		}
		switch {
		case t.State == api.TaskRunning:
			o := outcome{state: api.TaskLost, class: Transient, err: "schedd stopped while the task was running"}
			t.apply(o)
			s.end(t, api.TaskLost, "", now)
			s.log.Warn("cron task lost", zap.String("job", t.Job), zap.Int64("task", t.ID), zap.Int("attempt", t.Attempt))
			if j != nil {
				s.failed(j, t, o)
			}
		case j == nil || j.removed:
			s.end(t, api.TaskCancelled, api.ReasonRemoved, now)
		default:
			s.admit(j, t, now)
		}
	}
	s.recoverQ = nil
}

// flush commits what changed, then starts the tasks that were dispatched and tells the
// waiters of the tasks that ended. A task is started only once its running state is
// committed, so a crash leaves it running in the store and it is found lost.
func (s *Service) flush() error {
	b := store.TaskBatch{Prunes: s.prunes, Tasks: make([]*store.Task, 0, len(s.dirtyT)), Jobs: make([]*store.CronJob, 0, len(s.dirtyJ))}
	written := make([]*task, 0, len(s.dirtyT))
	for _, t := range s.dirtyT {
		t.dirty = false
		if t.RunKey == "" {
			t.RunKey = s.keyText.key(t.Job, t.Slot)
		}
		b.Tasks = append(b.Tasks, &t.Task)
		written = append(written, t)
	}
	for _, j := range s.dirtyJ {
		j.dirty = false
		r := j.row
		b.Jobs = append(b.Jobs, &r)
	}
	toStart, ended := s.toStart, s.ended
	// The dirty lists keep their arrays: a pass that marks 10,000 tasks and jobs does not
	// grow them again.
	clear(s.dirtyT)
	clear(s.dirtyJ)
	s.dirtyT, s.dirtyJ, s.toStart, s.ended, s.prunes = s.dirtyT[:0], s.dirtyJ[:0], nil, nil, map[string]int{}
	if !b.Empty() {
		if s.st == nil {
			return fmt.Errorf("%w: not open", ErrStore)
		}
		dups, pruned, err := s.st.Commit(context.Background(), &b, s.wall())
		if err != nil {
			// Not committed as running: they must not start.
			for _, t := range toStart {
				s.running--
				s.jobs[t.Job].running--
				t.cancel(nil)
			}
			return err
		}
		dup := make(map[*store.Task]bool, len(dups))
		for _, t := range dups {
			dup[t] = true
		}
		for _, t := range written {
			t.Stored = t.Stored || !dup[&t.Task]
		}
		for _, t := range written {
			if !dup[&t.Task] {
				continue
			}
			s.log.Warn("cron run already recorded: not run again", zap.String("job", t.Job),
				zap.String("run_key", t.RunKey), zap.Int("attempt", t.Attempt))
			s.forget(t)
		}
		for name, n := range pruned {
			if j := s.jobs[name]; j != nil {
				j.stored -= n
			}
		}
	}
	for _, t := range toStart {
		if t.Stored && t.State == api.TaskRunning {
			s.launch(t)
		}
	}
	for _, t := range ended {
		for _, ch := range s.waiters[t.ID] {
			ch <- t.API()
		}
		delete(s.waiters, t.ID)
	}
	return nil
}

// wait registers a waiter for the end of the task id.
func (s *Service) wait(id int64) chan api.Task {
	ch := make(chan api.Task, 1)
	s.waiters[id] = append(s.waiters[id], ch)
	return ch
}

// drain stops: no more dispatch, running tasks get grace to end, then their runs are
// cancelled; every result is committed.
func (s *Service) drain(grace time.Duration) error {
	close(s.stopping)
	var deadline <-chan time.Time
	if grace > 0 {
		t := time.NewTimer(grace)
		defer t.Stop()
		deadline = t.C
	} else {
		s.stopTasks(errStopping)
	}
	var errs []error
	for s.running > 0 {
		select {
		case r := <-s.results:
			s.finish(r)
			s.takeResults()
		case <-deadline:
			s.stopTasks(errStopping)
			deadline = nil
		case r := <-s.reqs:
			if r.readOnly {
				r.done <- r.fn()
			} else {
				r.done <- ErrStopped
			}
		}
		if err := s.flush(); err != nil {
			errs = append(errs, err)
		}
	}
	s.stopTasks(errStopping)
	return errors.Join(errs...)
}

// stopped ends Run: waiters are released and the store is closed; reads of the state are
// served from here on.
func (s *Service) stopped() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.phase = phaseStopped
	defer close(s.done)
	for id, chs := range s.waiters {
		for _, ch := range chs {
			close(ch)
		}
		delete(s.waiters, id)
	}
	s.closeStore()
	if s.ownClient {
		s.deps.HTTPClient.CloseIdleConnections()
	}
}
