//go:build unix

package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/heartbeat"
)

// The demo config `make demo` runs, and the address of the example gateway in it.
const (
	demoConfig = "../../examples/demo.yaml"
	demoAddr   = "127.0.0.1:8089"
)

// TestDemoConfig: examples/demo.yaml is valid as shipped and needs nothing outside the
// repository: the gateway is the bin/example-gateway that `make build` writes, the state
// and the control socket are under .demo, the heartbeat, the sink "demo" (the one the
// Makefile enqueues to) and the cron job demo-ping point at the example gateway.
func TestDemoConfig(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(demoConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if got := filepath.Join(cfg.Gateway.Workdir, cfg.Gateway.Command[0]); got != filepath.Join(repo, "bin", "example-gateway") {
		t.Errorf("the gateway runs %s, not the bin/example-gateway of make build", got)
	}
	if want := filepath.Join(repo, ".demo"); cfg.StateDir != want || cfg.Control.Socket != filepath.Join(want, "schedd.sock") {
		t.Errorf("state dir %s and socket %s, want both under %s", cfg.StateDir, cfg.Control.Socket, want)
	}
	if d := cfg.Heartbeat.Defaults; d.Every != "10s" || d.Target == nil || d.Target.HTTP == nil ||
		d.Target.HTTP.URL != "http://"+demoAddr+"/hooks/heartbeat" || len(cfg.Heartbeat.Agents) != 0 {
		t.Errorf("heartbeat %+v, want one agent pulsing the example gateway every 10s", cfg.Heartbeat)
	}
	if s, ok := cfg.Deliveries.Sinks["demo"]; !ok || s.Gateway == nil || s.Gateway.Path != "/hooks/deliver" ||
		cfg.GatewayBaseURL() != "http://"+demoAddr {
		t.Errorf("sink demo %+v (gateway base URL %q), want the example gateway's /hooks/deliver", s, cfg.GatewayBaseURL())
	}
	if jobs := cfg.Cron.Jobs; len(jobs) != 1 || jobs[0].Name != "demo-ping" || jobs[0].Every.D() != 30*time.Second ||
		jobs[0].Action.HTTP == nil || jobs[0].Action.HTTP.URL != "http://"+demoAddr+"/hooks/cron" {
		t.Errorf("cron jobs %+v, want demo-ping posting to the example gateway every 30s", jobs)
	}
}

// TestDemoE2E runs the demo: the real daemon with examples/demo.yaml (on a free port, with
// a 1 s heartbeat instead of 10 s and the cron job every 1 s instead of 30 s) supervising
// the real example gateway. The gateway logs an interval pulse that schedd records as ran
// with its ok-token event, the delivery enqueued the way the Makefile does it is logged by
// the gateway and marked delivered, and a scheduled run of the cron job is logged by the
// gateway and listed as succeeded.
func TestDemoE2E(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	dir := shortDir(t)
	gateway := buildExampleGateway(t, dir)
	addr := freeAddr(t)
	data, err := os.ReadFile(demoConfig)
	if err != nil {
		t.Fatal(err)
	}
	yaml := string(data)
	for _, edit := range [][2]string{{demoAddr, addr}, {"every: 10s", "every: 1s"}, {"every: 30s", "every: 1s"}} {
		if !strings.Contains(yaml, edit[0]) {
			t.Fatalf("%s has no %q to change", demoConfig, edit[0])
		}
		yaml = strings.ReplaceAll(yaml, edit[0], edit[1])
	}
	// The state dir and socket come from the flags (a temp dir), the gateway after "--".
	d := startDaemon(t, daemonOpts{dir: dir, args: []string{"--config", writeConfig(t, yaml), "--", gateway, "--listen", addr}})
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })

	code, out, errOut := cli("deliveries", "enqueue", "--socket", d.socket, "--sink", "demo", "--data", "hello from the demo")
	id, key, ok := strings.Cut(strings.TrimPrefix(out, "delivery "), " stored for demo (key ")
	key, done := strings.CutSuffix(key, ")\n")
	if code != 0 || !ok || !done {
		t.Fatalf("deliveries enqueue = %d: %s%s", code, out, errOut)
	}
	if !d.waitLog(`got a delivery: key `+key+`, 19 bytes: "hello from the demo"`,
		`delivery delivered	{"id": `+id+`, "sink": "demo"`) {
		t.Fatalf("the delivery was not logged by the gateway and delivered:\n%s", d.out.String())
	}
	if !d.waitLog("got a heartbeat pulse: agent main, reason interval, attempt 1",
		`"agent": "main", "reason": "interval", "reason_kind": "interval", "status": "ran"`) {
		t.Fatalf("no interval pulse logged by the gateway and by schedd:\n%s", d.out.String())
	}
	a := waitAgent(t, d, "main", func(a api.AgentStatus) bool { return a.Last != nil && a.Event != nil })
	if a.Last.Status != api.RunRan || a.Event.Status != heartbeat.EventOKToken || a.Event.Indicator != "ok" {
		t.Errorf("agent main: last %+v, event %+v; want ran with an ok-token event", a.Last, a.Event)
	}
	if !d.waitLog(`got a cron run: key cron:demo-ping@`, `, 21 bytes: "ping from schedd cron"`) {
		t.Fatalf("no cron run logged by the gateway:\n%s", d.out.String())
	}
	ts := d.waitTasks("demo-ping", "a scheduled run that succeeded", func(ts []api.Task) bool {
		return slices.ContainsFunc(ts, func(t api.Task) bool { return t.Kind == api.KindScheduled && t.State == api.TaskSucceeded })
	})
	code, out, _ = cli("tasks", "list", "--job", "demo-ping", "--socket", d.socket)
	if code != 0 || !strings.Contains(out, "scheduled  succeeded") || len(ts) == 0 {
		t.Errorf("tasks list = %d, want a scheduled run of demo-ping that succeeded:\n%s", code, out)
	}
	code, out, _ = cli("deliveries", "list", "--socket", d.socket)
	if code != 0 || !slices.ContainsFunc(strings.Split(out, "\n"), func(row string) bool {
		f := strings.Fields(row) // ID STATE SINK ATTEMPTS WHEN... KEY
		return len(f) > 4 && slices.Equal(f[:4], []string{id, "delivered", "demo", "1"}) && f[len(f)-1] == key
	}) {
		t.Errorf("deliveries list = %d, want delivery %s delivered at the first attempt:\n%s", code, id, out)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
}

// buildExampleGateway builds examples/gateway into dir, as `make build` does into bin/.
func buildExampleGateway(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "example-gateway")
	cmd := exec.Command("go", "build", "-o", out, "./examples/gateway")
	cmd.Dir = "../.."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/gateway: %v\n%s", err, b)
	}
	return out
}

// freeAddr is a loopback address with a port nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
