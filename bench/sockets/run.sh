#!/usr/bin/env bash
# bench/sockets/run.sh: what a gateway restart does to the requests made meanwhile, side by
# side in one run. The same bounded loopback load (16 clients, 200 requests/s in total, a
# new connection per request) runs against examples/gateway while it is restarted
# BENCH_RESTARTS times, BENCH_GAP seconds apart:
#   0  schedd, gateway.sockets + restart.overlap, no restart (the baseline p99)
#   1  schedd, no sockets (the gateway binds its port itself)
#   2  schedd, gateway.sockets
#   3  schedd, gateway.sockets + restart.overlap
#   4  runit: runsv on a service dir in a temp dir, `sv restart`
# schedd restarts with `schedd restart --now --wait`. Prints a table; raw figures go to
# bench/results/sockets-<UTC time>/ (git-ignored). Needs go, curl, and runit's runsv and sv
# (Debian: apt-get install -y runit; row 4 is skipped without them). See bench/sockets/README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

RESTARTS=${BENCH_RESTARTS:-20}
GAP=${BENCH_GAP:-1}
BASELINE_SECS=${BENCH_BASELINE_SECS:-25}
CLIENTS=${BENCH_CLIENTS:-16}
RATE=${BENCH_RATE:-200}
PORT=${BENCH_PORT:-18089}
GO=${GO:-go}

RESULTS=bench/results/sockets-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$RESULTS"
WORK=$(mktemp -d)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "sockets: $*" >&2; }
die() {
	log "$*"
	exit 1
}

log "building schedd, examples/gateway and the load client into $WORK"
$GO build -o "$WORK/schedd" ./cmd/schedd
$GO build -o "$WORK/gateway" ./examples/gateway
$GO build -o "$WORK/load" ./bench/sockets

# wait_serving PORT: until the gateway answers on PORT (10 s at most).
wait_serving() {
	local i
	for i in $(seq 100); do
		curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$1/" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# schedd_config FILE PORT SOCKETS OVERLAP
schedd_config() {
	{
		echo "gateway:"
		echo "  command: [$WORK/gateway, --listen, '127.0.0.1:$2']"
		echo "  readiness: {notify: {}}"
		if [[ $3 == yes ]]; then echo "  sockets: [{name: http, listen: '127.0.0.1:$2'}]"; fi
		echo "restart:"
		echo "  delay: 0s"
		echo "  cooldown: 0s"
		if [[ $4 == yes ]]; then echo "  overlap: true"; fi
	} >"$1"
}

# run_case NAME PORT RESTART_CMD...: the load against PORT while RESTART_CMD runs
# $RESTARTS times (none without a command: then $BASELINE_SECS of load).
run_case() {
	local name=$1 port=$2
	shift 2
	local stop=$WORK/$name.stop
	cut -d' ' -f1 /proc/loadavg >"$RESULTS/$name.load" 2>/dev/null || echo '?' >"$RESULTS/$name.load"
	"$WORK/load" -url "http://127.0.0.1:$port/" -clients "$CLIENTS" -rate "$RATE" \
		-max-duration 10m -max-requests 200000 -stop-file "$stop" \
		-latencies "$RESULTS/$name.latencies" >"$RESULTS/$name.summary" 2>"$RESULTS/$name.load.log" &
	local lpid=$!
	sleep 1
	if (($#)); then
		local i
		for i in $(seq "$RESTARTS"); do
			"$@" >>"$RESULTS/$name.restarts" 2>&1 || log "$name: restart #$i failed: $(tail -1 "$RESULTS/$name.restarts")"
			sleep "$GAP"
		done
	else
		sleep "$BASELINE_SECS"
	fi
	touch "$stop"
	wait "$lpid" || die "$name: the load client failed: $(cat "$RESULTS/$name.load.log")"
	echo "$(cat "$RESULTS/$name.load")-$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')" >"$RESULTS/$name.load"
	log "$name: $(cat "$RESULTS/$name.summary")"
}

# schedd_case NAME PORT SOCKETS OVERLAP RESTARTS(yes|no)
schedd_case() {
	local name=$1 port=$2 cfg=$WORK/$1.yaml sock=$WORK/$1.sock
	schedd_config "$cfg" "$port" "$3" "$4"
	cp "$cfg" "$RESULTS/$name.yaml"
	"$WORK/schedd" run --config "$cfg" --state-dir "$WORK/$name.state" --socket "$sock" \
		--service-manager none 2>"$RESULTS/$name.schedd.log" &
	local spid=$!
	PIDS+=("$spid")
	wait_serving "$port" || die "$name: the gateway does not answer on $port"
	if [[ $5 == yes ]]; then
		run_case "$name" "$port" "$WORK/schedd" restart --now --wait --socket "$sock"
	else
		run_case "$name" "$port"
	fi
	kill -TERM "$spid"
	wait "$spid" || true
}

runit_case() {
	local name=$1 port=$2 d=$WORK/runit/gw
	mkdir -p "$d"
	printf '#!/bin/sh\nexec %q --listen 127.0.0.1:%s 2>&1\n' "$WORK/gateway" "$port" >"$d/run"
	chmod +x "$d/run"
	runsv "$d" >"$RESULTS/$name.runsv.log" 2>&1 &
	local rpid=$!
	PIDS+=("$rpid")
	wait_serving "$port" || die "$name: the gateway under runsv does not answer on $port"
	run_case "$name" "$port" sv restart "$d"
	sv -w 10 force-stop "$d" >/dev/null 2>&1 || true
	sv exit "$d" >/dev/null 2>&1 || true
	wait "$rpid" || true
	echo "runit $(dpkg-query -W -f '${Version}' runit 2>/dev/null || echo '?')" >"$RESULTS/runit.version"
}

log "load: $CLIENTS clients, $RATE requests/s in total; $RESTARTS restarts, $GAP s apart; results in $RESULTS"
schedd_case 0-baseline $((PORT)) yes yes no
schedd_case 1-no-sockets $((PORT + 1)) no no yes
schedd_case 2-sockets $((PORT + 2)) yes no yes
schedd_case 3-overlap $((PORT + 3)) yes yes yes
if command -v runsv >/dev/null && command -v sv >/dev/null; then
	runit_case 4-runit $((PORT + 4))
else
	log "no runsv/sv: row 4 skipped (apt-get install -y runit)"
fi

# field NAME KEY: a value of a case's summary line.
field() { grep -o "\b$2=[^ ]*" "$RESULTS/$1.summary" | cut -d= -f2; }
{
	echo "gateway restarts under load: $CLIENTS clients, $RATE req/s total, new connection per request; $RESTARTS restarts, $GAP s apart"
	echo "schedd $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores; loadavg: 1-minute load at the case's start-end"
	printf '%-44s %8s %8s %8s %8s %9s %9s %9s  %-14s %s\n' case requests ok refused failed p50_ms p99_ms max_ms "failed by kind" "loadavg"
	for n in 0-baseline 1-no-sockets 2-sockets 3-overlap 4-runit; do
		[[ -f $RESULTS/$n.summary ]] || continue
		case $n in
		0-baseline) row="(0) schedd sockets+overlap, no restart" ;;
		1-no-sockets) row="(1) schedd, gateway binds its port" ;;
		2-sockets) row="(2) schedd gateway.sockets" ;;
		3-overlap) row="(3) schedd gateway.sockets + restart.overlap" ;;
		4-runit) row="(4) runit sv restart" ;;
		esac
		printf '%-44s %8s %8s %8s %8s %9s %9s %9s  %-14s %s\n' "$row" "$(field $n requests)" "$(field $n ok)" \
			"$(field $n refused)" "$(field $n failed)" "$(field $n p50_ms)" "$(field $n p99_ms)" "$(field $n max_ms)" "$(field $n failed_kinds)" \
			"$(cat "$RESULTS/$n.load")"
	done
	base=$(field 0-baseline p99_ms)
	ov=$(field 3-overlap p99_ms)
	echo
	echo "targets:"
	echo "  (2) sockets: refused=$(field 2-sockets refused) failed=$(field 2-sockets failed) (want 0 and 0)"
	echo "  (3) overlap: refused=$(field 3-overlap refused) failed=$(field 3-overlap failed) (want 0 failed)," \
		"p99 $ov ms = $(awk -v a="$ov" -v b="$base" 'BEGIN { printf "%.2f", a / b }') x the baseline's $base ms (want <= 2)"
} | tee "$RESULTS/summary.txt"
