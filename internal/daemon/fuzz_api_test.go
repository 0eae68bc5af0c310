package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/control"
	"github.com/schedd/schedd/internal/deliveries"
	"github.com/schedd/schedd/internal/heartbeat"
	"github.com/schedd/schedd/internal/restart"
	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

// The fuzz targets of the control API's request bodies (R-INPUT-16) serve each input in
// process, through control.Server (its body cap included) and the daemon's real handlers.
// Whatever the body, the reply is JSON and never a 5xx, an error has a code and a message,
// and what is accepted is sound: a stored delivery can be sent (its key and header values
// are text a header carries) and holds the data that was sent, unaltered; a restart keeps
// its reasons bounded. Their seeds run in `go test`; `make fuzz` runs each for a while.

// fuzzServe serves method path with body through h and checks what every reply must be; it
// returns the status and the reply.
func fuzzServe(t *testing.T, h http.Handler, method, target string, body []byte) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, bytes.NewReader(body)))
	out := rec.Body.Bytes()
	if rec.Code >= 500 {
		t.Fatalf("%s %s %q: %d %s", method, target, body, rec.Code, out)
	}
	if !json.Valid(out) {
		t.Fatalf("%s %s %q: %d, a reply that is not JSON: %q", method, target, body, rec.Code, out)
	}
	if rec.Code >= 400 {
		var eb api.ErrorBody
		if err := json.Unmarshal(out, &eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
			t.Fatalf("%s %s %q: %d, not an error body: %s", method, target, body, rec.Code, out)
		}
	}
	return rec.Code, out
}

// fuzzPath is base with segment escaped into it, and false when the mux would redirect it
// (an empty segment, . or ..: the mux's own answer, not a handler's).
func fuzzPath(format, segment string) (string, bool) {
	p := strings.Replace(format, "{}", url.PathEscape(segment), 1)
	return p, segment != "" && path.Clean(p) == p
}

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
	svc, err := deliveries.New(DeliveryConfig(config.Default().Deliveries), storetest.NewMemory(), map[string]deliveries.Sink{"hook": waitingSink{}},
		deliveries.Deps{Log: zap.NewNop()})
	if err != nil {
		f.Fatal(err)
	}
	srv := control.NewServer(control.ServerOptions{Backend: statusNone{}, MaxBody: 64 << 10})
	(&deliveriesAPI{svc: svc, path: "q.db", maxBody: 64 << 10, limits: deliveryLimits{entries: store.DefaultMaxEntries}}).routes(srv)
	f.Fuzz(func(t *testing.T, body []byte) {
		code, out := fuzzServe(t, srv, http.MethodPost, "/v1/deliveries", body)
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

// noRestart is a restarter that restarts at once.
type noRestart struct{}

func (noRestart) Restart(context.Context, restart.Method) (restart.Outcome, error) {
	return restart.Outcome{OK: true, PID: 2, PreviousPID: 1}, nil
}

// FuzzRestartRequest_RINPUT16: POST /v1/restart, in a bubble (a delay or a wait passes at
// once), with schedd's own replacement disabled.
func FuzzRestartRequest_RINPUT16(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"reason": "deploy", "now": true, "wait": true}`,
		`{"reason": "\u001b[31m x` + strings.Repeat("é", 300) + `\n", "wait": true}`,
		`{"delay": "61s"}`, `{"delay": "-1s"}`, `{"delay": "0s", "wait": true, "method": "signal"}`,
		`{"max_wait": "0"}`, `{"max_wait": "1h", "method": "reload"}`, `{"source": "cli"}`, `{"daemon": true}`,
		`{"reason": 1}`, `{"wait": "yes"}`, `{"x": 1}`, `[]`, `null`, ``, "{\"reason\": \"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		synctest.Test(t, func(t *testing.T) {
			d := &Daemon{log: zap.NewNop(), opts: Options{Environ: []string{EnvNoRespawn + "=1"}}}
			d.coord = restart.New(restart.Config{Cooldown: 0}, noRestart{}, nil, restart.Hooks{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- d.coord.Run(ctx) }()
			defer func() { cancel(); <-done }()
			srv := control.NewServer(control.ServerOptions{Backend: statusNone{}, MaxBody: 64 << 10})
			srv.HandleLong("POST /v1/restart", d.apiRestart)

			code, out := fuzzServe(t, srv, http.MethodPost, "/v1/restart", body)
			if code >= 300 {
				return
			}
			var rep api.RestartReply
			if err := json.Unmarshal(out, &rep); err != nil {
				t.Fatalf("%d %s", code, out)
			}
			if p := rep.Pending; p != nil {
				if len(p.Reasons) > restart.MaxReasons {
					t.Fatalf("%d reasons", len(p.Reasons))
				}
				for _, r := range p.Reasons {
					if len(r) > restart.MaxReasonLen || !utf8.ValidString(r) || strings.ContainsAny(r, "\x00\r\n\x1b") {
						t.Fatalf("reason %q", r)
					}
				}
			}
		})
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
		Defaults: heartbeat.AgentConfig{Every: "1h", Target: &heartbeat.Target{Exec: &heartbeat.ExecTarget{Command: []string{"target"}}}},
		Agents:   []heartbeat.AgentConfig{{ID: "main"}, {ID: "off", Enabled: &no}},
	}, heartbeat.Deps{Run: func(context.Context, []string, []string, []byte) (int, []byte, error) { return 0, nil, nil }})
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = svc.Run(ctx) })
	f.Cleanup(func() { cancel(); wg.Wait() })
	srv := control.NewServer(control.ServerOptions{Backend: statusOnly{svc}, MaxBody: 64 << 10})
	heartbeatAPI{svc: svc}.routes(srv)
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzServe(t, srv, http.MethodPost, "/v1/heartbeat/wake", body)
	})
}

// fuzzCron serves the cron and task endpoints of a running daemon's cron and delivery
// components, whose jobs act at once: a delivery (to a sink that never sends) and an
// http request to a server that answers.
func fuzzCron(f *testing.F) http.Handler {
	f.Helper()
	web := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	f.Cleanup(web.Close)
	dir, err := os.MkdirTemp("", "fz")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	cfg, err := config.Parse("schedd.yaml", []byte(`gateway: {command: [gw]}
deliveries: {sinks: {hook: {http: {url: '`+web.URL+`/ok'}}}, store: {sqlite: {synchronous: normal}}}
cron:
  jobs:
    - {name: quick, every: 1h, action: {deliver: {sink: hook, data: hello}}}
    - {name: web, every: 1h, action: {http: {url: '`+web.URL+`/ok'}}}
    - {name: off, every: 1h, enabled: false, action: {http: {url: '`+web.URL+`/ok'}}}
`))
	if err != nil {
		f.Fatal(err)
	}
	cd := &cronDaemon{d: &Daemon{opts: Options{StateDir: dir, Config: cfg}, log: zap.NewNop(), cfg: cfg}, dir: dir}
	srv := control.NewServer(control.ServerOptions{Backend: cd, MaxBody: 64 << 10})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	f.Cleanup(func() { cancel(); wg.Wait() })
	for _, setup := range []func() (*component, error){cd.d.setupDeliveries, cd.d.setupCron} {
		c, err := setup()
		if err != nil {
			f.Fatal(err)
		}
		cd.comps = append(cd.comps, c)
		c.routes(srv)
		wg.Go(func() { _ = c.run(ctx) })
	}
	// One task of each job, for cancel to find.
	for _, job := range []string{"quick", "web"} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/cron/"+job+"/run", strings.NewReader(`{"wait": true}`)))
		if rec.Code != http.StatusOK {
			f.Fatalf("run %s: %d %s", job, rec.Code, rec.Body)
		}
	}
	return srv
}

// FuzzCronRun_RINPUT16: POST /v1/cron/{name}/run, the name and the body fuzzed.
func FuzzCronRun_RINPUT16(f *testing.F) {
	for _, s := range []struct{ name, body string }{
		{"quick", `{}`}, {"web", `{"wait": true}`}, {"off", `{"wait": true}`}, {"nope", `{}`},
		{"quick", `{"wait": 1}`}, {"quick", `{"x": 1}`}, {"quick", `[]`}, {"quick", ``}, {"quick", `null`},
		{"qu\x00ick", `{}`}, {"é", "{\"wait\": \"\xff\"}"}, {strings.Repeat("n", 300), `{}`},
	} {
		f.Add(s.name, []byte(s.body))
	}
	srv := fuzzCron(f)
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		if p, ok := fuzzPath("/v1/cron/{}/run", name); ok {
			fuzzServe(t, srv, http.MethodPost, p, body)
		}
	})
}

// FuzzTaskCancel_RINPUT16: POST /v1/tasks/{id}/cancel, the id and the body fuzzed.
func FuzzTaskCancel_RINPUT16(f *testing.F) {
	for _, s := range []struct{ id, body string }{
		{"1", ``}, {"2", `{}`}, {"3", `{}`}, {"0", ``}, {"-1", ``}, {"abc", ``}, {"99999999999999999999", ``},
		{"1", `{"x": 1}`}, {"1", "\xff"}, {"٣", ``},
	} {
		f.Add(s.id, []byte(s.body))
	}
	srv := fuzzCron(f)
	f.Fuzz(func(t *testing.T, id string, body []byte) {
		if p, ok := fuzzPath("/v1/tasks/{}/cancel", id); ok {
			fuzzServe(t, srv, http.MethodPost, p, body)
		}
	})
}
