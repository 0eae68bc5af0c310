package daemon

import (
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
	"github.com/schedd/schedd/internal/handoff"
	"github.com/schedd/schedd/internal/restart"
	"github.com/schedd/schedd/internal/server"
	"github.com/schedd/schedd/internal/server/servertest"
)

// The fuzz targets of the control API's request bodies that need the daemon's own
// endpoints and components (R-INPUT-16; the others are internal/server's) serve each
// input in process, through server.Server. Whatever the body, the reply passes
// servertest.Serve's checks, and a restart keeps its reasons bounded. Their seeds run in
// `go test`; `make fuzz` runs each for a while.

// fuzzPath is base with segment escaped into it, and false when the mux would redirect it
// (an empty segment, . or ..: the mux's own answer, not a handler's).
func fuzzPath(format, segment string) (string, bool) {
	p := strings.Replace(format, "{}", url.PathEscape(segment), 1)
	return p, segment != "" && path.Clean(p) == p
}

// statusNone is a status backend with nothing to show.
type statusNone struct{}

func (statusNone) Status(context.Context) api.Status { return api.Status{} }

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
			d := &Daemon{log: zap.NewNop(), opts: Options{Environ: []string{handoff.EnvNoRespawn + "=1"}}}
			c := config.Default()
			c.Restart.Delay, c.Restart.Cooldown = 0, 0
			d.coord = newCoordinator(t, d, c, noRestart{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- d.coord.Run(ctx) }()
			defer func() { cancel(); <-done }()
			srv := server.New(server.Options{Backend: statusNone{}, MaxBody: 64 << 10})
			srv.AddLifecycle(d)

			code, out := servertest.Serve(t, srv, http.MethodPost, "/v1/restart", body)
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
	srv := server.New(server.Options{Backend: cd, MaxBody: 64 << 10})
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
			servertest.Serve(t, srv, http.MethodPost, p, body)
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
			servertest.Serve(t, srv, http.MethodPost, p, body)
		}
	})
}
