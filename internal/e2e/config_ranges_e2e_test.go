//go:build unix

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/store/postgres/pgtest"
	"github.com/schedd/schedd/internal/testgateway"
)

// maxRSS bounds the memory of a schedd whose every setting is at its maximum: settings
// within their ranges must never make schedd take more than a small host has.
const maxRSS = 200 << 20

// atMaxYAML is a config with every numeric key (but the Postgres store's) at its maximum:
// {{Type.key}} stands for the maximum of that key. The gateway is the fake one (after
// "--"), ready by notify.
const atMaxYAML = `gateway:
  command: [unused]
  readiness: {notify: {}, timeout: {{Probe.timeout}}}
  liveness: {exec: {command: ["true"]}, timeout: {{Probe.timeout}}, every: {{Probe.every}}, failures: {{Probe.failures}}}
  stop: {timeout: {{Stop.timeout}}}
  backoff: {initial: {{Backoff.initial}}, max: {{Backoff.max}}, factor: {{Backoff.factor}}, jitter: {{Backoff.jitter}}, reset_after: {{Backoff.reset_after}}}
  crash_loop: {failures: {{CrashLoop.failures}}, window: {{CrashLoop.window}}}
  output: {max_lines_per_second: {{Output.max_lines_per_second}}, keep_lines: {{Output.keep_lines}}}
  no_restart_exit_codes: [{{Gateway.no_restart_exit_codes}}]
  sockets: [{name: web, listen: "unix:{{sockdir}}/gw.sock", backlog: {{Socket.backlog}}}]
restart:
  cooldown: {{Restart.cooldown}}
  delay: {{Restart.delay}}
  signal_down_wait: {{Restart.signal_down_wait}}
  defer_until_idle:
    idle: {openclaw: {command: ["true"], port: {{OpenClawProbe.port}}}, timeout: {{Probe.timeout}}}
    poll: {{DeferUntilIdle.poll}}
    max_wait: {{DeferUntilIdle.max_wait}}
heartbeat:
  defaults:
    every: {{HeartbeatAgent.every}}
    target: {http: {url: "http://127.0.0.1:1/hooks/wake", timeout: {{HTTPTarget.timeout}}}}
  agents:
    - {id: a, every: {{HeartbeatAgent.every}}, target: {exec: {command: ["true"], timeout: {{ExecTarget.timeout}}}}}
    - {id: b, target: {openclaw: {url: "http://127.0.0.1:1/hooks/wake", token: t, timeout: {{OpenClaw.timeout}}}}}
deliveries:
  max_retries: {{Deliveries.max_retries}}
  schedule: [{{Deliveries.schedule}}]
  jitter: {{Deliveries.jitter}}
  max_payload: {{Deliveries.max_payload}}
  max_entries: {{Deliveries.max_entries}}
  recovery_budget: {{Deliveries.recovery_budget}}
  replay_spacing: {{Deliveries.replay_spacing}}
  max_retry_after: {{Deliveries.max_retry_after}}
  workers: {{Deliveries.workers}}
  ttl: {{Deliveries.ttl}}
  delivered_retention: {{Deliveries.delivered_retention}}
  dead_retention: {{Deliveries.dead_retention}}
  sinks:
    h: {http: {url: "http://127.0.0.1:1/h", timeout: {{HTTPSink.timeout}}}}
    e: {exec: {command: ["true"], timeout: {{ExecSink.timeout}}, transient_codes: [{{ExecSink.transient_codes}}]}}
    g: {gateway: {path: /g, base_url: "http://127.0.0.1:1", timeout: {{GatewaySink.timeout}}}}
    o: {openclaw: {url: "http://127.0.0.1:1/hooks/agent", token: t, timeout: {{OpenClaw.timeout}}}}
cron:
  workers: {{Cron.workers}}
  queue_size: {{Cron.queue_size}}
  jobs:
    - name: j
      every: {{CronJob.every}}
      jitter: {{CronJob.jitter}}
      starting_deadline: {{CronJob.starting_deadline}}
      retry: {max: {{CronRetry.max}}, schedule: [{{CronRetry.schedule}}]}
      disable_after: {{CronJob.disable_after}}
      history_limit: {{CronJob.history_limit}}
      priority: {{CronJob.priority}}
      timeout: {{CronJob.timeout}}
      action: {exec: {command: ["true"], timeout: {{ExecAction.timeout}}}}
    - {name: k, every: {{CronJob.every}}, action: {http: {url: "http://127.0.0.1:1/c", timeout: {{HTTPAction.timeout}}}}}
control: {max_body: {{Control.max_body}}, request_timeout: {{Control.request_timeout}}}
`

// atMaxPostgresYAML sets the keys of the Postgres store, which cannot be in atMaxYAML.
const atMaxPostgresYAML = `deliveries:
  store: {postgres: {dsn: "{{dsn}}", lease: {{PostgresStore.lease}}, max_conns: {{PostgresStore.max_conns}}}}
`

var placeholderRE = regexp.MustCompile(`\{\{([A-Za-z]+\.[a-z_]+)\}\}`)

// atMax fills the placeholders of tmpl with the maxima and adds the keys it used to used.
func atMax(t *testing.T, tmpl string, used map[string]bool) string {
	t.Helper()
	maxima := map[string]string{}
	for _, r := range config.Ranges() {
		maxima[r.Key] = r.Max
	}
	return placeholderRE.ReplaceAllStringFunc(tmpl, func(m string) string {
		key := m[2 : len(m)-2]
		v, ok := maxima[key]
		if !ok {
			t.Fatalf("%s is not a numeric key of the config", key)
		}
		used[key] = true
		return v
	})
}

// rss reads the resident and the peak resident memory of process pid from /proc.
func rss(t *testing.T, pid int) (now, peak int64) {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, _ := strings.Cut(sc.Text(), ":")
		var into *int64
		switch name {
		case "VmRSS":
			into = &now
		case "VmHWM":
			into = &peak
		default:
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		*into = kb << 10
	}
	if now == 0 || peak == 0 {
		t.Fatalf("no VmRSS/VmHWM in /proc/%d/status", pid)
	}
	return now, peak
}

// TestE2EEveryNumberAtItsMaximum_RINPUT02: a real schedd with every numeric setting at its
// maximum at once (the Postgres store's in a second run) starts, gets its gateway ready
// and serves, and its memory stays below maxRSS, peak included.
func TestE2EEveryNumberAtItsMaximum_RINPUT02(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc")
	}
	used := map[string]bool{}
	sqlite := atMax(t, atMaxYAML, used)
	postgres := atMax(t, atMaxPostgresYAML, used)
	for _, r := range config.Ranges() {
		if !used[r.Key] {
			t.Errorf("%s is at its maximum in neither run: add it to atMaxYAML", r.Key)
		}
	}
	run := func(t *testing.T, yaml string) *testDaemon {
		cfg := writeConfig(t, yaml)
		d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{"ready"}})
		d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
		if _, err := d.status(); err != nil {
			t.Fatal(err)
		}
		now, peak := rss(t, d.cmd.Process.Pid)
		t.Logf("RSS %d MiB, peak %d MiB", now>>20, peak>>20)
		if now > maxRSS || peak > maxRSS {
			t.Errorf("RSS %d MiB, peak %d MiB: want both below %d MiB", now>>20, peak>>20, maxRSS>>20)
		}
		return d
	}
	stop := func(t *testing.T, d *testDaemon) {
		d.cmd.Process.Signal(syscall.SIGTERM)
		if code := d.wait(30 * time.Second); code != 0 {
			t.Fatalf("exit %d", code)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		d := run(t, strings.Replace(sqlite, "{{sockdir}}", t.TempDir(), 1))
		if st, err := d.status(); err != nil || st.Cron == nil || st.Cron.Workers != 1000 || st.Cron.QueueSize != 1_000_000 {
			t.Fatalf("status: %v, cron %+v", err, st.Cron)
		}
		stop(t, d)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.DSN(t)
		stop(t, run(t, strings.Replace(postgres, "{{dsn}}", dsn, 1)+"gateway: {command: [unused], readiness: {notify: {}}}\n"))
	})
}

// schedd runs `schedd args...` and returns its exit code and output.
func schedd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	// A run that should have been refused but starts is stopped by this deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, scheddBin, args...)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, testgateway.Env+"=") || strings.HasPrefix(kv, "NOTIFY_SOCKET=")
	}), "GORACE="+testgateway.GoRace)
	out, err := cmd.CombinedOutput()
	return exitCode(err), string(out)
}

// refusedByValidateAndRun checks that `config validate` and `run` (as processes) exit 78
// on the file at path, naming want (":line:column: key: ...") after the path.
func refusedByValidateAndRun(t *testing.T, path, want string, run ...string) {
	t.Helper()
	for _, args := range [][]string{
		{"config", "validate", path},
		append([]string{"run", "--config", path, "--state-dir", shortDir(t), "--service-manager", "none"}, run...),
	} {
		code, out := schedd(t, args...)
		if code != exitConfig || !strings.Contains(out, path+want) {
			t.Errorf("schedd %s: exit %d, want %d naming %q:\n%s", args[0], code, exitConfig, path+want, out)
		}
	}
}

// TestE2EPastAMaximumIsRefused_RINPUT02: a value one past its maximum makes `config
// validate` and `run` exit 78 naming the key and its position (cron.workers 10^12 used to
// validate and then kill `run` out of memory, exit 2); a reload with such a value is
// refused, logged, and the config in effect stays.
func TestE2EPastAMaximumIsRefused_RINPUT02(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, want string }{
		{"cron: {workers: 1000000000000}\n", ":2:17: cron.workers: must be at most 1000, got 1000000000000"},
		{"cron: {queue_size: 1000001}\n", ":2:20: cron.queue_size: must be at most 1000000"},
		{"deliveries: {workers: 1001}\n", ":2:23: deliveries.workers: must be at most 1000"},
		{"heartbeat: {defaults: {every: 366d}}\n", ":2:31: heartbeat.defaults.every: must be at most 365d"},
		{"deliveries: {ttl: 8761h}\n", ":2:19: deliveries.ttl: must be at most 8760h"},
		{"control: {max_body: 67108865}\n", ":2:21: control.max_body: must be at most 67108864"},
		{"deliveries: {max_payload: 65MiB}\ncontrol: {max_body: 67108864}\n", ":2:27: deliveries.max_payload: must be at most 64MiB, got 65MiB"},
	} {
		path := writeConfig(t, "gateway: {command: [gw]}\n"+tc.yaml)
		refusedByValidateAndRun(t, path, tc.want)
	}
	path := writeConfig(t, "gateway: {command: [gw], output: {keep_lines: 100001}}\n")
	refusedByValidateAndRun(t, path, ":1:47: gateway.output.keep_lines: must be from 1 to 100000, got 100001")

	// A reload: refused, logged, the config in effect kept.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "schedd.yaml")
	writeFile(t, cfg, "cron: {workers: 3}\n")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{"ready"}})
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	writeFile(t, cfg, "cron: {workers: 1000000000000}\n")
	d.cmd.Process.Signal(syscall.SIGHUP)
	if !d.waitLog("config reload failed; keeping the config in effect", cfg+":1:17: cron.workers: must be at most 1000") {
		t.Fatalf("no refused reload in the log:\n%s", d.out.String())
	}
	if strings.Contains(d.out.String(), "cron settings changed") {
		t.Errorf("the refused value was taken for the next start:\n%s", d.out.String())
	}
	if st, err := d.status(); err != nil || st.Cron == nil || st.Cron.Workers != 3 || st.Gateway.State != api.GatewayReady {
		t.Fatalf("after the refused reload: %v %+v", err, st)
	}
	// The file fixed, a reload takes it (for the next start, which it says).
	writeFile(t, cfg, "cron: {workers: 1000}\n")
	d.cmd.Process.Signal(syscall.SIGHUP)
	if !d.waitLog("cron settings changed that apply only when schedd starts again") {
		t.Fatalf("the fixed file was not taken:\n%s", d.out.String())
	}
}

// TestE2EEmptyGatewayProgram_RINPUT05: an empty program name in gateway.command, from the
// file or after "--", makes `config validate` and `run` exit 78 at once instead of a
// gateway that fails to start for ever.
func TestE2EEmptyGatewayProgram_RINPUT05(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "gateway:\n  command: [\"\", --port, \"1\"]\n")
	refusedByValidateAndRun(t, path, ":2:13: gateway.command[0]: the program must not be empty")
	path = writeConfig(t, "log: {level: info}\n")
	code, out := schedd(t, "run", "--config", path, "--state-dir", shortDir(t), "--service-manager", "none", "--", "")
	if code != exitConfig || !strings.Contains(out, "gateway.command[0]: the program must not be empty") {
		t.Errorf("run -- \"\": exit %d, want %d:\n%s", code, exitConfig, out)
	}
}

// TestE2EReloadNamesNextStartSettings_RINPUT14: a reload that changes the state dir, the
// store and the control API's limits says in the log that they apply only when schedd
// starts again; the gateway goes on undisturbed.
func TestE2EReloadNamesNextStartSettings_RINPUT14(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "schedd.yaml")
	writeFile(t, cfg, "state_dir: one\ndeliveries: {store: {sqlite: {path: one.db}}}\n")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{"ready"}})
	pid := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady }).Gateway.PID
	writeFile(t, cfg, "state_dir: two\ndeliveries: {store: {sqlite: {path: two.db}}}\ncontrol: {max_body: 4194304}\n")
	d.cmd.Process.Signal(syscall.SIGHUP)
	if !d.waitLog("settings changed that apply only when schedd starts again", `"settings": ["state_dir", "control.max_body"]`,
		"delivery settings changed that apply only when schedd starts again", `"settings": ["deliveries.store"]`, "config reloaded") {
		t.Fatalf("the log does not name the settings that wait for the next start:\n%s", d.out.String())
	}
	if st, err := d.status(); err != nil || st.Gateway.PID != pid || st.Gateway.State != api.GatewayReady {
		t.Fatalf("the reload disturbed the gateway: %v %+v", err, st.Gateway)
	}
}
