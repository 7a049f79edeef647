/*
 * ops_table.cpp — what the HIP plugin (libqgmm-hip.so) and its host emulation
 * (libqgmm-hipemu.so) share above the runtime: the 2-D row grid the shared cast/layout
 * launchers ask for (their vtable slots: backends/cuda_hip/cast_ops_table.cu). Compiled into
 * both; it calls only qgmm_cuda_grid, which each of them implements over its own "device".
 */
#include "cuda_internal.h"
#include "hip_gemm.h"

/* Row-chunk kernels (one x-row of work-items per data row): x spans a row's chunks in
 * multiples of 32 up to 256 (a 64-wide wave holds one or two whole x-rows), y packs rows
 * into the 256-thread block; the y grid is capped like qgmm_cuda_grid (per_cu blocks per
 * compute unit over all x blocks). */
extern "C" void qgmm_cuda_row_grid(const qgmm_context *ctx, int64_t chunks, int64_t rows, int per_cu,
                                   unsigned *grid_x, unsigned *grid_y, unsigned *block_x, unsigned *block_y)
{
    const int64_t tx = chunks >= 256 ? 256 : chunks <= 32 ? 32 : (chunks + 31) / 32 * 32;
    const int64_t ty = 256 / tx, gx = chunks > 0 ? (chunks + tx - 1) / tx : 1;
    const int64_t cap = (int64_t)qgmm_cuda_grid(ctx, INT64_MAX, 256, per_cu) / gx;
    int64_t gy = (rows + ty - 1) / ty;
    gy = gy > cap ? cap : gy;
    gy = gy > 65535 ? 65535 : gy < 1 ? 1 : gy;
    *grid_x = (unsigned)gx;
    *grid_y = (unsigned)gy;
    *block_x = (unsigned)tx;
    *block_y = (unsigned)ty;
}
