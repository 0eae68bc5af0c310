package server

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
	"github.com/schedd/schedd/internal/heartbeat"
	"github.com/schedd/schedd/internal/platform"
)

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
func serveHeartbeatAPI(t *testing.T, svc *heartbeat.Service) *client.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "hb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	ln, err := Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Options{Backend: statusOnly{svc}})
	srv.AddHeartbeat(svc)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ctx, ln) })
	wg.Go(func() { _ = svc.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); ln.Close() })
	return client.New(sock)
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
	target := &heartbeat.Target{Exec: &heartbeat.ExecTarget{Command: []string{"target"}, Timeout: 30 * time.Second}}
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
