/*
 * cuda_runtime.h — the host-emulation stand-in (first on libqgmm-hipemu's include path):
 * the shared launchers (backends/cuda_hip/cast_*.cu, layout_*.cu, their launches rewritten by
 * emu_launchers.py into hg_emu_launch calls) run their kernels on the host under
 * hip_emu.h. Streams are nothing, memsets are immediate, every launch is synchronous.
 */
#ifndef QGMM_HIPEMU_CUDA_RUNTIME_H
#define QGMM_HIPEMU_CUDA_RUNTIME_H

#include "hip_emu.h"

#include <stddef.h>
#include <string.h>

#include <type_traits>

typedef void *cudaStream_t;
typedef int cudaError_t;
#define cudaSuccess 0
static inline cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t) { memset(p, v, n); return 0; }
static inline cudaError_t cudaGetLastError(void) { return 0; }

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

template <class F> static void hg_emu_call(void *f) { (*(F *)f)(); }

/* KERNEL<<<grid, block, shmem, stream>>>(args) after emu_launchers.py. */
template <class F>
static inline void hg_emu_launch(dim3 grid, dim3 block, size_t, cudaStream_t, F &&f)
{
    hg_emu_run3(grid.x, grid.y, grid.z, block.x, block.y, hg_emu_call<typename std::remove_reference<F>::type>, &f);
}

#endif
