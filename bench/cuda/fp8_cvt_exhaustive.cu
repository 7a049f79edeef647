/*
 * fp8_cvt_exhaustive.cu — proves the CUDA fast f32 -> fp8 path (qgmm_k_to_fp8x8: the
 * hardware cvt.rn.satfinite with its fall-backs) returns the same byte as the header
 * codec qgmm_f32_to_fp8 for EVERY one of the 2^32 f32 bit patterns, for each format.
 * Build: nvcc -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels -Iapi \
 *        bench/cuda/fp8_cvt_exhaustive.cu -o fp8_cvt_exhaustive
 * Exit 0 when every format matches, 1 on any mismatch (the first few are printed),
 * 77 without a CUDA device.
 */
#include <cstdio>
#include <cstring>

#include "qgmm_kernels_common.cuh"

template <int FMT>
__global__ void check(unsigned long long *bad, unsigned *first)
{
    const uint64_t n = 1ull << 32;
    unsigned long long local = 0;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const float v = __uint_as_float((uint32_t)i);
        float p[8];
        uint8_t o[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) p[k] = v;
        qgmm_k_to_fp8x8<FMT>(p, o);
        const uint8_t want = qgmm_f32_to_fp8(v, FMT);
        bool diff = false;
#pragma unroll
        for (int k = 0; k < 8; ++k) diff |= o[k] != want;
        if (diff) {
            ++local;
            const unsigned slot = atomicAdd(first, 1u);
            if (slot < 8) first[1 + slot] = (uint32_t)i;
        }
    }
    if (local) atomicAdd(bad, local);
}

template <int FMT>
static int run(const char *name)
{
    unsigned long long *bad;
    unsigned *first;
    cudaMalloc(&bad, sizeof *bad);
    cudaMalloc(&first, 9 * sizeof *first);
    cudaMemset(bad, 0, sizeof *bad);
    cudaMemset(first, 0, 9 * sizeof *first);
    check<FMT><<<132 * 16, 256>>>(bad, first);
    unsigned long long h = 0;
    unsigned f[9];
    cudaError_t e = cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost);
    cudaMemcpy(f, first, sizeof f, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        printf("%s: CUDA error %s\n", name, cudaGetErrorString(e));
        return 1;
    }
    printf("%-10s 2^32 inputs: %llu mismatches", name, h);
    for (unsigned i = 0; i < (f[0] < 8 ? f[0] : 8); ++i) printf(" 0x%08x", f[1 + i]);
    printf("\n");
    cudaFree(bad);
    cudaFree(first);
    return h != 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: fp8_cvt_exhaustive\nCompares the fast f32->fp8 path with qgmm_f32_to_fp8 on all 2^32 inputs.\n");
        return 0;
    }
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    int fail = run<QGMM_FMT_E4M3FN>("e4m3fn");
    fail |= run<QGMM_FMT_E5M2>("e5m2");
    fail |= run<QGMM_FMT_E4M3FNUZ>("e4m3fnuz");
    return fail;
}
