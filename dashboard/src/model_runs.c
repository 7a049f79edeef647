/* Runs: the list, one run in detail, and two runs compared series by series. */
#include <math.h>
#include <string.h>

#include "model.h"
#include "query.h"

static const char *LIST_SQL =
    "SELECT r.uuid AS run, r.suite, r.reason, r.started_at, r.finished_at, r.runner,"
    "       r.source, r.dirty, m.hostname, rv.sha AS revision, rv.subject,"
    "       (SELECT count(*) FROM result x WHERE x.run_id = r.id) AS results,"
    "       (SELECT count(*) FROM result x WHERE x.run_id = r.id AND x.verdict = 'pass') AS pass,"
    "       (SELECT count(*) FROM result x WHERE x.run_id = r.id AND x.verdict = 'fail') AS fail,"
    "       (SELECT count(*) FROM result x WHERE x.run_id = r.id AND x.status = 'error') AS error,"
    "       (SELECT group_concat(DISTINCT c.backend) FROM context c WHERE c.run_id = r.id)"
    "         AS backends, rs.state"
    " FROM run r JOIN machine m ON m.id = r.machine_id JOIN revision rv ON rv.id = r.revision_id"
    " JOIN run_status rs ON rs.run_id = r.id"
    " WHERE (?1 IS NULL OR r.suite = ?1) AND (?2 IS NULL OR m.hostname = ?2)"
    " ORDER BY r.started_at DESC, r.id DESC LIMIT ?3 OFFSET ?4";

static const char *RUN_SQL =
    "SELECT r.id AS run_id, r.uuid AS run, r.suite, r.reason, r.started_at, r.finished_at,"
    "       r.runner, r.runner_version, r.dirty, r.env, r.source, r.imported_at,"
    "       m.hostname, m.cpu, m.os, m.cores, m.memory_bytes,"
    "       rv.sha AS revision, rv.subject, rv.branch, rv.commit_time, rs.state, r.results_expected"
    " FROM run r JOIN machine m ON m.id = r.machine_id JOIN revision rv ON rv.id = r.revision_id"
    " JOIN run_status rs ON rs.run_id = r.id"
    " WHERE r.uuid = ?1";

static const char *CONTEXTS_SQL =
    "SELECT c.backend, d.name AS device, d.kind, d.arch, c.describe, c.driver, c.runtime,"
    "       c.clocks, c.code_hash"
    " FROM context c JOIN device d ON d.id = c.device_id WHERE c.run_id = ?1"
    " ORDER BY d.name, c.backend = 'torch', c.backend";

static const char *RESULTS_SQL =
    "SELECT s.id AS series_id, s.benchmark, s.label, s.shape, s.role, s.backend,"
    "       d.name AS device, x.status, x.verdict, x.message, x.n_samples, x.median_us,"
    "       x.q1_us, x.q3_us, x.min_us, x.gbps, x.tflops, x.pct_of_ceiling, x.mismatched_bytes,"
    "       x.checked_bytes, x.max_abs_err, x.rel_err, x.sqnr_db, x.threshold"
    " FROM result x JOIN series s ON s.id = x.series_id JOIN device d ON d.id = s.device_id"
    " WHERE x.run_id = ?1"
    " ORDER BY s.role = 'case' DESC, s.benchmark, s.params, d.name, s.backend = 'torch', s.backend"
    " LIMIT ?2 OFFSET ?3";

/* The run's counts over all its results (the page shows one slice of them). */
static const char *COUNTS_SQL =
    "SELECT count(*) AS results, total(verdict = 'pass') AS pass, total(verdict = 'fail') AS fail,"
    "       total(status = 'error') AS error"
    " FROM result WHERE run_id = ?1";

/* Open regressions of the run that count towards its gate verdict (change points are the
 * nightly pass's findings, not this run's). */
static const char *GATE_REGS_SQL =
    "SELECT total(severity = 'fail') AS reg_fail, total(severity <> 'fail') AS reg_warn"
    " FROM regression WHERE run_id = ?1 AND status IN ('detected', 'acknowledged')"
    " AND kind <> 'changepoint'";

static const char *RUN_REGS_SQL =
    "SELECT g.id, g.kind, g.severity, g.status, g.change, g.reason, g.detected_at,"
    "       r.uuid AS run, s.id AS series_id, s.benchmark, s.label, s.shape, s.backend"
    " FROM regression g JOIN series s ON s.id = g.series_id JOIN run r ON r.id = g.run_id"
    " WHERE g.run_id = ?1"
    " ORDER BY g.severity, g.id LIMIT 1000";
static const char *RUN_REGS_COUNT_SQL = "SELECT count(*) FROM regression WHERE run_id = ?1";

/* Both runs' results per series (full outer join written as a union), each side found
 * through the (run_id, series_id) index: linear in the runs' sizes. */
static const char *COMPARE_SQL =
    "WITH ra AS (SELECT id FROM run WHERE uuid = ?1), rb AS (SELECT id FROM run WHERE uuid = ?2),"
    "     ids AS (SELECT series_id FROM result WHERE run_id = (SELECT id FROM ra)"
    "             UNION SELECT series_id FROM result WHERE run_id = (SELECT id FROM rb))"
    " SELECT s.id AS series_id, s.benchmark, s.label, s.shape, s.role, s.backend,"
    "        d.name AS device,"
    "        a.status AS a_status, a.verdict AS a_verdict, a.median_us AS a_median_us,"
    "        a.q1_us AS a_q1_us, a.q3_us AS a_q3_us,"
    "        b.status AS b_status, b.verdict AS b_verdict, b.median_us AS b_median_us,"
    "        b.q1_us AS b_q1_us, b.q3_us AS b_q3_us"
    " FROM ids JOIN series s ON s.id = ids.series_id JOIN device d ON d.id = s.device_id"
    " LEFT JOIN result a ON a.run_id = (SELECT id FROM ra) AND a.series_id = ids.series_id"
    " LEFT JOIN result b ON b.run_id = (SELECT id FROM rb) AND b.series_id = ids.series_id"
    " ORDER BY s.role = 'case' DESC, s.benchmark, s.params, d.name, s.backend";

int model_runs(mctx *m, const char *arg, jval **out) {
  (void)arg;
  arena *a = &m->r->a;
  const char *err = NULL;
  long long limit, offset;
  if (!page_args(m, 50, 1000, &limit, &offset, out)) return 400;
  const char *suite = req_param(m->r, "suite"), *host = req_param(m->r, "hostname");
  jval *rows = q_rows(a, m->db, &err, LIST_SQL, "ttii", suite && *suite ? suite : NULL,
                      host && *host ? host : NULL, (int64_t)limit, (int64_t)offset);
  if (!rows) return model_sql_error(m, err, out);
  jval *o = jobj(a);
  jset_num(a, o, "total", (double)q_int(m->db, 0, "SELECT count(*) FROM run", ""));
  jset_num(a, o, "limit", (double)limit);
  jset_num(a, o, "offset", (double)offset);
  jset(a, o, "runs", rows);
  *out = o;
  return 200;
}

int model_run(mctx *m, const char *arg, jval **out) {
  arena *a = &m->r->a;
  const char *err = NULL;
  if (!valid_uuid(arg)) {
    *out = model_error(a, "run must be a lowercase RFC 4122 uuid");
    return 400;
  }
  jval *run = q_row(a, m->db, &err, RUN_SQL, "t", arg);
  if (!run) {
    if (err) return model_sql_error(m, err, out);
    *out = model_error(a, "no such run");
    return 404;
  }
  long long limit, offset;
  if (!page_args(m, 500, 5000, &limit, &offset, out)) return 400;
  int64_t id = (int64_t)jget_num(run, "run_id", 0);
  jval *ctx = q_rows(a, m->db, &err, CONTEXTS_SQL, "i", id);
  jval *res = ctx ? q_rows(a, m->db, &err, RESULTS_SQL, "iii", id, (int64_t)limit, (int64_t)offset) : NULL;
  jval *cnt = res ? q_row(a, m->db, &err, COUNTS_SQL, "i", id) : NULL;
  jval *regs = !cnt ? NULL : m->has_regress ? q_rows(a, m->db, &err, RUN_REGS_SQL, "i", id) : jarr(a);
  jval *gregs = !regs ? NULL : m->has_regress ? q_row(a, m->db, &err, GATE_REGS_SQL, "i", id) : jobj(a);
  if (!gregs) return model_sql_error(m, err, out);
  double pass = jget_num(cnt, "pass", 0), fail = jget_num(cnt, "fail", 0), error = jget_num(cnt, "error", 0);
  double rf = jget_num(gregs, "reg_fail", 0), rw = jget_num(gregs, "reg_warn", 0);
  jset_num(a, run, "pass", pass);
  jset_num(a, run, "fail", fail);
  jset_num(a, run, "error", error);
  /* an incomplete run is never shown as passing (qgmm-bench gate refuses it too) */
  int complete = strcmp(jget_str(run, "state", "complete"), "complete") == 0;
  jset_str(a, run, "gate", complete ? gate_verdict(fail, error, rf, rw) : "incomplete");
  jval *o = jobj(a);
  jset(a, o, "run", run);
  jset(a, o, "contexts", ctx);
  page_info(a, o, "results_", (long long)jget_num(cnt, "results", 0), limit, offset);
  /* regressions: the first 1000 (severity, id order); the total says when there are more */
  jset_num(a, o, "regressions_total",
           m->has_regress ? (double)q_int(m->db, 0, RUN_REGS_COUNT_SQL, "i", id) : 0);
  jset(a, o, "results", res);
  jset(a, o, "regressions", regs);
  *out = o;
  return 200;
}

/* One compare row's raw values (columns of COMPARE_SQL; NULL text/number -> NULL/NAN). */
typedef struct {
  const char *a_status, *b_status, *a_verdict, *b_verdict;
  double am, aq1, aq3, bm, bq1, bq3;
} cmp_vals;

static double col_num(sqlite3_stmt *st, int c) {
  return sqlite3_column_type(st, c) == SQLITE_NULL ? NAN : sqlite3_column_double(st, c);
}

static cmp_vals cmp_read(sqlite3_stmt *st) {
  cmp_vals v;
  v.a_status = (const char *)sqlite3_column_text(st, 7);
  v.a_verdict = (const char *)sqlite3_column_text(st, 8);
  v.am = col_num(st, 9), v.aq1 = col_num(st, 10), v.aq3 = col_num(st, 11);
  v.b_status = (const char *)sqlite3_column_text(st, 12);
  v.b_verdict = (const char *)sqlite3_column_text(st, 13);
  v.bm = col_num(st, 14), v.bq1 = col_num(st, 15), v.bq3 = col_num(st, 16);
  return v;
}

/* Verdict of b against a for one series. A time change counts only beyond
 * max(5 %, 3 x noise), noise being the larger half-IQR / median of the two results. */
static const char *compare_verdict(const cmp_vals *r, double *delta) {
  const char *as = r->a_status, *bs = r->b_status;
  *delta = NAN;
  if (!as) return "only_b";
  if (!bs) return "only_a";
  const char *av = r->a_verdict ? r->a_verdict : "", *bv = r->b_verdict ? r->b_verdict : "";
  if (strcmp(bv, "fail") == 0 && strcmp(av, "fail") != 0) return "numerics_fail";
  if (strcmp(av, "fail") == 0 && strcmp(bv, "fail") != 0) return "numerics_fixed";
  /* not_run: neither ran (e.g. unsupported both times); not_ok: b stopped running. */
  if (strcmp(bs, "ok") != 0 && strcmp(as, "ok") != 0) return "not_run";
  if (strcmp(bs, "ok") != 0 || strcmp(as, "ok") != 0) return strcmp(bs, "ok") ? "not_ok" : "now_ok";
  double am = r->am, bm = r->bm;
  if (!(am > 0) || !(bm > 0)) return "not_ok";
  *delta = bm / am - 1.0;
  double na = ((isnan(r->aq3) ? am : r->aq3) - (isnan(r->aq1) ? am : r->aq1)) / (2 * am);
  double nb = ((isnan(r->bq3) ? bm : r->bq3) - (isnan(r->bq1) ? bm : r->bq1)) / (2 * bm);
  double thr = fmax(0.05, 3 * fmax(na, nb));
  if (*delta > thr) return "slower";
  if (*delta < -thr) return "faster";
  return "same";
}

static const char *const CMP_KINDS[] = {"faster", "slower", "same", "numerics_fail", "numerics_fixed",
                                        "not_ok", "now_ok", "not_run", "only_a", "only_b"};
enum { NKINDS = sizeof CMP_KINDS / sizeof *CMP_KINDS };

/* Every row enters the summary; only the page's rows enter the answer. */
typedef struct {
  arena *a;
  long long limit, offset, n;
  jval *rows;
  double count[NKINDS], logsum;
  int nlog;
} cmp_scan;

static int cmp_row(sqlite3_stmt *st, void *ud) {
  cmp_scan *c = ud;
  cmp_vals v = cmp_read(st);
  double d;
  const char *verdict = compare_verdict(&v, &d);
  for (int k = 0; k < NKINDS; k++)
    if (strcmp(verdict, CMP_KINDS[k]) == 0) c->count[k]++;
  const char *role = (const char *)sqlite3_column_text(st, 4);
  if (!isnan(d) && role && strcmp(role, "case") == 0) {
    c->logsum += log1p(d);
    c->nlog++;
  }
  if (c->n >= c->offset && c->n < c->offset + c->limit) {
    jval *o = q_row_object(c->a, st);
    jset_str(c->a, o, "verdict", verdict);
    jset(c->a, o, "delta", isnan(d) ? jnull(c->a) : jnum(c->a, d));
    jpush(c->a, c->rows, o);
  }
  c->n++;
  return c->a->oom;
}

int model_compare(mctx *m, const char *arg, jval **out) {
  (void)arg;
  arena *a = &m->r->a;
  const char *err = NULL;
  const char *ua = req_param(m->r, "a"), *ub = req_param(m->r, "b");
  if (!valid_uuid(ua) || !valid_uuid(ub)) {
    *out = model_error(a, !ua && !ub ? "Choose two runs: /compare?a=UUID&b=UUID (the Runs page links each "
                                       "run to the previous one of its machine)"
                       : !valid_uuid(ua) ? "a: expected a run uuid" : "b: expected a run uuid");
    return 400;
  }
  long long limit, offset;
  if (!page_args(m, 500, 5000, &limit, &offset, out)) return 400;
  jval *ra = q_row(a, m->db, &err, RUN_SQL, "t", ua);
  jval *rb = ra ? q_row(a, m->db, &err, RUN_SQL, "t", ub) : NULL;
  if (!ra || !rb) {
    if (err) return model_sql_error(m, err, out);
    *out = model_error(a, !ra ? "a: no such run" : "b: no such run");
    return 404;
  }
  cmp_scan c = {a, limit, offset, 0, jarr(a), {0}, 0, 0};
  if (q_each(a, m->db, &err, COMPARE_SQL, cmp_row, &c, "tt", ua, ub)) return model_sql_error(m, err, out);
  jval *summary = jobj(a);
  for (int k = 0; k < NKINDS; k++) jset_num(a, summary, CMP_KINDS[k], c.count[k]);
  jset(a, summary, "geomean_time_ratio", c.nlog ? jnum(a, exp(c.logsum / c.nlog)) : jnull(a));
  jset_num(a, summary, "geomean_rows", c.nlog);
  jval *o = jobj(a);
  jset(a, o, "a", ra);
  jset(a, o, "b", rb);
  jset(a, o, "summary", summary);
  page_info(a, o, "", c.n, limit, offset);
  jset(a, o, "rows", c.rows);
  *out = o;
  return 200;
}
