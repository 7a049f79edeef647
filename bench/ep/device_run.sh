#!/bin/sh
# device_run.sh [BUILD_DIR] — the device call of expert parallelism on two or more GPUs of one
# host (run from the repo root, BUILD_DIR (default build-epcuda) carried with lib/ and bin/):
# test_ep on cuda (loopback ranks on one GPU), ep_bench (NCCL, one process per GPU: checks
# against the CPU reference, then dispatch/combine against ncclAlltoAll), and ep_bench's check
# under compute-sanitizer on every rank; NCCL_NVLS_ENABLE=0; logs under $OUT. --help: this text.
case "$1" in -h|--help) sed -n 2,6p "$0"; exit 0;; esac
B=${1:-build-epcuda}
OUT=${OUT:-/tmp/ep_out}; mkdir -p "$OUT"
export QGMM_PLUGIN_PATH=$PWD/$B/lib LD_LIBRARY_PATH=$PWD/$B/lib:${LD_LIBRARY_PATH:-} NCCL_NVLS_ENABLE=0 PATH=$PATH:/usr/local/cuda/bin
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvidia-smi topo -m; } > "$OUT/env.txt" 2>&1
timeout 90 "$B/bin/test_ep" cuda > "$OUT/test_ep.log" 2>&1; echo "test_ep cuda rc=$?" >> "$OUT/env.txt"
timeout 120 "$B/bin/ep_bench" > "$OUT/ep_bench.log" 2>&1; echo "ep_bench rc=$?" >> "$OUT/env.txt"
timeout 90 compute-sanitizer --target-processes all --error-exitcode 9 "$B/bin/ep_bench" --tokens 256 --dim 256 \
  --experts 8 --topk 2 --reps 1 > "$OUT/sanitizer.log" 2>&1; echo "compute-sanitizer ep_bench rc=$?" >> "$OUT/env.txt"
cat "$OUT/env.txt"; tail -n 4 "$OUT/test_ep.log"; cat "$OUT/ep_bench.log"; tail -n 8 "$OUT/sanitizer.log"
