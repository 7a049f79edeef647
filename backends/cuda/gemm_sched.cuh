/*
 * gemm_sched.cuh — the device-side tile scheduler shared by the portable and Hopper
 * grouped GEMMs. Every CTA of the persistent grid reads offs itself, checks it, and builds
 * in shared memory the prefix of tiles over groups (uneven and empty groups included), so
 * no host sync and no per-group launch is needed, and a bad offs array is seen by every
 * CTA: all of them then write nothing (CTA 0 raises the status word).
 */
#ifndef QGMM_CUDA_GEMM_SCHED_CUH
#define QGMM_CUDA_GEMM_SCHED_CUH

#include "gemm_problem.cuh"
#include "qgmm_backend.h"

/* Shared-memory ints the scheduler needs for G groups: bounds (G+1), tile prefix (G+1),
 * MX padded-start prefix (G+1), plus 40 scratch. */
__host__ __device__ inline int qg_sched_smem_ints(int groups) { return 3 * (groups + 1) + 40; }

struct qg_sched {
    int *bounds;   /* bounds[g] = start of group g, bounds[g+1] = its end (offs[-1] = 0) */
    int *tpref;    /* tiles before group g */
    int *mxpref;   /* MX: padded start row (M_GROUPED, 128-row units) or start scale column
                      (K_GROUPED, 4-column units) of group g in the blocked scale layout */
    int groups;
    int total;     /* tiles in all groups */
    int tiles_r_fixed, tiles_c;
};

/* Builds the scheduler in `smem`; returns 0 when offs is bad (then nothing may be
 * written). Must be called by every thread of the block. */
template <int BM, int BN>
__device__ inline int qg_sched_build(const qg_problem &p, int *smem, qg_sched &s)
{
    const int G = p.groups;
    s.groups = G;
    s.bounds = smem;
    s.tpref = smem + (G + 1);
    s.mxpref = smem + 2 * (G + 1);
    int *scratch = smem + 3 * (G + 1);     /* 32 warp sums, 2 carries, 1 flag */
    s.tiles_c = (int)((p.cols + BN - 1) / BN);
    s.tiles_r_fixed = (int)((p.rows + BM - 1) / BM);
    const int tid = threadIdx.x, nthr = blockDim.x;
    const int lane = tid & 31, warp = tid >> 5, nwarps = (nthr + 31) >> 5;
    if (tid == 0) { scratch[32] = 0; scratch[33] = 0; scratch[34] = 0; s.bounds[0] = 0;
                    s.tpref[0] = 0; s.mxpref[0] = 0; }
    __syncthreads();
    int bad = 0;
    for (int base = 0; base < G; base += nthr) {
        const int g = base + tid;
        int tiles = 0, mxu = 0;
        if (g < G) {
            const int64_t end = p.offs[g];
            const int64_t start = g ? (int64_t)p.offs[g - 1] : 0;
            const int64_t size = end - start;
            const int64_t extent = (p.kind == QG_M_GROUPED) ? p.rows : p.kdim;
            if (end < start || end > extent) bad = 1;
            if (p.offs_multiple > 1 && (size % p.offs_multiple) != 0) bad = 1;
            s.bounds[g + 1] = (int)end;
            if (!bad && size > 0) {
                if (p.kind == QG_M_GROUPED) {
                    tiles = (int)((size + BM - 1) / BM) * s.tiles_c;
                    mxu = (int)((size + 127) / 128) * 128;
                } else {
                    tiles = s.tiles_r_fixed * s.tiles_c;
                    mxu = (int)(((size / 32) + 3) / 4) * 4;
                }
            } else if (!bad && p.kind == QG_K_GROUPED) {
                tiles = s.tiles_r_fixed * s.tiles_c;  /* empty group: tiles write zeros */
            }
        }
        /* two inclusive block scans (tiles, mx units) by warp shuffles */
        int vt = tiles, vm = mxu;
        for (int o = 1; o < 32; o <<= 1) {
            const int t = __shfl_up_sync(0xffffffffu, vt, o);
            const int m = __shfl_up_sync(0xffffffffu, vm, o);
            if (lane >= o) { vt += t; vm += m; }
        }
        if (lane == 31) scratch[warp] = vt;
        __syncthreads();
        if (tid == 0) {
            int acc = 0;
            for (int w = 0; w < nwarps; ++w) { const int x = scratch[w]; scratch[w] = acc; acc += x; }
        }
        __syncthreads();
        const int wt = scratch[warp];
        __syncthreads();
        if (lane == 31) scratch[warp] = vm;
        __syncthreads();
        if (tid == 0) {
            int acc = 0;
            for (int w = 0; w < nwarps; ++w) { const int x = scratch[w]; scratch[w] = acc; acc += x; }
        }
        __syncthreads();
        const int wm = scratch[warp];
        const int ct = scratch[32], cm = scratch[33];
        if (g < G) { s.tpref[g + 1] = ct + wt + vt; s.mxpref[g + 1] = cm + wm + vm; }
        __syncthreads();
        if (tid == nthr - 1) { scratch[32] = ct + wt + vt; scratch[33] = cm + wm + vm; }
        __syncthreads();
    }
    bad = __syncthreads_or(bad);
    s.total = s.tpref[G];
    if (bad && blockIdx.x == 0 && tid == 0 && p.status)
        atomicOr(p.status, (unsigned)QGMM_DEVICE_STATUS_BAD_OFFSETS);
    return !bad;
}

/* The group owning tile t: the g with tpref[g] <= t < tpref[g+1] (empty groups skipped). */
__device__ inline int qg_sched_group(const qg_sched &s, int t)
{
    int lo = 0, hi = s.groups;                 /* first g with tpref[g+1] > t */
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (s.tpref[mid + 1] <= t) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* Tile t's (group, first r, first c). Within a group, bands of 8 r-tiles walk c so that
 * CTAs running together share operand tiles in L2. */
template <int BM, int BN>
__device__ inline void qg_sched_tile(const qg_problem &p, const qg_sched &s, int t, int &g,
                                     int64_t &r0, int64_t &c0)
{
    g = qg_sched_group(s, t);
    const int local = t - s.tpref[g];
    const int64_t gstart = s.bounds[g];
    const int nr = (p.kind == QG_M_GROUPED)
                       ? (int)((s.bounds[g + 1] - gstart + BM - 1) / BM)
                       : s.tiles_r_fixed;
    const int nc = s.tiles_c;
    const int SW = 8;
    const int band = local / (SW * nc);
    const int rem = local - band * SW * nc;
    const int h = min(SW, nr - band * SW);
    const int tr = band * SW + rem % h;
    const int tc = rem / h;
    r0 = (int64_t)tr * BM + (p.kind == QG_M_GROUPED ? gstart : 0);
    c0 = (int64_t)tc * BN;
}

#endif /* QGMM_CUDA_GEMM_SCHED_CUH */
