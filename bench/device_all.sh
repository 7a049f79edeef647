#!/bin/bash
# bench/device_all.sh — the lead's integration run on the lent GPU, one call: the
# backend-parametrised suites (hardening, group counts, API fixes, default stream,
# composite, example) on CUDA and on Vulkan over the NVIDIA driver, conformance of every
# backend against the reference, compute-sanitizer memcheck of the hardening cases, and
# the PyTorch package's GPU check. Logs go to $OUT; a summary table is printed last.
#   usage (repo root): bench/device_all.sh BUILD_DIR   (BUILD_DIR built here and carried,
#   with .gl carried for the Vulkan loader)
case "${1:-}" in -h|--help|"") sed -n 2,8p "$0"; exit 0;; esac
set -u
B=$(cd "$1" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && \
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export QGMM_PLUGIN_PATH=$B/lib LD_LIBRARY_PATH=$B/lib PYTHONUNBUFFERED=1
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
SUMMARY=$OUT/summary.txt; : > "$SUMMARY"
note() { printf '%-44s %s\n' "$1" "$2" | tee -a "$SUMMARY"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
"$B/bin/qgmm-conformance" --backends | tee -a "$OUT/gpu.txt"

stamp "conformance of cuda and vulkan (in the background)"
for be in cuda vulkan; do
  ( timeout 240 "$B/bin/qgmm-conformance" --backend $be --require-reference > "$OUT/conformance_$be.txt" 2>&1
    echo "rc=$?" >> "$OUT/conformance_$be.txt" ) &
done

stamp "suites on cuda and vulkan"
for t in test_hardening test_group_counts test_api_fixes test_context_stream test_moe_composite test_api_example; do
  for be in cuda vulkan; do
    timeout 120 "$B/bin/$t" $be > "$OUT/${t}_$be.txt" 2>&1; rc=$?
    note "$t $be" "rc=$rc $(grep -E 'passed|failed|PASS|FAIL' "$OUT/${t}_$be.txt" | tail -1 | cut -c1-80)"
  done
done

stamp "compute-sanitizer memcheck: hardening cases on cuda"
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$B/bin/test_hardening" cuda \
  > "$OUT/memcheck_hardening.txt" 2>&1
note "memcheck test_hardening cuda" "rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_hardening.txt" | tail -1)"

stamp "python package on the GPU"
QGMM_LIBRARY=$B/lib/libqgmm.so PYTHONPATH=$PWD/python timeout 150 python3 python/tests/gpu/gpu_check.py \
  --out "$OUT" > "$OUT/gpu_check.txt" 2>&1
note "python gpu_check" "rc=$? $(grep -ciE '\bok\b|pass' "$OUT/gpu_check.txt") ok lines"

stamp "waiting for conformance"
wait
for be in cuda vulkan; do
  note "conformance $be" "$(tail -1 "$OUT/conformance_$be.txt") $(grep -E 'passed' "$OUT/conformance_$be.txt" | tail -1 | cut -c1-90)"
done
stamp done
echo "=== summary"; cat "$SUMMARY"
