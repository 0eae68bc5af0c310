package respawn

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/schedd/schedd/internal/backoff"
	"github.com/schedd/schedd/internal/platform"
	"github.com/schedd/schedd/internal/probe"
)

// State is where the gateway is in its lifecycle. The values are part of the status contract.
type State string

// The gateway states of DESIGN.md.
const (
	StateStarting     State = "starting"      // spawned, waiting for readiness
	StateReady        State = "ready"         // ready and watched for liveness
	StateStopping     State = "stopping"      // stop signal sent, waiting for the group to exit
	StateBackoff      State = "backoff"       // waiting before the next start after a failure
	StateCrashLooping State = "crash_looping" // like backoff, after too many failures in the window
	StateStopped      State = "stopped"       // not running and not going to be restarted
)

// ExitReason says why a gateway process ended. The values are part of the status contract.
type ExitReason string

// The last_exit.reason values of DESIGN.md.
const (
	ReasonExit               ExitReason = "exit"                 // exited on its own with a code
	ReasonSignal             ExitReason = "signal"               // killed by a signal schedd did not send
	ReasonSpawnFailed        ExitReason = "spawn_failed"         // could not be started at all
	ReasonReadinessTimeout   ExitReason = "readiness_timeout"    // never became ready in time
	ReasonLivenessTimeout    ExitReason = "liveness_timeout"     // stopped answering its liveness check
	ReasonKilledAfterTimeout ExitReason = "killed_after_timeout" // ignored the stop signal and was killed
	ReasonRestart            ExitReason = "restart"              // stopped for a requested restart
	ReasonStop               ExitReason = "stop"                 // stopped because schedd stops
)

// Exit records how one gateway process ended.
type Exit struct {
	Reason ExitReason `json:"reason"`
	Code   *int       `json:"code"`             // exit code, when it exited
	Signal string     `json:"signal,omitempty"` // signal name, when a signal ended it
	At     time.Time  `json:"at"`
	PID    int        `json:"pid,omitempty"`
	Error  string     `json:"error,omitempty"` // spawn error or probe failure that led to the exit
}

// failure reports whether this exit counts toward backoff and the crash loop.
func (e Exit) failure() bool {
	switch e.Reason {
	case ReasonRestart, ReasonStop, ReasonKilledAfterTimeout:
		return false
	}
	return true
}

// Status is a snapshot of the supervisor, as `schedd status` shows it. In JSON every
// field is always present; times that are not set (and a pid of 0) are null.
type Status struct {
	State               State     `json:"state"`
	PID                 int       `json:"pid"`
	StartedAt           time.Time `json:"started_at"`
	ReadySince          time.Time `json:"ready_since"`
	Restarts            int       `json:"restarts"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
	NextStartAt         time.Time `json:"next_start_at"`
	LastExit            *Exit     `json:"last_exit"`
	StatusText          string    `json:"status_text"` // the gateway's own STATUS=
	Inflight            *int      `json:"inflight"`    // the gateway's X_SCHEDD_INFLIGHT
}

// MarshalJSON writes unset times and a zero pid as null.
func (s Status) MarshalJSON() ([]byte, error) {
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	var pid *int
	if s.PID != 0 {
		pid = &s.PID
	}
	return json.Marshal(struct {
		State               State      `json:"state"`
		PID                 *int       `json:"pid"`
		StartedAt           *time.Time `json:"started_at"`
		ReadySince          *time.Time `json:"ready_since"`
		Restarts            int        `json:"restarts"`
		ConsecutiveFailures int        `json:"consecutive_failures"`
		NextStartAt         *time.Time `json:"next_start_at"`
		LastExit            *Exit      `json:"last_exit"`
		StatusText          string     `json:"status_text"`
		Inflight            *int       `json:"inflight"`
	}{s.State, pid, opt(s.StartedAt), opt(s.ReadySince), s.Restarts, s.ConsecutiveFailures,
		opt(s.NextStartAt), s.LastExit, s.StatusText, s.Inflight})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Status) UnmarshalJSON(b []byte) error {
	type plain Status
	var p struct {
		plain
		PID *int `json:"pid"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = Status(p.plain)
	if p.PID != nil {
		s.PID = *p.PID
	}
	return nil
}

// Proc is a started gateway process; *platform.Process is the real one.
type Proc interface {
	PID() int
	Signal(sig os.Signal) error
	Kill() error
	Done() <-chan struct{}
	ExitStatus() platform.ExitStatus
	KillGroupAndWait(ctx context.Context) error
	Release() error
}

// Starter starts gateway processes.
type Starter interface {
	Start(cmd platform.Command) (Proc, error)
}

// PlatformStarter starts real processes through internal/platform.
type PlatformStarter struct{}

// Start implements Starter.
func (PlatformStarter) Start(cmd platform.Command) (Proc, error) {
	p, err := platform.Start(cmd)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Readiness says how the supervisor learns that a new gateway is ready.
// With neither Notify nor Probe, a gateway is ready once it has started.
type Readiness struct {
	Notify  bool          // wait for READY=1 on the notify socket
	Probe   probe.Checker // poll until it passes
	Timeout time.Duration // a start that is not ready by then failed; 0 waits forever
}

// Liveness says how the supervisor notices a hung gateway.
type Liveness struct {
	// Watchdog is the WATCHDOG_USEC given to the gateway: it must send WATCHDOG=1 at least
	// this often. 0 turns the notify watchdog off.
	Watchdog time.Duration
	Probe    probe.Checker // checked every Every, each check bounded by Timeout
	Every    time.Duration
	Timeout  time.Duration
	// Failures is how many missed watchdog periods or failed checks in a row end in a kill;
	// the ones before it are logged as warnings.
	Failures int
}

// Config is everything the supervisor needs to run one gateway.
type Config struct {
	Argv    []string
	Env     map[string]string // set in the gateway's environment over BaseEnv
	BaseEnv []string          // the environment to start from (os.Environ()); it is scrubbed
	Dir     string

	// NotifySocket is the path given to the gateway as NOTIFY_SOCKET ("" = none).
	NotifySocket string
	// ControlSocket is the path given to the gateway as SCHEDD_SOCKET ("" = none).
	ControlSocket string

	Readiness Readiness
	Liveness  Liveness

	StopSignal  os.Signal     // default SIGTERM
	StopTimeout time.Duration // then SIGKILL to the whole group; default 30s

	Backoff    backoff.Policy
	ResetAfter time.Duration // ready this long resets the failure count; default 60s

	CrashLoopFailures int           // failures within CrashLoopWindow that mean crash_looping; default 5
	CrashLoopWindow   time.Duration // default 2m

	// MaxLinesPerSecond caps how many lines of gateway output are logged; the rest are
	// counted and reported as dropped. Default 1000.
	MaxLinesPerSecond int
}
