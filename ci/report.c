/* report.c — see report.h. */
#include "report.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void report_fmt_us(double us, char *out, size_t cap)
{
    if (!isfinite(us)) snprintf(out, cap, "-");
    else if (us >= 1e6) snprintf(out, cap, "%.3f s", us / 1e6);
    else if (us >= 1e4) snprintf(out, cap, "%.2f ms", us / 1e3);
    else snprintf(out, cap, "%.2f us", us);
}

static void fmt_rate(double gbps, double tflops, char *out, size_t cap)
{
    if (isfinite(tflops)) snprintf(out, cap, "%.3g TFLOP/s", tflops);
    else if (isfinite(gbps)) snprintf(out, cap, "%.4g GB/s", gbps);
    else snprintf(out, cap, "-");
}

static const char *short_shape(const char *shape, const char *params)
{
    return shape && shape[0] ? shape : params;
}

/* % of ceiling. Above 100 the ceiling, not the op, is what is wrong (it was measured slower
 * than work that moves the same bytes): the number gets the SUSPECT_MARK and the table a note. */
#define SUSPECT_MARK "!"
static int fmt_pct(double pct, char *out, size_t cap)
{
    if (!isfinite(pct)) { snprintf(out, cap, "-"); return 0; }
    snprintf(out, cap, "%.1f%%%s", pct, pct > 100.0 ? SUSPECT_MARK : "");
    return pct > 100.0;
}

static void suspect_note(FILE *out, size_t n)
{
    if (n)
        fprintf(out, "%s %zu result%s above 100 %% of the ceiling: that backend's ceiling is suspect (measured slower "
                     "than the op itself), so those percentages mean nothing until it is fixed\n",
                SUSPECT_MARK, n, n == 1 ? " is" : "s are");
}

void report_run_table(const run_record *r, FILE *out)
{
    size_t suspect = 0;
    fprintf(out, "%-46s %-24s %-8s %12s %16s %8s  %s\n", "op", "shape", "backend", "median", "rate", "%ceil",
            "numerics");
    for (size_t i = 0; i < r->n_results; ++i) {
        const rr_result *x = &r->results[i];
        const rr_context *c = &r->contexts[x->context];
        char med[32], rate[32], pct[16], op[64];
        report_fmt_us(rr_median(x), med, sizeof med);
        fmt_rate(x->gbps, x->tflops, rate, sizeof rate);
        suspect += (size_t)fmt_pct(x->pct_of_ceiling, pct, sizeof pct);
        snprintf(op, sizeof op, "%s", x->label[0] ? x->label : x->benchmark);
        const char *verdict = strcmp(x->status, "ok") != 0 ? x->status : x->verdict;
        fprintf(out, "%-46.46s %-24.24s %-8s %12s %16s %8s  %s%s%s\n", op, short_shape(x->shape, x->params_json),
                c->backend, med, rate, pct, verdict, x->message[0] && strcmp(x->verdict, "pass") ? ": " : "",
                x->message[0] && strcmp(x->verdict, "pass") ? x->message : "");
    }
    suspect_note(out, suspect);
}

static int prep(sqlite3 *db, const char *sql, sqlite3_stmt **st, char *err, size_t cap)
{
    if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK) {
        snprintf(err, cap, "%s", sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

static const char *cs(sqlite3_stmt *st, int i)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    return s ? (const char *)s : "";
}

static double cd(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static int samples_of(sqlite3 *db, int64_t result_id, double **out, size_t *n)
{
    sqlite3_stmt *st;
    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db, "SELECT time_us FROM sample WHERE result_id = ?1 ORDER BY idx", -1, &st, NULL))
        return -1;
    sqlite3_bind_int64(st, 1, result_id);
    size_t cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            double *nb = realloc(*out, cap * sizeof *nb);
            if (!nb) break;
            *out = nb;
        }
        (*out)[(*n)++] = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    return 0;
}

static void run_header(sqlite3 *db, int64_t id, const char *tag, FILE *out)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT run.uuid, datetime(run.started_at, 'unixepoch'), v.sha, run.suite, m.hostname "
                           "FROM run JOIN revision v ON v.id = run.revision_id JOIN machine m ON m.id = run.machine_id "
                           "WHERE run.id = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW)
        fprintf(out, "%s: run %lld %s  %s UTC  %.12s  suite %s  on %s\n", tag, (long long)id, cs(st, 0), cs(st, 1),
                cs(st, 2), cs(st, 3), cs(st, 4));
    sqlite3_finalize(st);
}

int report_compare(sqlite3 *db, int64_t a, int64_t b, FILE *out, char *err, size_t cap)
{
    sqlite3_stmt *st;
    const char *sql =
        "SELECT sa.benchmark, sa.label, sa.shape, sa.params, sa.backend, ra.id, rb.id, ra.median_us, rb.median_us, "
        "ra.verdict, rb.verdict, ra.status, rb.status FROM result ra JOIN series sa ON sa.id = ra.series_id "
        "JOIN device da ON da.id = sa.device_id "
        "JOIN result rb ON rb.run_id = ?2 JOIN series sb ON sb.id = rb.series_id JOIN device db ON db.id = sb.device_id "
        "WHERE ra.run_id = ?1 AND sb.benchmark = sa.benchmark AND sb.params = sa.params AND sb.backend = sa.backend "
        "AND sb.metric = sa.metric AND db.name = da.name ORDER BY ra.id";
    if (prep(db, sql, &st, err, cap)) return -1;
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    run_header(db, a, "A", out);
    run_header(db, b, "B", out);
    fprintf(out, "%-46s %-24s %-8s %12s %12s %8s %9s  %s\n", "op", "shape", "backend", "A median", "B median", "B/A",
            "p", "numerics A -> B");
    int rows = 0;
    double logsum = 0;
    int nlog = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        ++rows;
        double ma = cd(st, 7), mb = cd(st, 8);
        char sa[32], sb[32], ratio[16] = "-", pv[16] = "-";
        report_fmt_us(ma, sa, sizeof sa);
        report_fmt_us(mb, sb, sizeof sb);
        if (ma > 0 && mb > 0) {
            snprintf(ratio, sizeof ratio, "%.3f", mb / ma);
            logsum += log(mb / ma);
            ++nlog;
            double *xa = NULL, *xb = NULL;
            size_t na, nb;
            if (!samples_of(db, sqlite3_column_int64(st, 5), &xa, &na) &&
                !samples_of(db, sqlite3_column_int64(st, 6), &xb, &nb)) {
                mw_result m = stats_mann_whitney(xb, nb, xa, na);
                snprintf(pv, sizeof pv, "%.2g", m.p);
            }
            free(xa);
            free(xb);
        }
        const char *va = strcmp(cs(st, 11), "ok") ? cs(st, 11) : cs(st, 9);
        const char *vb = strcmp(cs(st, 12), "ok") ? cs(st, 12) : cs(st, 10);
        fprintf(out, "%-46.46s %-24.24s %-8s %12s %12s %8s %9s  %s -> %s\n",
                cs(st, 1)[0] ? cs(st, 1) : cs(st, 0), short_shape(cs(st, 2), cs(st, 3)), cs(st, 4), sa, sb, ratio, pv,
                va, vb);
    }
    sqlite3_finalize(st);
    if (!rows) fprintf(out, "(no series in common)\n");
    else if (nlog) fprintf(out, "%d series in common; geometric mean of B/A = %.3f (< 1: B is faster)\n", rows, exp(logsum / nlog));
    return 0;
}

int report_history(sqlite3 *db, const char *spec, int limit, FILE *out, char *err, size_t cap)
{
    sqlite3_stmt *st;
    if (prep(db,
             "SELECT s.id, s.benchmark, s.label, s.shape, s.params, s.backend, d.name, s.fingerprint FROM series s "
             "JOIN device d ON d.id = s.device_id WHERE CAST(s.id AS TEXT) = ?1 OR s.fingerprint = ?1 OR "
             "instr(s.benchmark || ' ' || s.label || ' ' || s.shape || ' ' || s.params || ' ' || s.backend, ?1) > 0 "
             "ORDER BY (CAST(s.id AS TEXT) = ?1 OR s.fingerprint = ?1) DESC, s.id LIMIT 51",
             &st, err, cap))
        return -1;
    sqlite3_bind_text(st, 1, spec, -1, SQLITE_TRANSIENT);
    int64_t ids[51];
    int n = 0, exact = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n < 51) {
        if (n == 0) exact = strcmp(cs(st, 7), spec) == 0 || sqlite3_column_int64(st, 0) == atoll(spec);
        ids[n++] = sqlite3_column_int64(st, 0);
    }
    if (n == 0) {
        sqlite3_finalize(st);
        snprintf(err, cap, "no series matches \"%s\" (give a series id, a fingerprint, or text of its op/params/backend)", spec);
        return -1;
    }
    if (n > 1 && !exact) {
        sqlite3_reset(st);
        fprintf(out, "\"%s\" matches %s%d series; pick one by id:\n", spec, n > 50 ? "more than " : "", n > 50 ? 50 : n);
        fprintf(out, "%6s  %-28s %-8s %-30s %s\n", "id", "benchmark", "backend", "device", "params");
        int k = 0;
        while (sqlite3_step(st) == SQLITE_ROW && k++ < 50)
            fprintf(out, "%6lld  %-28s %-8s %-30.30s %s\n", (long long)sqlite3_column_int64(st, 0), cs(st, 1), cs(st, 5),
                    cs(st, 6), cs(st, 4));
        sqlite3_finalize(st);
        return 0;
    }
    sqlite3_reset(st);
    sqlite3_step(st);
    fprintf(out, "series %lld  %s  %s %s\n  %s on %s (%s)  %s\n", (long long)ids[0], cs(st, 1), cs(st, 2), cs(st, 3),
            cs(st, 5), cs(st, 6), cs(st, 7), cs(st, 4));
    sqlite3_finalize(st);
    if (prep(db,
             "SELECT * FROM (SELECT run.id, datetime(run.started_at, 'unixepoch'), v.sha, c.driver, r.n_samples, r.q1_us, "
             "r.median_us, r.q3_us, r.gbps, r.tflops, r.pct_of_ceiling, r.status, r.verdict, run.started_at "
             "FROM result r JOIN run ON run.id = r.run_id JOIN revision v ON v.id = run.revision_id "
             "JOIN context c ON c.id = r.context_id WHERE r.series_id = ?1 ORDER BY run.started_at DESC, run.id DESC LIMIT ?2) "
             "ORDER BY 14, 1",
             &st, err, cap))
        return -1;
    sqlite3_bind_int64(st, 1, ids[0]);
    sqlite3_bind_int(st, 2, limit);
    fprintf(out, "%6s  %-19s  %-10s %-22s %4s %12s %12s %12s %16s %7s  %s\n", "run", "started (UTC)", "revision", "driver",
            "n", "q1", "median", "q3", "rate", "%ceil", "numerics");
    size_t suspect = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char q1[32], md[32], q3[32], rate[32], pct[16] = "-";
        report_fmt_us(cd(st, 5), q1, sizeof q1);
        report_fmt_us(cd(st, 6), md, sizeof md);
        report_fmt_us(cd(st, 7), q3, sizeof q3);
        fmt_rate(cd(st, 8), cd(st, 9), rate, sizeof rate);
        suspect += (size_t)fmt_pct(cd(st, 10), pct, sizeof pct);
        fprintf(out, "%6lld  %-19s  %-10.10s %-22.22s %4lld %12s %12s %12s %16s %7s  %s\n", (long long)sqlite3_column_int64(st, 0),
                cs(st, 1), cs(st, 2), cs(st, 3)[0] ? cs(st, 3) : "-", (long long)sqlite3_column_int64(st, 4), q1, md, q3,
                rate, pct, strcmp(cs(st, 11), "ok") ? cs(st, 11) : cs(st, 12));
    }
    suspect_note(out, suspect);
    sqlite3_finalize(st);
    return 0;
}

int report_runs(sqlite3 *db, int limit, FILE *out, char *err, size_t cap)
{
    sqlite3_stmt *st;
    if (prep(db,
             "SELECT run.id, run.uuid, datetime(run.started_at, 'unixepoch'), run.finished_at - run.started_at, v.sha, "
             "run.suite, run.reason, run.runner, m.hostname, run.source, "
             "(SELECT count(*) FROM result r WHERE r.run_id = run.id), "
             "(SELECT count(*) FROM result r WHERE r.run_id = run.id AND (r.verdict = 'fail' OR r.status = 'error')), "
             "(SELECT group_concat(DISTINCT backend) FROM context c WHERE c.run_id = run.id), rs.state "
             "FROM run JOIN revision v ON v.id = run.revision_id JOIN machine m ON m.id = run.machine_id "
             "JOIN run_status rs ON rs.run_id = run.id "
             "ORDER BY run.started_at DESC, run.id DESC LIMIT ?1",
             &st, err, cap))
        return -1;
    sqlite3_bind_int(st, 1, limit);
    fprintf(out, "%6s  %-36s  %-19s %6s  %-11s %-10s %-8s %-8s %-16s %-12s %-20s %7s %5s\n", "id", "uuid", "started (UTC)",
            "secs", "state", "revision", "suite", "reason", "runner", "host", "backends", "results", "fail");
    while (sqlite3_step(st) == SQLITE_ROW)
        fprintf(out, "%6lld  %-36s  %-19s %6lld  %-11s %-10.10s %-8.8s %-8.8s %-16.16s %-12.12s %-20.20s %7lld %5lld\n",
                (long long)sqlite3_column_int64(st, 0), cs(st, 1), cs(st, 2), (long long)sqlite3_column_int64(st, 3),
                cs(st, 13), cs(st, 4), cs(st, 5), cs(st, 6), cs(st, 7), cs(st, 8), cs(st, 12),
                (long long)sqlite3_column_int64(st, 10), (long long)sqlite3_column_int64(st, 11));
    sqlite3_finalize(st);
    return 0;
}

/* ---- report --markdown: the performance summary of one run, per family */
typedef struct md_row {
    char *benchmark, *params, *shape, *role, *backend, *status, *verdict;
    double median, gbps, tflops, pct;
} md_row;

static char *dup_s(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* The family a benchmark's table is under: "gemm.m.fp8_rowwise" for GEMMs, the first
 * component otherwise ("fp8_rowwise", "mxfp8", "to_blocked", "pad_token_groups"). */
static void family_of(const char *benchmark, char *out, size_t cap)
{
    int parts = strncmp(benchmark, "gemm.", 5) == 0 ? 3 : 1;
    size_t i = 0;
    for (int seen = 0; benchmark[i] && i + 1 < cap; ++i)
        if (benchmark[i] == '.' && ++seen == parts) break;
    snprintf(out, cap, "%.*s", (int)i, benchmark);
}

static void md_rate(const md_row *x, char *out, size_t cap, size_t *suspect)
{
    if (strcmp(x->status, "ok") != 0) { snprintf(out, cap, "%s", x->status); return; }
    char rate[32], pct[24] = "";
    if (isfinite(x->tflops)) snprintf(rate, sizeof rate, "%.3g TFLOP/s", x->tflops);
    else if (isfinite(x->gbps)) snprintf(rate, sizeof rate, "%.4g GB/s", x->gbps);
    else snprintf(rate, sizeof rate, "-");
    if (isfinite(x->pct)) {
        snprintf(pct, sizeof pct, " (%.0f %%%s)", x->pct, x->pct > 100.0 ? SUSPECT_MARK : "");
        *suspect += x->pct > 100.0;
    }
    const char *v = strcmp(x->role, "case") != 0 || strcmp(x->backend, "torch") == 0 ? ""
                    : strcmp(x->verdict, "fail") == 0                               ? " **FAIL**"
                    : strcmp(x->verdict, "unchecked") == 0                          ? " (unchecked)"
                                                                                    : "";
    snprintf(out, cap, "%s%s%s", rate, pct, v);
}

/* Index of (benchmark, params, backend) in rows[lo, hi), or -1. */
static long md_find(md_row *rows, size_t lo, size_t hi, const char *backend)
{
    for (size_t i = lo; i < hi; ++i)
        if (strcmp(rows[i].backend, backend) == 0) return (long)i;
    return -1;
}

/* The per-step times of the run's composite cases (table result_step), one table per case and
 * backend: each step's median and its share of the steps' sum; nothing when there are none. */
static int md_steps(sqlite3 *db, int64_t run_id, FILE *out, char *err, size_t cap)
{
    sqlite3_stmt *st;
    if (prep(db,
             "SELECT x.id, s.benchmark, s.shape, s.backend, p.phase, p.step, p.median_us, p.n, "
             "sum(p.median_us) OVER (PARTITION BY x.id) FROM result_step p JOIN result x ON x.id = p.result_id "
             "JOIN series s ON s.id = x.series_id WHERE x.run_id = ?1 ORDER BY s.benchmark, s.params, s.backend, p.idx",
             &st, err, cap))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    int64_t cur = -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const int64_t id = sqlite3_column_int64(st, 0);
        if (cur < 0) fprintf(out, "\n### Composite cases step by step\n");
        if (id != cur) {
            fprintf(out, "\n%s, %s, %s: steps sum to %.1f us (median of %lld profiled runs each)\n\n"
                         "| phase | step | median | share |\n|---|---|---:|---:|\n",
                    cs(st, 1), cs(st, 2), cs(st, 3), sqlite3_column_double(st, 8), (long long)sqlite3_column_int64(st, 7));
            cur = id;
        }
        const double med = sqlite3_column_double(st, 6), sum = sqlite3_column_double(st, 8);
        fprintf(out, "| %s | %s | %.1f us | %.0f %% |\n", cs(st, 4), cs(st, 5), med, sum > 0 ? 100.0 * med / sum : 0.0);
    }
    sqlite3_finalize(st);
    return 0;
}

int report_markdown(sqlite3 *db, int64_t run_id, FILE *out, char *err, size_t cap)
{
    sqlite3_stmt *st;
    if (prep(db,
             "SELECT r.uuid, r.suite, v.sha, datetime(r.started_at, 'unixepoch'), s.state, "
             "(SELECT group_concat(DISTINCT d.name) FROM context c JOIN device d ON d.id = c.device_id "
             "WHERE c.run_id = r.id AND c.backend <> 'cpu') FROM run r JOIN revision v ON v.id = r.revision_id "
             "JOIN run_status s ON s.run_id = r.id WHERE r.id = ?1",
             &st, err, cap))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        snprintf(err, cap, "no run %lld", (long long)run_id);
        return -1;
    }
    fprintf(out, "Run %lld (`%s`), suite %s, revision %.12s, %s UTC, %s; devices: %s. Written by "
                 "`qgmm-bench report --markdown`.\n",
            (long long)run_id, cs(st, 0), cs(st, 1), cs(st, 2), cs(st, 3), cs(st, 4), cs(st, 5)[0] ? cs(st, 5) : "cpu");
    sqlite3_finalize(st);
    if (prep(db,
             "SELECT s.benchmark, s.params, s.shape, s.role, s.backend, x.status, x.verdict, x.median_us, x.gbps, "
             "x.tflops, x.pct_of_ceiling FROM result x JOIN series s ON s.id = x.series_id WHERE x.run_id = ?1 "
             "ORDER BY s.role <> 'ceiling', s.role <> 'canary', s.benchmark, s.params, s.backend",
             &st, err, cap))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    md_row *rows = NULL;
    size_t n = 0, capr = 0;
    char backends[16][16];
    int nb = 0, torch = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == capr) {
            capr = capr ? 2 * capr : 256;
            md_row *r2 = realloc(rows, capr * sizeof *r2);
            if (!r2) break;
            rows = r2;
        }
        md_row *x = &rows[n++];
        x->benchmark = dup_s(cs(st, 0));
        x->params = dup_s(cs(st, 1));
        x->shape = dup_s(cs(st, 2));
        x->role = dup_s(cs(st, 3));
        x->backend = dup_s(cs(st, 4));
        x->status = dup_s(cs(st, 5));
        x->verdict = dup_s(cs(st, 6));
        x->median = sqlite3_column_type(st, 7) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 7);
        x->gbps = sqlite3_column_type(st, 8) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 8);
        x->tflops = sqlite3_column_type(st, 9) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 9);
        x->pct = sqlite3_column_type(st, 10) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 10);
        if (strcmp(x->backend, "torch") == 0) { torch = 1; continue; }
        int known = 0;
        for (int b = 0; b < nb; ++b) known |= strcmp(backends[b], x->backend) == 0;
        if (!known && nb < 16) snprintf(backends[nb++], sizeof backends[0], "%s", x->backend);
    }
    sqlite3_finalize(st);
    size_t suspect = 0;
    char family[96] = "", cell[96];
    for (size_t i = 0; i < n;) {
        /* rows of one (benchmark, params) are adjacent */
        size_t j = i + 1;
        while (j < n && strcmp(rows[j].benchmark, rows[i].benchmark) == 0 && strcmp(rows[j].params, rows[i].params) == 0)
            ++j;
        char fam[96];
        if (strcmp(rows[i].role, "case") == 0) family_of(rows[i].benchmark, fam, sizeof fam);
        else snprintf(fam, sizeof fam, "Ceilings and canary");
        if (strcmp(fam, family) != 0) {
            snprintf(family, sizeof family, "%s", fam);
            fprintf(out, "\n### %s\n\n| case | shape |", family);
            for (int b = 0; b < nb; ++b) fprintf(out, " %s |", backends[b]);
            if (torch) {
                fprintf(out, " torch |");
                for (int b = 0; b < nb; ++b) fprintf(out, " %s / torch |", backends[b]);
            }
            fprintf(out, "\n|---|---|");
            for (int b = 0; b < nb * (torch ? 2 : 1) + torch; ++b) fprintf(out, "---:|");
            fprintf(out, "\n");
        }
        const char *name = rows[i].benchmark;
        if (strncmp(name, family, strlen(family)) == 0 && name[strlen(family)] == '.') name += strlen(family) + 1;
        fprintf(out, "| %s | %s |", name, rows[i].shape[0] ? rows[i].shape : rows[i].params);
        for (int b = 0; b < nb; ++b) {
            long k = md_find(rows, i, j, backends[b]);
            if (k < 0) snprintf(cell, sizeof cell, "-");
            else md_rate(&rows[k], cell, sizeof cell, &suspect);
            fprintf(out, " %s |", cell);
        }
        if (torch) {
            long t = md_find(rows, i, j, "torch");
            if (t < 0) snprintf(cell, sizeof cell, "-");
            else md_rate(&rows[t], cell, sizeof cell, &suspect);
            fprintf(out, " %s |", cell);
            for (int b = 0; b < nb; ++b) {
                long k = md_find(rows, i, j, backends[b]);
                /* speed relative to torch: its median time over ours (> 1: qgmm faster) */
                if (k >= 0 && t >= 0 && isfinite(rows[k].median) && isfinite(rows[t].median) && rows[k].median > 0)
                    fprintf(out, " %.2fx |", rows[t].median / rows[k].median);
                else
                    fprintf(out, " - |");
            }
        }
        fprintf(out, "\n");
        i = j;
    }
    fprintf(out, "\nRates at the median; (%%) = of the same backend's ceiling in this run (copy for casts, layout "
                 "and padding; the recipe's dense GEMM for GEMMs)%s.\n",
            torch ? "; X / torch = torch's median time over X's (above 1: qgmm is faster)" : "");
    if (suspect)
        fprintf(out, "%s %zu value%s above 100 %% of a ceiling: that ceiling is suspect (measured slower than work "
                     "moving the same bytes), not the result.\n",
                SUSPECT_MARK, suspect, suspect == 1 ? " is" : "s are");
    for (size_t i = 0; i < n; ++i) {
        md_row *x = &rows[i];
        free(x->benchmark); free(x->params); free(x->shape); free(x->role); free(x->backend); free(x->status);
        free(x->verdict);
    }
    free(rows);
    return md_steps(db, run_id, out, err, cap);
}
