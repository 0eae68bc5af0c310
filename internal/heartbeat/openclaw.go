package heartbeat

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/schedd/schedd/internal/openclaw"
)

// OpenClawTarget wakes an OpenClaw agent's heartbeat through the gateway's /hooks/wake.
type OpenClawTarget struct {
	URL     string        // e.g. http://127.0.0.1:18789/hooks/wake
	Token   string        // the gateway's hooks.token: a secret
	Timeout time.Duration // required, > 0; the config sets its default
}

// SkipRateLimited is the skip reason while an OpenClaw gateway's Retry-After runs.
const SkipRateLimited = "rate-limited"

// maxRateLimitWait caps how long a Retry-After keeps pulses back.
const maxRateLimitWait = time.Hour

// configErrorPrefix starts the last run's reason when the gateway refused the pulse.
const configErrorPrefix = "config_error: "

// wakeBody is what /hooks/wake takes.
type wakeBody struct {
	Text       string `json:"text"`
	Mode       string `json:"mode"`
	AgentID    string `json:"agentId"`
	SessionKey string `json:"sessionKey,omitempty"`
}

// WakeText is the line the agent's heartbeat turn is woken with.
func WakeText(p Pulse) string {
	s := "schedd heartbeat: " + p.Reason
	if string(p.ReasonKind) != p.Reason {
		s += " (" + string(p.ReasonKind) + ")"
	}
	s += ", scheduled " + p.ScheduledAt.UTC().Format(time.RFC3339)
	if p.Attempt > 1 {
		s += fmt.Sprintf(", attempt %d", p.Attempt)
	}
	return s
}

type openclawPulser struct {
	url    string
	token  string
	limit  time.Duration
	client *http.Client
}

// pulse posts a wake with mode "now". A 2xx {"ok": true} ran (its eventOutcome kept); 503
// is busy, retried like requests in flight; 429 holds the agent back for its Retry-After;
// a refusal (401, 403, 404, 405, 400 ...) is a configuration error, not retried: the agent
// keeps its cadence, one try per tick; anything else failed for this tick.
func (o *openclawPulser) pulse(ctx context.Context, p Pulse) pulseResult {
	body, err := json.Marshal(wakeBody{Text: WakeText(p), Mode: "now", AgentID: p.AgentID, SessionKey: p.SessionKey})
	if err != nil {
		return pulseResult{outcome: outcomeFailed, reason: "encode wake: " + err.Error()}
	}
	hdr := http.Header{}
	openclaw.Authorize(hdr, o.token)
	resp, fail := exchange(ctx, o.client, http.MethodPost, o.url, body, hdr, o.limit)
	if fail != nil {
		return *fail
	}
	r := openclaw.Classify(resp.Code, resp.Header, resp.Body, time.Now())
	msg := openclaw.Scrub(r.Message, o.token)
	switch r.Class {
	case openclaw.Accepted:
		return pulseResult{outcome: outcomeRan, answer: r.Outcome}
	case openclaw.Busy:
		return pulseResult{outcome: outcomeBusy, reason: SkipRequestsInFlight}
	case openclaw.RateLimited:
		return pulseResult{outcome: outcomeLimited, reason: SkipRateLimited, retryAfter: min(r.RetryAfter, maxRateLimitWait)}
	case openclaw.Refused:
		return pulseResult{outcome: outcomeFailed, reason: configErrorPrefix + msg, configErr: msg}
	}
	return pulseResult{outcome: outcomeFailed, reason: msg}
}
