/* Writes into the store: POST /api/v1/runs (the runner's run document, docs/run-format.md)
 * and POST /api/v1/regressions/{id} (triage). Both need a bearer token of the right scope. */
#ifndef QGMM_DASH_INGEST_H
#define QGMM_DASH_INGEST_H
#include <sqlite3.h>
#include <stdint.h>

#include "server.h"

typedef struct { int set; double v; } opt_num;

typedef struct {
  const char *backend, *dev_name, *dev_kind, *dev_arch;
  opt_num dev_mem;
  const char *describe, *driver, *runtime, *clocks, *code_hash;
} run_context;

typedef struct {
  int ctx;
  const char *benchmark, *params, *label, *shape, *role, *metric, *unit;
  const char *status, *verdict, *message, *ceiling, *threshold, *output_hash, *code_hash;
  int64_t warmup;
  double *samples;
  size_t n_samples;
  /* recomputed from samples (unset when there are none) */
  opt_num min, q1, median, q3, max, mean, stddev;
  opt_num bytes, flops, gbps, tflops, pct;
  opt_num mismatched, checked, max_abs_err, rel_err, sqnr;
} run_result;

typedef struct {
  const char *uuid, *suite, *reason, *runner, *runner_version, *env;
  int64_t started_at, finished_at;
  const char *hostname, *cpu, *os;
  opt_num cores, memory;
  const char *sha, *subject, *branch;
  opt_num commit_time;
  int dirty;
  run_context *ctx;
  size_t n_ctx;
  run_result *res;
  size_t n_res;
} run_doc;

/* Validates a parsed run document field by field. Returns 0, or 1 with the offending
 * field's path (e.g. "results[3].samples_us[7]") and the problem. */
int run_validate(arena *a, const jval *doc, run_doc *out, const char **field, const char **msg);

/* Stores a validated run in one transaction. Returns the HTTP status: 201 stored,
 * 200 already present with identical content, 409 same uuid with different content,
 * 500/503 on store errors (msg says which). */
int run_store(sqlite3 *db, const run_doc *d, char *msg, size_t msgn);

/* Content digest used for idempotency, from a document or from the stored run. */
void run_digest_doc(const run_doc *d, char hex[65]);
int run_digest_db(sqlite3 *db, const char *uuid, char hex[65]);

void ingest_handle(req *r);
void triage_handle(req *r, const char *id);

#endif
