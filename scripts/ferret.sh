#!/usr/bin/env bash
# Throwaway FerretDB (MongoDB wire protocol, SQLite backend) for denorm's tests and demo.
#
#   scripts/ferret.sh start DIR PORT   run bin/testserver serve in the background (building
#                                      it with `make tools` if missing), data in DIR/data,
#                                      PID in DIR/ferret.pid, log in DIR/ferret.log; waits
#                                      until 127.0.0.1:PORT answers and prints the URI
#   scripts/ferret.sh stop DIR         stop the server whose PID is in DIR/ferret.pid
#
# Everything but the URI goes to stderr.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
TESTSERVER="${DENORM_TESTSERVER:-$ROOT/bin/testserver}"
START_TIMEOUT="${DENORM_FERRET_START_TIMEOUT:-30}"
STOP_TIMEOUT="${DENORM_FERRET_STOP_TIMEOUT:-20}"

log() { echo "ferret.sh: $*" >&2; }
die() { log "$*"; exit 1; }

usage() {
	sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

port_answers() {
	timeout 2 bash -c "</dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# is_ours tells whether PID is alive and is a testserver (guards against PID reuse).
is_ours() {
	local pid="$1"
	kill -0 "$pid" 2>/dev/null || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'testserver serve' || return 1
}

cmd_start() {
	local dir="$1" port="$2"
	[[ "$port" =~ ^[0-9]+$ && "$port" -ge 1 && "$port" -le 65535 ]] || die "PORT must be 1-65535, got '$port'"
	if [[ ! -x "$TESTSERVER" ]]; then
		log "building $TESTSERVER (make tools)"
		make -C "$ROOT" tools >&2 || die "could not build $TESTSERVER"
	fi
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd -P)"
	if [[ -f "$dir/ferret.pid" ]] && is_ours "$(cat "$dir/ferret.pid")"; then
		die "a server is already running for $dir (PID $(cat "$dir/ferret.pid"))"
	fi
	if port_answers "$port"; then
		die "port 127.0.0.1:$port is already in use"
	fi

	: >"$dir/ferret.uri"
	"$TESTSERVER" serve --dir "$dir/data" --addr "127.0.0.1:$port" \
		</dev/null >"$dir/ferret.uri" 2>"$dir/ferret.log" &
	local pid=$!
	echo "$pid" >"$dir/ferret.pid"

	local deadline=$((SECONDS + START_TIMEOUT))
	while :; do
		if ! kill -0 "$pid" 2>/dev/null; then
			local rc=0
			wait "$pid" || rc=$?
			rm -f "$dir/ferret.pid"
			log "FerretDB exited during start (status $rc); last lines of $dir/ferret.log:"
			tail -n 20 "$dir/ferret.log" >&2 || true
			exit 1
		fi
		if [[ -s "$dir/ferret.uri" ]] && port_answers "$port"; then
			break
		fi
		if ((SECONDS >= deadline)); then
			log "FerretDB did not answer on 127.0.0.1:$port within ${START_TIMEOUT}s; last lines of $dir/ferret.log:"
			tail -n 20 "$dir/ferret.log" >&2 || true
			cmd_stop "$dir"
			exit 1
		fi
		sleep 0.05
	done
	echo "mongodb://127.0.0.1:$port/"
}

cmd_stop() {
	local dir="$1" pid
	[[ -f "$dir/ferret.pid" ]] || return 0
	pid="$(cat "$dir/ferret.pid")"
	[[ "$pid" =~ ^[0-9]+$ ]] || { rm -f "$dir/ferret.pid"; return 0; }
	if is_ours "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		local deadline=$((SECONDS + STOP_TIMEOUT))
		while kill -0 "$pid" 2>/dev/null; do
			if ((SECONDS >= deadline)); then
				log "PID $pid did not exit within ${STOP_TIMEOUT}s after SIGTERM; sending SIGKILL"
				kill -KILL "$pid" 2>/dev/null || true
				sleep 0.2
				break
			fi
			# A zombie child of this shell: reap it.
			if [[ "$(ps -o stat= -p "$pid" 2>/dev/null)" == Z* ]]; then
				wait "$pid" 2>/dev/null || true
				break
			fi
			sleep 0.05
		done
	fi
	rm -f "$dir/ferret.pid"
}

[[ $# -ge 1 ]] || usage
case "$1" in
start)
	[[ $# -eq 3 ]] || usage
	cmd_start "$2" "$3"
	;;
stop)
	[[ $# -eq 2 ]] || usage
	cmd_stop "$2"
	;;
*)
	usage
	;;
esac
