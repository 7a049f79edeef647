/* store_json.c — see store_json.h. Field rules: docs/run-format.md. */
#include "store_json.h"
#include "stats.h"
#include "store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ writing */
static void kv_str(json_buf *b, const char *k, const char *v, int comma)
{
    if (comma) jb_raw(b, ", ");
    jb_str(b, k);
    jb_raw(b, ": ");
    jb_str(b, v);
}
static void kv_opt_i(json_buf *b, const char *k, int64_t v)
{
    if (v == RR_UNSET_I) return;
    jb_raw(b, ", ");
    jb_str(b, k);
    jb_raw(b, ": ");
    jb_int(b, v);
}
static void kv_opt_d(json_buf *b, const char *k, double v)
{
    if (!isfinite(v)) return;
    jb_raw(b, ", ");
    jb_str(b, k);
    jb_raw(b, ": ");
    jb_num(b, v);
}
static void kv_time(json_buf *b, const char *k, int64_t t)
{
    char s[32];
    rr_format_time(t, s);
    kv_str(b, k, s, 1);
}

void run_to_json(const run_record *r, json_buf *b, int pretty)
{
    const char *nl = pretty ? "\n  " : "";
    jb_printf(b, "{%s\"format\": \"%s\", \"version\": %d", nl, RUN_FORMAT_NAME, RUN_FORMAT_VERSION);
    jb_raw(b, ","); jb_raw(b, nl);
    kv_str(b, "uuid", r->uuid, 0);
    kv_str(b, "suite", r->suite, 1);
    kv_str(b, "reason", r->reason, 1);
    kv_time(b, "started_at", r->started_at);
    kv_time(b, "finished_at", r->finished_at);
    kv_str(b, "runner", r->runner, 1);
    kv_str(b, "runner_version", r->runner_version, 1);
    jb_printf(b, ",%s\"env\": %s", nl, r->env_json[0] ? r->env_json : "{}");
    jb_printf(b, ",%s\"machine\": {", nl);
    kv_str(b, "hostname", r->hostname, 0);
    kv_str(b, "cpu", r->cpu, 1);
    kv_str(b, "os", r->os, 1);
    kv_opt_i(b, "cores", r->cores);
    kv_opt_i(b, "memory_bytes", r->memory_bytes);
    jb_printf(b, "},%s\"revision\": {", nl);
    kv_str(b, "sha", r->sha, 0);
    if (r->commit_time != RR_UNSET_I) kv_time(b, "commit_time", r->commit_time);
    kv_str(b, "subject", r->subject, 1);
    kv_str(b, "branch", r->branch, 1);
    jb_printf(b, ", \"dirty\": %s},%s\"contexts\": [", r->dirty ? "true" : "false", nl);
    for (size_t i = 0; i < r->n_contexts; ++i) {
        const rr_context *c = &r->contexts[i];
        jb_raw(b, i ? "," : "");
        jb_raw(b, pretty ? "\n    {" : "{");
        kv_str(b, "backend", c->backend, 0);
        jb_raw(b, ", \"device\": {");
        kv_str(b, "name", c->device_name, 0);
        kv_str(b, "kind", c->device_kind, 1);
        kv_str(b, "arch", c->device_arch, 1);
        kv_opt_i(b, "memory_bytes", c->device_memory_bytes);
        jb_raw(b, "}");
        kv_str(b, "describe", c->describe, 1);
        kv_str(b, "driver", c->driver, 1);
        kv_str(b, "runtime", c->runtime, 1);
        jb_printf(b, ", \"clocks\": %s", c->clocks_json[0] ? c->clocks_json : "{}");
        kv_str(b, "code_hash", c->code_hash, 1);
        jb_raw(b, "}");
    }
    jb_printf(b, "%s],%s\"results\": [", pretty ? "\n  " : "", nl);
    for (size_t i = 0; i < r->n_results; ++i) {
        const rr_result *x = &r->results[i];
        jb_raw(b, i ? "," : "");
        jb_raw(b, pretty ? "\n    {" : "{");
        jb_printf(b, "\"context\": %d", x->context);
        kv_str(b, "benchmark", x->benchmark, 1);
        jb_printf(b, ", \"params\": %s", x->params_json);
        kv_str(b, "label", x->label, 1);
        kv_str(b, "shape", x->shape, 1);
        kv_str(b, "role", x->role, 1);
        kv_str(b, "metric", x->metric, 1);
        kv_str(b, "unit", x->unit, 1);
        kv_str(b, "status", x->status, 1);
        kv_str(b, "verdict", x->verdict, 1);
        kv_str(b, "message", x->message, 1);
        jb_printf(b, ", \"warmup\": %lld, \"samples_us\": [", (long long)x->warmup);
        for (size_t k = 0; k < x->n_samples; ++k) {
            if (k) jb_raw(b, ",");
            jb_num(b, x->samples_us[k]);
        }
        jb_raw(b, "]");
        if (x->n_samples) {
            sample_stats s = stats_describe(x->samples_us, x->n_samples);
            jb_printf(b, ", \"stats\": {\"n\": %zu", s.n);
            kv_opt_d(b, "min", s.min); kv_opt_d(b, "q1", s.q1); kv_opt_d(b, "median", s.median);
            kv_opt_d(b, "q3", s.q3); kv_opt_d(b, "max", s.max); kv_opt_d(b, "mean", s.mean);
            kv_opt_d(b, "stddev", s.stddev);
            jb_raw(b, "}");
        }
        if (x->n_steps) {
            jb_raw(b, ", \"steps\": [");
            for (size_t k = 0; k < x->n_steps; ++k) {
                jb_raw(b, k ? ", {" : "{");
                kv_str(b, "phase", x->steps[k].phase, 0);
                kv_str(b, "step", x->steps[k].step, 1);
                jb_printf(b, ", \"median_us\": ");
                jb_num(b, x->steps[k].median_us);
                jb_printf(b, ", \"n\": %lld}", (long long)x->steps[k].n);
            }
            jb_raw(b, "]");
        }
        kv_opt_i(b, "bytes", x->bytes);
        kv_opt_i(b, "flops", x->flops);
        kv_opt_d(b, "gbps", x->gbps);
        kv_opt_d(b, "tflops", x->tflops);
        if (x->ceiling[0]) kv_str(b, "ceiling", x->ceiling, 1);
        kv_opt_d(b, "pct_of_ceiling", x->pct_of_ceiling);
        int has_num = x->mismatched_bytes != RR_UNSET_I || x->checked_bytes != RR_UNSET_I || isfinite(x->max_abs_err) ||
                      isfinite(x->rel_err) || isfinite(x->sqnr_db) || x->threshold[0];
        if (has_num) {
            jb_raw(b, ", \"numerics\": {");
            kv_str(b, "threshold", x->threshold, 0);
            kv_opt_i(b, "mismatched_bytes", x->mismatched_bytes);
            kv_opt_i(b, "checked_bytes", x->checked_bytes);
            kv_opt_d(b, "max_abs_err", x->max_abs_err);
            kv_opt_d(b, "rel_err", x->rel_err);
            kv_opt_d(b, "sqnr_db", x->sqnr_db);
            jb_raw(b, "}");
        }
        kv_str(b, "output_hash", x->output_hash, 1);
        kv_str(b, "code_hash", x->code_hash, 1);
        jb_raw(b, "}");
    }
    jb_raw(b, pretty ? "\n  ]\n}\n" : "]}");
}

int qgmm_store_import_json(sqlite3 *db, const char *text, size_t len, const char *source, int *already,
                           long long *run_id, char *uuid_out, char *err, size_t err_cap)
{
    run_record r;
    rr_init(&r);
    int rc = run_from_json(text, len, &r, err, err_cap);
    if (rc == 0) {
        int64_t id = 0;
        rc = store_write_run(db, &r, source, already, &id, err, err_cap);
        if (rc == 0 && run_id) *run_id = (long long)id;
        if (uuid_out) snprintf(uuid_out, 40, "%s", r.uuid);
    }
    rr_free(&r);
    return rc;
}
