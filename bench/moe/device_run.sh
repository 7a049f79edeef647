#!/bin/sh
# device_run.sh — the one device call of the MoE composite benchmark (run from the repo root
# on the GPU machine, .devbin carried, bench/moe/build.sh .devbin already run): the composite
# test on cuda, moe_bench, then torch_moe.py, logs under $OUT. --help: this text.
case "$1" in -h|--help) sed -n 2,4p "$0"; exit 0;; esac
OUT=${OUT:-/tmp/moe_out}; mkdir -p "$OUT"
export QGMM_PLUGIN_PATH=$PWD/.devbin/lib LD_LIBRARY_PATH=$PWD/.devbin/lib PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; git rev-parse --short HEAD 2>/dev/null; } > "$OUT/env.txt" 2>&1
timeout 30 .devbin/bin/test_moe_composite cuda > "$OUT/test_moe_composite.log" 2>&1; echo "test rc=$?" >> "$OUT/env.txt"
timeout 90 .devbin/bin/moe_bench --backend cuda --reps 20 --warmup 3 > "$OUT/moe_bench.md" 2> "$OUT/moe_bench.err"; echo "moe_bench rc=$?" >> "$OUT/env.txt"
timeout 165 python3 bench/moe/torch_moe.py --reps 20 --warmup 3 --check > "$OUT/torch_moe.md" 2> "$OUT/torch_moe.err"; echo "torch_moe rc=$?" >> "$OUT/env.txt"
cat "$OUT/env.txt" "$OUT/test_moe_composite.log" "$OUT/moe_bench.md" "$OUT/moe_bench.err" "$OUT/torch_moe.md"; tail -c 3000 "$OUT/torch_moe.err"
