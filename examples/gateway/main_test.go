package main

import (
	"bytes"
	"encoding/json"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// captureLog sends the log to a buffer for the test.
func captureLog(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	flags, prefix, out := log.Flags(), log.Prefix(), log.Writer()
	log.SetFlags(0)
	log.SetPrefix("")
	log.SetOutput(&buf)
	t.Cleanup(func() { log.SetFlags(flags); log.SetPrefix(prefix); log.SetOutput(out) })
	return &buf
}

// TestDemoHeartbeatEndpoint: a pulse is logged and answered with an ok-token event, the
// reply schedd records as "ran, nothing to report"; a body that is not a pulse is a 400.
func TestDemoHeartbeatEndpoint(t *testing.T) {
	logged := captureLog(t)
	body := `{"agent_id":"main","session_key":"","reason":"interval","reason_kind":"interval",` +
		`"visibility":{"show_ok":false,"show_alerts":true,"use_indicator":true},"scheduled_at":"2026-05-01T10:00:00Z","attempt":1}`
	w := httptest.NewRecorder()
	heartbeat(w, httptest.NewRequest(http.MethodPost, "/hooks/heartbeat", strings.NewReader(body)))
	var reply struct{ Status, Preview string }
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &reply) != nil || reply.Status != "ok-token" {
		t.Fatalf("reply %d %q, want 200 with status ok-token", w.Code, w.Body)
	}
	if got := logged.String(); !strings.Contains(got, "got a heartbeat pulse: agent main, reason interval, attempt 1") {
		t.Fatalf("log %q", got)
	}
	w = httptest.NewRecorder()
	heartbeat(w, httptest.NewRequest(http.MethodPost, "/hooks/heartbeat", strings.NewReader("not json")))
	if w.Code != http.StatusBadRequest {
		t.Fatalf("a bad pulse got %d, want 400", w.Code)
	}
}

// TestDemoHookEndpoints: a delivery and a cron run are logged with their idempotency key
// and body and answered 2xx, which schedd counts as delivered and as succeeded.
func TestDemoHookEndpoints(t *testing.T) {
	logged := captureLog(t)
	for _, tc := range []struct{ what, key, body, want string }{
		{"delivery", "k-1", "hello", `got a delivery: key k-1, 5 bytes: "hello"`},
		{"cron run", "cron:ping@2027-03-14T07:30:00Z", "ping", `got a cron run: key cron:ping@2027-03-14T07:30:00Z, 4 bytes: "ping"`},
	} {
		r := httptest.NewRequest(http.MethodPost, "/hooks/x", strings.NewReader(tc.body))
		r.Header.Set("Idempotency-Key", tc.key)
		w := httptest.NewRecorder()
		hook(tc.what)(w, r)
		if w.Code/100 != 2 {
			t.Fatalf("%s: reply %d, want 2xx", tc.what, w.Code)
		}
		if got := logged.String(); !strings.Contains(got, tc.want) {
			t.Fatalf("log %q, want %q", got, tc.want)
		}
	}
}
