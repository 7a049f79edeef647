#!/bin/sh
# device_run.sh — one H100 call for the Vulkan GEMM paths (run from the repo root on the GPU
# machine, with .gl, .vl (vulkan-validationlayers deb) and the build folder DIR carried; DIR
# holds lib/ and bin/ with libqgmm*, qgmm-conformance, test_gemm_reference,
# test_moe_composite, vk_gemm_bench): conformance on the NVIDIA Vulkan driver for each GEMM
# path (coopmat = KHR, coopmat-nv, tiled), the same under VK_LAYER_KHRONOS_validation
# (tests/vulkan_validation.sh), the GEMM reference and composite tests, then vk_gemm_bench
# (tiled vs coopmat) and torch._grouped_mm on the same shapes; then, where DIR has them,
# the casts: test_kat_casts / test_props_casts on vulkan, vk_cast_bench and its --verify, and
# the torch.compile peers of the casts with PyTorch's copy_ rate (torch_cols_peer.py). Logs under $OUT.
# Env: VALIDATE="coopmat coopmat-nv" (paths under the layer), ONLY_VALIDATE=1 stops there.
# usage: device_run.sh DIR [BENCH ARGS...]     --help: this text.
case "$1" in -h|--help|"") sed -n 2,12p "$0"; exit 0;; esac
B=$(cd "$1" && pwd); shift
OUT=${OUT:-/tmp/vk_out}; mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
VL=/tmp/vl; for f in .vl/*.deb; do [ -f "$f" ] && dpkg -x "$f" "$VL"; done
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export QGMM_PLUGIN_PATH=$B/lib LD_LIBRARY_PATH=$B/lib:$VL/usr/lib/x86_64-linux-gnu
export VK_LAYER_PATH=$VL/usr/share/vulkan/explicit_layer.d
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$OUT/env.txt" 2>&1
for path in coopmat coopmat-nv tiled; do
  QGMM_VULKAN_GEMM_PATH=$path timeout 100 "$B/bin/qgmm-conformance" --backend vulkan --require-reference \
    > "$OUT/conformance_$path.log" 2>&1; echo "conformance $path rc=$? $(tail -1 "$OUT/conformance_$path.log")" >> "$OUT/env.txt"
done
# VALIDATE: the GEMM paths to run under the validation layer (slow; "" skips)
for path in ${VALIDATE-coopmat coopmat-nv}; do
  QGMM_VULKAN_GEMM_PATH=$path timeout 280 bash tests/vulkan_validation.sh "$B/bin/qgmm-conformance" \
    > "$OUT/validation_$path.log" 2>&1; echo "validation $path rc=$? $(tail -1 "$OUT/validation_$path.log")" >> "$OUT/env.txt"
done
[ "${ONLY_VALIDATE:-0}" = 1 ] && { cat "$OUT/env.txt"; for f in "$OUT"/validation_*.log; do echo "== $f"; cat "$f" | cut -c1-400; done; exit 0; }
QGMM_VULKAN_GEMM_PATH=coopmat timeout 120 "$B/bin/test_gemm_reference" vulkan --big > "$OUT/gemm_reference.log" 2>&1
echo "test_gemm_reference rc=$? $(tail -1 "$OUT/gemm_reference.log")" >> "$OUT/env.txt"
QGMM_VULKAN_GEMM_PATH=coopmat timeout 60 "$B/bin/test_moe_composite" vulkan > "$OUT/moe_composite.log" 2>&1
echo "test_moe_composite rc=$? $(tail -1 "$OUT/moe_composite.log")" >> "$OUT/env.txt"
QGMM_VK_PIPELINE_STATS=1 timeout 200 "$B/bin/vk_gemm_bench" "$@" > "$OUT/bench.md" 2> "$OUT/bench.err"; echo "bench rc=$?" >> "$OUT/env.txt"
timeout 60 python3 bench/vulkan/torch_grouped_mm_peer.py > "$OUT/torch.md" 2>&1; echo "torch rc=$?" >> "$OUT/env.txt"
# the casts of the same build, when their programs are there
if [ -x "$B/bin/vk_cast_bench" ]; then
  for t in test_kat_casts test_props_casts; do
    timeout 60 "$B/bin/$t" vulkan > "$OUT/$t.log" 2>&1; echo "$t rc=$? $(tail -1 "$OUT/$t.log")" >> "$OUT/env.txt"
  done
  timeout 60 "$B/bin/vk_cast_bench" --iters 20 > "$OUT/cast_bench.md" 2>&1; echo "cast bench rc=$?" >> "$OUT/env.txt"
  timeout 60 "$B/bin/vk_cast_bench" --rows 8192 --iters 3 --verify > "$OUT/cast_verify.log" 2>&1
  echo "cast verify rc=$? $(tail -1 "$OUT/cast_verify.log")" >> "$OUT/env.txt"
  timeout 40 "$B/bin/vk_cast_bench" --rows 2048 --iters 3 --verify --exhaustive > "$OUT/cast_verify_exh.log" 2>&1
  echo "cast verify exhaustive rc=$? $(tail -1 "$OUT/cast_verify_exh.log")" >> "$OUT/env.txt"
  timeout 120 python3 bench/vulkan/torch_cols_peer.py --rows-ops > "$OUT/cast_torch.md" 2>&1
  echo "cast torch peers rc=$?" >> "$OUT/env.txt"
fi
cat "$OUT/env.txt"
for f in "$OUT"/validation_*.log; do echo "== $f"; tail -8 "$f" | cut -c1-300; done
cat "$OUT/bench.md" "$OUT/torch.md"; grep -v "^\[" "$OUT/bench.err" | grep "coop" | sort -u | cut -c1-220
[ -f "$OUT/cast_bench.md" ] && grep -v "^# vulkan:" "$OUT/cast_bench.md" && cat "$OUT/cast_torch.md"
