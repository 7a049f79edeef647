/* Overview: the newest run of every machine x device x backend with its gate verdict,
 * the newest regressions, and one trend line per op family. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "query.h"

#define SPARK_REVISIONS 30

/* Counts filter on run_id first: (run_id, series_id) is the result table's unique index, so
 * each count reads one run's results rather than the whole table. */
static const char *LATEST_SQL =
    "WITH ctx AS ("
    "  SELECT c.id AS context_id, c.backend, c.device_id, c.driver, c.run_id,"
    "         ROW_NUMBER() OVER (PARTITION BY c.device_id, c.backend"
    "                            ORDER BY r.started_at DESC, r.id DESC) AS rn"
    "  FROM context c JOIN run r ON r.id = c.run_id)"
    " SELECT m.hostname, d.name AS device, d.kind AS device_kind, d.id AS device_id,"
    "        ctx.backend, ctx.driver, r.uuid AS run, r.suite, r.started_at, rv.sha AS revision,"
    "        r.dirty,"
    "        (SELECT count(*) FROM result x WHERE x.run_id = ctx.run_id AND x.context_id = ctx.context_id"
    "           AND x.verdict = 'pass') AS pass,"
    "        (SELECT count(*) FROM result x WHERE x.run_id = ctx.run_id AND x.context_id = ctx.context_id"
    "           AND x.verdict = 'fail') AS fail,"
    "        (SELECT count(*) FROM result x WHERE x.run_id = ctx.run_id AND x.context_id = ctx.context_id"
    "           AND x.verdict = 'unchecked' AND x.status = 'ok') AS unchecked,"
    "        (SELECT count(*) FROM result x WHERE x.run_id = ctx.run_id AND x.context_id = ctx.context_id"
    "           AND x.status = 'error') AS error,"
    "        (SELECT count(*) FROM result x WHERE x.run_id = ctx.run_id AND x.context_id = ctx.context_id"
    "           AND x.status = 'unsupported') AS unsupported,"
    "        (SELECT s.state FROM run_status s WHERE s.run_id = r.id) AS state"
    " FROM ctx JOIN run r ON r.id = ctx.run_id JOIN machine m ON m.id = r.machine_id"
    " JOIN device d ON d.id = ctx.device_id JOIN revision rv ON rv.id = r.revision_id"
    " WHERE ctx.rn = 1 ORDER BY m.hostname, d.name, ctx.backend = 'torch', ctx.backend";

/* Untriaged or acknowledged regressions of one run on one device x backend, by severity. */
static const char *REG_COUNT_SQL =
    "SELECT count(*) FROM regression g JOIN series s ON s.id = g.series_id"
    " JOIN run r ON r.id = g.run_id"
    " WHERE r.uuid = ?1 AND s.device_id = ?2 AND s.backend = ?3 AND g.severity = ?4"
    "   AND g.status IN ('detected', 'acknowledged') AND g.kind <> 'changepoint'";

static const char *REGRESSIONS_SQL =
    "SELECT g.id, g.kind, g.severity, g.status, g.change, g.reason, g.detected_at,"
    "       s.id AS series_id, s.benchmark, s.label, s.shape, s.backend, d.name AS device,"
    "       m.hostname, r.uuid AS run"
    " FROM regression g JOIN series s ON s.id = g.series_id JOIN device d ON d.id = s.device_id"
    " JOIN machine m ON m.id = d.machine_id JOIN run r ON r.id = g.run_id"
    " WHERE g.status IN ('detected', 'acknowledged')"
    " ORDER BY g.detected_at DESC, g.id DESC LIMIT 8";

/* One point per revision (the x axis people reason in), over the newest ?1 revisions. */
static const char *FAMILY_SQL =
    "WITH revs AS (SELECT revision_id, min(started_at) AS t FROM run GROUP BY revision_id"
    "              ORDER BY max(started_at) DESC LIMIT ?1)"
    " SELECT s.benchmark, x.series_id, r.revision_id, revs.t AS started_at, x.median_us"
    " FROM result x JOIN series s ON s.id = x.series_id JOIN run r ON r.id = x.run_id"
    " JOIN revs ON revs.revision_id = r.revision_id"
    " WHERE x.status = 'ok' AND x.median_us > 0 AND s.role = 'case'";

typedef struct {
  const char *family;
  long long series, run, t;
  double med, base;
} frow;

static int by_series(const void *a, const void *b) {
  const frow *x = a, *y = b;
  if (x->series != y->series) return x->series < y->series ? -1 : 1;
  return x->med < y->med ? -1 : x->med > y->med;
}
static int by_family_time(const void *a, const void *b) {
  const frow *x = a, *y = b;
  int c = strcmp(x->family, y->family);
  if (c) return c;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return x->run < y->run ? -1 : x->run > y->run;
}

/* Per family and revision (frow.run holds the revision id): geometric mean over the family's series of median / (the series'
 * median over the window). 1.0 = usual speed, 1.1 = 10 % slower; comparable across
 * devices because every series is normalised by itself. */
static jval *families(mctx *m, const char **err) {
  arena *a = &m->r->a;
  jval *rows = q_rows(a, m->db, err, FAMILY_SQL, "i", (int64_t)SPARK_REVISIONS);
  if (!rows) return NULL;
  size_t n = rows->len;
  frow *f = calloc(n ? n : 1, sizeof *f);
  if (!f) {
    *err = "out of memory";
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    jval *o = rows->items[i];
    f[i].family = jget_str(o, "benchmark", "");
    f[i].series = (long long)jget_num(o, "series_id", 0);
    f[i].run = (long long)jget_num(o, "revision_id", 0);
    f[i].t = (long long)jget_num(o, "started_at", 0);
    f[i].med = jget_num(o, "median_us", NAN);
  }
  qsort(f, n, sizeof *f, by_series);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && f[j].series == f[i].series) j++;
    size_t k = j - i;
    double base = k % 2 ? f[i + k / 2].med : 0.5 * (f[i + k / 2 - 1].med + f[i + k / 2].med);
    for (size_t q = i; q < j; q++) f[q].base = base;
    i = j;
  }
  qsort(f, n, sizeof *f, by_family_time);
  jval *out = jarr(a);
  for (size_t i = 0; i < n;) {
    jval *fam = jobj(a);
    jval *pts = jarr(a);
    jset_str(a, fam, "benchmark", f[i].family);
    size_t j = i;
    long long nseries = 0;
    while (j < n && strcmp(f[j].family, f[i].family) == 0) {
      size_t k = j;
      double logsum = 0;
      while (k < n && strcmp(f[k].family, f[i].family) == 0 && f[k].run == f[j].run) {
        logsum += log(f[k].med / f[k].base);
        k++;
      }
      jval *p = jobj(a);
      jset_num(a, p, "revision_id", (double)f[j].run);
      jset_num(a, p, "started_at", (double)f[j].t);
      jset_num(a, p, "relative_time", exp(logsum / (double)(k - j)));
      jset_num(a, p, "n_series", (double)(k - j));
      if ((long long)(k - j) > nseries) nseries = (long long)(k - j);
      jpush(a, pts, p);
      j = k;
    }
    jset_num(a, fam, "n_series", (double)nseries);
    jset(a, fam, "points", pts);
    jpush(a, out, fam);
    i = j;
  }
  free(f);
  return out;
}

int model_overview(mctx *m, const char *arg, jval **out) {
  (void)arg;
  arena *a = &m->r->a;
  const char *err = NULL;
  jval *o = jobj(a);
  jval *db = jobj(a);
  jset_str(a, db, "path", m->r->cfg->db_path);
  jset_num(a, db, "schema_version", m->schema);
  jset_num(a, db, "runs", (double)q_int(m->db, 0, "SELECT count(*) FROM run", ""));
  jset_num(a, db, "machines", (double)q_int(m->db, 0, "SELECT count(*) FROM machine", ""));
  jset_num(a, db, "series", (double)q_int(m->db, 0, "SELECT count(*) FROM series", ""));
  jset_num(a, db, "results", (double)q_int(m->db, 0, "SELECT count(*) FROM result", ""));
  int64_t last = q_int(m->db, -1, "SELECT max(started_at) FROM run", "");
  jset(a, db, "latest_run_at", last >= 0 ? jnum(a, (double)last) : jnull(a));
  jset(a, o, "store", db);

  jval *latest = q_rows(a, m->db, &err, LATEST_SQL, "");
  if (!latest) return model_sql_error(m, err, out);
  for (size_t i = 0; i < latest->len; i++) {
    jval *row = latest->items[i];
    double rf = 0, rw = 0;
    if (m->has_regress) {
      const char *uuid = jget_str(row, "run", "");
      int64_t dev = (int64_t)jget_num(row, "device_id", 0);
      const char *be = jget_str(row, "backend", "");
      rf = (double)q_int(m->db, 0, REG_COUNT_SQL, "titt", uuid, dev, be, "fail");
      rw = (double)q_int(m->db, 0, REG_COUNT_SQL, "titt", uuid, dev, be, "warn");
    }
    jset_num(a, row, "regressions_fail", rf);
    jset_num(a, row, "regressions_warn", rw);
    /* a run still measuring or stopped before its end is not passed (qgmm-bench gate agrees) */
    int complete = strcmp(jget_str(row, "state", "complete"), "complete") == 0;
    jset_str(a, row, "gate",
             complete ? gate_verdict(jget_num(row, "fail", 0), jget_num(row, "error", 0), rf, rw) : "incomplete");
  }
  jset(a, o, "latest", latest);

  jval *regs = m->has_regress ? q_rows(a, m->db, &err, REGRESSIONS_SQL, "") : jarr(a);
  if (!regs) return model_sql_error(m, err, out);
  jset(a, o, "regressions", regs);
  jval *fam = families(m, &err);
  if (!fam) return model_sql_error(m, err, out);
  jset(a, o, "families", fam);
  *out = o;
  return 200;
}
