#!/bin/bash
# bench/cuda/device_run.sh — everything the CUDA casts need on the lent GPU, in one call:
# conformance (byte-exact vs the CPU reference) of every cast/layout/padding case, the
# known-answer and property suites on cuda, the bad-offsets test, compute-sanitizer over
# the conformance cases and that test, the cast benchmark and the torch.compile peers
# (compiled while the correctness steps run, timed after), printing one joined table.
#   usage: bench/cuda/device_run.sh BIN_DIR [check|bench|all]   (logs under $OUT)
# BIN_DIR holds lib/ (libqgmm.so, libqgmm-cuda.so) and bin/ (qgmm-conformance,
# test_cuda_offsets, test_kat_casts, test_props_casts, qgmm-cuda-casts-bench), built
# elsewhere and carried.
# Environment: BASE=DIR also benchmarks the libraries of DIR/lib (e.g. the previous
# commit's) with the same bench binary, before the new ones, and the table gains their
# columns; AB="DIR..." benchmarks more builds (bench_<name>.csv, same binary; only the ops
# matching the words of AB_FILTER when set); FOCUS=1
# runs the bench and peers with --focus; SAN_TOOLS (default "memcheck racecheck");
# SAN_FILTER (words: the conformance filters under the sanitizer, default all cast cases);
# AB builds also run the cast conformance cases (conformance_<name>.txt) in check mode.
set -u
D=$(cd "${1:?BIN_DIR}" && pwd)
MODE=${2:-all}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
use_libs() { export LD_LIBRARY_PATH=$1/lib QGMM_PLUGIN_PATH=$1/lib; }
use_libs "$D"
# every cast / layout / padding case (ids start with the op name); no gemm.* / recipe.* /
# moe_experts.* case (those are the GEMM engineer's, and a GEMM fault would poison the context)
FILTERS=(--filter fp8_rowwise.row. --filter fp8_rowwise.col. --filter fp8_rowwise.jagged
         --filter fp8_rowwise.3d --filter fp8_rowwise_dual --filter mxfp8.dim --filter mxfp8.3d
         --filter fp8_blockwise.1x128 --filter fp8_blockwise.128x128 --filter fp8_blockwise.3d
         --filter dequant. --filter _blocked. --filter pad_token_groups --filter group_row_ids)
SANF=(); for w in ${SAN_FILTER:-}; do SANF+=(--filter "$w"); done
[ ${#SANF[@]} -eq 0 ] && SANF=("${FILTERS[@]}")
BF=(${FOCUS:+--focus} ${QUICK:+--quick})
date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "$MODE" = all ] || [ "$MODE" = bench ]; then
  rm -f /tmp/peer_go
  python3 "$HERE/torch_peer.py" --wait-file /tmp/peer_go --qgmm-csv "$OUT/bench.csv" \
      ${BASE:+--base-csv "$OUT/bench_base.csv"} --out "$OUT/table.md" "${BF[@]}" > "$OUT/peer.log" 2>&1 &
  PEER=$!
fi
if [ "$MODE" = all ] || [ "$MODE" = check ]; then
  if [ -x "$D/bin/fp8_cvt_exhaustive" ]; then "$D/bin/fp8_cvt_exhaustive" > "$OUT/fp8_exhaustive.txt" 2>&1; echo "fp8 exhaustive rc=$?"; cat "$OUT/fp8_exhaustive.txt"; fi
  timeout 180 "$D/bin/qgmm-conformance" --backend cuda --require-reference "${FILTERS[@]}" > "$OUT/conformance.txt" 2>&1
  echo "conformance rc=$?"; grep -E "FAIL|passed" "$OUT/conformance.txt" | tail -15
  for t in test_kat_casts test_props_casts; do
    if [ -x "$D/bin/$t" ]; then timeout 180 "$D/bin/$t" cuda > "$OUT/$t.txt" 2>&1; echo "$t cuda rc=$?"; tail -3 "$OUT/$t.txt"; fi
  done
  for v in ${AB:-}; do
    V=$(cd "$v" && pwd); use_libs "$V"
    timeout 180 "$D/bin/qgmm-conformance" --backend cuda --require-reference "${FILTERS[@]}" > "$OUT/conformance_$(basename "$V").txt" 2>&1
    echo "conformance $(basename "$V") rc=$?"; grep -E "FAIL|passed" "$OUT/conformance_$(basename "$V").txt" | tail -5
    use_libs "$D"
  done
  timeout 60 "$D/bin/test_cuda_offsets" > "$OUT/offsets.txt" 2>&1; echo "offsets rc=$?"; tail -3 "$OUT/offsets.txt"
  for tool in ${SAN_TOOLS-memcheck racecheck}; do
    timeout ${SAN_TIMEOUT:-120} compute-sanitizer --tool $tool --error-exitcode 9 "$D/bin/test_cuda_offsets" > /tmp/san.txt 2>&1
    echo "$tool offsets rc=$?" | tee -a "$OUT/sanitizer.txt"; cat /tmp/san.txt >> "$OUT/sanitizer.txt"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY" /tmp/san.txt | tail -2
    timeout ${SAN_TIMEOUT:-120} compute-sanitizer --tool $tool --error-exitcode 9 "$D/bin/qgmm-conformance" --backend cuda "${SANF[@]}" \
        > /tmp/san.txt 2>&1
    echo "$tool conformance rc=$?" | tee -a "$OUT/sanitizer.txt"; cat /tmp/san.txt >> "$OUT/sanitizer.txt"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed" /tmp/san.txt | tail -3
  done
fi
if [ "$MODE" = all ] || [ "$MODE" = bench ]; then
  if [ -n "${BASE:-}" ]; then
    B=$(cd "$BASE" && pwd); use_libs "$B"
    timeout 300 "$D/bin/qgmm-cuda-casts-bench" "${BF[@]}" > "$OUT/bench_base.csv" 2> "$OUT/bench_base.err"; echo "bench (base) rc=$?"
    use_libs "$D"
  fi
  timeout 300 "$D/bin/qgmm-cuda-casts-bench" "${BF[@]}" > "$OUT/bench.csv" 2> "$OUT/bench.err"; echo "bench rc=$?"
  for v in ${AB:-}; do
    V=$(cd "$v" && pwd); use_libs "$V"
    ABF=(); for w in ${AB_FILTER:-}; do ABF+=(--filter "$w"); done
    timeout 300 "$D/bin/qgmm-cuda-casts-bench" "${BF[@]}" "${ABF[@]}" > "$OUT/bench_$(basename "$V").csv" 2>&1; echo "bench $(basename "$V") rc=$?"
    use_libs "$D"
  done
  touch /tmp/peer_go
  wait $PEER; echo "peer rc=$?"
  cat "$OUT/table.md" 2>/dev/null || tail -20 "$OUT/peer.log"
fi
date -u
