/*
 * qgmm_kernels_quant.cuh — single-source (CUDA/HIP) kernels of every scaled FP8 cast:
 * FP8 rowwise (all variants), MXFP8 (dim0/dim1/3D, FLOOR/RCEIL, plain/blocked scales),
 * FP8 blockwise (1x128, 128x128). Per-element numerics only through kernels/qgmm_*.h
 * (NaN rule included: qgmm_mul_f32), so the bytes equal the CPU reference.
 *
 * Kernels (the launcher in backends/cuda_hip/cast_*.cu picks one):
 *   qgmm_kq_generic     any layout: one warp per scale group (a rectangle of the
 *                       (E,R,C) view), strided loads; the fallback and the oracle shape.
 *   qgmm_kq_rowblock    32/128-element blocks along a contiguous last dim (MX dim0,
 *                       blockwise 1x128): V units of 8 elements per lane loaded together,
 *                       LPB lanes per block (amax by xor-shuffle), the scale once per lane,
 *                       scales straight into the plain or blocked layout.
 *   qgmm_kq_rowreg      rowwise along a contiguous last dim (rowwise, 3D per (e,n)): a
 *                       block per row, the whole row in registers, one barrier per row.
 *   qgmm_kq_rowseg      rowwise scale per (row, group) segment along a contiguous last
 *                       dim (jagged per-group rowwise, short or long rows): a warp per
 *                       segment, 16-byte body (bf16 up to 24 units per lane held in
 *                       registers, else read twice) and scalar head/tail.
 *   qgmm_kq_colring     (sm_90) rowwise scale along R with x read once (colwise, jagged
 *                       colwise, 3D transpose rhs; one or two tensors: the dual form):
 *                       persistent clusters walking the (tensor, expert or group,
 *                       128-byte column strip) segments, each warp's units copied ahead
 *                       through a ring of shared-memory slots, the column amax across the
 *                       cluster through distributed shared memory (split barrier).
 *   qgmm_kq_colamax +
 *   qgmm_kq_colscale    rowwise scale along R elsewhere (f32 x, longer columns, HIP):
 *                       partial column amax with atomicMax, then one scale per column.
 *   qgmm_kq_transpose   cast along R writing R-contiguous output (the transposes): a
 *                       128x64 tile through shared memory, 16-byte stores; MX dim1 and
 *                       blockwise 128x1 (the transposed 1x128) take their amax from the
 *                       tile, rowwise its multiplier from colscale.
 *   qgmm_kq_tile128     blockwise 128x128: a block per tile at a time (resident blocks
 *                       looping over tiles), the tile's units loaded together and held
 *                       as bits in registers, one barrier per tile.
 *   qgmm_kq_tile128t    blockwise 128x128 written R-contiguous (the transposed weights of
 *                       dgrad): as tile128, the tile's fp8 bytes through shared memory.
 * bf16 x in rowblock, rowreg, rowseg, tile128 and tile128t: the packed amax and the one
 * fast-path test per lane of "bf16 units" below.
 */
#ifndef QGMM_KERNELS_QUANT_CUH
#define QGMM_KERNELS_QUANT_CUH

#include "qgmm_kernels_common.cuh"

/* The NVIDIA-only paths (nvcc, not HIP or its host emulation): thread-block clusters with
 * distributed shared memory and cp.async (sm_90, checked at launch), occupancy queries. */
#if defined(__CUDACC__) && !defined(__HIP__)
#define QGMM_K_NVIDIA 1
#endif

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
    /* MX scales in a grouped blocked layout (qgmm_kernels_mx_groups.cuh): glayout 0 none,
     * QGMM_KQ_MG / QGMM_KQ_KG; goffs the token offsets; gplan the launch's plan: word 0 =
     * offsets good, then the padded start row (M) / scale column (K) of each group */
    int glayout;
    const int32_t *goffs;
    int64_t goffs_stride, gG, grows_pad;
    const int32_t *gplan;
    int tile_rows;           /* blockwise: 1 or 128 */
    const int32_t *offs;     /* jagged rowwise: groups along the scaled dim; NULL if none */
    int64_t offs_stride, G;  /* G = 1 without offs */
    uint32_t *status;
    float *table;            /* colscale -> transpose: multipliers (E or G) x C */
    uint32_t *amax_bits;     /* colamax -> colscale: (E or G) x C */
    /* The fused pad (qgmm_kq_transpose only; qgmm_problem.h, qgmm_pad_gather): x holds the
     * tokens unpadded and R counts padded rows. gmap (NULL: no gather), written by an
     * earlier launch (qgmm_kp_gather_plan): word 0 is 1 when the token offsets were good
     * (else nothing may be written); words 2 + 2j and 3 + 2j: for 32-row block j of the
     * padded rows, the x row of its first row and how many of its rows hold tokens (the
     * others are zero). */
    const int32_t *gmap;
} qgmm_kquant;

/* Scale index conventions (host fills s accordingly):
 *   ROWWISE:   outer * s.s0 + inner * s.s1 (outer = g if jagged else e; inner = other idx)
 *   MX plain:  e * s.s0 + o * s.s1 + b * s.s2;   MX blocked: (e*per_expert + off) * s.s0
 *   BLOCKWISE: e * s.s0 + rt * s.s1 + ct * s.s2; along R (128x1 blocks, qgmm_kq_transpose):
 *              e * s.s0 + c * s.s1 + (r / 128) * s.s2 */

QGMM_DEV void qgmm_kq_store_scale_f32(const qgmm_kquant &a, int64_t idx, float v)
{
    ((float *)a.s.ptr)[idx] = v;
}

#define QGMM_KQ_MG 1
#define QGMM_KQ_KG 2

/* Where scale (o, b) of a grouped layout goes (docs/layouts.md §3, §4), -1 when its
 * tokens belong to no group. M-groups: o is the token row; K-groups: b the token block. */
QGMM_DEV int64_t qgmm_kq_mx_group_index(const qgmm_kquant &a, int64_t o, int64_t b)
{
    const int64_t g = qgmm_k_group_of(a.goffs, a.goffs_stride, a.gG, a.glayout == QGMM_KQ_MG ? o : b * 32);
    if (g < 0) return -1;
    const int64_t t0 = g == 0 ? 0 : a.goffs[(g - 1) * a.goffs_stride], start = a.gplan[1 + g];
    if (a.glayout == QGMM_KQ_MG) return (start * a.cols_pad + qgmm_blocked_offset(o - t0, b, a.cols_pad)) * a.s.s0;
    const int64_t width = qgmm_round_up_i64((a.goffs[g * a.goffs_stride] - t0) / 32, 4);
    return (start * a.grows_pad + qgmm_blocked_offset(o, b - t0 / 32, width)) * a.s.s0;
}

/* Byte index of MX scale (e, o, b); -1 when a grouped layout has no place for it. */
QGMM_DEV int64_t qgmm_kq_mx_scale_index(const qgmm_kquant &a, int64_t e, int64_t o, int64_t b)
{
    if (a.glayout) return qgmm_kq_mx_group_index(a, o, b);
    if (a.blocked) return (e * a.per_expert + qgmm_blocked_offset(o, b, a.cols_pad)) * a.s.s0;
    return e * a.s.s0 + o * a.s.s1 + b * a.s.s2;
}

/* A grouped-layout launch whose plan found bad offsets writes nothing (block-uniform). */
QGMM_DEV int qgmm_kq_groups_bad(const qgmm_kquant &a) { return a.glayout && a.gplan[0] == 0; }

/* M-groups from a kernel that walks rows: the token rows [lo, hi) of the last group looked
 * up sit at padded rows r + shift (none: no group), so a thread whose next row falls in
 * the same group skips the search. The padded start is a multiple of 128, so the byte is
 * qgmm_blocked_offset(r + shift, b, cols_pad), the same as start * cols_pad plus the
 * offset inside the group. */
typedef struct qgmm_kq_mg_cache {
    int64_t lo, hi, shift;
    int none;
} qgmm_kq_mg_cache;

QGMM_DEV void qgmm_kq_mg_lookup(const qgmm_kquant &a, int64_t r, qgmm_kq_mg_cache &k)
{
    if (r < k.lo || r >= k.hi) {
        const int64_t g = qgmm_k_group_of(a.goffs, a.goffs_stride, a.gG, r);
        k.none = g < 0;
        k.lo = g < 0 ? a.goffs[(a.gG - 1) * a.goffs_stride] : g == 0 ? 0 : a.goffs[(g - 1) * a.goffs_stride];
        k.hi = g < 0 ? a.R : a.goffs[g * a.goffs_stride];
        k.shift = g < 0 ? 0 : a.gplan[1 + g] - k.lo;
    }
}

/* Row r's scale b, r looked up in k (qgmm_kq_mg_lookup) first. */
QGMM_DEV void qgmm_kq_store_mx_scale_mg(const qgmm_kquant &a, int64_t r, int64_t b, uint8_t code, const qgmm_kq_mg_cache &k)
{
    if (!k.none) ((uint8_t *)a.s.ptr)[qgmm_blocked_offset(r + k.shift, b, a.cols_pad) * a.s.s0] = code;
}

QGMM_DEV void qgmm_kq_store_mx_scale(const qgmm_kquant &a, int64_t e, int64_t o, int64_t b, uint8_t code)
{
    const int64_t i = qgmm_kq_mx_scale_index(a, e, o, b);
    if (i >= 0) ((uint8_t *)a.s.ptr)[i] = code;
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
    if (qgmm_kq_groups_bad(a)) return;
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
                qgmm_kq_store_mx_scale(a, e, mx_o, mx_b, code);
            else if (a.kind == QGMM_KQ_ROWWISE)
                qgmm_kq_store_scale_f32(a, sidx, a.recip ? qgmm_scale_reciprocal(mult) : mult);
            else
                qgmm_kq_store_scale_f32(a, sidx, qgmm_scale_reciprocal(mult));
        }
    }
}

/* ------------------------------------------------------------------ units
 * A unit is 8 consecutive elements of x held as raw bits: one 16-byte load for bf16, two
 * for f32. The fast kernels issue all their units' loads before the first use and widen
 * to f32 only when a value is needed, so the registers hold bits, not floats. */
template <int XF32> struct qgmm_kq_unit { uint4 w[XF32 ? 2 : 1]; };

template <int XF32>
QGMM_DEV void qgmm_kq_unit_load(qgmm_kq_unit<XF32> &u, const void *p, int64_t i)
{
    if (XF32) {
        const uint4 *s = (const uint4 *)((const float *)p + i);
        u.w[0] = QGMM_LDG(s);
        u.w[XF32 ? 1 : 0] = QGMM_LDG(s + 1);
    } else {
        u.w[0] = QGMM_LDG((const uint4 *)((const uint16_t *)p + i));
    }
}

template <int XF32>
QGMM_DEV void qgmm_kq_unit_f32(const qgmm_kq_unit<XF32> &u, float v[8])
{
    if (XF32) {
        const uint4 a = u.w[0], b = u.w[XF32 ? 1 : 0];
        v[0] = qgmm_bits_f32(a.x); v[1] = qgmm_bits_f32(a.y); v[2] = qgmm_bits_f32(a.z); v[3] = qgmm_bits_f32(a.w);
        v[4] = qgmm_bits_f32(b.x); v[5] = qgmm_bits_f32(b.y); v[6] = qgmm_bits_f32(b.z); v[7] = qgmm_bits_f32(b.w);
    } else {
        const uint32_t w[4] = {u.w[0].x, u.w[0].y, u.w[0].z, u.w[0].w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            v[2 * k] = qgmm_bf16_to_f32((uint16_t)(w[k] & 0xFFFFu));
            v[2 * k + 1] = qgmm_bf16_to_f32((uint16_t)(w[k] >> 16));
        }
    }
}

template <int XF32>
QGMM_DEV float qgmm_kq_unit_amax(const qgmm_kq_unit<XF32> &u, float amax)
{
    float v[8];
    qgmm_kq_unit_f32<XF32>(u, v);
#pragma unroll
    for (int k = 0; k < 8; ++k) amax = qgmm_amax_combine(amax, qgmm_fabs_f32(v[k]));
    return amax;
}

/* Packed magnitude max of the bf16 pairs: for |x| (sign cleared) the bit order is the
 * value order and every NaN sorts above inf, so the 16-bit unsigned max of each half is
 * qgmm_amax_combine's value (which NaN payload survives aside, as for every parallel
 * amax). */
QGMM_DEV uint32_t qgmm_kq_max_u16x2(uint32_t a, uint32_t b)
{
#if defined(__CUDA_ARCH__)
    return __vmaxu2(a, b);
#else
    const uint32_t lo = (a & 0xFFFFu) > (b & 0xFFFFu) ? (a & 0xFFFFu) : (b & 0xFFFFu);
    const uint32_t hi = (a >> 16) > (b >> 16) ? (a >> 16) : (b >> 16);
    return lo | (hi << 16);
#endif
}

QGMM_DEV uint32_t qgmm_kq_min_u16x2(uint32_t a, uint32_t b)
{
#if defined(__CUDA_ARCH__)
    return __vminu2(a, b);
#else
    const uint32_t lo = (a & 0xFFFFu) < (b & 0xFFFFu) ? (a & 0xFFFFu) : (b & 0xFFFFu);
    const uint32_t hi = (a >> 16) < (b >> 16) ? (a >> 16) : (b >> 16);
    return lo | (hi << 16);
#endif
}

/* ------------------------------------------------------------------ bf16 units
 * bf16 x without widening every value for the amax: a lane folds the magnitude bits of its
 * pairs (w & 0x7FFF7FFF) into a packed 16-bit max (the amax, qgmm_kq_max_u16x2) and a
 * packed 16-bit min of (magnitude - 1), in which zero wraps to 0xFFFF (so it is the
 * smallest non-zero magnitude, minus one). qgmm_kq_bf16_fast decides from the two, once
 * for all the lane's values, whether every product x * mu is zero or a finite f32 normal
 * (x finite and rounded multiplication monotonic in |x|: the largest and the smallest
 * non-zero product bound all the others); then qgmm_mul_f32 is the plain product and the
 * hardware conversion equals qgmm_f32_to_fp8 (qgmm_k_to_fp8x8), so qgmm_kq_bf16_cast casts
 * a unit with one multiply per value and one conversion per pair. Otherwise (NaN, inf,
 * products that overflow or fall below 2^-126, e4m3fnuz, non-NVIDIA targets) every value
 * takes qgmm_quantize_value through qgmm_k_quantize8. */
QGMM_DEV void qgmm_kq_bf16_stat_word(uint32_t w, uint32_t &mx, uint32_t &mn)
{
    const uint32_t m = w & 0x7FFF7FFFu;
    mx = qgmm_kq_max_u16x2(mx, m);
    /* each half minus one, 0 -> 0xFFFF (halves <= 0x7FFF: no borrow between them) */
    mn = qgmm_kq_min_u16x2(mn, ((m | 0x80008000u) - 0x00010001u) ^ 0x80008000u);
}

QGMM_DEV void qgmm_kq_bf16_stat(const uint4 &u, uint32_t &mx, uint32_t &mn)
{
    qgmm_kq_bf16_stat_word(u.x, mx, mn);
    qgmm_kq_bf16_stat_word(u.y, mx, mn);
    qgmm_kq_bf16_stat_word(u.z, mx, mn);
    qgmm_kq_bf16_stat_word(u.w, mx, mn);
}

/* The packed statistics folded to one 16-bit max (hx) and min (hn). */
QGMM_DEV uint32_t qgmm_kq_u16_hi(uint32_t m) { return (m >> 16) > (m & 0xFFFFu) ? (m >> 16) : (m & 0xFFFFu); }
QGMM_DEV uint32_t qgmm_kq_u16_lo(uint32_t m) { return (m >> 16) < (m & 0xFFFFu) ? (m >> 16) : (m & 0xFFFFu); }

template <int FMT>
QGMM_DEV int qgmm_kq_bf16_fast(uint32_t hx, uint32_t hn, float mu)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if (FMT == QGMM_FMT_E4M3FN || FMT == QGMM_FMT_E5M2) {
        const float pmax = qgmm_bits_f32(hx << 16) * mu;
        const float pmin = qgmm_bits_f32((hn + 1u) << 16) * mu; /* unused when hn is 0xFFFF (all zero) */
        return hx < 0x7F80u && pmax <= 3.40282347e38f && (hn == 0xFFFFu || pmin >= 1.17549435e-38f);
    }
#endif
    (void)hx;
    (void)hn;
    (void)mu;
    return 0;
}

/* A bf16 unit scaled by mu to 8 fp8 bytes (little-endian words): the fast form where
 * qgmm_kq_bf16_fast said so, else the header rule per value. */
template <int FMT>
QGMM_DEV uint2 qgmm_kq_bf16_cast(const uint4 &u, float mu, int fast)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if ((FMT == QGMM_FMT_E4M3FN || FMT == QGMM_FMT_E5M2) && fast) {
        const uint32_t w[4] = {u.x, u.y, u.z, u.w};
        uint32_t h[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            h[k] = qgmm_k_cvt_pair<FMT>(qgmm_bits_f32(w[k] << 16) * mu, qgmm_bits_f32(w[k] & 0xFFFF0000u) * mu);
        }
        return make_uint2(h[0] | (h[1] << 16), h[2] | (h[3] << 16));
    }
#endif
    (void)fast;
    qgmm_kq_unit<0> x;
    x.w[0] = u;
    float v[8];
    uint8_t o[8];
    qgmm_kq_unit_f32<0>(x, v);
    qgmm_k_quantize8<FMT>(v, mu, o);
    return qgmm_kpack8(o);
}

/* Eight widened values scaled by mu to fp8 bytes: the hardware pair conversion where
 * qgmm_kq_bf16_fast held for every value of their block, else the header rule. */
template <int FMT>
QGMM_DEV void qgmm_kq_cast8(const float v[8], float mu, int fast, uint8_t o[8])
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if ((FMT == QGMM_FMT_E4M3FN || FMT == QGMM_FMT_E5M2) && fast) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const unsigned short b = qgmm_k_cvt_pair<FMT>(v[2 * k] * mu, v[2 * k + 1] * mu);
            o[2 * k] = (uint8_t)(b & 0xFFu);
            o[2 * k + 1] = (uint8_t)(b >> 8);
        }
        return;
    }
#endif
    (void)fast;
    qgmm_k_quantize8<FMT>(v, mu, o);
}

/* bf16 bits h folded into a running min of (magnitude - 1) mod 2^16 (zero -> 0xFFFF), the
 * packed statistic qgmm_kq_bf16_fast reads. */
QGMM_DEV uint32_t qgmm_kq_min_mag1(uint32_t mn, uint32_t h)
{
    const uint32_t t = ((h & 0x7FFFu) + 0xFFFFu) & 0xFFFFu;
    return t < mn ? t : mn;
}

/* ------------------------------------------------------------------ rowblock
 * Scale blocks along a contiguous last dim (MX dim0: 32 elements, blockwise 1x128): a
 * lane owns V consecutive units (8V elements, its V loads issued together) and LPB
 * consecutive lanes form one scale block (LPB * 8V elements: MX 2 x 2 units, 1x128 8 x 2),
 * so the block amax takes log2(LPB) xor-shuffles and each lane computes the block's scale
 * once per V units. 2D launch: x = TX lanes along the row (TX a multiple of 32, so a
 * warp never leaves a row), y = rows, rows += gridDim.y * TY. Requires: x.s2 == q.s2 ==
 * 1, C % (8 * V * LPB) == 0, 16-byte aligned x rows, 8-byte aligned q rows, E*R < 2^31.
 * kind MX or BLOCKWISE with tile_rows 1. */
template <int LPB, int V, int FMT, int XF32>
QGMM_KERNEL void qgmm_kq_rowblock(qgmm_kquant a)
{
    if (qgmm_kq_groups_bad(a)) return;
    const int tx = QGMM_TID % QGMM_NTHREADS_X, ty = QGMM_TID / QGMM_NTHREADS_X;
    const int ty_n = QGMM_NTHREADS / QGMM_NTHREADS_X;
    const int64_t lanes = a.C / (8 * V);
    const int64_t lc = QGMM_BID_X * QGMM_NTHREADS_X + tx;
    const int valid = lc < lanes;
    const uint32_t rows = (uint32_t)(a.E * a.R), R = (uint32_t)a.R;
    const uint32_t step = (uint32_t)QGMM_NBLOCKS_Y * ty_n;
    uint8_t *qb = (uint8_t *)a.q.ptr;
    const int64_t c = lc * 8 * V;
    qgmm_kq_mg_cache mgc = {0, 0, 0, 0}; /* empty: the first row looks its group up */
    uint32_t row = (uint32_t)QGMM_BID_Y * ty_n + ty;
    uint32_t e = row / R, r = row - e * R; /* then stepped by (de, dr) without a division */
    const uint32_t de = step / R, dr = step - de * R;
    for (; row < rows; row += step) {
        qgmm_kq_unit<XF32> u[V] = {}; /* zero only for the host emulation's compiler */
        float amax = 0.0f;
        uint32_t hx = 0, hn = 0xFFFFFFFFu; /* bf16: the lane's packed max / min (qgmm_kq_bf16_stat) */
        if (valid) {
            const int64_t xi = qgmm_kidx(a.x, e, r, c);
#pragma unroll
            for (int k = 0; k < V; ++k) qgmm_kq_unit_load<XF32>(u[k], a.x.ptr, xi + 8 * k);
            /* the row's group while the loads are in flight */
            if (a.glayout == QGMM_KQ_MG && (lc % LPB) == 0) qgmm_kq_mg_lookup(a, r, mgc);
            if (XF32) {
#pragma unroll
                for (int k = 0; k < V; ++k) amax = qgmm_kq_unit_amax<XF32>(u[k], amax);
            } else {
#pragma unroll
                for (int k = 0; k < V; ++k) qgmm_kq_bf16_stat(u[k].w[0], hx, hn);
                hx = qgmm_kq_u16_hi(hx);
                hn = qgmm_kq_u16_lo(hn);
                amax = qgmm_bf16_to_f32((uint16_t)hx);
            }
        }
#pragma unroll
        for (int m = 1; m < LPB; m <<= 1) amax = qgmm_amax_combine(amax, QGMM_SHFL_XOR_F32(amax, m));
        if (valid) {
            float mult;
            if (a.kind == QGMM_KQ_MX) {
                const uint8_t code = qgmm_mx_scale(amax, FMT, a.rceil);
                mult = qgmm_e8m0_reciprocal(code);
                if ((lc % LPB) == 0) {
                    if (a.glayout == QGMM_KQ_MG) qgmm_kq_store_mx_scale_mg(a, r, c / (8 * V * LPB), code, mgc);
                    else qgmm_kq_store_mx_scale(a, e, r, c / (8 * V * LPB), code);
                }
            } else {
                mult = qgmm_blockwise_scale(amax, FMT);
                if ((lc % LPB) == 0)
                    qgmm_kq_store_scale_f32(a, e * a.s.s0 + r * a.s.s1 + (c / 128) * a.s.s2,
                                            qgmm_scale_reciprocal(mult));
            }
            const int64_t qi = qgmm_kidx(a.q, e, r, c);
            if (XF32) {
#pragma unroll
                for (int k = 0; k < V; ++k) {
                    float v[8];
                    uint8_t out[8];
                    qgmm_kq_unit_f32<XF32>(u[k], v);
                    qgmm_k_quantize8<FMT>(v, mult, out);
                    *(uint2 *)(qb + qi + 8 * k) = qgmm_kpack8(out);
                }
            } else {
                const int fast = qgmm_kq_bf16_fast<FMT>(hx, hn, mult);
#pragma unroll
                for (int k = 0; k < V; ++k) *(uint2 *)(qb + qi + 8 * k) = qgmm_kq_bf16_cast<FMT>(u[k].w[0], mult, fast);
            }
        }
        r += dr;
        e += de;
        if (r >= R) { r -= R; ++e; }
    }
}

/* ------------------------------------------------------------------ rowreg
 * Rowwise along contiguous C with the whole row in registers: one block per row (64, 128
 * or 256 threads), unit j of the row in thread j % NT, slot j / NT < U; every load of
 * the row is issued before the first is used, the row amax is a warp shuffle plus one
 * shared slot per warp (two alternating slot sets: one barrier per row), then the
 * multiplier, the cast from registers and 8-byte stores. Blocks loop over rows (a grid
 * of whole residency). Requires x.s2 == q.s2 == 1, C % 8 == 0, 16-byte aligned x rows,
 * 8-byte aligned q rows, C / 8 <= U * NT. */
template <int FMT, int XF32, int U>
QGMM_KERNEL void qgmm_kq_rowreg(qgmm_kquant a)
{
    QGMM_SHARED float part[2][QGMM_MAX_WARPS];
    const int tid = QGMM_TID, nt = QGMM_NTHREADS;
    const int lane = tid % QGMM_WARP, warp = tid / QGMM_WARP, nw = (nt + QGMM_WARP - 1) / QGMM_WARP;
    const int64_t units = a.C / 8, rows = a.E * a.R;
    uint8_t *qb = (uint8_t *)a.q.ptr;
    int buf = 0;
    const int64_t de = QGMM_NBLOCKS_X / a.R, dr = QGMM_NBLOCKS_X - de * a.R;
    int64_t e = QGMM_BID_X / a.R, r = QGMM_BID_X - e * a.R; /* (e, r) of row, stepped by (de, dr) */
    for (int64_t row = QGMM_BID_X; row < rows; row += QGMM_NBLOCKS_X, e += de, r += dr) {
        if (r >= a.R) { r -= a.R; ++e; }
        const int64_t xrow = e * a.x.s0 + r * a.x.s1, qrow = e * a.q.s0 + r * a.q.s1;
        qgmm_kq_unit<XF32> u[U] = {}; /* zero only for the host emulation's compiler: every use is loaded */
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const int64_t j = tid + (int64_t)k * nt;
            if (j < units) qgmm_kq_unit_load<XF32>(u[k], a.x.ptr, xrow + 8 * j);
        }
        float amax = 0.0f;
        uint32_t hx = 0, hn = 0xFFFFFFFFu; /* bf16: the thread's packed max / min (qgmm_kq_bf16_stat) */
        if (XF32) {
#pragma unroll
            for (int k = 0; k < U; ++k)
                if (tid + (int64_t)k * nt < units) amax = qgmm_kq_unit_amax<XF32>(u[k], amax);
        } else {
#pragma unroll
            for (int k = 0; k < U; ++k)
                if (tid + (int64_t)k * nt < units) qgmm_kq_bf16_stat(u[k].w[0], hx, hn);
            hx = qgmm_kq_u16_hi(hx);
            hn = qgmm_kq_u16_lo(hn);
            amax = qgmm_bf16_to_f32((uint16_t)hx);
        }
        amax = qgmm_warp_amax(amax);
        if (lane == 0) part[buf][warp] = amax;
        QGMM_SYNC();
        amax = part[buf][0];
        for (int w = 1; w < nw; ++w) amax = qgmm_amax_combine(amax, part[buf][w]);
        buf ^= 1;
        const float mult = qgmm_kq_rowwise_mult(amax, FMT, a.pow2);
        const int fast = XF32 ? 0 : qgmm_kq_bf16_fast<FMT>(hx, hn, mult);
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const int64_t j = tid + (int64_t)k * nt;
            if (j < units) {
                if (XF32) {
                    float v[8];
                    uint8_t o[8];
                    qgmm_kq_unit_f32<XF32>(u[k], v);
                    qgmm_k_quantize8<FMT>(v, mult, o);
                    *(uint2 *)(qb + qrow + 8 * j) = qgmm_kpack8(o);
                } else {
                    *(uint2 *)(qb + qrow + 8 * j) = qgmm_kq_bf16_cast<FMT>(u[k].w[0], mult, fast);
                }
            }
        }
        if (tid == 0)
            qgmm_kq_store_scale_f32(a, e * a.s.s0 + r * a.s.s1, a.recip ? qgmm_scale_reciprocal(mult) : mult);
    }
}

/* ------------------------------------------------------------------ rowseg
 * Rowwise along contiguous C: one warp per (e, g, r) segment [j0, j1): scalar head and
 * tail, a 16-byte body; a bf16 body of at most HOLD units per lane is loaded once into
 * registers (all loads issued first), a longer one (and any body when HOLD is 0: f32 / f16
 * x) is read for the amax and again for the cast. Requires x.s2 == q.s2 == 1, 16-byte aligned x rows and
 * 8-byte aligned q rows (C % 8 == 0). */
template <int FMT, int HOLD>
QGMM_KERNEL void qgmm_kq_rowseg(qgmm_kquant a)
{
    if (a.offs && !qgmm_block_offsets_ok(a.offs, a.offs_stride, a.G, a.C, 1, a.status, QGMM_BID_X == 0))
        return;
    const int lane = QGMM_TID % QGMM_WARP;
    const int64_t wpb = QGMM_NTHREADS / QGMM_WARP;
    const int64_t n = a.E * a.G * a.R;
    const int narrow = n <= 0x7FFFFFFF; /* segment ids in 32 bits: cheaper divisions */
    for (int64_t gid = QGMM_BID_X * wpb + QGMM_TID / QGMM_WARP; gid < n; gid += QGMM_NBLOCKS_X * wpb) {
        int64_t r, g, e;
        if (narrow) {
            const uint32_t id = (uint32_t)gid, R = (uint32_t)a.R, G = (uint32_t)a.G, eg = id / R;
            r = id - eg * R;
            e = eg / G;
            g = eg - (uint32_t)e * G;
        } else {
            r = gid % a.R;
            g = (gid / a.R) % a.G;
            e = gid / (a.R * a.G);
        }
        int64_t j0 = 0, j1 = a.C;
        if (a.offs) {
            j0 = g == 0 ? 0 : a.offs[(g - 1) * a.offs_stride];
            j1 = a.offs[g * a.offs_stride];
        }
        int64_t ja = (j0 + 7) & ~(int64_t)7, jb = j1 & ~(int64_t)7;
        if (ja > j1) ja = j1;
        if (jb < ja) jb = ja;
        const int64_t xrow = e * a.x.s0 + r * a.x.s1, qrow = e * a.q.s0 + r * a.q.s1;
        const uint4 *xb = (const uint4 *)((const uint16_t *)a.x.ptr + xrow + ja); /* bf16 body */
        const int bf16 = a.x_dtype == QGMM_K_BF16;
        const int nb = (int)((jb - ja) / 8); /* body units */
        const int held = HOLD > 0 && bf16 && nb <= QGMM_WARP * HOLD;
        /* bf16 body of at most HOLD units per lane: held in registers (unit lane + W k), its
         * loads issued before the edges are read */
        uint4 ur[HOLD > 0 ? HOLD : 1] = {}; /* zero only for the host emulation's compiler */
        if (held) {
#pragma unroll
            for (int k = 0; k < HOLD; ++k)
                if (lane + QGMM_WARP * k < nb) ur[k] = QGMM_LDG(xb + lane + QGMM_WARP * k);
        }
        float amax = 0.0f;
        for (int64_t j = j0 + lane; j < ja; j += QGMM_WARP)
            amax = qgmm_amax_combine(amax, qgmm_fabs_f32(qgmm_kload(a.x.ptr, a.x_dtype, xrow + j)));
        for (int64_t j = jb + lane; j < j1; j += QGMM_WARP)
            amax = qgmm_amax_combine(amax, qgmm_fabs_f32(qgmm_kload(a.x.ptr, a.x_dtype, xrow + j)));
        uint32_t hx = 0, hn = 0xFFFFFFFFu; /* bf16 body: the lane's packed max / min (qgmm_kq_bf16_stat) */
        if (held) {
#pragma unroll
            for (int k = 0; k < HOLD; ++k)
                if (lane + QGMM_WARP * k < nb) qgmm_kq_bf16_stat(ur[k], hx, hn);
        } else if (bf16) {
            int k = lane;
            for (; k + QGMM_WARP < nb; k += 2 * QGMM_WARP) { /* two loads in flight */
                const uint4 u0 = QGMM_LDG(xb + k), u1 = QGMM_LDG(xb + k + QGMM_WARP);
                qgmm_kq_bf16_stat(u0, hx, hn);
                qgmm_kq_bf16_stat(u1, hx, hn);
            }
            if (k < nb) qgmm_kq_bf16_stat(QGMM_LDG(xb + k), hx, hn);
        } else {
            for (int64_t j = ja + 8 * lane; j < jb; j += 8 * QGMM_WARP) {
                float v[8];
                qgmm_kload8(a.x.ptr, a.x_dtype, xrow + j, v);
#pragma unroll
                for (int k = 0; k < 8; ++k) amax = qgmm_amax_combine(amax, qgmm_fabs_f32(v[k]));
            }
        }
        if (bf16) {
            hx = qgmm_kq_u16_hi(hx);
            hn = qgmm_kq_u16_lo(hn);
            amax = qgmm_amax_combine(amax, qgmm_bf16_to_f32((uint16_t)hx));
        }
        amax = qgmm_warp_amax(amax);
        const float mult = qgmm_kq_rowwise_mult(amax, FMT, a.pow2);
        uint8_t *q = (uint8_t *)a.q.ptr;
        for (int64_t j = j0 + lane; j < ja; j += QGMM_WARP)
            q[qrow + j] = qgmm_quantize_value(qgmm_kload(a.x.ptr, a.x_dtype, xrow + j), mult, FMT);
        for (int64_t j = jb + lane; j < j1; j += QGMM_WARP)
            q[qrow + j] = qgmm_quantize_value(qgmm_kload(a.x.ptr, a.x_dtype, xrow + j), mult, FMT);
        uint2 *qo = (uint2 *)(q + qrow + ja);
        const int fast = bf16 ? qgmm_kq_bf16_fast<FMT>(hx, hn, mult) : 0;
        if (held) {
#pragma unroll
            for (int k = 0; k < HOLD; ++k)
                if (lane + QGMM_WARP * k < nb) qo[lane + QGMM_WARP * k] = qgmm_kq_bf16_cast<FMT>(ur[k], mult, fast);
        } else if (bf16) {
            int k = lane;
            for (; k + QGMM_WARP < nb; k += 2 * QGMM_WARP) {
                const uint4 u0 = QGMM_LDG(xb + k), u1 = QGMM_LDG(xb + k + QGMM_WARP);
                qo[k] = qgmm_kq_bf16_cast<FMT>(u0, mult, fast);
                qo[k + QGMM_WARP] = qgmm_kq_bf16_cast<FMT>(u1, mult, fast);
            }
            if (k < nb) qo[k] = qgmm_kq_bf16_cast<FMT>(QGMM_LDG(xb + k), mult, fast);
        } else {
            for (int64_t j = ja + 8 * lane; j < jb; j += 8 * QGMM_WARP) {
                float v[8];
                uint8_t o[8];
                qgmm_kload8(a.x.ptr, a.x_dtype, xrow + j, v);
                qgmm_k_quantize8<FMT>(v, mult, o);
                *(uint2 *)(q + qrow + j) = qgmm_kpack8(o);
            }
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
    int64_t r = rbeg + sub;
    if (!a.offs && vec) {
        /* four rows' loads in flight per thread */
        for (; r + 3 * nsub < rend; r += 4 * nsub) {
            float v[4][8];
#pragma unroll
            for (int u = 0; u < 4; ++u) qgmm_kload8(a.x.ptr, a.x_dtype, qgmm_kidx(a.x, e, r + u * nsub, c), v[u]);
#pragma unroll
            for (int u = 0; u < 4; ++u)
#pragma unroll
                for (int k = 0; k < 8; ++k) m[k] = qgmm_amax_combine(m[k], qgmm_fabs_f32(v[u][k]));
        }
    }
    for (; r < rend; r += nsub) {
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

/* ------------------------------------------------------------------ colring (sm_90)
 * Rowwise scale along R with x read once (colwise, jagged colwise, 3D transpose rhs; one
 * or two tensors: the dual form), bf16 x, q R-contiguous. A segment is (tensor of the
 * pair, slot = expert or group, 16 >> LW strips of 64 columns: each strip the 128 bytes of
 * one line of x); the block's W = QGMM_KQ_PIPE_WARPS warps are split among the strips,
 * 2^LW warps each (LW 4: one strip; 3 or 2: short groups, so that one exchange and one
 * barrier serve 2 or 4 strips). In each strip the rows [r0, r1) from r0 rounded down to
 * 32 are cut into pieces of 128 rows, block `rank` of a cluster of CS owning pieces rank,
 * rank + CS, ... (each 128-byte run of a column of q is written by one block), each piece
 * four units of 32 rows (4 KiB). A persistent grid (one cluster per resident slot) walks
 * the segments cluster, cluster + clusters, ... Below, a segment's units are those of the
 * warp's strip and a warp's place is its place among the strip's 2^LW warps.
 *
 * The ring: unit k of a segment belongs to the strip's warp (k + rot) % 2^LW (rot
 * carries on from the block's previous segment, so the units of short or uneven segments
 * go round the warps), which alone copies it (cp.async, each lane its own 16-byte runs;
 * rows outside [r0, r1) not copied, never read), takes its amax and casts it. Warp w owns
 * slots w, w + W, ..., w + W (NSW - 1) and takes its units of the block's segments as one
 * stream, stream unit u in slot w + W (u % NSW); a slot freed by a cast is refilled at
 * once with the warp's next unit of the stream, so the next segments' units are in
 * flight (or landed) through this one's amax, exchange and cast. The warp's share pw of
 * a segment varies with it (jagged groups, the dual form's two tensors, the rank, the
 * rotation): a share that fits the ring (pw <= NSW) is resident, all its units landed
 * before its amax; a longer one (the plan allows one unit more than the ring holds, and
 * a group far above the mean takes more) passes through the ring twice, once for the amax
 * (each unit consumed and its slot refilled as it lands) and once for the cast (an L2
 * re-read). One cp.async group per unit: waiting until (units issued after the one
 * needed) remain completes it.
 *
 * The exchange: lane l holds the packed 16-bit max of |x| of its two columns (bit order of
 * magnitudes is value order, NaN above inf); each warp publishes it into the segment's
 * set in shared memory (one word per column of its strip, shared-memory atomicMax; three
 * sets in turn) and the cluster barrier is split: arrive after the publish, wait just before
 * the multipliers are needed, and in between the warp works. After the wait every lane
 * reads its two columns' words of the CS blocks (distributed shared memory, loads issued
 * together) and computes its two multipliers itself; no block barrier. Where two
 * segments' shares fit the ring together (rank 0's, cluster-uniform), the amax of segment
 * j + 1 is taken before segment j's wait and published right after it, so each barrier
 * overlaps the other segment's work:
 *   amax(0), publish, arrive; per j: amax(j + 1), wait(j), multipliers(j), publish(j + 1),
 *   arrive, cast(j).
 * Otherwise segment j's wait and cast come first and j + 1's amax after them. Set j % 3 is
 * zeroed (each strip's words by the strip's first warp) after wait(j + 1) (every reader
 * of it has arrived by then) and published into again only after wait(j + 2).
 * The cast (qgmm_kq_unit_cast) writes whole 32-byte sectors of q where a unit's 32 rows
 * are all in the segment and q is 32-byte aligned, 16-byte runs or bytes at group edges.
 * One block of W warps per SM (the slots fill its shared memory). Requires bf16 x with
 * x.s2 == 1, 16-byte aligned rows, C % 8 == 0, q.s1 == 1, 1 <= NSW <= 8. */
#define QGMM_KQ_PIECE 128
#define QGMM_KQ_UNIT 32
#define QGMM_KQ_UNIT_BYTES (QGMM_KQ_UNIT * 128)
/* Warps per block (a power of two; the ring addresses its slots by warp). 16 warps of 3
 * slots measured as fast as 8 of 7 on the jagged casts and faster on the 3D weights
 * (docs/backends-cuda.md, colring). */
#define QGMM_KQ_PIPE_WARPS 16
/* Strips (of 64 columns) per segment at most: each strip takes 16 / strips warps. */
#define QGMM_KQ_STRIPS_MAX 4

typedef struct qgmm_kq_pair {
    qgmm_kquant t[2];
} qgmm_kq_pair;

#if defined(QGMM_K_NVIDIA)
QGMM_DEV void qgmm_kq_cp16(void *smem, const void *gmem)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
#else
    *(uint4 *)smem = *(const uint4 *)gmem;
#endif
}
QGMM_DEV void qgmm_kq_cp_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}
/* The whole cluster's barrier (barrier.cluster) split in its two halves: arrive releases
 * this thread's shared-memory writes, wait returns once every thread of the cluster has
 * arrived and acquires theirs. Every thread of the cluster calls them alternately. */
QGMM_DEV void qgmm_kq_cluster_arrive()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
#endif
}
QGMM_DEV void qgmm_kq_cluster_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}
/* The two 32-bit words (8-byte aligned) at the same shared-memory offset as `p` in block
 * `rank` of the cluster. */
QGMM_DEV uint2 qgmm_kq_dsmem_u32x2(const uint32_t *p, unsigned rank)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    unsigned s = (unsigned)__cvta_generic_to_shared(p), d;
    uint2 v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(d) : "r"(s), "r"(rank));
    asm volatile("ld.shared::cluster.v2.u32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(d) : "memory");
    return v;
#else
    (void)rank;
    return make_uint2(p[0], p[1]);
#endif
}
QGMM_DEV unsigned qgmm_kq_cluster_rank()
{
    unsigned r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
#endif
    return r;
}
QGMM_DEV unsigned qgmm_kq_cluster_size()
{
    unsigned n = 1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(n));
#endif
    return n;
}

/* 32-bit fields (the launcher keeps R, C and each tensor's segments under 2^30): the
 * state of two segments (current and next) is held by every thread, so its width is
 * registers. */
typedef struct qgmm_kq_seg {
    int t;                     /* tensor of the pair */
    int slot, e, c0, r0, r1, base;
    int nl, nl0;               /* this block's units; a bound on any block's (rank 0's pieces) */
    int rot;                   /* warp of local unit 0 (set by the caller) */
} qgmm_kq_seg;

/* Segment s of the launch (tensors in order, then slots, then strips); 0 past the end.
 * nl counts the block's units up to r1 (the last piece's units past r1 are not taken). */
QGMM_DEV int qgmm_kq_seg_of(const qgmm_kq_pair &pr, int n, int64_t s64, unsigned rank, unsigned cs, int lw,
                            qgmm_kq_seg &g)
{
    int s = (int)(s64 < 0x7FFFFFFF ? s64 : 0x7FFFFFFF);
    const int wide = 64 * (QGMM_KQ_PIPE_WARPS >> lw); /* columns of a segment */
    for (int t = 0; t < n; ++t) {
        const qgmm_kquant &a = pr.t[t];
        const int strips = (int)((a.C + wide - 1) / wide), nseg = strips * (int)(a.offs ? a.G : a.E);
        if (s >= nseg) {
            s -= nseg;
            continue;
        }
        g.t = t;
        g.slot = s / strips;
        g.c0 = (s - g.slot * strips) * wide + 64 * (int)(QGMM_TID / 32 >> lw); /* this warp's strip */
        g.e = a.offs ? 0 : g.slot;
        g.r0 = 0;
        g.r1 = (int)a.R;
        if (a.offs) {
            g.r0 = g.slot == 0 ? 0 : a.offs[(int64_t)(g.slot - 1) * a.offs_stride];
            g.r1 = a.offs[(int64_t)g.slot * a.offs_stride];
        }
        g.base = g.r0 & ~31;
        const int np = g.r1 > g.r0 ? (g.r1 - g.base + QGMM_KQ_PIECE - 1) / QGMM_KQ_PIECE : 0;
        g.nl = np > (int)rank ? (np - (int)rank + (int)cs - 1) / (int)cs * 4 : 0;
        if (np > 0 && (np - 1) % (int)cs == (int)rank) /* the last piece: its units up to r1 */
            g.nl -= 4 - (g.r1 - g.base - (np - 1) * QGMM_KQ_PIECE + QGMM_KQ_UNIT - 1) / QGMM_KQ_UNIT;
        g.nl0 = (np + (int)cs - 1) / (int)cs * 4;
        if (g.c0 >= a.C) g.nl = 0; /* a strip past C: no units (nl0, the cluster's bound, kept) */
        g.rot = 0;
        return 1;
    }
    return 0;
}

/* First row of local unit k: the block's pieces of 128 rows are rank, rank + CS, ...,
 * four units each, so every 128-byte run of a column of q is written by one block. */
QGMM_DEV int qgmm_kq_unit_row(const qgmm_kq_seg &g, int k, unsigned rank, unsigned cs)
{
    return g.base + ((k >> 2) * (int)cs + (int)rank) * QGMM_KQ_PIECE + (k & 3) * QGMM_KQ_UNIT;
}

/* This lane's share of the copy of local unit k into `slot` (rows outside [r0, r1) and
 * columns past C are not copied: never read below). */
QGMM_DEV void qgmm_kq_unit_copy(const qgmm_kquant &a, const qgmm_kq_seg &g, uint8_t *slot, int k,
                                unsigned rank, unsigned cs)
{
    const int lane = QGMM_TID % 32;
    const int row0 = qgmm_kq_unit_row(g, k, rank, cs);
    const int c = g.c0 + (lane % 8) * 8;
    if (c >= a.C) return;
    /* lane's column chunk is fixed: one 64-bit base, then a row stride per copy */
    const uint16_t *xs = (const uint16_t *)a.x.ptr + qgmm_kidx(a.x, g.e, row0 + lane / 8, c);
    const int64_t step = 4 * a.x.s1;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int rr = lane / 8 + 4 * i, r = row0 + rr;
        if (r >= g.r0 && r < g.r1) qgmm_kq_cp16(slot + rr * 128 + (lane % 8) * 16, xs + i * step);
    }
}

QGMM_DEV void qgmm_kq_unit_amax(const qgmm_kq_seg &g, const uint8_t *slot, int rs, uint32_t &m)
{
    const int lane = QGMM_TID % 32;
    if (rs >= g.r0 && rs + QGMM_KQ_UNIT <= g.r1) {
#pragma unroll
        for (int k = 0; k < QGMM_KQ_UNIT; ++k)
            m = qgmm_kq_max_u16x2(m, *(const uint32_t *)(slot + k * 128 + lane * 4) & 0x7FFF7FFFu);
    } else {
        for (int k = 0; k < QGMM_KQ_UNIT; ++k)
            if (rs + k >= g.r0 && rs + k < g.r1)
                m = qgmm_kq_max_u16x2(m, *(const uint32_t *)(slot + k * 128 + lane * 4) & 0x7FFF7FFFu);
    }
}

/* Column h (0: low halves, 1: high halves) of 8 rows of bf16 pairs, scaled by mu, to 8
 * fp8 bytes (two little-endian words): qgmm_quantize_value per element. The hardware
 * conversion serves the whole chunk when every product is provably finite and either
 * zero or an f32 normal: mu*max|x| finite and mu*min(nonzero |x|) >= 2^-126 (rounded
 * multiplication is monotonic, x finite, mu finite); mx / mn are the chunk's packed
 * magnitude max and (nonzero magnitude - 1) min. Any other chunk takes the header rule. */
template <int FMT>
QGMM_DEV void qgmm_kq_cast8_bf16(const uint32_t w[8], int h, float mu, uint32_t mx, uint32_t mn, uint32_t out[2])
{
    float x[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) x[k] = qgmm_bits_f32(h ? (w[k] & 0xFFFF0000u) : (w[k] << 16));
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if (FMT == QGMM_FMT_E4M3FN || FMT == QGMM_FMT_E5M2) {
        const uint32_t hx = h ? mx >> 16 : mx & 0xFFFFu, hn = h ? mn >> 16 : mn & 0xFFFFu;
        const float pmax = qgmm_bits_f32(hx << 16) * mu, pmin = qgmm_bits_f32((hn + 1u) << 16) * mu;
        if (hx < 0x7F80u && pmax <= 3.40282347e38f && (hn == 0xFFFFu || pmin >= 1.17549435e-38f)) {
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                const unsigned short a = qgmm_k_cvt_pair<FMT>(x[4 * j] * mu, x[4 * j + 1] * mu);
                const unsigned short b = qgmm_k_cvt_pair<FMT>(x[4 * j + 2] * mu, x[4 * j + 3] * mu);
                out[j] = (uint32_t)a | ((uint32_t)b << 16);
            }
            return;
        }
    }
#else
    (void)mx;
    (void)mn;
#endif
    uint8_t o[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) o[k] = qgmm_quantize_value(x[k], mu, FMT);
    const uint2 pk = qgmm_kpack8(o);
    out[0] = pk.x;
    out[1] = pk.y;
}

/* One half (16 rows) of a lane's two columns of a unit slot: w[k] the bf16 pair of row
 * 16 * half + k, and per chunk j of 8 rows the packed largest magnitude mx[j] and the
 * packed smallest non-zero magnitude less one mn[j] (a zero wraps to 0xFFFF), the bounds
 * qgmm_kq_cast8_bf16 tests once per chunk. */
QGMM_DEV void qgmm_kq_unit_half_load(const uint8_t *slot, int half, int lane, uint32_t w[16], uint32_t mx[2],
                                     uint32_t mn[2])
{
#pragma unroll
    for (int k = 0; k < 16; ++k) w[k] = *(const uint32_t *)(slot + (16 * half + k) * 128 + lane * 4);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        uint32_t hi = 0, lo = 0xFFFFFFFFu;
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            const uint32_t m = w[8 * j + k] & 0x7FFF7FFFu;
            hi = qgmm_kq_max_u16x2(hi, m);
#if defined(__CUDA_ARCH__)
            lo = __vminu2(lo, __vadd2(m, 0xFFFFFFFFu));
#endif
        }
        mx[j] = hi;
        mn[j] = lo;
    }
}

/* A whole unit (32 rows in the segment, 32-byte aligned in q) with whole-sector stores:
 * lane l casts its two columns' 32 rows (two halves of 16), then lane pairs swap 16-byte
 * halves with one xor-shuffle per word, so that in each store instruction the even lane
 * writes rows 0-15 and the odd lane rows 16-31 of the same column: one 32-byte sector per
 * pair instead of two half sectors written by two instructions of one lane. A pair's four
 * columns are all below C or all past it (C % 8 == 0). */
template <int FMT>
QGMM_DEV void qgmm_kq_unit_cast_sect(const qgmm_kquant &a, const qgmm_kq_seg &g, const uint8_t *slot, int rs,
                                     const float mu[2])
{
    const int lane = QGMM_TID % 32, odd = lane & 1;
    uint32_t o[2][2][4]; /* [half][column h][word] */
#pragma unroll
    for (int half = 0; half < 2; ++half) {
        uint32_t w[16], mx[2], mn[2];
        qgmm_kq_unit_half_load(slot, half, lane, w, mx, mn);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            qgmm_kq_cast8_bf16<FMT>(w, h, mu[h], mx[0], mn[0], o[half][h]);
            qgmm_kq_cast8_bf16<FMT>(w + 8, h, mu[h], mx[1], mn[1], o[half][h] + 2);
        }
    }
    /* even lane: keeps its rows 0-15, takes the odd lane's rows 0-15; odd lane: keeps its
     * rows 16-31, takes the even lane's rows 16-31 */
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const uint32_t r = __shfl_xor_sync(0xFFFFFFFFu, odd ? o[0][h][i] : o[1][h][i], 1);
            if (odd) o[0][h][i] = r;
            else o[1][h][i] = r;
        }
    if (g.c0 + 2 * lane >= a.C) return;
    uint8_t *qb = (uint8_t *)a.q.ptr + (int64_t)g.e * a.q.s0 + rs + 16 * odd;
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int p = 0; p < 2; ++p) { /* p 0: the even lane's column, 1: the odd lane's */
            const int64_t c = g.c0 + 2 * ((lane & ~1) + p) + h;
            *(uint4 *)(qb + c * a.q.s2) = make_uint4(o[p][h][0], o[p][h][1], o[p][h][2], o[p][h][3]);
        }
}

/* Casts a unit in two halves of 16 rows (16 words per lane in flight, no spills).
 * vec_out: 0 byte stores, 1 16-byte runs, 2 whole sectors (qgmm_kq_unit_cast_sect; the
 * unit's 32 rows in the segment, q 32-byte aligned). */
template <int FMT>
QGMM_DEV void qgmm_kq_unit_cast(const qgmm_kquant &a, const qgmm_kq_seg &g, const uint8_t *slot, int rs,
                                const float mu[2], int vec_out)
{
    if (vec_out == 2 && rs >= g.r0 && rs + QGMM_KQ_UNIT <= g.r1) {
        qgmm_kq_unit_cast_sect<FMT>(a, g, slot, rs, mu);
        return;
    }
    const int lane = QGMM_TID % 32;
    uint8_t *qb = (uint8_t *)a.q.ptr;
#pragma unroll 1
    for (int half = 0; half < 2; ++half) {
        const int r = rs + 16 * half;
        uint32_t w[16], mx[2], mn[2];
        qgmm_kq_unit_half_load(slot, half, lane, w, mx, mn);
        const int full = vec_out && r >= g.r0 && r + 16 <= g.r1;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int c = g.c0 + 2 * lane + h;
            if (c >= a.C) continue;
            uint32_t o[4];
            qgmm_kq_cast8_bf16<FMT>(w, h, mu[h], mx[0], mn[0], o);
            qgmm_kq_cast8_bf16<FMT>(w + 8, h, mu[h], mx[1], mn[1], o + 2);
            const int64_t qi = (int64_t)g.e * a.q.s0 + (int64_t)c * a.q.s2 + r;
            if (full) {
                *(uint4 *)(qb + qi) = make_uint4(o[0], o[1], o[2], o[3]);
            } else {
#pragma unroll
                for (int k = 0; k < 16; ++k) /* unrolled: o stays in registers */
                    if (r + k >= g.r0 && r + k < g.r1) qb[qi + k] = (uint8_t)(o[k / 4] >> (8 * (k % 4)));
            }
        }
    }
}

QGMM_DEV void qgmm_kq_cp_commit()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/* Waits until at most n (0-7; the group count is an immediate) of this thread's groups
 * are pending. */
QGMM_DEV void qgmm_kq_cp_wait_pending(int n)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    switch (n) {
    case 1: asm volatile("cp.async.wait_group 1;\n" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;\n" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;\n" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;\n" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;\n" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;\n" ::: "memory"); break;
    case 7: asm volatile("cp.async.wait_group 7;\n" ::: "memory"); break;
    default: qgmm_kq_cp_wait(); break;
    }
#else
    (void)n;
#endif
}

/* The units of a strip of a segment that fall to the warp at place w of the strip's
 * 2^lw warps (unit k belongs to place k % 2^lw); with nl0, w = 0 bounds every warp of the
 * cluster. */
QGMM_DEV int qgmm_kq_warp_units(int nl, int w, int lw)
{
    return nl > w ? (nl - w + (1 << lw) - 1) >> lw : 0;
}

/* The place of this warp among its strip's warps in segment g (local unit k belongs to
 * the strip's warp (k + g.rot) % 2^lw: the units of short or uneven segments go round the
 * warps) and its share. */
QGMM_DEV int qgmm_kq_warp_place(const qgmm_kq_seg &g, int lw)
{
    return (QGMM_TID / 32 - g.rot) & ((1 << lw) - 1);
}
QGMM_DEV int qgmm_kq_warp_share(const qgmm_kq_seg &g, int lw)
{
    return qgmm_kq_warp_units(g.nl, qgmm_kq_warp_place(g, lw), lw);
}

/* The segment after g of this block: s, its units going round the strip's warps after
 * g's. */
QGMM_DEV int qgmm_kq_seg_next(const qgmm_kq_pair &pr, int n, int64_t s, unsigned rank, unsigned cs, int lw,
                              const qgmm_kq_seg &g, qgmm_kq_seg &nx)
{
    const int rot = (g.rot + g.nl) & ((1 << lw) - 1);
    const int have = qgmm_kq_seg_of(pr, n, s, rank, cs, lw, nx);
    nx.rot = rot;
    return have;
}

/* The issuing side of a warp's ring: the next unit of the warp's stream. */
typedef struct qgmm_kq_ring {
    int iss;       /* units of the stream issued */
    int t;         /* place of unit iss in its segment's share: 0 .. npass * pw */
    int pw, npass; /* the warp's units of segment g; 1 resident, 2 amax then cast stream */
    int have;      /* segment g exists */
    int64_t s;     /* segment g of the launch */
    qgmm_kq_seg g;
} qgmm_kq_ring;

QGMM_DEV void qgmm_kq_ring_share(qgmm_kq_ring &r, int nsw, int lw)
{
    r.pw = r.have ? qgmm_kq_warp_share(r.g, lw) : 0;
    r.npass = r.pw > nsw ? 2 : 1;
    r.t = 0;
}

/* Issues the warp's next unit (if any) into its slot, one cp.async group. */
QGMM_DEV void qgmm_kq_ring_issue(const qgmm_kq_pair &pr, int n, qgmm_kq_ring &r, uint8_t *sm, int nsw,
                                 int64_t ncl, unsigned rank, unsigned cs, int lw)
{
    const int warp = QGMM_TID / 32;
    while (r.have && r.t == r.npass * r.pw) { /* the warp's next segment with units */
        r.s += ncl;
        const qgmm_kq_seg g = r.g;
        r.have = qgmm_kq_seg_next(pr, n, r.s, rank, cs, lw, g, r.g);
        qgmm_kq_ring_share(r, nsw, lw);
    }
    if (!r.have) return;
    const int k = r.t < r.pw ? r.t : r.t - r.pw;
    qgmm_kq_unit_copy(pr.t[r.g.t], r.g, sm + (size_t)(warp + QGMM_KQ_PIPE_WARPS * (r.iss % nsw)) * QGMM_KQ_UNIT_BYTES,
                      qgmm_kq_warp_place(r.g, lw) + (k << lw), rank, cs);
    qgmm_kq_cp_commit();
    ++r.iss;
    ++r.t;
}

/* The warp's packed amax of segment g, whose share starts at stream unit u0: resident
 * (its units all issued) or, for a share longer than the ring, streamed (each unit waited
 * for, reduced and its slot refilled; u0 advances past the share). */
QGMM_DEV uint32_t qgmm_kq_ring_amax(const qgmm_kq_pair &pr, int n, const qgmm_kq_seg &g, qgmm_kq_ring &rg,
                                    uint8_t *sm, int nsw, int64_t ncl, unsigned rank, unsigned cs, int lw, int &u0)
{
    const int warp = QGMM_TID / 32, pw = qgmm_kq_warp_share(g, lw), place = qgmm_kq_warp_place(g, lw);
    uint32_t m = 0;
    if (pw <= nsw) {
        if (pw) qgmm_kq_cp_wait_pending(rg.iss - (u0 + pw)); /* later units stay in flight */
        __syncwarp();
        for (int t = 0; t < pw; ++t)
            qgmm_kq_unit_amax(g, sm + (size_t)(warp + QGMM_KQ_PIPE_WARPS * ((u0 + t) % nsw)) * QGMM_KQ_UNIT_BYTES,
                              qgmm_kq_unit_row(g, place + (t << lw), rank, cs), m);
        return m;
    }
    for (int t = 0; t < pw; ++t, ++u0) {
        qgmm_kq_cp_wait_pending(rg.iss - (u0 + 1));
        __syncwarp();
        qgmm_kq_unit_amax(g, sm + (size_t)(warp + QGMM_KQ_PIPE_WARPS * (u0 % nsw)) * QGMM_KQ_UNIT_BYTES,
                          qgmm_kq_unit_row(g, place + (t << lw), rank, cs), m);
        __syncwarp(); /* the warp's reads of the slot are done */
        qgmm_kq_ring_issue(pr, n, rg, sm, nsw, ncl, rank, cs, lw);
    }
    return m;
}

/* Casts the warp's share of segment g from stream unit u0 (a streamed share waits for
 * each unit), refilling each slot; u0 advances past the share. */
template <int FMT>
QGMM_DEV void qgmm_kq_ring_cast(const qgmm_kq_pair &pr, int n, const qgmm_kq_seg &g, qgmm_kq_ring &rg, uint8_t *sm,
                                int nsw, int64_t ncl, unsigned rank, unsigned cs, int lw, int &u0,
                                const float mu[2], int vec_out)
{
    const int warp = QGMM_TID / 32, pw = qgmm_kq_warp_share(g, lw), two = pw > nsw;
    const int place = qgmm_kq_warp_place(g, lw);
    for (int t = 0; t < pw; ++t, ++u0) {
        if (two) {
            qgmm_kq_cp_wait_pending(rg.iss - (u0 + 1));
            __syncwarp();
        }
        qgmm_kq_unit_cast<FMT>(pr.t[g.t], g,
                               sm + (size_t)(warp + QGMM_KQ_PIPE_WARPS * (u0 % nsw)) * QGMM_KQ_UNIT_BYTES,
                               qgmm_kq_unit_row(g, place + (t << lw), rank, cs), mu, vec_out);
        __syncwarp(); /* the warp's reads of the slot are done */
        qgmm_kq_ring_issue(pr, n, rg, sm, nsw, ncl, rank, cs, lw);
    }
}

/* Publishes the warp's packed maxima m of its lanes' two columns into `part` (this
 * segment's set: one word per column, max of the 16-bit magnitudes, shared-memory atomics
 * of the block's warps). */
QGMM_DEV void qgmm_kq_ring_publish(uint32_t *part, uint32_t m)
{
    const int lane = QGMM_TID % 32;
    atomicMax(&part[2 * lane], m & 0xFFFFu);
    atomicMax(&part[2 * lane + 1], m >> 16);
}

/* Lane l's two multipliers of segment g from the cluster's sets `part` (this warp's
 * strip, after the wait): the max over the cs blocks (distributed shared memory, one
 * 8-byte load each), then the rowwise rule per column; in rank 0 the strip's first warp
 * stores the scales. */
template <int FMT>
QGMM_DEV void qgmm_kq_ring_mult(const qgmm_kquant &a, const qgmm_kq_seg &g, const uint32_t *part, unsigned rank,
                                unsigned cs, int lw, float mu[2])
{
    const int lane = QGMM_TID % 32;
    uint32_t v0 = 0, v1 = 0;
    uint2 p[16]; /* cs <= 16: every load issued before the first is used */
#pragma unroll
    for (unsigned k = 0; k < 16; ++k)
        if (k < cs) p[k] = qgmm_kq_dsmem_u32x2(&part[2 * lane], k);
#pragma unroll
    for (unsigned k = 0; k < 16; ++k)
        if (k < cs) {
            v0 = p[k].x > v0 ? p[k].x : v0;
            v1 = p[k].y > v1 ? p[k].y : v1;
        }
    mu[0] = qgmm_kq_rowwise_mult(qgmm_bits_f32(v0 << 16), FMT, a.pow2);
    mu[1] = qgmm_kq_rowwise_mult(qgmm_bits_f32(v1 << 16), FMT, a.pow2);
    if (rank == 0 && (QGMM_TID / 32 & ((1 << lw) - 1)) == 0)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int64_t c = g.c0 + 2 * lane + h;
            if (c < a.C)
                qgmm_kq_store_scale_f32(a, g.slot * a.s.s0 + c * a.s.s1,
                                        a.recip ? qgmm_scale_reciprocal(mu[h]) : mu[h]);
        }
}

template <int FMT, int LW>
QGMM_KERNEL void QGMM_LAUNCH_BOUNDS(QGMM_KQ_PIPE_WARPS * 32, 1)
    qgmm_kq_colring(qgmm_kq_pair pr, int n, int nsw, int vec_out0, int vec_out1)
{
    const int lw = LW; /* 2^lw warps per strip: QGMM_KQ_PIPE_WARPS >> lw strips per segment */
    extern __shared__ __align__(16) uint8_t qgmm_kq_ring_sm[];
    /* segment j's column maxima in set j % 3, 64 words per strip */
    QGMM_SHARED __align__(8) uint32_t part[3][64 * QGMM_KQ_STRIPS_MAX];
    const unsigned cs = qgmm_kq_cluster_size(), rank = qgmm_kq_cluster_rank();
    const int lane = QGMM_TID % 32, strip = QGMM_TID / 32 >> lw;
    /* the pair shares one offs: every block decides alike, before any barrier */
    if (pr.t[0].offs && !qgmm_block_offsets_ok(pr.t[0].offs, pr.t[0].offs_stride, pr.t[0].G, pr.t[0].R, 1,
                                               pr.t[0].status, QGMM_BID_X == 0))
        return;
    for (int i = QGMM_TID; i < 3 * 64 * QGMM_KQ_STRIPS_MAX; i += QGMM_NTHREADS)
        part[i / (64 * QGMM_KQ_STRIPS_MAX)][i % (64 * QGMM_KQ_STRIPS_MAX)] = 0;
    QGMM_SYNC();
    uint8_t *sm = qgmm_kq_ring_sm;
    const int64_t ncl = QGMM_NBLOCKS_X / cs;
    int64_t s = QGMM_BID_X / cs;
    qgmm_kq_ring rg;
    rg.iss = 0;
    rg.s = s;
    rg.have = qgmm_kq_seg_of(pr, n, s, rank, cs, lw, rg.g);
    qgmm_kq_ring_share(rg, nsw, lw);
    for (int i = 0; i < nsw; ++i) qgmm_kq_ring_issue(pr, n, rg, sm, nsw, ncl, rank, cs, lw);
    int u0 = 0, set = 0; /* u0: units of the warp's stream consumed; set: g's */
    qgmm_kq_seg g, nx;
    int have = qgmm_kq_seg_of(pr, n, s, rank, cs, lw, g);
    if (have) {
        qgmm_kq_ring_publish(part[0] + 64 * strip, qgmm_kq_ring_amax(pr, n, g, rg, sm, nsw, ncl, rank, cs, lw, u0));
        qgmm_kq_cluster_arrive();
    }
    while (have) {
        s += ncl;
        const int hn = qgmm_kq_seg_next(pr, n, s, rank, cs, lw, g, nx);
        const int nset = set == 2 ? 0 : set + 1;
        /* both shares in the ring at once (the bound: the cluster decides alike) */
        const int early = hn && qgmm_kq_warp_units(g.nl0, 0, lw) + qgmm_kq_warp_units(nx.nl0, 0, lw) <= nsw;
        uint32_t mn = 0;
        if (early) {
            int un = u0 + qgmm_kq_warp_share(g, lw); /* nx's share follows g's in the stream */
            mn = qgmm_kq_ring_amax(pr, n, nx, rg, sm, nsw, ncl, rank, cs, lw, un);
        }
        qgmm_kq_cluster_wait(); /* every partial of g visible; every reader of the set before g's done */
        float mu[2];
        qgmm_kq_ring_mult<FMT>(pr.t[g.t], g, part[set] + 64 * strip, rank, cs, lw, mu);
        /* the strip's words of the set before g's (its first warp): rewritten two segments
         * on, after a wait this precedes */
        if ((QGMM_TID / 32 & ((1 << lw) - 1)) == 0) {
            uint32_t *old = part[nset == 2 ? 0 : nset + 1] + 64 * strip;
            old[2 * lane] = 0;
            old[2 * lane + 1] = 0;
        }
        if (early) {
            qgmm_kq_ring_publish(part[nset] + 64 * strip, mn);
            qgmm_kq_cluster_arrive();
        }
        qgmm_kq_ring_cast<FMT>(pr, n, g, rg, sm, nsw, ncl, rank, cs, lw, u0, mu, g.t ? vec_out1 : vec_out0);
        if (hn && !early) {
            qgmm_kq_ring_publish(part[nset] + 64 * strip,
                                 qgmm_kq_ring_amax(pr, n, nx, rg, sm, nsw, ncl, rank, cs, lw, u0));
            qgmm_kq_cluster_arrive();
        }
        g = nx;
        have = hn;
        set = nset;
    }
    /* no block leaves while its partials may still be read */
    qgmm_kq_cluster_arrive();
    qgmm_kq_cluster_wait();
}
#endif /* QGMM_K_NVIDIA */

/* ------------------------------------------------------------------ transpose tile
 * Block = 256 threads (exactly: the load and work split assume it), tile 128 rows (R) x
 * 64 columns (C) of expert blockIdx.z. Output q has q.s1 == 1 (R contiguous). kind MX:
 * amax over 32 rows in the tile; kind BLOCKWISE (R a multiple of 128): amax over the
 * tile's 128 rows, four quarters of 32 combined in order; both cast bf16 blocks through
 * the hardware pair conversion where qgmm_kq_bf16_fast allows (the min magnitude kept
 * beside the amax). kind ROWWISE: multiplier a.table[(g or e) * C + c], g the group of the
 * row (rows past the last group are not written). With gmap (the fused pad) the rows are
 * padded positions read through the map. vec_in: 16-byte loads allowed; vec_out: q.s1 ==
 * 1 and 16-byte aligned columns, so 16-byte stores; otherwise byte stores through q's
 * strides. */
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
    QGMM_SHARED float qamax[4][QGMM_KQ_TC];
    QGMM_SHARED uint32_t qmin[4][QGMM_KQ_TC]; /* blockwise, bf16: the quarters' packed min statistics */
    if (qgmm_kq_groups_bad(a)) return;
    if (a.offs && !qgmm_block_offsets_ok(a.offs, a.offs_stride, a.G, a.R, 1, a.status, 0)) return;
    if (a.gmap && a.gmap[0] == 0) return; /* the fused pad's offsets were bad */
    const int64_t c0 = QGMM_BID_X * QGMM_KQ_TC, r0 = QGMM_BID_Y * QGMM_KQ_TR, e = QGMM_BID_Z;
    const int tid = QGMM_TID;
    /* load: 1024 chunks of 8 columns, four per thread, all four loads issued first; chunk u
     * of a thread lies in tile row tid / 8 + 32 u, so in the tile's u-th 32-row block. xr[u]:
     * the x row it reads, -1 for zeros (past R, or padding of the fused pad) */
    int64_t xr[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
        const int64_t r = r0 + tid / (QGMM_KQ_TC / 8) + 32 * u;
        xr[u] = r < a.R ? r : -1;
        if (a.gmap && r < a.R) {
            const int32_t *m = a.gmap + 2 + 2 * ((r0 >> 5) + u);
            const int i = tid / (QGMM_KQ_TC / 8);
            xr[u] = i < m[1] ? (int64_t)m[0] + i : -1;
        }
    }
    if (sizeof(TT) == 2) {
        uint4 w[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int ch = tid + u * QGMM_NTHREADS;
            const int cc = (ch % (QGMM_KQ_TC / 8)) * 8;
            const int64_t r = xr[u], c = c0 + cc;
            const uint16_t *xs = (const uint16_t *)a.x.ptr;
            if (r >= 0 && vec_in && c + 8 <= a.C) {
                w[u] = QGMM_LDG((const uint4 *)(xs + qgmm_kidx(a.x, e, r, c)));
            } else {
                uint16_t h[8];
#pragma unroll
                for (int k = 0; k < 8; ++k) h[k] = (r >= 0 && c + k < a.C) ? xs[qgmm_kidx(a.x, e, r, c + k)] : 0;
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
            const int cc = (ch % (QGMM_KQ_TC / 8)) * 8;
            const int64_t r = xr[u], c = c0 + cc;
            if (r >= 0 && vec_in && c + 8 <= a.C) {
                qgmm_kload8(a.x.ptr, a.x_dtype, qgmm_kidx(a.x, e, r, c), v[u]);
            } else {
#pragma unroll
                for (int k = 0; k < 8; ++k)
                    v[u][k] = (r >= 0 && c + k < a.C) ? qgmm_kload(a.x.ptr, a.x_dtype, qgmm_kidx(a.x, e, r, c + k)) : 0.0f;
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
            uint32_t hn = 0xFFFFu;
#pragma unroll 8
            for (int k = 0; k < 32; ++k) {
                const TT t = tile[mb * 32 + k][cc];
                amax = qgmm_amax_combine(amax, qgmm_fabs_f32(qgmm_kq_tv<IN>(t)));
                if (IN == QGMM_K_BF16) hn = qgmm_kq_min_mag1(hn, (uint32_t)t);
            }
            const uint8_t code = qgmm_mx_scale(amax, FMT, a.rceil);
            const float rec = qgmm_e8m0_reciprocal(code);
            /* bf16: an exact bf16 amax, so its top half is the packed max */
            const int fast = IN == QGMM_K_BF16 && qgmm_kq_bf16_fast<FMT>(qgmm_f32_bits(amax) >> 16, hn, rec);
            uint8_t o[32];
#pragma unroll
            for (int h = 0; h < 4; ++h) {
                float v[8];
#pragma unroll
                for (int k = 0; k < 8; ++k) v[k] = qgmm_kq_tv<IN>(tile[mb * 32 + 8 * h + k][cc]);
                qgmm_kq_cast8<FMT>(v, rec, fast, o + 8 * h);
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
            qgmm_kq_store_mx_scale(a, e, c, rb / 32, code);
        }
    } else if (a.kind == QGMM_KQ_BLOCKWISE) {
        /* 64 columns x 4 quarters of 32 rows = 256 work items */
        const int cc = tid % QGMM_KQ_TC, qr = tid / QGMM_KQ_TC;
        const int64_t c = c0 + cc;
        float amax = 0.0f;
        uint32_t hn = 0xFFFFu;
#pragma unroll 8
        for (int k = 0; k < 32; ++k) {
            const TT t = tile[qr * 32 + k][cc];
            amax = qgmm_amax_combine(amax, qgmm_fabs_f32(qgmm_kq_tv<IN>(t)));
            if (IN == QGMM_K_BF16) hn = qgmm_kq_min_mag1(hn, (uint32_t)t);
        }
        qamax[qr][cc] = amax;
        qmin[qr][cc] = hn;
        QGMM_SYNC();
        amax = qgmm_amax_combine(qgmm_amax_combine(qamax[0][cc], qamax[1][cc]),
                                 qgmm_amax_combine(qamax[2][cc], qamax[3][cc]));
        hn = qmin[0][cc] < qmin[1][cc] ? qmin[0][cc] : qmin[1][cc];
        hn = qmin[2][cc] < hn ? qmin[2][cc] : hn;
        hn = qmin[3][cc] < hn ? qmin[3][cc] : hn;
        if (c < a.C) {
            const float mult = qgmm_blockwise_scale(amax, FMT);
            const int fast = IN == QGMM_K_BF16 && qgmm_kq_bf16_fast<FMT>(qgmm_f32_bits(amax) >> 16, hn, mult);
            uint8_t o[32];
#pragma unroll
            for (int h = 0; h < 4; ++h) {
                float v[8];
#pragma unroll
                for (int k = 0; k < 8; ++k) v[k] = qgmm_kq_tv<IN>(tile[qr * 32 + 8 * h + k][cc]);
                qgmm_kq_cast8<FMT>(v, mult, fast, o + 8 * h);
            }
            const int64_t rq = r0 + qr * 32;
            if (vec_out) {
                uint4 *dst = (uint4 *)(qb + e * a.q.s0 + c * a.q.s2 + rq);
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const uint2 lo = qgmm_kpack8(o + 16 * h), hi = qgmm_kpack8(o + 16 * h + 8);
                    dst[h] = make_uint4(lo.x, lo.y, hi.x, hi.y);
                }
            } else {
                for (int k = 0; k < 32; ++k) qb[qgmm_kidx(a.q, e, rq + k, c)] = o[k];
            }
            if (qr == 0)
                qgmm_kq_store_scale_f32(a, e * a.s.s0 + c * a.s.s1 + (r0 / 128) * a.s.s2, qgmm_scale_reciprocal(mult));
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
 * Blockwise 128x128: a block of 256 threads per tile, blocks looping over tiles (a grid
 * of resident blocks); thread (cs = tid % 16, rr = tid / 16) owns unit cs (8 columns) of
 * rows rr + 16 p, p < 8. The eight units are loaded before the first is used and held as
 * raw bits (unit registers, widened only when cast), so a tile's 32 KiB (bf16) are in
 * flight per block with several blocks per SM; the tile amax is a warp shuffle plus one
 * shared slot per warp (two alternating slot sets: one barrier per tile). Requires bf16 or
 * f32 x with x.s2 == 1, C % 128 == 0, 16-byte aligned x rows, E*R < 2^31; q 8-byte aligned
 * rows (q.s2 == 1). */
QGMM_DEV float qgmm_kq_tile_amax(float amax, float (*part)[QGMM_MAX_WARPS], int &buf)
{
    const int lane = QGMM_TID % QGMM_WARP, warp = QGMM_TID / QGMM_WARP;
    const int nw = (QGMM_NTHREADS + QGMM_WARP - 1) / QGMM_WARP;
    amax = qgmm_warp_amax(amax);
    if (lane == 0) part[buf][warp] = amax;
    QGMM_SYNC();
    amax = part[buf][0];
    for (int w = 1; w < nw; ++w) amax = qgmm_amax_combine(amax, part[buf][w]);
    buf ^= 1;
    return amax;
}

template <int FMT, int XF32>
QGMM_KERNEL void QGMM_LAUNCH_BOUNDS(256, XF32 ? 2 : 4) qgmm_kq_tile128(qgmm_kquant a)
{
    QGMM_SHARED float part[2][QGMM_MAX_WARPS];
    const int64_t RT = (a.R + 127) / 128, CT = a.C / 128, n = a.E * RT * CT;
    const int tid = QGMM_TID;
    const int cc = (tid % 16) * 8, rr = tid / 16;
    uint8_t *qb = (uint8_t *)a.q.ptr;
    int buf = 0;
    for (int64_t t = QGMM_BID_X; t < n; t += QGMM_NBLOCKS_X) {
        const int64_t ct = t % CT, rt = (t / CT) % RT, e = t / (CT * RT);
        const int64_t r0 = rt * 128 + rr, c = ct * 128 + cc;
        qgmm_kq_unit<XF32> u[8] = {}; /* zero only for the host emulation's compiler */
#pragma unroll
        for (int p = 0; p < 8; ++p)
            if (r0 + 16 * p < a.R) qgmm_kq_unit_load<XF32>(u[p], a.x.ptr, qgmm_kidx(a.x, e, r0 + 16 * p, c));
        float amax = 0.0f;
        uint32_t hx = 0, hn = 0xFFFFFFFFu; /* bf16: the thread's packed max / min (qgmm_kq_bf16_stat) */
        if (XF32) {
#pragma unroll
            for (int p = 0; p < 8; ++p)
                if (r0 + 16 * p < a.R) amax = qgmm_kq_unit_amax<XF32>(u[p], amax);
        } else {
#pragma unroll
            for (int p = 0; p < 8; ++p)
                if (r0 + 16 * p < a.R) qgmm_kq_bf16_stat(u[p].w[0], hx, hn);
            hx = qgmm_kq_u16_hi(hx);
            hn = qgmm_kq_u16_lo(hn);
            amax = qgmm_bf16_to_f32((uint16_t)hx);
        }
        amax = qgmm_kq_tile_amax(amax, part, buf);
        const float mult = qgmm_blockwise_scale(amax, FMT);
        const int fast = XF32 ? 0 : qgmm_kq_bf16_fast<FMT>(hx, hn, mult);
#pragma unroll
        for (int p = 0; p < 8; ++p) {
            if (r0 + 16 * p < a.R) {
                uint2 o8;
                if (XF32) {
                    float v[8];
                    uint8_t o[8];
                    qgmm_kq_unit_f32<XF32>(u[p], v);
                    qgmm_k_quantize8<FMT>(v, mult, o);
                    o8 = qgmm_kpack8(o);
                } else {
                    o8 = qgmm_kq_bf16_cast<FMT>(u[p].w[0], mult, fast);
                }
                *(uint2 *)(qb + qgmm_kidx(a.q, e, r0 + 16 * p, c)) = o8;
            }
        }
        if (tid == 0) qgmm_kq_store_scale_f32(a, e * a.s.s0 + rt * a.s.s1 + ct * a.s.s2, qgmm_scale_reciprocal(mult));
    }
}

/* ------------------------------------------------------------------ tile128t
 * Blockwise 128x128 with q R-contiguous (q.s1 == 1): like qgmm_kq_tile128 (same x
 * requirements, bf16 or f32, units held as bits, a grid of resident blocks), but 8 consecutive rows per
 * thread, so that each of its 8 columns is one 8-byte chunk of fp8 bytes. The chunks go to
 * a shared (column, 16 row chunks) tile, chunk j of column c at j ^ (c / 8) so neither the
 * writes (16 columns per half-warp) nor the 16-byte reads along a column meet on a bank;
 * then 16-byte stores along R (vec_out: q.s1 == 1 and 16-byte aligned columns), byte
 * stores through q's strides at a ragged last tile row or otherwise. Two barriers per
 * tile: the amax one (which also ends the last tile's reads of the shared tile) and the
 * one between writing and reading the shared tile. */
template <int FMT, int XF32>
QGMM_KERNEL void QGMM_LAUNCH_BOUNDS(256, XF32 ? 2 : 4) qgmm_kq_tile128t(qgmm_kquant a, int vec_out)
{
    QGMM_SHARED float part[2][QGMM_MAX_WARPS];
    QGMM_SHARED __align__(16) uint2 tq[128][16];
    const int64_t RT = (a.R + 127) / 128, CT = a.C / 128, n = a.E * RT * CT;
    const int tid = QGMM_TID;
    const int cs = tid % 16, cc = cs * 8, rc = tid / 16; /* columns cc..cc+7, rows 8rc..8rc+7 */
    uint8_t *qb = (uint8_t *)a.q.ptr;
    int buf = 0;
    for (int64_t t = QGMM_BID_X; t < n; t += QGMM_NBLOCKS_X) {
        const int64_t ct = t % CT, rt = (t / CT) % RT, e = t / (CT * RT);
        const int64_t r0 = rt * 128 + rc * 8;
        qgmm_kq_unit<XF32> u[8] = {}; /* rows past R stay zero: they cast to zero bytes never stored */
#pragma unroll
        for (int p = 0; p < 8; ++p)
            if (r0 + p < a.R) qgmm_kq_unit_load<XF32>(u[p], a.x.ptr, qgmm_kidx(a.x, e, r0 + p, ct * 128 + cc));
        float amax = 0.0f;
        uint32_t hx = 0, hn = 0xFFFFFFFFu; /* bf16: the thread's packed max / min (qgmm_kq_bf16_stat) */
        if (XF32) {
#pragma unroll
            for (int p = 0; p < 8; ++p)
                if (r0 + p < a.R) amax = qgmm_kq_unit_amax<XF32>(u[p], amax);
        } else {
#pragma unroll
            for (int p = 0; p < 8; ++p) qgmm_kq_bf16_stat(u[p].w[0], hx, hn); /* rows past R are zero */
            hx = qgmm_kq_u16_hi(hx);
            hn = qgmm_kq_u16_lo(hn);
            amax = qgmm_bf16_to_f32((uint16_t)hx);
        }
        amax = qgmm_kq_tile_amax(amax, part, buf);
        const float mult = qgmm_blockwise_scale(amax, FMT);
        const int fast = XF32 ? 0 : qgmm_kq_bf16_fast<FMT>(hx, hn, mult);
        uint2 o[8]; /* row p's 8 bytes */
#pragma unroll
        for (int p = 0; p < 8; ++p) {
            if (XF32) {
                float v[8];
                uint8_t ob[8];
                qgmm_kq_unit_f32<XF32>(u[p], v);
                qgmm_k_quantize8<FMT>(v, mult, ob);
                o[p] = qgmm_kpack8(ob);
            } else {
                o[p] = qgmm_kq_bf16_cast<FMT>(u[p].w[0], mult, fast);
            }
        }
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            uint8_t col[8];
#pragma unroll
            for (int p = 0; p < 8; ++p) col[p] = (uint8_t)((k < 4 ? o[p].x : o[p].y) >> (8 * (k % 4)));
            tq[cc + k][rc ^ cs] = qgmm_kpack8(col);
        }
        QGMM_SYNC();
        /* 128 columns x 8 parts of 16 rows: a part is chunks 2m, 2m+1, stored swapped when
         * the column's swizzle is odd */
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const int ch = tid + k * 256, c = ch / 8, m = ch % 8, f = c / 8;
            const uint4 pr = *(const uint4 *)&tq[c][(2 * m) ^ (f & 14)];
            const uint4 w4 = (f & 1) ? make_uint4(pr.z, pr.w, pr.x, pr.y) : pr;
            const int64_t r = rt * 128 + 16 * m, col = ct * 128 + c;
            if (vec_out && r + 16 <= a.R) {
                *(uint4 *)(qb + e * a.q.s0 + col * a.q.s2 + r) = w4;
            } else {
                const uint32_t w[4] = {w4.x, w4.y, w4.z, w4.w};
                for (int j = 0; j < 16 && r + j < a.R; ++j)
                    qb[qgmm_kidx(a.q, e, r + j, col)] = (uint8_t)(w[j / 4] >> (8 * (j % 4)));
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
static inline int qgmm_kquant_x_vec(const qgmm_kquant *a)
{
    const int64_t esz = a->x_dtype == QGMM_K_F32 ? 4 : 2;
    return a->x.s2 == 1 && a->C % 8 == 0 && ((uintptr_t)a->x.ptr % 16) == 0 &&
           (a->x.s1 * esz) % 16 == 0 && (a->x.s0 * esz) % 16 == 0;
}
/* 8-byte stores of 8 bytes along C are legal for every row of q. */
static inline int qgmm_kquant_q_vec8(const qgmm_kquant *a)
{
    return a->q.s2 == 1 && a->C % 8 == 0 && ((uintptr_t)a->q.ptr % 8) == 0 && a->q.s1 % 8 == 0 &&
           a->q.s0 % 8 == 0;
}
/* Resident blocks per SM of `kernel` at `threads` threads: the occupancy query on CUDA,
 * `guess` elsewhere. Persistent grids use it so that no partial last wave remains. */
template <typename K>
static inline int qgmm_k_resident(K kernel, int threads, int guess)
{
#if defined(QGMM_K_NVIDIA)
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, 0) == cudaSuccess && n > 0) return n;
#else
    (void)kernel;
    (void)threads;
#endif
    return guess;
}
/* Launch shape of the 2D row kernels (qgmm_kq_rowblock, qgmm_krt_rows): x = lanes along a
 * row of `chunks` work-items in the fewest blocks of at most 256 lanes, each a multiple of
 * 32 (320 chunks: 2 x 160, not 256 + 64, so no lane idles); y = rows filling the rest of a
 * 256-thread block; grid.y holds `kernel`'s resident blocks once over all x blocks, rows
 * stepped by grid.y * block.y inside, so no partial last wave remains. */
template <typename K>
static inline void qgmm_k_row_shape(K kernel, int sm_count, int64_t chunks, int64_t rows, unsigned grid[2],
                                    unsigned block[2])
{
    const int64_t nbx = chunks > 0 ? (chunks + 255) / 256 : 1;
    const int64_t tx = ((chunks + nbx - 1) / nbx + 31) / 32 * 32, ty = 256 / (tx > 0 ? tx : 32);
    const int per_sm = qgmm_k_resident(kernel, (int)(tx * ty), 8);
    int64_t gy = (int64_t)sm_count * per_sm / nbx, need = (rows + ty - 1) / ty;
    if (gy > need) gy = need;
    if (gy > 65535) gy = 65535;
    if (gy < 1) gy = 1;
    grid[0] = (unsigned)nbx;
    grid[1] = (unsigned)gy;
    block[0] = (unsigned)(tx > 0 ? tx : 32);
    block[1] = (unsigned)ty;
}
/* Launches qgmm_kq_transpose (cast along R into R-contiguous q) on the context's stream;
 * shared by the rowwise and MXFP8 casts (defined in backends/cuda_hip/cast_rowwise.cu, whose
 * launches the HIP host emulation rewrites like every launcher file's). */
qgmm_status qgmm_cuda_launch_kq_transpose(qgmm_context *ctx, const qgmm_kquant &a);
/* Launches qgmm_kq_rowblock for MX dim0 (kind MX) or blockwise 1x128 with bf16 / f32 x
 * (defined in backends/cuda_hip/cast_blockwise.cu, shared with cast_mx.cu). */
qgmm_status qgmm_cuda_launch_kq_rowblock(qgmm_context *ctx, const qgmm_kquant &a);
#if defined(QGMM_PROBLEM_H)
/* The kernels' arguments of a cast description, filled once (backends/cuda_hip/cast_entry.cu),
 * and the launchers of each kind that take them (cast_rowwise.cu, cast_mx.cu,
 * cast_blockwise.cu, cast_dequant.cu). */
qgmm_kquant qgmm_cuda_kquant_of(const qgmm_context *ctx, const qgmm_cast_problem *p);
/* An operand of a cast description as the kernels' (E, R, C) view: C is the scaled dim r
 * when along_c, else the line dim o. */
qgmm_kview qgmm_cuda_kview_of(const qgmm_cast_operand &o, int along_c);
qgmm_status qgmm_cuda_cast_rowwise(qgmm_context *ctx, qgmm_kquant a);
qgmm_status qgmm_cuda_cast_mx(qgmm_context *ctx, const qgmm_cast_problem *p, const qgmm_kquant &a);
qgmm_status qgmm_cuda_cast_blockwise(qgmm_context *ctx, qgmm_kquant a);
qgmm_status qgmm_cuda_cast_dequant(qgmm_context *ctx, const qgmm_kquant &a);
#endif
#endif

#endif /* QGMM_KERNELS_QUANT_CUH */
