package config

import (
	"reflect"
	"strconv"
	"time"
)

// Defaults that other packages may want to name.
const (
	DefaultReadinessTimeout   = 60 * time.Second
	DefaultLivenessTimeout    = 5 * time.Second
	DefaultLivenessEvery      = 10 * time.Second
	DefaultLivenessFailures   = 3
	DefaultWatchdogInterval   = 30 * time.Second // notify liveness timeout
	DefaultIdleTimeout        = 5 * time.Second
	DefaultStopSignal         = "SIGTERM"
	DefaultStopTimeout        = 30 * time.Second
	DefaultRestartSignal      = "SIGHUP"
	DefaultSignalDownWait     = 5 * time.Second
	DefaultHeartbeatEvery     = "30m"
	DefaultHTTPTimeout        = 10 * time.Second // http targets and sinks, gateway sinks
	DefaultExecTimeout        = 30 * time.Second // exec targets and sinks
	DefaultHTTPMethod         = "POST"
	DefaultSQLitePath         = "schedd.db"
	DefaultPostgresLease      = 30 * time.Second
	DefaultPostgresMaxConns   = 8
	DefaultMaxLinesPerSecond  = 1000
	DefaultKeepLines          = 1000
	MaxKeepLines              = 100_000 // at most 400 MiB of lines of api.MaxLogLine bytes
	MinDeferralPoll           = 10 * time.Millisecond
	MaxRestartDelay           = 60 * time.Second
	DefaultTransientExitCode  = 75
	DefaultControlMaxBody     = 2 << 20
	DefaultMaxPayload         = ByteSize(1 << 20)
	DefaultMaxDeliveryEntries = 1_000_000
	// DefaultDeliveredRetention keeps delivered tombstones (their idempotency keys) 30 days.
	DefaultDeliveredRetention = 30 * 24 * time.Hour
)

// The openclaw idle probe's defaults: a CLI call takes ~4-7 s here (its cold start), so a
// longer timeout and a slower poll; a poll below MinOpenClawPoll would only run the calls
// back to back.
const (
	DefaultOpenClawTimeout = 20 * time.Second
	DefaultOpenClawPoll    = 5 * time.Second
	MinOpenClawPoll        = 2 * time.Second
)

// Default returns a configuration with every default applied and no gateway command. It is
// what `schedd run -- COMMAND` uses without a config file (cmd sets Gateway.Command).
//
//	gateway:    readiness none (timeout 60s); no liveness; stop SIGTERM/30s to the group;
//	            backoff 1s..60s x2, jitter 0.2, reset after 60s; crash_loop 5 in 2m;
//	            output 1000 lines/s, 1000 lines kept
//	restart:    allow_signal true; cooldown 30s; delay 2s; method respawn; signal SIGHUP
//	            (signal_down_wait 5s);
//	            defer_until_idle off (poll 500ms, max_wait 5m)
//	heartbeat:  enabled; defaults every 30m, enabled; no agents
//	deliveries: sqlite schedd.db (FULL); max_retries 5; schedule [5s 25s 2m 10m];
//	            jitter 0.2; max_payload 1MiB; max_entries 1,000,000; recovery_budget 60s;
//	            replay_spacing 250ms; max_retry_after 1h; workers 16; no ttl;
//	            delivered_retention 720h; dead_retention 0 (forever); no sinks
//	cron:       workers 4; queue_size 1000; no jobs (a job: missed run_once, concurrency
//	            forbid, retry 3 on [30s 1m 5m 15m 1h], disable_after 10, history_limit 100,
//	            timeout 10m, enabled)
//	control:    platform socket; max_body 2MiB; request_timeout 30s
//	log:        console, info
func Default() *Config {
	c := &Config{}
	applyDefaults(c)
	normalizeEmpty(reflect.ValueOf(c).Elem())
	return c
}

// has reports whether path was given in the file (null counts as not given).
func (c *Config) has(path string) bool {
	_, ok := c.pos[path]
	return ok
}

func (c *Config) defDur(path string, f *Duration, v time.Duration) {
	if !c.has(path) {
		*f = Duration(v)
	}
}

func (c *Config) defInt(path string, f *int, v int) {
	if !c.has(path) {
		*f = v
	}
}

func (c *Config) defFloat(path string, f *float64, v float64) {
	if !c.has(path) {
		*f = v
	}
}

func (c *Config) defStr(path string, f *string, v string) {
	if !c.has(path) {
		*f = v
	}
}

func (c *Config) defBool(path string, f **bool, v bool) {
	if !c.has(path) {
		*f = &v
	}
}

// applyDefaults fills every key that the file did not give.
func applyDefaults(c *Config) {
	g := &c.Gateway
	if !c.has("gateway.readiness") {
		g.Readiness = Probe{None: &NoneProbe{}}
	}
	c.probeDefaults("gateway.readiness", &g.Readiness, roleReadiness)
	if g.Liveness != nil {
		c.probeDefaults("gateway.liveness", g.Liveness, roleLiveness)
	}
	c.defStr("gateway.stop.signal", &g.Stop.Signal, DefaultStopSignal)
	c.defDur("gateway.stop.timeout", &g.Stop.Timeout, DefaultStopTimeout)
	c.defStr("gateway.stop.scope", &g.Stop.Scope, StopScopeGroup)
	c.defDur("gateway.backoff.initial", &g.Backoff.Initial, time.Second)
	c.defDur("gateway.backoff.max", &g.Backoff.Max, 60*time.Second)
	c.defFloat("gateway.backoff.factor", &g.Backoff.Factor, 2)
	c.defFloat("gateway.backoff.jitter", &g.Backoff.Jitter, 0.2)
	c.defDur("gateway.backoff.reset_after", &g.Backoff.ResetAfter, 60*time.Second)
	c.defInt("gateway.crash_loop.failures", &g.CrashLoop.Failures, 5)
	c.defDur("gateway.crash_loop.window", &g.CrashLoop.Window, 2*time.Minute)
	c.defInt("gateway.output.max_lines_per_second", &g.Output.MaxLinesPerSecond, DefaultMaxLinesPerSecond)
	c.defInt("gateway.output.keep_lines", &g.Output.KeepLines, DefaultKeepLines)

	r := &c.Restart
	c.defBool("restart.allow_signal", &r.AllowSignal, true)
	c.defDur("restart.cooldown", &r.Cooldown, 30*time.Second)
	c.defDur("restart.delay", &r.Delay, 2*time.Second)
	c.defStr("restart.method", &r.Method, MethodRespawn)
	c.defStr("restart.signal", &r.Signal, DefaultRestartSignal)
	c.defDur("restart.signal_down_wait", &r.SignalDownWait, DefaultSignalDownWait)
	di := &r.DeferUntilIdle
	if di.Idle != nil {
		c.probeDefaults("restart.defer_until_idle.idle", di.Idle, roleIdle)
	}
	c.defBool("restart.defer_until_idle.enabled", &di.Enabled, di.Idle != nil)
	poll := 500 * time.Millisecond
	if di.Idle != nil && di.Idle.OpenClaw != nil {
		poll = DefaultOpenClawPoll
		if oc := di.Idle.OpenClaw; len(oc.Command) == 0 {
			oc.Command = []string{"openclaw"}
		}
	}
	c.defBool("restart.defer_until_idle.fence", &di.Fence, false)
	c.defDur("restart.defer_until_idle.poll", &di.Poll, poll)
	c.defDur("restart.defer_until_idle.max_wait", &di.MaxWait, 300*time.Second)

	h := &c.Heartbeat
	c.defBool("heartbeat.enabled", &h.Enabled, true)
	c.defStr("heartbeat.defaults.every", &h.Defaults.Every, DefaultHeartbeatEvery)
	c.defBool("heartbeat.defaults.enabled", &h.Defaults.Enabled, true)
	c.agentDefaults("heartbeat.defaults", &h.Defaults)
	for i := range h.Agents {
		c.agentDefaults(index("heartbeat.agents", i), &h.Agents[i])
	}

	d := &c.Deliveries
	if d.Store.Kind() == "" {
		d.Store = Store{SQLite: &SQLiteStore{}}
	}
	if s := d.Store.SQLite; s != nil {
		c.defStr("deliveries.store.sqlite.path", &s.Path, DefaultSQLitePath)
		c.defStr("deliveries.store.sqlite.synchronous", &s.Synchronous, "FULL")
	}
	if s := d.Store.Postgres; s != nil {
		c.defDur("deliveries.store.postgres.lease", &s.Lease, DefaultPostgresLease)
		c.defInt("deliveries.store.postgres.max_conns", &s.MaxConns, DefaultPostgresMaxConns)
	}
	c.defInt("deliveries.max_retries", &d.MaxRetries, 5)
	if !c.has("deliveries.schedule") {
		d.Schedule = []Duration{Duration(5 * time.Second), Duration(25 * time.Second), Duration(2 * time.Minute), Duration(10 * time.Minute)}
	}
	c.defFloat("deliveries.jitter", &d.Jitter, 0.2)
	if !c.has("deliveries.max_payload") {
		d.MaxPayload = DefaultMaxPayload
	}
	c.defInt("deliveries.max_entries", &d.MaxEntries, DefaultMaxDeliveryEntries)
	c.defDur("deliveries.recovery_budget", &d.RecoveryBudget, 60*time.Second)
	c.defDur("deliveries.replay_spacing", &d.ReplaySpacing, 250*time.Millisecond)
	c.defDur("deliveries.max_retry_after", &d.MaxRetryAfter, time.Hour)
	c.defInt("deliveries.workers", &d.Workers, 16)
	c.defDur("deliveries.delivered_retention", &d.DeliveredRetention, DefaultDeliveredRetention)
	for name, s := range d.Sinks {
		p := "deliveries.sinks." + name
		if s.HTTP != nil {
			c.httpDefaults(p+".http", &s.HTTP.Method, &s.HTTP.Timeout)
		}
		if s.Exec != nil {
			c.defDur(p+".exec.timeout", &s.Exec.Timeout, DefaultExecTimeout)
			if !c.has(p + ".exec.transient_codes") {
				s.Exec.TransientCodes = []int{DefaultTransientExitCode}
			}
		}
		if s.Gateway != nil {
			c.defDur(p+".gateway.timeout", &s.Gateway.Timeout, DefaultHTTPTimeout)
		}
		if s.OpenClaw != nil {
			c.defDur(p+".openclaw.timeout", &s.OpenClaw.Timeout, DefaultHTTPTimeout)
		}
	}

	c.cronDefaults()

	c.defInt("control.max_body", &c.Control.MaxBody, DefaultControlMaxBody)
	c.defDur("control.request_timeout", &c.Control.RequestTimeout, 30*time.Second)
	c.defStr("log.format", &c.Log.Format, "console")
	c.defStr("log.level", &c.Log.Level, "info")
}

// probe roles: the same Probe type serves three uses with different defaults and rules.
type probeRole int

const (
	roleReadiness probeRole = iota
	roleLiveness
	roleIdle
)

func (c *Config) probeDefaults(path string, p *Probe, role probeRole) {
	switch role {
	case roleReadiness:
		c.defDur(path+".timeout", &p.Timeout, DefaultReadinessTimeout)
	case roleLiveness:
		switch {
		case p.Notify != nil:
			c.defDur(path+".timeout", &p.Timeout, DefaultWatchdogInterval)
		case p.HTTP != nil || p.Exec != nil:
			c.defDur(path+".timeout", &p.Timeout, DefaultLivenessTimeout)
			c.defDur(path+".every", &p.Every, DefaultLivenessEvery)
			c.defInt(path+".failures", &p.Failures, DefaultLivenessFailures)
		default:
			c.defDur(path+".timeout", &p.Timeout, DefaultLivenessTimeout)
		}
	case roleIdle:
		timeout := DefaultIdleTimeout
		if p.OpenClaw != nil {
			timeout = DefaultOpenClawTimeout
		}
		c.defDur(path+".timeout", &p.Timeout, timeout)
	}
}

func (c *Config) agentDefaults(path string, a *HeartbeatAgent) {
	if a.ActiveHours != nil {
		c.defStr(path+".active_hours.timezone", &a.ActiveHours.Timezone, "user")
	}
	if t := a.Target; t != nil {
		if t.HTTP != nil {
			c.httpDefaults(path+".target.http", &t.HTTP.Method, &t.HTTP.Timeout)
		}
		if t.Exec != nil {
			c.defDur(path+".target.exec.timeout", &t.Exec.Timeout, DefaultExecTimeout)
		}
		if t.OpenClaw != nil {
			c.defDur(path+".target.openclaw.timeout", &t.OpenClaw.Timeout, DefaultHTTPTimeout)
		}
	}
}

func (c *Config) httpDefaults(path string, method *string, timeout *Duration) {
	c.defStr(path+".method", method, DefaultHTTPMethod)
	c.defDur(path+".timeout", timeout, DefaultHTTPTimeout)
}

func index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// normalizeEmpty turns empty maps and slices into nil, so that a config read back from its
// own YAML compares equal.
func normalizeEmpty(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			normalizeEmpty(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				normalizeEmpty(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.SetZero()
			return
		}
		for i := range v.Len() {
			normalizeEmpty(v.Index(i))
		}
	case reflect.Map:
		if v.Len() == 0 {
			v.SetZero()
			return
		}
		iter := v.MapRange()
		for iter.Next() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(iter.Value())
			normalizeEmpty(e)
			v.SetMapIndex(iter.Key(), e)
		}
	}
}
