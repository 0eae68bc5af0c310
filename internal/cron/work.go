package cron

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store"
)

// newTask creates a queued task of j; the caller admits or ends it. An empty key is the
// slot's run key, formatted when the task is first written (flush), not in the pass.
func (s *Service) newTask(j *jobState, kind api.TaskKind, key string, attempt int, slot, due, now time.Time) *task {
	t := s.spareTask()
	*t = task{Task: store.Task{ID: s.nextID, Job: j.def.Name, Kind: kind, RunKey: key, Attempt: attempt, Slot: slot, Due: due,
		State: api.TaskQueued, Queued: now, Host: s.cfg.Host}, qidx: -1}
	s.nextID++
	j.active = append(j.active, t)
	j.stored++
	s.markTask(t)
	return t
}

func (s *Service) admitSlot(j *jobState, kind api.TaskKind, slot, now time.Time) {
	s.admit(j, s.newTask(j, kind, "", 1, slot, slot.Add(j.offset), now), now)
}

// admit puts a new task of j in the queue, or ends it as skipped when it may not run: past
// its starting deadline, an overlap under forbid, or a full queue. Under replace the job's
// other active tasks are cancelled.
func (s *Service) admit(j *jobState, t *task, now time.Time) {
	if s.pastDeadline(j, t, now) {
		return
	}
	if len(j.active) > 1 {
		switch j.def.Concurrency {
		case Forbid:
			s.end(t, api.TaskSkipped, api.ReasonOverlap, now)
			return
		case Replace:
			for _, a := range slices.Clone(j.active) { // end takes a out of j.active
				switch {
				case a == t:
				case a.State == api.TaskQueued:
					s.dequeue(a)
					s.end(a, api.TaskCancelled, api.ReasonReplaced, now)
				default:
					a.cancel(errReplaced)
				}
			}
		}
	}
	// The workers that are free take tasks from the queue at the end of this turn.
	if s.q.Len() >= s.cfg.QueueSize+s.cfg.Workers-s.running {
		s.queueFull++
		s.end(t, api.TaskSkipped, api.ReasonQueueFull, now)
		s.log.Warn("cron queue full: task skipped", zap.String("job", t.Job), zap.Int64("task", t.ID),
			zap.Int("queue_size", s.cfg.QueueSize))
		return
	}
	s.q.push(t, j.def.Priority, s.monoNow())
}

// monoNow is the monotonic clock that ranks queued tasks: within a pass, its reading beside
// the pass's wall clock, as their queued_at is.
func (s *Service) monoNow() time.Time {
	if !s.passMono.IsZero() {
		return s.passMono
	}
	return time.Now()
}

// pastDeadline ends t as skipped if it could not start within its job's starting deadline.
func (s *Service) pastDeadline(j *jobState, t *task, now time.Time) bool {
	if dl := j.def.StartingDeadline; dl > 0 && now.Sub(t.Due) > dl {
		s.end(t, api.TaskSkipped, api.ReasonDeadline, now)
		return true
	}
	return false
}

// dequeue takes a queued task out of the queue (or out of its job's hold).
func (s *Service) dequeue(t *task) {
	s.q.remove(t)
	if j := s.jobs[t.Job]; j != nil && j.held == t {
		j.held = nil
	}
}

// dispatch starts queued tasks, best first, while workers are free. Their start is
// committed before their actions run (flush).
func (s *Service) dispatch() {
	if s.draining() {
		return
	}
	for s.running < s.cfg.Workers {
		t := s.q.pop()
		if t == nil {
			return
		}
		j := s.jobs[t.Job]
		now := s.wall()
		if s.pastDeadline(j, t, now) {
			continue
		}
		if j.def.Concurrency == Replace && j.running > 0 {
			j.held = t // starts when the run it replaces has ended
			continue
		}
		t.State, t.Started, t.Host = api.TaskRunning, now, s.cfg.Host
		s.cfg.Observe.late(t.Job, now.Sub(t.Due))
		s.markTask(t)
		s.running++
		j.running++
		t.ctx, t.cancel = context.WithCancelCause(s.taskCtx)
		s.toStart = append(s.toStart, t)
	}
}

func (s *Service) draining() bool {
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}

// result is how a task's run ended, sent by its worker to the loop.
type result struct {
	t     *task
	o     outcome
	ended time.Time
}

// launch starts the worker goroutine of a dispatched task.
func (s *Service) launch(t *task) {
	ctx := t.ctx
	t.ctx = nil
	def := s.jobs[t.Job].def
	timeout := def.Timeout
	if a, ok := def.Action.(interface{ actionTimeout() time.Duration }); ok && a.actionTimeout() > 0 {
		timeout = a.actionTimeout()
	}
	info, cancel := t.info(timeout), t.cancel
	go func() {
		defer cancel(nil)
		o := s.runAction(ctx, def.Action, info, timeout)
		s.results <- result{t: t, o: o, ended: s.wall()}
	}()
}

// runAction runs one action under its timeout; a panic is a permanent failure.
func (s *Service) runAction(ctx context.Context, a Action, info RunInfo, timeout time.Duration) (o outcome) {
	defer func() {
		if p := recover(); p != nil {
			o = outcome{state: api.TaskFailed, class: Permanent, err: fmt.Sprintf("panic: %v", p)}
		}
	}()
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimedOut)
	defer cancel()
	res, err := a.Run(ctx, &s.deps, info)
	return judge(ctx, timeout, res, err)
}

func (a *Exec) actionTimeout() time.Duration { return a.Timeout }
func (a *HTTP) actionTimeout() time.Duration { return a.Timeout }

// finish records a run's result: the task ends, the job's failure count and retry follow.
func (s *Service) finish(r result) {
	t := r.t
	if t.State != api.TaskRunning { // forgotten (forget)
		return
	}
	j := s.jobs[t.Job]
	s.running--
	j.running--
	t.apply(r.o)
	s.end(t, r.o.state, r.o.reason, r.ended)
	switch {
	case r.o.state == api.TaskSucceeded:
		if j.row.Failures != 0 {
			j.row.Failures = 0
			s.markJob(j)
		}
	case r.o.failure():
		s.failed(j, t, r.o)
	}
	if h := j.held; h != nil && j.running == 0 {
		j.held = nil
		s.q.push(h, j.def.Priority, time.Now())
	}
	s.forgetIfIdle(j)
}

// failed counts a failure of j and schedules its retry, or disables j after DisableAfter
// failures in a row.
func (s *Service) failed(j *jobState, t *task, o outcome) {
	j.row.Failures++
	s.markJob(j)
	s.log.Warn("cron task failed", zap.String("job", t.Job), zap.Int64("task", t.ID), zap.Int("attempt", t.Attempt),
		zap.String("state", string(o.state)), zap.String("class", o.class.String()), zap.String("error", t.Err),
		zap.Int("failures", j.row.Failures))
	if j.removed || !j.enabled() {
		return
	}
	if n := j.def.DisableAfter; n > 0 && j.row.Failures >= n {
		last := t.Err
		if last == "" {
			last = string(o.state)
		}
		s.setEnabled(j, false, fmt.Sprintf("%d failures in a row; the last: %s", j.row.Failures, last))
		s.log.Error("cron job disabled after repeated failures; `schedd cron enable` turns it back on",
			zap.String("job", t.Job), zap.Int("failures", j.row.Failures), zap.String("error", last))
		return
	}
	if o.class != Transient || t.Attempt > j.def.Retry.Max {
		return
	}
	now := s.wall()
	s.dropRetry(j, api.ReasonSuperseded, now)
	wait := j.def.Retry.Schedule.After(j.row.Failures)
	j.row.Retry = &store.PendingRetry{At: t.Ended.Add(wait), Wait: wait, Of: t.ID, RunKey: t.RunKey, Attempt: t.Attempt + 1, Slot: t.Slot}
	s.reschedule(j)
}

// runRetry admits j's pending retry.
func (s *Service) runRetry(j *jobState, now time.Time) {
	r := j.row.Retry
	j.row.Retry = nil
	s.markJob(j)
	s.admit(j, s.newTask(j, api.KindRetry, r.RunKey, r.Attempt, r.Slot, r.At, now), now)
}

// dropRetry records j's pending retry, if any, as skipped for reason, and drops it.
func (s *Service) dropRetry(j *jobState, reason string, now time.Time) {
	r := j.row.Retry
	if r == nil {
		return
	}
	j.row.Retry = nil
	s.markJob(j)
	s.end(s.newTask(j, api.KindRetry, r.RunKey, r.Attempt, r.Slot, r.At, now), api.TaskSkipped, reason, now)
	s.reschedule(j)
}

// end ends t in state: it leaves the active tasks and becomes its job's last, and the job's
// history is pruned to its limit.
func (s *Service) end(t *task, state api.TaskState, reason string, at time.Time) {
	t.State, t.Reason, t.Ended = state, reason, at
	s.cfg.Observe.ended(t.Job, state)
	s.markTask(t)
	s.ended = append(s.ended, t)
	if j := s.jobs[t.Job]; j != nil {
		j.drop(t)
		j.last = store.LastOf(&t.Task)
		if over := j.stored - j.def.HistoryLimit; over > 0 {
			s.prunes[t.Job] = over
		}
	}
}

// forget drops a task whose (run key, attempt) the store already held: it must not run.
func (s *Service) forget(t *task) {
	s.q.remove(t)
	j := s.jobs[t.Job]
	if j == nil {
		return
	}
	j.drop(t)
	j.stored--
	if j.held == t {
		j.held = nil
	}
	if t.State == api.TaskRunning {
		s.running--
		j.running--
		t.cancel(nil)
		t.ctx = nil
	}
	t.State = api.TaskSkipped
}
