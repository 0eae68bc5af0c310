// Package restart coordinates restart requests for the gateway. Requests come from
// SIGUSR1, `schedd restart`, the control API and config reloads; at most one restart is
// pending and at most one runs. A pending restart waits its delay plus what is left of the
// cooldown since the last restart, then, when deferral is on, until the gateway is idle or
// max_wait has passed (then it is forced). Requests that arrive meanwhile merge into it
// (their reasons kept); a sooner one pulls it earlier; one that arrives while a restart
// runs becomes exactly one follow-up. A stop cancels what is pending.
//
// One goroutine, Run, owns every timer; Request is a cheap round trip to it, so a storm of
// signals never piles up goroutines.
package restart

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Source says where a restart request came from.
type Source string

// The request sources.
const (
	SourceSignal Source = "signal" // SIGUSR1
	SourceCLI    Source = "cli"    // schedd restart
	SourceAPI    Source = "api"    // POST /v1/restart from another client
	SourceConfig Source = "config" // a reloaded config changed the gateway
)

// Limits and defaults, as upstream has them.
const (
	DefaultDelay        = 2 * time.Second
	MaxDelay            = 60 * time.Second
	DefaultCooldown     = 30 * time.Second
	DefaultPoll         = 500 * time.Millisecond
	MinPoll             = 10 * time.Millisecond
	DefaultMaxWait      = 300 * time.Second
	DefaultProbeTimeout = 5 * time.Second
	MaxReasonLen        = 200
	historyLen          = 20
)

// ErrStopping is what waiters get when schedd stops before their restart ran.
var ErrStopping = errors.New("schedd is stopping; the restart was cancelled")

// Method is how a restart is done.
type Method string

// The restart methods.
const (
	MethodRespawn Method = "respawn" // stop the gateway, start a new one (a fresh pid)
	MethodSignal  Method = "signal"  // signal the gateway to restart in process
)

// Request asks for a restart.
type Request struct {
	Reason string
	Source Source
	// Delay overrides the configured delay (clamped to 0..60 s); nil uses it.
	Delay *time.Duration
	// Now skips the delay, the cooldown and the idle deferral.
	Now bool
	// MaxWait overrides the configured deferral ceiling for this restart (0 keeps it).
	MaxWait time.Duration
}

// Counter reports how much work the gateway has in flight; 0 is idle. An error (or a
// check that outlives its timeout) means "not idle".
type Counter interface {
	Inflight(ctx context.Context) (int, error)
}

// Outcome is what the restarter reports for one restart.
type Outcome struct {
	OK          bool
	PID         int
	PreviousPID int
	Error       string
}

// Restarter performs a restart (the supervisor).
type Restarter interface {
	Restart(ctx context.Context, m Method) (Outcome, error)
}

// Config is the coordinator's configuration.
type Config struct {
	Delay    time.Duration // for requests without their own (0 is valid); clamped 0..60 s
	Cooldown time.Duration // minimum gap between restarts, applied as extra delay (0 is valid)
	Method   Method
	// Idle, when set, defers restarts until the gateway is idle (unless a request says Now).
	Idle         Counter
	Poll         time.Duration // how often Idle is asked (default 500 ms, at least 10 ms)
	MaxWait      time.Duration // then the restart is forced (default 300 s)
	ProbeTimeout time.Duration // per Idle check (default 5 s)
}

// withDefaults fills the zero fields of c. Negative durations count as zero.
func (c Config) withDefaults() Config {
	c.Delay = clampDelay(c.Delay)
	c.Cooldown = max(c.Cooldown, 0)
	if c.Method == "" {
		c.Method = MethodRespawn
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	c.Poll = max(c.Poll, MinPoll)
	if c.MaxWait <= 0 {
		c.MaxWait = DefaultMaxWait
	}
	c.MaxWait = max(c.MaxWait, c.Poll)
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = DefaultProbeTimeout
	}
	return c
}

func clampDelay(d time.Duration) time.Duration { return min(max(d, 0), MaxDelay) }

// cleanReason trims a reason and caps its length.
func cleanReason(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\n", " "))
	if len(s) > MaxReasonLen {
		s = s[:MaxReasonLen]
	}
	return s
}

// Result records one restart; it is status's `restart.last`.
type Result struct {
	OK                bool      `json:"ok"`
	PID               int       `json:"pid"`
	PreviousPID       int       `json:"previous_pid"`
	Reason            string    `json:"reason"`  // the merged reasons, "; "-separated
	Reasons           []string  `json:"reasons"` // each request's reason
	Sources           []Source  `json:"sources"`
	Requests          int       `json:"requests"` // how many requests this restart served
	Mode              string    `json:"mode"`     // immediate|scheduled|deferred
	Method            Method    `json:"method"`
	DelayMs           int64     `json:"delay_ms"`            // the requested delay that was waited
	DeferredMs        int64     `json:"deferred_ms"`         // time spent waiting for idle
	Forced            bool      `json:"forced"`              // max_wait ran out before the gateway was idle
	Coalesced         bool      `json:"coalesced"`           // more than one request merged into it
	CooldownMsApplied int64     `json:"cooldown_ms_applied"` // extra delay from the cooldown
	At                time.Time `json:"at"`                  // when the restart began
	DurationMs        int64     `json:"duration_ms"`         // from begin to ready (or failure)
	Error             string    `json:"error,omitempty"`
}

// The Result modes.
const (
	ModeImmediate = "immediate" // Now: no delay, cooldown or deferral
	ModeScheduled = "scheduled" // after the delay (and cooldown), no deferral
	ModeDeferred  = "deferred"  // waited for the gateway to be idle
)

// Pending describes the restart waiting to run; it is status's `restart.pending`.
type Pending struct {
	Reasons       []string   `json:"reasons"`
	Sources       []Source   `json:"sources"`
	Requests      int        `json:"requests"`
	RequestedAt   time.Time  `json:"requested_at"`   // the first request
	DueAt         time.Time  `json:"due_at"`         // when the delay (and cooldown) ends
	DeferredSince *time.Time `json:"deferred_since"` // waiting for idle since
	Inflight      *int       `json:"inflight"`       // the last idle check's answer
	DeadlineAt    *time.Time `json:"deadline_at"`    // forced at
	FollowUp      bool       `json:"follow_up"`      // waits for the running restart
}

// Status is the `restart` block of the status document.
type Status struct {
	Pending    *Pending         `json:"pending"`
	InProgress bool             `json:"in_progress"`
	Last       *Result          `json:"last"`
	History    []Result         `json:"history"` // the last 20, oldest first
	Requests   map[Source]int64 `json:"requests"`
}

// Ticket is the answer to a request.
type Ticket struct {
	Coalesced bool    `json:"coalesced"` // merged into a restart already pending (or running's follow-up)
	Pending   Pending `json:"pending"`   // the restart it belongs to, as of the reply
	done      <-chan outcome
}

type outcome struct {
	res Result
	err error
}

// Wait blocks until the ticket's restart has run (or schedd stops) and returns its result.
func (t Ticket) Wait(ctx context.Context) (Result, error) {
	select {
	case o := <-t.done:
		return o.res, o.err
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}
