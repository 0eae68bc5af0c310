package heartbeat

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPlanWhichAgentsRun(t *testing.T) {
	off := false
	t.Run("no agents: only the default agent", func(t *testing.T) {
		plans, err := Config{Defaults: AgentConfig{Every: "30m", Target: execTarget()}}.plan(time.UTC)
		if err != nil || len(plans) != 1 || plans[0].cfg.ID != DefaultAgentID || !plans[0].runs ||
			plans[0].interval != 30*time.Minute {
			t.Fatalf("plans %+v, %v", plans, err)
		}
	})
	t.Run("no heartbeat configured at all: nothing runs", func(t *testing.T) {
		plans, err := Config{Defaults: AgentConfig{Every: "30m"}}.plan(time.UTC) // as the config gives it
		if err != nil || len(plans) != 1 || plans[0].runs || plans[0].why != "no target" {
			t.Fatalf("plans %+v, %v", plans, err)
		}
	})
	t.Run("explicit agents only, merged shallowly over defaults", func(t *testing.T) {
		defVis := &Visibility{ShowOK: &off}
		cfg := Config{
			Defaults: AgentConfig{Every: "15m", Target: execTarget(), Session: "main", Visibility: defVis,
				ActiveHours: &ActiveHours{Start: "08:00", End: "22:00"}},
			Agents: []AgentConfig{
				{ID: "ops", Every: "5"},
				{ID: "night", ActiveHours: &ActiveHours{Start: "22:00", End: "06:00"}},
				{ID: "off", Enabled: &off},
				{ID: "never", Every: "0m"},
				{ID: "typo", Every: "oops"},
			},
		}
		plans, err := cfg.plan(time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]agentPlan{}
		for _, p := range plans {
			byID[p.cfg.ID] = p
		}
		if len(plans) != 5 || byID[DefaultAgentID].cfg.ID != "" {
			t.Fatalf("plans %+v", plans)
		}
		if p := byID["ops"]; !p.runs || p.interval != 5*time.Minute || p.cfg.Session != "main" || p.cfg.Visibility != defVis {
			t.Errorf("ops %+v", p)
		}
		if p := byID["night"]; p.interval != 15*time.Minute || p.cfg.ActiveHours.Start != "22:00" {
			t.Errorf("night %+v: a set struct replaces the default whole", p)
		}
		if p := byID["off"]; p.runs || p.why != "disabled" {
			t.Errorf("off %+v", p)
		}
		if p := byID["never"]; p.runs || p.why != "no interval" {
			t.Errorf("never %+v", p)
		}
		if p := byID["typo"]; p.runs || p.everyErr == nil {
			t.Errorf("typo %+v", p)
		}
	})
}

func TestValidate(t *testing.T) {
	bothKinds := &Target{HTTP: &HTTPTarget{URL: "http://x"}, Exec: &ExecTarget{Command: []string{"x"}}}
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"empty id", Config{Agents: []AgentConfig{{ID: ""}}}, "heartbeat.agents[0].id"},
		{"duplicate id", Config{Agents: []AgentConfig{{ID: "a"}, {ID: "a"}}}, "heartbeat.agents[1].id"},
		{"spaces in id", Config{Agents: []AgentConfig{{ID: " a"}}}, "heartbeat.agents[0].id"},
		{"defaults id", Config{Defaults: AgentConfig{ID: "x"}}, "heartbeat.defaults.id"},
		{"both kinds", Config{Agents: []AgentConfig{{ID: "a", Target: bothKinds}}}, "heartbeat.agents[0].target"},
		{"no kind", Config{Defaults: AgentConfig{Target: &Target{}}}, "heartbeat.defaults.target"},
		{"relative url", Config{Defaults: AgentConfig{Target: &Target{HTTP: &HTTPTarget{URL: "/hooks"}}}}, "heartbeat.defaults.target.http.url"},
		{"no command", Config{Agents: []AgentConfig{{ID: "a", Target: &Target{Exec: &ExecTarget{}}}}}, "heartbeat.agents[0].target.exec.command"},
		{"negative timeout", Config{Defaults: AgentConfig{Target: &Target{Exec: &ExecTarget{Command: []string{"x"}, Timeout: -1}}}}, "heartbeat.defaults.target.exec.timeout"},
		{"http and openclaw", Config{Defaults: AgentConfig{Target: &Target{HTTP: &HTTPTarget{URL: "http://x"},
			OpenClaw: &OpenClawTarget{URL: "http://x/hooks/wake", Token: "t"}}}}, "heartbeat.defaults.target"},
		{"openclaw relative url", Config{Defaults: AgentConfig{Target: &Target{OpenClaw: &OpenClawTarget{URL: "/hooks/wake", Token: "t"}}}},
			"heartbeat.defaults.target.openclaw.url"},
		{"openclaw no token", Config{Agents: []AgentConfig{{ID: "a", Target: &Target{OpenClaw: &OpenClawTarget{URL: "http://x/hooks/wake"}}}}},
			"heartbeat.agents[0].target.openclaw.token"},
		{"openclaw negative timeout", Config{Defaults: AgentConfig{Target: &Target{OpenClaw: &OpenClawTarget{URL: "http://x", Token: "t", Timeout: -1}}}},
			"heartbeat.defaults.target.openclaw.timeout"},
		// The config gives every target its method and timeout: a zero is refused, not defaulted.
		{"zero exec timeout", Config{Defaults: AgentConfig{Target: &Target{Exec: &ExecTarget{Command: []string{"x"}}}}}, "heartbeat.defaults.target.exec.timeout"},
		{"zero http timeout", Config{Defaults: AgentConfig{Target: &Target{HTTP: &HTTPTarget{URL: "http://x", Method: "POST"}}}}, "heartbeat.defaults.target.http.timeout"},
		{"no http method", Config{Defaults: AgentConfig{Target: &Target{HTTP: &HTTPTarget{URL: "http://x", Timeout: time.Second}}}}, "heartbeat.defaults.target.http.method"},
		{"zero openclaw timeout", Config{Defaults: AgentConfig{Target: &Target{OpenClaw: &OpenClawTarget{URL: "http://x/hooks/wake", Token: "t"}}}},
			"heartbeat.defaults.target.openclaw.timeout"},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: %v, want an error on %s", tc.name, err, tc.field)
		}
	}
	if err := baseConfig(AgentConfig{ID: "a"}, AgentConfig{ID: "b"}).Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestNewNeedsRunFuncForExec(t *testing.T) {
	if _, err := New(baseConfig(), Deps{}); !errors.Is(err, errNoRunFunc) {
		t.Fatalf("New without RunFunc: %v", err)
	}
	cfg := baseConfig()
	cfg.Defaults.Target = &Target{HTTP: &HTTPTarget{URL: "http://127.0.0.1:1/wake", Method: testMethod, Timeout: testTimeout}}
	if _, err := New(cfg, Deps{}); err != nil {
		t.Fatalf("http target needs no RunFunc: %v", err)
	}
}

func TestUpdateConfigRejectsInvalidAndKeepsOld(t *testing.T) {
	s, err := New(baseConfig(AgentConfig{ID: "a"}), Deps{Run: runner((&fakeExec{}).run)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateConfig(baseConfig(AgentConfig{ID: "a"}, AgentConfig{ID: "a"})); !errors.Is(err, ErrConfig) {
		t.Fatalf("duplicate ids accepted: %v", err)
	}
	if st := s.Status(); len(st.Agents) != 1 || st.Agents[0].ID != "a" || !st.Agents[0].Enabled {
		t.Fatalf("status after a rejected update: %+v", st)
	}
}

// TestConfigTakenAsGiven: an agent's interval is the one it is given (merged over the
// defaults), with no interval of the package's own: the config gives every agent one.
func TestConfigTakenAsGiven(t *testing.T) {
	plans, err := Config{Agents: []AgentConfig{{ID: "none", Target: execTarget()}, {ID: "one", Every: "1", Target: execTarget()}}}.plan(time.UTC)
	if err != nil || len(plans) != 2 {
		t.Fatalf("plans %+v, %v", plans, err)
	}
	if p := plans[0]; p.runs || p.why != "no interval" || p.interval != 0 {
		t.Errorf("an agent given no every: %+v, want no interval", p)
	}
	if p := plans[1]; !p.runs || p.interval != time.Minute {
		t.Errorf("an agent given every 1: %+v, want one minute", p)
	}
}
