package config

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// cronFull sets every cron key and each action kind.
const cronFull = `gateway:
  command: [gw]
heartbeat:
  agents: [{id: main}, {id: ops}]
deliveries:
  sinks: {webhook: {http: {url: "https://example.net/hook"}}}
cron:
  workers: 2
  queue_size: 10
  jobs:
    - name: morning
      schedule: "0 7 * * MON-FRI"
      timezone: Europe/Berlin
      jitter: 2m
      missed: skip
      starting_deadline: 1h
      concurrency: replace
      retry: {max: 2, schedule: [10s, 1m]}
      disable_after: 0
      history_limit: 5
      priority: -3
      timeout: 1m
      enabled: false
      action: {heartbeat_wake: {agent: ops, reason: "cron:morning"}}
    - name: report.daily
      every: 90m
      action:
        exec: {command: [report, --daily], env: {REPORT_TOKEN: sekrit-env}, timeout: 5m}
    - name: ping_1
      at: "2027-03-14T07:30:00+01:00"
      action:
        http: {url: "http://127.0.0.1:1/hook", headers: {Authorization: Bearer sekrit-header}, body: "{}", method: put}
    - name: out
      every: 1s
      action: {deliver: {sink: webhook, data: hello}}
`

func TestCronParse(t *testing.T) {
	c := mustParse(t, cronFull)
	cr := c.Cron
	if cr.Workers != 2 || cr.QueueSize != 10 || len(cr.Jobs) != 4 {
		t.Fatalf("cron %+v", cr)
	}
	m := cr.Jobs[0]
	if m.Schedule != "0 7 * * MON-FRI" || m.Timezone != "Europe/Berlin" || m.Jitter.D() != 2*time.Minute ||
		m.Missed != "skip" || m.StartingDeadline.D() != time.Hour || m.Concurrency != "replace" ||
		m.Retry.Max != 2 || len(m.Retry.Schedule) != 2 || m.Retry.Schedule[1].D() != time.Minute ||
		m.DisableAfter != 0 || m.HistoryLimit != 5 || m.Priority != -3 || m.Timeout.D() != time.Minute ||
		*m.Enabled || m.Action.Kind() != "heartbeat_wake" || m.Action.HeartbeatWake.Agent != "ops" {
		t.Errorf("morning %+v", m)
	}
	// Defaults fill what a job leaves out.
	r := cr.Jobs[1]
	if r.Every.D() != 90*time.Minute || r.Missed != "run_once" || r.Concurrency != "forbid" || r.Retry.Max != 3 ||
		!equal(r.Retry.Schedule, DefaultCronRetrySchedule()) || r.DisableAfter != 10 || r.HistoryLimit != 100 ||
		r.Timeout.D() != 10*time.Minute || !*r.Enabled || r.Action.Exec.Env["REPORT_TOKEN"] != "sekrit-env" {
		t.Errorf("report.daily %+v", r)
	}
	if h := cr.Jobs[2].Action.HTTP; h.Method != "PUT" || h.Body != "{}" || h.Timeout != 0 {
		t.Errorf("http action %+v, want method PUT (upper case)", h)
	}
	c = mustParse(t, cmd+"cron:\n  jobs:\n    - {name: a, every: 1m, action: {http: {url: 'http://h/x'}}}\n"+
		"    - {name: b, every: 1m, action: {http: {url: 'http://h/x', body: b}}}\n")
	if a, b := c.Cron.Jobs[0].Action.HTTP.Method, c.Cron.Jobs[1].Action.HTTP.Method; a != "GET" || b != "POST" {
		t.Errorf("default methods %s and %s, want GET without a body and POST with one", a, b)
	}
	d := Default()
	if d.Cron.Workers != 4 || d.Cron.QueueSize != 1000 || d.Cron.Jobs != nil {
		t.Errorf("default cron %+v", d.Cron)
	}
}

// TestCronSchedules: the three kinds become the schedules they say; every counts from the
// Unix epoch, so its slots are the same across restarts.
func TestCronSchedules(t *testing.T) {
	c := mustParse(t, cronFull)
	from := time.Date(2027, 3, 12, 8, 0, 0, 0, time.UTC) // a Friday
	for _, tc := range []struct {
		job  int
		want time.Time
	}{
		{0, time.Date(2027, 3, 15, 6, 0, 0, 0, time.UTC)},  // Monday 07:00 in Berlin
		{1, time.Unix((from.Unix()/5400+1)*5400, 0).UTC()}, // a multiple of 90m since the epoch
		{2, time.Date(2027, 3, 14, 6, 30, 0, 0, time.UTC)},
	} {
		sc, err := CronSchedule(c.Cron.Jobs[tc.job])
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := sc.Next(from); !ok || !got.Equal(tc.want) {
			t.Errorf("%s: Next(%v) = %v, %v; want %v", c.Cron.Jobs[tc.job].Name, from, got, ok, tc.want)
		}
	}
	if loc, err := CronLocation(""); err != nil || loc != time.Local {
		t.Errorf("no timezone: %v, %v; want the host's", loc, err)
	}
}

// TestCronErrors pins the text and the position of every problem of the cron section. A bad
// cron expression points at the column of the bad field inside it, written plain, quoted
// or in a flow mapping.
func TestCronErrors(t *testing.T) {
	job := func(lines ...string) string {
		return cmd + "cron:\n  jobs:\n    - name: a\n" + "      " + strings.Join(lines, "\n      ") + "\n"
	}
	exec := "action: {exec: {command: [x]}}"
	for _, tc := range []struct{ name, src, want string }{
		{"plain expression", job("schedule: 0 7 * * MOX", exec),
			`f.yaml:5:25: cron.jobs[0].schedule: invalid cron expression: day-of-week "MOX": unknown name, want SUN-SAT or a number (field 5)`},
		{"double-quoted expression", job(`schedule: "0 25 * * *"`, exec),
			`f.yaml:5:20: cron.jobs[0].schedule: invalid cron expression: hour "25": out of range 0-23 (field 2)`},
		{"expression in a flow mapping", cmd + "cron: {jobs: [{name: a, schedule: '0 0 L-2 * *', " + exec + "}]}\n",
			`f.yaml:2:40: cron.jobs[0].schedule: invalid cron expression: day-of-month "L-2": L stands alone (the last day) or as LW (the last weekday) (field 3)`},
		{"expression as a block scalar", job("schedule: >-\n        61 * * * *", exec),
			`f.yaml:5:17: cron.jobs[0].schedule: invalid cron expression: minute "61": out of range 0-59 (field 1)`},
		{"too few fields", job("schedule: every day", exec),
			`f.yaml:5:17: cron.jobs[0].schedule: invalid cron expression "every day": 2 fields, want 5 (minute hour day-of-month month day-of-week), 6 (second first) or 7 (second first, year last)`},
		{"empty expression", job(`schedule: ""`, exec), `f.yaml:5:17: cron.jobs[0].schedule: invalid cron expression "": empty`},
		{"unknown zone", job("schedule: 0 7 * * *", "timezone: Europe/Berln", exec),
			`f.yaml:6:17: cron.jobs[0].timezone: unknown time zone "Europe/Berln" (use an IANA name like Europe/Berlin, or leave it out for the host's)`},
		{"Local is no zone", job("every: 1h", "timezone: Local", exec),
			`f.yaml:6:17: cron.jobs[0].timezone: unknown time zone "Local" (use an IANA name like Europe/Berlin, or leave it out for the host's)`},
		{"two schedule kinds", job("schedule: 0 7 * * *", "every: 1h", exec),
			`f.yaml:6:14: cron.jobs[0].every: names two schedule kinds (schedule and every); use exactly one`},
		{"no schedule kind", job(exec), `f.yaml:4:7: cron.jobs[0]: names no schedule kind (use one of: schedule, every, at)`},
		{"every too short", job("every: 500ms", exec), `f.yaml:5:14: cron.jobs[0].every: must be at least 1s, got 500ms`},
		{"every zero", job("every: 0", exec), `f.yaml:5:14: cron.jobs[0].every: must be at least 1s, got 0s`},
		{"at without an offset", job("at: 2027-03-14T07:30:00", exec),
			`f.yaml:5:11: cron.jobs[0].at: invalid time "2027-03-14T07:30:00" (use RFC 3339 with an offset, like 2027-03-14T07:30:00+01:00)`},
		{"bad policies", job("every: 1h", "missed: all", "concurrency: queue", exec),
			"f.yaml:6:15: cron.jobs[0].missed: must be run_once or skip, got \"all\"\n" +
				`f.yaml:7:20: cron.jobs[0].concurrency: must be forbid, replace or allow, got "queue"`},
		{"bounds", job("every: 1h", "history_limit: 0", "priority: 2000000", "disable_after: -1", "retry: {max: 2, schedule: []}", "timeout: 0", exec),
			"f.yaml:6:22: cron.jobs[0].history_limit: must be at least 1, got 0\n" +
				"f.yaml:7:17: cron.jobs[0].priority: must be between -1048576 and 1048576, got 2000000\n" +
				"f.yaml:8:22: cron.jobs[0].disable_after: must be at least 0, got -1\n" +
				"f.yaml:9:33: cron.jobs[0].retry.schedule: must list at least one delay (or set retry.max to 0)\n" +
				"f.yaml:10:16: cron.jobs[0].timeout: must be greater than 0, got 0s"},
		{"duplicate and bad names", cmd + "cron:\n  jobs:\n    - {name: a, every: 1h, " + exec + "}\n    - {name: a, every: 1h, " + exec + "}\n    - {name: 'a b', every: 1h, " + exec + "}\n",
			"f.yaml:5:14: cron.jobs[1].name: duplicate job name \"a\" (first used at cron.jobs[0])\n" +
				`f.yaml:6:14: cron.jobs[2].name: invalid job name "a b" (use letters, digits, '.', '_' and '-')`},
		{"no action", job("every: 1h"), `f.yaml:4:7: cron.jobs[0].action: names no action (use one of: heartbeat_wake, exec, http, deliver)`},
		{"two actions", job("every: 1h", "action: {exec: {command: [x]}, deliver: {sink: s}}"),
			"f.yaml:6:47: cron.jobs[0].action.deliver: names two actions (exec and deliver); use exactly one\n" +
				`f.yaml:6:54: cron.jobs[0].action.deliver.sink: unknown sink "s" (configured in deliveries.sinks: none)`},
		{"unknown agent", job("every: 1h", "action: {heartbeat_wake: {agent: ops}}"),
			`f.yaml:6:40: cron.jobs[0].action.heartbeat_wake.agent: unknown heartbeat agent "ops" (configured: main)`},
		{"reason with a newline", job("every: 1h", `action: {heartbeat_wake: {reason: "a\nb"}}`),
			`f.yaml:6:41: cron.jobs[0].action.heartbeat_wake.reason: must not contain control characters`},
		{"no sink", job("every: 1h", "action: {deliver: {data: x}}"),
			`f.yaml:6:25: cron.jobs[0].action.deliver.sink: is required (a key of deliveries.sinks: none)`},
		{"exec without a command, secret env", job("every: 1h", `action: {exec: {env: {"A=B": "sekrit\u0000"}}}`),
			"f.yaml:6:22: cron.jobs[0].action.exec.command: is required (a list: [program, args...])\n" +
				"f.yaml:6:36: cron.jobs[0].action.exec.env.A=B: invalid environment variable name\n" +
				`f.yaml:6:36: cron.jobs[0].action.exec.env.A=B: invalid value (value hidden): contains a NUL byte`},
		{"http action", job("every: 1h", `action: {http: {url: 'ftp://h', method: TRACE, headers: {X: "a\nb"}}}`),
			"f.yaml:6:28: cron.jobs[0].action.http.url: must be an absolute http:// or https:// URL\n" +
				"f.yaml:6:47: cron.jobs[0].action.http.method: unknown HTTP method \"TRACE\" (use one of: DELETE, GET, PATCH, POST, PUT)\n" +
				`f.yaml:6:67: cron.jobs[0].action.http.headers.X: invalid header value (value hidden): contains a line break or NUL`},
		{"unknown key", job("every: 1h", "schedul: x", exec), "f.yaml:6:7: cron.jobs[0].schedul: unknown key (did you mean `schedule`?)"},
		{"workers", cmd + "cron: {workers: 0, queue_size: -1}\n",
			"f.yaml:2:17: cron.workers: must be at least 1, got 0\nf.yaml:2:32: cron.queue_size: must be at least 1, got -1"},
		{"cron as a list", cmd + "cron: [{name: a}]\n", "f.yaml:2:7: cron: expected a mapping, got a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseErr(t, tc.src); got != tc.want {
				t.Errorf("Parse:\n%s\n got: %s\nwant: %s", tc.src, got, tc.want)
			}
		})
	}
	// The default agent main may be woken while heartbeat.agents is empty, and an agent
	// listed there once it is not.
	mustParse(t, job("every: 1h", "action: {heartbeat_wake: {agent: main}}"))
	mustParse(t, "heartbeat: {agents: [{id: ops}]}\n"+job("every: 1h", "action: {heartbeat_wake: {agent: ops}}"))
	if got := parseErr(t, "heartbeat: {agents: [{id: ops}]}\n"+job("every: 1h", "action: {heartbeat_wake: {agent: main}}")); !strings.Contains(got, `unknown heartbeat agent "main" (configured: ops)`) {
		t.Errorf("main with agents listed: %s", got)
	}
}

// TestCronSecrets: exec env values and http header values never reach a printed config.
func TestCronSecrets(t *testing.T) {
	out, err := yaml.Marshal(mustParse(t, cronFull).Redacted())
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); strings.Contains(s, "sekrit") || strings.Count(s, RedactedValue) != 2 {
		t.Errorf("redacted config shows a secret, or hides %d values instead of 2:\n%s", strings.Count(s, RedactedValue), s)
	}
}

// TestCronRoundTrip: a parsed cron section reads back the same from its own YAML.
func TestCronRoundTrip(t *testing.T) {
	c := mustParse(t, cronFull)
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffConfigs(c, mustParse(t, string(out))); diff != "" {
		t.Errorf("round trip changed:\n%s\n%s", diff, out)
	}
}
