#!/bin/bash
# bench/cuda/device_run.sh — everything the CUDA casts need on the lent GPU, in one call:
# conformance (byte-exact vs the CPU reference) of every cast/layout/padding case, the
# bad-offsets test, compute-sanitizer memcheck + racecheck over both, the cast benchmark
# and the torch.compile peers (compiled while the correctness steps run, timed after).
#   usage: bench/cuda/device_run.sh BIN_DIR [check|bench|all]   (logs under $OUT)
# BIN_DIR holds lib/ (libqgmm.so, libqgmm-cuda.so) and bin/ (qgmm-conformance,
# test_cuda_offsets, qgmm-cuda-casts-bench), built elsewhere and carried.
set -u
D=$(cd "${1:?BIN_DIR}" && pwd)
MODE=${2:-all}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/lib QGMM_PLUGIN_PATH=$D/lib PYTHONUNBUFFERED=1
# every cast / layout / padding case (ids start with the op name); no gemm.* / recipe.* /
# moe_experts.* case (those are the GEMM engineer's, and a GEMM fault would poison the context)
FILTERS=(--filter fp8_rowwise.row. --filter fp8_rowwise.col. --filter fp8_rowwise.jagged
         --filter fp8_rowwise.3d --filter fp8_rowwise_dual --filter mxfp8.dim --filter mxfp8.3d
         --filter fp8_blockwise.1x128 --filter fp8_blockwise.128x128 --filter fp8_blockwise.3d
         --filter dequant. --filter _blocked. --filter pad_token_groups --filter group_row_ids)
date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "$MODE" = all ] || [ "$MODE" = bench ]; then
  rm -f /tmp/peer_go
  python3 "$HERE/torch_peer.py" --wait-file /tmp/peer_go --qgmm-csv "$OUT/bench.csv" \
      --out "$OUT/table.md" ${QUICK:+--quick} > "$OUT/peer.log" 2>&1 &
  PEER=$!
fi
if [ "$MODE" = all ] || [ "$MODE" = check ]; then
  if [ -x "$D/bin/fp8_cvt_exhaustive" ]; then "$D/bin/fp8_cvt_exhaustive" > "$OUT/fp8_exhaustive.txt" 2>&1; echo "fp8 exhaustive rc=$?"; cat "$OUT/fp8_exhaustive.txt"; fi
  "$D/bin/qgmm-conformance" --backend cuda --require-reference "${FILTERS[@]}" > "$OUT/conformance.txt" 2>&1
  echo "conformance rc=$?"; grep -E "FAIL|passed" "$OUT/conformance.txt" | tail -15
  "$D/bin/test_cuda_offsets" > "$OUT/offsets.txt" 2>&1; echo "offsets rc=$?"; tail -3 "$OUT/offsets.txt"
  for tool in memcheck racecheck; do
    timeout ${SAN_TIMEOUT:-120} compute-sanitizer --tool $tool --error-exitcode 9 "$D/bin/test_cuda_offsets" > /tmp/san.txt 2>&1
    echo "$tool offsets rc=$?" | tee -a "$OUT/sanitizer.txt"; cat /tmp/san.txt >> "$OUT/sanitizer.txt"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY" /tmp/san.txt | tail -2
    timeout ${SAN_TIMEOUT:-120} compute-sanitizer --tool $tool --error-exitcode 9 "$D/bin/qgmm-conformance" --backend cuda "${FILTERS[@]}" \
        > /tmp/san.txt 2>&1
    echo "$tool conformance rc=$?" | tee -a "$OUT/sanitizer.txt"; cat /tmp/san.txt >> "$OUT/sanitizer.txt"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed" /tmp/san.txt | tail -3
  done
fi
if [ "$MODE" = all ] || [ "$MODE" = bench ]; then
  "$D/bin/qgmm-cuda-casts-bench" ${QUICK:+--quick} > "$OUT/bench.csv" 2> "$OUT/bench.err"; echo "bench rc=$?"
  touch /tmp/peer_go
  wait $PEER; echo "peer rc=$?"
  cat "$OUT/table.md" 2>/dev/null || tail -20 "$OUT/peer.log"
fi
date -u
