#!/usr/bin/env bash
# bench/deliveries/run.sh: schedd's durable deliveries, measured in one run on one disk:
#
#   1. the disk's limits: append+fdatasync per record, and one SQLite row per transaction
#      (WAL, synchronous=FULL, the same pure-Go SQLite schedd uses);
#   2. durable enqueue through the control API (a real schedd, 201 = on disk), one client
#      and 16 concurrent clients;
#   3. delivery throughput of 50,000 stored entries to a no-op local HTTP sink, 16 workers;
#   4. startup with 100,000 pending entries: time until all are armed, and the RSS.
#
#   bash bench/deliveries/run.sh             # full run (about a minute)
#   bash bench/deliveries/run.sh --quick     # smaller counts: a smoke run
#   bash bench/deliveries/run.sh --enqueue   # the limits and the enqueue figures only
#   PROFILE=1 bash bench/deliveries/run.sh --enqueue   # and CPU/alloc profiles of the daemon
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

N_FSYNC=2000 N_SQLITE=3000 N_ONE=4000 N_MANY=40000 N_DRAIN=50000 N_PENDING=100000
ONLY_ENQUEUE=
for arg in "$@"; do
	case $arg in
	--quick) N_FSYNC=300 N_SQLITE=300 N_ONE=500 N_MANY=4000 N_DRAIN=5000 N_PENDING=10000 ;;
	--enqueue) ONLY_ENQUEUE=1 ;;
	*) echo "usage: $0 [--quick] [--enqueue]" >&2; exit 2 ;;
	esac
done
# PROFILE=1: schedd is built with its pprof hook (-tags schedd_pprof), and the enqueue runs
# are profiled (CPU and allocations) into OUT.
PROFILE=${PROFILE:-}
PPROF_ADDR=127.0.0.1:${PPROF_PORT:-6061}

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

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

log "building schedd and dlbench"
TAGS=()
[[ -n $PROFILE ]] && TAGS=(-tags schedd_pprof)
(cd "$ROOT" && CGO_ENABLED=0 go build "${TAGS[@]+"${TAGS[@]}"}" -o "$WORK/schedd" ./cmd/schedd && go build -o "$WORK/dlbench" ./bench/deliveries)
SCHEDD=$WORK/schedd
DLBENCH=$WORK/dlbench

{
	echo "date: $STAMP"
	uname -a
	echo "cpus: $(nproc)"
	grep -m1 'model name' /proc/cpuinfo 2>/dev/null || true
	echo "go: $(go version)"
	echo "schedd: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "disk of $WORK:"
	df -hT "$WORK" | sed 's/^/  /'
} >"$OUT/machine.txt"

# start_schedd NAME CONFIG: runs schedd with its state dir and socket in WORK and its JSON
# log in OUT/NAME.log; sets SD_PID, SD_SOCK and SD_START (unix ns just before the start).
start_schedd() {
	local name=$1 cfg=$2
	SD_SOCK=$WORK/$name.sock
	SD_START=$(date +%s%N)
	SCHEDD_PPROF_ADDR=${PROFILE:+$PPROF_ADDR} "$SCHEDD" run --config "$cfg" --state-dir "$WORK/$name" --socket "$SD_SOCK" --service-manager none \
		--log-format json 2>"$OUT/$name.log" &
	SD_PID=$!
	PIDS+=("$SD_PID")
	local i
	for ((i = 0; i < 3000; i++)); do
		"$SCHEDD" status --socket "$SD_SOCK" >/dev/null 2>&1 && return 0
		kill -0 "$SD_PID" 2>/dev/null || die "schedd $name exited; see $OUT/$name.log"
		sleep 0.01
	done
	die "schedd $name did not answer; see $OUT/$name.log"
}

stop_schedd() {
	kill -TERM "$SD_PID"
	wait "$SD_PID" || die "schedd exited with $?"
}

# wait_log NAME MSG: waits (60 s at most) until schedd's log has a line with "msg":"MSG".
wait_log() {
	local i
	for ((i = 0; i < 6000; i++)); do
		grep -q "\"msg\":\"$2\"" "$OUT/$1.log" && return 0
		sleep 0.01
	done
	die "no \"$2\" in $OUT/$1.log"
}

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
# profiled NAME CMD...: runs CMD, with a CPU profile of schedd taken meanwhile (PROFILE=1)
# into OUT/NAME.cpu.pprof, and the allocations it made into OUT/NAME.allocs.pprof.
profiled() {
	local name=$1 ppid=
	shift
	if [[ -n $PROFILE ]]; then
		curl -s -o "$OUT/$name.allocs0.pprof" "http://$PPROF_ADDR/debug/pprof/allocs"
		curl -s -o "$OUT/$name.cpu.pprof" "http://$PPROF_ADDR/debug/pprof/profile?seconds=${PROFILE_SECONDS:-3}" &
		ppid=$!
	fi
	"$@"
	if [[ -n $PROFILE ]]; then
		wait "$ppid"
		curl -s -o "$OUT/$name.allocs.pprof" "http://$PPROF_ADDR/debug/pprof/allocs"
	fi
}
# The same request to a sink that is not configured: answered (400) before the store, so
# this is the round trip of the HTTP path alone.
"$DLBENCH" enqueue -socket "$SD_SOCK" -clients 1 -n "$N_ONE" -prefix bare -sink nosuch -expect 400 >>"$RESULTS"
profiled one "$DLBENCH" enqueue -socket "$SD_SOCK" -clients 1 -n "$N_ONE" -prefix one >>"$RESULTS"
profiled many "$DLBENCH" enqueue -socket "$SD_SOCK" -clients 16 -n "$N_MANY" -prefix many >>"$RESULTS"
stop_schedd

if [[ -n $ONLY_ENQUEUE ]]; then
	log "done: $OUT"
	"$DLBENCH" summary -results "$RESULTS" | tee "$OUT/summary.txt"
	exit 0
fi

# ---------------------------------------------------------------------------------------
log "3/4 delivery throughput: $N_DRAIN stored entries to a no-op HTTP sink, 16 workers"
# The entries wait for the gateway (readiness: the sink's /readyz, 503 until the ready
# file exists), so the runtime has them all armed when they become sendable together.
"$DLBENCH" sink -n "$N_DRAIN" -addr-file "$WORK/sink.addr" -ready-file "$WORK/ready" >"$WORK/sink.json" &
SINK_PID=$!
PIDS+=("$SINK_PID")
for ((i = 0; i < 500; i++)); do [[ -s $WORK/sink.addr ]] && break; sleep 0.01; done
ADDR=$(cat "$WORK/sink.addr")
"$DLBENCH" prefill -db "$WORK/drain/schedd.db" -n "$N_DRAIN" >>"$RESULTS"
cat >"$WORK/drain.yaml" <<EOF
gateway:
  command: [sleep, "3600"]
  readiness: {http: {url: "http://$ADDR/readyz"}, timeout: 10m}
deliveries:
  workers: 16
  sinks:
    hook: {gateway: {path: /hook}}
EOF
start_schedd drain "$WORK/drain.yaml"
wait_log drain "delivery runtime armed the pending entries"
touch "$WORK/ready"
wait "$SINK_PID" || die "the sink failed"
cat "$WORK/sink.json" >>"$RESULTS"
stop_schedd

# ---------------------------------------------------------------------------------------
log "4/4 startup with $N_PENDING pending entries"
# The entries are due in an hour: the recovery pass defers them all, and the runtime arms
# every one of them in its timer heap.
"$DLBENCH" prefill -db "$WORK/pending/schedd.db" -n "$N_PENDING" -due-at $(($(date +%s%3N) + 3600000)) >>"$RESULTS"
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

log "done: $OUT"
"$DLBENCH" summary -results "$RESULTS" | tee "$OUT/summary.txt"
