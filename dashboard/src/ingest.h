/* Writes into the store: POST /api/v1/runs (the runner's run document, docs/run-format.md)
 * and POST /api/v1/regressions/{id} (triage). Both need a bearer token of the right scope.
 * Reading, validating and storing a run is the store library's (ci/rundoc.h, ci/store.h),
 * the same calls `qgmm-bench import` makes. */
#ifndef QGMM_DASH_INGEST_H
#define QGMM_DASH_INGEST_H

#include "server.h"

void ingest_handle(req *r);
void triage_handle(req *r, const char *id);

#endif
