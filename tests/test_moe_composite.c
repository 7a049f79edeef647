/*
 * The composite MoE expert layer (qgmm_moe_experts_forward/_backward) on the cpu backend:
 *  - forward equals, bit for bit, the same recipe written out op by op;
 *  - forward, dgrad and wgrad reach the recipe SQNR floors against float64 GEMMs of the
 *    bf16 operands (27 / 25 / 24 dB; BF16 recipe: relative error <= 1e-2);
 *  - ragged groups with an empty group, group sizes not multiples of 16;
 *  - bad arguments are refused (small workspace, fnuz with MXFP8, N not a multiple);
 *  - the _profiled calls give the same bytes, name and time every step, and refuse a
 *    missing event before running anything.
 * Backend: argv[1] or "cpu" (a GPU backend runs the same checks).
 */
#include "qgmm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int checks, failures;
#define CHECK(cond, ...) do { ++checks; if (!(cond)) { ++failures; \
    printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static qgmm_context *ctx;

static uint16_t to_bf16(float f)
{
    union { float f; uint32_t u; } v = {f};
    return (uint16_t)((v.u + 0x7FFF + ((v.u >> 16) & 1)) >> 16);
}
static float from_bf16(uint16_t h) { union { uint32_t u; float f; } v = {(uint32_t)h << 16}; return v.f; }
static uint32_t rng = 7;
static float urand(void) { rng = rng * 1664525u + 1013904223u; return (float)(rng >> 8) / 16777216.0f * 2.0f - 1.0f; }

static qgmm_buffer *upload(const void *p, size_t n)
{
    qgmm_buffer *b;
    qgmm_buffer_alloc(ctx, n, &b);
    qgmm_buffer_upload(b, 0, p, n);
    return b;
}
static qgmm_buffer *alloc_poisoned(size_t n)
{
    qgmm_buffer *b;
    qgmm_buffer_alloc(ctx, n, &b);
    qgmm_buffer_fill(b, 0, n, 0xA5);
    return b;
}

static double sqnr_db(const double *ref, const float *got, size_t n)
{
    double s = 0, e = 0;
    for (size_t i = 0; i < n; ++i) { s += ref[i] * ref[i]; e += (ref[i] - got[i]) * (ref[i] - got[i]); }
    return e == 0 ? 300.0 : 10.0 * log10(s / e);
}


/* ---- the composite written out op by op (the sequence api/moe.c documents) */
static qgmm_buffer *g_tmp[64];
static int g_ntmp;
static qgmm_tensor tmp(qgmm_dtype dt, int rank, int64_t d0, int64_t d1, int64_t d2)
{
    const int64_t sh[3] = {d0, d1, d2};
    qgmm_tensor t = qgmm_tensor_make(NULL, 0, dt, rank, sh);
    t.buffer = g_tmp[g_ntmp++] = alloc_poisoned(qgmm_tensor_span_bytes(&t) + 1);
    return t;
}
static qgmm_tensor colmajor(qgmm_dtype dt, int64_t r, int64_t c)
{
    qgmm_tensor t = tmp(dt, 2, r, c, 0);
    t.strides[0] = 1;
    t.strides[1] = r;
    return t;
}
static qgmm_tensor tr2(qgmm_tensor t)
{
    int64_t a = t.shape[0], s = t.strides[0];
    t.shape[0] = t.shape[1]; t.strides[0] = t.strides[1];
    t.shape[1] = a; t.strides[1] = s;
    return t;
}

static void step_by_step(qgmm_recipe r, const char *name, const qgmm_tensor *x, const qgmm_tensor *w,
                         const qgmm_tensor *dy, const qgmm_tensor *offs, const float *y_c, const float *dx_c,
                         const float *dw_c, int M, int N, int K, int E)
{
    g_ntmp = 0;
    const qgmm_dtype f8 = QGMM_F8E4M3FN;
    qgmm_tensor y = tmp(QGMM_F32, 2, M, N, 0), dx = tmp(QGMM_F32, 2, M, K, 0), dw = tmp(QGMM_F32, 3, E, N, K);
    qgmm_tensor wt = *w; /* (E, K, N) view */
    wt.shape[1] = K; wt.shape[2] = N; wt.strides[1] = 1; wt.strides[2] = K;
    const qgmm_grouped_gemm_params fm = {QGMM_GEMM_M_GROUPED, r}, fk = {QGMM_GEMM_K_GROUPED, r};
    qgmm_status st = QGMM_OK;
#define S(call) do { if (st == QGMM_OK) st = (call); } while (0)
    if (r == QGMM_RECIPE_BF16) {
        S(qgmm_grouped_gemm(ctx, &fm, x, w, NULL, NULL, offs, &y));
        S(qgmm_grouped_gemm(ctx, &fm, dy, &wt, NULL, NULL, offs, &dx));
        S(qgmm_grouped_gemm(ctx, &fk, dy, x, NULL, NULL, offs, &dw));
    } else if (r == QGMM_RECIPE_FP8_ROWWISE) {
        const qgmm_fp8_rowwise_params row = {1, 0, QGMM_SCALE_RECIPROCAL}, last = {2, 0, QGMM_SCALE_RECIPROCAL},
                                      grp = {0, 0, QGMM_SCALE_RECIPROCAL};
        qgmm_tensor xq = tmp(f8, 2, M, K, 0), xs = tmp(QGMM_F32, 1, M, 0, 0);
        qgmm_tensor wq = tmp(f8, 3, E, N, K), ws = tmp(QGMM_F32, 2, E, N, 0);
        S(qgmm_quantize_fp8_rowwise(ctx, &row, x, NULL, &xq, &xs));
        S(qgmm_quantize_fp8_rowwise(ctx, &last, w, NULL, &wq, &ws));
        S(qgmm_grouped_gemm(ctx, &fm, &xq, &wq, &xs, &ws, offs, &y));
        qgmm_tensor dyq = tmp(f8, 2, M, N, 0), dys = tmp(QGMM_F32, 1, M, 0, 0);
        qgmm_tensor wtq = tmp(f8, 3, E, K, N), wts = tmp(QGMM_F32, 2, E, K, 0);
        S(qgmm_quantize_fp8_rowwise(ctx, &row, dy, NULL, &dyq, &dys));
        S(qgmm_quantize_fp8_rowwise(ctx, &last, &wt, NULL, &wtq, &wts));
        S(qgmm_grouped_gemm(ctx, &fm, &dyq, &wtq, &dys, &wts, offs, &dx));
        qgmm_tensor dyc = colmajor(f8, M, N), xc = colmajor(f8, M, K);
        qgmm_tensor dygs = tmp(QGMM_F32, 2, E, N, 0), xgs = tmp(QGMM_F32, 2, E, K, 0);
        S(qgmm_quantize_fp8_rowwise(ctx, &grp, dy, offs, &dyc, &dygs));
        S(qgmm_quantize_fp8_rowwise(ctx, &grp, x, offs, &xc, &xgs));
        S(qgmm_grouped_gemm(ctx, &fk, &dyc, &xc, &dygs, &xgs, offs, &dw));
    } else if (r == QGMM_RECIPE_FP8_BLOCKWISE) {
        const qgmm_fp8_blockwise_params act = {QGMM_BLOCK_1X128}, wt128 = {QGMM_BLOCK_128X128};
        qgmm_tensor xq = tmp(f8, 2, M, K, 0), xs = tmp(QGMM_F32, 2, M, K / 128, 0);
        qgmm_tensor wq = tmp(f8, 3, E, N, K), ws = tmp(QGMM_F32, 3, E, N / 128, K / 128);
        S(qgmm_quantize_fp8_blockwise(ctx, &act, x, &xq, &xs));
        S(qgmm_quantize_fp8_blockwise(ctx, &wt128, w, &wq, &ws));
        S(qgmm_grouped_gemm(ctx, &fm, &xq, &wq, &xs, &ws, offs, &y));
        qgmm_tensor dyq = tmp(f8, 2, M, N, 0), dys = tmp(QGMM_F32, 2, M, N / 128, 0);
        qgmm_tensor wtq = tmp(f8, 3, E, K, N), wts = tmp(QGMM_F32, 3, E, K / 128, N / 128);
        S(qgmm_quantize_fp8_blockwise(ctx, &act, dy, &dyq, &dys));
        S(qgmm_quantize_fp8_blockwise(ctx, &wt128, &wt, &wtq, &wts));
        S(qgmm_grouped_gemm(ctx, &fm, &dyq, &wtq, &dys, &wts, offs, &dx));
        const int64_t P = qgmm_padded_rows_bound(M, E, 128);
        qgmm_tensor dyp = tmp(QGMM_BF16, 2, P, N, 0), xp = tmp(QGMM_BF16, 2, P, K, 0), po = tmp(QGMM_I32, 1, E, 0, 0);
        S(qgmm_pad_token_groups(ctx, 128, dy, offs, &dyp, NULL, &po));
        S(qgmm_pad_token_groups(ctx, 128, x, offs, &xp, NULL, NULL));
        qgmm_tensor dyc = colmajor(f8, P, N), xc = colmajor(f8, P, K);
        qgmm_tensor dyb = tmp(QGMM_F32, 2, N, P / 128, 0), xb = tmp(QGMM_F32, 2, K, P / 128, 0);
        qgmm_tensor dypt = tr2(dyp), xpt = tr2(xp), dyct = tr2(dyc), xct = tr2(xc);
        S(qgmm_quantize_fp8_blockwise(ctx, &act, &dypt, &dyct, &dyb));
        S(qgmm_quantize_fp8_blockwise(ctx, &act, &xpt, &xct, &xb));
        S(qgmm_grouped_gemm(ctx, &fk, &dyc, &xc, &dyb, &xb, &po, &dw));
    } else {
        const qgmm_mxfp8_params lastp = {1, QGMM_MX_RCEIL, QGMM_SCALES_PLAIN}, w3 = {2, QGMM_MX_RCEIL, QGMM_SCALES_BLOCKED},
                                tok = {0, QGMM_MX_RCEIL, QGMM_SCALES_PLAIN};
        qgmm_tensor xq = tmp(f8, 2, M, K, 0), xs = tmp(QGMM_E8M0, 2, M, K / 32, 0);
        qgmm_tensor xsb = tmp(QGMM_E8M0, 1, (int64_t)qgmm_blocked_m_groups_bytes(M, K / 32, E), 0, 0);
        qgmm_tensor wq = tmp(f8, 3, E, N, K), wsb = tmp(QGMM_E8M0, 1, E * (int64_t)qgmm_blocked_scales_bytes(N, K / 32), 0, 0);
        S(qgmm_quantize_mxfp8(ctx, &lastp, x, &xq, &xs));
        S(qgmm_scales_to_blocked(ctx, QGMM_BLOCKED_M_GROUPS, &xs, offs, &xsb, NULL));
        S(qgmm_quantize_mxfp8(ctx, &w3, w, &wq, &wsb));
        S(qgmm_grouped_gemm(ctx, &fm, &xq, &wq, &xsb, &wsb, offs, &y));
        qgmm_tensor dyq = tmp(f8, 2, M, N, 0), dys = tmp(QGMM_E8M0, 2, M, N / 32, 0);
        qgmm_tensor dysb = tmp(QGMM_E8M0, 1, (int64_t)qgmm_blocked_m_groups_bytes(M, N / 32, E), 0, 0);
        qgmm_tensor wtq = tmp(f8, 3, E, K, N), wtsb = tmp(QGMM_E8M0, 1, E * (int64_t)qgmm_blocked_scales_bytes(K, N / 32), 0, 0);
        S(qgmm_quantize_mxfp8(ctx, &lastp, dy, &dyq, &dys));
        S(qgmm_scales_to_blocked(ctx, QGMM_BLOCKED_M_GROUPS, &dys, offs, &dysb, NULL));
        S(qgmm_quantize_mxfp8(ctx, &w3, &wt, &wtq, &wtsb));
        S(qgmm_grouped_gemm(ctx, &fm, &dyq, &wtq, &dysb, &wtsb, offs, &dx));
        const int64_t P = qgmm_padded_rows_bound(M, E, 32);
        qgmm_tensor dyp = tmp(QGMM_BF16, 2, P, N, 0), xp = tmp(QGMM_BF16, 2, P, K, 0), po = tmp(QGMM_I32, 1, E, 0, 0);
        S(qgmm_pad_token_groups(ctx, 32, dy, offs, &dyp, NULL, &po));
        S(qgmm_pad_token_groups(ctx, 32, x, offs, &xp, NULL, NULL));
        qgmm_tensor dyc = colmajor(f8, P, N), xc = colmajor(f8, P, K);
        qgmm_tensor dyts = tmp(QGMM_E8M0, 2, N, P / 32, 0), xts = tmp(QGMM_E8M0, 2, K, P / 32, 0);
        qgmm_tensor dytb = tmp(QGMM_E8M0, 1, (int64_t)qgmm_blocked_k_groups_bytes(N, P / 32, E), 0, 0);
        qgmm_tensor xtb = tmp(QGMM_E8M0, 1, (int64_t)qgmm_blocked_k_groups_bytes(K, P / 32, E), 0, 0);
        S(qgmm_quantize_mxfp8(ctx, &tok, &dyp, &dyc, &dyts));
        S(qgmm_quantize_mxfp8(ctx, &tok, &xp, &xc, &xts));
        S(qgmm_scales_to_blocked(ctx, QGMM_BLOCKED_K_GROUPS, &dyts, &po, &dytb, NULL));
        S(qgmm_scales_to_blocked(ctx, QGMM_BLOCKED_K_GROUPS, &xts, &po, &xtb, NULL));
        S(qgmm_grouped_gemm(ctx, &fk, &dyc, &xc, &dytb, &xtb, &po, &dw));
    }
#undef S
    CHECK(st == QGMM_OK && qgmm_synchronize(ctx) == QGMM_OK, "%s step by step: %s", name, qgmm_last_error(ctx));
    const size_t ny = 4ull * M * N, nx = 4ull * M * K, nw = 4ull * E * N * K;
    float *a = malloc(ny), *b = malloc(nx), *c = malloc(nw);
    qgmm_buffer_download(y.buffer, 0, a, ny);
    qgmm_buffer_download(dx.buffer, 0, b, nx);
    qgmm_buffer_download(dw.buffer, 0, c, nw);
    /* rows past offs[E-1] are poison in both; compare the covered rows and all of dw */
    int32_t last;
    qgmm_buffer_download(offs->buffer, offs->offset + 4 * (size_t)(E - 1), &last, 4);
    CHECK(memcmp(a, y_c, 4ull * last * N) == 0, "%s: composite y differs from the op-by-op y", name);
    CHECK(memcmp(b, dx_c, 4ull * last * K) == 0, "%s: composite dx differs from the op-by-op dx", name);
    CHECK(memcmp(c, dw_c, nw) == 0, "%s: composite dw differs from the op-by-op dw", name);
    free(a); free(b); free(c);
    for (int i = 0; i < g_ntmp; ++i) qgmm_buffer_free(g_tmp[i]);
}

/* The _profiled calls: the same bytes as the plain ones (y_c, dx_c, dw_c), every step named
 * and timed; a missing event is refused with the outputs untouched. */
static void profiled(const char *name, const qgmm_moe_params *p, const qgmm_tensor *x, const qgmm_tensor *w,
                     const qgmm_tensor *dy, const qgmm_tensor *offs, const qgmm_tensor *y, const qgmm_tensor *dx,
                     const qgmm_tensor *dw, qgmm_buffer *ws, const float *y_c, const float *dx_c, const float *dw_c)
{
    qgmm_moe_profile pf, pb;
    memset(&pf, 0, sizeof pf);
    memset(&pb, 0, sizeof pb);
    for (int i = 0; i <= QGMM_MOE_PROFILE_MAX_STEPS; ++i) {
        qgmm_event_create(ctx, &pf.events[i]);
        qgmm_event_create(ctx, &pb.events[i]);
    }
    const size_t ny = 4 * (size_t)(y->shape[0] * y->shape[1]), nx = 4 * (size_t)(dx->shape[0] * dx->shape[1]);
    const size_t nw = 4 * (size_t)(dw->shape[0] * dw->shape[1] * dw->shape[2]);
    qgmm_buffer_fill(y->buffer, 0, ny, 0xA5);
    qgmm_event *keep = pb.events[1];
    pb.events[1] = NULL;
    CHECK(qgmm_moe_experts_backward_profiled(ctx, p, x, w, dy, offs, dx, dw, ws, &pb) == QGMM_ERR_INVALID_ARGUMENT &&
              strstr(qgmm_last_error(ctx), "prof->events[1] is NULL"),
          "%s: a profile missing events[1] accepted (%s)", name, qgmm_last_error(ctx));
    pb.events[1] = keep;
    qgmm_status s1 = qgmm_moe_experts_forward_profiled(ctx, p, x, w, offs, y, ws, &pf);
    qgmm_status s2 = qgmm_moe_experts_backward_profiled(ctx, p, x, w, dy, offs, dx, dw, ws, &pb);
    CHECK(s1 == QGMM_OK && s2 == QGMM_OK && qgmm_synchronize(ctx) == QGMM_OK, "%s profiled: %s", name,
          qgmm_last_error(ctx));
    CHECK(pf.steps >= 1 && pb.steps >= 2 && (p->recipe == QGMM_RECIPE_BF16) == (pf.steps == 1),
          "%s: %d forward and %d backward steps", name, pf.steps, pb.steps);
    for (int d = 0; d < 2; ++d) {
        const qgmm_moe_profile *pr = d ? &pb : &pf;
        for (int i = 0; i < pr->steps; ++i) {
            double ms = -1;
            CHECK(pr->phase[i] && pr->step[i] && qgmm_event_elapsed_ms(pr->events[i], pr->events[i + 1], &ms) == QGMM_OK &&
                      ms >= 0,
                  "%s: step %d of %s unnamed or untimed", name, i, d ? "backward" : "forward");
        }
    }
    CHECK(pf.steps >= 1 && !strcmp(pf.phase[0], "forward") && !strncmp(pf.step[pf.steps - 1], "grouped_gemm", 12),
          "%s: forward steps run %s .. %s", name, pf.steps ? pf.phase[0] : "-", pf.steps ? pf.step[pf.steps - 1] : "-");
    CHECK(pb.steps >= 2 && !strcmp(pb.phase[0], "dgrad") && !strcmp(pb.phase[pb.steps - 1], "wgrad") &&
              !strncmp(pb.step[pb.steps - 1], "grouped_gemm", 12),
          "%s: backward steps run %s .. %s", name, pb.steps ? pb.phase[0] : "-",
          pb.steps ? pb.step[pb.steps - 1] : "-");
    float *a = malloc(ny), *b = malloc(nx), *c = malloc(nw);
    qgmm_buffer_download(y->buffer, 0, a, ny);
    qgmm_buffer_download(dx->buffer, 0, b, nx);
    qgmm_buffer_download(dw->buffer, 0, c, nw);
    CHECK(!memcmp(a, y_c, ny) && !memcmp(b, dx_c, nx) && !memcmp(c, dw_c, nw), "%s: profiled outputs differ", name);
    free(a); free(b); free(c);
    for (int i = 0; i <= QGMM_MOE_PROFILE_MAX_STEPS; ++i) {
        qgmm_event_destroy(pf.events[i]);
        qgmm_event_destroy(pb.events[i]);
    }
}

static void run_recipe(qgmm_recipe recipe, const char *name, int M, int N, int K, int E, const int32_t *offs_h)
{
    uint16_t *x = malloc(2ull * M * K), *w = malloc(2ull * E * N * K), *dy = malloc(2ull * M * N);
    for (int i = 0; i < M * K; ++i) x[i] = to_bf16(urand());
    for (int i = 0; i < E * N * K; ++i) w[i] = to_bf16(urand() * 0.1f);
    for (int i = 0; i < M * N; ++i) dy[i] = to_bf16(urand());
    qgmm_buffer *bx = upload(x, 2ull * M * K), *bw = upload(w, 2ull * E * N * K), *bdy = upload(dy, 2ull * M * N);
    qgmm_buffer *bo = upload(offs_h, 4ull * E);
    qgmm_buffer *by = alloc_poisoned(4ull * M * N), *bdx = alloc_poisoned(4ull * M * K), *bdw = alloc_poisoned(4ull * E * N * K);
    const int64_t sx[2] = {M, K}, sw[3] = {E, N, K}, sy[2] = {M, N}, so[1] = {E};
    qgmm_tensor tx = qgmm_tensor_make(bx, 0, QGMM_BF16, 2, sx), tw = qgmm_tensor_make(bw, 0, QGMM_BF16, 3, sw);
    qgmm_tensor tdy = qgmm_tensor_make(bdy, 0, QGMM_BF16, 2, sy), toffs = qgmm_tensor_make(bo, 0, QGMM_I32, 1, so);
    qgmm_tensor ty = qgmm_tensor_make(by, 0, QGMM_F32, 2, sy), tdx = qgmm_tensor_make(bdx, 0, QGMM_F32, 2, sx);
    qgmm_tensor tdw = qgmm_tensor_make(bdw, 0, QGMM_F32, 3, sw);
    qgmm_moe_params p = QGMM_MOE_PARAMS_INIT(recipe); /* MXFP8: RCEIL, the default */
    const size_t wsb = qgmm_moe_workspace_bytes(&p, M, N, K, E);
    qgmm_buffer *ws = NULL;
    if (wsb) qgmm_buffer_alloc(ctx, wsb, &ws);
    if (wsb > 4096) { /* a workspace one byte short is refused, nothing written */
        qgmm_buffer *small;
        qgmm_buffer_alloc(ctx, wsb - 1, &small);
        CHECK(qgmm_moe_experts_forward(ctx, &p, &tx, &tw, &toffs, &ty, small) == QGMM_ERR_INVALID_ARGUMENT,
              "%s: short workspace accepted", name);
        qgmm_buffer_free(small);
    }
    qgmm_status s1 = qgmm_moe_experts_forward(ctx, &p, &tx, &tw, &toffs, &ty, ws);
    qgmm_status s2 = qgmm_moe_experts_backward(ctx, &p, &tx, &tw, &tdy, &toffs, &tdx, &tdw, ws);
    qgmm_status s3 = qgmm_synchronize(ctx);
    CHECK(s1 == QGMM_OK && s2 == QGMM_OK && s3 == QGMM_OK, "%s: %s %s %s: %s", name, qgmm_status_string(s1),
          qgmm_status_string(s2), qgmm_status_string(s3), qgmm_last_error(ctx));
    float *y = malloc(4ull * M * N), *dx = malloc(4ull * M * K), *dw = malloc(4ull * E * N * K);
    qgmm_buffer_download(by, 0, y, 4ull * M * N);
    qgmm_buffer_download(bdx, 0, dx, 4ull * M * K);
    qgmm_buffer_download(bdw, 0, dw, 4ull * E * N * K);
    double *ry = calloc((size_t)M * N, 8), *rdx = calloc((size_t)M * K, 8), *rdw = calloc((size_t)E * N * K, 8);
    for (int g = 0, r0 = 0; g < E; r0 = offs_h[g++])
        for (int r = r0; r < offs_h[g]; ++r) {
            for (int n = 0; n < N; ++n) {
                double acc = 0;
                for (int k = 0; k < K; ++k) acc += (double)from_bf16(x[r * K + k]) * from_bf16(w[((size_t)g * N + n) * K + k]);
                ry[r * N + n] = acc;
            }
            for (int k = 0; k < K; ++k) {
                double acc = 0;
                for (int n = 0; n < N; ++n) acc += (double)from_bf16(dy[r * N + n]) * from_bf16(w[((size_t)g * N + n) * K + k]);
                rdx[r * K + k] = acc;
            }
            for (int n = 0; n < N; ++n)
                for (int k = 0; k < K; ++k)
                    rdw[((size_t)g * N + n) * K + k] += (double)from_bf16(dy[r * N + n]) * from_bf16(x[r * K + k]);
        }
    const int rows = offs_h[E - 1];
    const double f = recipe == QGMM_RECIPE_BF16 ? 40.0 : 27.0, d = recipe == QGMM_RECIPE_BF16 ? 40.0 : 25.0,
                 wg = recipe == QGMM_RECIPE_BF16 ? 40.0 : 24.0;
    const double qf = sqnr_db(ry, y, (size_t)rows * N), qd = sqnr_db(rdx, dx, (size_t)rows * K),
                 qw = sqnr_db(rdw, dw, (size_t)E * N * K);
    printf("  %-14s M=%d N=%d K=%d E=%d  fwd %.1f dB  dgrad %.1f dB  wgrad %.1f dB\n", name, M, N, K, E, qf, qd, qw);
    CHECK(qf >= f, "%s forward SQNR %.2f < %.0f", name, qf, f);
    CHECK(qd >= d, "%s dgrad SQNR %.2f < %.0f", name, qd, d);
    CHECK(qw >= wg, "%s wgrad SQNR %.2f < %.0f", name, qw, wg);
    /* rows past offs[E-1] are untouched (still poison) */
    if (rows < M) {
        uint32_t u;
        memcpy(&u, &y[(size_t)rows * N], 4);
        CHECK(u == 0xA5A5A5A5u, "%s: a row past the last group was written", name);
    }

    /* The same layer written op by op must give the same bytes (y, dx, dw), and so must the
     * profiled calls. */
    step_by_step(recipe, name, &tx, &tw, &tdy, &toffs, y, dx, dw, M, N, K, E);
    profiled(name, &p, &tx, &tw, &tdy, &toffs, &ty, &tdx, &tdw, ws, y, dx, dw);
    qgmm_buffer *bs[] = {bx, bw, bdy, bo, by, bdx, bdw, ws};
    for (int i = 0; i < 8; ++i) qgmm_buffer_free(bs[i]);
    free(x); free(w); free(dy); free(y); free(dx); free(dw); free(ry); free(rdx); free(rdw);
}

int main(int argc, char **argv)
{
    const char *backend = argc > 1 ? argv[1] : "cpu";
    if (qgmm_context_create(backend, 0, &ctx) != QGMM_OK) {
        printf("SKIP: backend %s unavailable: %s\n", backend, qgmm_last_error(NULL));
        return 77;
    }
    const int32_t offs4[4] = {37, 37, 150, 201};   /* ragged, an empty group, not multiples of 16 */
    const int32_t offs1[1] = {96};
    run_recipe(QGMM_RECIPE_BF16, "bf16", 210, 128, 256, 4, offs4);
    run_recipe(QGMM_RECIPE_FP8_ROWWISE, "fp8_rowwise", 210, 128, 256, 4, offs4);
    run_recipe(QGMM_RECIPE_FP8_BLOCKWISE, "fp8_blockwise", 210, 128, 256, 4, offs4);
    run_recipe(QGMM_RECIPE_MXFP8, "mxfp8", 210, 128, 256, 4, offs4);
    run_recipe(QGMM_RECIPE_MXFP8, "mxfp8 1 group", 96, 64, 128, 1, offs1);

    /* refusals */
    qgmm_buffer *b;
    qgmm_buffer_alloc(ctx, 1 << 16, &b);
    const int64_t sx[2] = {8, 64}, sw[3] = {2, 48, 64}, so[1] = {2}, sy[2] = {8, 48};
    qgmm_tensor tx = qgmm_tensor_make(b, 0, QGMM_BF16, 2, sx), tw = qgmm_tensor_make(b, 2048, QGMM_BF16, 3, sw);
    qgmm_tensor to = qgmm_tensor_make(b, 32768, QGMM_I32, 1, so), ty = qgmm_tensor_make(b, 40000, QGMM_F32, 2, sy);
    qgmm_moe_params bad = {QGMM_RECIPE_MXFP8, QGMM_F8E4M3FNUZ, QGMM_MX_FLOOR};
    CHECK(qgmm_moe_experts_forward(ctx, &bad, &tx, &tw, &to, &ty, b) == QGMM_ERR_INVALID_ARGUMENT &&
          strstr(qgmm_last_error(ctx), "fp8_dtype"), "fnuz MXFP8 accepted");
    qgmm_moe_params blk = {QGMM_RECIPE_FP8_BLOCKWISE, QGMM_F8E4M3FN, QGMM_MX_FLOOR};
    CHECK(qgmm_moe_experts_forward(ctx, &blk, &tx, &tw, &to, &ty, b) == QGMM_ERR_INVALID_ARGUMENT,
          "blockwise with N=48 accepted");
    qgmm_moe_params rec = {(qgmm_recipe)7, QGMM_F8E4M3FN, QGMM_MX_FLOOR};
    CHECK(qgmm_moe_experts_forward(ctx, &rec, &tx, &tw, &to, &ty, b) == QGMM_ERR_INVALID_ARGUMENT &&
          strstr(qgmm_last_error(ctx), "recipe"), "recipe 7 accepted");
    CHECK(qgmm_moe_experts_forward(ctx, NULL, &tx, &tw, &to, &ty, b) == QGMM_ERR_INVALID_ARGUMENT, "NULL p accepted");
    qgmm_buffer_free(b);
    qgmm_context_destroy(ctx);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
