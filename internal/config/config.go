// Package config is schedd's configuration file: its schema, its defaults, and a strict
// parser that reports every problem with file:line:column and the dotted field path.
//
// The file is YAML. Keys are snake_case, durations use Go syntax ("30s", "1m30s"; a bare 0
// is allowed; heartbeat intervals take more forms, see HeartbeatAgent.Every), sizes take
// bytes or a unit ("1MiB"), every number has a range (see Ranges), and unknown keys are
// errors (except top-level "x-" keys, a place for YAML anchors). Parse applies defaults to absent keys
// only; a key given as null (`key:` or `key: ~`) counts as absent, except a kind key
// (`notify:`), which selects that kind. Probes, targets, sinks and cron actions name exactly
// one kind. Validate adds what is needed to run, such as a gateway command.
//
// Not supported yet: control.group is in the schema for a feature to come, but nothing reads
// it; a file that sets it is refused with the key and its position, so that no setting is
// accepted and then ignored.
//
// Problems come back as Errors, all at once and sorted by position; cmd maps them to exit
// code 78 so that a broken config never restart-loops under a service manager (R-INIT-01).
//
// Paths: a relative gateway.workdir, state_dir or control.socket is resolved against the
// directory of the config file when it is parsed (see Parse). deliveries.store.sqlite.path is
// the exception: a relative store path is relative to the state dir, which cmd resolves.
//
// Secrets: header values, openclaw tokens, gateway.env and cron exec env values (and
// deliveries.store.postgres.dsn) never appear in error messages ("value hidden"), and
// Redacted returns a copy safe to print.
package config

import (
	"net/url"
	"slices"
	"time"
)

// Config is the whole configuration file. Use Default for a configuration without a file,
// Load or Parse for one with a file.
type Config struct {
	Gateway    Gateway    `yaml:"gateway"`
	Restart    Restart    `yaml:"restart"`
	Heartbeat  Heartbeat  `yaml:"heartbeat"`
	Deliveries Deliveries `yaml:"deliveries"`
	Cron       Cron       `yaml:"cron"`
	Control    Control    `yaml:"control"`
	Metrics    Metrics    `yaml:"metrics"`
	Log        Log        `yaml:"log"`
	// StateDir holds schedd's durable state. "" means the platform default, which cmd fills.
	StateDir string `yaml:"state_dir"`
	// Path is the file the configuration came from ("" = built-in defaults).
	Path string `yaml:"-"`

	// pos maps a dotted field path ("gateway.stop.timeout", "heartbeat.agents[0].id") to the
	// position of its value in the file, so that Validate can point at it.
	pos map[string]position
}

// Gateway describes the one child process schedd supervises.
type Gateway struct {
	// Command is argv of the gateway. Required to run; `schedd run -- CMD` may supply it.
	Command []string `yaml:"command"`
	// Env is added to the gateway's environment (values are secrets: never printed). A null
	// value (`TERM: null`) removes that variable from what the gateway inherits.
	Env map[string]*string `yaml:"env" schedd:"secret"`
	// Workdir is the gateway's working directory; "" inherits schedd's.
	Workdir string `yaml:"workdir"`
	// Readiness decides when a started gateway counts as ready. Default none: {} with a
	// 60s timeout; a timeout is a failed start.
	Readiness Probe `yaml:"readiness"`
	// Liveness watches a running gateway. nil = none; notify: {} = the sd_notify watchdog
	// (Timeout is the WATCHDOG_USEC interval); http/exec run every Every.
	Liveness *Probe `yaml:"liveness,omitempty"`
	// Stop is how the gateway is stopped.
	Stop Stop `yaml:"stop"`
	// Backoff spaces crash restarts.
	Backoff Backoff `yaml:"backoff"`
	// CrashLoop decides when the state becomes crash_looping.
	CrashLoop CrashLoop `yaml:"crash_loop"`
	// Output controls the logging of the gateway's stdout/stderr.
	Output Output `yaml:"output"`
	// NoRestartExitCodes are exit codes (1..255) after which the gateway is not restarted:
	// it stays in state failed until a restart request or a config reload (OpenClaw's 78,
	// a configuration error). Default none.
	NoRestartExitCodes []int `yaml:"no_restart_exit_codes"`
	// Ports are the TCP addresses the gateway binds ("127.0.0.1:18789", ":18789",
	// "[::1]:18789"). Before each start schedd waits for them to be free. nil (unset) means
	// the port the readiness or liveness probe names, if it is a local one; a pointer to an
	// empty list turns the wait off.
	Ports *[]string `yaml:"ports,omitempty"`
	// Sockets are listening sockets schedd creates (or takes from its own service manager)
	// before the first start and keeps for its whole life; every start of the gateway gets
	// them with systemd's protocol (LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES, fds from 3).
	// Unix only. Default none.
	Sockets []Socket `yaml:"sockets"`
}

// Stop is the graceful stop: Signal to the process group (or the gateway's own pid, with
// Scope main), then SIGKILL to the whole group after Timeout.
type Stop struct {
	Signal  string   `yaml:"signal"`  // default SIGTERM; stored as "SIGTERM" or as digits ("15")
	Timeout Duration `yaml:"timeout"` // default 30s; 0 = SIGKILL at once
	// Scope is where Signal (and restart.signal) goes: "group" (default) or "main" (the
	// gateway's own pid; its children are its own to stop). Not on Windows.
	Scope string `yaml:"scope"`
}

// Stop scopes.
const (
	StopScopeGroup = "group"
	StopScopeMain  = "main"
)

// Backoff is the delay between crash restarts: Initial, multiplied by Factor per consecutive
// failure, plus up to Jitter of itself (longer, never shorter), capped at Max. A run that
// stayed ready for ResetAfter resets it.
type Backoff struct {
	Initial    Duration `yaml:"initial"`     // 1s, > 0
	Max        Duration `yaml:"max"`         // 60s, ≥ initial
	Factor     float64  `yaml:"factor"`      // 2, ≥ 1
	Jitter     float64  `yaml:"jitter"`      // 0.2, in [0,1]
	ResetAfter Duration `yaml:"reset_after"` // 60s
}

// CrashLoop: Failures consecutive failed starts within Window mean crash_looping.
type CrashLoop struct {
	Failures int      `yaml:"failures"` // 5, ≥ 1
	Window   Duration `yaml:"window"`   // 2m, > 0
}

// Output controls how the gateway's stdout/stderr lines are logged.
type Output struct {
	// MaxLinesPerSecond is the logging rate limit; lines beyond it are dropped and
	// counted. Default 1000, ≥ 1.
	MaxLinesPerSecond int `yaml:"max_lines_per_second"`
	// KeepLines is how many of the latest lines schedd keeps in memory for `schedd logs`,
	// rate-capped ones included. Default 1000, 1 to MaxKeepLines.
	KeepLines int `yaml:"keep_lines"`
}

// Probe kinds, as returned by Kind.
const (
	ProbeNotify = "notify"
	ProbeHTTP   = "http"
	ProbeTCP    = "tcp"
	ProbeExec   = "exec"
	ProbeNone   = "none"
	// ProbeOpenClaw asks OpenClaw itself through its CLI (idle only).
	ProbeOpenClaw = "openclaw"
)

// Probe names exactly one kind (one non-nil pointer) beside its timing keys. It is used for
// readiness, liveness and idle checks; which kinds and keys are allowed depends on the use:
//
//	readiness: notify, http, tcp, exec, none; timeout (60s) is the whole wait.
//	liveness:  notify (timeout = watchdog interval, 30s), http or exec (timeout 5s per
//	           check, every 10s, failures 3). `none: {}` is the same as no liveness.
//	idle:      notify (X_SCHEDD_INFLIGHT), http (inflight_pointer required), exec (exit 0 =
//	           idle); timeout 5s per check; openclaw (its CLI's restart preflight),
//	           timeout 20s per check.
type Probe struct {
	Notify *NotifyProbe `yaml:"notify,omitempty"`
	HTTP   *HTTPProbe   `yaml:"http,omitempty"`
	TCP    *TCPProbe    `yaml:"tcp,omitempty"`
	Exec   *ExecProbe   `yaml:"exec,omitempty"`
	None   *NoneProbe   `yaml:"none,omitempty"`
	// OpenClaw (idle only) runs `openclaw gateway call gateway.restart.preflight`.
	OpenClaw *OpenClawProbe `yaml:"openclaw,omitempty"`
	// Timeout: readiness: the whole wait; liveness http/exec and idle: per check; notify
	// liveness: the watchdog interval (WATCHDOG_USEC).
	Timeout Duration `yaml:"timeout"`
	// Every is the liveness period (http/exec liveness only).
	Every Duration `yaml:"every"`
	// Failures is the liveness threshold: consecutive failed checks before the kill; a
	// warning is logged before (http/exec liveness only).
	Failures int `yaml:"failures"`
}

// Kind reports the probe's kind: "notify", "http", "tcp", "exec", "none", "openclaw", or ""
// when none is set. When several are set (an invalid probe) it reports the first in that
// order.
func (p Probe) Kind() string { return unionKind(p) }

// OpenClawProbe asks an OpenClaw gateway whether it is idle with
// `<command> gateway call gateway.restart.preflight --json` (safe: true = idle). Each call
// is a CLI start (seconds), so the deferral polls it every 5s by default. The CLI runs with
// the gateway's environment, so it reads the gateway's own config file, which must say
// gateway.auth.mode "none" (or give the CLI a token) for calls to work.
type OpenClawProbe struct {
	// Command is the argv prefix of the CLI. Default ["openclaw"] (found on PATH).
	Command []string `yaml:"command"`
	// Port is passed as --port (the gateway's --port); 0 = the CLI's own default.
	Port int `yaml:"port"`
	// URL is passed as --url (ws:// or wss://) instead of a port.
	URL string `yaml:"url"`
}

// NotifyProbe uses the sd_notify protocol on the socket schedd gives the gateway
// (READY=1, WATCHDOG=1, X_SCHEDD_INFLIGHT=N).
type NotifyProbe struct{}

// NoneProbe checks nothing: ready as soon as the process started.
type NoneProbe struct{}

// HTTPProbe is a GET that must answer 2xx.
type HTTPProbe struct {
	// URL is an absolute http:// or https:// URL.
	URL string `yaml:"url" schedd:"url"`
	// JSONPointer (RFC 6901), readiness/liveness only: the value there must be true.
	JSONPointer string `yaml:"json_pointer"`
	// InflightPointer (RFC 6901), idle only and required there: a number, 0 = idle.
	InflightPointer string `yaml:"inflight_pointer"`
	// Headers are sent with the request (values are secrets: never printed).
	Headers map[string]string `yaml:"headers" schedd:"secret"`
}

// TCPProbe succeeds when a TCP connection to Address (host:port) opens.
type TCPProbe struct {
	Address string `yaml:"address"`
}

// ExecProbe runs Command; exit 0 is success (idle: exit 0 = idle).
type ExecProbe struct {
	Command []string `yaml:"command"`
}

// Restart methods.
const (
	MethodRespawn = "respawn"
	MethodSignal  = "signal"
)

// Restart configures restart requests (SIGUSR1, CLI, control API, config change).
type Restart struct {
	// AllowSignal accepts SIGUSR1 as a restart request. Default true.
	AllowSignal *bool `yaml:"allow_signal"`
	// Cooldown is the minimum gap between restarts. Default 30s.
	Cooldown Duration `yaml:"cooldown"`
	// Delay is the scheduled delay before a restart. Default 2s, valid 0..60s.
	Delay Duration `yaml:"delay"`
	// Method is "respawn" (default: stop, then start a fresh process) or "signal" (send
	// Signal to the gateway and let it restart itself).
	Method string `yaml:"method"`
	// Signal is sent by method signal. Default SIGHUP.
	Signal string `yaml:"signal"`
	// SignalDownWait: with method signal and an http, tcp or exec readiness probe, a
	// restart is done only once the probe has failed and then passed again; this bounds
	// the wait for the failure. Default 5s; 0 waits for a pass at once.
	SignalDownWait Duration `yaml:"signal_down_wait"`
	// DeferUntilIdle postpones a restart until the gateway is idle, with a ceiling.
	DeferUntilIdle DeferUntilIdle `yaml:"defer_until_idle"`
	// Overlap starts the new gateway on the shared gateway.sockets while the old one keeps
	// serving, and stops the old one only once the new one is ready (respawn method, notify
	// readiness and gateway.sockets only). Default false.
	Overlap bool `yaml:"overlap"`
}

// DeferUntilIdle polls Idle every Poll until the gateway is idle or MaxWait has passed (then
// the restart is forced).
type DeferUntilIdle struct {
	// Enabled defaults to true when Idle is set, false otherwise.
	Enabled *bool `yaml:"enabled"`
	// Idle is the idle probe (notify, http or exec); nil = no deferral.
	Idle *Probe `yaml:"idle,omitempty"`
	// Poll is the polling period. Default 500ms, at least 10ms.
	Poll Duration `yaml:"poll"`
	// MaxWait is the ceiling. Default 300s (5m), at least Poll.
	MaxWait Duration `yaml:"max_wait"`
	// Fence (openclaw idle probe only): once idle, close the gateway's admission
	// (gateway.suspend.prepare) and restart when it reports ready; reopened
	// (gateway.suspend.resume) if the old process lives on. Default false.
	Fence *bool `yaml:"fence"`
}

// Heartbeat configures heartbeat schedules.
type Heartbeat struct {
	// Enabled is the initial state of the global switch (the runtime switch is persisted
	// elsewhere). Default true.
	Enabled *bool `yaml:"enabled"`
	// UserTimezone is the IANA zone that active_hours timezone "user" means. "" = the host
	// zone.
	UserTimezone string `yaml:"user_timezone"`
	// Defaults are merged shallowly under every agent ({...defaults, ...agent}).
	// Defaults.Every is "30m" and Defaults.Enabled true unless set; Defaults.ID must be empty.
	Defaults HeartbeatAgent `yaml:"defaults"`
	// Agents lists the agents that run heartbeats. Empty = only the default agent.
	Agents []HeartbeatAgent `yaml:"agents"`
}

// HeartbeatAgent is one agent's heartbeat (or the defaults). Unset fields fall back to
// Heartbeat.Defaults.
type HeartbeatAgent struct {
	// ID names the agent (agents only): letters, digits, '.', '_', '-'; unique.
	ID string `yaml:"id"`
	// Every is the interval in the upstream grammar: "30m", "1h30m", "2m500ms", a bare
	// number means minutes; "0" disables. Parsed by the heartbeat package; checked here.
	Every string `yaml:"every" schedd:"interval"`
	// ActiveHours limits runs to a daily window; nil = always active.
	ActiveHours *ActiveHours `yaml:"active_hours,omitempty"`
	// Target is pulsed when a heartbeat is due.
	Target *Target `yaml:"target,omitempty"`
	// Session is the session key the run uses; "" = the main session.
	Session string `yaml:"session"`
	// Visibility says which results are shown; unset fields fall through to the
	// built-ins (show_ok false, show_alerts true, use_indicator true).
	Visibility *Visibility `yaml:"visibility,omitempty"`
	// Enabled switches this agent's heartbeat.
	Enabled *bool `yaml:"enabled"`
	// Channel is the delivery channel the agent's results go to ("telegram", "webchat",
	// "none", ...): it picks the visibility.channels entry. "" = only the top-level
	// visibility.
	Channel string `yaml:"channel"`
	// Account is the account on Channel: it picks the channels.<channel>.accounts entry.
	// Needs a channel.
	Account string `yaml:"account"`
}

// ActiveHours is a daily window [Start, End) in Timezone.
type ActiveHours struct {
	Start    string `yaml:"start"`    // "HH:MM", 00:00-23:59, required
	End      string `yaml:"end"`      // "HH:MM" or "24:00", required
	Timezone string `yaml:"timezone"` // "user" (default), "local" or an IANA zone
}

// Visibility of heartbeat results. Each field resolves independently: per account, per
// channel, these, then the built-ins.
type Visibility struct {
	ShowOK       *bool `yaml:"show_ok"`
	ShowAlerts   *bool `yaml:"show_alerts"`
	UseIndicator *bool `yaml:"use_indicator"`
	// Channels holds per-channel settings. Not allowed inside an account.
	Channels map[string]ChannelVisibility `yaml:"channels"`
}

// ChannelVisibility is the visibility of one channel, with per-account settings inside.
type ChannelVisibility struct {
	ShowOK       *bool                 `yaml:"show_ok"`
	ShowAlerts   *bool                 `yaml:"show_alerts"`
	UseIndicator *bool                 `yaml:"use_indicator"`
	Accounts     map[string]Visibility `yaml:"accounts"`
}

// Target is where a due heartbeat is sent: exactly one kind.
type Target struct {
	HTTP     *HTTPTarget `yaml:"http,omitempty"`
	Exec     *ExecTarget `yaml:"exec,omitempty"`
	OpenClaw *OpenClaw   `yaml:"openclaw,omitempty"` // POST /hooks/wake (openclaw.go)
}

// Kind reports "http", "exec", "openclaw" or "" (unset).
func (t Target) Kind() string { return unionKind(t) }

// HTTPTarget is an HTTP request.
type HTTPTarget struct {
	URL     string            `yaml:"url" schedd:"url"`        // absolute http(s) URL, required
	Method  string            `yaml:"method"`                  // default POST
	Headers map[string]string `yaml:"headers" schedd:"secret"` // secret values
	Timeout Duration          `yaml:"timeout"`                 // default 10s, > 0
}

// ExecTarget runs a command.
type ExecTarget struct {
	Command []string `yaml:"command"` // required
	Timeout Duration `yaml:"timeout"` // default 30s, > 0
}

// Deliveries configures the durable delivery queue.
type Deliveries struct {
	// Store is where entries live. Default sqlite.
	Store Store `yaml:"store"`
	// MaxRetries is how many transient failures an entry survives. Default 5.
	MaxRetries int `yaml:"max_retries"`
	// Schedule is the retry delay table; the last entry repeats. Default [5s 25s 2m 10m].
	Schedule []Duration `yaml:"schedule"`
	// Jitter shortens each delay by up to this fraction (downward only). Default 0.2.
	Jitter float64 `yaml:"jitter"`
	// MaxPayload caps one entry's payload. Default 1MiB.
	MaxPayload ByteSize `yaml:"max_payload"`
	// MaxEntries caps the number of stored entries. Default 1,000,000.
	MaxEntries int `yaml:"max_entries"`
	// PermanentErrors are extra Go regexps (RE2) that mark an error permanent, beside the
	// built-in upstream list.
	PermanentErrors []string `yaml:"permanent_errors"`
	// RecoveryBudget bounds the startup recovery pass. Default 60s.
	RecoveryBudget Duration `yaml:"recovery_budget"`
	// ReplaySpacing is the pause between recovered sends. Default 250ms.
	ReplaySpacing Duration `yaml:"replay_spacing"`
	// MaxRetryAfter clamps a sink's Retry-After. Default 1h.
	MaxRetryAfter Duration `yaml:"max_retry_after"`
	// Workers is the number of concurrent sends. Default 16.
	Workers int `yaml:"workers"`
	// TTL is how long an entry may wait to be delivered; past it, it is dead-lettered with
	// reason "expired" instead of being sent. Default 0: no expiry. An enqueue may set its own.
	TTL Duration `yaml:"ttl"`
	// DeliveredRetention is how long a delivered entry is kept (without its payload), so that
	// its idempotency key keeps deduplicating. Default 720h (30 days); 0 keeps it forever.
	DeliveredRetention Duration `yaml:"delivered_retention"`
	// DeadRetention is how long a dead letter is kept. Default 0: until purged by hand.
	DeadRetention Duration `yaml:"dead_retention"`
	// Sinks are the named destinations.
	Sinks map[string]Sink `yaml:"sinks"`
}

// Store names exactly one store kind.
type Store struct {
	SQLite   *SQLiteStore   `yaml:"sqlite,omitempty"`
	Postgres *PostgresStore `yaml:"postgres,omitempty"`
}

// Kind reports "sqlite", "postgres" or "" (unset).
func (s Store) Kind() string { return unionKind(s) }

// SQLiteStore is the embedded store.
type SQLiteStore struct {
	// Path of the database; relative to the state dir. Default "schedd.db".
	Path string `yaml:"path"`
	// Synchronous is FULL (default: durable before acknowledged) or NORMAL.
	Synchronous string `yaml:"synchronous"`
}

// PostgresStore is the store a fleet of schedd hosts shares.
type PostgresStore struct {
	// DSN is a libpq connection string or postgres:// URL; required; a secret.
	DSN string `yaml:"dsn" schedd:"secret"`
	// HostID names this host in the claims it holds; unique in the fleet. Default: the host
	// name and the state dir ("web-1:/var/lib/schedd").
	HostID string `yaml:"host_id"`
	// Lease is how long this host's claims stay its own after its last heartbeat (renewed
	// every third of it): another host rescues them once it ran out. Default 30s.
	Lease Duration `yaml:"lease"`
	// MaxConns bounds the connection pool. Default 8.
	MaxConns int `yaml:"max_conns"`
}

// Sink names exactly one kind of destination.
type Sink struct {
	HTTP    *HTTPSink    `yaml:"http,omitempty"`
	Exec    *ExecSink    `yaml:"exec,omitempty"`
	Gateway *GatewaySink `yaml:"gateway,omitempty"`
	// OpenClaw posts the payload to an OpenClaw hook (openclaw.go).
	OpenClaw *OpenClaw `yaml:"openclaw,omitempty"`
}

// Kind reports "http", "exec", "gateway", "openclaw" or "" (unset).
func (s Sink) Kind() string { return unionKind(s) }

// HTTPSink sends the payload as the request body.
type HTTPSink struct {
	URL     string            `yaml:"url" schedd:"url"`        // absolute http(s) URL, required
	Method  string            `yaml:"method"`                  // default POST
	Headers map[string]string `yaml:"headers" schedd:"secret"` // secret values
	Timeout Duration          `yaml:"timeout"`                 // default 10s, > 0
}

// ExecSink runs Command with the payload on stdin.
type ExecSink struct {
	Command []string `yaml:"command"` // required
	Timeout Duration `yaml:"timeout"` // default 30s, > 0
	// TransientCodes are exit codes that mean "retry later"; any other non-zero exit is
	// permanent. Default [75] (EX_TEMPFAIL); 1..255.
	TransientCodes []int `yaml:"transient_codes"`
}

// GatewaySink posts to an HTTP path on the gateway.
type GatewaySink struct {
	// Path on the gateway, starting with "/". Required.
	Path string `yaml:"path"`
	// Timeout of one send. Default 10s, > 0.
	Timeout Duration `yaml:"timeout"`
	// BaseURL overrides the gateway's base URL, which is otherwise taken from the
	// readiness or liveness http probe URL (see Config.GatewayBaseURL).
	BaseURL string `yaml:"base_url" schedd:"url"`
}

// Control is the local control API.
type Control struct {
	// Socket is the unix socket path. "" = the platform default, which cmd fills.
	Socket string `yaml:"socket"`
	// Group would make the socket 0660 for this group. Not supported yet: the socket is
	// always 0600 and only its owner may connect; a non-empty value is refused.
	Group string `yaml:"group"`
	// MaxBody caps a request body in bytes. Default 2 MiB; at least deliveries.max_payload.
	MaxBody int `yaml:"max_body"`
	// RequestTimeout bounds reading a request and writing its reply. Default 30s, > 0.
	RequestTimeout Duration `yaml:"request_timeout"`
}

// Metrics is the Prometheus endpoint: GET /metrics on Listen, without authentication.
type Metrics struct {
	// Listen is host:port; "" = off (default). A host that is not a loopback address is
	// refused unless AllowRemote is set.
	Listen string `yaml:"listen"`
	// AllowRemote allows a Listen that other hosts can reach.
	AllowRemote bool `yaml:"allow_remote"`
}

// Log configures schedd's own logs.
type Log struct {
	Format string `yaml:"format"` // console (default) | json
	Level  string `yaml:"level"`  // debug | info (default) | warn | error
}

// GatewayBaseURL is the gateway's base URL ("scheme://host[:port]") taken from the readiness
// http probe URL, else the liveness http probe URL; "" when neither is an http probe. Gateway
// sinks use it unless they set base_url.
func (c *Config) GatewayBaseURL() string {
	for _, p := range []*Probe{&c.Gateway.Readiness, c.Gateway.Liveness} {
		if p == nil || p.HTTP == nil {
			continue
		}
		u, err := url.Parse(p.HTTP.URL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			continue
		}
		return u.Scheme + "://" + u.Host
	}
	return ""
}

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// EnvSplit is gateway.env as the variables it sets and the names it removes (null values),
// the names sorted.
func (g *Gateway) EnvSplit() (set map[string]string, unset []string) {
	set = make(map[string]string, len(g.Env))
	for k, v := range g.Env {
		if v == nil {
			unset = append(unset, k)
			continue
		}
		set[k] = *v
	}
	slices.Sort(unset)
	return set, unset
}
