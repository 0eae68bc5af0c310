package store

import (
	"context"
	"errors"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// TaskStore keeps cron's jobs' state and their tasks: the SQLite file of one host
// (internal/store/sqlite), or a fleet's tables on PostgreSQL, written by the fleet's
// leader only (internal/store/postgres). Only cron's loop commits; the API's reads run
// beside it.
//
// The jobs' rows keep, per job name, what must survive a restart: the last slot handled
// (so a slot is never run twice and missed slots are found), the schedule it belongs to (a
// changed schedule starts afresh instead of catching up), the enabled switch set through
// the API, the consecutive failures and the pending retry. They outlive a job's removal, so
// a job that comes back keeps its history. Every run is a task: UNIQUE (run_key, attempt)
// is what makes a slot run at most once (P24): the run key of a slot is "job@slot", and a
// task is written, as queued or running, before its action starts.
type TaskStore interface {
	// LoadState reads the jobs' rows, the active tasks and the next task id.
	LoadState(ctx context.Context) (CronState, error)
	// Commit writes b in one transaction. A new task whose (run key, attempt) is taken is
	// not written: it comes back in dups and must not run (P24). pruned says how many tasks
	// each prune deleted. A failure wraps ErrTaskStore.
	Commit(ctx context.Context, b *TaskBatch, now time.Time) (dups []*Task, pruned map[string]int, err error)
	// Task reads one task; ErrUnknownTask if there is none.
	Task(ctx context.Context, id int64) (*Task, error)
	// Tasks lists tasks, newest first.
	Tasks(ctx context.Context, f TaskFilter) ([]*Task, error)
	// Where names the store for the status and logs: a path, or "postgres" (a DSN is a
	// secret).
	Where() string
	Close() error
}

// FleetCron is the part of a fleet's database that cron uses: its tables, the task store
// of each leader's term, and the leader row, whose lease is on the database's clock,
// shared by every host. Only the host that holds the leader row runs jobs; every commit of
// its task store checks, in its transaction, that it still does (the fence), so a deposed
// leader cannot write a task.
type FleetCron interface {
	// Migrate brings cron's tables to this build's schema.
	Migrate(ctx context.Context) error
	// AcquireLead takes the lead for host when its lease ran out (or is host's own from
	// before a restart): a new term, held for lease. ok is false when another host holds it.
	AcquireLead(ctx context.Context, host string, lease time.Duration) (term int64, ok bool, err error)
	// Leader reads the leader row; ok is false when no host has led yet.
	Leader(ctx context.Context) (l Lead, ok bool, err error)
	// RenewLead extends the lease of term; ok is false when the term is over.
	RenewLead(ctx context.Context, host string, term int64, lease time.Duration) (ok bool, until time.Time, err error)
	// ReleaseLead ends term at once, so a standby takes over without waiting for the lease.
	// The term is kept: a later leader's is larger.
	ReleaseLead(ctx context.Context, host string, term int64) error
	// Tasks is the task store of host's term, each operation bounded by timeout; term 0
	// reads only.
	Tasks(host string, term int64, timeout time.Duration) TaskStore
}

// Lead is who leads a fleet's cron, in which term, until when.
type Lead struct {
	Host  string
	Term  int64
	Until time.Time
}

// Errors of a task store.
var (
	// ErrTaskStore wraps a failed commit of the task store. It ends cron's loop: the
	// guarantee that a slot runs at most once rests on the store.
	ErrTaskStore = errors.New("cron store")
	// ErrUnknownTask: no task has that id.
	ErrUnknownTask = errors.New("unknown task")
	// ErrDeposed wraps a commit refused because this host no longer leads the fleet's cron.
	ErrDeposed = errors.New("no longer the cron leader")
)

// Task is one run of a cron job as the task store keeps it. Instants are kept in Unix
// nanoseconds.
type Task struct {
	ID      int64
	Job     string
	Kind    api.TaskKind
	RunKey  string // a slot's: formatted when the task is first written
	Attempt int
	Slot    time.Time // zero for a manual run
	Due     time.Time
	State   api.TaskState
	Reason  string
	Queued  time.Time
	Started time.Time
	Ended   time.Time

	ExitCode   *int
	Signal     string
	HTTPStatus int
	Class      string
	Err        string
	Output     string
	Host       string // the host that ran it, on a fleet

	Stored bool // its row exists
}

// API is the task as the control API shows it.
func (t *Task) API() api.Task {
	a := api.Task{ID: t.ID, Job: t.Job, Kind: t.Kind, State: t.State, Reason: t.Reason, RunKey: t.RunKey,
		Attempt: t.Attempt, DueAt: t.Due, QueuedAt: t.Queued, ExitCode: t.ExitCode, Signal: t.Signal,
		HTTPStatus: t.HTTPStatus, Class: t.Class, Error: t.Err, Output: t.Output, Host: t.Host}
	if !t.Slot.IsZero() {
		s := t.Slot
		a.Slot = &s
	}
	if !t.Started.IsZero() {
		s := t.Started
		a.StartedAt = &s
	}
	if !t.Ended.IsZero() {
		e := t.Ended
		a.EndedAt = &e
		if !t.Started.IsZero() {
			a.DurationMS = t.Ended.Sub(t.Started).Milliseconds()
		}
	}
	return a
}

// LastOf is t as the last ended task of its job.
func LastOf(t *Task) *api.CronLast {
	return &api.CronLast{State: t.State, Reason: t.Reason, At: t.Ended, TaskID: t.ID, Host: t.Host}
}

// CronJob is a job's persisted state.
type CronJob struct {
	Name           string
	Schedule       string
	LastSlot       time.Time
	Enabled        *bool
	DisabledReason string
	Failures       int
	Retry          *PendingRetry
	// Loaded, never written: the last ended task and how many tasks the job has stored.
	Last   *api.CronLast
	Stored int
}

// PendingRetry is a retry waiting for its time: Attempt of the run RunKey, for Slot.
type PendingRetry struct {
	At      time.Time
	Wait    time.Duration // how long it waits; a clock stepping back never makes it longer
	Of      int64         // the task it retries
	RunKey  string
	Attempt int
	Slot    time.Time
}

// CronState is what LoadState read.
type CronState struct {
	Jobs   map[string]*CronJob
	Active []*Task // queued and running, by id
	NextID int64
}

// TaskBatch is what one turn of cron's loop writes, in one transaction.
type TaskBatch struct {
	Tasks  []*Task
	Jobs   []*CronJob
	Prunes map[string]int // job -> how many of its oldest ended tasks to delete
}

// Empty reports whether b writes nothing.
func (b *TaskBatch) Empty() bool { return len(b.Tasks) == 0 && len(b.Jobs) == 0 && len(b.Prunes) == 0 }

// TaskFilter selects tasks for Tasks.
type TaskFilter struct {
	Job    string
	State  api.TaskState
	Before int64 // a cursor: only tasks with a smaller id
	Limit  int   // 0: 100
}
