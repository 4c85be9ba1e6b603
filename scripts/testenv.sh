#!/usr/bin/env bash
# Runs a command against throwaway PostgreSQL and FerretDB servers.
#
#   scripts/testenv.sh CMD [ARGS...]
#
# Picks two free loopback ports, makes a temporary directory under /tmp (mode 755),
# starts PostgreSQL (scripts/pg.sh) and FerretDB (scripts/ferret.sh), exports
#   DENORM_TEST_PG     postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
#   DENORM_TEST_MONGO  mongodb://127.0.0.1:PORT/
#   DENORM_TEST_PG_BIN the PostgreSQL bin directory (psql, pg_dump, ...)
# runs CMD, then always stops both servers and removes the directory, exiting with
# CMD's exit code. Set DENORM_TESTENV_KEEP=1 to keep the directory (logs) afterwards.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
SCRIPTS="$ROOT/scripts"

log() { echo "testenv: $*" >&2; }

if [[ $# -eq 0 ]]; then
	sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
fi

# port_in_use tells whether a socket uses 127.0.0.1:PORT (listening or
# connected: a client's local port cannot be bound either) or something
# answers there.
port_in_use() {
	local p="$1"
	if command -v ss >/dev/null 2>&1; then
		if ss -Htan "sport = :$p" 2>/dev/null | grep -q .; then
			return 0
		fi
	fi
	timeout 2 bash -c "</dev/tcp/127.0.0.1/$p" 2>/dev/null
}

declare -A TAKEN=()
# PORT_LO..PORT_HI: below the kernel's range of ports for outgoing
# connections (ip_local_port_range), which any client may take at any
# moment; 20000-59999 where that range leaves too little room.
PORT_LO=20000 PORT_HI=59999
if read -r eph_lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null && ((eph_lo > 12000)); then
	PORT_LO=10000 PORT_HI=$((eph_lo - 1))
fi
# free_port prints a port in PORT_LO..PORT_HI that nothing uses and this
# run has not picked.
free_port() {
	local _ p
	for _ in $(seq 1 200); do
		p=$((PORT_LO + (RANDOM * 32768 + RANDOM) % (PORT_HI - PORT_LO + 1)))
		[[ -z "${TAKEN[$p]:-}" ]] || continue
		if ! port_in_use "$p"; then
			TAKEN[$p]=1
			echo "$p"
			return 0
		fi
	done
	log "no free port found"
	return 1
}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2fs", b - a }'; }

TMP=""
PG_STARTED=""
FERRET_STARTED=""
CHILD=""
# shellcheck disable=SC2317 # called through trap
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n "$CHILD" ]] && kill -0 "$CHILD" 2>/dev/null; then
		kill -TERM "$CHILD" 2>/dev/null || true
		wait "$CHILD" 2>/dev/null || true
	fi
	if [[ -n "$FERRET_STARTED" ]]; then
		"$SCRIPTS/ferret.sh" stop "$TMP/ferret" || log "could not stop FerretDB"
	fi
	if [[ -n "$PG_STARTED" ]]; then
		"$SCRIPTS/pg.sh" stop "$TMP/pg" || log "could not stop PostgreSQL"
	fi
	if [[ -n "$TMP" && -d "$TMP" ]]; then
		if [[ -n "${DENORM_TESTENV_KEEP:-}" ]]; then
			log "kept $TMP"
		else
			rm -rf "$TMP"
		fi
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

TMP="$(mktemp -d /tmp/denorm-testenv.XXXXXX)"
chmod 755 "$TMP"

# Start each server, retrying with another port if it fails (the picked
# one may have been taken meanwhile).
t0="$(now)"
for attempt in 1 2 3; do
	port="$(free_port)"
	PG_STARTED=1
	if DENORM_TEST_PG="$("$SCRIPTS/pg.sh" start "$TMP/pg" "$port")"; then
		break
	fi
	"$SCRIPTS/pg.sh" stop "$TMP/pg" >/dev/null 2>&1 || true
	PG_STARTED=""
	if [[ $attempt == 3 ]]; then
		log "PostgreSQL failed to start"
		exit 1
	fi
	log "PostgreSQL did not start on port $port; retrying on another"
done
log "PostgreSQL ready at 127.0.0.1:$port ($(since "$t0"))"

t0="$(now)"
for attempt in 1 2 3; do
	port="$(free_port)"
	FERRET_STARTED=1
	if DENORM_TEST_MONGO="$("$SCRIPTS/ferret.sh" start "$TMP/ferret" "$port")"; then
		break
	fi
	FERRET_STARTED=""
	if [[ $attempt == 3 ]]; then
		log "FerretDB failed to start"
		exit 1
	fi
	log "FerretDB did not start on port $port; retrying on another"
done
log "FerretDB ready at 127.0.0.1:$port ($(since "$t0"))"

DENORM_TEST_PG_BIN="$("$SCRIPTS/pg.sh" bindir)"
export DENORM_TEST_PG DENORM_TEST_MONGO DENORM_TEST_PG_BIN

# Run CMD in the background and wait for it, so that a SIGTERM/SIGINT sent to this
# script is handled at once (the trap stops CMD, then the servers). Keep CMD's stdin.
t0="$(now)"
"$@" <&0 &
CHILD=$!
rc=0
wait "$CHILD" || rc=$?
CHILD=""
log "command exited with status $rc ($(since "$t0"))"
exit "$rc"
