#!/usr/bin/env bash
# Installs the system packages denorm's tests need, when missing:
#   PostgreSQL server binaries (scripts/pg.sh install), Chromium (the HTML
#   report test renders the page headless) and groff (the man page test
#   formats every page). Needs root or passwordless sudo for
#   apt-get; installs nothing that is already there. `make deps` runs it;
#   `make demo` does not (make demo-deps: PostgreSQL only).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
log() { echo "deps.sh: $*" >&2; }

SUDO=""
if [[ "$(id -u)" != 0 ]]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		SUDO="sudo -n"
	fi
fi

"$ROOT/scripts/pg.sh" install

missing=()
have_chromium() {
	local b
	for b in chromium chromium-browser google-chrome; do
		command -v "$b" >/dev/null 2>&1 && return 0
	done
	return 1
}
have_chromium || missing+=(chromium)
command -v groff >/dev/null 2>&1 || missing+=(groff-base) # TestManPages formats every man page

if ((${#missing[@]} == 0)); then
	exit 0
fi
if [[ "$(id -u)" != 0 && -z "$SUDO" ]]; then
	log "missing packages: ${missing[*]}; install them as root: apt-get install -y ${missing[*]}"
	exit 1
fi
log "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >&2
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null >&2
