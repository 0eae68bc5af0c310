package heartbeat

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/outbound"
)

// Pulse is what a target receives when an agent's heartbeat runs: the JSON body of an
// http target, the stdin of an exec target.
type Pulse struct {
	AgentID     string             `json:"agent_id"`
	SessionKey  string             `json:"session_key"`
	Reason      string             `json:"reason"`
	ReasonKind  ReasonKind         `json:"reason_kind"`
	Visibility  ResolvedVisibility `json:"visibility"`
	ScheduledAt time.Time          `json:"scheduled_at"`
	Attempt     int                `json:"attempt"` // 1, then +1 for each busy retry
}

// Event statuses a target may report (upstream heartbeat events).
const (
	EventSent    = "sent"
	EventOKEmpty = "ok-empty"
	EventOKToken = "ok-token"
	EventSkipped = "skipped"
	EventFailed  = "failed"
)

// maxPreview is how much of an event preview is kept.
const maxPreview = 200

func validEventStatus(s string) bool {
	switch s {
	case EventSent, EventOKEmpty, EventOKToken, EventSkipped, EventFailed:
		return true
	}
	return false
}

// indicatorFor maps an event status to the indicator upstream shows.
func indicatorFor(status string) string {
	switch status {
	case EventOKEmpty, EventOKToken:
		return "ok"
	case EventSent:
		return "alert"
	case EventFailed:
		return "error"
	}
	return ""
}

// outcome is how a pulse went.
type outcome uint8

const (
	outcomeRan outcome = iota
	outcomeBusy
	outcomeFailed
	outcomeLimited // the target asked to be left alone for retryAfter
)

type pulseResult struct {
	outcome    outcome
	reason     string              // busy or failure reason
	event      *api.HeartbeatEvent // from the reply, if it carried one
	answer     string              // what the target said it did (an OpenClaw eventOutcome)
	configErr  string              // the target refused the pulse: fix the config, not a retry
	retryAfter time.Duration       // outcomeLimited: how long to hold back
}

// pulser delivers pulses to one configured target.
type pulser interface {
	// pulse delivers p within the target's timeout (a failure "timeout"), or returns soon
	// after ctx ends (a failure "stopped").
	pulse(ctx context.Context, p Pulse) pulseResult
}

// reply is the optional JSON a target answers with.
type reply struct {
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Preview string `json:"preview"`
}

// parseReply reads a target's reply. A reply that is not a JSON object, or whose status is
// not an event status, carries no event.
func parseReply(data []byte) (r reply, ok bool) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' || json.Unmarshal(data, &r) != nil {
		return reply{}, false
	}
	return r, validEventStatus(r.Status)
}

// classify turns a transport success plus an optional reply into a result.
func classify(data []byte) pulseResult {
	r, ok := parseReply(data)
	if !ok {
		return pulseResult{outcome: outcomeRan}
	}
	ev := &api.HeartbeatEvent{Status: r.Status, Reason: r.Reason, Preview: truncate(r.Preview, maxPreview)}
	switch {
	case r.Status == EventSkipped && IsBusyReason(r.Reason):
		return pulseResult{outcome: outcomeBusy, reason: r.Reason, event: ev}
	case r.Status == EventFailed:
		return pulseResult{outcome: outcomeFailed, reason: nonEmpty(r.Reason, "target reported failure"), event: ev}
	}
	return pulseResult{outcome: outcomeRan, event: ev}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// maxReply caps how much of a target's reply is read.
const maxReply = 64 << 10

// newHTTPClient is the client every http target of a service shares. It keeps an idle
// connection per pulse worker to each target (the default keeps two per host), so a burst
// of pulses to one gateway reuses its connections instead of opening new ones. Redirects
// are not followed.
func newHTTPClient() *http.Client {
	c := outbound.Client(pulseWorkers)
	c.Transport.(*http.Transport).MaxIdleConns = 4 * pulseWorkers
	return c
}

type httpPulser struct {
	url     string
	method  string
	headers map[string]string
	limit   time.Duration
	client  *http.Client
}

func newHTTPPulser(t *HTTPTarget, client *http.Client) *httpPulser {
	method := strings.ToUpper(strings.TrimSpace(t.Method))
	return &httpPulser{url: t.URL, method: method, headers: t.Headers, limit: t.Timeout, client: client}
}

// pulse sends p as JSON. 2xx ran (unless the reply says busy or failed); 429 and 503 are
// busy; any other status, a transport error, a reply cut short or the timeout failed.
func (h *httpPulser) pulse(ctx context.Context, p Pulse) pulseResult {
	body, err := json.Marshal(p)
	if err != nil {
		return pulseResult{outcome: outcomeFailed, reason: "encode pulse: " + err.Error()}
	}
	hdr := make(http.Header, len(h.headers))
	for k, v := range h.headers {
		hdr.Set(k, v)
	}
	r, fail := exchange(ctx, h.client, h.method, h.url, body, hdr, h.limit)
	if fail != nil {
		return *fail
	}
	return classifyHTTP(r.Code, r.Body)
}

// exchange sends body as JSON with hdr on top and reads the reply, all within limit. fail
// is set when no whole reply came.
func exchange(ctx context.Context, client *http.Client, method, url string, body []byte, hdr http.Header, limit time.Duration) (
	r outbound.Response, fail *pulseResult) {
	h := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"schedd-heartbeat"}}
	for k, v := range hdr {
		h[k] = v
	}
	// A reply up to maxReply is read whole, which lets the connection carry the next pulse;
	// a longer one is cut there and its connection closed.
	r = outbound.Exchange(ctx, client, outbound.Request{Method: method, URL: url, Header: h, Body: body,
		Timeout: limit, MaxBody: maxReply})
	if reason := faultReason(r.Fault, r.Err); reason != "" {
		return r, &pulseResult{outcome: outcomeFailed, reason: reason}
	}
	return r, nil
}

// faultReason is the failure reason of an outbound call that fell short ("" when it did
// not): its timeout, the service stopping, or the error without the URL, which may carry
// a token.
func faultReason(f outbound.Fault, err error) string {
	switch f {
	case outbound.NoFault:
		return ""
	case outbound.FaultTimeout:
		return reasonTimeout
	case outbound.FaultCancelled:
		return reasonStopped
	case outbound.FaultRequest:
		return "build request: " + outbound.WithoutURL(err).Error()
	case outbound.FaultTransport, outbound.FaultBody:
		return "http: " + outbound.WithoutURL(err).Error()
	}
	return err.Error()
}

// classifyHTTP turns a reply into a result: 2xx ran (unless the body says busy or failed),
// 429 and 503 busy, anything else failed.
func classifyHTTP(code int, data []byte) pulseResult {
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		res := pulseResult{outcome: outcomeBusy, reason: SkipRequestsInFlight}
		if r, ok := parseReply(data); ok && IsBusyReason(r.Reason) {
			res.reason = r.Reason
		}
		return res
	case code >= 200 && code < 300:
		return classify(data)
	default:
		return pulseResult{outcome: outcomeFailed, reason: "http status " + strconv.Itoa(code)}
	}
}

// ExitBusy is the exit code (EX_TEMPFAIL) by which an exec target says "busy, retry".
const ExitBusy = outbound.ExitTempFail

type execPulser struct {
	argv    []string
	environ []string // the environment the command starts from (nil: schedd's own)
	limit   time.Duration
	run     outbound.RunFunc
}

// pulse runs the command: exit 0 ran (unless stdout's reply says busy or failed), 75 busy,
// anything else, a start error or the timeout failed.
func (e *execPulser) pulse(ctx context.Context, p Pulse) pulseResult {
	stdin, err := json.Marshal(p)
	if err != nil {
		return pulseResult{outcome: outcomeFailed, reason: "encode pulse: " + err.Error()}
	}
	r := e.run.Run(ctx, outbound.Command{Argv: e.argv, Env: outbound.Environ(e.environ, PulseEnv(p)...), Stdin: stdin,
		Timeout: e.limit})
	switch {
	case r.Fault == outbound.FaultTimeout || r.Fault == outbound.FaultCancelled:
		return pulseResult{outcome: outcomeFailed, reason: faultReason(r.Fault, r.Err)}
	case r.Err != nil:
		return pulseResult{outcome: outcomeFailed, reason: r.Err.Error()}
	case !r.Exit.Exited:
		return pulseResult{outcome: outcomeFailed, reason: r.Exit.String()}
	case r.Exit.Code == ExitBusy:
		return pulseResult{outcome: outcomeBusy, reason: SkipRequestsInFlight}
	case r.Exit.Code != 0:
		return pulseResult{outcome: outcomeFailed, reason: fmt.Sprintf("exit status %d", r.Exit.Code)}
	}
	return classify(r.Stdout)
}

// PulseEnv is the environment an exec target gets on top of the daemon's.
func PulseEnv(p Pulse) []string {
	return []string{
		"SCHEDD_AGENT_ID=" + p.AgentID,
		"SCHEDD_SESSION_KEY=" + p.SessionKey,
		"SCHEDD_REASON=" + p.Reason,
		"SCHEDD_REASON_KIND=" + string(p.ReasonKind),
		"SCHEDD_VISIBILITY=" + p.Visibility.String(),
		"SCHEDD_SCHEDULED_AT=" + p.ScheduledAt.UTC().Format(time.RFC3339Nano),
		"SCHEDD_ATTEMPT=" + strconv.Itoa(p.Attempt),
	}
}

// Failure reasons of a pulse cut short.
const (
	reasonTimeout = "timeout"
	reasonStopped = "stopped"
)

// errNoRunFunc is returned by New when an exec target is configured without a RunFunc.
var errNoRunFunc = errors.New("exec target configured but Deps.Run is nil")

// targetKey identifies what a pulser for t does: targets with equal keys share one.
func targetKey(t *Target) string {
	switch {
	case t == nil:
		return ""
	case t.HTTP != nil:
		h := t.HTTP
		return fmt.Sprintf("http %q %q %v %q", h.URL, h.Method, h.Timeout, slices.Sorted(func(yield func(string) bool) {
			for k, v := range h.Headers {
				if !yield(strconv.Quote(k) + ":" + strconv.Quote(v)) {
					return
				}
			}
		}))
	case t.Exec != nil:
		return fmt.Sprintf("exec %q %v", t.Exec.Command, t.Exec.Timeout)
	case t.OpenClaw != nil:
		// The token's hash, not the token: a key is never printed, but need not hold it.
		sum := sha256.Sum256([]byte(t.OpenClaw.Token))
		return fmt.Sprintf("openclaw %q %x %v", t.OpenClaw.URL, sum[:8], t.OpenClaw.Timeout)
	}
	return ""
}

// newPulser builds the pulser for t: http targets send with client, exec targets run with
// run, starting from environ.
func newPulser(t *Target, client *http.Client, run outbound.RunFunc, environ []string) (pulser, error) {
	switch {
	case t.HTTP != nil:
		return newHTTPPulser(t.HTTP, client), nil
	case t.Exec != nil:
		if run == nil {
			return nil, errNoRunFunc
		}
		return &execPulser{argv: t.Exec.Command, environ: environ, limit: t.Exec.Timeout, run: run}, nil
	case t.OpenClaw != nil:
		o := t.OpenClaw
		return &openclawPulser{url: o.URL, token: o.Token, limit: o.Timeout, client: client}, nil
	}
	return nil, errors.New("target names no kind")
}
