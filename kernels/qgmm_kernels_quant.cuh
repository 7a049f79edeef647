/*
 * qgmm_kernels_quant.cuh — single-source (CUDA/HIP) kernels of every scaled FP8 cast:
 * FP8 rowwise (all variants), MXFP8 (dim0/dim1/3D, FLOOR/RCEIL, plain/blocked scales),
 * FP8 blockwise (1x128, 128x128). Per-element numerics only through kernels/qgmm_*.h
 * (NaN rule included: qgmm_mul_f32), so the bytes equal the CPU reference.
 *
 * Kernels (the launcher in backends/<api>/cast_*.cu picks one):
 *   qgmm_kq_generic     any layout: one warp per scale group (a rectangle of the
 *                       (E,R,C) view), strided loads; the fallback and the oracle shape.
 *   qgmm_kq_rowblock    32/128-element blocks along a contiguous last dim (MX dim0,
 *                       blockwise 1x128): 8 elements per thread, 16-byte loads, the
 *                       block's amax over 4/16 lanes by xor-shuffle, scales straight into
 *                       the plain or blocked layout.
 *   qgmm_kq_rowseg      rowwise scale per (row, group) segment along a contiguous last
 *                       dim (rowwise, 3D per (e,n), jagged per-group rowwise): a warp per
 *                       segment, 16-byte body and scalar head/tail.
 *   qgmm_kq_colamax +
 *   qgmm_kq_colscale    rowwise scale along R (colwise, jagged colwise, 3D transpose rhs):
 *                       partial column amax with atomicMax, then one scale per column.
 *   qgmm_kq_transpose   cast along R writing R-contiguous output (the transposes): a
 *                       128x64 tile through shared memory, 16-byte stores; MX dim1 takes
 *                       its amax from the tile, rowwise its multiplier from colscale.
 *   qgmm_kq_tile128     blockwise 128x128: one block per tile, values kept in registers.
 */
#ifndef QGMM_KERNELS_QUANT_CUH
#define QGMM_KERNELS_QUANT_CUH

#include "qgmm_kernels_common.cuh"

#define QGMM_KQ_ROWWISE 0
#define QGMM_KQ_MX 1
#define QGMM_KQ_BLOCKWISE 2

typedef struct qgmm_kquant {
    qgmm_kview x, q;
    qgmm_kview s;            /* scale view: meaning of (s0, s1, s2) per kind, see below */
    int x_dtype;             /* QGMM_K_F32 / BF16 / F16 */
    int fmt;                 /* fp8 format id of q */
    int64_t E, R, C;
    int kind;
    int along_c;             /* the scaled dim is C (last) rather than R */
    int pow2, recip;         /* rowwise options */
    int rceil;               /* MX mode */
    int blocked;             /* MX scales in the blocked layout */
    int64_t cols_pad, per_expert;
    int tile_rows;           /* blockwise: 1 or 128 */
    const int32_t *offs;     /* jagged rowwise: groups along the scaled dim; NULL if none */
    int64_t offs_stride, G;  /* G = 1 without offs */
    uint32_t *status;
    float *table;            /* colscale -> transpose: multipliers (E or G) x C */
    uint32_t *amax_bits;     /* colamax -> colscale: (E or G) x C */
} qgmm_kquant;

/* Scale index conventions (host fills s accordingly):
 *   ROWWISE:   outer * s.s0 + inner * s.s1 (outer = g if jagged else e; inner = other idx)
 *   MX plain:  e * s.s0 + o * s.s1 + b * s.s2;   MX blocked: (e*per_expert + off) * s.s0
 *   BLOCKWISE: e * s.s0 + rt * s.s1 + ct * s.s2 */

QGMM_DEV void qgmm_kq_store_scale_f32(const qgmm_kquant &a, int64_t idx, float v)
{
    ((float *)a.s.ptr)[idx] = v;
}

QGMM_DEV int64_t qgmm_kq_mx_scale_index(const qgmm_kquant &a, int64_t e, int64_t o, int64_t b)
{
    if (a.blocked) return (e * a.per_expert + qgmm_blocked_offset(o, b, a.cols_pad)) * a.s.s0;
    return e * a.s.s0 + o * a.s.s1 + b * a.s.s2;
}

/* Rowwise multiplier from an amax (the scale the data is multiplied by). */
QGMM_DEV float qgmm_kq_rowwise_mult(float amax, int fmt, int pow2)
{
    float s = qgmm_rowwise_scale(amax, fmt);
    if (pow2) s = qgmm_scale_pow2_floor(s);
    return s;
}

/* Loads 8 consecutive elements (16-byte aligned) as f32. */
QGMM_DEV void qgmm_kload8(const void *p, int dtype, int64_t i, float v[8])
{
    if (dtype == QGMM_K_BF16 || dtype == QGMM_K_F16) {
        const uint4 u = QGMM_LDG((const uint4 *)((const uint16_t *)p + i));
        const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            if (dtype == QGMM_K_BF16) {
                v[2 * k] = qgmm_bf16_to_f32((uint16_t)(w[k] & 0xFFFFu));
                v[2 * k + 1] = qgmm_bf16_to_f32((uint16_t)(w[k] >> 16));
            } else {
                v[2 * k] = qgmm_kload(&w[k], QGMM_K_F16, 0);
                v[2 * k + 1] = qgmm_kload(&w[k], QGMM_K_F16, 1);
            }
        }
    } else {
        const float4 a = QGMM_LDG((const float4 *)((const float *)p + i));
        const float4 b = QGMM_LDG((const float4 *)((const float *)p + i) + 1);
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
        v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
    }
}

QGMM_DEV uint2 qgmm_kpack8(const uint8_t b[8])
{
    uint2 r;
    r.x = (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
    r.y = (uint32_t)b[4] | ((uint32_t)b[5] << 8) | ((uint32_t)b[6] << 16) | ((uint32_t)b[7] << 24);
    return r;
}

/* ------------------------------------------------------------------ generic
 * One warp per scale group. Group ids: ROWWISE (e, g, i) -> i fastest; MX (e, o, b);
 * BLOCKWISE (e, rt, ct). */
QGMM_DEV int64_t qgmm_kq_num_groups(const qgmm_kquant &a)
{
    if (a.kind == QGMM_KQ_ROWWISE) return a.E * a.G * (a.along_c ? a.R : a.C);
    if (a.kind == QGMM_KQ_MX) {
        const int64_t O = a.along_c ? a.R : a.C, L = a.along_c ? a.C : a.R;
        return a.E * O * (L / 32);
    }
    const int64_t RT = (a.R + a.tile_rows - 1) / a.tile_rows;
    return a.E * RT * (a.C / 128);
}

QGMM_KERNEL void qgmm_kq_generic(qgmm_kquant a)
{
    if (a.offs && !qgmm_block_offsets_ok(a.offs, a.offs_stride, a.G, a.along_c ? a.C : a.R, 1,
                                         a.status, QGMM_BID_X == 0))
        return;
    const int lane = QGMM_TID % QGMM_WARP;
    const int64_t warps_per_block = QGMM_NTHREADS / QGMM_WARP;
    const int64_t n = qgmm_kq_num_groups(a);
    for (int64_t gid = QGMM_BID_X * warps_per_block + QGMM_TID / QGMM_WARP; gid < n;
         gid += QGMM_NBLOCKS_X * warps_per_block) {
        int64_t e, r0, r1, c0, c1, sidx = 0, mx_o = 0, mx_b = 0;
        if (a.kind == QGMM_KQ_ROWWISE) {
            const int64_t O = a.along_c ? a.R : a.C, L = a.along_c ? a.C : a.R;
            const int64_t i = gid % O, g = (gid / O) % a.G;
            e = gid / (O * a.G);
            int64_t j0 = 0, j1 = L;
            if (a.offs) {
                j0 = g == 0 ? 0 : a.offs[(g - 1) * a.offs_stride];
                j1 = a.offs[g * a.offs_stride];
            }
            if (a.along_c) { r0 = i; r1 = i + 1; c0 = j0; c1 = j1; }
            else { r0 = j0; r1 = j1; c0 = i; c1 = i + 1; }
            sidx = (a.offs ? g : e) * a.s.s0 + i * a.s.s1;
        } else if (a.kind == QGMM_KQ_MX) {
            const int64_t O = a.along_c ? a.R : a.C, L = a.along_c ? a.C : a.R, NB = L / 32;
            mx_b = gid % NB;
            mx_o = (gid / NB) % O;
            e = gid / (NB * O);
            if (a.along_c) { r0 = mx_o; r1 = mx_o + 1; c0 = mx_b * 32; c1 = c0 + 32; }
            else { r0 = mx_b * 32; r1 = r0 + 32; c0 = mx_o; c1 = mx_o + 1; }
        } else {
            const int64_t RT = (a.R + a.tile_rows - 1) / a.tile_rows, CT = a.C / 128;
            const int64_t ct = gid % CT, rt = (gid / CT) % RT;
            e = gid / (CT * RT);
            r0 = rt * a.tile_rows;
            r1 = r0 + a.tile_rows < a.R ? r0 + a.tile_rows : a.R;
            c0 = ct * 128;
            c1 = c0 + 128;
            sidx = e * a.s.s0 + rt * a.s.s1 + ct * a.s.s2;
        }
        const int64_t w = c1 - c0, cnt = (r1 - r0) * w;
        float amax = 0.0f;
        for (int64_t k = lane; k < cnt; k += QGMM_WARP) {
            const int64_t r = r0 + k / w, c = c0 + k % w;
            amax = qgmm_amax_combine(amax, qgmm_fabs_f32(qgmm_kload(a.x.ptr, a.x_dtype, qgmm_kidx(a.x, e, r, c))));
        }
        amax = qgmm_warp_amax(amax);
        float mult = 0.0f;
        uint8_t code = 0;
        if (a.kind == QGMM_KQ_MX) code = qgmm_mx_scale(amax, a.fmt, a.rceil);
        else if (a.kind == QGMM_KQ_ROWWISE) mult = qgmm_kq_rowwise_mult(amax, a.fmt, a.pow2);
        else mult = qgmm_blockwise_scale(amax, a.fmt);
        uint8_t *q = (uint8_t *)a.q.ptr;
        for (int64_t k = lane; k < cnt; k += QGMM_WARP) {
            const int64_t r = r0 + k / w, c = c0 + k % w;
            const float v = qgmm_kload(a.x.ptr, a.x_dtype, qgmm_kidx(a.x, e, r, c));
            q[qgmm_kidx(a.q, e, r, c)] = a.kind == QGMM_KQ_MX ? qgmm_mx_quantize_value(v, code, a.fmt)
                                                              : qgmm_quantize_value(v, mult, a.fmt);
        }
        if (lane == 0) {
            if (a.kind == QGMM_KQ_MX)
                ((uint8_t *)a.s.ptr)[qgmm_kq_mx_scale_index(a, e, mx_o, mx_b)] = code;
            else if (a.kind == QGMM_KQ_ROWWISE)
                qgmm_kq_store_scale_f32(a, sidx, a.recip ? qgmm_scale_reciprocal(mult) : mult);
            else
                qgmm_kq_store_scale_f32(a, sidx, qgmm_scale_reciprocal(mult));
        }
    }
}

/* ------------------------------------------------------------------ rowblock
 * 2D blocks: x = TX threads along the row (TX a multiple of 32, so a warp never leaves a
 * row), y = rows. Thread (tx, ty) takes the 8-element chunk c8 = blockIdx.x*TX + tx of
 * rows blockIdx.y*TY + ty, then += gridDim.y*TY: no per-chunk index division, one 16-byte
 * load per thread in flight, high occupancy. TPG consecutive lanes = one scale block of
 * 8*TPG elements (amax by xor-shuffle). Requires: x.s2 == q.s2 == 1, C % (8*TPG) == 0,
 * 16-byte aligned x rows, 8-byte aligned q rows, E*R < 2^31. kind MX (TPG 4) or
 * BLOCKWISE with tile_rows 1 (TPG 16). */
template <int TPG, int FMT>
QGMM_KERNEL void qgmm_kq_rowblock(qgmm_kquant a)
{
    const int tx = QGMM_TID % QGMM_NTHREADS_X, ty = QGMM_TID / QGMM_NTHREADS_X;
    const int ty_n = QGMM_NTHREADS / QGMM_NTHREADS_X;
    const int64_t cpr = a.C / 8;
    const int64_t c8 = QGMM_BID_X * QGMM_NTHREADS_X + tx;
    const int valid = c8 < cpr;
    const uint32_t rows = (uint32_t)(a.E * a.R), R = (uint32_t)a.R;
    uint8_t *qb = (uint8_t *)a.q.ptr;
    const int64_t c = c8 * 8;
    for (uint32_t row = (uint32_t)QGMM_BID_Y * ty_n + ty; row < rows; row += (uint32_t)QGMM_NBLOCKS_Y * ty_n) {
        const uint32_t e = row / R, r = row - e * R;
        float v[8];
        float amax = 0.0f;
        if (valid) {
            qgmm_kload8(a.x.ptr, a.x_dtype, qgmm_kidx(a.x, e, r, c), v);
#pragma unroll
            for (int k = 0; k < 8; ++k) amax = qgmm_amax_combine(amax, qgmm_fabs_f32(v[k]));
        }
#pragma unroll
        for (int m = 1; m < TPG; m <<= 1) amax = qgmm_amax_combine(amax, QGMM_SHFL_XOR_F32(amax, m));
        if (!valid) continue;
        uint8_t out[8];
        if (a.kind == QGMM_KQ_MX) {
            const uint8_t code = qgmm_mx_scale(amax, FMT, a.rceil);
            qgmm_k_quantize8<FMT>(v, qgmm_e8m0_reciprocal(code), out);
            if ((c8 % TPG) == 0) ((uint8_t *)a.s.ptr)[qgmm_kq_mx_scale_index(a, e, r, c / (8 * TPG))] = code;
        } else {
            const float mult = qgmm_blockwise_scale(amax, FMT);
            qgmm_k_quantize8<FMT>(v, mult, out);
            if ((c8 % TPG) == 0)
                qgmm_kq_store_scale_f32(a, e * a.s.s0 + r * a.s.s1 + (c / 128) * a.s.s2, qgmm_scale_reciprocal(mult));
        }
        *(uint2 *)(qb + qgmm_kidx(a.q, e, r, c)) = qgmm_kpack8(out);
    }
}

/* ------------------------------------------------------------------ rowseg
 * Rowwise along contiguous C: one warp per (e, g, r) segment [j0, j1). Requires x.s2 ==
 * q.s2 == 1, 16-byte aligned x rows and 8-byte aligned q rows (C % 8 == 0). */
template <int FMT>
QGMM_KERNEL void qgmm_kq_rowseg(qgmm_kquant a)
{
    if (a.offs && !qgmm_block_offsets_ok(a.offs, a.offs_stride, a.G, a.C, 1, a.status, QGMM_BID_X == 0))
        return;
    const int lane = QGMM_TID % QGMM_WARP;
    const int64_t wpb = QGMM_NTHREADS / QGMM_WARP;
    const int64_t n = a.E * a.G * a.R;
    for (int64_t gid = QGMM_BID_X * wpb + QGMM_TID / QGMM_WARP; gid < n; gid += QGMM_NBLOCKS_X * wpb) {
        const int64_t r = gid % a.R, g = (gid / a.R) % a.G, e = gid / (a.R * a.G);
        int64_t j0 = 0, j1 = a.C;
        if (a.offs) {
            j0 = g == 0 ? 0 : a.offs[(g - 1) * a.offs_stride];
            j1 = a.offs[g * a.offs_stride];
        }
        int64_t ja = (j0 + 7) & ~(int64_t)7, jb = j1 & ~(int64_t)7;
        if (ja > j1) ja = j1;
        if (jb < ja) jb = ja;
        const int64_t xrow = e * a.x.s0 + r * a.x.s1, qrow = e * a.q.s0 + r * a.q.s1;
        float amax = 0.0f;
        for (int64_t j = j0 + lane; j < ja; j += QGMM_WARP)
            amax = qgmm_amax_combine(amax, qgmm_fabs_f32(qgmm_kload(a.x.ptr, a.x_dtype, xrow + j)));
        for (int64_t j = jb + lane; j < j1; j += QGMM_WARP)
            amax = qgmm_amax_combine(amax, qgmm_fabs_f32(qgmm_kload(a.x.ptr, a.x_dtype, xrow + j)));
        for (int64_t j = ja + 8 * lane; j < jb; j += 8 * QGMM_WARP) {
            float v[8];
            qgmm_kload8(a.x.ptr, a.x_dtype, xrow + j, v);
#pragma unroll
            for (int k = 0; k < 8; ++k) amax = qgmm_amax_combine(amax, qgmm_fabs_f32(v[k]));
        }
        amax = qgmm_warp_amax(amax);
        const float mult = qgmm_kq_rowwise_mult(amax, FMT, a.pow2);
        uint8_t *q = (uint8_t *)a.q.ptr;
        for (int64_t j = j0 + lane; j < ja; j += QGMM_WARP)
            q[qrow + j] = qgmm_quantize_value(qgmm_kload(a.x.ptr, a.x_dtype, xrow + j), mult, FMT);
        for (int64_t j = jb + lane; j < j1; j += QGMM_WARP)
            q[qrow + j] = qgmm_quantize_value(qgmm_kload(a.x.ptr, a.x_dtype, xrow + j), mult, FMT);
        for (int64_t j = ja + 8 * lane; j < jb; j += 8 * QGMM_WARP) {
            float v[8];
            uint8_t o[8];
            qgmm_kload8(a.x.ptr, a.x_dtype, xrow + j, v);
            qgmm_k_quantize8<FMT>(v, mult, o);
            *(uint2 *)(q + qrow + j) = qgmm_kpack8(o);
        }
        if (lane == 0)
            qgmm_kq_store_scale_f32(a, (a.offs ? g : e) * a.s.s0 + r * a.s.s1,
                                    a.recip ? qgmm_scale_reciprocal(mult) : mult);
    }
}

/* ------------------------------------------------------------------ colamax / colscale
 * Scale along R, one per (e or g, c). colamax: block (blockIdx.x: 256-column tile of 8
 * columns per thread... one warp row per pass; blockIdx.y: a chunk of KQ_COL_ROWS rows;
 * blockIdx.z: expert). Partial amax per thread, flushed with atomicMax on the f32 bits
 * (|x| >= 0, so bit order is value order and any NaN sorts above +inf: NaN propagates)
 * at every group end. amax_bits must be zeroed first. */
#define QGMM_KQ_COL_ROWS 512

QGMM_DEV void qgmm_kq_col_flush(const qgmm_kquant &a, int64_t slot, int64_t c, const float m[8])
{
#pragma unroll
    for (int k = 0; k < 8; ++k)
        if (c + k < a.C && qgmm_f32_bits(m[k]) != 0)
            QGMM_ATOMIC_MAX_U32(a.amax_bits + slot * a.C + c + k, qgmm_f32_bits(m[k]));
}

QGMM_KERNEL void qgmm_kq_colamax(qgmm_kquant a, int vec)
{
    if (a.offs && !qgmm_block_offsets_ok(a.offs, a.offs_stride, a.G, a.R, 1, a.status, 0)) return;
    const int lane = QGMM_TID % 32, sub = QGMM_TID / 32, nsub = QGMM_NTHREADS / 32;
    const int64_t c = (QGMM_BID_X * 32 + lane) * 8;
    const int64_t e = QGMM_BID_Z;
    const int64_t rbeg = QGMM_BID_Y * QGMM_KQ_COL_ROWS;
    int64_t rend = rbeg + QGMM_KQ_COL_ROWS;
    if (rend > a.R) rend = a.R;
    if (c >= a.C) return;
    int64_t g = 0, gend = a.R;
    if (a.offs) {
        g = qgmm_k_group_of(a.offs, a.offs_stride, a.G, rbeg + sub);
        if (g < 0) return;
        gend = a.offs[g * a.offs_stride];
    }
    float m[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t r = rbeg + sub; r < rend; r += nsub) {
        if (a.offs && r >= gend) {
            qgmm_kq_col_flush(a, g, c, m);
#pragma unroll
            for (int k = 0; k < 8; ++k) m[k] = 0.0f;
            while (g < a.G && a.offs[g * a.offs_stride] <= r) ++g;
            if (g >= a.G) return;
            gend = a.offs[g * a.offs_stride];
        }
        float v[8];
        const int64_t xi = qgmm_kidx(a.x, e, r, c);
        if (vec) {
            qgmm_kload8(a.x.ptr, a.x_dtype, xi, v);
        } else {
#pragma unroll
            for (int k = 0; k < 8; ++k)
                v[k] = c + k < a.C ? qgmm_kload(a.x.ptr, a.x_dtype, xi + k * a.x.s2) : 0.0f;
        }
#pragma unroll
        for (int k = 0; k < 8; ++k) m[k] = qgmm_amax_combine(m[k], qgmm_fabs_f32(v[k]));
    }
    qgmm_kq_col_flush(a, a.offs ? g : e, c, m);
}

/* One thread per (slot, c): multiplier into the table, the stored scale into s. */
QGMM_KERNEL void qgmm_kq_colscale(qgmm_kquant a)
{
    /* the one kernel of the three that raises the status bit (block 0) */
    if (a.offs && !qgmm_block_offsets_ok(a.offs, a.offs_stride, a.G, a.R, 1, a.status, QGMM_BID_X == 0)) return;
    const int64_t slots = a.offs ? a.G : a.E;
    for (int64_t i = QGMM_BID_X * QGMM_NTHREADS + QGMM_TID; i < slots * a.C;
         i += QGMM_NBLOCKS_X * QGMM_NTHREADS) {
        const int64_t slot = i / a.C, c = i % a.C;
        const float amax = qgmm_bits_f32(a.amax_bits[i]);
        const float mult = qgmm_kq_rowwise_mult(amax, a.fmt, a.pow2);
        a.table[i] = mult;
        qgmm_kq_store_scale_f32(a, slot * a.s.s0 + c * a.s.s1, a.recip ? qgmm_scale_reciprocal(mult) : mult);
    }
}

/* ------------------------------------------------------------------ transpose tile
 * Block = 256 threads (exactly: the load and work split assume it), tile 128 rows (R) x 64 columns (C) of expert blockIdx.z.
 * Output q has q.s1 == 1 (R contiguous). kind MX: amax over 32 rows in the tile; kind
 * ROWWISE: multiplier a.table[(g or e) * C + c], g the group of the row (rows past the
 * last group are not written). vec_in: 16-byte loads allowed; vec_out: q.s1 == 1 and
 * 16-byte aligned columns, so 16-byte stores; otherwise byte stores through q's strides. */
#define QGMM_KQ_TR 128
#define QGMM_KQ_TC 64

/* The shared-memory tile keeps the input's own bits: 16-bit for bf16/f16 (one 16-byte
 * store per 8 elements, half the footprint), f32 otherwise; widened to f32 when read. */
template <int IN> struct qgmm_kq_tile { typedef float T; enum { PAD = 1 }; };
template <> struct qgmm_kq_tile<QGMM_K_BF16> { typedef uint16_t T; enum { PAD = 8 }; };
template <> struct qgmm_kq_tile<QGMM_K_F16> { typedef uint16_t T; enum { PAD = 8 }; };
template <int IN> QGMM_DEV float qgmm_kq_tv(float v) { return v; }
template <int IN> QGMM_DEV float qgmm_kq_tv(uint16_t h)
{
    if (IN == QGMM_K_BF16) return qgmm_bf16_to_f32(h);
    return qgmm_kload(&h, QGMM_K_F16, 0);
}

template <int FMT, int IN>
QGMM_KERNEL void QGMM_LAUNCH_BOUNDS(256, 4) qgmm_kq_transpose(qgmm_kquant a, int vec_in, int vec_out)
{
    typedef typename qgmm_kq_tile<IN>::T TT;
    QGMM_SHARED __align__(16) TT tile[QGMM_KQ_TR][QGMM_KQ_TC + qgmm_kq_tile<IN>::PAD];
    QGMM_SHARED int32_t rgrp[QGMM_KQ_TR];
    if (a.offs && !qgmm_block_offsets_ok(a.offs, a.offs_stride, a.G, a.R, 1, a.status, 0)) return;
    const int64_t c0 = QGMM_BID_X * QGMM_KQ_TC, r0 = QGMM_BID_Y * QGMM_KQ_TR, e = QGMM_BID_Z;
    const int tid = QGMM_TID;
    /* load: 1024 chunks of 8 columns, four per thread, all four loads issued first */
    if (sizeof(TT) == 2) {
        uint4 w[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int ch = tid + u * QGMM_NTHREADS;
            const int rr = ch / (QGMM_KQ_TC / 8), cc = (ch % (QGMM_KQ_TC / 8)) * 8;
            const int64_t r = r0 + rr, c = c0 + cc;
            const uint16_t *xs = (const uint16_t *)a.x.ptr;
            if (r < a.R && vec_in && c + 8 <= a.C) {
                w[u] = QGMM_LDG((const uint4 *)(xs + qgmm_kidx(a.x, e, r, c)));
            } else {
                uint16_t h[8];
#pragma unroll
                for (int k = 0; k < 8; ++k) h[k] = (r < a.R && c + k < a.C) ? xs[qgmm_kidx(a.x, e, r, c + k)] : 0;
                w[u] = make_uint4(h[0] | ((uint32_t)h[1] << 16), h[2] | ((uint32_t)h[3] << 16),
                                  h[4] | ((uint32_t)h[5] << 16), h[6] | ((uint32_t)h[7] << 16));
            }
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int ch = tid + u * QGMM_NTHREADS;
            const int rr = ch / (QGMM_KQ_TC / 8), cc = (ch % (QGMM_KQ_TC / 8)) * 8;
            *(uint4 *)&tile[rr][cc] = w[u];
        }
    } else {
        float v[4][8];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int ch = tid + u * QGMM_NTHREADS;
            const int rr = ch / (QGMM_KQ_TC / 8), cc = (ch % (QGMM_KQ_TC / 8)) * 8;
            const int64_t r = r0 + rr, c = c0 + cc;
            if (r < a.R && vec_in && c + 8 <= a.C) {
                qgmm_kload8(a.x.ptr, a.x_dtype, qgmm_kidx(a.x, e, r, c), v[u]);
            } else {
#pragma unroll
                for (int k = 0; k < 8; ++k)
                    v[u][k] = (r < a.R && c + k < a.C) ? qgmm_kload(a.x.ptr, a.x_dtype, qgmm_kidx(a.x, e, r, c + k)) : 0.0f;
            }
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int ch = tid + u * QGMM_NTHREADS;
            const int rr = ch / (QGMM_KQ_TC / 8), cc = (ch % (QGMM_KQ_TC / 8)) * 8;
#pragma unroll
            for (int k = 0; k < 8; ++k) ((float *)&tile[rr][0])[cc + k] = v[u][k];
        }
    }
    if (a.kind == QGMM_KQ_ROWWISE && tid < QGMM_KQ_TR) {
        const int64_t r = r0 + tid;
        int32_t gg = -1;
        if (r < a.R) gg = a.offs ? (int32_t)qgmm_k_group_of(a.offs, a.offs_stride, a.G, r) : (int32_t)e;
        rgrp[tid] = gg;
    }
    QGMM_SYNC();
    uint8_t *qb = (uint8_t *)a.q.ptr;
    if (a.kind == QGMM_KQ_MX) {
        /* 64 columns x 4 blocks of 32 rows = 256 work items */
        const int cc = tid % QGMM_KQ_TC, mb = tid / QGMM_KQ_TC;
        const int64_t c = c0 + cc, rb = r0 + mb * 32;
        if (mb < 4 && c < a.C && rb < a.R) {
            float amax = 0.0f;
#pragma unroll 8
            for (int k = 0; k < 32; ++k) amax = qgmm_amax_combine(amax, qgmm_fabs_f32(qgmm_kq_tv<IN>(tile[mb * 32 + k][cc])));
            const uint8_t code = qgmm_mx_scale(amax, FMT, a.rceil);
            const float rec = qgmm_e8m0_reciprocal(code);
            uint8_t o[32];
#pragma unroll
            for (int h = 0; h < 4; ++h) {
                float v[8];
#pragma unroll
                for (int k = 0; k < 8; ++k) v[k] = qgmm_kq_tv<IN>(tile[mb * 32 + 8 * h + k][cc]);
                qgmm_k_quantize8<FMT>(v, rec, o + 8 * h);
            }
            const int64_t qi = e * a.q.s0 + c * a.q.s2 + rb;
            if (vec_out) {
                uint4 *dst = (uint4 *)(qb + qi);
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const uint2 lo = qgmm_kpack8(o + 16 * h), hi = qgmm_kpack8(o + 16 * h + 8);
                    dst[h] = make_uint4(lo.x, lo.y, hi.x, hi.y);
                }
            } else {
                for (int k = 0; k < 32; ++k) qb[qgmm_kidx(a.q, e, rb + k, c)] = o[k];
            }
            ((uint8_t *)a.s.ptr)[qgmm_kq_mx_scale_index(a, e, c, rb / 32)] = code;
        }
    } else {
        /* 64 columns x 8 chunks of 16 rows = 512 work items, 2 per thread */
        for (int item = tid; item < QGMM_KQ_TC * (QGMM_KQ_TR / 16); item += QGMM_NTHREADS) {
            const int cc = item % QGMM_KQ_TC, ch = item / QGMM_KQ_TC;
            const int64_t c = c0 + cc;
            if (c >= a.C) continue;
            uint8_t o[16];
            int full = 1;
            float cached_m = 0.0f, v[16], m[16];
            int cached_g = -2;
#pragma unroll
            for (int k = 0; k < 16; ++k) {
                const int g = rgrp[ch * 16 + k];
                v[k] = qgmm_kq_tv<IN>(tile[ch * 16 + k][cc]);
                if (g < 0) { full = 0; m[k] = 0.0f; continue; }
                if (g != cached_g) { cached_g = g; cached_m = a.table[(int64_t)g * a.C + c]; }
                m[k] = cached_m;
            }
            qgmm_k_quantize8v<FMT>(v, m, o);
            qgmm_k_quantize8v<FMT>(v + 8, m + 8, o + 8);
            const int64_t qi = e * a.q.s0 + c * a.q.s2 + r0 + ch * 16;
            if (full && vec_out) {
                const uint2 lo = qgmm_kpack8(o), hi = qgmm_kpack8(o + 8);
                *(uint4 *)(qb + qi) = make_uint4(lo.x, lo.y, hi.x, hi.y);
            } else {
                for (int k = 0; k < 16; ++k)
                    if (rgrp[ch * 16 + k] >= 0) qb[qgmm_kidx(a.q, e, r0 + ch * 16 + k, c)] = o[k];
            }
        }
    }
}

/* ------------------------------------------------------------------ tile128
 * Blockwise 128x128: one 256-thread block per tile (blockIdx.x over E*RT*CT); 16
 * threads per row x 8 elements, 16 rows per pass, 8 passes; values stay in registers.
 * Same layout requirements as rowblock. */
template <int FMT>
QGMM_KERNEL void qgmm_kq_tile128(qgmm_kquant a)
{
    QGMM_SHARED float sm_warps[QGMM_MAX_WARPS];
    const int64_t RT = (a.R + 127) / 128, CT = a.C / 128;
    const int tid = QGMM_TID;
    const int cc = (tid % 16) * 8, rr = tid / 16;
    for (int64_t t = QGMM_BID_X; t < a.E * RT * CT; t += QGMM_NBLOCKS_X) {
        const int64_t ct = t % CT, rt = (t / CT) % RT, e = t / (CT * RT);
        float v[8][8];
        float amax = 0.0f;
#pragma unroll
        for (int p = 0; p < 8; ++p) {
            const int64_t r = rt * 128 + p * 16 + rr;
            if (r < a.R) {
                qgmm_kload8(a.x.ptr, a.x_dtype, qgmm_kidx(a.x, e, r, ct * 128 + cc), v[p]);
#pragma unroll
                for (int k = 0; k < 8; ++k) amax = qgmm_amax_combine(amax, qgmm_fabs_f32(v[p][k]));
            }
        }
        amax = qgmm_block_amax(amax, sm_warps);
        const float mult = qgmm_blockwise_scale(amax, FMT);
#pragma unroll
        for (int p = 0; p < 8; ++p) {
            const int64_t r = rt * 128 + p * 16 + rr;
            if (r < a.R) {
                uint8_t o[8];
                qgmm_k_quantize8<FMT>(v[p], mult, o);
                *(uint2 *)((uint8_t *)a.q.ptr + qgmm_kidx(a.q, e, r, ct * 128 + cc)) = qgmm_kpack8(o);
            }
        }
        if (tid == 0) qgmm_kq_store_scale_f32(a, e * a.s.s0 + rt * a.s.s1 + ct * a.s.s2, qgmm_scale_reciprocal(mult));
    }
}

/* Host side: the x / q part of the arguments (only where api/qgmm.h is included). */
#if defined(QGMM_H)
static inline qgmm_kquant qgmm_kquant_base(const qgmm_tensor *x, const qgmm_tensor *q, uint32_t *status)
{
    qgmm_kquant a;
    __builtin_memset(&a, 0, sizeof a);
    a.x = qgmm_kview_of(x, qgmm_tensor_data(x));
    a.q = qgmm_kview_of(q, qgmm_tensor_data(q));
    a.x_dtype = qgmm_kdtype_of(x->dtype);
    a.fmt = (int)q->dtype;
    a.E = x->rank == 3 ? x->shape[0] : 1;
    a.R = x->shape[x->rank - 2];
    a.C = x->shape[x->rank - 1];
    a.G = 1;
    a.tile_rows = 1;
    a.status = status;
    return a;
}
/* 16-byte loads of 8 elements along C are legal for every row of x. */
static inline int qgmm_kquant_x_vec(const qgmm_kquant *a, const qgmm_tensor *x)
{
    const int64_t esz = (int64_t)qgmm_dtype_size(x->dtype);
    return a->x.s2 == 1 && a->C % 8 == 0 && ((uintptr_t)a->x.ptr % 16) == 0 &&
           (a->x.s1 * esz) % 16 == 0 && (a->x.s0 * esz) % 16 == 0;
}
/* 8-byte stores of 8 bytes along C are legal for every row of q. */
static inline int qgmm_kquant_q_vec8(const qgmm_kquant *a)
{
    return a->q.s2 == 1 && a->C % 8 == 0 && ((uintptr_t)a->q.ptr % 8) == 0 && a->q.s1 % 8 == 0 &&
           a->q.s0 % 8 == 0;
}
/* Launches qgmm_kq_transpose (cast along R into R-contiguous q) on the context's stream;
 * shared by the rowwise and MXFP8 casts (defined in backends/cuda/cast_rowwise.cu, whose
 * launches the HIP host emulation rewrites like every launcher file's). */
qgmm_status qgmm_cuda_launch_kq_transpose(qgmm_context *ctx, const qgmm_kquant &a, const qgmm_tensor *x);
#endif

#endif /* QGMM_KERNELS_QUANT_CUH */
