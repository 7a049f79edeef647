/*
 * casts_emu_test.cpp — the shared cast kernel qgmm_kq_generic (kernels/qgmm_kernels_quant.cuh,
 * one wave per scale group) run on the host under hip_emu.h with AMD's 64-wide waves
 * (QGMM_WARP = 64: the amax is a 6-step xor-shuffle reduction over the wave), against the
 * CPU reference bytes: FP8 rowwise along C and along R (incl. jagged groups with an empty
 * one, power-of-2, reciprocal), MXFP8 dim0/dim1 FLOOR/RCEIL, blockwise 1x128 and 128x128
 * with a ragged last tile; inputs seeded with NaN, +-inf, zeros and f32 subnormals so the
 * NaN-propagating amax is exercised across all 64 lanes. Also qgmm_block_amax (one partial
 * per 64-wide wave through LDS) against a serial reference.
 *
 * On NVIDIA the same kernels run with 32-wide warps (the CUDA tests); this is the 64-wide
 * check the HIP backend needs without an AMD GPU. The scale/quantize bytes must be
 * IDENTICAL to the reference. Exit 0 pass, 1 fail.
 */
#include "qgmm_backend.h"
#include "hip_emu.h"

#include "qgmm_kernels_quant.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

static int checks, failures;
#define CHECK(cond, ...) do { ++checks; if (!(cond)) { ++failures; \
    printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static uint32_t g_seed = 777;
static uint32_t rnd(void) { g_seed = g_seed * 1664525u + 1013904223u; return g_seed >> 8; }
static float special_or_normal(void)
{
    const uint32_t r = rnd() % 97;
    if (r == 0) return qgmm_bits_f32(0x7FC00001u);             /* NaN */
    if (r == 1) return qgmm_bits_f32(0xFF800000u);             /* -inf */
    if (r == 2) return 0.0f;
    if (r == 3) return qgmm_bits_f32(0x00000123u);             /* f32 subnormal */
    return ((float)(rnd() % 20001) - 10000.0f) / 997.0f * (float)(1 << (rnd() % 5));
}

static void kq_body(void *v) { qgmm_kq_generic(*(const qgmm_kquant *)v); }

struct buf {
    qgmm_buffer *b;
    uint8_t *p;
    size_t n;
};
static buf mk(qgmm_context *c, size_t n)
{
    buf r;
    r.n = n ? n : 1;
    if (qgmm_buffer_alloc(c, r.n, &r.b) != QGMM_OK) { printf("alloc\n"); exit(1); }
    r.p = (uint8_t *)qgmm_buffer_native(r.b);
    memset(r.p, 0xEE, r.n);
    return r;
}

enum { ROWWISE, MX, BLOCKWISE };
struct ccase {
    const char *name;
    int op;
    qgmm_dtype xd, qd;
    int64_t R, C;
    int dim;           /* rowwise reduce_dim / MX block_dim */
    int opt;           /* rowwise: pow2 | recip<<1; MX: rceil; blockwise: 128x128 */
    std::vector<int> groups;  /* rowwise jagged group sizes (along the reduced dim) */
};

static void run(qgmm_context *cpu, const ccase &c)
{
    const int64_t shape[2] = {c.R, c.C}, n = c.R * c.C;
    const size_t xs = qgmm_dtype_size(c.xd);
    buf x = mk(cpu, (size_t)n * xs), qr = mk(cpu, (size_t)n), qe = mk(cpu, (size_t)n);
    for (int64_t i = 0; i < n; ++i) {
        const float v = special_or_normal();
        if (c.xd == QGMM_BF16) ((uint16_t *)x.p)[i] = qgmm_f32_to_bf16(v);
        else ((float *)x.p)[i] = v;
    }
    qgmm_tensor tx = qgmm_tensor_make(x.b, 0, c.xd, 2, shape);
    qgmm_tensor tq = qgmm_tensor_make(qr.b, 0, c.qd, 2, shape);
    if (c.op == MX && c.dim == 0) tq = qgmm_tensor_make_colmajor(qr.b, 0, c.qd, c.R, c.C);
    qgmm_tensor ts, to;
    memset(&to, 0, sizeof to);
    buf sr = {NULL, NULL, 0}, se = {NULL, NULL, 0}, ob = {NULL, NULL, 0};
    uint32_t status = 0;
    qgmm_kquant a = qgmm_kquant_base(&tx, &tq, &status);
    qgmm_status st;
    if (c.op == ROWWISE) {
        const int64_t other = c.dim == 1 ? c.R : c.C;
        const int64_t G = (int64_t)c.groups.size();
        const int64_t ns = (G ? G : 1) * other;
        sr = mk(cpu, (size_t)ns * 4); se = mk(cpu, (size_t)ns * 4);
        ts = qgmm_tensor_make(sr.b, 0, QGMM_F32, 1, &ns);
        if (G) {
            ob = mk(cpu, (size_t)G * 4);
            int32_t acc = 0;
            for (int64_t g = 0; g < G; ++g) { acc += c.groups[g]; ((int32_t *)ob.p)[g] = acc; }
            to = qgmm_tensor_make(ob.b, 0, QGMM_I32, 1, &G);
            const int64_t s2[2] = {G, other};
            ts = qgmm_tensor_make(sr.b, 0, QGMM_F32, 2, s2);
        }
        const qgmm_fp8_rowwise_params p = {c.dim, c.opt & 1, (c.opt & 2) ? QGMM_SCALE_RECIPROCAL : QGMM_SCALE_MULTIPLIER};
        st = qgmm_quantize_fp8_rowwise(cpu, &p, &tx, G ? &to : NULL, &tq, &ts);
        /* the launcher's set-up of the same op (backends/cuda_hip/cast_rowwise.cu) */
        a.kind = QGMM_KQ_ROWWISE;
        a.along_c = c.dim == 1;
        a.pow2 = c.opt & 1;
        a.recip = (c.opt & 2) != 0;
        if (G) { a.offs = (const int32_t *)ob.p; a.offs_stride = 1; a.G = G; }
        a.s.ptr = se.p;
        if (G) { a.s.s0 = other; a.s.s1 = 1; } else { a.s.s0 = other; a.s.s1 = 1; }
    } else if (c.op == MX) {
        const int64_t O = c.dim == 1 ? c.R : c.C, NB = (c.dim == 1 ? c.C : c.R) / 32;
        const int64_t s2[2] = {O, NB};
        sr = mk(cpu, (size_t)(O * NB)); se = mk(cpu, (size_t)(O * NB));
        ts = qgmm_tensor_make(sr.b, 0, QGMM_E8M0, 2, s2);
        const qgmm_mxfp8_params p = {c.dim, c.opt ? QGMM_MX_RCEIL : QGMM_MX_FLOOR, QGMM_SCALES_PLAIN};
        st = qgmm_quantize_mxfp8(cpu, &p, &tx, &tq, &ts);
        a.kind = QGMM_KQ_MX;
        a.along_c = c.dim == 1;
        a.rceil = c.opt;
        a.cols_pad = qgmm_blocked_cols(NB);
        a.per_expert = qgmm_blocked_rows(O) * a.cols_pad;
        a.s.ptr = se.p; a.s.s0 = 0; a.s.s1 = NB; a.s.s2 = 1;
    } else {
        const qgmm_block_shape bs = c.opt ? QGMM_BLOCK_128X128 : QGMM_BLOCK_1X128;
        size_t bytes = 0;
        qgmm_blockwise_scales_view(bs, QGMM_BLOCKWISE_ROW_MAJOR, 2, shape, NULL, 0, &ts, &bytes);
        sr = mk(cpu, bytes); se = mk(cpu, bytes);
        qgmm_blockwise_scales_view(bs, QGMM_BLOCKWISE_ROW_MAJOR, 2, shape, sr.b, 0, &ts, &bytes);
        const qgmm_fp8_blockwise_params p = {bs};
        st = qgmm_quantize_fp8_blockwise(cpu, &p, &tx, &tq, &ts);
        a.kind = QGMM_KQ_BLOCKWISE;
        a.along_c = 1;
        a.tile_rows = c.opt ? 128 : 1;
        qgmm_tensor tse = ts;
        tse.buffer = se.b;
        a.s = qgmm_kview_of(&tse, se.p);
        a.s.s0 = 0;
    }
    CHECK(st == QGMM_OK, "%s: cpu reference: %s", c.name, qgmm_last_error(cpu));
    if (st != QGMM_OK) return;
    a.q.ptr = qe.p;
    hg_emu_run(3, kq_body, &a);
    size_t qbad = 0, sbad = 0, first = (size_t)-1;
    for (size_t i = 0; i < qr.n; ++i) if (qr.p[i] != qe.p[i]) { if (!qbad) first = i; ++qbad; }
    for (size_t i = 0; i < sr.n; ++i) sbad += sr.p[i] != se.p[i];
    CHECK(qbad == 0, "%s: %zu fp8 bytes differ from the reference (first at %zu: ref 0x%02x emu 0x%02x)", c.name,
          qbad, first, first != (size_t)-1 ? qr.p[first] : 0, first != (size_t)-1 ? qe.p[first] : 0);
    CHECK(sbad == 0, "%s: %zu scale bytes differ from the reference", c.name, sbad);
    CHECK(status == 0, "%s: status %u", c.name, status);
    printf("  %-46s %lld values, %zu scale bytes: %s\n", c.name, (long long)n, sr.n, qbad + sbad ? "DIFFER" : "identical");
    qgmm_buffer *bs[] = {x.b, qr.b, qe.b, sr.b, se.b, ob.b};
    for (qgmm_buffer *b : bs) if (b) qgmm_buffer_free(b);
}

/* qgmm_block_amax: every work-item contributes one value; all must get the NaN-propagating
 * max of |.| over the 256 (4 waves of 64). */
struct amax_ctx { const float *in; float *out; };
static void amax_body(void *v)
{
    const amax_ctx *c = (const amax_ctx *)v;
    QGMM_SHARED float warps[QGMM_MAX_WARPS];
    c->out[QGMM_TID] = qgmm_block_amax(qgmm_fabs_f32(c->in[QGMM_TID]), warps);
}
static void block_amax_cases(void)
{
    for (int t = 0; t < 6; ++t) {
        float in[256], out[256];
        for (int i = 0; i < 256; ++i) in[i] = ((float)(rnd() % 1000) - 500.0f) / 7.0f;
        const int hot = (int)(rnd() % 256);
        if (t == 1) in[hot] = 1e30f;                          /* max in one lane of one wave */
        if (t == 2) in[hot] = qgmm_bits_f32(0x7FC00000u);     /* NaN anywhere wins */
        if (t == 3) in[255] = -3e20f;                         /* last lane of the last wave */
        if (t == 4) for (int i = 0; i < 256; ++i) in[i] = 0.0f;
        if (t == 5) in[64] = qgmm_bits_f32(0xFF800000u);      /* -inf: first lane of wave 1 */
        float ref = 0.0f;
        for (int i = 0; i < 256; ++i) ref = qgmm_amax_combine(ref, qgmm_fabs_f32(in[i]));
        amax_ctx c = {in, out};
        hg_emu_run(1, amax_body, &c);
        int bad = 0;
        for (int i = 0; i < 256; ++i) bad += qgmm_f32_bits(out[i]) != qgmm_f32_bits(ref) &&
                                             !(qgmm_isnan_f32(out[i]) && qgmm_isnan_f32(ref));
        CHECK(bad == 0, "block amax case %d: %d work-items disagree with the serial amax", t, bad);
    }
    printf("  qgmm_block_amax over 4 waves of 64: 6 cases\n");
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: hip_casts_emu_test\nRuns the shared cast kernel qgmm_kq_generic with 64-wide waves on the host "
               "against the CPU reference bytes. Exit 0 pass, 1 fail.\n");
        return 0;
    }
    qgmm_context *cpu = NULL;
    if (qgmm_context_create("cpu", 0, &cpu) != QGMM_OK) { printf("cpu: %s\n", qgmm_last_error(NULL)); return 1; }
    const qgmm_dtype BF = QGMM_BF16, F32 = QGMM_F32, FN = QGMM_F8E4M3FN, FNUZ = QGMM_F8E4M3FNUZ, E5 = QGMM_F8E5M2;
    const ccase cases[] = {
        {"rowwise along C, bf16 -> e4m3fnuz", ROWWISE, BF, FNUZ, 37, 200, 1, 0, {}},
        {"rowwise along C, f32 -> e4m3fn, pow2+recip", ROWWISE, F32, FN, 19, 333, 1, 3, {}},
        {"colwise (along R), f32 -> e5m2", ROWWISE, F32, E5, 301, 23, 0, 0, {}},
        {"jagged rowwise along C (empty group)", ROWWISE, BF, FNUZ, 9, 250, 1, 2, {70, 0, 130, 50}},
        {"jagged colwise along R", ROWWISE, F32, FN, 190, 12, 0, 1, {64, 100, 0, 26}},
        {"MXFP8 dim0 FLOOR bf16 -> e4m3fn", MX, BF, FN, 21, 256, 1, 0, {}},
        {"MXFP8 dim0 RCEIL f32 -> e5m2", MX, F32, E5, 13, 160, 1, 1, {}},
        {"MXFP8 dim1 FLOOR bf16 -> e4m3fn (colmajor q)", MX, BF, FN, 96, 40, 0, 0, {}},
        {"blockwise 1x128 bf16 -> e4m3fnuz", BLOCKWISE, BF, FNUZ, 11, 384, 1, 0, {}},
        {"blockwise 128x128 f32 -> e4m3fn (ragged rows)", BLOCKWISE, F32, FN, 150, 256, 1, 1, {}},
    };
    for (const ccase &c : cases) run(cpu, c);
    block_amax_cases();
    qgmm_context_destroy(cpu);
    printf("%d checks, %d failures (64-wide waves, host emulation)\n", checks, failures);
    return failures ? 1 : 0;
}
