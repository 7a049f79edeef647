/* Regressions flagged by `qgmm-bench gate` and `qgmm-bench changepoints`, with their triage
 * state (schema 3: detected, acknowledged, fixed, ignored). */
#include <string.h>

#include "model.h"
#include "query.h"

static const char *COLS =
    "SELECT g.id, g.kind, g.severity, g.status, g.note, g.change, g.threshold, g.noise,"
    "       g.p_value, g.baseline_runs, g.baseline_median_us, g.current_median_us, g.reason,"
    "       g.detected_at, g.updated_at, s.id AS series_id, s.benchmark, s.label, s.shape,"
    "       s.backend, d.name AS device, m.hostname, r.uuid AS run,"
    "       lg.sha AS last_good_revision, fb.sha AS first_bad_revision, g.after_runs, g.driver"
    " FROM regression g JOIN series s ON s.id = g.series_id JOIN device d ON d.id = s.device_id"
    " JOIN machine m ON m.id = d.machine_id JOIN run r ON r.id = g.run_id"
    " LEFT JOIN revision lg ON lg.id = g.last_good_revision_id"
    " LEFT JOIN revision fb ON fb.id = g.first_bad_revision_id";

static const char *LIST_SQL_TAIL =
    " WHERE (?1 IS NULL OR g.status = ?1) AND (?2 IS NULL OR g.kind = ?2)"
    " ORDER BY g.status IN ('detected', 'acknowledged') DESC, g.detected_at DESC, g.id DESC LIMIT ?3";

static const char *ONE_SQL_TAIL = " WHERE g.id = ?1";

const char *const TRIAGE_STATES[] = {"detected", "acknowledged", "fixed", "ignored", NULL};

static int known_state(const char *s) {
  for (int i = 0; TRIAGE_STATES[i]; i++)
    if (strcmp(s, TRIAGE_STATES[i]) == 0) return 1;
  return 0;
}

int model_regressions(mctx *m, const char *arg, jval **out) {
  (void)arg;
  arena *a = &m->r->a;
  const char *err = NULL;
  const char *status = req_param(m->r, "status"), *kind = req_param(m->r, "kind");
  if (status && *status && !known_state(status)) {
    *out = model_error(a, "status: expected detected, acknowledged, fixed or ignored");
    return 400;
  }
  if (kind && *kind && strcmp(kind, "perf") && strcmp(kind, "numerics") && strcmp(kind, "changepoint")) {
    *out = model_error(a, "kind: expected perf, numerics or changepoint");
    return 400;
  }
  long long limit = 500;
  const char *ls = req_param(m->r, "limit");
  if (ls && (!parse_id(ls, &limit) || limit > 5000)) {
    *out = model_error(a, "limit must be an integer in 1..5000");
    return 400;
  }
  jval *o = jobj(a);
  jval *states = jarr(a);
  for (int i = 0; TRIAGE_STATES[i]; i++) jpush(a, states, jstr(a, TRIAGE_STATES[i]));
  jset(a, o, "states", states);
  if (!m->has_regress) {
    jset(a, o, "regressions", jarr(a));
    *out = o;
    return 200;
  }
  char *sql = arena_printf(a, "%s%s", COLS, LIST_SQL_TAIL); /* constant SQL, no values */
  jval *rows = q_rows(a, m->db, &err, sql, "tti", status && *status ? status : NULL,
                      kind && *kind ? kind : NULL, (int64_t)limit);
  if (!rows) return model_sql_error(m, err, out);
  jval *counts = q_rows(a, m->db, &err,
                        "SELECT status, count(*) AS n FROM regression GROUP BY status", "");
  if (!counts) return model_sql_error(m, err, out);
  jset(a, o, "counts", counts);
  jset(a, o, "regressions", rows);
  *out = o;
  return 200;
}

int model_regression(mctx *m, const char *arg, jval **out) {
  arena *a = &m->r->a;
  const char *err = NULL;
  long long id;
  if (!parse_id(arg, &id)) {
    *out = model_error(a, "regression id must be a positive integer");
    return 400;
  }
  if (!m->has_regress) {
    *out = model_error(a, "no such regression");
    return 404;
  }
  char *sql = arena_printf(a, "%s%s", COLS, ONE_SQL_TAIL);
  jval *row = q_row(a, m->db, &err, sql, "i", (int64_t)id);
  if (!row) {
    if (err) return model_sql_error(m, err, out);
    *out = model_error(a, "no such regression");
    return 404;
  }
  *out = row;
  return 200;
}
