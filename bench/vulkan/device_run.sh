#!/bin/sh
# device_run.sh — the one H100 call of the Vulkan cooperative-matrix GEMM work (run from
# the repo root on the GPU machine with .gl and build-vkcoop-bin carried): conformance on
# the NVIDIA Vulkan driver with QGMM_VULKAN_GEMM_PATH=coopmat forced, then vk_gemm_bench
# (tiled vs coopmat timings). Logs under $OUT. --help: this text.
case "$1" in -h|--help) sed -n 2,5p "$0"; exit 0;; esac
OUT=${OUT:-/tmp/vk_out}; mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=$PWD/build-vkcoop-bin
export QGMM_PLUGIN_PATH=$B/lib LD_LIBRARY_PATH=$B/lib
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$OUT/env.txt" 2>&1
QGMM_VULKAN_GEMM_PATH=coopmat timeout 140 "$B/bin/qgmm-conformance" --backend vulkan --require-reference \
  > "$OUT/conformance_coopmat.log" 2>&1; echo "conformance rc=$?" >> "$OUT/env.txt"
timeout 80 "$B/bin/vk_gemm_bench" --iters 5 > "$OUT/bench.md" 2> "$OUT/bench.err"; echo "bench rc=$?" >> "$OUT/env.txt"
cat "$OUT/env.txt"; head -2 "$OUT/conformance_coopmat.log"; grep -v " PASS " "$OUT/conformance_coopmat.log" | tail -25
cat "$OUT/bench.md" "$OUT/bench.err"
