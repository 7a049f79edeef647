/*
 * rundoc.h — the one decision on run documents (docs/run-format.md): which documents may
 * enter a store. `qgmm-bench import` and `upload` and the dashboard's ingest
 * (POST /api/v1/runs) all call it, so a document one of them stores is never refused by
 * another, and a document one refuses is refused by all.
 *
 * Part of the store library qgmm_store (ci/shared.cmake), which qgmm-bench and qgmm-dash
 * both link.
 */
#ifndef QGMM_CI_RUNDOC_H
#define QGMM_CI_RUNDOC_H

#include <stddef.h>

#include "runrec.h"

#define RUN_FORMAT_NAME "qgmm-run"
#define RUN_FORMAT_VERSION 1

/* Limits of one document. RUN_DOC_MAX_BYTES is what `import` reads of a file and the
 * dashboard's default --max-body. */
#define RUN_DOC_MAX_BYTES (16u << 20)
#define RUN_DOC_MAX_CONTEXTS 256
#define RUN_DOC_MAX_RESULTS 200000
#define RUN_DOC_MAX_NAME 512       /* hostnames, device names, labels, shapes, hashes, subjects */
#define RUN_DOC_MAX_TEXT 65536     /* messages, describe lines, env/clocks values */
#define RUN_DOC_MAX_KEYS 256       /* members of params, env and clocks */

/* Parses and validates a run document into r (rr_init'ed by the caller). Returns 0, or -1
 * with the offending field's path in field (e.g. "results[3].samples_us[7]"; "" when the
 * problem is not one field, e.g. malformed JSON) and a sentence in err that starts with
 * that path. field may be NULL. Invalid UTF-8, duplicate keys, a BOM, \u0000, lone
 * surrogates and nesting deeper than 32 are malformed JSON. */
int run_from_json_field(const char *text, size_t len, run_record *r, char *field, size_t field_cap,
                        char *err, size_t err_cap);
int run_from_json(const char *text, size_t len, run_record *r, char *err, size_t err_cap);

/* The same decision without keeping the record: 0 when the document may be stored. */
int rundoc_check(const char *text, size_t len, char *field, size_t field_cap, char *err, size_t err_cap);

#endif
