package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOpenClawIdleDefaults(t *testing.T) {
	c := mustParse(t, cmd+"restart:\n  defer_until_idle:\n    idle: {openclaw: {port: 18789}}\n")
	di := c.Restart.DeferUntilIdle
	if di.Idle.OpenClaw == nil || !slices.Equal(di.Idle.OpenClaw.Command, []string{"openclaw"}) || di.Idle.OpenClaw.Port != 18789 {
		t.Fatalf("openclaw probe %+v", di.Idle.OpenClaw)
	}
	if di.Idle.Timeout.D() != 20*time.Second || di.Poll.D() != 5*time.Second || di.Fence == nil || *di.Fence ||
		!*di.Enabled || di.Idle.Kind() != ProbeOpenClaw {
		t.Fatalf("timeout %s poll %s fence %v enabled %v", di.Idle.Timeout, di.Poll, di.Fence, di.Enabled)
	}
	// Other kinds keep theirs.
	c = mustParse(t, cmd+"restart:\n  defer_until_idle:\n    idle: {exec: {command: [x]}}\n")
	if di := c.Restart.DeferUntilIdle; di.Idle.Timeout.D() != 5*time.Second || di.Poll.D() != 500*time.Millisecond {
		t.Fatalf("exec: timeout %s poll %s", di.Idle.Timeout, di.Poll)
	}
	c = mustParse(t, cmd+"restart:\n  defer_until_idle:\n    idle: {openclaw: {command: [node, /x/openclaw.mjs], url: 'ws://127.0.0.1:1/'}, timeout: 30s}\n    poll: 10s\n    fence: true\n")
	if di := c.Restart.DeferUntilIdle; di.Idle.Timeout.D() != 30*time.Second || di.Poll.D() != 10*time.Second || !*di.Fence ||
		di.Idle.OpenClaw.Command[0] != "node" {
		t.Fatalf("given: %+v", di)
	}
}

func TestOpenClawIdleErrors(t *testing.T) {
	const di = "restart:\n  defer_until_idle:\n"
	tests := []struct{ name, src, want string }{
		{"poll below its cost", di + "    idle: {openclaw: {}}\n    poll: 500ms\n",
			"f.yaml:5:11: restart.defer_until_idle.poll: must be at least 2s with the openclaw idle probe (each check starts its CLI, which takes seconds), got 500ms"},
		{"port out of range", di + "    idle: {openclaw: {port: 70000}}\n",
			"f.yaml:4:29: restart.defer_until_idle.idle.openclaw.port: must be from 1 to 65535, got 70000"},
		{"port and url", di + "    idle: {openclaw: {port: 1, url: 'ws://h:1'}}\n",
			"f.yaml:4:37: restart.defer_until_idle.idle.openclaw.url: and port name the gateway twice; give one"},
		{"http url", di + "    idle: {openclaw: {url: 'http://h:1'}}\n",
			"f.yaml:4:28: restart.defer_until_idle.idle.openclaw.url: must be a ws:// or wss:// URL"},
		{"empty program", di + "    idle: {openclaw: {command: ['']}}\n",
			"f.yaml:4:33: restart.defer_until_idle.idle.openclaw.command[0]: the program must not be empty"},
		{"not for readiness", "gateway:\n  command: [gw]\n  readiness: {openclaw: {}}\n",
			"f.yaml:3:25: gateway.readiness.openclaw: is not allowed here (use one of: notify, http, tcp, exec, none)"},
		{"fence without openclaw", di + "    idle: {exec: {command: [x]}}\n    fence: true\n",
			"f.yaml:5:12: restart.defer_until_idle.fence: needs the openclaw idle probe (restart.defer_until_idle.idle.openclaw)"},
		{"fence with liveness on readyz", "gateway:\n  command: [gw]\n  liveness: {http: {url: 'http://127.0.0.1:18789/readyz'}}\n" + di + "    idle: {openclaw: {}}\n    fence: true\n",
			"f.yaml:7:12: restart.defer_until_idle.fence: cannot be used with a liveness probe on /readyz (gateway.liveness.http.url): a fenced OpenClaw answers /readyz 503 by design; probe liveness on /healthz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.src
			if !strings.HasPrefix(src, "gateway:") {
				src = cmd + src
			}
			if got := parseErr(t, src); got != tt.want {
				t.Errorf("Parse(%q):\n got: %s\nwant: %s", tt.src, got, tt.want)
			}
		})
	}
	// Liveness on /healthz is fine with the fence.
	mustParse(t, "gateway:\n  command: [gw]\n  liveness: {http: {url: 'http://127.0.0.1:18789/healthz'}}\n"+di+"    idle: {openclaw: {}}\n    fence: true\n")
}
