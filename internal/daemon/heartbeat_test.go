package daemon

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/control"
	"github.com/schedd/schedd/internal/heartbeat"
	"github.com/schedd/schedd/internal/platform"
)

// TestHeartbeatConfigMirrorsConfig: every field of the config file's heartbeat agent has a
// namesake in the heartbeat package's, so a new key cannot be forgotten in the wiring.
func TestHeartbeatConfigMirrorsConfig(t *testing.T) {
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[config.Heartbeat](), reflect.TypeFor[heartbeat.Config]()},
		{reflect.TypeFor[config.HeartbeatAgent](), reflect.TypeFor[heartbeat.AgentConfig]()},
		{reflect.TypeFor[config.ActiveHours](), reflect.TypeFor[heartbeat.ActiveHours]()},
		{reflect.TypeFor[config.Visibility](), reflect.TypeFor[heartbeat.Visibility]()},
		{reflect.TypeFor[config.ChannelVisibility](), reflect.TypeFor[heartbeat.ChannelVisibility]()},
		{reflect.TypeFor[config.HTTPTarget](), reflect.TypeFor[heartbeat.HTTPTarget]()},
		{reflect.TypeFor[config.ExecTarget](), reflect.TypeFor[heartbeat.ExecTarget]()},
	} {
		for f := range pair[0].Fields() {
			if _, ok := pair[1].FieldByName(f.Name); !ok {
				t.Errorf("%s.%s has no counterpart in %s", pair[0], f.Name, pair[1])
			}
		}
	}
}

func TestHeartbeatConfig(t *testing.T) {
	c, err := config.Parse("f.yaml", []byte(`
gateway: {command: [gw]}
heartbeat:
  enabled: false
  user_timezone: Europe/Berlin
  defaults:
    every: 15m
    active_hours: {start: "08:00", end: "22:00"}
    target: {http: {url: "http://127.0.0.1:1/wake", headers: {X-Token: t}}}
    visibility:
      show_ok: true
      channels: {tg: {show_alerts: false, accounts: {work: {use_indicator: false}}}}
  agents:
    - {id: main}
    - {id: ops, every: 1h, channel: tg, account: work, session: "agent:ops:main", enabled: false,
       target: {exec: {command: [notify, ops], timeout: 5s}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	h := HeartbeatConfig(c.Heartbeat)
	if err := h.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if h.Enabled == nil || *h.Enabled || h.UserTimezone != "Europe/Berlin" || len(h.Agents) != 2 {
		t.Fatalf("top level %+v", h)
	}
	d := h.Defaults
	if d.Every != "15m" || d.ActiveHours == nil || d.ActiveHours.Start != "08:00" || d.ActiveHours.Timezone != "user" {
		t.Errorf("defaults %+v", d)
	}
	if d.Target == nil || d.Target.HTTP == nil || d.Target.HTTP.Method != "POST" || d.Target.HTTP.Timeout != 10*time.Second ||
		d.Target.HTTP.Headers["X-Token"] != "t" {
		t.Errorf("defaults target %+v", d.Target)
	}
	ops := h.Agents[1]
	if ops.ID != "ops" || ops.Every != "1h" || ops.Channel != "tg" || ops.Account != "work" || ops.Session != "agent:ops:main" ||
		ops.Enabled == nil || *ops.Enabled || ops.Target.Exec == nil || ops.Target.Exec.Timeout != 5*time.Second ||
		strings.Join(ops.Target.Exec.Command, " ") != "notify ops" {
		t.Errorf("ops %+v", ops)
	}
	// The layers resolve as the heartbeat package reads them: account, channel, top level.
	v := heartbeat.ResolveVisibility(d.Visibility, ops.Channel, ops.Account)
	if want := (heartbeat.ResolvedVisibility{ShowOK: true, ShowAlerts: false, UseIndicator: false}); v != want {
		t.Errorf("visibility %+v, want %+v", v, want)
	}
	// The defaults of an empty file give one agent, main, that does not run: no target.
	empty := HeartbeatConfig(config.Default().Heartbeat)
	if err := empty.Validate(); err != nil || len(empty.Agents) != 0 || empty.Defaults.Every != "30m" {
		t.Fatalf("defaults: %+v, %v", empty, err)
	}
}

// fakeCounter is an idle probe that answers n (or err) and counts its calls.
type fakeCounter struct {
	mu    sync.Mutex
	n     int
	err   error
	calls int
}

func (f *fakeCounter) Inflight(context.Context) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.n, f.err
}

func TestHeartbeatGatewayInflight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := api.Gateway{State: api.GatewayStarting}
		g := &heartbeatGateway{status: func() api.Gateway { return st }, log: zap.NewNop()}
		ctx := t.Context()

		// No probe and no X_SCHEDD_INFLIGHT: unknown, which counts as idle.
		if n, known := g.Inflight(ctx); known || n != 0 {
			t.Fatalf("no signal: %d, %v", n, known)
		}
		three := 3
		st.Inflight = &three
		if n, known := g.Inflight(ctx); !known || n != 3 {
			t.Fatalf("X_SCHEDD_INFLIGHT=3: %d, %v", n, known)
		}
		if g.Ready() {
			t.Fatal("ready while starting")
		}
		st.State = api.GatewayReady
		if !g.Ready() {
			t.Fatal("not ready while ready")
		}

		// A probe wins over X_SCHEDD_INFLIGHT; its answer is reused for inflightTTL.
		p := &fakeCounter{n: 0}
		g.setProbe(p, time.Second)
		if n, known := g.Inflight(ctx); !known || n != 0 || p.calls != 1 {
			t.Fatalf("probe idle: %d, %v, %d calls", n, known, p.calls)
		}
		p.n = 2
		time.Sleep(inflightTTL - time.Nanosecond)
		if n, _ := g.Inflight(ctx); n != 0 || p.calls != 1 {
			t.Fatalf("inside the TTL: %d after %d calls, want the cached 0 and no new call", n, p.calls)
		}
		time.Sleep(time.Nanosecond)
		if n, _ := g.Inflight(ctx); n != 2 || p.calls != 2 {
			t.Fatalf("after the TTL: %d after %d calls", n, p.calls)
		}
		// A replaced probe is asked at once.
		q := &fakeCounter{err: errors.New("connection refused")}
		g.setProbe(q, time.Second)
		if n, known := g.Inflight(ctx); !known || n != 1 || q.calls != 1 {
			t.Fatalf("failing probe: %d, %v, %d calls; want busy", n, known, q.calls)
		}
		// Back to no probe: X_SCHEDD_INFLIGHT again.
		g.setProbe(nil, 0)
		if n, _ := g.Inflight(ctx); n != 3 {
			t.Fatalf("probe removed: %d", n)
		}
	})
}

// hangingCounter blocks until ctx ends.
type hangingCounter struct{}

func (hangingCounter) Inflight(ctx context.Context) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func TestHeartbeatGatewayProbeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &heartbeatGateway{status: func() api.Gateway { return api.Gateway{} }, log: zap.NewNop()}
		g.setProbe(hangingCounter{}, 2*time.Second)
		start := time.Now()
		n, known := g.Inflight(t.Context())
		if !known || n != 1 || time.Since(start) != 2*time.Second {
			t.Fatalf("hung probe: %d, %v after %v; want busy after exactly 2s", n, known, time.Since(start))
		}
	})
}

func TestHeartbeatIdleProbe(t *testing.T) {
	d := &Daemon{opts: Options{Environ: []string{"PATH=/bin"}}}
	parse := func(yaml string) *config.Config {
		t.Helper()
		c, err := config.Parse("f.yaml", []byte("gateway: {command: [gw]}\n"+yaml))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if p, _ := d.heartbeatIdleProbe(parse("")); p != nil {
		t.Errorf("no idle probe configured: %T", p)
	}
	if p, _ := d.heartbeatIdleProbe(parse("restart: {defer_until_idle: {idle: {notify: {}}}}\n")); p != nil {
		t.Errorf("notify idle probe: %T, want nil (X_SCHEDD_INFLIGHT is read directly)", p)
	}
	p, timeout := d.heartbeatIdleProbe(parse("restart: {defer_until_idle: {enabled: false, idle: {http: {url: 'http://127.0.0.1:1/busy', inflight_pointer: /n}, timeout: 700ms}}}\n"))
	if p == nil || timeout != 700*time.Millisecond {
		t.Errorf("http idle probe with deferral off: %T, %v; want the probe and its timeout", p, timeout)
	}
	if p, timeout := d.heartbeatIdleProbe(parse("restart: {defer_until_idle: {idle: {exec: {command: [busy]}}}}\n")); p == nil || timeout <= 0 {
		t.Errorf("exec idle probe: %T, %v", p, timeout)
	}
}

// pulseLog records what a fake exec target received.
type pulseLog struct {
	mu     sync.Mutex
	pulses []heartbeat.Pulse
	got    chan struct{}
}

func (l *pulseLog) run(_ context.Context, spec platform.RunSpec) (platform.RunResult, error) {
	var p heartbeat.Pulse
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "SCHEDD_AGENT_ID":
			p.AgentID = v
		case "SCHEDD_REASON":
			p.Reason = v
		case "SCHEDD_SESSION_KEY":
			p.SessionKey = v
		}
	}
	l.mu.Lock()
	l.pulses = append(l.pulses, p)
	l.mu.Unlock()
	l.got <- struct{}{}
	return platform.RunResult{Status: platform.ExitStatus{Exited: true}}, nil
}

// serveHeartbeatAPI runs svc and its endpoints on a control socket and returns a client.
func serveHeartbeatAPI(t *testing.T, svc *heartbeat.Service) *control.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "hb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	ln, err := control.Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	srv := control.NewServer(control.ServerOptions{Backend: statusOnly{svc}})
	heartbeatAPI{svc: svc}.routes(srv)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ctx, ln) })
	wg.Go(func() { _ = svc.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); ln.Close() })
	return control.NewClient(sock)
}

type statusOnly struct{ svc *heartbeat.Service }

func (s statusOnly) Status(context.Context) api.Status {
	hs := s.svc.Status()
	return api.Status{Heartbeat: &hs}
}

func TestHeartbeatAPI(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs after the service has stopped
	yes, no := true, false
	pulses := &pulseLog{got: make(chan struct{}, 16)}
	target := &heartbeat.Target{Exec: &heartbeat.ExecTarget{Command: []string{"target"}}}
	svc, err := heartbeat.New(heartbeat.Config{
		Defaults: heartbeat.AgentConfig{Every: "1h", Target: target},
		Agents: []heartbeat.AgentConfig{
			{ID: "main"}, {ID: "ops"}, {ID: "off", Enabled: &no},
		},
	}, heartbeat.Deps{Run: pulses.run})
	if err != nil {
		t.Fatal(err)
	}
	cl := serveHeartbeatAPI(t, svc)
	ctx := t.Context()
	apiErr := func(err error) *api.Error {
		t.Helper()
		ae, ok := errors.AsType[*api.Error](err)
		if !ok {
			t.Fatalf("error %v, want an API error", err)
		}
		return ae
	}

	var reply api.HeartbeatWakeReply
	if err := cl.Do(ctx, http.MethodPost, "/v1/heartbeat/wake", api.HeartbeatWakeRequest{Agent: "ops", Reason: " manual "}, &reply); err != nil {
		t.Fatal(err)
	}
	if reply.Agent != "ops" || reply.Reason != "manual" || reply.ReasonKind != string(heartbeat.KindManual) || !reply.Enabled || reply.CoalesceMS != 250 {
		t.Fatalf("wake reply %+v", reply)
	}
	select {
	case <-pulses.got:
	case <-time.After(10 * time.Second):
		t.Fatal("no pulse after the wake")
	}
	pulses.mu.Lock()
	if p := pulses.pulses[0]; p.AgentID != "ops" || p.Reason != "manual" {
		t.Errorf("pulse %+v", p)
	}
	pulses.mu.Unlock()

	for _, tc := range []struct {
		name   string
		body   any
		status int
		msg    string
	}{
		{"unknown agent", api.HeartbeatWakeRequest{Agent: "nope"}, 404, `agent: unknown heartbeat agent "nope" (configured: main, ops, off)`},
		{"agent that does not run", api.HeartbeatWakeRequest{Agent: "off"}, 409, `agent: heartbeat agent "off" does not run (disabled)`},
		{"session naming an unknown agent", api.HeartbeatWakeRequest{Session: "agent:x:main"}, 404, `session: unknown heartbeat agent "x"`},
		{"reason with a newline", api.HeartbeatWakeRequest{Reason: "a\nb"}, 400, "reason: control characters"},
		{"long reason", api.HeartbeatWakeRequest{Reason: strings.Repeat("r", 201)}, 400, "reason: at most 200 bytes"},
		{"unknown field", map[string]string{"agnet": "main"}, 400, `unknown field "agnet"`},
	} {
		err := cl.Do(ctx, http.MethodPost, "/v1/heartbeat/wake", tc.body, nil)
		if ae := apiErr(err); ae.Status != tc.status || !strings.Contains(ae.Message, tc.msg) {
			t.Errorf("%s: %d %q, want %d with %q", tc.name, ae.Status, ae.Message, tc.status, tc.msg)
		}
	}

	// The switch: the body is required, and the reply says whether it changed.
	if ae := apiErr(cl.Do(ctx, http.MethodPut, "/v1/heartbeat/enabled", map[string]any{}, nil)); ae.Status != 400 || !strings.HasPrefix(ae.Message, "enabled: is required") {
		t.Errorf("empty switch body: %d %q", ae.Status, ae.Message)
	}
	if ae := apiErr(cl.Do(ctx, http.MethodPut, "/v1/heartbeat/enabled", map[string]any{"enabled": "no"}, nil)); ae.Status != 400 {
		t.Errorf("a string switch: %d %q", ae.Status, ae.Message)
	}
	var en api.HeartbeatEnabledReply
	if err := cl.Do(ctx, http.MethodPut, "/v1/heartbeat/enabled", api.HeartbeatEnabledRequest{Enabled: &no}, &en); err != nil || en.Enabled || !en.Changed {
		t.Fatalf("disable: %+v, %v", en, err)
	}
	if err := cl.Do(ctx, http.MethodPut, "/v1/heartbeat/enabled", api.HeartbeatEnabledRequest{Enabled: &no}, &en); err != nil || en.Changed {
		t.Fatalf("disable again: %+v, %v", en, err)
	}
	st, err := cl.Status(ctx)
	if err != nil || st.Heartbeat == nil || st.Heartbeat.Enabled || len(st.Heartbeat.Agents) != 3 {
		t.Fatalf("status after disable: %+v, %v", st.Heartbeat, err)
	}
	// A wake while switched off is accepted, and says it will be skipped.
	if err := cl.Do(ctx, http.MethodPost, "/v1/heartbeat/wake", api.HeartbeatWakeRequest{}, &reply); err != nil || reply.Enabled || reply.Reason != "requested" {
		t.Fatalf("wake while disabled: %+v, %v", reply, err)
	}
	if err := cl.Do(ctx, http.MethodPut, "/v1/heartbeat/enabled", api.HeartbeatEnabledRequest{Enabled: &yes}, &en); err != nil || !en.Enabled || !en.Changed {
		t.Fatalf("enable: %+v, %v", en, err)
	}
}

func TestHeartbeatAPINoAgentRuns(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs after the service has stopped
	svc, err := heartbeat.New(heartbeat.Config{}, heartbeat.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	cl := serveHeartbeatAPI(t, svc)
	err = cl.Do(t.Context(), http.MethodPost, "/v1/heartbeat/wake", api.HeartbeatWakeRequest{}, nil)
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Status != 409 || !strings.Contains(ae.Message, "no heartbeat agent runs") {
		t.Fatalf("wake with no target: %v", err)
	}
}
