# bench/deliveries/lib.sh: the shell helpers run.sh and run-postgres.sh share. Sourced
# after WORK, OUT, RESULTS, PIDS, SCHEDD, PROFILE and PPROF_ADDR are set, or before, as the
# functions read them only when called.

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# start_schedd NAME CONFIG: runs schedd with its state dir and socket in WORK and its JSON
# log in OUT/NAME.log; sets SD_PID, SD_SOCK and SD_START (unix ns just before the start).
start_schedd() {
	local name=$1 cfg=$2
	SD_SOCK=$WORK/$name.sock
	SD_START=$(date +%s%N)
	GOMAXPROCS=${SD_GOMAXPROCS:-} SCHEDD_PPROF_ADDR=${PROFILE:+$PPROF_ADDR} "$SCHEDD" run --config "$cfg" --state-dir "$WORK/$name" --socket "$SD_SOCK" --service-manager none \
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

# loadavg WHEN: the load average, as a result line (figures taken while it was high, from
# other work on the machine, are to be taken again).
loadavg() {
	awk -v when="$1" '{printf "{\"bench\":\"loadavg\",\"when\":\"%s\",\"load1\":%s,\"load5\":%s}\n", when, $1, $2}' /proc/loadavg >>"$RESULTS"
}

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
