package daemon

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/heartbeat"
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
