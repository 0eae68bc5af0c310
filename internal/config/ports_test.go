package config

import (
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestGatewayPorts is R-INPUT-07 in the config: gateway.ports unset (or null) is nil, the
// probe's port; an explicit empty list is kept apart from it (the wait is off), also
// through a round trip; every entry is a bind address with a port, or an error naming
// its file:line:column.
func TestGatewayPorts(t *testing.T) {
	const cmd = "gateway:\n  command: [gw]\n"
	for src, want := range map[string]*[]string{
		cmd:                           nil,
		cmd + "  ports:\n":            nil,
		cmd + "  ports: []\n":         {},
		cmd + "  ports: [':18789']\n": {":18789"},
		cmd + "  ports: ['127.0.0.1:1', '[::1]:65535', 'localhost:80', '0.0.0.0:8089']\n": {
			"127.0.0.1:1", "[::1]:65535", "localhost:80", "0.0.0.0:8089"},
	} {
		c := mustParse(t, src)
		if err := c.Validate(); err != nil {
			t.Errorf("%q: %v", src, err)
		}
		got := c.Gateway.Ports
		if (got == nil) != (want == nil) || got != nil && !slices.Equal(*got, *want) {
			t.Errorf("%q: ports %v, want %v", src, show2(got), show2(want))
		}
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if diff := diffConfigs(c, mustParse(t, string(out))); diff != "" {
			t.Errorf("%q: round trip changed:\n%s\n%s", src, diff, out)
		}
	}
	const g = "gateway:\n  command: [gw]\n  ports: "
	for src, want := range map[string]string{
		g + "['18789']\n":         `f.yaml:3:11: gateway.ports[0]: must be a TCP address the gateway binds, like "127.0.0.1:18789", ":18789" or "[::1]:18789", got "18789"`,
		g + "['127.0.0.1:0']\n":   `f.yaml:3:11: gateway.ports[0]: must end in a port from 1 to 65535, got "127.0.0.1:0"`,
		g + "[':1', ':65536']\n":  `f.yaml:3:17: gateway.ports[1]: must end in a port from 1 to 65535, got ":65536"`,
		g + "[':http']\n":         `f.yaml:3:11: gateway.ports[0]: must end in a port from 1 to 65535, got ":http"`,
		g + "['gw.example:80']\n": `f.yaml:3:11: gateway.ports[0]: must have an IP address, localhost or nothing (every interface) before the port, got "gw.example:80"`,
		g + "['::1:80']\n":        `f.yaml:3:11: gateway.ports[0]: must be a TCP address the gateway binds, like "127.0.0.1:18789", ":18789" or "[::1]:18789", got "::1:80"`,
		g + "':18789'\n":          `f.yaml:3:10: gateway.ports: expected a list, got ":18789"`,
	} {
		if got := parseErr(t, src); got != want {
			t.Errorf("%q:\n got %s\nwant %s", src, got, want)
		}
	}
}

func show2(p *[]string) any {
	if p == nil {
		return "nil"
	}
	return *p
}
