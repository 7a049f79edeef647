#!/bin/sh
# cast_device_run.sh — one H100 call of the Vulkan cast/pad work, run from the repo root on
# the GPU machine with .gl (Vulkan loader debs) and $B/{lib,bin} carried (B defaults to
# .devbin-vkcast): conformance on the NVIDIA Vulkan driver (--require-reference), the
# vulkan runs of test_kat_casts / test_props_casts, the copy baselines (vk_copy_probe: copy
# shader and vkCmdCopyBuffer; PyTorch copy_), vk_cast_bench (timings: the build as shipped,
# again with the tuning aids QGMM_VULKAN_CAST_SPEC=none / =all and
# QGMM_VULKAN_CAST_LANES=generic, see vk_ops_cast.c, and with the plugin in $B/lib-before
# when that folder exists, the build before the change, in alternating order), the
# driver's register counts per cast pipeline (QGMM_VK_PIPELINE_STATS=1) and vk_cast_bench
# --verify (every output byte against the cpu backend, random and every-bf16-pattern
# inputs, the generic path too). Logs under $OUT: env.txt, conformance.log, tests.log,
# stats.log, bench.md. Build here first: lib/libqgmm.so, lib/libqgmm-vulkan.so and
# bin/{qgmm-conformance,test_kat_casts,test_props_casts} from a Release build,
# bin/vk_cast_bench and bin/vk_copy_probe as their headers say. --help: this text.
case "$1" in -h|--help) sed -n 2,16p "$0"; exit 0;; esac
OUT=${OUT:-/tmp/vk_out}; mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=${B:-$PWD/.devbin-vkcast}
export QGMM_PLUGIN_PATH=$B/lib LD_LIBRARY_PATH=$B/lib
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader; } > "$OUT/env.txt" 2>&1
step() { # log name timeout command...: appends to $OUT/log
  l=$1; n=$2; t=$3; shift 3
  echo "## $n" >> "$OUT/$l"
  s=$(date +%s); timeout "$t" "$@" >> "$OUT/$l" 2>&1; rc=$?
  echo "$n rc=$rc $(( $(date +%s) - s ))s" >> "$OUT/env.txt"; echo >> "$OUT/$l"
}
step conformance.log conformance 90 "$B/bin/qgmm-conformance" --backend vulkan --require-reference
step bench.md copy_probe 20 "$B/bin/vk_copy_probe" --mib 1024 --iters 20
step bench.md torch_copy 30 python3 -c '
import torch
def med(n):
    a = torch.empty(n, dtype=torch.uint8, device="cuda"); a.random_(0, 255); b = torch.empty_like(a)
    t = []
    for i in range(23):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); b.copy_(a); e.record(); e.synchronize()
        if i >= 3: t.append(s.elapsed_time(e))
    t.sort(); m = 0.5 * (t[9] + t[10])
    print(f"| torch copy_ {n / 2**20:.0f} MiB, read + write | {m:.4f} | {2 * n / (m * 1e6):.0f} |")
print("| copy | ms | GB/s |\n|---|---|---|")
med(1 << 30); med(32768 * 5120 * 2)
'
CB="$B/bin/vk_cast_bench"
BE="env LD_LIBRARY_PATH=$B/lib-before QGMM_PLUGIN_PATH=$B/lib-before" # the build before the change
QGMM_VK_PIPELINE_STATS=1 QGMM_VULKAN_CAST_SPEC=all step stats.log stats 30 "$CB" --rows 2048 --iters 1
QGMM_VK_PIPELINE_STATS=1 QGMM_VULKAN_CAST_SPEC=all QGMM_VULKAN_CAST_LANES=generic step stats.log stats_generic 30 "$CB" --rows 2048 --iters 1
QGMM_VK_PIPELINE_STATS=1 QGMM_VULKAN_CAST_SPEC=none step stats.log stats_unspecialized 30 "$CB" --rows 2048 --iters 1
step bench.md bench 30 "$CB" --iters 20
[ -d "$B/lib-before" ] && step bench.md bench_before 30 $BE "$CB" --iters 20
QGMM_VULKAN_CAST_SPEC=none step bench.md bench_spec_none 30 "$CB" --iters 20
QGMM_VULKAN_CAST_SPEC=all step bench.md bench_spec_all 30 "$CB" --iters 20
QGMM_VULKAN_CAST_LANES=generic step bench.md bench_generic 30 "$CB" --iters 20
[ -d "$B/lib-before" ] && QGMM_VULKAN_CAST_LANES=generic step bench.md bench_generic_before 30 $BE "$CB" --iters 20
[ -d "$B/lib-before" ] && step bench.md bench_before_2 30 $BE "$CB" --iters 20
step bench.md bench_2 30 "$CB" --iters 20
step bench.md verify 40 "$CB" --rows 8192 --cols 5120 --iters 3 --verify
step bench.md verify_exhaustive 25 "$CB" --rows 2048 --cols 5120 --iters 3 --verify --exhaustive
QGMM_VULKAN_CAST_LANES=generic step bench.md verify_exhaustive_generic 25 "$CB" --rows 2048 --cols 5120 --iters 3 --verify --exhaustive
step tests.log kat_casts 20 "$B/bin/test_kat_casts" vulkan
step tests.log props_casts 20 "$B/bin/test_props_casts" vulkan
cat "$OUT/env.txt"
tail -1 "$OUT/conformance.log"; grep -E " FAIL |ERROR" "$OUT/conformance.log" | head -20
grep -E "cases, " "$OUT/tests.log"
grep -E "^## |qgmm vulkan (cast )?pipeline" "$OUT/stats.log" | cut -c1-400
grep -v "^# vulkan:" "$OUT/bench.md"
