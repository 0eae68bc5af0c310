package daemon

import (
	"testing"

	"github.com/schedd/schedd/internal/config"
)

// TestGatewayPort: the port schedd waits for (R-CHILD-18) comes from a local probe only.
func TestGatewayPort(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    config.Gateway
		want string
	}{
		{"none", config.Gateway{}, ""},
		{"http readiness", config.Gateway{Readiness: config.Probe{HTTP: &config.HTTPProbe{URL: "http://127.0.0.1:18789/readyz"}}}, "127.0.0.1:18789"},
		{"https default port", config.Gateway{Readiness: config.Probe{HTTP: &config.HTTPProbe{URL: "https://localhost/x"}}}, "localhost:443"},
		{"tcp wildcard", config.Gateway{Readiness: config.Probe{TCP: &config.TCPProbe{Address: "[::]:9000"}}}, "[::]:9000"},
		{"remote host", config.Gateway{Readiness: config.Probe{HTTP: &config.HTTPProbe{URL: "http://example.com:80/"}}}, ""},
		{"liveness", config.Gateway{Liveness: &config.Probe{HTTP: &config.HTTPProbe{URL: "http://[::1]:7000/healthz"}}}, "[::1]:7000"},
	} {
		if got := gatewayPort(tc.g); got != tc.want {
			t.Errorf("%s: gatewayPort = %q, want %q", tc.name, got, tc.want)
		}
	}
}
