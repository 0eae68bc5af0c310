package heartbeat

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
	"go.uber.org/zap/zapcore"
)

const testToken = "hook-s3cret-token"

// openclawAnswer is one reply as the real OpenClaw gateway gives it (docs/openclaw.md).
type openclawAnswer struct {
	code   int
	ctype  string
	body   string
	header map[string]string
}

var (
	ocQueued     = openclawAnswer{200, "application/json", `{"ok":true,"mode":"now","eventOutcome":"queued"}`, nil}
	ocCoalesced  = openclawAnswer{200, "application/json", `{"ok":true,"mode":"now","eventOutcome":"coalesced"}`, nil}
	ocUnauth     = openclawAnswer{401, "text/plain", "Unauthorized", nil}
	ocLimited    = openclawAnswer{429, "text/plain", "Too Many Requests", map[string]string{"Retry-After": "60"}}
	ocUnknown    = openclawAnswer{400, "application/json", `{"ok":false,"error":"unknown agentId \"ops\""}`, nil}
	ocDisallowed = openclawAnswer{400, "application/json", `{"ok":false,"error":"agentId is not allowed by hooks.allowedAgentIds"}`, nil}
	ocNoText     = openclawAnswer{400, "application/json", `{"ok":false,"error":"text required"}`, nil}
	ocHooksOff   = openclawAnswer{404, "text/plain", "Not Found", nil}
	ocMethod     = openclawAnswer{405, "text/plain", "Method Not Allowed", nil}
	ocSuspended  = openclawAnswer{503, "application/json", `{"error":{"code":"gateway_unavailable","message":"gateway is suspended"}}`, nil}
	ocBadGateway = openclawAnswer{502, "text/plain", "Bad Gateway", nil}
)

func (a openclawAnswer) write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", a.ctype)
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.code)
	_, _ = io.WriteString(w, a.body)
}

// wakeSeen is one request the fake gateway got.
type wakeSeen struct {
	method, path, auth, ctype string
	body                      map[string]any
}

func readWake(r *http.Request) wakeSeen {
	data, _ := io.ReadAll(r.Body)
	w := wakeSeen{method: r.Method, path: r.URL.Path, auth: r.Header.Get("Authorization"), ctype: r.Header.Get("Content-Type")}
	_ = json.Unmarshal(data, &w.body)
	return w
}

func TestOpenClawTargetReplyClasses(t *testing.T) {
	var mu sync.Mutex
	var answer openclawAnswer
	var seen []wakeSeen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, readWake(r))
		answer.write(w)
	}))
	defer srv.Close()
	client := newHTTPClient()
	defer client.CloseIdleConnections()
	pl, err := newPulser(&Target{OpenClaw: &OpenClawTarget{URL: srv.URL + "/hooks/wake", Token: testToken, Timeout: testTimeout}}, client, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		answer    openclawAnswer
		outcome   outcome
		reason    string
		answered  string
		configErr string
		wait      time.Duration
	}{
		{"queued is sent", ocQueued, outcomeRan, "", "queued", "", 0},
		{"coalesced is sent", ocCoalesced, outcomeRan, "", "coalesced", "", 0},
		{"503 gateway_unavailable is busy", ocSuspended, outcomeBusy, SkipRequestsInFlight, "", "", 0},
		{"429 holds back for Retry-After", ocLimited, outcomeLimited, SkipRateLimited, "", "", time.Minute},
		{"401 is a config error", ocUnauth, outcomeFailed, "config_error: HTTP 401: Unauthorized", "", "HTTP 401: Unauthorized", 0},
		{"400 unknown agent", ocUnknown, outcomeFailed, `config_error: HTTP 400: unknown agentId "ops"`, "", `HTTP 400: unknown agentId "ops"`, 0},
		{"400 disallowed agent", ocDisallowed, outcomeFailed, "config_error: HTTP 400: agentId is not allowed by hooks.allowedAgentIds", "",
			"HTTP 400: agentId is not allowed by hooks.allowedAgentIds", 0},
		{"400 text required", ocNoText, outcomeFailed, "config_error: HTTP 400: text required", "", "HTTP 400: text required", 0},
		{"404 hooks off", ocHooksOff, outcomeFailed, "config_error: HTTP 404: Not Found", "", "HTTP 404: Not Found", 0},
		{"405 wrong method", ocMethod, outcomeFailed, "config_error: HTTP 405: Method Not Allowed", "", "HTTP 405: Method Not Allowed", 0},
		{"other 5xx fails this tick only", ocBadGateway, outcomeFailed, "HTTP 502: Bad Gateway", "", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			answer, seen = tc.answer, nil
			mu.Unlock()
			p := samplePulse()
			res := pl.pulse(t.Context(), p)
			if res.outcome != tc.outcome || res.reason != tc.reason || res.answer != tc.answered ||
				res.configErr != tc.configErr || res.retryAfter != tc.wait {
				t.Fatalf("result %+v", res)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 {
				t.Fatalf("%d requests, want 1", len(seen))
			}
			got := seen[0]
			want := map[string]any{"text": WakeText(p), "mode": "now", "agentId": "main", "sessionKey": "agent:main:main"}
			if got.method != http.MethodPost || got.path != "/hooks/wake" || got.auth != "Bearer "+testToken ||
				got.ctype != "application/json" || !equalJSON(got.body, want) {
				t.Fatalf("request %+v, want body %v", got, want)
			}
		})
	}
}

func equalJSON(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestOpenClawTargetOmitsEmptySessionAndNamesThePulse(t *testing.T) {
	var got wakeSeen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = readWake(r)
		ocQueued.write(w)
	}))
	defer srv.Close()
	pl := &openclawPulser{url: srv.URL + "/hooks/wake", token: testToken, limit: time.Second, client: srv.Client()}
	p := Pulse{AgentID: "ops", Reason: "interval", ReasonKind: KindInterval, ScheduledAt: utc("2026-05-01T10:15:00Z"), Attempt: 1}
	if res := pl.pulse(t.Context(), p); res.outcome != outcomeRan {
		t.Fatalf("result %+v", res)
	}
	if _, ok := got.body["sessionKey"]; ok || got.body["agentId"] != "ops" {
		t.Fatalf("body %v", got.body)
	}
	if text := got.body["text"]; text != "schedd heartbeat: interval, scheduled 2026-05-01T10:15:00Z" {
		t.Fatalf("text %q", text)
	}
	cron := Pulse{Reason: "cron:nightly", ReasonKind: KindCron, ScheduledAt: p.ScheduledAt, Attempt: 3}
	if text := WakeText(cron); text != "schedd heartbeat: cron:nightly (cron), scheduled 2026-05-01T10:15:00Z, attempt 3" {
		t.Fatalf("text %q", text)
	}
}

func TestOpenClawTargetConnectionRefusedFails(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // nothing listens on its port now
	pl := &openclawPulser{url: gone.URL + "/hooks/wake", token: testToken, limit: time.Second, client: newHTTPClient()}
	res := pl.pulse(t.Context(), samplePulse())
	if res.outcome != outcomeFailed || res.configErr != "" || !strings.Contains(res.reason, "refused") ||
		strings.Contains(res.reason, testToken) {
		t.Fatalf("result %+v", res)
	}
}

func TestOpenClawTargetScrubsAnEchoedToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		openclawAnswer{403, "text/plain", "token " + testToken + " is revoked", nil}.write(w)
	}))
	defer srv.Close()
	pl := &openclawPulser{url: srv.URL + "/hooks/wake", token: testToken, limit: time.Second, client: srv.Client()}
	res := pl.pulse(t.Context(), samplePulse())
	if res.configErr != "HTTP 403: token [token] is revoked" || strings.Contains(res.reason, testToken) {
		t.Fatalf("result %+v", res)
	}
}

// gatewayTransport answers in process, as OpenClaw's /hooks/wake would, so that a
// synctest bubble can run the service against it.
type gatewayTransport struct {
	mu     sync.Mutex
	answer openclawAnswer
	seen   []wakeSeen
}

func (g *gatewayTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seen = append(g.seen, readWake(r))
	rec := httptest.NewRecorder()
	g.answer.write(rec)
	return rec.Result(), nil
}

func (g *gatewayTransport) set(a openclawAnswer) {
	g.mu.Lock()
	g.answer = a
	g.mu.Unlock()
}

func (g *gatewayTransport) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.seen)
}

func openclawConfig() Config {
	return Config{Seed: testSeed, Defaults: AgentConfig{Every: "1m",
		Target: &Target{OpenClaw: &OpenClawTarget{URL: "http://gateway.test/hooks/wake", Token: testToken, Timeout: testTimeout}}}}
}

// openclawService runs the service against gw in a bubble and returns the harness.
func openclawService(t *testing.T, cfg Config, gw *gatewayTransport) *harness {
	t.Helper()
	h := startHarness(t, cfg, harnessOpts{client: &http.Client{Transport: gw}})
	t.Cleanup(func() {
		if err := h.stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return h
}

// assertNoToken fails when the token shows in the status or in any log line.
func assertNoToken(t *testing.T, h *harness) {
	t.Helper()
	st, _ := json.Marshal(h.svc.Status())
	if bytes.Contains(st, []byte(testToken)) {
		t.Fatalf("token in status: %s", st)
	}
	for _, e := range h.logs.All() {
		if strings.Contains(e.Message+fieldsText(e.Context), testToken) {
			t.Fatalf("token in log: %s %v", e.Message, e.Context)
		}
	}
}

func fieldsText(fs []zapcore.Field) string {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fs {
		f.AddTo(enc)
	}
	b, _ := json.Marshal(enc.Fields)
	return string(b)
}

func TestServiceOpenClawConfigErrorIsLoudOnceAndNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := &gatewayTransport{answer: ocUnauth}
		h := openclawService(t, openclawConfig(), gw)
		first := slot(testSeed, "main", time.Minute)
		h.sleepTo(first + 30*time.Second)
		if n := gw.count(); n != 1 {
			t.Fatalf("%d wakes within one tick, want 1 (no retry loop)", n)
		}
		a := h.agent("main")
		if a.ConfigError != "HTTP 401: Unauthorized" || a.Last.Status != api.RunFailed ||
			a.Last.Reason != "config_error: HTTP 401: Unauthorized" || !a.Enabled {
			t.Fatalf("status %+v last %+v", a, a.Last)
		}
		// The next ticks try once each; the error is logged once, not per tick.
		h.sleepTo(first + 2*time.Minute + 30*time.Second)
		if n := gw.count(); n != 3 {
			t.Fatalf("%d wakes after three ticks, want 3", n)
		}
		if n := h.logs.FilterMessageSnippet("refused the pulse").Len(); n != 1 {
			t.Fatalf("config error logged %d times, want once", n)
		}
		// A 503 meanwhile keeps the error shown; an accepted wake clears it and records its outcome.
		gw.set(ocQueued)
		h.sleepTo(first + 3*time.Minute)
		a = h.agent("main")
		if a.ConfigError != "" || a.Last.Status != api.RunRan || a.Last.Outcome != "queued" {
			t.Fatalf("after an accepted wake: %+v last %+v", a, a.Last)
		}
		assertNoToken(t, h)
	})
}

func TestServiceOpenClawBusyRetriedAfterOneSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := &gatewayTransport{answer: ocSuspended}
		h := openclawService(t, openclawConfig(), gw)
		first := slot(testSeed, "main", time.Minute)
		h.sleepTo(first)
		if a := h.agent("main"); a.Last.Status != api.RunSkipped || a.Last.Reason != SkipRequestsInFlight || a.ConfigError != "" {
			t.Fatalf("503: %+v", a.Last)
		}
		gw.set(ocCoalesced)
		h.sleepTo(first + time.Second)
		if n := gw.count(); n != 2 {
			t.Fatalf("%d wakes, want the retry after 1s", n)
		}
		gw.mu.Lock()
		attempt := gw.seen[1].body["text"]
		gw.mu.Unlock()
		if a := h.agent("main"); a.Last.Outcome != "coalesced" || !strings.HasSuffix(attempt.(string), "attempt 2") {
			t.Fatalf("retry: %+v, text %q", a.Last, attempt)
		}
	})
}

func TestServiceOpenClawRetryAfterHoldsPulsesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := &gatewayTransport{answer: ocLimited}
		cfg := openclawConfig()
		cfg.Defaults.Every = "30s"
		h := openclawService(t, cfg, gw)
		first := slot(testSeed, "main", 30*time.Second)
		h.sleepTo(first)
		a := h.agent("main")
		if a.Last.Status != api.RunSkipped || a.Last.Reason != SkipRateLimited || a.RateLimitedUntil == nil ||
			!a.RateLimitedUntil.Equal(h.start.Add(first+time.Minute)) {
			t.Fatalf("429: %+v last %+v", a, a.Last)
		}
		gw.set(ocQueued)
		// The slot 30s later falls inside the Retry-After: skipped, nothing sent; a manual
		// wake waits too.
		h.sleepTo(first + 30*time.Second)
		if err := h.svc.Wake(WakeRequest{Reason: "manual"}); err != nil {
			t.Fatal(err)
		}
		h.sleepTo(first + 59*time.Second)
		if n := gw.count(); n != 1 {
			t.Fatalf("%d wakes during Retry-After, want 1", n)
		}
		if a := h.agent("main"); a.Last.Reason != SkipRateLimited {
			t.Fatalf("slot inside Retry-After: %+v", a.Last)
		}
		h.sleepTo(first + time.Minute)
		if n := gw.count(); n != 2 {
			t.Fatalf("%d wakes once Retry-After ended, want 2", n)
		}
		if a := h.agent("main"); a.Last.Outcome != "queued" || a.RateLimitedUntil != nil {
			t.Fatalf("after Retry-After: %+v last %+v", a, a.Last)
		}
	})
}

func TestServiceOpenClawReloadClearsConfigError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := &gatewayTransport{answer: ocDisallowed}
		h := openclawService(t, openclawConfig(), gw)
		h.sleepTo(slot(testSeed, "main", time.Minute))
		if h.agent("main").ConfigError == "" {
			t.Fatal("no config error shown")
		}
		cfg := openclawConfig()
		cfg.Defaults.Target.OpenClaw.Token = "another-token"
		if err := h.svc.UpdateConfig(cfg); err != nil {
			t.Fatal(err)
		}
		if a := h.agent("main"); a.ConfigError != "" {
			t.Fatalf("config error kept across a new target: %+v", a)
		}
	})
}
