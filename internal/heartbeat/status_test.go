package heartbeat

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// TestStatusJSONShape pins the heartbeat block of the status (docs/status.md):
// enabled, agents[] {id, enabled, interval_ms, next_due_at, last {status, reason, duration_ms, at}}.
func TestStatusJSONShape(t *testing.T) {
	off := false
	cfg := baseConfig(AgentConfig{ID: "main"}, AgentConfig{ID: "off", Enabled: &off})
	s, err := New(cfg, Deps{Run: runner((&fakeExec{}).run), Now: func() time.Time { return utc("2026-05-01T10:10:00Z") }})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.agents["main"].last = &api.HeartbeatRun{Status: api.RunSkipped, Reason: SkipQuietHours, DurationMS: 0, At: utc("2026-05-01T10:00:00Z")}
	s.mu.Unlock()
	data, err := json.Marshal(s.Status())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Enabled *bool `json:"enabled"`
		Agents  []map[string]json.RawMessage
	}
	if err := json.Unmarshal(data, &got); err != nil || got.Enabled == nil || !*got.Enabled || len(got.Agents) != 2 {
		t.Fatalf("status %s: %v", data, err)
	}
	for _, key := range []string{"id", "enabled", "interval_ms", "next_due_at", "last"} {
		for i, a := range got.Agents {
			if _, ok := a[key]; !ok {
				t.Errorf("agents[%d] lacks %q: %s", i, key, data)
			}
		}
	}
	var last map[string]json.RawMessage
	if err := json.Unmarshal(got.Agents[0]["last"], &last); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"status", "reason", "duration_ms", "at"} {
		if _, ok := last[key]; !ok {
			t.Errorf("last lacks %q: %s", key, got.Agents[0]["last"])
		}
	}
	if string(got.Agents[1]["next_due_at"]) != "null" || string(got.Agents[1]["enabled"]) != "false" ||
		string(got.Agents[1]["disabled_reason"]) != `"disabled"` {
		t.Errorf("disabled agent: %s", data)
	}
	if string(got.Agents[0]["every"]) != `"1m"` {
		t.Errorf("every %s, want the interval as the config writes it", got.Agents[0]["every"])
	}
	if string(got.Agents[0]["interval_ms"]) != "60000" {
		t.Errorf("interval_ms %s", got.Agents[0]["interval_ms"])
	}
}

// TestStatusNoAgentsConfigured_RINPUT12 is R-INPUT-12 for the heartbeat block: with
// heartbeat.agents empty the status says so beside the default agent it lists (which
// runs only with a target in heartbeat.defaults); with agents configured it does not.
func TestStatusNoAgentsConfigured_RINPUT12(t *testing.T) {
	now := func() time.Time { return utc("2026-05-01T10:10:00Z") }
	noTarget := Config{Seed: testSeed, Defaults: AgentConfig{Every: "1m"}}
	for _, tc := range []struct {
		name string
		cfg  Config
		want bool
		runs bool
	}{
		{"none, no target", noTarget, true, false},
		{"none, a default target", baseConfig(), true, true},
		{"one", baseConfig(AgentConfig{ID: "ops"}), false, true},
	} {
		s, err := New(tc.cfg, Deps{Run: runner((&fakeExec{}).run), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		st := s.Status()
		if st.NoAgentsConfigured != tc.want || len(st.Agents) != 1 || st.Agents[0].Enabled != tc.runs {
			t.Errorf("%s: status %+v, want no_agents_configured %v and one agent that runs: %v", tc.name, st, tc.want, tc.runs)
		}
	}
}
