//go:build unix

package e2e

import (
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// TestE2EPortServedBySidecar_RINPUT07 is R-INPUT-07 with real processes: another process
// (here the test, a health sidecar) serves the port the readiness probe names, on
// purpose. With gateway.ports naming what the gateway itself binds, or [], schedd does not
// wait for the sidecar's port: the gateway starts at once and the sidecar makes it ready.
func TestE2EPortServedBySidecar_RINPUT07(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	go srv.Serve(ln)
	defer srv.Close()
	addr := ln.Addr().String()
	own, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the gateway's own
	if err != nil {
		t.Fatal(err)
	}
	ownAddr := own.Addr().String()
	own.Close()
	for _, ports := range []string{"[]", `["` + ownAddr + `"]`} {
		t.Run(ports, func(t *testing.T) {
			cfg := writeConfig(t, "gateway:\n  readiness: {http: {url: \"http://"+addr+"/readyz\"}, timeout: 30s}\n  ports: "+ports+"\n")
			start := time.Now()
			d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{}})
			d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("ready after %v: schedd waited for the sidecar's port", took)
			}
			if out := d.out.String(); strings.Contains(out, "still in use") {
				t.Errorf("schedd waited for the sidecar's port:\n%s", out)
			}
		})
	}
}

// TestE2ECleanStopLogsNoError_RINPUT10 is R-INPUT-10: SIGTERM or SIGINT in each phase of
// the gateway's life (starting, ready, a restart pending, a restart running while the new
// gateway starts, stopping for a restart, backoff) stops schedd with exit code 0 and not
// one line at level ERROR, in either log format.
func TestE2ECleanStopLogsNoError_RINPUT10(t *testing.T) {
	t.Parallel()
	const notify = "gateway:\n  readiness: {notify: {}, timeout: 30s}\n"
	type phase struct {
		name    string
		config  string
		gateway []string
		reach   func(t *testing.T, d *testDaemon)
	}
	ready := func(t *testing.T, d *testDaemon) api.Status {
		return d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	}
	restarting := func(state api.GatewayState) func(t *testing.T, d *testDaemon) {
		return func(t *testing.T, d *testDaemon) {
			first := ready(t, d).Gateway.PID
			d.cmd.Process.Signal(syscall.SIGUSR1)
			d.waitFor(string(state)+" in a restart", func(g api.Gateway) bool {
				return g.State == state && (state == api.GatewayStopping || g.PID != first && g.PID != 0)
			})
		}
	}
	for i, p := range []phase{
		{"starting", notify, []string{}, func(t *testing.T, d *testDaemon) {
			d.waitFor("starting", func(g api.Gateway) bool { return g.State == api.GatewayStarting && g.PID != 0 })
		}},
		{"ready", notify, []string{"ready"}, func(t *testing.T, d *testDaemon) { ready(t, d) }},
		{"restart pending", notify + "restart: {delay: 30s}\n", []string{"ready"}, func(t *testing.T, d *testDaemon) {
			ready(t, d)
			d.cmd.Process.Signal(syscall.SIGUSR1)
			waitStatus(t, d, "a pending restart", func(st statusDoc) bool { return st.Restart.Pending != nil })
		}},
		{"restart running", notify + "restart: {delay: 0s, cooldown: 0s}\n", []string{"ready", "ready-delay=1s"},
			restarting(api.GatewayStarting)},
		{"stopping", notify + "restart: {delay: 0s, cooldown: 0s}\n", []string{"ready", "term-delay=2s"},
			restarting(api.GatewayStopping)},
		{"backoff", notify, []string{"exit=1"}, func(t *testing.T, d *testDaemon) {
			d.waitFor("backoff", func(g api.Gateway) bool { return g.State == api.GatewayBackoff && g.ConsecutiveFailures >= 2 })
		}},
	} {
		format, sig := "json", syscall.SIGTERM
		if i%2 == 1 {
			format, sig = "console", syscall.SIGINT
		}
		t.Run(p.name, func(t *testing.T) {
			cfg := writeConfig(t, p.config)
			d := startDaemon(t, daemonOpts{args: []string{"--config", cfg, "--log-format", format}, gateway: p.gateway})
			p.reach(t, d)
			d.cmd.Process.Signal(sig)
			if code := d.wait(30 * time.Second); code != 0 {
				t.Fatalf("exit code %d after %s, want 0", code, sig)
			}
			for line := range strings.Lines(d.out.String()) {
				if logLevel(t, line) == "error" {
					t.Errorf("%s in phase %s logged an ERROR: %s", sig, p.name, line)
				}
			}
		})
	}
}

// logLevel returns the level of one line of the daemon's log, JSON or console.
func logLevel(t *testing.T, line string) string {
	t.Helper()
	if strings.HasPrefix(line, "{") {
		var e struct{ Level string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		return e.Level
	}
	f := strings.Split(line, "\t")
	if len(f) < 2 {
		t.Fatalf("log line %q: no level", line)
	}
	return strings.ToLower(f[1])
}

// TestE2EStatusWhileDown_RINPUT12 is R-INPUT-12 with real processes: a gateway that said
// STATUS= and INFLIGHT and was ready, then crashed twice, is in backoff. `schedd status`
// shows how long it has been down and since when, no `ready for` and no `gateway says`,
// and, with no heartbeat agent configured, says that instead of "0 of 1 agents run";
// `status --json` has ready_since, status_text and inflight cleared and down_since set.
func TestE2EStatusWhileDown_RINPUT12(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "gateway:\n  readiness: {notify: {}, timeout: 30s}\n  backoff: {initial: 5s, max: 5s}\n")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg},
		gateway: []string{"ready", "status=serving 3 chats", "inflight=2", "exit=1", "after=300ms"}})
	d.waitFor("a ready gateway that says something", func(g api.Gateway) bool {
		return g.State == api.GatewayReady && g.StatusText != ""
	})
	st := d.waitFor("backoff", func(g api.Gateway) bool { return g.State == api.GatewayBackoff })
	g := st.Gateway
	if !g.ReadySince.IsZero() || g.StatusText != "" || g.Inflight != nil || g.DownSince.IsZero() ||
		g.LastExit == nil || !g.DownSince.Equal(g.LastExit.At) {
		t.Fatalf("status in backoff %+v, want no ready_since, status_text, inflight; down_since at the exit", g)
	}
	code, out, errOut := cli("status", "--socket", d.socket)
	if code != 0 {
		t.Fatalf("schedd status = %d: %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	want := "gateway backoff down for "
	if i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, want) }); i < 0 ||
		!strings.Contains(lines[i], " since "+g.DownSince.Local().Format(time.TimeOnly)) {
		t.Errorf("no %q...since %s line:\n%s", want, g.DownSince.Local().Format(time.TimeOnly), out)
	}
	for _, bad := range []string{"ready for", "gateway says", "in flight", "0 of 1 agents run"} {
		if strings.Contains(out, bad) {
			t.Errorf("status while down shows %q:\n%s", bad, out)
		}
	}
	if !slices.Contains(lines, "heartbeat enabled no agent configured") {
		t.Errorf("no \"no agent configured\":\n%s", out)
	}
	code, out, _ = cli("status", "--json", "--socket", d.socket)
	var raw struct{ Gateway, Heartbeat map[string]any }
	if code != 0 || json.Unmarshal([]byte(out), &raw) != nil {
		t.Fatalf("status --json = %d: %s", code, out)
	}
	if raw.Gateway["down_since"] == nil || raw.Gateway["ready_since"] != nil || raw.Heartbeat["no_agents_configured"] != true {
		t.Errorf("status --json: %s", out)
	}
}
