#!/bin/sh
# After a removal or an upgrade: systemd forgets the removed unit.
set -e

if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload || true
fi
exit 0
