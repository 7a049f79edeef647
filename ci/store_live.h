/*
 * store_live.h — a run written while it is measured (docs/runner.md, "Durable runs").
 *
 * store_live_begin inserts the run row in state 'running'; store_live_result commits one
 * result (and its samples) in its own short transaction and refreshes the heartbeat; a
 * thread refreshes the heartbeat every STORE_HEARTBEAT_S seconds in between, so a case that
 * takes minutes does not look dead; store_live_close sets 'complete' or 'interrupted'. A
 * process killed outright leaves 'running' with a heartbeat that stops: the run_status view
 * of ci/schema.sql (the one place that says how old is stale) shows it 'interrupted'.
 * store_live_attach takes such a run over for `run --resume`.
 */
#ifndef QGMM_CI_STORE_LIVE_H
#define QGMM_CI_STORE_LIVE_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "runrec.h"

#define STORE_HEARTBEAT_S 5

typedef struct store_live {
    sqlite3 *db;
    char path[1024];
    int64_t run_id, machine_id;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int thread_on, stop;
} store_live;

/* Inserts r's run row ('running', heartbeat now, this pid, options = a JSON object) and
 * starts the heartbeat. Returns 0 or -1 with err. */
int store_live_begin(store_live *L, sqlite3 *db, const char *path, const run_record *r, const char *options_json,
                     int64_t results_expected, char *err, size_t cap);
/* Takes over run `run_id` for --resume: refused (-1, a sentence in err) when it is complete,
 * or still running (a fresh heartbeat from a live process, or from another machine). */
int store_live_attach(store_live *L, sqlite3 *db, const char *path, int64_t run_id, const char *hostname,
                      char *err, size_t cap);
/* The stored context of r->contexts[ci] (same backend and device), inserted when absent. */
int store_live_context(store_live *L, const run_record *r, int ci, int64_t *ctx_id, int64_t *device_id,
                       char *err, size_t cap);
/* Commits r->results[i] in its own transaction (retried while the store is busy). */
int store_live_result(store_live *L, const run_record *r, size_t i, int64_t ctx_id, int64_t device_id,
                      char *err, size_t cap);
/* Stops the heartbeat and sets the final state ("complete" or "interrupted"), finished_at and env. */
int store_live_close(store_live *L, const char *state, int64_t finished_at, const char *env_json, char *err, size_t cap);

/* The state every reader shows (run_status: 'running', 'complete' or 'interrupted'), the
 * results stored and expected (-1 when unknown). Returns 0 or -1 with err. */
int store_run_progress(sqlite3 *db, int64_t run_id, char state[16], int64_t *stored, int64_t *expected,
                       char *err, size_t cap);

#endif
