/* Field-by-field reading of a run document (docs/run-format.md, version 1) into the
 * ingest's run_doc. The decision whether a document may be stored is made before, by the
 * runner's validator (ci/rundoc.h) that qgmm-bench import uses too; the checks here are
 * the same rules (never stricter) and stay as a second guard. Unknown fields are ignored
 * as the format requires; every refusal names the field. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ingest.h"
#include "model.h"

#define MAX_NAME 512         /* names, labels, shapes, hashes */
#define MAX_TEXT 65536       /* messages, describe lines */

typedef struct {
  arena *a;
  const char *field, *msg;
} vctx;

static int bad(vctx *v, const char *field, const char *msg) {
  if (!v->field) {
    v->field = field;
    v->msg = msg;
  }
  return 1;
}

static const char *path(vctx *v, const char *base, const char *key) {
  return base && *base ? arena_printf(v->a, "%s.%s", base, key) : key;
}

/* String field: required or optional (fallback when absent or null). */
static int get_str(vctx *v, const jval *o, const char *base, const char *key, int required,
                   size_t maxlen, const char *fallback, const char **out) {
  jval *x = json_get(o, key);
  if (!x || x->t == J_NULL) {
    if (required) return bad(v, path(v, base, key), "required string is missing");
    *out = fallback;
    return 0;
  }
  if (x->t != J_STR) return bad(v, path(v, base, key), "expected a string");
  if (x->len > maxlen) return bad(v, path(v, base, key), "string too long");
  if (required && x->len == 0) return bad(v, path(v, base, key), "must not be empty");
  *out = x->s;
  return 0;
}

static int get_num(vctx *v, const jval *o, const char *base, const char *key, int integer,
                   opt_num *out) {
  jval *x = json_get(o, key);
  out->set = 0;
  if (!x || x->t == J_NULL) return 0;
  if (x->t != J_NUM) return bad(v, path(v, base, key), integer ? "expected an integer" : "expected a number");
  if (integer && !x->is_int) return bad(v, path(v, base, key), "expected an integer");
  out->set = 1;
  out->v = x->n;
  return 0;
}

static int one_of(const char *s, const char *const *set) {
  for (; *set; set++)
    if (strcmp(s, *set) == 0) return 1;
  return 0;
}

/* "YYYY-MM-DDTHH:MM:SS[.ffffff]Z" -> unix seconds (fraction ignored, as the store does). */
static int parse_time(const char *s, int64_t *out) {
  int Y, M, D, h, m, sec, n = 0;
  if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &n) != 6 || n != 19)
    return 0;
  const char *p = s + 19;
  if (*p == '.') {
    p++;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
  }
  if (strcmp(p, "Z") != 0) return 0;
  if (Y < 1970 || Y > 9999 || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
    return 0;
  struct tm tm = {0};
  tm.tm_year = Y - 1900;
  tm.tm_mon = M - 1;
  tm.tm_mday = D;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = sec;
  time_t t = timegm(&tm);
  struct tm back;
  gmtime_r(&t, &back);
  if (back.tm_mday != D && sec != 60) return 0; /* Feb 30 and friends */
  *out = (int64_t)t;
  return 1;
}

static int get_time(vctx *v, const jval *o, const char *base, const char *key, int required,
                    opt_num *out) {
  const char *s = NULL;
  out->set = 0;
  if (get_str(v, o, base, key, required, 64, NULL, &s)) return 1;
  if (!s) return 0;
  int64_t t;
  if (!parse_time(s, &t)) return bad(v, path(v, base, key), "expected a UTC timestamp YYYY-MM-DDTHH:MM:SSZ");
  out->set = 1;
  out->v = (double)t;
  return 0;
}

static int cmp_keys(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Compact JSON with keys in byte order: the form the schema keeps JSON columns in. For
 * params (strict) values are integers or restricted strings; for env/clocks (loose)
 * strings, numbers and booleans. */
static const char *canon_object(vctx *v, const jval *o, const char *field, int strict) {
  if (o->t != J_OBJ) {
    bad(v, field, "expected an object");
    return NULL;
  }
  if (o->len > 256) {
    bad(v, field, "too many keys (at most 256)");
    return NULL;
  }
  const char **keys = arena_alloc(v->a, (o->len + 1) * sizeof *keys);
  if (!keys) return NULL;
  for (size_t i = 0; i < o->len; i++) keys[i] = o->keys[i];
  qsort(keys, o->len, sizeof *keys, cmp_keys);
  buf b = {0};
  buf_putc(&b, '{');
  for (size_t i = 0; i < o->len; i++) {
    const char *k = keys[i];
    jval *x = json_get(o, k);
    const char *kf = arena_printf(v->a, "%s.%s", field, k);
    if (strict) {
      if (!*k || strspn(k, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(k) || strlen(k) > 64) {
        bad(v, kf, "parameter names must match [a-z0-9_]+");
        break;
      }
    } else if (strlen(k) > 128) {
      bad(v, kf, "key too long");
      break;
    }
    if (i) buf_putc(&b, ',');
    buf_json_str(&b, k);
    buf_putc(&b, ':');
    if (x->t == J_NUM && (x->is_int || !strict)) {
      buf_json_num(&b, x->n);
    } else if (x->t == J_STR) {
      if (strict) {
        int ok = x->len <= 256;
        for (const char *p = x->s; ok && *p; p++)
          ok = *p >= 0x20 && *p <= 0x7e && *p != '"' && *p != '\\';
        if (!ok) {
          bad(v, kf, "parameter strings must be printable ASCII without '\"' or '\\'");
          break;
        }
        buf_putc(&b, '"');
        buf_puts(&b, x->s);
        buf_putc(&b, '"');
      } else {
        if (x->len > MAX_TEXT) {
          bad(v, kf, "string too long");
          break;
        }
        buf_json_str(&b, x->s);
      }
    } else if (x->t == J_BOOL && !strict) {
      buf_puts(&b, x->b ? "true" : "false");
    } else if (x->t == J_NULL && !strict) {
      buf_puts(&b, "null");
    } else {
      bad(v, kf, strict ? "expected an integer or a string" : "expected a string, number or boolean");
      break;
    }
  }
  buf_putc(&b, '}');
  const char *s = v->field || b.oom ? NULL : arena_strndup(v->a, b.p, b.len);
  buf_free(&b);
  return s;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* numpy's default quantile: linear interpolation between order statistics. */
static double quantile(const double *s, size_t n, double p) {
  double pos = p * (double)(n - 1);
  size_t lo = (size_t)floor(pos);
  if (lo + 1 >= n) return s[n - 1];
  return s[lo] + (s[lo + 1] - s[lo]) * (pos - (double)lo);
}

static void set(opt_num *o, double v) {
  o->set = 1;
  o->v = v;
}

static void compute_stats(arena *a, run_result *r) {
  size_t n = r->n_samples;
  if (!n) return;
  double *s = arena_alloc(a, n * sizeof *s);
  if (!s) return;
  memcpy(s, r->samples, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_double);
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += s[i];
  double mean = sum / (double)n, ss = 0;
  for (size_t i = 0; i < n; i++) ss += (s[i] - mean) * (s[i] - mean);
  set(&r->min, s[0]);
  set(&r->max, s[n - 1]);
  set(&r->q1, quantile(s, n, 0.25));
  set(&r->median, quantile(s, n, 0.5));
  set(&r->q3, quantile(s, n, 0.75));
  set(&r->mean, mean);
  if (n > 1) set(&r->stddev, sqrt(ss / (double)(n - 1)));
  double med = r->median.v;
  r->gbps.set = r->tflops.set = 0;
  if (med > 0 && r->bytes.set) set(&r->gbps, r->bytes.v / med / 1e3);
  if (med > 0 && r->flops.set) set(&r->tflops, r->flops.v / med / 1e6);
}

static int validate_context(vctx *v, const jval *c, const char *f, run_context *out) {
  static const char *const kinds[] = {"cpu", "gpu", "other", NULL};
  if (!c || c->t != J_OBJ) return bad(v, f, "expected an object");
  if (get_str(v, c, f, "backend", 1, 64, NULL, &out->backend)) return 1;
  jval *dev = json_get(c, "device");
  const char *df = path(v, f, "device");
  if (!dev || dev->t != J_OBJ) return bad(v, df, "required object is missing");
  if (get_str(v, dev, df, "name", 1, MAX_NAME, NULL, &out->dev_name) ||
      get_str(v, dev, df, "kind", 0, 16, "other", &out->dev_kind) ||
      get_str(v, dev, df, "arch", 0, 64, "", &out->dev_arch) ||
      get_num(v, dev, df, "memory_bytes", 1, &out->dev_mem))
    return 1;
  if (!one_of(out->dev_kind, kinds)) return bad(v, path(v, df, "kind"), "expected cpu, gpu or other");
  if (get_str(v, c, f, "describe", 0, MAX_TEXT, "", &out->describe) ||
      get_str(v, c, f, "driver", 0, MAX_NAME, "", &out->driver) ||
      get_str(v, c, f, "runtime", 0, MAX_NAME, "", &out->runtime) ||
      get_str(v, c, f, "code_hash", 0, MAX_NAME, "", &out->code_hash))
    return 1;
  jval *clocks = json_get(c, "clocks");
  out->clocks = "{}";
  if (clocks && clocks->t != J_NULL) {
    out->clocks = canon_object(v, clocks, path(v, f, "clocks"), 0);
    if (!out->clocks) return 1;
  }
  return 0;
}

static int validate_result(vctx *v, const jval *x, const char *f, size_t n_ctx, run_result *r) {
  static const char *const statuses[] = {"ok", "error", "unsupported", NULL};
  static const char *const verdicts[] = {"pass", "fail", "unchecked", NULL};
  static const char *const roles[] = {"case", "ceiling", "canary", NULL};
  if (!x || x->t != J_OBJ) return bad(v, f, "expected an object");
  opt_num ci;
  if (get_num(v, x, f, "context", 1, &ci)) return 1;
  if (!ci.set) return bad(v, path(v, f, "context"), "required integer is missing");
  if (ci.v < 0 || ci.v >= (double)n_ctx) return bad(v, path(v, f, "context"), "no such index in contexts");
  r->ctx = (int)ci.v;
  if (get_str(v, x, f, "benchmark", 1, 128, NULL, &r->benchmark) ||
      get_str(v, x, f, "label", 0, MAX_NAME, "", &r->label) ||
      get_str(v, x, f, "shape", 0, MAX_NAME, "", &r->shape) ||
      get_str(v, x, f, "role", 0, 16, "case", &r->role) ||
      get_str(v, x, f, "metric", 0, 64, "time", &r->metric) ||
      get_str(v, x, f, "unit", 0, 16, "us", &r->unit) ||
      get_str(v, x, f, "status", 1, 16, NULL, &r->status) ||
      get_str(v, x, f, "verdict", 1, 16, NULL, &r->verdict) ||
      get_str(v, x, f, "message", 0, MAX_TEXT, "", &r->message) ||
      get_str(v, x, f, "ceiling", 0, 128, "", &r->ceiling) ||
      get_str(v, x, f, "output_hash", 0, MAX_NAME, "", &r->output_hash) ||
      get_str(v, x, f, "code_hash", 0, MAX_NAME, NULL, &r->code_hash))
    return 1;
  if (!one_of(r->role, roles)) return bad(v, path(v, f, "role"), "expected case, ceiling or canary");
  if (!one_of(r->status, statuses)) return bad(v, path(v, f, "status"), "expected ok, error or unsupported");
  if (!one_of(r->verdict, verdicts)) return bad(v, path(v, f, "verdict"), "expected pass, fail or unchecked");
  jval *params = json_get(x, "params");
  if (!params) return bad(v, path(v, f, "params"), "required object is missing");
  r->params = canon_object(v, params, path(v, f, "params"), 1);
  if (!r->params) return 1;
  opt_num warm;
  if (get_num(v, x, f, "warmup", 1, &warm)) return 1;
  if (warm.set && warm.v < 0) return bad(v, path(v, f, "warmup"), "must be >= 0");
  r->warmup = warm.set ? (int64_t)warm.v : 0;
  if (get_num(v, x, f, "bytes", 1, &r->bytes) || get_num(v, x, f, "flops", 1, &r->flops) ||
      get_num(v, x, f, "pct_of_ceiling", 0, &r->pct))
    return 1;
  if (r->bytes.set && r->bytes.v < 0) return bad(v, path(v, f, "bytes"), "must be >= 0");
  if (r->flops.set && r->flops.v < 0) return bad(v, path(v, f, "flops"), "must be >= 0");
  jval *s = json_get(x, "samples_us");
  const char *sf = path(v, f, "samples_us");
  if (!s) return bad(v, sf, "required array is missing");
  if (s->t != J_ARR) return bad(v, sf, "expected an array of numbers");
  r->n_samples = s->len;
  r->samples = arena_alloc(v->a, (s->len + 1) * sizeof(double));
  if (!r->samples) return bad(v, sf, "too many samples");
  for (size_t i = 0; i < s->len; i++) {
    jval *e = s->items[i];
    if (e->t != J_NUM) return bad(v, arena_printf(v->a, "%s[%zu]", sf, i), "expected a number");
    if (!(e->n >= 0)) return bad(v, arena_printf(v->a, "%s[%zu]", sf, i), "a time must be >= 0");
    r->samples[i] = e->n;
  }
  if (strcmp(r->status, "ok") == 0 && s->len == 0)
    return bad(v, sf, "a result with status ok needs at least one sample");
  jval *num = json_get(x, "numerics");
  r->threshold = "";
  if (num && num->t != J_NULL) {
    const char *nf = path(v, f, "numerics");
    if (num->t != J_OBJ) return bad(v, nf, "expected an object");
    if (get_num(v, num, nf, "mismatched_bytes", 1, &r->mismatched) ||
        get_num(v, num, nf, "checked_bytes", 1, &r->checked) ||
        get_num(v, num, nf, "max_abs_err", 0, &r->max_abs_err) ||
        get_num(v, num, nf, "rel_err", 0, &r->rel_err) ||
        get_num(v, num, nf, "sqnr_db", 0, &r->sqnr) ||
        get_str(v, num, nf, "threshold", 0, MAX_NAME, "", &r->threshold))
      return 1;
  }
  compute_stats(v->a, r);
  return 0;
}

/* pct_of_ceiling is recomputed against the ceiling result of the same context when the
 * run holds it: TFLOP/s for GEMM ceilings (flops set), GB/s otherwise. */
static void recompute_pct(run_doc *d) {
  for (size_t i = 0; i < d->n_res; i++) {
    run_result *r = &d->res[i];
    if (!*r->ceiling) continue;
    for (size_t j = 0; j < d->n_res; j++) {
      run_result *c = &d->res[j];
      if (c->ctx != r->ctx || strcmp(c->benchmark, r->ceiling) || strcmp(c->status, "ok")) continue;
      if (c->tflops.set && r->tflops.set && c->tflops.v > 0) set(&r->pct, 100 * r->tflops.v / c->tflops.v);
      else if (c->gbps.set && r->gbps.set && c->gbps.v > 0) set(&r->pct, 100 * r->gbps.v / c->gbps.v);
      break;
    }
  }
}

static int cmp_series(const run_doc *d, const run_result *x, const run_result *y) {
  int c = strcmp(x->benchmark, y->benchmark);
  if (!c) c = strcmp(x->params, y->params);
  if (!c) c = strcmp(d->ctx[x->ctx].dev_name, d->ctx[y->ctx].dev_name);
  if (!c) c = strcmp(d->ctx[x->ctx].backend, d->ctx[y->ctx].backend);
  if (!c) c = strcmp(x->metric, y->metric);
  return c;
}

static int cmp_idx(const void *x, const void *y, void *ud) {
  const run_doc *d = ud;
  size_t i = *(const size_t *)x, j = *(const size_t *)y;
  int c = cmp_series(d, &d->res[i], &d->res[j]);
  return c ? c : (i < j ? -1 : i > j);
}

int run_validate(arena *a, const jval *doc, run_doc *d, const char **field, const char **msg) {
  vctx v = {a, NULL, NULL};
  memset(d, 0, sizeof *d);
  opt_num ver, t0, t1, ct;
  const char *format = NULL;
  if (!doc || doc->t != J_OBJ) {
    bad(&v, "", "the run document must be a JSON object");
    goto out;
  }
  if (get_str(&v, doc, "", "format", 1, 64, NULL, &format)) goto out;
  if (strcmp(format, "qgmm-run") != 0) {
    bad(&v, "format", "expected \"qgmm-run\"");
    goto out;
  }
  if (get_num(&v, doc, "", "version", 1, &ver)) goto out;
  if (!ver.set) {
    bad(&v, "version", "required integer is missing");
    goto out;
  }
  if (ver.v != 1) {
    bad(&v, "version", ver.v > 1 ? "newer than this dashboard understands (it reads version 1)"
                                 : "expected 1");
    goto out;
  }
  if (get_str(&v, doc, "", "uuid", 1, 64, NULL, &d->uuid)) goto out;
  if (!valid_uuid(d->uuid)) {
    bad(&v, "uuid", "expected a lowercase RFC 4122 uuid (36 characters)");
    goto out;
  }
  if (get_str(&v, doc, "", "suite", 1, 128, NULL, &d->suite) ||
      get_str(&v, doc, "", "reason", 0, 128, "manual", &d->reason) ||
      get_str(&v, doc, "", "runner", 1, 128, NULL, &d->runner) ||
      get_str(&v, doc, "", "runner_version", 1, 64, NULL, &d->runner_version) ||
      get_time(&v, doc, "", "started_at", 1, &t0) || get_time(&v, doc, "", "finished_at", 1, &t1))
    goto out;
  d->started_at = (int64_t)t0.v;
  d->finished_at = (int64_t)t1.v;
  if (d->finished_at < d->started_at) {
    bad(&v, "finished_at", "is before started_at");
    goto out;
  }
  jval *env = json_get(doc, "env");
  d->env = "{}";
  if (env && env->t != J_NULL && !(d->env = canon_object(&v, env, "env", 0))) goto out;

  jval *mach = json_get(doc, "machine");
  if (!mach || mach->t != J_OBJ) {
    bad(&v, "machine", "required object is missing");
    goto out;
  }
  if (get_str(&v, mach, "machine", "hostname", 1, MAX_NAME, NULL, &d->hostname) ||
      get_str(&v, mach, "machine", "cpu", 1, MAX_NAME, NULL, &d->cpu) ||
      get_str(&v, mach, "machine", "os", 0, MAX_NAME, "", &d->os) ||
      get_num(&v, mach, "machine", "cores", 1, &d->cores) ||
      get_num(&v, mach, "machine", "memory_bytes", 1, &d->memory))
    goto out;

  jval *rev = json_get(doc, "revision");
  if (!rev || rev->t != J_OBJ) {
    bad(&v, "revision", "required object is missing");
    goto out;
  }
  if (get_str(&v, rev, "revision", "sha", 1, 64, NULL, &d->sha) ||
      get_str(&v, rev, "revision", "subject", 0, MAX_NAME, "", &d->subject) ||
      get_str(&v, rev, "revision", "branch", 0, MAX_NAME, "", &d->branch) ||
      get_time(&v, rev, "revision", "commit_time", 0, &ct))
    goto out;
  d->commit_time = ct;
  if (strcmp(d->sha, "unknown") != 0 &&
      (strlen(d->sha) != 40 || strspn(d->sha, "0123456789abcdef") != 40)) {
    bad(&v, "revision.sha", "expected 40 lowercase hex digits or \"unknown\"");
    goto out;
  }
  jval *dirty = json_get(rev, "dirty");
  if (dirty && dirty->t != J_NULL && dirty->t != J_BOOL) {
    bad(&v, "revision.dirty", "expected a boolean");
    goto out;
  }
  d->dirty = dirty && dirty->t == J_BOOL && dirty->b;

  jval *ctx = json_get(doc, "contexts"), *res = json_get(doc, "results");
  if (!ctx || ctx->t != J_ARR) {
    bad(&v, "contexts", ctx ? "expected an array" : "required array is missing");
    goto out;
  }
  if (!res || res->t != J_ARR) {
    bad(&v, "results", res ? "expected an array" : "required array is missing");
    goto out;
  }
  if (ctx->len > 256) {
    bad(&v, "contexts", "too many contexts (at most 256)");
    goto out;
  }
  if (res->len > 200000) {
    bad(&v, "results", "too many results (at most 200000)");
    goto out;
  }
  d->n_ctx = ctx->len;
  d->ctx = arena_alloc(a, (ctx->len + 1) * sizeof *d->ctx);
  d->n_res = res->len;
  d->res = arena_alloc(a, (res->len + 1) * sizeof *d->res);
  if (!d->ctx || !d->res) {
    bad(&v, "results", "document too large");
    goto out;
  }
  for (size_t i = 0; i < ctx->len; i++) {
    const char *f = arena_printf(a, "contexts[%zu]", i);
    if (validate_context(&v, ctx->items[i], f, &d->ctx[i])) goto out;
    for (size_t j = 0; j < i; j++)
      if (!strcmp(d->ctx[i].backend, d->ctx[j].backend) && !strcmp(d->ctx[i].dev_name, d->ctx[j].dev_name)) {
        bad(&v, f, arena_printf(a, "same backend and device as contexts[%zu]", j));
        goto out;
      }
  }
  for (size_t i = 0; i < res->len; i++) {
    if (validate_result(&v, res->items[i], arena_printf(a, "results[%zu]", i), d->n_ctx, &d->res[i]))
      goto out;
    if (!d->res[i].code_hash) d->res[i].code_hash = d->ctx[d->res[i].ctx].code_hash;
  }
  /* At most one result per series: sort indices by series identity (stable on the index)
   * and look at neighbours, so both results can be named without a quadratic scan. */
  {
    size_t *idx = arena_alloc(a, (d->n_res + 1) * sizeof *idx);
    if (!idx) {
      bad(&v, "results", "document too large");
      goto out;
    }
    for (size_t i = 0; i < d->n_res; i++) idx[i] = i;
    qsort_r(idx, d->n_res, sizeof *idx, cmp_idx, d);
    for (size_t k = 1; k < d->n_res; k++)
      if (cmp_series(d, &d->res[idx[k - 1]], &d->res[idx[k]]) == 0) {
        bad(&v, arena_printf(a, "results[%zu]", idx[k]),
            arena_printf(a, "duplicate series of results[%zu]", idx[k - 1]));
        goto out;
      }
  }
  recompute_pct(d);
out:
  if (a->oom && !v.field) bad(&v, "", "document too large");
  *field = v.field;
  *msg = v.msg;
  return v.field != NULL;
}
