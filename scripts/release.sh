#!/usr/bin/env bash
# Release builds of denorm into dist/ (make release, make image).
#
#   scripts/release.sh all        clean dist/, then binaries, man pages, image, manifest, SHA256SUMS
#   scripts/release.sh binaries   static binaries for $PLATFORMS
#   scripts/release.sh image      linux binaries, then the OCI image (tools/ociimage), SHA256SUMS
#
# Binaries are static (CGO_ENABLED=0) and reproducible: -trimpath, an empty
# build id, no VCS stamping by the toolchain, and a build date that is the
# commit's date (or SOURCE_DATE_EPOCH), not the clock; the same commit and Go
# version give the same bytes. Version, commit and date are stamped with
# -ldflags -X into main.version, main.commit and main.date.
#
# Environment: DIST (dist), VERSION (git describe --tags --always --dirty),
# COMMIT (git rev-parse HEAD), DATE (RFC 3339, UTC), SOURCE_DATE_EPOCH,
# PLATFORMS ("linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"),
# IMAGE (ghcr.io/denorm/denorm), GO (go).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/local/go/bin"

GO=${GO:-go}
DIST=${DIST:-dist}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
IMAGE=${IMAGE:-ghcr.io/denorm/denorm}
SOURCE_URL=https://github.com/denorm/denorm

VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
if [[ -z "${DATE:-}" ]]; then
	if [[ -n "${SOURCE_DATE_EPOCH:-}" ]]; then
		DATE=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
	else
		DATE=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo 1970-01-01T00:00:00Z)
	fi
fi
EPOCH=$(date -u -d "$DATE" +%s)

# ldflags: -s -w drop the symbol table and DWARF (panics keep their stack traces).
LDFLAGS="-s -w -buildid= -X main.version=$VERSION -X main.commit=$COMMIT -X main.date=$DATE"

binary() { # os/arch -> path of its binary in $DIST
	echo "$DIST/denorm-${1%/*}-${1#*/}"
}

build_binaries() { # platforms...
	mkdir -p "$DIST"
	local p
	for p in "$@"; do
		echo "build $(binary "$p") ($VERSION, $COMMIT, $DATE)"
		CGO_ENABLED=0 GOOS=${p%/*} GOARCH=${p#*/} GOFLAGS= \
			"$GO" build -trimpath -buildvcs=false -ldflags "$LDFLAGS" -o "$(binary "$p")" ./cmd/denorm
	done
}

# The man pages, written by the host's binary (`denorm man`), dated with the
# build date, as one reproducible tarball.
build_man() {
	local host bin tmp
	host="$("$GO" env GOOS)/$("$GO" env GOARCH)"
	bin=$(binary "$host")
	[[ -x "$bin" ]] || build_binaries "$host"
	tmp=$(mktemp -d)
	"$bin" man "$tmp/man/man1"
	tar --sort=name --mtime="@$EPOCH" --owner=0 --group=0 --numeric-owner --mode=go-w,a+rX \
		-C "$tmp" -cf - man | gzip -n -9 >"$DIST/denorm-man.tar.gz"
	echo "man pages: $DIST/denorm-man.tar.gz ($(ls "$tmp/man/man1" | wc -l) pages)"
	rm -rf "$tmp"
}

# The OCI image of the linux binaries already built (tools/ociimage, its own Go module).
build_image() {
	local args=() p
	for p in $PLATFORMS; do
		[[ $p == linux/* ]] && args+=("$p=$(binary "$p")")
	done
	((${#args[@]})) || { echo "no linux platform in PLATFORMS: no image" >&2; return 1; }
	(cd tools/ociimage && GOWORK=off GOFLAGS= "$GO" build -trimpath -o ../../bin/ociimage .)
	bin/ociimage -o "$DIST/denorm-image.tar" -name "$IMAGE" -version "$VERSION" -revision "$COMMIT" \
		-created "$DATE" -source "$SOURCE_URL" -license LICENSE "${args[@]}"
}

# The Kubernetes manifests with the image pinned to this version.
pin_manifest() {
	local want="image: $IMAGE:latest" f
	for f in deploy/kubernetes/*.yaml; do
		grep -q "$want" "$f" || { echo "$f: no '$want' to pin" >&2; return 1; }
		sed "s|$want|image: $IMAGE:$VERSION|" "$f" >"$DIST/$(basename "$f")"
	done
}

sums() {
	(cd "$DIST" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
	echo "$DIST:"
	(cd "$DIST" && ls -l --time-style=+ | tail -n +2 && cat SHA256SUMS)
}

case "${1:-all}" in
all)
	rm -rf "$DIST"
	# shellcheck disable=SC2086 # one word per platform
	build_binaries $PLATFORMS
	build_man
	build_image
	pin_manifest
	cp LICENSE "$DIST/LICENSE"
	sums
	;;
binaries)
	# shellcheck disable=SC2086
	build_binaries $PLATFORMS
	;;
image)
	# shellcheck disable=SC2086
	build_binaries $(tr ' ' '\n' <<<"$PLATFORMS" | grep '^linux/')
	build_image
	sums
	;;
*)
	echo "usage: $0 [all|binaries|image]" >&2
	exit 2
	;;
esac
