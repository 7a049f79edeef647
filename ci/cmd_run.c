/* cmd_run.c — `qgmm-bench run` and `qgmm-bench cases`: measure every case of a suite on
 * every selected backend, check it against the reference through the case library, and
 * commit each result to the store as it is measured (store_live.h), so a run stopped by a
 * signal or killed keeps what it measured and `run --resume` finishes it. */
#define _GNU_SOURCE
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
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
#include "refcache.h"
#include "refworker.h"
#include "run_peers.h"
#include "report.h"
#include "stats.h"
#include "store.h"
#include "store_json.h"
#include "store_live.h"
#include "sysinfo.h"

static const char *const RUN_HELP =
    "usage: qgmm-bench run [--suite smoke|nightly|NAME|FILE] [--backend all|cpu,cuda,hip,vulkan]\n"
    "                      [--db FILE] [--json FILE|-] [--reason TEXT] [--filter TEXT]\n"
    "                      [--budget-ms MS] [--check-max-mib N] [--sha SHA] [--commit-time ISO8601]\n"
    "                      [--no-ceilings] [--ref-cache DIR|none] [--peers torch] [--serial-checks]\n"
    "\n"
    "Runs every case of the suite on every selected backend present: checks its numerics\n"
    "against the CPU reference (bytes for casts, rel. error and SQNR for GEMMs, the shared\n"
    "thresholds), then times it with device events (warm-up, then N samples, N adapted to the\n"
    "suite's per-case budget). Each backend also gets its ceilings (copy bandwidth, a dense\n"
    "GEMM per recipe) and a fixed canary case for noise. Progress (done/total, ETA) goes to\n"
    "stderr, a table to stdout at the end. With --db the run is stored as it goes: its row\n"
    "first (state running), then each result in its own transaction; it is closed complete, or\n"
    "interrupted after SIGINT/SIGTERM (the case being measured is finished first; a second\n"
    "signal 2 s or more after the first stops at once). A run killed outright is shown\n"
    "interrupted once its heartbeat is 60 s old. Exit 0 when the run was measured and\n"
    "recorded — numerics failures are recorded, and judged by `qgmm-bench gate`; 2 on usage,\n"
    "setup or store errors; 128+signal when\n"
    "interrupted (what was measured is kept: finish it with --resume).\n"
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
    "  --no-ceilings   skip the ceilings and the canary (faster; %-of-ceiling stays empty)\n"
    "  --ref-cache DIR where the CPU reference of exact cases is kept between runs (the hash of\n"
    "                  its output bytes per case and reference code; a corrupt entry is\n"
    "                  recomputed); default $XDG_CACHE_HOME/qgmm/reference or\n"
    "                  ~/.cache/qgmm/reference; none: computed once per run, not kept\n"
    "  --peers torch   after qgmm's backends, time ci/peers/torch_peers.py's PyTorch peers of the\n"
    "                  same cases and store them in the same run (backend torch); without python3,\n"
    "                  torch or a CUDA GPU one line says why and the run goes on without them\n"
    "  --serial-checks compute every CPU reference in line instead of on the reference worker\n"
    "                  thread (beside the device's timing); the stored results are the same\n"
    "  --resume RUN    finish an interrupted run (id, uuid or prefix) under the same id with the\n"
    "                  options it was started with: results already stored are skipped; refused\n"
    "                  when the run is complete, still running, from another host, or when a\n"
    "                  backend's library changed since it started\n";

static const char *const CASES_HELP =
    "usage: qgmm-bench cases [--suite NAME|FILE] [--json]\n"
    "\n"
    "Lists the cases a suite resolves to (id, bytes, FLOPs). With --json, one object per case\n"
    "with the benchmark name, params, dims and group offsets exactly as `run` records them —\n"
    "the input of ci/peers/torch_peers.py, so peers are timed on identical cases.\n";

static int g_tty;

/* Progress on stderr: "[done/total ETA] text". On a terminal one line is rewritten in place;
 * otherwise a line is written at most every PROGRESS_EVERY_S seconds or PROGRESS_EVERY_N
 * slots, and always when `force` (a failure, a skip, the end), so a log stays short. */
#define PROGRESS_EVERY_S 10.0
#define PROGRESS_EVERY_N 25
static struct {
    size_t done, total, measured;   /* slots passed, slots in the run, slots measured now */
    double t0, last_line;
    size_t last_done;
} g_prog;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fmt_eta(char *out, size_t cap)
{
    size_t left = g_prog.total > g_prog.done ? g_prog.total - g_prog.done : 0;
    if (!g_prog.measured) { snprintf(out, cap, "ETA ?"); return; }
    double eta = (now_s() - g_prog.t0) / (double)g_prog.measured * (double)left;
    long e = (long)(eta + 0.5);
    if (e >= 3600) snprintf(out, cap, "ETA %ldh%02ldm", e / 3600, e / 60 % 60);
    else snprintf(out, cap, "ETA %ldm%02lds", e / 60, e % 60);
}

static void progress(int force, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(int force, const char *fmt, ...)
{
    double t = now_s();
    if (!g_tty && !force && t - g_prog.last_line < PROGRESS_EVERY_S && g_prog.done - g_prog.last_done < PROGRESS_EVERY_N)
        return;
    char buf[400], eta[32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fmt_eta(eta, sizeof eta);
    if (g_tty) fprintf(stderr, "\r\033[K[%zu/%zu %s] %.*s", g_prog.done, g_prog.total, eta, 140, buf);
    else fprintf(stderr, "[%zu/%zu %s] %s\n", g_prog.done, g_prog.total, eta, buf);
    fflush(stderr);
    g_prog.last_line = t;
    g_prog.last_done = g_prog.done;
}

/* SIGINT/SIGTERM: the case being measured is finished and committed, then the run closes as
 * interrupted. A second signal at least STOP_AGAIN_S after the first stops the process at
 * once. Sooner ones are the same request delivered again: timeout(1) signals both the child
 * and its process group, and in a process with several threads (the CUDA runtime's) both
 * copies can arrive, one per thread. */
#define STOP_AGAIN_S 2
static volatile sig_atomic_t g_stop;
static struct timespec g_stop_at; /* written and read only in the handler */
static void on_stop(int sig)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now); /* async-signal-safe */
    if (!g_stop) {
        g_stop_at = now;
        g_stop = sig;
    } else if (now.tv_sec - g_stop_at.tv_sec >= STOP_AGAIN_S) {
        signal(sig, SIG_DFL);
        raise(sig); /* delivered when the handler returns: the default action */
    }
}
static void catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT); /* one handler at a time across both signals */
    sigaddset(&sa.sa_mask, SIGTERM);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* The live store of this run (NULL without --db) and the stored ids of the current context. */
static store_live *g_live;
static int64_t g_ctx_id, g_dev_id;
static int g_store_failed;

/* Commits the result just added to r (rates and % of ceiling derived first). A store that
 * refuses a write stops the run: measuring on without keeping the numbers helps nobody. */
static void publish(run_record *r)
{
    size_t i = r->n_results - 1;
    rr_derive_one(r, i);
    ++g_prog.measured;
    if (!g_live || g_store_failed) return;
    char err[600];
    if (store_live_result(g_live, r, i, g_ctx_id, g_dev_id, err, sizeof err)) {
        fprintf(stderr, "\nqgmm-bench run: storing result %s on %s failed: %s (stopping)\n", r->results[i].benchmark,
                r->contexts[r->results[i].context].backend, err);
        g_store_failed = 1;
    }
}

/* A result of this series is already in r (a resumed run measured it before it stopped). */
static int measured_already(const run_record *r, int ci, const char *benchmark, const char *params)
{
    for (size_t i = 0; i < r->n_results; ++i) {
        const rr_result *x = &r->results[i];
        if (x->context == ci && strcmp(x->benchmark, benchmark) == 0 && strcmp(x->params_json, params) == 0) return 1;
    }
    return 0;
}

/* The series identity of a case: benchmark = the variant name, params = the shape class. */
static void case_params(const qgmm_case *c, char *params, size_t pcap, char *shape, size_t scap)
{
    const qgmm_case_shape *s = &c->shape;
    snprintf(params, pcap,
             "{\"e\":%lld,\"g\":%lld,\"groups\":\"%s\",\"input\":\"%s\",\"k\":%lld,\"m\":%lld,\"mult\":%d,\"n\":%lld}",
             (long long)s->E, (long long)s->G, qgmm_case_groups_name(c->groups), qgmm_case_input_name(c->input), (long long)s->K,
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
    const char *resume, *ref_cache, *peers;
    double budget_ms;
    long long check_max_mib;
    int no_ceilings;
    int serial_checks;    /* every CPU reference in line (no worker thread): the same results */
    int n_measure_opts;   /* options that shape the measurement (refused with --resume) */
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
    char p[64];
    snprintf(p, sizeof p, "{\"bytes\":%lld}", cfg->copy_bytes);
    if (measured_already(r, ci, "ceiling.copy", p)) return;
    rr_result *x = rr_add_result(r);
    x->context = ci;
    rr_set(&x->benchmark, "ceiling.copy");
    rr_set(&x->role, "ceiling");
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
    publish(r);
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
    for (char *rec = strtok_r(list, " ,", &save); rec && !g_stop && !g_store_failed; rec = strtok_r(NULL, " ,", &save)) {
        char name[96];
        snprintf(name, sizeof name, "gemm.m.%s.%s.out_bf16", rec, strcmp(rec, "bf16") == 0 ? "bf16" : "e4m3fn");
        const qgmm_case *t = template_by_name(name);
        char b[96], p[160];
        snprintf(b, sizeof b, "ceiling.gemm.%s", rec);
        long long S = cfg->gemm_ceiling;
        snprintf(p, sizeof p, "{\"k\":%lld,\"m\":%lld,\"n\":%lld}", S, S, S);
        ++g_prog.done;
        if (measured_already(r, ci, b, p)) continue;
        rr_result *x = rr_add_result(r);
        x->context = ci;
        rr_set(&x->benchmark, b);
        rr_set(&x->role, "ceiling");
        rr_set(&x->params_json, p);
        snprintf(p, sizeof p, "%lldx%lldx%lld", S, S, S);
        rr_set(&x->shape, p);
        if (!t) {
            snprintf(p, sizeof p, "no case-library variant %s to build the ceiling from", name);
            record_failure(x, QGMM_ERR_INTERNAL, p);
            publish(r);
            continue;
        }
        qgmm_case_shape sh = {S, S, S, t->shape.E > 0 ? 1 : 0, 1};
        qgmm_case c, tt = *t;
        tt.groups = QGMM_GROUPS_SINGLE;
        tt.group_multiple = 1;
        char why[256];
        if (qgmm_case_reshape(&tt, &sh, &c, why, sizeof why) != QGMM_OK) {
            record_failure(x, QGMM_ERR_INTERNAL, why);
            publish(r);
            continue;
        }
        x->flops = (int64_t)c.flops;
        x->bytes = (int64_t)c.bytes;
        progress(0, "[ceiling] %-8s %s %s", qgmm_context_backend_name(ctx), b, x->shape);
        time_plain_case(ctx, &c, cfg, x);
        publish(r);
    }
}

/* The canary: one fixed small cast whose night-to-night spread is the machine's noise.
 * Its shape is fixed per backend (a setting), whatever the suite. */
static void canary(qgmm_context *ctx, const bench_cfg *cfg, run_record *r, int ci)
{
    char p[160];
    snprintf(p, sizeof p, "{\"case\":\"fp8_rowwise.row.recip.e4m3fn.bf16\",\"k\":%lld,\"m\":%lld}", cfg->canary_k, cfg->canary_m);
    if (measured_already(r, ci, "canary", p)) return;
    rr_result *x = rr_add_result(r);
    x->context = ci;
    rr_set(&x->benchmark, "canary");
    rr_set(&x->role, "canary");
    rr_set(&x->params_json, p);
    snprintf(p, sizeof p, "M=%lld K=%lld", cfg->canary_m, cfg->canary_k);
    rr_set(&x->shape, p);
    rr_set(&x->ceiling, "ceiling.copy");
    const qgmm_case *t = template_by_name("fp8_rowwise.row.recip.e4m3fn.bf16");
    qgmm_case_shape sh = {cfg->canary_m, 0, cfg->canary_k, 0, 0};
    qgmm_case c;
    char why[256];
    if (!t) record_failure(x, QGMM_ERR_INTERNAL, "the canary's case-library variant is missing");
    else if (qgmm_case_reshape(t, &sh, &c, why, sizeof why) != QGMM_OK) record_failure(x, QGMM_ERR_INTERNAL, why);
    else {
        x->bytes = (int64_t)c.bytes;
        time_plain_case(ctx, &c, cfg, x);
    }
    publish(r);
}

/* The CPU reference of exact cases (refcache.h): computed once per run, kept on disk; by
 * the reference worker (refworker.h) ahead of the device cases unless --serial-checks. */
static refcache g_refs;
static refworker g_rw;
static int g_rw_on;
/* Where the main thread's time went (seconds), printed at the end and kept in the run's env
 * (host_seconds): what a slow night spent its time on. The case library's clocks give the
 * phases of preparing and checking cases; these two are the runner's own. */
static struct { double timing, wait; } g_spent;

static int over_check_limit(const qgmm_case *c, const bench_cfg *cfg)
{
    return cfg->exact_check_max_bytes > 0 && c->bytes > (double)cfg->exact_check_max_bytes;
}

static void skip_over_limit(const qgmm_case *c, const bench_cfg *cfg, qgmm_case_result *cr)
{
    memset(cr, 0, sizeof *cr);
    cr->verdict = QGMM_VERDICT_SKIPPED;
    snprintf(cr->message, sizeof cr->message,
             "%.0f MiB is over the exact-check limit of %lld MiB (@exact_check_max_mib / --check-max-mib) and its "
             "CPU reference is not cached; conformance checks this op at smaller shapes",
             c->bytes / 1048576.0, cfg->exact_check_max_bytes >> 20);
}

static uint64_t ref_key(const qgmm_case *c, const char *params)
{
    return refcache_key(&g_refs, c->id, params, c->seed, (int)c->in_dtype, (int)c->q_dtype, (int)c->out_dtype);
}

/* The hash-only check (qgmm_check_options.hash_only): the case run twice on its own backend
 * (coverage, determinism) and its output hash, which the caller compares with the CPU
 * reference's. No second instance and no reference instance is prepared. */
static qgmm_status check_own(qgmm_case_instance *inst, const qgmm_check_options *opts, qgmm_case_result *cr)
{
    qgmm_check_options o = *opts;
    o.hash_only = 1;
    return qgmm_case_check(inst, NULL, &o, cr);
}

/* The CPU reference of an exact case: the case prepared on the CPU context and run once
 * (hash only, single run: the checked backend's own two runs look for unwritten and
 * unstable bytes); its output hash when that run succeeded. */
int refcheck_compute(qgmm_context *cpu, const qgmm_check_options *opts, const qgmm_case *c, uint64_t *hash)
{
    qgmm_case_instance *ri = NULL;
    qgmm_case_result cr;
    qgmm_check_options o = *opts;
    o.single_run = 1;
    qgmm_status st = qgmm_case_prepare(c, cpu, &ri);
    if (st == QGMM_OK) st = check_own(ri, &o, &cr);
    qgmm_case_release(ri);
    if (st != QGMM_OK || cr.verdict != QGMM_VERDICT_PASS) return 0;
    *hash = cr.output_hash;
    return 1;
}

/* The case's hash differs from the reference's, or no reference is known: the full byte
 * comparison against the CPU names the first differing byte (and, should the bytes match
 * after all, corrects the cached entry). */
static qgmm_status check_bytes(const qgmm_case *c, const char *params, qgmm_case_instance *inst, qgmm_context *ref,
                               const qgmm_check_options *opts, qgmm_case_result *cr)
{
    qgmm_check_options o = *opts;
    o.hash_only = 0;
    qgmm_status st = qgmm_case_check(inst, ref, &o, cr);
    if (st == QGMM_OK && cr->verdict == QGMM_VERDICT_PASS) refcache_put(&g_refs, ref_key(c, params), c->id, cr->output_hash);
    return st;
}

/* An exact check through the reference cache, in line. The case is checked on its own
 * backend (hash only: poison, coverage, determinism), then its output hash is compared with
 * the CPU reference's, computed at most once per run and case (on the cpu backend the case's
 * own check is the reference). *hashed: the verdict came from the hash comparison. */
static qgmm_status check_exact(const qgmm_case *c, const char *params, qgmm_case_instance *inst, qgmm_context *ctx,
                               qgmm_context *ref, const bench_cfg *cfg, const qgmm_check_options *opts,
                               qgmm_case_result *cr, int *hashed)
{
    *hashed = 0;
    uint64_t key = ref_key(c, params);
    uint64_t want = 0;
    int have = refcache_get(&g_refs, key, c->id, &want);
    if (!have && over_check_limit(c, cfg)) {
        skip_over_limit(c, cfg, cr);
        return QGMM_OK;
    }
    int on_ref_backend = strcmp(qgmm_context_backend_name(ctx), qgmm_context_backend_name(ref)) == 0;
    if (!have && !on_ref_backend) {
        if (refcheck_compute(ref, opts, c, &want)) {
            refcache_put(&g_refs, key, c->id, want);
            have = 1;
        }
    }
    qgmm_status st = check_own(inst, opts, cr);
    if (st != QGMM_OK || cr->verdict != QGMM_VERDICT_PASS) return st;
    if (!have && on_ref_backend) { /* that check was the reference's */
        refcache_put(&g_refs, key, c->id, cr->output_hash);
        *hashed = 1;
        return QGMM_OK;
    }
    if (have && cr->output_hash == want) { *hashed = 1; return QGMM_OK; }
    return check_bytes(c, params, inst, ref, opts, cr);
}

/* check_exact split around the timing, for a case the reference worker computes: first
 * the size limit (a case over it is checked only when its reference is cached) and the
 * check on the case's own backend; *deferred when that passed, and then exact_finish,
 * after timing, compares the output hash with the worker's reference, or the bytes with
 * the CPU's when they differ. The verdicts and messages are check_exact's. */
static qgmm_status exact_start(const qgmm_case *c, const char *params, qgmm_case_instance *inst,
                               const bench_cfg *cfg, const qgmm_check_options *opts, qgmm_case_result *cr,
                               int *deferred)
{
    *deferred = 0;
    uint64_t want;
    if (over_check_limit(c, cfg) && !refcache_get(&g_refs, ref_key(c, params), c->id, &want)) {
        skip_over_limit(c, cfg, cr);
        return QGMM_OK;
    }
    qgmm_status st = check_own(inst, opts, cr);
    *deferred = st == QGMM_OK && cr->verdict == QGMM_VERDICT_PASS;
    return st;
}

static qgmm_status exact_finish(const qgmm_case *c, const char *params, size_t job, qgmm_case_instance *inst,
                                qgmm_context *ref, const qgmm_check_options *opts, qgmm_case_result *cr, int *hashed)
{
    uint64_t want = 0;
    *hashed = 0;
    double t0 = now_s();
    int have = refworker_wait(&g_rw, job, &want);
    g_spent.wait += now_s() - t0;
    if (!have) have = refcache_get(&g_refs, ref_key(c, params), c->id, &want); /* a case left to us */
    if (!have && refcheck_compute(ref, opts, c, &want)) { /* ... and not cached */
        refcache_put(&g_refs, ref_key(c, params), c->id, want);
        have = 1;
    }
    if (have && cr->output_hash == want) {
        *hashed = 1;
        return QGMM_OK;
    }
    return check_bytes(c, params, inst, ref, opts, cr);
}

/* The per-step device times of a composite case (the MoE expert layer's casts, paddings and
 * GEMMs, issue 21): PROFILE_RUNS executions through its _profiled call after its timing, each
 * step's median stored with the result (rr_step). Nothing for other cases; a failure leaves
 * the result without steps and says why in its message. */
#define PROFILE_RUNS 10
static void profile_steps(qgmm_context *ctx, qgmm_case_instance *inst, rr_result *x)
{
    const qgmm_case *c = qgmm_case_of(inst);
    if (c->op != QGMM_CASE_MOE_FORWARD && c->op != QGMM_CASE_MOE_BACKWARD) return;
    enum { NE = QGMM_MOE_PROFILE_MAX_STEPS + 1 };
    qgmm_event *ev[NE] = {0};
    qgmm_status st = QGMM_OK;
    for (int i = 0; i < NE && st == QGMM_OK; ++i) st = qgmm_event_create(ctx, &ev[i]);
    double t[QGMM_MOE_PROFILE_MAX_STEPS][PROFILE_RUNS];
    qgmm_moe_profile pr;
    memset(&pr, 0, sizeof pr);
    int runs = 0;
    for (; runs < PROFILE_RUNS && st == QGMM_OK; ++runs) {
        memset(&pr, 0, sizeof pr);
        memcpy(pr.events, ev, sizeof ev);
        if (g_flush) st = qgmm_buffer_fill(g_flush, 0, qgmm_buffer_size(g_flush), (uint8_t)runs);
        if (st == QGMM_OK) st = qgmm_case_execute_profiled(inst, &pr);
        if (st == QGMM_OK) st = qgmm_synchronize(ctx);
        for (int i = 0; i < pr.steps && st == QGMM_OK; ++i) {
            double ms = 0;
            st = qgmm_event_elapsed_ms(ev[i], ev[i + 1], &ms);
            t[i][runs] = ms * 1e3;
        }
    }
    if (st != QGMM_OK) {
        char m[900];
        snprintf(m, sizeof m, "%s%sper-step times not measured: %s: %s", x->message, x->message[0] ? "; " : "",
                 qgmm_status_string(st), qgmm_last_error(ctx));
        rr_set(&x->message, m);
    } else {
        for (int i = 0; i < pr.steps; ++i)
            rr_add_step(x, pr.phase[i], pr.step[i], stats_quantile(t[i], (size_t)runs, 0.5), runs);
    }
    for (int i = 0; i < NE; ++i) qgmm_event_destroy(ev[i]);
}

/* job: the case's reference-worker job, or -1 (its reference is computed in line).
 * *held: the case's instance on the backend before (its inputs are moved here instead of
 * drawn again: qgmm_case_prepare_from), or NULL; on return, this backend's instance for the
 * next one (the caller releases the last). */
static void run_case(qgmm_context *ctx, qgmm_context *ref, const qgmm_case *c, const bench_cfg *cfg, long job,
                     rr_result *x, qgmm_case_instance **held)
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
        snprintf(ce, sizeof ce, "ceiling.gemm.%s", qgmm_case_recipe_name(c->gemm.recipe));
        rr_set(&x->ceiling, ce);
    } else {
        rr_set(&x->ceiling, "ceiling.copy");
    }
    qgmm_case_instance *inst = NULL;
    qgmm_status st = *held ? qgmm_case_prepare_from(*held, ctx, &inst) : qgmm_case_prepare(c, ctx, &inst);
    *held = NULL;
    if (st != QGMM_OK) {
        char m[600];
        snprintf(m, sizeof m, "prepare: %s", qgmm_last_error(ctx));
        record_failure(x, st, m);
        return;
    }
    qgmm_check_options opts = {.gemm_sample_elems = cfg->gemm_check_elems};
    qgmm_case_result cr;
    int hashed = 0, timed = 0, time_failed = 0;
    bench_samples s;
    memset(&s, 0, sizeof s);
    if (c->check == QGMM_CHECK_EXACT && job >= 0) {
        int deferred = 0;
        st = exact_start(c, params, inst, cfg, &opts, &cr, &deferred);
        if (st == QGMM_OK && deferred) {
            /* the worker computes the reference while the device is timed */
            double a = now_s();
            time_failed = bench_time(ctx, exec_case, inst, cfg, g_flush, &s);
            g_spent.timing += now_s() - a;
            timed = 1;
            st = exact_finish(c, params, (size_t)job, inst, ref, &opts, &cr, &hashed);
        }
    } else if (c->check == QGMM_CHECK_EXACT) {
        st = check_exact(c, params, inst, ctx, ref, cfg, &opts, &cr, &hashed);
    } else {
        st = qgmm_case_check(inst, ref, &opts, &cr);
    }
    if (st != QGMM_OK) {
        bench_samples_free(&s);
        char m[600];
        snprintf(m, sizeof m, "check harness: %s", qgmm_status_string(st));
        record_failure(x, st, m);
        *held = inst; /* for the next backend */
        return;
    }
    char hash[40];
    if (cr.verdict != QGMM_VERDICT_SKIPPED || cr.output_hash) {
        snprintf(hash, sizeof hash, "fnv1a64c:%016llx", (unsigned long long)cr.output_hash);
        rr_set(&x->output_hash, hash);
    }
    char th[128] = "";
    if (cr.verdict == QGMM_VERDICT_SKIPPED) {
        /* nothing compared: no numerics fields */
    } else if (c->check == QGMM_CHECK_EXACT) {
        x->mismatched_bytes = (int64_t)cr.mismatched_bytes;
        x->checked_bytes = (int64_t)cr.compared_bytes;
        int same = strcmp(qgmm_context_backend_name(ctx), qgmm_context_backend_name(ref)) == 0;
        snprintf(th, sizeof th, "bit-exact vs cpu%s", same ? " (same backend: determinism + coverage)"
                                                     : hashed ? " (output hash vs the cpu reference's)" : "");
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
            bench_samples_free(&s);
            *held = inst; /* for the next backend */
            return;
        }
        break;
    case QGMM_VERDICT_UNSUPPORTED:
        record_failure(x, QGMM_ERR_UNSUPPORTED, msg);
        bench_samples_free(&s);
        *held = inst; /* for the next backend */
        return;
    case QGMM_VERDICT_SKIPPED: {
        char m[760];
        snprintf(m, sizeof m, "numerics not checked: %s", msg);
        rr_set(&x->verdict, "unchecked");
        rr_set(&x->message, m);
        break;
    }
    }
    if (!timed) {
        double t2 = now_s();
        time_failed = bench_time(ctx, exec_case, inst, cfg, g_flush, &s);
        g_spent.timing += now_s() - t2;
    }
    if (time_failed) {
        char m[800];
        snprintf(m, sizeof m, "timing: %s", s.message);
        rr_set(&x->status, s.status == QGMM_ERR_UNSUPPORTED ? "unsupported" : "error");
        if (strcmp(x->verdict, "pass") == 0) rr_set(&x->verdict, "unchecked");
        rr_set(&x->message, m);
    } else {
        set_samples(x, &s);
        profile_steps(ctx, inst, x);
    }
    bench_samples_free(&s);
    *held = inst; /* for the next backend */
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

/* The options that shape a run, stored in its row so --resume measures the rest the same way. */
static void options_json(const run_opts *o, const suite *st, json_buf *b)
{
    jb_printf(b, "{\"backend\":");
    jb_str(b, o->backends);
    jb_printf(b, ",\"budget_ms\":");
    jb_num(b, o->budget_ms);
    jb_printf(b, ",\"check_max_mib\":");
    jb_int(b, o->check_max_mib);
    jb_printf(b, ",\"filter\":");
    if (o->filter) jb_str(b, o->filter); else jb_printf(b, "null");
    jb_printf(b, ",\"no_ceilings\":%s,\"peers\":", o->no_ceilings ? "true" : "false");
    if (o->peers) jb_str(b, o->peers); else jb_printf(b, "null");
    jb_printf(b, ",\"suite\":");
    /* a suite file by its absolute path: --resume may run from another directory */
    char abs[4096];
    jb_str(b, st->path[0] && realpath(st->path, abs) ? abs : o->suite);
    jb_printf(b, "}");
}

/* Reads the stored options of run `id` into o (strings point into *keep, freed by the caller). */
static int options_from_run(sqlite3 *db, int64_t id, run_opts *o, json_value **keep, char *err, size_t cap)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT options FROM run WHERE id = ?1", -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, cap, "%s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_int64(st, 1, id);
    const char *text = sqlite3_step(st) == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : "{}";
    *keep = json_value_parse(text, strlen(text), err, cap);
    sqlite3_finalize(st);
    const json_value *v = *keep;
    const json_value *suite = v ? json_value_get(v, "suite") : NULL;
    if (!suite || suite->type != JSON_STRING) {
        snprintf(err, cap, "run %lld stored no options to resume with (it was imported, or written by an older "
                 "qgmm-bench)", (long long)id);
        return -1;
    }
    o->suite = suite->string;
    const json_value *x;
    if ((x = json_value_get(v, "backend")) && x->type == JSON_STRING) o->backends = x->string;
    if ((x = json_value_get(v, "filter")) && x->type == JSON_STRING) o->filter = x->string;
    if ((x = json_value_get(v, "budget_ms")) && x->type == JSON_NUMBER) o->budget_ms = x->number;
    if ((x = json_value_get(v, "check_max_mib")) && x->type == JSON_NUMBER) o->check_max_mib = (long long)x->number;
    if ((x = json_value_get(v, "no_ceilings")) && x->type == JSON_BOOL) o->no_ceilings = x->boolean;
    if ((x = json_value_get(v, "peers")) && x->type == JSON_STRING) o->peers = x->string;
    return 0;
}

/* Adds an object member to the flat JSON object env. */
static void env_append(run_record *r, const char *key, const char *value)
{
    size_t l = strlen(r->env_json), n = l + strlen(key) + strlen(value) + 16;
    char *e = malloc(n);
    if (!e) return;
    snprintf(e, n, "%.*s%s\"%s\":\"%s\"}", (int)(l - 1), r->env_json, l > 2 ? "," : "", key, value);
    rr_set(&r->env_json, e);
    free(e);
}

static void write_cases_json(FILE *f, const suite *s, const char *filter);

/* The sha256 of the case library linked in (generated at build time, ci/CMakeLists.txt). */
extern const char qgmm_cases_lib_hash[];

/* The reference cache, keyed by the reference code version: the hashes of libqgmm (its cpu
 * backend computes the references) and of the case library (the inputs and the check).
 * dir: --ref-cache (NULL: the default place; "none": this run only). */
static void refs_open(const char *ref_cache)
{
    char lib[1024] = "", h1[40], dir[1024] = "";
    sysinfo_library_of((const void *)qgmm_context_create, lib, sizeof lib);
    sysinfo_file_hash(lib, h1);
    uint64_t v = store_fnv1a64(store_fnv1a64(STORE_FNV_INIT, h1, strlen(h1)), qgmm_cases_lib_hash,
                               strlen(qgmm_cases_lib_hash));
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (ref_cache && strcmp(ref_cache, "none") != 0) snprintf(dir, sizeof dir, "%s", ref_cache);
    else if (!ref_cache && xdg && xdg[0]) snprintf(dir, sizeof dir, "%s/qgmm/reference", xdg);
    else if (!ref_cache && home && home[0]) snprintf(dir, sizeof dir, "%s/.cache/qgmm/reference", home);
    refcache_init(&g_refs, dir, v);
}

/* "wall W: generate a, upload b, ..." from the case library's clocks k0 -> k1 and the runner's
 * timing and waiting (< 0: not shown); other = wall minus the phases. */
static void host_phases(char *out, size_t cap, const qgmm_case_clocks *k0, const qgmm_case_clocks *k1, double timing,
                        double wait, double wall)
{
    const double ph[6] = {k1->generate - k0->generate, k1->upload - k0->upload, k1->setup - k0->setup,
                          k1->execute - k0->execute, k1->download - k0->download, k1->compare - k0->compare};
    double sum = ph[0] + ph[1] + ph[2] + ph[3] + ph[4] + ph[5] + (timing > 0 ? timing : 0) + (wait > 0 ? wait : 0);
    int k = snprintf(out, cap, "wall %.1f: generate inputs %.1f, upload %.1f, buffers+masks+poison %.1f, check runs %.1f, "
                               "download %.1f, compare+hash %.1f", wall, ph[0], ph[1], ph[2], ph[3], ph[4], ph[5]);
    if (timing >= 0 && k > 0 && (size_t)k < cap) k += snprintf(out + k, cap - (size_t)k, ", timing %.1f", timing);
    if (wait >= 0 && k > 0 && (size_t)k < cap) k += snprintf(out + k, cap - (size_t)k, ", waiting for references %.1f", wait);
    if (k > 0 && (size_t)k < cap) snprintf(out + k, cap - (size_t)k, ", other %.1f", wall - sum);
}

/* The case is run on this device: selected by the filter (o NULL: not asked) and within the
 * suite's @max_case_mib / @max_case_gflop for it. */
static int runs_here(const qgmm_case *cs, const run_opts *o, const bench_cfg *cfg)
{
    if (o && o->filter && !strstr(cs->id, o->filter)) return 0;
    return !((cfg->max_case_bytes > 0 && cs->bytes > (double)cfg->max_case_bytes) ||
             (cfg->max_case_flops > 0 && cs->flops > cfg->max_case_flops));
}

/* --peers torch: ci/peers/torch_peers.py on the run's cases, its context and results added
 * to the run and stored like qgmm's (a resumed run skips those already stored). A script
 * that fails leaves the run without peers, saying why; a stop signal interrupts the run. */
static void torch_peers(const run_opts *o, const suite *s, run_record *r, size_t ncases)
{
    const char *tmp = getenv("TMPDIR");
    char dir[1024], path[1100], err[1400];
    snprintf(dir, sizeof dir, "%s/qgmm-peers-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    FILE *f = NULL;
    if (!mkdtemp(dir) || (snprintf(path, sizeof path, "%s/cases.json", dir), !(f = fopen(path, "w")))) {
        fprintf(stderr, "qgmm-bench run: --peers torch: no temporary directory for the cases (%s): no peers\n", dir);
        g_prog.done += ncases;
        return;
    }
    write_cases_json(f, s, o->filter);
    fclose(f);
    bench_cfg cfg;
    suite_config(s, "torch", 0, &cfg);
    double budget = o->budget_ms > 0 ? o->budget_ms : cfg.budget_ms;
    progress(1, "[peers]   torch: %zu cases through ci/peers/torch_peers.py", ncases);
    run_record pr;
    rr_init(&pr);
    int bad = peers_torch_run(path, budget, r->sha, &pr, err, sizeof err);
    unlink(path);
    rmdir(dir);
    if (bad) {
        if (!g_stop) fprintf(stderr, "qgmm-bench run: --peers torch: %s; the run has no peer results\n", err);
        g_prog.done += ncases;
        rr_free(&pr);
        return;
    }
    int ci = -1;
    for (size_t k = 0; k < r->n_contexts; ++k)
        if (strcmp(r->contexts[k].backend, pr.contexts[0].backend) == 0 &&
            strcmp(r->contexts[k].device_name, pr.contexts[0].device_name) == 0)
            ci = (int)k;
    if (ci < 0) {
        rr_context *c = rr_add_context(r), t = *c;
        *c = pr.contexts[0];
        pr.contexts[0] = t;
        ci = (int)r->n_contexts - 1;
    }
    if (g_live && store_live_context(g_live, r, ci, &g_ctx_id, &g_dev_id, err, sizeof err)) {
        fprintf(stderr, "qgmm-bench run: storing the torch context failed: %s\n", err);
        g_store_failed = 1;
        rr_free(&pr);
        return;
    }
    for (size_t i = 0; i < pr.n_results && !g_store_failed; ++i) {
        ++g_prog.done;
        rr_result *p = &pr.results[i];
        if (measured_already(r, ci, p->benchmark, p->params_json)) continue;
        rr_result *x = rr_add_result(r), t = *x;
        *x = *p;
        *p = t;
        x->context = ci;
        publish(r);
        x = &r->results[r->n_results - 1];
        progress(0, "%-8s %s %s  %s", "torch", x->benchmark, x->shape, x->status);
    }
    g_prog.done += ncases > pr.n_results ? ncases - pr.n_results : 0;
    rr_free(&pr);
}

static int do_run(const run_opts *given)
{
    g_tty = isatty(2);
    /* Freed memory stays in the heap for the next case: every case allocates and frees
     * gigabytes of host copies, and fresh mappings are paid page by page in the kernel
     * (about 40 % of preparing a cast here). The process's resident size stays at its peak. */
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, -1);
    run_opts opts = *given, *o = &opts;
    char err[1200];
    sqlite3 *db = NULL;
    json_value *stored_opts = NULL;
    int64_t resume_id = -1;
    run_record r;
    rr_init(&r);
    if (o->resume) {
        if (!o->db) { fprintf(stderr, "qgmm-bench run: --resume needs the --db the run is stored in\n"); return 2; }
        if (o->n_measure_opts) {
            fprintf(stderr, "qgmm-bench run: --resume measures with the options the run was started with; give only "
                            "--db (and --json)\n");
            return 2;
        }
    }
    if (o->peers && peers_parse(o->peers, err, sizeof err)) {
        fprintf(stderr, "qgmm-bench run: %s\n", err);
        return 2;
    }
    if (o->db && store_open(o->db, &db, err, sizeof err)) {  /* fail before measuring, not after */
        fprintf(stderr, "qgmm-bench run: %s\n", err);
        return 2;
    }
    if (o->resume && (store_resolve_run(db, o->resume, &resume_id, err, sizeof err) ||
                      options_from_run(db, resume_id, o, &stored_opts, err, sizeof err) ||
                      store_load_run(db, resume_id, &r, err, sizeof err))) {
        fprintf(stderr, "qgmm-bench run: --resume %s: %s\n", o->resume, err);
        json_value_free(stored_opts);
        rr_free(&r);
        store_close(db);
        return 2;
    }
    suite s;
    if (suite_load(o->suite, &s, err, sizeof err)) {
        fprintf(stderr, "qgmm-bench run: %s\n", err);
        json_value_free(stored_opts);
        rr_free(&r);
        store_close(db);
        return 2;
    }
    {
        /* the environment of this invocation (a resumed run records the one that finished it) */
        char env[512];
        const char *omp = getenv("OMP_NUM_THREADS");
        snprintf(env, sizeof env, "{\"build_type\":\"%s\",\"compiler\":\"%s\",\"omp_num_threads\":\"%s\",\"suite_file\":\"%s\"}",
                 QGMM_BUILD_TYPE, QGMM_COMPILER, omp ? omp : "", s.path);
        rr_set(&r.env_json, env);
    }
    run_record here;  /* this machine's facts (a resumed run keeps its stored ones) */
    rr_init(&here);
    sysinfo_machine(&here);
    if (!o->resume) {
        rr_new_uuid(r.uuid);
        rr_set(&r.suite, s.name);
        rr_set(&r.reason, o->reason ? o->reason : "manual");
        rr_set(&r.runner, "qgmm-bench");
        rr_set(&r.runner_version, QGMM_BENCH_VERSION);
        r.started_at = r.finished_at = (int64_t)time(NULL);
        sysinfo_machine(&r);
        char cwd[1024];
        int in_tree = getcwd(cwd, sizeof cwd) && system("git rev-parse --is-inside-work-tree >/dev/null 2>&1") == 0;
        sysinfo_git(&r, in_tree ? cwd : QGMM_SOURCE_DIR);
        if (o->sha) rr_set(&r.sha, o->sha);
        if (o->commit_time && rr_parse_time(o->commit_time, &r.commit_time)) {
            fprintf(stderr, "qgmm-bench run: --commit-time %s is not YYYY-MM-DDTHH:MM:SSZ\n", o->commit_time);
            rr_free(&r); rr_free(&here); suite_free(&s); store_close(db);
            return 2;
        }
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
    qgmm_context *ref = NULL;
    if (bad || nsel == 0 || qgmm_context_create("cpu", 0, &ref) != QGMM_OK) {
        if (bad || nsel == 0)
            fprintf(stderr, "qgmm-bench run: %s\n", nsel == 0 ? "no selected backend is available" : "a requested backend is unavailable");
        else
            fprintf(stderr, "qgmm-bench run: cannot create the CPU reference context: %s\n", qgmm_last_error(NULL));
        rr_free(&r); rr_free(&here); suite_free(&s); store_close(db); json_value_free(stored_opts);
        return 2;
    }
    refs_open(o->ref_cache);
    size_t ncases = 0;
    for (size_t k = 0; k < s.n; ++k) if (!o->filter || strstr(s.cases[k].c.id, o->filter)) ++ncases;
    int with_torch = 0;
    if (o->peers) {
        char version[64], why[400];
        with_torch = peers_torch_probe(version, sizeof version, why, sizeof why);
        if (with_torch) fprintf(stderr, "qgmm-bench run: --peers torch: torch %s, timed after qgmm's backends\n", version);
        else fprintf(stderr, "qgmm-bench run: --peers torch: no PyTorch peers on this machine: %s\n", why);
    }
    memset(&g_prog, 0, sizeof g_prog);
    g_prog.t0 = g_prog.last_line = now_s();
    for (int b = 0; b < nsel; ++b) {
        bench_cfg cfg;
        suite_config(&s, names[b], strcmp(names[b], "cpu") == 0, &cfg);
        size_t nrec = 0;
        char list[128], *save = NULL;
        snprintf(list, sizeof list, "%s", cfg.ceiling_recipes);
        for (char *t = strtok_r(list, " ,", &save); t; t = strtok_r(NULL, " ,", &save)) ++nrec;
        g_prog.total += ncases + (o->no_ceilings ? 0 : nrec + 2);
    }
    if (with_torch) g_prog.total += ncases;

    store_live live;
    g_live = NULL;
    g_store_failed = 0;
    g_stop = 0;
    /* from here a signal closes the run as interrupted (a run row is written first) */
    catch_stop_signals();
    if (db) {
        int rc;
        if (o->resume) {
            rc = store_live_attach(&live, db, o->db, resume_id, here.hostname, err, sizeof err);
        } else {
            json_buf ob;
            jb_init(&ob);
            options_json(o, &s, &ob);
            rc = store_live_begin(&live, db, o->db, &r, ob.data, (int64_t)g_prog.total, err, sizeof err);
            jb_free(&ob);
        }
        if (rc) {
            fprintf(stderr, "qgmm-bench run: %s%s: %s\n", o->resume ? "--resume " : "storing the run in ",
                    o->resume ? o->resume : o->db, err);
            qgmm_context_destroy(ref);
            rr_free(&r); rr_free(&here); suite_free(&s); store_close(db); json_value_free(stored_opts);
            return 2;
        }
        g_live = &live;
        fprintf(stderr, "qgmm-bench run %s: %s run %lld in %s\n", r.uuid, o->resume ? "resuming" : "storing as",
                (long long)live.run_id, o->db);
    }

    qgmm_check_options ref_opts = {0};
    g_rw_on = !o->serial_checks && refworker_start(&g_rw, &g_refs, &ref_opts) == 0;
    qgmm_case_clocks k0;
    qgmm_case_clocks_get(&k0);
    const double wall0 = now_s();
    long *jobs = calloc(s.n ? s.n : 1, sizeof *jobs);
    char skipped_note[512] = "";
    size_t skipped_total = 0, already = r.n_results;
    int setup_error = 0;
    /* Each backend: its context, stored, then its ceilings and canary. Then the cases, each on
     * every backend in turn (case-major): a case's inputs are drawn once and moved from one
     * backend's instance to the next (qgmm_case_prepare_from). */
    struct be_state {
        const char *name;
        qgmm_context *ctx;
        int ci;
        int64_t ctx_id, dev_id;
        bench_cfg cfg;
        qgmm_buffer *flush;
        size_t skipped;
    } be[16];
    int nbe = 0;
    for (int b = 0; b < nsel && !g_stop && !g_store_failed && !setup_error; ++b) {
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
            rr_set(&c->device_name, here.cpu);
            rr_set(&c->device_kind, "cpu");
            if (uname(&u) == 0) rr_set(&c->device_arch, u.machine);
            c->device_memory_bytes = here.memory_bytes;
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
        /* a resumed run continues in the context it stored, measuring the same code */
        for (int k = 0; k < ci; ++k) {
            const rr_context *old = &r.contexts[k];
            if (strcmp(old->backend, c->backend) != 0 || strcmp(old->device_name, c->device_name) != 0) continue;
            if (strcmp(old->code_hash, c->code_hash) != 0) {
                fprintf(stderr, "qgmm-bench run: --resume: backend %s's library changed since the run started (%s, now "
                                "%s): a run measures one build; start a new run\n", names[b], old->code_hash, c->code_hash);
                setup_error = 1;
            }
            rr_drop_last_context(&r);
            c = &r.contexts[k];
            ci = k;
            break;
        }
        if (!setup_error && g_live && store_live_context(g_live, &r, ci, &g_ctx_id, &g_dev_id, err, sizeof err)) {
            fprintf(stderr, "qgmm-bench run: storing the %s context failed: %s\n", names[b], err);
            setup_error = 1;
        }
        if (setup_error) { qgmm_context_destroy(ctx); break; }

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
        be[nbe] = (struct be_state){names[b], ctx, ci, g_ctx_id, g_dev_id, cfg, g_flush, 0};
        ++nbe;
        if (!o->no_ceilings) {
            ++g_prog.done;
            progress(0, "[ceiling] %-8s ceiling.copy %lld MiB", names[b], cfg.copy_bytes >> 20);
            ceiling_copy(ctx, &cfg, &r, ci);
            ceiling_gemms(ctx, &cfg, &r, ci);
            ++g_prog.done;
            if (!g_stop && !g_store_failed) {
                progress(0, "[canary]  %-8s canary", names[b]);
                canary(ctx, &cfg, &r, ci);
            }
        }
    }
    /* a device backend's exact cases go to the reference worker first, so it computes ahead
     * while the devices measure ceilings and cases; not those the cpu backend runs too, whose
     * own check is the reference */
    for (size_t k = 0; k < s.n; ++k) {
        const qgmm_case *cs = &s.cases[k].c;
        jobs[k] = -1;
        if (!g_rw_on || cs->check != QGMM_CHECK_EXACT) continue;
        char params[400], shape[96];
        case_params(cs, params, sizeof params, shape, sizeof shape);
        int on_cpu = 0;
        for (int b = 0; b < nbe; ++b)
            on_cpu |= strcmp(be[b].name, "cpu") == 0 && runs_here(cs, o, &be[b].cfg);
        for (int b = 0; b < nbe && jobs[k] < 0 && !on_cpu; ++b)
            if (strcmp(be[b].name, "cpu") != 0 && runs_here(cs, o, &be[b].cfg) &&
                !measured_already(&r, be[b].ci, cs->name, params))
                jobs[k] = (long)refworker_add(&g_rw, cs, ref_key(cs, params), be[b].cfg.exact_check_max_bytes);
    }
    for (size_t k = 0; k < s.n && !g_stop && !g_store_failed && !setup_error; ++k) {
        const qgmm_case *cs = &s.cases[k].c;
        if (o->filter && !strstr(cs->id, o->filter)) continue;
        qgmm_case_instance *held = NULL;
        for (int b = 0; b < nbe && !g_stop && !g_store_failed; ++b) {
            ++g_prog.done;
            if (!runs_here(cs, NULL, &be[b].cfg)) {
                /* not run and not recorded: a missing result is never read as a pass */
                ++be[b].skipped;
                progress(0, "%-8s %s  not run here (over @max_case_mib / @max_case_gflop)", be[b].name, cs->id);
                continue;
            }
            char params[400], shape[96];
            case_params(cs, params, sizeof params, shape, sizeof shape);
            if (measured_already(&r, be[b].ci, cs->name, params)) continue;
            progress(0, "%-8s %s ...", be[b].name, cs->id);
            g_ctx_id = be[b].ctx_id;
            g_dev_id = be[b].dev_id;
            g_flush = be[b].flush;
            rr_result *x = rr_add_result(&r);
            x->context = be[b].ci;
            long job = strcmp(be[b].name, "cpu") != 0 ? jobs[k] : -1;
            if (job >= 0) refworker_at(&g_rw, (size_t)job);
            run_case(be[b].ctx, ref, cs, &be[b].cfg, job, x, &held);
            publish(&r);
            x = &r.results[r.n_results - 1];
            char med[32];
            report_fmt_us(rr_median(x), med, sizeof med);
            int bad_case = strcmp(x->status, "ok") != 0 || strcmp(x->verdict, "fail") == 0;
            progress(bad_case, "%-8s %s  %s  %s n=%zu", be[b].name, cs->id,
                     strcmp(x->status, "ok") ? x->status : x->verdict, med, x->n_samples);
        }
        qgmm_case_release(held);
    }
    for (int b = 0; b < nbe; ++b) {
        if (be[b].skipped) {
            size_t l = strlen(skipped_note);
            snprintf(skipped_note + l, sizeof skipped_note - l, "%s%s:%zu", l ? "," : "", be[b].name, be[b].skipped);
            skipped_total += be[b].skipped;
        }
        qgmm_buffer_free(be[b].flush);
        qgmm_context_destroy(be[b].ctx);
    }
    g_flush = NULL;
    qgmm_context_destroy(ref);
    if (with_torch && !g_stop && !g_store_failed && !setup_error) torch_peers(o, &s, &r, ncases);
    if (g_tty) fprintf(stderr, "\n");
    if (g_refs.dir[0])
        fprintf(stderr, "qgmm-bench run: cpu reference cache %s: %zu found, %zu computed (%zu replacing a corrupt entry)\n",
                g_refs.dir, g_refs.hits, g_refs.misses + g_refs.rejected, g_refs.rejected);
    {
        qgmm_case_clocks k1;
        qgmm_case_clocks_get(&k1);
        char main_line[400], worker_line[400] = "";
        host_phases(main_line, sizeof main_line, &k0, &k1, g_spent.timing, g_spent.wait, now_s() - wall0);
        fprintf(stderr, "qgmm-bench run: main thread, seconds: %s\n", main_line);
        env_append(&r, "host_seconds", main_line);
        if (g_rw_on && g_rw.computed) {
            qgmm_case_clocks z;
            memset(&z, 0, sizeof z);
            pthread_mutex_lock(&g_rw.mu);
            qgmm_case_clocks wk = g_rw.clocks;
            size_t computed = g_rw.computed;
            double busy = g_rw.busy_s;
            pthread_mutex_unlock(&g_rw.mu);
            host_phases(worker_line, sizeof worker_line, &z, &wk, -1, -1, busy);
            fprintf(stderr, "qgmm-bench run: the reference worker computed %zu references beside the device, seconds: "
                            "%s\n", computed, worker_line);
            env_append(&r, "reference_worker_seconds", worker_line);
        }
    }
    if (g_stop && g_rw_on) {
        refworker_abandon(&g_rw); /* its cache and jobs stay until the process exits */
    } else {
        refworker_stop(&g_rw);
        free(jobs);
        refcache_free(&g_refs);
    }
    g_rw_on = 0;
    int stopped = g_stop;
    int complete = !stopped && !g_store_failed && !setup_error;
    r.finished_at = (int64_t)time(NULL);
    if (skipped_total) env_append(&r, "not_run", skipped_note);
    int rc = 0;
    if (g_live) {
        if (store_live_close(g_live, complete ? "complete" : "interrupted", r.finished_at, r.env_json, err, sizeof err)) {
            fprintf(stderr, "qgmm-bench run: closing run %lld in %s failed: %s\n", (long long)live.run_id, o->db, err);
            rc = 2;
        }
        g_live = NULL;
    }
    rr_derive(&r);
    /* with --json -, stdout carries the document alone; the people's table goes to stderr */
    FILE *human = o->json && strcmp(o->json, "-") == 0 ? stderr : stdout;
    fprintf(human, "qgmm-bench run %s: suite %s, %zu results (%zu measured now), revision %.12s%s, %lld s\n", r.uuid,
            r.suite, r.n_results, r.n_results - already, r.sha, r.dirty ? " (dirty)" : "",
            (long long)(r.finished_at - r.started_at));
    report_run_table(&r, human);
    if (skipped_total)
        fprintf(human, "not run (bigger than the suite's @max_case_mib / @max_case_gflop for that device): %s\n",
                skipped_note);
    if (o->json && complete) {
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
    } else if (o->json) {
        fprintf(stderr, "qgmm-bench run: the run is incomplete: no run document written to %s\n", o->json);
    }
    if (db && complete && rc == 0)
        fprintf(human, "stored as run %lld (%s) in %s, complete\n", (long long)live.run_id, r.uuid, o->db);
    else if (db && !g_store_failed && !setup_error)
        fprintf(stderr, "qgmm-bench run: interrupted by %s after %zu results; stored as run %lld (%s), state interrupted: "
                        "finish it with `qgmm-bench run --db %s --resume %lld`\n",
                stopped == SIGINT ? "SIGINT" : "SIGTERM", r.n_results, (long long)live.run_id, r.uuid, o->db,
                (long long)live.run_id);
    else if (stopped)
        fprintf(stderr, "qgmm-bench run: interrupted by %s after %zu results (nothing stored: no --db)\n",
                stopped == SIGINT ? "SIGINT" : "SIGTERM", r.n_results);
    if (g_store_failed || setup_error) rc = 2;
    else if (stopped && rc == 0) rc = 128 + stopped;
    store_close(db);
    json_value_free(stored_opts);
    rr_free(&r);
    rr_free(&here);
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
        if (opt_value(argc, argv, &i, "--db", &o.db)) continue;
        if (opt_value(argc, argv, &i, "--json", &o.json)) continue;
        if (opt_value(argc, argv, &i, "--resume", &o.resume)) continue;
        if (opt_value(argc, argv, &i, "--ref-cache", &o.ref_cache)) continue;
        if (strcmp(argv[i], "--serial-checks") == 0) { o.serial_checks = 1; continue; }
        ++o.n_measure_opts;
        if (opt_value(argc, argv, &i, "--peers", &o.peers)) continue;
        if (opt_value(argc, argv, &i, "--suite", &o.suite)) continue;
        if (opt_value(argc, argv, &i, "--backend", &o.backends)) continue;
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

/* The cases of s (those whose id contains filter, when given) as `qgmm-bench cases --json`
 * writes them: the input of ci/peers/torch_peers.py. */
static void write_cases_json(FILE *f, const suite *s, const char *filter)
{
    fprintf(f, "{\"format\": \"qgmm-cases\", \"version\": 1, \"suite\": \"%s\", \"cases\": [\n", s->name);
    int first = 1;
    for (size_t k = 0; k < s->n; ++k) {
        const qgmm_case *c = &s->cases[k].c;
        if (filter && !strstr(c->id, filter)) continue;
        char params[400], shape[96];
        case_params(c, params, sizeof params, shape, sizeof shape);
        int32_t offs[4096];
        int64_t g = qgmm_case_offsets(c, offs, 4096);
        json_buf b;
        jb_init(&b);
        jb_printf(&b, "%s  {\"benchmark\": ", first ? "" : ",\n");
        first = 0;
        jb_str(&b, c->name);
        jb_printf(&b, ", \"id\": ");
        jb_str(&b, c->id);
        jb_printf(&b, ", \"params\": %s, \"shape\": ", params);
        jb_str(&b, shape);
        jb_printf(&b, ", \"op\": %d, \"family\": %d, \"recipe\": \"%s\", \"gemm_kind\": \"%s\", \"pass\": %d, "
                      "\"in_dtype\": \"%s\", \"q_dtype\": \"%s\", \"out_dtype\": \"%s\", \"M\": %lld, \"N\": %lld, "
                      "\"K\": %lld, \"E\": %lld, \"G\": %lld, \"bytes\": %.0f, \"flops\": %.0f, \"ceiling\": \"%s\", \"offs\": [",
                  (int)c->op, (int)c->family, qgmm_case_recipe_name(c->gemm.recipe),
                  c->gemm.kind == QGMM_GEMM_K_GROUPED ? "k" : "m", (int)c->pass, qgmm_dtype_name(c->in_dtype),
                  qgmm_dtype_name(c->q_dtype), qgmm_dtype_name(c->out_dtype), (long long)c->shape.M,
                  (long long)c->shape.N, (long long)c->shape.K, (long long)c->shape.E, (long long)c->shape.G, c->bytes,
                  c->flops, (c->family == QGMM_FAMILY_GEMM || c->family == QGMM_FAMILY_RECIPE) ? "gemm" : "copy");
        for (int64_t i = 0; i < g && i < 4096; ++i) jb_printf(&b, "%s%d", i ? "," : "", offs[i]);
        jb_printf(&b, "]}");
        fputs(b.data, f);
        jb_free(&b);
    }
    fprintf(f, "\n]}\n");
}

static const char *const REFERENCES_HELP =
    "usage: qgmm-bench references [--suite NAME|FILE] [--ref-cache DIR] [--filter TEXT] [--max-mib N]\n"
    "                             [--jobs N]\n"
    "\n"
    "Fills the CPU reference cache of `run` (see its --ref-cache) with the reference of every\n"
    "exact case of the suite: what a run on a cold cache computes, without a device and without\n"
    "timing anything, so that a GPU machine's nightly starts warm (fill it on a CPU box, copy the\n"
    "directory). Entries are keyed by the case library linked into this binary and by libqgmm\n"
    "(the cpu backend): copy the cache with the build that made it. Cases already cached are\n"
    "skipped. Each case runs on every core (OpenMP); --jobs N (default 2) computes N cases at\n"
    "once, so that one's serial parts (allocation, poison, page faults) overlap another's\n"
    "parallel ones, as long as their host memory (about 3 times a case's bytes each) fits in\n"
    "three quarters of the memory available; a case that does not fit beside the others waits\n"
    "for them. --max-mib N skips cases moving more than N MiB. Prints one line per case as it\n"
    "is done; exit 0, 1 when a reference's own check failed, 2 on usage errors.\n";

/* `references`: the cases are taken in suite order by --jobs threads, each with its own CPU
 * context (the case library and the cpu backend keep no shared state per case; the run's
 * reference worker relies on the same). A case is admitted when its estimated host memory
 * fits beside those being computed, or when none is: one that waits holds the others back
 * from taking new cases, so a big case is not starved by small ones. */
#define REFS_MEM_FACTOR 3.0  /* host memory of a reference / its case's bytes (2.3-2.8 measured) */
typedef struct refs_pool {
    const suite *s;
    const char *filter;
    long long max_mib;
    size_t next, done, computed, skipped, cached;
    double mem_budget, mem_used;
    int bad, waiting, no_context;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} refs_pool;

static double mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
    if (f) fclose(f);
    if (kb > 0) return (double)kb * 1024.0;
    return (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
}

static void *refs_thread(void *u)
{
    refs_pool *p = u;
    qgmm_context *cpu = NULL;
    if (qgmm_context_create("cpu", 0, &cpu) != QGMM_OK) {
        pthread_mutex_lock(&p->mu);
        p->no_context = 1;
        pthread_mutex_unlock(&p->mu);
        return NULL;
    }
    const qgmm_check_options opts = {.hash_only = 1};
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->waiting) pthread_cond_wait(&p->cv, &p->mu);
        const qgmm_case *c = NULL;
        uint64_t key = 0, h;
        while (!c && p->next < p->s->n) {
            const qgmm_case *x = &p->s->cases[p->next++].c;
            if (x->check != QGMM_CHECK_EXACT || (p->filter && !strstr(x->id, p->filter))) continue;
            ++p->done;
            char params[400], shape[96];
            case_params(x, params, sizeof params, shape, sizeof shape);
            key = ref_key(x, params);
            if (refcache_get(&g_refs, key, x->id, &h)) { ++p->cached; continue; }
            if (p->max_mib > 0 && x->bytes > (double)(p->max_mib << 20)) {
                ++p->skipped;
                printf("skipped   %s (%.0f MiB, over --max-mib)\n", x->id, x->bytes / 1048576.0);
                fflush(stdout);
                continue;
            }
            c = x;
        }
        if (!c) break;
        const double need = REFS_MEM_FACTOR * c->bytes;
        ++p->waiting;
        while (p->mem_used > 0 && p->mem_used + need > p->mem_budget) pthread_cond_wait(&p->cv, &p->mu);
        --p->waiting;
        p->mem_used += need;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        const double a = now_s();
        const int ok = refcheck_compute(cpu, &opts, c, &h);
        if (ok) refcache_put(&g_refs, key, c->id, h);
        const double took = now_s() - a;
        pthread_mutex_lock(&p->mu);
        p->mem_used -= need;
        pthread_cond_broadcast(&p->cv);
        if (ok) {
            ++p->computed;
            printf("computed  %s  fnv1a64c:%016llx  %.1f s\n", c->id, (unsigned long long)h, took);
        } else {
            p->bad = 1;
            printf("FAILED    %s: the reference's own check did not pass (run it with `qgmm-bench run --backend cpu "
                   "--filter`)\n", c->id);
        }
        fflush(stdout);
    }
    pthread_mutex_unlock(&p->mu);
    qgmm_context_destroy(cpu);
    return NULL;
}

int cmd_references(int argc, char **argv)
{
    if (wants_help(argc, argv)) { fputs(REFERENCES_HELP, stdout); return 0; }
    const char *spec = "nightly", *filter = NULL, *cache = NULL, *v;
    long long max_mib = 0;
    int jobs = 2;
    for (int i = 1; i < argc; ++i) {
        if (opt_value(argc, argv, &i, "--suite", &spec)) continue;
        if (opt_value(argc, argv, &i, "--ref-cache", &cache)) continue;
        if (opt_value(argc, argv, &i, "--filter", &filter)) continue;
        if (opt_value(argc, argv, &i, "--max-mib", &v)) { max_mib = atoll(v); continue; }
        if (opt_value(argc, argv, &i, "--jobs", &v)) {
            jobs = atoi(v);
            if (jobs < 1 || jobs > 64) {
                fprintf(stderr, "qgmm-bench references: --jobs %s: expected 1 to 64\n", v);
                return 2;
            }
            continue;
        }
        fprintf(stderr, "qgmm-bench references: unknown argument %s (see --help)\n", argv[i]);
        return 2;
    }
    if (cache && strcmp(cache, "none") == 0) {
        fprintf(stderr, "qgmm-bench references: --ref-cache none keeps nothing; name a directory\n");
        return 2;
    }
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, -1);
    suite s;
    char err[1200];
    if (suite_load(spec, &s, err, sizeof err)) { fprintf(stderr, "qgmm-bench references: %s\n", err); return 2; }
    qgmm_context *cpu = NULL; /* loads the backends once, before the threads, and says why it cannot */
    if (qgmm_context_create("cpu", 0, &cpu) != QGMM_OK) {
        fprintf(stderr, "qgmm-bench references: no CPU context: %s\n", qgmm_last_error(NULL));
        suite_free(&s);
        return 2;
    }
    refs_open(cache);
    refs_pool p;
    memset(&p, 0, sizeof p);
    p.s = &s;
    p.filter = filter;
    p.max_mib = max_mib;
    p.mem_budget = 0.75 * mem_available();
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    const double t0 = now_s();
    pthread_t th[64];
    int started = 0;
    for (int j = 0; j < jobs; ++j)
        if (pthread_create(&th[started], NULL, refs_thread, &p) == 0) ++started;
    if (!started) refs_thread(&p); /* no thread: this one computes them */
    for (int j = 0; j < started; ++j) pthread_join(th[j], NULL);
    int rc = p.bad;
    if (p.no_context && p.next < s.n) { /* a thread without a context left cases behind */
        fprintf(stderr, "qgmm-bench references: a thread could not create its CPU context: %s\n", qgmm_last_error(NULL));
        rc = 2;
    }
    printf("%zu exact cases: %zu already cached, %zu computed, %zu skipped, in %.0f s with %d jobs (%s)\n", p.done,
           p.cached, p.computed, p.skipped, now_s() - t0, started ? started : 1, g_refs.dir);
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
    qgmm_context_destroy(cpu);
    refcache_free(&g_refs);
    suite_free(&s);
    return rc;
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
    if (json) {
        write_cases_json(stdout, &s, NULL);
    } else {
        for (size_t k = 0; k < s.n; ++k)
            printf("%-70s %10.3g B %10.3g FLOP\n", s.cases[k].c.id, s.cases[k].c.bytes, s.cases[k].c.flops);
    }
    suite_free(&s);
    return 0;
}
