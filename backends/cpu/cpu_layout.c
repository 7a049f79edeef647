/*
 * cpu_layout.c — the CPU reference of ops-spec §4 (scales to/from the blocked layout),
 * §5 (token-group padding) and DeepGEMM's per-row group ids. The byte layouts are
 * written out in docs/layouts.md; the index maps themselves live in
 * kernels/qgmm_layout_maps.h so every backend shares them.
 *
 * Offsets are read and checked first; when they are bad nothing is written and the
 * context status word is raised (reported by qgmm_synchronize as QGMM_ERR_BAD_OFFSETS).
 */
#include "cpu_ops.h"
#include "qgmm_layout_maps.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ small helpers */

static uint8_t *tensor_bytes(const qgmm_tensor *t) { return (uint8_t *)qgmm_tensor_data(t); }

static int present(const qgmm_tensor *t) { return t != NULL && t->buffer != NULL; }

/* The G offsets copied out of their (possibly strided) rank-1 tensor. NULL on OOM. */
static int32_t *read_offsets(const qgmm_tensor *offs, int64_t *groups)
{
    const int64_t g = offs->shape[0];
    int32_t *o = (int32_t *)malloc((size_t)(g > 0 ? g : 1) * sizeof(int32_t));
    if (!o) return NULL;
    const int32_t *src = (const int32_t *)qgmm_tensor_data(offs);
    for (int64_t i = 0; i < g; ++i) o[i] = src[i * offs->strides[0]];
    *groups = g;
    return o;
}

static void write_i32(const qgmm_tensor *t, int64_t i, int32_t v)
{
    ((int32_t *)qgmm_tensor_data(t))[i * t->strides[0]] = v;
}

static int64_t group_begin(const int32_t *offs, int64_t g) { return g == 0 ? 0 : offs[g - 1]; }

/* ------------------------------------------------------------------ blocked layout
 * A "plan" says where scale (e, r, c) of the plain matrix lands in the blocked buffer.
 * For the grouped variants it holds, per group, the first plain row/column, the padded
 * start row/column in the output and the padded width used by that group's tiles. */
typedef struct blocked_plan {
    qgmm_blocked_variant v;
    int64_t experts, rows, cols;   /* plain shape (experts = 1 for 2D) */
    int64_t rows_pad, cols_pad;    /* 128- and 4-multiples of rows, cols */
    int64_t groups;
    int32_t *offs;                 /* M-groups: rows; K-groups: scale columns */
    int64_t *start;                /* padded start row (M) / scale column (K) per group */
} blocked_plan;

static void plan_free(blocked_plan *p)
{
    free(p->offs);
    free(p->start);
}

/* Reads and checks offsets; returns 0 on OOM, sets *bad when offsets are invalid. */
static int plan_make(blocked_plan *p, qgmm_blocked_variant v, const qgmm_tensor *plain,
                     const qgmm_tensor *offs, int *bad)
{
    memset(p, 0, sizeof *p);
    *bad = 0;
    p->v = v;
    if (v == QGMM_BLOCKED_3D) {
        p->experts = plain->shape[0];
        p->rows = plain->shape[1];
        p->cols = plain->shape[2];
    } else {
        p->experts = 1;
        p->rows = plain->shape[0];
        p->cols = plain->shape[1];
    }
    p->rows_pad = qgmm_blocked_rows(p->rows);
    p->cols_pad = qgmm_blocked_cols(p->cols);
    if (v != QGMM_BLOCKED_M_GROUPS && v != QGMM_BLOCKED_K_GROUPS) return 1;

    p->offs = read_offsets(offs, &p->groups);
    p->start = (int64_t *)malloc((size_t)(p->groups > 0 ? p->groups : 1) * sizeof(int64_t));
    if (!p->offs || !p->start) return 0;
    if (v == QGMM_BLOCKED_M_GROUPS) {
        if (!qgmm_offsets_valid(p->offs, p->groups, p->rows, 1)) { *bad = 1; return 1; }
        int64_t s = 0;
        for (int64_t g = 0; g < p->groups; ++g) {
            p->start[g] = s;
            s += qgmm_blocked_rows(p->offs[g] - group_begin(p->offs, g));
        }
    } else {
        /* K-group offsets count data elements along K; each must be a multiple of the
         * MX block (32) so a group owns whole scale columns. */
        if (!qgmm_offsets_valid(p->offs, p->groups, p->cols * 32, 32)) { *bad = 1; return 1; }
        for (int64_t g = 0; g < p->groups; ++g) p->offs[g] /= 32;
        int64_t s = 0;
        for (int64_t g = 0; g < p->groups; ++g) {
            p->start[g] = s;
            s += qgmm_blocked_cols(p->offs[g] - group_begin(p->offs, g));
        }
    }
    return 1;
}

/* Calls fn(plain_index_of(e,r,c), blocked_offset) for every scale that has a home in
 * the blocked buffer. Scales outside every group (M/K-groups past offs[G-1]) have none. */
typedef void (*blocked_visit_fn)(void *ud, int64_t e, int64_t r, int64_t c, int64_t off);

static void plan_visit(const blocked_plan *p, blocked_visit_fn fn, void *ud)
{
    /* Every visit is one (row, column) scale: with no rows or no columns there is none, and
     * the outer loops (up to 2^63 empty experts or rows) must not run. */
    if (p->rows == 0 || p->cols == 0) return;
    switch (p->v) {
    case QGMM_BLOCKED_2D:
    case QGMM_BLOCKED_3D: {
        const int64_t per_expert = p->rows_pad * p->cols_pad;
        for (int64_t e = 0; e < p->experts; ++e)
            for (int64_t r = 0; r < p->rows; ++r)
                for (int64_t c = 0; c < p->cols; ++c)
                    fn(ud, e, r, c, e * per_expert + qgmm_blocked_offset(r, c, p->cols_pad));
        break;
    }
    case QGMM_BLOCKED_M_GROUPS:
        /* Group g is its own blocked matrix of rows_pad(size_g) x cols_pad bytes placed
         * at row start[g] of a (rows + 128 G) x cols_pad byte matrix. */
        for (int64_t g = 0; g < p->groups; ++g) {
            const int64_t r0 = group_begin(p->offs, g), r1 = p->offs[g];
            const int64_t base = p->start[g] * p->cols_pad;
            for (int64_t r = r0; r < r1; ++r)
                for (int64_t c = 0; c < p->cols; ++c)
                    fn(ud, 0, r, c, base + qgmm_blocked_offset(r - r0, c, p->cols_pad));
        }
        break;
    case QGMM_BLOCKED_K_GROUPS:
        /* Group g is its own blocked matrix of rows_pad x cols_pad(size_g) bytes placed
         * at byte start[g] * rows_pad, i.e. column start[g] of a column-blocked buffer of
         * rows_pad x (cols + 4 G) bytes. */
        for (int64_t g = 0; g < p->groups; ++g) {
            const int64_t c0 = group_begin(p->offs, g), c1 = p->offs[g];
            const int64_t width = qgmm_blocked_cols(c1 - c0);
            const int64_t base = p->start[g] * p->rows_pad;
            for (int64_t r = 0; r < p->rows; ++r)
                for (int64_t c = c0; c < c1; ++c)
                    fn(ud, 0, r, c, base + qgmm_blocked_offset(r, c - c0, width));
        }
        break;
    }
}

typedef struct blocked_io {
    const qgmm_tensor *plain;
    const qgmm_tensor *blocked;
    uint8_t *plain_bytes, *blocked_bytes;
    int64_t blocked_len;
} blocked_io;

static int64_t plain_index(const blocked_io *io, int64_t e, int64_t r, int64_t c)
{
    if (io->plain->rank == 3) return qgmm_cpu_elem_index(io->plain, e, r, c);
    return qgmm_cpu_elem_index(io->plain, r, c, 0);
}

static void visit_scatter(void *ud, int64_t e, int64_t r, int64_t c, int64_t off)
{
    blocked_io *io = (blocked_io *)ud;
    if (off >= io->blocked_len) return; /* cannot happen with a validated out size */
    io->blocked_bytes[off * io->blocked->strides[0]] = io->plain_bytes[plain_index(io, e, r, c)];
}

static void visit_gather(void *ud, int64_t e, int64_t r, int64_t c, int64_t off)
{
    blocked_io *io = (blocked_io *)ud;
    uint8_t v = 0;
    if (off < io->blocked_len) v = io->blocked_bytes[off * io->blocked->strides[0]];
    io->plain_bytes[plain_index(io, e, r, c)] = v;
}

/* Makes the plan of `plain` over offs; 0 when the op is over (*st: out of memory, or
 * QGMM_OK with the status word raised for bad offsets: nothing written). */
static int plan_open(qgmm_context *ctx, const char *op, blocked_plan *p, qgmm_blocked_variant v,
                     const qgmm_tensor *plain, const qgmm_tensor *offs, qgmm_status *st)
{
    int bad = 0;
    *st = QGMM_OK;
    if (!plan_make(p, v, plain, offs, &bad)) {
        plan_free(p);
        *st = qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
        return 0;
    }
    if (bad) {
        plan_free(p);
        qgmm_cpu_raise_status(ctx, QGMM_DEVICE_STATUS_BAD_OFFSETS);
        return 0;
    }
    return 1;
}

qgmm_status qgmm_cpu_scales_to_blocked(qgmm_context *ctx, qgmm_blocked_variant v,
                                       const qgmm_tensor *in, const qgmm_tensor *offs,
                                       const qgmm_tensor *out, const qgmm_tensor *group_starts)
{
    blocked_plan p;
    qgmm_status st;
    if (!plan_open(ctx, "scales_to_blocked", &p, v, in, offs, &st)) return st;
    blocked_io io = {in, out, tensor_bytes(in), tensor_bytes(out), out->shape[0]};
    /* Every output byte is defined: padding (and the unused tail of the grouped upper
     * bound) is zero, then each scale is scattered to its single home. */
    for (int64_t i = 0; i < io.blocked_len; ++i) io.blocked_bytes[i * out->strides[0]] = 0;
    plan_visit(&p, visit_scatter, &io);
    if (present(group_starts) && (v == QGMM_BLOCKED_M_GROUPS || v == QGMM_BLOCKED_K_GROUPS))
        for (int64_t g = 0; g < p.groups; ++g) write_i32(group_starts, g, (int32_t)p.start[g]);
    plan_free(&p);
    return QGMM_OK;
}

qgmm_status qgmm_cpu_scales_from_blocked(qgmm_context *ctx, qgmm_blocked_variant v,
                                         const qgmm_tensor *in, const qgmm_tensor *offs,
                                         const qgmm_tensor *out)
{
    blocked_plan p;
    qgmm_status st;
    if (!plan_open(ctx, "scales_from_blocked", &p, v, out, offs, &st)) return st;
    blocked_io io = {out, in, tensor_bytes(out), tensor_bytes(in), in->shape[0]};
    /* Scales that belong to no group (grouped variants, past offs[G-1]) come back as 0,
     * the value padding holds, so the whole plain output is defined. */
    if ((v == QGMM_BLOCKED_M_GROUPS || v == QGMM_BLOCKED_K_GROUPS) && p.cols > 0)
        for (int64_t r = 0; r < p.rows; ++r)
            for (int64_t c = 0; c < p.cols; ++c) io.plain_bytes[plain_index(&io, 0, r, c)] = 0;
    plan_visit(&p, visit_gather, &io);
    plan_free(&p);
    return QGMM_OK;
}

/* ------------------------------------------------------------------ token padding */

/* Copies one row of `cols` elements of `esz` bytes between two (rows, cols) tensors. */
static void copy_row(const qgmm_tensor *dst, int64_t dr, const qgmm_tensor *src, int64_t sr,
                     int64_t cols, size_t esz)
{
    uint8_t *d = tensor_bytes(dst) + (size_t)(dr * dst->strides[0]) * esz;
    const uint8_t *s = tensor_bytes(src) + (size_t)(sr * src->strides[0]) * esz;
    if ((dst->strides[1] == 1 && src->strides[1] == 1) || cols <= 1) {
        memcpy(d, s, (size_t)cols * esz);
        return;
    }
    for (int64_t c = 0; c < cols; ++c)
        memcpy(d + (size_t)(c * dst->strides[1]) * esz, s + (size_t)(c * src->strides[1]) * esz, esz);
}

static void zero_row(const qgmm_tensor *dst, int64_t dr, int64_t cols, size_t esz)
{
    uint8_t *d = tensor_bytes(dst) + (size_t)(dr * dst->strides[0]) * esz;
    if (dst->strides[1] == 1 || cols <= 1) {
        memset(d, 0, (size_t)cols * esz);
        return;
    }
    for (int64_t c = 0; c < cols; ++c) memset(d + (size_t)(c * dst->strides[1]) * esz, 0, esz);
}

/* Padded starts of every group; returns the padded end of the last group. */
static int64_t padded_starts(const int32_t *offs, int64_t groups, int64_t align, int64_t *start)
{
    int64_t s = 0;
    for (int64_t g = 0; g < groups; ++g) {
        start[g] = s;
        s += qgmm_padded_size(offs[g] - group_begin(offs, g), align);
    }
    return s;
}

/* Source row (in x) of padded row pr, or -1 for a padding row. Binary search over the
 * padded starts: the owner is the last group whose padded start is <= pr. */
static int64_t padded_row_source(const int32_t *offs, const int64_t *start, int64_t groups,
                                 int64_t pr)
{
    int64_t lo = 0, hi = groups;
    while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        if (start[mid] <= pr) lo = mid + 1; else hi = mid;
    }
    /* Empty groups share a start with the next one; take the last group starting at or
     * before pr and check pr falls inside its real (unpadded) rows. */
    const int64_t g = lo - 1;
    if (g < 0) return -1;
    const int64_t size = offs[g] - group_begin(offs, g);
    if (pr - start[g] < size) return group_begin(offs, g) + (pr - start[g]);
    return -1;
}

qgmm_status qgmm_cpu_pad_token_groups(qgmm_context *ctx, int alignment, const qgmm_tensor *x,
                                      const qgmm_tensor *offs, const qgmm_tensor *out,
                                      const qgmm_tensor *padded_start,
                                      const qgmm_tensor *padded_offs)
{
    int64_t groups = 0;
    int32_t *o = read_offsets(offs, &groups);
    int64_t *start = (int64_t *)malloc((size_t)(groups > 0 ? groups : 1) * sizeof(int64_t));
    if (!o || !start) {
        free(o);
        free(start);
        return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "pad_token_groups: out of host memory");
    }
    const int64_t tokens = x->shape[0], cols = x->shape[1], out_rows = out->shape[0];
    if (!qgmm_offsets_valid(o, groups, tokens, 1)) {
        free(o);
        free(start);
        qgmm_cpu_raise_status(ctx, QGMM_DEVICE_STATUS_BAD_OFFSETS);
        return QGMM_OK;
    }
    const size_t esz = qgmm_dtype_size(x->dtype);
    padded_starts(o, groups, alignment, start);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (out_rows * cols > 65536)
#endif
    for (int64_t pr = 0; pr < out_rows; ++pr) {
        const int64_t src = padded_row_source(o, start, groups, pr);
        if (src >= 0) copy_row(out, pr, x, src, cols, esz);
        else zero_row(out, pr, cols, esz);
    }
    for (int64_t g = 0; g < groups; ++g) {
        const int64_t padded = qgmm_padded_size(o[g] - group_begin(o, g), alignment);
        if (present(padded_start)) write_i32(padded_start, g, (int32_t)start[g]);
        if (present(padded_offs)) write_i32(padded_offs, g, (int32_t)(start[g] + padded));
    }
    free(o);
    free(start);
    return QGMM_OK;
}

qgmm_status qgmm_cpu_unpad_token_groups(qgmm_context *ctx, int alignment,
                                        const qgmm_tensor *x_padded, const qgmm_tensor *offs,
                                        const qgmm_tensor *out)
{
    int64_t groups = 0;
    int32_t *o = read_offsets(offs, &groups);
    int64_t *start = (int64_t *)malloc((size_t)(groups > 0 ? groups : 1) * sizeof(int64_t));
    if (!o || !start) {
        free(o);
        free(start);
        return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "unpad_token_groups: out of host memory");
    }
    const int64_t tokens = out->shape[0], cols = out->shape[1];
    /* The padded input must hold every group's padded rows too. */
    int ok = qgmm_offsets_valid(o, groups, tokens, 1);
    if (ok && padded_starts(o, groups, alignment, start) > x_padded->shape[0]) ok = 0;
    if (!ok) {
        free(o);
        free(start);
        qgmm_cpu_raise_status(ctx, QGMM_DEVICE_STATUS_BAD_OFFSETS);
        return QGMM_OK;
    }
    const size_t esz = qgmm_dtype_size(out->dtype);
    const int64_t covered = groups > 0 ? o[groups - 1] : 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (tokens * cols > 65536)
#endif
    for (int64_t r = 0; r < tokens; ++r) {
        if (r >= covered) { /* rows no group owns: defined as zero (docs/layouts.md) */
            zero_row(out, r, cols, esz);
            continue;
        }
        const int64_t g = qgmm_group_of(o, groups, r);
        copy_row(out, r, x_padded, start[g] + (r - group_begin(o, g)), cols, esz);
    }
    free(o);
    free(start);
    return QGMM_OK;
}

/* ------------------------------------------------------------------ row ids */

qgmm_status qgmm_cpu_group_row_ids(qgmm_context *ctx, const qgmm_tensor *offs,
                                   const qgmm_tensor *padded_offs, const qgmm_tensor *row_ids)
{
    int64_t groups = 0, pgroups = 0;
    int32_t *o = read_offsets(offs, &groups);
    int32_t *po = present(padded_offs) ? read_offsets(padded_offs, &pgroups) : NULL;
    int64_t *start = (int64_t *)malloc((size_t)(groups > 0 ? groups : 1) * sizeof(int64_t));
    if (!o || !start || (present(padded_offs) && !po)) {
        free(o);
        free(po);
        free(start);
        return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "group_row_ids: out of host memory");
    }
    const int64_t rows = row_ids->shape[0];
    int ok;
    if (po) {
        /* Padded space: padded_offs must be monotonic within the row count and give
         * every group at least its real size. */
        ok = pgroups == groups && qgmm_offsets_valid(po, groups, rows, 1) &&
             qgmm_offsets_valid(o, groups, INT32_MAX, 1);
        for (int64_t g = 0; ok && g < groups; ++g) {
            start[g] = group_begin(po, g);
            if (po[g] - start[g] < o[g] - group_begin(o, g)) ok = 0;
        }
    } else {
        ok = qgmm_offsets_valid(o, groups, rows, 1);
    }
    if (!ok) {
        free(o);
        free(po);
        free(start);
        qgmm_cpu_raise_status(ctx, QGMM_DEVICE_STATUS_BAD_OFFSETS);
        return QGMM_OK;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (rows > 65536)
#endif
    for (int64_t r = 0; r < rows; ++r) {
        int32_t id;
        if (po) {
            const int64_t g = qgmm_group_of(po, groups, r);
            id = (g >= 0 && r - start[g] < o[g] - group_begin(o, g)) ? (int32_t)g : -1;
        } else {
            id = (int32_t)qgmm_group_of(o, groups, r);
        }
        write_i32(row_ids, r, id);
    }
    free(o);
    free(po);
    free(start);
    return QGMM_OK;
}
