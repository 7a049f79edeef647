/*
 * moe_bench — times the composite MoE expert layer (qgmm_moe_experts_forward/_backward) for
 * each recipe: forward alone and forward+backward (dgrad + wgrad), device events, median of
 * --reps after warm-up. Prints one markdown row per (shape, recipe) with the speedup over the
 * qgmm BF16 composite of the same shape (the way torchao reports MoE training speedups),
 * then the per-step breakdown of each recipe from the _profiled calls (an event between
 * every two steps: each cast, padding / layout step and GEMM of forward, dgrad and wgrad),
 * median of --profile-reps separate runs.
 *
 * Group sizes: ragged, multiples of 16, the same formula as bench/moe/torch_moe.py so the torch
 * composition sees the same groups (moe_group_sizes below; both print the offsets).
 * Outputs y, dx, dw are bf16 (what the torch baseline produces).
 */
#include "qgmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *USAGE =
    "usage: moe_bench [--backend NAME] [--shape M,N,K,E]... [--reps R] [--warmup W]\n"
    "                 [--recipes LIST] [--profile-reps P]\n"
    "  Times qgmm_moe_experts_forward and forward+backward per recipe (bf16, fp8_rowwise,\n"
    "  fp8_blockwise, mxfp8) on random bf16 data with ragged groups (multiples of 16), then\n"
    "  each step of both (casts, padding / layout steps, GEMMs) from the _profiled calls.\n"
    "  --backend       cpu | cuda | hip | vulkan   (default cuda)\n"
    "  --shape         M,N,K,E: M tokens, K model dim, N expert hidden, E experts; repeatable\n"
    "                  (default: the four shapes of issue 21: 16384,2048,7168,8  32768,8192,5120,8\n"
    "                  65536,2048,7168,16  32768,4096,7168,64)\n"
    "  --reps          timed repetitions, median reported (default 20, minimum 1)\n"
    "  --warmup        untimed forward+backward runs per recipe first (default 3)\n"
    "  --recipes       comma list of recipes to run (default all four)\n"
    "  --profile-reps  profiled forward+backward runs for the per-step table, median\n"
    "                  reported (default 10; 0: no per-step table)\n"
    "Output: markdown tables; ms are medians of device-event intervals on the context's stream.\n";

/* Ragged group sizes, multiples of 16, summing to M (M must be a multiple of 16):
 * weight_g = 2 + (5g + 3) mod 7, size_g = floor(units * weight_g / sum) * 16, the last group
 * takes the remainder. Mirrors group_sizes() in torch_moe.py. */
static void moe_group_sizes(int64_t M, int E, int32_t *offs)
{
    const int64_t units = M / 16;
    int64_t wsum = 0, at = 0;
    for (int g = 0; g < E; ++g) wsum += 2 + (5 * g + 3) % 7;
    for (int g = 0; g < E; ++g) {
        const int64_t sz = g == E - 1 ? units - at : units * (2 + (5 * g + 3) % 7) / wsum;
        at += sz;
        offs[g] = (int32_t)(at * 16);
    }
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float urand(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(rng_state >> 40) / 16777216.0f * 2.0f - 1.0f;
}
static uint16_t to_bf16(float f)
{
    union { float f; uint32_t u; } v = {f};
    return (uint16_t)((v.u + 0x7FFF + ((v.u >> 16) & 1)) >> 16);
}

static qgmm_context *ctx;
#define TRY(call) do { qgmm_status s_ = (call); if (s_ != QGMM_OK) { \
    fprintf(stderr, "moe_bench: %s failed: %s: %s\n", #call, qgmm_status_string(s_), qgmm_last_error(ctx)); \
    return -1; } } while (0)

static int random_bf16_buffer(size_t n, float amp, qgmm_buffer **out)
{
    uint16_t *h = malloc(2 * n);
    if (!h) { fprintf(stderr, "moe_bench: host allocation of %zu bytes failed\n", 2 * n); return -1; }
    for (size_t i = 0; i < n; ++i) h[i] = to_bf16(urand() * amp);
    qgmm_status s = qgmm_buffer_alloc(ctx, 2 * n, out);
    if (s == QGMM_OK) s = qgmm_buffer_upload(*out, 0, h, 2 * n);
    free(h);
    if (s != QGMM_OK) { fprintf(stderr, "moe_bench: upload: %s: %s\n", qgmm_status_string(s), qgmm_last_error(ctx)); return -1; }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct shape { int64_t M, N, K, E; } shape;
typedef struct tensors {
    qgmm_tensor x, w, dy, offs, y, dx, dw;
} tensors;

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The per-step medians of one recipe: forward's steps, then backward's (dgrad, wgrad). */
typedef struct breakdown {
    int n;
    const char *phase[2 * QGMM_MOE_PROFILE_MAX_STEPS], *step[2 * QGMM_MOE_PROFILE_MAX_STEPS];
    double ms[2 * QGMM_MOE_PROFILE_MAX_STEPS];
} breakdown;

/* reps profiled forward+backward runs; step i's time is the interval between events i and
 * i + 1 of its call, read after the call (qgmm_event_elapsed_ms waits for the end event). */
static int profile_recipe(const qgmm_moe_params *p, const tensors *t, qgmm_buffer *ws, int reps, breakdown *b)
{
    qgmm_moe_profile pr[2];
    memset(pr, 0, sizeof pr);
    double *v = calloc((size_t)(2 * QGMM_MOE_PROFILE_MAX_STEPS * reps), sizeof(double));
    int rc = v ? 0 : -1;
    for (int d = 0; d < 2 && !rc; ++d)
        for (int i = 0; i <= QGMM_MOE_PROFILE_MAX_STEPS && !rc; ++i)
            if (qgmm_event_create(ctx, &pr[d].events[i]) != QGMM_OK) rc = -1;
    for (int r = 0; r < reps && !rc; ++r) {
        if (qgmm_moe_experts_forward_profiled(ctx, p, &t->x, &t->w, &t->offs, &t->y, ws, &pr[0]) != QGMM_OK ||
            qgmm_moe_experts_backward_profiled(ctx, p, &t->x, &t->w, &t->dy, &t->offs, &t->dx, &t->dw, ws,
                                               &pr[1]) != QGMM_OK) {
            rc = -1;
            break;
        }
        b->n = 0;
        for (int d = 0; d < 2 && !rc; ++d)
            for (int i = 0; i < pr[d].steps && !rc; ++i, ++b->n) {
                b->phase[b->n] = pr[d].phase[i];
                b->step[b->n] = pr[d].step[i];
                if (qgmm_event_elapsed_ms(pr[d].events[i], pr[d].events[i + 1], &v[b->n * reps + r]) != QGMM_OK)
                    rc = -1;
            }
    }
    if (rc) fprintf(stderr, "moe_bench: profiled run failed: %s\n", qgmm_last_error(ctx));
    for (int i = 0; i < b->n && !rc; ++i) b->ms[i] = median(&v[i * reps], reps);
    for (int d = 0; d < 2; ++d)
        for (int i = 0; i <= QGMM_MOE_PROFILE_MAX_STEPS; ++i) qgmm_event_destroy(pr[d].events[i]);
    free(v);
    return rc;
}

/* What a step is, by its op: a cast (quantize, or the MXFP8 round trip), a GEMM, or a
 * padding / layout step. */
static int step_kind(const char *step)
{
    if (!strncmp(step, "quantize", 8) || !strncmp(step, "mx_round_trip", 13)) return 0;
    return !strncmp(step, "grouped_gemm", 12) ? 1 : 2;
}

static void print_breakdown(const shape *s, const char *const *names, const int *want, const breakdown *b)
{
    printf("\nper phase (ms, medians of the steps' intervals), M=%lld N=%lld K=%lld E=%lld\n\n"
           "| recipe | forward | dgrad | wgrad | casts | GEMMs | pad / layout | sum of steps |\n"
           "|---|---|---|---|---|---|---|---|\n",
           (long long)s->M, (long long)s->N, (long long)s->K, (long long)s->E);
    for (int r = 0; r < 4; ++r) {
        if (!want[r] || !b[r].n) continue;
        double ph[3] = {0, 0, 0}, kind[3] = {0, 0, 0}, all = 0;
        for (int i = 0; i < b[r].n; ++i) {
            ph[!strcmp(b[r].phase[i], "forward") ? 0 : !strcmp(b[r].phase[i], "dgrad") ? 1 : 2] += b[r].ms[i];
            kind[step_kind(b[r].step[i])] += b[r].ms[i];
            all += b[r].ms[i];
        }
        printf("| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", names[r], ph[0], ph[1], ph[2], kind[0],
               kind[1], kind[2], all);
    }
    printf("\nper step\n\n| recipe | phase | step | ms | share of fwd+bwd |\n|---|---|---|---|---|\n");
    for (int r = 0; r < 4; ++r) {
        if (!want[r] || !b[r].n) continue;
        double all = 0;
        for (int i = 0; i < b[r].n; ++i) all += b[r].ms[i];
        for (int i = 0; i < b[r].n; ++i)
            printf("| %s | %s | %s | %.3f | %.1f %% |\n", names[r], b[r].phase[i], b[r].step[i], b[r].ms[i],
                   100.0 * b[r].ms[i] / all);
    }
    fflush(stdout);
}

/* One recipe: warm-up, then reps of forward and reps of forward+backward; medians in ms;
 * then preps profiled runs into *b (none when preps is 0). */
static int time_recipe(qgmm_recipe r, const shape *s, const tensors *t, int reps, int warmup, int preps,
                       double *fwd_ms, double *fb_ms, breakdown *b)
{
    qgmm_moe_params p = {r, QGMM_F8E4M3FN, QGMM_MX_RCEIL};
    const size_t wsb = qgmm_moe_workspace_bytes(&p, s->M, s->N, s->K, s->E);
    qgmm_buffer *ws = NULL;
    if (wsb) TRY(qgmm_buffer_alloc(ctx, wsb, &ws));
    qgmm_event *e0, *e1;
    TRY(qgmm_event_create(ctx, &e0));
    TRY(qgmm_event_create(ctx, &e1));
    double *a = malloc(sizeof(double) * (size_t)reps), *fb = malloc(sizeof(double) * (size_t)reps);
    for (int i = 0; i < warmup; ++i) {
        TRY(qgmm_moe_experts_forward(ctx, &p, &t->x, &t->w, &t->offs, &t->y, ws));
        TRY(qgmm_moe_experts_backward(ctx, &p, &t->x, &t->w, &t->dy, &t->offs, &t->dx, &t->dw, ws));
    }
    TRY(qgmm_synchronize(ctx));
    for (int i = 0; i < reps; ++i) {
        TRY(qgmm_event_record(e0));
        TRY(qgmm_moe_experts_forward(ctx, &p, &t->x, &t->w, &t->offs, &t->y, ws));
        TRY(qgmm_event_record(e1));
        TRY(qgmm_event_elapsed_ms(e0, e1, &a[i]));
    }
    for (int i = 0; i < reps; ++i) {
        TRY(qgmm_event_record(e0));
        TRY(qgmm_moe_experts_forward(ctx, &p, &t->x, &t->w, &t->offs, &t->y, ws));
        TRY(qgmm_moe_experts_backward(ctx, &p, &t->x, &t->w, &t->dy, &t->offs, &t->dx, &t->dw, ws));
        TRY(qgmm_event_record(e1));
        TRY(qgmm_event_elapsed_ms(e0, e1, &fb[i]));
    }
    TRY(qgmm_synchronize(ctx)); /* surfaces BAD_OFFSETS / async device errors */
    *fwd_ms = median(a, reps);
    *fb_ms = median(fb, reps);
    free(a); free(fb);
    if (preps > 0 && profile_recipe(&p, t, ws, preps, b)) return -1;
    TRY(qgmm_synchronize(ctx));
    qgmm_event_destroy(e0);
    qgmm_event_destroy(e1);
    qgmm_buffer_free(ws);
    return 0;
}

static int run_shape(const shape *s, int reps, int warmup, int preps, const int *want)
{
    static const char *names[4] = {"bf16", "fp8_rowwise", "fp8_blockwise", "mxfp8"};
    const int64_t M = s->M, N = s->N, K = s->K, E = s->E;
    int32_t *offs = malloc(4 * (size_t)E);
    moe_group_sizes(M, (int)E, offs);
    printf("\nshape M=%lld N=%lld K=%lld E=%lld  offs=[", (long long)M, (long long)N, (long long)K, (long long)E);
    for (int g = 0; g < E; ++g) printf(g ? ",%d" : "%d", offs[g]);
    printf("]\n\n| M | N | K | E | recipe | fwd ms | fwd+bwd ms | fwd TFLOP/s | fwd+bwd TFLOP/s | fwd speedup vs bf16 | fwd+bwd speedup vs bf16 |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    fflush(stdout);
    qgmm_buffer *bx, *bw, *bdy, *bo, *by, *bdx, *bdw;
    if (random_bf16_buffer((size_t)(M * K), 1.0f, &bx) || random_bf16_buffer((size_t)(E * N * K), 0.05f, &bw) ||
        random_bf16_buffer((size_t)(M * N), 1.0f, &bdy))
        return -1;
    TRY(qgmm_buffer_alloc(ctx, 4 * (size_t)E, &bo));
    TRY(qgmm_buffer_upload(bo, 0, offs, 4 * (size_t)E));
    TRY(qgmm_buffer_alloc(ctx, 2 * (size_t)(M * N), &by));
    TRY(qgmm_buffer_alloc(ctx, 2 * (size_t)(M * K), &bdx));
    TRY(qgmm_buffer_alloc(ctx, 2 * (size_t)(E * N * K), &bdw));
    const int64_t sx[2] = {M, K}, sw[3] = {E, N, K}, sy[2] = {M, N}, so[1] = {E};
    tensors t = {qgmm_tensor_make(bx, 0, QGMM_BF16, 2, sx), qgmm_tensor_make(bw, 0, QGMM_BF16, 3, sw),
                 qgmm_tensor_make(bdy, 0, QGMM_BF16, 2, sy), qgmm_tensor_make(bo, 0, QGMM_I32, 1, so),
                 qgmm_tensor_make(by, 0, QGMM_BF16, 2, sy), qgmm_tensor_make(bdx, 0, QGMM_BF16, 2, sx),
                 qgmm_tensor_make(bdw, 0, QGMM_BF16, 3, sw)};
    const double flop = 2.0 * (double)M * (double)N * (double)K; /* one GEMM; fwd+bwd is 3 */
    double base_f = 0, base_fb = 0;
    breakdown bd[4];
    memset(bd, 0, sizeof bd);
    int rc = 0;
    for (int r = 0; r < 4; ++r) {
        if (!want[r]) continue;
        double f, fb;
        if (time_recipe((qgmm_recipe)r, s, &t, reps, warmup, preps, &f, &fb, &bd[r])) {
            printf("| %lld | %lld | %lld | %lld | %s | error | error | | | | |\n", (long long)M, (long long)N,
                   (long long)K, (long long)E, names[r]);
            rc = -1;
            continue;
        }
        if (r == 0) { base_f = f; base_fb = fb; }
        char sf[32] = "n/a", sfb[32] = "n/a"; /* n/a when the bf16 row was not run */
        if (base_f > 0) { snprintf(sf, sizeof sf, "%.2fx", base_f / f); snprintf(sfb, sizeof sfb, "%.2fx", base_fb / fb); }
        printf("| %lld | %lld | %lld | %lld | %s | %.3f | %.3f | %.0f | %.0f | %s | %s |\n", (long long)M,
               (long long)N, (long long)K, (long long)E, names[r], f, fb, flop / f * 1e-9, 3 * flop / fb * 1e-9, sf, sfb);
        fflush(stdout);
    }
    if (preps > 0) print_breakdown(s, names, want, bd);
    qgmm_buffer *all[] = {bx, bw, bdy, bo, by, bdx, bdw};
    for (int i = 0; i < 7; ++i) qgmm_buffer_free(all[i]);
    free(offs);
    return rc;
}

int main(int argc, char **argv)
{
    const char *backend = "cuda";
    shape shapes[16];
    int nshapes = 0, reps = 20, warmup = 3, preps = 10, want[4] = {1, 1, 1, 1};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(USAGE, stdout); return 0; }
        if (!v) { fprintf(stderr, "moe_bench: %s needs a value\n%s", a, USAGE); return 2; }
        ++i;
        if (!strcmp(a, "--backend")) backend = v;
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--warmup")) warmup = atoi(v);
        else if (!strcmp(a, "--profile-reps")) preps = atoi(v);
        else if (!strcmp(a, "--shape")) {
            long long m, n, k, e;
            if (nshapes == 16 || sscanf(v, "%lld,%lld,%lld,%lld", &m, &n, &k, &e) != 4 || m <= 0 || n <= 0 ||
                k <= 0 || e <= 0 || m % 16 || m / 16 < e) {
                fprintf(stderr, "moe_bench: --shape %s: want M,N,K,E positive, M a multiple of 16 and M/16 >= E\n", v);
                return 2;
            }
            shapes[nshapes++] = (shape){m, n, k, e};
        } else if (!strcmp(a, "--recipes")) {
            static const char *names[4] = {"bf16", "fp8_rowwise", "fp8_blockwise", "mxfp8"};
            memset(want, 0, sizeof want);
            char buf[128];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                int found = 0;
                for (int r = 0; r < 4; ++r)
                    if (!strcmp(tok, names[r])) want[r] = found = 1;
                if (!found) { fprintf(stderr, "moe_bench: --recipes: unknown recipe '%s'\n", tok); return 2; }
            }
        } else { fprintf(stderr, "moe_bench: unknown option %s\n%s", a, USAGE); return 2; }
    }
    if (reps < 1 || warmup < 0 || preps < 0) {
        fprintf(stderr, "moe_bench: --reps must be >= 1, --warmup and --profile-reps >= 0\n");
        return 2;
    }
    if (!nshapes) {
        shapes[nshapes++] = (shape){16384, 2048, 7168, 8};
        shapes[nshapes++] = (shape){32768, 8192, 5120, 8};
        shapes[nshapes++] = (shape){65536, 2048, 7168, 16};
        shapes[nshapes++] = (shape){32768, 4096, 7168, 64};
    }
    if (qgmm_context_create(backend, 0, &ctx) != QGMM_OK) {
        fprintf(stderr, "moe_bench: backend %s unavailable: %s\n", backend, qgmm_last_error(NULL));
        return 1;
    }
    printf("moe_bench: %s; reps %d (median), warm-up %d; outputs bf16; fp8 e4m3fn; MX scale mode rceil\n",
           qgmm_context_describe(ctx), reps, warmup);
    int rc = 0;
    for (int i = 0; i < nshapes; ++i)
        if (run_shape(&shapes[i], reps, warmup, preps, want)) rc = 1;
    qgmm_context_destroy(ctx);
    return rc;
}
