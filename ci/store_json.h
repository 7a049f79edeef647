/*
 * store_json.h — the JSON run format (docs/run-format.md) <-> run_record, and the one
 * call an import needs (qgmm_store_import_json). Reading and validating is rundoc.h's
 * run_from_json, the validator the dashboard's ingest calls too.
 */
#ifndef QGMM_CI_STORE_JSON_H
#define QGMM_CI_STORE_JSON_H

#include <sqlite3.h>
#include <stddef.h>

#include "json.h"
#include "runrec.h"

#include "rundoc.h"   /* RUN_FORMAT_*, run_from_json: the validator */

/* Appends the run document to out (pretty = 1: one result per line, for people). */
void run_to_json(const run_record *r, json_buf *out, int pretty);

/* Parse + store in one transaction, idempotent on uuid. source: "import" or "upload".
 * Returns 0 (stored; when the uuid was present nothing changed and *already says whether
 * the stored run is the same, as store_write_run), or non-zero with err; then the
 * database is unchanged. uuid_out (>= 40 bytes, may be NULL)
 * receives the run's uuid. */
int qgmm_store_import_json(sqlite3 *db, const char *text, size_t len, const char *source,
                           int *already, long long *run_id, char *uuid_out, char *err, size_t err_cap);

#endif
