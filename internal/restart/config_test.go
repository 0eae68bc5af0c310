package restart

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
)

// TestConfigTakenAsGiven: the coordinator runs with the values it is given, zeros included
// (delay 0: at once; cooldown 0: none), a poll and a max wait as short as allowed are not
// raised to a default of its own, and a value it cannot run with is refused, not filled in.
func TestConfigTakenAsGiven(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idle := &fakeCounter{n: 1}
		cfg := Config{Delay: 0, Cooldown: 0, Method: MethodRespawn, Idle: idle,
			Poll: MinPoll, MaxWait: 3 * MinPoll, ProbeTimeout: time.Millisecond}
		h := newHarness(t, cfg, &fakeRestarter{})
		h.c.Request(Request{Source: api.SourceCLI})
		h.expectAt(1, 3*MinPoll) // busy: asked every MinPoll, forced after MaxWait
		idle.mu.Lock()
		asked := append([]time.Time(nil), idle.asked...)
		idle.mu.Unlock()
		if len(asked) < 3 || !asked[0].Equal(h.t0) || asked[1].Sub(asked[0]) != MinPoll {
			t.Fatalf("idle asked at %v, want at once and then every %v", asked, MinPoll)
		}
		idle.set(0)
		h.c.Request(Request{Source: api.SourceCLI})
		synctest.Wait()
		if at := h.rel(); len(at) != 2 || at[1] != 3*MinPoll {
			t.Fatalf("restarts at %v, want the second at once (no delay, no cooldown, idle)", at)
		}
	})
	good := Config{Delay: 0, Method: MethodSignal, Poll: MinPoll, MaxWait: MinPoll}
	if _, err := New(good, &fakeRestarter{}, nil, Hooks{}); err != nil {
		t.Fatalf("New(%+v) = %v", good, err)
	}
	for name, mod := range map[string]func(*Config){
		"delay":         func(c *Config) { c.Delay = MaxDelay + 1 },
		"cooldown":      func(c *Config) { c.Cooldown = -1 },
		"method":        func(c *Config) { c.Method = "" },
		"poll":          func(c *Config) { c.Poll = 0 },
		"max wait":      func(c *Config) { c.MaxWait = 0 },
		"probe timeout": func(c *Config) { c.Idle = &fakeCounter{} },
	} {
		cfg := good
		mod(&cfg)
		if _, err := New(cfg, &fakeRestarter{}, nil, Hooks{}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: New = %v, want an error naming it", name, err)
		}
		c, _ := New(good, &fakeRestarter{}, nil, Hooks{})
		if err := c.Reconfigure(cfg); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: Reconfigure = %v, want an error naming it", name, err)
		}
	}
}

// TestTestValuesAreTheConfigDefaults: the values the tests give for what they leave unset
// are the config file's defaults, so the tests run the coordinator as a default config does.
func TestTestValuesAreTheConfigDefaults(t *testing.T) {
	r := config.Default().Restart
	di := r.DeferUntilIdle
	if r.Delay.D() != testDelay || r.Method != string(MethodRespawn) || di.Poll.D() != testPoll ||
		di.MaxWait.D() != testMaxWait || config.DefaultIdleTimeout != testProbeTimeout {
		t.Errorf("config defaults: delay %s, method %s, poll %s, max_wait %s, idle timeout %s",
			r.Delay, r.Method, di.Poll, di.MaxWait, config.DefaultIdleTimeout)
	}
}
