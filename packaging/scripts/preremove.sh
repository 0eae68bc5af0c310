#!/bin/sh
# Before a removal (deb: remove; rpm: %preun 0). An upgrade (deb: upgrade; rpm: %preun 1)
# leaves the service running: postinstall of the new version takes over.
set -e

case "$1" in
remove | 0) ;;
*) exit 0 ;;
esac
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	# The gateway is stopped gracefully (schedd's own stop, within TimeoutStopSec).
	systemctl disable --now schedd.service >/dev/null 2>&1 || true
fi
exit 0
