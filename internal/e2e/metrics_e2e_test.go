//go:build unix

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// labelRE matches a label and its value in the text format.
var labelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"`)

// scrape GETs url and returns the body.
func scrape(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %d %v\n%s", resp.StatusCode, err, b)
	}
	return string(b)
}

// missingLines are the lines of want that body lacks.
func missingLines(body string, want []string) []string {
	lines := strings.Split(body, "\n")
	var out []string
	for _, w := range want {
		found := false
		for _, l := range lines {
			if l == w {
				found = true
				break
			}
		}
		if !found {
			out = append(out, w)
		}
	}
	return out
}

// promtool finds promtool on PATH or in /usr/bin (Debian's prometheus package). Without it
// the check is skipped, except in CI (CI or SCHEDD_REQUIRE_PROMTOOL set), where it fails.
func promtool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/promtool"); err == nil {
		return "/usr/bin/promtool"
	}
	const why = "promtool is not on PATH or in /usr/bin (Debian's prometheus package provides it)"
	if os.Getenv("CI") != "" || os.Getenv("SCHEDD_REQUIRE_PROMTOOL") != "" {
		t.Fatal(why + "; CI requires it: .ci/run installs it")
	}
	t.Skip(why + "; skipping `promtool check metrics` outside CI")
	return ""
}

// TestE2EMetrics is the acceptance of the metrics endpoint: a daemon with metrics.listen
// goes through a restart, a heartbeat, a delivery and a cron run; the scrape shows each
// series moved,
// holds no secret, key or ID, and passes `promtool check metrics`.
func TestE2EMetrics(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	dir := shortDir(t)
	log := filepath.Join(dir, "pulses")
	sink := newSinkRecorder(t, nil)
	const envSecret, headerSecret, key = "s3cr3t-env", "Bearer s3cr3t-t0ken", "order-metrics-1"
	cfg := writeConfig(t, fmt.Sprintf(`metrics: {listen: %q}
gateway: {env: {API_TOKEN: %s}}
deliveries:
  sinks:
    hook: {http: {url: "%s/hook"}}
cron:
  jobs:
    - {name: tick, schedule: "0 0 1 1 *", action: {exec: {command: ["true"]}}}
%s`, addr, envSecret, sink.URL, heartbeatYAML(t, log, "{id: main}")))
	d := startDaemon(t, daemonOpts{dir: dir, args: []string{"--config", cfg}, gateway: []string{}})
	first := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady }).Gateway.PID
	url := "http://" + addr + "/metrics"
	before := scrape(t, url)
	if m := missingLines(before, []string{"schedd_gateway_up 1", `schedd_gateway_restarts_total{reason="restart"} 0`}); m != nil {
		t.Fatalf("before anything happened, the scrape lacks %q:\n%s", m, before)
	}

	if code, out, errOut := cli("restart", "--now", "--wait", "--socket", d.socket); code != 0 || !strings.Contains(out, fmt.Sprintf("restarted: pid %d -> ", first)) {
		t.Fatalf("restart --now --wait: %d %q %s", code, out, errOut)
	}
	d.wake("main", "manual")
	waitPulses(t, log, "main", 1)
	e := enqueueCLI(t, d, "--sink", "hook", "--key", key, "--header", "Authorization="+headerSecret, "--data", `{"n": 1}`)
	d.waitDelivery(t, e.ID, "delivered", func(v api.Delivery) bool { return v.State == api.DeliveryDelivered })
	if code, out, errOut := cli("cron", "run", "tick", "--wait", "--socket", d.socket); code != 0 {
		t.Fatalf("cron run tick --wait: %d %q %s", code, out, errOut)
	}

	want := []string{
		"schedd_gateway_up 1",
		`schedd_gateway_state{state="ready"} 1`,
		`schedd_gateway_restarts_total{reason="restart"} 1`,
		`schedd_gateway_restart_requests_total{source="cli"} 1`,
		"schedd_gateway_restart_duration_seconds_count 1",
		"schedd_gateway_start_duration_seconds_count 2",
		"schedd_gateway_forced_restarts_total 0",
		`schedd_heartbeat_pulses_total{agent="main",status="ran"} 1`,
		`schedd_heartbeat_lateness_seconds_count{agent="main"} 1`,
		`schedd_delivery_attempts_total{class="none",result="delivered",sink="hook"} 1`,
		`schedd_delivery_latency_seconds_count{sink="hook"} 1`,
		`schedd_deliveries_queue_depth{state="pending"} 0`,
		"schedd_deliveries_oldest_pending_age_seconds 0",
		"schedd_delivery_recovery_passes_total 1",
		`schedd_delivery_store_commit_errors_total{kind="io"} 0`,
		`schedd_cron_runs_total{job="tick",state="succeeded"} 1`,
		`schedd_cron_lateness_seconds_count{job="tick"} 1`,
		`schedd_cron_tasks{state="running"} 0`,
	}
	// The last hooks run just after what the test waited for is visible: poll a little.
	var body string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		body = scrape(t, url)
		m := missingLines(body, want)
		if m == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scrape lacks %q:\n%s", m, body)
		}
	}
	for _, prefix := range []string{"schedd_build_info{goversion=\"go", "schedd_delivery_store_commit_duration_seconds_count ", "go_goroutines ", "process_resident_memory_bytes "} {
		if !strings.Contains(body, prefix) {
			t.Errorf("the scrape has no %s series", prefix)
		}
	}
	if strings.Contains(body, "schedd_delivery_store_commit_duration_seconds_count 0\n") {
		t.Error("no store commit was observed")
	}
	if strings.Contains(body, "s3cr3t") || strings.Contains(body, key) {
		t.Error("the scrape holds a secret or an idempotency key")
	}
	st, _ := d.status()
	ids := []string{fmt.Sprint(st.Gateway.PID), fmt.Sprint(e.ID)}
	for _, m := range labelRE.FindAllStringSubmatch(body, -1) {
		if m[1] != "le" && m[1] != "quantile" && slices.Contains(ids, m[2]) {
			t.Errorf("label %s is the ID %s", m[1], m[2])
		}
	}

	tool := promtool(t)
	cmd := exec.Command(tool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out.String())
	}
}

// TestE2EMetricsPortInUse: a metrics address that cannot be bound fails the start, before
// the gateway runs, with the key and the address.
func TestE2EMetricsPortInUse(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := writeConfig(t, fmt.Sprintf("metrics: {listen: %q}\n", ln.Addr().String()))
	d := newDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{}})
	err = d.cmd.Run()
	out := d.out.String()
	if exitCode(err) <= 0 || !strings.Contains(out, "metrics.listen: cannot serve metrics on "+ln.Addr().String()) {
		t.Fatalf("schedd exited with %v:\n%s", err, out)
	}
	if strings.Contains(out, "gateway started") {
		t.Errorf("the gateway was started:\n%s", out)
	}
}
