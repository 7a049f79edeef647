#!/bin/sh
# device_run.sh [BUILD_DIR] — the one device call of the MoE composite benchmark (run from the
# repo root on the GPU machine, BUILD_DIR (default .devbin) carried with lib/ and bin/,
# bench/moe/build.sh BUILD_DIR already run): conformance of the casts and composite cases on
# cuda, the composite test, moe_bench (the four shapes of issue 21, every recipe, per-step
# breakdown), then torch_moe.py on the same shapes; logs under $OUT. --help: this text.
case "$1" in -h|--help) sed -n 2,6p "$0"; exit 0;; esac
B=${1:-.devbin}
OUT=${OUT:-/tmp/moe_out}; mkdir -p "$OUT"
export QGMM_PLUGIN_PATH=$PWD/$B/lib LD_LIBRARY_PATH=$PWD/$B/lib PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; git rev-parse --short HEAD 2>/dev/null; } > "$OUT/env.txt" 2>&1
timeout 100 "$B/bin/qgmm-conformance" --backend cuda --require-reference --filter fp8_rowwise --filter mxfp8 \
  --filter fp8_blockwise --filter moe_experts. > "$OUT/conformance.log" 2>&1; echo "conformance rc=$?" >> "$OUT/env.txt"
timeout 40 "$B/bin/test_moe_composite" cuda > "$OUT/test_moe_composite.log" 2>&1; echo "test rc=$?" >> "$OUT/env.txt"
timeout 240 "$B/bin/moe_bench" --backend cuda --reps 20 --warmup 3 --profile-reps 10 > "$OUT/moe_bench.md" 2> "$OUT/moe_bench.err"; echo "moe_bench rc=$?" >> "$OUT/env.txt"
timeout 200 python3 bench/moe/torch_moe.py --reps 20 --warmup 3 --check > "$OUT/torch_moe.md" 2> "$OUT/torch_moe.err"; echo "torch_moe rc=$?" >> "$OUT/env.txt"
cat "$OUT/env.txt"; tail -n 5 "$OUT/conformance.log"; tail -n 3 "$OUT/test_moe_composite.log"; cat "$OUT/moe_bench.md" "$OUT/moe_bench.err" "$OUT/torch_moe.md"; tail -c 2000 "$OUT/torch_moe.err"
