/* store_json.c — see store_json.h. Field rules: docs/run-format.md. */
#include "store_json.h"
#include "stats.h"
#include "store.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jctx {
    char *err;
    size_t cap;
} jctx;

static int ferr(jctx *j, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int ferr(jctx *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->err, j->cap, fmt, ap);
    va_end(ap);
    return -1;
}

/* Required/optional getters. path is the object's path for messages ("" for top). */
static int get_str(jctx *j, const json_value *o, const char *path, const char *key, int required, char **dst)
{
    const json_value *v = json_get(o, key);
    if (!v || v->type == JSON_NULL) {
        if (required) return ferr(j, "%s%s: missing (required string)", path, key);
        return 0;
    }
    if (v->type != JSON_STRING) return ferr(j, "%s%s: expected a string, got %s", path, key, json_type_name(v->type));
    rr_set(dst, v->string);
    return 0;
}

static int get_int(jctx *j, const json_value *o, const char *path, const char *key, int required, int64_t *dst)
{
    const json_value *v = json_get(o, key);
    if (!v || v->type == JSON_NULL) {
        if (required) return ferr(j, "%s%s: missing (required integer)", path, key);
        return 0;
    }
    if (v->type != JSON_NUMBER || !v->is_integer) return ferr(j, "%s%s: expected an integer, got %s", path, key,
                                                              v->type == JSON_NUMBER ? "a fraction" : json_type_name(v->type));
    *dst = v->integer;
    return 0;
}

static int get_num(jctx *j, const json_value *o, const char *path, const char *key, double *dst)
{
    const json_value *v = json_get(o, key);
    if (!v || v->type == JSON_NULL) return 0;
    if (v->type != JSON_NUMBER) return ferr(j, "%s%s: expected a number, got %s", path, key, json_type_name(v->type));
    *dst = v->number;
    return 0;
}

static int get_time(jctx *j, const json_value *o, const char *path, const char *key, int required, int64_t *dst)
{
    char *s = NULL;
    if (get_str(j, o, path, key, required, &s)) return -1;
    if (!s) return 0;
    int rc = rr_parse_time(s, dst);
    if (rc) ferr(j, "%s%s: \"%s\" is not a UTC timestamp YYYY-MM-DDTHH:MM:SSZ", path, key, s);
    free(s);
    return rc;
}

static int get_obj_json(jctx *j, const json_value *o, const char *path, const char *key, char **dst)
{
    const json_value *v = json_get(o, key);
    if (!v || v->type == JSON_NULL) return 0;
    if (v->type != JSON_OBJECT) return ferr(j, "%s%s: expected an object, got %s", path, key, json_type_name(v->type));
    /* free-form objects: keep flat scalar members, re-serialised compactly */
    json_buf b;
    jb_init(&b);
    jb_raw(&b, "{");
    for (size_t i = 0; i < v->count; ++i) {
        const json_value *m = &v->items[i];
        if (i) jb_raw(&b, ",");
        jb_str(&b, v->keys[i]);
        jb_raw(&b, ":");
        switch (m->type) {
        case JSON_STRING: jb_str(&b, m->string); break;
        case JSON_NUMBER: if (m->is_integer) jb_int(&b, m->integer); else jb_num(&b, m->number); break;
        case JSON_BOOL: jb_raw(&b, m->boolean ? "true" : "false"); break;
        case JSON_NULL: jb_raw(&b, "null"); break;
        default:
            jb_free(&b);
            return ferr(j, "%s%s.%s: expected a string, number, bool or null", path, key, v->keys[i]);
        }
    }
    jb_raw(&b, "}");
    rr_set(dst, b.data);
    jb_free(&b);
    return 0;
}

static int one_of(jctx *j, const char *path, const char *key, const char *val, const char *const *allowed)
{
    for (const char *const *a = allowed; *a; ++a) if (strcmp(*a, val) == 0) return 0;
    char list[256] = "";
    for (const char *const *a = allowed; *a; ++a) {
        strncat(list, *a, sizeof list - strlen(list) - 4);
        if (a[1]) strncat(list, ", ", sizeof list - strlen(list) - 1);
    }
    return ferr(j, "%s%s: \"%s\" is not one of %s", path, key, val, list);
}

static int uuid_ok(const char *s)
{
    if (strlen(s) != 36) return 0;
    for (int i = 0; i < 36; ++i) {
        char c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) { if (c != '-') return 0; }
        else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return 0;
    }
    return 1;
}

static int parse_context(jctx *j, const json_value *c, size_t i, run_record *r)
{
    char path[64];
    snprintf(path, sizeof path, "contexts[%zu].", i);
    if (c->type != JSON_OBJECT) return ferr(j, "contexts[%zu]: expected an object, got %s", i, json_type_name(c->type));
    rr_context *x = rr_add_context(r);
    if (!x) return ferr(j, "out of memory");
    if (get_str(j, c, path, "backend", 1, &x->backend)) return -1;
    if (!x->backend[0]) return ferr(j, "%sbackend: empty", path);
    const json_value *d = json_get(c, "device");
    if (!d) return ferr(j, "%sdevice: missing (required object)", path);
    if (d->type != JSON_OBJECT) return ferr(j, "%sdevice: expected an object, got %s", path, json_type_name(d->type));
    char dpath[80];
    snprintf(dpath, sizeof dpath, "%sdevice.", path);
    if (get_str(j, d, dpath, "name", 1, &x->device_name) || get_str(j, d, dpath, "kind", 0, &x->device_kind) ||
        get_str(j, d, dpath, "arch", 0, &x->device_arch) ||
        get_int(j, d, dpath, "memory_bytes", 0, &x->device_memory_bytes))
        return -1;
    if (!x->device_name[0]) return ferr(j, "%sname: empty", dpath);
    static const char *const kinds[] = {"cpu", "gpu", "other", NULL};
    if (one_of(j, dpath, "kind", x->device_kind, kinds)) return -1;
    if (get_str(j, c, path, "describe", 0, &x->describe) || get_str(j, c, path, "driver", 0, &x->driver) ||
        get_str(j, c, path, "runtime", 0, &x->runtime) || get_obj_json(j, c, path, "clocks", &x->clocks_json) ||
        get_str(j, c, path, "code_hash", 0, &x->code_hash))
        return -1;
    return 0;
}

static int parse_result(jctx *j, const json_value *o, size_t i, run_record *r)
{
    char path[64];
    snprintf(path, sizeof path, "results[%zu].", i);
    if (o->type != JSON_OBJECT) return ferr(j, "results[%zu]: expected an object, got %s", i, json_type_name(o->type));
    rr_result *x = rr_add_result(r);
    if (!x) return ferr(j, "out of memory");
    int64_t ctx = -1;
    if (get_int(j, o, path, "context", 1, &ctx)) return -1;
    if (ctx < 0 || (size_t)ctx >= r->n_contexts)
        return ferr(j, "%scontext: %lld is not an index into contexts (%zu entries)", path, (long long)ctx, r->n_contexts);
    x->context = (int)ctx;
    if (get_str(j, o, path, "benchmark", 1, &x->benchmark)) return -1;
    if (!x->benchmark[0]) return ferr(j, "%sbenchmark: empty", path);
    const json_value *p = json_get(o, "params");
    if (!p) return ferr(j, "%sparams: missing (required object)", path);
    json_buf b;
    jb_init(&b);
    char why[256];
    if (json_canonical_params(p, &b, why, sizeof why)) { jb_free(&b); return ferr(j, "%sparams: %s", path, why); }
    rr_set(&x->params_json, b.data);
    jb_free(&b);
    if (get_str(j, o, path, "label", 0, &x->label) || get_str(j, o, path, "shape", 0, &x->shape) ||
        get_str(j, o, path, "role", 0, &x->role) || get_str(j, o, path, "metric", 0, &x->metric) ||
        get_str(j, o, path, "unit", 0, &x->unit) || get_str(j, o, path, "status", 1, &x->status) ||
        get_str(j, o, path, "verdict", 1, &x->verdict) || get_str(j, o, path, "message", 0, &x->message) ||
        get_int(j, o, path, "warmup", 0, &x->warmup) || get_int(j, o, path, "bytes", 0, &x->bytes) ||
        get_int(j, o, path, "flops", 0, &x->flops) || get_str(j, o, path, "ceiling", 0, &x->ceiling) ||
        get_str(j, o, path, "output_hash", 0, &x->output_hash) || get_str(j, o, path, "code_hash", 0, &x->code_hash))
        return -1;
    static const char *const roles[] = {"case", "ceiling", "canary", NULL};
    static const char *const statuses[] = {"ok", "error", "unsupported", NULL};
    static const char *const verdicts[] = {"pass", "fail", "unchecked", NULL};
    if (one_of(j, path, "role", x->role, roles) || one_of(j, path, "status", x->status, statuses) ||
        one_of(j, path, "verdict", x->verdict, verdicts))
        return -1;
    if (strcmp(x->status, "ok") != 0 && strcmp(x->verdict, "pass") == 0)
        return ferr(j, "%sverdict: \"pass\" with status \"%s\" (a case that did not run cannot pass)", path, x->status);
    if (x->warmup < 0) return ferr(j, "%swarmup: negative", path);
    const json_value *s = json_get(o, "samples_us");
    if (!s) return ferr(j, "%ssamples_us: missing (required array of numbers)", path);
    if (s->type != JSON_ARRAY) return ferr(j, "%ssamples_us: expected an array, got %s", path, json_type_name(s->type));
    if (s->count) {
        x->samples_us = malloc(s->count * sizeof(double));
        if (!x->samples_us) return ferr(j, "out of memory");
    }
    for (size_t k = 0; k < s->count; ++k) {
        const json_value *e = &s->items[k];
        if (e->type != JSON_NUMBER) return ferr(j, "%ssamples_us[%zu]: expected a number, got %s", path, k, json_type_name(e->type));
        if (!(e->number >= 0)) return ferr(j, "%ssamples_us[%zu]: negative time", path, k);
        x->samples_us[x->n_samples++] = e->number;
    }
    if (strcmp(x->status, "ok") == 0 && x->n_samples == 0)
        return ferr(j, "%ssamples_us: empty for status \"ok\" (an ok result has measurements)", path);
    const json_value *n = json_get(o, "numerics");
    if (n && n->type != JSON_NULL) {
        if (n->type != JSON_OBJECT) return ferr(j, "%snumerics: expected an object, got %s", path, json_type_name(n->type));
        char npath[80];
        snprintf(npath, sizeof npath, "%snumerics.", path);
        if (get_int(j, n, npath, "mismatched_bytes", 0, &x->mismatched_bytes) ||
            get_int(j, n, npath, "checked_bytes", 0, &x->checked_bytes) ||
            get_num(j, n, npath, "max_abs_err", &x->max_abs_err) || get_num(j, n, npath, "rel_err", &x->rel_err) ||
            get_num(j, n, npath, "sqnr_db", &x->sqnr_db) || get_str(j, n, npath, "threshold", 0, &x->threshold))
            return -1;
    }
    return 0;
}

int run_from_json(const char *text, size_t len, run_record *r, char *err, size_t err_cap)
{
    jctx j = {err, err_cap};
    char perr[256];
    json_value *root = json_parse(text, len, perr, sizeof perr);
    if (!root) return ferr(&j, "malformed JSON: %s", perr);
    int rc = -1;
    if (root->type != JSON_OBJECT) { ferr(&j, "top level: expected an object, got %s", json_type_name(root->type)); goto out; }
    char *fmt = NULL;
    if (get_str(&j, root, "", "format", 1, &fmt)) goto out;
    int bad = strcmp(fmt, RUN_FORMAT_NAME) != 0;
    if (bad) ferr(&j, "format: \"%s\" is not \"%s\"", fmt, RUN_FORMAT_NAME);
    free(fmt);
    if (bad) goto out;
    int64_t ver = 0;
    if (get_int(&j, root, "", "version", 1, &ver)) goto out;
    if (ver > RUN_FORMAT_VERSION) {
        ferr(&j, "version: %lld is newer than this reader knows (%d): upgrade qgmm-bench", (long long)ver, RUN_FORMAT_VERSION);
        goto out;
    }
    if (ver < 1) { ferr(&j, "version: %lld is not a valid version", (long long)ver); goto out; }
    char *uuid = NULL;
    if (get_str(&j, root, "", "uuid", 1, &uuid)) goto out;
    if (!uuid_ok(uuid)) { ferr(&j, "uuid: \"%s\" is not a lowercase RFC 4122 uuid", uuid); free(uuid); goto out; }
    snprintf(r->uuid, sizeof r->uuid, "%s", uuid);
    free(uuid);
    if (get_str(&j, root, "", "suite", 1, &r->suite) || get_str(&j, root, "", "reason", 0, &r->reason) ||
        get_time(&j, root, "", "started_at", 1, &r->started_at) ||
        get_time(&j, root, "", "finished_at", 1, &r->finished_at) ||
        get_str(&j, root, "", "runner", 1, &r->runner) || get_str(&j, root, "", "runner_version", 1, &r->runner_version) ||
        get_obj_json(&j, root, "", "env", &r->env_json))
        goto out;
    if (r->finished_at < r->started_at) { ferr(&j, "finished_at: before started_at"); goto out; }
    const json_value *m = json_get(root, "machine");
    if (!m || m->type != JSON_OBJECT) { ferr(&j, "machine: %s", m ? "expected an object" : "missing (required object)"); goto out; }
    if (get_str(&j, m, "machine.", "hostname", 1, &r->hostname) || get_str(&j, m, "machine.", "cpu", 1, &r->cpu) ||
        get_str(&j, m, "machine.", "os", 0, &r->os) || get_int(&j, m, "machine.", "cores", 0, &r->cores) ||
        get_int(&j, m, "machine.", "memory_bytes", 0, &r->memory_bytes))
        goto out;
    if (!r->hostname[0]) { ferr(&j, "machine.hostname: empty"); goto out; }
    const json_value *v = json_get(root, "revision");
    if (!v || v->type != JSON_OBJECT) { ferr(&j, "revision: %s", v ? "expected an object" : "missing (required object)"); goto out; }
    if (get_str(&j, v, "revision.", "sha", 1, &r->sha) || get_time(&j, v, "revision.", "commit_time", 0, &r->commit_time) ||
        get_str(&j, v, "revision.", "subject", 0, &r->subject) || get_str(&j, v, "revision.", "branch", 0, &r->branch))
        goto out;
    if (!r->sha[0]) { ferr(&j, "revision.sha: empty"); goto out; }
    const json_value *dirty = json_get(v, "dirty");
    if (dirty && dirty->type != JSON_NULL) {
        if (dirty->type != JSON_BOOL) { ferr(&j, "revision.dirty: expected a boolean, got %s", json_type_name(dirty->type)); goto out; }
        r->dirty = dirty->boolean;
    }
    const json_value *cs = json_get(root, "contexts");
    if (!cs || cs->type != JSON_ARRAY) { ferr(&j, "contexts: %s", cs ? "expected an array" : "missing (required array)"); goto out; }
    for (size_t i = 0; i < cs->count; ++i)
        if (parse_context(&j, &cs->items[i], i, r)) goto out;
    const json_value *rs = json_get(root, "results");
    if (!rs || rs->type != JSON_ARRAY) { ferr(&j, "results: %s", rs ? "expected an array" : "missing (required array)"); goto out; }
    for (size_t i = 0; i < rs->count; ++i)
        if (parse_result(&j, &rs->items[i], i, r)) goto out;
    rr_derive(r);
    rc = 0;
out:
    json_free(root);
    return rc;
}

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
