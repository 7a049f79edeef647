/*
 * gemm_mma.cuh — PTX wrappers for the portable grouped GEMM: cp.async, ldmatrix and the
 * mma.sync shapes (bf16 m16n8k16, fp8 m16n8k32). The fp8 shapes need sm_89+; they are
 * compiled out (trap) below that, and the launcher never picks them there.
 *
 * Both shapes read the same bytes per fragment register: a bf16 k16 step and an fp8 k32
 * step are each 32 bytes of the contraction per row, so one ldmatrix scheme feeds both.
 */
#ifndef QGMM_CUDA_GEMM_MMA_CUH
#define QGMM_CUDA_GEMM_MMA_CUH

#include "gemm_problem.cuh"

__device__ __forceinline__ uint32_t qg_smem_u32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* 16-byte async copy; bytes < 16 zero-fills the rest (bytes 0: all zeros, src unread). */
__device__ __forceinline__ void qg_cp_async16(uint32_t dst, const void *src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void qg_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void qg_cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void qg_ldmatrix_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3,
                                               uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

/* d += a * b for one m16n8 tile over a 32-byte contraction step. */
template <int E>
__device__ __forceinline__ void qg_mma(float *d, const uint32_t *a, const uint32_t *b)
{
    if constexpr (E == QG_ELEM_BF16) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
        if constexpr (E == QG_ELEM_E4M3) {
            asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
                         "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        } else {
            asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 "
                         "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        }
#else
        __trap();
#endif
    }
}

#endif /* QGMM_CUDA_GEMM_MMA_CUH */
