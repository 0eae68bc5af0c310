#!/usr/bin/env bash
# bench/heartbeat/run.sh: heartbeats with many agents, in three parts. See README.md here.
#
#   A. The heartbeat service in one process (hbbench inproc) with a no-op target: what the
#      scheduling, the gates, the per-pulse log line and the state file cost, and the Go
#      heap per agent.
#   B. The real daemon (schedd run) pulsing an HTTP target on loopback (hbbench serve): its
#      CPU and RSS, and how late pulses fire, seen by the target and by schedd itself.
#   C. The same load as B from a bare net/http client (hbbench floor): the transport's own
#      CPU, the floor under B's figure.
#
#   bash bench/heartbeat/run.sh                          # A: 0..20000 agents, B and C: ..10000
#   PART=b AGENTS="10000" bash bench/heartbeat/run.sh    # only B, only 10000 agents
#   EVERY=10s WARMUP=5 MEASURE=10 bash bench/heartbeat/run.sh   # smoke run
#
# Needs Linux (/proc) and Go. Raw files go to bench/heartbeat/results/<UTC time>/.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/bench/heartbeat
PART=${PART:-abc}
INPROC_AGENTS=${INPROC_AGENTS:-${AGENTS:-"0 1000 10000 20000"}}
AGENTS=${AGENTS:-"0 1000 10000"}
EVERY=${EVERY:-30s}
WARMUP=${WARMUP:-35}   # seconds before measuring: one interval, so every agent pulsed once
MEASURE=${MEASURE:-60} # seconds measured
OUT=$HERE/results/$(date -u +%Y%m%dT%H%M%SZ)
BIN=$OUT/bin

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
# stamp VAR: VAR = CLOCK_REALTIME in ns (µs resolution, no fork).
stamp() { local t=${EPOCHREALTIME/[.,]/}; printf -v "$1" '%s' "${t}000"; }

[ -r /proc/self/stat ] || die "needs Linux /proc"
TCK=$(getconf CLK_TCK)
mkdir -p "$BIN"
log "building schedd and hbbench into $BIN"
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$BIN/schedd" ./cmd/schedd && go build -o "$BIN/hbbench" ./bench/heartbeat)
SCHEDD=${SCHEDD:-$BIN/schedd}
{
	echo "date: $(date -u +%FT%TZ)"
	echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "go: $(go version)"
	echo "cpu: $(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo) x $(nproc)"
	echo "kernel: $(uname -sr)"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$OUT/machine.txt"

PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT

# cpu_ticks PID: utime + stime of the whole process, in clock ticks.
cpu_ticks() { local f; read -r -a f < <(sed 's/^.*) //' "/proc/$1/stat"); echo $((f[11] + f[12])); }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
# start_target DIR: hbbench serve, recording pulses in DIR; sets tpid once it listens.
start_target() {
	"$BIN/hbbench" serve -addr-file "$1/addr" -out "$1/pulses" 2>"$1/target.log" &
	tpid=$!
	PIDS+=("$tpid")
	for _ in $(seq 100); do [ -s "$1/addr" ] && break; sleep 0.05; done
	[ -s "$1/addr" ] || die "the target did not start"
}

if [[ $PART == *a* ]]; then
	echo "A. heartbeat service in process, no-op exec target, JSON log line per pulse" | tee -a "$OUT/summary.txt"
	printf '%-7s %-6s %7s %8s %7s %9s %11s %9s %9s %9s %9s\n' agents every pulses pulses/s cpu% heap_mib heap_b/agent \
		rss_mib p50ms p99ms maxms | tee -a "$OUT/summary.txt"
	for n in $INPROC_AGENTS; do
		log "A: $n agents every $EVERY: warming up ${WARMUP}s, then measuring ${MEASURE}s"
		mkdir -p "$OUT/inproc-$n"
		line=$("$BIN/hbbench" inproc -agents "$n" -every "$EVERY" -warmup "${WARMUP}s" -measure "${MEASURE}s" -dir "$OUT/inproc-$n")
		echo "$line" >"$OUT/inproc-$n/stats.txt"
		get() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$line" | head -1; }
		printf '%-7s %-6s %7s %8s %7s %9s %11s %9s %9s %9s %9s\n' "$n" "$EVERY" "$(get pulses)" "$(get pulses_per_s)" \
			"$(get cpu_pct)" "$(get heap_mib)" "$(get heap_per_agent_b)" "$(get rss_mib)" \
			"$(get late_p50_ms)" "$(get late_p99_ms)" "$(get late_max_ms)" | tee -a "$OUT/summary.txt"
	done
	echo | tee -a "$OUT/summary.txt"
fi
if [[ $PART == *b* ]]; then
	echo "B. schedd run, HTTP target on loopback (tgt: arrival at the target; sd: start inside schedd)" | tee -a "$OUT/summary.txt"
	printf '%-7s %-6s %7s %8s %7s %9s %9s %9s %9s %9s %9s %9s\n' agents every pulses pulses/s cpu% rss_mib hwm_mib \
		tgt_p50ms tgt_p99ms tgt_maxms sd_p50ms sd_p99ms | tee -a "$OUT/summary.txt"
	for n in $AGENTS; do
		dir=$OUT/agents-$n
		mkdir -p "$dir"
		start_target "$dir"
		"$BIN/hbbench" config -agents "$n" -every "$EVERY" -url "http://$(cat "$dir/addr")/pulse" >"$dir/schedd.yaml"
		"$SCHEDD" run --config "$dir/schedd.yaml" --state-dir "$dir/state" --socket "$dir/schedd.sock" \
			--service-manager none --log-format json -- sleep 1000000 >"$dir/schedd.log" 2>&1 &
		spid=$!
		PIDS+=("$spid")
		for _ in $(seq 200); do "$SCHEDD" status --socket "$dir/schedd.sock" >/dev/null 2>&1 && break; sleep 0.05; done
		log "B: $n agents every $EVERY: warming up ${WARMUP}s, then measuring ${MEASURE}s"
		sleep "$WARMUP"
		stamp t0
		c0=$(cpu_ticks "$spid")
		sleep "$MEASURE"
		c1=$(cpu_ticks "$spid")
		stamp t1
		rss=$(status_kb "$spid" VmRSS)
		hwm=$(status_kb "$spid" VmHWM)
		threads=$(status_kb "$spid" Threads)
		"$SCHEDD" status --json --socket "$dir/schedd.sock" >"$dir/status.json"
		"$SCHEDD" stop --socket "$dir/schedd.sock" >/dev/null
		sleep 0.5 # the target flushes its records every 200 ms
		kill "$tpid" 2>/dev/null || true
		stats=$("$BIN/hbbench" stats -from "$t0" -to "$t1" -pulses "$dir/pulses" -log "$dir/schedd.log")
		echo "$stats" >"$dir/stats.txt"
		echo "threads=$threads rss_kb=$rss hwm_kb=$hwm cpu_ticks=$((c1 - c0)) clk_tck=$TCK window_ns=$((t1 - t0))" >>"$dir/stats.txt"
		get() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$stats" | head -1; }
		secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e9}')
		pulses=$(get target_pulses)
		printf '%-7s %-6s %7s %8.1f %7.2f %9.1f %9.1f %9s %9s %9s %9s %9s\n' "$n" "$EVERY" "$pulses" \
			"$(awk -v p="$pulses" -v s="$secs" 'BEGIN {print p / s}')" \
			"$(awk -v c=$((c1 - c0)) -v t="$TCK" -v s="$secs" 'BEGIN {print 100 * c / t / s}')" \
			"$(awk -v k="$rss" 'BEGIN {print k / 1024}')" "$(awk -v k="$hwm" 'BEGIN {print k / 1024}')" \
			"$(get target_p50_ms)" "$(get target_p99_ms)" "$(get target_max_ms)" "$(get daemon_p50_ms)" "$(get daemon_p99_ms)" |
			tee -a "$OUT/summary.txt"
	done
	echo | tee -a "$OUT/summary.txt"
fi
if [[ $PART == *c* ]]; then
	echo "C. bare net/http client, the same load as B (bursts on the phase grid)" | tee -a "$OUT/summary.txt"
	for n in $AGENTS; do
		[[ $n -gt 0 ]] || continue
		dir=$OUT/floor-$n
		mkdir -p "$dir"
		start_target "$dir"
		log "C: the load of $n agents every $EVERY: measuring ${MEASURE}s"
		"$BIN/hbbench" floor -agents "$n" -every "$EVERY" -measure "${MEASURE}s" \
			-url "http://$(cat "$dir/addr")/pulse" | tee "$dir/stats.txt" | tee -a "$OUT/summary.txt"
		kill "$tpid" 2>/dev/null || true
	done
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
log "raw files in $OUT"
