#!/usr/bin/env bash
# The main job: install dependencies, build, run the nightly suite on every backend present,
# store the run in results.db (SQLite), then serve the dashboard on 127.0.0.1:8080.
#   QGMM_SUITE=smoke ./scripts/main.sh    a quick run
#   QGMM_DB=/path/results.db              where results go (default: ./results.db)
#   QGMM_LISTEN=127.0.0.1:8080            where the dashboard listens
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/scripts/install-deps.sh"
BUILD_DIR="$ROOT/build" "$ROOT/scripts/build.sh"
BIN="$ROOT/build/bin"
DB="${QGMM_DB:-$ROOT/results.db}"
SUITE="${QGMM_SUITE:-nightly}"
LISTEN="${QGMM_LISTEN:-127.0.0.1:8080}"
export QGMM_PLUGIN_PATH="$ROOT/build/lib"

echo "[qgmm] backends on this machine:"
"$BIN/qgmm-conformance" --backends || true
echo "[qgmm] conformance over every backend present"
"$BIN/qgmm-conformance" --backend all || echo "[qgmm] conformance reported failures (see above)"
echo "[qgmm] nightly runner: suite $SUITE, every backend, into $DB (each result stored as it is measured)"
# A run stopped before its end (Ctrl-C, a kill) keeps its results: finish it instead of starting over.
if [ -f "$DB" ] && "$BIN/qgmm-bench" runs --db "$DB" --limit 1 2>/dev/null | awk 'NR == 2 { exit !($6 == "interrupted") }'; then
  echo "[qgmm] the last run was interrupted: resuming it"
  "$BIN/qgmm-bench" run --db "$DB" --resume latest
else
  "$BIN/qgmm-bench" run --suite "$SUITE" --backend all --db "$DB" --reason main-job
fi
"$BIN/qgmm-bench" gate --changepoints --db "$DB" || echo "[qgmm] gate: see the reasons above"
echo "[qgmm] dashboard on http://$LISTEN  (Ctrl-C to stop)"
exec "$BIN/qgmm-dash" --db "$DB" --listen "$LISTEN"
