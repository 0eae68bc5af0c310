package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schedd/schedd/internal/heartbeat"
	"github.com/schedd/schedd/internal/platform"
)

// Validate checks the whole configuration: every value's range and form, references between
// sections (gateway sinks and the gateway's probes, cron actions and the heartbeat agents and
// sinks they name), that no setting asks for a feature this
// version does not have (see notYet), and what is needed to run, such as gateway.command (cmd
// may fill Command from `schedd run -- CMD` before calling it). Problems about values that
// came from a file carry their file:line:column. It returns Errors or nil.
func (c *Config) Validate() error {
	k := &checker{c: c}
	k.all()
	if len(c.Gateway.Command) == 0 {
		k.errf("gateway.command", "is required: set it in the config file or pass the command after `schedd run --`")
	}
	if len(k.errs) > 0 {
		return k.errs.sorted()
	}
	return nil
}

// checker collects the problems of a typed Config.
type checker struct {
	c    *Config
	bad  map[string]bool // paths that failed to decode: their problems are already reported
	errs Errors
}

func parent(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

// posOf is the position of path's value, or of its nearest ancestor that has one.
func (c *Config) posOf(path string) (int, int) {
	for p := path; p != ""; p = parent(p) {
		if at, ok := c.pos[p]; ok {
			return at.line, at.col
		}
	}
	return 0, 0
}

func (k *checker) errf(path, format string, args ...any) {
	for p := path; p != ""; p = parent(p) {
		if k.bad[p] {
			return
		}
	}
	line, col := k.c.posOf(path)
	k.errs = append(k.errs, &Error{File: k.c.Path, Line: line, Column: col, Field: path, Msg: fmt.Sprintf(format, args...)})
}

func (k *checker) all() {
	k.gateway()
	k.restart()
	k.sockets()
	k.heartbeat()
	k.deliveries()
	k.cron()
	k.control()
	k.metrics()
	k.notYet()
	k.ranges() // last: a value whose context already made it wrong is not reported twice
}

// notYet are the settings of the schema that no part of schedd reads yet. Their types stay
// for the features to come; until then a file that sets one is refused, never ignored. An
// empty value (`cron: []`, `listen: ""`) asks for nothing and passes.
var notYet = []struct {
	path     string
	set      func(*Config) bool
	why, fix string
}{
	{"control.group", func(c *Config) bool { return c.Control.Group != "" },
		"the control socket is always 0600, for its owner only", "remove the key"},
}

func (k *checker) notYet() {
	for _, n := range notYet {
		if n.set(k.c) {
			k.errf(n.path, "not supported yet (%s); %s", n.why, n.fix)
		}
	}
}

// postgres checks the Postgres store. The DSN is a secret: its problems never quote it.
func (k *checker) postgres(s *PostgresStore) {
	const p = "deliveries.store.postgres"
	switch {
	case s.DSN == "":
		k.errf(p+".dsn", "is required (a connection string such as \"host=db user=schedd dbname=schedd\" or a postgres:// URL)")
	case strings.HasPrefix(s.DSN, "postgres://") || strings.HasPrefix(s.DSN, "postgresql://"):
		if _, err := url.Parse(s.DSN); err != nil {
			k.errf(p+".dsn", "is not a valid URL (value hidden)")
		}
	case !strings.Contains(s.DSN, "="):
		k.errf(p+".dsn", "must be a postgres:// URL or key=value pairs (value hidden)")
	}
	if strings.ContainsAny(s.HostID, "\x00\r\n") {
		k.errf(p+".host_id", "must not contain control characters")
	}
	k.positive(p+".lease", s.Lease)
	k.atLeast(p+".max_conns", s.MaxConns, 1)
}

// Value checks.

func (k *checker) nonNegative(path string, d Duration) {
	if d < 0 {
		k.errf(path, "must not be negative, got %s", d)
	}
}

func (k *checker) positive(path string, d Duration) {
	if d <= 0 {
		k.errf(path, "must be greater than 0, got %s", d)
	}
}

func (k *checker) atLeast(path string, n, lo int) {
	if n < lo {
		k.errf(path, "must be at least %d, got %d", lo, n)
	}
}

func (k *checker) fraction(path string, f float64) {
	if !(f >= 0 && f <= 1) {
		k.errf(path, "must be between 0 and 1, got %v", f)
	}
}

func (k *checker) signal(path, s string) {
	if _, err := platform.CanonicalSignal(s); err != nil {
		k.errf(path, "unknown signal %s (use a name like SIGTERM, TERM or a number like 15)", quote(s))
	}
}

// command checks an argv: a program name that is not blank, and no NUL byte, which no
// process can be started with (each start would fail the same way, for ever).
func (k *checker) command(path string, argv []string) {
	if len(argv) == 0 {
		k.errf(path, "is required (a list: [program, args...])")
		return
	}
	if strings.TrimSpace(argv[0]) == "" {
		k.errf(index(path, 0), "the program must not be empty")
	}
	for i, a := range argv {
		if strings.ContainsRune(a, 0) {
			k.errf(index(path, i), "must not contain a NUL byte")
		}
	}
}

// env checks environment variable names and values; values are secrets and never echoed.
func (k *checker) env(path string, env map[string]string) {
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			k.errf(join(path, name), "invalid environment variable name")
		}
		if strings.ContainsRune(env[name], 0) {
			k.errf(join(path, name), "invalid value (value hidden): contains a NUL byte")
		}
	}
}

// url checks an absolute http(s) URL. The value is never echoed: it may hold credentials.
func (k *checker) url(path, s string, required bool) {
	if s == "" {
		if required {
			k.errf(path, "is required")
		}
		return
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		k.errf(path, "must be an absolute http:// or https:// URL")
	}
}

var httpMethods = []string{"DELETE", "GET", "PATCH", "POST", "PUT"}

func (k *checker) method(path, m string) {
	if !slices.Contains(httpMethods, strings.ToUpper(m)) {
		k.errf(path, "unknown HTTP method %s (use one of: %s)", quote(m), strings.Join(httpMethods, ", "))
	}
}

// headers checks names and values; values are secrets and never echoed.
func (k *checker) headers(path string, h map[string]string) {
	for _, name := range slices.Sorted(maps.Keys(h)) {
		if !isToken(name) {
			k.errf(join(path, name), "invalid header name")
		}
		if strings.ContainsAny(h[name], "\r\n\x00") {
			k.errf(join(path, name), "invalid header value (value hidden): contains a line break or NUL")
		}
	}
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		ok := r < 0x7f && (r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' ||
			strings.ContainsRune("!#$%&'*+-.^_`|~", r))
		if !ok {
			return false
		}
	}
	return true
}

// jsonPointer checks RFC 6901 syntax: "" or "/"-separated tokens with ~0 and ~1 escapes.
func (k *checker) jsonPointer(path, p string) {
	if p == "" {
		return
	}
	ok := strings.HasPrefix(p, "/")
	for i := 0; ok && i < len(p); i++ {
		if p[i] == '~' {
			ok = i+1 < len(p) && (p[i+1] == '0' || p[i+1] == '1')
		}
	}
	if !ok {
		k.errf(path, "invalid JSON pointer %s (like /status/ready; ~0 and ~1 escape ~ and /)", quote(p))
	}
}

func (k *checker) timezone(path, tz string) {
	if tz == "" {
		return
	}
	if _, err := time.LoadLocation(tz); err != nil || tz == "Local" {
		k.errf(path, "unknown time zone %s (use an IANA name like Europe/Berlin)", quote(tz))
	}
}

func (k *checker) hostPort(path, s string) {
	_, port, err := net.SplitHostPort(s)
	if err == nil {
		var n int
		n, err = strconv.Atoi(port)
		if err == nil && (n < 0 || n > 65535) {
			err = strconv.ErrRange
		}
	}
	if err != nil {
		k.errf(path, "must be host:port with a numeric port, got %s", quote(s))
	}
}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]+$`) })

func (k *checker) name(path, what, s string) {
	if s == "" {
		k.errf(path, "is required")
	} else if !nameRE().MatchString(s) {
		k.errf(path, "invalid %s %s (use letters, digits, '.', '_' and '-')", what, quote(s))
	}
}

// kinds reports the problems of a union with the given set kinds (in declaration order).
func (k *checker) kinds(path, what string, set, allowed []string) {
	switch {
	case len(set) == 0:
		k.errf(path, "names no %s (use one of: %s)", what, strings.Join(allowed, ", "))
	case len(set) > 1:
		k.errf(join(path, set[1]), "names two %ss (%s and %s); use exactly one", what, set[0], set[1])
	}
	for _, s := range set {
		if !slices.Contains(allowed, s) {
			k.errf(join(path, s), "is not allowed here (use one of: %s)", strings.Join(allowed, ", "))
		}
	}
}

// set lists the names whose flag is true, in order.
func set(pairs ...any) []string {
	var out []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1].(bool) {
			out = append(out, pairs[i].(string))
		}
	}
	return out
}

// exitCodes checks a list of exit codes: 1 to 255 (0 is a clean exit, never a failure).
func (k *checker) exitCodes(path string, codes []int) {
	for i, code := range codes {
		if code < 1 || code > 255 {
			k.errf(index(path, i), "must be an exit code from 1 to 255, got %d", code)
		}
	}
}

// Sections.

func (k *checker) gateway() {
	g := &k.c.Gateway
	if len(g.Command) > 0 { // required only to run: see Validate
		k.command("gateway.command", g.Command)
	}
	set, _ := g.EnvSplit()
	k.env("gateway.env", set)
	k.probe("gateway.readiness", &g.Readiness, roleReadiness)
	if g.Liveness != nil {
		k.probe("gateway.liveness", g.Liveness, roleLiveness)
	}
	k.signal("gateway.stop.signal", g.Stop.Signal)
	k.nonNegative("gateway.stop.timeout", g.Stop.Timeout)
	k.exitCodes("gateway.no_restart_exit_codes", g.NoRestartExitCodes)
	k.gatewayPorts(g.Ports)
	switch g.Stop.Scope {
	case StopScopeGroup:
	case StopScopeMain:
		if runtime.GOOS == "windows" {
			k.errf("gateway.stop.scope", "main is not supported on Windows, where a stop reaches the gateway's whole console group; use group")
		}
	default:
		k.errf("gateway.stop.scope", "must be %s or %s, got %s", StopScopeGroup, StopScopeMain, quote(g.Stop.Scope))
	}
	b := g.Backoff
	k.positive("gateway.backoff.initial", b.Initial)
	if b.Max < b.Initial {
		k.errf("gateway.backoff.max", "must be at least initial (%s), got %s", b.Initial, b.Max)
	}
	if !(b.Factor >= 1) || math.IsInf(b.Factor, 0) {
		k.errf("gateway.backoff.factor", "must be a finite number of at least 1, got %v", b.Factor)
	}
	k.fraction("gateway.backoff.jitter", b.Jitter)
	k.nonNegative("gateway.backoff.reset_after", b.ResetAfter)
	k.atLeast("gateway.crash_loop.failures", g.CrashLoop.Failures, 1)
	k.positive("gateway.crash_loop.window", g.CrashLoop.Window)
	k.atLeast("gateway.output.max_lines_per_second", g.Output.MaxLinesPerSecond, 1)
	if n := g.Output.KeepLines; n < 1 || n > MaxKeepLines {
		k.errf("gateway.output.keep_lines", "must be from 1 to %d, got %d", MaxKeepLines, n)
	}
}

func (k *checker) probe(path string, p *Probe, role probeRole) {
	var allowed []string
	switch role {
	case roleReadiness:
		allowed = []string{ProbeNotify, ProbeHTTP, ProbeTCP, ProbeExec, ProbeNone}
	case roleLiveness:
		allowed = []string{ProbeNotify, ProbeHTTP, ProbeExec, ProbeNone}
	case roleIdle:
		allowed = []string{ProbeNotify, ProbeHTTP, ProbeExec, ProbeOpenClaw}
	}
	k.kinds(path, "probe kind", setKinds(*p), allowed)

	k.positive(path+".timeout", p.Timeout)
	periodic := role == roleLiveness && (p.HTTP != nil || p.Exec != nil)
	if periodic {
		k.positive(path+".every", p.Every)
		k.atLeast(path+".failures", p.Failures, 1)
	} else {
		if p.Every != 0 {
			k.errf(path+".every", "is only used by http and exec liveness probes")
		}
		if p.Failures != 0 {
			k.errf(path+".failures", "is only used by http and exec liveness probes")
		}
	}
	if h := p.HTTP; h != nil {
		hp := path + ".http"
		k.url(hp+".url", h.URL, true)
		k.headers(hp+".headers", h.Headers)
		if role == roleIdle {
			if h.JSONPointer != "" {
				k.errf(hp+".json_pointer", "is not used by idle probes (use inflight_pointer)")
			}
			if h.InflightPointer == "" {
				k.errf(hp+".inflight_pointer", "is required for idle probes (a JSON pointer to the number of in-flight requests)")
			}
			k.jsonPointer(hp+".inflight_pointer", h.InflightPointer)
		} else {
			k.jsonPointer(hp+".json_pointer", h.JSONPointer)
			if h.InflightPointer != "" {
				k.errf(hp+".inflight_pointer", "is only used by idle probes")
			}
		}
	}
	if t := p.TCP; t != nil {
		if t.Address == "" {
			k.errf(path+".tcp.address", "is required")
		} else {
			k.hostPort(path+".tcp.address", t.Address)
		}
	}
	if e := p.Exec; e != nil {
		k.command(path+".exec.command", e.Command)
	}
	if o := p.OpenClaw; o != nil && role == roleIdle {
		k.openclawIdle(path+".openclaw", o)
	}
}

func (k *checker) restart() {
	r := &k.c.Restart
	k.nonNegative("restart.cooldown", r.Cooldown)
	k.nonNegative("restart.signal_down_wait", r.SignalDownWait)
	if r.Delay < 0 || r.Delay.D() > MaxRestartDelay {
		k.errf("restart.delay", "must be between 0s and %s, got %s", Duration(MaxRestartDelay), r.Delay)
	}
	switch r.Method {
	case MethodRespawn, MethodSignal:
	default:
		k.errf("restart.method", "must be %s or %s, got %s", MethodRespawn, MethodSignal, quote(r.Method))
	}
	if r.Signal != "" {
		k.signal("restart.signal", r.Signal)
	} else if r.Method == MethodSignal {
		k.errf("restart.signal", "is required when method is signal")
	}
	di := &r.DeferUntilIdle
	if di.Idle != nil {
		k.probe("restart.defer_until_idle.idle", di.Idle, roleIdle)
	} else if di.Enabled != nil && *di.Enabled {
		k.errf("restart.defer_until_idle.enabled", "needs an idle probe (restart.defer_until_idle.idle)")
	}
	k.fence(di)
	if di.Idle != nil && di.Idle.OpenClaw != nil && di.Poll.D() < MinOpenClawPoll {
		k.errf("restart.defer_until_idle.poll", "must be at least %s with the openclaw idle probe (each check starts its CLI, which takes seconds), got %s",
			Duration(MinOpenClawPoll), di.Poll)
	} else if di.Poll.D() < MinDeferralPoll {
		k.errf("restart.defer_until_idle.poll", "must be at least %s, got %s", Duration(MinDeferralPoll), di.Poll)
	} else if di.MaxWait < di.Poll {
		k.errf("restart.defer_until_idle.max_wait", "must be at least poll (%s), got %s", di.Poll, di.MaxWait)
	}
}

var (
	hhmmRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:[01]\d|2[0-3]):[0-5]\d$`) })
	knownTZs   = []string{"user", "local"}
	targetKind = []string{"http", "exec", "openclaw"}
)

// everyGrammar reports whether s is written in the heartbeat interval grammar (whatever
// its value): heartbeat.ParseEvery is the one reader of it.
func everyGrammar(s string) bool {
	_, err := heartbeat.ParseEvery(s)
	return err == nil || errors.Is(err, heartbeat.ErrEveryOutOfRange)
}

func (k *checker) heartbeat() {
	h := &k.c.Heartbeat
	k.timezone("heartbeat.user_timezone", h.UserTimezone)
	if h.Defaults.ID != "" {
		k.errf("heartbeat.defaults.id", "is only used in heartbeat.agents")
	}
	if h.Defaults.Every == "" {
		k.errf("heartbeat.defaults.every", "must not be empty (use 0 to disable)")
	}
	k.agent("heartbeat.defaults", &h.Defaults)
	first := map[string]string{}
	for i := range h.Agents {
		a := &h.Agents[i]
		p := index("heartbeat.agents", i)
		k.name(p+".id", "agent id", a.ID)
		if prev, dup := first[a.ID]; dup && a.ID != "" {
			k.errf(p+".id", "duplicate agent id %s (first used at %s)", quote(a.ID), prev)
		} else {
			first[a.ID] = p
		}
		k.agent(p, a)
	}
	// An account picks a visibility layer inside a channel: without a channel (its own or
	// the defaults') it would be ignored.
	if h.Defaults.Account != "" && h.Defaults.Channel == "" && len(h.Agents) == 0 {
		k.errf("heartbeat.defaults.account", "needs a channel (heartbeat.defaults.channel)")
	}
	for i, a := range h.Agents {
		if a.Channel != "" || h.Defaults.Channel != "" {
			continue
		}
		switch {
		case a.Account != "":
			k.errf(index("heartbeat.agents", i)+".account", "needs a channel (set channel here or in heartbeat.defaults)")
		case h.Defaults.Account != "":
			k.errf("heartbeat.defaults.account", "needs a channel: %s has none (set channel there or in heartbeat.defaults)", index("heartbeat.agents", i))
		}
	}
}

func (k *checker) agent(path string, a *HeartbeatAgent) {
	if a.Every != "" && !everyGrammar(a.Every) {
		k.errf(path+".every", "invalid interval %s (use 30m, 1h30m or a bare number of minutes; 0 disables)", quote(a.Every))
	}
	if ah := a.ActiveHours; ah != nil {
		p := path + ".active_hours"
		switch {
		case ah.Start == "":
			k.errf(p+".start", "is required (HH:MM)")
		case !hhmmRE().MatchString(ah.Start):
			k.errf(p+".start", "invalid time %s (use HH:MM from 00:00 to 23:59)", quote(ah.Start))
		}
		switch {
		case ah.End == "":
			k.errf(p+".end", "is required (HH:MM or 24:00)")
		case !hhmmRE().MatchString(ah.End) && ah.End != "24:00":
			k.errf(p+".end", "invalid time %s (use HH:MM from 00:00 to 23:59, or 24:00)", quote(ah.End))
		case ah.End == ah.Start:
			k.errf(p+".end", "equals start, so the window is never active (use 00:00 to 24:00 for always)")
		}
		if !slices.Contains(knownTZs, ah.Timezone) {
			k.timezone(p+".timezone", ah.Timezone)
		}
	}
	if t := a.Target; t != nil {
		p := path + ".target"
		if s := setKinds(*t); len(s) != 1 {
			k.kinds(p, "target kind", s, targetKind)
		}
		if t.HTTP != nil {
			k.httpRequest(p+".http", t.HTTP.URL, t.HTTP.Method, t.HTTP.Headers, t.HTTP.Timeout)
		}
		if t.Exec != nil {
			k.command(p+".exec.command", t.Exec.Command)
			k.positive(p+".exec.timeout", t.Exec.Timeout)
		}
		if t.OpenClaw != nil {
			k.openclaw(p+".openclaw", t.OpenClaw)
		}
	}
	if v := a.Visibility; v != nil {
		for _, ch := range slices.Sorted(maps.Keys(v.Channels)) {
			for _, acct := range slices.Sorted(maps.Keys(v.Channels[ch].Accounts)) {
				if len(v.Channels[ch].Accounts[acct].Channels) > 0 {
					k.errf(path+".visibility.channels."+ch+".accounts."+acct+".channels", "is not allowed inside an account")
				}
			}
		}
	}
}

func (k *checker) httpRequest(path, u, method string, headers map[string]string, timeout Duration) {
	k.url(path+".url", u, true)
	k.method(path+".method", method)
	k.headers(path+".headers", headers)
	k.positive(path+".timeout", timeout)
}

var syncModes = []string{"FULL", "NORMAL"}

func (k *checker) deliveries() {
	d := &k.c.Deliveries
	if s := d.Store.SQLite; s != nil {
		if s.Path == "" {
			k.errf("deliveries.store.sqlite.path", "is required")
		}
		if !slices.Contains(syncModes, strings.ToUpper(s.Synchronous)) {
			k.errf("deliveries.store.sqlite.synchronous", "must be FULL or NORMAL, got %s", quote(s.Synchronous))
		}
	}
	if s := d.Store.Postgres; s != nil {
		k.postgres(s)
	}
	if kinds := setKinds(d.Store); len(kinds) > 1 {
		k.kinds("deliveries.store", "store kind", kinds, []string{"sqlite", "postgres"})
	}
	k.atLeast("deliveries.max_retries", d.MaxRetries, 0)
	if len(d.Schedule) == 0 {
		k.errf("deliveries.schedule", "must list at least one delay")
	}
	for i, s := range d.Schedule {
		k.nonNegative(index("deliveries.schedule", i), s)
	}
	k.fraction("deliveries.jitter", d.Jitter)
	if d.MaxPayload < 1 {
		k.errf("deliveries.max_payload", "must be at least 1 byte, got %d", d.MaxPayload)
	}
	k.atLeast("deliveries.max_entries", d.MaxEntries, 1)
	for i, re := range d.PermanentErrors {
		if _, err := regexp.Compile(re); err != nil {
			k.errf(index("deliveries.permanent_errors", i), "invalid regular expression: %v", err)
		}
	}
	k.positive("deliveries.recovery_budget", d.RecoveryBudget)
	k.nonNegative("deliveries.replay_spacing", d.ReplaySpacing)
	k.positive("deliveries.max_retry_after", d.MaxRetryAfter)
	k.atLeast("deliveries.workers", d.Workers, 1)
	k.nonNegative("deliveries.ttl", d.TTL)
	k.nonNegative("deliveries.delivered_retention", d.DeliveredRetention)
	k.nonNegative("deliveries.dead_retention", d.DeadRetention)
	for _, name := range slices.Sorted(maps.Keys(d.Sinks)) {
		s := d.Sinks[name]
		p := "deliveries.sinks." + name
		k.name(p, "sink name", name)
		if kinds := setKinds(s); len(kinds) != 1 {
			k.kinds(p, "sink kind", kinds, []string{"http", "exec", "gateway", "openclaw"})
		}
		if s.OpenClaw != nil {
			k.openclaw(p+".openclaw", s.OpenClaw)
		}
		if s.HTTP != nil {
			k.httpRequest(p+".http", s.HTTP.URL, s.HTTP.Method, s.HTTP.Headers, s.HTTP.Timeout)
		}
		if e := s.Exec; e != nil {
			k.command(p+".exec.command", e.Command)
			k.positive(p+".exec.timeout", e.Timeout)
			k.exitCodes(p+".exec.transient_codes", e.TransientCodes)
		}
		if g := s.Gateway; g != nil {
			if !strings.HasPrefix(g.Path, "/") {
				k.errf(p+".gateway.path", "must be an HTTP path starting with /, got %s", quote(g.Path))
			}
			k.positive(p+".gateway.timeout", g.Timeout)
			k.url(p+".gateway.base_url", g.BaseURL, false)
			if g.BaseURL == "" && k.c.GatewayBaseURL() == "" {
				k.errf(p+".gateway.base_url", "is required: neither gateway.readiness nor gateway.liveness is an http probe to take it from")
			}
		}
	}
}

var (
	logFormats = []string{"console", "json"}
	logLevels  = []string{"debug", "info", "warn", "error"}
)

func (k *checker) control() {
	c := k.c
	k.atLeast("control.max_body", c.Control.MaxBody, 1)
	if c.Control.MaxBody >= 1 && int64(c.Control.MaxBody) < c.Deliveries.MaxPayload.Bytes() {
		if c.has("control.max_body") || !c.has("deliveries.max_payload") {
			k.errf("control.max_body", "must be at least deliveries.max_payload (%d bytes), got %d", c.Deliveries.MaxPayload, c.Control.MaxBody)
		} else {
			k.errf("deliveries.max_payload", "must not exceed control.max_body (%d bytes), got %d bytes; raise control.max_body too", c.Control.MaxBody, c.Deliveries.MaxPayload)
		}
	}
	k.positive("control.request_timeout", c.Control.RequestTimeout)
	if !slices.Contains(logFormats, c.Log.Format) {
		k.errf("log.format", "must be console or json, got %s", quote(c.Log.Format))
	}
	if !slices.Contains(logLevels, c.Log.Level) {
		k.errf("log.level", "must be one of %s, got %s", strings.Join(logLevels, ", "), quote(c.Log.Level))
	}
}

// metrics checks the endpoint's address. It has no authentication, so it stays on this host
// unless the file says otherwise. A host name other than localhost counts as remote: what
// it resolves to is not known here.
func (k *checker) metrics() {
	m := k.c.Metrics
	if m.Listen == "" {
		return
	}
	host, _, err := net.SplitHostPort(m.Listen)
	k.hostPort("metrics.listen", m.Listen)
	if err != nil || m.AllowRemote || loopback(host) {
		return
	}
	k.errf("metrics.listen", "%s is not a loopback address and the endpoint has no authentication; "+
		"listen on 127.0.0.1 or [::1], or set metrics.allow_remote: true to serve it to other hosts", quote(m.Listen))
}

// loopback reports whether host (of a host:port) names only this host: localhost or a
// loopback IP. "" (every interface) is not.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
