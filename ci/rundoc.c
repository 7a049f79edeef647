/* rundoc.c — see rundoc.h. Field rules: docs/run-format.md. */
#define _GNU_SOURCE  /* qsort_r */
#include "rundoc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* Integers above 2^53 do not survive a double, and the dashboard's JSON reader keeps
 * numbers as doubles: both sides refuse them. */
#define MAX_EXACT_INT 9007199254740992.0

typedef struct jctx {
    char *field;
    size_t field_cap;
    char *err;
    size_t cap;
} jctx;

static int ferr(jctx *j, const char *field, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Records the refusal: the field's path and "path: sentence". */
static int ferr(jctx *j, const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (j->field) snprintf(j->field, j->field_cap, "%s", field);
    if (*field) snprintf(j->err, j->cap, "%s: %s", field, msg);
    else snprintf(j->err, j->cap, "%s", msg);
    return -1;
}

/* "base.key" (or "key" at the top level). */
static const char *join(char *out, size_t cap, const char *base, const char *key)
{
    snprintf(out, cap, "%s%s%s", base, *base ? "." : "", key);
    return out;
}

/* A string member. Required strings must be non-empty; every string is at most maxlen
 * bytes. Absent or null leaves *dst as it is. */
static int get_str(jctx *j, const json_value *o, const char *base, const char *key, int required, size_t maxlen,
                   char **dst)
{
    char f[160];
    const json_value *v = json_value_get(o, key);
    if (!v || v->type == JSON_NULL) {
        if (required) return ferr(j, join(f, sizeof f, base, key), "missing (required string)");
        return 0;
    }
    if (v->type != JSON_STRING)
        return ferr(j, join(f, sizeof f, base, key), "expected a string, got %s", json_type_name(v->type));
    size_t n = strlen(v->string);
    if (n > maxlen) return ferr(j, join(f, sizeof f, base, key), "%zu bytes, longer than the %zu allowed", n, maxlen);
    if (required && n == 0) return ferr(j, join(f, sizeof f, base, key), "must not be empty");
    rr_set(dst, v->string);
    return 0;
}

static int int_value(jctx *j, const json_value *v, const char *field, int64_t *dst)
{
    if (v->type != JSON_NUMBER || !v->is_integer)
        return ferr(j, field, "expected an integer, got %s",
                    v->type == JSON_NUMBER ? "a fraction or an exponent" : json_type_name(v->type));
    if (fabs((double)v->integer) > MAX_EXACT_INT) return ferr(j, field, "integer beyond 2^53");
    *dst = v->integer;
    return 0;
}

static int get_int(jctx *j, const json_value *o, const char *base, const char *key, int required, int64_t *dst)
{
    char f[160];
    const json_value *v = json_value_get(o, key);
    join(f, sizeof f, base, key);
    if (!v || v->type == JSON_NULL) return required ? ferr(j, f, "missing (required integer)") : 0;
    return int_value(j, v, f, dst);
}

static int get_nonneg(jctx *j, const json_value *o, const char *base, const char *key, int64_t *dst)
{
    int64_t v = RR_UNSET_I;
    if (get_int(j, o, base, key, 0, &v)) return -1;
    char f[160];
    if (v != RR_UNSET_I && v < 0) return ferr(j, join(f, sizeof f, base, key), "must be >= 0");
    if (v != RR_UNSET_I) *dst = v;
    return 0;
}

static int get_num(jctx *j, const json_value *o, const char *base, const char *key, double *dst)
{
    char f[160];
    const json_value *v = json_value_get(o, key);
    if (!v || v->type == JSON_NULL) return 0;
    if (v->type != JSON_NUMBER)
        return ferr(j, join(f, sizeof f, base, key), "expected a number, got %s", json_type_name(v->type));
    *dst = v->number;
    return 0;
}

static int get_time(jctx *j, const json_value *o, const char *base, const char *key, int required, int64_t *dst)
{
    char *s = NULL, f[160];
    if (get_str(j, o, base, key, required, 64, &s)) return -1;
    if (!s) return 0;
    int rc = rr_parse_time(s, dst);
    if (rc) ferr(j, join(f, sizeof f, base, key), "\"%s\" is not a UTC timestamp YYYY-MM-DDTHH:MM:SSZ", s);
    free(s);
    return rc;
}

static int one_of(jctx *j, const char *base, const char *key, const char *val, const char *const *allowed)
{
    for (const char *const *a = allowed; *a; ++a) if (strcmp(*a, val) == 0) return 0;
    char list[256] = "", f[160];
    for (const char *const *a = allowed; *a; ++a) {
        strncat(list, *a, sizeof list - strlen(list) - 4);
        if (a[1]) strncat(list, ", ", sizeof list - strlen(list) - 1);
    }
    return ferr(j, join(f, sizeof f, base, key), "\"%.64s\" is not one of %s", val, list);
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

static int cmp_key(const void *a, const void *b, void *keys)
{
    char **k = keys;
    return strcmp(k[*(const size_t *)a], k[*(const size_t *)b]);
}

/* A flat object re-serialised compactly with its keys in byte order. params (strict):
 * keys [a-z0-9_]+ of at most 64 bytes, values integers or printable-ASCII strings of at
 * most 256 bytes without '"' or '\\' (docs/run-format.md "Series identity"). env/clocks
 * (loose): keys of at most 128 bytes; strings, numbers, booleans and null. */
static int flat_object(jctx *j, const json_value *v, const char *field, int strict, char **dst)
{
    if (v->type != JSON_OBJECT) return ferr(j, field, "expected an object, got %s", json_type_name(v->type));
    if (v->count > RUN_DOC_MAX_KEYS) return ferr(j, field, "%zu keys, more than the %d allowed", v->count, RUN_DOC_MAX_KEYS);
    size_t *ord = malloc((v->count + 1) * sizeof *ord);
    if (!ord) return ferr(j, field, "out of memory");
    for (size_t i = 0; i < v->count; ++i) ord[i] = i;
    qsort_r(ord, v->count, sizeof *ord, cmp_key, v->keys);
    json_buf b;
    jb_init(&b);
    jb_raw(&b, "{");
    int rc = 0;
    char kf[256];
    for (size_t i = 0; i < v->count && !rc; ++i) {
        const char *k = v->keys[ord[i]];
        const json_value *m = &v->items[ord[i]];
        snprintf(kf, sizeof kf, "%s.%.64s", field, k);
        if (strict) {
            if (!*k || strlen(k) > 64 || strspn(k, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(k)) {
                rc = ferr(j, kf, "parameter names must match [a-z0-9_]+ (at most 64 bytes)");
                break;
            }
        } else if (strlen(k) > 128) {
            rc = ferr(j, kf, "key longer than 128 bytes");
            break;
        }
        if (i) jb_raw(&b, ",");
        jb_str(&b, k);
        jb_raw(&b, ":");
        int64_t iv = 0;
        switch (m->type) {
        case JSON_NUMBER:
            if (strict) {
                if (int_value(j, m, kf, &iv)) { rc = -1; break; }
                jb_int(&b, iv);
            } else if (m->is_integer) {
                jb_int(&b, m->integer);
            } else {
                jb_num(&b, m->number);
            }
            break;
        case JSON_STRING:
            if (strict) {
                int ok = strlen(m->string) <= 256;
                for (const char *p = m->string; ok && *p; ++p)
                    ok = (unsigned char)*p >= 0x20 && (unsigned char)*p <= 0x7e && *p != '"' && *p != '\\';
                if (!ok) { rc = ferr(j, kf, "parameter strings must be printable ASCII without '\"' or '\\' (at most 256 bytes)"); break; }
            } else if (strlen(m->string) > RUN_DOC_MAX_TEXT) {
                rc = ferr(j, kf, "string longer than %d bytes", RUN_DOC_MAX_TEXT);
                break;
            }
            jb_str(&b, m->string);
            break;
        case JSON_BOOL:
        case JSON_NULL:
            if (strict) { rc = ferr(j, kf, "expected an integer or a string, got %s", json_type_name(m->type)); break; }
            jb_raw(&b, m->type == JSON_NULL ? "null" : m->boolean ? "true" : "false");
            break;
        default:
            rc = ferr(j, kf, strict ? "expected an integer or a string, got %s" : "expected a string, number, boolean or null, got %s",
                      json_type_name(m->type));
        }
    }
    jb_raw(&b, "}");
    free(ord);
    if (!rc && b.oom) rc = ferr(j, field, "out of memory");
    if (!rc) rr_set(dst, b.data);
    jb_free(&b);
    return rc;
}

static int get_flat(jctx *j, const json_value *o, const char *base, const char *key, int strict, char **dst)
{
    char f[160];
    const json_value *v = json_value_get(o, key);
    if (!v || v->type == JSON_NULL) return 0;
    return flat_object(j, v, join(f, sizeof f, base, key), strict, dst);
}

/* Member `key` of o, which must be of type t when present: *out is NULL when it is absent
 * or null, which is a refusal when it is required. */
static int member(jctx *j, const json_value *o, const char *base, const char *key, json_type t, int required,
                  const json_value **out)
{
    char f[160];
    const json_value *v = json_value_get(o, key);
    *out = NULL;
    if (!v || v->type == JSON_NULL)
        return required ? ferr(j, join(f, sizeof f, base, key), "missing (required %s)",
                               t == JSON_OBJECT ? "object" : "array")
                        : 0;
    if (v->type != t)
        return ferr(j, join(f, sizeof f, base, key), "expected %s, got %s", json_type_name(t), json_type_name(v->type));
    *out = v;
    return 0;
}

static int parse_context(jctx *j, const json_value *c, const char *path, size_t i, run_record *r)
{
    rr_context *x = rr_add_context(r);
    if (!x) return ferr(j, path, "out of memory");
    char dpath[80];
    const json_value *d;
    snprintf(dpath, sizeof dpath, "%s.device", path);
    if (get_str(j, c, path, "backend", 1, 64, &x->backend) || member(j, c, path, "device", JSON_OBJECT, 1, &d))
        return -1;
    if (get_str(j, d, dpath, "name", 1, RUN_DOC_MAX_NAME, &x->device_name) ||
        get_str(j, d, dpath, "kind", 0, 16, &x->device_kind) || get_str(j, d, dpath, "arch", 0, 64, &x->device_arch) ||
        get_nonneg(j, d, dpath, "memory_bytes", &x->device_memory_bytes))
        return -1;
    static const char *const kinds[] = {"cpu", "gpu", "other", NULL};
    if (one_of(j, dpath, "kind", x->device_kind, kinds)) return -1;
    if (get_str(j, c, path, "describe", 0, RUN_DOC_MAX_TEXT, &x->describe) ||
        get_str(j, c, path, "driver", 0, RUN_DOC_MAX_NAME, &x->driver) ||
        get_str(j, c, path, "runtime", 0, RUN_DOC_MAX_NAME, &x->runtime) ||
        get_flat(j, c, path, "clocks", 0, &x->clocks_json) ||
        get_str(j, c, path, "code_hash", 0, RUN_DOC_MAX_NAME, &x->code_hash))
        return -1;
    for (size_t k = 0; k < i; ++k)
        if (!strcmp(r->contexts[k].backend, x->backend) && !strcmp(r->contexts[k].device_name, x->device_name))
            return ferr(j, path, "same backend and device as contexts[%zu]", k);
    return 0;
}

static int parse_result(jctx *j, const json_value *o, const char *path, size_t i, run_record *r)
{
    (void)i;
    rr_result *x = rr_add_result(r);
    if (!x) return ferr(j, path, "out of memory");
    char f[160];
    int64_t ctx = -1;
    if (get_int(j, o, path, "context", 1, &ctx)) return -1;
    if (ctx < 0 || (size_t)ctx >= r->n_contexts)
        return ferr(j, join(f, sizeof f, path, "context"), "%lld is not an index into contexts (%zu entries)",
                    (long long)ctx, r->n_contexts);
    x->context = (int)ctx;
    const json_value *p;
    if (get_str(j, o, path, "benchmark", 1, 128, &x->benchmark) || member(j, o, path, "params", JSON_OBJECT, 1, &p) ||
        flat_object(j, p, join(f, sizeof f, path, "params"), 1, &x->params_json))
        return -1;
    if (get_str(j, o, path, "label", 0, RUN_DOC_MAX_NAME, &x->label) ||
        get_str(j, o, path, "shape", 0, RUN_DOC_MAX_NAME, &x->shape) || get_str(j, o, path, "role", 0, 16, &x->role) ||
        get_str(j, o, path, "metric", 0, 64, &x->metric) || get_str(j, o, path, "unit", 0, 16, &x->unit) ||
        get_str(j, o, path, "status", 1, 16, &x->status) || get_str(j, o, path, "verdict", 1, 16, &x->verdict) ||
        get_str(j, o, path, "message", 0, RUN_DOC_MAX_TEXT, &x->message) ||
        get_nonneg(j, o, path, "warmup", &x->warmup) || get_nonneg(j, o, path, "bytes", &x->bytes) ||
        get_nonneg(j, o, path, "flops", &x->flops) || get_str(j, o, path, "ceiling", 0, 128, &x->ceiling) ||
        get_str(j, o, path, "output_hash", 0, RUN_DOC_MAX_NAME, &x->output_hash) ||
        get_str(j, o, path, "code_hash", 0, RUN_DOC_MAX_NAME, &x->code_hash))
        return -1;
    double pct = 0;
    if (get_num(j, o, path, "pct_of_ceiling", &pct)) return -1;
    static const char *const roles[] = {"case", "ceiling", "canary", NULL};
    static const char *const statuses[] = {"ok", "error", "unsupported", NULL};
    static const char *const verdicts[] = {"pass", "fail", "unchecked", NULL};
    if (one_of(j, path, "role", x->role, roles) || one_of(j, path, "status", x->status, statuses) ||
        one_of(j, path, "verdict", x->verdict, verdicts))
        return -1;
    if (strcmp(x->status, "ok") != 0 && strcmp(x->verdict, "pass") == 0)
        return ferr(j, join(f, sizeof f, path, "verdict"), "\"pass\" with status \"%s\" (a case that did not run cannot pass)",
                    x->status);
    const json_value *s;
    if (member(j, o, path, "samples_us", JSON_ARRAY, 1, &s)) return -1;
    join(f, sizeof f, path, "samples_us");
    if (s->count) {
        x->samples_us = malloc(s->count * sizeof(double));
        if (!x->samples_us) return ferr(j, f, "out of memory");
    }
    for (size_t k = 0; k < s->count; ++k) {
        const json_value *e = &s->items[k];
        char ef[192];
        snprintf(ef, sizeof ef, "%s[%zu]", f, k);
        if (e->type != JSON_NUMBER) return ferr(j, ef, "expected a number, got %s", json_type_name(e->type));
        if (!(e->number >= 0)) return ferr(j, ef, "negative time");
        x->samples_us[x->n_samples++] = e->number;
    }
    if (strcmp(x->status, "ok") == 0 && x->n_samples == 0)
        return ferr(j, f, "empty for status \"ok\" (an ok result has measurements)");
    const json_value *sa;
    if (member(j, o, path, "steps", JSON_ARRAY, 0, &sa)) return -1;
    for (size_t k = 0; sa && k < sa->count; ++k) {
        char sp[192];
        snprintf(sp, sizeof sp, "%s.steps[%zu]", path, k);
        const json_value *e = &sa->items[k];
        if (e->type != JSON_OBJECT) return ferr(j, sp, "expected an object, got %s", json_type_name(e->type));
        char *phase = NULL, *step = NULL;
        double med = NAN;
        int64_t n = RR_UNSET_I;
        int bad = get_str(j, e, sp, "phase", 1, 16, &phase) || get_str(j, e, sp, "step", 1, RUN_DOC_MAX_NAME, &step) ||
                  get_num(j, e, sp, "median_us", &med) || get_nonneg(j, e, sp, "n", &n);
        if (!bad && !(med >= 0)) bad = ferr(j, sp, "median_us: a step's time is a number >= 0");
        if (!bad && n == RR_UNSET_I) bad = ferr(j, sp, "n: missing (the profiled executions)");
        if (!bad && !rr_add_step(x, phase, step, med, n)) bad = ferr(j, sp, "out of memory");
        free(phase);
        free(step);
        if (bad) return -1;
    }
    const json_value *n;
    if (member(j, o, path, "numerics", JSON_OBJECT, 0, &n)) return -1;
    if (n) {
        char npath[80];
        snprintf(npath, sizeof npath, "%s.numerics", path);
        if (get_nonneg(j, n, npath, "mismatched_bytes", &x->mismatched_bytes) ||
            get_nonneg(j, n, npath, "checked_bytes", &x->checked_bytes) ||
            get_num(j, n, npath, "max_abs_err", &x->max_abs_err) || get_num(j, n, npath, "rel_err", &x->rel_err) ||
            get_num(j, n, npath, "sqnr_db", &x->sqnr_db) ||
            get_str(j, n, npath, "threshold", 0, RUN_DOC_MAX_NAME, &x->threshold))
            return -1;
    }
    return 0;
}

/* The array `key` of the document: at most `max` objects, each read by one(). */
typedef int (*item_fn)(jctx *j, const json_value *o, const char *path, size_t i, run_record *r);
static int parse_items(jctx *j, const json_value *root, const char *key, size_t max, item_fn one, run_record *r)
{
    const json_value *a;
    if (member(j, root, "", key, JSON_ARRAY, 1, &a)) return -1;
    if (a->count > max) return ferr(j, key, "%zu %s, more than the %zu allowed", a->count, key, max);
    for (size_t i = 0; i < a->count; ++i) {
        char path[64];
        snprintf(path, sizeof path, "%s[%zu]", key, i);
        if (a->items[i].type != JSON_OBJECT)
            return ferr(j, path, "expected an object, got %s", json_type_name(a->items[i].type));
        if (one(j, &a->items[i], path, i, r)) return -1;
    }
    return 0;
}

/* One result per series: indices in series order, neighbours compared (both results named). */
static int unique_series(jctx *j, const run_record *r)
{
    size_t *idx = rr_series_order(r);
    if (!idx) return ferr(j, "results", "out of memory");
    int rc = 0;
    for (size_t k = 1; k < r->n_results && !rc; ++k)
        if (rr_cmp_series(r, idx[k - 1], idx[k]) == 0) {
            char f[64];
            snprintf(f, sizeof f, "results[%zu]", idx[k]);
            rc = ferr(j, f, "duplicate series of results[%zu]", idx[k - 1]);
        }
    free(idx);
    return rc;
}

static int parse_root(jctx *j, const json_value *root, run_record *r)
{
    if (root->type != JSON_OBJECT) return ferr(j, "", "top level: expected an object, got %s", json_type_name(root->type));
    char *fmt = NULL;
    if (get_str(j, root, "", "format", 1, 64, &fmt)) return -1;
    int bad = strcmp(fmt, RUN_FORMAT_NAME) != 0;
    if (bad) ferr(j, "format", "\"%.64s\" is not \"%s\"", fmt, RUN_FORMAT_NAME);
    free(fmt);
    if (bad) return -1;
    int64_t ver = 0;
    if (get_int(j, root, "", "version", 1, &ver)) return -1;
    if (ver > RUN_FORMAT_VERSION)
        return ferr(j, "version", "%lld is newer than this reader knows (%d): upgrade qgmm-bench / qgmm-dash",
                    (long long)ver, RUN_FORMAT_VERSION);
    if (ver < 1) return ferr(j, "version", "%lld is not a valid version", (long long)ver);
    char *uuid = NULL;
    if (get_str(j, root, "", "uuid", 1, 64, &uuid)) return -1;
    if (!uuid_ok(uuid)) {
        ferr(j, "uuid", "\"%s\" is not a lowercase RFC 4122 uuid", uuid);
        free(uuid);
        return -1;
    }
    snprintf(r->uuid, sizeof r->uuid, "%s", uuid);
    free(uuid);
    if (get_str(j, root, "", "suite", 1, 128, &r->suite) || get_str(j, root, "", "reason", 0, 128, &r->reason) ||
        get_time(j, root, "", "started_at", 1, &r->started_at) || get_time(j, root, "", "finished_at", 1, &r->finished_at) ||
        get_str(j, root, "", "runner", 1, 128, &r->runner) ||
        get_str(j, root, "", "runner_version", 1, 64, &r->runner_version) || get_flat(j, root, "", "env", 0, &r->env_json))
        return -1;
    if (r->finished_at < r->started_at) return ferr(j, "finished_at", "before started_at");
    const json_value *m, *v;
    if (member(j, root, "", "machine", JSON_OBJECT, 1, &m) ||
        get_str(j, m, "machine", "hostname", 1, RUN_DOC_MAX_NAME, &r->hostname) ||
        get_str(j, m, "machine", "cpu", 1, RUN_DOC_MAX_NAME, &r->cpu) ||
        get_str(j, m, "machine", "os", 0, RUN_DOC_MAX_NAME, &r->os) || get_nonneg(j, m, "machine", "cores", &r->cores) ||
        get_nonneg(j, m, "machine", "memory_bytes", &r->memory_bytes))
        return -1;
    if (member(j, root, "", "revision", JSON_OBJECT, 1, &v) || get_str(j, v, "revision", "sha", 1, 64, &r->sha) ||
        get_time(j, v, "revision", "commit_time", 0, &r->commit_time) ||
        get_str(j, v, "revision", "subject", 0, RUN_DOC_MAX_NAME, &r->subject) ||
        get_str(j, v, "revision", "branch", 0, RUN_DOC_MAX_NAME, &r->branch))
        return -1;
    if (strcmp(r->sha, "unknown") != 0 && (strlen(r->sha) != 40 || strspn(r->sha, "0123456789abcdef") != 40))
        return ferr(j, "revision.sha", "expected 40 lowercase hex digits or \"unknown\"");
    const json_value *dirty = json_value_get(v, "dirty");
    if (dirty && dirty->type != JSON_NULL) {
        if (dirty->type != JSON_BOOL) return ferr(j, "revision.dirty", "expected a boolean, got %s", json_type_name(dirty->type));
        r->dirty = dirty->boolean;
    }
    const json_value *rs;
    if (member(j, root, "", "results", JSON_ARRAY, 1, &rs)) return -1; /* both arrays exist before either is read */
    if (parse_items(j, root, "contexts", RUN_DOC_MAX_CONTEXTS, parse_context, r) ||
        parse_items(j, root, "results", RUN_DOC_MAX_RESULTS, parse_result, r))
        return -1;
    return unique_series(j, r);
}

int run_from_json_field(const char *text, size_t len, run_record *r, char *field, size_t field_cap, char *err,
                        size_t err_cap)
{
    jctx j = {field, field_cap, err, err_cap};
    if (field && field_cap) field[0] = 0;
    if (len > RUN_DOC_MAX_BYTES) return ferr(&j, "", "document of %zu bytes, larger than the %u-byte cap", len, RUN_DOC_MAX_BYTES);
    char perr[256];
    json_value *root = json_value_parse(text, len, perr, sizeof perr);
    if (!root) return ferr(&j, "", "malformed JSON: %s", perr);
    int rc = parse_root(&j, root, r);
    json_value_free(root);
    if (rc == 0) rr_derive(r);
    return rc;
}

int run_from_json(const char *text, size_t len, run_record *r, char *err, size_t err_cap)
{
    return run_from_json_field(text, len, r, NULL, 0, err, err_cap);
}

int rundoc_check(const char *text, size_t len, char *field, size_t field_cap, char *err, size_t err_cap)
{
    run_record r;
    rr_init(&r);
    int rc = run_from_json_field(text, len, &r, field, field_cap, err, err_cap);
    rr_free(&r);
    return rc;
}
