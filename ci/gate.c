/* gate.c — see gate.h. */
#include "gate.h"
#include "store_live.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void gate_config_default(gate_config *c)
{
    c->baseline_runs = 10;
    c->min_baseline_runs = 3;
    c->min_change = 0.05;
    c->noise_mult = 3.0;
    c->p_max = 0.001;
    c->record = 1;
}

gate_decision gate_perf_decide(const gate_config *cfg, const double *cur, size_t ncur,
                               const double *const *base, const size_t *base_n, size_t n_base)
{
    gate_decision d;
    memset(&d, 0, sizeof d);
    d.p = 1.0;
    d.cur_median = ncur ? stats_quantile(cur, ncur, 0.5) : NAN;
    d.base_median = d.noise = d.threshold = d.change = NAN;
    size_t used = 0, pooled_n = 0;
    for (size_t i = 0; i < n_base; ++i) if (base_n[i]) { ++used; pooled_n += base_n[i]; }
    d.n_base = used;
    if (ncur == 0) {
        d.verdict = GATE_NO_HISTORY;
        snprintf(d.reason, sizeof d.reason, "no samples in this run");
        return d;
    }
    if ((int)used < cfg->min_baseline_runs) {
        d.verdict = GATE_NO_HISTORY;
        snprintf(d.reason, sizeof d.reason, "history too short (%zu of %d baseline runs needed)", used,
                 cfg->min_baseline_runs);
        return d;
    }
    double *meds = malloc(used * sizeof *meds);
    double *pool = malloc(pooled_n * sizeof *pool);
    if (!meds || !pool) {
        free(meds); free(pool);
        d.verdict = GATE_NO_HISTORY;
        snprintf(d.reason, sizeof d.reason, "out of memory");
        return d;
    }
    size_t k = 0, q = 0;
    for (size_t i = 0; i < n_base; ++i) {
        if (!base_n[i]) continue;
        meds[k++] = stats_quantile(base[i], base_n[i], 0.5);
        memcpy(pool + q, base[i], base_n[i] * sizeof *pool);
        q += base_n[i];
    }
    d.base_median = stats_quantile(meds, used, 0.5);
    d.noise = d.base_median > 0 ? stats_mad(meds, used) / d.base_median : 0.0;
    d.threshold = fmax(cfg->min_change, cfg->noise_mult * d.noise);
    d.change = d.base_median > 0 ? d.cur_median / d.base_median - 1.0 : 0.0;
    mw_result mw = stats_mann_whitney(cur, ncur, pool, pooled_n);
    d.p = mw.p;
    free(meds);
    free(pool);
    if (d.change >= d.threshold && d.p < cfg->p_max) {
        d.verdict = GATE_FAIL;
        snprintf(d.reason, sizeof d.reason,
                 "%.1f%% slower (median %.4g us vs %.4g us over %zu runs); threshold %.1f%% = max(%.0f%%, %.0fx noise %.2f%%); Mann-Whitney p = %.2g < %g",
                 100 * d.change, d.cur_median, d.base_median, used, 100 * d.threshold, 100 * cfg->min_change,
                 cfg->noise_mult, 100 * d.noise, d.p, cfg->p_max);
    } else if (d.change >= d.threshold) {
        d.verdict = GATE_WARN;
        snprintf(d.reason, sizeof d.reason,
                 "%.1f%% slower (>= threshold %.1f%%) but not significant: Mann-Whitney p = %.2g >= %g",
                 100 * d.change, 100 * d.threshold, d.p, cfg->p_max);
    } else if (d.change <= -d.threshold && d.p < cfg->p_max) {
        d.verdict = GATE_FASTER;
        snprintf(d.reason, sizeof d.reason, "%.1f%% faster (p = %.2g)", -100 * d.change, d.p);
    } else {
        d.verdict = GATE_OK;
        snprintf(d.reason, sizeof d.reason, "%+.1f%% (threshold %.1f%%, p = %.2g)", 100 * d.change,
                 100 * d.threshold, d.p);
    }
    return d;
}

/* ------------------------------------------------------------------ over the store */
typedef struct gres {
    int64_t result_id, series_id, context_id, revision_id;
    char benchmark[128], params[512], shape[96], label[128], role[16], backend[32], device[160], driver[160];
    char status[16], verdict[16], message[512];
    int64_t started_at, run_id;
    char output_hash[48], code_hash[48];
    int exact, dirty;
    gate_decision d;
    int kind_fail_numerics;
} gres;

static char *dupcol(sqlite3_stmt *st, int i, char *dst, size_t cap)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    snprintf(dst, cap, "%s", s ? (const char *)s : "");
    return dst;
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
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            double *nb = realloc(*out, cap * sizeof *nb);
            if (!nb) { sqlite3_finalize(st); return -1; }
            *out = nb;
        }
        (*out)[(*n)++] = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    return 0;
}

static int decide_series(sqlite3 *db, const gate_config *cfg, gres *g, int64_t *last_good_rev)
{
    sqlite3_stmt *st;
    const char *sql =
        "SELECT r.id, run.revision_id FROM result r JOIN run ON run.id = r.run_id JOIN context c ON c.id = r.context_id "
        "WHERE r.series_id = ?1 AND r.status = 'ok' AND r.n_samples > 0 AND c.driver = ?2 AND r.run_id <> ?5 "
        "AND (run.started_at < ?3 OR (run.started_at = ?3 AND run.id < ?5)) "
        "ORDER BY run.started_at DESC, run.id DESC LIMIT ?4";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_int64(st, 1, g->series_id);
    sqlite3_bind_text(st, 2, g->driver, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, g->started_at);
    sqlite3_bind_int(st, 4, cfg->baseline_runs);
    sqlite3_bind_int64(st, 5, g->run_id);
    int64_t ids[1024];
    size_t nb = 0;
    *last_good_rev = -1;
    while (sqlite3_step(st) == SQLITE_ROW && nb < 1024) {
        if (nb == 0) *last_good_rev = sqlite3_column_int64(st, 1);
        ids[nb++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    double **base = calloc(nb + 1, sizeof *base);
    size_t *bn = calloc(nb + 1, sizeof *bn);
    double *cur = NULL;
    size_t ncur = 0;
    int rc = (!base || !bn) ? -1 : 0;
    for (size_t i = 0; rc == 0 && i < nb; ++i) rc = load_samples(db, ids[i], &base[i], &bn[i]);
    if (rc == 0) rc = load_samples(db, g->result_id, &cur, &ncur);
    if (rc == 0) g->d = gate_perf_decide(cfg, cur, ncur, (const double *const *)base, bn, nb);
    for (size_t i = 0; base && i < nb; ++i) free(base[i]);
    free(base);
    free(bn);
    free(cur);
    return rc;
}

static void record(sqlite3 *db, const gres *g, const char *kind, const char *severity, int64_t last_good_rev)
{
    sqlite3_stmt *st;
    const char *sql =
        "INSERT INTO regression(series_id, run_id, result_id, kind, severity, baseline_runs, baseline_median_us, "
        "current_median_us, change, threshold, noise, p_value, last_good_revision_id, first_bad_revision_id, reason, "
        "detected_at, updated_at) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?16) "
        "ON CONFLICT(series_id, run_id, kind) DO UPDATE SET severity = excluded.severity, "
        "baseline_runs = excluded.baseline_runs, baseline_median_us = excluded.baseline_median_us, "
        "current_median_us = excluded.current_median_us, change = excluded.change, threshold = excluded.threshold, "
        "noise = excluded.noise, p_value = excluded.p_value, reason = excluded.reason, updated_at = excluded.updated_at";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return;
    int perf = strcmp(kind, "perf") == 0;
    sqlite3_bind_int64(st, 1, g->series_id);
    sqlite3_bind_int64(st, 2, g->run_id);
    sqlite3_bind_int64(st, 3, g->result_id);
    sqlite3_bind_text(st, 4, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, severity, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, perf ? (int64_t)g->d.n_base : 0);
    double vals[6] = {g->d.base_median, g->d.cur_median, g->d.change, g->d.threshold, g->d.noise, g->d.p};
    for (int i = 0; i < 6; ++i) {
        if (perf && isfinite(vals[i])) sqlite3_bind_double(st, 7 + i, vals[i]);
        else sqlite3_bind_null(st, 7 + i);
    }
    if (last_good_rev >= 0) sqlite3_bind_int64(st, 13, last_good_rev); else sqlite3_bind_null(st, 13);
    sqlite3_bind_int64(st, 14, g->revision_id);
    sqlite3_bind_text(st, 15, perf ? g->d.reason : g->message, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 16, (int64_t)time(NULL));
    sqlite3_step(st);
    sqlite3_finalize(st);
}

/* The previous output hash of the same series from a clean run of the same revision with
 * the same backend code: the same inputs (the case seeds), the same code -> the same
 * bytes. Returns 1 and the hash when there is one to compare with. */
static int previous_output(sqlite3 *db, const gres *g, char *hash, size_t cap, int64_t *prev_run)
{
    if (g->dirty || !g->output_hash[0] || !g->code_hash[0]) return 0;
    sqlite3_stmt *st;
    const char *sql =
        "SELECT r.output_hash, run.id FROM result r JOIN run ON run.id = r.run_id WHERE r.series_id = ?1 AND "
        "r.run_id <> ?2 AND run.revision_id = ?3 AND run.dirty = 0 AND r.code_hash = ?4 AND r.output_hash <> '' "
        "AND r.status = 'ok' AND (run.started_at < ?5 OR (run.started_at = ?5 AND run.id < ?2)) "
        "ORDER BY run.started_at DESC, run.id DESC LIMIT 1";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return 0;
    sqlite3_bind_int64(st, 1, g->series_id);
    sqlite3_bind_int64(st, 2, g->run_id);
    sqlite3_bind_int64(st, 3, g->revision_id);
    sqlite3_bind_text(st, 4, g->code_hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, g->started_at);
    int found = sqlite3_step(st) == SQLITE_ROW;
    if (found) {
        snprintf(hash, cap, "%s", (const char *)sqlite3_column_text(st, 0));
        *prev_run = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return found;
}

static void line(FILE *out, const char *tag, const gres *g, const char *why)
{
    fprintf(out, "%-8s %-8s %-28s %-34s %s\n", tag, g->backend, g->benchmark,
            g->shape[0] ? g->shape : g->params, why);
    if (g->label[0]) fprintf(out, "%-8s %-8s   case: %s %s\n", "", "", g->label, g->params);
}

int gate_run(sqlite3 *db, int64_t run_id, const gate_config *cfg, FILE *out, char *err, size_t err_cap)
{
    /* an incomplete run is never passed: the cases it did not reach were not judged */
    char state[16];
    int64_t stored = 0, expected = -1;
    if (store_run_progress(db, run_id, state, &stored, &expected, err, err_cap)) return -1;
    if (strcmp(state, "complete") != 0) {
        char of[48] = "";
        if (expected >= 0) snprintf(of, sizeof of, " of %lld", (long long)expected);
        fprintf(out, "gate: FAIL — run %lld is %s (%lld%s results stored): an incomplete run is never passed; %s\n",
                (long long)run_id, state, (long long)stored, of,
                strcmp(state, "running") == 0 ? "gate it when its runner has finished"
                                               : "finish it with `qgmm-bench run --db STORE --resume RUN`, then gate it");
        return 1;
    }
    sqlite3_stmt *st;
    const char *sql =
        "SELECT r.id, r.series_id, r.context_id, s.benchmark, s.params, s.shape, s.label, s.role, s.backend, d.name, "
        "c.driver, r.status, r.verdict, r.message, run.started_at, run.revision_id, run.uuid, r.output_hash, r.code_hash, "
        "r.mismatched_bytes IS NOT NULL, run.dirty "
        "FROM result r JOIN series s ON s.id = r.series_id JOIN context c ON c.id = r.context_id "
        "JOIN device d ON d.id = s.device_id JOIN run ON run.id = r.run_id WHERE r.run_id = ?1 ORDER BY r.id";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, err_cap, "%s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_int64(st, 1, run_id);
    size_t n = 0, cap = 0;
    gres *rs = NULL;
    char uuid[64] = "";
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            gres *nr = realloc(rs, cap * sizeof *nr);
            if (!nr) { free(rs); sqlite3_finalize(st); snprintf(err, err_cap, "out of memory"); return -1; }
            rs = nr;
        }
        gres *g = &rs[n++];
        memset(g, 0, sizeof *g);
        g->result_id = sqlite3_column_int64(st, 0);
        g->series_id = sqlite3_column_int64(st, 1);
        g->context_id = sqlite3_column_int64(st, 2);
        dupcol(st, 3, g->benchmark, sizeof g->benchmark);
        dupcol(st, 4, g->params, sizeof g->params);
        dupcol(st, 5, g->shape, sizeof g->shape);
        dupcol(st, 6, g->label, sizeof g->label);
        dupcol(st, 7, g->role, sizeof g->role);
        dupcol(st, 8, g->backend, sizeof g->backend);
        dupcol(st, 9, g->device, sizeof g->device);
        dupcol(st, 10, g->driver, sizeof g->driver);
        dupcol(st, 11, g->status, sizeof g->status);
        dupcol(st, 12, g->verdict, sizeof g->verdict);
        dupcol(st, 13, g->message, sizeof g->message);
        g->started_at = sqlite3_column_int64(st, 14);
        g->revision_id = sqlite3_column_int64(st, 15);
        dupcol(st, 16, uuid, sizeof uuid);
        dupcol(st, 17, g->output_hash, sizeof g->output_hash);
        dupcol(st, 18, g->code_hash, sizeof g->code_hash);
        g->exact = sqlite3_column_int(st, 19);
        g->dirty = sqlite3_column_int(st, 20);
        g->run_id = run_id;
    }
    sqlite3_finalize(st);
    if (n == 0) {
        free(rs);
        snprintf(err, err_cap, "run %lld has no results to gate", (long long)run_id);
        return -1;
    }

    char e[128];
    if (cfg->record && sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(e, sizeof e, "%s", sqlite3_errmsg(db));
        free(rs);
        snprintf(err, err_cap, "cannot write the regression table: %s", e);
        return -1;
    }
    int64_t *last_good = calloc(n, sizeof *last_good);
    size_t fails = 0, warns = 0, numerics_fail = 0, errors = 0, nondet = 0, unsupported = 0, no_hist = 0, faster = 0, checked = 0;
    /* pass 1: per-series perf decisions */
    for (size_t i = 0; i < n; ++i) {
        gres *g = &rs[i];
        last_good[i] = -1;
        if (strcmp(g->status, "ok") != 0) continue;
        if (decide_series(db, cfg, g, &last_good[i])) {
            snprintf(err, err_cap, "reading the history of series %lld: %s", (long long)g->series_id, sqlite3_errmsg(db));
            if (cfg->record) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            free(rs); free(last_good);
            return -1;
        }
    }
    fprintf(out, "gate: run %lld (%s), %zu results; regression = slower by >= max(%.0f%%, %.0fx noise) with Mann-Whitney p < %g vs the previous %d runs (same device, backend, driver)\n",
            (long long)run_id, uuid, n, 100 * cfg->min_change, cfg->noise_mult, cfg->p_max, cfg->baseline_runs);
    /* pass 2: verdicts, with the canary and ceiling downgrades */
    for (size_t i = 0; i < n; ++i) {
        gres *g = &rs[i];
        if (strcmp(g->verdict, "fail") == 0) {
            ++numerics_fail;
            char why[700];
            snprintf(why, sizeof why, "numerics FAIL: %s", g->message[0] ? g->message : "(no detail)");
            line(out, "FAIL", g, why);
            if (cfg->record) record(db, g, "numerics", "fail", last_good[i]);
            continue;
        }
        if (strcmp(g->status, "error") == 0) {
            ++errors;
            char why[700];
            snprintf(why, sizeof why, "error: %s", g->message[0] ? g->message : "(no detail)");
            line(out, "FAIL", g, why);
            if (cfg->record) record(db, g, "numerics", "fail", last_good[i]);
            continue;
        }
        if (strcmp(g->status, "unsupported") == 0) { ++unsupported; continue; }
        {
            char prev[64];
            int64_t prev_run = 0;
            if (strcmp(g->role, "case") == 0 && previous_output(db, g, prev, sizeof prev, &prev_run) &&
                strcmp(prev, g->output_hash) != 0) {
                char why[600];
                snprintf(why, sizeof why,
                         "output changed with identical code and inputs: %s here, %s in run %lld (same revision, same "
                         "code hash %s)%s",
                         g->output_hash, prev, (long long)prev_run, g->code_hash,
                         g->exact ? ": an exact op is nondeterministic" : " [numeric op: accumulation order may vary -> warning]");
                snprintf(g->message, sizeof g->message, "%s", why);
                if (g->exact) {
                    ++nondet;
                    line(out, "FAIL", g, why);
                    if (cfg->record) record(db, g, "numerics", "fail", last_good[i]);
                    continue;
                }
                ++warns;
                line(out, "warn", g, why);
                if (cfg->record) record(db, g, "numerics", "warn", last_good[i]);
            }
        }
        ++checked;
        if (g->d.verdict == GATE_NO_HISTORY) { ++no_hist; continue; }
        if (g->d.verdict == GATE_FASTER) { ++faster; continue; }
        if (g->d.verdict == GATE_OK) continue;
        int sev = g->d.verdict;  /* FAIL or WARN */
        char why[600];
        snprintf(why, sizeof why, "%s", g->d.reason);
        if (sev == GATE_FAIL && strcmp(g->role, "case") != 0) {
            sev = GATE_WARN;
            snprintf(why, sizeof why, "%s [%s: measures the machine, not qgmm -> warning]", g->d.reason, g->role);
        } else if (sev == GATE_FAIL && strcmp(g->role, "case") == 0) {
            for (size_t k = 0; k < n; ++k)
                if (rs[k].context_id == g->context_id && strcmp(rs[k].role, "canary") == 0 &&
                    (rs[k].d.verdict == GATE_FAIL || rs[k].d.verdict == GATE_WARN)) {
                    sev = GATE_WARN;
                    snprintf(why, sizeof why, "%s [the canary of %s is %.1f%% slower too: noisy machine -> warning]",
                             g->d.reason, g->backend, 100 * rs[k].d.change);
                    break;
                }
        }
        if (sev == GATE_FAIL) ++fails; else ++warns;
        line(out, sev == GATE_FAIL ? "FAIL" : "warn", g, why);
        if (cfg->record) record(db, g, "perf", sev == GATE_FAIL ? "fail" : "warn", last_good[i]);
    }
    if (cfg->record && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(out, "gate: warning: could not record regressions: %s\n", sqlite3_errmsg(db));
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    }
    int failed = fails + numerics_fail + errors + nondet > 0;
    fprintf(out,
            "gate: %s — %zu numerics failures, %zu nondeterministic outputs, %zu errors, %zu perf regressions, "
            "%zu warnings; %zu timed results checked (%zu without enough history, %zu faster), %zu unsupported\n",
            failed ? "FAIL" : "PASS", numerics_fail, nondet, errors, fails, warns, checked, no_hist, faster, unsupported);
    free(rs);
    free(last_good);
    return failed ? 1 : 0;
}
