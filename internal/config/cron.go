package config

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/schedd/schedd/internal/cron/schedule"
)

// Cron configures the cron jobs and the job queue their runs go through.
type Cron struct {
	// Workers is how many tasks run at once. Default 4, at least 1; applies when schedd
	// starts.
	Workers int `yaml:"workers"`
	// QueueSize bounds the due tasks waiting for a worker; a task that finds it full is
	// skipped (queue_full). Default 1000, at least 1; applies when schedd starts.
	QueueSize int `yaml:"queue_size"`
	// Jobs are the cron jobs; none by default.
	Jobs []CronJob `yaml:"jobs"`
}

// CronJob runs Action on a schedule: exactly one of Schedule, Every and At.
type CronJob struct {
	// Name is unique: letters, digits, '.', '_', '-'. History and state follow it.
	Name string `yaml:"name"`
	// Schedule is a cron expression (OCPS 1.4: 5 fields, or 6 with seconds; L, W, #,
	// @daily...) in Timezone.
	Schedule string `yaml:"schedule,omitempty"`
	// Every is a fixed interval, at least 1s, anchored at the Unix epoch (no drift across
	// restarts).
	Every Duration `yaml:"every,omitempty"`
	// At is a one-shot instant in RFC 3339.
	At string `yaml:"at,omitempty"`
	// Timezone is the IANA zone of Schedule (and of the times shown); "" = the host's.
	Timezone string `yaml:"timezone"`
	// Jitter delays each run by a fixed offset in [0, Jitter) derived from the name.
	Jitter Duration `yaml:"jitter"`
	// Missed is what slots missed while schedd was down become: run_once (default: one
	// catch-up run) or skip.
	Missed string `yaml:"missed"`
	// StartingDeadline skips a run that could not start this long after it was due; 0 =
	// no limit.
	StartingDeadline Duration `yaml:"starting_deadline"`
	// Concurrency is what a run due while the previous one is active does: forbid (default:
	// skipped, overlap), replace (the old one is cancelled) or allow.
	Concurrency string `yaml:"concurrency"`
	// Retry is the retry policy of runs that fail transiently.
	Retry CronRetry `yaml:"retry"`
	// DisableAfter disables the job after this many failures in a row. Default 10; 0 = never.
	DisableAfter int `yaml:"disable_after"`
	// HistoryLimit is how many ended tasks of the job are kept. Default 100, at least 1.
	HistoryLimit int `yaml:"history_limit"`
	// Priority orders the job queue: lower runs first. Default 0.
	Priority int `yaml:"priority"`
	// Timeout stops a run that takes longer (timed_out). Default 10m, > 0.
	Timeout Duration `yaml:"timeout"`
	// Enabled false configures the job switched off (until `schedd cron enable`). Default
	// true.
	Enabled *bool `yaml:"enabled"`
	// Action is what a run does.
	Action CronAction `yaml:"action"`
}

// CronRetry retries a run that failed transiently up to Max times, waiting Schedule[k-1]
// after the job's k-th failure in a row (the last entry repeats).
type CronRetry struct {
	Max      int        `yaml:"max"`      // default 3; 0 = no retries
	Schedule []Duration `yaml:"schedule"` // default [30s 1m 5m 15m 1h]
}

// CronAction names exactly one action.
type CronAction struct {
	HeartbeatWake *HeartbeatWakeAction `yaml:"heartbeat_wake,omitempty"`
	Exec          *ExecAction          `yaml:"exec,omitempty"`
	HTTP          *HTTPAction          `yaml:"http,omitempty"`
	Deliver       *DeliverAction       `yaml:"deliver,omitempty"`
}

// Kind reports "heartbeat_wake", "exec", "http", "deliver" or "" (unset).
func (a CronAction) Kind() string { return unionKind(a) }

// HeartbeatWakeAction asks the heartbeat dispatcher for a wake (coalesced like any wake).
type HeartbeatWakeAction struct {
	// Agent is the agent id; "" = every agent. It must be in heartbeat.agents, or be the
	// default agent "main" when that list is empty.
	Agent string `yaml:"agent"`
	// Reason is the wake reason; "" = "cron:<job name>".
	Reason string `yaml:"reason"`
}

// ExecAction runs a command in its own process group.
type ExecAction struct {
	Command []string          `yaml:"command"`             // required
	Env     map[string]string `yaml:"env" schedd:"secret"` // added to schedd's; values are secrets
	Timeout Duration          `yaml:"timeout"`             // 0 = the job's timeout
}

// HTTPAction makes one request; 2xx succeeds.
type HTTPAction struct {
	URL     string            `yaml:"url" schedd:"url"`        // absolute http(s) URL, required
	Method  string            `yaml:"method"`                  // default POST with a body, GET without
	Headers map[string]string `yaml:"headers" schedd:"secret"` // secret values
	Body    string            `yaml:"body"`
	Timeout Duration          `yaml:"timeout"` // 0 = the job's timeout
}

// DeliverAction stores a durable delivery for a sink: the run succeeds once it is stored.
type DeliverAction struct {
	Sink string `yaml:"sink"` // a key of deliveries.sinks, required
	Data string `yaml:"data"` // the payload
}

// Defaults of the cron section, as the cron package has them.
const (
	DefaultCronWorkers      = 4
	DefaultCronQueueSize    = 1000
	DefaultCronMissed       = "run_once"
	DefaultCronConcurrency  = "forbid"
	DefaultCronRetryMax     = 3
	DefaultCronDisableAfter = 10
	DefaultCronHistoryLimit = 100
	DefaultCronTimeout      = 10 * time.Minute
	// DefaultHeartbeatAgent is the agent heartbeats run when heartbeat.agents is empty.
	DefaultHeartbeatAgent = "main"
	// MinCronEvery is the shortest `every` interval.
	MinCronEvery = time.Second
	// MaxCronPriority bounds a job's priority either way.
	MaxCronPriority = 1 << 20
	maxCronName     = 128
	maxWakeReason   = 200
)

// DefaultCronRetrySchedule is the wait after a job's 1st, 2nd, ... failure in a row.
func DefaultCronRetrySchedule() []Duration {
	return []Duration{Duration(30 * time.Second), Duration(time.Minute), Duration(5 * time.Minute),
		Duration(15 * time.Minute), Duration(time.Hour)}
}

// CronLocation is the zone of a job's timezone: the host's for "".
func CronLocation(tz string) (*time.Location, error) {
	if tz == "" {
		return time.Local, nil
	}
	if tz == "Local" {
		return nil, errors.New(`"Local" is not an IANA zone name`)
	}
	return time.LoadLocation(tz)
}

// CronSchedule is the schedule of j (which has passed the checks): its cron expression in
// its zone, its interval from the Unix epoch, or its instant.
func CronSchedule(j CronJob) (schedule.Schedule, error) {
	loc, err := CronLocation(j.Timezone)
	if err != nil {
		return nil, err
	}
	switch {
	case j.Schedule != "":
		return schedule.Parse(j.Schedule, loc)
	case j.Every > 0:
		return schedule.Every(j.Every.D(), time.Unix(0, 0)), nil
	case j.At != "":
		t, err := time.Parse(time.RFC3339, j.At)
		if err != nil {
			return nil, err
		}
		return schedule.At(t), nil
	}
	return nil, errors.New("no schedule")
}

func (c *Config) cronDefaults() {
	cr := &c.Cron
	c.defInt("cron.workers", &cr.Workers, DefaultCronWorkers)
	c.defInt("cron.queue_size", &cr.QueueSize, DefaultCronQueueSize)
	for i := range cr.Jobs {
		j, p := &cr.Jobs[i], index("cron.jobs", i)
		c.defStr(p+".missed", &j.Missed, DefaultCronMissed)
		c.defStr(p+".concurrency", &j.Concurrency, DefaultCronConcurrency)
		c.defInt(p+".retry.max", &j.Retry.Max, DefaultCronRetryMax)
		if !c.has(p + ".retry.schedule") {
			j.Retry.Schedule = DefaultCronRetrySchedule()
		}
		c.defInt(p+".disable_after", &j.DisableAfter, DefaultCronDisableAfter)
		c.defInt(p+".history_limit", &j.HistoryLimit, DefaultCronHistoryLimit)
		c.defDur(p+".timeout", &j.Timeout, DefaultCronTimeout)
		c.defBool(p+".enabled", &j.Enabled, true)
		if h := j.Action.HTTP; h != nil {
			method := "GET"
			if h.Body != "" {
				method = "POST"
			}
			c.defStr(p+".action.http.method", &h.Method, method)
		}
	}
}

var (
	cronMissed      = []string{"run_once", "skip"}
	cronConcurrency = []string{"forbid", "replace", "allow"}
	cronActionKinds = []string{"heartbeat_wake", "exec", "http", "deliver"}
)

func (k *checker) cron() {
	cr := &k.c.Cron
	k.atLeast("cron.workers", cr.Workers, 1)
	k.atLeast("cron.queue_size", cr.QueueSize, 1)
	first := map[string]string{}
	for i := range cr.Jobs {
		j, p := &cr.Jobs[i], index("cron.jobs", i)
		k.name(p+".name", "job name", j.Name)
		switch prev, dup := first[j.Name]; {
		case len(j.Name) > maxCronName:
			k.errf(p+".name", "is longer than %d bytes", maxCronName)
		case dup && j.Name != "":
			k.errf(p+".name", "duplicate job name %s (first used at %s)", quote(j.Name), prev)
		default:
			first[j.Name] = p
		}
		k.cronSchedule(p, j)
		k.nonNegative(p+".jitter", j.Jitter)
		if !slices.Contains(cronMissed, j.Missed) {
			k.errf(p+".missed", "must be run_once or skip, got %s", quote(j.Missed))
		}
		k.nonNegative(p+".starting_deadline", j.StartingDeadline)
		if !slices.Contains(cronConcurrency, j.Concurrency) {
			k.errf(p+".concurrency", "must be forbid, replace or allow, got %s", quote(j.Concurrency))
		}
		k.atLeast(p+".retry.max", j.Retry.Max, 0)
		if j.Retry.Max > 0 && len(j.Retry.Schedule) == 0 {
			k.errf(p+".retry.schedule", "must list at least one delay (or set retry.max to 0)")
		}
		for n, d := range j.Retry.Schedule {
			k.nonNegative(index(p+".retry.schedule", n), d)
		}
		k.atLeast(p+".disable_after", j.DisableAfter, 0)
		k.atLeast(p+".history_limit", j.HistoryLimit, 1)
		if j.Priority > MaxCronPriority || j.Priority < -MaxCronPriority {
			k.errf(p+".priority", "must be between %d and %d, got %d", -MaxCronPriority, MaxCronPriority, j.Priority)
		}
		k.positive(p+".timeout", j.Timeout)
		k.cronAction(p+".action", &j.Action)
	}
}

// cronSchedule checks that j names exactly one schedule kind and that it is valid. A bad
// cron expression is reported at the column of the offending field inside it.
func (k *checker) cronSchedule(p string, j *CronJob) {
	kinds := set("schedule", j.Schedule != "" || k.c.has(p+".schedule"), "every", j.Every != 0 || k.c.has(p+".every"),
		"at", j.At != "" || k.c.has(p+".at"))
	if len(kinds) != 1 {
		k.kinds(p, "schedule kind", kinds, []string{"schedule", "every", "at"})
	}
	loc, err := CronLocation(j.Timezone)
	if err != nil {
		k.errf(p+".timezone", "unknown time zone %s (use an IANA name like Europe/Berlin, or leave it out for the host's)", quote(j.Timezone))
		loc = time.UTC
	}
	switch {
	case len(kinds) == 0:
	case kinds[0] == "schedule":
		_, err := schedule.Parse(j.Schedule, loc)
		pe, ok := errors.AsType[*schedule.ParseError](err)
		switch {
		case ok && pe.Field != "":
			k.errAtText(p+".schedule", j.Schedule, pe.Col-1, "invalid cron expression: %s %s: %s (field %d)", pe.Field, quote(pe.Text), pe.Msg, pe.Index)
		case ok:
			k.errf(p+".schedule", "invalid cron expression %s: %s", quote(pe.Text), pe.Msg)
		case err != nil:
			k.errf(p+".schedule", "invalid cron expression: %v", err)
		}
	case kinds[0] == "every":
		if j.Every.D() < MinCronEvery {
			k.errf(p+".every", "must be at least %s, got %s", Duration(MinCronEvery), j.Every)
		}
	case kinds[0] == "at":
		if _, err := time.Parse(time.RFC3339, j.At); err != nil {
			k.errf(p+".at", "invalid time %s (use RFC 3339 with an offset, like 2027-03-14T07:30:00+01:00)", quote(j.At))
		}
	}
}

// errAtText reports a problem at byte offset off of text, the string value at path: the
// column points into the value when the file writes it on one line, plain or quoted.
func (k *checker) errAtText(path, text string, off int, format string, args ...any) {
	n := len(k.errs)
	k.errf(path, format, args...)
	at, ok := k.c.pos[path]
	if len(k.errs) == n || !ok || at.text < 0 || off < 0 || off > len(text) {
		return
	}
	k.errs[n].Column = at.col + at.text + utf8.RuneCountInString(text[:off])
}

func (k *checker) cronAction(p string, a *CronAction) {
	if kinds := setKinds(*a); len(kinds) != 1 {
		k.kinds(p, "action", kinds, cronActionKinds)
	}
	if w := a.HeartbeatWake; w != nil {
		k.wakeAgent(p+".heartbeat_wake.agent", w.Agent)
		switch r := w.Reason; {
		case len(r) > maxWakeReason:
			k.errf(p+".heartbeat_wake.reason", "must be at most %d bytes, got %d", maxWakeReason, len(r))
		case strings.ContainsFunc(r, unicode.IsControl):
			k.errf(p+".heartbeat_wake.reason", "must not contain control characters")
		}
	}
	if e := a.Exec; e != nil {
		k.command(p+".exec.command", e.Command)
		k.env(p+".exec.env", e.Env)
		k.nonNegative(p+".exec.timeout", e.Timeout)
	}
	if h := a.HTTP; h != nil {
		k.url(p+".http.url", h.URL, true)
		k.method(p+".http.method", h.Method)
		k.headers(p+".http.headers", h.Headers)
		k.nonNegative(p+".http.timeout", h.Timeout)
	}
	if d := a.Deliver; d != nil {
		sinks := slices.Sorted(maps.Keys(k.c.Deliveries.Sinks))
		switch {
		case d.Sink == "":
			k.errf(p+".deliver.sink", "is required (a key of deliveries.sinks: %s)", listOrNone(sinks))
		case !slices.Contains(sinks, d.Sink):
			k.errf(p+".deliver.sink", "unknown sink %s (configured in deliveries.sinks: %s)", quote(d.Sink), listOrNone(sinks))
		}
	}
}

// wakeAgent checks that a heartbeat_wake agent is one the heartbeats run.
func (k *checker) wakeAgent(path, id string) {
	if id == "" {
		return
	}
	var ids []string
	for _, a := range k.c.Heartbeat.Agents {
		ids = append(ids, a.ID)
	}
	if len(ids) == 0 {
		ids = []string{DefaultHeartbeatAgent}
	}
	if !slices.Contains(ids, id) {
		k.errf(path, "unknown heartbeat agent %s (configured: %s)", quote(id), strings.Join(ids, ", "))
	}
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// cronNormalize stores the cron section canonically.
func (c *Config) cronNormalize() {
	for i := range c.Cron.Jobs {
		if h := c.Cron.Jobs[i].Action.HTTP; h != nil {
			h.Method = strings.ToUpper(h.Method)
		}
	}
}
