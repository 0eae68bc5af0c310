package cron

import (
	"context"
	"fmt"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// Status is the `cron` block of the status.
func (s *Service) Status() api.Cron {
	var c api.Cron
	_ = s.call(context.Background(), true, func() error {
		queued := -s.running
		for _, j := range s.jobs {
			queued += len(j.active)
		}
		c = api.Cron{Jobs: make([]api.CronJob, 0, len(s.order)), Workers: s.cfg.Workers, Running: s.running,
			Queued: queued, QueueSize: s.cfg.QueueSize, QueueFull: s.queueFull,
			StoreState: api.StoreNotOpened}
		if s.st != nil {
			c.Store, c.StoreState = s.st.Where(), api.StoreOpen
		}
		for _, j := range s.order {
			c.Jobs = append(c.Jobs, s.jobStatus(j))
		}
		return nil
	})
	return c
}

func (s *Service) jobStatus(j *jobState) api.CronJob {
	js := api.CronJob{Name: j.def.Name, Schedule: j.def.Schedule.String(), OffsetMS: j.offset.Milliseconds(),
		Enabled: j.enabled(), ConsecutiveFailures: j.row.Failures, Active: len(j.active)}
	if j.def.Location != nil {
		js.Timezone = j.def.Location.String()
	}
	if js.Enabled && !j.next.IsZero() {
		at := j.next.Add(j.offset)
		js.NextRunAt = &at
	}
	if r := j.row.Retry; r != nil && js.Enabled {
		at := r.At
		js.RetryAt = &at
	}
	switch {
	case js.Enabled:
	case j.row.DisabledReason != "":
		js.DisabledReason = j.row.DisabledReason
	case j.row.Enabled != nil:
		js.DisabledReason = "disabled by request"
	default:
		js.DisabledReason = "disabled in the config"
	}
	if j.last != nil {
		l := *j.last
		js.Last = &l
	}
	return js
}

// Job is one job's status, settings, next five runs and history (newest first).
func (s *Service) Job(ctx context.Context, name string) (api.CronJobDetail, error) {
	var d api.CronJobDetail
	err := s.call(ctx, true, func() error {
		j := s.jobs[name]
		if j == nil || j.removed {
			return fmt.Errorf("%w: %q", ErrUnknownJob, name)
		}
		def := j.def
		d = api.CronJobDetail{CronJob: s.jobStatus(j), Action: def.Action.Kind(), JitterMS: def.Jitter.Milliseconds(),
			Missed: string(def.Missed), Concurrency: string(def.Concurrency),
			StartingDeadlineMS: def.StartingDeadline.Milliseconds(), DisableAfter: def.DisableAfter,
			HistoryLimit: def.HistoryLimit, Priority: def.Priority, TimeoutMS: def.Timeout.Milliseconds(),
			Retry: api.CronRetry{Max: def.Retry.Max, ScheduleMS: []int64{}}}
		for _, w := range def.Retry.Schedule {
			d.Retry.ScheduleMS = append(d.Retry.ScheduleMS, w.Milliseconds())
		}
		for _, r := range nextRuns(j, s.wall(), 5) {
			d.Next = append(d.Next, r.At)
		}
		return nil
	})
	if err != nil {
		return d, err
	}
	list, err := s.Tasks(ctx, TaskFilter{Job: name, Limit: min(d.HistoryLimit, 1000)})
	d.History = list.Tasks
	return d, err
}

// Next lists the job's next n run instants after from (stagger offset included), in UTC and
// in the job's zone: the way to check a DST rule.
func (s *Service) Next(ctx context.Context, name string, from time.Time, n int) (api.CronNextReply, error) {
	var r api.CronNextReply
	err := s.call(ctx, true, func() error {
		j := s.jobs[name]
		if j == nil || j.removed {
			return fmt.Errorf("%w: %q", ErrUnknownJob, name)
		}
		r = api.CronNextReply{Name: name, From: from, Runs: nextRuns(j, from, n)}
		if j.def.Location != nil {
			r.Timezone = j.def.Location.String()
		}
		return nil
	})
	return r, err
}

// nextRuns are j's first n run instants after from.
func nextRuns(j *jobState, from time.Time, n int) []api.CronInstant {
	loc := j.def.Location
	if loc == nil {
		loc = time.UTC
	}
	runs := []api.CronInstant{}
	for t := from.Add(-j.offset); len(runs) < n; {
		if t = step(j.def.Schedule, t); t.IsZero() {
			break
		}
		at := t.Add(j.offset)
		runs = append(runs, api.CronInstant{At: at.UTC(), Local: at.In(loc).Format(time.RFC3339)})
	}
	return runs
}
