/* Cross-vendor matrix: rows are op x shape (benchmark + params), columns device x backend
 * (peers such as torch included), each cell the newest result of that series in the suite.
 * Ratios are reference time / cell time (2.0 = twice as fast as the reference). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* One cell kept for the aggregates: every cell of the suite, whether shown or not. */
typedef struct {
  uint32_t row, col;  /* row number over all rows; column in order of first appearance */
  double median;      /* median_us when the cell counts (ran, not a numerics failure), else NAN */
  int is_case;        /* role "case": enters the geomean */
} agg_cell;

typedef struct {
  arena *a;
  long long limit, offset;
  jval *cols, *rows;      /* columns (order of first appearance), the page's rows */
  jval **colv;            /* = cols->items in order of first appearance (cols is sorted later) */
  size_t ncols;
  agg_cell *cells;
  size_t ncells, cap;
  long long nrows;        /* rows seen so far */
  char *prev_row;         /* benchmark + params of the current row */
  int oom;
} matrix_scan;

static jval *find_key(jval *arr, const char *key) {
  for (size_t i = 0; arr && i < arr->len; i++)
    if (strcmp(jget_str(arr->items[i], "key", ""), key) == 0) return arr->items[i];
  return NULL;
}

/* A cell counts for ratios and the geomean when it ran and did not fail numerics (ceilings
 * and the canary are listed but never enter a geomean: see is_case). */
static int counts_raw(sqlite3_stmt *st) {
  const char *status = (const char *)sqlite3_column_text(st, 15);
  const char *verdict = (const char *)sqlite3_column_text(st, 16);
  return status && !strcmp(status, "ok") && !(verdict && !strcmp(verdict, "fail")) &&
         sqlite3_column_type(st, 10) != SQLITE_NULL && sqlite3_column_double(st, 10) > 0;
}

/* Column of the cell (device_id, backend), added on first sight. Returns its index. */
static size_t column_of(matrix_scan *m, sqlite3_stmt *st, size_t hint) {
  long long dev = sqlite3_column_int64(st, 7);
  const char *be = (const char *)sqlite3_column_text(st, 6);
  be = be ? be : "";
  for (size_t k = 0; k < m->ncols; k++) {
    size_t i = (hint + k) % m->ncols;
    if ((long long)jget_num(m->colv[i], "device_id", 0) == dev && !strcmp(jget_str(m->colv[i], "backend", ""), be))
      return i;
  }
  jval *col = jobj(m->a);
  jset_str(m->a, col, "key", arena_printf(m->a, "%lld:%s", dev, be));
  jset_num(m->a, col, "device_id", (double)dev);
  jset_str(m->a, col, "device", (const char *)sqlite3_column_text(st, 8));
  jset_str(m->a, col, "hostname", (const char *)sqlite3_column_text(st, 9));
  jset_str(m->a, col, "backend", be);
  jpush(m->a, m->cols, col);
  jval **nv = realloc(m->colv, (m->ncols + 1) * sizeof *nv);
  if (!nv) {
    m->oom = 1;
    return 0;
  }
  m->colv = nv;
  m->colv[m->ncols] = col;
  return m->ncols++;
}

/* One cell of CELLS_SQL: always into the aggregates, into the answer only on the page. */
static int scan_cell(sqlite3_stmt *st, void *ud) {
  matrix_scan *m = ud;
  const char *bench = (const char *)sqlite3_column_text(st, 1), *params = (const char *)sqlite3_column_text(st, 2);
  size_t nb = strlen(bench ? bench : ""), np = strlen(params ? params : "");
  /* Rows arrive sorted by benchmark+params, so a new row starts when the key changes. */
  int new_row = !m->prev_row || strncmp(m->prev_row, bench ? bench : "", nb) || m->prev_row[nb] != ' ' ||
                strcmp(m->prev_row + nb + 1, params ? params : "");
  if (new_row) {
    free(m->prev_row);
    m->prev_row = malloc(nb + np + 2);
    if (!m->prev_row) return m->oom = 1;
    snprintf(m->prev_row, nb + np + 2, "%s %s", bench ? bench : "", params ? params : "");
    m->nrows++;
  }
  long long row = m->nrows - 1;
  size_t col = column_of(m, st, m->ncells ? m->cells[m->ncells - 1].col + 1 : 0);
  if (m->ncells == m->cap) {
    size_t nc = m->cap ? 2 * m->cap : 1024;
    agg_cell *n = realloc(m->cells, nc * sizeof *n);
    if (!n) return m->oom = 1;
    m->cells = n;
    m->cap = nc;
  }
  const char *role = (const char *)sqlite3_column_text(st, 5);
  m->cells[m->ncells++] = (agg_cell){(uint32_t)row, (uint32_t)col,
                                     counts_raw(st) ? sqlite3_column_double(st, 10) : NAN,
                                     role && !strcmp(role, "case")};
  if (m->oom || row < m->offset || row >= m->offset + m->limit) return m->oom;
  jval *c = q_row_object(m->a, st);
  jval *r = m->rows->len ? m->rows->items[m->rows->len - 1] : NULL;
  if (new_row || !r) {
    r = jobj(m->a);
    jset_str(m->a, r, "key", arena_strdup(m->a, m->prev_row));
    static const char *row_keys[] = {"benchmark", "params", "label", "shape", "role"};
    for (size_t k = 0; k < sizeof row_keys / sizeof *row_keys; k++) jset(m->a, r, row_keys[k], json_get(c, row_keys[k]));
    jset(m->a, r, "cells", jobj(m->a));
    jpush(m->a, m->rows, r);
  }
  jval *cell = jobj(m->a);
  static const char *keep[] = {"series_id", "median_us", "q1_us", "q3_us", "gbps", "tflops",
                               "status", "verdict", "pct_of_ceiling", "run", "started_at"};
  for (size_t k = 0; k < sizeof keep / sizeof *keep; k++) jset(m->a, cell, keep[k], json_get(c, keep[k]));
  jset(m->a, json_get(r, "cells"), jget_str(m->colv[col], "key", ""), cell);
  return 0;
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

static int col_qsort(const void *x, const void *y) {
  return col_cmp(*(const jval *const *)x, *(const jval *const *)y);
}

int model_matrix(mctx *m, const char *arg, jval **out) {
  (void)arg;
  arena *a = &m->r->a;
  const char *err = NULL;
  long long limit, offset;
  if (!page_args(m, 200, 2000, &limit, &offset, out)) return 400;
  jval *suites = q_rows(a, m->db, &err, SUITES_SQL, "");
  if (!suites) return model_sql_error(m, err, out);
  const char *suite = req_param(m->r, "suite");
  if (!suite || !*suite) suite = suites->len ? jget_str(suites->items[0], "suite", "") : "";

  matrix_scan s = {a, limit, offset, jarr(a), jarr(a), NULL, 0, NULL, 0, 0, 0, NULL, 0};
  int rc = q_each(a, m->db, &err, CELLS_SQL, scan_cell, &s, "t", suite);
  free(s.prev_row);
  if (rc || s.oom) {
    free(s.colv);
    free(s.cells);
    return model_sql_error(m, err ? err : "out of memory", out);
  }
  jval *cols = s.cols, *rows = s.rows;

  /* Columns in a stable order: host, device, then backends with the torch peer last, so a
   * GPU's qgmm backends and its peer sit side by side whatever row came first. */
  qsort(cols->items, cols->len, sizeof *cols->items, col_qsort);
  /* Reference column: ?ref=, else the first torch column, else the first column. */
  const char *ref = req_param(m->r, "ref");
  if (ref && *ref && !find_key(cols, ref)) {
    free(s.colv);
    free(s.cells);
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
  size_t refcol = 0;
  for (size_t i = 0; i < s.ncols; i++)
    if (ref && !strcmp(jget_str(s.colv[i], "key", ""), ref)) refcol = i;

  /* Ratios and geomeans over every row, not only the page's. */
  double *refmed = malloc(((size_t)s.nrows + 1) * sizeof *refmed);
  double *logsum = calloc(s.ncols + 1, sizeof *logsum);
  int *nlog = calloc(s.ncols + 1, sizeof *nlog);
  if (!refmed || !logsum || !nlog) {
    free(refmed), free(logsum), free(nlog), free(s.colv), free(s.cells);
    return model_sql_error(m, "out of memory", out);
  }
  for (long long i = 0; i < s.nrows; i++) refmed[i] = NAN;
  for (size_t i = 0; ref && i < s.ncells; i++)
    if (s.cells[i].col == refcol) refmed[s.cells[i].row] = s.cells[i].median;
  for (size_t i = 0; i < s.ncells; i++) {
    const agg_cell *c = &s.cells[i];
    if (c->is_case && isfinite(c->median) && isfinite(refmed[c->row])) {
      logsum[c->col] += log(refmed[c->row] / c->median);
      nlog[c->col]++;
    }
  }
  for (size_t i = 0; i < s.ncols; i++) {
    jset(a, s.colv[i], "geomean_ratio", nlog[i] ? jnum(a, exp(logsum[i] / nlog[i])) : jnull(a));
    jset_num(a, s.colv[i], "geomean_rows", nlog[i]);
  }
  for (size_t ri = 0; ri < rows->len; ri++) {
    double rm = refmed[offset + (long long)ri];
    jval *cellmap = json_get(rows->items[ri], "cells");
    for (size_t k = 0; cellmap && k < cellmap->len; k++) {
      jval *cell = cellmap->items[k];
      int ok = !strcmp(jget_str(cell, "status", ""), "ok") && strcmp(jget_str(cell, "verdict", ""), "fail") &&
               jget_num(cell, "median_us", 0) > 0;
      jset(a, cell, "ratio", ok && isfinite(rm) ? jnum(a, rm / jget_num(cell, "median_us", 1)) : jnull(a));
    }
  }
  free(refmed), free(logsum), free(nlog), free(s.colv), free(s.cells);

  jval *o = jobj(a);
  jset_str(a, o, "suite", suite);
  jset(a, o, "suites", suites);
  jset(a, o, "ref", ref ? jstr(a, ref) : jnull(a));
  jset_str(a, o, "ratio", "reference median / cell median (above 1 = faster than the reference)");
  jset(a, o, "columns", cols);
  page_info(a, o, "", s.nrows, limit, offset);
  jset(a, o, "rows", rows);
  *out = o;
  return 200;
}
