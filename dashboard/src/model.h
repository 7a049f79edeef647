/* The views' data. Each model function reads the store (read-only connection) and builds
 * the JSON answer of its /api/v1 route; the HTML page of the same view renders exactly
 * that object, so a page never shows a number the API does not. */
#ifndef QGMM_DASH_MODEL_H
#define QGMM_DASH_MODEL_H
#include <sqlite3.h>

#include "dom.h"
#include "server.h"

typedef struct {
  req *r;
  sqlite3 *db;
  int schema;        /* PRAGMA user_version of the store */
  int has_regress;   /* the regression table exists (schema >= 2) */
} mctx;

/* Each returns an HTTP status; on success *out is the model, otherwise *out is
 * {"error": "..."} and the status says what went wrong (400 bad parameter, 404 unknown id). */
typedef int (*model_fn)(mctx *m, const char *arg, jval **out);

int model_overview(mctx *m, const char *arg, jval **out);
int model_matrix(mctx *m, const char *arg, jval **out);
int model_series_list(mctx *m, const char *arg, jval **out);
int model_series(mctx *m, const char *arg, jval **out);        /* arg: series id */
int model_runs(mctx *m, const char *arg, jval **out);
int model_run(mctx *m, const char *arg, jval **out);           /* arg: run uuid */
int model_compare(mctx *m, const char *arg, jval **out);
int model_regressions(mctx *m, const char *arg, jval **out);
int model_regression(mctx *m, const char *arg, jval **out);    /* arg: regression id */

/* Helpers shared by the models. */
jval *model_error(arena *a, const char *msg);
int model_sql_error(mctx *m, const char *err, jval **out);
/* Strict parsers for path/query values: 1 on success. */
int parse_id(const char *s, long long *out);
/* A paginated list's ?limit= (1..max, default def) and ?offset= (>= 0). Returns 1, or 0
 * with *out set to the 400 answer. page_info adds PREFIXtotal, PREFIXlimit, PREFIXoffset. */
int page_args(mctx *m, long long def, long long max, long long *limit, long long *offset, jval **out);
void page_info(arena *a, jval *o, const char *prefix, long long total, long long limit, long long offset);
int valid_uuid(const char *s);
/* Gate verdict of a set of counts: "fail" (numerics failure, error or open failing
 * regression), "warn" (open warning regression) or "pass". */
const char *gate_verdict(double fail, double error, double reg_fail, double reg_warn);

#endif
