/* changepoint.c — see changepoint.h. */
#include "changepoint.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void cp_config_default(cp_config *c)
{
    c->min_runs = 3;
    c->window_runs = 10;
    c->min_change = 0.05;
    c->noise_mult = 3.0;
    c->p_max = 0.001;
    c->since = 0;
    c->record = 1;
}

/* ------------------------------------------------------------------ detection (pure) */
typedef struct seg_ctx {
    const cp_config *cfg;
    const cp_point *pts;
    const double *lg;   /* log medians */
    double noise;
    double *tmp;        /* scratch, n doubles */
    cp_found *out;
    size_t cap, found;
} seg_ctx;

/* Sum of |x - median| over x[a..b): the L1 cost of one segment. */
static double l1_cost(seg_ctx *c, size_t a, size_t b)
{
    if (b <= a) return 0.0;
    double m = stats_quantile(c->lg + a, b - a, 0.5);
    double s = 0;
    for (size_t i = a; i < b; ++i) s += fabs(c->lg[i] - m);
    return s;
}

static double median_of_medians(const cp_point *pts, size_t a, size_t b, double *tmp)
{
    for (size_t i = a; i < b; ++i) tmp[i - a] = pts[i].median;
    return stats_quantile(tmp, b - a, 0.5);
}

/* Samples of runs [a, b) pooled (a run without samples contributes its median). */
static double *pool(const cp_point *pts, size_t a, size_t b, size_t *n)
{
    size_t total = 0;
    for (size_t i = a; i < b; ++i) total += pts[i].n ? pts[i].n : 1;
    double *x = malloc((total ? total : 1) * sizeof *x);
    if (!x) { *n = 0; return NULL; }
    size_t k = 0;
    for (size_t i = a; i < b; ++i) {
        if (pts[i].n) { memcpy(x + k, pts[i].samples, pts[i].n * sizeof *x); k += pts[i].n; }
        else x[k++] = pts[i].median;
    }
    *n = k;
    return x;
}

/* Sum of squared deviations from the mean over x[a..b): the L2 cost. */
static double l2_cost(seg_ctx *c, size_t a, size_t b)
{
    if (b <= a) return 0.0;
    double m = 0, s = 0;
    for (size_t i = a; i < b; ++i) m += c->lg[i];
    m /= (double)(b - a);
    for (size_t i = a; i < b; ++i) s += (c->lg[i] - m) * (c->lg[i] - m);
    return s;
}

static size_t best_split(seg_ctx *c, size_t a, size_t b, size_t lo, size_t hi, double (*cost)(seg_ctx *, size_t, size_t))
{
    size_t best = lo;
    double best_cost = INFINITY;
    for (size_t k = lo; k <= hi; ++k) {
        double v = cost(c, a, k) + cost(c, k, b);
        if (v < best_cost) { best_cost = v; best = k; }
    }
    return best;
}

/* The statistics of splitting [a, b) at k; returns 1 when it is a change point. */
static int judge(seg_ctx *c, size_t a, size_t b, size_t k, cp_found *f)
{
    memset(f, 0, sizeof *f);
    f->split = k;
    f->n_before = k - a;
    f->n_after = b - k;
    f->before = median_of_medians(c->pts, a, k, c->tmp);
    f->after = median_of_medians(c->pts, k, b, c->tmp);
    f->change = f->before > 0 ? f->after / f->before - 1.0 : 0.0;
    f->noise = c->noise;
    f->threshold = fmax(c->cfg->min_change, c->cfg->noise_mult * c->noise);
    size_t w = (size_t)c->cfg->window_runs;
    size_t lo = k - a > w ? k - w : a, hi = b - k > w ? k + w : b;
    size_t n1, n2;
    double *x1 = pool(c->pts, lo, k, &n1), *x2 = pool(c->pts, k, hi, &n2);
    f->p = (x1 && x2) ? stats_mann_whitney(x2, n2, x1, n1).p : 1.0;
    free(x1);
    free(x2);
    /* the relative change either way: a shift down splits the history as much as a shift
     * up; the caller decides what to record */
    double rel = f->change >= 0 ? f->change : (f->after > 0 ? f->before / f->after - 1.0 : 0.0);
    return rel >= f->threshold && f->p < c->cfg->p_max;
}

static void segment(seg_ctx *c, size_t a, size_t b)
{
    const size_t m = (size_t)c->cfg->min_runs;
    if (b - a < 2 * m) return;
    /* Where is the shift, if any? Searched over every split, so a step with fewer than m
     * runs on one side is located there and left pending (judged when more runs exist)
     * rather than pinned to a neighbouring run with the wrong revision. */
    size_t k = best_split(c, a, b, a + 1, b - 1, l1_cost);
    if (k - a < m) { segment(c, k, b); return; }
    if (b - k < m) { segment(c, a, k); return; }
    cp_found f;
    if (!judge(c, a, b, k, &f)) {
        /* A bump (up, then back down) leaves the L1 cost flat between its two edges; the
         * L2 cost still points at an edge. */
        k = best_split(c, a, b, a + m, b - m, l2_cost);
        if (!judge(c, a, b, k, &f)) return;
    }
    segment(c, a, k);
    if (c->found < c->cap) c->out[c->found] = f;
    ++c->found;
    segment(c, k, b);
}

size_t cp_detect(const cp_config *cfg, const cp_point *pts, size_t n, cp_found *out, size_t cap)
{
    if (cfg->min_runs < 1 || n < 2 * (size_t)cfg->min_runs) return 0;
    double *lg = malloc(n * sizeof *lg), *tmp = malloc(n * sizeof *tmp);
    if (!lg || !tmp) { free(lg); free(tmp); return 0; }
    for (size_t i = 0; i < n; ++i) lg[i] = log(pts[i].median > 0 ? pts[i].median : 1e-300);
    /* night-to-night noise from successive differences (robust to the steps themselves) */
    for (size_t i = 1; i < n; ++i) tmp[i - 1] = fabs(lg[i] - lg[i - 1]);
    double noise = expm1(1.4826 * stats_quantile(tmp, n - 1, 0.5) / sqrt(2.0));
    seg_ctx c = {cfg, pts, lg, noise, tmp, out, cap, 0};
    segment(&c, 0, n);
    /* The statistics of each change point between its neighbours (the segmentation judged
     * it against segments that could still hold the other shifts). */
    size_t nf = c.found < cap ? c.found : cap;
    for (size_t i = 0; i < nf; ++i) {
        size_t a = i ? out[i - 1].split : 0, b = i + 1 < nf ? out[i + 1].split : n;
        cp_found f;
        judge(&c, a, b, out[i].split, &f);
        out[i] = f;
    }
    free(lg);
    free(tmp);
    return c.found;
}

/* ------------------------------------------------------------------ over the store */
typedef struct pt_row {
    int64_t result_id, run_id, revision_id;
    double median;
    char driver[160];
} pt_row;

typedef struct series_row {
    int64_t id;
    char benchmark[128], shape[96], label[128], backend[32], device[160];
} series_row;

static void col(sqlite3_stmt *st, int i, char *dst, size_t cap)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    snprintf(dst, cap, "%s", s ? (const char *)s : "");
}

static int load_samples(sqlite3 *db, int64_t result_id, double **out, size_t *n)
{
    sqlite3_stmt *st;
    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db, "SELECT time_us FROM sample WHERE result_id = ?1 ORDER BY idx", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, result_id);
    size_t cap = 0;
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            double *nb = realloc(*out, cap * sizeof *nb);
            if (!nb) { rc = -1; break; }
            *out = nb;
        }
        (*out)[(*n)++] = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    return rc;
}

static void short_sha(sqlite3 *db, int64_t rev, char out[16])
{
    sqlite3_stmt *st;
    snprintf(out, 16, "?");
    if (sqlite3_prepare_v2(db, "SELECT substr(sha, 1, 12) FROM revision WHERE id = ?1", -1, &st, NULL) != SQLITE_OK) return;
    sqlite3_bind_int64(st, 1, rev);
    if (sqlite3_step(st) == SQLITE_ROW) col(st, 0, out, 16);
    sqlite3_finalize(st);
}

static int record(sqlite3 *db, const series_row *s, const pt_row *pts, const cp_found *f, const char *reason)
{
    sqlite3_stmt *st;
    const char *sql =
        "INSERT INTO regression(series_id, run_id, result_id, kind, severity, baseline_runs, baseline_median_us, "
        "current_median_us, change, threshold, noise, p_value, last_good_revision_id, first_bad_revision_id, reason, "
        "detected_at, updated_at, after_runs, driver) "
        "VALUES(?1,?2,?3,'changepoint','fail',?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?14,?15,?16) "
        "ON CONFLICT(series_id, run_id, kind) DO UPDATE SET baseline_runs = excluded.baseline_runs, "
        "baseline_median_us = excluded.baseline_median_us, current_median_us = excluded.current_median_us, "
        "change = excluded.change, threshold = excluded.threshold, noise = excluded.noise, "
        "p_value = excluded.p_value, last_good_revision_id = excluded.last_good_revision_id, "
        "first_bad_revision_id = excluded.first_bad_revision_id, reason = excluded.reason, "
        "after_runs = excluded.after_runs, driver = excluded.driver, updated_at = excluded.updated_at";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    const pt_row *bad = &pts[f->split], *good = &pts[f->split - 1];
    sqlite3_bind_int64(st, 1, s->id);
    sqlite3_bind_int64(st, 2, bad->run_id);
    sqlite3_bind_int64(st, 3, bad->result_id);
    sqlite3_bind_int64(st, 4, (int64_t)f->n_before);
    double v[6] = {f->before, f->after, f->change, f->threshold, f->noise, f->p};
    for (int i = 0; i < 6; ++i) {
        if (isfinite(v[i])) sqlite3_bind_double(st, 5 + i, v[i]);
        else sqlite3_bind_null(st, 5 + i);
    }
    sqlite3_bind_int64(st, 11, good->revision_id);
    sqlite3_bind_int64(st, 12, bad->revision_id);
    sqlite3_bind_text(st, 13, reason, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 14, (int64_t)time(NULL));
    sqlite3_bind_int64(st, 15, (int64_t)f->n_after);
    sqlite3_bind_text(st, 16, bad->driver, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return rc;
}

/* Untriaged changepoint rows of this series and driver at analysed runs that this pass
 * did not find again (the history grew and the shift moved, or was noise after all). */
static int drop_stale(sqlite3 *db, int64_t series_id, const pt_row *pts, size_t n, const cp_found *fs, size_t nf)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "DELETE FROM regression WHERE kind = 'changepoint' AND status = 'detected' AND series_id = ?1 "
                           "AND run_id = ?2 AND coalesce(driver, '') = ?3",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    for (size_t i = 0; i < n; ++i) {
        int keep = 0;
        for (size_t k = 0; k < nf && !keep; ++k) keep = fs[k].split == i && fs[k].change > 0;
        if (keep) continue;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, series_id);
        sqlite3_bind_int64(st, 2, pts[i].run_id);
        sqlite3_bind_text(st, 3, pts[i].driver, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) != SQLITE_DONE) { sqlite3_finalize(st); return -1; }
    }
    sqlite3_finalize(st);
    return 0;
}

/* One series' history on one driver: pts[0..n), oldest first. */
static int analyse(sqlite3 *db, const cp_config *cfg, const series_row *s, const pt_row *pts, size_t n, FILE *out,
                   size_t *n_slower)
{
    cp_point *cps = calloc(n ? n : 1, sizeof *cps);
    double **bufs = calloc(n ? n : 1, sizeof *bufs);
    cp_found *fs = calloc(n ? n : 1, sizeof *fs);
    int rc = (cps && bufs && fs) ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; ++i) {
        size_t k;
        rc = load_samples(db, pts[i].result_id, &bufs[i], &k);
        cps[i].median = pts[i].median;
        cps[i].samples = bufs[i];
        cps[i].n = k;
    }
    size_t nf = 0;
    if (rc == 0) {
        nf = cp_detect(cfg, cps, n, fs, n);
        if (nf > n) nf = n;
    }
    for (size_t k = 0; rc == 0 && k < nf; ++k) {
        const cp_found *f = &fs[k];
        char good[16], bad[16], reason[512];
        short_sha(db, pts[f->split - 1].revision_id, good);
        short_sha(db, pts[f->split].revision_id, bad);
        int slower = f->change > 0;
        snprintf(reason, sizeof reason,
                 "median %+.1f%% (%.4g us -> %.4g us) introduced in %s, last good %s (%zu runs before, %zu after); "
                 "threshold %.1f%% = max(%.0f%%, %.0fx noise %.2f%%); Mann-Whitney p = %.2g",
                 100 * f->change, f->before, f->after, bad, good, f->n_before, f->n_after, 100 * f->threshold,
                 100 * cfg->min_change, cfg->noise_mult, 100 * f->noise, f->p);
        fprintf(out, "%-7s %-8s %-28s %-34s %s\n", slower ? "SLOWER" : "faster", s->backend, s->benchmark,
                s->shape[0] ? s->shape : s->label, reason);
        if (slower) {
            ++*n_slower;
            if (cfg->record) rc = record(db, s, pts, f, reason);
        }
    }
    if (rc == 0 && cfg->record) rc = drop_stale(db, s->id, pts, n, fs, nf);
    for (size_t i = 0; bufs && i < n; ++i) free(bufs[i]);
    free(bufs);
    free(cps);
    free(fs);
    return rc;
}

static int list_series(sqlite3 *db, int64_t only, series_row **out, size_t *n)
{
    sqlite3_stmt *st;
    const char *sql =
        "SELECT s.id, s.benchmark, s.shape, s.label, s.backend, d.name FROM series s JOIN device d ON d.id = s.device_id "
        "WHERE (?1 = 0 OR s.id = ?1) ORDER BY s.id";
    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_int64(st, 1, only);
    size_t cap = 0;
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            series_row *nb = realloc(*out, cap * sizeof *nb);
            if (!nb) { rc = -1; break; }
            *out = nb;
        }
        series_row *s = &(*out)[(*n)++];
        s->id = sqlite3_column_int64(st, 0);
        col(st, 1, s->benchmark, sizeof s->benchmark);
        col(st, 2, s->shape, sizeof s->shape);
        col(st, 3, s->label, sizeof s->label);
        col(st, 4, s->backend, sizeof s->backend);
        col(st, 5, s->device, sizeof s->device);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The timed results of one series, grouped by driver, each group oldest first. */
static int load_history(sqlite3 *db, int64_t series_id, pt_row **out, size_t *n)
{
    sqlite3_stmt *st;
    const char *sql =
        "SELECT r.id, run.id, run.revision_id, r.median_us, c.driver FROM result r JOIN run ON run.id = r.run_id "
        "JOIN context c ON c.id = r.context_id WHERE r.series_id = ?1 AND r.status = 'ok' AND r.median_us > 0 "
        "ORDER BY c.driver, run.started_at, run.id";
    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_int64(st, 1, series_id);
    size_t cap = 0;
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            pt_row *nb = realloc(*out, cap * sizeof *nb);
            if (!nb) { rc = -1; break; }
            *out = nb;
        }
        pt_row *p = &(*out)[(*n)++];
        p->result_id = sqlite3_column_int64(st, 0);
        p->run_id = sqlite3_column_int64(st, 1);
        p->revision_id = sqlite3_column_int64(st, 2);
        p->median = sqlite3_column_double(st, 3);
        col(st, 4, p->driver, sizeof p->driver);
    }
    sqlite3_finalize(st);
    return rc;
}

int cp_run(sqlite3 *db, const cp_config *cfg, int64_t series_id, FILE *out, size_t *n_slower, char *err,
           size_t err_cap)
{
    *n_slower = 0;
    series_row *ss;
    size_t ns;
    if (list_series(db, series_id, &ss, &ns)) {
        snprintf(err, err_cap, "listing series: %s", sqlite3_errmsg(db));
        return -1;
    }
    if (series_id && ns == 0) {
        snprintf(err, err_cap, "no series with id %lld", (long long)series_id);
        return -1;
    }
    if (cfg->record && sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, err_cap, "cannot write the regression table: %s", sqlite3_errmsg(db));
        free(ss);
        return -1;
    }
    fprintf(out, "changepoints: %zu series; a change point = medians shifted by >= max(%.0f%%, %.0fx noise) with "
                 "Mann-Whitney p < %g, >= %d runs each side (same series, device, backend, driver)%s\n",
            ns, 100 * cfg->min_change, cfg->noise_mult, cfg->p_max, cfg->min_runs,
            cfg->since > 0 ? "; newest runs only" : "");
    size_t histories = 0, found_total = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < ns; ++i) {
        pt_row *pts;
        size_t np;
        if (load_history(db, ss[i].id, &pts, &np)) { rc = -1; break; }
        for (size_t a = 0; rc == 0 && a < np;) {
            size_t b = a;
            while (b < np && strcmp(pts[b].driver, pts[a].driver) == 0) ++b;
            size_t from = a;
            if (cfg->since > 0 && b - a > (size_t)cfg->since) from = b - (size_t)cfg->since;
            ++histories;
            size_t before = *n_slower;
            rc = analyse(db, cfg, &ss[i], pts + from, b - from, out, n_slower);
            found_total += *n_slower - before;
            a = b;
        }
        free(pts);
    }
    if (rc) {
        snprintf(err, err_cap, "analysing the history: %s", sqlite3_errmsg(db));
        if (cfg->record) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        free(ss);
        return -1;
    }
    if (cfg->record && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, err_cap, "recording change points: %s", sqlite3_errmsg(db));
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        free(ss);
        return -1;
    }
    fprintf(out, "changepoints: %zu histories analysed, %zu slowdowns named%s\n", histories, found_total,
            cfg->record ? " (recorded as kind 'changepoint')" : "");
    free(ss);
    return 0;
}
