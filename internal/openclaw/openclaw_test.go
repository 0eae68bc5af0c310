package openclaw

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	ra := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	for _, tc := range []struct {
		code   int
		header http.Header
		body   string
		want   Reply
	}{
		{200, nil, `{"ok":true,"mode":"now","eventOutcome":"queued"}`, Reply{Class: Accepted, Outcome: "queued"}},
		{200, nil, `{"ok":true,"runId":"r1"}`, Reply{Class: Accepted}},
		{204, nil, ``, Reply{Class: Accepted}},
		{200, nil, `{"ok":false,"error":"nope"}`, Reply{Class: Refused, Message: "HTTP 200: nope"}},
		{401, nil, "Unauthorized", Reply{Class: Refused, Message: "HTTP 401: Unauthorized"}},
		{400, nil, `{"ok":false,"error":"text required"}`, Reply{Class: Refused, Message: "HTTP 400: text required"}},
		{302, nil, "", Reply{Class: Refused, Message: "HTTP 302"}},
		{429, ra("60"), "Too Many Requests", Reply{Class: RateLimited, Message: "HTTP 429: Too Many Requests", RetryAfter: time.Minute}},
		{429, ra(now.Add(90 * time.Second).Format(http.TimeFormat)), "", Reply{Class: RateLimited, Message: "HTTP 429", RetryAfter: 90 * time.Second}},
		{503, nil, `{"error":{"code":"gateway_unavailable","message":"suspended"}}`,
			Reply{Class: Busy, Message: "HTTP 503: gateway_unavailable: suspended"}},
		{503, nil, `{"error":{"code":"gateway_unavailable"}}`, Reply{Class: Busy, Message: "HTTP 503: gateway_unavailable"}},
		{408, nil, "", Reply{Class: Transient, Message: "HTTP 408"}},
		{500, nil, "boom\n  at line 2", Reply{Class: Transient, Message: "HTTP 500: boom at line 2"}},
	} {
		if got := Classify(tc.code, tc.header, []byte(tc.body), now); got != tc.want {
			t.Errorf("%d %q: %+v, want %+v", tc.code, tc.body, got, tc.want)
		}
	}
	long := Classify(400, nil, []byte(strings.Repeat("x", 1000)), now)
	if len(long.Message) > maxMessage+20 || !strings.HasSuffix(long.Message, "...") {
		t.Errorf("long message %d bytes", len(long.Message))
	}
	if s := Scrub("bad token abc", "abc"); s != "bad token [token]" {
		t.Errorf("Scrub: %q", s)
	}
}
