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
    "         AS backends"
    " FROM run r JOIN machine m ON m.id = r.machine_id JOIN revision rv ON rv.id = r.revision_id"
    " WHERE (?1 IS NULL OR r.suite = ?1) AND (?2 IS NULL OR m.hostname = ?2)"
    " ORDER BY r.started_at DESC, r.id DESC LIMIT ?3 OFFSET ?4";

static const char *RUN_SQL =
    "SELECT r.id AS run_id, r.uuid AS run, r.suite, r.reason, r.started_at, r.finished_at,"
    "       r.runner, r.runner_version, r.dirty, r.env, r.source, r.imported_at,"
    "       m.hostname, m.cpu, m.os, m.cores, m.memory_bytes,"
    "       rv.sha AS revision, rv.subject, rv.branch, rv.commit_time"
    " FROM run r JOIN machine m ON m.id = r.machine_id JOIN revision rv ON rv.id = r.revision_id"
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
    " ORDER BY s.role = 'case' DESC, s.benchmark, s.params, d.name, s.backend = 'torch', s.backend";

static const char *RUN_REGS_SQL =
    "SELECT g.id, g.kind, g.severity, g.status, g.change, g.reason, g.detected_at,"
    "       r.uuid AS run, s.id AS series_id, s.benchmark, s.label, s.shape, s.backend"
    " FROM regression g JOIN series s ON s.id = g.series_id JOIN run r ON r.id = g.run_id"
    " WHERE g.run_id = ?1"
    " ORDER BY g.severity, g.id";

/* Both runs' results per series (full outer join written as a union). */
static const char *COMPARE_SQL =
    "WITH a AS (SELECT x.* FROM result x JOIN run r ON r.id = x.run_id WHERE r.uuid = ?1),"
    "     b AS (SELECT x.* FROM result x JOIN run r ON r.id = x.run_id WHERE r.uuid = ?2),"
    "     ids AS (SELECT series_id FROM a UNION SELECT series_id FROM b)"
    " SELECT s.id AS series_id, s.benchmark, s.label, s.shape, s.role, s.backend,"
    "        d.name AS device,"
    "        a.status AS a_status, a.verdict AS a_verdict, a.median_us AS a_median_us,"
    "        a.q1_us AS a_q1_us, a.q3_us AS a_q3_us,"
    "        b.status AS b_status, b.verdict AS b_verdict, b.median_us AS b_median_us,"
    "        b.q1_us AS b_q1_us, b.q3_us AS b_q3_us"
    " FROM ids JOIN series s ON s.id = ids.series_id JOIN device d ON d.id = s.device_id"
    " LEFT JOIN a ON a.series_id = ids.series_id LEFT JOIN b ON b.series_id = ids.series_id"
    " ORDER BY s.role = 'case' DESC, s.benchmark, s.params, d.name, s.backend";

int model_runs(mctx *m, const char *arg, jval **out) {
  (void)arg;
  arena *a = &m->r->a;
  const char *err = NULL;
  long long limit = 50, offset = 0;
  const char *ls = req_param(m->r, "limit"), *os = req_param(m->r, "offset");
  if (ls && (!parse_id(ls, &limit) || limit > 1000)) {
    *out = model_error(a, "limit must be an integer in 1..1000");
    return 400;
  }
  if (os && strcmp(os, "0") != 0 && !parse_id(os, &offset)) {
    *out = model_error(a, "offset must be a non-negative integer");
    return 400;
  }
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
  int64_t id = (int64_t)jget_num(run, "run_id", 0);
  jval *ctx = q_rows(a, m->db, &err, CONTEXTS_SQL, "i", id);
  jval *res = ctx ? q_rows(a, m->db, &err, RESULTS_SQL, "i", id) : NULL;
  jval *regs = !res ? NULL : m->has_regress ? q_rows(a, m->db, &err, RUN_REGS_SQL, "i", id) : jarr(a);
  if (!regs) return model_sql_error(m, err, out);
  double pass = 0, fail = 0, error = 0, rf = 0, rw = 0;
  for (size_t i = 0; i < res->len; i++) {
    pass += strcmp(jget_str(res->items[i], "verdict", ""), "pass") == 0;
    fail += strcmp(jget_str(res->items[i], "verdict", ""), "fail") == 0;
    error += strcmp(jget_str(res->items[i], "status", ""), "error") == 0;
  }
  for (size_t i = 0; i < regs->len; i++) {
    const char *st = jget_str(regs->items[i], "status", "");
    if (strcmp(st, "detected") && strcmp(st, "acknowledged")) continue;
    /* change points are the nightly pass's findings, not this run's gate verdict */
    if (strcmp(jget_str(regs->items[i], "kind", ""), "changepoint") == 0) continue;
    if (strcmp(jget_str(regs->items[i], "severity", ""), "fail") == 0) rf++;
    else rw++;
  }
  jset_num(a, run, "pass", pass);
  jset_num(a, run, "fail", fail);
  jset_num(a, run, "error", error);
  jset_str(a, run, "gate", gate_verdict(fail, error, rf, rw));
  jval *o = jobj(a);
  jset(a, o, "run", run);
  jset(a, o, "contexts", ctx);
  jset(a, o, "results", res);
  jset(a, o, "regressions", regs);
  *out = o;
  return 200;
}

/* Verdict of b against a for one series. A time change counts only beyond
 * max(5 %, 3 x noise), noise being the larger half-IQR / median of the two results. */
static const char *compare_verdict(const jval *r, double *delta) {
  const char *as = jget_str(r, "a_status", NULL), *bs = jget_str(r, "b_status", NULL);
  *delta = NAN;
  if (!as) return "only_b";
  if (!bs) return "only_a";
  const char *av = jget_str(r, "a_verdict", ""), *bv = jget_str(r, "b_verdict", "");
  if (strcmp(bv, "fail") == 0 && strcmp(av, "fail") != 0) return "numerics_fail";
  if (strcmp(av, "fail") == 0 && strcmp(bv, "fail") != 0) return "numerics_fixed";
  /* not_run: neither ran (e.g. unsupported both times); not_ok: b stopped running. */
  if (strcmp(bs, "ok") != 0 && strcmp(as, "ok") != 0) return "not_run";
  if (strcmp(bs, "ok") != 0 || strcmp(as, "ok") != 0) return strcmp(bs, "ok") ? "not_ok" : "now_ok";
  double am = jget_num(r, "a_median_us", NAN), bm = jget_num(r, "b_median_us", NAN);
  if (!(am > 0) || !(bm > 0)) return "not_ok";
  *delta = bm / am - 1.0;
  double na = (jget_num(r, "a_q3_us", am) - jget_num(r, "a_q1_us", am)) / (2 * am);
  double nb = (jget_num(r, "b_q3_us", bm) - jget_num(r, "b_q1_us", bm)) / (2 * bm);
  double thr = fmax(0.05, 3 * fmax(na, nb));
  if (*delta > thr) return "slower";
  if (*delta < -thr) return "faster";
  return "same";
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
  jval *ra = q_row(a, m->db, &err, RUN_SQL, "t", ua);
  jval *rb = ra ? q_row(a, m->db, &err, RUN_SQL, "t", ub) : NULL;
  if (!ra || !rb) {
    if (err) return model_sql_error(m, err, out);
    *out = model_error(a, !ra ? "a: no such run" : "b: no such run");
    return 404;
  }
  jval *rows = q_rows(a, m->db, &err, COMPARE_SQL, "tt", ua, ub);
  if (!rows) return model_sql_error(m, err, out);
  jval *summary = jobj(a);
  static const char *kinds[] = {"faster", "slower", "same", "numerics_fail", "numerics_fixed",
                                "not_ok", "now_ok", "not_run", "only_a", "only_b"};
  enum { NKINDS = sizeof kinds / sizeof *kinds };
  double count[NKINDS] = {0};
  double logsum = 0;
  int nlog = 0;
  for (size_t i = 0; i < rows->len; i++) {
    double d;
    const char *v = compare_verdict(rows->items[i], &d);
    jset_str(a, rows->items[i], "verdict", v);
    jset(a, rows->items[i], "delta", isnan(d) ? jnull(a) : jnum(a, d));
    for (int k = 0; k < NKINDS; k++)
      if (strcmp(v, kinds[k]) == 0) count[k]++;
    if (!isnan(d) && strcmp(jget_str(rows->items[i], "role", ""), "case") == 0) {
      logsum += log1p(d);
      nlog++;
    }
  }
  for (int k = 0; k < NKINDS; k++) jset_num(a, summary, kinds[k], count[k]);
  jset(a, summary, "geomean_time_ratio", nlog ? jnum(a, exp(logsum / nlog)) : jnull(a));
  jset_num(a, summary, "geomean_rows", nlog);
  jval *o = jobj(a);
  jset(a, o, "a", ra);
  jset(a, o, "b", rb);
  jset(a, o, "summary", summary);
  jset(a, o, "rows", rows);
  *out = o;
  return 200;
}
