package config

import (
	"errors"
	"strings"
	"testing"
)

// parseErr parses src as f.yaml and returns the error text ("" when it parsed).
func parseErr(t *testing.T, src string) string {
	t.Helper()
	c, err := Parse("f.yaml", []byte(src))
	if err == nil {
		if c == nil {
			t.Fatal("Parse returned neither a config nor an error")
		}
		return ""
	}
	if c != nil {
		t.Error("Parse returned a config together with an error")
	}
	errs, ok := errors.AsType[Errors](err)
	if !ok {
		t.Fatalf("Parse error is %T, want Errors: %v", err, err)
	}
	for _, e := range errs {
		if e.Line < 1 {
			t.Errorf("error without a line: %v", e)
		}
	}
	return err.Error()
}

// cmd is a minimal valid gateway section to put in front of a test document.
const cmd = "gateway: {command: [gw]}\n"

// TestParseErrors pins the exact text, position and field path of every class of problem.
// These are what `schedd config validate` prints and what makes `schedd run` exit 78
// (R-INIT-01).
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		// Unknown keys: line, column, dotted path and a hint.
		{"unknown key with hint", "gateway:\n  stopp: {}\n",
			"f.yaml:2:3: gateway.stopp: unknown key (did you mean `stop`?)"},
		{"unknown key camelCase", "gateway:\n  backoff: {resetAfter: 1s}\n",
			"f.yaml:2:13: gateway.backoff.resetAfter: unknown key (did you mean `reset_after`?)"},
		{"unknown top-level key", "gatway: {}\n",
			"f.yaml:1:1: gatway: unknown key (did you mean `gateway`?)"},
		{"timing key inside the probe kind", "gateway:\n  liveness: {http: {url: 'http://h/healthz', every: 10s}}\n",
			"f.yaml:2:46: gateway.liveness.http.every: unknown key (timing keys go beside the probe kind: gateway.liveness.every)"},
		{"unknown key without hint", "log: {colour: red}\n",
			"f.yaml:1:7: log.colour: unknown key (known keys: format, level)"},
		{"unknown key in list element", "heartbeat:\n  agents:\n    - {id: a, evry: 5m}\n",
			"f.yaml:3:15: heartbeat.agents[0].evry: unknown key (did you mean `every`?)"},
		{"short unknown key lists the known ones", "deliveries:\n  sinks: {s: {exec: {command: [x], tc: [75]}}}\n",
			"f.yaml:2:36: deliveries.sinks.s.exec.tc: unknown key (known keys: command, timeout, transient_codes)"},
		{"unknown key in map value", "deliveries:\n  sinks:\n    a: {http: {url: 'http://x', timout: 1s}}\n",
			"f.yaml:3:33: deliveries.sinks.a.http.timout: unknown key (did you mean `timeout`?)"},

		// Structure of the file.
		{"duplicate key", "log: {level: info}\nlog: {level: debug}\n",
			"f.yaml:2:1: log: duplicate key (first defined at 1:1)"},
		{"duplicate map key", "gateway:\n  env:\n    A: x\n    A: y\n",
			"f.yaml:4:5: gateway.env.A: duplicate key (first defined at 3:5)"},
		{"empty file", "", "f.yaml:1:1: empty config file (see `schedd config example`)"},
		{"only comments", "# nothing\n\n", "f.yaml:1:1: empty config file (see `schedd config example`)"},
		{"null document", "---\n~\n", "f.yaml:2:1: empty config file (see `schedd config example`)"},
		{"tabs", "gateway:\n\tcommand: [a]\nlog:\n \tlevel: info\n",
			"f.yaml:2:1: tab character in indentation (indent with spaces)\n" +
				"f.yaml:4:2: tab character in indentation (indent with spaces)"},
		{"syntax error with line", "log: [info\n", "f.yaml:1: invalid YAML: did not find expected ',' or ']'"},
		{"syntax error without line", "log: {}\nmetrics: a: b\n",
			"f.yaml:2: invalid YAML: mapping values are not allowed in this context"},
		{"unknown anchor", "log: {}\nmetrics: *nope\n", "f.yaml:2: invalid YAML: unknown anchor 'nope' referenced"},
		{"two documents", "log: {}\n---\nlog: {}\n", "f.yaml:2:1: a second YAML document (---) is not allowed"},
		{"top level list", "- a\n", "f.yaml:1:1: expected a mapping at the top level, got a list"},
		{"invalid utf-8", "log: {level: \"in\xfffo\"}\n", "f.yaml:1:17: invalid UTF-8 (the file must be UTF-8 text)"},
		{"control character", "log: {level: \"a\x01\"}\n", "f.yaml:1:16: invalid YAML: control characters are not allowed"},
		{"alias cycle", "gateway: &g\n  command: [x]\n  env: *g\n",
			"f.yaml:3:8: gateway.env: alias *g refers to a node that contains it"},
		{"custom tag", "log: {level: !loud info}\n", "f.yaml:1:14: log.level: unsupported YAML tag !loud"},
		{"non-string key", "gateway:\n  env: {[a]: b}\n", "f.yaml:2:9: gateway.env: a key must be a string, got a list"},

		// Wrong types.
		{"string for integer", "gateway:\n  crash_loop: {failures: five}\n",
			"f.yaml:2:26: gateway.crash_loop.failures: expected an integer, got \"five\""},
		{"float for integer", "deliveries: {max_retries: 2.5}\n",
			"f.yaml:1:27: deliveries.max_retries: expected an integer, got \"2.5\""},
		{"quoted number for float", "deliveries: {jitter: \"0.2\"}\n",
			"f.yaml:1:22: deliveries.jitter: expected a number, got \"0.2\""},
		{"list for string", "gateway: {workdir: [a]}\n", "f.yaml:1:20: gateway.workdir: expected a string, got a list"},
		{"mapping for list", "gateway: {command: {a: b}}\n", "f.yaml:1:20: gateway.command: expected a list, got a mapping"},
		{"string for mapping", "restart: soon\n", "f.yaml:1:10: restart: expected a mapping, got \"soon\""},
		{"yes is not a bool", "restart: {allow_signal: yes}\n",
			"f.yaml:1:25: restart.allow_signal: expected true or false, got \"yes\""},
		{"bad size", "deliveries: {max_payload: 1 lot}\n",
			"f.yaml:1:27: deliveries.max_payload: invalid size \"1 lot\" (use bytes or a unit, like 1048576, 1MiB or 512KiB)"},
		{"negative size", "deliveries: {max_payload: -1}\n",
			"f.yaml:1:27: deliveries.max_payload: must not be negative, got -1"},

		// Durations: Go syntax only, never negative.
		{"bad duration", "gateway:\n  stop: {timeout: 3x}\n",
			"f.yaml:2:19: gateway.stop.timeout: invalid duration \"3x\" (use Go syntax like 30s or 1m30s)"},
		{"duration without unit", "restart: {cooldown: 30}\n",
			"f.yaml:1:21: restart.cooldown: invalid duration \"30\": a unit is required (use Go syntax like 30s or 1m30s)"},
		{"negative duration", "restart: {cooldown: -5s}\n", "f.yaml:1:21: restart.cooldown: must not be negative, got -5s"},
		{"duration as list", "restart: {cooldown: [1s]}\n",
			"f.yaml:1:21: restart.cooldown: expected a duration like 30s, got a list"},
		{"upstream duration grammar is not Go syntax", "deliveries: {schedule: [5s, 1d]}\n",
			"f.yaml:1:29: deliveries.schedule[1]: invalid duration \"1d\" (use Go syntax like 30s or 1m30s)"},

		// Signals.
		{"unknown signal", "gateway:\n  stop: {signal: TERMX}\n",
			"f.yaml:2:18: gateway.stop.signal: unknown signal \"TERMX\" (use a name like SIGTERM, TERM or a number like 15)"},
		{"signal number out of range", "restart: {method: signal, signal: 99}\n",
			"f.yaml:1:35: restart.signal: unknown signal \"99\" (use a name like SIGTERM, TERM or a number like 15)"},
		{"method signal with empty signal", "restart: {method: signal, signal: ''}\n",
			"f.yaml:1:35: restart.signal: is required when method is signal"},

		// Probes name exactly one kind.
		{"probe without kind", "gateway:\n  readiness: {timeout: 5s}\n",
			"f.yaml:2:14: gateway.readiness: names no probe kind (use one of: notify, http, tcp, exec, none)"},
		{"probe with two kinds", "gateway:\n  readiness:\n    notify: {}\n    tcp: {address: 'localhost:1'}\n",
			"f.yaml:4:10: gateway.readiness.tcp: names two probe kinds (notify and tcp); use exactly one"},
		{"kind not allowed for liveness", "gateway:\n  liveness: {tcp: {address: 'localhost:1'}}\n",
			"f.yaml:2:19: gateway.liveness.tcp: is not allowed here (use one of: notify, http, exec, none)"},
		{"every on readiness", "gateway:\n  readiness: {none: , every: 5s}\n",
			"f.yaml:2:30: gateway.readiness.every: is only used by http and exec liveness probes"},
		{"failures on notify liveness", "gateway:\n  liveness: {notify: {}, failures: 2}\n",
			"f.yaml:2:36: gateway.liveness.failures: is only used by http and exec liveness probes"},
		{"zero probe timeout", "gateway:\n  readiness: {none: {}, timeout: 0}\n",
			"f.yaml:2:34: gateway.readiness.timeout: must be greater than 0, got 0s"},
		{"idle http needs inflight_pointer", "restart:\n  defer_until_idle:\n    idle: {http: {url: 'http://h/s'}}\n",
			"f.yaml:3:18: restart.defer_until_idle.idle.http.inflight_pointer: is required for idle probes (a JSON pointer to the number of in-flight requests)"},
		{"bad json pointer", "gateway:\n  readiness: {http: {url: 'http://h/r', json_pointer: ready}}\n",
			"f.yaml:2:55: gateway.readiness.http.json_pointer: invalid JSON pointer \"ready\" (like /status/ready; ~0 and ~1 escape ~ and /)"},
		{"http probe without url", "gateway:\n  readiness: {http: {}}\n",
			"f.yaml:2:21: gateway.readiness.http.url: is required"},
		{"relative url", "gateway:\n  readiness: {http: {url: /readyz}}\n",
			"f.yaml:2:27: gateway.readiness.http.url: must be an absolute http:// or https:// URL"},
		{"tcp address without port", "gateway:\n  readiness: {tcp: {address: localhost}}\n",
			"f.yaml:2:30: gateway.readiness.tcp.address: must be host:port with a numeric port, got \"localhost\""},
		{"exec probe without command", "gateway:\n  readiness: {exec: {command: []}}\n",
			"f.yaml:2:31: gateway.readiness.exec.command: is required (a list: [program, args...])"},
		{"enabled deferral without idle probe", "restart:\n  defer_until_idle: {enabled: true}\n",
			"f.yaml:2:31: restart.defer_until_idle.enabled: needs an idle probe (restart.defer_until_idle.idle)"},

		// Ranges.
		{"negative integer", "deliveries: {max_retries: -1}\n", "f.yaml:1:27: deliveries.max_retries: must be at least 0, got -1"},
		{"zero workers", "deliveries: {workers: 0}\n", "f.yaml:1:23: deliveries.workers: must be at least 1, got 0"},
		{"no output lines kept", "gateway:\n  output: {keep_lines: 0}\n", "f.yaml:2:24: gateway.output.keep_lines: must be from 1 to 100000, got 0"},
		{"too many output lines kept", "gateway:\n  output:\n    keep_lines: 100001\n",
			"f.yaml:3:17: gateway.output.keep_lines: must be from 1 to 100000, got 100001"},
		{"jitter above 1", "gateway:\n  backoff: {jitter: 1.5}\n", "f.yaml:2:21: gateway.backoff.jitter: must be between 0 and 1, got 1.5"},
		{"jitter NaN", "deliveries: {jitter: .nan}\n", "f.yaml:1:22: deliveries.jitter: must be between 0 and 1, got NaN"},
		{"factor below 1", "gateway:\n  backoff: {factor: 0.5}\n",
			"f.yaml:2:21: gateway.backoff.factor: must be a finite number of at least 1, got 0.5"},
		{"factor infinite", "gateway:\n  backoff: {factor: .inf}\n",
			"f.yaml:2:21: gateway.backoff.factor: must be a finite number of at least 1, got +Inf"},
		{"max below initial", "gateway:\n  backoff: {initial: 10s, max: 5s}\n",
			"f.yaml:2:32: gateway.backoff.max: must be at least initial (10s), got 5s"},
		{"restart delay above 60s", "restart: {delay: 61s}\n", "f.yaml:1:18: restart.delay: must be between 0s and 1m0s, got 1m1s"},
		{"poll below 10ms", "restart:\n  defer_until_idle: {poll: 5ms}\n",
			"f.yaml:2:28: restart.defer_until_idle.poll: must be at least 10ms, got 5ms"},
		{"max_wait below poll", "restart:\n  defer_until_idle: {poll: 1s, max_wait: 500ms}\n",
			"f.yaml:2:42: restart.defer_until_idle.max_wait: must be at least poll (1s), got 500ms"},
		{"unknown stop scope", "gateway:\n  stop: {scope: leader}\n", "f.yaml:2:17: gateway.stop.scope: must be group or main, got \"leader\""},
		{"no-restart exit code 0", "gateway:\n  no_restart_exit_codes: [78, 0]\n",
			"f.yaml:2:31: gateway.no_restart_exit_codes[1]: must be an exit code from 1 to 255, got 0"},
		{"no-restart exit code 256", "gateway:\n  no_restart_exit_codes: [256]\n",
			"f.yaml:2:27: gateway.no_restart_exit_codes[0]: must be an exit code from 1 to 255, got 256"},
		{"negative signal down wait", "restart: {signal_down_wait: -1s}\n", "f.yaml:1:29: restart.signal_down_wait: must not be negative, got -1s"},
		{"unknown restart method", "restart: {method: reboot}\n", "f.yaml:1:19: restart.method: must be respawn or signal, got \"reboot\""},
		{"unknown log level", "log: {level: loud}\n", "f.yaml:1:14: log.level: must be one of debug, info, warn, error, got \"loud\""},
		{"unknown log format", "log: {format: xml}\n", "f.yaml:1:15: log.format: must be console or json, got \"xml\""},
		{"empty schedule", "deliveries: {schedule: []}\n", "f.yaml:1:24: deliveries.schedule: must list at least one delay"},
		{"bad regexp", "deliveries: {permanent_errors: ['(']}\n",
			"f.yaml:1:33: deliveries.permanent_errors[0]: invalid regular expression: error parsing regexp: missing closing ): `(`"},
		{"max_body below max_payload", "deliveries: {max_payload: 4MiB}\n",
			"f.yaml:1:27: deliveries.max_payload: must not exceed control.max_body (2097152 bytes), got 4194304 bytes; raise control.max_body too"},
		{"bad synchronous", "deliveries:\n  store: {sqlite: {synchronous: OFF}}\n",
			"f.yaml:2:33: deliveries.store.sqlite.synchronous: must be FULL or NORMAL, got \"OFF\""},
		{"bad transient code", "deliveries:\n  sinks: {s: {exec: {command: [x], transient_codes: [0, 75]}}}\n",
			"f.yaml:2:54: deliveries.sinks.s.exec.transient_codes[0]: must be an exit code from 1 to 255, got 0"},

		// Heartbeat.
		{"duplicate agent ids", "heartbeat:\n  agents:\n    - id: main\n    - id: main\n",
			"f.yaml:4:11: heartbeat.agents[1].id: duplicate agent id \"main\" (first used at heartbeat.agents[0])"},
		{"agent without id", "heartbeat:\n  agents: [{every: 5m}]\n", "f.yaml:2:12: heartbeat.agents[0].id: is required"},
		{"bad interval", "heartbeat:\n  defaults: {every: 5 minutes}\n",
			"f.yaml:2:21: heartbeat.defaults.every: invalid interval \"5 minutes\" (use 30m, 1h30m or a bare number of minutes; 0 disables)"},
		{"bad active hours", "heartbeat:\n  defaults:\n    active_hours: {start: '24:00', end: '8:00', timezone: Mars/Base}\n",
			"f.yaml:3:27: heartbeat.defaults.active_hours.start: invalid time \"24:00\" (use HH:MM from 00:00 to 23:59)\n" +
				"f.yaml:3:41: heartbeat.defaults.active_hours.end: invalid time \"8:00\" (use HH:MM from 00:00 to 23:59, or 24:00)\n" +
				"f.yaml:3:59: heartbeat.defaults.active_hours.timezone: unknown time zone \"Mars/Base\" (use an IANA name like Europe/Berlin)"},
		{"target with two kinds", "heartbeat:\n  defaults:\n    target: {http: {url: 'http://h/w'}, exec: {command: [x]}}\n",
			"f.yaml:3:47: heartbeat.defaults.target.exec: names two target kinds (http and exec); use exactly one"},
		{"channels inside an account", "heartbeat:\n  defaults:\n    visibility:\n      channels:\n        tg: {accounts: {a: {channels: {x: {}}}}}\n",
			"f.yaml:5:39: heartbeat.defaults.visibility.channels.tg.accounts.a.channels: is not allowed inside an account"},
		{"account without a channel", "heartbeat:\n  agents:\n    - {id: a, channel: tg, account: w}\n    - {id: b, account: w}\n",
			"f.yaml:4:24: heartbeat.agents[1].account: needs a channel (set channel here or in heartbeat.defaults)"},
		{"default account without a channel", "heartbeat:\n  defaults: {account: w}\n",
			"f.yaml:2:23: heartbeat.defaults.account: needs a channel (heartbeat.defaults.channel)"},
		{"default account for an agent without a channel", "heartbeat:\n  defaults: {account: w}\n  agents: [{id: a, channel: tg}, {id: b}]\n",
			"f.yaml:2:23: heartbeat.defaults.account: needs a channel: heartbeat.agents[1] has none (set channel there or in heartbeat.defaults)"},

		// References.
		{"gateway sink needs a base url", "deliveries:\n  sinks: {gw: {gateway: {path: /hook}}}\n",
			"f.yaml:2:25: deliveries.sinks.gw.gateway.base_url: is required: neither gateway.readiness nor gateway.liveness is an http probe to take it from"},
		{"bad sink name", "deliveries:\n  sinks: {'a/b': {exec: {command: [x]}}}\n",
			"f.yaml:2:18: deliveries.sinks.a/b: invalid sink name \"a/b\" (use letters, digits, '.', '_' and '-')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseErr(t, tt.src)
			if got != tt.want {
				t.Errorf("Parse(%q):\n got: %s\nwant: %s", tt.src, got, tt.want)
			}
		})
	}
}

// TestParseCollectsAllErrors: every problem is reported at once, sorted by position, and one
// bad value does not cause follow-up errors.
func TestParseCollectsAllErrors(t *testing.T) {
	src := `log: {level: loud, format: xml}
gateway:
  stop: {signal: NOPE, timeout: 1x}
  readiness: 5
  crash_loop: {failures: -2}
gateway2: {}
`
	want := strings.Join([]string{
		`f.yaml:1:14: log.level: must be one of debug, info, warn, error, got "loud"`,
		`f.yaml:1:28: log.format: must be console or json, got "xml"`,
		`f.yaml:3:18: gateway.stop.signal: unknown signal "NOPE" (use a name like SIGTERM, TERM or a number like 15)`,
		`f.yaml:3:33: gateway.stop.timeout: invalid duration "1x" (use Go syntax like 30s or 1m30s)`,
		`f.yaml:4:14: gateway.readiness: expected a mapping, got "5"`,
		`f.yaml:5:26: gateway.crash_loop.failures: must be at least 1, got -2`,
		`f.yaml:6:1: gateway2: unknown key (did you mean ` + "`gateway`" + `?)`,
	}, "\n")
	if got := parseErr(t, src); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestNotSupportedYet: a setting that asks for a feature this version does not have is
// refused with its key and position, whatever else is wrong with it; an empty one passes.
func TestNotSupportedYet(t *testing.T) {
	const groupMsg = "control.group: not supported yet (the control socket is always 0600, for its owner only); remove the key"
	if got, want := parseErr(t, cmd+"control: {group: schedd}\n"), "f.yaml:2:18: "+groupMsg; got != want {
		t.Errorf("got: %s\nwant: %s", got, want)
	}
	// Empty values ask for nothing.
	mustParse(t, cmd+"control: {group: \"\"}\n")
	// A config built in code is refused the same way, without a position.
	c := Default()
	c.Gateway.Command = []string{"gw"}
	c.Control.Group = "schedd"
	if err := c.Validate(); err == nil || err.Error() != groupMsg {
		t.Errorf("Validate:\n got: %v\nwant: %s", err, groupMsg)
	}
}

// TestPostgresStore: the Postgres store takes its defaults, and its bad values are refused
// at their key without ever quoting the DSN.
func TestPostgresStore(t *testing.T) {
	c := mustParse(t, cmd+"deliveries:\n  store:\n    postgres: {dsn: 'postgres://u:sekrit@db/schedd'}\n")
	p := c.Deliveries.Store.Postgres
	if c.Deliveries.Store.Kind() != "postgres" || p == nil || p.DSN != "postgres://u:sekrit@db/schedd" ||
		p.Lease != Duration(DefaultPostgresLease) || p.MaxConns != DefaultPostgresMaxConns || p.HostID != "" {
		t.Fatalf("store = %+v", c.Deliveries.Store)
	}
	if r := c.Redacted(); r.Deliveries.Store.Postgres.DSN != RedactedValue {
		t.Fatalf("redacted dsn = %q", r.Deliveries.Store.Postgres.DSN)
	}
	c = mustParse(t, cmd+"deliveries: {store: {postgres: {dsn: 'host=db dbname=q', host_id: web-1, lease: 10s, max_conns: 4}}}\n")
	if p := c.Deliveries.Store.Postgres; p.HostID != "web-1" || p.Lease.String() != "10s" || p.MaxConns != 4 {
		t.Fatalf("store = %+v", p)
	}
	for _, tt := range []struct{ name, src, want string }{
		{"no dsn", "deliveries: {store: {postgres: }}\n", "f.yaml:2:32: deliveries.store.postgres.dsn: is required"},
		{"bad url", "deliveries: {store: {postgres: {dsn: 'postgres://u:sekrit@h/%zz'}}}\n",
			"f.yaml:2:38: deliveries.store.postgres.dsn: is not a valid URL (value hidden)"},
		{"not a dsn", "deliveries: {store: {postgres: {dsn: sekrit}}}\n",
			"f.yaml:2:38: deliveries.store.postgres.dsn: must be a postgres:// URL or key=value pairs (value hidden)"},
		{"lease", "deliveries: {store: {postgres: {dsn: 'host=db', lease: 0s}}}\n",
			"f.yaml:2:56: deliveries.store.postgres.lease: must be greater than 0, got 0s"},
		{"max_conns", "deliveries: {store: {postgres: {dsn: 'host=db', max_conns: 0}}}\n",
			"f.yaml:2:60: deliveries.store.postgres.max_conns: must be at least 1, got 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := parseErr(t, cmd+tt.src)
			if !strings.HasPrefix(got, tt.want) || strings.Contains(got, "sekrit") {
				t.Errorf("got: %s\nwant: %s", got, tt.want)
			}
		})
	}
	// Two kinds at once are refused.
	want := "f.yaml:2:44: deliveries.store.postgres: names two store kinds (sqlite and postgres); use exactly one"
	if got := parseErr(t, cmd+"deliveries: {store: {sqlite: {}, postgres: {dsn: 'host=x'}}}\n"); got != want {
		t.Errorf("sqlite beside postgres: %q", got)
	}
}

// TestMetricsListen: the endpoint has no authentication, so an address other hosts can reach
// is refused, at the key's position, unless allow_remote says so; loopback ones pass.
func TestMetricsListen(t *testing.T) {
	const remote = " is not a loopback address and the endpoint has no authentication; " +
		"listen on 127.0.0.1 or [::1], or set metrics.allow_remote: true to serve it to other hosts"
	for _, tt := range []struct {
		name, src, want string
	}{
		{"every interface", cmd + "metrics:\n  listen: ':9477'\n", `f.yaml:3:11: metrics.listen: ":9477"` + remote},
		{"wildcard IP", cmd + "metrics: {listen: 0.0.0.0:9477}\n", `f.yaml:2:19: metrics.listen: "0.0.0.0:9477"` + remote},
		{"host name", cmd + "metrics: {listen: 'metrics.example:9477'}\n", `f.yaml:2:19: metrics.listen: "metrics.example:9477"` + remote},
		{"remote false", cmd + "metrics: {listen: '192.0.2.1:9477', allow_remote: false}\n", `f.yaml:2:19: metrics.listen: "192.0.2.1:9477"` + remote},
		{"not host:port", cmd + "metrics: {listen: 'localhost:http'}\n",
			`f.yaml:2:19: metrics.listen: must be host:port with a numeric port, got "localhost:http"`},
		{"no port", cmd + "metrics: {listen: 127.0.0.1}\n", `f.yaml:2:19: metrics.listen: must be host:port with a numeric port, got "127.0.0.1"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErr(t, tt.src); got != tt.want {
				t.Errorf("Parse(%q):\n got: %s\nwant: %s", tt.src, got, tt.want)
			}
		})
	}
	for _, ok := range []string{
		"metrics: {listen: ''}\n",
		"metrics: {listen: '127.0.0.1:9477'}\n",
		"metrics: {listen: '127.0.0.1:0'}\n",
		"metrics: {listen: '[::1]:9477'}\n",
		"metrics: {listen: 'localhost:9477'}\n",
		"metrics: {listen: '0.0.0.0:9477', allow_remote: true}\n",
		"metrics: {listen: ':9477', allow_remote: true}\n",
	} {
		c := mustParse(t, cmd+ok)
		if c.Metrics.Listen == "" && ok != "metrics: {listen: ''}\n" {
			t.Errorf("%q: listen not read", ok)
		}
	}
}
