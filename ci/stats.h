/*
 * stats.h — the statistics the runner and the gate use: order statistics of timing
 * samples, robust noise, and the Mann-Whitney U test. Pure functions, no I/O, so the
 * tests can pin them to known values.
 */
#ifndef QGMM_CI_STATS_H
#define QGMM_CI_STATS_H

#include <stddef.h>

typedef struct sample_stats {
    size_t n;
    double min, q1, median, q3, max, mean, stddev;  /* stddev with n-1 (0 when n < 2) */
} sample_stats;

/* Quantile p in [0,1] of x (n > 0) by linear interpolation between order statistics
 * (Hyndman-Fan type 7, numpy's default). x need not be sorted; it is not modified. */
double stats_quantile(const double *x, size_t n, double p);
/* All of sample_stats; n == 0 gives zeros with n = 0. */
sample_stats stats_describe(const double *x, size_t n);
/* Median absolute deviation from the median, scaled by 1.4826 (a robust stddev). */
double stats_mad(const double *x, size_t n);
/* Half-width of the distribution-free 95 % confidence interval of the median (order
 * statistics at ranks n/2 -+ 0.98 sqrt(n)), relative to the median; INFINITY when n < 2. */
double stats_median_ci_rel(const double *x, size_t n);

typedef struct mw_result {
    double u1;        /* U of the first sample: #pairs (a, b) with a > b, ties 1/2 */
    double u2;        /* n1*n2 - u1 */
    double z;         /* normal approximation, continuity-corrected (0 when exact) */
    double p;         /* two-sided p value */
    int exact;        /* 1: exact distribution (no ties, n1*n2 small), 0: normal approx */
} mw_result;

/* Two-sided Mann-Whitney U test of a vs b. Exact p (by counting) when there are no ties
 * and n1, n2 <= 25; otherwise the normal approximation with tie-corrected variance and
 * continuity correction (as scipy.stats.mannwhitneyu(method='asymptotic')). p = 1 when
 * either sample is empty. */
mw_result stats_mann_whitney(const double *a, size_t n1, const double *b, size_t n2);

#endif
