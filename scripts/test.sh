#!/usr/bin/env bash
# All tests: install dependencies, build with -Werror (every backend whose toolchain is
# present: CUDA and HIP compile-only without a GPU, Vulkan on lavapipe), run ctest; then
# build the core, the CPU reference and Vulkan again under ASan+UBSan and run ctest there;
# last, fuzz the API on the CPU backend for a bounded time (scripts/fuzz.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/scripts/install-deps.sh"
JOBS="$(nproc)"

if [[ -f "$ROOT/dashboard/tests/browser/package-lock.json" ]] && command -v npm >/dev/null; then
  echo "[qgmm] === npm ci (playwright-core for the dashboard's browser test) ==="
  npm ci --silent --no-audit --no-fund --prefix "$ROOT/dashboard/tests/browser" || echo "[qgmm] npm ci failed: the browser test will report SKIP"
fi
echo "[qgmm] === build (-Werror) ==="
BUILD_DIR="$ROOT/build" "$ROOT/scripts/build.sh" -DQGMM_WERROR=ON
echo "[qgmm] === ctest ==="
(cd "$ROOT/build" && ctest --output-on-failure -j"$JOBS" --timeout 1800)

echo "[qgmm] === runner: smoke suite on every backend present, then the gate ==="
rm -f "$ROOT/build/ci.db"
QGMM_PLUGIN_PATH="$ROOT/build/lib" "$ROOT/build/bin/qgmm-bench" run --suite smoke --backend all \
  --db "$ROOT/build/ci.db" --reason ci
"$ROOT/build/bin/qgmm-bench" gate --changepoints --db "$ROOT/build/ci.db"

echo "[qgmm] === build (ASan+UBSan) ==="
BUILD_DIR="$ROOT/build-asan" "$ROOT/scripts/build.sh" -DQGMM_WERROR=ON -DQGMM_SANITIZE=ON \
  -DQGMM_CUDA=OFF -DQGMM_HIP=OFF -DCMAKE_BUILD_TYPE=Debug
echo "[qgmm] === ctest (ASan+UBSan) ==="
# lavapipe's JIT keeps allocations alive until exit by design: leak reports there are not ours.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
(cd "$ROOT/build-asan" && ctest --output-on-failure -j"$JOBS" --timeout 1800 -LE no-sanitize)

echo "[qgmm] === API fuzz target (clang-19 libFuzzer + ASan/UBSan, cpu backend, bounded time) ==="
# Its own sanitizer settings (leak checks on, absurd allocations fail instead of aborting).
env -u ASAN_OPTIONS -u UBSAN_OPTIONS "$ROOT/scripts/fuzz.sh" --seconds "${QGMM_FUZZ_SECONDS:-120}"
