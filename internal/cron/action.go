package cron

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/outbound"
)

// Action is what a job runs: exactly one per job. HeartbeatWake, Exec, HTTP and Deliver
// are the configured kinds.
type Action interface {
	// Kind names the action as the config does: heartbeat_wake, exec, http or deliver.
	Kind() string
	// Check reports what the action lacks to run with d.
	Check(d *Deps) error
	// Run runs the action once. ctx ends at the run's timeout or when the run is cancelled.
	// A nil error is success; an error is transient unless marked with Permanent.
	Run(ctx context.Context, d *Deps, r RunInfo) (Result, error)
}

// RunInfo is what an action knows of the task it runs for.
type RunInfo struct {
	TaskID  int64
	Job     string
	Kind    api.TaskKind
	Slot    time.Time // zero for a manual run
	Due     time.Time
	Attempt int
	// RunKey is shared by every attempt of a run: actions use it as an idempotency key.
	RunKey string
	// Timeout is the run's timeout, for actions that pass it on.
	Timeout time.Duration
}

// Result is what an action reports besides its error.
type Result struct {
	ExitCode   *int
	Signal     string
	HTTPStatus int
	Output     []byte // capped at MaxOutput by the service
}

// MaxOutput is how much of an action's output a task keeps.
const MaxOutput = 4 << 10

// DeliverRequest is a durable delivery asked for by a deliver action.
type DeliverRequest struct {
	Sink string
	// Key is the idempotency key: "cron:" and the run key, the same on every attempt, so a
	// retried run stores its delivery once.
	Key  string
	Data []byte
}

// Deps are what actions need from the rest of schedd. Only what a configured action needs
// is required.
type Deps struct {
	// Wake asks the heartbeat dispatcher for a wake (heartbeat_wake actions).
	Wake func(ctx context.Context, agent, reason string) error
	// Deliver stores a durable delivery and returns its id (deliver actions): the run
	// succeeds once the delivery is stored.
	Deliver func(ctx context.Context, r DeliverRequest) (int64, error)
	// HTTPClient is shared by every http action; nil: one of the service's own that
	// follows no redirects.
	HTTPClient *http.Client
	// RunCommand runs exec actions (nil: platform.RunCommand).
	RunCommand outbound.RunFunc
	// Environ is the environment exec actions start from (nil: os.Environ()).
	Environ []string
}

// newHTTPClient is the service's own client for http actions: redirects are not followed,
// since a job's URL that moved is a configuration problem and following a 302 would turn a
// POST into a GET.
func newHTTPClient() *http.Client { return outbound.Client(0) }

// Class is how a failed run is handled.
type Class int

// The failure classes.
const (
	// Transient failures are retried per the job's retry policy.
	Transient Class = iota
	// Permanent failures are not retried.
	Permanent
)

func (c Class) String() string {
	if c == Permanent {
		return api.ClassPermanent
	}
	return api.ClassTransient
}

// ActionError is an action's error with its class.
type ActionError struct {
	Class Class
	Err   error
}

func (e *ActionError) Error() string { return e.Err.Error() }
func (e *ActionError) Unwrap() error { return e.Err }

// PermanentError marks err as permanent: the run is not retried.
func PermanentError(err error) error { return &ActionError{Class: Permanent, Err: err} }

// TransientError marks err as transient (what an unmarked error is too).
func TransientError(err error) error { return &ActionError{Class: Transient, Err: err} }

// classOf is the class of an action's error: its mark, or transient.
func classOf(err error) Class {
	var ae *ActionError
	if errors.As(err, &ae) {
		return ae.Class
	}
	return Transient
}

// Why a run's context ended (context.Cause).
var (
	errTimedOut  = errors.New("run timed out")
	errCancelled = errors.New("cancelled by request")
	errReplaced  = errors.New("replaced by a newer run")
	errStopping  = errors.New("schedd stopped while the task ran")
)

// outcome is how a run ended, as the worker saw it.
type outcome struct {
	state  api.TaskState
	reason string
	class  Class
	res    Result
	err    string
}

// judge turns what an action returned into the task's outcome. A nil error is success; an
// error after the run's context ended is a timeout or a cancellation, by the cause.
func judge(ctx context.Context, timeout time.Duration, res Result, err error) outcome {
	o := outcome{res: res}
	if err == nil {
		o.state = api.TaskSucceeded
		return o
	}
	o.err = err.Error()
	if ctx.Err() != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, errTimedOut):
			o.state, o.class, o.err = api.TaskTimedOut, Transient, fmt.Sprintf("timed out after %v: %s", timeout, o.err)
		case errors.Is(cause, errReplaced):
			o.state, o.reason = api.TaskCancelled, api.ReasonReplaced
		case errors.Is(cause, errStopping):
			// Like a lost task: a transient failure, retried after the restart.
			o.state, o.reason, o.class = api.TaskCancelled, api.ReasonStopped, Transient
		default:
			o.state, o.reason = api.TaskCancelled, api.ReasonRequested
		}
		return o
	}
	o.state, o.class = api.TaskFailed, classOf(err)
	return o
}

// failure reports whether an outcome counts as a failure of the job (toward retries and
// DisableAfter): failed, timed out, lost, or stopped by a shutdown.
func (o outcome) failure() bool {
	switch o.state {
	case api.TaskFailed, api.TaskTimedOut, api.TaskLost:
		return true
	case api.TaskCancelled:
		return o.reason == api.ReasonStopped
	}
	return false
}
