/* test_gate.c — the gate on synthetic histories: passes on noise-only history, fails on
 * a planted 20 % slowdown over a stable history and on a planted numerics failure, gives
 * no perf verdict on a short history, downgrades a slowdown the canary shares, and keeps
 * the thresholds max(5 %, 3x noise). */
#include <math.h>
#include <string.h>

#include "gate.h"
#include "runner_testutil.h"

static sqlite3 *history(const char *name, int nruns, double noise)
{
    char path[1024], err[512];
    t_db_path(name, path, sizeof path);
    sqlite3 *db;
    if (store_open(path, &db, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(1); }
    for (int i = 0; i < nruns; ++i) {
        run_record r;
        int al;
        int64_t id;
        t_make_run(&r, 3, 30, 100.0, noise, (unsigned)(i * 7 + 1), 1000 + i * 100);
        if (store_write_run(db, &r, "local", &al, &id, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(1); }
        rr_free(&r);
    }
    return db;
}

/* adds one run whose bench0 is scaled by `slow` (and optionally fails numerics); returns its id */
static int64_t add_run(sqlite3 *db, double slow, int numerics_fail, double noise, unsigned seed)
{
    run_record r;
    int al;
    int64_t id;
    char err[512];
    t_make_run(&r, 3, 30, 100.0, noise, seed, 100000);
    for (size_t k = 0; k < r.results[0].n_samples; ++k) r.results[0].samples_us[k] *= slow;
    if (numerics_fail) {
        rr_set(&r.results[1].verdict, "fail");
        rr_set(&r.results[1].message, "planted: 3 mismatched bytes");
    }
    if (store_write_run(db, &r, "local", &al, &id, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(1); }
    rr_free(&r);
    return id;
}

static int gate(sqlite3 *db, int64_t id, const char *tag)
{
    gate_config cfg;
    gate_config_default(&cfg);
    char err[512];
    printf("--- %s\n", tag);
    int rc = gate_run(db, id, &cfg, stdout, err, sizeof err);
    if (rc < 0) fprintf(stderr, "gate: %s\n", err);
    return rc;
}

int main(void)
{
    /* pure decisions */
    gate_config cfg;
    gate_config_default(&cfg);
    double base[10][20], cur[20];
    const double *bp[10];
    size_t bn[10];
    for (int i = 0; i < 10; ++i) {
        for (int k = 0; k < 20; ++k) base[i][k] = 100 + (k % 5) * 0.2 + i * 0.01;
        bp[i] = base[i];
        bn[i] = 20;
    }
    for (int k = 0; k < 20; ++k) cur[k] = 104 + (k % 5) * 0.2;  /* 4 % slower: under the 5 % floor */
    gate_decision d = gate_perf_decide(&cfg, cur, 20, bp, bn, 10);
    CHECK(d.verdict == GATE_OK, "4%% must pass: %s", d.reason);
    for (int k = 0; k < 20; ++k) cur[k] = 106 + (k % 5) * 0.2;
    d = gate_perf_decide(&cfg, cur, 20, bp, bn, 10);
    CHECK(d.verdict == GATE_FAIL && fabs(d.threshold - 0.05) < 1e-12, "6%% over a quiet history fails: %s", d.reason);
    /* a noisy series (run medians spread ~4 %): threshold = 3 x noise > 5 % */
    for (int i = 0; i < 10; ++i)
        for (int k = 0; k < 20; ++k) base[i][k] = 100 * (1 + 0.04 * ((i % 3) - 1)) + (k % 5) * 0.2;
    d = gate_perf_decide(&cfg, cur, 20, bp, bn, 10);
    CHECK(d.verdict != GATE_FAIL && d.threshold > 0.05, "6%% within 3x noise passes: thr %g %s", d.threshold, d.reason);
    d = gate_perf_decide(&cfg, cur, 20, bp, bn, 2);
    CHECK(d.verdict == GATE_NO_HISTORY, "2 runs are too few: %s", d.reason);
    /* too few samples for p < 0.001: a warning, not a failure */
    for (int i = 0; i < 10; ++i) for (int k = 0; k < 20; ++k) base[i][k] = 100 + (k % 5) * 0.2;
    double two[2] = {130, 131};
    d = gate_perf_decide(&cfg, two, 2, bp, bn, 10);
    CHECK(d.verdict == GATE_WARN, "30%% on 2 samples is not significant: %s", d.reason);

    /* over the store */
    sqlite3 *db = history("gate_noise", 10, 0.01);
    int64_t id = add_run(db, 1.0, 0, 0.01, 999);
    CHECK(gate(db, id, "noise only") == 0, "noise-only history must pass");
    id = add_run(db, 1.20, 0, 0.01, 1000);
    CHECK(gate(db, id, "20% slower") == 1, "a 20%% slowdown must fail");
    CHECK(t_count(db, "SELECT count(*) FROM regression WHERE kind = 'perf' AND severity = 'fail'") == 1, "recorded");
    CHECK(t_count(db, "SELECT count(*) FROM regression WHERE change > 0.15 AND p_value < 0.001 AND baseline_runs = 10") == 1,
          "statistics recorded");
    store_close(db);

    db = history("gate_numerics", 10, 0.01);
    id = add_run(db, 1.0, 1, 0.01, 77);
    CHECK(gate(db, id, "planted numerics failure") == 1, "a numerics failure must fail");
    CHECK(t_count(db, "SELECT count(*) FROM regression WHERE kind = 'numerics'") == 1, "numerics recorded");
    store_close(db);

    db = history("gate_short", 2, 0.01);
    id = add_run(db, 1.5, 0, 0.01, 5);
    CHECK(gate(db, id, "short history") == 0, "no perf verdict on 2 runs");
    store_close(db);

    /* the canary slowed as much as the case: a noisy machine, a warning */
    db = history("gate_canary", 10, 0.01);
    {
        char err[512];
        sqlite3_exec(db, "UPDATE series SET role = 'canary' WHERE benchmark = 'bench2'", NULL, NULL, NULL);
        run_record r;
        int al;
        int64_t rid;
        t_make_run(&r, 3, 30, 100.0, 0.01, 4242, 200000);
        for (int x = 0; x < 3; x += 2)
            for (size_t k = 0; k < r.results[x].n_samples; ++k) r.results[x].samples_us[k] *= 1.3;
        rr_set(&r.results[2].role, "canary");
        store_write_run(db, &r, "local", &al, &rid, err, sizeof err);
        rr_free(&r);
        CHECK(gate(db, rid, "canary slowed too") == 0, "slowdown shared with the canary is a warning");
        CHECK(t_count(db, "SELECT count(*) FROM regression WHERE severity = 'warn'") >= 1, "warned");
    }
    store_close(db);
    /* determinism: same revision, same code hash, same case -> the same output bytes */
    db = history("gate_determinism", 0, 0.01);
    {
        char err[512];
        int64_t ids[3];
        const char *h0[3] = {"fnv1a64:0000000000000001", "fnv1a64:0000000000000001", "fnv1a64:0000000000000002"};
        const char *h1[3] = {"fnv1a64:00000000000000a1", "fnv1a64:00000000000000a1", "fnv1a64:00000000000000a2"};
        for (int k = 0; k < 3; ++k) {
            run_record r;
            int al;
            t_make_run(&r, 2, 10, 100.0, 0.01, (unsigned)k + 50, 300000 + k);
            rr_set(&r.contexts[0].code_hash, "fnv1a64:00000000000c0de0");
            rr_set(&r.results[0].output_hash, h0[k]);   /* an exact case */
            r.results[0].mismatched_bytes = 0;
            rr_set(&r.results[1].output_hash, h1[k]);   /* a numeric case */
            r.results[1].rel_err = 1e-3;
            store_write_run(db, &r, "local", &al, &ids[k], err, sizeof err);
            rr_free(&r);
        }
        CHECK(gate(db, ids[1], "same output twice") == 0, "identical outputs pass");
        CHECK(gate(db, ids[2], "exact output changed, same code") == 1, "a changed exact output with identical code fails");
        CHECK(t_count(db, "SELECT count(*) FROM regression WHERE kind = 'numerics' AND severity = 'warn'") == 1,
              "a changed numeric output is a warning");
        sqlite3_exec(db, "UPDATE run SET dirty = 1 WHERE id = 3", NULL, NULL, NULL);
        CHECK(gate(db, ids[2], "dirty tree") == 0, "a dirty tree is not compared");
    }
    store_close(db);
    return t_report("test_gate");
}
