#!/bin/bash
# device_run.sh [STEP...] — what one call on the lent H100 runs, from the repository root,
# with a prebuilt build directory $B (default build-cudagemm: lib/ holding libqgmm*.so and
# libqg_bench.so from build_bench.sh, bin/ holding test_gemm_reference, qgmm-conformance
# and test_moe_composite) carried along. Steps (default: check sanitize ncu bench):
#   check     test_gemm_reference cuda --big (auto path; PORTABLE=1 adds the portable path),
#             qgmm-conformance --filter gemm. --filter recipe. --filter moe_experts. and
#             test_moe_composite cuda, while the sanitizers run beside them (same step list)
#   sanitize  compute-sanitizer memcheck, racecheck and synccheck, each on
#             test_gemm_reference cuda --quick (bad offsets included), concurrently
#   ncu       Nsight Compute on the Hopper kernel of two issue-20 shapes (FP8 rowwise
#             K-grouped 64 groups, variant $NCU_V1 (default 1: one CTA) and the default (the
#             2-CTA cluster); M-grouped FP8 rowwise and blockwise, default configuration)
#   bench     bench_grouped.py --shapes issue20 --variants $VARIANTS (default 0) --recipes
#             $RECIPES [--layouts $LAYOUTS, if set: k,mn adds the MoE layer's BF16
#             layouts]; if $BASE_LIB names an earlier libqg_bench.so, it runs first in the same
#             call with the same arguments and variant 0 (the "before" table), through
#             $BASE_PY if set (its bench_grouped.py) else this one
# Logs go to $OUT. --help: this text.
case "$1" in -h|--help) sed -n "2,/^# Logs/p" "$0"; exit 0;; esac
STEPS=${*:-check sanitize ncu bench}
OUT=${OUT:-/tmp/qgmm-out}
B=${B:-build-cudagemm}
mkdir -p "$OUT"
export QGMM_PLUGIN_PATH=$PWD/$B/lib LD_LIBRARY_PATH=$PWD/$B/lib PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
date -u | tee -a "$OUT/gpu.txt"
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
if has sanitize; then # in the background, beside the checks; the benchmark waits for them
  for tool in memcheck racecheck synccheck; do
    timeout 180 compute-sanitizer --tool $tool --print-limit 10 $B/bin/test_gemm_reference cuda --path auto --quick \
      > "$OUT/san_$tool.log" 2>&1 &
  done
fi
if has check; then
  paths=auto; [ -n "$PORTABLE" ] && paths="auto portable"
  for p in $paths; do
    timeout 150 $B/bin/test_gemm_reference cuda --path $p --big > "$OUT/t.log" 2>&1; echo "reference $p big rc=$?"
    grep -E "FAIL|cases|worst|FATAL" "$OUT/t.log" | tail -8
    { echo "== test_gemm_reference cuda --path $p --big"; cat "$OUT/t.log"; } >> "$OUT/check.log"
    QGMM_CUDA_GEMM_PATH=$p timeout 120 $B/bin/qgmm-conformance --backend cuda --require-reference \
      --filter gemm. --filter recipe. --filter moe_experts. > "$OUT/t.log" 2>&1; echo "conformance $p rc=$?"
    tail -1 "$OUT/t.log"; grep -E " FAIL " "$OUT/t.log" | head -4
    { echo "== conformance path $p"; cat "$OUT/t.log"; } >> "$OUT/check.log"
  done
  timeout 120 $B/bin/test_moe_composite cuda > "$OUT/t.log" 2>&1; echo "test_moe_composite cuda rc=$?"
  tail -2 "$OUT/t.log"; { echo "== test_moe_composite cuda"; cat "$OUT/t.log"; } >> "$OUT/check.log"
  rm -f "$OUT/t.log"
fi
if has sanitize; then
  wait
  for tool in memcheck racecheck synccheck; do echo "$tool:"; tail -2 "$OUT/san_$tool.log"; done
fi
if has ncu; then
  NCU="ncu --clock-control none -k regex:qg_hopper --section SpeedOfLight --section ComputeWorkloadAnalysis
       --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats"
  # K-grouped FP8 rowwise, 64 groups: variant ${NCU_V1:-1} and the default
  timeout 150 $NCU --launch-skip 4 --launch-count 2 python3 bench/cuda_gemm/bench_grouped.py --lib $B/lib/libqg_bench.so \
    --reps 1 --shapes 32768,4096,7168,64 --kinds K --recipes fp8_rowwise --variants ${NCU_V1:-1},0 > "$OUT/ncu.log" 2>&1
  echo "ncu K-grouped rc=$?"
  # M-grouped FP8 rowwise and blockwise, 8 groups, the default
  timeout 150 $NCU --launch-skip 4 --launch-count 2 python3 bench/cuda_gemm/bench_grouped.py --lib $B/lib/libqg_bench.so \
    --reps 1 --shapes 32768,8192,5120,8 --kinds M --recipes fp8_rowwise,fp8_blockwise >> "$OUT/ncu.log" 2>&1
  echo "ncu M-grouped rc=$?"
  grep -E "qg_hopper|Duration|Compute \(SM\) Throughput|L2 Hit Rate|L2 Cache Throughput|DRAM Throughput|Memory Throughput|Issue Slots Busy|Grid Size|Cluster|ERROR" \
    "$OUT/ncu.log" | cut -c1-150 | head -60
fi
if has bench; then
  args="--shapes issue20 --no-portable --recipes ${RECIPES:-bf16,fp8_rowwise,fp8_blockwise,mxfp8}"
  [ -n "$LAYOUTS" ] && args="$args --layouts $LAYOUTS"
  if [ -n "$BASE_LIB" ]; then
    timeout 240 python3 "${BASE_PY:-bench/cuda_gemm/bench_grouped.py}" --lib "$BASE_LIB" $args \
      --json "$OUT/bench_base.json" > "$OUT/bench_base.log" 2>&1
    echo "bench base rc=$?"; sed -n '/^20[0-9][0-9]-/,$p' "$OUT/bench_base.log"
  fi
  timeout 300 python3 bench/cuda_gemm/bench_grouped.py --lib $B/lib/libqg_bench.so $args --variants "${VARIANTS:-0}" \
    --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1
  echo "bench rc=$?"; sed -n '/^20[0-9][0-9]-/,$p' "$OUT/bench.log"; grep -E "Error|error|failed" "$OUT/bench.log" | head -5
fi
