#!/usr/bin/env bash
# bench/backlog/run.sh: what a long backlog costs a real `schedd run`. For each store
# (SQLite, Postgres) and each backlog size, the store is filled through its Go API
# (dlbench prefill) with N pending entries due in 24 h (a sink down for a day), then:
#
#   start 1 (the gateway is ready at once): start -> control socket answering, -> gateway
#     ready, -> runtime armed; VmRSS and VmHWM once settled; CPU (utime+stime) over
#     IDLE_SECS with nothing due; `schedd status` and `schedd deliveries list` latency
#     (median of 20, the command's whole run);
#   start 2 (the gateway gets ready only when the bench says so): enqueue of N_WORK entries
#     through the control API, 16 clients; then the gateway gets ready and they drain to a
#     no-op local sink (dlbench sink), 16 workers;
#
# and the same with N cron jobs (`every: 24h`, nothing due) on each store: start-up,
# RSS, idle CPU, status latency.
#
#   bash bench/backlog/run.sh                                # 0, 10k, 100k; cron 10k, 100k
#   SIZES="1000000" CRON_SIZES= bash bench/backlog/run.sh    # the 1M backlog alone
#   STORES=sqlite IDLE_SECS=10 bash bench/backlog/run.sh     # quicker
#   flock /tmp/schedd-bench.lock bash bench/backlog/run.sh   # on a shared machine
#
# Knobs: SIZES ("0 10000 100000"; 0 is the empty store the rates are compared with),
# CRON_SIZES ("10000 100000"), STORES ("sqlite postgres"; postgres needs initdb, PG_BIN),
# IDLE_SECS (30), N_WORK (20000), PG_ANALYZE (1: VACUUM ANALYZE and CHECKPOINT a Postgres backlog
# after the prefill), PG_OPTS (more server settings, e.g. "-c shared_preload_libraries=pg_stat_statements,auto_explain
# -c auto_explain.log_min_duration=5"; the server's log is kept as postgres.log), BENCH_DIR (bench/backlog/.work), SCHEDD and DLBENCH (built
# binaries; default: both built here).
# Raw figures (one JSON object per line) go to bench/backlog/results/<UTC time>/.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/bench/backlog
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=$HERE/results/$STAMP
WORK=${BENCH_DIR:-$HERE/.work}/$STAMP
SIZES=${SIZES-"0 10000 100000"}
CRON_SIZES=${CRON_SIZES-"10000 100000"}
STORES=${STORES-"sqlite postgres"}
IDLE_SECS=${IDLE_SECS:-30}
N_WORK=${N_WORK:-20000}
PROFILE=${PROFILE:-}
PPROF_ADDR=127.0.0.1:${PPROF_PORT:-6061}

# shellcheck source=bench/deliveries/lib.sh
. "$ROOT/bench/deliveries/lib.sh"

PIDS=()
PGDATA=$WORK/pg/data
PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
AS=()
if [[ $EUID -eq 0 ]]; then AS=(runuser -u postgres --); fi
cleanup() {
	local p
	for p in "${PIDS[@]+"${PIDS[@]}"}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[[ -f $PGDATA/postmaster.pid ]] && "${AS[@]+"${AS[@]}"}" "$PG_BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1
	[[ -f $WORK/pg/log ]] && cp "$WORK/pg/log" "$OUT/postgres.log"
	rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$OUT" "$WORK"
RESULTS=$OUT/results.jsonl
: >"$RESULTS"

if [[ -z ${SCHEDD:-} || -z ${DLBENCH:-} ]]; then
	log "building schedd and dlbench"
	TAGS=()
	[[ -n $PROFILE ]] && TAGS=(-tags schedd_pprof)
	(cd "$ROOT" && CGO_ENABLED=0 go build "${TAGS[@]+"${TAGS[@]}"}" -o "$WORK/schedd" ./cmd/schedd && go build -o "$WORK/dlbench" ./bench/deliveries)
	SCHEDD=$WORK/schedd DLBENCH=$WORK/dlbench
fi
{
	echo "date: $STAMP"
	uname -a
	echo "cpus: $(nproc)"
	echo "go: $(go version)"
	echo "schedd: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} >"$OUT/machine.txt"
loadavg start

HZ=$(getconf CLK_TCK)
now_ns() { date +%s%N; }
cpu_ticks() { awk '{ s = $0; sub(/^.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' "/proc/$1/stat"; }
vm() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

# median_ms CMD...: the median wall time of 20 runs of CMD, in ms.
median_ms() {
	local i t0 t1
	for ((i = 0; i < 20; i++)); do
		t0=$EPOCHREALTIME
		"$@" >/dev/null || die "failed: $*"
		t1=$EPOCHREALTIME
		echo "$t0 $t1"
	done | awk '{ print ($2 - $1) * 1000 }' | sort -g | awk '{ a[NR] = $1 } END { printf "%.2f", (a[10] + a[11]) / 2 }'
}

# ms_since NS LOGMSG: ms from NS (unix ns) to the first line of CUR's log with msg LOGMSG.
ms_since() {
	python3 - "$OUT/$CUR.log" "$1" "$2" <<'PY'
import datetime, json, sys
for l in open(sys.argv[1]):
    try:
        d = json.loads(l)
    except ValueError:
        continue
    if d.get("msg") == sys.argv[3]:
        ts = d["ts"]
        frac = ts[ts.index(".") + 1:].rstrip("Z").split("+")[0].split("-")[0] if "." in ts else "0"
        base = datetime.datetime.fromisoformat(ts.split(".")[0] + ts[len(ts.split(".")[0]) + 1 + len(frac):] if "." in ts else ts)
        ns = int(base.timestamp()) * 10**9 + int((frac + "000000000")[:9])
        print("%.1f" % ((ns - int(sys.argv[2])) / 1e6))
        break
else:
    print("null")
PY
}

# measure_idle NAME STORE N KIND: the figures of start 1 (schedd running as CUR).
measure_idle() {
	local name=$1 store=$2 n=$3 kind=$4 sock_ms=$5
	wait_log "$CUR" "gateway ready"
	# An empty SQLite store is not opened until the first enqueue: nothing to arm.
	local armed=$((n > 0)) ready_ms armed_ms=null
	[[ $kind == deliveries ]] || armed=0
	((armed)) && wait_log "$CUR" "delivery runtime armed the pending entries"
	ready_ms=$(ms_since "$SD_START" "gateway ready")
	((armed)) && armed_ms=$(ms_since "$SD_START" "delivery runtime armed the pending entries")
	sleep 3
	local rss hwm c0 c1 status_ms list_ms=null
	rss=$(vm "$SD_PID" VmRSS) hwm=$(vm "$SD_PID" VmHWM)
	c0=$(cpu_ticks "$SD_PID")
	sleep "$IDLE_SECS"
	c1=$(cpu_ticks "$SD_PID")
	status_ms=$(median_ms "$SCHEDD" status --socket "$SD_SOCK")
	[[ $kind == deliveries ]] && list_ms=$(median_ms "$SCHEDD" deliveries list --socket "$SD_SOCK")
	printf '{"bench":"backlog idle","kind":"%s","store":"%s","n":%d,"socket_ms":%s,"ready_ms":%s,"armed_ms":%s,"rss_mb":%.1f,"hwm_mb":%.1f,"idle_cpu_pct":%.3f,"idle_secs":%d,"status_ms":%s,"list_ms":%s}\n' \
		"$kind" "$store" "$n" "$sock_ms" "$ready_ms" "$armed_ms" "$(echo "$rss / 1024" | bc -l)" "$(echo "$hwm / 1024" | bc -l)" \
		"$(echo "($c1 - $c0) * 100 / $HZ / $IDLE_SECS" | bc -l)" "$IDLE_SECS" "$status_ms" "$list_ms" | tee -a "$RESULTS"
}

# start NAME CONFIG: start_schedd, and the ms until the control socket answered.
start() {
	CUR=$1
	start_schedd "$1" "$2"
	SOCK_MS=$(awk -v a="$SD_START" -v b="$(now_ns)" 'BEGIN { printf "%.1f", (b - a) / 1e6 }')
}

# store_yaml STORE N: the deliveries.store lines of STORE (postgres: database db_N).
store_yaml() { [[ $1 == postgres ]] && printf '  store:\n    postgres: {dsn: "%s"}\n' "$(dsn "db_$2")"; true; }

run_deliveries() { # STORE N
	local store=$1 n=$2 name=$1-$2 fill=()
	if [[ $store == postgres ]]; then
		"${PSQL[@]}" -c "CREATE DATABASE db_$n"
		"${PSQL[@]}" -d "db_$n" -c "CREATE EXTENSION pg_stat_statements"
		fill=(-dsn "$(dsn "db_$n")")
	else
		mkdir -p "$WORK/$name"
		fill=(-db "$WORK/$name/schedd.db")
	fi
	if ((n > 0)); then
		log "$name: prefill $n entries due in 24 h"
		"$DLBENCH" prefill "${fill[@]}" -n "$n" -sink later -due-at $(($(date +%s%3N) + 86400000)) >>"$RESULTS"
		# A backlog that grew over a day has been vacuumed and analyzed by autovacuum, and
		# written out by checkpoints; one loaded in a minute has not (PG_ANALYZE=0 measures it
		# as loaded: the checkpoint the load started then runs through the measures).
		if [[ $store == postgres && ${PG_ANALYZE:-1} == 1 ]]; then
			"${PSQL[@]}" -d "db_$n" -c "VACUUM ANALYZE"
			"${PSQL[@]}" -d "db_$n" -c "CHECKPOINT"
			"${PSQL[@]}" -d "db_$n" -c "SELECT pg_size_pretty(pg_total_relation_size('schedd_deliveries'))" |
				sed "s/^/$name: the deliveries table and its indexes: /" >&2
		fi
	fi
	# Start 1: the gateway is ready at once; nothing is due.
	cat >"$WORK/$name.yaml" <<EOF
gateway:
  command: [sleep, "3600"]
deliveries:
  max_entries: 2000000
$(store_yaml "$store" "$n")
  sinks:
    later: {http: {url: "http://127.0.0.1:9/hook"}}
EOF
	start "$name" "$WORK/$name.yaml"
	measure_idle "$name" "$store" "$n" deliveries "$SOCK_MS"
	stop_schedd
	mv "$OUT/$name.log" "$OUT/$name-idle.log"
	# Start 2 (the same state dir): enqueue while the gateway is not ready, then drain to the sink.
	rm -f "$WORK/ready" "$WORK/sink.addr"
	"$DLBENCH" sink -n "$N_WORK" -who "$name" -addr-file "$WORK/sink.addr" >"$WORK/sink.json" &
	local sink_pid=$! i
	PIDS+=("$sink_pid")
	for ((i = 0; i < 500; i++)); do [[ -s $WORK/sink.addr ]] && break; sleep 0.01; done
	cat >"$WORK/$name-work.yaml" <<EOF
gateway:
  command: [sleep, "3600"]
  readiness: {exec: {command: [test, -e, "$WORK/ready"]}, timeout: 1h}
deliveries:
  workers: 16
  max_entries: 2000000
$(store_yaml "$store" "$n")
  sinks:
    later: {http: {url: "http://127.0.0.1:9/hook"}}
    hook: {gateway: {path: /hook, base_url: "http://$(cat "$WORK/sink.addr")"}}
EOF
	start "$name" "$WORK/$name-work.yaml"
	((n == 0)) || wait_log "$CUR" "delivery runtime armed the pending entries"
	"$DLBENCH" enqueue -socket "$SD_SOCK" -server-pid "$SD_PID" -clients 16 -n "$N_WORK" -prefix "w$n" |
		sed "s/^{/{\"store\":\"$store\",\"backlog\":$n,/" >>"$RESULTS"
	touch "$WORK/ready"
	wait "$sink_pid" || die "the sink failed"
	sed "s/^{/{\"store\":\"$store\",\"backlog\":$n,/" "$WORK/sink.json" >>"$RESULTS"
	stop_schedd
	[[ $store == sqlite ]] && rm -rf "$WORK/$name"
	if [[ $store == postgres ]]; then
		# What the database spent its time on, for this backlog (the statements of the
		# prefill included): the first place to look when a figure grows with it.
		"${PSQL[@]}" -d "db_$n" -F ' | ' -c "SELECT calls, round(total_exec_time) AS total_ms,
			round(mean_exec_time::numeric, 3) AS mean_ms, left(regexp_replace(query, '\s+', ' ', 'g'), 160)
			FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			ORDER BY total_exec_time DESC LIMIT 12" >"$OUT/$name-statements.txt"
		"${PSQL[@]}" -c "DROP DATABASE db_$n"
	fi
	true
}

run_cron() { # STORE N (postgres: cron's tables in the database db_cron_N)
	local store=$1 n=$2 name=cron-$1-$2
	log "$name: $n cron jobs, every 24h"
	[[ $store == postgres ]] && "${PSQL[@]}" -c "CREATE DATABASE db_cron_$n"
	{
		printf 'gateway:\n  command: [sleep, "3600"]\n'
		[[ $store == postgres ]] && printf 'deliveries:\n%s\n' "$(store_yaml postgres "cron_$n")"
		printf 'cron:\n  jobs:\n'
		for ((i = 0; i < n; i++)); do
			printf '    - {name: j%07d, every: 24h, action: {http: {url: "http://127.0.0.1:9/"}}}\n' "$i"
		done
	} >"$WORK/$name.yaml"
	start "$name" "$WORK/$name.yaml"
	measure_idle "$name" "$store" "$n" cron "$SOCK_MS"
	stop_schedd
	rm -rf "$WORK/$name"
	[[ $store == postgres ]] && "${PSQL[@]}" -c "DROP DATABASE db_cron_$n"
	true
}

for store in $STORES; do
	if [[ $store == postgres ]]; then
		[[ -x $PG_BIN/initdb ]] || die "no initdb in PG_BIN=$PG_BIN"
		PG_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		mkdir -p "$WORK/pg"
		[[ $EUID -eq 0 ]] && chown postgres: "$WORK/pg"
		"${AS[@]+"${AS[@]}"}" "$PG_BIN/initdb" -D "$PGDATA" -A trust -U postgres -E UTF8 >"$OUT/initdb.log" 2>&1 || die "initdb failed"
		"${AS[@]+"${AS[@]}"}" "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$WORK/pg/log" -w -t 60 \
			-o "-h 127.0.0.1 -p $PG_PORT -k $WORK/pg -c max_connections=100 -c shared_preload_libraries=pg_stat_statements ${PG_OPTS:-}" start >/dev/null || die "pg_ctl start failed"
		PSQL=("$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -qAtX -v ON_ERROR_STOP=1)
		dsn() { echo "host=127.0.0.1 port=$PG_PORT user=postgres dbname=$1 sslmode=disable"; }
	fi
	for n in $SIZES; do run_deliveries "$store" "$n"; done
	for n in $CRON_SIZES; do run_cron "$store" "$n"; done
done

loadavg end
log "done: $OUT"
python3 - "$RESULTS" <<'PY' | tee "$OUT/summary.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
enq = {(r["store"], r["backlog"]): r for r in rows if "backlog" in r and "enqueue" in r.get("bench", "")}
drain = {(r["store"], r["backlog"]): r for r in rows if "backlog" in r and "sink" in r.get("bench", "")}
fmt = "%-10s %-8s %8s %9s %9s %9s %7s %7s %9s %9s %8s %9s %9s"
print(fmt % ("kind", "store", "n", "socket_ms", "ready_ms", "armed_ms", "rss_mb", "hwm_mb", "idle_cpu%",
             "status_ms", "list_ms", "enqueue/s", "drain/s"))
for r in rows:
    if r.get("bench") != "backlog idle":
        continue
    k = (r["store"], r["n"]) if r["kind"] == "deliveries" else None
    e, d = enq.get(k), drain.get(k)
    print(fmt % (r["kind"], r["store"], r["n"], r["socket_ms"], r["ready_ms"], r["armed_ms"] or "-",
                 "%.1f" % r["rss_mb"], "%.1f" % r["hwm_mb"], "%.2f" % r["idle_cpu_pct"], r["status_ms"],
                 r["list_ms"] or "-", "%.0f" % e["per_s"] if e else "-", "%.0f" % d["per_s"] if d else "-"))
PY
