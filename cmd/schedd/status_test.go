package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// statusLines renders st as `schedd status` does, each line's columns joined by one space.
func statusLines(st api.Status, now time.Time) []string {
	var b strings.Builder
	printStatus(&b, st, now)
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return lines
}

// TestStatusWhileDown_RINPUT12 is R-INPUT-12 in `schedd status`: in every state without a
// running gateway the gateway line says how long it has been down and since when, never
// `ready for` (even from a daemon that left ready_since set); with no heartbeat agent
// configured the heartbeat line says so, not "0 of 1 agents run".
func TestStatusWhileDown_RINPUT12(t *testing.T) {
	now := time.Date(2027, 3, 14, 12, 0, 0, 0, time.Local)
	down := now.Add(-95 * time.Second)
	for _, state := range []api.GatewayState{api.GatewayBackoff, api.GatewayCrashLooping, api.GatewayFailed, api.GatewayStopped} {
		st := api.Status{Gateway: api.Gateway{State: state, StartedAt: now.Add(-time.Hour), ReadySince: now.Add(-time.Hour), DownSince: down}}
		lines := statusLines(st, now)
		if want := "gateway " + string(state) + " down for 1m35s since 11:58:25"; !slices.Contains(lines, want) {
			t.Errorf("%s: status lacks %q:\n%s", state, want, strings.Join(lines, "\n"))
		}
		for _, l := range lines {
			if strings.Contains(l, "ready for") {
				t.Errorf("%s: %q", state, l)
			}
		}
	}
	lines := statusLines(api.Status{Gateway: api.Gateway{State: api.GatewayBackoff, DownSince: now.Add(-50 * time.Hour)}}, now)
	if want := "gateway backoff down for 50h0m0s since Mar 12 10:00:00"; !slices.Contains(lines, want) {
		t.Errorf("status lacks %q:\n%s", want, strings.Join(lines, "\n"))
	}
	lines = statusLines(api.Status{Gateway: api.Gateway{State: api.GatewayReady, PID: 7, ReadySince: now.Add(-time.Minute)}}, now)
	if want := "gateway ready pid 7 ready for 1m0s"; !slices.Contains(lines, want) {
		t.Errorf("status lacks %q:\n%s", want, strings.Join(lines, "\n"))
	}

	for _, tc := range []struct {
		hb   api.Heartbeat
		want string
	}{
		{api.Heartbeat{Enabled: true, NoAgentsConfigured: true, Agents: []api.AgentStatus{{ID: "main", DisabledReason: "no target"}}},
			"heartbeat enabled no agent configured"},
		{api.Heartbeat{Enabled: true, NoAgentsConfigured: true, Agents: []api.AgentStatus{{ID: "main", Enabled: true}}},
			"heartbeat enabled 1 of 1 agents run"},
		{api.Heartbeat{Enabled: true, Agents: []api.AgentStatus{{ID: "ops", DisabledReason: "no target"}}},
			"heartbeat enabled 0 of 1 agents run"},
	} {
		lines := statusLines(api.Status{Heartbeat: &tc.hb}, now)
		if !slices.Contains(lines, tc.want) {
			t.Errorf("status lacks %q:\n%s", tc.want, strings.Join(lines, "\n"))
		}
	}
}
