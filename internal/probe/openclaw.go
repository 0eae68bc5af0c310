package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/outbound"
)

// OpenClaw asks an OpenClaw gateway through its CLI (`openclaw gateway call METHOD --json`)
// whether it is idle (gateway.restart.preflight), and holds its suspension fence
// (gateway.suspend.prepare, .status, .resume). Each call starts the CLI: seconds, not
// milliseconds, so callers poll it every few seconds.
type OpenClaw struct {
	Command []string         // argv prefix of the CLI; nil: ["openclaw"] on PATH
	Port    int              // --port; 0: no --port
	URL     string           // --url (a ws:// URL); "": no --url
	Env     []string         // nil: the caller's environment as platform.RunCommand sees it
	Run     outbound.RunFunc // nil: platform.RunCommand
}

// maxCallOutput caps what one CLI call may print; its replies are a few hundred bytes.
const maxCallOutput = 64 << 10

// CallError is a call the CLI made and the gateway refused (`{"ok":false,"error":{...}}`),
// or a call that did not complete.
type CallError struct {
	Method  string
	Code    string // the gateway's error code (UNAVAILABLE, INVALID_REQUEST, ...); "" if none
	Message string
}

func (e *CallError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("openclaw gateway call %s: %s: %s", e.Method, e.Code, e.Message)
	}
	return fmt.Sprintf("openclaw gateway call %s: %s", e.Method, e.Message)
}

// call runs `<command> gateway call method --json [--port N] [--url U] [--params P]` and
// decodes its JSON reply into out. A non-zero exit, a reply with ok:false or a reply that
// is not JSON is an error.
func (o OpenClaw) call(ctx context.Context, method string, params any, out any) error {
	argv := append([]string(nil), o.Command...)
	if len(argv) == 0 {
		argv = []string{"openclaw"}
	}
	argv = append(argv, "gateway", "call", method, "--json")
	if o.Port > 0 {
		argv = append(argv, "--port", strconv.Itoa(o.Port))
	}
	if o.URL != "" {
		argv = append(argv, "--url", o.URL)
	}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return err
		}
		argv = append(argv, "--params", string(b))
	}
	res := o.Run.Run(ctx, outbound.Command{Argv: argv, Env: o.Env, MaxOutput: maxCallOutput})
	if res.Err != nil {
		return &CallError{Method: method, Message: res.Err.Error()}
	}
	var reply struct {
		OK    *bool `json:"ok"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	perr := json.Unmarshal(res.Stdout, &reply)
	switch {
	case perr == nil && reply.Error != nil:
		return &CallError{Method: method, Code: reply.Error.Code, Message: reply.Error.Message}
	case !res.Exit.Exited || res.Exit.Code != 0:
		return &CallError{Method: method, Message: res.Exit.String() + outputTail(res)}
	case perr != nil:
		return &CallError{Method: method, Message: "reply is not JSON" + outputTail(res)}
	case reply.OK != nil && !*reply.OK:
		return &CallError{Method: method, Message: "ok: false"}
	}
	if err := json.Unmarshal(res.Stdout, out); err != nil {
		return &CallError{Method: method, Message: "unexpected reply: " + err.Error()}
	}
	return nil
}

// outputTail is the start of what a failed call printed, for its error (stderr first).
func outputTail(res outbound.Ran) string {
	msg := strings.TrimSpace(string(res.Stderr))
	if msg == "" {
		msg = strings.TrimSpace(string(res.Stdout))
	}
	if msg == "" {
		return ""
	}
	line, _, _ := strings.Cut(msg, "\n")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	return ": " + line
}

// blocker is one entry of a reply's blockers: {"kind","count","message"} or a string.
type blocker struct{ text string }

func (b *blocker) UnmarshalJSON(data []byte) error {
	var s string
	if json.Unmarshal(data, &s) == nil {
		b.text = s
		return nil
	}
	var o struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(data, &o); err != nil {
		return err
	}
	b.text = o.Message
	if b.text == "" {
		b.text = o.Kind
	}
	return nil
}

func texts(bs []blocker) []string {
	var out []string
	for _, b := range bs {
		if b.text != "" {
			out = append(out, b.text)
		}
	}
	return out
}

// InflightDetail implements the restart coordinator's detailed idle check with
// gateway.restart.preflight: safe true is idle (0); safe false is busy, counted as
// counts.totalActive (at least 1), with the reply's summary, counts and blockers.
func (o OpenClaw) InflightDetail(ctx context.Context) (int, *api.IdleDetail, error) {
	var r struct {
		Safe     *bool          `json:"safe"`
		Counts   map[string]int `json:"counts"`
		Blockers []blocker      `json:"blockers"`
		Summary  string         `json:"summary"`
	}
	if err := o.call(ctx, "gateway.restart.preflight", nil, &r); err != nil {
		return 0, nil, err
	}
	if r.Safe == nil {
		return 0, nil, &CallError{Method: "gateway.restart.preflight", Message: "reply has no \"safe\""}
	}
	d := &api.IdleDetail{Summary: r.Summary, Counts: r.Counts, Blockers: texts(r.Blockers)}
	if *r.Safe {
		return 0, d, nil
	}
	return max(r.Counts["totalActive"], 1), d, nil
}

// Inflight implements Counter (see InflightDetail).
func (o OpenClaw) Inflight(ctx context.Context) (int, error) {
	n, _, err := o.InflightDetail(ctx)
	return n, err
}

// suspendReply is what gateway.suspend.prepare and .status answer.
type suspendReply struct {
	Status       string    `json:"status"`
	SuspensionID string    `json:"suspensionId"`
	ExpiresAtMs  int64     `json:"expiresAtMs"`
	ActiveCount  *int      `json:"activeCount"`
	Blockers     []blocker `json:"blockers"`
	Reason       string    `json:"reason"`
}

func (r suspendReply) state(id string) api.FenceState {
	st := api.FenceState{Status: r.Status, SuspensionID: r.SuspensionID, ActiveCount: r.ActiveCount,
		Blockers: texts(r.Blockers), Reason: r.Reason}
	if st.SuspensionID == "" {
		st.SuspensionID = id
	}
	if r.ExpiresAtMs > 0 {
		t := time.UnixMilli(r.ExpiresAtMs)
		st.ExpiresAt = &t
	}
	return st
}

// The suspension states the fence reads (gateway.suspend.*).
const (
	FenceReady    = "ready"    // admission closed and nothing in flight: restart now
	FenceDraining = "draining" // admission closed; admitted work is finishing
	FenceBusy     = "busy"     // refused (work in flight, or a restart of its own)
	FenceRunning  = "running"  // no suspension held
)

var errNoStatus = errors.New("reply has no \"status\"")

func (o OpenClaw) suspend(ctx context.Context, method string, params map[string]any, id string) (api.FenceState, error) {
	var r suspendReply
	if err := o.call(ctx, method, params, &r); err != nil {
		return api.FenceState{}, err
	}
	if r.Status == "" {
		return api.FenceState{}, &CallError{Method: method, Message: errNoStatus.Error()}
	}
	return r.state(id), nil
}

// Prepare closes the gateway's admission of new work (gateway.suspend.prepare with drain,
// terminal policy "terminate": a restart ends terminals anyway). Repeating it with the same
// requestID renews the lease.
func (o OpenClaw) Prepare(ctx context.Context, requestID string) (api.FenceState, error) {
	return o.suspend(ctx, "gateway.suspend.prepare",
		map[string]any{"requestId": requestID, "terminalPolicy": "terminate", "drain": true}, "")
}

// Status reports the suspension's state (gateway.suspend.status).
func (o OpenClaw) Status(ctx context.Context, suspensionID string) (api.FenceState, error) {
	return o.suspend(ctx, "gateway.suspend.status", map[string]any{"suspensionId": suspensionID}, suspensionID)
}

// Resume reopens admission (gateway.suspend.resume). It reports whether a suspension was
// still held.
func (o OpenClaw) Resume(ctx context.Context, suspensionID string) (bool, error) {
	var r struct {
		Resumed bool `json:"resumed"`
	}
	err := o.call(ctx, "gateway.suspend.resume", map[string]any{"suspensionId": suspensionID}, &r)
	return r.Resumed, err
}
