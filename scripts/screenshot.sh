#!/usr/bin/env bash
# Regenerates docs/images/model.png (`make screenshots`): the document model
# diagram of docs/images/model.yaml, drawn by `denorm plan --format html` on
# the examples' database (testdata/examples/seed.sql), cut to the diagram and
# photographed by headless Chromium.
#
# Run it through scripts/testenv.sh (as `make screenshots` does); run alone,
# it starts its own servers that way. Needs bin/denorm and chromium.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"

if [[ -z "${DENORM_TEST_PG:-}" ]]; then
	exec scripts/testenv.sh "$0" "$@"
fi

MAPPING="${SCREENSHOT_MAPPING:-docs/images/model.yaml}"
OUT="${SCREENSHOT_OUT:-docs/images/model.png}"

PSQL="psql"
if [[ -n "${DENORM_TEST_PG_BIN:-}" && -x "$DENORM_TEST_PG_BIN/psql" ]]; then
	PSQL="$DENORM_TEST_PG_BIN/psql"
fi
CHROMIUM=""
for c in chromium chromium-browser google-chrome; do
	if command -v "$c" >/dev/null; then CHROMIUM="$c"; break; fi
done
[[ -n "$CHROMIUM" ]] || { echo "screenshot: chromium is missing: run make deps" >&2; exit 1; }
[[ -x bin/denorm ]] || { echo "screenshot: bin/denorm is missing: run make build" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

base="${DENORM_TEST_PG%%\?*}"
query=""
[[ "$DENORM_TEST_PG" != *\?* ]] || query="?${DENORM_TEST_PG#*\?}"
SOURCE="${base%/*}/denorm_screenshot$query"
"$PSQL" "$DENORM_TEST_PG" -X -q -v ON_ERROR_STOP=1 -c 'DROP DATABASE IF EXISTS denorm_screenshot' -c 'CREATE DATABASE denorm_screenshot'
"$PSQL" "$SOURCE" -X -q -v ON_ERROR_STOP=1 -f testdata/examples/seed.sql

bin/denorm plan -q --progress none --mapping "$MAPPING" --source "$SOURCE" --format html --output "$tmp/plan.html"
"$PSQL" "$DENORM_TEST_PG" -X -q -c 'DROP DATABASE denorm_screenshot'

# The page's head and its "Document model" section alone.
awk '/<body>/ { print; body = 1; next }
	!body { print }
	/^<h2 id="model">/ { model = 1 }
	/^<h2 id="summary">/ { model = 0 }
	model { print }
	END { print "</body></html>" }' "$tmp/plan.html" >"$tmp/model.html"
size="$(grep -o '<svg class="model" width="[0-9]*" height="[0-9]*"' "$tmp/model.html" | head -1)"
[[ -n "$size" ]] || { echo "screenshot: the plan has no model diagram" >&2; exit 1; }
w="$(sed -E 's/.*width="([0-9]+)".*/\1/' <<<"$size")"
h="$(sed -E 's/.*height="([0-9]+)".*/\1/' <<<"$size")"
# The body's margins, the heading and the note above the diagram.
W=$((w + 60)) H=$((h + 170))

"$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--hide-scrollbars --user-data-dir="$tmp/profile" --window-size="$W,$H" \
	--screenshot="$ROOT/$OUT" "file://$tmp/model.html" 2>/dev/null
echo "screenshot: $OUT (${W}x${H}) of $MAPPING" >&2
