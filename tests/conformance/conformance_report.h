/*
 * conformance_report.h — how qgmm-conformance prints: a table (one row per case, a
 * closing "N passed, N failed, N skipped" line) or one JSON document (--json).
 */
#ifndef QGMM_CONFORMANCE_REPORT_H
#define QGMM_CONFORMANCE_REPORT_H

#include "qgmm_cases.h"

typedef struct report {
    int json;
    int passed, failed, skipped, unsupported;
    int first_json_item;
    double total_ms;
} report;

void report_init(report *r, int json, const char *suite);
/* has_ref: a cpu reference exists; self_ref: the backend under test is cpu itself. */
void report_backend_begin(report *r, const char *backend, const char *describe, int has_ref,
                          int self_ref);
void report_case(report *r, const qgmm_case *c, const char *backend, const qgmm_case_result *res);
void report_unavailable(report *r, const char *backend, const char *status, const char *reason);
void report_backend_end(report *r, const char *backend);
void report_finish(report *r);

#endif
