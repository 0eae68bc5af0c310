package heartbeat

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/schedd/schedd/internal/api"
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
// are not followed: a target that moved is a configuration problem, and following a 302
// would turn the POST into a GET.
func newHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = pulseWorkers
	t.MaxIdleConns = 4 * pulseWorkers
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type httpPulser struct {
	url     string
	method  string
	headers map[string]string
	limit   time.Duration
	client  *http.Client
}

func newHTTPPulser(t *HTTPTarget, client *http.Client, fallback time.Duration) *httpPulser {
	method := strings.ToUpper(strings.TrimSpace(t.Method))
	if method == "" {
		method = http.MethodPost
	}
	return &httpPulser{url: t.URL, method: method, headers: t.Headers, limit: nonZero(t.Timeout, fallback), client: client}
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
	code, _, data, fail := exchange(ctx, h.client, h.method, h.url, body, hdr, h.limit)
	if fail != nil {
		return *fail
	}
	return classifyHTTP(code, data)
}

// exchange sends body as JSON with hdr on top and reads the reply, all within limit. fail
// is set when no whole reply came.
func exchange(ctx context.Context, client *http.Client, method, url string, body []byte, hdr http.Header, limit time.Duration) (
	code int, header http.Header, data []byte, fail *pulseResult) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, &pulseResult{outcome: outcomeFailed, reason: "build request: " + withoutURL(err).Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "schedd-heartbeat")
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		res := httpFailure(ctx, err)
		return 0, nil, nil, &res
	}
	defer resp.Body.Close()
	// A reply up to maxReply is read whole, which lets the connection carry the next pulse;
	// a longer one is cut there and its connection closed.
	data, err = io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		res := httpFailure(ctx, err)
		return 0, nil, nil, &res
	}
	return resp.StatusCode, resp.Header, data, nil
}

// httpFailure is the result of an exchange that got no whole reply.
func httpFailure(ctx context.Context, err error) pulseResult {
	if ctx.Err() != nil {
		return pulseResult{outcome: outcomeFailed, reason: ctxReason(ctx)}
	}
	return pulseResult{outcome: outcomeFailed, reason: "http: " + withoutURL(err).Error()}
}

// withoutURL drops the URL from err, which may carry a token.
func withoutURL(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
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

// RunFunc runs argv to completion with env added to the daemon's environment and stdin
// fed to it, returning the exit code and (capped) stdout. It must kill the command and
// return once ctx ends. A non-zero exit is not an error; err is for a command that could
// not start or did not finish. The daemon fills it from platform.RunCommand.
type RunFunc func(ctx context.Context, argv, env []string, stdin []byte) (exitCode int, stdout []byte, err error)

// ExitBusy is the exit code (EX_TEMPFAIL) by which an exec target says "busy, retry".
const ExitBusy = 75

type execPulser struct {
	argv  []string
	limit time.Duration
	run   RunFunc
}

// pulse runs the command: exit 0 ran (unless stdout's reply says busy or failed), 75 busy,
// anything else, a start error or the timeout failed.
func (e *execPulser) pulse(ctx context.Context, p Pulse) pulseResult {
	stdin, err := json.Marshal(p)
	if err != nil {
		return pulseResult{outcome: outcomeFailed, reason: "encode pulse: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, e.limit)
	defer cancel()
	code, stdout, err := e.run(ctx, e.argv, PulseEnv(p), stdin)
	switch {
	case ctx.Err() != nil:
		return pulseResult{outcome: outcomeFailed, reason: ctxReason(ctx)}
	case err != nil:
		return pulseResult{outcome: outcomeFailed, reason: err.Error()}
	case code == ExitBusy:
		return pulseResult{outcome: outcomeBusy, reason: SkipRequestsInFlight}
	case code != 0:
		return pulseResult{outcome: outcomeFailed, reason: fmt.Sprintf("exit status %d", code)}
	}
	return classify(stdout)
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

// ctxReason says why ctx ended: the pulse's own timeout, or the service stopping.
func ctxReason(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return reasonTimeout
	}
	return reasonStopped
}

func nonZero(d, fallback time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return fallback
}

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

// newPulser builds the pulser for t.
func newPulser(t *Target, client *http.Client, run RunFunc) (pulser, error) {
	switch {
	case t.HTTP != nil:
		return newHTTPPulser(t.HTTP, client, DefaultHTTPTimeout), nil
	case t.Exec != nil:
		if run == nil {
			return nil, errNoRunFunc
		}
		return &execPulser{argv: t.Exec.Command, limit: nonZero(t.Exec.Timeout, DefaultExecTimeout), run: run}, nil
	case t.OpenClaw != nil:
		o := t.OpenClaw
		return &openclawPulser{url: o.URL, token: o.Token, limit: nonZero(o.Timeout, DefaultHTTPTimeout), client: client}, nil
	}
	return nil, errors.New("target names no kind")
}
