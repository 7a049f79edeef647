/*
 * test_conformance_selfcheck — proves the conformance harness cannot silently pass:
 * a wrong byte, a touched guard byte, a slightly wrong GEMM, a NaN, an unchecked cast
 * (no reference) and an unsupported op each give the verdict they must, and the same
 * cases untouched give PASS. Also checks the suites themselves (unique ids, every op
 * family present, the threshold table complete) and the error-statistics helpers.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qgmm.h"
#include "qgmm_cases.h"
#include "qgmm_fp8_codec.h"
#include "qgmm_thresholds.h"

static int g_fail;
#define EXPECT(cond, ...)                                                \
    do {                                                                 \
        if (!(cond)) {                                                   \
            g_fail++;                                                    \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                  \
            printf(__VA_ARGS__);                                         \
            printf("\n");                                                \
        }                                                                \
    } while (0)

/* ------------------------------------------------------------------ the planting hook */
typedef enum { PLANT_NONE, PLANT_FLIP_BIT, PLANT_GUARD, PLANT_SCALE_5PCT, PLANT_NAN } plant_kind;
typedef struct plant { plant_kind kind; const char *output; int done; } plant;

static void set_elem(uint8_t *p, qgmm_dtype dt, double v)
{
    if (dt == QGMM_BF16) {
        const uint16_t h = qgmm_f32_to_bf16((float)v);
        memcpy(p, &h, 2);
    } else {
        const float f = (float)v;
        memcpy(p, &f, 4);
    }
}

static double get_elem(const uint8_t *p, qgmm_dtype dt)
{
    if (dt == QGMM_BF16) { uint16_t h; memcpy(&h, p, 2); return qgmm_bf16_to_f32(h); }
    float f;
    memcpy(&f, p, 4);
    return f;
}

static void hook(const qgmm_case *c, const char *name, uint8_t *bytes, size_t n, size_t guard, void *user)
{
    plant *p = user;
    if (p->kind == PLANT_NONE || strcmp(name, p->output) != 0) return;
    const size_t span = n - 2 * guard;
    p->done = 1;
    switch (p->kind) {
    case PLANT_FLIP_BIT: bytes[guard + span / 2] ^= 0x01; break;
    case PLANT_GUARD: bytes[guard - 1] ^= 0xFF; break;
    case PLANT_SCALE_5PCT:
    case PLANT_NAN: {
        const size_t es = qgmm_dtype_size(c->out_dtype);
        for (size_t off = guard; off + es <= guard + span; off += es) {
            const double v = get_elem(bytes + off, c->out_dtype);
            if (p->kind == PLANT_NAN) {
                if (off == guard + (span / es / 2) * es) set_elem(bytes + off, c->out_dtype, NAN);
            } else if (isfinite(v)) {
                set_elem(bytes + off, c->out_dtype, v * 1.05);
            }
        }
        break;
    }
    default: break;
    }
}

static qgmm_case_result check_with(const qgmm_case *c, qgmm_context *ctx, qgmm_context *ref, plant_kind k,
                                   const char *output, int *planted)
{
    plant p = {k, output, 0};
    qgmm_case_set_output_hook(hook, &p);
    qgmm_case_result r;
    memset(&r, 0, sizeof r);
    r.verdict = QGMM_VERDICT_FAIL;
    qgmm_case_instance *inst = NULL;
    qgmm_status st = qgmm_case_prepare(c, ctx, &inst);
    EXPECT(st == QGMM_OK, "%s: prepare returned %s: %s", c->id, qgmm_status_string(st), qgmm_last_error(ctx));
    if (st == QGMM_OK) {
        st = qgmm_case_check(inst, ref, NULL, &r);
        EXPECT(st == QGMM_OK, "%s: check returned %s", c->id, qgmm_status_string(st));
        qgmm_case_release(inst);
    }
    qgmm_case_set_output_hook(NULL, NULL);
    if (planted) *planted = p.done;
    return r;
}

static const qgmm_case *first_with_prefix(const char *prefix)
{
    const int n = qgmm_case_count("conformance");
    for (int i = 0; i < n; ++i) {
        const qgmm_case *c = qgmm_case_get("conformance", i);
        if (strncmp(c->id, prefix, strlen(prefix)) == 0) return c;
    }
    return NULL;
}

/* ------------------------------------------------------------------ tests */
static void test_exact_cases(qgmm_context *ctx, qgmm_context *ref)
{
    static const struct { const char *prefix, *output; } cases[] = {
        {"fp8_rowwise.row.", "q"},           {"fp8_rowwise.jagged_col.", "scales"},
        {"mxfp8.dim0.blocked.", "scales"},   {"mxfp8.dim1.plain.", "q"},
        {"fp8_blockwise.1x128.deepgemm.", "scales"}, {"dequant.mxfp8.", "out"},
        {"to_blocked.m_groups", "out"},      {"from_blocked.k_groups", "out"},
        {"pad_token_groups.", "padded_offs"}, {"unpad_token_groups.", "out"},
        {"group_row_ids.padded", "row_ids"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const qgmm_case *c = first_with_prefix(cases[i].prefix);
        EXPECT(c != NULL, "no conformance case starts with %s", cases[i].prefix);
        if (!c) continue;
        int planted = 0;
        qgmm_case_result r = check_with(c, ctx, ref, PLANT_NONE, cases[i].output, NULL);
        EXPECT(r.verdict == QGMM_VERDICT_PASS, "%s untouched: verdict %s (%s)", c->id,
               qgmm_verdict_name(r.verdict), r.message);
        EXPECT(r.compared_bytes > 0 && r.mismatched_bytes == 0, "%s untouched: %llu/%llu bytes differ",
               c->id, (unsigned long long)r.mismatched_bytes, (unsigned long long)r.compared_bytes);
        const uint64_t h0 = r.output_hash;

        r = check_with(c, ctx, ref, PLANT_FLIP_BIT, cases[i].output, &planted);
        EXPECT(planted, "%s: the hook never saw output '%s'", c->id, cases[i].output);
        EXPECT(r.verdict == QGMM_VERDICT_FAIL, "%s with one flipped bit: verdict %s", c->id,
               qgmm_verdict_name(r.verdict));
        EXPECT(r.mismatched_bytes == 1, "%s with one flipped bit: %llu mismatching bytes (want 1)", c->id,
               (unsigned long long)r.mismatched_bytes);
        EXPECT(r.output_hash != h0, "%s: the output hash did not change with the output", c->id);
        EXPECT(r.message[0] != 0, "%s: a failure without a message", c->id);

        r = check_with(c, ctx, ref, PLANT_GUARD, cases[i].output, &planted);
        EXPECT(r.verdict == QGMM_VERDICT_FAIL && r.poison_violations >= 1,
               "%s with a written guard byte: verdict %s, %llu poison violations", c->id,
               qgmm_verdict_name(r.verdict), (unsigned long long)r.poison_violations);

        /* without a reference a cast is SKIPPED, never PASS */
        r = check_with(c, ctx, NULL, PLANT_NONE, cases[i].output, NULL);
        EXPECT(r.verdict == QGMM_VERDICT_SKIPPED, "%s without reference: verdict %s", c->id,
               qgmm_verdict_name(r.verdict));
    }
}

static void test_numeric_cases(qgmm_context *ctx)
{
    static const char *prefixes[] = {"gemm.m.bf16.bf16.out_bf16", "gemm.m.fp8_rowwise.e4m3fn.out_f32",
                                     "gemm.m.fp8_blockwise", "gemm.k.mxfp8", "gemm.k.fp8_rowwise",
                                     "recipe.fp8_rowwise.dgrad", "recipe.mxfp8.floor.fwd",
                                     "recipe.fp8_blockwise.wgrad"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; ++i) {
        const qgmm_case *c = first_with_prefix(prefixes[i]);
        EXPECT(c != NULL, "no conformance case starts with %s", prefixes[i]);
        if (!c) continue;
        qgmm_case_result r = check_with(c, ctx, NULL, PLANT_NONE, "out", NULL);
        EXPECT(r.verdict == QGMM_VERDICT_PASS, "%s untouched: verdict %s (%s)", c->id,
               qgmm_verdict_name(r.verdict), r.message);
        EXPECT(r.compared_elems > 0 && r.rel_fro_err <= r.max_rel_fro_allowed,
               "%s untouched: rel err %g (max %g) over %lld elements", c->id, r.rel_fro_err,
               r.max_rel_fro_allowed, (long long)r.compared_elems);
        if (c->op == QGMM_CASE_RECIPE)
            EXPECT(r.recipe_sqnr_db >= r.min_recipe_sqnr_db, "%s: recipe SQNR %.2f < %.1f", c->id,
                   r.recipe_sqnr_db, r.min_recipe_sqnr_db);

        int planted = 0;
        r = check_with(c, ctx, NULL, PLANT_SCALE_5PCT, "out", &planted);
        EXPECT(planted, "%s: the hook never saw 'out'", c->id);
        EXPECT(r.verdict == QGMM_VERDICT_FAIL && r.rel_fro_err > 0.04,
               "%s with every output 5%% off: verdict %s rel err %g", c->id, qgmm_verdict_name(r.verdict),
               r.rel_fro_err);

        r = check_with(c, ctx, NULL, PLANT_NAN, "out", NULL);
        EXPECT(r.verdict == QGMM_VERDICT_FAIL && r.nonfinite_elems >= 1,
               "%s with one NaN: verdict %s, %lld non-finite", c->id, qgmm_verdict_name(r.verdict),
               (long long)r.nonfinite_elems);

        r = check_with(c, ctx, NULL, PLANT_GUARD, "out", NULL);
        EXPECT(r.verdict == QGMM_VERDICT_FAIL && r.poison_violations >= 1,
               "%s with a written guard byte: verdict %s", c->id, qgmm_verdict_name(r.verdict));
    }
}

/* Invalid offsets: PASS needs BAD_OFFSETS and untouched outputs; one written byte fails. */
static void test_bad_offsets(qgmm_context *ctx, qgmm_context *ref)
{
    static const struct { const char *prefix, *output; } cases[] = {
        {"pad_token_groups.a32.bf16/M300.K64.G6.badoffs_past_end", "out"},
        {"gemm.m.bf16.bf16.out_bf16/M200.N96.K128.G5.badoffs_decreasing", "out"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const qgmm_case *c = first_with_prefix(cases[i].prefix);
        EXPECT(c != NULL, "no conformance case starts with %s", cases[i].prefix);
        if (!c) continue;
        qgmm_case_result r = check_with(c, ctx, ref, PLANT_NONE, cases[i].output, NULL);
        EXPECT(r.verdict == QGMM_VERDICT_PASS && r.status == QGMM_ERR_BAD_OFFSETS,
               "%s: verdict %s status %s (%s)", c->id, qgmm_verdict_name(r.verdict),
               qgmm_status_string(r.status), r.message);
        r = check_with(c, ctx, ref, PLANT_FLIP_BIT, cases[i].output, NULL);
        EXPECT(r.verdict == QGMM_VERDICT_FAIL && r.poison_violations >= 1,
               "%s with a written output byte: verdict %s", c->id, qgmm_verdict_name(r.verdict));
    }
}

/* A backend that lacks an op: the test plugin implements only group_row_ids. */
static void test_unsupported(qgmm_context *ref)
{
    qgmm_context *tp = NULL;
    if (qgmm_context_create("testplugin", 0, &tp) != QGMM_OK) {
        printf("note: testplugin not loadable here (%s); unsupported-path check skipped\n",
               qgmm_last_error(NULL));
        return;
    }
    const qgmm_case *q = first_with_prefix("fp8_rowwise.row.");
    const qgmm_case *ids = first_with_prefix("group_row_ids.plain");
    if (q) {
        qgmm_case_result r = check_with(q, tp, ref, PLANT_NONE, "q", NULL);
        EXPECT(r.verdict == QGMM_VERDICT_UNSUPPORTED, "%s on testplugin: verdict %s (%s)", q->id,
               qgmm_verdict_name(r.verdict), r.message);
    }
    if (ids) {
        qgmm_case_result r = check_with(ids, tp, ref, PLANT_NONE, "row_ids", NULL);
        EXPECT(r.verdict == QGMM_VERDICT_PASS, "%s on testplugin: verdict %s (%s)", ids->id,
               qgmm_verdict_name(r.verdict), r.message);
    }
    qgmm_context_destroy(tp);
}

static void test_catalog(void)
{
    const char *const *suites = qgmm_case_suites();
    for (int s = 0; suites[s]; ++s) {
        const int n = qgmm_case_count(suites[s]);
        EXPECT(n > 0, "suite %s is empty", suites[s]);
        int fam[6] = {0}, op[QGMM_CASE_OP_COUNT] = {0};
        for (int i = 0; i < n; ++i) {
            const qgmm_case *c = qgmm_case_get(suites[s], i);
            fam[c->family]++;
            op[c->op]++;
            EXPECT(c->bytes > 0, "%s: bytes %g", c->id, c->bytes);
            EXPECT((c->family >= QGMM_FAMILY_GEMM) == (c->flops > 0),
                   "%s: flops %g", c->id, c->flops);
            EXPECT(qgmm_case_find(suites[s], c->id) == c, "%s: id not unique in %s", c->id, suites[s]);
        }
        if (!strcmp(suites[s], "conformance"))
            for (int o = 0; o < QGMM_CASE_OP_COUNT; ++o) EXPECT(op[o] > 0, "conformance has no case of op %d", o);
        else
            for (int f = 0; f < 4; ++f) EXPECT(fam[f] > 0, "suite %s has no case of family %d", suites[s], f);
    }
    EXPECT(qgmm_case_count("nope") == 0 && qgmm_case_get("nope", 0) == NULL, "unknown suite not empty");
    EXPECT(qgmm_case_get("conformance", -1) == NULL, "negative index accepted");

    /* reshape: keeps the variant, recomputes id and cost, refuses an invalid shape */
    const qgmm_case *mx = first_with_prefix("mxfp8.dim0.blocked.");
    if (mx) {
        qgmm_case out;
        char why[128];
        qgmm_case_shape sh = {8192, 0, 2048, 0, 0};
        EXPECT(qgmm_case_reshape(mx, &sh, &out, why, sizeof why) == QGMM_OK, "reshape refused: %s", why);
        EXPECT(!strcmp(out.name, mx->name) && strstr(out.id, "M8192.K2048") && out.bytes > mx->bytes,
               "reshape: name %s id %s", out.name, out.id);
        sh.K = 2050;
        EXPECT(qgmm_case_reshape(mx, &sh, &out, why, sizeof why) == QGMM_ERR_INVALID_ARGUMENT && why[0],
               "reshape accepted K=2050 for MXFP8");
    }
}

static void test_thresholds_and_stats(void)
{
    for (int r = 0; r <= QGMM_RECIPE_MXFP8; ++r)
        for (int k = 0; k < 2; ++k) {
            EXPECT(qgmm_threshold_max_rel_fro((qgmm_recipe)r, (qgmm_gemm_kind)k, QGMM_BF16) == 1e-2,
                   "kernel threshold bf16 recipe %d kind %d", r, k);
            EXPECT(qgmm_threshold_max_rel_fro((qgmm_recipe)r, (qgmm_gemm_kind)k, QGMM_F32) == 1e-5,
                   "kernel threshold f32 recipe %d kind %d", r, k);
        }
    for (int r = 1; r <= QGMM_RECIPE_MXFP8; ++r) {
        EXPECT(qgmm_threshold_min_sqnr_db((qgmm_recipe)r, 0) == 27.0, "fwd floor recipe %d", r);
        EXPECT(qgmm_threshold_min_sqnr_db((qgmm_recipe)r, 1) == 25.0, "dgrad floor recipe %d", r);
        EXPECT(qgmm_threshold_min_sqnr_db((qgmm_recipe)r, 2) == 24.0, "wgrad floor recipe %d", r);
    }
    EXPECT(qgmm_threshold_max_rel_fro(QGMM_RECIPE_BF16, QGMM_GEMM_M_GROUPED, QGMM_F16) < 0,
           "a missing row must read as 'no threshold' (-1)");

    /* out = ref * (1 + 1e-2) exactly: rel err 1e-2, SQNR 40 dB */
    double ref[4] = {1.0, -2.0, 3.0, 0.5}, out[4];
    for (int i = 0; i < 4; ++i) out[i] = ref[i] * 1.01;
    qgmm_err_stats s = qgmm_error_stats(out, ref, 4);
    EXPECT(fabs(s.rel_fro - 1e-2) < 1e-12 && fabs(s.sqnr_db - 40.0) < 1e-9 && fabs(s.max_abs - 0.03) < 1e-12,
           "stats: rel %g sqnr %g max %g", s.rel_fro, s.sqnr_db, s.max_abs);
    EXPECT(isinf(qgmm_sqnr_db(ref, ref, 4)) && qgmm_sqnr_db(ref, ref, 4) > 0, "identical: SQNR must be +inf");
    out[2] = NAN;
    s = qgmm_error_stats(out, ref, 4);
    EXPECT(s.nonfinite == 1 && !(s.rel_fro <= 1.0), "a NaN output must count and fail");
    const double A[4] = {1, 2, 3, 4}, B[6] = {1, 0, 0, 1, 1, 1};
    double C[6];
    qgmm_ref_gemm_f64(2, 3, 2, A, 2, 1, B, 2, 1, C);
    EXPECT(C[0] == 1 && C[1] == 2 && C[2] == 3 && C[3] == 3 && C[4] == 4 && C[5] == 7, "f64 GEMM wrong");
    EXPECT(qgmm_fnv1a64(QGMM_FNV1A_INIT, "a", 1) == 0xaf63dc4c8601ec8cull, "FNV-1a of 'a'");
}

int main(void)
{
    /* the test plugin (if built) becomes a backend with one op */
    setenv("QGMM_EXTRA_BACKENDS", "testplugin", 0);
    qgmm_context *ctx = NULL, *ref = NULL;
    if (qgmm_context_create("cpu", 0, &ctx) != QGMM_OK || qgmm_context_create("cpu", 0, &ref) != QGMM_OK) {
        printf("FAIL: cannot create cpu contexts: %s\n", qgmm_last_error(NULL));
        return 1;
    }
    test_catalog();
    test_thresholds_and_stats();
    test_exact_cases(ctx, ref);
    test_numeric_cases(ctx);
    test_bad_offsets(ctx, ref);
    test_unsupported(ref);
    qgmm_context_destroy(ctx);
    qgmm_context_destroy(ref);
    printf("%s: %d failure(s)\n", g_fail ? "FAIL" : "PASS", g_fail);
    return g_fail ? 1 : 0;
}
