/* suite.c — suite files (format: docs/runner.md "Suite files"). A line names a case of
 * the case library by id, or by variant name with a shape (comma lists expand to the
 * cartesian product), or pulls a whole library suite in with `lib:NAME`; `@key value`
 * lines set the timing budget and the ceilings, `@key.BACKEND value` for one backend. */
#include "bench_exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const k_lib_order[] = {"nightly", "smoke", "conformance", NULL};

static int push_case(suite *s, const qgmm_case *c)
{
    for (size_t i = 0; i < s->n; ++i)
        if (strcmp(s->cases[i].c.id, c->id) == 0) return 0;  /* a case listed twice runs once */
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 64;
        suite_case *n = realloc(s->cases, nc * sizeof *n);
        if (!n) return -1;
        s->cases = n;
        s->cap = nc;
    }
    s->cases[s->n++].c = *c;
    return 0;
}

static const qgmm_case *find_any(const char *id_or_name, int by_id_only)
{
    for (int i = 0; k_lib_order[i]; ++i) {
        const qgmm_case *c = qgmm_case_find(k_lib_order[i], id_or_name);
        if (c && (!by_id_only || strcmp(c->id, id_or_name) == 0)) return c;
    }
    return NULL;
}

static int parse_groups(const char *v, qgmm_group_pattern *g)
{
    for (int i = QGMM_GROUPS_NONE; i < QGMM_GROUPS_BAD; ++i)
        if (strcmp(v, qgmm_case_groups_name((qgmm_group_pattern)i)) == 0) { *g = (qgmm_group_pattern)i; return 0; }
    return -1;
}

/* key=v1,v2,... lists; expands recursively over the keys */
typedef struct dimlist { char key[16]; long long v[16]; int n; } dimlist;

static int expand(suite *s, const qgmm_case *tmpl, dimlist *d, int nd, int k, qgmm_case_shape sh,
                  char *err, size_t cap, int line)
{
    if (k == nd) {
        qgmm_case out;
        char why[256];
        if (qgmm_case_reshape(tmpl, &sh, &out, why, sizeof why) != QGMM_OK) {
            snprintf(err, cap, "line %d: %s with M=%lld N=%lld K=%lld E=%lld G=%lld: %s", line, tmpl->name,
                     (long long)sh.M, (long long)sh.N, (long long)sh.K, (long long)sh.E, (long long)sh.G, why);
            return -1;
        }
        return push_case(s, &out);
    }
    for (int i = 0; i < d[k].n; ++i) {
        qgmm_case_shape t = sh;
        long long v = d[k].v[i];
        switch (d[k].key[0]) {
        case 'M': t.M = v; break;
        case 'N': t.N = v; break;
        case 'K': t.K = v; break;
        case 'E': t.E = v; break;
        case 'G': t.G = v; break;
        }
        if (expand(s, tmpl, d, nd, k + 1, t, err, cap, line)) return -1;
    }
    return 0;
}

static int parse_line(suite *s, char *line, int ln, char *err, size_t cap)
{
    char *save = NULL;
    char *tok = strtok_r(line, " \t", &save);
    if (!tok) return 0;
    if (tok[0] == '@') {
        char *val = save ? save : (char *)"";
        while (*val == ' ' || *val == '\t') ++val;
        if (!*val) { snprintf(err, cap, "line %d: setting %s has no value", ln, tok); return -1; }
        if (s->n_settings >= 64) { snprintf(err, cap, "line %d: too many settings", ln); return -1; }
        snprintf(s->settings[s->n_settings][0], 128, "%s", tok + 1);
        snprintf(s->settings[s->n_settings][1], 128, "%s", val);
        s->n_settings++;
        return 0;
    }
    if (strncmp(tok, "lib:", 4) == 0) {
        int n = qgmm_case_count(tok + 4);
        if (n == 0) { snprintf(err, cap, "line %d: the case library has no suite \"%s\"", ln, tok + 4); return -1; }
        for (int i = 0; i < n; ++i)
            if (push_case(s, qgmm_case_get(tok + 4, i))) { snprintf(err, cap, "out of memory"); return -1; }
        return 0;
    }
    char *name = tok;
    dimlist d[5];
    int nd = 0;
    qgmm_case tmpl_copy;
    int have_override = 0;
    qgmm_group_pattern gp = QGMM_GROUPS_NONE;
    long long mult = 0;
    while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
        char *eq = strchr(tok, '=');
        if (!eq) { snprintf(err, cap, "line %d: \"%s\" is not KEY=VALUE", ln, tok); return -1; }
        *eq = 0;
        const char *key = tok, *val = eq + 1;
        if (strcmp(key, "groups") == 0) {
            if (parse_groups(val, &gp)) { snprintf(err, cap, "line %d: groups=%s unknown", ln, val); return -1; }
            have_override |= 1;
            continue;
        }
        if (strcmp(key, "mult") == 0) { mult = atoll(val); have_override |= 2; continue; }
        if (strlen(key) != 1 || !strchr("MNKEG", key[0])) {
            snprintf(err, cap, "line %d: unknown key \"%s\" (M N K E G groups mult)", ln, key);
            return -1;
        }
        if (nd >= 5) { snprintf(err, cap, "line %d: a dimension given twice", ln); return -1; }
        snprintf(d[nd].key, sizeof d[nd].key, "%s", key);
        d[nd].n = 0;
        char *vs = NULL;
        for (char *v = strtok_r((char *)val, ",", &vs); v; v = strtok_r(NULL, ",", &vs)) {
            if (d[nd].n >= 16) { snprintf(err, cap, "line %d: more than 16 values for %s", ln, key); return -1; }
            char *end;
            long long x = strtoll(v, &end, 10);
            if (*end || x < 0) { snprintf(err, cap, "line %d: %s=%s is not a non-negative integer", ln, key, v); return -1; }
            d[nd].v[d[nd].n++] = x;
        }
        ++nd;
    }
    const qgmm_case *tmpl = find_any(name, nd == 0 && !have_override);
    if (!tmpl) {
        snprintf(err, cap, "line %d: no case %s \"%s\" in the case library (qgmm-bench cases --suite conformance lists them)",
                 ln, nd ? "variant" : "id", name);
        return -1;
    }
    if (nd == 0 && !have_override) return push_case(s, tmpl);
    tmpl_copy = *tmpl;
    if (have_override & 1) tmpl_copy.groups = gp;
    if (have_override & 2) tmpl_copy.group_multiple = (int)mult;
    return expand(s, &tmpl_copy, d, nd, 0, tmpl->shape, err, cap, ln);
}

static int find_file(const char *spec, char *path, size_t cap)
{
    if (strchr(spec, '/') || strstr(spec, ".suite")) {
        snprintf(path, cap, "%s", spec);
        return access(path, R_OK);
    }
    const char *dirs[3] = {getenv("QGMM_SUITES_DIR"), "suites", QGMM_SOURCE_DIR "/suites"};
    for (int i = 0; i < 3; ++i) {
        if (!dirs[i] || !*dirs[i]) continue;
        snprintf(path, cap, "%s/%s.suite", dirs[i], spec);
        if (access(path, R_OK) == 0) return 0;
    }
    return -1;
}

int suite_load(const char *spec, suite *s, char *err, size_t cap)
{
    memset(s, 0, sizeof *s);
    char path[1024];
    const char *base = strrchr(spec, '/') ? strrchr(spec, '/') + 1 : spec;
    snprintf(s->name, sizeof s->name, "%s", base);
    char *dot = strstr(s->name, ".suite");
    if (dot) *dot = 0;
    if (find_file(spec, path, sizeof path) != 0) {
        if (strchr(spec, '/') || strstr(spec, ".suite")) {
            snprintf(err, cap, "%s: cannot read the suite file", spec);
            return -1;
        }
        int n = qgmm_case_count(spec);
        if (n == 0) {
            snprintf(err, cap, "no suite \"%s\": neither suites/%s.suite nor a case-library suite (smoke, nightly, conformance)",
                     spec, spec);
            return -1;
        }
        for (int i = 0; i < n; ++i) push_case(s, qgmm_case_get(spec, i));
        return 0;
    }
    snprintf(s->path, sizeof s->path, "%s", path);
    FILE *f = fopen(path, "r");
    if (!f) { snprintf(err, cap, "%s: cannot open", path); return -1; }
    char line[2048];
    int ln = 0;
    char e[600];
    while (fgets(line, sizeof line, f)) {
        ++ln;
        char *h = strchr(line, '#');
        if (h) *h = 0;
        line[strcspn(line, "\r\n")] = 0;
        if (parse_line(s, line, ln, e, sizeof e)) {
            snprintf(err, cap, "%s: %s", path, e);
            fclose(f);
            suite_free(s);
            return -1;
        }
    }
    fclose(f);
    if (s->n == 0) { snprintf(err, cap, "%s: no cases", path); suite_free(s); return -1; }
    return 0;
}

void suite_free(suite *s)
{
    free(s->cases);
    s->cases = NULL;
    s->n = s->cap = 0;
}

static void apply(bench_cfg *c, const char *key, const char *val)
{
    if (strcmp(key, "budget_ms") == 0) c->budget_ms = atof(val);
    else if (strcmp(key, "min_samples") == 0) c->min_samples = atoi(val);
    else if (strcmp(key, "max_samples") == 0) c->max_samples = atoi(val);
    else if (strcmp(key, "ci_pct") == 0) c->ci_pct = atof(val);
    else if (strcmp(key, "warmup_min") == 0) c->warmup_min = atoi(val);
    else if (strcmp(key, "warmup_ms") == 0) c->warmup_ms = atof(val);
    else if (strcmp(key, "gemm_check_elems") == 0) c->gemm_check_elems = atoll(val);
    else if (strcmp(key, "copy_mib") == 0) c->copy_bytes = atoll(val) << 20;
    else if (strcmp(key, "gemm_ceiling") == 0) c->gemm_ceiling = atoll(val);
    else if (strcmp(key, "exact_check_max_mib") == 0) c->exact_check_max_bytes = atoll(val) << 20;
    else if (strcmp(key, "max_case_mib") == 0) c->max_case_bytes = atoll(val) << 20;
    else if (strcmp(key, "max_case_gflop") == 0) c->max_case_flops = atof(val) * 1e9;
    else if (strcmp(key, "flush_l2_mib") == 0) c->flush_bytes = atoll(val) << 20;
    else if (strcmp(key, "canary_m") == 0) c->canary_m = atoll(val);
    else if (strcmp(key, "canary_k") == 0) c->canary_k = atoll(val);
    else if (strcmp(key, "ceiling_recipes") == 0) snprintf(c->ceiling_recipes, sizeof c->ceiling_recipes, "%s", val);
    else fprintf(stderr, "qgmm-bench: warning: unknown suite setting @%s ignored\n", key);
}

void suite_config(const suite *s, const char *backend, int cpu_device, bench_cfg *c)
{
    c->budget_ms = 200;
    c->min_samples = 5;
    c->max_samples = 200;
    c->ci_pct = 1.0;
    c->warmup_min = 2;
    c->warmup_ms = 20;
    c->gemm_check_elems = 4096;
    c->copy_bytes = 256ll << 20;
    c->gemm_ceiling = 8192;
    snprintf(c->ceiling_recipes, sizeof c->ceiling_recipes, "bf16 fp8_rowwise fp8_blockwise mxfp8");
    c->canary_m = 4096;
    c->canary_k = 2048;
    if (cpu_device) {  /* a scalar oracle or a software GPU: small ceilings, few samples */
        c->copy_bytes = 16ll << 20;
        c->gemm_ceiling = 256;
        c->canary_m = 256;
        c->min_samples = 3;
    }
    for (int pass = 0; pass < 3; ++pass)
        for (int i = 0; i < s->n_settings; ++i) {
            const char *k = s->settings[i][0];
            const char *dot = strchr(k, '.');
            if (pass == 0 && !dot) apply(c, k, s->settings[i][1]);
            const char *want = pass == 1 ? (cpu_device ? "cpu" : NULL) : backend;
            if (pass >= 1 && dot && want && strcmp(dot + 1, want) == 0 && !(pass == 2 && strcmp(backend, "cpu") == 0)) {
                char kk[128];
                snprintf(kk, sizeof kk, "%.*s", (int)(dot - k), k);
                apply(c, kk, s->settings[i][1]);
            }
        }
}
