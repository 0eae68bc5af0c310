#!/usr/bin/env bash
# The real OpenClaw gateway by hand and under schedd, in one run (see README.md here):
# start to /readyz ready, and the unavailability window of each restart: OpenClaw's own
# SIGUSR2 sent by hand, then `schedd restart --wait` with examples/openclaw/schedd.yaml
# (method signal), the same with the fence on, and --method respawn.
#
#   flock /tmp/schedd-bench.lock bash bench/openclaw/run.sh
#
# Knobs: ROUNDS (restarts of each kind, 3), ONLY (scenarios, hand,signal,fence,respawn).
# Node 26 and OpenClaw come from npm through .ci/openclaw.sh (cached in ~/.cache/schedd).
# Raw logs: bench/openclaw/results/<UTC time>/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUT=$ROOT/bench/openclaw/results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$OUT"
dir=$(bash .ci/openclaw.sh)
make -s build
go build -o "$OUT/ocbench" ./bench/openclaw
{
  echo "run $(basename "$OUT"), commit $(git rev-parse --short HEAD), load before: $(cat /proc/loadavg)"
  "$OUT/ocbench" -openclaw "$dir" -schedd bin/schedd -rounds "${ROUNDS:-3}" -only "${ONLY:-hand,signal,fence,respawn}" -out "$OUT"
  echo "load after: $(cat /proc/loadavg)"
} 2>&1 | tee "$OUT/summary.txt"
