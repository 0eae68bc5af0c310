package config

import (
	"strings"
	"testing"
	"time"
)

// The openclaw kind of heartbeat targets and delivery sinks: parsed with its default
// timeout, the token a secret, and every bad value refused naming its key.
func TestOpenClawKeys(t *testing.T) {
	t.Setenv("SCHEDD_TEST_HOOK_TOKEN", "from-env-token")
	c := mustParse(t, cmd+`heartbeat:
  defaults:
    target:
      openclaw: {url: "http://127.0.0.1:18789/hooks/wake", token: "inline-s3cret"}
  agents:
    - id: ops
      target:
        openclaw: {url: "http://127.0.0.1:18789/hooks/wake", token_env: SCHEDD_TEST_HOOK_TOKEN, timeout: 3s}
deliveries:
  sinks:
    oc:
      openclaw: {url: "http://127.0.0.1:18789/hooks/agent", token: "sink-s3cret"}
`)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	def, ops, sink := c.Heartbeat.Defaults.Target.OpenClaw, c.Heartbeat.Agents[0].Target.OpenClaw, c.Deliveries.Sinks["oc"].OpenClaw
	if def.Timeout.D() != 10*time.Second || def.HookToken() != "inline-s3cret" || c.Heartbeat.Defaults.Target.Kind() != "openclaw" {
		t.Errorf("defaults target %+v", def)
	}
	if ops.Timeout.D() != 3*time.Second || ops.HookToken() != "from-env-token" {
		t.Errorf("ops target %+v", ops)
	}
	if sink.Timeout.D() != 10*time.Second || sink.HookToken() != "sink-s3cret" || c.Deliveries.Sinks["oc"].Kind() != "openclaw" {
		t.Errorf("sink %+v", sink)
	}
	r := c.Redacted()
	if r.Heartbeat.Defaults.Target.OpenClaw.Token != RedactedValue || r.Deliveries.Sinks["oc"].OpenClaw.Token != RedactedValue {
		t.Errorf("tokens not redacted: %+v", r.Heartbeat.Defaults.Target.OpenClaw)
	}

	target := cmd + "heartbeat: {defaults: {target: {openclaw: %s}}}\n"
	sinkSrc := cmd + "deliveries: {sinks: {oc: {openclaw: %s}}}\n"
	for _, tc := range []struct {
		src, value, want string
	}{
		{target, `{token: t}`, "heartbeat.defaults.target.openclaw.url: is required"},
		{target, `{url: "/hooks/wake", token: t}`, "heartbeat.defaults.target.openclaw.url: must be an absolute http:// or https:// URL"},
		{target, `{url: "http://h/hooks/wake"}`, "heartbeat.defaults.target.openclaw.token: is required"},
		{target, `{url: "http://h/hooks/wake", token: t, token_env: X}`, "heartbeat.defaults.target.openclaw.token_env: is set with token"},
		{target, `{url: "http://h/hooks/wake", token_env: SCHEDD_TEST_UNSET_TOKEN}`,
			`heartbeat.defaults.target.openclaw.token_env: "SCHEDD_TEST_UNSET_TOKEN" is not set in schedd's environment`},
		{target, `{url: "http://h/hooks/wake", token: t, timeout: 0s}`, "heartbeat.defaults.target.openclaw.timeout: must be greater than 0"},
		{target, `{url: "http://h/hooks/wake", token: t, secret: x}`, "heartbeat.defaults.target.openclaw.secret"},
		{sinkSrc, `{url: "http://h/hooks/agent"}`, "deliveries.sinks.oc.openclaw.token: is required"},
		{sinkSrc, `{url: "ftp://h/hooks/agent", token: t}`, "deliveries.sinks.oc.openclaw.url: must be an absolute"},
		{sinkSrc, `{url: "http://h/hooks/agent", token_env: "A=B"}`, `deliveries.sinks.oc.openclaw.token_env: invalid environment variable name`},
		{sinkSrc, `{url: "http://h/hooks/agent", token: "a\nb"}`, "deliveries.sinks.oc.openclaw.token: invalid token (value hidden)"},
	} {
		src := strings.Replace(tc.src, "%s", tc.value, 1)
		c, err := Parse("f.yaml", []byte(src))
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "a\nb") {
			t.Errorf("%s: error %v, want %q", tc.value, err, tc.want)
		}
	}
	both := cmd + "deliveries: {sinks: {oc: {openclaw: {url: \"http://h/\", token: t}, http: {url: \"http://h/\"}}}}\n"
	if c, err := Parse("f.yaml", []byte(both)); err == nil {
		if err = c.Validate(); err == nil || !strings.Contains(err.Error(), "deliveries.sinks.oc") {
			t.Errorf("two sink kinds: %v", err)
		}
	}
}
