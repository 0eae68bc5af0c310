#!/usr/bin/env bash
# Checks what `make package` built: every file in place, the config marked as config,
# the maintainer scripts attached. Needs dpkg-deb and rpm.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "check-packages: $*" >&2; exit 1; }
deb=$(find dist -maxdepth 1 -name 'schedd_*.deb' | head -1)
rpm=$(find dist -maxdepth 1 -name 'schedd-*.rpm' | head -1)
[ -n "$deb" ] || fail "no .deb in dist/ (make package)"
[ -n "$rpm" ] || fail "no .rpm in dist/ (make package)"

files=(
	/usr/bin/schedd
	/usr/lib/systemd/system/schedd.service
	/etc/schedd/schedd.yaml
	/usr/share/bash-completion/completions/schedd
	/usr/share/zsh/vendor-completions/_schedd
	/usr/share/fish/vendor_completions.d/schedd.fish
	/usr/share/man/man1/schedd.1.gz
	/usr/share/man/man1/schedd-run.1.gz
	/usr/share/man/man1/schedd-status.1.gz
	/usr/share/man/man1/schedd-deliveries-enqueue.1.gz
)

echo "== $deb"
debfiles=$(dpkg-deb -c "$deb")
echo "$debfiles"
for f in "${files[@]}"; do
	grep -q " \.$f\$" <<<"$debfiles" || fail "$deb lacks $f"
done
grep -q '^-rwxr-xr-x .* \./usr/bin/schedd$' <<<"$debfiles" || fail "$deb: /usr/bin/schedd is not executable"
conffiles=$(dpkg-deb -I "$deb" conffiles)
[ "$conffiles" = /etc/schedd/schedd.yaml ] || fail "$deb conffiles: $conffiles"
for s in postinst prerm postrm; do
	dpkg-deb -I "$deb" "$s" | grep -q 'run/systemd/system' || fail "$deb: $s does not check for systemd"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -x "$deb" "$tmp"
cmp "$tmp/usr/lib/systemd/system/schedd.service" systemd/schedd.service || fail "$deb: unit differs from systemd/schedd.service"
# Every man page is a gzipped roff page of schedd's manual; schedd-run's is the run command's.
for page in "$tmp"/usr/share/man/man1/*.1.gz; do
	zcat "$page" | grep -q '^\.TH "SCHEDD" "1"' || fail "$deb: $page is not a page of schedd's manual"
done
zcat "$tmp/usr/share/man/man1/schedd-run.1.gz" | grep -q 'Run the daemon: supervise the gateway' || fail "$deb: schedd-run.1 is not the run command's page"
if [ "$(dpkg-deb -f "$deb" Architecture)" = "$(dpkg --print-architecture 2>/dev/null || true)" ]; then
	"$tmp/usr/bin/schedd" version | grep -q '^schedd ' || fail "$deb: the binary does not run"
	"$tmp/usr/bin/schedd" config validate "$tmp/etc/schedd/schedd.yaml" || fail "$deb: the default config is not valid"
fi

echo "== $rpm"
rpmfiles=$(rpm -qlp "$rpm")
echo "$rpmfiles"
for f in "${files[@]}"; do
	grep -qx "$f" <<<"$rpmfiles" || fail "$rpm lacks $f"
done
[ "$(rpm -qcp "$rpm")" = /etc/schedd/schedd.yaml ] || fail "$rpm config files: $(rpm -qcp "$rpm")"
rpm -qp --queryformat '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$rpm" | grep -q '^cn /etc/schedd/schedd.yaml$' ||
	fail "$rpm: /etc/schedd/schedd.yaml is not %config(noreplace)"
scripts=$(rpm -qp --scripts "$rpm")
for s in postinstall preuninstall postuninstall; do
	grep -q "^$s scriptlet" <<<"$scripts" || fail "$rpm lacks its $s scriptlet"
done
echo "packages ok"
