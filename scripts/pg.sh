#!/usr/bin/env bash
# Throwaway PostgreSQL clusters for denorm's tests and demo.
#
#   scripts/pg.sh start DIR PORT   create a cluster in DIR/data (if absent) and start it on
#                                  127.0.0.1:PORT (socket dir DIR); prints the URL on stdout
#   scripts/pg.sh stop DIR         stop the cluster in DIR (pg_ctl, fast mode)
#   scripts/pg.sh status DIR       pg_ctl status
#   scripts/pg.sh install          install the PostgreSQL server binaries if missing (root)
#   scripts/pg.sh bindir           print the PostgreSQL bin directory used
#
# The server refuses to run as root: as root, initdb/pg_ctl run as the system user
# $DENORM_PG_USER (default denormtest, created if missing) through runuser, and DIR is
# chowned to it; every parent of DIR must be traversable by that user.
# Everything but the URL (and bindir's answer) goes to stderr.
set -euo pipefail

PG_USER="${DENORM_PG_USER:-denormtest}"
START_TIMEOUT="${DENORM_PG_START_TIMEOUT:-60}"

log() { echo "pg.sh: $*" >&2; }
die() { log "$*"; exit 1; }

usage() {
	sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# find_bindir prints the highest /usr/lib/postgresql/*/bin holding pg_ctl, or fails.
find_bindir() {
	local d best=""
	for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V); do
		if [[ -x "$d/pg_ctl" && -x "$d/initdb" && -x "$d/postgres" ]]; then
			best="$d"
		fi
	done
	[[ -n "$best" ]] || return 1
	echo "$best"
}

install_pg() {
	if find_bindir >/dev/null; then
		return 0
	fi
	if [[ "$(id -u)" != 0 ]]; then
		log "PostgreSQL server binaries not found in /usr/lib/postgresql/*/bin."
		log "Install them as root: apt-get update && apt-get install -y postgresql"
		exit 1
	fi
	log "installing PostgreSQL server (apt-get install postgresql)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2
	apt-get install -y -q --no-install-recommends postgresql >&2
	find_bindir >/dev/null || die "postgresql installed, but no /usr/lib/postgresql/*/bin/pg_ctl found"
}

bindir() {
	find_bindir || {
		log "PostgreSQL server binaries not found; run: scripts/pg.sh install (as root)"
		exit 1
	}
}

ensure_user() {
	if ! id -u "$PG_USER" >/dev/null 2>&1; then
		log "creating system user $PG_USER"
		useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
			--user-group "$PG_USER" >&2 ||
			id -u "$PG_USER" >/dev/null 2>&1 || die "cannot create user $PG_USER"
	fi
}

# as_owner runs a command inside DIR as the cluster's owner (runuser when root).
as_owner() {
	if [[ "$(id -u)" == 0 ]]; then
		(cd "$DIR" && runuser -u "$PG_USER" -- "$@")
	else
		(cd "$DIR" && "$@")
	fi
}

pg_conf() {
	local libdir
	libdir="$("$BIN/pg_config" --pkglibdir 2>/dev/null || echo "$BIN/../lib")"
	cat <<EOF
# Written by scripts/pg.sh on every start: a throwaway test cluster.
# wal_level and the slots and senders: logical replication tests (extract/logical_test.go).
listen_addresses = '127.0.0.1'
unix_socket_directories = '$DIR'
fsync = off
synchronous_commit = off
full_page_writes = off
wal_level = logical
max_wal_senders = 32
max_replication_slots = 32
max_connections = 200
logging_collector = off
EOF
	if [[ -f "$libdir/pg_stat_statements.so" ]]; then
		echo "shared_preload_libraries = 'pg_stat_statements'"
	else
		log "warning: pg_stat_statements not found in $libdir; starting without it"
	fi
}

cmd_start() {
	local port="$1"
	[[ "$port" =~ ^[0-9]+$ && "$port" -ge 1 && "$port" -le 65535 ]] || die "PORT must be 1-65535, got '$port'"
	BIN="$(bindir)"
	mkdir -p "$DIR"
	DIR="$(cd "$DIR" && pwd -P)"
	if [[ "$(id -u)" == 0 ]]; then
		ensure_user
		chown "$PG_USER:" "$DIR"
		chmod 700 "$DIR"
		runuser -u "$PG_USER" -- test -w "$DIR" -a -x "$DIR" ||
			die "$PG_USER cannot use $DIR: every parent directory must be traversable (chmod 755)"
	fi

	if [[ ! -f "$DIR/data/PG_VERSION" ]]; then
		local t0=$SECONDS
		as_owner "$BIN/initdb" -D "$DIR/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
			--no-sync >"$DIR/initdb.log" 2>&1 || {
			tail -n 20 "$DIR/initdb.log" >&2
			die "initdb failed (log: $DIR/initdb.log)"
		}
		echo "include_if_exists = 'denorm.conf'" >>"$DIR/data/postgresql.conf"
		log "initialized cluster in $DIR/data ($((SECONDS - t0))s)"
	fi
	if as_owner "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1; then
		die "a server is already running on $DIR/data (stop it first: scripts/pg.sh stop $DIR)"
	fi
	pg_conf >"$DIR/data/denorm.conf"
	[[ "$(id -u)" != 0 ]] || chown "$PG_USER:" "$DIR/data/denorm.conf"

	: >"$DIR/postgres.log"
	[[ "$(id -u)" != 0 ]] || chown "$PG_USER:" "$DIR/postgres.log"
	if ! as_owner "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/postgres.log" -w -t "$START_TIMEOUT" \
		-o "-p $port" start >"$DIR/pg_ctl.log" 2>&1; then
		cat "$DIR/pg_ctl.log" >&2 || true
		tail -n 20 "$DIR/postgres.log" >&2 || true
		# pg_ctl may have given up on a server that is still coming up: stop it.
		as_owner "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
		die "PostgreSQL failed to start on 127.0.0.1:$port (log: $DIR/postgres.log)"
	fi
	echo "$port" >"$DIR/port"
	echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
}

cmd_stop() {
	[[ -d "$DIR" ]] || { log "no such directory: $DIR"; return 0; }
	DIR="$(cd "$DIR" && pwd -P)"
	if [[ ! -f "$DIR/data/postmaster.pid" ]]; then
		return 0
	fi
	BIN="$(bindir)"
	if ! as_owner "$BIN/pg_ctl" -D "$DIR/data" -m fast -w -t 60 stop >"$DIR/pg_ctl.log" 2>&1; then
		if as_owner "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1; then
			log "fast shutdown failed; trying immediate"
			as_owner "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w -t 30 stop >&2 ||
				die "could not stop the server in $DIR/data"
		fi
	fi
}

cmd_status() {
	BIN="$(bindir)"
	DIR="$(cd "$DIR" && pwd -P)"
	as_owner "$BIN/pg_ctl" -D "$DIR/data" status
}

[[ $# -ge 1 ]] || usage
case "$1" in
start)
	[[ $# -eq 3 ]] || usage
	DIR="$2"
	cmd_start "$3"
	;;
stop)
	[[ $# -eq 2 ]] || usage
	DIR="$2"
	cmd_stop
	;;
status)
	[[ $# -eq 2 ]] || usage
	DIR="$2"
	cmd_status
	;;
install)
	install_pg
	;;
bindir)
	bindir
	;;
-h | --help | help)
	usage
	;;
*)
	usage
	;;
esac
