#!/usr/bin/env bash
# Checks the service files the way CI does (`make verify-units`): systemd-analyze verify on
# the committed unit and a rendered user unit, failing on ANY output (it exits 0 on
# warnings); the plists parse (python3 plistlib); the task XML is well-formed (xmllint).
# The Go tests check their content (go test ./cmd/schedd -run 'Golden|Contract|TaskXML').
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${GO:-go} build -o "$tmp/schedd" ./cmd/schedd
status=0

# verify checks that ExecStart's binary exists: the copies run the one just built.
mkdir -p "$tmp/units" "$tmp/root"
sed "s|/usr/bin/schedd|$tmp/schedd|g" systemd/schedd.service >"$tmp/units/schedd.service"
"$tmp/schedd" install --print --user --manager systemd --root "$tmp/root" >"$tmp/units/schedd-user.service"
for unit in "$tmp"/units/*.service; do
	out=$(systemd-analyze verify "$unit" 2>&1) || true
	if [ -n "$out" ]; then
		echo "systemd-analyze verify $(basename "$unit"):"
		echo "$out"
		status=1
	else
		echo "ok: systemd-analyze verify $(basename "$unit")"
	fi
done

"$tmp/schedd" install --print --user --manager launchd --root "$tmp/root" >"$tmp/user.plist"
for plist in launchd/*.plist "$tmp/user.plist"; do
	if python3 -c 'import plistlib, sys; plistlib.load(open(sys.argv[1], "rb"))' "$plist"; then
		echo "ok: plistlib $plist"
	else
		status=1
	fi
done

for xml in packaging/windows/*.xml; do
	if xmllint --noout "$xml"; then
		echo "ok: xmllint $xml"
	else
		status=1
	fi
done
for s in packaging/scripts/*.sh; do
	sh -n "$s" || status=1
done
exit $status
