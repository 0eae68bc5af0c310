package api

import "time"

// RestartSource says where a restart request came from.
type RestartSource string

// The request sources.
const (
	SourceSignal RestartSource = "signal" // SIGUSR1
	SourceCLI    RestartSource = "cli"    // schedd restart
	SourceAPI    RestartSource = "api"    // POST /v1/restart from another client
	SourceConfig RestartSource = "config" // a reloaded config changed the gateway
)

// MaxRestartDelay is the longest delay a restart request may ask for.
const MaxRestartDelay = 60 * time.Second

// RestartRequest is the body of POST /v1/restart.
type RestartRequest struct {
	Reason  string `json:"reason,omitempty"`
	Now     bool   `json:"now,omitempty"`      // skip the delay, the cooldown and the idle deferral
	Wait    bool   `json:"wait,omitempty"`     // reply only when the restart has completed
	MaxWait string `json:"max_wait,omitempty"` // override restart.defer_until_idle.max_wait (Go duration)
	Delay   string `json:"delay,omitempty"`    // override restart.delay (Go duration, 0s..60s)
	Method  string `json:"method,omitempty"`   // override restart.method: respawn | signal
	Source  string `json:"source,omitempty"`   // "cli" from `schedd restart`; default "api"
	Daemon  bool   `json:"daemon,omitempty"`   // replace schedd itself with a fresh process
}

// The restart methods, as restart.method and a request's method name them.
const (
	RestartMethodRespawn = "respawn" // stop the gateway, start a new one (a fresh pid)
	RestartMethodSignal  = "signal"  // signal the gateway to restart in process
)

// RestartReply is the reply of POST /v1/restart. Without wait it is 202 with the pending
// restart the request joined; with wait it is 200 with the result too (whose ok says
// whether the restart worked).
type RestartReply struct {
	Coalesced bool            `json:"coalesced"`
	Pending   *RestartPending `json:"pending,omitempty"`
	Result    *RestartResult  `json:"result,omitempty"`
	Daemon    *SelfRespawn    `json:"daemon,omitempty"`
}

// SelfRespawn reports how schedd replaces itself with a fresh process.
type SelfRespawn struct {
	Mode   string `json:"mode"` // disabled|supervised|spawned|failed
	PID    int    `json:"pid,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// RestartResult records one restart; it is the status's `restart.last`. Reasons are the
// reasons of the last requests it served (at most 5, each cut at 200 bytes, ending with
// "…" when cut) and Sources their sources; Requests counts them all. Reason is Reasons
// "; "-separated, with "(and N earlier requests)" for the requests whose reason is not kept.
type RestartResult struct {
	OK                bool            `json:"ok"`
	PID               int             `json:"pid"`
	PreviousPID       int             `json:"previous_pid"`
	Reason            string          `json:"reason"`  // the merged reasons
	Reasons           []string        `json:"reasons"` // the last requests' reasons
	Sources           []RestartSource `json:"sources"`
	Requests          int             `json:"requests"`            // how many requests this restart served
	Mode              string          `json:"mode"`                // immediate|scheduled|deferred
	Method            string          `json:"method"`              // respawn|signal
	DelayMs           int64           `json:"delay_ms"`            // the requested delay that was waited
	DeferredMs        int64           `json:"deferred_ms"`         // time spent waiting for idle
	Forced            bool            `json:"forced"`              // max_wait ran out before the gateway was idle
	Coalesced         bool            `json:"coalesced"`           // more than one request merged into it
	CooldownMsApplied int64           `json:"cooldown_ms_applied"` // extra delay from the cooldown
	At                time.Time       `json:"at"`                  // when the restart began
	DurationMs        int64           `json:"duration_ms"`         // from begin to ready (or failure)
	Error             string          `json:"error,omitempty"`
	Fence             *FenceResult    `json:"fence,omitempty"` // the idle fence, when one was used
}

// RestartPending describes the restart waiting to run; it is the status's `restart.pending`.
// Reasons and Sources are those of its last requests, as in RestartResult.
type RestartPending struct {
	Reasons       []string        `json:"reasons"`
	Sources       []RestartSource `json:"sources"`
	Requests      int             `json:"requests"`
	RequestedAt   time.Time       `json:"requested_at"`          // the first request
	DueAt         time.Time       `json:"due_at"`                // when the delay (and cooldown) ends
	DeferredSince *time.Time      `json:"deferred_since"`        // waiting for idle since
	Inflight      *int            `json:"inflight"`              // the last idle check's answer
	DeadlineAt    *time.Time      `json:"deadline_at"`           // forced at
	FollowUp      bool            `json:"follow_up"`             // waits for the running restart
	IdleError     string          `json:"idle_error,omitempty"`  // why the last idle check failed
	IdleDetail    *IdleDetail     `json:"idle_detail,omitempty"` // why the gateway is busy (openclaw)
	Fence         *FenceState     `json:"fence,omitempty"`       // the idle fence, once prepared
}

// IdleDetail is what an OpenClaw idle check (gateway.restart.preflight) said.
type IdleDetail struct {
	Summary  string         `json:"summary,omitempty"`
	Counts   map[string]int `json:"counts,omitempty"`
	Blockers []string       `json:"blockers,omitempty"`
}

// FenceState is an idle fence (an OpenClaw suspension: no new work is admitted) as its
// last call reported it.
type FenceState struct {
	Status       string     `json:"status"` // draining|ready (busy: refused, retried)
	SuspensionID string     `json:"suspension_id,omitempty"`
	ExpiresAt    *time.Time `json:"expires_at,omitempty"` // the lease's end; renewed before
	ActiveCount  *int       `json:"active_count,omitempty"`
	Blockers     []string   `json:"blockers,omitempty"`
	Reason       string     `json:"reason,omitempty"`
	PreparedAt   *time.Time `json:"prepared_at,omitempty"`
	Error        string     `json:"error,omitempty"` // why the last fence call failed
}

// FenceResult says how a restart used its idle fence.
type FenceResult struct {
	Ready    bool   `json:"ready"`   // the gateway reported ready before the restart
	WaitMs   int64  `json:"wait_ms"` // from the first prepare to the restart
	Resumed  bool   `json:"resumed"` // admission was reopened (the old process lives on)
	ResumeMs int64  `json:"resume_ms,omitempty"`
	Error    string `json:"error,omitempty"` // a failed resume
}

// Restart is the `restart` block of the status.
type Restart struct {
	Pending    *RestartPending         `json:"pending"`
	InProgress bool                    `json:"in_progress"`
	Last       *RestartResult          `json:"last"`
	History    []RestartResult         `json:"history"` // the last 20, oldest first
	Requests   map[RestartSource]int64 `json:"requests"`
}
