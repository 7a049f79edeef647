/* conformance_report.c — table and JSON output of qgmm-conformance. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conformance_report.h"

static void json_str(const char *s)
{
    putchar('"');
    for (; s && *s; ++s) {
        const unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') printf("\\%c", ch);
        else if (ch < 0x20) printf("\\u%04x", ch);
        else putchar(ch);
    }
    putchar('"');
}

static void json_num(double v)
{
    if (isnan(v)) printf("null");
    else if (isinf(v)) printf(v > 0 ? "1e999" : "-1e999"); /* JSON has no inf: parsers read these as +-inf */
    else printf("%.6g", v);
}

static void json_sep(report *r)
{
    if (!r->first_json_item) printf(",\n");
    r->first_json_item = 0;
}

void report_init(report *r, int json, const char *suite)
{
    memset(r, 0, sizeof *r);
    r->json = json;
    r->first_json_item = 1;
    if (json) {
        printf("{\"suite\":");
        json_str(suite);
        printf(",\"results\":[\n");
    }
}

void report_backend_begin(report *r, const char *backend, const char *describe, int has_ref, int self_ref)
{
    if (r->json) return;
    printf("\n== backend %s: %s\n", backend, describe);
    if (!has_ref)
        printf("   (no cpu reference: byte-exact cases are skipped)\n");
    else if (self_ref)
        printf("   NOTE: cpu vs cpu reference — byte-exact cases only show determinism (and the poison/"
               "coverage checks);\n         GEMM and recipe cases are checked against float64 as on any backend.\n");
    printf("%-84s %-8s %-11s %-52s %9s\n", "case", "backend", "verdict", "mismatches | kernel relerr, SQNR | recipe SQNR", "ms");
}

static void detail(const qgmm_case_result *res, char *out, size_t cap)
{
    if (res->verdict == QGMM_VERDICT_PASS && res->status == QGMM_ERR_BAD_OFFSETS) {
        snprintf(out, cap, "BAD_OFFSETS reported, outputs untouched");
        return;
    }
    if (res->verdict == QGMM_VERDICT_UNSUPPORTED || res->verdict == QGMM_VERDICT_SKIPPED ||
        (res->status != QGMM_OK)) {
        snprintf(out, cap, "-");
        return;
    }
    if (res->check == QGMM_CHECK_EXACT) {
        snprintf(out, cap, "%llu/%llu B differ%s", (unsigned long long)res->mismatched_bytes,
                 (unsigned long long)res->compared_bytes, res->reference_is_same_backend ? " (self)" : "");
        return;
    }
    char rec[64] = "";
    if (!isnan(res->recipe_sqnr_db)) {
        if (!isnan(res->min_recipe_sqnr_db))
            snprintf(rec, sizeof rec, " | %.1f dB (>=%.0f)", res->recipe_sqnr_db, res->min_recipe_sqnr_db);
        else
            snprintf(rec, sizeof rec, " | %.1f dB", res->recipe_sqnr_db);
    }
    snprintf(out, cap, "%.2e (<=%.0e), %.1f dB%s", res->rel_fro_err, res->max_rel_fro_allowed, res->sqnr_db, rec);
}

void report_case(report *r, const qgmm_case *c, const char *backend, const qgmm_case_result *res)
{
    switch (res->verdict) {
    case QGMM_VERDICT_PASS: r->passed++; break;
    case QGMM_VERDICT_FAIL: r->failed++; break;
    case QGMM_VERDICT_UNSUPPORTED: r->unsupported++; r->skipped++; break;
    case QGMM_VERDICT_SKIPPED: r->skipped++; break;
    }
    r->total_ms += res->ms;
    if (r->json) {
        json_sep(r);
        printf("{\"case\":");
        json_str(c->id);
        printf(",\"name\":");
        json_str(c->name);
        printf(",\"backend\":");
        json_str(backend);
        printf(",\"verdict\":");
        json_str(qgmm_verdict_name(res->verdict));
        printf(",\"check\":\"%s\",\"status\":", res->check == QGMM_CHECK_EXACT ? "exact" : "numeric");
        json_str(qgmm_status_string(res->status));
        printf(",\"self_reference\":%s", res->reference_is_same_backend ? "true" : "false");
        printf(",\"compared_bytes\":%llu,\"mismatched_bytes\":%llu,\"poison_violations\":%llu",
               (unsigned long long)res->compared_bytes, (unsigned long long)res->mismatched_bytes,
               (unsigned long long)res->poison_violations);
        printf(",\"rel_fro_err\":"); json_num(res->rel_fro_err);
        printf(",\"max_rel_fro_allowed\":"); json_num(res->max_rel_fro_allowed);
        printf(",\"sqnr_db\":"); json_num(res->sqnr_db);
        printf(",\"max_abs_err\":"); json_num(res->max_abs_err);
        printf(",\"recipe_sqnr_db\":"); json_num(res->recipe_sqnr_db);
        printf(",\"min_recipe_sqnr_db\":"); json_num(res->min_recipe_sqnr_db);
        printf(",\"output_hash\":\"%016llx\",\"ms\":", (unsigned long long)res->output_hash);
        json_num(res->ms);
        printf(",\"bytes\":%.0f,\"flops\":%.0f,\"message\":", c->bytes, c->flops);
        json_str(res->message);
        printf("}");
        return;
    }
    char d[160];
    detail(res, d, sizeof d);
    printf("%-84s %-8s %-11s %-52s %9.2f\n", c->id, backend, qgmm_verdict_name(res->verdict), d, res->ms);
    if (res->message[0] && res->verdict != QGMM_VERDICT_PASS) printf("    -> %s\n", res->message);
    fflush(stdout);
}

void report_unavailable(report *r, const char *backend, const char *status, const char *reason)
{
    if (r->json) {
        json_sep(r);
        printf("{\"backend\":");
        json_str(backend);
        printf(",\"verdict\":\"unavailable\",\"status\":");
        json_str(status);
        printf(",\"message\":");
        json_str(reason);
        printf("}");
        return;
    }
    printf("\n== backend %s: not available here (%s: %s)\n", backend, status, reason);
}

void report_backend_end(report *r, const char *backend)
{
    (void)r;
    (void)backend;
}

void report_finish(report *r)
{
    if (r->json) {
        printf("\n],\"summary\":{\"passed\":%d,\"failed\":%d,\"skipped\":%d,\"unsupported\":%d}}\n",
               r->passed, r->failed, r->skipped, r->unsupported);
        return;
    }
    printf("\n%d passed, %d failed, %d skipped", r->passed, r->failed, r->skipped);
    if (r->unsupported) printf(" (%d unsupported)", r->unsupported);
    printf("\n");
}
