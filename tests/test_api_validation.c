/*
 * API validation: for every op, start from a valid call on the cpu backend and break one
 * argument at a time (NULL, absent buffer, wrong dtype, wrong shape, bad strides,
 * misaligned offset, out-of-buffer extent, bad parameter values). Each broken call must
 * return the documented status, name the argument in qgmm_last_error, and leave every
 * buffer byte untouched. Bad device-side offsets must be accepted by the call, reported
 * by qgmm_synchronize as QGMM_ERR_BAD_OFFSETS, and also write nothing.
 */
#include "qgmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SLOTS 8
#define MAX_BUFS 16

enum op_id {
    OP_ROWWISE, OP_ROWWISE_DUAL, OP_MX, OP_BLOCKWISE, OP_DEQUANT, OP_TO_BLOCKED,
    OP_FROM_BLOCKED, OP_PAD, OP_UNPAD, OP_ROW_IDS, OP_GEMM
};

typedef struct call {
    const char *label;
    enum op_id op;
    int nslots;
    const char *names[MAX_SLOTS];
    int optional[MAX_SLOTS];
    qgmm_tensor t[MAX_SLOTS];
    int present[MAX_SLOTS]; /* 0: pass NULL pointer */
    int shape0_free[MAX_SLOTS]; /* 1: another extent of dim 0 is a valid call too */
    int offs_slot;          /* slot holding offsets, -1 if none */
    qgmm_fp8_rowwise_params rw, rw1;
    qgmm_mxfp8_params mx;
    qgmm_fp8_blockwise_params bw;
    qgmm_quant_format fmt;
    qgmm_blocked_variant variant;
    int alignment;
    qgmm_grouped_gemm_params gemm;
} call;

static qgmm_context *g_ctx;
static qgmm_buffer *g_bufs[MAX_BUFS];
static int g_nbufs;
static int g_checks, g_failures;

#define CHECK(cond, ...) do { ++g_checks; if (!(cond)) { ++g_failures; \
    printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static uint32_t g_rng = 12345u;
static uint32_t rnd(void) { g_rng = g_rng * 1664525u + 1013904223u; return g_rng >> 8; }

/* A buffer of the tensor span plus 64 bytes of slack (so that a misaligned offset is
 * caught by the alignment rule, not by the extent rule), filled with random bytes. */
static qgmm_tensor tensor(qgmm_dtype dt, int rank, int64_t d0, int64_t d1, int64_t d2)
{
    const int64_t shape[3] = {d0, d1, d2};
    qgmm_tensor t = qgmm_tensor_make(NULL, 0, dt, rank, shape);
    size_t bytes = qgmm_tensor_span_bytes(&t) + 64;
    qgmm_buffer *b = NULL;
    if (qgmm_buffer_alloc(g_ctx, bytes, &b) != QGMM_OK) { printf("alloc failed\n"); exit(2); }
    unsigned char *host = malloc(bytes ? bytes : 1);
    for (size_t i = 0; i < bytes; ++i) host[i] = (unsigned char)(rnd() | 1);
    if (dt == QGMM_F32 || dt == QGMM_BF16) /* finite random values so ops behave */
        for (size_t i = 0; i < bytes; i += qgmm_dtype_size(dt)) host[i + qgmm_dtype_size(dt) - 1] = 0x3e;
    qgmm_buffer_upload(b, 0, host, bytes);
    free(host);
    g_bufs[g_nbufs++] = b;
    t.buffer = b;
    return t;
}

static void set_offsets(qgmm_tensor *t, const int32_t *v, int n)
{
    qgmm_buffer_upload(t->buffer, t->offset, v, sizeof(int32_t) * (size_t)n);
}

static void free_all(void)
{
    for (int i = 0; i < g_nbufs; ++i) qgmm_buffer_free(g_bufs[i]);
    g_nbufs = 0;
}

static unsigned char *snapshot(size_t *sizes)
{
    size_t total = 0;
    for (int i = 0; i < g_nbufs; ++i) total += (sizes[i] = qgmm_buffer_size(g_bufs[i]));
    unsigned char *all = malloc(total ? total : 1), *p = all;
    for (int i = 0; i < g_nbufs; ++i) { qgmm_buffer_download(g_bufs[i], 0, p, sizes[i]); p += sizes[i]; }
    return all;
}

static int same_snapshot(const unsigned char *a, const unsigned char *b, const size_t *sizes)
{
    size_t total = 0;
    for (int i = 0; i < g_nbufs; ++i) total += sizes[i];
    return memcmp(a, b, total) == 0;
}

static const qgmm_tensor *slot(const call *c, int i) { return c->present[i] ? &c->t[i] : NULL; }

static qgmm_status invoke(const call *c)
{
    switch (c->op) {
    case OP_ROWWISE: return qgmm_quantize_fp8_rowwise(g_ctx, &c->rw, slot(c, 0), slot(c, 1), slot(c, 2), slot(c, 3));
    case OP_ROWWISE_DUAL:
        return qgmm_quantize_fp8_rowwise_dual(g_ctx, &c->rw, slot(c, 0), slot(c, 1), slot(c, 2), &c->rw1,
                                              slot(c, 3), slot(c, 4), slot(c, 5), slot(c, 6));
    case OP_MX: return qgmm_quantize_mxfp8(g_ctx, &c->mx, slot(c, 0), slot(c, 1), slot(c, 2));
    case OP_BLOCKWISE: return qgmm_quantize_fp8_blockwise(g_ctx, &c->bw, slot(c, 0), slot(c, 1), slot(c, 2));
    case OP_DEQUANT: return qgmm_dequantize(g_ctx, &c->fmt, slot(c, 0), slot(c, 1), slot(c, 2), slot(c, 3));
    case OP_TO_BLOCKED: return qgmm_scales_to_blocked(g_ctx, c->variant, slot(c, 0), slot(c, 1), slot(c, 2), slot(c, 3));
    case OP_FROM_BLOCKED: return qgmm_scales_from_blocked(g_ctx, c->variant, slot(c, 0), slot(c, 1), slot(c, 2));
    case OP_PAD: return qgmm_pad_token_groups(g_ctx, c->alignment, slot(c, 0), slot(c, 1), slot(c, 2), slot(c, 3), slot(c, 4));
    case OP_UNPAD: return qgmm_unpad_token_groups(g_ctx, c->alignment, slot(c, 0), slot(c, 1), slot(c, 2));
    case OP_ROW_IDS: return qgmm_group_row_ids(g_ctx, slot(c, 0), slot(c, 1), slot(c, 2));
    case OP_GEMM: return qgmm_grouped_gemm(g_ctx, &c->gemm, slot(c, 0), slot(c, 1), slot(c, 2), slot(c, 3), slot(c, 4), slot(c, 5));
    }
    return QGMM_ERR_INTERNAL;
}

static const char *op_name(enum op_id op)
{
    switch (op) {
    case OP_ROWWISE: return "qgmm_quantize_fp8_rowwise:";
    case OP_ROWWISE_DUAL: return "qgmm_quantize_fp8_rowwise_dual:";
    case OP_MX: return "qgmm_quantize_mxfp8:";
    case OP_BLOCKWISE: return "qgmm_quantize_fp8_blockwise:";
    case OP_DEQUANT: return "qgmm_dequantize:";
    case OP_TO_BLOCKED: return "qgmm_scales_to_blocked:";
    case OP_FROM_BLOCKED: return "qgmm_scales_from_blocked:";
    case OP_PAD: return "qgmm_pad_token_groups:";
    case OP_UNPAD: return "qgmm_unpad_token_groups:";
    case OP_ROW_IDS: return "qgmm_group_row_ids:";
    case OP_GEMM: return "qgmm_grouped_gemm:";
    }
    return "?";
}

static void add_slot(call *c, const char *name, int optional, qgmm_tensor t)
{
    c->names[c->nslots] = name;
    c->optional[c->nslots] = optional;
    c->present[c->nslots] = 1;
    c->t[c->nslots++] = t;
}

/* The message of the last call expect_rejected made. */
static char g_msg[1024];

/* Expect `s`, a message naming `needle`, and no byte changed. */
static void expect_rejected(const call *c, const char *what, const char *needle)
{
    size_t sizes[MAX_BUFS];
    unsigned char *before = snapshot(sizes);
    qgmm_status s = invoke(c);
    /* read before the snapshot's downloads, which succeed and so clear it */
    snprintf(g_msg, sizeof g_msg, "%s", qgmm_last_error(g_ctx));
    const char *msg = g_msg;
    unsigned char *after = snapshot(sizes);
    CHECK(s == QGMM_ERR_INVALID_ARGUMENT, "%s / %s: status %s (want INVALID_ARGUMENT), msg \"%s\"", c->label,
          what, qgmm_status_string(s), msg);
    CHECK(!needle || strstr(msg, needle), "%s / %s: message \"%s\" does not name \"%s\"", c->label, what, msg, needle);
    CHECK(same_snapshot(before, after, sizes), "%s / %s: a rejected call changed buffer bytes", c->label, what);
    free(before);
    free(after);
}

static qgmm_dtype wrong_dtype(qgmm_dtype d)
{
    return d == QGMM_I32 ? QGMM_F32 : (d == QGMM_F16 ? QGMM_I32 : QGMM_F16);
}

/* Every per-slot mutation. */
static void mutate_slots(call *base)
{
    for (int i = 0; i < base->nslots; ++i) {
        if (!base->present[i]) continue; /* an absent optional tensor has nothing to break */
        call c = *base;
        const char *n = base->names[i];
        char what[96];
        if (!base->optional[i]) {
            c.present[i] = 0;
            snprintf(what, sizeof what, "%s NULL", n);
            expect_rejected(&c, what, n);
            c = *base;
            c.t[i].buffer = NULL;
            snprintf(what, sizeof what, "%s no buffer", n);
            expect_rejected(&c, what, n);
        }
        c = *base;
        c.t[i].dtype = wrong_dtype(c.t[i].dtype);
        snprintf(what, sizeof what, "%s wrong dtype", n);
        expect_rejected(&c, what, n);

        c = *base;
        c.t[i].dtype = (qgmm_dtype)99;
        snprintf(what, sizeof what, "%s invalid dtype", n);
        expect_rejected(&c, what, n);

        c = *base;
        c.t[i].rank = 0;
        snprintf(what, sizeof what, "%s rank 0", n);
        expect_rejected(&c, what, n);

        c = *base;
        c.t[i].rank = 4;
        snprintf(what, sizeof what, "%s rank 4", n);
        expect_rejected(&c, what, n);

        if (!base->shape0_free[i]) {
            /* The mismatch may be reported on the tensor whose expected shape derives from
             * this one (e.g. scales from offs): accept any argument of the call named. */
            c = *base;
            c.t[i].shape[0] += 1;
            snprintf(what, sizeof what, "%s shape[0]+1", n);
            expect_rejected(&c, what, NULL);
            const char *msg = g_msg;
            int named = 0;
            for (int k = 0; k < base->nslots; ++k) named |= strstr(msg, base->names[k]) != NULL;
            CHECK(named, "%s / %s: message \"%s\" names no argument", base->label, what, msg);
        }

        c = *base;
        c.t[i].shape[0] = -3;
        snprintf(what, sizeof what, "%s negative shape", n);
        expect_rejected(&c, what, n);

        c = *base;
        c.t[i].offset += qgmm_buffer_size(c.t[i].buffer) + 64;
        snprintf(what, sizeof what, "%s offset past buffer", n);
        expect_rejected(&c, what, n);

        if (qgmm_dtype_size(base->t[i].dtype) > 1) {
            c = *base;
            c.t[i].offset += 1;
            snprintf(what, sizeof what, "%s misaligned offset", n);
            expect_rejected(&c, what, n);
        }
        int big = -1;
        for (int d = 0; d < base->t[i].rank; ++d)
            if (base->t[i].shape[d] > 1) big = d;
        if (big >= 0) {
            c = *base;
            c.t[i].strides[big] = 0;
            snprintf(what, sizeof what, "%s zero stride", n);
            expect_rejected(&c, what, n);
            c = *base;
            c.t[i].strides[big] = -1;
            snprintf(what, sizeof what, "%s negative stride", n);
            expect_rejected(&c, what, n);
            c = *base;
            c.t[i].strides[big] *= 1000003;
            snprintf(what, sizeof what, "%s stride past buffer", n);
            expect_rejected(&c, what, n);
        }
    }
}

/* Offsets with bad CONTENT pass validation (they live on the device) and are reported at
 * synchronize; the op writes nothing. */
static void bad_offsets(call *base, int64_t extent)
{
    if (base->offs_slot < 0) return;
    const int G = (int)base->t[base->offs_slot].shape[0];
    int32_t good[64];
    qgmm_buffer_download(base->t[base->offs_slot].buffer, base->t[base->offs_slot].offset, good,
                         sizeof(int32_t) * (size_t)G);
    for (int kind = 0; kind < 3; ++kind) {
        int32_t bad[64];
        memcpy(bad, good, sizeof(int32_t) * (size_t)G);
        const char *what = kind == 0 ? "decreasing" : kind == 1 ? "past the end" : "negative";
        if (kind == 0) { bad[0] = (int32_t)extent; }                 /* then drops back */
        if (kind == 1) { bad[G - 1] = (int32_t)(extent + 1000); }
        if (kind == 2) { bad[0] = -7; }
        if (kind == 0 && G == 1) bad[0] = -1;
        set_offsets(&base->t[base->offs_slot], bad, G);
        qgmm_synchronize(g_ctx);
        size_t sizes[MAX_BUFS];
        unsigned char *before = snapshot(sizes);
        qgmm_status s = invoke(base);
        CHECK(s == QGMM_OK, "%s / offsets %s: the call itself returned %s (%s)", base->label, what,
              qgmm_status_string(s), qgmm_last_error(g_ctx));
        qgmm_status ss = qgmm_synchronize(g_ctx);
        CHECK(ss == QGMM_ERR_BAD_OFFSETS, "%s / offsets %s: synchronize returned %s", base->label, what,
              qgmm_status_string(ss));
        /* the message names the op and its offsets argument */
        const char *msg = qgmm_last_error(g_ctx);
        CHECK(strstr(msg, op_name(base->op)) && strstr(msg, base->names[base->offs_slot]),
              "%s / offsets %s: the message names neither %s nor %s: %s", base->label, what,
              op_name(base->op), base->names[base->offs_slot], msg);
        CHECK(qgmm_synchronize(g_ctx) == QGMM_OK, "%s / offsets %s: status word not cleared", base->label, what);
        unsigned char *after = snapshot(sizes);
        CHECK(same_snapshot(before, after, sizes), "%s / offsets %s: the op wrote with bad offsets", base->label, what);
        free(before);
        free(after);
    }
    set_offsets(&base->t[base->offs_slot], good, G);
}

static void expect_valid(call *c)
{
    qgmm_status s = invoke(c);
    qgmm_status ss = qgmm_synchronize(g_ctx);
    CHECK(s == QGMM_OK && ss == QGMM_OK, "%s: the valid call failed: %s / %s: %s", c->label,
          qgmm_status_string(s), qgmm_status_string(ss), qgmm_last_error(g_ctx));
}

static void run_case(call *c, int64_t offs_extent)
{
    expect_valid(c);
    mutate_slots(c);
    bad_offsets(c, offs_extent);
    expect_valid(c); /* the good offsets are back: the call works again */
}

static void param_case(call *base, void (*mut)(call *), const char *what, const char *needle)
{
    call c = *base;
    mut(&c);
    expect_rejected(&c, what, needle);
}

static void m_rd(call *c) { c->rw.reduce_dim = 5; }
static void m_p2(call *c) { c->rw.power_of_2 = 2; }
static void m_sk(call *c) { c->rw.scale_kind = (qgmm_scale_kind)7; }
static void m_rd3(call *c) { c->rw.reduce_dim = 0; }
static void m_bd(call *c) { c->mx.block_dim = 7; }
static void m_mode(call *c) { c->mx.mode = (qgmm_mx_mode)9; }
static void m_lay(call *c) { c->mx.scale_layout = (qgmm_scale_layout)9; }
static void m_blk(call *c) { c->bw.block = (qgmm_block_shape)9; }
static void m_kind(call *c) { c->fmt.kind = (qgmm_quant_kind)9; }
static void m_var(call *c) { c->variant = (qgmm_blocked_variant)9; }
static void m_al17(call *c) { c->alignment = 17; }
static void m_al64(call *c) { c->alignment = 64; }
static void m_rec(call *c) { c->gemm.recipe = (qgmm_recipe)9; }
static void m_gk(call *c) { c->gemm.kind = (qgmm_gemm_kind)9; }

int main(void)
{
    if (qgmm_context_create("cpu", 0, &g_ctx) != QGMM_OK) { printf("no cpu context\n"); return 2; }
    const int32_t offs3_rows96[3] = {40, 40, 96}; /* includes an empty group */

    { /* rowwise, plain */
        call c = {.label = "fp8_rowwise rowwise", .op = OP_ROWWISE, .offs_slot = -1};
        c.rw = (qgmm_fp8_rowwise_params){1, 0, QGMM_SCALE_MULTIPLIER};
        add_slot(&c, "x", 0, tensor(QGMM_BF16, 2, 64, 96, 0));
        add_slot(&c, "offs", 1, (qgmm_tensor){0});
        c.present[1] = 0;
        add_slot(&c, "q", 0, tensor(QGMM_F8E4M3FN, 2, 64, 96, 0));
        add_slot(&c, "scales", 0, tensor(QGMM_F32, 1, 64, 0, 0));
        expect_valid(&c);
        mutate_slots(&c);
        param_case(&c, m_rd, "reduce_dim 5", "reduce_dim");
        param_case(&c, m_p2, "power_of_2 2", "power_of_2");
        param_case(&c, m_sk, "scale_kind 7", "scale_kind");
        free_all();
    }
    { /* rowwise, jagged per-group colwise with column-major output */
        call c = {.label = "fp8_rowwise jagged colwise", .op = OP_ROWWISE, .offs_slot = 1};
        c.rw = (qgmm_fp8_rowwise_params){0, 1, QGMM_SCALE_RECIPROCAL};
        add_slot(&c, "x", 0, tensor(QGMM_F32, 2, 96, 40, 0));
        add_slot(&c, "offs", 1, tensor(QGMM_I32, 1, 3, 0, 0));
        set_offsets(&c.t[1], offs3_rows96, 3);
        qgmm_tensor q = tensor(QGMM_F8E4M3FNUZ, 2, 96, 40, 0);
        q.strides[0] = 1; q.strides[1] = 96;
        add_slot(&c, "q", 0, q);
        add_slot(&c, "scales", 0, tensor(QGMM_F32, 2, 3, 40, 0));
        run_case(&c, 96);
        free_all();
    }
    { /* rowwise 3D transpose rhs */
        call c = {.label = "fp8_rowwise 3d transpose", .op = OP_ROWWISE, .offs_slot = -1};
        c.rw = (qgmm_fp8_rowwise_params){1, 0, QGMM_SCALE_MULTIPLIER};
        add_slot(&c, "x", 0, tensor(QGMM_BF16, 3, 2, 32, 64));
        add_slot(&c, "offs", 1, (qgmm_tensor){0});
        c.present[1] = 0;
        qgmm_tensor q = tensor(QGMM_F8E4M3FN, 3, 2, 32, 64);
        q.strides[0] = 32 * 64; q.strides[1] = 1; q.strides[2] = 32;
        add_slot(&c, "q", 0, q);
        add_slot(&c, "scales", 0, tensor(QGMM_F32, 2, 2, 64, 0));
        expect_valid(&c);
        mutate_slots(&c);
        param_case(&c, m_rd3, "reduce_dim 0 of rank 3", "reduce_dim");
        free_all();
    }
    { /* dual jagged rowwise */
        call c = {.label = "fp8_rowwise dual", .op = OP_ROWWISE_DUAL, .offs_slot = 6};
        c.rw = (qgmm_fp8_rowwise_params){0, 0, QGMM_SCALE_MULTIPLIER};
        c.rw1 = c.rw;
        add_slot(&c, "x0", 0, tensor(QGMM_BF16, 2, 96, 16, 0));
        add_slot(&c, "q0", 0, tensor(QGMM_F8E4M3FN, 2, 96, 16, 0));
        add_slot(&c, "scales0", 0, tensor(QGMM_F32, 2, 3, 16, 0));
        add_slot(&c, "x1", 0, tensor(QGMM_BF16, 2, 96, 24, 0));
        add_slot(&c, "q1", 0, tensor(QGMM_F8E4M3FN, 2, 96, 24, 0));
        add_slot(&c, "scales1", 0, tensor(QGMM_F32, 2, 3, 24, 0));
        add_slot(&c, "offs", 1, tensor(QGMM_I32, 1, 3, 0, 0));
        set_offsets(&c.t[6], offs3_rows96, 3);
        run_case(&c, 96);
        free_all();
    }
    { /* MXFP8 dim0 blocked */
        call c = {.label = "mxfp8 dim0 blocked", .op = OP_MX, .offs_slot = -1};
        c.mx = (qgmm_mxfp8_params){1, QGMM_MX_RCEIL, QGMM_SCALES_BLOCKED};
        add_slot(&c, "x", 0, tensor(QGMM_BF16, 2, 64, 128, 0));
        add_slot(&c, "q", 0, tensor(QGMM_F8E4M3FN, 2, 64, 128, 0));
        add_slot(&c, "scales", 0, tensor(QGMM_E8M0, 1, (int64_t)qgmm_blocked_scales_bytes(64, 4), 0, 0));
        run_case(&c, 0);
        param_case(&c, m_bd, "block_dim 7", "block_dim");
        param_case(&c, m_mode, "mode 9", "mode");
        param_case(&c, m_lay, "scale_layout 9", "scale_layout");
        free_all();
    }
    { /* MXFP8 extent not a multiple of 32 */
        call c = {.label = "mxfp8 K%32", .op = OP_MX, .offs_slot = -1};
        c.mx = (qgmm_mxfp8_params){1, QGMM_MX_FLOOR, QGMM_SCALES_PLAIN};
        add_slot(&c, "x", 0, tensor(QGMM_F32, 2, 8, 48, 0));
        add_slot(&c, "q", 0, tensor(QGMM_F8E4M3FN, 2, 8, 48, 0));
        add_slot(&c, "scales", 0, tensor(QGMM_E8M0, 2, 8, 1, 0));
        expect_rejected(&c, "K=48", "x.shape[1]");
        free_all();
    }
    { /* blockwise 1x128, torchao layout */
        call c = {.label = "fp8_blockwise 1x128", .op = OP_BLOCKWISE, .offs_slot = -1};
        c.bw.block = QGMM_BLOCK_1X128;
        add_slot(&c, "x", 0, tensor(QGMM_BF16, 2, 40, 256, 0));
        add_slot(&c, "q", 0, tensor(QGMM_F8E4M3FN, 2, 40, 256, 0));
        qgmm_tensor s = tensor(QGMM_F32, 2, 2, 40, 0); /* backing store */
        const int64_t shape[2] = {40, 256};
        size_t bytes = 0;
        qgmm_blockwise_scales_view(QGMM_BLOCK_1X128, QGMM_BLOCKWISE_TORCHAO, 2, shape, s.buffer, 0, &s, &bytes);
        add_slot(&c, "scales", 0, s);
        run_case(&c, 0);
        param_case(&c, m_blk, "block 9", "block");
        free_all();
    }
    { /* dequantize MX plain */
        call c = {.label = "dequantize mxfp8", .op = OP_DEQUANT, .offs_slot = -1};
        c.fmt.kind = QGMM_QUANT_MXFP8;
        c.fmt.mx = (qgmm_mxfp8_params){1, QGMM_MX_FLOOR, QGMM_SCALES_PLAIN};
        add_slot(&c, "q", 0, tensor(QGMM_F8E4M3FN, 2, 16, 64, 0));
        add_slot(&c, "scales", 0, tensor(QGMM_E8M0, 2, 16, 2, 0));
        add_slot(&c, "offs", 1, (qgmm_tensor){0});
        c.present[2] = 0;
        add_slot(&c, "out", 0, tensor(QGMM_F32, 2, 16, 64, 0));
        expect_valid(&c);
        mutate_slots(&c);
        param_case(&c, m_kind, "kind 9", "kind");
        free_all();
    }
    { /* dequantize jagged rowwise */
        call c = {.label = "dequantize jagged rowwise", .op = OP_DEQUANT, .offs_slot = 2};
        c.fmt.kind = QGMM_QUANT_FP8_ROWWISE;
        c.fmt.rowwise = (qgmm_fp8_rowwise_params){1, 0, QGMM_SCALE_RECIPROCAL};
        add_slot(&c, "q", 0, tensor(QGMM_F8E5M2, 2, 8, 96, 0));
        add_slot(&c, "scales", 0, tensor(QGMM_F32, 2, 3, 8, 0));
        add_slot(&c, "offs", 1, tensor(QGMM_I32, 1, 3, 0, 0));
        set_offsets(&c.t[2], offs3_rows96, 3);
        add_slot(&c, "out", 0, tensor(QGMM_BF16, 2, 8, 96, 0));
        run_case(&c, 96);
        free_all();
    }
    { /* scales to blocked, M groups */
        call c = {.label = "to_blocked m_groups", .op = OP_TO_BLOCKED, .offs_slot = 1};
        c.variant = QGMM_BLOCKED_M_GROUPS;
        add_slot(&c, "in", 0, tensor(QGMM_E8M0, 2, 96, 5, 0));
        c.shape0_free[0] = 1; /* rows past offs[G-1] are allowed and the bound is 128-rounded */
        add_slot(&c, "offs", 0, tensor(QGMM_I32, 1, 3, 0, 0));
        set_offsets(&c.t[1], offs3_rows96, 3);
        add_slot(&c, "out", 0, tensor(QGMM_E8M0, 1, (int64_t)qgmm_blocked_m_groups_bytes(96, 5, 3), 0, 0));
        add_slot(&c, "group_starts", 1, tensor(QGMM_I32, 1, 3, 0, 0));
        run_case(&c, 96);
        param_case(&c, m_var, "variant 9", "variant");
        free_all();
    }
    { /* scales from blocked, 3D */
        call c = {.label = "from_blocked 3d", .op = OP_FROM_BLOCKED, .offs_slot = -1};
        c.variant = QGMM_BLOCKED_3D;
        add_slot(&c, "in", 0, tensor(QGMM_U8, 1, 2 * (int64_t)qgmm_blocked_scales_bytes(33, 6), 0, 0));
        add_slot(&c, "offs", 1, (qgmm_tensor){0});
        c.present[1] = 0;
        add_slot(&c, "out", 0, tensor(QGMM_U8, 3, 2, 33, 6));
        expect_valid(&c);
        mutate_slots(&c);
        free_all();
    }
    { /* pad token groups */
        call c = {.label = "pad_token_groups", .op = OP_PAD, .offs_slot = 1, .alignment = 32};
        add_slot(&c, "x", 0, tensor(QGMM_BF16, 2, 96, 16, 0));
        add_slot(&c, "offs", 0, tensor(QGMM_I32, 1, 3, 0, 0));
        set_offsets(&c.t[1], offs3_rows96, 3);
        add_slot(&c, "out", 0, tensor(QGMM_BF16, 2, qgmm_padded_rows_bound(96, 3, 32), 16, 0));
        add_slot(&c, "padded_start", 1, tensor(QGMM_I32, 1, 3, 0, 0));
        add_slot(&c, "padded_offs", 1, tensor(QGMM_I32, 1, 3, 0, 0));
        run_case(&c, 96);
        param_case(&c, m_al17, "alignment 17", "alignment");
        param_case(&c, m_al64, "alignment 64", "alignment");
        free_all();
    }
    { /* unpad */
        call c = {.label = "unpad_token_groups", .op = OP_UNPAD, .offs_slot = 1, .alignment = 16};
        add_slot(&c, "x_padded", 0, tensor(QGMM_F32, 2, qgmm_padded_rows_bound(96, 3, 16), 8, 0));
        add_slot(&c, "offs", 0, tensor(QGMM_I32, 1, 3, 0, 0));
        set_offsets(&c.t[1], offs3_rows96, 3);
        add_slot(&c, "out", 0, tensor(QGMM_F32, 2, 96, 8, 0));
        run_case(&c, 96);
        free_all();
    }
    { /* row ids */
        call c = {.label = "group_row_ids", .op = OP_ROW_IDS, .offs_slot = 0};
        add_slot(&c, "offs", 0, tensor(QGMM_I32, 1, 3, 0, 0));
        set_offsets(&c.t[0], offs3_rows96, 3);
        add_slot(&c, "padded_offs", 1, (qgmm_tensor){0});
        c.present[1] = 0;
        add_slot(&c, "row_ids", 0, tensor(QGMM_I32, 1, 100, 0, 0));
        expect_valid(&c);
        bad_offsets(&c, 100);
        free_all();
    }
    { /* grouped GEMM, M-grouped FP8 rowwise */
        call c = {.label = "gemm m_grouped fp8_rowwise", .op = OP_GEMM, .offs_slot = 4};
        c.gemm = (qgmm_grouped_gemm_params){QGMM_GEMM_M_GROUPED, QGMM_RECIPE_FP8_ROWWISE};
        add_slot(&c, "a", 0, tensor(QGMM_F8E4M3FN, 2, 96, 64, 0));
        add_slot(&c, "b", 0, tensor(QGMM_F8E4M3FN, 3, 3, 48, 64));
        add_slot(&c, "a_scales", 0, tensor(QGMM_F32, 1, 96, 0, 0));
        add_slot(&c, "b_scales", 0, tensor(QGMM_F32, 2, 3, 48, 0));
        add_slot(&c, "offs", 0, tensor(QGMM_I32, 1, 3, 0, 0));
        set_offsets(&c.t[4], offs3_rows96, 3);
        add_slot(&c, "out", 0, tensor(QGMM_BF16, 2, 96, 48, 0));
        run_case(&c, 96);
        param_case(&c, m_rec, "recipe 9", "recipe");
        param_case(&c, m_gk, "kind 9", "kind");
        free_all();
    }
    { /* grouped GEMM, K-grouped BF16: scales must be absent */
        call c = {.label = "gemm k_grouped bf16", .op = OP_GEMM, .offs_slot = 4};
        c.gemm = (qgmm_grouped_gemm_params){QGMM_GEMM_K_GROUPED, QGMM_RECIPE_BF16};
        add_slot(&c, "a", 0, tensor(QGMM_BF16, 2, 96, 24, 0));
        add_slot(&c, "b", 0, tensor(QGMM_BF16, 2, 96, 40, 0));
        add_slot(&c, "a_scales", 1, (qgmm_tensor){0});
        c.present[2] = 0;
        add_slot(&c, "b_scales", 1, (qgmm_tensor){0});
        c.present[3] = 0;
        add_slot(&c, "offs", 0, tensor(QGMM_I32, 1, 3, 0, 0));
        set_offsets(&c.t[4], offs3_rows96, 3);
        add_slot(&c, "out", 0, tensor(QGMM_F32, 3, 3, 24, 40));
        expect_valid(&c);
        call m = c;
        m.present[2] = 1;
        m.t[2] = tensor(QGMM_F32, 2, 3, 24, 0);
        expect_rejected(&m, "scales given to BF16", "a_scales");
        bad_offsets(&c, 96);
        free_all();
    }
    { /* aliasing: output overlapping input */
        call c = {.label = "overlap", .op = OP_ROWWISE, .offs_slot = -1};
        c.rw = (qgmm_fp8_rowwise_params){1, 0, QGMM_SCALE_MULTIPLIER};
        qgmm_tensor x = tensor(QGMM_F32, 2, 8, 32, 0);
        add_slot(&c, "x", 0, x);
        add_slot(&c, "offs", 1, (qgmm_tensor){0});
        c.present[1] = 0;
        qgmm_tensor q = x; q.dtype = QGMM_F8E4M3FN;
        add_slot(&c, "q", 0, q);
        add_slot(&c, "scales", 0, tensor(QGMM_F32, 1, 8, 0, 0));
        expect_rejected(&c, "q aliases x", "overlap");
        free_all();
    }
    { /* contexts and buffers */
        qgmm_context *bad = NULL;
        CHECK(qgmm_context_create(NULL, 0, &bad) == QGMM_ERR_INVALID_ARGUMENT, "NULL backend accepted");
        CHECK(strstr(qgmm_last_error(NULL), "backend"), "message: %s", qgmm_last_error(NULL));
        CHECK(qgmm_context_create("cpu", 3, &bad) == QGMM_ERR_INVALID_ARGUMENT, "device 3 accepted");
        CHECK(qgmm_context_create("cpu", -1, &bad) == QGMM_ERR_INVALID_ARGUMENT, "device -1 accepted");
        CHECK(qgmm_context_create("nosuch", 0, &bad) == QGMM_ERR_BACKEND_UNAVAILABLE, "unknown backend");
        CHECK(qgmm_context_create("cpu", 0, NULL) == QGMM_ERR_INVALID_ARGUMENT, "NULL out accepted");
        CHECK(qgmm_context_create_with_stream("cpu", 0, (void *)1, &bad) == QGMM_ERR_UNSUPPORTED,
              "cpu adopted a stream");
        CHECK(bad == NULL, "a failed create wrote *out");
        qgmm_buffer *b = NULL;
        CHECK(qgmm_buffer_alloc(NULL, 16, &b) == QGMM_ERR_INVALID_ARGUMENT, "NULL ctx alloc");
        CHECK(qgmm_buffer_alloc(g_ctx, 64, &b) == QGMM_OK, "alloc 64");
        char host[80] = {0};
        CHECK(qgmm_buffer_upload(b, 60, host, 8) == QGMM_ERR_INVALID_ARGUMENT, "upload past end accepted");
        CHECK(qgmm_buffer_download(b, 0, NULL, 8) == QGMM_ERR_INVALID_ARGUMENT, "download to NULL accepted");
        CHECK(qgmm_buffer_fill(b, 65, 1, 0) == QGMM_ERR_INVALID_ARGUMENT, "fill past end accepted");
        CHECK(qgmm_buffer_copy(b, 0, b, 8, 16) == QGMM_ERR_INVALID_ARGUMENT, "overlapping copy accepted");
        CHECK(qgmm_buffer_copy(b, 0, b, 32, 16) == QGMM_OK, "disjoint copy refused");
        qgmm_event *e0 = NULL, *e1 = NULL;
        qgmm_event_create(g_ctx, &e0);
        qgmm_event_create(g_ctx, &e1);
        double ms = 0;
        CHECK(qgmm_event_elapsed_ms(e0, e1, &ms) == QGMM_ERR_INVALID_ARGUMENT, "unrecorded events accepted");
        qgmm_event_record(e0);
        qgmm_event_record(e1);
        CHECK(qgmm_event_elapsed_ms(e0, e1, &ms) == QGMM_OK && ms >= 0, "elapsed");
        qgmm_event_destroy(e0);
        qgmm_event_destroy(e1);
        qgmm_buffer_free(b);
        CHECK(qgmm_synchronize(NULL) == QGMM_ERR_INVALID_ARGUMENT, "synchronize(NULL)");
    }
    qgmm_context_destroy(g_ctx);
    printf("api validation: %d checks, %d failed\n", g_checks, g_failures);
    printf("%d passed, %d failed\n", g_checks - g_failures, g_failures);
    return g_failures ? 1 : 0;
}
