package deliveries

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const ocToken = "hook-s3cret-token"

// Each reply class of an OpenClaw hook, answered as the real gateway answers (docs/openclaw.md):
// what is sent (the payload as body, the token, the idempotency key) and how the reply is
// classified, with the dead-letter reason quoting the gateway and never the token.
func TestOpenClawSinkReplyClasses(t *testing.T) {
	type answer struct {
		code  int
		ctype string
		body  string
		ra    string
	}
	for _, tc := range []struct {
		name   string
		answer answer
		ok     bool
		class  Class
		reason string // the verdict's, for a permanent error
		ra     time.Duration
	}{
		{"wake queued", answer{200, "application/json", `{"ok":true,"mode":"now","eventOutcome":"queued"}`, ""}, true, 0, "", 0},
		{"wake coalesced", answer{200, "application/json", `{"ok":true,"mode":"now","eventOutcome":"coalesced"}`, ""}, true, 0, "", 0},
		{"agent run", answer{200, "application/json", `{"ok":true,"runId":"run-1"}`, ""}, true, 0, "", 0},
		{"ok false", answer{200, "application/json", `{"ok":false,"error":"hook mapping failed"}`, ""}, false, Permanent,
			"permanent error (HTTP 200: hook mapping failed)", 0},
		{"401 unauthorized", answer{401, "text/plain", "Unauthorized", ""}, false, Permanent, "permanent error (HTTP 401: Unauthorized)", 0},
		{"403", answer{403, "text/plain", "Forbidden", ""}, false, Permanent, "permanent error (HTTP 403: Forbidden)", 0},
		{"400 unknown agent", answer{400, "application/json", `{"ok":false,"error":"unknown agentId \"ops\""}`, ""}, false, Permanent,
			`permanent error (HTTP 400: unknown agentId "ops")`, 0},
		{"400 disallowed agent", answer{400, "application/json", `{"ok":false,"error":"agentId is not allowed by hooks.allowedAgentIds"}`, ""},
			false, Permanent, "permanent error (HTTP 400: agentId is not allowed by hooks.allowedAgentIds)", 0},
		{"404 hooks off", answer{404, "text/plain", "Not Found", ""}, false, Permanent, "permanent error (HTTP 404: Not Found)", 0},
		{"405", answer{405, "text/plain", "Method Not Allowed", ""}, false, Permanent, "permanent error (HTTP 405: Method Not Allowed)", 0},
		{"413 too large", answer{413, "application/json", `{"ok":false,"error":"payload too large"}`, ""}, false, Permanent,
			"permanent error (HTTP 413: payload too large)", 0},
		{"429 retry after", answer{429, "text/plain", "Too Many Requests", "60"}, false, Transient, "", time.Minute},
		{"503 suspended", answer{503, "application/json", `{"error":{"code":"gateway_unavailable","message":"restarting"}}`, ""}, false, Transient, "", 0},
		{"502", answer{502, "text/plain", "Bad Gateway", ""}, false, Transient, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *http.Request
			var gotBody []byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r
				gotBody, _ = io.ReadAll(r.Body)
				w.Header().Set("Content-Type", tc.answer.ctype)
				if tc.answer.ra != "" {
					w.Header().Set("Retry-After", tc.answer.ra)
				}
				w.WriteHeader(tc.answer.code)
				_, _ = io.WriteString(w, tc.answer.body)
			}))
			defer srv.Close()
			sink, err := NewOpenClawSink(OpenClawConfig{URL: srv.URL + "/hooks/agent", Token: ocToken})
			if err != nil {
				t.Fatal(err)
			}
			payload := `{"message":"disk almost full","agentId":"main","deliver":true}`
			err = sink.Send(t.Context(), Delivery{ID: 7, Sink: "oc", Key: "k-7", Payload: []byte(payload), Attempt: 1})
			if got == nil || got.Method != http.MethodPost || got.URL.Path != "/hooks/agent" || string(gotBody) != payload ||
				got.Header.Get("Authorization") != "Bearer "+ocToken || got.Header.Get(IdempotencyHeader) != "k-7" ||
				got.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("request %+v body %q", got, gotBody)
			}
			if tc.ok {
				if err != nil {
					t.Fatalf("Send: %v, want delivered", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Send: nil, want an error")
			}
			v := mustClassifier(t).Classify(err)
			if v.Class != tc.class || v.RetryAfter != tc.ra || (tc.reason != "" && v.Reason != tc.reason) {
				t.Fatalf("verdict %+v for %v", v, err)
			}
			if !strings.HasPrefix(err.Error(), "openclaw: HTTP ") || strings.Contains(err.Error()+v.Reason, ocToken) {
				t.Fatalf("error %q", err)
			}
		})
	}
}

func mustClassifier(t *testing.T) *Classifier {
	t.Helper()
	c, err := NewClassifier(nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOpenClawSinkConnectionRefusedIsTransient(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // nothing listens on its port now
	sink, err := NewOpenClawSink(OpenClawConfig{URL: gone.URL + "/hooks/wake", Token: ocToken, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = sink.Send(t.Context(), Delivery{ID: 3, Payload: []byte(`{"text":"x","mode":"now"}`)})
	if v := mustClassifier(t).Classify(err); err == nil || v.Class != Transient || strings.Contains(err.Error(), ocToken) {
		t.Fatalf("Send: %v, verdict %+v", err, v)
	}
}

func TestOpenClawSinkKeyFromDeliveryIDAndScrubbedEcho(t *testing.T) {
	var key string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key = r.Header.Get(IdempotencyHeader)
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, "bad token "+ocToken)
	}))
	defer srv.Close()
	sink, err := NewOpenClawSink(OpenClawConfig{URL: srv.URL + "/hooks/wake", Token: ocToken})
	if err != nil {
		t.Fatal(err)
	}
	err = sink.Send(t.Context(), Delivery{ID: 42, Payload: []byte(`{}`)})
	v := mustClassifier(t).Classify(err)
	if key != "schedd-delivery-42" || v.Reason != "permanent error (HTTP 401: bad token [token])" || strings.Contains(err.Error(), ocToken) {
		t.Fatalf("key %q, error %v, verdict %+v", key, err, v)
	}
	if _, err := NewOpenClawSink(OpenClawConfig{URL: srv.URL}); err == nil {
		t.Fatal("a sink without a token was built")
	}
}
