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

// TestDemoDeliverEndpoint: a delivery is logged with its idempotency key and payload and
// answered 2xx, which schedd counts as delivered.
func TestDemoDeliverEndpoint(t *testing.T) {
	logged := captureLog(t)
	r := httptest.NewRequest(http.MethodPost, "/hooks/deliver", strings.NewReader("hello"))
	r.Header.Set("Idempotency-Key", "k-1")
	w := httptest.NewRecorder()
	deliver(w, r)
	if w.Code/100 != 2 {
		t.Fatalf("reply %d, want 2xx", w.Code)
	}
	if got := logged.String(); !strings.Contains(got, `got a delivery: key k-1, 5 bytes: "hello"`) {
		t.Fatalf("log %q", got)
	}
}
