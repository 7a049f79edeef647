/*
 * store_json.h — the JSON run format (docs/run-format.md) <-> run_record, and the one
 * call an ingest endpoint needs (qgmm_store_import_json). Used by `qgmm-bench
 * export/import/upload` and meant for the dashboard's POST handler, so both sides accept
 * and refuse exactly the same documents.
 */
#ifndef QGMM_CI_STORE_JSON_H
#define QGMM_CI_STORE_JSON_H

#include <sqlite3.h>
#include <stddef.h>

#include "json.h"
#include "runrec.h"

#define RUN_FORMAT_NAME "qgmm-run"
#define RUN_FORMAT_VERSION 1

/* Parses a run document into r (rr_init'ed by the caller). Returns 0, or -1 with a
 * message naming the field ("results[3].samples_us[0]: expected a number, got a string"). */
int run_from_json(const char *text, size_t len, run_record *r, char *err, size_t err_cap);

/* Appends the run document to out (pretty = 1: one result per line, for people). */
void run_to_json(const run_record *r, json_buf *out, int pretty);

/* Parse + store in one transaction, idempotent on uuid. source: "import" or "upload".
 * Returns 0 (stored; *already = 1 when the uuid was present and nothing changed), or -1
 * with err; on -1 the database is unchanged. uuid_out (>= 40 bytes, may be NULL)
 * receives the run's uuid. */
int qgmm_store_import_json(sqlite3 *db, const char *text, size_t len, const char *source,
                           int *already, long long *run_id, char *uuid_out, char *err, size_t err_cap);

#endif
