#!/bin/bash
# device_run.sh [all|check|bench|sanitize] — what one call on the lent H100 runs, from
# the repository root, with the prebuilt build-cudagemm/ carried along (see
# docs/backends-cuda-gemm.md): the GPU line, the SASS instruction mix of the plugin,
# tests/test_gemm_reference (cuda, --big) on both kernel paths, qgmm-conformance (GEMM + recipe cases), the benchmark
# against PyTorch, compute-sanitizer
# memcheck (bad offsets included). Logs go to $OUT. --help: this text.
case "${1:-all}" in -h|--help) sed -n 2,7p "$0"; exit 0;; esac
WHAT=${1:-all}
OUT=${OUT:-/tmp/qgmm-out}
mkdir -p "$OUT"
B=build-cudagemm
export QGMM_PLUGIN_PATH=$PWD/$B/lib LD_LIBRARY_PATH=$PWD/$B/lib PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
date -u | tee -a "$OUT/gpu.txt"
if [ "$WHAT" = all ] || [ "$WHAT" = check ]; then
  cuobjdump -sass $B/lib/libqgmm-cuda.so 2>&1 | grep -oE "(HGMMA|QGMMA|HMMA|QMMA|UTMALDG|LDSM|LDGSTS)[.A-Z0-9x]*" \
    | sort | uniq -c | tee -a "$OUT/gpu.txt" | head -20
  timeout 40 $B/bin/test_gemm_reference cuda --path auto --quick > "$OUT/check_auto.log" 2>&1; echo "auto quick rc=$?"
  tail -4 "$OUT/check_auto.log"
  timeout 120 $B/bin/test_gemm_reference cuda --path auto --big >> "$OUT/check_auto.log" 2>&1; echo "auto big rc=$?"
  grep -E "FAIL|cases|worst|FATAL" "$OUT/check_auto.log" | tail -14
  timeout 120 $B/bin/test_gemm_reference cuda --path portable --big > "$OUT/check_portable.log" 2>&1; echo "portable big rc=$?"
  grep -E "FAIL|cases|worst|FATAL" "$OUT/check_portable.log" | tail -14
  # the team's conformance suite (GEMM and recipe cases): auto, auto with K-grouped kept
  # off the Hopper kernel (the fallback configuration), portable
  for p in auto auto-noK portable; do
    if [ $p = auto-noK ]; then export QGMM_CUDA_GEMM_HOPPER_KGROUPED=0; q=auto; else unset QGMM_CUDA_GEMM_HOPPER_KGROUPED; q=$p; fi
    QGMM_CUDA_GEMM_PATH=$q timeout 120 $B/bin/qgmm-conformance --backend cuda --require-reference \
      --filter gemm. --filter recipe. > "$OUT/conf.tmp" 2>&1; echo "conformance $p rc=$?"
    tail -1 "$OUT/conf.tmp"; grep -E " FAIL " "$OUT/conf.tmp" | head -4
    { echo "== conformance path $p"; cat "$OUT/conf.tmp"; } >> "$OUT/conformance.log"; rm -f "$OUT/conf.tmp"
  done
  unset QGMM_CUDA_GEMM_HOPPER_KGROUPED
fi
if [ "$WHAT" = all ] || [ "$WHAT" = sanitize ]; then
  for p in portable auto; do
    echo "== sanitizer path $p" >> "$OUT/san.log"
    timeout 150 compute-sanitizer --tool memcheck --print-limit 10 $B/bin/test_gemm_reference cuda --path $p --quick \
      >> "$OUT/san.log" 2>&1; echo "sanitizer $p rc=$?"; tail -2 "$OUT/san.log"
  done
fi
if [ "$WHAT" = all ] || [ "$WHAT" = bench ]; then
  timeout 300 python3 bench/cuda_gemm/bench_grouped.py --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1
  echo "bench rc=$?"; sed -n '/^20[0-9][0-9]-/,$p' "$OUT/bench.log"; grep -E "Error|error|failed" "$OUT/bench.log" | head -5
fi
