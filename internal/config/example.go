package config

// Example returns a commented configuration file (`schedd config example`). Its active keys
// are exactly the defaults plus a gateway command; optional settings and alternatives are
// commented out as "# key: value" lines. It Parses and Validates cleanly, and a test checks
// that it mentions every key of the schema except those not supported yet (see notYet).
func Example() string { return example }

const example = `# schedd configuration file.
#
# Every key is shown with its default. Lines like "# key: value" are optional settings or
# alternatives: uncomment them to use them. Unknown keys are errors, except top-level keys
# starting with "x-", a place for YAML anchors. Durations use Go syntax (250ms, 30s, 1m30s);
# a bare 0 is allowed. Heartbeat intervals (every under heartbeat) take more forms: a d unit
# (2d), fractions (1.5h) and a bare number of minutes (45). Every number has a range, shown
# beside it ("up to 24h": from 0, or from just above 0 where 0 makes no sense); a value
# outside it is an error.

# The gateway: the one child process schedd supervises.
gateway:
  command: [openclaw, gateway, run, --port, "18789"]  # argv; required here or after "schedd run --"
  env: {}                  # extra environment, e.g. {OPENCLAW_NO_RESPAWN: "1"}; values are secrets;
                           # a null value removes an inherited variable: {TERM: null}
  workdir: ""              # working directory, relative to this file's directory; "" = schedd's own

  # Readiness: when a started gateway counts as ready. Exactly one kind.
  readiness:
    none: {}               # ready as soon as the process has started
    # notify: {}           # ready when the gateway sends READY=1 to $NOTIFY_SOCKET
    # http:                # ready when a GET answers 2xx
    #   url: http://127.0.0.1:18789/readyz
    #   json_pointer: /ready                      # optional: the JSON value there must be true
    #   headers: {Authorization: "Bearer TOKEN"}  # sent with the request; values are secrets
    # tcp:                 # ready when a TCP connection opens
    #   address: 127.0.0.1:18789
    # exec:                # ready when the command exits 0
    #   command: [openclaw, health]
    timeout: 60s           # the whole wait, up to 24h; running out is a failed start

  # Liveness: watches the running gateway. None by default. Exactly one kind.
  # liveness:
  #   notify: {}           # the gateway sends WATCHDOG=1 (schedd sets WATCHDOG_USEC)
  #   http:                # a GET every "every"; "failures" failed checks in a row kill it
  #     url: http://127.0.0.1:18789/healthz
  #     json_pointer: /ok  # optional: the JSON value there must be true
  #   exec:                # the command must exit 0
  #     command: [openclaw, health]
  #   timeout: 5s          # per check; for notify, the watchdog interval (default 30s); up to 24h
  #   every: 10s           # http and exec only; up to 24h
  #   failures: 3          # http and exec only (1 to 1000); a warning is logged before the kill

  stop:
    signal: SIGTERM        # sent to the gateway's process group; TERM or 15 work too
    timeout: 30s           # then SIGKILL to the whole group; 0 = at once; up to 24h
    scope: group           # group, or main: the signal (and restart.signal) goes to the
                           # gateway's own pid, its children are its own to stop (not on Windows)
  backoff:                 # delay between crash restarts (a crash after a healthy run: at once)
    initial: 1s            # up to 24h
    max: 1m                # at least initial, up to 24h
    factor: 2              # 1 to 100
    jitter: 0.2            # each delay is up to this fraction longer, never past max (0 to 1)
    reset_after: 1m        # ready this long counts as a healthy run (up to 24h)
  crash_loop:              # this many failed starts within window: state crash_looping
    failures: 5            # 1 to 1000
    window: 2m             # up to 24h
  output:
    max_lines_per_second: 1000  # output lines logged per second (1 to 1000000); the rest
                                # are counted
    keep_lines: 1000            # latest lines kept in memory for "schedd logs" (1 to 100000)
  no_restart_exit_codes: []  # exit codes (1 to 255) that mean "do not restart", e.g. [78]:
                             # state failed until "schedd restart" or a config reload
  # ports: ["127.0.0.1:18789"]  # TCP addresses the gateway binds; before each start schedd
                             # waits up to 10s for them to be free, else the start fails as
                             # port_in_use. Unset: the port the readiness or liveness probe
                             # names (a local one), none with sockets below;
                             # [] turns the wait off
  sockets:                   # listening sockets schedd holds for the gateway's whole life and
                             # passes to every start (LISTEN_FDS, fds from 3); unix only:
    # - name: web            # its LISTEN_FDNAMES name
    #   listen: "127.0.0.1:8089"   # or "[::]:443", "unix:/run/gw.sock"
    #   backlog: 4096        # 1 to 65535; default the system's maximum
    #   mode: "0660"         # unix sockets: file mode and owner ("user" or "user:group")
    #   owner: "gw:gw"
    # - name: api
    #   from: api            # pass on a socket schedd itself was started with (.socket unit)

# Restart requests: SIGUSR1, "schedd restart", the control API, a changed gateway command.
restart:
  allow_signal: true       # accept SIGUSR1 as a restart request
  cooldown: 30s            # minimum gap between two restarts (up to 24h)
  delay: 2s                # wait before restarting (up to 1m); requests meanwhile are merged
  method: respawn          # respawn (stop, then start a fresh process) or signal
  signal: SIGHUP           # what method signal sends to the gateway
  overlap: false           # start the new gateway beside the old one on gateway.sockets and stop
                           # the old one once the new one sent READY=1 (respawn, notify readiness)
  signal_down_wait: 5s     # method signal with an http/tcp/exec readiness probe: done only once
                           # the probe failed (within this, up to 1h) and passed again;
                           # 0 = just a pass
  defer_until_idle:        # postpone a restart until the gateway is idle
    # enabled: true        # default: true when idle is set
    # idle:                # exactly one kind; a check that hangs or fails means busy
    #   notify: {}         # idle when the gateway reports X_SCHEDD_INFLIGHT=0
    #   http:
    #     url: http://127.0.0.1:18789/status
    #     inflight_pointer: /inFlight  # a JSON number; 0 = idle
    #     headers: {Authorization: "Bearer TOKEN"}
    #   exec:              # idle when the command exits 0
    #     command: [/usr/local/bin/gateway-idle]
    #   openclaw:          # OpenClaw: "openclaw gateway call gateway.restart.preflight"
    #     command: [openclaw]  # the CLI (argv prefix); its config needs gateway.auth.mode "none"
    #     port: 18789      # the gateway's --port (1 to 65535); or instead:
    #     url: ws://127.0.0.1:18789
    #   timeout: 5s        # per check, up to 24h (openclaw: 20s; each call starts the CLI, ~4-7s)
    poll: 500ms            # 10ms to 1h (openclaw: default 5s, at least 2s)
    max_wait: 5m           # then restart anyway (forced); at least poll, up to 24h
    fence: false           # openclaw only: once idle, admit no new work until the restart

# Heartbeats: per-agent schedules that pulse a target when due.
heartbeat:
  enabled: true            # initial state of the global switch (schedd heartbeat enable|disable)
  user_timezone: ""        # the IANA zone that timezone "user" means; "" = the host zone
  defaults:                # every agent starts from these (a shallow merge)
    every: 30m             # 30m, 1h30m, 2m500ms, 2d or a bare number of minutes, up to 365d;
                           # 0 disables
    enabled: true
    session: ""            # the session key runs use; "" = the main session
    channel: ""            # where results go (telegram, webchat...): picks visibility.channels
    account: ""            # the account on that channel: picks channels.<channel>.accounts
    # active_hours:        # run only inside this daily window; none = always
    #   start: "08:00"     # HH:MM, inclusive
    #   end: "22:00"       # HH:MM or 24:00, exclusive
    #   timezone: user     # user, local or an IANA zone like Europe/Berlin
    # target:              # what a due heartbeat pulses; exactly one kind
    #   http:
    #     url: http://127.0.0.1:18789/hooks/wake
    #     method: POST
    #     headers: {Authorization: "Bearer TOKEN"}
    #     timeout: 10s     # up to 1h
    #   exec:
    #     command: [openclaw, heartbeat]
    #     timeout: 30s     # up to 24h
    #   openclaw:          # posts {"text", "mode": "now", "agentId", "sessionKey"} to /hooks/wake
    #     url: http://127.0.0.1:18789/hooks/wake
    #     token: TOKEN     # the gateway's hooks.token (a secret), or instead:
    #     token_env: OPENCLAW_HOOKS_TOKEN  # the variable of schedd's that holds it
    #     timeout: 10s     # up to 1h
    # visibility:          # which results are shown; unset keys fall back to the built-ins
    #   show_ok: false
    #   show_alerts: true
    #   use_indicator: true
    #   channels:          # per channel, with per-account settings inside
    #     telegram:
    #       show_ok: true
    #       show_alerts: true
    #       use_indicator: true
    #       accounts:
    #         work: {show_ok: false, show_alerts: true, use_indicator: true}
  agents:                  # the agents that run heartbeats; none listed = only the default agent
  #   - id: main           # letters, digits, '.', '_' and '-'; unique
  #     every: 15m         # any key of defaults can be set per agent
  #     enabled: true

# Durable deliveries: stored before they are acknowledged, retried, dead-lettered with a reason.
deliveries:
  store:
    sqlite:
      path: schedd.db      # relative to the state dir
      synchronous: FULL    # FULL: durable on power loss; NORMAL: may lose the newest entries
    # postgres:            # instead of sqlite: one store shared by a fleet of schedd hosts
    #   dsn: "host=db user=schedd dbname=schedd"  # or a postgres:// URL; a secret, never shown
    #   host_id: web-1     # unique in the fleet; default: host name + ":" + state dir
    #   lease: 30s         # others rescue this host's claims (and take over its cron jobs) this
    #                      # long after its last heartbeat (up to 1h)
    #   max_conns: 8       # connection pool size (1 to 1000)
  max_retries: 5           # transient failures before an entry is dead-lettered (0 to 1000)
  schedule: [5s, 25s, 2m, 10m]  # retry delays, each up to 168h; the last one repeats
  jitter: 0.2              # each delay is up to this fraction shorter (0 to 1)
  max_payload: 1MiB        # up to 64MiB; bytes, or with a unit: KiB, MiB, GiB (KB, MB, GB: 1000s)
  max_entries: 1000000     # stored entries at most (1 to 10000000)
  permanent_errors: []     # extra Go regexps that make an error permanent, e.g. ["(?i)quota"]
  recovery_budget: 1m      # time limit of the startup recovery pass (up to 24h)
  replay_spacing: 250ms    # pause between recovered sends (up to 1h)
  max_retry_after: 1h      # a sink's Retry-After is clamped to this (up to 168h)
  workers: 16              # concurrent sends (1 to 1000)
  ttl: 0s                  # an entry not delivered within this is dead-lettered unsent; 0 = never;
                           # up to 8760h (365 days), like the two retentions
  delivered_retention: 720h  # how long a delivered entry's idempotency key is kept; 0 = forever;
                             # up to 8760h
  dead_retention: 0s       # how long dead letters are kept; 0 = until purged; up to 8760h
  sinks:                   # named destinations for deliveries; exactly one kind each
  #   webhook:
  #     http:
  #       url: https://example.net/hook
  #       method: POST
  #       headers: {Authorization: "Bearer TOKEN"}
  #       timeout: 10s     # up to 1h
  #   script:
  #     exec:              # the payload on stdin; exit 0 = delivered
  #       command: [/usr/local/bin/deliver]
  #       timeout: 30s     # up to 24h
  #       transient_codes: [75]  # exit codes (1 to 255) that mean "retry later"; others are
  #                        # permanent
  #   outbox:
  #     gateway:
  #       path: /hooks/deliver   # HTTP path on the gateway
  #       timeout: 10s     # up to 1h
  #       base_url: http://127.0.0.1:18789  # default: from the readiness or liveness http url
  #   agent:
  #     openclaw:          # the payload is the hook's JSON body; a refusal (4xx) is permanent
  #       url: http://127.0.0.1:18789/hooks/agent
  #       token_env: OPENCLAW_HOOKS_TOKEN  # or token: TOKEN (the gateway's hooks.token)
  #       timeout: 10s     # up to 1h

# Cron jobs: runs on a schedule, each one a task kept in the state dir (cron.db, created with
# the first job). They run while the gateway is down, and their history survives restarts.
# With the postgres store the hosts of the database share them: one host runs them, each slot
# once across the fleet, with their tasks in the database; give every host the same jobs.
cron:
  workers: 4               # tasks that run at once (1 to 1000)
  queue_size: 1000         # due tasks that may wait for a worker (1 to 1000000); one more is
                           # skipped (queue_full)
  jobs:                    # none by default
  #   - name: morning      # unique: letters, digits, '.', '_' and '-'
  #     schedule: "0 7 * * *"  # exactly one of schedule, every and at: a cron expression
  #                        # (5 fields, or 6 with seconds first; L, W, #, @daily...), or
  #     every: 30m         # an interval from 1s to 8760h, counted from the Unix epoch, or
  #     at: "2027-01-01T09:00:00+01:00"  # one run at an RFC 3339 instant
  #     timezone: Europe/Berlin  # the IANA zone of schedule; "" = the host's
  #     jitter: 0s         # each run later by a fixed offset in [0, jitter) taken from the name;
  #                        # up to 24h
  #     missed: run_once   # slots missed while schedd was down: run_once (one catch-up) or skip
  #     starting_deadline: 0s  # skip a run that cannot start this long after its time; 0 = none;
  #                        # up to 168h
  #     concurrency: forbid    # a run due while the last one is active: forbid (skip it),
  #                        # replace (cancel the active one) or allow
  #     retry:             # a run that failed transiently is run again
  #       max: 3           # times per run (0 to 100); 0 = never
  #       schedule: [30s, 1m, 5m, 15m, 1h]  # the wait after the 1st, 2nd... failure in a row;
  #                        # each up to 168h
  #     disable_after: 10  # failures in a row that switch the job off (0 to 10000); 0 = never
  #     history_limit: 100 # ended tasks kept for the job (1 to 10000)
  #     priority: 0        # lower runs first when tasks wait for a worker (-1048576 to 1048576)
  #     timeout: 10m       # a run still going then is stopped (timed_out); up to 168h
  #     enabled: true      # false: off until "schedd cron enable"
  #     action:            # exactly one kind
  #       heartbeat_wake: {agent: main, reason: "cron:morning"}  # agent "" = every agent
  #       exec:            # in its own process group, stopped on timeout or cancel
  #         command: [/usr/local/bin/report, --daily]
  #         env: {REPORT_TOKEN: "TOKEN"}  # added to schedd's environment; values are secrets
  #         timeout: 0s    # 0 = the job's timeout; up to 168h
  #       http:            # 2xx succeeds; 408, 429, 5xx and network errors are retried
  #         url: http://127.0.0.1:18789/hooks/cron
  #         method: POST   # default POST with a body, GET without
  #         headers: {Authorization: "Bearer TOKEN"}  # values are secrets
  #         body: '{"job": "morning"}'
  #         timeout: 0s    # 0 = the job's timeout; up to 1h
  #       deliver: {sink: webhook, data: "good morning"}  # a durable delivery to a sink

# The local control API (HTTP and JSON over a unix socket) that the schedd CLI uses.
control:
  socket: ""               # "" = the platform default; relative to this file's directory
  max_body: 2097152        # request body limit in bytes, up to 67108864 (64MiB); at least
                           # deliveries.max_payload
  request_timeout: 30s     # to read a request and write its reply (up to 1h)

# Prometheus metrics: GET /metrics over plain HTTP, without authentication.
metrics:
  listen: ""               # host:port, e.g. 127.0.0.1:9477; "" = off
  allow_remote: false      # true lets listen be a non-loopback address that other hosts reach

log:
  format: console          # console or json
  level: info              # debug, info, warn or error

state_dir: ""              # durable state; "" = the platform default; relative to this file's dir
`
