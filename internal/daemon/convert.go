package daemon

import (
	"fmt"
	"net"
	"net/url"
	"slices"

	"github.com/schedd/schedd/internal/backoff"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/platform"
	"github.com/schedd/schedd/internal/probe"
	"github.com/schedd/schedd/internal/supervisor"
)

// SupervisorConfig turns the gateway section of the config file into the supervisor's
// configuration. environ is the environment the gateway's is built from.
func SupervisorConfig(c *config.Config, environ []string) (supervisor.Config, error) {
	g := c.Gateway
	sig, err := platform.ParseSignal(g.Stop.Signal)
	if err != nil {
		return supervisor.Config{}, fmt.Errorf("gateway.stop.signal: %w", err)
	}
	set, unset := g.EnvSplit()
	rc := supervisor.Config{
		Argv:        g.Command,
		Env:         set,
		Unset:       unset,
		BaseEnv:     environ,
		Dir:         g.Workdir,
		StopSignal:  sig,
		StopTimeout: g.Stop.Timeout.D(),
		StopMain:    g.Stop.Scope == config.StopScopeMain,
		Backoff: backoff.Policy{
			Initial: g.Backoff.Initial.D(),
			Max:     g.Backoff.Max.D(),
			Factor:  g.Backoff.Factor,
			Jitter:  g.Backoff.Jitter,
		},
		ResetAfter:         g.Backoff.ResetAfter.D(),
		CrashLoopFailures:  g.CrashLoop.Failures,
		CrashLoopWindow:    g.CrashLoop.Window.D(),
		MaxLinesPerSecond:  g.Output.MaxLinesPerSecond,
		NoRestartExitCodes: g.NoRestartExitCodes,
	}
	rc.Readiness = supervisor.Readiness{Timeout: g.Readiness.Timeout.D()}
	switch g.Readiness.Kind() {
	case "notify":
		rc.Readiness.Notify = true
	case "none", "":
	default:
		rc.Readiness.Probe = checker(g.Readiness, environ)
	}
	if l := g.Liveness; l != nil {
		rc.Liveness = supervisor.Liveness{Every: l.Every.D(), Timeout: l.Timeout.D(), Failures: l.Failures}
		switch l.Kind() {
		case "notify":
			// The file sets no failures for a watchdog (it is refused there): missed
			// periods before the kill are the probes' default.
			rc.Liveness.Watchdog = l.Timeout.D()
			rc.Liveness.Failures = config.DefaultLivenessFailures
		case "none", "":
		default:
			rc.Liveness.Probe = checker(*l, environ)
		}
	}
	rc.Ports, rc.PortsFrom = gatewayPorts(g)
	rc.Overlap = c.Restart.Overlap
	rc.SignalDownWait = c.Restart.SignalDownWait.D()
	return rc, nil
}

// gatewayPorts is the one place that decides which addresses schedd waits for before each
// start, and names where they came from for the log: gateway.ports when it is set (an
// empty list: none, the wait is off), else the local port a probe names (gatewayPort).
func gatewayPorts(g config.Gateway) ([]string, string) {
	if g.Ports != nil {
		return slices.Clone(*g.Ports), "gateway.ports"
	}
	if len(g.Sockets) > 0 {
		// schedd holds the gateway.sockets itself: their ports are always in use, and no
		// old gateway can keep the new one from serving on them.
		return nil, ""
	}
	if addr, from := gatewayPort(g); addr != "" {
		return []string{addr}, from + " (gateway.ports is not set)"
	}
	return nil, ""
}

// gatewayPort is the local host:port the gateway listens on, as its readiness or liveness
// probe names it (http URL or tcp address), and which probe that is; "" when no probe
// names a local one. Only a loopback or wildcard host is taken: a remote one says nothing
// about a port schedd's gateway could collide on.
func gatewayPort(g config.Gateway) (string, string) {
	for i, p := range []*config.Probe{&g.Readiness, g.Liveness} {
		var host, port string
		switch {
		case p == nil:
			continue
		case p.TCP != nil:
			h, pt, err := net.SplitHostPort(p.TCP.Address)
			if err != nil {
				continue
			}
			host, port = h, pt
		case p.HTTP != nil:
			u, err := url.Parse(p.HTTP.URL)
			if err != nil {
				continue
			}
			host, port = u.Hostname(), u.Port()
			if port == "" {
				port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
			}
		default:
			continue
		}
		if ip := net.ParseIP(host); port != "" && (host == "localhost" || ip != nil && (ip.IsLoopback() || ip.IsUnspecified())) {
			return net.JoinHostPort(host, port), []string{"the readiness probe", "the liveness probe"}[i]
		}
	}
	return "", ""
}

// checker builds the probe a config probe names (http, tcp or exec).
func checker(p config.Probe, environ []string) probe.Checker {
	switch {
	case p.HTTP != nil:
		return probe.HTTP{URL: p.HTTP.URL, Pointer: p.HTTP.JSONPointer, Headers: p.HTTP.Headers}
	case p.TCP != nil:
		return probe.TCP{Address: p.TCP.Address}
	case p.Exec != nil:
		return probe.Exec{Argv: p.Exec.Command, Env: platform.ChildEnv(environ, nil)}
	}
	return nil
}
