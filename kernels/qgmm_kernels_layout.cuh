/*
 * qgmm_kernels_layout.cuh — single-source (CUDA/HIP) kernels of ops-spec §4 (scales
 * to/from the blocked layout, 2D / 3D / M-groups / K-groups), §5 (pad / unpad token
 * groups) and DeepGEMM's per-row group ids.
 *
 * Grouped variants never read offsets on the host: every block loads the offsets,
 * checks them (bad -> the block writes nothing; block 0 raises the status bit), and
 * computes the padded group starts itself with a block-wide scan into shared memory, so
 * the whole op is one launch with no host readback. Output-driven: each thread owns
 * output bytes and computes where they come from (or that they are padding: 0).
 */
#ifndef QGMM_KERNELS_LAYOUT_CUH
#define QGMM_KERNELS_LAYOUT_CUH

#include "qgmm_kernels_common.cuh"

/* Groups a grouped layout kernel handles (shared-memory starts). */
#define QGMM_KL_MAX_GROUPS 4096

/* Exclusive scan of padded group sizes into start[0..G] (start[G] = total), with
 * size_g = (offs[g] - offs[g-1]) / div and padded_g = align * ceil(size_g / align).
 * tmp: >= QGMM_MAX_THREADS int64. All threads call it; ends with a barrier. */
QGMM_DEV void qgmm_kl_padded_starts(const int32_t *offs, int64_t stride, int64_t G, int64_t div,
                                    int64_t align, int32_t *start, int64_t *tmp)
{
    const int nt = QGMM_NTHREADS, tid = QGMM_TID;
    const int64_t per = (G + nt - 1) / nt;
    const int64_t b = tid * per, e = (b + per < G) ? b + per : G;
    int64_t sum = 0;
    for (int64_t g = b; g < e; ++g) {
        const int64_t sz = ((int64_t)offs[g * stride] - (g == 0 ? 0 : (int64_t)offs[(g - 1) * stride])) / div;
        sum += qgmm_round_up_i64(sz, align);
    }
    tmp[tid] = sum;
    QGMM_SYNC();
    for (int d = 1; d < nt; d <<= 1) {
        const int64_t v = tid >= d ? tmp[tid - d] : 0;
        QGMM_SYNC();
        tmp[tid] += v;
        QGMM_SYNC();
    }
    int64_t run = tid == 0 ? 0 : tmp[tid - 1];
    for (int64_t g = b; g < e; ++g) {
        start[g] = (int32_t)run;
        const int64_t sz = ((int64_t)offs[g * stride] - (g == 0 ? 0 : (int64_t)offs[(g - 1) * stride])) / div;
        run += qgmm_round_up_i64(sz, align);
    }
    if (tid == nt - 1) start[G] = (int32_t)tmp[nt - 1];
    QGMM_SYNC();
}

/* Last g with start[g] <= p (or -1): the owner of padded position p. */
QGMM_DEV int64_t qgmm_kl_owner(const int32_t *start, int64_t G, int64_t p)
{
    int64_t lo = 0, hi = G;
    while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        if ((int64_t)start[mid] <= p) lo = mid + 1; else hi = mid;
    }
    return lo - 1;
}

/* ------------------------------------------------------------------ blocked scales */
#define QGMM_KL_2D 0
#define QGMM_KL_3D 1
#define QGMM_KL_MG 2
#define QGMM_KL_KG 3

typedef struct qgmm_kblocked {
    int variant;
    const uint8_t *plain_in;  /* to_blocked: source; from_blocked: NULL */
    uint8_t *plain_out;       /* from_blocked: destination */
    qgmm_kview plain;         /* strides of the plain (E?, R, C) scales (bytes = elements) */
    uint8_t *blk_out;         /* to_blocked destination */
    const uint8_t *blk_in;    /* from_blocked source */
    int64_t blk_len, blk_stride;
    int64_t E, rows, cols, rows_pad, cols_pad;
    const int32_t *offs;
    int64_t offs_stride, G;
    int32_t *group_starts;    /* optional i32 (G) */
    int64_t gs_stride;
    uint32_t *status;
} qgmm_kblocked;

QGMM_DEV int qgmm_kl_prepare(const qgmm_kblocked &k, int32_t *start, int64_t *tmp)
{
    if (k.variant != QGMM_KL_MG && k.variant != QGMM_KL_KG) return 1;
    const int mg = k.variant == QGMM_KL_MG;
    if (!qgmm_block_offsets_ok(k.offs, k.offs_stride, k.G, mg ? k.rows : k.cols * 32, mg ? 1 : 32,
                               k.status, QGMM_BID_X == 0))
        return 0;
    qgmm_kl_padded_starts(k.offs, k.offs_stride, k.G, mg ? 1 : 32, mg ? 128 : 4, start, tmp);
    if (QGMM_BID_X == 0 && k.group_starts)
        for (int64_t g = QGMM_TID; g < k.G; g += QGMM_NTHREADS) k.group_starts[g * k.gs_stride] = start[g];
    return 1;
}

/* The 16 blocked bytes [off, off+16) (off a multiple of 16): one 32-row slot of one
 * 128x4 tile, i.e. rows r, r+32, r+64, r+96 (r = the slot's row) x 4 columns. Index math
 * once per chunk; each row's 4 bytes with one 32-bit load when plain rows allow it. */
QGMM_DEV void qgmm_kl_chunk(const qgmm_kblocked &k, const int32_t *start, int64_t off, uint8_t b[16], int word_ok)
{
#pragma unroll
    for (int i = 0; i < 16; ++i) b[i] = 0;
    int64_t e = 0, base_r, c0, ncols, row_of[4], col_base;
    int valid[4];
    if (k.variant == QGMM_KL_2D || k.variant == QGMM_KL_3D) {
        const int64_t per = k.rows_pad * k.cols_pad;
        e = off / per;
        if (e >= k.E) return;
        const int64_t loc = off % per, tile = loc / 512, tpr = k.cols_pad / 4;
        base_r = (tile / tpr) * 128 + (loc % 512) / 16;
        c0 = (tile % tpr) * 4;
        ncols = k.cols;
        col_base = 0;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            row_of[q] = base_r + 32 * q;
            valid[q] = row_of[q] < k.rows;
        }
    } else if (k.variant == QGMM_KL_MG) {
        const int64_t tile = off / 512, tpr = k.cols_pad / 4;
        base_r = (tile / tpr) * 128 + (off % 512) / 16;
        c0 = (tile % tpr) * 4;
        ncols = k.cols;
        col_base = 0;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int64_t pr = base_r + 32 * q;
            const int64_t g = qgmm_kl_owner(start, k.G, pr);
            valid[q] = 0;
            row_of[q] = 0;
            if (g >= 0) {
                const int64_t b0 = g == 0 ? 0 : k.offs[(g - 1) * k.offs_stride];
                if (pr - start[g] < k.offs[g * k.offs_stride] - b0) {
                    valid[q] = 1;
                    row_of[q] = b0 + pr - start[g];
                }
            }
        }
    } else {
        const int64_t colp = off / k.rows_pad;
        const int64_t g = qgmm_kl_owner(start, k.G, colp);
        if (g < 0) return;
        const int64_t cg = (g == 0 ? 0 : k.offs[(g - 1) * k.offs_stride]) / 32;
        const int64_t sz = k.offs[g * k.offs_stride] / 32 - cg;
        const int64_t width = qgmm_round_up_i64(sz, 4);
        if (colp >= start[g] + width) return;
        const int64_t loc = off - (int64_t)start[g] * k.rows_pad, tile = loc / 512, tpr = width / 4;
        base_r = (tile / tpr) * 128 + (loc % 512) / 16;
        c0 = (tile % tpr) * 4;
        ncols = sz;
        col_base = cg;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            row_of[q] = base_r + 32 * q;
            valid[q] = row_of[q] < k.rows;
        }
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        if (!valid[q]) continue;
        const int64_t pi = qgmm_kidx(k.plain, e, row_of[q], col_base + c0);
        if (word_ok && c0 + 4 <= ncols && ((pi & 3) == 0)) {
            const uint32_t w = *(const uint32_t *)(k.plain_in + pi);
#pragma unroll
            for (int i = 0; i < 4; ++i) b[4 * q + i] = (uint8_t)(w >> (8 * i));
        } else {
#pragma unroll
            for (int i = 0; i < 4; ++i)
                if (c0 + i < ncols) b[4 * q + i] = k.plain_in[pi + i * k.plain.s2];
        }
    }
}

/* to_blocked: one thread per 16 output bytes. */
QGMM_KERNEL void qgmm_kl_to_blocked(qgmm_kblocked k, int word_ok)
{
    QGMM_SHARED int32_t start[QGMM_KL_MAX_GROUPS + 1];
    QGMM_SHARED int64_t tmp[QGMM_MAX_THREADS];
    if (!qgmm_kl_prepare(k, start, tmp)) return;
    const int64_t chunks = (k.blk_len + 15) / 16;
    for (int64_t t = QGMM_BID_X * QGMM_NTHREADS + QGMM_TID; t < chunks; t += QGMM_NBLOCKS_X * QGMM_NTHREADS) {
        uint8_t b[16];
        qgmm_kl_chunk(k, start, t * 16, b, word_ok);
        if (k.blk_stride == 1 && t * 16 + 16 <= k.blk_len && (((uintptr_t)k.blk_out) & 15) == 0) {
            uint32_t w[4];
#pragma unroll
            for (int i = 0; i < 4; ++i)
                w[i] = (uint32_t)b[4 * i] | ((uint32_t)b[4 * i + 1] << 8) | ((uint32_t)b[4 * i + 2] << 16) |
                       ((uint32_t)b[4 * i + 3] << 24);
            *(uint4 *)(k.blk_out + t * 16) = make_uint4(w[0], w[1], w[2], w[3]);
        } else {
            for (int i = 0; i < 16; ++i)
                if (t * 16 + i < k.blk_len) k.blk_out[(t * 16 + i) * k.blk_stride] = b[i];
        }
    }
}

/* from_blocked: one thread per plain scale; scales no group owns come back 0. */
QGMM_KERNEL void qgmm_kl_from_blocked(qgmm_kblocked k)
{
    QGMM_SHARED int32_t start[QGMM_KL_MAX_GROUPS + 1];
    QGMM_SHARED int64_t tmp[QGMM_MAX_THREADS];
    if (!qgmm_kl_prepare(k, start, tmp)) return;
    const int64_t total = k.E * k.rows * k.cols;
    for (int64_t t = QGMM_BID_X * QGMM_NTHREADS + QGMM_TID; t < total; t += QGMM_NBLOCKS_X * QGMM_NTHREADS) {
        const int64_t c = t % k.cols, r = (t / k.cols) % k.rows, e = t / (k.cols * k.rows);
        int64_t off = -1;
        if (k.variant == QGMM_KL_2D || k.variant == QGMM_KL_3D) {
            off = e * k.rows_pad * k.cols_pad + qgmm_blocked_offset(r, c, k.cols_pad);
        } else if (k.variant == QGMM_KL_MG) {
            const int64_t g = qgmm_k_group_of(k.offs, k.offs_stride, k.G, r);
            if (g >= 0) {
                const int64_t b0 = g == 0 ? 0 : k.offs[(g - 1) * k.offs_stride];
                off = (int64_t)start[g] * k.cols_pad + qgmm_blocked_offset(r - b0, c, k.cols_pad);
            }
        } else {
            const int64_t g = qgmm_k_group_of(k.offs, k.offs_stride, k.G, c * 32);
            if (g >= 0) {
                const int64_t c0 = (g == 0 ? 0 : k.offs[(g - 1) * k.offs_stride]) / 32;
                const int64_t width = qgmm_round_up_i64(k.offs[g * k.offs_stride] / 32 - c0, 4);
                off = (int64_t)start[g] * k.rows_pad + qgmm_blocked_offset(r, c - c0, width);
            }
        }
        k.plain_out[qgmm_kidx(k.plain, e, r, c)] = (off >= 0 && off < k.blk_len) ? k.blk_in[off * k.blk_stride] : 0;
    }
}

/* ------------------------------------------------------------------ token padding */
typedef struct qgmm_kpad {
    const uint8_t *src;
    uint8_t *dst;
    int64_t src_rs, dst_rs;     /* row strides in BYTES */
    int64_t src_cs, dst_cs;     /* column strides in bytes (element path) */
    int64_t esz, cols;          /* element size, columns */
    int vec;                    /* 16-byte units: rows contiguous, row bytes % 16 == 0, aligned */
    int64_t src_rows, dst_rows;
    const int32_t *offs;
    int64_t offs_stride, G, align;
    int32_t *padded_start, *padded_offs;
    int64_t ps_stride, po_stride;
    uint32_t *status;
} qgmm_kpad;

QGMM_DEV void qgmm_kp_copy_unit(const qgmm_kpad &p, int64_t dr, int64_t sr, int64_t u)
{
    if (p.vec) {
        uint4 v = make_uint4(0, 0, 0, 0);
        if (sr >= 0) v = *(const uint4 *)(p.src + sr * p.src_rs + u * 16);
        *(uint4 *)(p.dst + dr * p.dst_rs + u * 16) = v;
    } else {
        uint8_t *d = p.dst + dr * p.dst_rs + u * p.dst_cs;
        const uint8_t *s = sr >= 0 ? p.src + sr * p.src_rs + u * p.src_cs : NULL;
        for (int64_t i = 0; i < p.esz; ++i) d[i] = s ? s[i] : 0;
    }
}

/* One row by one warp: 4 independent 16-byte loads in flight per lane. */
QGMM_DEV void qgmm_kp_copy_row(const qgmm_kpad &p, int64_t dr, int64_t sr, int64_t upr, int lane)
{
    if (p.vec) {
        const uint4 *src = sr >= 0 ? (const uint4 *)(p.src + sr * p.src_rs) : NULL;
        uint4 *dst = (uint4 *)(p.dst + dr * p.dst_rs);
        int64_t u = lane;
        for (; u + 3 * QGMM_WARP < upr; u += 4 * QGMM_WARP) {
            uint4 v[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) v[i] = src ? src[u + i * QGMM_WARP] : make_uint4(0, 0, 0, 0);
#pragma unroll
            for (int i = 0; i < 4; ++i) dst[u + i * QGMM_WARP] = v[i];
        }
        for (; u < upr; u += QGMM_WARP) dst[u] = src ? src[u] : make_uint4(0, 0, 0, 0);
    } else {
        for (int64_t u = lane; u < upr; u += QGMM_WARP) qgmm_kp_copy_unit(p, dr, sr, u);
    }
}

/* pad: out row pr holds x row (begin_g + pr - start_g) when inside group g's rows. */
QGMM_KERNEL void qgmm_kp_pad(qgmm_kpad p)
{
    QGMM_SHARED int32_t start[QGMM_KL_MAX_GROUPS + 1];
    QGMM_SHARED int64_t tmp[QGMM_MAX_THREADS];
    if (!qgmm_block_offsets_ok(p.offs, p.offs_stride, p.G, p.src_rows, 1, p.status, QGMM_BID_X == 0)) return;
    qgmm_kl_padded_starts(p.offs, p.offs_stride, p.G, 1, p.align, start, tmp);
    if (QGMM_BID_X == 0) {
        for (int64_t g = QGMM_TID; g < p.G; g += QGMM_NTHREADS) {
            if (p.padded_start) p.padded_start[g * p.ps_stride] = start[g];
            if (p.padded_offs) p.padded_offs[g * p.po_stride] = start[g + 1];
        }
    }
    /* one warp per padded row: the row's source found once, lanes stream its units */
    const int64_t upr = p.vec ? (p.cols * p.esz) / 16 : p.cols;
    const int lane = QGMM_TID % QGMM_WARP, wpb = QGMM_NTHREADS / QGMM_WARP;
    for (int64_t pr = QGMM_BID_X * wpb + QGMM_TID / QGMM_WARP; pr < p.dst_rows; pr += QGMM_NBLOCKS_X * wpb) {
        const int64_t g = qgmm_kl_owner(start, p.G, pr);
        int64_t sr = -1;
        if (g >= 0) {
            const int64_t b0 = g == 0 ? 0 : p.offs[(g - 1) * p.offs_stride];
            if (pr - start[g] < p.offs[g * p.offs_stride] - b0) sr = b0 + pr - start[g];
        }
        qgmm_kp_copy_row(p, pr, sr, upr, lane);
    }
}

/* The fused pad's plan (backends/cuda_hip/cast_pad.cu), one block: the offsets checked
 * (bad: raise, map[0] = 0, nothing else written), the padded ends written to padded_offs,
 * and for each 32-row block j < nblk of the padded rows (the token block is 32 or 128, so
 * a block lies in one padded group) map[2 + 2j] = the x row of its first row and
 * map[3 + 2j] = how many of its rows hold tokens; map[0] = 1. */
QGMM_KERNEL void qgmm_kp_gather_plan(qgmm_kpad p, int32_t *map, int64_t nblk)
{
    QGMM_SHARED int32_t start[QGMM_KL_MAX_GROUPS + 1];
    QGMM_SHARED int64_t tmp[QGMM_MAX_THREADS];
    if (!qgmm_block_offsets_ok(p.offs, p.offs_stride, p.G, p.src_rows, 1, p.status, 1)) {
        if (QGMM_TID == 0) map[0] = 0;
        return;
    }
    qgmm_kl_padded_starts(p.offs, p.offs_stride, p.G, 1, p.align, start, tmp);
    for (int64_t g = QGMM_TID; g < p.G; g += QGMM_NTHREADS) p.padded_offs[g * p.po_stride] = start[g + 1];
    for (int64_t j = QGMM_TID; j < nblk; j += QGMM_NTHREADS) {
        const int64_t pr = 32 * j, g = qgmm_kl_owner(start, p.G, pr);
        int64_t base = 0, valid = 0;
        if (g >= 0) {
            const int64_t b0 = g == 0 ? 0 : p.offs[(g - 1) * p.offs_stride];
            const int64_t left = p.offs[g * p.offs_stride] - b0 - (pr - start[g]);
            if (left > 0) {
                base = b0 + pr - start[g];
                valid = left < 32 ? left : 32;
            }
        }
        map[2 + 2 * j] = (int32_t)base;
        map[3 + 2 * j] = (int32_t)valid;
    }
    if (QGMM_TID == 0) map[0] = 1;
}

/* unpad: out row t (of dst_rows = T) from padded row start_g + t - begin_g; rows past
 * offs[G-1] are zero. Bad when the padded groups do not fit in src_rows. */
QGMM_KERNEL void qgmm_kp_unpad(qgmm_kpad p)
{
    QGMM_SHARED int32_t start[QGMM_KL_MAX_GROUPS + 1];
    QGMM_SHARED int64_t tmp[QGMM_MAX_THREADS];
    if (!qgmm_block_offsets_ok(p.offs, p.offs_stride, p.G, p.dst_rows, 1, p.status, QGMM_BID_X == 0)) return;
    qgmm_kl_padded_starts(p.offs, p.offs_stride, p.G, 1, p.align, start, tmp);
    if (start[p.G] > p.src_rows) {
        if (QGMM_BID_X == 0 && QGMM_TID == 0) QGMM_RAISE_STATUS(p.status, QGMM_K_STATUS_BAD_OFFSETS);
        return;
    }
    const int64_t covered = p.G > 0 ? p.offs[(p.G - 1) * p.offs_stride] : 0;
    const int64_t upr = p.vec ? (p.cols * p.esz) / 16 : p.cols;
    const int lane = QGMM_TID % QGMM_WARP, wpb = QGMM_NTHREADS / QGMM_WARP;
    for (int64_t r = QGMM_BID_X * wpb + QGMM_TID / QGMM_WARP; r < p.dst_rows; r += QGMM_NBLOCKS_X * wpb) {
        int64_t sr = -1;
        if (r < covered) {
            const int64_t g = qgmm_k_group_of(p.offs, p.offs_stride, p.G, r);
            const int64_t b0 = g == 0 ? 0 : p.offs[(g - 1) * p.offs_stride];
            sr = start[g] + (r - b0);
        }
        qgmm_kp_copy_row(p, r, sr, upr, lane);
    }
}

/* ------------------------------------------------------------------ row ids */
typedef struct qgmm_krowids {
    const int32_t *offs, *poffs;   /* poffs NULL: unpadded space */
    int64_t offs_stride, po_stride, G, PG;
    int32_t *ids;
    int64_t ids_stride, rows;
    uint32_t *status;
} qgmm_krowids;

QGMM_KERNEL void qgmm_kr_row_ids(qgmm_krowids k)
{
    int ok;
    if (k.poffs) {
        int bad = k.PG != k.G;
        for (int64_t g = QGMM_TID; !bad && g < k.G; g += QGMM_NTHREADS) {
            const int64_t ps = g == 0 ? 0 : k.poffs[(g - 1) * k.po_stride];
            const int64_t os = g == 0 ? 0 : k.offs[(g - 1) * k.offs_stride];
            if (k.poffs[g * k.po_stride] - ps < k.offs[g * k.offs_stride] - os) bad = 1;
        }
        bad = QGMM_SYNC_OR(bad);
        ok = !bad;
        /* the two calls below are block-uniform */
        ok = qgmm_block_offsets_ok(k.poffs, k.po_stride, k.G, k.rows, 1, k.status, 0) && ok;
        ok = qgmm_block_offsets_ok(k.offs, k.offs_stride, k.G, 0x7FFFFFFF, 1, k.status, 0) && ok;
        if (!ok && QGMM_BID_X == 0 && QGMM_TID == 0) QGMM_RAISE_STATUS(k.status, QGMM_K_STATUS_BAD_OFFSETS);
    } else {
        ok = qgmm_block_offsets_ok(k.offs, k.offs_stride, k.G, k.rows, 1, k.status, QGMM_BID_X == 0);
    }
    if (!ok) return;
    for (int64_t r = QGMM_BID_X * QGMM_NTHREADS + QGMM_TID; r < k.rows; r += QGMM_NBLOCKS_X * QGMM_NTHREADS) {
        int32_t id;
        if (k.poffs) {
            const int64_t g = qgmm_k_group_of(k.poffs, k.po_stride, k.G, r);
            id = -1;
            if (g >= 0) {
                const int64_t ps = g == 0 ? 0 : k.poffs[(g - 1) * k.po_stride];
                const int64_t os = g == 0 ? 0 : k.offs[(g - 1) * k.offs_stride];
                if (r - ps < k.offs[g * k.offs_stride] - os) id = (int32_t)g;
            }
        } else {
            id = (int32_t)qgmm_k_group_of(k.offs, k.offs_stride, k.G, r);
        }
        k.ids[r * k.ids_stride] = id;
    }
}

#endif /* QGMM_KERNELS_LAYOUT_CUH */
