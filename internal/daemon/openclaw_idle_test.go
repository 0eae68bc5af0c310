package daemon

import (
	"slices"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/probe"
)

// TestOpenClawIdleWiring: the openclaw idle probe runs the CLI with the gateway's
// environment, the fence is the same probe when switched on, and the heartbeat busy check
// does not start the CLI for every batch.
func TestOpenClawIdleWiring(t *testing.T) {
	d := &Daemon{opts: Options{Environ: []string{"PATH=/bin", "HOME=/root", "DROP=1"}}}
	c, err := config.Parse("f.yaml", []byte("gateway:\n  command: [gw]\n  env: {HOME: /srv/oc, DROP: null}\n"+
		"restart:\n  defer_until_idle:\n    idle: {openclaw: {command: [node, oc.mjs], port: 18789}}\n    fence: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := d.restartConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	oc, ok := rc.Idle.(probe.OpenClaw)
	if !ok || !slices.Equal(oc.Command, []string{"node", "oc.mjs"}) || oc.Port != 18789 || rc.Poll != 5*time.Second ||
		rc.ProbeTimeout != 20*time.Second {
		t.Fatalf("idle %#v poll %s timeout %s", rc.Idle, rc.Poll, rc.ProbeTimeout)
	}
	if !slices.Contains(oc.Env, "HOME=/srv/oc") || slices.Contains(oc.Env, "DROP=1") {
		t.Errorf("CLI env %q: want the gateway's", oc.Env)
	}
	if f, ok := rc.Fence.(probe.OpenClaw); !ok || f.Port != 18789 {
		t.Errorf("fence %#v", rc.Fence)
	}
	if p, _ := d.heartbeatIdleProbe(c); p != nil {
		t.Errorf("heartbeat busy check uses the openclaw probe: %T", p)
	}
	c.Restart.DeferUntilIdle.Fence = nil
	if rc, _ := d.restartConfig(c); rc.Fence != nil {
		t.Errorf("fence off: %#v", rc.Fence)
	}
}

func TestPendingLineOpenClaw(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	since, dl := now.Add(-10*time.Second), now.Add(50*time.Second)
	p := api.RestartPending{Reasons: []string{"deploy"}, DeferredSince: &since, DeadlineAt: &dl,
		IdleDetail: &api.IdleDetail{Summary: "restart deferred: 1 active request"}}
	if got, want := pendingLine(p, now), "restart pending (deploy): waiting for the gateway to be idle (restart deferred: 1 active request), forced in 50s"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	p.Fence = &api.FenceState{Status: "draining"}
	if got, want := pendingLine(p, now), "restart pending (deploy): waiting for the gateway to be idle (admission closed: draining), forced in 50s"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
