package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/deliveries"
	"github.com/schedd/schedd/internal/heartbeat"
	"github.com/schedd/schedd/internal/platform"
	"github.com/schedd/schedd/internal/server/servertest"
	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

// The fuzz targets of the control API's request bodies (R-INPUT-16) serve each input in
// process, through the Server (its body cap included) and its real handlers.
// Whatever the body, the reply is JSON and never a 5xx, an error has a code and a message,
// and what is accepted is sound: a stored delivery can be sent (its key and header values
// are text a header carries) and holds the data that was sent, unaltered. Their
// seeds run in `go test`; `make fuzz` runs each for a while. The targets that need the
// daemon's own endpoints and components (restart, cron run, task cancel) are the
// daemon's.

// sendable fails t unless e could be sent by every sink: its key and its header values
// are what a header carries, and its payload, when the body gave it as text, holds no
// U+FFFD that the body did not (a replacement by the JSON decoder).
func sendable(t *testing.T, e store.Entry, body []byte) {
	t.Helper()
	if p := api.KeyProblem(e.Key); p != "" || e.Key == "" {
		t.Fatalf("stored key %q: %s", e.Key, p)
	}
	for name, v := range e.Headers {
		for i := 0; i < len(v); i++ {
			if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
				t.Fatalf("stored header %q has the byte %#x", name, c)
			}
		}
	}
	explicit := bytes.Count(body, []byte("\uFFFD")) + bytes.Count(bytes.ToLower(body), []byte(`\ufffd`))
	if n := bytes.Count(e.Payload, []byte("\uFFFD")); utf8.Valid(e.Payload) && n > explicit {
		t.Fatalf("stored payload %q has %d U+FFFD, the body %q only %d", e.Payload, n, body, explicit)
	}
}

// FuzzDeliveryEnqueue_RINPUT16: POST /v1/deliveries, an entry or a batch, on an in-memory
// store.
func FuzzDeliveryEnqueue_RINPUT16(f *testing.F) {
	for _, s := range []string{
		`{"sink": "hook", "data": "x"}`,
		`{"sink": "hook", "idempotency_key": "order-1", "data_base64": "AP8=", "priority": -3, "ttl": "1h", "headers": {"X-A": "b"}}`,
		`{"sink": "hook", "idempotency_key": "   ", "data": "x"}`,
		`{"sink": "hook", "idempotency_key": "a\nb"}`,
		`{"sink": "hook", "idempotency_key": "a\r\nX-Evil: 1"}`,
		`{"sink": "hook", "idempotency_key": "nul\u0000"}`,
		`{"sink": "hook", "idempotency_key": "\u001b[2J"}`,
		`{"sink": "hook", "idempotency_key": " padded "}`,
		`{"sink": "hook", "idempotency_key": "` + strings.Repeat("k", 256) + `"}`,
		"{\"sink\": \"hook\", \"idempotency_key\": \"k\xff\"}",
		"{\"sink\": \"hook\", \"data\": \"a\xffb\"}",
		"{\"sink\": \"hook\", \"DATA\": \"\xc3\"}",
		`{"sink": "hook", "data": "\ud800"}`,
		`{"sink": "hook", "data": "x\uDC00\ud83d"}`,
		`{"sink": "hook", "data": "\ud83d\ude00 \u00e9 \ufffd"}`,
		`{"sink": "hook", "headers": {"X-A": "\u0001"}}`,
		`{"sink": "hook", "headers": {"Idempotency-Key": "x"}}`,
		`{"sink": "hook", "data": "a", "data_base64": "YQ=="}`,
		`{"sink": "hook", "ttl": "-1s"}`,
		`{"sink": "nope"}`,
		`{"payload": 1}`,
		`{"sink": "hook"} {}`,
		"[{\"sink\": \"hook\", \"data\": \"fine\"}, {\"sink\": \"hook\", \"data\": \"\xff\"}, {\"sink\": \"hook\", \"idempotency_key\": \"\\t\"}]",
		`[]`, `[1]`, `[null]`, `null`, ``, ` `, `{`, `"x"`, `[{"sink": "hook", "data": "` + strings.Repeat("x", 2000) + `"}]`,
	} {
		f.Add([]byte(s))
	}
	svc, err := deliveries.New(testPolicy(), storetest.NewMemory(), map[string]deliveries.Sink{"hook": waitingSink{}},
		deliveries.Deps{Log: zap.NewNop()})
	if err != nil {
		f.Fatal(err)
	}
	srv := New(Options{Backend: statusNone{}, MaxBody: 64 << 10})
	srv.AddDeliveries(svc, DeliveryLimits{Path: "q.db", MaxBody: 64 << 10, Entries: storetest.MaxEntries})
	f.Fuzz(func(t *testing.T, body []byte) {
		code, out := servertest.Serve(t, srv, http.MethodPost, "/v1/deliveries", body)
		var ids []int64
		switch {
		case code == http.StatusCreated:
			var rep api.EnqueueReply
			if err := json.Unmarshal(out, &rep); err != nil || !rep.Created {
				t.Fatalf("201 %s", out)
			}
			ids = append(ids, rep.ID)
		case code == http.StatusOK && firstByte(body) == '[':
			var rep api.BatchReply
			if err := json.Unmarshal(out, &rep); err != nil {
				t.Fatalf("200 %s", out)
			}
			for _, r := range rep.Results {
				if r.Created {
					ids = append(ids, r.ID)
				}
			}
		}
		for _, id := range ids {
			e, err := svc.Get(context.Background(), id)
			if err != nil {
				t.Fatalf("get %d: %v", id, err)
			}
			sendable(t, e, body)
		}
	})
}

// FuzzHeartbeatWake_RINPUT16: POST /v1/heartbeat/wake on a running heartbeat service
// whose pulses go nowhere.
func FuzzHeartbeatWake_RINPUT16(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"agent": "main", "reason": "manual"}`, `{"agent": "off"}`, `{"agent": "nope"}`,
		`{"session": "agent:main:x", "reason": "cron:job"}`, `{"session": "agent:nope:x"}`, `{"agent": "a::b"}`,
		`{"reason": "` + strings.Repeat("r", 201) + `"}`, `{"reason": "a\u0000b"}`, "{\"reason\": \"\xff\"}",
		`{"agent": 1}`, `{"x": 1}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	no := false
	svc, err := heartbeat.New(heartbeat.Config{
		Defaults: heartbeat.AgentConfig{Every: "1h", Target: &heartbeat.Target{Exec: &heartbeat.ExecTarget{Command: []string{"target"}, Timeout: 30 * time.Second}}},
		Agents:   []heartbeat.AgentConfig{{ID: "main"}, {ID: "off", Enabled: &no}},
	}, heartbeat.Deps{Run: func(context.Context, platform.RunSpec) (platform.RunResult, error) { return platform.RunResult{}, nil }})
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = svc.Run(ctx) })
	f.Cleanup(func() { cancel(); wg.Wait() })
	srv := New(Options{Backend: statusOnly{svc}, MaxBody: 64 << 10})
	srv.AddHeartbeat(svc)
	f.Fuzz(func(t *testing.T, body []byte) {
		servertest.Serve(t, srv, http.MethodPost, "/v1/heartbeat/wake", body)
	})
}
