package daemon

import (
	"testing"
	"time"

	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/deliveries"
)

// The openclaw kind reaches the heartbeat service and the delivery queue with its token
// read from schedd's environment when token_env names it.
func TestOpenClawTargetAndSinkFromConfig(t *testing.T) {
	t.Setenv("SCHEDD_TEST_HOOKS_TOKEN", "env-token")
	c, err := config.Parse("f.yaml", []byte(`
gateway: {command: [gw]}
heartbeat:
  defaults:
    target: {openclaw: {url: "http://127.0.0.1:18789/hooks/wake", token_env: SCHEDD_TEST_HOOKS_TOKEN}}
deliveries:
  sinks:
    agent: {openclaw: {url: "http://127.0.0.1:18789/hooks/agent", token: inline, timeout: 4s}}
`))
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	h := HeartbeatConfig(c.Heartbeat)
	if err := h.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if o := h.Defaults.Target.OpenClaw; o == nil || o.Token != "env-token" || o.Timeout != 10*time.Second ||
		o.URL != "http://127.0.0.1:18789/hooks/wake" {
		t.Fatalf("target %+v", h.Defaults.Target)
	}
	sinks, err := (&Daemon{}).deliverySinks(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sinks["agent"].(*deliveries.OpenClawSink); !ok {
		t.Fatalf("sink %T", sinks["agent"])
	}
}
