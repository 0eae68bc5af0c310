#!/usr/bin/env bash
# Builds dist/schedd_*.deb and dist/schedd-*.rpm with nfpm (`make package`).
# PKG_ARCH (a GOARCH, default the host's) and PKG_VERSION (default from the last v* tag,
# else 0.0.0~dev) choose the package; VERSION is what `schedd version` prints.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
NFPM=github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
PKG_ARCH=${PKG_ARCH:-$($GO env GOARCH)}
if [ -z "${PKG_VERSION:-}" ]; then
	tag=$(git describe --tags --match 'v[0-9]*' 2>/dev/null || true)
	PKG_VERSION=${tag#v}
	PKG_VERSION=${PKG_VERSION:-0.0.0~dev}
fi
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
export PKG_ARCH PKG_VERSION

root=dist/pkgroot
rm -rf "$root"
mkdir -p "$root/completions"
CGO_ENABLED=0 GOOS=linux GOARCH=$PKG_ARCH $GO build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o "$root/schedd" ./cmd/schedd
# The config, completions and man pages come from a binary that runs here.
host="$root/.host-schedd"
CGO_ENABLED=0 $GO build -o "$host" ./cmd/schedd
"$host" config example >"$root/schedd.yaml"
"$host" completion bash >"$root/completions/schedd.bash"
"$host" completion zsh >"$root/completions/_schedd"
"$host" completion fish >"$root/completions/schedd.fish"
# A man page for schedd and each command (`man schedd`, `man schedd-run`, ...), gzipped.
"$host" man --dir "$root/man"
gzip -9n "$root/man"/*.1
rm "$host"

for format in deb rpm; do
	$GO run "$NFPM" package --config packaging/nfpm.yaml --packager "$format" --target dist/
done
ls -l dist/*.deb dist/*.rpm
