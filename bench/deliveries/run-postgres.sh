#!/usr/bin/env bash
# bench/deliveries/run-postgres.sh: schedd on its Postgres store beside River, on ONE private
# PostgreSQL cluster, in one run (each in a database of its own):
#
#   1. durable enqueue, one client then 16: schedd through its control API (a real
#      `schedd run` with deliveries.store.postgres; 201 = committed; with net/http's client,
#      and, one client, with a client on the wire, dlbench enqueue -wire), River with
#      river.Client.Insert (riverpgxv5), one job per insert, and schedd's Postgres store
#      called in process as River is (dlbench storeenqueue); all durable (fsync on,
#      synchronous_commit on, the defaults);
#   2. drain: N entries (jobs) stored beforehand, 16 workers, each delivery an HTTP POST of
#      the payload to a no-op local sink (dlbench sink), timed from the first to the last
#      delivery the sink received.
#
#   bash bench/deliveries/run-postgres.sh            # full run (about two minutes)
#   bash bench/deliveries/run-postgres.sh --quick    # smaller counts: a smoke run
#   PROFILE=1 bash bench/deliveries/run-postgres.sh  # and CPU profiles of the daemon
#   PG_BIN=/usr/lib/postgresql/16/bin bash ...       # another PostgreSQL
#
# Everything runs on BENCH_DIR (default bench/deliveries/.work, on the repository's disk).
# Raw figures (one JSON object per line), the logs and machine.txt go to
# bench/deliveries/results/<UTC time>-pg/; the side-by-side table is printed at the end.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/bench/deliveries
STAMP=$(date -u +%Y%m%dT%H%M%SZ)-pg
OUT=$HERE/results/$STAMP
WORK=${BENCH_DIR:-$HERE/.work}/$STAMP

N_ONE=4000 N_MANY=40000 N_DRAIN=50000 N_DRAIN_DEFAULT=2000
for arg in "$@"; do
	case $arg in
	--quick) N_ONE=500 N_MANY=4000 N_DRAIN=5000 N_DRAIN_DEFAULT=500 ;;
	*) echo "usage: $0 [--quick]" >&2; exit 2 ;;
	esac
done
PROFILE=${PROFILE:-}
PPROF_ADDR=127.0.0.1:${PPROF_PORT:-6061}
PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[[ -x $PG_BIN/initdb ]] || { echo "no initdb in PG_BIN=$PG_BIN" >&2; exit 1; }

# shellcheck source=bench/deliveries/lib.sh
. "$HERE/lib.sh"

# initdb and postgres refuse to run as root: as root they run as the postgres user.
AS=()
if [[ $EUID -eq 0 ]]; then
	id postgres >/dev/null 2>&1 || die "running as root and there is no postgres user"
	AS=(runuser -u postgres --)
fi

PIDS=()
PGDATA=$WORK/pg/data
cleanup() {
	local p
	for p in "${PIDS[@]+"${PIDS[@]}"}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	[[ -f $PGDATA/postmaster.pid ]] && "${AS[@]+"${AS[@]}"}" "$PG_BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$OUT" "$WORK/pg"
RESULTS=$OUT/results.jsonl
: >"$RESULTS"

log "building schedd, dlbench and riverbench"
TAGS=()
[[ -n $PROFILE ]] && TAGS=(-tags schedd_pprof)
(cd "$ROOT" && CGO_ENABLED=0 go build "${TAGS[@]+"${TAGS[@]}"}" -o "$WORK/schedd" ./cmd/schedd && go build -o "$WORK/dlbench" ./bench/deliveries)
# bench/river is a module of its own: schedd's go.mod does not depend on River.
(cd "$ROOT/bench/river" && go build -o "$WORK/riverbench" .)
SCHEDD=$WORK/schedd DLBENCH=$WORK/dlbench RIVERBENCH=$WORK/riverbench

# The cluster: a free port on 127.0.0.1, its socket in WORK, durable (fsync and
# synchronous_commit on: PostgreSQL's defaults, checked below).
PG_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
[[ $EUID -eq 0 ]] && chown postgres: "$WORK/pg"
"${AS[@]+"${AS[@]}"}" "$PG_BIN/initdb" -D "$PGDATA" -A trust -U postgres -E UTF8 >"$OUT/initdb.log" 2>&1 || die "initdb failed (see $OUT/initdb.log)"
"${AS[@]+"${AS[@]}"}" "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$WORK/pg/log" -w -t 60 \
	-o "-h 127.0.0.1 -p $PG_PORT -k $WORK/pg -c max_connections=100" start >/dev/null || die "pg_ctl start failed: $(cat "$WORK/pg/log")"
PG_PID=$(head -1 "$PGDATA/postmaster.pid")
PSQL=("$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -qAtX -v ON_ERROR_STOP=1)
[[ $("${PSQL[@]}" -c 'SHOW fsync') == on && $("${PSQL[@]}" -c 'SHOW synchronous_commit') == on ]] || die "the cluster is not durable"
dsn() { echo "host=127.0.0.1 port=$PG_PORT user=postgres dbname=$1 sslmode=disable"; }
for db in schedd_enqueue schedd_store river_enqueue schedd_drain river_drain river_drain_default; do
	"${PSQL[@]}" -c "CREATE DATABASE $db"
done
for db in river_enqueue river_drain river_drain_default; do
	"$RIVERBENCH" migrate -dsn "$(dsn $db)" >/dev/null
done

{
	echo "date: $STAMP"
	uname -a
	echo "cpus: $(nproc)"
	grep -m1 'model name' /proc/cpuinfo 2>/dev/null || true
	echo "go: $(go version)"
	echo "postgres: $("${PSQL[@]}" -c 'SELECT version()')"
	echo "postgres settings: $("${PSQL[@]}" -c "SELECT string_agg(name || '=' || setting, ' ') FROM pg_settings
		WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method', 'full_page_writes', 'commit_delay', 'shared_buffers', 'max_wal_size')")"
	echo "river: $(cd "$ROOT/bench/river" && go list -m -f '{{.Version}}' github.com/riverqueue/river)"
	echo "schedd: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "disk of $WORK:"
	df -hT "$WORK" | sed 's/^/  /'
} >"$OUT/machine.txt"

loadavg start
# cpu_ticks PID [TREE]: the CPU time (clock ticks, user + system) of PID, and with TREE of
# its children too (live, and reaped: a postmaster's backends).
cpu_ticks() {
	python3 - "$@" <<'PY'
import os, sys
def st(p):
    s = open(f"/proc/{p}/stat").read(); f = s[s.rfind(")") + 2:].split()
    return int(f[1]), int(f[11]) + int(f[12]), int(f[13]) + int(f[14])
pid = int(sys.argv[1]); _, cpu, children = st(pid); total = cpu
if len(sys.argv) > 2:
    total += children
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                pp, c, _ = st(int(d))
                if pp == pid: total += c
            except OSError: pass
print(total)
PY
}

# ---------------------------------------------------------------------------------------
log "1/2 durable enqueue: schedd (control API, Postgres store) and River, same cluster"
# As in run.sh: the sink is the gateway, which never gets ready, so nothing is sent.
cat >"$WORK/enqueue.yaml" <<EOF
gateway:
  command: [sleep, "3600"]
  readiness: {notify: {}, timeout: 1h}
deliveries:
  store:
    postgres: {dsn: "$(dsn schedd_enqueue)"}
  sinks:
    hook: {gateway: {path: /hook, base_url: "http://127.0.0.1:9"}}
EOF
start_schedd enqueue "$WORK/enqueue.yaml"
SD=(-socket "$SD_SOCK" -server-pid "$SD_PID" -db-pid "$PG_PID")
RB=(-dsn "$(dsn river_enqueue)" -db-pid "$PG_PID")
# The HTTP exchange alone (a sink that is not configured: 400 before the store).
"$DLBENCH" enqueue "${SD[@]}" -clients 1 -n "$N_ONE" -prefix bare -sink nosuch -expect 400 >>"$RESULTS"
"$DLBENCH" enqueue "${SD[@]}" -clients 16 -n "$N_MANY" -prefix bare16 -sink nosuch -expect 400 >>"$RESULTS"
# River and schedd take turns: one client, then 16; River with a unique key per job too.
"$RIVERBENCH" enqueue "${RB[@]}" -clients 1 -n "$N_ONE" -prefix one >>"$RESULTS"
profiled one "$DLBENCH" enqueue "${SD[@]}" -clients 1 -n "$N_ONE" -prefix one >>"$RESULTS"
# The same requests from a client on the wire (no Transport goroutines): the daemon's share.
"$DLBENCH" enqueue "${SD[@]}" -clients 1 -n "$N_ONE" -prefix wone -wire >>"$RESULTS"
"$DLBENCH" enqueue "${SD[@]}" -clients 1 -n "$N_ONE" -prefix bare -sink nosuch -expect 400 -wire >>"$RESULTS"
"$RIVERBENCH" enqueue "${RB[@]}" -clients 1 -n "$N_ONE" -prefix uone -unique >>"$RESULTS"
"$DLBENCH" storeenqueue -dsn "$(dsn schedd_store)" -db-pid "$PG_PID" -clients 1 -n "$N_ONE" -prefix one >>"$RESULTS"
"$RIVERBENCH" enqueue "${RB[@]}" -clients 16 -n "$N_MANY" -prefix many >>"$RESULTS"
profiled many "$DLBENCH" enqueue "${SD[@]}" -clients 16 -n "$N_MANY" -prefix many >>"$RESULTS"
"$RIVERBENCH" enqueue "${RB[@]}" -clients 16 -n "$N_MANY" -prefix umany -unique >>"$RESULTS"
"$DLBENCH" storeenqueue -dsn "$(dsn schedd_store)" -db-pid "$PG_PID" -clients 16 -n "$N_MANY" -prefix many >>"$RESULTS"
stop_schedd

# ---------------------------------------------------------------------------------------
log "2/2 drain: $N_DRAIN stored entries to a no-op HTTP sink, 16 workers, schedd then River"
# schedd: as in run.sh, the entries wait for the gateway, so they become sendable together
# once all are armed; its readiness is the ready file (an exec probe: a probe naming the
# sink's local port would make schedd take that port for the gateway's, busy).
"$DLBENCH" sink -n "$N_DRAIN" -who schedd -addr-file "$WORK/sink.addr" -ready-file "$WORK/ready" >"$WORK/sink.json" &
SINK_PID=$!
PIDS+=("$SINK_PID")
for ((i = 0; i < 500; i++)); do [[ -s $WORK/sink.addr ]] && break; sleep 0.01; done
ADDR=$(cat "$WORK/sink.addr")
"$DLBENCH" prefill -dsn "$(dsn schedd_drain)" -n "$N_DRAIN" >>"$RESULTS"
cat >"$WORK/drain.yaml" <<EOF
gateway:
  command: [sleep, "3600"]
  readiness: {exec: {command: [test, -e, "$WORK/ready"]}, timeout: 10m}
deliveries:
  workers: 16
  store:
    postgres: {dsn: "$(dsn schedd_drain)"}
  sinks:
    hook: {gateway: {path: /hook, base_url: "http://$ADDR"}}
EOF
start_schedd drain "$WORK/drain.yaml"
wait_log drain "delivery runtime armed the pending entries"
sd0=$(cpu_ticks "$SD_PID") pg0=$(cpu_ticks "$PG_PID" tree) sk0=$(cpu_ticks "$SINK_PID")
touch "$WORK/ready"
profiled drain wait "$SINK_PID" || die "the sink failed"
sd1=$(cpu_ticks "$SD_PID") pg1=$(cpu_ticks "$PG_PID" tree)
cat "$WORK/sink.json" >>"$RESULTS"
# The CPU of the drain (from the ready file to the last delivery; the sink's up to its exit),
# per delivery: schedd's, the cluster's.
awk -v n="$N_DRAIN" -v sd=$((sd1 - sd0)) -v pg=$((pg1 - pg0)) -v hz="$(getconf CLK_TCK)" \
	'BEGIN { printf "{\"bench\":\"drain cpu\",\"who\":\"schedd\",\"server_cpu_us\":%.1f,\"database_cpu_us\":%.1f}\n", sd * 1e6 / hz / n, pg * 1e6 / hz / n }' >>"$RESULTS"
stop_schedd
# River: the jobs are stored before its client starts; its 16 workers post each payload
# to the same kind of sink. River fetches at most every FetchCooldown (100 ms by default)
# up to its free workers: 16 jobs per 100 ms at most. So it runs with FetchCooldown 1 ms
# (its least), and with its default on fewer jobs.
river_drain() { # DB N WHO COOLDOWN
	rm -f "$WORK/sink.addr"
	"$DLBENCH" sink -n "$2" -who "$3" -addr-file "$WORK/sink.addr" >"$WORK/sink.json" &
	SINK_PID=$!
	PIDS+=("$SINK_PID")
	for ((i = 0; i < 500; i++)); do [[ -s $WORK/sink.addr ]] && break; sleep 0.01; done
	"$RIVERBENCH" drain -dsn "$(dsn "$1")" -db-pid "$PG_PID" -n "$2" -workers 16 -fetch-cooldown "$4" \
		-url "http://$(cat "$WORK/sink.addr")/hook" >>"$RESULTS"
	wait "$SINK_PID" || die "the sink failed"
	cat "$WORK/sink.json" >>"$RESULTS"
}
river_drain river_drain "$N_DRAIN" river 1ms
river_drain river_drain_default "$N_DRAIN_DEFAULT" river-default 0

loadavg end
log "done: $OUT"
"$DLBENCH" pgsummary -results "$RESULTS" | tee "$OUT/summary.txt"
