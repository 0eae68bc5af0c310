#!/usr/bin/env bash
# bench/run.sh: whole-process benchmarks of schedd, and of supervisord, runit and PM2 on the
# same trivial child (bench/child.c). See bench/README.md for what is measured and why.
#
#   bash bench/run.sh            # full run: A (60 s idle, 20 kills) and B (20 restarts each)
#   bash bench/run.sh --quick    # smoke run: 10 s idle, 5 kills, 5 restarts
#   bash bench/run.sh --part a   # only part A (schedd alone); --part b for the comparison
#   BENCH_OTHERS= SCHEDD=/path/to/schedd bash bench/run.sh   # another build, no other supervisor
#
# Every process the script starts is killed on exit; raw figures are kept in
# bench/results/<UTC time>/ and a summary table is printed at the end.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$ROOT/bench
SELF=$BENCH/run.sh
SCHEDD=${SCHEDD:-$ROOT/bin/schedd}
CACHE=${BENCH_CACHE:-$BENCH/.cache}
PM2_VERSION=${PM2_VERSION:-7.0.4}

# ---------------------------------------------------------------------------------------
# Small helpers shared by the driver and the jobs.

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# stamp VAR: VAR = CLOCK_REALTIME in ns (bash's EPOCHREALTIME, µs resolution, no fork).
stamp() { local t=${EPOCHREALTIME/[.,]/}; printf -v "$1" '%s' "${t}000"; }

# stats FILE: "median p95 min max n" in ms (nearest-rank p95) of the ns values in FILE.
stats() {
	sort -n "$1" | awk '
		{ v[NR] = $1 }
		END {
			n = NR
			if (n == 0) { print "- - - - 0"; exit }
			med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
			i = int(0.95 * n); if (i < 0.95 * n) i++
			printf "%.2f %.2f %.2f %.2f %d\n", med / 1e6, v[i] / 1e6, v[1] / 1e6, v[n] / 1e6, n
		}'
}

# ---------------------------------------------------------------------------------------
# Jobs: each runs in its own process (run.sh --job NAME) with its own cleanup trap, so
# one supervisor that fails to install or start never takes the others' rows with it.
# They read their parameters from the environment the driver exports.

PIDS=()        # processes this job started, killed on exit
CLEANUPS=()    # commands run on exit (before the kills), e.g. "pm2 kill"

job_cleanup() {
	local rc=$? c p i alive
	trap - EXIT
	[[ -n $NAP_PID ]] && kill "$NAP_PID" 2>/dev/null
	for c in "${CLEANUPS[@]+"${CLEANUPS[@]}"}"; do
		eval "$c" >/dev/null 2>&1 || true
	done
	for p in "${PIDS[@]+"${PIDS[@]}"}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	# Give each supervisor up to 5 s to stop its child before it is killed outright.
	for ((i = 0; i < 50; i++)); do
		alive=0
		for p in "${PIDS[@]+"${PIDS[@]}"}"; do
			kill -0 "$p" 2>/dev/null && [[ $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) != Z ]] && alive=1
		done
		((alive)) || break
		sleep 0.1
	done
	for p in "${PIDS[@]+"${PIDS[@]}"}"; do
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	# The last bench child seen, should its supervisor have left it behind.
	if [[ -n ${CHILD_PID:-} && /proc/$CHILD_PID/exe -ef $CHILD ]]; then
		kill -KILL "$CHILD_PID" 2>/dev/null || true
	fi
	exit "$rc"
}

# nap SECS: sleep in a way a trapped signal interrupts at once (bash runs traps only
# between commands, but it does interrupt "wait").
NAP_PID=""
nap() {
	sleep "$1" &
	NAP_PID=$!
	wait "$NAP_PID"
	NAP_PID=""
}

# open_stamps NAME: a FIFO the children write their start line to, held open read-write
# by this job (so a child's open never blocks and no line is lost between reads).
open_stamps() {
	STAMP_PATH=$WORK/$1.fifo
	rm -f "$STAMP_PATH"
	mkfifo "$STAMP_PATH"
	exec {STAMP_FD}<>"$STAMP_PATH"
	export BENCH_STAMP=$STAMP_PATH
}

# drain: drop start lines already written (a child started by the setup, say).
drain() {
	local _l
	while read -r -t 0 -u "$STAMP_FD"; do
		read -r -t 1 -u "$STAMP_FD" _l || break
	done
}

# next_start [TIMEOUT]: wait for the next child's start line; sets CHILD_PID and CHILD_NS.
next_start() {
	read -r -t "${1:-10}" -u "$STAMP_FD" CHILD_PID CHILD_NS || return 1
}

# proc_sample PID...: "rss_kb hwm_kb cpu_ticks runtime_ns vol nonvol threads" summed over
# the processes (and, for the switches and run time, over all their threads).
proc_sample() {
	local rss=0 hwm=0 ticks=0 rt=0 vol=0 nonvol=0 thr=0 p t f
	for p in "$@"; do
		[[ -r /proc/$p/status ]] || continue
		rss=$((rss + $(awk '/^VmRSS:/ {print $2}' "/proc/$p/status")))
		hwm=$((hwm + $(awk '/^VmHWM:/ {print $2}' "/proc/$p/status")))
		f=$(sed 's/.*) //' "/proc/$p/stat")
		ticks=$((ticks + $(awk '{print $12 + $13}' <<<"$f")))
		for t in /proc/"$p"/task/*; do
			[[ -r $t/status ]] || continue
			thr=$((thr + 1))
			vol=$((vol + $(awk '/^voluntary_ctxt_switches:/ {print $2}' "$t/status")))
			nonvol=$((nonvol + $(awk '/^nonvoluntary_ctxt_switches:/ {print $2}' "$t/status")))
			rt=$((rt + $(awk '{print $1}' "$t/schedstat")))
		done
	done
	echo "$rss $hwm $ticks $rt $vol $nonvol $thr"
}

# thread_switches PID: "tid comm voluntary nonvoluntary" per thread (raw evidence).
thread_switches() {
	local t
	for t in /proc/"$1"/task/*; do
		printf '%s %s %s %s\n' "${t##*/}" "$(cat "$t/comm")" \
			"$(awk '/^voluntary_ctxt_switches:/ {print $2}' "$t/status")" \
			"$(awk '/^nonvoluntary_ctxt_switches:/ {print $2}' "$t/status")"
	done
}

# footprint NAME PID...: append "rss_kb" and "hwm_kb" (VmRSS and VmHWM, summed over the
# processes) to NAME.info: read after the restart and kill -9 series, in the same daemon.
footprint() {
	local name=$1 s
	shift
	read -r -a s <<<"$(proc_sample "$@")"
	printf 'rss_kb %s\nhwm_kb %s\n' "${s[0]}" "${s[1]}" >>"$RESULTS/$name.info"
}

# idle_window NAME SECS PID...: sample the processes before and after SECS of doing
# nothing; writes NAME.idle ("key value" lines) to the results.
idle_window() {
	local name=$1 secs=$2
	shift 2
	local a b
	read -r -a a <<<"$(proc_sample "$@")"
	nap "$secs"
	read -r -a b <<<"$(proc_sample "$@")"
	{
		echo "secs $secs"
		echo "rss_kb ${b[0]}"
		echo "hwm_kb ${b[1]}"
		echo "cpu_ticks $((b[2] - a[2]))"
		echo "clk_tck $(getconf CLK_TCK)"
		echo "runtime_ns $((b[3] - a[3]))"
		echo "voluntary $((b[4] - a[4]))"
		echo "nonvoluntary $((b[5] - a[5]))"
		echo "threads ${b[6]}"
	} >"$RESULTS/$name.idle"
}

# respawn_series NAME COUNT: COUNT times, let the child run GAP (longer than any backoff
# reset), kill -9 it and time until the next child's main(). Needs CHILD_PID set.
respawn_series() {
	local name=$1 count=$2 out=$RESULTS/$1.respawn.ns i t0 old
	: >"$out"
	: >"$RESULTS/$name.kills"
	for ((i = 1; i <= count; i++)); do
		nap "$GAP"
		drain
		old=$CHILD_PID
		stamp t0
		kill -KILL "$old"
		next_start 10 || die "$name: no child started within 10 s of kill #$i"
		[[ $CHILD_PID != "$old" ]] || die "$name: same pid after kill"
		echo $((CHILD_NS - t0)) >>"$out"
		echo "$t0 $old $CHILD_PID $CHILD_NS" >>"$RESULTS/$name.kills"
	done
}

# restart_series NAME COUNT CMD...: COUNT times, let the child run GAP, then run CMD and
# time request -> next child's main() (NAME.started.ns) and request -> CMD returned
# (NAME.returned.ns). CMD's output goes to NAME.cmd.log.
restart_series() {
	local name=$1 count=$2 i t0 t1 old
	shift 2
	: >"$RESULTS/$name.started.ns"
	: >"$RESULTS/$name.returned.ns"
	for ((i = 1; i <= count; i++)); do
		nap "$GAP"
		drain
		old=$CHILD_PID
		stamp t0
		"$@" >>"$RESULTS/$name.cmd.log" 2>&1 || die "$name: restart #$i failed: $*"
		stamp t1
		next_start 10 || die "$name: no child started within 10 s of restart #$i"
		[[ $CHILD_PID != "$old" ]] || die "$name: same pid after restart"
		echo $((CHILD_NS - t0)) >>"$RESULTS/$name.started.ns"
		echo $((t1 - t0)) >>"$RESULTS/$name.returned.ns"
	done
}

# signal_series NAME COUNT PID SIGNAL: like restart_series with "kill -SIGNAL PID" as the
# request; only request -> started is timed.
signal_series() {
	local name=$1 count=$2 pid=$3 sig=$4 i t0 old
	: >"$RESULTS/$name.started.ns"
	for ((i = 1; i <= count; i++)); do
		nap "$GAP"
		drain
		old=$CHILD_PID
		stamp t0
		kill -"$sig" "$pid"
		next_start 10 || die "$name: no child started within 10 s of signal #$i"
		[[ $CHILD_PID != "$old" ]] || die "$name: same pid after signal"
		echo $((CHILD_NS - t0)) >>"$RESULTS/$name.started.ns"
	done
}

# schedd_start NAME CONFIG [FLAG...]: start "schedd run" on the bench child; sets
# SCHEDD_PID and SOCK.
schedd_start() {
	local name=$1 cfg=$2
	shift 2
	SOCK=$WORK/$name.sock
	"$SCHEDD" run --config "$cfg" --state-dir "$WORK/$name.state" --socket "$SOCK" \
		--service-manager none "$@" -- "$CHILD" 2>"$RESULTS/$name.schedd.log" {STAMP_FD}<&- &
	SCHEDD_PID=$!
	PIDS+=("$SCHEDD_PID")
	next_start 10 || die "$name: schedd did not start the child"
}

# status_field NAME: a number from the gateway block of "schedd status --json".
status_field() {
	"$SCHEDD" status --json --socket "$SOCK" | tr -d ' \n' |
		grep -o "\"gateway\":{.*" | grep -o "\"$1\":[0-9]*" | head -1 | cut -d: -f2
}

# A config that keeps the bench short: a child counts as healthy (crash restarts at once)
# after 1 s instead of 60 s; restart requests are neither delayed nor cooled down.
write_schedd_config() {
	cat >"$1" <<-'EOF'
	gateway:
	  backoff: {reset_after: 1s}
	restart:
	  delay: 0s
	  cooldown: 0s
	EOF
}

job_a() {
	open_stamps schedd-a
	write_schedd_config "$WORK/schedd-a.yaml"
	# JSON logs carry ns timestamps: they split each respawn into its steps (breakdown).
	schedd_start schedd-a "$WORK/schedd-a.yaml" --log-format json
	log "A: schedd pid $SCHEDD_PID, child $CHILD_PID; settling 3 s, then $IDLE_SECS s idle"
	nap 3
	thread_switches "$SCHEDD_PID" >"$RESULTS/schedd-a.threads.before"
	idle_window schedd-a "$IDLE_SECS" "$SCHEDD_PID"
	thread_switches "$SCHEDD_PID" >"$RESULTS/schedd-a.threads.after"
	cp "/proc/$SCHEDD_PID/status" "$RESULTS/schedd-a.proc-status"
	log "A: $KILLS kill -9 of a child healthy for ${GAP}s"
	respawn_series schedd-a "$KILLS"
	# One more GAP: the last child is healthy again, so consecutive_failures is back to 0.
	nap "$GAP"
	cp "/proc/$SCHEDD_PID/status" "$RESULTS/schedd-a.proc-status.after"
	local restarts failures
	restarts=$(status_field restarts)
	failures=$(status_field consecutive_failures)
	{
		echo "hwm_after_kills_kb $(awk '/^VmHWM:/ {print $2}' "/proc/$SCHEDD_PID/status")"
		echo "status_restarts $restarts"
		echo "status_consecutive_failures $failures"
	} >>"$RESULTS/schedd-a.idle"
	[[ $restarts == "$KILLS" ]] || die "A: schedd status says $restarts restarts, want $KILLS"
	[[ $failures == 0 ]] || die "A: schedd status says $failures consecutive failures, want 0"
	breakdown "$RESULTS/schedd-a.kills" "$RESULTS/schedd-a.schedd.log"
}

# log_ns LOG MSG PID: the ns timestamp of schedd's JSON log line MSG about PID.
log_ns() {
	local ts
	ts=$(grep -F "\"msg\":\"$2\",\"pid\":$3," "$1" | head -1 | sed 's/.*"ts":"\([^"]*\)".*/\1/')
	[[ -n $ts ]] || return 1
	date -u -d "$ts" +%s%N
}

# breakdown KILLS LOG: split each respawn of KILLS ("t0 old new child_ns" lines) with the
# log lines schedd wrote: kill -> exit seen and logged (detect), -> new child started and
# logged (respawn work: group cleanup, pipes, fork, exec), and the child's own main()
# relative to that log line (it runs concurrently with schedd's return from exec).
breakdown() {
	local t0 old new cns exited started
	: >"$RESULTS/schedd-a.detect.ns"
	: >"$RESULTS/schedd-a.spawn.ns"
	: >"$RESULTS/schedd-a.childlag.ns"
	while read -r t0 old new cns; do
		exited=$(log_ns "$2" "gateway was killed by a signal" "$old") || continue
		started=$(log_ns "$2" "gateway started" "$new") || continue
		echo $((exited - t0)) >>"$RESULTS/schedd-a.detect.ns"
		echo $((started - exited)) >>"$RESULTS/schedd-a.spawn.ns"
		echo $((cns - started)) >>"$RESULTS/schedd-a.childlag.ns"
	done <"$1"
}

# Part B: one job per supervisor, run one after the other. Each writes NAME.info
# (version, RSS) and the .ns series; the driver turns them into the table.

job_schedd_b() {
	open_stamps schedd-b
	write_schedd_config "$WORK/schedd-b.yaml"
	schedd_start schedd-b "$WORK/schedd-b.yaml"
	echo "version $("$SCHEDD" version 2>/dev/null | head -1)" >"$RESULTS/schedd.info"
	nap "$GAP"
	idle_window schedd-b "$IDLE_OTHERS_SECS" "$SCHEDD_PID"
	log "B: schedd respawn x$KILLS"
	respawn_series schedd "$KILLS"
	log "B: schedd restart --now --wait x$RESTARTS"
	restart_series schedd "$RESTARTS" "$SCHEDD" restart --now --wait --socket "$SOCK"
	footprint schedd "$SCHEDD_PID"
	cp "/proc/$SCHEDD_PID/status" "$RESULTS/schedd-b.proc-status.after"
	log "B: schedd SIGUSR1 x$RESTARTS"
	signal_series schedd-usr1 "$RESTARTS" "$SCHEDD_PID" USR1
	echo "rss_after_usr1_kb $(awk '/^VmRSS:/ {print $2}' "/proc/$SCHEDD_PID/status")" >>"$RESULTS/schedd.info"
}

job_supervisord() {
	command -v supervisord >/dev/null || die "supervisord not installed"
	open_stamps supervisord
	local d=$WORK/supervisord conf
	mkdir -p "$d"
	conf=$d/supervisord.conf
	# startsecs=0: the child is "ready at once", as for the other supervisors.
	cat >"$conf" <<-EOF
	[unix_http_server]
	file=$d/supervisor.sock
	chmod=0700

	[supervisord]
	nodaemon=true
	logfile=$RESULTS/supervisord.daemon.log
	pidfile=$d/supervisord.pid
	childlogdir=$d

	[rpcinterface:supervisor]
	supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface

	[supervisorctl]
	serverurl=unix://$d/supervisor.sock

	[program:gw]
	command=$CHILD
	startsecs=0
	autorestart=true
	stopsignal=TERM
	environment=BENCH_STAMP="$STAMP_PATH"
	stdout_logfile=NONE
	stderr_logfile=NONE
	EOF
	supervisord -c "$conf" >/dev/null 2>&1 {STAMP_FD}<&- &
	local spid=$!
	PIDS+=("$spid")
	next_start 15 || die "supervisord did not start the child"
	echo "version supervisord $(supervisord --version)" >"$RESULTS/supervisord.info"
	nap "$GAP"
	idle_window supervisord "$IDLE_OTHERS_SECS" "$spid"
	log "B: supervisord respawn x$KILLS"
	respawn_series supervisord "$KILLS"
	log "B: supervisorctl restart x$RESTARTS"
	restart_series supervisord "$RESTARTS" supervisorctl -c "$conf" restart gw
	footprint supervisord "$spid"
}

job_runit() {
	command -v runsvdir >/dev/null || die "runit not installed"
	open_stamps runit
	local d=$WORK/runit
	mkdir -p "$d/sv/gw" "$d/service"
	# ./run is the child itself (a symlink), not a shell script that execs it: runit's
	# respawn is timed without a shell's start-up.
	ln -s "$CHILD" "$d/sv/gw/run"
	ln -s "$d/sv/gw" "$d/service/gw"
	runsvdir -P "$d/service" >/dev/null 2>&1 {STAMP_FD}<&- &
	local rpid=$!
	PIDS+=("$rpid")
	CLEANUPS+=("sv -w 3 force-shutdown '$d/service/gw'" "kill -HUP $rpid")
	next_start 15 || die "runsv did not start the child"
	local svpid
	svpid=$(pgrep -P "$rpid" runsv | head -1 || true)
	[[ -n $svpid ]] || die "no runsv under runsvdir $rpid"
	PIDS+=("$svpid")
	echo "version runit $(dpkg-query -W -f '${Version}' runit 2>/dev/null || echo '?')" >"$RESULTS/runit.info"
	nap "$GAP"
	idle_window runit "$IDLE_OTHERS_SECS" "$rpid" "$svpid"
	log "B: runit respawn x$KILLS"
	respawn_series runit "$KILLS"
	log "B: sv restart x$RESTARTS"
	restart_series runit "$RESTARTS" sv restart "$d/service/gw"
	footprint runit "$rpid" "$svpid"
}

job_pm2() {
	local pm2=$CACHE/pm2/node_modules/.bin/pm2
	[[ -x $pm2 ]] || die "pm2 not installed"
	open_stamps pm2
	export PM2_HOME=$WORK/pm2-home
	CLEANUPS+=("'$pm2' kill")
	"$pm2" start "$CHILD" --name gw --interpreter none >"$RESULTS/pm2.cmd.log" 2>&1 {STAMP_FD}<&-
	next_start 15 || die "pm2 did not start the child"
	local god
	god=$(cat "$PM2_HOME/pm2.pid")
	PIDS+=("$god")
	echo "version pm2 $PM2_VERSION (node $(node --version))" >"$RESULTS/pm2.info"
	nap "$GAP"
	idle_window pm2 "$IDLE_OTHERS_SECS" "$god"
	log "B: pm2 respawn x$KILLS"
	respawn_series pm2 "$KILLS"
	log "B: pm2 restart x$RESTARTS"
	restart_series pm2 "$RESTARTS" "$pm2" restart gw
	footprint pm2 "$god"
}

# job_floor: bench/floor.c, a C loop of fork, exec and waitpid: the respawn floor.
job_floor() {
	open_stamps floor
	"$FLOOR" "$CHILD" {STAMP_FD}<&- &
	local fpid=$!
	PIDS+=("$fpid")
	next_start 10 || die "floor did not start the child"
	echo "version bench/floor.c (fork, execv, waitpid)" >"$RESULTS/floor.info"
	log "B: floor respawn x$KILLS"
	respawn_series floor "$KILLS"
	footprint floor "$fpid"
	idle_window floor 1 "$fpid"
}

run_job() {
	trap job_cleanup EXIT
	trap 'exit 130' INT TERM HUP
	case $1 in
	a) job_a ;;
	schedd) job_schedd_b ;;
	supervisord) job_supervisord ;;
	runit) job_runit ;;
	pm2) job_pm2 ;;
	floor) job_floor ;;
	*) die "unknown job $1" ;;
	esac
}

# ---------------------------------------------------------------------------------------
# Driver.

usage() {
	sed -n '2,11p' "$SELF" | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}

# install_others: supervisor and runit from Debian, PM2 from npm into $CACHE (never into
# the repository's tree outside the git-ignored cache).
install_others() {
	local need=()
	command -v supervisord >/dev/null || need+=(supervisor)
	command -v runsvdir >/dev/null || need+=(runit)
	if ((${#need[@]})); then
		if [[ $EUID -ne 0 ]] || ! command -v apt-get >/dev/null; then
			log "cannot install ${need[*]} (needs root and apt-get); their rows are skipped"
		else
			log "installing ${need[*]} with apt-get"
			# Keep the packages' init scripts from starting system-wide daemons.
			local policy=/usr/sbin/policy-rc.d made=0
			if [[ ! -e $policy ]]; then
				printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made=1
			fi
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				--no-install-recommends "${need[@]}"; } >"$RESULTS/apt.log" 2>&1 ||
				log "apt-get failed (see $RESULTS/apt.log)"
			((made)) && rm -f "$policy"
		fi
	fi
	local pm2dir=$CACHE/pm2
	if [[ ! -x $pm2dir/node_modules/.bin/pm2 ]] ||
		! grep -q "\"version\": \"$PM2_VERSION\"" "$pm2dir/node_modules/pm2/package.json" 2>/dev/null; then
		if command -v npm >/dev/null; then
			log "installing pm2@$PM2_VERSION into $pm2dir"
			mkdir -p "$pm2dir"
			npm install --prefix "$pm2dir" --no-audit --no-fund --loglevel=error \
				"pm2@$PM2_VERSION" >"$RESULTS/npm.log" 2>&1 || log "npm install failed (see $RESULTS/npm.log)"
		else
			log "npm not found; the PM2 row is skipped"
		fi
	fi
}

machine_info() {
	echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "nproc $(nproc)"
	echo "cpu $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
	echo "kernel $(uname -sr)"
	echo "go $(go version 2>/dev/null | awk '{print $3}' || echo '?')"
	echo "gcc $(gcc -dumpfullversion 2>/dev/null || echo '?')"
	echo "schedd $("$SCHEDD" version 2>/dev/null | head -1)"
	echo "loadavg_start $(cut -d' ' -f1-3 /proc/loadavg)"
}

# kv FILE KEY: the value of "KEY value" in FILE, or "-".
kv() { awk -v k="$2" '$1 == k { $1 = ""; sub(/^ /, ""); print; f = 1 } END { if (!f) print "-" }' "$1" 2>/dev/null || echo -; }

# rss_split STATUS [FIELD]: "RssAnon / RssFile MiB" (or FIELD alone) of a saved
# /proc/PID/status.
rss_split() {
	[[ -f $1 ]] || { echo "-"; return; }
	if [[ -n ${2:-} ]]; then
		awk -v k="$2:" '$1 == k { printf "%.1f MiB", $2 / 1024 }' "$1"
	else
		awk '$1 == "RssAnon:" { a = $2 } $1 == "RssFile:" { f = $2 } END { printf "%.1f / %.1f MiB", a / 1024, f / 1024 }' "$1"
	fi
}

# series FILE: "median / p95 ms" of a .ns file, or the reason it is missing.
series() {
	[[ -s $1 ]] || { echo "-"; return; }
	local s
	read -r -a s <<<"$(stats "$1")"
	echo "${s[0]} / ${s[1]}"
}

# summary_b: the restart table, the respawn/footprint table and the targets.
summary_b() {
	local r=$RESULTS n row info
	echo
	echo "B. restart of a child that is ready at once: request -> next child's main() (started) and"
	echo "   request -> restart command returned (ready), median / p95 ms of $RESTARTS"
	printf '  %-30s %-20s %s\n' request started returned
	for n in schedd schedd-usr1 runit supervisord pm2; do
		info=$r/${n%-usr1}.info
		case $n in
		schedd) row="schedd restart --now --wait" ;;
		schedd-usr1) row="schedd SIGUSR1 (kill -USR1)" ;;
		runit) row="sv restart" ;;
		supervisord) row="supervisorctl restart" ;;
		pm2) row="pm2 restart" ;;
		esac
		if [[ ! -f $info ]]; then
			printf '  %-30s failed or skipped: see %s\n' "$row" "$r/job-${n%-usr1}.log"
		else
			printf '  %-30s %-20s %s\n' "$row" "$(series "$r/$n.started.ns")" \
				"$(series "$r/$n.returned.ns")"
		fi
	done
	echo
	echo "   the same supervisors: kill -9 of a child healthy for ${GAP} s -> next child's main(),"
	echo "   median / p95 ms of $KILLS; VmRSS (VmHWM) after the $KILLS kills and $RESTARTS restarts, in"
	echo "   the same daemon; wakeups = voluntary context switches/s of the supervisor's processes"
	echo "   over ${IDLE_OTHERS_SECS} s idle"
	printf '  %-14s %-18s %-14s %-9s %s\n' supervisor "kill-9->started" "RSS (HWM) MiB" "wake/s" version
	local idle
	for n in floor schedd runit supervisord pm2; do
		info=$r/$n.info
		if [[ ! -f $info ]]; then
			printf '  %-14s failed or skipped: see %s\n' "$n" "$r/job-$n.log"
			continue
		fi
		idle=$r/$n.idle
		[[ $n == schedd ]] && idle=$r/schedd-b.idle
		printf '  %-14s %-18s %-14s %-9s %s\n' "$n" "$(series "$r/$n.respawn.ns")" \
			"$(awk -v a="$(kv "$info" rss_kb)" -v b="$(kv "$info" hwm_kb)" 'BEGIN{printf "%.1f (%.1f)", a/1024, b/1024}')" \
			"$(awk -v a="$(kv "$idle" voluntary)" -v s="$(kv "$idle" secs)" 'BEGIN{printf "%.2f", a/s}')" \
			"$(kv "$info" version)"
	done
	echo
	echo "   targets: schedd's request->started and kill-9->started <= 1.5 x runit's (medians, this run);"
	echo "   VmRSS after the series <= 16 MiB; <= 0.2 wakeups/s idle (part A's window)"
	local rm m name base kind
	for n in schedd:runit.started.ns:started schedd-usr1:runit.started.ns:started schedd:runit.respawn.ns:respawn; do
		IFS=: read -r name base kind <<<"$n"
		[[ -s $r/$base && -s $r/$name.$kind.ns ]] || continue
		rm=$(stats "$r/$base" | cut -d' ' -f1)
		m=$(stats "$r/$name.$kind.ns" | cut -d' ' -f1)
		printf '  %-30s %s %s ms = %s x runit (%s ms)\n' "$name" "$kind" "$m" \
			"$(awk -v a="$m" -v b="$rm" 'BEGIN{printf "%.2f", a/b}')" "$rm"
	done
	if [[ -s $r/schedd.returned.ns ]]; then
		printf '  %-30s returned %s ms median\n' "schedd restart --now --wait" \
			"$(stats "$r/schedd.returned.ns" | cut -d' ' -f1)"
	fi
	[[ -f $r/schedd.info ]] && printf '  %-30s VmRSS %s MiB (VmHWM %s) after the series; %s MiB after %s x SIGUSR1 more\n' schedd \
		"$(awk -v a="$(kv "$r/schedd.info" rss_kb)" 'BEGIN{printf "%.1f", a/1024}')" \
		"$(awk -v a="$(kv "$r/schedd.info" hwm_kb)" 'BEGIN{printf "%.1f", a/1024}')" \
		"$(awk -v a="$(kv "$r/schedd.info" rss_after_usr1_kb)" 'BEGIN{printf "%.1f", a/1024}')" "$RESTARTS"
	return 0
}

summary() {
	local r=$RESULTS
	echo
	echo "Machine: $(kv "$r/machine.txt" nproc) x $(kv "$r/machine.txt" cpu), $(kv "$r/machine.txt" kernel)," \
		"$(kv "$r/machine.txt" go); $(kv "$r/machine.txt" date); mode $MODE"
	if [[ -f $r/schedd-a.idle ]]; then
		local f=$r/schedd-a.idle secs vol rt rss hwm
		secs=$(kv "$f" secs) vol=$(kv "$f" voluntary) rt=$(kv "$f" runtime_ns)
		rss=$(kv "$f" rss_kb) hwm=$(kv "$f" hwm_kb)
		echo
		echo "A. schedd run, idle ${secs} s then $KILLS x kill -9 (reset_after 1s)"
		printf '  %-44s %-22s %s\n' metric value target
		printf '  %-44s %-22s %s\n' "idle VmRSS / VmHWM" \
			"$(awk -v a="$rss" -v b="$hwm" 'BEGIN{printf "%.1f / %.1f MiB", a/1024, b/1024}')" ""
		printf '  %-44s %-22s %s\n' "  of which RssAnon / RssFile (the binary)" "$(rss_split "$r/schedd-a.proc-status")" ""
		printf '  %-44s %-22s %s\n' "VmRSS after the kills" "$(rss_split "$r/schedd-a.proc-status.after" VmRSS)" ""
		printf '  %-44s %-22s %s\n' "  of which RssAnon / RssFile" "$(rss_split "$r/schedd-a.proc-status.after")" ""
		printf '  %-44s %-22s %s\n' "CPU over the idle window (utime+stime)" \
			"$(kv "$f" cpu_ticks) ticks (1/$(kv "$f" clk_tck) s)" ""
		printf '  %-44s %-22s %s\n' "CPU over the idle window (schedstat)" \
			"$(awk -v a="$rt" 'BEGIN{printf "%.3f ms", a/1e6}')" ""
		printf '  %-44s %-22s %s\n' "voluntary ctxt switches (all $(kv "$f" threads) threads)" \
			"$vol ($(awk -v a="$vol" -v s="$secs" 'BEGIN{printf "%.3f", a/s}')/s)" "<= 0.2 wakeups/s"
		printf '  %-44s %-22s %s\n' "nonvoluntary ctxt switches" "$(kv "$f" nonvoluntary)" ""
		local s
		if [[ -s $r/schedd-a.respawn.ns ]]; then
			read -r -a s <<<"$(stats "$r/schedd-a.respawn.ns")"
			printf '  %-44s %-22s %s\n' "kill -9 -> next child's main(), median" "${s[0]} ms" "(B: <= 1.5 x runit)"
			printf '  %-44s %-22s %s\n' "  p95 / min / max (n=${s[4]})" "${s[1]} / ${s[2]} / ${s[3]} ms" ""
			printf '  %-44s %-22s %s\n' "  kill -> exit logged (median / p95)" "$(series "$r/schedd-a.detect.ns") ms" ""
			printf '  %-44s %-22s %s\n' "  exit logged -> start logged" "$(series "$r/schedd-a.spawn.ns") ms" ""
			printf '  %-44s %-22s %s\n' "  start logged -> child's main()" "$(series "$r/schedd-a.childlag.ns") ms" ""
		fi
	elif [[ $PARTS == *a* ]]; then
		echo
		echo "A. failed: see $r/job-a.log"
	fi
	if [[ $PARTS == *b* ]]; then
		summary_b
	fi
	echo
	echo "Raw results: $r"
}

main() {
	if [[ ${1:-} == --job ]]; then
		run_job "$2"
		return
	fi
	MODE=full
	PARTS=ab
	while (($#)); do
		case $1 in
		--quick) MODE=quick ;;
		--part)
			shift
			case ${1:-} in a | A) PARTS=a ;; b | B) PARTS=b ;; all) PARTS=ab ;; *) usage 2 ;; esac
			;;
		-h | --help) usage 0 ;;
		*) usage 2 ;;
		esac
		shift
	done
	if [[ $MODE == quick ]]; then
		IDLE_SECS=${BENCH_IDLE_SECS:-10} KILLS=${BENCH_KILLS:-5} RESTARTS=${BENCH_RESTARTS:-5}
		IDLE_OTHERS_SECS=${BENCH_IDLE_OTHERS_SECS:-5}
	else
		IDLE_SECS=${BENCH_IDLE_SECS:-60} KILLS=${BENCH_KILLS:-20} RESTARTS=${BENCH_RESTARTS:-20}
		IDLE_OTHERS_SECS=${BENCH_IDLE_OTHERS_SECS:-20}
	fi
	# GAP: how long each child runs before it is killed or restarted: longer than the 1 s
	# backoff reset of schedd's bench config, runsv's 1 s minimum between starts and PM2's
	# 1 s min_uptime, so every kill is of a "long-healthy" child.
	GAP=${BENCH_GAP:-1.5}
	# OTHERS: the supervisors part B compares schedd with; empty: schedd and the floor alone
	# (nothing installed), to compare two builds of schedd.
	OTHERS=${BENCH_OTHERS-runit supervisord pm2}
	[[ -x $SCHEDD ]] || die "$SCHEDD not found: run 'make build' first (or 'make bench')"
	command -v gcc >/dev/null || die "gcc not found: the bench child is a C program"

	RESULTS=$BENCH/results/$(date -u +%Y%m%dT%H%M%SZ)
	mkdir -p "$RESULTS"
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/schedd-bench.XXXXXX")
	JOB_PID=""
	trap 'rc=$?; [[ -n $JOB_PID ]] && kill -TERM "$JOB_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; exit $rc' EXIT
	trap 'exit 130' INT TERM HUP

	CHILD=$WORK/child
	if gcc -O2 -static -o "$CHILD" "$BENCH/child.c" 2>"$RESULTS/gcc.log"; then
		echo "child static" >>"$RESULTS/build.txt"
	else
		gcc -O2 -o "$CHILD" "$BENCH/child.c" 2>>"$RESULTS/gcc.log" || die "cannot build bench/child.c"
		echo "child dynamic (no static libc)" >>"$RESULTS/build.txt"
	fi
	FLOOR=$WORK/floor
	gcc -O2 -o "$FLOOR" "$BENCH/floor.c" 2>>"$RESULTS/gcc.log" || die "cannot build bench/floor.c"
	machine_info >"$RESULTS/machine.txt"
	export FLOOR SCHEDD CACHE PM2_VERSION RESULTS WORK CHILD GAP IDLE_SECS IDLE_OTHERS_SECS KILLS RESTARTS MODE PARTS

	local jobs=()
	[[ $PARTS == *a* ]] && jobs+=(a)
	if [[ $PARTS == *b* ]]; then
		[[ -n $OTHERS ]] && install_others
		jobs+=(floor schedd $OTHERS)
	fi
	local j
	for j in "${jobs[@]}"; do
		log "job $j"
		bash "$SELF" --job "$j" 2> >(tee "$RESULTS/job-$j.log" >&2) &
		JOB_PID=$!
		if ! wait "$JOB_PID"; then
			log "job $j failed (see $RESULTS/job-$j.log)"
		fi
		JOB_PID=""
	done
	echo "loadavg_end $(cut -d' ' -f1-3 /proc/loadavg)" >>"$RESULTS/machine.txt"
	summary | tee "$RESULTS/summary.txt"
}

main "$@"
