/*
 * store.h — the SQLite results store (schema: ci/schema.sql, embedded at build time).
 *
 * Opening applies the pending `-- @migration N` sections of the schema (each in its own
 * transaction) and refuses a database whose user_version is newer than this binary
 * knows. Every connection runs with WAL, a busy timeout and foreign keys on. An imported
 * or uploaded run is written in ONE transaction (store_write_run): a writer killed at any
 * point leaves the database without that run, never half of it. `qgmm-bench run` writes
 * its run as it measures it instead (store_live.h).
 */
#ifndef QGMM_CI_STORE_H
#define QGMM_CI_STORE_H

#include <sqlite3.h>
#include <stdint.h>

#include "runrec.h"
#include "store_ro.h"

#define STORE_BUSY_TIMEOUT_MS 30000

/* The embedded schema text (generated from ci/schema.sql). */
extern const char qgmm_schema_sql[];

/* The newest migration number in the embedded schema. */
int store_latest_version(void);

/* Opens (creating if needed) and migrates to the latest version: for `run` and `import`
 * only. Returns 0, or -1 with a sentence in err (a read-only file, a file that is not a
 * qgmm store, a newer schema, a failed migration); such a file is left untouched. */
int store_open(const char *path, sqlite3 **out, char *err, size_t err_cap);
/* Same, migrating only up to `version` (tests build "older" databases with it). */
int store_open_version(const char *path, int version, sqlite3 **out, char *err, size_t err_cap);
/* Opens an existing store read-only (SQLITE_OPEN_READONLY through store_open_ro: nothing
 * created, installed or migrated; a read-only file or medium reads fine). Refuses a
 * missing path, a file that is not a qgmm store, and a schema older or newer than this
 * binary, each with a sentence in err. */
int store_open_readonly(const char *path, sqlite3 **out, char *err, size_t err_cap);
/* Opens an existing store of the current schema read-write without creating or
 * migrating anything: for commands that record findings (gate, changepoints). */
int store_open_existing(const char *path, sqlite3 **out, char *err, size_t err_cap);
void store_close(sqlite3 *db);

/* Opens an existing store read-write and applies its pending migrations, creating
 * nothing: for writers that are not where stores begin (qgmm-dash's ingest, triage and
 * token commands). Returns STORE_OK with *out, or with a sentence in err: STORE_MISSING (no
 * file), STORE_EMPTY (an SQLite file without a qgmm schema), STORE_FOREIGN, STORE_TOO_NEW,
 * STORE_ERROR (cannot open or write it, or a migration failed). */
store_state store_open_upgrade(const char *path, sqlite3 **out, char *err, size_t err_cap);

/* What store_write_run found under r->uuid (*already). */
enum { STORE_RUN_NEW = 0, STORE_RUN_SAME = 1, STORE_RUN_DIFFERENT = 2 };
/* store_write_run's return when the store stayed locked or the commit failed: nothing was
 * written and the same call may succeed later. */
#define STORE_WRITE_BUSY (-2)

/* Writes r (rr_derive is applied first) in one transaction. source: "local", "import"
 * or "upload". If r->uuid is already stored nothing changes and *already says whether
 * the stored run has the same content (store_run_digest) or not; *run_id is the stored
 * run's. Returns 0 (with *run_id), STORE_WRITE_BUSY, or -1 with err; on any non-zero
 * return nothing was written. */
int store_write_run(sqlite3 *db, run_record *r, const char *source, int *already, int64_t *run_id,
                    char *err, size_t err_cap);

/* The digest that decides "the same run" for a uuid already stored (docs/dashboard.md,
 * "Idempotent on uuid"): SHA-256 in lower-case hex of the run's identity fields and, per
 * series in series order, status, verdict and raw samples. Result order, env, clocks,
 * statistics and rates do not enter it. Returns 0, or -1 (out of memory; for the stored
 * run also: no run with that uuid, or a failed read). */
int store_run_digest(const run_record *r, char hex[65]);
int store_run_digest_db(sqlite3 *db, const char *uuid, char hex[65]);

/* Loads run `run_id` into r (rr_init'ed by the caller). */
int store_load_run(sqlite3 *db, int64_t run_id, run_record *r, char *err, size_t err_cap);

/* Resolves "latest", a run id, a uuid or a unique uuid prefix (>= 4 chars) to a run id.
 * Returns 0 or -1 with err. */
int store_resolve_run(sqlite3 *db, const char *spec, int64_t *run_id, char *err, size_t err_cap);

/* The series fingerprint of docs/run-format.md ("fnv1a64:<16 hex>"). */
void store_series_fingerprint(const char *benchmark, const char *params_json, const char *hostname,
                              const char *cpu, const char *device_name, const char *backend,
                              const char *metric, char out[32]);

/* FNV-1a 64 (chained; start with STORE_FNV_INIT). */
#define STORE_FNV_INIT 0xcbf29ce484222325ull
uint64_t store_fnv1a64(uint64_t h, const void *data, size_t n);

#endif
