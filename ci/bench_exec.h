/*
 * bench_exec.h — timing with device events, and the suite files (suites/NAME.suite).
 *
 * Timing: warm-up executions (synchronized, host-timed) until both warmup_min runs and
 * warmup_ms have passed; the last one estimates one execution, which sets the cap
 * N = clamp(budget_ms / estimate, min_samples, max_samples). Then samples, each the
 * device time between two qgmm_event recordings around one enqueue; events are
 * recorded in batches and read after the batch, so the host never waits between
 * samples of a batch (GPU launches stay back to back). Sampling stops before the cap once
 * at least min_samples are in and the median's 95 % interval is within ci_pct % of it
 * (checked after min_samples, then every quarter more): a quiet case costs its floor, a
 * noisy one its budget.
 */
#ifndef QGMM_CI_BENCH_EXEC_H
#define QGMM_CI_BENCH_EXEC_H

#include <stddef.h>

#include "qgmm.h"

typedef struct bench_cfg {
    double budget_ms;       /* per case */
    int min_samples, max_samples;
    double ci_pct;          /* stop once the median's 95 % interval half-width is <= this % of
                               the median (0: always the cap) */
    int warmup_min;
    double warmup_ms;
    long long gemm_check_elems;   /* NUMERIC checks: output elements compared (0 = all) */
    long long copy_bytes;         /* ceiling.copy buffer */
    long long gemm_ceiling;       /* square size of the dense GEMM ceilings */
    char ceiling_recipes[128];    /* space-separated: bf16 fp8_rowwise fp8_blockwise mxfp8 */
    long long canary_m, canary_k; /* the canary's shape (fixed per backend, part of its series) */
    long long exact_check_max_bytes; /* > 0: EXACT cases bigger than this are timed but not
                                        checked ("unchecked", with why): the CPU reference of a
                                        128-expert weight cast takes minutes */
    long long max_case_bytes;     /* > 0: cases moving more are not run on this device (listed) */
    double max_case_flops;        /* > 0: same for FLOPs (a 2.7 TFLOP GEMM on the CPU oracle) */
    long long flush_bytes;        /* > 0: fill a buffer this big before every sample (outside the
                                     events) so memory-bound ops are not served from L2 */
} bench_cfg;

typedef qgmm_status (*bench_enqueue_fn)(void *user);

typedef struct bench_samples {
    double *us;
    size_t n;
    int warmup;
    double ci_rel;          /* the median's 95 % interval half-width / median at the end */
    qgmm_status status;     /* first failure (then samples may be partial: discard) */
    char message[512];
} bench_samples;

/* flush: a buffer of cfg->flush_bytes on ctx, or NULL for no cache flushing. */
int bench_time(qgmm_context *ctx, bench_enqueue_fn fn, void *user, const bench_cfg *cfg, qgmm_buffer *flush,
               bench_samples *out);
void bench_samples_free(bench_samples *s);

/* ---- suites */
#include "qgmm_cases.h"

typedef struct suite_case {
    qgmm_case c;
} suite_case;

typedef struct suite {
    char name[128];
    char path[1024];        /* "" when it is the case library's built-in suite */
    suite_case *cases;
    size_t n, cap;
    /* settings, with per-backend overrides ("@budget_ms.cpu 50") */
    char settings[64][2][128];
    int n_settings;
} suite;

/* Loads `spec`: a path (contains '/' or ends in .suite), or a name looked up as
 * <dir>/<name>.suite in $QGMM_SUITES_DIR, ./suites, <source>/suites; else a suite of the
 * case library. Returns 0 or -1 with err (line number and reason). */
int suite_load(const char *spec, suite *s, char *err, size_t err_cap);
void suite_free(suite *s);
/* The bench settings for a context: defaults, then the suite's plain `@key` lines, then
 * `@key.cpu` lines when the device is a CPU (the cpu backend, or a software Vulkan such as
 * lavapipe: same budgets, same small ceilings), then `@key.BACKEND` lines. */
void suite_config(const suite *s, const char *backend, int cpu_device, bench_cfg *cfg);

#endif
