// Package openclaw speaks to an OpenClaw gateway's hooks (POST /hooks/wake and
// /hooks/agent): how a request is authorized and what each reply means. The heartbeat
// target and the delivery sink of kind openclaw share it.
//
// The replies, as the gateway gives them: 200 {"ok": true, ...} (a wake adds
// "eventOutcome": "queued" or "coalesced"); 401 "Unauthorized" (text) for a wrong or
// missing token; 429 with Retry-After after too many wrong tokens; 400 {"ok": false,
// "error": "..."} for an unknown or disallowed agentId or a missing text; 404 when hooks
// are off; 405 for a wrong method; 503 {"error": {"code": "gateway_unavailable", ...}} while
// it is suspended or restarting.
package openclaw

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/outbound"
)

// Class is what a reply means for the sender.
type Class uint8

const (
	// Accepted: 2xx and not {"ok": false}.
	Accepted Class = iota
	// Busy: 503, the gateway is suspended or restarting; try again soon.
	Busy
	// RateLimited: 429; wait Reply.RetryAfter.
	RateLimited
	// Refused: a 4xx (but 408 and 429), a redirect, or a 2xx saying {"ok": false}. The
	// request or schedd's configuration is wrong (token, hooks off, agent not allowed):
	// sending it again changes nothing.
	Refused
	// Transient: any other 5xx or 408.
	Transient
)

// Reply is a classified reply.
type Reply struct {
	Class Class
	// Outcome is a wake's eventOutcome ("queued", "coalesced"); "" when the reply has none.
	Outcome string
	// Message says what went wrong, quoting the gateway: "HTTP 401: Unauthorized". "" when
	// Accepted.
	Message string
	// RetryAfter is the reply's Retry-After (0 when absent or in the past).
	RetryAfter time.Duration
}

// maxMessage bounds the gateway's text quoted in Message.
const maxMessage = 300

// body is the JSON shape of the gateway's replies, success and error alike.
type body struct {
	OK           *bool           `json:"ok"`
	EventOutcome string          `json:"eventOutcome"`
	Error        json.RawMessage `json:"error"`
}

// Classify reads a reply; now dates an HTTP-date Retry-After.
func Classify(code int, header http.Header, data []byte, now time.Time) Reply {
	var b body
	isJSON := json.Unmarshal(bytes.TrimSpace(data), &b) == nil
	r := Reply{Outcome: b.EventOutcome}
	v := outbound.StatusVerdict(code, header, now)
	switch {
	case v.Class == outbound.Success:
		if b.OK != nil && !*b.OK {
			r.Class = Refused
		} else {
			return r
		}
	case code == http.StatusServiceUnavailable:
		r.Class, r.RetryAfter = Busy, v.RetryAfter
	case code == http.StatusTooManyRequests:
		r.Class, r.RetryAfter = RateLimited, v.RetryAfter
	case v.Class == outbound.Transient && code != http.StatusTooEarly:
		// Unlike the general rule, 425 is a refusal: only 408 and the other 5xx pass.
		r.Class = Transient
	default:
		r.Class = Refused
	}
	r.Message = "HTTP " + strconv.Itoa(code)
	if text := errorText(b, isJSON, data); text != "" {
		r.Message += ": " + text
	}
	return r
}

// errorText is the gateway's own words: the error string, "code: message" of an error
// object, or the text of a plain reply, on one line and bounded.
func errorText(b body, isJSON bool, data []byte) string {
	text := ""
	if isJSON {
		var s string
		var obj struct{ Code, Message string }
		switch {
		case json.Unmarshal(b.Error, &s) == nil:
			text = s
		case json.Unmarshal(b.Error, &obj) == nil:
			text = strings.TrimPrefix(obj.Code+": "+obj.Message, ": ")
			text = strings.TrimSuffix(text, ": ")
		}
	}
	if text == "" && !isJSON {
		text = string(data)
	}
	text = strings.Join(strings.Fields(strings.ToValidUTF8(text, "")), " ")
	if len(text) > maxMessage {
		text = strings.ToValidUTF8(text[:maxMessage], "") + "..."
	}
	return text
}

// Authorize adds the hook token to h.
func Authorize(h http.Header, token string) {
	h.Set("Authorization", "Bearer "+token)
}

// Scrub removes the token from s, in case a gateway echoes it.
func Scrub(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "[token]")
}
