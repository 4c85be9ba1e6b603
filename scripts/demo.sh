#!/usr/bin/env bash
# The demo behind `make demo`: loads testdata/examples/seed.sql into a database
# denorm_demo, migrates it with mappings/examples/person.yaml into the database "demo"
# of the document store, and prints the documents.
#
# Run it through scripts/testenv.sh (as `make demo` does); run alone, it starts its own
# servers that way. Needs bin/denorm and bin/testserver (make build tools).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"

if [[ -z "${DENORM_TEST_PG:-}" || -z "${DENORM_TEST_MONGO:-}" ]]; then
	exec scripts/testenv.sh "$0" "$@"
fi

MAPPING="${DEMO_MAPPING:-mappings/examples/person.yaml}"
SEED="${DEMO_SEED:-testdata/examples/seed.sql}"

step() { printf '\n==> %s\n' "$*" >&2; }

PSQL="psql"
if [[ -n "${DENORM_TEST_PG_BIN:-}" && -x "$DENORM_TEST_PG_BIN/psql" ]]; then
	PSQL="$DENORM_TEST_PG_BIN/psql"
fi
for b in bin/denorm bin/testserver; do
	[[ -x "$b" ]] || { echo "demo: $b is missing: run make build tools" >&2; exit 1; }
done

# The same URL with the database denorm_demo.
base="${DENORM_TEST_PG%%\?*}"
query=""
[[ "$DENORM_TEST_PG" != *\?* ]] || query="?${DENORM_TEST_PG#*\?}"
SOURCE="${base%/*}/denorm_demo$query"
TARGET="${DENORM_TEST_MONGO%/}/demo"

step "create database denorm_demo and load $SEED"
"$PSQL" "$DENORM_TEST_PG" -X -q -v ON_ERROR_STOP=1 -c 'CREATE DATABASE denorm_demo'
"$PSQL" "$SOURCE" -X -q -v ON_ERROR_STOP=1 -f "$SEED"

step "bin/denorm migrate --mapping $MAPPING --source $SOURCE --target $TARGET"
bin/denorm migrate --mapping "$MAPPING" --source "$SOURCE" --target "$TARGET"

step "documents in $TARGET"
bin/testserver dump --uri "$DENORM_TEST_MONGO" --db demo
