/*
 * gate.h — the CI gate: fail on any numerics failure, or on a confirmed performance
 * regression of a series against its own recent history.
 *
 * Determinism: a case whose output hash differs from the previous clean run of the same
 * revision with the same backend code hash (same inputs: the case seeds; same code) is a
 * failure for exact ops (casts, layout, padding must be bit-reproducible) and a warning
 * for numeric ones (a GEMM may legally vary its accumulation order).
 *
 * A regression is confirmed when the run's median is slower than the baseline median by
 * at least max(min_change, noise_mult x noise) AND the Mann-Whitney U test of the run's
 * raw samples against the pooled samples of the baseline runs gives p < p_max. The
 * baseline is the previous `baseline_runs` results of the same series (same benchmark,
 * params, device, backend) whose context had the same driver. noise = the robust
 * relative spread of the baseline runs' medians (1.4826 MAD / median), i.e. how much
 * this series moves from night to night with no code change.
 *
 * Downgrades to warnings, with the reason printed: a slowdown that is not significant;
 * a slowdown of a ceiling (that is the machine, not qgmm); any slowdown in a context
 * whose canary regressed in the same run (the machine was noisy). A history shorter
 * than min_baseline_runs gives no verdict ("history too short").
 */
#ifndef QGMM_CI_GATE_H
#define QGMM_CI_GATE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct gate_config {
    int baseline_runs;       /* N previous runs (default 10) */
    int min_baseline_runs;   /* fewer: no perf verdict (default 3) */
    double min_change;       /* 0.05 */
    double noise_mult;       /* 3.0 */
    double p_max;            /* 0.001 */
    int record;              /* write rows into the regression table (default 1) */
} gate_config;

void gate_config_default(gate_config *c);

enum { GATE_OK = 0, GATE_WARN = 1, GATE_FAIL = 2, GATE_NO_HISTORY = 3, GATE_FASTER = 4 };

typedef struct gate_decision {
    int verdict;             /* GATE_* */
    size_t n_base;           /* baseline runs used */
    double base_median, cur_median;
    double change;           /* cur / base - 1 */
    double noise, threshold, p;
    char reason[256];
} gate_decision;

/* The performance decision for one series, from raw samples: cur (ncur) this run;
 * base[i] (base_n[i]) the i-th baseline run. Pure; used by gate_run and the tests. */
gate_decision gate_perf_decide(const gate_config *cfg, const double *cur, size_t ncur,
                               const double *const *base, const size_t *base_n, size_t n_base);

/* Gates run `run_id`: prints one line per failure/warning and a summary to out.
 * Returns 0 (pass), 1 (fail) or -1 (could not evaluate; err). */
int gate_run(sqlite3 *db, int64_t run_id, const gate_config *cfg, FILE *out, char *err, size_t err_cap);

#endif
