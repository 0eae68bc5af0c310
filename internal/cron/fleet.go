package cron

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store"
)

// ErrNotLeader: a change asked of a host that does not run the fleet's cron jobs.
var ErrNotLeader = errors.New("this host does not run the fleet's cron jobs")

// Roles of a fleet host, in the status.
const (
	RoleConnecting = "connecting" // the database was not reached (or migrated) yet
	RoleLeader     = "leader"     // runs the jobs
	RoleStandby    = "standby"    // takes over when the leader's lease runs out
)

// FleetConfig configures a Fleet.
type FleetConfig struct {
	// Config is the service's; Config.Host names this host; OpenStore is not used.
	Config
	// DB is cron's part of the fleet's database.
	DB store.FleetCron
	// Opened is closed once the database was reached (the delivery store's Opened).
	Opened <-chan struct{}
	// Lease is how long a leader stays one after its last renewal (the hosts' lease).
	Lease time.Duration
}

// Fleet runs the cron jobs of several schedd hosts that share one PostgreSQL database:
// one of them, the leader, runs a Service on the fleet's task store while the others stand
// by, so each slot runs once across the fleet. The leader renews its lease every Lease/3;
// it stops its tasks when it could not renew for Lease/2, before any other host may take
// over, and every commit of its store checks that it still leads. A host that takes over
// loads the state the last leader committed: a task it left running is lost and retried as
// on a single host. Jobs should be the same on every host: the leader runs its own.
type Fleet struct {
	cfg  FleetConfig
	log  *zap.Logger
	wake chan struct{} // jobs were configured

	mu          sync.Mutex
	jobs        []Job
	gen         int      // counts the changes of jobs
	svc         *Service // while leading
	reached     bool     // the leader row was read: connecting until then
	term        int64
	leader      string
	leaderUntil time.Time
	view        *Service // a standby's read-only copy of the state, for reads
	viewAt      time.Time
}

// viewTTL is how long a standby serves reads from one load of the fleet's state, which
// may take viewTimeout at most.
const (
	viewTTL     = time.Second
	viewTimeout = 5 * time.Second
)

// NewFleet checks the jobs and builds the fleet's cron; it reaches the database only in Run.
func NewFleet(cfg FleetConfig) (*Fleet, error) {
	if cfg.Lease <= 0 {
		return nil, fmt.Errorf("cron: the fleet's lease %v must be positive (the hosts' lease from the Postgres store)", cfg.Lease)
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	deps := cfg.Deps
	if _, err := prepare(cfg.Jobs, &deps); err != nil {
		return nil, err
	}
	return &Fleet{cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1), jobs: cfg.Jobs}, nil
}

// Run takes part in the fleet until ctx ends: it migrates cron's tables, then leads
// whenever the lease is free, while this host has jobs.
func (f *Fleet) Run(ctx context.Context) error {
	select {
	case <-f.cfg.Opened:
	case <-ctx.Done():
		return nil
	}
	retry := f.cfg.Lease / 3
	for {
		err := f.cfg.DB.Migrate(ctx)
		if err == nil {
			break
		}
		f.log.Warn("cron: cannot prepare its tables; trying again", zap.Error(err), zap.Duration("in", retry))
		if !sleep(ctx, retry) {
			return nil
		}
	}
	for ctx.Err() == nil {
		f.mu.Lock()
		has := len(f.jobs) > 0
		f.mu.Unlock()
		// A host without jobs does not contend (it would run nothing); it still shows who
		// leads.
		term, err := f.acquire(ctx, has)
		switch {
		case err != nil:
			f.log.Warn("cron: cannot reach the leader row", zap.Error(err))
		case term > 0:
			f.lead(ctx, term)
			continue
		}
		select {
		case <-ctx.Done():
		case <-f.wake:
		case <-time.After(retry):
		}
	}
	return nil
}

// acquire takes the lease when it ran out (or is this host's own from before a restart):
// a new term. It returns 0 when another host holds it (or contend is false), and records
// who.
func (f *Fleet) acquire(ctx context.Context, contend bool) (int64, error) {
	if contend {
		term, ok, err := f.cfg.DB.AcquireLead(ctx, f.cfg.Host, f.cfg.Lease)
		if ok || err != nil {
			return term, err
		}
	}
	l, found, err := f.cfg.DB.Leader(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err != nil:
		return 0, err
	case found:
		f.leader, f.leaderUntil, f.term = l.Host, l.Until, l.Term
	}
	f.reached = true // no host has led yet when !found
	return 0, nil
}

// opener opens the task store of term, each operation bounded by timeout (term 0 reads).
func (f *Fleet) opener(term int64, timeout time.Duration) func(context.Context) (store.TaskStore, error) {
	return func(context.Context) (store.TaskStore, error) { return f.cfg.DB.Tasks(f.cfg.Host, term, timeout), nil }
}

// renew extends the lease of term; false when the term is over (another host took over).
func (f *Fleet) renew(ctx context.Context, term int64) (bool, time.Time, error) {
	return f.cfg.DB.RenewLead(ctx, f.cfg.Host, term, f.cfg.Lease)
}

// release ends term at once, so a standby takes over without waiting for the lease. The
// term is kept: a later leader's is larger.
func (f *Fleet) release(term int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.cfg.DB.ReleaseLead(ctx, f.cfg.Host, term); err != nil {
		f.log.Warn("cron: could not hand the lead over; another host takes it when the lease runs out", zap.Error(err))
	}
}

// lead runs the jobs for term until ctx ends, the term is lost or the store fails.
func (f *Fleet) lead(ctx context.Context, term int64) {
	f.mu.Lock()
	cfg := f.cfg.Config
	cfg.Jobs, cfg.OpenStore = f.jobs, f.opener(term, f.cfg.Lease/2)
	gen := f.gen
	f.mu.Unlock()
	svc, err := New(cfg)
	if err != nil {
		f.log.Error("cron: cannot load the fleet's state; handing the lead over", zap.Error(err))
		f.release(term)
		sleep(ctx, f.cfg.Lease/3)
		return
	}
	for {
		f.mu.Lock()
		if f.gen == gen {
			f.svc, f.term, f.leader, f.view, f.reached = svc, term, f.cfg.Host, nil, true
			f.leaderUntil = time.Now().Add(f.cfg.Lease)
			f.mu.Unlock()
			break
		}
		jobs := f.jobs // changed while the state loaded
		gen = f.gen
		f.mu.Unlock()
		if err := svc.Update(ctx, jobs); err != nil {
			f.log.Error("cron: cannot apply the new jobs", zap.Error(err))
		}
	}
	f.log.Info("cron: this host leads the fleet's cron jobs", zap.String("host", f.cfg.Host), zap.Int64("term", term))
	defer f.stepDown()

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()
	tick := time.NewTicker(f.cfg.Lease / 3)
	defer tick.Stop()
	renewed := time.Now()
	for {
		select {
		case err := <-done:
			// Its store failed: deposed, or the database is down.
			f.log.Warn("cron: leading stopped", zap.Error(err), zap.Int64("term", term))
			return
		case <-ctx.Done():
			<-done
			f.release(term)
			return
		case <-tick.C:
			rctx, cancel := context.WithTimeout(ctx, f.cfg.Lease/3)
			ok, until, err := f.renew(rctx, term)
			cancel()
			if ok {
				renewed = time.Now()
				f.mu.Lock()
				f.leaderUntil = until
				f.mu.Unlock()
				continue
			}
			if err == nil || time.Since(renewed) > f.cfg.Lease/2 {
				// Another host may take over soon (or has): no task of this term runs on.
				f.log.Error("cron: lost the lead; stopping this host's tasks", zap.Error(err), zap.Int64("term", term))
				svc.stopTasks(ErrDeposed)
				stop()
				<-done
				return
			}
			f.log.Warn("cron: could not renew the lead", zap.Error(err))
		}
	}
}

// stepDown ends this host's lead: it stands by.
func (f *Fleet) stepDown() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.svc = nil
	if f.leader == f.cfg.Host {
		f.leader = ""
	}
}

// role is this host's part: leader while its service runs, connecting until the leader row
// was read, else standby. f.mu is held.
func (f *Fleet) role() string {
	switch {
	case f.svc != nil:
		return RoleLeader
	case !f.reached:
		return RoleConnecting
	}
	return RoleStandby
}

// Update replaces the jobs (SIGHUP); the leader applies them at once, a standby when it
// takes over.
func (f *Fleet) Update(ctx context.Context, jobs []Job) error {
	apply, err := f.PrepareUpdate(jobs)
	if err != nil {
		return err
	}
	return apply(ctx)
}

// PrepareUpdate checks jobs as Update does, and changes nothing: apply replaces them.
func (f *Fleet) PrepareUpdate(jobs []Job) (apply func(ctx context.Context) error, err error) {
	deps := f.cfg.Deps
	if _, err := prepare(jobs, &deps); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		f.mu.Lock()
		f.jobs, f.view = jobs, nil
		f.gen++
		svc := f.svc
		f.mu.Unlock()
		select {
		case f.wake <- struct{}{}:
		default:
		}
		if svc == nil {
			return nil
		}
		if err := svc.Update(ctx, jobs); err != nil && !errors.Is(err, ErrStopped) {
			return err
		}
		return nil
	}, nil
}

// current is the leader's running service, or a standby's read-only view of the fleet's
// state (reloaded at most every viewTTL).
func (f *Fleet) current() (*Service, bool, error) {
	f.mu.Lock()
	switch {
	case f.svc != nil:
		defer f.mu.Unlock()
		return f.svc, true, nil
	case !f.reached:
		f.mu.Unlock()
		return nil, false, fmt.Errorf("%w: the fleet's database was not reached yet", ErrStopped)
	case f.view != nil && time.Since(f.viewAt) <= viewTTL:
		defer f.mu.Unlock()
		return f.view, false, nil
	}
	cfg := f.cfg.Config
	cfg.Jobs, cfg.Logger = f.jobs, zap.NewNop()
	cfg.OpenStore = f.opener(0, viewTimeout)
	f.mu.Unlock()
	v, err := New(cfg) // the database is read without the lock held
	if err != nil {
		return nil, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.view, f.viewAt = v, time.Now()
	return v, false, nil
}

// leaderOnly is the service for a change, or ErrNotLeader naming the leader.
func (f *Fleet) leaderOnly() (*Service, error) {
	svc, leads, err := f.current()
	if err != nil || leads {
		return svc, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leader == "" {
		return nil, fmt.Errorf("%w: no host leads it right now; try again in a moment", ErrNotLeader)
	}
	return nil, fmt.Errorf("%w: host %q does; send the request to it", ErrNotLeader, f.leader)
}

// Status is the `cron` block of the status, with the fleet's.
func (f *Fleet) Status() api.Cron {
	var c api.Cron
	if svc, _, err := f.current(); err == nil {
		c = svc.Status()
	} else {
		c = api.Cron{Jobs: []api.CronJob{}, StoreState: api.StoreNotOpened}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c.Store = "postgres"
	c.Fleet = &api.CronFleet{Host: f.cfg.Host, Role: f.role(), Leader: f.leader, Term: f.term}
	if !f.leaderUntil.IsZero() && f.leader != "" {
		u := f.leaderUntil.UTC()
		c.Fleet.LeaderUntil = &u
	}
	return c
}

// Job is Service.Job on the fleet's state.
func (f *Fleet) Job(ctx context.Context, name string) (api.CronJobDetail, error) {
	svc, _, err := f.current()
	if err != nil {
		return api.CronJobDetail{}, err
	}
	return svc.Job(ctx, name)
}

// Next is Service.Next.
func (f *Fleet) Next(ctx context.Context, name string, from time.Time, n int) (api.CronNextReply, error) {
	svc, _, err := f.current()
	if err != nil {
		return api.CronNextReply{}, err
	}
	return svc.Next(ctx, name, from, n)
}

// Tasks is Service.Tasks on the fleet's history.
func (f *Fleet) Tasks(ctx context.Context, flt TaskFilter) (api.TaskList, error) {
	svc, _, err := f.current()
	if err != nil {
		return api.TaskList{}, err
	}
	return svc.Tasks(ctx, flt)
}

// Task is Service.Task.
func (f *Fleet) Task(ctx context.Context, id int64) (api.Task, error) {
	svc, _, err := f.current()
	if err != nil {
		return api.Task{}, err
	}
	return svc.Task(ctx, id)
}

// RunNow is Service.RunNow, on the leader only.
func (f *Fleet) RunNow(ctx context.Context, name string, wait bool) (api.Task, error) {
	svc, err := f.leaderOnly()
	if err != nil {
		return api.Task{}, err
	}
	return svc.RunNow(ctx, name, wait)
}

// SetEnabled is Service.SetEnabled, on the leader only.
func (f *Fleet) SetEnabled(ctx context.Context, name string, on bool) (bool, error) {
	svc, err := f.leaderOnly()
	if err != nil {
		return false, err
	}
	return svc.SetEnabled(ctx, name, on)
}

// Cancel is Service.Cancel, on the leader only.
func (f *Fleet) Cancel(ctx context.Context, id int64) (api.Task, error) {
	svc, err := f.leaderOnly()
	if err != nil {
		return api.Task{}, err
	}
	return svc.Cancel(ctx, id)
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
