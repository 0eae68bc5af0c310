//go:build unix

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// chromium finds Debian's chromium. Without it the browser test is skipped, except with
// SCHEDD_REQUIRE_CHROMIUM set (as .ci/run does, after installing it), where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	const why = "chromium is not on PATH or in /usr/bin (Debian's chromium package provides it)"
	if os.Getenv("SCHEDD_REQUIRE_CHROMIUM") != "" {
		t.Fatal(why + "; SCHEDD_REQUIRE_CHROMIUM is set: .ci/run installs it")
	}
	t.Skip(why + "; skipping the status page's browser test")
	return ""
}

// runChromium runs headless chromium with args and returns its standard output.
func runChromium(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--user-data-dir=" + t.TempDir(),
		"--virtual-time-budget=5000"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

// attr matches one attribute of the dumped DOM: name="value".
func attr(name string) *regexp.Regexp {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `="([^"]*)"`)
}

// TestE2EStatusPageBrowser is the acceptance of the status page in a real browser: a
// daemon with metrics.listen supervises the example gateway, runs a cron job that succeeds
// (an http action to the gateway) and one that fails (a command that writes markup to
// stderr and exits 3), dead-letters a delivery (its sink answers 400) and delivers one with
// markup in it, which the gateway logs. Headless chromium loads the page; the DOM after the
// page's script ran shows the gateway ready, both jobs with their outcomes, the dead
// letter's reason and the gateway's log line with the markup as text, and the script
// reported no error (nor a blocked resource). It also takes a screenshot; with
// SCHEDD_STATUS_PAGE_PNG set it is copied there (docs/status-page.png is one).
func TestE2EStatusPageBrowser(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	bin := chromium(t)
	dir := shortDir(t)
	gateway := buildExampleGateway(t, dir)
	gwAddr, addr := freeAddr(t), freeAddr(t)
	sink := newSinkRecorder(t, nil)
	cfg := writeConfig(t, fmt.Sprintf(`metrics: {listen: %q}
gateway:
  readiness: {notify: {}, timeout: 10s}
  liveness: {http: {url: "http://%s/healthz", json_pointer: /ok}, every: 10s}
deliveries:
  sinks:
    gateway: {gateway: {path: /hooks/deliver}}
    partner: {http: {url: "%s/reject"}}
cron:
  jobs:
    - {name: ping-gateway, schedule: "0 0 1 1 *", action: {http: {url: "http://%s/hooks/cron", body: "ping"}}}
    - {name: nightly-report, schedule: "0 0 1 1 *", action: {exec: {command: [sh, -c, "echo '<b>report</b> failed' >&2; exit 3"]}}}
`, addr, gwAddr, sink.URL, gwAddr))
	d := startDaemon(t, daemonOpts{dir: dir, args: []string{"--config", cfg, "--", gateway, "--listen", gwAddr}})
	first := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady }).Gateway.PID
	if code, out, errOut := cli("restart", "--now", "--wait", "--socket", d.socket); code != 0 {
		t.Fatalf("restart --now --wait: %d %q %s", code, out, errOut)
	}
	for _, job := range []string{"ping-gateway", "nightly-report", "ping-gateway", "ping-gateway", "nightly-report", "ping-gateway"} {
		cli("cron", "run", job, "--wait", "--socket", d.socket)
	}
	d.waitTasks("ping-gateway", "a task that succeeded", func(ts []api.Task) bool { return len(ts) > 0 && ts[0].State == api.TaskSucceeded })
	d.waitTasks("nightly-report", "a task that failed", func(ts []api.Task) bool { return len(ts) > 0 && ts[0].State == api.TaskFailed })
	dead := enqueueCLI(t, d, "--sink", "partner", "--data", `{"text": "hello"}`)
	d.waitDelivery(t, dead.ID, "dead", func(v api.Delivery) bool { return v.State == api.DeliveryDead })
	const markup = `<img src=x id=injected>`
	sent := enqueueCLI(t, d, "--sink", "gateway", "--data", markup)
	d.waitDelivery(t, sent.ID, "delivered", func(v api.Delivery) bool { return v.State == api.DeliveryDelivered })
	if !d.waitLog(`got a delivery: key ` + sent.Key) {
		t.Fatalf("the gateway did not log the delivery:\n%s", d.out.String())
	}

	url := "http://" + addr + "/"
	dom := runChromium(t, bin, "--dump-dom", url)
	body := regexp.MustCompile(`<body[^>]*>`).FindString(dom)
	if body == "" {
		t.Fatalf("no body in the DOM:\n%s", dom)
	}
	if m := attr("data-error").FindStringSubmatch(body); m == nil || m[1] != "" {
		t.Errorf("the page's script reported errors: %q\n%s", m, body)
	}
	if m := attr("data-ok").FindStringSubmatch(body); m == nil || m[1] != "1" {
		t.Fatalf("the page's script did not render (data-ok %q):\n%s", m, dom)
	}
	for _, want := range []string{
		`id="gw-state" class="state" data-state="ready">ready</span>`,
		// The timeline: the first gateway ended for the restart, the second runs.
		`<tr class="run-asked" data-reason="restart"><td>`,
		fmt.Sprintf(`</td><td>%d</td>`, first),
		`data-job="ping-gateway" data-last="succeeded"><td class="name">ping-gateway</td>`,
		`data-job="nightly-report" data-last="failed"><td class="name">nightly-report</td>`,
		`<a class="task" href="/tasks/`,
		`data-state="succeeded"`,
		fmt.Sprintf(`<tr data-id="%d"><td>%d</td><td>partner</td>`, dead.ID, dead.ID),
		`<td class="why">permanent error (status 400)</td><td class="why">HTTP 400 Bad Request: chat not found</td>`,
		// The gateway's log line with the payload: markup as text, not an element.
		`bytes: "` + strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(markup) + `"`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %s", want)
		}
	}
	if n := strings.Count(dom, `<a class="task" href="/tasks/`); n != 6 {
		t.Errorf("%d tasks in the strips, want 6", n)
	}
	if strings.Contains(dom, `id="injected"`) || strings.Contains(dom, "<b>report</b>") {
		t.Errorf("text from the gateway or a job became markup")
	}
	if t.Failed() {
		t.Fatalf("the rendered page:\n%s", dom)
	}

	// The failed task's page, linked from the strip, shows its error as text.
	tasks := d.tasksOf("nightly-report")
	task := runChromium(t, bin, "--dump-dom", fmt.Sprintf("%stasks/%d", url, tasks[0].ID))
	if !strings.Contains(task, `data-state="failed">failed</span>`) || !strings.Contains(task, "&lt;b&gt;report&lt;/b&gt; failed") {
		t.Errorf("the task page lacks the failed state or the output as text:\n%s", task)
	}

	png := filepath.Join(t.TempDir(), "status-page.png")
	runChromium(t, bin, "--hide-scrollbars", "--window-size=1280,1400", "--screenshot="+png, url)
	b, err := os.ReadFile(png)
	if err != nil || len(b) < 10_000 || string(b[1:4]) != "PNG" {
		t.Fatalf("screenshot %s: %d bytes, %v", png, len(b), err)
	}
	if to := os.Getenv("SCHEDD_STATUS_PAGE_PNG"); to != "" {
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
