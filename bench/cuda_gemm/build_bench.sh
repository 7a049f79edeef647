#!/bin/sh
# build_bench.sh [OUTDIR] — builds libqg_bench.so (the CUDA grouped-GEMM kernels behind a C
# ABI for bench_grouped.py) for sm_90a into OUTDIR (default build-cudagemm/lib).
# Run from the repository root. --help: this text.
set -e
case "$1" in -h|--help) sed -n 2,4p "$0"; exit 0;; esac
OUT=${1:-build-cudagemm/lib}
mkdir -p "$OUT"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
$NVCC -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
  -shared -Xcompiler -fPIC -Xcompiler -fvisibility=hidden \
  -Ibackends/cuda -Ibackends/cuda_hip -Iapi -Ikernels \
  backends/cuda/gemm_portable.cu backends/cuda/gemm_hopper.cu backends/cuda/gemm_dispatch.cu \
  bench/cuda_gemm/gemm_capi.cu -o "$OUT/libqg_bench.so"
echo "built $OUT/libqg_bench.so"
