#!/bin/sh
# The package's CPU tests (unittest; pytest collects the same files): run.sh [python3].
# The library comes from QGMM_LIBRARY (ctest sets it to the build's libqgmm.so).
# Exit 77 (ctest SKIP) when that interpreter has no NumPy (Debian: python3-numpy).
PY="${1:-python3}"
HERE="$(cd "$(dirname "$0")" && pwd)"
"$PY" -c "import numpy" 2>/dev/null || { echo "SKIP: $PY has no NumPy (Debian: python3-numpy)"; exit 77; }
exec "$PY" -m unittest discover -s "$HERE" -t "$HERE" -v
