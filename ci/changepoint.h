/*
 * changepoint.h — the nightly change-point pass: per series and driver, the runs at which
 * the median shifted, and the revisions on either side (first bad, last good).
 *
 * The gate judges one run against the runs just before it, so a slowdown that lands on a
 * night with a short history, or creeps in while the gate only warns, is never tied to a
 * revision. This pass looks at the whole history of a series at once.
 *
 * Method: binary segmentation over the runs' medians (log scale, so shifts are relative).
 * In a segment of at least 2 x min_runs runs, the split minimising the summed absolute
 * deviation of each side from its own median is the candidate (L1 cost: one odd night
 * does not move it, and a clean step is located exactly). It is a change point when the
 * medians of the two sides differ by at least max(min_change, noise_mult x noise) AND a
 * two-sided Mann-Whitney U test of the raw samples of up to window_runs runs on each side
 * of the split gives p < p_max — the gate's rule. noise = the series' night-to-night
 * relative noise over the whole analysed history, 1.4826 x median |successive difference
 * of log medians| / sqrt(2) (a step contributes one large difference, so steps do not
 * inflate it). A change point splits the segment and both halves are searched again.
 */
#ifndef QGMM_CI_CHANGEPOINT_H
#define QGMM_CI_CHANGEPOINT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cp_config {
    int min_runs;       /* runs needed on each side of a change point (default 3) */
    int window_runs;    /* runs per side whose samples enter the U test (default 10) */
    double min_change;  /* 0.05 */
    double noise_mult;  /* 3.0 */
    double p_max;       /* 0.001 */
    int since;          /* analyse only the newest N runs of each series (0 = all) */
    int record;         /* write kind 'changepoint' rows into the regression table (default 1) */
} cp_config;

void cp_config_default(cp_config *c);

/* One run of a series, oldest first. samples may be NULL (n = 0): the median then stands
 * for the run in the U test. */
typedef struct cp_point {
    double median;
    const double *samples;
    size_t n;
} cp_point;

typedef struct cp_found {
    size_t split;            /* index of the first run after the shift */
    size_t n_before, n_after;/* runs in the segment on each side */
    double before, after;    /* median of the run medians on each side */
    double change;           /* after / before - 1 (+0.2 = 20 % slower) */
    double noise, threshold, p;
} cp_found;

/* Pure: the change points of pts[0..n) in increasing split order (at most cap written;
 * returns the number found, which may exceed cap). */
size_t cp_detect(const cp_config *cfg, const cp_point *pts, size_t n, cp_found *out, size_t cap);

/* The pass over the store: every series (series_id = 0) or one, each driver's history
 * separately. Prints one line per change point; with cfg->record writes slowdowns as
 * regression rows of kind 'changepoint' (run = first run after the shift) and drops
 * untriaged ('detected') changepoint rows of the analysed runs that are no longer found,
 * all in one transaction. *n_slower gets the slowdowns found. Returns 0 or -1 (err). */
int cp_run(sqlite3 *db, const cp_config *cfg, int64_t series_id, FILE *out, size_t *n_slower, char *err,
           size_t err_cap);

#endif
