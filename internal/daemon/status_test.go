package daemon

import (
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
)

func TestStatusLines(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		st   api.Gateway
		want string
	}{
		{api.Gateway{State: api.GatewayReady, PID: 42}, "gateway ready (pid 42)"},
		{api.Gateway{State: api.GatewayStarting}, "gateway starting"},
		{api.Gateway{State: api.GatewayStopping, PID: 42}, "gateway stopping (pid 42)"},
		{api.Gateway{State: api.GatewayStopped}, "gateway stopped"},
	} {
		if got := statusLine(tc.st); got != tc.want {
			t.Errorf("statusLine(%s) = %q, want %q", tc.st.State, got, tc.want)
		}
	}
	three := 3
	since, dl := now.Add(-10*time.Second), now.Add(290*time.Second)
	for _, tc := range []struct {
		p    api.RestartPending
		want string
	}{
		{api.RestartPending{Reasons: []string{"SIGUSR1"}, DueAt: now.Add(1500 * time.Millisecond)}, "restart pending (SIGUSR1) in 1.5s"},
		{api.RestartPending{Reasons: []string{"a", "b"}, DeferredSince: &since, DeadlineAt: &dl, Inflight: &three},
			"restart pending (a; b): waiting for the gateway to be idle (3 in flight), forced in 4m50s"},
		{api.RestartPending{Reasons: []string{"a"}, DeferredSince: &since, DeadlineAt: &dl},
			"restart pending (a): waiting for the gateway to be idle (busy), forced in 4m50s"},
		{api.RestartPending{Reasons: []string{"x"}, FollowUp: true}, "restart in progress; another is queued (x)"},
	} {
		if got := pendingLine(tc.p, now); got != tc.want {
			t.Errorf("pendingLine = %q, want %q", got, tc.want)
		}
	}
}

func TestGatewayChanges(t *testing.T) {
	a := gatewayFixture()
	b := gatewayFixture()
	if got := gatewayChanges(a, b); len(got) != 0 {
		t.Fatalf("no change: %v", got)
	}
	b.Command = []string{"gw", "--v2"}
	two := "2"
	b.Env = map[string]*string{"A": &two}
	b.Workdir = "/srv"
	b.Stop.Timeout = 1 // not a restart reason
	got := gatewayChanges(a, b)
	if len(got) != 3 || got[0] != "gateway.command" || got[1] != "gateway.env" || got[2] != "gateway.workdir" {
		t.Fatalf("changes %v", got)
	}
}

func gatewayFixture() config.Gateway {
	g := config.Default().Gateway
	g.Command = []string{"gw"}
	one := "1" // a pointer of each fixture's own: the values compare, not the pointers
	g.Env = map[string]*string{"A": &one, "TERM": nil}
	return g
}
