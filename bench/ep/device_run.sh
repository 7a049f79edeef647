#!/bin/sh
# device_run.sh [--no-sanitizer] [--no-loopback] [BUILD_DIR] — the device call of expert parallelism on a host
# of two or more GPUs (run from the repo root; BUILD_DIR, default build-epcuda, carried with
# lib/ and bin/), NCCL_NVLS_ENABLE=0, logs under $OUT, at most 7 minutes in all (each step
# under its own limit; about 3 without a hang):
#  1. test_ep_gemm cuda: three contexts on GPU 0 from their own threads (the GEMM launches
#     the loopback ranks make) and the group-start report (not with --no-loopback);
#  2. ep_bench on GPUs 0-1: byte checks (dispatch, combine, the layer against the one-device
#     composite), dispatch/combine against ncclAlltoAll, the layer against GPU 0 alone on the
#     same global batch (--strong), BF16 and FP8 rowwise;
#  3. with 4 or more GPUs, ep_bench on 4: the same checks, then top-8 over 64 and 256
#     experts, hidden 7168 and 5120, 4096 and 16384 tokens per GPU: dispatch/combine against
#     ncclAlltoAll and the layer's weak scaling;
#  4. compute-sanitizer memcheck of a small ep_bench on every rank (not with --no-sanitizer);
#  5. test_ep cuda (loopback ranks as contexts on GPU 0), last, under a short limit (not with
#     --no-loopback: while the grouped GEMM's launches race between threads, a rank whose
#     launch fails leaves the others waiting in the loopback barrier until the limit).
case "$1" in -h|--help) sed -n 2,17p "$0"; exit 0;; esac
SAN=1 LB=1
while :; do
    case "$1" in --no-sanitizer) SAN=0; shift;; --no-loopback) LB=0; shift;; *) break;; esac
done
B=${1:-build-epcuda}
OUT=${OUT:-/tmp/ep_out}; mkdir -p "$OUT"
export QGMM_PLUGIN_PATH=$PWD/$B/lib LD_LIBRARY_PATH=$PWD/$B/lib:${LD_LIBRARY_PATH:-} NCCL_NVLS_ENABLE=0 PATH=$PATH:/usr/local/cuda/bin
NG=$(nvidia-smi -L | wc -l)
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvidia-smi topo -m; } > "$OUT/env.txt" 2>&1
step() { # step NAME LIMIT_S COMMAND...: runs it, logs to $OUT/NAME.log, notes its exit status
    name=$1 lim=$2; shift 2
    t0=$(date +%s)
    timeout "$lim" "$@" > "$OUT/$name.log" 2>&1
    echo "$name rc=$? ($(( $(date +%s) - t0 )) s)" >> "$OUT/env.txt"
}
[ "$LB" = 1 ] && step test_ep_gemm 40 "$B/bin/test_ep_gemm" cuda
step ep_bench_2gpu 100 env CUDA_VISIBLE_DEVICES=0,1 "$B/bin/ep_bench" --nranks 2 --layer --strong
if [ "$NG" -ge 4 ]; then
    step ep_bench_4gpu 180 env CUDA_VISIBLE_DEVICES=0,1,2,3 "$B/bin/ep_bench" --nranks 4 --layer \
        --tokens 4096,16384 --dim 7168,5120 --experts 64,256 --reps 12
fi
if [ "$SAN" = 1 ]; then
    step sanitizer 60 env CUDA_VISIBLE_DEVICES=0,1 compute-sanitizer --target-processes all --error-exitcode 9 \
        "$B/bin/ep_bench" --tokens 256 --dim 256 --experts 8 --topk 2 --reps 1
fi
[ "$LB" = 1 ] && step test_ep 40 "$B/bin/test_ep" cuda
cat "$OUT/env.txt"
grep -h "FAIL\|DIFFER\|differ\|failures\|passed\|FAILED" "$OUT"/*.log | sort | uniq -c | head -40
grep -h "^rank 0" "$OUT"/ep_bench_*.log
[ -f "$OUT/sanitizer.log" ] && tail -n 4 "$OUT/sanitizer.log"
! grep -q "rc=[^0]" "$OUT/env.txt" # the exit status: 1 when a step failed or ran out of time
