package cron

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/cron/schedule"
	"github.com/schedd/schedd/internal/store"
)

// Errors of the service.
var (
	ErrRunning    = errors.New("cron service already ran")
	ErrStopped    = errors.New("cron service stopped")
	ErrUnknownJob = errors.New("unknown cron job")
	// ErrNotActive: the task has already ended (Cancel).
	ErrNotActive = errors.New("task has already ended")
	// ErrNoStore: no job is configured, so the task store is not open.
	ErrNoStore = errors.New("no cron job is configured")
	// ErrStore wraps a failed commit of the task store. It ends Run: the guarantee that a
	// slot runs at most once rests on the store.
	ErrStore = store.ErrTaskStore
	// ErrUnknownTask: no task has that id.
	ErrUnknownTask = store.ErrUnknownTask
	// ErrDeposed wraps a commit refused because this host no longer leads the fleet's cron.
	ErrDeposed = store.ErrDeposed
)

// TaskFilter selects tasks for Tasks.
type TaskFilter = store.TaskFilter

// The service's own timing, which no setting changes: the defaults of Config's AgingStep
// and Drain.
const (
	DefaultAgingStep = 10 * time.Second
	DefaultDrain     = 10 * time.Second
	maxAgingStep     = time.Hour
)

// Config configures the service. Jobs, Workers and QueueSize are the config file's values,
// taken as given; a zero AgingStep or Drain takes the service's own timing.
type Config struct {
	Jobs []Job
	// Workers (>= 1) is how many tasks run at once; it applies from New.
	Workers int
	// QueueSize (>= 1) bounds the tasks waiting for a worker; a task that finds it full is
	// recorded as skipped with reason queue_full.
	QueueSize int
	// AgingStep is how long a waiting task waits to gain one priority level (default
	// DefaultAgingStep, at most an hour).
	AgingStep time.Duration
	// Drain is how long Run waits, once its ctx ended, for running tasks before it cancels
	// them (default DefaultDrain).
	Drain time.Duration
	// OpenStore opens the task store (on one host, cron.db in the state dir); it is called
	// when a job is first configured.
	OpenStore func(ctx context.Context) (store.TaskStore, error)
	// Now is the wall clock (default time.Now). Due instants are wall instants.
	Now    func() time.Time
	Logger *zap.Logger
	// Deps are what actions need from the rest of schedd.
	Deps Deps
	// Observe is told of tasks that start and end, for metrics.
	Observe Observer

	// Host is written into every task as the host that ran it (on a fleet).
	Host string

	// offset replaces schedule.Offset, in tests.
	offset func(name string, jitter time.Duration) time.Duration
}

// Service runs the cron jobs: it turns their due slots into tasks, queues them by priority
// and runs them on a bounded pool of workers, persisting every task in the task store.
//
// One goroutine owns all of its state: the loop in Run. Every other method hands its work
// to the loop and waits for it to be committed; before Run they do the work themselves, and
// after Run only reads are served.
type Service struct {
	cfg       Config
	log       *zap.Logger
	deps      Deps
	ownClient bool
	now       func() time.Time
	offsetOf  func(string, time.Duration) time.Duration

	reqs     chan *request
	results  chan result
	stopping chan struct{} // closed when Run starts to stop
	done     chan struct{} // closed when Run has returned

	mu    sync.Mutex // guards phase; held by a caller that works on the state itself
	phase int

	readStore atomic.Pointer[store.TaskStore] // for the API's reads

	// Owned by the loop (or by a caller holding mu while the loop does not run).
	st        store.TaskStore
	jobs      map[string]*jobState
	order     []*jobState
	rows      map[string]*store.CronJob // persisted state of jobs not configured (now)
	recoverQ  []*task                   // tasks found active in the store, taken over at Run
	q         *queue
	due       dueHeap
	heapStale bool // a pass changes many wake times: due is rebuilt once at its end
	batch     []*jobState
	dueFound  []uint64
	dueStack  []int
	stepMemo  stepMemo
	keyText   slotText
	spare     []*task   // allocated before the pass that takes them (reserveTasks)
	spareFor  time.Time // the wake they were counted for
	passMono  time.Time // see monoNow
	wakeAt    time.Time // the loop's next wake, on the monotonic clock (arm)
	running   int
	nextID    int64
	queueFull int64
	dirtyT    []*task
	dirtyJ    []*jobState
	prunes    map[string]int
	toStart   []*task
	ended     []*task
	waiters   map[int64][]chan api.Task
	lastWall  time.Time
	taskCtx   context.Context
	stopTasks context.CancelCauseFunc
}

const (
	phaseNew = iota
	phaseRunning
	phaseStopped
)

// New builds the service and, when a job is configured, opens the task store and loads the
// persisted state. It starts nothing; call Run.
func New(cfg Config) (*Service, error) {
	if cfg.Workers < 1 || cfg.QueueSize < 1 {
		return nil, fmt.Errorf("cron: workers %d and queue size %d must be at least 1", cfg.Workers, cfg.QueueSize)
	}
	if cfg.AgingStep <= 0 {
		cfg.AgingStep = DefaultAgingStep
	}
	if cfg.AgingStep > maxAgingStep {
		return nil, fmt.Errorf("cron: aging step %v is over %v", cfg.AgingStep, maxAgingStep)
	}
	if cfg.Drain <= 0 {
		cfg.Drain = DefaultDrain
	}
	s := &Service{
		cfg: cfg, log: cfg.Logger, deps: cfg.Deps, now: cfg.Now, offsetOf: cfg.offset,
		reqs: make(chan *request), results: make(chan result, cfg.Workers), stopping: make(chan struct{}), done: make(chan struct{}),
		jobs: map[string]*jobState{}, rows: map[string]*store.CronJob{}, q: newQueue(cfg.AgingStep, time.Now()),
		prunes: map[string]int{}, waiters: map[int64][]chan api.Task{}, nextID: 1,
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.offsetOf == nil {
		s.offsetOf = schedule.Offset
	}
	if s.deps.HTTPClient == nil {
		s.deps.HTTPClient, s.ownClient = newHTTPClient(), true
	}
	s.taskCtx, s.stopTasks = context.WithCancelCause(context.Background())
	jobs, err := prepare(cfg.Jobs, &s.deps)
	if err != nil {
		return nil, err
	}
	if err := s.apply(jobs); err != nil {
		s.closeStore()
		return nil, err
	}
	return s, nil
}

// request is work handed to the loop; done gets its error, or the commit's. then, when
// set, runs in the loop once the commit succeeded, before done is answered.
type request struct {
	fn       func() error
	readOnly bool
	done     chan error
	then     func()
}

// call runs fn on the service's state: in the loop while Run runs, else itself. fn's
// changes are committed before call returns. Once Run has returned only read-only calls are
// served.
func (s *Service) call(ctx context.Context, readOnly bool, fn func() error) error {
	return s.callThen(ctx, readOnly, fn, nil)
}

// callThen is call, and then runs where fn ran once fn's changes are committed (and what
// they let start has started): it may read the state the caller will report, which the
// loop changes as soon as the caller is answered.
func (s *Service) callThen(ctx context.Context, readOnly bool, fn func() error, then func()) error {
	s.mu.Lock()
	if s.phase != phaseRunning {
		defer s.mu.Unlock()
		if s.phase == phaseStopped && !readOnly {
			return ErrStopped
		}
		if err := fn(); err != nil {
			return err
		}
		if !readOnly {
			if err := s.flush(); err != nil {
				return err
			}
		}
		if then != nil {
			then()
		}
		return nil
	}
	s.mu.Unlock()
	r := &request{fn: fn, readOnly: readOnly, done: make(chan error, 1), then: then}
	select {
	case s.reqs <- r:
	case <-s.done:
		return s.callThen(ctx, readOnly, fn, then) // Run has returned
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Update replaces the jobs without a restart (SIGHUP): new jobs start, removed ones stop
// (their queued tasks are cancelled, running ones finish), changed ones run their new
// definition from their next task on. Every job keeps its history and state by name; a job
// whose schedule changed starts from now, without catching up. An invalid set of jobs is
// refused whole and the old one stays.
func (s *Service) Update(ctx context.Context, jobs []Job) error {
	apply, err := s.PrepareUpdate(jobs)
	if err != nil {
		return err
	}
	return apply(ctx)
}

// PrepareUpdate checks jobs as Update does, and changes nothing: apply replaces the jobs,
// so a caller can check several parts before it changes any. apply fails only when the
// service stopped, ctx ended, or the task store could not be opened.
func (s *Service) PrepareUpdate(jobs []Job) (apply func(ctx context.Context) error, err error) {
	prepared, err := prepare(jobs, &s.deps)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		return s.call(ctx, false, func() error { return s.apply(prepared) })
	}, nil
}

// RunNow queues a manual run of the job, enabled or not, under its concurrency policy, and
// returns its task as committed: running when a worker was free, else queued, or skipped
// when it could not be queued. With wait it returns the task once it has ended (or ctx
// ended).
func (s *Service) RunNow(ctx context.Context, name string, wait bool) (api.Task, error) {
	var t *task
	var snap api.Task // taken in the loop: the task is the loop's to change
	var ch chan api.Task
	err := s.callThen(ctx, false, func() error {
		j := s.jobs[name]
		if j == nil || j.removed {
			return fmt.Errorf("%w: %q", ErrUnknownJob, name)
		}
		now := s.wall()
		t = s.newTask(j, api.KindManual, manualKey(name), 1, time.Time{}, now, now)
		s.admit(j, t, now)
		if wait && t.active() {
			ch = s.wait(t.ID)
		}
		return nil
	}, func() { snap = t.API() })
	if err != nil {
		return api.Task{}, err
	}
	if ch == nil {
		return snap, nil
	}
	return s.awaitTask(ctx, snap.ID, ch)
}

// awaitTask waits for the task to end.
func (s *Service) awaitTask(ctx context.Context, id int64, ch chan api.Task) (api.Task, error) {
	select {
	case a, ok := <-ch:
		if !ok {
			t, err := s.Task(context.WithoutCancel(ctx), id)
			if err == nil {
				err = ErrStopped
			}
			return t, err
		}
		return a, nil
	case <-ctx.Done():
		t, _ := s.Task(context.WithoutCancel(ctx), id)
		return t, ctx.Err()
	}
}

// SetEnabled switches a job on or off and persists the switch, which wins over the
// config's. Enabling resets the consecutive failures and starts the schedule from now;
// disabling drops a pending retry (recorded as skipped). changed is false when the job
// already was so.
func (s *Service) SetEnabled(ctx context.Context, name string, on bool) (changed bool, err error) {
	err = s.call(ctx, false, func() error {
		j := s.jobs[name]
		if j == nil || j.removed {
			return fmt.Errorf("%w: %q", ErrUnknownJob, name)
		}
		changed = s.setEnabled(j, on, "")
		return nil
	})
	if err == nil && changed {
		s.log.Info("cron job switched", zap.String("job", name), zap.Bool("enabled", on))
	}
	return changed, err
}

// Cancel cancels a queued or running task and returns it once it has ended. A task that had
// already ended is returned with ErrNotActive.
func (s *Service) Cancel(ctx context.Context, id int64) (api.Task, error) {
	var ch chan api.Task
	var ended *api.Task
	err := s.call(ctx, false, func() error {
		t := s.activeTask(id)
		if t == nil {
			return nil
		}
		if t.State == api.TaskRunning {
			ch = s.wait(id)
			t.cancel(errCancelled)
			return nil
		}
		s.dequeue(t)
		s.end(t, api.TaskCancelled, api.ReasonRequested, s.wall())
		a := t.API()
		ended = &a
		return nil
	})
	switch {
	case err != nil:
		return api.Task{}, err
	case ended != nil:
		return *ended, nil
	case ch != nil:
		return s.awaitTask(ctx, id, ch)
	}
	t, err := s.Task(ctx, id)
	if err != nil {
		return api.Task{}, err
	}
	return t, ErrNotActive
}

// activeTask is the queued or running task id, or nil. A walk over the jobs: cancelling
// is rare, and queuing a run then costs no index by id.
func (s *Service) activeTask(id int64) *task {
	for _, j := range s.jobs {
		for _, t := range j.active {
			if t.ID == id {
				return t
			}
		}
	}
	return nil
}

// Task returns one task from the store.
func (s *Service) Task(ctx context.Context, id int64) (api.Task, error) {
	st, err := s.reader()
	if err != nil {
		return api.Task{}, err
	}
	if st == nil {
		return api.Task{}, fmt.Errorf("%w: %d", ErrUnknownTask, id)
	}
	t, err := st.Task(ctx, id)
	if err != nil {
		return api.Task{}, err
	}
	return t.API(), nil
}

// Tasks lists tasks from the store, newest first.
func (s *Service) Tasks(ctx context.Context, f TaskFilter) (api.TaskList, error) {
	if f.State != "" && !f.State.Valid() {
		return api.TaskList{}, fmt.Errorf("unknown task state %q", f.State)
	}
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	list := api.TaskList{Tasks: []api.Task{}}
	st, err := s.reader()
	if err != nil || st == nil {
		return list, err
	}
	ts, err := st.Tasks(ctx, f)
	if err != nil {
		return list, err
	}
	for _, t := range ts {
		list.Tasks = append(list.Tasks, t.API())
	}
	if len(ts) == f.Limit {
		list.NextCursor = ts[len(ts)-1].ID
	}
	return list, nil
}

// reader is the store for the API's reads: nil while none is open; closed once Run has
// returned.
func (s *Service) reader() (store.TaskStore, error) {
	select {
	case <-s.done:
		return nil, ErrStopped
	default:
		if p := s.readStore.Load(); p != nil {
			return *p, nil
		}
		return nil, nil
	}
}

// wall is the current wall-clock time without a monotonic reading: due instants are wall
// instants, so comparisons must use the wall clock.
func (s *Service) wall() time.Time { return s.now().Round(0).UTC() }

// ensureStore opens the task store if it is not open yet.
func (s *Service) ensureStore() error {
	if s.st != nil {
		return nil
	}
	if s.cfg.OpenStore == nil {
		return errors.New("cron: no task store")
	}
	st, err := s.cfg.OpenStore(context.Background())
	if err != nil {
		return err
	}
	snap, err := st.LoadState(context.Background())
	if err != nil {
		st.Close()
		return fmt.Errorf("load cron store %s: %w", st.Where(), err)
	}
	s.st = st
	s.readStore.Store(&st)
	for name, r := range snap.Jobs {
		s.rows[name] = r
	}
	s.recoverQ = make([]*task, len(snap.Active))
	for i, t := range snap.Active {
		s.recoverQ[i] = &task{Task: *t, qidx: -1}
	}
	s.nextID = max(s.nextID, snap.NextID)
	s.log.Info("cron store open", zap.String("store", st.Where()),
		zap.Int("jobs", len(snap.Jobs)), zap.Int("active_tasks", len(snap.Active)))
	return nil
}

func (s *Service) closeStore() {
	if s.st == nil {
		return
	}
	if err := s.st.Close(); err != nil {
		s.log.Warn("cron store close", zap.Error(err))
	}
}
