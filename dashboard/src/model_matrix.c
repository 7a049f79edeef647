/* Cross-vendor matrix: rows are op x shape (benchmark + params), columns device x backend
 * (peers such as torch included), each cell the newest result of that series in the suite.
 * Ratios are reference time / cell time (2.0 = twice as fast as the reference). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "query.h"

/* Newest result of each series in the suite: a correlated lookup per series through the
 * (series_id, run_id) index, 6x faster than a window over every result on a nightly-sized
 * store (120 runs x 600 results: 77 ms vs 508 ms). */
static const char *CELLS_SQL =
    "WITH latest AS ("
    "  SELECT s.id AS sid,"
    "         (SELECT x.id FROM result x JOIN run r ON r.id = x.run_id"
    "           WHERE x.series_id = s.id AND r.suite = ?1"
    "           ORDER BY r.started_at DESC, r.id DESC LIMIT 1) AS xid"
    "  FROM series s WHERE s.metric = 'time')"
    " SELECT s.id AS series_id, s.benchmark, s.params, s.label, s.shape, s.role, s.backend,"
    "        s.device_id, d.name AS device, m.hostname, x.median_us, x.q1_us, x.q3_us, x.gbps,"
    "        x.tflops, x.status, x.verdict, x.pct_of_ceiling, r.uuid AS run, r.started_at"
    " FROM latest JOIN result x ON x.id = latest.xid JOIN run r ON r.id = x.run_id"
    " JOIN series s ON s.id = latest.sid JOIN device d ON d.id = s.device_id"
    " JOIN machine m ON m.id = d.machine_id"
    " ORDER BY s.role = 'case' DESC, s.role, s.benchmark, s.params,"
    "          m.hostname, d.name, s.backend = 'torch', s.backend";

static const char *SUITES_SQL =
    "SELECT suite, count(*) AS runs, max(started_at) AS latest FROM run GROUP BY suite"
    " ORDER BY runs DESC, latest DESC";

static jval *find_key(jval *arr, const char *key) {
  for (size_t i = 0; arr && i < arr->len; i++)
    if (strcmp(jget_str(arr->items[i], "key", ""), key) == 0) return arr->items[i];
  return NULL;
}

/* A cell counts for the geomean when it ran and did not fail numerics (ceilings and the
 * canary are not ops and never count). */
static int counts(const jval *cell) {
  return cell && strcmp(jget_str(cell, "status", ""), "ok") == 0 &&
         strcmp(jget_str(cell, "verdict", ""), "fail") != 0 && jget_num(cell, "median_us", 0) > 0;
}

static int col_cmp(const jval *x, const jval *y) {
  int c = strcmp(jget_str(x, "hostname", ""), jget_str(y, "hostname", ""));
  if (!c) c = strcmp(jget_str(x, "device", ""), jget_str(y, "device", ""));
  if (!c) {
    int tx = strcmp(jget_str(x, "backend", ""), "torch") == 0;
    int ty = strcmp(jget_str(y, "backend", ""), "torch") == 0;
    c = tx - ty;
  }
  if (!c) c = strcmp(jget_str(x, "backend", ""), jget_str(y, "backend", ""));
  return c;
}

int model_matrix(mctx *m, const char *arg, jval **out) {
  (void)arg;
  arena *a = &m->r->a;
  const char *err = NULL;
  jval *suites = q_rows(a, m->db, &err, SUITES_SQL, "");
  if (!suites) return model_sql_error(m, err, out);
  const char *suite = req_param(m->r, "suite");
  if (!suite || !*suite) suite = suites->len ? jget_str(suites->items[0], "suite", "") : "";
  jval *cells = q_rows(a, m->db, &err, CELLS_SQL, "t", suite);
  if (!cells) return model_sql_error(m, err, out);

  jval *cols = jarr(a), *rows = jarr(a);
  for (size_t i = 0; i < cells->len; i++) {
    jval *c = cells->items[i];
    char *ckey = arena_printf(a, "%lld:%s", (long long)jget_num(c, "device_id", 0),
                              jget_str(c, "backend", ""));
    char *rkey = arena_printf(a, "%s %s", jget_str(c, "benchmark", ""), jget_str(c, "params", ""));
    if (!ckey || !rkey) break;
    if (!find_key(cols, ckey)) {
      jval *col = jobj(a);
      jset_str(a, col, "key", ckey);
      jset_num(a, col, "device_id", jget_num(c, "device_id", 0));
      jset_str(a, col, "device", jget_str(c, "device", ""));
      jset_str(a, col, "hostname", jget_str(c, "hostname", ""));
      jset_str(a, col, "backend", jget_str(c, "backend", ""));
      jpush(a, cols, col);
    }
    /* Rows arrive sorted by benchmark+params, so a new row starts when the key changes. */
    jval *row = rows->len ? rows->items[rows->len - 1] : NULL;
    if (!row || strcmp(jget_str(row, "key", ""), rkey) != 0) {
      row = jobj(a);
      jset_str(a, row, "key", rkey);
      jset_str(a, row, "benchmark", jget_str(c, "benchmark", ""));
      jset_str(a, row, "params", jget_str(c, "params", ""));
      jset_str(a, row, "label", jget_str(c, "label", ""));
      jset_str(a, row, "shape", jget_str(c, "shape", ""));
      jset_str(a, row, "role", jget_str(c, "role", ""));
      jset(a, row, "cells", jobj(a));
      jpush(a, rows, row);
    }
    jval *cell = jobj(a);
    static const char *keep[] = {"series_id", "median_us", "q1_us",  "q3_us",          "gbps",
                                 "tflops",    "status",    "verdict", "pct_of_ceiling", "run",
                                 "started_at"};
    for (size_t k = 0; k < sizeof keep / sizeof *keep; k++) jset(a, cell, keep[k], json_get(c, keep[k]));
    jset(a, json_get(row, "cells"), ckey, cell);
  }

  /* Columns in a stable order: host, device, then backends with the torch peer last, so a
   * GPU's qgmm backends and its peer sit side by side whatever row came first. */
  for (size_t i = 1; i < cols->len; i++)
    for (size_t j = i; j > 0 && col_cmp(cols->items[j - 1], cols->items[j]) > 0; j--) {
      jval *t = cols->items[j];
      cols->items[j] = cols->items[j - 1];
      cols->items[j - 1] = t;
    }
  /* Reference column: ?ref=, else the first torch column, else the first column. */
  const char *ref = req_param(m->r, "ref");
  if (ref && *ref && !find_key(cols, ref)) {
    *out = model_error(a, "ref: no such column in this suite");
    return 400;
  }
  if (!ref || !*ref) {
    ref = NULL;
    for (size_t i = 0; i < cols->len && !ref; i++)
      if (strcmp(jget_str(cols->items[i], "backend", ""), "torch") == 0)
        ref = jget_str(cols->items[i], "key", NULL);
    if (!ref && cols->len) ref = jget_str(cols->items[0], "key", NULL);
  }

  for (size_t ci = 0; ci < cols->len; ci++) {
    jval *col = cols->items[ci];
    const char *ck = jget_str(col, "key", "");
    double logsum = 0;
    int n = 0;
    for (size_t ri = 0; ri < rows->len; ri++) {
      jval *row = rows->items[ri];
      jval *cellmap = json_get(row, "cells");
      jval *cell = json_get(cellmap, ck), *rc = ref ? json_get(cellmap, ref) : NULL;
      if (!cell) continue;
      if (counts(cell) && counts(rc)) {
        double ratio = jget_num(rc, "median_us", 0) / jget_num(cell, "median_us", 1);
        jset_num(a, cell, "ratio", ratio);
        if (strcmp(jget_str(row, "role", ""), "case") == 0) {
          logsum += log(ratio);
          n++;
        }
      } else {
        jset(a, cell, "ratio", jnull(a));
      }
    }
    jset(a, col, "geomean_ratio", n ? jnum(a, exp(logsum / n)) : jnull(a));
    jset_num(a, col, "geomean_rows", n);
  }

  jval *o = jobj(a);
  jset_str(a, o, "suite", suite);
  jset(a, o, "suites", suites);
  jset(a, o, "ref", ref ? jstr(a, ref) : jnull(a));
  jset_str(a, o, "ratio", "reference median / cell median (above 1 = faster than the reference)");
  jset(a, o, "columns", cols);
  jset(a, o, "rows", rows);
  *out = o;
  return 200;
}
