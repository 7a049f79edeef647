/* Series: one benchmark case on one device through one backend, over runs. */
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "query.h"

static const char *META_SQL =
    "SELECT s.id, s.fingerprint, s.benchmark, s.params, s.label, s.shape, s.role, s.backend,"
    "       s.metric, s.unit, d.id AS device_id, d.name AS device, d.arch, m.hostname, m.cpu"
    " FROM series s JOIN device d ON d.id = s.device_id JOIN machine m ON m.id = d.machine_id"
    " WHERE s.id = ?1";

/* Newest ?limit points, returned oldest first for the chart. */
static const char *POINTS_SQL =
    "SELECT * FROM ("
    "  SELECT r.uuid AS run, r.id AS run_id, r.started_at, r.suite, rv.sha AS revision,"
    "         rv.subject, rv.commit_time, r.dirty, c.driver, x.status, x.verdict, x.message,"
    "         x.n_samples, x.min_us, x.q1_us, x.median_us, x.q3_us, x.max_us, x.gbps, x.tflops,"
    "         x.pct_of_ceiling, x.sqnr_db, x.rel_err, x.mismatched_bytes"
    "  FROM result x JOIN run r ON r.id = x.run_id JOIN revision rv ON rv.id = r.revision_id"
    "  JOIN context c ON c.id = x.context_id"
    "  WHERE x.series_id = ?1 ORDER BY r.started_at DESC, r.id DESC LIMIT ?2)"
    " ORDER BY started_at, run_id";

/* The same case elsewhere: other devices and backends, for cross-vendor hops. */
static const char *SIBLINGS_SQL =
    "SELECT s.id AS series_id, s.backend, d.name AS device, m.hostname,"
    "       (SELECT x.median_us FROM result x JOIN run r ON r.id = x.run_id"
    "         WHERE x.series_id = s.id ORDER BY r.started_at DESC, r.id DESC LIMIT 1)"
    "         AS latest_median_us"
    " FROM series s JOIN device d ON d.id = s.device_id JOIN machine m ON m.id = d.machine_id"
    " WHERE s.benchmark = ?1 AND s.params = ?2 AND s.metric = ?3 AND s.id <> ?4"
    " ORDER BY m.hostname, d.name, s.backend = 'torch', s.backend";

static const char *REGS_SQL =
    "SELECT g.id, g.kind, g.severity, g.status, g.change, g.reason, g.detected_at,"
    "       r.uuid AS run, s.id AS series_id, s.benchmark, s.label, s.shape, s.backend"
    " FROM regression g JOIN run r ON r.id = g.run_id JOIN series s ON s.id = g.series_id"
    " WHERE g.series_id = ?1"
    " ORDER BY g.detected_at DESC, g.id DESC";

static const char *LIST_SQL =
    "SELECT s.id AS series_id, s.benchmark, s.label, s.shape, s.role, s.backend,"
    "       d.name AS device, m.hostname, count(x.id) AS results"
    " FROM series s JOIN device d ON d.id = s.device_id JOIN machine m ON m.id = d.machine_id"
    " LEFT JOIN result x ON x.series_id = s.id"
    " WHERE (?1 IS NULL OR s.benchmark = ?1) AND (?2 IS NULL OR s.backend = ?2)"
    " GROUP BY s.id ORDER BY s.benchmark, s.params, m.hostname, d.name, s.backend LIMIT ?3 OFFSET ?4";

static const char *COUNT_SQL =
    "SELECT count(*) FROM series s WHERE (?1 IS NULL OR s.benchmark = ?1) AND (?2 IS NULL OR s.backend = ?2)";

int model_series_list(mctx *m, const char *arg, jval **out) {
  (void)arg;
  arena *a = &m->r->a;
  const char *err = NULL;
  long long limit, offset;
  if (!page_args(m, 500, 2000, &limit, &offset, out)) return 400;
  const char *bench = req_param(m->r, "benchmark"), *be = req_param(m->r, "backend");
  bench = bench && *bench ? bench : NULL;
  be = be && *be ? be : NULL;
  jval *rows = q_rows(a, m->db, &err, LIST_SQL, "ttii", bench, be, (int64_t)limit, (int64_t)offset);
  if (!rows) return model_sql_error(m, err, out);
  jval *o = jobj(a);
  page_info(a, o, "", q_int(m->db, 0, COUNT_SQL, "tt", bench, be), limit, offset);
  jset(a, o, "series", rows);
  *out = o;
  return 200;
}

int model_series(mctx *m, const char *arg, jval **out) {
  arena *a = &m->r->a;
  const char *err = NULL;
  long long id;
  if (!parse_id(arg, &id)) {
    *out = model_error(a, "series id must be a positive integer");
    return 400;
  }
  long long limit = 500;
  const char *ls = req_param(m->r, "limit");
  if (ls && (!parse_id(ls, &limit) || limit > 100000)) {
    *out = model_error(a, "limit must be an integer in 1..100000");
    return 400;
  }
  jval *meta = q_row(a, m->db, &err, META_SQL, "i", (int64_t)id);
  if (!meta) {
    if (err) return model_sql_error(m, err, out);
    *out = model_error(a, "no such series");
    return 404;
  }
  jval *pts = q_rows(a, m->db, &err, POINTS_SQL, "ii", (int64_t)id, (int64_t)limit);
  if (!pts) return model_sql_error(m, err, out);
  jval *sib = q_rows(a, m->db, &err, SIBLINGS_SQL, "ttti", jget_str(meta, "benchmark", ""),
                     jget_str(meta, "params", ""), jget_str(meta, "metric", ""), (int64_t)id);
  if (!sib) return model_sql_error(m, err, out);
  jval *regs = m->has_regress ? q_rows(a, m->db, &err, REGS_SQL, "i", (int64_t)id) : jarr(a);
  if (!regs) return model_sql_error(m, err, out);
  jval *o = jobj(a);
  jset(a, o, "series", meta);
  jset(a, o, "points", pts);
  jset(a, o, "siblings", sib);
  jset(a, o, "regressions", regs);
  *out = o;
  return 200;
}
