package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

func TestPrintHeartbeat(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	due := now.Add(90 * time.Second)
	far := now.Add(50 * time.Hour)
	st := api.Heartbeat{Enabled: false, Agents: []api.AgentStatus{
		{ID: "main", Enabled: true, IntervalMS: 1_800_000, Every: "30m", NextDueAt: &due,
			Last:  &api.HeartbeatRun{Status: api.RunRan, DurationMS: 120, At: now.Add(-3 * time.Minute)},
			Event: &api.HeartbeatEvent{Status: "ok-token", Indicator: "ok", Preview: "HEARTBEAT_OK\nall   good"}},
		{ID: "night", Enabled: true, IntervalMS: 3_600_000, Every: "1h", NextDueAt: &far,
			Last: &api.HeartbeatRun{Status: api.RunSkipped, Reason: "quiet-hours", At: now.Add(-10 * time.Second)}},
		{ID: "ops", Enabled: true, IntervalMS: 60_000, Every: "1m", NextDueAt: &due,
			Last: &api.HeartbeatRun{Status: api.RunFailed, Reason: "exit status 3", At: now.Add(-time.Second)}},
		{ID: "off", DisabledReason: "no target"},
	}}
	var b bytes.Buffer
	printHeartbeat(&b, st, now)
	out := b.String()
	for _, want := range []string{
		"heartbeats disabled (schedd heartbeat enable)",
		"AGENT", "EVENT",
		"main", "30m", "in 1m30s (", "ran 3m0s ago in 120ms", "ok-token [ok] HEARTBEAT_OK all good",
		"night", "1h", "in 50h0m0s (Mar 3 ", "skipped 10s ago: quiet-hours",
		"ops", "failed 1s ago: exit status 3",
		"off", "not running: no target", "never",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}

	// The summary in `schedd status` lists at most five running agents.
	for i := range 6 {
		st.Agents = append(st.Agents, api.AgentStatus{ID: fmt.Sprintf("a%d", i), Enabled: true, IntervalMS: 60_000, NextDueAt: &due})
	}
	var lines []string
	printHeartbeatSummary(func(k string, v ...string) { lines = append(lines, k+"|"+strings.Join(v, "|")) }, &st, now)
	if len(lines) != 7 || lines[0] != "heartbeat|disabled|9 of 10 agents run" ||
		!strings.HasPrefix(lines[1], "  main|next in 1m30s") || !strings.HasSuffix(lines[1], "|last ran 3m0s ago in 120ms") ||
		lines[6] != "|... 4 more: schedd heartbeat status" {
		t.Errorf("summary:\n%s", strings.Join(lines, "\n"))
	}
	printHeartbeatSummary(func(string, ...string) { t.Error("a row for a status without a heartbeat block") }, nil, now)
}
