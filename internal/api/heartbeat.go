package api

import "time"

// HeartbeatWakeRequest is the body of POST /v1/heartbeat/wake.
type HeartbeatWakeRequest struct {
	Agent   string `json:"agent,omitempty"`
	Session string `json:"session,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// HeartbeatWakeReply is the 202 reply of POST /v1/heartbeat/wake.
type HeartbeatWakeReply struct {
	Agent      string `json:"agent"` // "" = every agent
	Session    string `json:"session"`
	Reason     string `json:"reason"`      // normalized
	ReasonKind string `json:"reason_kind"` // interval, manual, wake, cron, hook, ...
	// CoalesceMS is how long the wake waits for others to merge with it.
	CoalesceMS int64 `json:"coalesce_ms"`
	// Enabled is the global switch: false means the wake will be skipped as disabled.
	Enabled bool `json:"enabled"`
}

// HeartbeatEnabledRequest is the body of PUT /v1/heartbeat/enabled.
type HeartbeatEnabledRequest struct {
	Enabled *bool `json:"enabled"`
}

// HeartbeatEnabledReply is the 200 reply of PUT /v1/heartbeat/enabled.
type HeartbeatEnabledReply struct {
	Enabled bool `json:"enabled"`
	Changed bool `json:"changed"`
}

// Heartbeat is the `heartbeat` block of the status: the switch and every configured agent.
type Heartbeat struct {
	Enabled bool          `json:"enabled"`
	Agents  []AgentStatus `json:"agents"`
	// NoAgentsConfigured: heartbeat.agents is empty, and Agents holds only the default
	// agent, which runs when heartbeat.defaults gives it a target.
	NoAgentsConfigured bool `json:"no_agents_configured"`
}

// AgentStatus is one agent in Heartbeat, in config order.
type AgentStatus struct {
	ID             string          `json:"id"`
	Enabled        bool            `json:"enabled"`
	DisabledReason string          `json:"disabled_reason,omitempty"` // disabled | no interval | no target
	IntervalMS     int64           `json:"interval_ms"`
	Every          string          `json:"every"` // the interval as the config writes it: 30m, 1h30m
	NextDueAt      *time.Time      `json:"next_due_at"`
	Last           *HeartbeatRun   `json:"last"`
	Event          *HeartbeatEvent `json:"event,omitempty"`
	// ConfigError is the target's refusal of the last pulse it refused (an OpenClaw 401,
	// 404, 400 "unknown agentId" ...), quoting it; it stays until a pulse is accepted or
	// the target is reconfigured.
	ConfigError string `json:"config_error,omitempty"`
	// RateLimitedUntil is when a target's Retry-After ends; no pulse is sent before it.
	RateLimitedUntil *time.Time `json:"rate_limited_until,omitempty"`
}

// RunStatus is how one heartbeat run ended.
type RunStatus string

// The run outcomes.
const (
	RunRan     RunStatus = "ran"
	RunSkipped RunStatus = "skipped"
	RunFailed  RunStatus = "failed"
)

// HeartbeatRun is the most recent outcome of an agent's heartbeat, skips included.
type HeartbeatRun struct {
	Status     RunStatus `json:"status"`
	Reason     string    `json:"reason"`
	DurationMS int64     `json:"duration_ms"`
	At         time.Time `json:"at"`
	// Outcome is what the target said it did with the pulse: an OpenClaw wake's
	// eventOutcome, "queued" or "coalesced".
	Outcome string `json:"outcome,omitempty"`
}

// HeartbeatEvent is what the gateway did with a pulse, as its reply said.
type HeartbeatEvent struct {
	Status    string    `json:"status"` // sent | ok-empty | ok-token | skipped | failed
	Preview   string    `json:"preview,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Indicator string    `json:"indicator,omitempty"` // ok|alert|error, when use_indicator is on
	At        time.Time `json:"at"`
}
