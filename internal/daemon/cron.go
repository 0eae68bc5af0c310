package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/cron"
	"github.com/schedd/schedd/internal/deliveries"
	"github.com/schedd/schedd/internal/heartbeat"
	"github.com/schedd/schedd/internal/server"
	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/sqlite"
)

// cronUpdateTimeout bounds how long a reload waits for the cron loop to take the new jobs.
const cronUpdateTimeout = time.Minute

// cronService is what the daemon needs of cron: a Service on one host, a Fleet on a
// shared PostgreSQL database.
type cronService interface {
	server.Cron // what the control API reads and does
	Run(ctx context.Context) error
	PrepareUpdate(jobs []cron.Job) (apply func(ctx context.Context) error, err error)
}

// setupCron builds the cron component: the cron service runs cron.jobs from the config and
// keeps their tasks in the state dir (cron.db, opened with the first job: a daemon without
// jobs has no such file and no cron timer). With a Postgres delivery store the hosts of the
// database share the jobs instead: one of them runs them (cron.Fleet), with their tasks in
// that database. heartbeat_wake actions go to the heartbeat service and deliver actions to
// the delivery service, so it is set up after both.
func (d *Daemon) setupCron() (*component, error) {
	c := d.config()
	jobs, err := CronJobs(c.Cron)
	if err != nil {
		return nil, err
	}
	cfg := cron.Config{
		Jobs:      jobs,
		Workers:   c.Cron.Workers,
		QueueSize: c.Cron.QueueSize,
		Logger:    d.log.Named("cron"),
		Deps:      cron.Deps{Wake: d.cronWake, Deliver: d.cronDeliver, Environ: d.opts.Environ},
		Observe:   d.cronObserver(),
	}
	if dir := d.opts.StateDir; dir != "" {
		cfg.OpenStore = func(ctx context.Context) (store.TaskStore, error) {
			return sqlite.OpenTasks(ctx, filepath.Join(dir, sqlite.TasksFile), cfg.Logger)
		}
	}
	var svc cronService
	if db := d.fleetDB; db != nil {
		cfg.Host = db.HostID()
		svc, err = cron.NewFleet(cron.FleetConfig{Config: cfg, DB: db.Cron(), Opened: db.Opened(), Lease: db.HostLease()})
	} else {
		svc, err = cron.New(cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("cron: %w", err)
	}
	d.cron = svc
	started := c.Cron // what the job queue was built with
	return &component{
		name: "cron",
		run:  svc.Run,
		status: func(_ context.Context, st *api.Status) {
			cs := svc.Status()
			st.Cron = &cs
		},
		routes: func(srv *server.Server) { srv.AddCron(svc) },
		prepare: func(next *config.Config) (func(), error) {
			jobs, err := CronJobs(next.Cron)
			if err != nil {
				return nil, err
			}
			apply, err := svc.PrepareUpdate(jobs)
			if err != nil {
				return nil, err
			}
			return func() {
				ctx, cancel := context.WithTimeout(context.Background(), cronUpdateTimeout)
				defer cancel()
				if err := apply(ctx); err != nil {
					d.log.Error("config reload: cron kept its old jobs", zap.Error(err))
				}
				var later []string
				if next.Cron.Workers != started.Workers {
					later = append(later, "cron.workers")
				}
				if next.Cron.QueueSize != started.QueueSize {
					later = append(later, "cron.queue_size")
				}
				if len(later) > 0 {
					d.log.Warn("cron settings changed that apply only when schedd starts again", zap.Strings("settings", later))
				}
			}, nil
		},
	}, nil
}

// CronJobs turns the cron section of the config file (checked) into the cron service's
// jobs, value for value: a zero means the same to both.
func CronJobs(c config.Cron) ([]cron.Job, error) {
	jobs := make([]cron.Job, 0, len(c.Jobs))
	for i, j := range c.Jobs {
		sc, err := config.CronSchedule(j)
		if err != nil {
			return nil, fmt.Errorf("cron.jobs[%d] (%s): %w", i, j.Name, err)
		}
		job := cron.Job{
			Name:             j.Name,
			Schedule:         sc,
			Jitter:           j.Jitter.D(),
			Missed:           cron.Missed(j.Missed),
			StartingDeadline: j.StartingDeadline.D(),
			Concurrency:      cron.Concurrency(j.Concurrency),
			Retry:            cron.Retry{Max: j.Retry.Max},
			DisableAfter:     j.DisableAfter,
			HistoryLimit:     j.HistoryLimit,
			Priority:         j.Priority,
			Timeout:          j.Timeout.D(),
			Action:           cronAction(j.Action),
			Disabled:         !on(j.Enabled, true),
		}
		// A cron expression works in its zone (the host's by default); every and at only
		// show their times in one when it is given.
		if j.Schedule != "" || j.Timezone != "" {
			if job.Location, err = config.CronLocation(j.Timezone); err != nil {
				return nil, fmt.Errorf("cron.jobs[%d] (%s): %w", i, j.Name, err)
			}
		}
		for _, w := range j.Retry.Schedule {
			job.Retry.Schedule = append(job.Retry.Schedule, w.D())
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

// cronAction is the runtime's action for the one a job's config names.
func cronAction(a config.CronAction) cron.Action {
	switch {
	case a.HeartbeatWake != nil:
		return &cron.HeartbeatWake{Agent: a.HeartbeatWake.Agent, Reason: a.HeartbeatWake.Reason}
	case a.Exec != nil:
		return &cron.Exec{Command: slices.Clone(a.Exec.Command), Env: maps.Clone(a.Exec.Env), Timeout: a.Exec.Timeout.D()}
	case a.HTTP != nil:
		h := a.HTTP
		return &cron.HTTP{URL: h.URL, Method: h.Method, Headers: maps.Clone(h.Headers), Body: []byte(h.Body), Timeout: h.Timeout.D()}
	case a.Deliver != nil:
		return &cron.Deliver{Sink: a.Deliver.Sink, Data: []byte(a.Deliver.Data)}
	}
	return nil
}

// cronWake is the heartbeat_wake actions' way to the heartbeat dispatcher. An agent that is
// not configured (any more) is a permanent failure: retrying cannot make it appear.
func (d *Daemon) cronWake(_ context.Context, agent, reason string) error {
	if d.heartbeats == nil {
		return cron.PermanentError(errors.New("no heartbeat service"))
	}
	err := d.heartbeats.Wake(heartbeat.WakeRequest{AgentID: agent, Reason: reason})
	if errors.Is(err, heartbeat.ErrUnknownAgent) {
		return cron.PermanentError(err)
	}
	return err
}

// cronDeliver stores a deliver action's delivery. A sink that is not configured, a payload
// the store refuses and a key held by another payload are permanent failures; a full queue
// or disk is transient.
func (d *Daemon) cronDeliver(ctx context.Context, r cron.DeliverRequest) (int64, error) {
	if d.deliveries == nil {
		return 0, cron.PermanentError(errors.New("no delivery service"))
	}
	e, _, err := d.deliveries.Enqueue(ctx, deliveries.Request{Sink: r.Sink, Key: r.Key, Payload: r.Data})
	switch {
	case err == nil:
		return e.ID, nil
	case errors.Is(err, deliveries.ErrUnknownSink), errors.Is(err, store.ErrPayloadTooLarge),
		errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrKeyMismatch):
		return 0, cron.PermanentError(err)
	}
	return 0, err
}
