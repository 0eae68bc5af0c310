#!/bin/sh
# After an install or an upgrade (deb: configure; rpm: %post 1 or 2).
set -e

if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload || true
	if systemctl is-active --quiet schedd.service; then
		# An upgrade while schedd runs: schedd checks the new binary and its config, then
		# replaces itself (exit 75, systemd starts the new one). If the check fails, the
		# running schedd keeps running and says why.
		/usr/bin/schedd restart --daemon ||
			echo "schedd: the running daemon was kept; see above" >&2
	else
		echo "schedd: set gateway.command in /etc/schedd/schedd.yaml, then: systemctl enable --now schedd" >&2
	fi
fi
exit 0
