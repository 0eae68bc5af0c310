#!/usr/bin/env bash
# bench/cron/run.sh: 10,000 cron jobs due every minute, run by a real `schedd run` daemon and,
# in the same run, in process by go-co-op/gocron v2. See bench/README.md, "Cron jobs".
#
#   bash bench/cron/run.sh                        # both shapes, schedd then gocron, 3 minutes each
#   SHAPES=burst bash bench/cron/run.sh           # only all-due-at-once (or SHAPES=jitter)
#   RUNNERS=schedd MINUTES=1 bash bench/cron/run.sh   # a smoke run of schedd alone
#   SCHEDD=/path/to/schedd RUNNERS=schedd bash bench/cron/run.sh   # another build
#
# Knobs: JOBS (10000), MINUTES (slots measured, 3), SHAPES ("burst jitter"), RUNNERS
# ("schedd gocron gocron4"; gocronN is gocron limited to N concurrent runs, as schedd's workers), WORKERS (cron.workers; empty: the default), BASELINE (1: measure the
# 0-job processes), SCHEDD (a built binary; default: built here as released).
# Needs Linux (/proc) and Go. Every process it starts is stopped on exit; raw files go to
# bench/cron/results/<UTC time>/.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/bench/cron
JOBS=${JOBS:-10000}
MINUTES=${MINUTES:-3}
SHAPES=${SHAPES:-"burst jitter"}
RUNNERS=${RUNNERS:-"schedd gocron gocron4"}
WORKERS=${WORKERS:-}
BASELINE=${BASELINE:-1}
OUT=$HERE/results/$(date -u +%Y%m%dT%H%M%SZ)
BIN=$OUT/bin

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
[ -r /proc/self/stat ] || die "needs Linux /proc"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cronbench.XXXXXX")
PIDS=()
cleanup() {
	local p i
	for p in "${PIDS[@]+"${PIDS[@]}"}"; do kill -TERM "$p" 2>/dev/null || true; done
	for ((i = 0; i < 50; i++)); do
		local alive=0
		for p in "${PIDS[@]+"${PIDS[@]}"}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		((alive)) || break
		sleep 0.1
	done
	for p in "${PIDS[@]+"${PIDS[@]}"}"; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

mkdir -p "$BIN"
log "building schedd (as released) and cronbench into $BIN"
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -z ${SCHEDD:-} ]]; then
	(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$COMMIT" -o "$BIN/schedd" ./cmd/schedd)
	SCHEDD=$BIN/schedd
fi
(cd "$HERE" && go build -o "$BIN/cronbench" .)
CB=$BIN/cronbench
{
	echo "date: $(date -u +%FT%TZ)"
	echo "commit: $COMMIT$(git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "schedd: $SCHEDD"
	echo "go: $(go version)"
	echo "cpu: $(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo) x $(nproc)"
	echo "kernel: $(uname -sr)"
	echo "jobs: $JOBS, minutes: $MINUTES, workers: ${WORKERS:-default}"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/machine.txt"

# stop PID: SIGTERM, and wait for it to end.
stop() {
	kill -TERM "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# start_target DIR JITTER: the 204 target; sets TPID and URL.
start_target() {
	"$CB" serve -addr-file "$1/addr" -out "$1/arrivals" -jitter "$2" 2>"$1/target.log" &
	TPID=$!
	PIDS+=("$TPID")
	for _ in $(seq 100); do [ -s "$1/addr" ] && break; sleep 0.05; done
	[ -s "$1/addr" ] || die "the target did not start"
	URL="http://$(cat "$1/addr")/run"
}

# start_schedd DIR CONFIG: `schedd run` (gateway: sleep), JSON log and gctrace on stderr;
# sets SPID once its control API answers.
start_schedd() {
	GOGC=${GOGC_SCHEDD:-100} GODEBUG=gctrace=1 "$SCHEDD" run --config "$2" --state-dir "$WORK/${1##*/}.state" --socket "$WORK/${1##*/}.sock" \
		--service-manager none --log-format json -- sleep 1000000 >"$1/schedd.log" 2>&1 &
	SPID=$!
	PIDS+=("$SPID")
	for _ in $(seq 600); do
		"$SCHEDD" status --socket "$WORK/${1##*/}.sock" >/dev/null 2>&1 && return
		kill -0 "$SPID" 2>/dev/null || die "schedd exited: see $1/schedd.log"
		sleep 0.1
	done
	die "schedd did not answer within 60 s"
}

# wait_second_in LO HI: sleep until the wall clock's second of the minute is in [LO, HI].
wait_second_in() {
	while :; do
		local s=$((10#$(date -u +%S)))
		((s >= $1 && s <= $2)) && return
		sleep 0.5
	done
}

# sleep_until NS: sleep until the wall clock reads NS (Unix ns).
sleep_until() {
	local now=${EPOCHREALTIME/[.,]/}000
	(($1 > now)) && sleep "$(awk -v d=$(($1 - now)) 'BEGIN {printf "%.3f", d / 1e9}')"
	return 0
}

# baseline RUNNER: the process with 0 jobs, 15 s after its start.
baseline() {
	local dir=$OUT/baseline-$1 pid
	mkdir -p "$dir"
	if [[ $1 == schedd ]]; then
		"$CB" config -jobs 0 -queue "$JOBS" -url http://127.0.0.1:1/ >"$dir/schedd.yaml"
		# GOGC=1: an idle schedd with no jobs allocates too little to collect at all, and the
		# live heap is read off the last collection (what is live does not depend on GOGC).
		GOGC_SCHEDD=1 start_schedd "$dir" "$dir/schedd.yaml"
		pid=$SPID
	else
		start_target "$dir" 0
		GODEBUG=gctrace=1 "$CB" gocron -jobs 0 -url "$URL" -out "$dir/runs" -mem "$dir/mem" 2>"$dir/gocron.log" &
		pid=$!
		PIDS+=("$pid")
	fi
	sleep 15
	"$CB" sample -pid "$pid" -out "$dir/samples" -every 1h &
	local sp=$!
	sleep 0.5
	stop "$sp"
	if [[ $1 == schedd ]]; then
		"$SCHEDD" stop --socket "$WORK/${dir##*/}.sock" >/dev/null
		wait "$pid" 2>/dev/null || true
	else
		stop "$pid"
		stop "$TPID"
	fi
	read -r _ _ _ rss hwm anon threads _ <"$dir/samples"
	local gc
	gc=$(cat "$dir/"*.log | grep -cE '^gc [0-9]+ @' || true)
	echo "rss_kb $rss" >"$dir/stats"
	echo "hwm_kb $hwm" >>"$dir/stats"
	echo "rssanon_kb $anon" >>"$dir/stats"
	echo "threads $threads" >>"$dir/stats"
	echo "gc_cycles $gc" >>"$dir/stats"
	echo "heap_live_mb $(cat "$dir/"*.log | grep -E '^gc [0-9]+ @' | tail -1 | sed -E 's/.* ([0-9]+)->([0-9]+)->([0-9]+) MB.*/\3/')" >>"$dir/stats"
	[[ -f $dir/mem ]] && cat "$dir/mem" >>"$dir/stats"
	log "baseline $1: $(tr '\n' ' ' <"$dir/stats")"
}

# one SHAPE RUNNER: JOBS jobs of SHAPE run by RUNNER over MINUTES slots.
one() {
	local shape=$1 runner=$2 jitter=0 dir=$OUT/$1-$2 pid first end
	[[ $shape == jitter ]] && jitter=1m
	mkdir -p "$dir"
	start_target "$dir" "$jitter"
	# Start a few seconds after a minute began: the first slot is the next minute.
	wait_second_in 2 12
	first=$((($(date +%s) / 60 + 1) * 60 * 1000000000))
	if [[ $runner == schedd ]]; then
		local cfg=$dir/schedd.yaml
		"$CB" config -jobs "$JOBS" -jitter "$jitter" -url "$URL" ${WORKERS:+-workers "$WORKERS"} >"$cfg"
		start_schedd "$dir" "$cfg"
		pid=$SPID
	else
		GODEBUG=gctrace=1 "$CB" gocron -jobs "$JOBS" -jitter "$jitter" -limit "${runner#gocron}" -url "$URL" \
			-out "$dir/runs" -mem "$dir/mem" 2>"$dir/gocron.log" &
		pid=$!
		PIDS+=("$pid")
	fi
	"$CB" sample -pid "$pid" -out "$dir/samples" &
	local sp=$!
	PIDS+=("$sp")
	end=$((first + MINUTES * 60 * 1000000000))
	log "$shape/$runner: pid $pid, slots from $(date -u -d @$((first / 1000000000)) +%H:%M:%S), until $(date -u -d @$((end / 1000000000)) +%H:%M:%S) + 5 s"
	# The last slot's runs end by the next minute (jitter) or a few seconds after it (burst).
	sleep_until $((end + 5000000000))
	stop "$sp"
	if [[ $runner == schedd ]]; then
		local sock=$WORK/${dir##*/}.sock
		"$CB" tasks -socket "$sock" -out "$dir/runs" 2>"$dir/tasks.log"
		"$SCHEDD" status --json --socket "$sock" >"$dir/status.json"
		"$SCHEDD" stop --socket "$sock" >/dev/null
		wait "$pid" 2>/dev/null || true
	else
		stop "$pid"
	fi
	stop "$TPID"
	"$CB" stats -from "$first" -minutes "$MINUTES" -runs "$dir/runs" -arrivals "$dir/arrivals" \
		-samples "$dir/samples" -gctrace "$dir/${runner%%[0-9]*}.log" >"$dir/stats"
	[[ -f $dir/mem ]] && cat "$dir/mem" >>"$dir/stats"
	log "$shape/$runner: $(tr '\n' ' ' <"$dir/stats")"
}

kv() { awk -v k="$2" '$1 == k {print $2; exit}' "$1"; }

# per_job RUN BASE KEY UNIT: (RUN's KEY - BASE's KEY) per job, in bytes.
per_job() {
	local a b
	a=$(kv "$1" "$3") b=$(kv "$2" "$3")
	[[ -n $a && -n $b && $a != - && $b != - ]] || { echo -; return; }
	awk -v a="$a" -v b="$b" -v u="$4" -v n="$JOBS" 'BEGIN {printf "%.0f", (a - b) * u / n}'
}

summary() {
	echo "$JOBS jobs \"* * * * *\", http POST to a local 204 target, $MINUTES slots; commit $COMMIT"
	echo "load before $(sed -n 's/^load before: //p' "$OUT/machine.txt"), after $(cut -d' ' -f1-3 /proc/loadavg)"
	printf '%-14s %7s %7s %7s %8s %8s %8s %8s %8s %8s %8s %9s %7s %7s %8s %8s %8s %8s\n' run runs fire50 fire99 startmin start50 start99 startmax \
		arr50 arr99 arrmax lastend cpu% idle% idle_s rss_mb rssB/job heapB/job
	local shape runner f base
	for shape in $SHAPES; do
		for runner in $RUNNERS; do
			f=$OUT/$shape-$runner/stats
			[[ -f $f ]] || continue
			base=$OUT/baseline-${runner%%[0-9]*}/stats
			local heap=-
			if [[ -f $base ]]; then
				if [[ $runner == gocron* ]]; then
					heap=$(per_job "$f" "$base" heap_alloc_b 1)
				else
					heap=$(per_job "$f" "$base" heap_live_mb 1048576)
				fi
			fi
			printf '%-14s %7s %7s %7s %8s %8s %8s %8s %8s %8s %8s %9s %7s %7s %8s %8s %8s %8s\n' "$shape/$runner" \
				"$(kv "$f" runs)" "$(kv "$f" fire_p50_ms)" "$(kv "$f" fire_p99_ms)" "$(kv "$f" start_min_ms)" "$(kv "$f" start_p50_ms)" "$(kv "$f" start_p99_ms)" "$(kv "$f" start_max_ms)" \
				"$(kv "$f" arrive_p50_ms)" "$(kv "$f" arrive_p99_ms)" "$(kv "$f" arrive_max_ms)" \
				"$(kv "$f" last_end_ms)" "$(kv "$f" cpu_pct)" "$(kv "$f" idle_cpu_pct)" "$(kv "$f" idle_s)" \
				"$(awk -v k="$(kv "$f" rss_kb)" 'BEGIN {printf "%.1f", k / 1024}')" \
				"$([[ -f $base ]] && per_job "$f" "$base" rss_kb 1024 || echo -)" "$heap"
		done
	done
	echo "(ms; fire: the run queued (schedd) or called (gocron) - due; start: task start - due, arr: arrival at the target - due; lastend: the last run of a slot ended, ms after it;"
	echo " cpu%: of one core over the $MINUTES minutes; idle%: between runs; per job: minus the 0-job process)"
}

if ((BASELINE)); then
	for runner in $(printf '%s\n' $RUNNERS | sed 's/[0-9]*$//' | sort -u); do baseline "$runner"; done
fi
for shape in $SHAPES; do
	for runner in $RUNNERS; do one "$shape" "$runner"; done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
summary | tee "$OUT/summary.txt"
log "raw files in $OUT"
