/*
 * qgmm_cases_ops.c — prepare and execute of the EXACT cases (casts, dequantize, scale
 * layouts, token padding, row ids): which buffers each op gets, with which views, and
 * which output bytes it must write (the rest must keep their poison).
 */
#include <stdlib.h>
#include <string.h>

#include "qgmm_cases_impl.h"
#include "qgmm_fp8_codec.h"

/* Slot numbering in in->sl[] / in->v[] */
enum { S_X = 0, S_Q, S_SCALES, S_X1, S_Q1, S_SCALES1, S_OUT, S_AUX0, S_AUX1 };

/* ------------------------------------------------------------------ helpers */
static int add_hp_input(qgmm_case_instance *in, const char *name, qgmm_dtype dt, int64_t rows,
                        int64_t cols, uint64_t salt, qgmm_status *st)
{
    const int64_t n = rows * cols;
    const int s = qc_add_slot(in, name, QC_IN, (size_t)n * qgmm_dtype_size(dt), NULL, st);
    if (s < 0) return s;
    qc_fill_as(in->slots[s].host, dt, rows, cols, in->c.input, in->c.q_dtype, 1, 4, qc_mix_seed(in->c.seed, salt));
    if ((*st = qc_upload_slot(in, s)) != QGMM_OK) return -1;
    return s;
}

/* Random bytes; `lo..hi` bounds each byte (E8M0 scales near 2^0 stay usable). */
static int add_byte_input(qgmm_case_instance *in, const char *name, size_t n, uint64_t salt,
                          unsigned lo, unsigned hi, qgmm_status *st)
{
    uint8_t *b = malloc(n ? n : 1);
    if (!b) { *st = QGMM_ERR_OUT_OF_MEMORY; return -1; }
    const uint64_t s0 = qc_mix_seed(in->c.seed, salt);
    /* byte i is the (i+1)-th draw of one splitmix64 stream from s0; its state after i draws
     * is s0 + i * step, so the bytes are filled in parallel and equal the serial stream */
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (n > (1 << 16))
#endif
    for (size_t i = 0; i < n; ++i) {
        qc_rng r = {s0 + (uint64_t)i * QC_RNG_STEP};
        b[i] = (uint8_t)qc_range(&r, lo, hi);
    }
    if (in->c.input == QGMM_INPUT_EDGE && hi - lo > 200)
        for (size_t i = 0; i < n; i += 13) b[i] = (uint8_t)((i / 13) % 2 ? 0xFF : 0x80);
    const int s = qc_add_slot(in, name, QC_IN, n, b, st);
    free(b);
    return s;
}

/* f32 scales: positive, spread over 2^[-12, 12]; EDGE also plants 0, inf and NaN. */
static int add_f32_scales_input(qgmm_case_instance *in, const char *name, size_t n, uint64_t salt,
                                qgmm_status *st)
{
    float *f = malloc((n ? n : 1) * sizeof *f);
    if (!f) { *st = QGMM_ERR_OUT_OF_MEMORY; return -1; }
    qc_rng r = {qc_mix_seed(in->c.seed, salt)};
    for (size_t i = 0; i < n; ++i)
        f[i] = (float)(0.5 + qc_uniform(&r)) * qgmm_pow2_f32((int)qc_range(&r, -12, 12));
    if (in->c.input == QGMM_INPUT_EDGE) {
        const float sp[] = {0.0f, qgmm_bits_f32(0x7F800000u), qgmm_bits_f32(0x7FC00000u), 1e-42f};
        for (size_t i = 3; i < n; i += 17) f[i] = sp[(i / 17) % 4];
    }
    const int s = qc_add_slot(in, name, QC_IN, n * 4, f, st);
    free(f);
    return s;
}

static int add_output(qgmm_case_instance *in, const char *name, size_t span, qgmm_status *st)
{
    return qc_add_slot(in, name, QC_OUT, span, NULL, st);
}

/* Registers an output view: stores it and marks the bytes it addresses as must-write. */
static void out_view(qgmm_case_instance *in, int idx, qgmm_tensor v)
{
    in->v[idx] = v;
    qc_mark_view(&in->slots[in->sl[idx]], &in->v[idx], 0, -1);
}

static qgmm_tensor offs_view(qgmm_case_instance *in)
{
    qgmm_tensor t;
    memset(&t, 0, sizeof t);
    if (in->offs_slot < 0) return t; /* buffer NULL: absent */
    const int64_t sh[1] = {in->G};
    return qc_view(in, in->offs_slot, QGMM_I32, 1, sh, NULL);
}

#define TRY_SLOT(idx, expr)                  \
    do {                                     \
        in->sl[idx] = (expr);                \
        if (in->sl[idx] < 0) return st;      \
    } while (0)

/* Shapes of the data tensor of a cast: (E?, R, C). */
static int data_rank(const qgmm_case *c) { return c->shape.E > 0 ? 3 : 2; }
static void data_shape(const qgmm_case *c, int64_t *sh)
{
    if (c->shape.E > 0) { sh[0] = c->shape.E; sh[1] = c->shape.M; sh[2] = c->shape.K; }
    else { sh[0] = c->shape.M; sh[1] = c->shape.K; sh[2] = 1; }
}
#define QC_PITCH_PAD 32

/* q strides: row-major, or each (R, C) matrix stored transposed (column-major); with
 * padded_pitch the leading dimension is 32 elements longer. Returns the elements spanned. */
static int64_t q_strides(const qgmm_case *c, int64_t *st)
{
    const int64_t R = c->shape.M, C = c->shape.K, pad = c->padded_pitch ? QC_PITCH_PAD : 0;
    const int64_t ld = c->transposed_out ? R + pad : C + pad;
    const int64_t per = ld * (c->transposed_out ? C : R);
    if (c->shape.E > 0) {
        st[0] = per;
        st[1] = c->transposed_out ? 1 : ld;
        st[2] = c->transposed_out ? ld : 1;
        return per * c->shape.E;
    }
    st[0] = c->transposed_out ? 1 : ld;
    st[1] = c->transposed_out ? ld : 1;
    return per;
}

static int64_t numel3(const int64_t *sh, int rank)
{
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= sh[d];
    return n;
}

/* Logical rowwise scales shape (rank, dims). */
static int rowwise_scales_shape(const qgmm_case_instance *in, int64_t *ssh)
{
    const qgmm_case *c = &in->c;
    if (c->shape.E > 0) {
        ssh[0] = c->shape.E;
        ssh[1] = c->rowwise.reduce_dim == 2 ? c->shape.M : c->shape.K;
        return 2;
    }
    const int64_t other = c->rowwise.reduce_dim == 1 ? c->shape.M : c->shape.K;
    if (in->G > 0) { ssh[0] = in->G; ssh[1] = other; return 2; }
    ssh[0] = other;
    return 1;
}

/* MX scale matrix of one expert: (other, blocks). */
static void mx_dims(const qgmm_case *c, int64_t *other, int64_t *blocks)
{
    const int dim1 = c->transposed_out;
    *other = dim1 ? c->shape.K : c->shape.M;
    *blocks = (dim1 ? c->shape.M : c->shape.K) / 32;
}

static size_t mx_scales_bytes(const qgmm_case *c)
{
    int64_t other, blocks;
    mx_dims(c, &other, &blocks);
    const int64_t E = c->shape.E > 0 ? c->shape.E : 1, G = qgmm_case_offsets(c, NULL, 0);
    switch (c->mx.scale_layout) {
    case QGMM_SCALES_BLOCKED: return (size_t)E * qgmm_blocked_scales_bytes(other, blocks);
    case QGMM_SCALES_BLOCKED_M_GROUPS: return qgmm_blocked_m_groups_bytes(other, blocks, G);
    case QGMM_SCALES_BLOCKED_K_GROUPS: return qgmm_blocked_k_groups_bytes(other, blocks, G);
    default: return (size_t)(E * other * blocks);
    }
}

static qgmm_tensor mx_scales_view(qgmm_case_instance *in, int slot)
{
    const qgmm_case *c = &in->c;
    int64_t other, blocks;
    mx_dims(c, &other, &blocks);
    const int64_t E = c->shape.E > 0 ? c->shape.E : 1;
    if (c->mx.scale_layout != QGMM_SCALES_PLAIN) {
        const int64_t sh[1] = {(int64_t)mx_scales_bytes(c)};
        return qc_view(in, slot, QGMM_E8M0, 1, sh, NULL);
    }
    if (c->shape.E > 0) {
        const int64_t sh[3] = {E, other, blocks};
        return qc_view(in, slot, QGMM_E8M0, 3, sh, NULL);
    }
    const int64_t sh[2] = {other, blocks};
    return qc_view(in, slot, QGMM_E8M0, 2, sh, NULL);
}


static qgmm_status bw_scales(qgmm_case_instance *in, qgmm_tensor *view, size_t *bytes)
{
    int64_t sh[3];
    data_shape(&in->c, sh);
    return qgmm_blockwise_scales_view(in->c.blockwise.block, in->c.blockwise_layout, data_rank(&in->c),
                                      sh, NULL, 0, view, bytes);
}

/* ------------------------------------------------------------------ prepare */
static qgmm_status prep_quantize(qgmm_case_instance *in)
{
    const qgmm_case *c = &in->c;
    qgmm_status st = QGMM_OK;
    int64_t sh[3], qs[3];
    data_shape(c, sh);
    const int rank = data_rank(c);
    const int64_t n = numel3(sh, rank);
    /* transposed_in: x is each (R, C) matrix stored column-major */
    const int lead = c->transposed_in ? rank - 2 : rank - 1;
    const int64_t pitch = sh[lead] + (c->padded_pitch ? QC_PITCH_PAD : 0);
    /* x rows `pitch` apart; the gap elements hold the same random data (never read) */
    TRY_SLOT(S_X, add_hp_input(in, "x", c->in_dtype, n / sh[lead], pitch, 1, &st));
    int64_t xs[3];
    xs[lead] = 1;
    xs[c->transposed_in ? rank - 1 : rank - 2] = pitch;
    if (rank == 3) xs[0] = pitch * (n / sh[0] / sh[lead]);
    in->v[S_X] = qc_view(in, in->sl[S_X], c->in_dtype, rank, sh, xs);
    const int64_t qspan = q_strides(c, qs);
    TRY_SLOT(S_Q, add_output(in, "q", (size_t)qspan, &st));
    out_view(in, S_Q, qc_view(in, in->sl[S_Q], c->q_dtype, rank, sh, qs));

    if (c->op == QGMM_CASE_FP8_ROWWISE) {
        int64_t ssh[2];
        const int sr = rowwise_scales_shape(in, ssh);
        TRY_SLOT(S_SCALES, add_output(in, "scales", (size_t)numel3(ssh, sr) * 4, &st));
        out_view(in, S_SCALES, qc_view(in, in->sl[S_SCALES], QGMM_F32, sr, ssh, NULL));
    } else if (c->op == QGMM_CASE_MXFP8) {
        TRY_SLOT(S_SCALES, add_output(in, "scales", mx_scales_bytes(c), &st));
        out_view(in, S_SCALES, mx_scales_view(in, in->sl[S_SCALES]));
    } else {
        qgmm_tensor v;
        size_t bytes = 0;
        st = bw_scales(in, &v, &bytes);
        if (st != QGMM_OK) return st;
        TRY_SLOT(S_SCALES, add_output(in, "scales", bytes, &st));
        v.buffer = in->slots[in->sl[S_SCALES]].buf;
        v.offset = in->slots[in->sl[S_SCALES]].guard;
        out_view(in, S_SCALES, v);
    }
    return QGMM_OK;
}

static qgmm_status prep_dual(qgmm_case_instance *in)
{
    const qgmm_case *c = &in->c;
    qgmm_status st = QGMM_OK;
    const int64_t M = c->shape.M, w[2] = {c->shape.K, c->shape.N};
    const int xs[2] = {S_X, S_X1}, qsl[2] = {S_Q, S_Q1}, ss[2] = {S_SCALES, S_SCALES1};
    const char *xn[2] = {"x0", "x1"}, *qn[2] = {"q0", "q1"}, *sn[2] = {"scales0", "scales1"};
    for (int t = 0; t < 2; ++t) {
        const int64_t sh[2] = {M, w[t]}, cm[2] = {1, M};
        TRY_SLOT(xs[t], add_hp_input(in, xn[t], c->in_dtype, M, w[t], 1 + (uint64_t)t, &st));
        in->v[xs[t]] = qc_view(in, in->sl[xs[t]], c->in_dtype, 2, sh, NULL);
        TRY_SLOT(qsl[t], add_output(in, qn[t], (size_t)(M * w[t]), &st));
        out_view(in, qsl[t], qc_view(in, in->sl[qsl[t]], c->q_dtype, 2, sh, cm));
        const int64_t ssh[2] = {in->G, w[t]};
        TRY_SLOT(ss[t], add_output(in, sn[t], (size_t)(in->G * w[t]) * 4, &st));
        out_view(in, ss[t], qc_view(in, in->sl[ss[t]], QGMM_F32, 2, ssh, NULL));
    }
    return QGMM_OK;
}

static qgmm_status prep_dequant(qgmm_case_instance *in)
{
    const qgmm_case *c = &in->c;
    qgmm_status st = QGMM_OK;
    int64_t sh[3], qs[3];
    data_shape(c, sh);
    const int rank = data_rank(c);
    const int64_t n = numel3(sh, rank);
    const int64_t qspan = q_strides(c, qs);
    TRY_SLOT(S_Q, add_byte_input(in, "q", (size_t)qspan, 2, 0, 255, &st));
    in->v[S_Q] = qc_view(in, in->sl[S_Q], c->q_dtype, rank, sh, qs);
    if (c->dequant_kind == QGMM_QUANT_FP8_ROWWISE) {
        int64_t ssh[2];
        const int sr = rowwise_scales_shape(in, ssh);
        TRY_SLOT(S_SCALES, add_f32_scales_input(in, "scales", (size_t)numel3(ssh, sr), 3, &st));
        in->v[S_SCALES] = qc_view(in, in->sl[S_SCALES], QGMM_F32, sr, ssh, NULL);
    } else if (c->dequant_kind == QGMM_QUANT_MXFP8) {
        const int edge = c->input == QGMM_INPUT_EDGE;
        TRY_SLOT(S_SCALES, add_byte_input(in, "scales", mx_scales_bytes(c), 3, edge ? 0 : 115,
                                          edge ? 255 : 135, &st));
        in->v[S_SCALES] = mx_scales_view(in, in->sl[S_SCALES]);
    } else {
        qgmm_tensor v;
        size_t bytes = 0;
        st = bw_scales(in, &v, &bytes);
        if (st != QGMM_OK) return st;
        TRY_SLOT(S_SCALES, add_f32_scales_input(in, "scales", bytes / 4, 3, &st));
        v.buffer = in->slots[in->sl[S_SCALES]].buf;
        v.offset = 0;
        in->v[S_SCALES] = v;
    }
    TRY_SLOT(S_OUT, add_output(in, "out", (size_t)n * qgmm_dtype_size(c->out_dtype), &st));
    out_view(in, S_OUT, qc_view(in, in->sl[S_OUT], c->out_dtype, rank, sh, NULL));
    return QGMM_OK;
}

/* Plain scales (E?, R, C) of the layout cases: R = M rows, C = K/32. */
static size_t blocked_bytes(const qgmm_case_instance *in)
{
    const qgmm_case *c = &in->c;
    const int64_t R = c->shape.M, C = c->shape.K / 32;
    switch (c->blocked) {
    case QGMM_BLOCKED_2D: return qgmm_blocked_scales_bytes(R, C);
    case QGMM_BLOCKED_3D: return (size_t)c->shape.E * qgmm_blocked_scales_bytes(R, C);
    case QGMM_BLOCKED_M_GROUPS: return qgmm_blocked_m_groups_bytes(R, C, in->G);
    case QGMM_BLOCKED_K_GROUPS: return qgmm_blocked_k_groups_bytes(R, C, in->G);
    }
    return 0;
}

static qgmm_status prep_blocked(qgmm_case_instance *in)
{
    const qgmm_case *c = &in->c;
    qgmm_status st = QGMM_OK;
    const int three = c->blocked == QGMM_BLOCKED_3D;
    const int64_t psh[3] = {three ? c->shape.E : c->shape.M, three ? c->shape.M : c->shape.K / 32,
                            c->shape.K / 32};
    const int prank = three ? 3 : 2;
    const size_t pbytes = (size_t)numel3(psh, prank), bbytes = blocked_bytes(in);
    const int64_t bsh[1] = {(int64_t)bbytes};
    if (c->op == QGMM_CASE_SCALES_TO_BLOCKED) {
        TRY_SLOT(S_X, add_byte_input(in, "in", pbytes, 4, 0, 255, &st));
        in->v[S_X] = qc_view(in, in->sl[S_X], c->in_dtype, prank, psh, NULL);
        TRY_SLOT(S_OUT, add_output(in, "out", bbytes, &st));
        out_view(in, S_OUT, qc_view(in, in->sl[S_OUT], c->in_dtype, 1, bsh, NULL));
        if (c->row_ids_padded) { /* ask for the group start rows / columns too */
            const int64_t gsh[1] = {in->G};
            TRY_SLOT(S_AUX0, add_output(in, "group_starts", (size_t)in->G * 4, &st));
            out_view(in, S_AUX0, qc_view(in, in->sl[S_AUX0], QGMM_I32, 1, gsh, NULL));
        } else {
            memset(&in->v[S_AUX0], 0, sizeof in->v[S_AUX0]);
        }
    } else {
        TRY_SLOT(S_X, add_byte_input(in, "in", bbytes, 4, 0, 255, &st));
        in->v[S_X] = qc_view(in, in->sl[S_X], c->in_dtype, 1, bsh, NULL);
        TRY_SLOT(S_OUT, add_output(in, "out", pbytes, &st));
        out_view(in, S_OUT, qc_view(in, in->sl[S_OUT], c->in_dtype, prank, psh, NULL));
    }
    return QGMM_OK;
}

/* padded_offs as qgmm_pad_token_groups defines them (ops-spec §5), for row-id cases. */
static void host_padded_offs(const qgmm_case_instance *in, int32_t *po)
{
    int64_t acc = 0, prev = 0;
    for (int64_t g = 0; g < in->G; ++g) {
        const int64_t a = in->c.alignment;
        acc += (in->offs[g] - prev + a - 1) / a * a;
        prev = in->offs[g];
        po[g] = (int32_t)acc;
    }
}

static qgmm_status prep_padding(qgmm_case_instance *in)
{
    const qgmm_case *c = &in->c;
    qgmm_status st = QGMM_OK;
    const int64_t T = c->shape.M, D = c->shape.K, A = c->alignment;
    const int64_t P = qgmm_padded_rows_bound(T, in->G, (int)A);
    const size_t es = qgmm_dtype_size(c->in_dtype);
    const int64_t tsh[2] = {T, D}, psh[2] = {P, D}, gsh[1] = {in->G};
    if (c->op == QGMM_CASE_PAD) {
        TRY_SLOT(S_X, add_byte_input(in, "x", (size_t)(T * D) * es, 5, 0, 255, &st));
        in->v[S_X] = qc_view(in, in->sl[S_X], c->in_dtype, 2, tsh, NULL);
        TRY_SLOT(S_OUT, add_output(in, "out", (size_t)(P * D) * es, &st));
        out_view(in, S_OUT, qc_view(in, in->sl[S_OUT], c->in_dtype, 2, psh, NULL));
        TRY_SLOT(S_AUX0, add_output(in, "padded_start", (size_t)in->G * 4, &st));
        out_view(in, S_AUX0, qc_view(in, in->sl[S_AUX0], QGMM_I32, 1, gsh, NULL));
        TRY_SLOT(S_AUX1, add_output(in, "padded_offs", (size_t)in->G * 4, &st));
        out_view(in, S_AUX1, qc_view(in, in->sl[S_AUX1], QGMM_I32, 1, gsh, NULL));
    } else if (c->op == QGMM_CASE_UNPAD) {
        TRY_SLOT(S_X, add_byte_input(in, "x_padded", (size_t)(P * D) * es, 5, 0, 255, &st));
        in->v[S_X] = qc_view(in, in->sl[S_X], c->in_dtype, 2, psh, NULL);
        TRY_SLOT(S_OUT, add_output(in, "out", (size_t)(T * D) * es, &st));
        out_view(in, S_OUT, qc_view(in, in->sl[S_OUT], c->in_dtype, 2, tsh, NULL));
    } else { /* row ids */
        const int64_t rows = c->row_ids_padded ? P : T;
        const int64_t rsh[1] = {rows};
        if (c->row_ids_padded) {
            int32_t *po = malloc((size_t)(in->G > 0 ? in->G : 1) * 4);
            if (!po) return QGMM_ERR_OUT_OF_MEMORY;
            host_padded_offs(in, po);
            in->sl[S_X] = qc_add_slot(in, "padded_offs", QC_IN, (size_t)in->G * 4, po, &st);
            free(po);
            if (in->sl[S_X] < 0) return st;
            in->v[S_X] = qc_view(in, in->sl[S_X], QGMM_I32, 1, gsh, NULL);
        } else {
            memset(&in->v[S_X], 0, sizeof in->v[S_X]);
        }
        TRY_SLOT(S_OUT, add_output(in, "row_ids", (size_t)rows * 4, &st));
        out_view(in, S_OUT, qc_view(in, in->sl[S_OUT], QGMM_I32, 1, rsh, NULL));
    }
    return QGMM_OK;
}

qgmm_status qc_prepare_op(qgmm_case_instance *in)
{
    switch (in->c.op) {
    case QGMM_CASE_FP8_ROWWISE:
    case QGMM_CASE_MXFP8:
    case QGMM_CASE_FP8_BLOCKWISE: return prep_quantize(in);
    case QGMM_CASE_FP8_ROWWISE_DUAL: return prep_dual(in);
    case QGMM_CASE_DEQUANTIZE: return prep_dequant(in);
    case QGMM_CASE_SCALES_TO_BLOCKED:
    case QGMM_CASE_SCALES_FROM_BLOCKED: return prep_blocked(in);
    case QGMM_CASE_PAD:
    case QGMM_CASE_UNPAD:
    case QGMM_CASE_GROUP_ROW_IDS: return prep_padding(in);
    default: return QGMM_ERR_INTERNAL;
    }
}

/* ------------------------------------------------------------------ execute */
qgmm_status qc_execute_op(qgmm_case_instance *in)
{
    const qgmm_case *c = &in->c;
    qgmm_context *ctx = in->ctx;
    const qgmm_tensor offs = offs_view(in);
    qgmm_tensor *v = in->v;
    switch (c->op) {
    case QGMM_CASE_FP8_ROWWISE:
        return qgmm_quantize_fp8_rowwise(ctx, &c->rowwise, &v[S_X], &offs, &v[S_Q], &v[S_SCALES]);
    case QGMM_CASE_FP8_ROWWISE_DUAL:
        return qgmm_quantize_fp8_rowwise_dual(ctx, &c->rowwise, &v[S_X], &v[S_Q], &v[S_SCALES],
                                              &c->rowwise, &v[S_X1], &v[S_Q1], &v[S_SCALES1], &offs);
    case QGMM_CASE_MXFP8:
        if (c->mx.scale_layout == QGMM_SCALES_BLOCKED_M_GROUPS || c->mx.scale_layout == QGMM_SCALES_BLOCKED_K_GROUPS)
            return qgmm_quantize_mxfp8_grouped(ctx, &c->mx, &v[S_X], &offs, &v[S_Q], &v[S_SCALES]);
        return qgmm_quantize_mxfp8(ctx, &c->mx, &v[S_X], &v[S_Q], &v[S_SCALES]);
    case QGMM_CASE_FP8_BLOCKWISE:
        return qgmm_quantize_fp8_blockwise(ctx, &c->blockwise, &v[S_X], &v[S_Q], &v[S_SCALES]);
    case QGMM_CASE_DEQUANTIZE: {
        qgmm_quant_format f;
        memset(&f, 0, sizeof f);
        f.kind = c->dequant_kind;
        f.rowwise = c->rowwise;
        f.mx = c->mx;
        f.blockwise = c->blockwise;
        return qgmm_dequantize(ctx, &f, &v[S_Q], &v[S_SCALES], &offs, &v[S_OUT]);
    }
    case QGMM_CASE_SCALES_TO_BLOCKED:
        return qgmm_scales_to_blocked(ctx, c->blocked, &v[S_X], &offs, &v[S_OUT], &v[S_AUX0]);
    case QGMM_CASE_SCALES_FROM_BLOCKED:
        return qgmm_scales_from_blocked(ctx, c->blocked, &v[S_X], &offs, &v[S_OUT]);
    case QGMM_CASE_PAD:
        return qgmm_pad_token_groups(ctx, c->alignment, &v[S_X], &offs, &v[S_OUT], &v[S_AUX0], &v[S_AUX1]);
    case QGMM_CASE_UNPAD:
        return qgmm_unpad_token_groups(ctx, c->alignment, &v[S_X], &offs, &v[S_OUT]);
    case QGMM_CASE_GROUP_ROW_IDS:
        return qgmm_group_row_ids(ctx, &offs, &v[S_X], &v[S_OUT]);
    default:
        return QGMM_ERR_INTERNAL;
    }
}
