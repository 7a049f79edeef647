/* cmd_run.c — `qgmm-bench run` and `qgmm-bench cases`: measure every case of a suite on
 * every selected backend, check it against the reference through the case library, and
 * store the run in one transaction at the end. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench_exec.h"
#include "cmd.h"
#include "json.h"
#include "qgmm.h"
#include "qgmm_cases.h"
#include "report.h"
#include "store.h"
#include "store_json.h"
#include "sysinfo.h"

static const char *const RUN_HELP =
    "usage: qgmm-bench run [--suite smoke|nightly|NAME|FILE] [--backend all|cpu,cuda,hip,vulkan]\n"
    "                      [--db FILE] [--json FILE|-] [--reason TEXT] [--filter TEXT]\n"
    "                      [--budget-ms MS] [--check-max-mib N] [--sha SHA] [--commit-time ISO8601]\n"
    "                      [--no-ceilings]\n"
    "\n"
    "Runs every case of the suite on every selected backend present: checks its numerics\n"
    "against the CPU reference (bytes for casts, rel. error and SQNR for GEMMs, the shared\n"
    "thresholds), then times it with device events (warm-up, then N samples, N adapted to the\n"
    "suite's per-case budget). Each backend also gets its ceilings (copy bandwidth, a dense\n"
    "GEMM per recipe) and a fixed canary case for noise. Progress goes to stderr, a table to\n"
    "stdout at the end. The run is written to --db in ONE transaction when it ends (a killed\n"
    "run leaves nothing). Exit 0 when the run was measured and recorded — numerics failures\n"
    "are recorded, and judged by `qgmm-bench gate`; 2 on usage or setup errors.\n"
    "\n"
    "  --suite S       suites/S.suite (also $QGMM_SUITES_DIR), a path, or a case-library suite\n"
    "                  (default smoke)\n"
    "  --backend B     all (default: every available backend) or a comma list; a named backend\n"
    "                  that is unavailable is an error (with the reason)\n"
    "  --db FILE       SQLite store (created/migrated); without it nothing is stored\n"
    "  --json FILE     also write the run document (docs/run-format.md); '-' for stdout\n"
    "  --reason TEXT   why it ran: nightly, ci, manual (default), ...\n"
    "  --filter TEXT   only cases whose id contains TEXT\n"
    "  --budget-ms MS  per-case timing budget (overrides the suite)\n"
    "  --check-max-mib N  time but do not byte-check exact cases moving more than N MiB (the CPU\n"
    "                  reference of the biggest nightly casts takes minutes); they are recorded\n"
    "                  as \"unchecked\" with the reason, never as a pass\n"
    "  --sha, --commit-time  the revision when not run inside the git work tree\n"
    "  --no-ceilings   skip the ceilings and the canary (faster; %-of-ceiling stays empty)\n";

static const char *const CASES_HELP =
    "usage: qgmm-bench cases [--suite NAME|FILE] [--json]\n"
    "\n"
    "Lists the cases a suite resolves to (id, bytes, FLOPs). With --json, one object per case\n"
    "with the benchmark name, params, dims and group offsets exactly as `run` records them —\n"
    "the input of ci/peers/torch_peers.py, so peers are timed on identical cases.\n";

static int g_tty;

static void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void progress(const char *fmt, ...)
{
    char buf[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (g_tty) fprintf(stderr, "\r\033[K%.*s", 160, buf);
    else fprintf(stderr, "%s\n", buf);
    fflush(stderr);
}

static const char *recipe_name(qgmm_recipe r)
{
    switch (r) {
    case QGMM_RECIPE_BF16: return "bf16";
    case QGMM_RECIPE_FP8_ROWWISE: return "fp8_rowwise";
    case QGMM_RECIPE_FP8_BLOCKWISE: return "fp8_blockwise";
    case QGMM_RECIPE_MXFP8: return "mxfp8";
    }
    return "?";
}

static const char *groups_name(qgmm_group_pattern g)
{
    static const char *n[] = {"none", "even", "ragged", "empty", "single", "short"};
    return (int)g >= 0 && (int)g < 6 ? n[g] : "?";
}

static const char *input_name(qgmm_input_pattern p)
{
    return p == QGMM_INPUT_EDGE ? "edge" : p == QGMM_INPUT_WIDE ? "wide" : "normal";
}

/* The series identity of a case: benchmark = the variant name, params = the shape class. */
static void case_params(const qgmm_case *c, char *params, size_t pcap, char *shape, size_t scap)
{
    const qgmm_case_shape *s = &c->shape;
    snprintf(params, pcap,
             "{\"e\":%lld,\"g\":%lld,\"groups\":\"%s\",\"input\":\"%s\",\"k\":%lld,\"m\":%lld,\"mult\":%d,\"n\":%lld}",
             (long long)s->E, (long long)s->G, groups_name(c->groups), input_name(c->input), (long long)s->K,
             (long long)s->M, c->group_multiple, (long long)s->N);
    int k = 0;
    shape[0] = 0;
    if (s->E > 0) k += snprintf(shape + k, scap - (size_t)k, "E=%lld ", (long long)s->E);
    k += snprintf(shape + k, scap - (size_t)k, "M=%lld", (long long)s->M);
    if (s->N > 0) k += snprintf(shape + k, scap - (size_t)k, " N=%lld", (long long)s->N);
    if (s->K > 0) k += snprintf(shape + k, scap - (size_t)k, " K=%lld", (long long)s->K);
    if (c->groups != QGMM_GROUPS_NONE)
        snprintf(shape + k, scap - (size_t)k, " G=%lld", (long long)(c->groups == QGMM_GROUPS_SINGLE ? 1 : s->G));
}

typedef struct run_opts {
    const char *suite, *backends, *db, *json, *reason, *filter, *sha, *commit_time;
    double budget_ms;
    long long check_max_mib;
    int no_ceilings;
} run_opts;

static qgmm_status exec_case(void *u) { return qgmm_case_execute((qgmm_case_instance *)u); }

typedef struct copy_job { qgmm_buffer *dst, *src; size_t bytes; } copy_job;
static qgmm_status exec_copy(void *u)
{
    copy_job *j = u;
    return qgmm_buffer_copy(j->dst, 0, j->src, 0, j->bytes);
}

static void set_samples(rr_result *x, bench_samples *s)
{
    x->samples_us = s->us;
    x->n_samples = s->n;
    x->warmup = s->warmup;
    s->us = NULL;
    s->n = 0;
}

static void record_failure(rr_result *x, qgmm_status st, const char *msg)
{
    rr_set(&x->status, st == QGMM_ERR_UNSUPPORTED ? "unsupported" : "error");
    rr_set(&x->verdict, "unchecked");
    rr_set(&x->message, msg);
}

/* ceiling.copy: a device-side copy of a large buffer; bytes = read + written */
static void ceiling_copy(qgmm_context *ctx, const bench_cfg *cfg, run_record *r, int ci)
{
    rr_result *x = rr_add_result(r);
    x->context = ci;
    rr_set(&x->benchmark, "ceiling.copy");
    rr_set(&x->role, "ceiling");
    char p[64];
    snprintf(p, sizeof p, "{\"bytes\":%lld}", cfg->copy_bytes);
    rr_set(&x->params_json, p);
    snprintf(p, sizeof p, "%lld MiB", cfg->copy_bytes >> 20);
    rr_set(&x->shape, p);
    x->bytes = 2 * cfg->copy_bytes;
    copy_job j = {NULL, NULL, (size_t)cfg->copy_bytes};
    qgmm_status st = qgmm_buffer_alloc(ctx, j.bytes, &j.src);
    if (st == QGMM_OK) st = qgmm_buffer_alloc(ctx, j.bytes, &j.dst);
    if (st == QGMM_OK) st = qgmm_buffer_fill(j.src, 0, j.bytes, 0x3c);
    if (st != QGMM_OK) {
        char m[600];
        snprintf(m, sizeof m, "allocating 2 x %lld bytes: %s", cfg->copy_bytes, qgmm_last_error(ctx));
        record_failure(x, st, m);
    } else {
        bench_samples s;
        if (bench_time(ctx, exec_copy, &j, cfg, NULL, &s)) record_failure(x, s.status, s.message);
        else set_samples(x, &s);
        bench_samples_free(&s);
    }
    qgmm_buffer_free(j.src);
    qgmm_buffer_free(j.dst);
}

static const qgmm_case *template_by_name(const char *name)
{
    static const char *libs[] = {"nightly", "smoke", "conformance"};
    for (int i = 0; i < 3; ++i) {
        const qgmm_case *c = qgmm_case_find(libs[i], name);
        if (c && strcmp(c->name, name) == 0) return c;
    }
    return NULL;
}

/* Times an already-built case (no numerics check): ceilings and the canary. */
static qgmm_buffer *g_flush;  /* the current context's L2-flush buffer (NULL: none) */

static void time_plain_case(qgmm_context *ctx, const qgmm_case *c, const bench_cfg *cfg, rr_result *x)
{
    qgmm_case_instance *inst = NULL;
    qgmm_status st = qgmm_case_prepare(c, ctx, &inst);
    if (st != QGMM_OK) {
        char m[600];
        snprintf(m, sizeof m, "prepare: %s", qgmm_last_error(ctx));
        record_failure(x, st, m);
        return;
    }
    bench_samples s;
    if (bench_time(ctx, exec_case, inst, cfg, g_flush, &s)) record_failure(x, s.status, s.message);
    else set_samples(x, &s);
    bench_samples_free(&s);
    qgmm_case_release(inst);
}

static void ceiling_gemms(qgmm_context *ctx, const bench_cfg *cfg, run_record *r, int ci)
{
    char list[128];
    snprintf(list, sizeof list, "%s", cfg->ceiling_recipes);
    char *save = NULL;
    for (char *rec = strtok_r(list, " ,", &save); rec; rec = strtok_r(NULL, " ,", &save)) {
        char name[96];
        snprintf(name, sizeof name, "gemm.m.%s.%s.out_bf16", rec, strcmp(rec, "bf16") == 0 ? "bf16" : "e4m3fn");
        const qgmm_case *t = template_by_name(name);
        rr_result *x = rr_add_result(r);
        x->context = ci;
        char b[96], p[160];
        snprintf(b, sizeof b, "ceiling.gemm.%s", rec);
        rr_set(&x->benchmark, b);
        rr_set(&x->role, "ceiling");
        long long S = cfg->gemm_ceiling;
        snprintf(p, sizeof p, "{\"k\":%lld,\"m\":%lld,\"n\":%lld}", S, S, S);
        rr_set(&x->params_json, p);
        snprintf(p, sizeof p, "%lldx%lldx%lld", S, S, S);
        rr_set(&x->shape, p);
        if (!t) {
            snprintf(p, sizeof p, "no case-library variant %s to build the ceiling from", name);
            record_failure(x, QGMM_ERR_INTERNAL, p);
            continue;
        }
        qgmm_case_shape sh = {S, S, S, t->shape.E > 0 ? 1 : 0, 1};
        qgmm_case c, tt = *t;
        tt.groups = QGMM_GROUPS_SINGLE;
        tt.group_multiple = 1;
        char why[256];
        if (qgmm_case_reshape(&tt, &sh, &c, why, sizeof why) != QGMM_OK) {
            record_failure(x, QGMM_ERR_INTERNAL, why);
            continue;
        }
        x->flops = (int64_t)c.flops;
        x->bytes = (int64_t)c.bytes;
        progress("[ceiling] %-8s %s %s", qgmm_context_backend_name(ctx), b, x->shape);
        time_plain_case(ctx, &c, cfg, x);
    }
}

/* The canary: one fixed small cast whose night-to-night spread is the machine's noise.
 * Its shape is fixed per backend (a setting), whatever the suite. */
static void canary(qgmm_context *ctx, const bench_cfg *cfg, run_record *r, int ci)
{
    rr_result *x = rr_add_result(r);
    x->context = ci;
    rr_set(&x->benchmark, "canary");
    rr_set(&x->role, "canary");
    char p[160];
    snprintf(p, sizeof p, "{\"case\":\"fp8_rowwise.row.recip.e4m3fn.bf16\",\"k\":%lld,\"m\":%lld}", cfg->canary_k, cfg->canary_m);
    rr_set(&x->params_json, p);
    snprintf(p, sizeof p, "M=%lld K=%lld", cfg->canary_m, cfg->canary_k);
    rr_set(&x->shape, p);
    rr_set(&x->ceiling, "ceiling.copy");
    const qgmm_case *t = template_by_name("fp8_rowwise.row.recip.e4m3fn.bf16");
    if (!t) { record_failure(x, QGMM_ERR_INTERNAL, "the canary's case-library variant is missing"); return; }
    qgmm_case_shape sh = {cfg->canary_m, 0, cfg->canary_k, 0, 0};
    qgmm_case c;
    char why[256];
    if (qgmm_case_reshape(t, &sh, &c, why, sizeof why) != QGMM_OK) { record_failure(x, QGMM_ERR_INTERNAL, why); return; }
    x->bytes = (int64_t)c.bytes;
    time_plain_case(ctx, &c, cfg, x);
}

static void run_case(qgmm_context *ctx, qgmm_context *ref, const qgmm_case *c, const bench_cfg *cfg, rr_result *x)
{
    char params[400], shape[96];
    case_params(c, params, sizeof params, shape, sizeof shape);
    rr_set(&x->benchmark, c->name);
    rr_set(&x->params_json, params);
    rr_set(&x->shape, shape);
    x->bytes = (int64_t)c->bytes;
    if (c->flops > 0) x->flops = (int64_t)c->flops;
    if (c->family == QGMM_FAMILY_GEMM || c->family == QGMM_FAMILY_RECIPE) {
        char ce[64];
        snprintf(ce, sizeof ce, "ceiling.gemm.%s", recipe_name(c->gemm.recipe));
        rr_set(&x->ceiling, ce);
    } else {
        rr_set(&x->ceiling, "ceiling.copy");
    }
    qgmm_case_instance *inst = NULL;
    qgmm_status st = qgmm_case_prepare(c, ctx, &inst);
    if (st != QGMM_OK) {
        char m[600];
        snprintf(m, sizeof m, "prepare: %s", qgmm_last_error(ctx));
        record_failure(x, st, m);
        return;
    }
    qgmm_check_options opts = {cfg->gemm_check_elems};
    qgmm_case_result cr;
    if (c->check == QGMM_CHECK_EXACT && cfg->exact_check_max_bytes > 0 && c->bytes > (double)cfg->exact_check_max_bytes) {
        memset(&cr, 0, sizeof cr);
        cr.verdict = QGMM_VERDICT_SKIPPED;
        snprintf(cr.message, sizeof cr.message,
                 "%.0f MiB is over the exact-check limit of %lld MiB (@exact_check_max_mib / --check-max-mib); "
                 "conformance checks this op at smaller shapes",
                 c->bytes / 1048576.0, cfg->exact_check_max_bytes >> 20);
        st = QGMM_OK;
    } else {
        st = qgmm_case_check(inst, ref, &opts, &cr);
    }
    if (st != QGMM_OK) {
        char m[600];
        snprintf(m, sizeof m, "check harness: %s", qgmm_status_string(st));
        record_failure(x, st, m);
        qgmm_case_release(inst);
        return;
    }
    char hash[40];
    if (cr.verdict != QGMM_VERDICT_SKIPPED || cr.output_hash) {
        snprintf(hash, sizeof hash, "fnv1a64:%016llx", (unsigned long long)cr.output_hash);
        rr_set(&x->output_hash, hash);
    }
    char th[128] = "";
    if (cr.verdict == QGMM_VERDICT_SKIPPED) {
        /* nothing compared: no numerics fields */
    } else if (c->check == QGMM_CHECK_EXACT) {
        x->mismatched_bytes = (int64_t)cr.mismatched_bytes;
        x->checked_bytes = (int64_t)cr.compared_bytes;
        snprintf(th, sizeof th, "bit-exact vs cpu%s", cr.reference_is_same_backend ? " (same backend: determinism + coverage)" : "");
    } else {
        x->rel_err = cr.rel_fro_err;
        x->max_abs_err = cr.max_abs_err;
        x->sqnr_db = isfinite(cr.recipe_sqnr_db) ? cr.recipe_sqnr_db : cr.sqnr_db;
        if (isfinite(cr.min_recipe_sqnr_db))
            snprintf(th, sizeof th, "rel<=%g sqnr>=%g (%lld elems)", cr.max_rel_fro_allowed, cr.min_recipe_sqnr_db,
                     (long long)cr.compared_elems);
        else
            snprintf(th, sizeof th, "rel<=%g (%lld elems)", cr.max_rel_fro_allowed, (long long)cr.compared_elems);
    }
    rr_set(&x->threshold, th);
    char msg[700];
    snprintf(msg, sizeof msg, "%s%s%s", cr.message, cr.message[0] && cr.first_mismatch[0] ? "; " : "", cr.first_mismatch);
    switch (cr.verdict) {
    case QGMM_VERDICT_PASS: rr_set(&x->verdict, "pass"); break;
    case QGMM_VERDICT_FAIL:
        rr_set(&x->verdict, "fail");
        rr_set(&x->message, msg);
        if (cr.status != QGMM_OK) {  /* the op itself failed: nothing to time */
            rr_set(&x->status, "error");
            qgmm_case_release(inst);
            return;
        }
        break;
    case QGMM_VERDICT_UNSUPPORTED:
        record_failure(x, QGMM_ERR_UNSUPPORTED, msg);
        qgmm_case_release(inst);
        return;
    case QGMM_VERDICT_SKIPPED: {
        char m[760];
        snprintf(m, sizeof m, "numerics not checked: %s", msg);
        rr_set(&x->verdict, "unchecked");
        rr_set(&x->message, m);
        break;
    }
    }
    bench_samples s;
    if (bench_time(ctx, exec_case, inst, cfg, g_flush, &s)) {
        char m[800];
        snprintf(m, sizeof m, "timing: %s", s.message);
        rr_set(&x->status, s.status == QGMM_ERR_UNSUPPORTED ? "unsupported" : "error");
        if (strcmp(x->verdict, "pass") == 0) rr_set(&x->verdict, "unchecked");
        rr_set(&x->message, m);
    } else {
        set_samples(x, &s);
    }
    bench_samples_free(&s);
    qgmm_case_release(inst);
}

static int selected(const char *list, const char *name)
{
    if (strcmp(list, "all") == 0) return 1;
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}

static void read_clocks(const char *backend, rr_context *c)
{
    char buf[256] = "";
    if (strcmp(backend, "cpu") == 0) {
        FILE *f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "r");
        long khz = 0;
        if (f && fscanf(f, "%ld", &khz) == 1 && khz > 0) snprintf(buf, sizeof buf, "{\"cpu0\":%ld}", khz / 1000);
        if (f) fclose(f);
    } else if (strcmp(backend, "cuda") == 0 && access("/usr/bin/nvidia-smi", X_OK) == 0) {
        FILE *p = popen("nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv,noheader,nounits -i 0 2>/dev/null", "r");
        int sm = 0, mem = 0;
        if (p && fscanf(p, "%d, %d", &sm, &mem) == 2) snprintf(buf, sizeof buf, "{\"mem\":%d,\"sm\":%d}", mem, sm);
        if (p) pclose(p);
    }
    if (buf[0]) rr_set(&c->clocks_json, buf);
}

static int do_run(const run_opts *o)
{
    g_tty = isatty(2);
    suite s;
    char err[1200];
    if (suite_load(o->suite, &s, err, sizeof err)) {
        fprintf(stderr, "qgmm-bench run: %s\n", err);
        return 2;
    }
    sqlite3 *db = NULL;
    if (o->db && store_open(o->db, &db, err, sizeof err)) {  /* fail before measuring, not after */
        fprintf(stderr, "qgmm-bench run: %s\n", err);
        suite_free(&s);
        return 2;
    }
    run_record r;
    rr_init(&r);
    rr_new_uuid(r.uuid);
    rr_set(&r.suite, s.name);
    rr_set(&r.reason, o->reason ? o->reason : "manual");
    rr_set(&r.runner, "qgmm-bench");
    rr_set(&r.runner_version, QGMM_BENCH_VERSION);
    r.started_at = (int64_t)time(NULL);
    sysinfo_machine(&r);
    char cwd[1024];
    int in_tree = getcwd(cwd, sizeof cwd) && system("git rev-parse --is-inside-work-tree >/dev/null 2>&1") == 0;
    sysinfo_git(&r, in_tree ? cwd : QGMM_SOURCE_DIR);
    if (o->sha) rr_set(&r.sha, o->sha);
    if (o->commit_time && rr_parse_time(o->commit_time, &r.commit_time)) {
        fprintf(stderr, "qgmm-bench run: --commit-time %s is not YYYY-MM-DDTHH:MM:SSZ\n", o->commit_time);
        return 2;
    }
    {
        char env[512];
        const char *omp = getenv("OMP_NUM_THREADS");
        snprintf(env, sizeof env, "{\"build_type\":\"%s\",\"compiler\":\"%s\",\"omp_num_threads\":\"%s\",\"suite_file\":\"%s\"}",
                 QGMM_BUILD_TYPE, QGMM_COMPILER, omp ? omp : "", s.path);
        rr_set(&r.env_json, env);
    }

    /* which backends: all available, or the named ones (unavailable named = error) */
    int nb = qgmm_backend_count();
    char names[16][16];
    int nsel = 0, bad = 0;
    for (int i = 0; i < nb && nsel < 16; ++i) {
        qgmm_backend_info info;
        if (qgmm_backend_get_info(i, &info) != QGMM_OK) continue;
        if (!selected(o->backends, info.name)) continue;
        if (!info.available) {
            fprintf(stderr, "qgmm-bench: backend %s unavailable: %s\n", info.name, info.reason);
            if (strcmp(o->backends, "all") != 0) bad = 1;
            continue;
        }
        snprintf(names[nsel++], 16, "%s", info.name);
    }
    if (bad || nsel == 0) {
        fprintf(stderr, "qgmm-bench run: %s\n", nsel == 0 ? "no selected backend is available" : "a requested backend is unavailable");
        rr_free(&r);
        suite_free(&s);
        store_close(db);
        return 2;
    }
    qgmm_context *ref = NULL;
    if (qgmm_context_create("cpu", 0, &ref) != QGMM_OK) {
        fprintf(stderr, "qgmm-bench run: cannot create the CPU reference context: %s\n", qgmm_last_error(NULL));
        return 2;
    }
    size_t todo = 0, done = 0;
    char skipped_note[512] = "";
    size_t skipped_total = 0;
    for (size_t k = 0; k < s.n; ++k) if (!o->filter || strstr(s.cases[k].c.id, o->filter)) ++todo;
    todo *= (size_t)nsel;
    for (int b = 0; b < nsel; ++b) {
        qgmm_context *ctx = NULL;
        if (qgmm_context_create(names[b], 0, &ctx) != QGMM_OK) {
            fprintf(stderr, "qgmm-bench: backend %s: cannot create a context: %s (skipped)\n", names[b], qgmm_last_error(NULL));
            continue;
        }
        rr_context *c = rr_add_context(&r);
        int ci = (int)r.n_contexts - 1;
        rr_set(&c->backend, names[b]);
        sysinfo_parse_describe(names[b], qgmm_context_describe(ctx), c);
        if (strcmp(names[b], "cpu") == 0) {
            struct utsname u;
            rr_set(&c->device_name, r.cpu);
            rr_set(&c->device_kind, "cpu");
            if (uname(&u) == 0) rr_set(&c->device_arch, u.machine);
            c->device_memory_bytes = r.memory_bytes;
        }
        if (!c->device_name[0]) rr_set(&c->device_name, qgmm_context_describe(ctx));
        read_clocks(names[b], c);
        /* code hash: the library the backend's code lives in */
        qgmm_backend_info info;
        char lib[1024] = "";
        for (int i = 0; i < nb; ++i)
            if (qgmm_backend_get_info(i, &info) == QGMM_OK && strcmp(info.name, names[b]) == 0)
                snprintf(lib, sizeof lib, "%s", info.library);
        if (!lib[0] || strcmp(lib, "built-in") == 0) sysinfo_library_of((const void *)qgmm_context_create, lib, sizeof lib);
        char hash[40];
        sysinfo_file_hash(lib, hash);
        rr_set(&c->code_hash, hash);

        bench_cfg cfg;
        suite_config(&s, names[b], strcmp(c->device_kind, "cpu") == 0, &cfg);
        if (o->budget_ms > 0) cfg.budget_ms = o->budget_ms;
        if (o->check_max_mib > 0) cfg.exact_check_max_bytes = o->check_max_mib << 20;
        g_flush = NULL;
        if (cfg.flush_bytes > 0 && qgmm_buffer_alloc(ctx, (size_t)cfg.flush_bytes, &g_flush) != QGMM_OK) {
            fprintf(stderr, "qgmm-bench: %s: no %lld MiB cache-flush buffer (%s): timing without flushing\n", names[b],
                    cfg.flush_bytes >> 20, qgmm_last_error(ctx));
            g_flush = NULL;
        }
        if (!o->no_ceilings) {
            progress("[ceiling] %-8s ceiling.copy %lld MiB", names[b], cfg.copy_bytes >> 20);
            ceiling_copy(ctx, &cfg, &r, ci);
            ceiling_gemms(ctx, &cfg, &r, ci);
            progress("[canary]  %-8s canary", names[b]);
            canary(ctx, &cfg, &r, ci);
        }
        size_t skipped = 0;
        for (size_t k = 0; k < s.n; ++k) {
            const qgmm_case *cs = &s.cases[k].c;
            if (o->filter && !strstr(cs->id, o->filter)) continue;
            ++done;
            if ((cfg.max_case_bytes > 0 && cs->bytes > (double)cfg.max_case_bytes) ||
                (cfg.max_case_flops > 0 && cs->flops > cfg.max_case_flops)) {
                /* not run and not recorded: a missing result is never read as a pass */
                ++skipped;
                progress("[%3zu/%zu] %-8s %s  not run here (over @max_case_mib / @max_case_gflop)", done, todo, names[b], cs->id);
                continue;
            }
            progress("[%3zu/%zu] %-8s %s ...", done, todo, names[b], cs->id);
            rr_result *x = rr_add_result(&r);
            x->context = ci;
            run_case(ctx, ref, cs, &cfg, x);
            char med[32];
            report_fmt_us(rr_median(x), med, sizeof med);
            progress("[%3zu/%zu] %-8s %s  %s  %s n=%zu", done, todo, names[b], cs->id,
                     strcmp(x->status, "ok") ? x->status : x->verdict, med, x->n_samples);
        }
        if (skipped) {
            size_t l = strlen(skipped_note);
            snprintf(skipped_note + l, sizeof skipped_note - l, "%s%s:%zu", l ? "," : "", names[b], skipped);
            skipped_total += skipped;
        }
        qgmm_buffer_free(g_flush);
        g_flush = NULL;
        qgmm_context_destroy(ctx);
    }
    qgmm_context_destroy(ref);
    if (g_tty) fprintf(stderr, "\n");
    r.finished_at = (int64_t)time(NULL);
    if (skipped_total) {  /* env is a flat JSON object: append one member */
        size_t l = strlen(r.env_json);
        char *e = malloc(l + sizeof skipped_note + 32);
        if (e) {
            snprintf(e, l + sizeof skipped_note + 32, "%.*s,\"not_run\":\"%s\"}", (int)(l - 1), r.env_json, skipped_note);
            rr_set(&r.env_json, e);
            free(e);
        }
    }
    rr_derive(&r);
    /* with --json -, stdout carries the document alone; the people's table goes to stderr */
    FILE *human = o->json && strcmp(o->json, "-") == 0 ? stderr : stdout;
    fprintf(human, "qgmm-bench run %s: suite %s, %zu results, revision %.12s%s, %lld s\n", r.uuid, r.suite, r.n_results,
            r.sha, r.dirty ? " (dirty)" : "", (long long)(r.finished_at - r.started_at));
    report_run_table(&r, human);
    if (skipped_total)
        fprintf(human, "not run (bigger than the suite's @max_case_mib / @max_case_gflop for that device): %s\n",
                skipped_note);
    int rc = 0;
    if (o->json) {
        json_buf jb;
        jb_init(&jb);
        run_to_json(&r, &jb, 1);
        FILE *f = strcmp(o->json, "-") == 0 ? stdout : fopen(o->json, "w");
        if (!f || fwrite(jb.data, 1, jb.len, f) != jb.len) {
            fprintf(stderr, "qgmm-bench run: cannot write %s\n", o->json);
            rc = 2;
        }
        if (f && f != stdout) fclose(f);
        jb_free(&jb);
    }
    if (db) {
        int already = 0;
        int64_t id = 0;
        if (store_write_run(db, &r, "local", &already, &id, err, sizeof err)) {
            fprintf(stderr, "qgmm-bench run: storing the run in %s failed: %s\n", o->db, err);
            rc = 2;
        } else {
            fprintf(human, "stored as run %lld (%s) in %s\n", (long long)id, r.uuid, o->db);
        }
        store_close(db);
    }
    rr_free(&r);
    suite_free(&s);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    if (wants_help(argc, argv)) { fputs(RUN_HELP, stdout); return 0; }
    run_opts o;
    memset(&o, 0, sizeof o);
    o.suite = "smoke";
    o.backends = "all";
    for (int i = 1; i < argc; ++i) {
        const char *v;
        if (opt_value(argc, argv, &i, "--suite", &o.suite)) continue;
        if (opt_value(argc, argv, &i, "--backend", &o.backends)) continue;
        if (opt_value(argc, argv, &i, "--db", &o.db)) continue;
        if (opt_value(argc, argv, &i, "--json", &o.json)) continue;
        if (opt_value(argc, argv, &i, "--reason", &o.reason)) continue;
        if (opt_value(argc, argv, &i, "--filter", &o.filter)) continue;
        if (opt_value(argc, argv, &i, "--sha", &o.sha)) continue;
        if (opt_value(argc, argv, &i, "--commit-time", &o.commit_time)) continue;
        if (opt_value(argc, argv, &i, "--budget-ms", &v)) { o.budget_ms = atof(v); continue; }
        if (opt_value(argc, argv, &i, "--check-max-mib", &v)) { o.check_max_mib = atoll(v); continue; }
        if (strcmp(argv[i], "--no-ceilings") == 0) { o.no_ceilings = 1; continue; }
        fprintf(stderr, "qgmm-bench run: unknown argument %s (see --help)\n", argv[i]);
        return 2;
    }
    return do_run(&o);
}

int cmd_cases(int argc, char **argv)
{
    if (wants_help(argc, argv)) { fputs(CASES_HELP, stdout); return 0; }
    const char *spec = "smoke";
    int json = 0;
    for (int i = 1; i < argc; ++i) {
        if (opt_value(argc, argv, &i, "--suite", &spec)) continue;
        if (strcmp(argv[i], "--json") == 0) { json = 1; continue; }
        fprintf(stderr, "qgmm-bench cases: unknown argument %s (see --help)\n", argv[i]);
        return 2;
    }
    suite s;
    char err[1200];
    if (suite_load(spec, &s, err, sizeof err)) { fprintf(stderr, "qgmm-bench cases: %s\n", err); return 2; }
    if (json) printf("{\"format\": \"qgmm-cases\", \"version\": 1, \"suite\": \"%s\", \"cases\": [\n", s.name);
    for (size_t k = 0; k < s.n; ++k) {
        const qgmm_case *c = &s.cases[k].c;
        char params[400], shape[96];
        case_params(c, params, sizeof params, shape, sizeof shape);
        if (!json) {
            printf("%-70s %10.3g B %10.3g FLOP\n", c->id, c->bytes, c->flops);
            continue;
        }
        int32_t offs[4096];
        int64_t g = qgmm_case_offsets(c, offs, 4096);
        json_buf b;
        jb_init(&b);
        jb_printf(&b, "  {\"benchmark\": ");
        jb_str(&b, c->name);
        jb_printf(&b, ", \"id\": ");
        jb_str(&b, c->id);
        jb_printf(&b, ", \"params\": %s, \"shape\": ", params);
        jb_str(&b, shape);
        jb_printf(&b, ", \"op\": %d, \"family\": %d, \"recipe\": \"%s\", \"gemm_kind\": \"%s\", \"pass\": %d, "
                      "\"in_dtype\": \"%s\", \"q_dtype\": \"%s\", \"out_dtype\": \"%s\", \"M\": %lld, \"N\": %lld, "
                      "\"K\": %lld, \"E\": %lld, \"G\": %lld, \"bytes\": %.0f, \"flops\": %.0f, \"ceiling\": \"%s\", \"offs\": [",
                  (int)c->op, (int)c->family, recipe_name(c->gemm.recipe),
                  c->gemm.kind == QGMM_GEMM_K_GROUPED ? "k" : "m", (int)c->pass, qgmm_dtype_name(c->in_dtype),
                  qgmm_dtype_name(c->q_dtype), qgmm_dtype_name(c->out_dtype), (long long)c->shape.M,
                  (long long)c->shape.N, (long long)c->shape.K, (long long)c->shape.E, (long long)c->shape.G, c->bytes,
                  c->flops, (c->family == QGMM_FAMILY_GEMM || c->family == QGMM_FAMILY_RECIPE) ? "gemm" : "copy");
        for (int64_t i = 0; i < g && i < 4096; ++i) jb_printf(&b, "%s%d", i ? "," : "", offs[i]);
        jb_printf(&b, "]}%s\n", k + 1 < s.n ? "," : "");
        fputs(b.data, stdout);
        jb_free(&b);
    }
    if (json) printf("]}\n");
    suite_free(&s);
    return 0;
}
