package api

import (
	"encoding/json"
	"time"
)

// GatewayState is where the gateway is in its lifecycle.
type GatewayState string

// The gateway states.
const (
	GatewayStarting     GatewayState = "starting"      // spawned, waiting for readiness
	GatewayReady        GatewayState = "ready"         // ready and watched for liveness
	GatewayStopping     GatewayState = "stopping"      // stop signal sent, waiting for the group to exit
	GatewayBackoff      GatewayState = "backoff"       // waiting before the next start after a failure
	GatewayCrashLooping GatewayState = "crash_looping" // like backoff, after too many failures in the window
	GatewayStopped      GatewayState = "stopped"       // not running and not going to be restarted
	GatewayFailed       GatewayState = "failed"        // exited with a no-restart code; waits for a restart request or a reload
)

// GatewayStates lists every GatewayState, for the label sets of metrics: a state added
// above belongs here too.
var GatewayStates = []GatewayState{GatewayStarting, GatewayReady, GatewayStopping, GatewayBackoff,
	GatewayCrashLooping, GatewayStopped, GatewayFailed}

// ExitReason says why a gateway process ended.
type ExitReason string

// The last_exit.reason values.
const (
	ExitExited             ExitReason = "exit"                 // exited on its own with a code
	ExitSignal             ExitReason = "signal"               // killed by a signal schedd did not send
	ExitSpawnFailed        ExitReason = "spawn_failed"         // could not be started at all
	ExitPortInUse          ExitReason = "port_in_use"          // not started: its port stayed busy
	ExitReadinessTimeout   ExitReason = "readiness_timeout"    // never became ready in time
	ExitLivenessTimeout    ExitReason = "liveness_timeout"     // stopped answering its liveness check
	ExitKilledAfterTimeout ExitReason = "killed_after_timeout" // ignored the stop signal and was killed
	ExitRestart            ExitReason = "restart"              // stopped for a requested restart
	ExitStop               ExitReason = "stop"                 // stopped because schedd stops
)

// ExitReasons lists every ExitReason, for the label sets of metrics: a reason added above
// belongs here too.
var ExitReasons = []ExitReason{ExitExited, ExitSignal, ExitSpawnFailed, ExitPortInUse, ExitReadinessTimeout,
	ExitLivenessTimeout, ExitKilledAfterTimeout, ExitRestart, ExitStop}

// Exit records how one gateway process ended.
type Exit struct {
	Reason ExitReason `json:"reason"`
	Code   *int       `json:"code"`             // exit code, when it exited
	Signal string     `json:"signal,omitempty"` // signal name, when a signal ended it
	At     time.Time  `json:"at"`
	PID    int        `json:"pid,omitempty"`
	Error  string     `json:"error,omitempty"` // spawn error or probe failure that led to the exit
	// Output is the gateway's last lines of output, for an exit that left it failed.
	Output []string `json:"output,omitempty"`
}

// Gateway is the supervisor's snapshot, the `gateway` block of the status. In JSON every
// field is always present; times that are not set (and a pid of 0) are null.
type Gateway struct {
	State               GatewayState `json:"state"`
	PID                 int          `json:"pid"`
	StartedAt           time.Time    `json:"started_at"`
	ReadySince          time.Time    `json:"ready_since"`
	Restarts            int          `json:"restarts"`
	ConsecutiveFailures int          `json:"consecutive_failures"`
	NextStartAt         time.Time    `json:"next_start_at"`
	// DownSince is when the last gateway process ended (or, when none has run, when schedd
	// first tried to start one); unset while a process runs.
	DownSince  time.Time `json:"down_since"`
	LastExit   *Exit     `json:"last_exit"`
	StatusText string    `json:"status_text"` // the gateway's own STATUS=; cleared when it exits
	Inflight   *int      `json:"inflight"`    // the gateway's X_SCHEDD_INFLIGHT; cleared when it exits
	// NextPID is the new gateway of an overlapping restart (restart.overlap) while it
	// starts beside the one that serves; DrainingPID the old one while it drains after
	// the new one took over. 0 otherwise.
	NextPID     int `json:"next_pid,omitempty"`
	DrainingPID int `json:"draining_pid,omitempty"`
	// History is the gateway's last starts (at most MaxGatewayHistory), oldest first.
	History []GatewayRun `json:"history"`
}

// MaxGatewayHistory is how many of the gateway's starts Gateway.History keeps.
const MaxGatewayHistory = 10

// GatewayRun is one start of the gateway in Gateway.History: when it started, when it was
// ready and, once it has ended, how (an Exit without the output lines). A start that never
// spawned a process (spawn_failed, port_in_use) has no pid.
type GatewayRun struct {
	StartedAt time.Time  `json:"started_at"`
	PID       int        `json:"pid,omitempty"`
	ReadyAt   *time.Time `json:"ready_at"`
	Exit      *Exit      `json:"exit"` // null while it runs
}

// gatewayJSON is Gateway as it is written: unset times and a zero pid are null.
type gatewayJSON struct {
	State               GatewayState `json:"state"`
	PID                 *int         `json:"pid"`
	StartedAt           *time.Time   `json:"started_at"`
	ReadySince          *time.Time   `json:"ready_since"`
	Restarts            int          `json:"restarts"`
	ConsecutiveFailures int          `json:"consecutive_failures"`
	NextStartAt         *time.Time   `json:"next_start_at"`
	DownSince           *time.Time   `json:"down_since"`
	LastExit            *Exit        `json:"last_exit"`
	StatusText          string       `json:"status_text"`
	Inflight            *int         `json:"inflight"`
	NextPID             int          `json:"next_pid,omitempty"`
	DrainingPID         int          `json:"draining_pid,omitempty"`
	History             []GatewayRun `json:"history"`
}

// MarshalJSON writes unset times and a zero pid as null, and no history as [].
func (g Gateway) MarshalJSON() ([]byte, error) {
	j := gatewayJSON{State: g.State, StartedAt: optTime(g.StartedAt), ReadySince: optTime(g.ReadySince),
		Restarts: g.Restarts, ConsecutiveFailures: g.ConsecutiveFailures, NextStartAt: optTime(g.NextStartAt),
		DownSince: optTime(g.DownSince), LastExit: g.LastExit, StatusText: g.StatusText, Inflight: g.Inflight,
		NextPID: g.NextPID, DrainingPID: g.DrainingPID, History: g.History}
	if j.History == nil {
		j.History = []GatewayRun{}
	}
	if g.PID != 0 {
		j.PID = &g.PID
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (g *Gateway) UnmarshalJSON(b []byte) error {
	var j gatewayJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*g = Gateway{State: j.State, StartedAt: derefTime(j.StartedAt), ReadySince: derefTime(j.ReadySince),
		Restarts: j.Restarts, ConsecutiveFailures: j.ConsecutiveFailures, NextStartAt: derefTime(j.NextStartAt),
		DownSince: derefTime(j.DownSince), LastExit: j.LastExit, StatusText: j.StatusText, Inflight: j.Inflight,
		NextPID: j.NextPID, DrainingPID: j.DrainingPID}
	if len(j.History) > 0 {
		g.History = j.History
	}
	if j.PID != nil {
		g.PID = *j.PID
	}
	return nil
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
