#!/usr/bin/env bash
# bench/deliveries/run.sh: schedd's durable deliveries, measured in one run on one disk:
#
#   1. the disk's limits: append+fdatasync per record, and one SQLite row per transaction
#      (WAL, synchronous=FULL, the same pure-Go SQLite schedd uses);
#   2. durable enqueue through the control API (a real schedd, 201 = on disk), one client
#      and 16 concurrent clients, one entry per request and batches; beside it, in the same
#      run, asynq enqueueing on a private Redis with appendfsync always (same payload,
#      count and concurrency);
#   3. delivery throughput of 50,000 stored entries to a no-op local HTTP sink, 16 workers;
#   4. startup with 100,000 pending entries: time until all are armed, and the RSS.
#
#   bash bench/deliveries/run.sh             # full run (about a minute)
#   bash bench/deliveries/run.sh --quick     # smaller counts: a smoke run
#   bash bench/deliveries/run.sh --enqueue   # the limits and the enqueue figures only
#   BATCH=100 bash bench/deliveries/run.sh   # entries per request of the batch run (100)
#   PROFILE=1 bash bench/deliveries/run.sh --enqueue   # and CPU/alloc profiles of the daemon
#   PROFILE=1 PROFILE_SECONDS=5 bash bench/deliveries/run.sh   # the drain's first 5 s profiled too
#   BENCH_DIR=/mnt/other bash bench/deliveries/run.sh   # measure another disk
#
# Everything runs on BENCH_DIR (default bench/deliveries/.work, on the repository's disk).
# Raw figures, one JSON object per line, and the schedd logs go to
# bench/deliveries/results/<UTC time>/; a summary with the targets is printed at the end.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/bench/deliveries
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=$HERE/results/$STAMP
WORK=${BENCH_DIR:-$HERE/.work}/$STAMP

N_FSYNC=2000 N_SQLITE=3000 N_ONE=4000 N_MANY=40000 N_BATCH=200000 N_DRAIN=50000 N_PENDING=100000
BATCH=${BATCH:-100}
REDIS_PORT=${REDIS_PORT:-6390}
ONLY_ENQUEUE=
for arg in "$@"; do
	case $arg in
	--quick) N_FSYNC=300 N_SQLITE=300 N_ONE=500 N_MANY=4000 N_BATCH=20000 N_DRAIN=5000 N_PENDING=10000 ;;
	--enqueue) ONLY_ENQUEUE=1 ;;
	*) echo "usage: $0 [--quick] [--enqueue]" >&2; exit 2 ;;
	esac
done
# PROFILE=1: schedd is built with its pprof hook (-tags schedd_pprof), and the enqueue runs
# are profiled (CPU and allocations) into OUT.
PROFILE=${PROFILE:-}
PPROF_ADDR=127.0.0.1:${PPROF_PORT:-6061}

# shellcheck source=bench/deliveries/lib.sh
. "$HERE/lib.sh"

PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]+"${PIDS[@]}"}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$OUT" "$WORK"
RESULTS=$OUT/results.jsonl
: >"$RESULTS"

# Debian's redis-server for the asynq comparison, installed if missing (as root; a
# temporary policy-rc.d keeps its package from starting a system-wide server).
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	[[ $EUID -eq 0 ]] || SUDO=sudo
	log "installing redis-server with apt-get"
	policy=/usr/sbin/policy-rc.d made=0
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' | ${SUDO:-} tee "$policy" >/dev/null && ${SUDO:-} chmod +x "$policy" && made=1
	fi
	{ ${SUDO:-} apt-get update -qq && ${SUDO:-} env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends redis-server; } >"$OUT/apt.log" 2>&1 || die "apt-get failed (see $OUT/apt.log)"
	((made)) && ${SUDO:-} rm -f "$policy"
fi

log "building schedd, dlbench and asynqbench"
TAGS=()
[[ -n $PROFILE ]] && TAGS=(-tags schedd_pprof)
(cd "$ROOT" && CGO_ENABLED=0 go build "${TAGS[@]+"${TAGS[@]}"}" -o "$WORK/schedd" ./cmd/schedd && go build -o "$WORK/dlbench" ./bench/deliveries)
# bench/asynq is a module of its own: schedd's go.mod does not depend on asynq.
(cd "$ROOT/bench/asynq" && go build -o "$WORK/asynqbench" .)
SCHEDD=$WORK/schedd
DLBENCH=$WORK/dlbench
ASYNQBENCH=$WORK/asynqbench

{
	echo "date: $STAMP"
	uname -a
	echo "cpus: $(nproc)"
	grep -m1 'model name' /proc/cpuinfo 2>/dev/null || true
	echo "go: $(go version)"
	echo "redis: $(redis-server --version)"
	echo "schedd: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "disk of $WORK:"
	df -hT "$WORK" | sed 's/^/  /'
} >"$OUT/machine.txt"

loadavg start

# ---------------------------------------------------------------------------------------
log "1/4 the disk's limits"
"$DLBENCH" fsync -dir "$WORK" -n "$N_FSYNC" >>"$RESULTS"
"$DLBENCH" sqlite -dir "$WORK" -n "$N_SQLITE" >>"$RESULTS"

# ---------------------------------------------------------------------------------------
log "2/4 durable enqueue through the control API"
# The sink is the gateway, which never gets ready (notify readiness, and sleep never says
# READY=1): nothing is sent, so the figures are the enqueue path alone.
cat >"$WORK/enqueue.yaml" <<EOF
gateway:
  command: [sleep, "3600"]
  readiness: {notify: {}, timeout: 1h}
deliveries:
  sinks:
    hook: {gateway: {path: /hook, base_url: "http://127.0.0.1:9"}}
EOF
start_schedd enqueue "$WORK/enqueue.yaml"
# asynq's store: a private Redis on the same disk, every write synced before its reply
# (appendfsync always), no snapshots.
mkdir -p "$WORK/redis"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$WORK/redis" --appendonly yes --appendfsync always \
	--save '' --daemonize no --logfile "$OUT/redis.log" &
REDIS_PID=$!
PIDS+=("$REDIS_PID")
for ((i = 0; i < 500; i++)); do
	[[ $(redis-cli -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]] && break
	kill -0 "$REDIS_PID" 2>/dev/null || die "redis-server exited; see $OUT/redis.log"
	sleep 0.01
done
[[ $(redis-cli -p "$REDIS_PORT" config get appendfsync | tail -1) == always ]] || die "redis is not on appendfsync always"
# The same request to a sink that is not configured: answered (400) before the store, so
# this is the round trip of the HTTP path alone.
"$DLBENCH" enqueue -socket "$SD_SOCK" -server-pid "$SD_PID" -clients 1 -n "$N_ONE" -prefix bare -sink nosuch -expect 400 >>"$RESULTS"
"$DLBENCH" enqueue -socket "$SD_SOCK" -server-pid "$SD_PID" -clients 16 -n "$N_MANY" -prefix bare16 -sink nosuch -expect 400 >>"$RESULTS"
# schedd and asynq take turns, one client then 16, then schedd's batches.
"$ASYNQBENCH" -addr "127.0.0.1:$REDIS_PORT" -server-pid "$REDIS_PID" -clients 1 -n "$N_ONE" -prefix one >>"$RESULTS"
profiled one "$DLBENCH" enqueue -socket "$SD_SOCK" -server-pid "$SD_PID" -clients 1 -n "$N_ONE" -prefix one >>"$RESULTS"
"$ASYNQBENCH" -addr "127.0.0.1:$REDIS_PORT" -server-pid "$REDIS_PID" -clients 16 -n "$N_MANY" -prefix many >>"$RESULTS"
profiled many "$DLBENCH" enqueue -socket "$SD_SOCK" -server-pid "$SD_PID" -clients 16 -n "$N_MANY" -prefix many >>"$RESULTS"
profiled batch "$DLBENCH" enqueue -socket "$SD_SOCK" -server-pid "$SD_PID" -clients 16 -n "$N_BATCH" -batch "$BATCH" -prefix batch >>"$RESULTS"
kill -TERM "$REDIS_PID"
wait "$REDIS_PID" || true
stop_schedd

if [[ -n $ONLY_ENQUEUE ]]; then
	loadavg end
	log "done: $OUT"
	"$DLBENCH" summary -results "$RESULTS" | tee "$OUT/summary.txt"
	exit 0
fi

# ---------------------------------------------------------------------------------------
log "3/4 delivery throughput: $N_DRAIN stored entries to a no-op HTTP sink, 16 workers"
# The entries wait for the gateway (readiness: the ready file, an exec probe; a probe naming
# the sink's local port would make schedd take that port for the gateway's, busy), so the
# runtime has them all armed when they become sendable together.
"$DLBENCH" sink -n "$N_DRAIN" -addr-file "$WORK/sink.addr" -ready-file "$WORK/ready" >"$WORK/sink.json" &
SINK_PID=$!
PIDS+=("$SINK_PID")
for ((i = 0; i < 500; i++)); do [[ -s $WORK/sink.addr ]] && break; sleep 0.01; done
ADDR=$(cat "$WORK/sink.addr")
"$DLBENCH" prefill -db "$WORK/drain/schedd.db" -n "$N_DRAIN" >>"$RESULTS"
cat >"$WORK/drain.yaml" <<EOF
gateway:
  command: [sleep, "3600"]
  readiness: {exec: {command: [test, -e, "$WORK/ready"]}, timeout: 10m}
deliveries:
  workers: 16
  sinks:
    hook: {gateway: {path: /hook, base_url: "http://$ADDR"}}
EOF
start_schedd drain "$WORK/drain.yaml"
wait_log drain "delivery runtime armed the pending entries"
# PROFILE=1: the drain's first seconds are profiled (CPU) into OUT.
if [[ -n $PROFILE ]]; then
	curl -s -o "$OUT/drain.cpu.pprof" "http://$PPROF_ADDR/debug/pprof/profile?seconds=${PROFILE_SECONDS:-3}" &
	PPID_DRAIN=$!
fi
touch "$WORK/ready"
wait "$SINK_PID" || die "the sink failed"
[[ -n $PROFILE ]] && wait "$PPID_DRAIN"
cat "$WORK/sink.json" >>"$RESULTS"
stop_schedd

# ---------------------------------------------------------------------------------------
log "4/4 startup with $N_PENDING pending entries"
# The entries are due in five minutes, within the runtime's ten-minute horizon: the recovery
# pass defers them all, and the runtime arms every one of them in its timer heap. (Entries
# due later stay in the store until the horizon reaches them; bench/backlog measures that.)
"$DLBENCH" prefill -db "$WORK/pending/schedd.db" -n "$N_PENDING" -due-at $(($(date +%s%3N) + 300000)) >>"$RESULTS"
cat >"$WORK/pending.yaml" <<EOF
gateway:
  command: [sleep, "3600"]
deliveries:
  sinks:
    hook: {http: {url: "http://127.0.0.1:9/hook"}}
EOF
start_schedd pending "$WORK/pending.yaml"
wait_log pending "delivery runtime armed the pending entries"
"$DLBENCH" timeline -log "$OUT/pending.log" -start "$SD_START" >>"$RESULTS"
sleep 1
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$SD_PID/status")
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$SD_PID/status")
awk -v n="$N_PENDING" -v rss="$rss" -v hwm="$hwm" \
	'BEGIN { printf "{\"bench\":\"rss with pending entries\",\"entries\":%d,\"rss_mb\":%.1f,\"peak_rss_mb\":%.1f}\n", n, rss / 1024, hwm / 1024 }' >>"$RESULTS"
stop_schedd

loadavg end
log "done: $OUT"
"$DLBENCH" summary -results "$RESULTS" | tee "$OUT/summary.txt"
