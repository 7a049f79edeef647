/*
 * qgmm-conformance — runs one case suite (default "conformance") on one backend, or on
 * every available one, against the CPU reference, and prints one row per case.
 *
 * Exit status: 0 every case passed; 1 any case failed; 77 the backend is not available
 * here, or nothing could be checked (ctest reports SKIP, never PASS). A case a backend
 * answers QGMM_ERR_UNSUPPORTED for is "unsupported" and counted as skipped — except on
 * cpu, the reference, which must implement everything: there it is a failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance_report.h"
#include "qgmm.h"
#include "qgmm_cases.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: qgmm-conformance [--backend NAME|all] [--suite NAME] [--filter SUBSTR]...\n"
            "                        [--list] [--json] [--require-reference] [--sample N]\n"
            "\n"
            "Runs every case of a suite on a backend and checks it against the CPU reference:\n"
            "casts, layouts and padding byte for byte (every output byte, guard bands included),\n"
            "GEMMs by relative Frobenius error vs float64 of the dequantized operands and SQNR vs\n"
            "float64 of the bf16 operands (thresholds: cases/qgmm_thresholds.h,\n"
            "docs/numerics.md).\n"
            "\n"
            "  --backend NAME   cpu, cuda, hip, vulkan, a plugin name, or all (default: all)\n"
            "  --suite NAME     conformance (default), smoke or nightly\n"
            "  --filter SUBSTR  only cases whose id contains SUBSTR (repeat: any of them)\n"
            "  --list           print the selected case ids with a description, run nothing\n"
            "  --json           print the results as one JSON document instead of a table\n"
            "  --require-reference  fail (exit 1) when the cpu reference cannot be created,\n"
            "                   instead of skipping the byte-exact cases\n"
            "  --sample N       GEMMs: compare N sampled output elements with float64 instead\n"
            "                   of all (for the big shapes of smoke/nightly)\n"
            "  --backends       list every backend with availability and the reason, run nothing\n"
            "  --help           this text\n"
            "\n"
            "Exit: 0 all passed, 1 any failure, 77 backend not available (or nothing checked).\n"
            "With --backend cpu the byte-exact cases compare the cpu backend with itself: that\n"
            "shows determinism and exercises every case (plus the poison/coverage checks),\n"
            "while GEMM cases are still checked against float64.\n");
}

typedef struct opts {
    const char *backend, *suite;
    const char *filters[32];
    int nfilters, list, json, require_ref;
    long long sample;
} opts;

static int selected(const opts *o, const qgmm_case *c)
{
    if (!o->nfilters) return 1;
    for (int i = 0; i < o->nfilters; ++i)
        if (strstr(c->id, o->filters[i])) return 1;
    return 0;
}

/* --backends: what this machine has, with the reason for each backend it lacks. */
static void print_backends(void)
{
    printf("%-10s %-11s %-7s %s\n", "backend", "available", "devices", "library / reason");
    for (int i = 0; i < qgmm_backend_count(); ++i) {
        qgmm_backend_info bi;
        if (qgmm_backend_get_info(i, &bi) != QGMM_OK) continue;
        printf("%-10s %-11s %-7d %s\n", bi.name, bi.available ? "yes" : "no", bi.device_count,
               bi.available ? bi.library : bi.reason);
    }
}

static int parse(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    o->backend = "all";
    o->suite = "conformance";
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const int has = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); exit(0); }
        else if (!strcmp(a, "--backends")) { print_backends(); exit(0); }
        else if (!strcmp(a, "--backend") && has) o->backend = argv[++i];
        else if (!strcmp(a, "--suite") && has) o->suite = argv[++i];
        else if (!strcmp(a, "--filter") && has) {
            if (o->nfilters == 32) { fprintf(stderr, "too many --filter options (max 32)\n"); return -1; }
            o->filters[o->nfilters++] = argv[++i];
        } else if (!strcmp(a, "--sample") && has) o->sample = atoll(argv[++i]);
        else if (!strcmp(a, "--list")) o->list = 1;
        else if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--require-reference")) o->require_ref = 1;
        else {
            fprintf(stderr, "qgmm-conformance: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return -1;
        }
    }
    if (!qgmm_case_count(o->suite)) {
        fprintf(stderr, "qgmm-conformance: unknown or empty suite '%s'\n", o->suite);
        return -1;
    }
    return 0;
}

/* Runs the suite on one backend. Adds to the totals; returns 0, or 77 when the backend
 * is unavailable. */
static int run_backend(const opts *o, const char *backend, qgmm_context *ref, report *rep)
{
    qgmm_context *ctx = NULL;
    qgmm_status st = qgmm_context_create(backend, 0, &ctx);
    if (st != QGMM_OK) {
        report_unavailable(rep, backend, qgmm_status_string(st), qgmm_last_error(NULL));
        return 77;
    }
    report_backend_begin(rep, backend, qgmm_context_describe(ctx), ref != NULL,
                         ref && !strcmp(backend, "cpu"));
    const int is_cpu = !strcmp(qgmm_context_backend_name(ctx), "cpu");
    qgmm_check_options copt = {0};
    copt.gemm_sample_elems = o->sample;
    const int n = qgmm_case_count(o->suite);
    for (int i = 0; i < n; ++i) {
        const qgmm_case *c = qgmm_case_get(o->suite, i);
        if (!selected(o, c)) continue;
        qgmm_case_result r;
        memset(&r, 0, sizeof r);
        qgmm_case_instance *inst = NULL;
        st = qgmm_case_prepare(c, ctx, &inst);
        if (st != QGMM_OK) {
            r.verdict = st == QGMM_ERR_UNSUPPORTED ? QGMM_VERDICT_UNSUPPORTED : QGMM_VERDICT_FAIL;
            r.status = st;
            r.check = c->check;
            snprintf(r.message, sizeof r.message, "prepare returned %s: %s", qgmm_status_string(st),
                     qgmm_last_error(ctx));
        } else {
            st = qgmm_case_check(inst, ref, &copt, &r);
            if (st != QGMM_OK) {
                r.verdict = QGMM_VERDICT_FAIL;
                snprintf(r.message, sizeof r.message, "harness error %s", qgmm_status_string(st));
            }
            qgmm_case_release(inst);
        }
        /* the reference implements every case: unsupported there is a failure */
        if (is_cpu && r.verdict == QGMM_VERDICT_UNSUPPORTED) {
            r.verdict = QGMM_VERDICT_FAIL;
            char m[sizeof r.message];
            snprintf(m, sizeof m, "cpu reference reports unsupported: %s", r.message);
            memcpy(r.message, m, sizeof m);
        }
        report_case(rep, c, backend, &r);
    }
    report_backend_end(rep, backend);
    qgmm_context_destroy(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o) != 0) return 2;

    if (o.list) {
        const int n = qgmm_case_count(o.suite);
        int shown = 0;
        for (int i = 0; i < n; ++i) {
            const qgmm_case *c = qgmm_case_get(o.suite, i);
            if (!selected(&o, c)) continue;
            char d[512];
            qgmm_case_describe(c, d, sizeof d);
            printf("%s\n", d);
            shown++;
        }
        printf("%d cases\n", shown);
        return 0;
    }

    qgmm_context *ref = NULL;
    if (qgmm_context_create("cpu", 0, &ref) != QGMM_OK) {
        fprintf(stderr, "qgmm-conformance: the cpu reference is not available: %s\n", qgmm_last_error(NULL));
        if (o.require_ref) return 1;
        ref = NULL;
    }

    report rep;
    report_init(&rep, o.json, o.suite);
    int rc_unavail = 0;
    if (!strcmp(o.backend, "all")) {
        const int nb = qgmm_backend_count();
        int ran = 0;
        for (int b = 0; b < nb; ++b) {
            qgmm_backend_info info;
            if (qgmm_backend_get_info(b, &info) != QGMM_OK) continue;
            if (!info.available) {
                report_unavailable(&rep, info.name, "unavailable", info.reason);
                continue;
            }
            if (run_backend(&o, info.name, ref, &rep) == 0) ran++;
        }
        if (!ran) rc_unavail = 1;
    } else {
        rc_unavail = run_backend(&o, o.backend, ref, &rep) == 77;
    }
    report_finish(&rep);
    qgmm_context_destroy(ref);

    if (rep.failed) return 1;
    if (rc_unavail) return 77;
    if (!rep.passed) return 77; /* nothing was checked: never report that as a pass */
    return 0;
}
