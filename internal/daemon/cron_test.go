package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/cron"
	"github.com/schedd/schedd/internal/heartbeat"
	"github.com/schedd/schedd/internal/server"
	"github.com/schedd/schedd/internal/store/sqlite"
)

// TestCronDefaultsAgree: the names the config file's defaults use are the cron runtime's.
// (The values are the config's only: the runtime takes them as given.)
func TestCronDefaultsAgree(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"missed", config.DefaultCronMissed, string(cron.MissedRunOnce)},
		{"concurrency", config.DefaultCronConcurrency, string(cron.Forbid)},
		{"default agent", config.DefaultHeartbeatAgent, heartbeat.DefaultAgentID},
	} {
		if c.got != c.want {
			t.Errorf("%s: the config says %v, the runtime %v", c.name, c.got, c.want)
		}
	}
}

func TestCronJobs(t *testing.T) {
	c, err := config.Parse("f.yaml", []byte(`gateway: {command: [gw]}
deliveries: {sinks: {hook: {http: {url: "http://127.0.0.1:1/x"}}}}
cron:
  jobs:
    - {name: a, schedule: "0 7 * * *", jitter: 1m, missed: skip, starting_deadline: 1h, concurrency: allow,
       retry: {max: 0}, disable_after: 0, history_limit: 7, priority: 2, timeout: 1m, enabled: false,
       action: {heartbeat_wake: {agent: main, reason: r}}}
    - {name: b, every: 1h, timezone: Asia/Kathmandu,
       action: {exec: {command: [x, y], env: {K: v}, timeout: 5s}}}
    - {name: c, at: "2027-01-01T00:00:00Z", retry: {max: 2, schedule: [1s, 2s]},
       action: {http: {url: "http://127.0.0.1:1/h", headers: {A: b}, body: "{}", timeout: 2s}}}
    - {name: d, every: 90s, action: {deliver: {sink: hook, data: payload}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := CronJobs(c.Cron)
	if err != nil || len(jobs) != 4 {
		t.Fatalf("CronJobs = %d jobs, %v", len(jobs), err)
	}
	a, b, cj, d := jobs[0], jobs[1], jobs[2], jobs[3]
	if a.Schedule.String() != "0 7 * * *" || a.Location != time.Local || a.Jitter != time.Minute || a.Missed != cron.MissedSkip ||
		a.StartingDeadline != time.Hour || a.Concurrency != cron.Allow || a.Retry.Max != 0 || a.DisableAfter != 0 ||
		a.HistoryLimit != 7 || a.Priority != 2 || a.Timeout != time.Minute || !a.Disabled {
		t.Errorf("a = %+v; want no retries and no disabling (0 means the same to both)", a)
	}
	if w, ok := a.Action.(*cron.HeartbeatWake); !ok || *w != (cron.HeartbeatWake{Agent: "main", Reason: "r"}) {
		t.Errorf("a's action %#v", a.Action)
	}
	if b.Location.String() != "Asia/Kathmandu" || b.Disabled || b.Retry.Max != 3 || b.DisableAfter != 10 {
		t.Errorf("b = %+v", b)
	}
	// every counts from the Unix epoch: the same slots whenever schedd starts.
	from := time.Date(2027, 5, 1, 10, 20, 0, 0, time.UTC)
	if next, ok := b.Schedule.Next(from); !ok || !next.Equal(time.Date(2027, 5, 1, 11, 0, 0, 0, time.UTC)) {
		t.Errorf("b's next slot after %v: %v", from, next)
	}
	if e, ok := b.Action.(*cron.Exec); !ok || strings.Join(e.Command, " ") != "x y" || e.Env["K"] != "v" || e.Timeout != 5*time.Second {
		t.Errorf("b's action %#v", b.Action)
	}
	if cj.Location != nil || cj.Retry.Max != 2 || fmt.Sprint(cj.Retry.Schedule) != "[1s 2s]" {
		t.Errorf("c = %+v; want no zone (at needs none) and its retry table", cj)
	}
	if h, ok := cj.Action.(*cron.HTTP); !ok || h.URL != "http://127.0.0.1:1/h" || h.Method != "POST" || h.Headers["A"] != "b" ||
		string(h.Body) != "{}" || h.Timeout != 2*time.Second {
		t.Errorf("c's action %#v", cj.Action)
	}
	if dl, ok := d.Action.(*cron.Deliver); !ok || dl.Sink != "hook" || string(dl.Data) != "payload" || d.Schedule.String() != "every 1m30s" {
		t.Errorf("d = %+v, action %#v", d, d.Action)
	}
}

// TestCronActionFailuresArePermanent: a wake for an agent that is not configured, or a
// delivery to a sink that is not, cannot succeed on a retry.
func TestCronActionFailuresArePermanent(t *testing.T) {
	permanent := func(what string, err error) {
		t.Helper()
		ae, ok := errors.AsType[*cron.ActionError](err)
		if !ok || ae.Class != cron.Permanent {
			t.Errorf("%s: %v, want a permanent failure", what, err)
		}
	}
	hb, err := heartbeat.New(heartbeat.Config{Agents: []heartbeat.AgentConfig{{ID: "main"}}}, heartbeat.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{heartbeats: hb}
	permanent("unknown agent", d.cronWake(t.Context(), "ops", "cron:x"))
	permanent("no heartbeat service", (&Daemon{}).cronWake(t.Context(), "", "cron:x"))
	_, err = (&Daemon{}).cronDeliver(t.Context(), cron.DeliverRequest{Sink: "hook"})
	permanent("no delivery service", err)
	cd := startCron(t, cronConfig(t, "http://127.0.0.1:1"))
	_, err = cd.d.cronDeliver(t.Context(), cron.DeliverRequest{Sink: "gone", Key: "cron:x@1", Data: []byte("x")})
	permanent("unknown sink", err)
}

// cronDaemon runs the delivery and cron components of a daemon and serves their endpoints.
type cronDaemon struct {
	d     *Daemon
	comps []*component
	cl    *client.Client
	dir   string
}

func (cd *cronDaemon) Status(ctx context.Context) api.Status {
	var st api.Status
	for _, c := range cd.comps {
		c.status(ctx, &st)
	}
	return st
}

func startCron(t *testing.T, cfg *config.Config) *cronDaemon {
	t.Helper()
	dir, err := os.MkdirTemp("", "cr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cd := &cronDaemon{d: &Daemon{opts: Options{StateDir: dir, Config: cfg}, log: zap.NewNop(), cfg: cfg}, dir: dir}
	for _, setup := range []func() (*component, error){cd.d.setupDeliveries, cd.d.setupCron} {
		c, err := setup()
		if err != nil {
			t.Fatal(err)
		}
		cd.comps = append(cd.comps, c)
	}
	sock := filepath.Join(dir, "s.sock")
	ln, err := server.Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Options{Backend: cd})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, c := range cd.comps {
		c.routes(srv)
		wg.Go(func() { _ = c.run(ctx) })
	}
	wg.Go(func() { _ = srv.Serve(ctx, ln) })
	t.Cleanup(func() { cancel(); wg.Wait(); ln.Close() })
	cd.cl = client.New(sock)
	return cd
}

// cronConfig has three jobs: quick (a delivery to the sink hook), slow (an http request to
// /block, which answers only when it is cancelled) and dst (off, in New York).
func cronConfig(t *testing.T, base string, jobs ...string) *config.Config {
	t.Helper()
	if jobs == nil {
		jobs = []string{
			"{name: quick, every: 1h, action: {deliver: {sink: hook, data: hello}}}",
			"{name: slow, every: 1h, action: {http: {url: '" + base + "/block'}}}",
			"{name: dst, schedule: '30 2 * * *', timezone: America/New_York, enabled: false, action: {http: {url: '" + base + "/ok'}}}",
		}
	}
	src := "gateway: {command: [gw]}\ndeliveries: {sinks: {hook: {http: {url: '" + base + "/ok'}}}}\n"
	if len(jobs) > 0 && jobs[0] != "" {
		src += "cron:\n  jobs:\n    - " + strings.Join(jobs, "\n    - ") + "\n"
	}
	c, err := config.Parse("schedd.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newBlockServer answers /ok at once and /block only when the request is cancelled.
func newBlockServer(t *testing.T) (*httptest.Server, chan string) {
	got := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Path + " " + r.Header.Get("Idempotency-Key")
		if r.URL.Path == "/block" {
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func (cd *cronDaemon) do(t *testing.T, method, path string, body, out any) {
	t.Helper()
	if err := cd.cl.Do(t.Context(), method, path, body, out); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
}

// The cron and task endpoints on a real store: list, show, next (a DST case), run with and
// without wait, enable and disable, the task list with its filters, show and cancel, and
// every error with its status and the field it names.
func TestCronAPI(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last, after the servers stopped
	hook, got := newBlockServer(t)
	cd := startCron(t, cronConfig(t, hook.URL))

	var st api.Cron
	cd.do(t, http.MethodGet, "/v1/cron", nil, &st)
	if len(st.Jobs) != 3 || st.StoreState != api.StoreOpen || st.Workers != 4 || st.QueueSize != 1000 {
		t.Fatalf("GET /v1/cron = %+v", st)
	}
	if dst := st.Jobs[2]; dst.Name != "dst" || dst.Enabled || dst.DisabledReason != "disabled in the config" ||
		dst.NextRunAt != nil || dst.Timezone != "America/New_York" {
		t.Errorf("dst %+v", dst)
	}

	// A manual run with wait answers once the task has ended; the delivery it stored is sent.
	var run api.CronRunReply
	cd.do(t, http.MethodPost, "/v1/cron/quick/run", api.CronRunRequest{Wait: true}, &run)
	if tk := run.Task; tk.State != api.TaskSucceeded || tk.Kind != api.KindManual || tk.Attempt != 1 || tk.Output != "delivery 1 stored" {
		t.Fatalf("run --wait: %+v", tk)
	}
	select {
	case g := <-got:
		if g != "/ok "+"cron:"+run.Task.RunKey {
			t.Errorf("the sink got %q, want /ok with the run's key", g)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the delivery of the cron run was not sent")
	}
	var detail api.CronJobDetail
	cd.do(t, http.MethodGet, "/v1/cron/quick", nil, &detail)
	if detail.Action != "deliver" || len(detail.Next) != 5 || len(detail.History) != 1 || detail.History[0].ID != run.Task.ID ||
		detail.Retry.Max != 3 || detail.HistoryLimit != 100 {
		t.Errorf("GET /v1/cron/quick = %+v", detail)
	}

	// The DST rule: 02:30 does not exist in New York on 2027-03-14; it runs at 03:30 EDT.
	var next api.CronNextReply
	cd.do(t, http.MethodGet, "/v1/cron/dst/next?count=2&from=2027-03-13T12:00:00-05:00", nil, &next)
	if len(next.Runs) != 2 || next.Runs[0].Local != "2027-03-14T03:30:00-04:00" ||
		!next.Runs[0].At.Equal(time.Date(2027, 3, 14, 7, 30, 0, 0, time.UTC)) || next.Runs[1].Local != "2027-03-15T02:30:00-04:00" {
		t.Errorf("next = %+v", next)
	}

	// A run without wait answers at once; cancel stops it and answers once it has ended.
	cd.do(t, http.MethodPost, "/v1/cron/slow/run", nil, &run)
	if run.Task.State != api.TaskRunning && run.Task.State != api.TaskQueued {
		t.Fatalf("run: %+v", run.Task)
	}
	<-got // the request is in
	var list api.TaskList
	cd.do(t, http.MethodGet, "/v1/tasks?job=slow&state=running", nil, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].ID != run.Task.ID {
		t.Fatalf("running tasks of slow: %+v", list)
	}
	var one api.Task
	cd.do(t, http.MethodGet, fmt.Sprintf("/v1/tasks/%d", run.Task.ID), nil, &one)
	if one.Job != "slow" || one.StartedAt == nil {
		t.Errorf("GET task: %+v", one)
	}
	var cancelled api.TaskCancelReply
	cd.do(t, http.MethodPost, fmt.Sprintf("/v1/tasks/%d/cancel", run.Task.ID), nil, &cancelled)
	if !cancelled.Cancelled || cancelled.Task.State != api.TaskCancelled || cancelled.Task.Reason != api.ReasonRequested {
		t.Errorf("cancel: %+v", cancelled)
	}
	cd.do(t, http.MethodPost, fmt.Sprintf("/v1/tasks/%d/cancel", run.Task.ID), nil, &cancelled)
	if cancelled.Cancelled || cancelled.Task.State != api.TaskCancelled {
		t.Errorf("cancel of an ended task: %+v, want it as it is with cancelled false", cancelled)
	}
	cd.do(t, http.MethodGet, "/v1/tasks?limit=1", nil, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].Job != "slow" || list.NextCursor != run.Task.ID {
		t.Errorf("first page of one: %+v", list)
	}
	cd.do(t, http.MethodGet, fmt.Sprintf("/v1/tasks?before=%d", list.NextCursor), nil, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].Job != "quick" {
		t.Errorf("next page: %+v", list)
	}

	// The switch is the job's, persisted; it says whether it changed anything.
	off, on := false, true
	var en api.CronEnabledReply
	cd.do(t, http.MethodPut, "/v1/cron/quick/enabled", api.CronEnabledRequest{Enabled: &off}, &en)
	if en != (api.CronEnabledReply{Name: "quick", Enabled: false, Changed: true}) {
		t.Errorf("disable: %+v", en)
	}
	cd.do(t, http.MethodPut, "/v1/cron/quick/enabled", api.CronEnabledRequest{Enabled: &off}, &en)
	if en.Changed {
		t.Errorf("disable twice: %+v", en)
	}
	if j := cd.Status(t.Context()).Cron.Jobs[0]; j.Enabled || j.DisabledReason != "disabled by request" {
		t.Errorf("status after disable: %+v", j)
	}
	cd.do(t, http.MethodPut, "/v1/cron/quick/enabled", api.CronEnabledRequest{Enabled: &on}, &en)

	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		msg          string
	}{
		{"GET", "/v1/cron/nope", nil, 404, `name: unknown cron job: "nope"`},
		{"GET", "/v1/cron/nope/next", nil, 404, `name: unknown cron job`},
		{"GET", "/v1/cron/dst/next?count=0", nil, 400, "count: want a number from 1 to 1000"},
		{"GET", "/v1/cron/dst/next?from=tomorrow", nil, 400, "from: want an RFC 3339 time"},
		{"POST", "/v1/cron/nope/run", nil, 404, `name: unknown cron job`},
		{"POST", "/v1/cron/quick/run", map[string]bool{"wiat": true}, 400, `unknown field "wiat"`},
		{"PUT", "/v1/cron/quick/enabled", map[string]any{}, 400, "enabled: is required"},
		{"PUT", "/v1/cron/nope/enabled", api.CronEnabledRequest{Enabled: &on}, 404, "name: unknown cron job"},
		{"GET", "/v1/tasks?state=done", nil, 400, "state: want queued, running"},
		{"GET", "/v1/tasks?limit=0", nil, 400, "limit: want a number from 1 to 1000"},
		{"GET", "/v1/tasks?before=x", nil, 400, "before: want the next_cursor"},
		{"GET", "/v1/tasks?job=nope", nil, 404, `job: no cron job "nope" is configured or has tasks`},
		{"GET", "/v1/tasks/abc", nil, 400, "id: want a task id"},
		{"GET", "/v1/tasks/999", nil, 404, "id: unknown task: 999"},
		{"POST", "/v1/tasks/999/cancel", nil, 404, "id: unknown task"},
	} {
		err := cd.cl.Do(t.Context(), tc.method, tc.path, tc.body, nil)
		if ae := apiError(t, err); ae.Status != tc.status || !strings.Contains(ae.Message, tc.msg) {
			t.Errorf("%s %s: %d %q, want %d with %q", tc.method, tc.path, ae.Status, ae.Message, tc.status, tc.msg)
		}
	}
}

// TestCronReloadKeepsHistory: a reload (SIGHUP) adds and removes jobs live; a removed job's
// history stays queryable and comes back with it.
func TestCronReloadKeepsHistory(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	hook, _ := newBlockServer(t)
	quick := "{name: quick, every: 1h, action: {deliver: {sink: hook, data: hello}}}"
	added := "{name: added, every: 1h, action: {http: {url: '" + hook.URL + "/ok'}}}"
	cd := startCron(t, cronConfig(t, hook.URL, quick))
	var run api.CronRunReply
	cd.do(t, http.MethodPost, "/v1/cron/quick/run", api.CronRunRequest{Wait: true}, &run)

	if err := reloadComponent(cd.comps[1], cronConfig(t, hook.URL, added)); err != nil {
		t.Fatal(err)
	}
	if jobs := cd.Status(t.Context()).Cron.Jobs; len(jobs) != 1 || jobs[0].Name != "added" {
		t.Fatalf("jobs after the reload: %+v", jobs)
	}
	if ae := apiError(t, cd.cl.Do(t.Context(), http.MethodGet, "/v1/cron/quick", nil, nil)); ae.Status != 404 {
		t.Errorf("a removed job: %d %s", ae.Status, ae.Message)
	}
	var list api.TaskList
	cd.do(t, http.MethodGet, "/v1/tasks?job=quick", nil, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].ID != run.Task.ID {
		t.Errorf("the removed job's history: %+v", list)
	}

	if err := reloadComponent(cd.comps[1], cronConfig(t, hook.URL, quick, added)); err != nil {
		t.Fatal(err)
	}
	var detail api.CronJobDetail
	cd.do(t, http.MethodGet, "/v1/cron/quick", nil, &detail)
	if len(detail.History) != 1 || detail.History[0].ID != run.Task.ID || detail.Last == nil || detail.Last.TaskID != run.Task.ID {
		t.Errorf("quick back: %+v", detail)
	}
}

// TestCronIdleDaemonHasNoStore: without a cron job no task store is created; the first job
// a reload brings opens it.
func TestCronIdleDaemonHasNoStore(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	cd := startCron(t, cronConfig(t, "http://127.0.0.1:1", ""))
	st := cd.Status(t.Context()).Cron
	if st == nil || st.StoreState != api.StoreNotOpened || len(st.Jobs) != 0 || st.Store != "" {
		t.Fatalf("cron status without jobs: %+v", st)
	}
	db := filepath.Join(cd.dir, sqlite.TasksFile)
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s: %v, want no file", db, err)
	}
	var list api.TaskList
	cd.do(t, http.MethodGet, "/v1/tasks", nil, &list)
	if len(list.Tasks) != 0 {
		t.Errorf("tasks without a store: %+v", list)
	}
	if err := reloadComponent(cd.comps[1], cronConfig(t, "http://127.0.0.1:1", "{name: a, every: 1h, action: {heartbeat_wake: {}}}")); err != nil {
		t.Fatal(err)
	}
	if st := cd.Status(t.Context()).Cron; st.StoreState != api.StoreOpen || st.Store != db {
		t.Errorf("after a job came: %+v", st)
	}
	if _, err := os.Stat(db); err != nil {
		t.Error(err)
	}
}
