package api

import "time"

// TaskState is where a cron task is in its life:
// queued → running → succeeded | failed | timed_out | cancelled | skipped, and lost for a task
// that was running when schedd was killed. A task can also be skipped without running.
type TaskState string

// The task states.
const (
	TaskQueued    TaskState = "queued"    // waiting in the job queue for a worker
	TaskRunning   TaskState = "running"   // its action runs
	TaskSucceeded TaskState = "succeeded" // the action reported success
	TaskFailed    TaskState = "failed"    // the action failed (class says transient or permanent)
	TaskTimedOut  TaskState = "timed_out" // the action ran past its timeout and was stopped
	TaskCancelled TaskState = "cancelled" // stopped by a request, a replacing run or schedd stopping
	TaskSkipped   TaskState = "skipped"   // never ran; reason says why
	TaskLost      TaskState = "lost"      // found running at start-up: schedd was killed mid-run
)

// Valid reports whether s is one of the task states.
func (s TaskState) Valid() bool {
	switch s {
	case TaskQueued, TaskRunning, TaskSucceeded, TaskFailed, TaskTimedOut, TaskCancelled, TaskSkipped, TaskLost:
		return true
	}
	return false
}

// Terminal reports whether a task in state s has ended.
func (s TaskState) Terminal() bool { return s.Valid() && s != TaskQueued && s != TaskRunning }

// TaskKind says why a task exists.
type TaskKind string

// The task kinds.
const (
	KindScheduled TaskKind = "scheduled" // a slot of the job's schedule, on time
	KindCatchUp   TaskKind = "catch_up"  // one run for slots missed while schedd was down or the clock jumped
	KindManual    TaskKind = "manual"    // schedd cron run, POST /v1/cron/{name}/run
	KindRetry     TaskKind = "retry"     // a further attempt after a transient failure
)

// Reasons of skipped and cancelled tasks.
const (
	ReasonOverlap    = "overlap"    // concurrency forbid: the job's previous run was still active
	ReasonQueueFull  = "queue_full" // the job queue was full
	ReasonMissed     = "missed"     // missed: skip, and the slots were missed
	ReasonDeadline   = "deadline"   // it could not start within the job's starting_deadline
	ReasonSuperseded = "superseded" // a retry made moot by the job's next scheduled run
	ReasonDisabled   = "disabled"   // a retry dropped because the job was disabled
	ReasonRemoved    = "removed"    // the job is no longer configured
	ReasonReplaced   = "replaced"   // concurrency replace: a newer run took its place
	ReasonRequested  = "requested"  // cancelled through the API or the CLI
	ReasonStopped    = "stopped"    // schedd stopped while it ran (it is retried)
)

// Failure classes of a task that failed.
const (
	ClassTransient = "transient" // retried per the job's retry policy
	ClassPermanent = "permanent" // not retried
)

// Cron is the `cron` block of the status: the job queue and every configured job.
type Cron struct {
	Jobs      []CronJob `json:"jobs"`
	Workers   int       `json:"workers"`
	Running   int       `json:"running"`
	Queued    int       `json:"queued"`
	QueueSize int       `json:"queue_size"`
	// QueueFull counts the tasks skipped because the queue was full, since schedd started.
	QueueFull int64 `json:"queue_full"`
	// Store is the task store's file; StoreState is "open", or "not_opened" while no job
	// is configured (the file is opened with the first job).
	Store      string `json:"store,omitempty"`
	StoreState string `json:"store_state"`
	// Fleet is set when the jobs are shared by the hosts of one PostgreSQL database.
	Fleet *CronFleet `json:"fleet,omitempty"`
}

// CronFleet is this host's part in the fleet's cron: one host, the leader, runs the jobs;
// the others stand by and take over when its lease runs out.
type CronFleet struct {
	Host string `json:"host"`
	// Role is leader, standby, or connecting while the database was not reached.
	Role        string     `json:"role"`
	Leader      string     `json:"leader,omitempty"`
	LeaderUntil *time.Time `json:"leader_until,omitempty"`
	Term        int64      `json:"term,omitempty"`
}

// CronJob is one job in Cron, in config order.
type CronJob struct {
	Name     string `json:"name"`
	Schedule string `json:"schedule"`
	Timezone string `json:"timezone,omitempty"`
	// NextRunAt is the next scheduled run, stagger offset included; null when disabled or
	// when the schedule has no further instant.
	NextRunAt *time.Time `json:"next_run_at"`
	// OffsetMS is the job's stagger offset in [0, jitter).
	OffsetMS       int64  `json:"offset_ms"`
	Enabled        bool   `json:"enabled"`
	DisabledReason string `json:"disabled_reason,omitempty"`
	// ConsecutiveFailures counts the failed runs since the last success.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// RetryAt is when the pending retry runs, if one is pending.
	RetryAt *time.Time `json:"retry_at,omitempty"`
	// Active counts the job's queued and running tasks.
	Active int       `json:"active"`
	Last   *CronLast `json:"last"`
}

// CronLast is the most recent task of a job that ended, skips included.
type CronLast struct {
	State  TaskState `json:"state"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
	TaskID int64     `json:"task_id"`
	// Host ran the task, on a fleet sharing one PostgreSQL database.
	Host string `json:"host,omitempty"`
}

// CronJobDetail is the reply of GET /v1/cron/{name}: the job's status, its settings, its
// next runs and its history, newest first.
type CronJobDetail struct {
	CronJob
	Action             string      `json:"action"` // heartbeat_wake | exec | http | deliver
	JitterMS           int64       `json:"jitter_ms"`
	Missed             string      `json:"missed"`      // run_once | skip
	Concurrency        string      `json:"concurrency"` // forbid | replace | allow
	StartingDeadlineMS int64       `json:"starting_deadline_ms"`
	Retry              CronRetry   `json:"retry"`
	DisableAfter       int         `json:"disable_after"` // 0: never
	HistoryLimit       int         `json:"history_limit"`
	Priority           int         `json:"priority"`
	TimeoutMS          int64       `json:"timeout_ms"`
	Next               []time.Time `json:"next"`
	History            []Task      `json:"history"`
}

// CronRetry is a job's retry policy: up to Max retries of a run, waiting ScheduleMS[k-1]
// after the k-th failure in a row (the last entry repeats).
type CronRetry struct {
	Max        int     `json:"max"`
	ScheduleMS []int64 `json:"schedule_ms"`
}

// CronNextReply is the reply of `schedd cron next`: the run instants after From.
type CronNextReply struct {
	Name     string        `json:"name"`
	Timezone string        `json:"timezone,omitempty"`
	From     time.Time     `json:"from"`
	Runs     []CronInstant `json:"runs"`
}

// CronInstant is one run instant, in UTC and in the job's zone (RFC 3339 with its offset).
type CronInstant struct {
	At    time.Time `json:"at"`
	Local string    `json:"local"`
}

// CronRunRequest is the body of POST /v1/cron/{name}/run.
type CronRunRequest struct {
	// Wait asks for the reply only once the task has ended.
	Wait bool `json:"wait,omitempty"`
}

// CronRunReply is the reply of POST /v1/cron/{name}/run: 202 with the task as queued (or
// skipped), or with wait 200 with the task as it ended.
type CronRunReply struct {
	Task Task `json:"task"`
}

// CronEnabledRequest is the body of PUT /v1/cron/{name}/enabled.
type CronEnabledRequest struct {
	Enabled *bool `json:"enabled"`
}

// CronEnabledReply is the reply of PUT /v1/cron/{name}/enabled. Enabling a job resets its
// consecutive failures.
type CronEnabledReply struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
	Changed bool   `json:"changed"`
}

// Task is one run of a cron job.
type Task struct {
	ID    int64     `json:"id"`
	Job   string    `json:"job"`
	Kind  TaskKind  `json:"kind"`
	State TaskState `json:"state"`
	// Reason says why a task was skipped or cancelled (Reason* constants).
	Reason string `json:"reason,omitempty"`
	// Slot is the schedule instant the task runs for (without the stagger offset); null for
	// a manual run. A retry keeps its run's slot.
	Slot *time.Time `json:"slot"`
	// RunKey names the run all its attempts share: "job@slot" or "job!id" for a manual run.
	// Deliveries and HTTP requests carry it as their idempotency key.
	RunKey  string `json:"run_key"`
	Attempt int    `json:"attempt"`
	// DueAt is when the task was due: the slot plus the offset, the retry's time, or the
	// request's.
	DueAt      time.Time  `json:"due_at"`
	QueuedAt   time.Time  `json:"queued_at"`
	StartedAt  *time.Time `json:"started_at"`
	EndedAt    *time.Time `json:"ended_at"`
	DurationMS int64      `json:"duration_ms,omitempty"`
	ExitCode   *int       `json:"exit_code,omitempty"`
	Signal     string     `json:"signal,omitempty"`
	HTTPStatus int        `json:"http_status,omitempty"`
	// Class is transient or permanent for a task that did not succeed.
	Class string `json:"class,omitempty"`
	Error string `json:"error,omitempty"`
	// Output is the start of the action's output (capped).
	Output string `json:"output,omitempty"`
	// Host is the host that ran the task, on a fleet sharing one PostgreSQL database.
	Host string `json:"host,omitempty"`
}

// TaskList is the reply of GET /v1/tasks, newest first. NextCursor, when not zero, is the
// cursor of the next page (tasks with a smaller id).
type TaskList struct {
	Tasks      []Task `json:"tasks"`
	NextCursor int64  `json:"next_cursor,omitempty"`
}

// TaskCancelReply is the reply of POST /v1/tasks/{id}/cancel: the task as it ended.
// Cancelled is false when it had already ended.
type TaskCancelReply struct {
	Task      Task `json:"task"`
	Cancelled bool `json:"cancelled"`
}
