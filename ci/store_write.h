/*
 * store_write.h — the steps of writing a run, shared by store_write_run (a whole run in one
 * transaction: import, upload) and store_live.c (a run written while it is measured, one
 * transaction per result). Each step runs inside the caller's transaction and returns -1
 * with a sentence in w->err on failure.
 */
#ifndef QGMM_CI_STORE_WRITE_H
#define QGMM_CI_STORE_WRITE_H

#include <sqlite3.h>
#include <stdint.h>

#include "runrec.h"

typedef struct store_wctx {
    sqlite3 *db;
    char *err;
    size_t cap;
    /* The per-result statements, prepared once per transaction (a run of 150,000 results
     * would otherwise spend most of its time compiling SQL); store_w_end finalizes them. */
    sqlite3_stmt *series, *result, *sample, *step;
} store_wctx;

/* Releases what the steps kept; call once the transaction's steps are done. */
void store_w_end(store_wctx *w);

/* Inserts the run row (machine and revision upserted; *machine_id set) in `state`
 * ("complete" for a whole run; "running" for a live one, with heartbeat and pid). */
int64_t store_w_run(store_wctx *w, const run_record *r, const char *source, const char *state, int64_t *machine_id);
/* Inserts context `c` (index i, for the message) of run `run_id`; *device_id set. */
int64_t store_w_context(store_wctx *w, int64_t run_id, int64_t machine_id, const rr_context *c, size_t i,
                        int64_t *device_id);
/* Inserts result i of r (its series upserted) and its samples. */
int store_w_result(store_wctx *w, int64_t run_id, const run_record *r, size_t i, int64_t ctx_id, int64_t device_id);

#endif
