package daemon

import (
	"slices"
	"testing"

	"github.com/schedd/schedd/internal/config"
)

// TestGatewayPort: the port schedd waits for (R-CHILD-18) comes from a local probe only.
func TestGatewayPort(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    config.Gateway
		want string
		from string
	}{
		{"none", config.Gateway{}, "", ""},
		{"http readiness", config.Gateway{Readiness: config.Probe{HTTP: &config.HTTPProbe{URL: "http://127.0.0.1:18789/readyz"}}}, "127.0.0.1:18789", "the readiness probe"},
		{"https default port", config.Gateway{Readiness: config.Probe{HTTP: &config.HTTPProbe{URL: "https://localhost/x"}}}, "localhost:443", "the readiness probe"},
		{"tcp wildcard", config.Gateway{Readiness: config.Probe{TCP: &config.TCPProbe{Address: "[::]:9000"}}}, "[::]:9000", "the readiness probe"},
		{"remote host", config.Gateway{Readiness: config.Probe{HTTP: &config.HTTPProbe{URL: "http://example.com:80/"}}}, "", ""},
		{"liveness", config.Gateway{Liveness: &config.Probe{HTTP: &config.HTTPProbe{URL: "http://[::1]:7000/healthz"}}}, "[::1]:7000", "the liveness probe"},
	} {
		if got, from := gatewayPort(tc.g); got != tc.want || from != tc.from {
			t.Errorf("%s: gatewayPort = %q, %q, want %q, %q", tc.name, got, from, tc.want, tc.from)
		}
	}
}

// TestGatewayPorts_RINPUT07: gateway.ports, when set, is what schedd waits for, in place
// of the probe's port; set to [] it means no wait at all; unset, the probe's port.
func TestGatewayPorts_RINPUT07(t *testing.T) {
	probe := config.Probe{HTTP: &config.HTTPProbe{URL: "http://127.0.0.1:18789/readyz"}}
	for _, tc := range []struct {
		name  string
		ports *[]string
		want  []string
		from  string
	}{
		{"unset", nil, []string{"127.0.0.1:18789"}, "the readiness probe (gateway.ports is not set)"},
		{"off", &[]string{}, nil, "gateway.ports"},
		{"off after a round trip", new([]string), nil, "gateway.ports"},
		{"listed", &[]string{":8089", "[::1]:8090"}, []string{":8089", "[::1]:8090"}, "gateway.ports"},
	} {
		got, from := gatewayPorts(config.Gateway{Readiness: probe, Ports: tc.ports})
		if !slices.Equal(got, tc.want) || from != tc.from {
			t.Errorf("%s: gatewayPorts = %q, %q, want %q, %q", tc.name, got, from, tc.want, tc.from)
		}
	}
}
