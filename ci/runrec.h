/*
 * runrec.h — one run in memory: what `run` measures, what `import` parses and what
 * `export` writes. Field names follow docs/run-format.md one to one. The store writes
 * an imported run_record in a single transaction (store_write_run), and a measured one
 * result by result (store_live.h).
 */
#ifndef QGMM_CI_RUNREC_H
#define QGMM_CI_RUNREC_H

#include <stddef.h>
#include <stdint.h>

#define RR_UNSET_I (INT64_MIN)   /* optional integers not given */

typedef struct rr_context {
    char *backend;
    char *device_name, *device_kind, *device_arch;
    int64_t device_memory_bytes;   /* RR_UNSET_I when unknown */
    char *describe, *driver, *runtime;
    char *clocks_json;             /* canonical-ish compact JSON object */
    char *code_hash;
} rr_context;

/* One step of a composite case (its profiled calls): e.g. phase "dgrad", step "quantize_mxfp8 w". */
typedef struct rr_step {
    char *phase, *step;
    double median_us;
    int64_t n;                     /* profiled executions */
} rr_step;

typedef struct rr_result {
    int context;                   /* index into run_record.contexts */
    char *benchmark;
    char *params_json;             /* canonical params (json_canonical_params) */
    char *label, *shape, *role, *metric, *unit;
    char *status, *verdict, *message;
    int64_t warmup;
    double *samples_us;
    size_t n_samples;
    int64_t bytes, flops;          /* RR_UNSET_I when not given */
    char *ceiling;
    /* numerics; NAN / RR_UNSET_I when absent */
    int64_t mismatched_bytes, checked_bytes;
    double max_abs_err, rel_err, sqnr_db;
    char *threshold;
    char *output_hash, *code_hash;
    rr_step *steps;                /* composite cases: per-step times (n_steps 0 otherwise) */
    size_t n_steps;
    /* derived (recomputed by rr_derive) */
    double gbps, tflops, pct_of_ceiling;
} rr_result;

typedef struct run_record {
    char uuid[40];
    char *suite, *reason, *runner, *runner_version;
    int64_t started_at, finished_at;   /* unix seconds */
    char *env_json;
    /* machine */
    char *hostname, *cpu, *os;
    int64_t cores, memory_bytes;
    /* revision */
    char *sha, *subject, *branch;
    int64_t commit_time;               /* RR_UNSET_I when unknown */
    int dirty;
    rr_context *contexts;
    size_t n_contexts, cap_contexts;
    rr_result *results;
    size_t n_results, cap_results;
} run_record;

/* Empty record: every string "", optional numbers unset. */
void rr_init(run_record *r);
void rr_free(run_record *r);
/* Appends a zeroed context/result (strings "", numbers unset) and returns it (NULL on OOM). */
rr_context *rr_add_context(run_record *r);
rr_result *rr_add_result(run_record *r);
/* Appends a step to x (strings copied); NULL when out of memory. */
rr_step *rr_add_step(rr_result *x, const char *phase, const char *step, double median_us, int64_t n);
/* strdup that never returns NULL for a NULL input ("" instead); replaces *dst. */
void rr_set(char **dst, const char *src);
/* The longest name-like string of the run format (docs/run-format.md): the dashboard rejects
 * a run holding a longer one. */
#define RR_MAX_NAME 512
/* rr_set of at most max bytes of src, cut at a UTF-8 character boundary (for text the runner
 * takes from elsewhere, such as a commit subject, which has no length limit of its own). */
void rr_set_clipped(char **dst, const char *src, size_t max);
/* Recomputes every result's rates and % of ceiling from samples, bytes, flops and the
 * ceiling results of the same context (docs/run-format.md). */
void rr_derive(run_record *r);
/* The same for result i alone, once the ceilings of its context are in r (a live run commits
 * each result as it is measured; ceilings come first). */
void rr_derive_one(run_record *r, size_t i);
/* Removes the last context added (a resumed run found it already stored). */
void rr_drop_last_context(run_record *r);
/* Series identity within a run (docs/run-format.md): orders results i and k by benchmark,
 * canonical params, device, backend, metric; 0 when they are of the same series. */
int rr_cmp_series(const run_record *r, size_t i, size_t k);
/* The result indices in series order (ties by index): malloc'ed, NULL when out of memory. */
size_t *rr_series_order(const run_record *r);
/* Median of a result's samples (NAN when none). */
double rr_median(const rr_result *res);

/* UTC "YYYY-MM-DDTHH:MM:SSZ" <-> unix seconds. parse returns -1 on a malformed string. */
void rr_format_time(int64_t t, char out[32]);
int rr_parse_time(const char *s, int64_t *out);
/* A fresh random RFC 4122 v4 uuid (from /dev/urandom). */
void rr_new_uuid(char out[40]);

#endif
