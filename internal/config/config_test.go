package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// full uses every section, every kind and most keys (of those supported: see notYet).
const full = `gateway:
  command: [openclaw, gateway, run, --port, 18789]
  env: {OPENCLAW_NO_RESPAWN: "1", API_TOKEN: sekrit-env}
  workdir: /var/lib/openclaw
  readiness:
    http:
      url: http://127.0.0.1:18789/readyz
      json_pointer: /ready
      headers: {Authorization: Bearer sekrit-readiness}
    timeout: 45s
  liveness: {exec: {command: [openclaw, health]}, every: 20s}
  stop: {signal: term, timeout: 10s}
  backoff: {initial: 500ms, max: 30s, factor: 1.5, jitter: 0, reset_after: 2m}
  crash_loop: {failures: 3, window: 1m}
  output: {max_lines_per_second: 50, keep_lines: 20}
restart:
  allow_signal: false
  cooldown: 0
  delay: 60s
  method: signal
  signal: 1
  defer_until_idle:
    idle: {http: {url: "http://127.0.0.1:18789/status", inflight_pointer: /inFlight}, timeout: 2s}
    poll: 10ms
    max_wait: 1m
heartbeat:
  enabled: false
  user_timezone: Europe/Berlin
  defaults:
    every: "45"
    active_hours: {start: "08:00", end: "24:00"}
    target: {http: {url: "http://127.0.0.1:18789/hooks/wake", method: put, headers: {X-Key: sekrit-target}}}
    session: main
    visibility:
      show_ok: true
      channels:
        telegram:
          show_alerts: false
          accounts: {work: {use_indicator: false}}
  agents:
    - {id: main, every: 15m}
    - id: ops
      enabled: false
      target: {exec: {command: [notify-ops], timeout: 5s}}
      active_hours: {start: "22:00", end: "06:00", timezone: local}
deliveries:
  store: {sqlite: {path: /var/lib/schedd/q.db, synchronous: normal}}
  max_retries: 0
  schedule: [1s]
  jitter: 1
  max_payload: 512KiB
  max_entries: 10
  permanent_errors: ["(?i)quota"]
  recovery_budget: 5s
  replay_spacing: 0s
  max_retry_after: 10m
  workers: 1
  sinks:
    webhook: {http: {url: "https://user:sekrit-url@example.net/hook", headers: {Authorization: Bearer sekrit-sink}}}
    script: {exec: {command: [deliver], transient_codes: [75, 69]}}
    outbox: {gateway: {path: /hooks/deliver}}
control: {socket: /run/schedd/s.sock, max_body: 1048576, request_timeout: 5s}
log: {format: json, level: debug}
state_dir: /var/lib/schedd
`

func mustParse(t *testing.T, src string) *Config {
	t.Helper()
	c, err := Parse("f.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func TestDefault(t *testing.T) {
	c := Default()
	checks := []struct {
		name      string
		got, want any
	}{
		{"readiness", c.Gateway.Readiness.Kind(), "none"},
		{"readiness timeout", c.Gateway.Readiness.Timeout.D(), 60 * time.Second},
		{"liveness", c.Gateway.Liveness == nil, true},
		{"stop signal", c.Gateway.Stop.Signal, "SIGTERM"},
		{"stop timeout", c.Gateway.Stop.Timeout.D(), 30 * time.Second},
		{"backoff", c.Gateway.Backoff, Backoff{Duration(time.Second), Duration(time.Minute), 2, 0.2, Duration(time.Minute)}},
		{"crash loop", c.Gateway.CrashLoop, CrashLoop{5, Duration(2 * time.Minute)}},
		{"output", c.Gateway.Output.MaxLinesPerSecond, 1000},
		{"output kept", c.Gateway.Output.KeepLines, 1000},
		{"allow signal", *c.Restart.AllowSignal, true},
		{"cooldown", c.Restart.Cooldown.D(), 30 * time.Second},
		{"delay", c.Restart.Delay.D(), 2 * time.Second},
		{"method", c.Restart.Method, "respawn"},
		{"restart signal", c.Restart.Signal, "SIGHUP"},
		{"deferral enabled", *c.Restart.DeferUntilIdle.Enabled, false},
		{"idle", c.Restart.DeferUntilIdle.Idle == nil, true},
		{"poll", c.Restart.DeferUntilIdle.Poll.D(), 500 * time.Millisecond},
		{"max wait", c.Restart.DeferUntilIdle.MaxWait.D(), 300 * time.Second},
		{"heartbeat enabled", *c.Heartbeat.Enabled, true},
		{"heartbeat every", c.Heartbeat.Defaults.Every, "30m"},
		{"heartbeat defaults enabled", *c.Heartbeat.Defaults.Enabled, true},
		{"agents", len(c.Heartbeat.Agents), 0},
		{"store", c.Deliveries.Store.Kind(), "sqlite"},
		{"sqlite", *c.Deliveries.Store.SQLite, SQLiteStore{Path: "schedd.db", Synchronous: "FULL"}},
		{"max retries", c.Deliveries.MaxRetries, 5},
		{"schedule", c.Deliveries.Schedule, []Duration{Duration(5 * time.Second), Duration(25 * time.Second), Duration(2 * time.Minute), Duration(10 * time.Minute)}},
		{"delivery jitter", c.Deliveries.Jitter, 0.2},
		{"max payload", c.Deliveries.MaxPayload, ByteSize(1 << 20)},
		{"max entries", c.Deliveries.MaxEntries, 1_000_000},
		{"recovery budget", c.Deliveries.RecoveryBudget.D(), 60 * time.Second},
		{"replay spacing", c.Deliveries.ReplaySpacing.D(), 250 * time.Millisecond},
		{"max retry after", c.Deliveries.MaxRetryAfter.D(), time.Hour},
		{"workers", c.Deliveries.Workers, 16},
		{"max body", c.Control.MaxBody, 2 << 20},
		{"request timeout", c.Control.RequestTimeout.D(), 30 * time.Second},
		{"log", c.Log, Log{Format: "console", Level: "info"}},
		{"state dir", c.StateDir, ""},
		{"path", c.Path, ""},
	}
	for _, ck := range checks {
		if !equal(ck.got, ck.want) {
			t.Errorf("%s: got %v, want %v", ck.name, ck.got, ck.want)
		}
	}
	// Default has no command; that is the only thing Validate misses.
	err := c.Validate()
	want := "gateway.command: is required: set it in the config file or pass the command after `schedd run --`"
	if err == nil || err.Error() != want {
		t.Errorf("Default().Validate() = %v, want %s", err, want)
	}
	c.Gateway.Command = []string{"gw"}
	if err := c.Validate(); err != nil {
		t.Errorf("Default() with a command: %v", err)
	}
	// Each call returns its own copy.
	Default().Deliveries.Schedule[0] = 0
	if Default().Deliveries.Schedule[0] == 0 {
		t.Error("Default() shares its schedule slice between calls")
	}
}

func equal(a, b any) bool {
	ya, _ := yaml.Marshal(a)
	yb, _ := yaml.Marshal(b)
	return string(ya) == string(yb)
}

// TestEmptySectionsGiveDefaults: absent, null and empty sections are all fine.
func TestEmptySectionsGiveDefaults(t *testing.T) {
	want := Default()
	want.Gateway.Command = []string{"gw"}
	for _, src := range []string{
		cmd,
		cmd + "restart:\nheartbeat: ~\ndeliveries: {}\ncron: {jobs: []}\ncontrol: {}\nmetrics: {}\nlog: {}\n",
		cmd + "deliveries: {store: {}}\nrestart: {defer_until_idle: {}}\n",
		"gateway:\n  command: [gw]\n  stop: {timeout: ~}\n  liveness:\n",
	} {
		if diff := diffConfigs(want, mustParse(t, src)); diff != "" {
			t.Errorf("%q differs from the defaults:\n%s", src, diff)
		}
	}
}

// TestDefaultsOnlyForAbsentKeys: a value given as the zero value is kept, not defaulted.
func TestDefaultsOnlyForAbsentKeys(t *testing.T) {
	c := mustParse(t, cmd+"restart: {cooldown: 0s, delay: 0, allow_signal: false}\n")
	if c.Restart.Cooldown != 0 || c.Restart.Delay != 0 || *c.Restart.AllowSignal {
		t.Errorf("explicit zero values were replaced: %+v", c.Restart)
	}
	c = mustParse(t, cmd+"deliveries:\n  sinks: {s: {exec: {command: [x], transient_codes: []}}}\n")
	if codes := c.Deliveries.Sinks["s"].Exec.TransientCodes; len(codes) != 0 {
		t.Errorf("transient_codes: [] became %v", codes)
	}
	c = mustParse(t, cmd+"deliveries:\n  sinks: {s: {exec: {command: [x]}}}\n")
	if codes := c.Deliveries.Sinks["s"].Exec.TransientCodes; len(codes) != 1 || codes[0] != 75 {
		t.Errorf("default transient_codes = %v, want [75]", codes)
	}
}

// TestHeartbeatTargetDefaults: a heartbeat target's method and timeout are defaulted here,
// and only here (the heartbeat package refuses a target without them).
func TestHeartbeatTargetDefaults(t *testing.T) {
	c := mustParse(t, cmd+`heartbeat:
  defaults: {target: {http: {url: "http://127.0.0.1:1/wake"}}}
  agents:
    - {id: a, target: {exec: {command: [pulse]}}}
    - {id: b, target: {openclaw: {url: "http://127.0.0.1:18789/hooks/wake", token: "s3cret"}}}
`)
	if tg := c.Heartbeat.Defaults.Target.HTTP; tg.Method != "POST" || tg.Timeout.D() != 10*time.Second {
		t.Errorf("http target = method %q timeout %v, want POST 10s", tg.Method, tg.Timeout)
	}
	if tg := c.Heartbeat.Agents[0].Target.Exec; tg.Timeout.D() != 30*time.Second {
		t.Errorf("exec target timeout = %v, want 30s", tg.Timeout)
	}
	if tg := c.Heartbeat.Agents[1].Target.OpenClaw; tg.Timeout.D() != 10*time.Second {
		t.Errorf("openclaw target timeout = %v, want 10s", tg.Timeout)
	}
}

// TestKindDefaults: defaults inside optional sections depend on the kind chosen.
func TestKindDefaults(t *testing.T) {
	c := mustParse(t, full)
	if l := c.Gateway.Liveness; l.Timeout.D() != 5*time.Second || l.Every.D() != 20*time.Second || l.Failures != 3 {
		t.Errorf("exec liveness = %+v, want timeout 5s, every 20s (given), failures 3", *l)
	}
	if c.Restart.DeferUntilIdle.Enabled == nil || !*c.Restart.DeferUntilIdle.Enabled {
		t.Error("defer_until_idle.enabled should default to true when idle is set")
	}
	if ah := c.Heartbeat.Defaults.ActiveHours; ah.Timezone != "user" {
		t.Errorf("active_hours.timezone = %q, want user", ah.Timezone)
	}
	if tg := c.Heartbeat.Defaults.Target.HTTP; tg.Method != "PUT" || tg.Timeout.D() != 10*time.Second {
		t.Errorf("http target = %+v, want method PUT (normalized), timeout 10s", *tg)
	}
	if tg := c.Heartbeat.Agents[1].Target.Exec; tg.Timeout.D() != 5*time.Second {
		t.Errorf("exec target timeout = %v, want 5s (given)", tg.Timeout)
	}
	if s := c.Deliveries.Sinks["webhook"].HTTP; s.Method != "POST" || s.Timeout.D() != 10*time.Second {
		t.Errorf("http sink = %+v", *s)
	}
	if s := c.Deliveries.Sinks["script"].Exec; s.Timeout.D() != 30*time.Second {
		t.Errorf("exec sink timeout = %v", s.Timeout)
	}
	if s := c.Deliveries.Sinks["outbox"].Gateway; s.Timeout.D() != 10*time.Second {
		t.Errorf("gateway sink timeout = %v", s.Timeout)
	}
}

func TestNotifyLivenessDefaults(t *testing.T) {
	c := mustParse(t, "gateway:\n  command: [gw]\n  liveness: {notify: }\n")
	l := c.Gateway.Liveness
	if l == nil || l.Kind() != ProbeNotify || l.Timeout.D() != 30*time.Second || l.Every != 0 || l.Failures != 0 {
		t.Errorf("notify liveness = %+v, want notify with a 30s watchdog interval", l)
	}
	c = mustParse(t, "gateway:\n  command: [gw]\n  liveness: {none: {}}\n")
	if c.Gateway.Liveness != nil {
		t.Errorf("liveness none should be stored as nil, got %+v", c.Gateway.Liveness)
	}
}

// TestNormalize: accepted spellings are stored in one form.
func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{"TERM": "SIGTERM", "sigterm": "SIGTERM", "SIGTERM": "SIGTERM", "15": "15", "usr2": "SIGUSR2", "Int": "SIGINT"} {
		c := mustParse(t, "gateway: {command: [gw], stop: {signal: "+in+"}}\n")
		if c.Gateway.Stop.Signal != want {
			t.Errorf("signal %s stored as %q, want %q", in, c.Gateway.Stop.Signal, want)
		}
	}
	c := mustParse(t, cmd+"deliveries: {store: {sqlite: {synchronous: normal}}}\n")
	if s := c.Deliveries.Store.SQLite; s.Synchronous != "NORMAL" || s.Path != "schedd.db" {
		t.Errorf("sqlite = %+v", *s)
	}
}

func TestRoundTrip(t *testing.T) {
	for name, src := range map[string]string{"full": full, "example": Example()} {
		t.Run(name, func(t *testing.T) {
			c := mustParse(t, src)
			out, err := yaml.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			c2, err := Parse("f.yaml", out)
			if err != nil {
				t.Fatalf("Parse(Marshal(c)): %v\n%s", err, out)
			}
			if diff := diffConfigs(c, c2); diff != "" {
				t.Errorf("round trip changed:\n%s\n%s", diff, out)
			}
		})
	}
}

// TestAnchorsAndMerges: YAML anchors, aliases and merge keys work and keep positions.
func TestAnchorsAndMerges(t *testing.T) {
	src := `x-probe: &probe {http: {url: "http://h/ready", headers: &h {A: b}}}
gateway:
  command: [gw]
  readiness: *probe
  liveness:
    <<: *probe
    every: 3s
deliveries:
  sinks:
    a: {http: {url: "http://h/a", headers: *h}}
`
	c := mustParse(t, src)
	if l := c.Gateway.Liveness; l == nil || l.HTTP == nil || l.HTTP.URL != "http://h/ready" || l.Every.D() != 3*time.Second {
		t.Errorf("merged liveness = %+v", l)
	}
	// Only x- keys at the top level are ignored.
	_, err := Parse("f.yaml", []byte("gateway: {command: [gw], x-note: 1}\n"))
	want := "f.yaml:1:26: gateway.x-note: unknown key (known keys: command, env, workdir, readiness, liveness, stop, backoff, crash_loop, output, no_restart_exit_codes, ports, sockets)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	// An anchor can also be defined at its first use.
	src = `gateway:
  command: [gw]
  readiness: &probe {http: {url: "http://h/ready", headers: &h {A: b}}}
  liveness:
    <<: *probe
    every: 3s
deliveries:
  sinks:
    a: {http: {url: "http://h/a", headers: *h}}
`
	c = mustParse(t, src)
	if l := c.Gateway.Liveness; l == nil || l.HTTP == nil || l.HTTP.URL != "http://h/ready" || l.Every.D() != 3*time.Second {
		t.Errorf("merged liveness = %+v", l)
	}
	if h := c.Deliveries.Sinks["a"].HTTP.Headers; h["A"] != "b" {
		t.Errorf("aliased headers = %v", h)
	}
	// A problem inside an anchor is reported once, at the anchor.
	_, err = Parse("f.yaml", []byte(`gateway:
  command: [gw]
  readiness: &p {http: {url: "http://h/r", json_pointer: bad}}
  liveness: *p
`))
	want = `f.yaml:3:58: gateway.readiness.http.json_pointer: invalid JSON pointer "bad" (like /status/ready; ~0 and ~1 escape ~ and /)` + "\n" +
		`f.yaml:3:58: gateway.liveness.http.json_pointer: invalid JSON pointer "bad" (like /status/ready; ~0 and ~1 escape ~ and /)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// TestAliasBomb: exponential expansion through aliases and merges is cut off instead of
// hanging ("billion laughs").
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("x-m0: &m0 {level: info}\n")
	for i := 1; i < 10; i++ {
		prev := "*m" + strconv.Itoa(i-1)
		b.WriteString("x-m" + strconv.Itoa(i) + ": &m" + strconv.Itoa(i) + " {<<: [" + strings.Repeat(prev+", ", 9) + prev + "]}\n")
	}
	b.WriteString("log: {<<: *m9}\n")
	_, err := Parse("f.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "too many nodes after alias expansion") {
		t.Fatalf("alias bomb: %v", err)
	}
	// The same structure, small, is fine.
	c := mustParse(t, "x-m0: &m0 {level: warn}\nx-m1: &m1 {<<: [*m0, *m0]}\nlog: {<<: *m1}\n")
	if c.Log.Level != "warn" {
		t.Errorf("merged level = %q", c.Log.Level)
	}
}

// TestLargeFileIsNotAnAliasBomb: the node budget bounds what aliases add, not the file's own
// nodes: 10,000 cron jobs (about 130,000 nodes) parse.
func TestLargeFileIsNotAnAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("cron:\n  jobs:\n")
	for i := range 10_000 {
		fmt.Fprintf(&b, "    - {name: j%05d, schedule: \"* * * * *\", action: {http: {url: \"http://127.0.0.1:9/\", body: x}}}\n", i)
	}
	c := mustParse(t, b.String())
	if n := len(c.Cron.Jobs); n != 10_000 {
		t.Fatalf("%d jobs, want 10000", n)
	}
}

func TestRelativePathsFollowTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "etc", "schedd.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	src := "gateway: {command: [./gw], workdir: work}\nstate_dir: ../state\ncontrol: {socket: s.sock}\n" +
		"deliveries: {store: {sqlite: {path: q.db}}}\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "etc", "work"); c.Gateway.Workdir != want {
		t.Errorf("workdir = %q, want %q", c.Gateway.Workdir, want)
	}
	if want := filepath.Join(dir, "state"); c.StateDir != want {
		t.Errorf("state_dir = %q, want %q", c.StateDir, want)
	}
	if want := filepath.Join(dir, "etc", "s.sock"); c.Control.Socket != want {
		t.Errorf("socket = %q, want %q", c.Control.Socket, want)
	}
	if c.Deliveries.Store.SQLite.Path != "q.db" || c.Gateway.Command[0] != "./gw" {
		t.Errorf("store path and command must stay as written: %q %q", c.Deliveries.Store.SQLite.Path, c.Gateway.Command[0])
	}
	if c.Path != path {
		t.Errorf("Path = %q, want %q", c.Path, path)
	}
	// Without a file name nothing is resolved.
	c, err = Parse("", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if c.Gateway.Workdir != "work" {
		t.Errorf("workdir without a file = %q", c.Gateway.Workdir)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file = %v, want ErrNotExist", err)
	}
}

// TestValidate covers the checks that need the whole config, on configs built in code and
// on parsed ones whose positions are kept.
func TestValidate(t *testing.T) {
	c := Default()
	c.Gateway.Command = []string{"gw"}
	c.Restart.Method = MethodSignal
	c.Restart.Signal = ""
	c.Deliveries.Sinks = map[string]Sink{"gw": {Gateway: &GatewaySink{Path: "/hook", Timeout: Duration(time.Second)}}}
	want := "restart.signal: is required when method is signal\n" +
		"deliveries.sinks.gw.gateway.base_url: is required: neither gateway.readiness nor gateway.liveness is an http probe to take it from"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}

	// A parsed config edited afterwards: problems point into the file (a removed value at
	// where it was).
	c = mustParse(t, "gateway:\n  command: [gw]\nlog:\n  level: info\n")
	c.Log.Level = "loud"
	c.Gateway.Command = nil
	want = "f.yaml:2:12: gateway.command: is required: set it in the config file or pass the command after `schedd run --`\n" +
		"f.yaml:4:10: log.level: must be one of debug, info, warn, error, got \"loud\""
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	var errs Errors
	if err := c.Validate(); !errors.As(err, &errs) || len(errs) != 2 {
		t.Errorf("Validate does not return Errors: %T", err)
	}
	if e, ok := errors.AsType[*Error](c.Validate()); !ok || e.Field != "gateway.command" {
		t.Errorf("errors.As(*Error) = %v", e)
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tt := range []struct {
		e    Error
		want string
	}{
		{Error{File: "a.yaml", Line: 3, Column: 5, Field: "log.level", Msg: "bad"}, "a.yaml:3:5: log.level: bad"},
		{Error{File: "a.yaml", Line: 3, Field: "log", Msg: "bad"}, "a.yaml:3: log: bad"},
		{Error{File: "a.yaml", Msg: "bad"}, "a.yaml: bad"},
		{Error{Line: 1, Column: 2, Msg: "bad"}, "1:2: bad"},
		{Error{Field: "x", Msg: "bad"}, "x: bad"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// TestSecretsNeverInErrors: header values, env values and the dsn are never echoed.
func TestSecretsNeverInErrors(t *testing.T) {
	for _, src := range []string{
		"gateway: {command: [gw], env: {A: {sekrit: 1}}}\n",
		"gateway: {command: [gw], env: {A: \"sekrit\\0\"}}\n",
		"gateway:\n  command: [gw]\n  readiness: {http: {url: 'http://h/', headers: {X: [sekrit]}}}\n",
		"gateway:\n  command: [gw]\n  readiness: {http: {url: 'http://h/', headers: {X: \"sekrit\\r\\nY: z\"}}}\n",
		"deliveries: {store: {postgres: {dsn: [sekrit]}}}\n",
		"deliveries: {store: {postgres: {dsn: 'postgres://u:sekrit@h/%zz'}}}\n",
		"deliveries:\n  sinks: {a: {http: {url: 'http://u:sekrit@/x'}}}\n",
		"heartbeat:\n  defaults: {target: {http: {url: 'ftp://u:sekrit@h/'}}}\n",
	} {
		msg := parseErr(t, src)
		if msg == "" {
			t.Errorf("%q parsed", src)
		}
		if strings.Contains(msg, "sekrit") {
			t.Errorf("secret in error message: %s", msg)
		}
	}
	msg := parseErr(t, "gateway:\n  command: [gw]\n  env: {A: [sekrit]}\n")
	if want := "f.yaml:3:12: gateway.env.A: expected a string, got a list"; msg != want {
		t.Errorf("got %s, want %s", msg, want)
	}
}

func TestRedacted(t *testing.T) {
	c := mustParse(t, full)
	r := c.Redacted()
	out, err := yaml.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "sekrit") {
		t.Errorf("Redacted() still holds a secret:\n%s", out)
	}
	if got := r.Gateway.Readiness.HTTP.Headers["Authorization"]; got != RedactedValue {
		t.Errorf("header = %q", got)
	}
	if got := r.Gateway.Env["OPENCLAW_NO_RESPAWN"]; got == nil || *got != RedactedValue {
		t.Errorf("env = %v", got)
	}
	if got := r.Deliveries.Sinks["webhook"].HTTP.URL; got != "https://user:xxxxx@example.net/hook" {
		t.Errorf("url = %q", got)
	}
	// The original is untouched and everything else is equal.
	if c.Deliveries.Sinks["webhook"].HTTP.Headers["Authorization"] != "Bearer sekrit-sink" || *c.Gateway.Env["API_TOKEN"] != "sekrit-env" {
		t.Error("Redacted() changed the original")
	}
	if r.Gateway.Readiness.HTTP.URL != c.Gateway.Readiness.HTTP.URL || r.Deliveries.Sinks["outbox"].Gateway.Path != c.Deliveries.Sinks["outbox"].Gateway.Path {
		t.Error("Redacted() changed a value that is not a secret")
	}
	// Clone is deep.
	cl := c.Clone()
	cl.Gateway.Command[0] = "other"
	cl.Deliveries.Sinks["script"].Exec.TransientCodes[0] = 1
	*cl.Heartbeat.Enabled = true
	if c.Gateway.Command[0] != "openclaw" || c.Deliveries.Sinks["script"].Exec.TransientCodes[0] != 75 || *c.Heartbeat.Enabled {
		t.Error("Clone() shares memory with the original")
	}
	if diff := diffConfigs(c, c.Clone()); diff != "" {
		t.Errorf("Clone() differs:\n%s", diff)
	}
}

func TestGatewayBaseURL(t *testing.T) {
	c := mustParse(t, full)
	if got := c.GatewayBaseURL(); got != "http://127.0.0.1:18789" {
		t.Errorf("GatewayBaseURL() = %q", got)
	}
	if got := Default().GatewayBaseURL(); got != "" {
		t.Errorf("GatewayBaseURL() without http probes = %q", got)
	}
}

func TestDurationText(t *testing.T) {
	for in, want := range map[string]time.Duration{"0": 0, "30s": 30 * time.Second, "1m30s": 90 * time.Second, "250ms": 250 * time.Millisecond, "0s": 0, "1.5h": 90 * time.Minute} {
		var d Duration
		if err := d.UnmarshalText([]byte(in)); err != nil || d.D() != want {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", in, d, err, want)
		}
	}
	for _, in := range []string{"", "30", "1d", "-1s", "3x", " 1s"} {
		var d Duration
		if err := d.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("UnmarshalText(%q) accepted", in)
		}
	}
	if b, _ := Duration(90 * time.Second).MarshalText(); string(b) != "1m30s" {
		t.Errorf("MarshalText = %s", b)
	}
}

func TestByteSizeText(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "1MiB": 1 << 20, "512 KiB": 512 << 10, "2gib": 2 << 30, "1KB": 1000, "3MB": 3e6, "7B": 7} {
		var s ByteSize
		if err := s.UnmarshalText([]byte(in)); err != nil || s.Bytes() != want {
			t.Errorf("UnmarshalText(%q) = %d, %v; want %d", in, s, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "1.5MiB", "-1", "1 lot", "+1", "1_000", "99999999999GiB"} {
		var s ByteSize
		if err := s.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("UnmarshalText(%q) accepted", in)
		}
	}
	for n, want := range map[ByteSize]string{0: "0", 1000: "1000", 1 << 20: "1MiB", 3 << 10: "3KiB", 5 << 30: "5GiB"} {
		if got := n.String(); got != want {
			t.Errorf("ByteSize(%d).String() = %q, want %q", int64(n), got, want)
		}
	}
}

func TestCommandMissingFromFile(t *testing.T) {
	c := mustParse(t, "log: {level: warn}\n")
	want := "f.yaml: gateway.command: is required: set it in the config file or pass the command after `schedd run --`"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// A null value in gateway.env removes the variable from what the gateway inherits; an empty
// string sets it empty. Both survive a round trip through the decoder.
func TestGatewayEnvNullRemoves(t *testing.T) {
	c := mustParse(t, "gateway:\n  command: [gw]\n  env: {TERM: null, EMPTY: \"\", A: x, B: ~}\n")
	set, unset := c.Gateway.EnvSplit()
	if !maps.Equal(set, map[string]string{"EMPTY": "", "A": "x"}) || !slices.Equal(unset, []string{"B", "TERM"}) {
		t.Fatalf("EnvSplit = %v, %v", set, unset)
	}
	if v, ok := c.Gateway.Env["TERM"]; !ok || v != nil {
		t.Fatalf("TERM: %v, %v; want present and nil", v, ok)
	}
}
