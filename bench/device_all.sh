#!/bin/bash
# bench/device_all.sh — the lead's integration run on the lent GPU, one call:
# every backend's conformance, the composite and example tests on CUDA, the runner's
# smoke suite on every backend + a CUDA nightly subset, the torch peers of those cases
# imported into the same store, and the gate. Logs and the SQLite store go to $OUT.
#   usage (repo root): bench/device_all.sh BUILD_DIR   (BUILD_DIR built here and carried)
set -u
B=$(cd "${1:?BUILD_DIR}" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && \
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export QGMM_PLUGIN_PATH=$B/lib LD_LIBRARY_PATH=$B/lib PYTHONUNBUFFERED=1
DB=$OUT/results.db
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
"$B/bin/qgmm-conformance" --backends
stamp "conformance: every backend present"
timeout 200 "$B/bin/qgmm-conformance" --backend all --require-reference > "$OUT/conformance.txt" 2>&1
echo "conformance rc=$?"; grep -E "FAIL|UNSUP|unsupported|passed" "$OUT/conformance.txt" | cut -c1-200 | tail -12
stamp "compute-sanitizer memcheck: GEMM, recipe and composite cases on the default CUDA path"
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 "$B/bin/qgmm-conformance" --backend cuda \
  --filter gemm. --filter recipe. --filter moe_experts > "$OUT/memcheck.txt" 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|passed" "$OUT/memcheck.txt" | tail -2
stamp "opt-in Hopper K-grouped kernel"
QGMM_CUDA_GEMM_HOPPER_KGROUPED=1 timeout 60 "$B/bin/qgmm-conformance" --backend cuda --filter gemm.k. \
  --filter .wgrad. --filter moe_experts.backward > "$OUT/kgrouped.txt" 2>&1
echo "kgrouped rc=$?"; grep -E "FAIL|passed" "$OUT/kgrouped.txt" | cut -c1-200 | tail -5
stamp "composite + example on cuda"
timeout 60 "$B/bin/test_moe_composite" cuda 2>&1 | tail -8
timeout 30 "$B/bin/test_api_example" cuda 2>&1 | tail -3
stamp "runner: smoke on every backend"
timeout 150 "$B/bin/qgmm-bench" run --suite smoke --backend all --db "$DB" --reason device \
  --sha "${QGMM_SHA:-unknown}" > "$OUT/smoke.txt" 2> "$OUT/smoke.err"; echo "smoke rc=$?"
tail -4 "$OUT/smoke.txt"
stamp "torch peers of the smoke cases"
"$B/bin/qgmm-bench" cases --suite smoke --json > "$OUT/cases.json"
timeout 90 python3 ci/peers/torch_peers.py --cases "$OUT/cases.json" --out "$OUT/torch.json" \
  --budget-ms 40 > "$OUT/peers.log" 2>&1; echo "peers rc=$?"; tail -3 "$OUT/peers.log"
[ -s "$OUT/torch.json" ] && "$B/bin/qgmm-bench" import --db "$DB" "$OUT/torch.json"
stamp "gate"
"$B/bin/qgmm-bench" gate --db "$DB" 2>&1 | tail -6
stamp done
