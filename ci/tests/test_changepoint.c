/* test_changepoint.c — the change-point pass on synthetic histories: a step at a known
 * run is found there and names the right revisions; night-to-night noise is not flagged;
 * two steps are both found; a speed-up is reported but not recorded as a regression;
 * re-running is idempotent and keeps people's triage; the CLI and `gate --changepoints`. */
#include <math.h>
#include <string.h>
#include <sys/wait.h>

#include "changepoint.h"
#include "runner_testutil.h"

static unsigned rng = 12345;
static double urand(void)
{
    rng = rng * 1103515245u + 12345u;
    return ((rng >> 8) & 0xFFFFFF) / (double)0x1000000;
}
/* roughly normal, mean 0, sd 1 */
static double nrand(void) { return (urand() + urand() + urand() + urand() - 2.0) * sqrt(3.0); }

/* A history of `n` runs of 20 samples: level(i) x (1 + night_sd x N) per run, each sample
 * x (1 + 0.01 N). */
typedef struct hist {
    cp_point pts[128];
    double samples[128][20];
} hist;

static void make_hist(hist *h, size_t n, const double *level, double night_sd)
{
    for (size_t i = 0; i < n; ++i) {
        double night = level[i] * (1.0 + night_sd * nrand());
        for (int k = 0; k < 20; ++k) h->samples[i][k] = night * (1.0 + 0.01 * nrand());
        double tmp[20];
        memcpy(tmp, h->samples[i], sizeof tmp);
        /* median of 20 */
        for (int a = 1; a < 20; ++a)
            for (int b = a; b > 0 && tmp[b - 1] > tmp[b]; --b) { double t = tmp[b]; tmp[b] = tmp[b - 1]; tmp[b - 1] = t; }
        h->pts[i].median = 0.5 * (tmp[9] + tmp[10]);
        h->pts[i].samples = h->samples[i];
        h->pts[i].n = 20;
    }
}

static void test_pure(void)
{
    cp_config cfg;
    cp_config_default(&cfg);
    static hist h;
    double level[128];
    cp_found f[16];

    /* one step of +20 % at run 12 of 25, 1.5 % night-to-night noise */
    for (int i = 0; i < 25; ++i) level[i] = i < 12 ? 100.0 : 120.0;
    make_hist(&h, 25, level, 0.015);
    size_t n = cp_detect(&cfg, h.pts, 25, f, 16);
    CHECK(n == 1 && f[0].split == 12, "one step found at run 12 (n=%zu split=%zu)", n, n ? f[0].split : 0);
    if (n == 1) {
        CHECK(fabs(f[0].change - 0.20) < 0.03, "change %.3f", f[0].change);
        CHECK(f[0].p < 1e-3 && f[0].threshold >= 0.05 && f[0].n_before == 12 && f[0].n_after == 13,
              "p %.2g threshold %.3f sides %zu/%zu", f[0].p, f[0].threshold, f[0].n_before, f[0].n_after);
    }

    /* noise only, several seeds: 2 % night-to-night noise, 40 runs: nothing */
    size_t flagged = 0;
    for (int s = 0; s < 20; ++s) {
        for (int i = 0; i < 40; ++i) level[i] = 100.0;
        make_hist(&h, 40, level, 0.02);
        flagged += cp_detect(&cfg, h.pts, 40, f, 16);
    }
    CHECK(flagged == 0, "noise-only histories flagged %zu times", flagged);

    /* a 4 % step (below the 5 % floor) is not a change point */
    for (int i = 0; i < 30; ++i) level[i] = i < 15 ? 100.0 : 104.0;
    make_hist(&h, 30, level, 0.005);
    CHECK(cp_detect(&cfg, h.pts, 30, f, 16) == 0, "a 4%% step is below the rule");

    /* noisy series: 10 % night-to-night noise makes a 12 % step insignificant (3x noise) */
    for (int i = 0; i < 30; ++i) level[i] = i < 15 ? 100.0 : 112.0;
    make_hist(&h, 30, level, 0.10);
    CHECK(cp_detect(&cfg, h.pts, 30, f, 16) == 0, "a step within 3x the noise is not flagged");

    /* two steps: +15 % at 10, +25 % more at 22, of 34 runs */
    for (int i = 0; i < 34; ++i) level[i] = i < 10 ? 100.0 : i < 22 ? 115.0 : 143.75;
    make_hist(&h, 34, level, 0.01);
    n = cp_detect(&cfg, h.pts, 34, f, 16);
    CHECK(n == 2 && f[0].split == 10 && f[1].split == 22, "two steps at 10 and 22 (n=%zu: %zu %zu)", n,
          n > 0 ? f[0].split : 0, n > 1 ? f[1].split : 0);
    if (n == 2) CHECK(fabs(f[0].change - 0.15) < 0.03 && fabs(f[1].change - 0.25) < 0.03, "changes %.3f %.3f",
                      f[0].change, f[1].change);

    /* a regression and its fix: up at 8, back down at 16 */
    for (int i = 0; i < 24; ++i) level[i] = (i >= 8 && i < 16) ? 130.0 : 100.0;
    make_hist(&h, 24, level, 0.01);
    n = cp_detect(&cfg, h.pts, 24, f, 16);
    CHECK(n == 2 && f[0].split == 8 && f[0].change > 0.2 && f[1].split == 16 && f[1].change < -0.15,
          "regression and fix (n=%zu)", n);

    /* too short on one side: a step 2 runs before the end is not judged (min 3 runs) */
    for (int i = 0; i < 12; ++i) level[i] = i < 10 ? 100.0 : 150.0;
    make_hist(&h, 12, level, 0.01);
    CHECK(cp_detect(&cfg, h.pts, 12, f, 16) == 0, "needs min_runs on each side");
    cfg.min_runs = 2;
    n = cp_detect(&cfg, h.pts, 12, f, 16);
    CHECK(n == 1 && f[0].split == 10, "found with --min-runs 2 (n=%zu)", n);
}

/* ------------------------------------------------------------------ over the store */
static void sha_of(int i, char out[41])
{
    snprintf(out, 41, "%02x%038d", i, i);
}

/* Writes `n` runs; series bench0 steps from 100 to level_after at run `step` (if >= 0),
 * bench1 stays at 100 throughout, bench2 gets faster (100 -> 70) at run `step`. */
static void fill(sqlite3 *db, int first, int n, int step, double after)
{
    for (int i = first; i < first + n; ++i) {
        run_record r;
        t_make_run(&r, 3, 20, 100, 0.02, 1000u + (unsigned)i, 10000 + 100LL * i);
        char sha[41];
        sha_of(i, sha);
        rr_set(&r.sha, sha);
        double night = 1.0 + 0.01 * nrand();
        for (size_t k = 0; k < r.n_results; ++k) {
            double f = night;
            if (step >= 0 && i >= step && k == 0) f *= after / 100.0;
            if (step >= 0 && i >= step && k == 2) f *= 0.7;
            for (size_t s = 0; s < r.results[k].n_samples; ++s) r.results[k].samples_us[s] *= f;
        }
        int already;
        int64_t id;
        char err[512];
        CHECK(store_write_run(db, &r, "local", &already, &id, err, sizeof err) == 0, "write: %s", err);
        rr_free(&r);
    }
}

static long long count(sqlite3 *db, const char *sql) { return t_count(db, sql); }

static int run_cli(const char *args, char *out, size_t cap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", QGMM_BENCH_EXE, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t k = fread(out, 1, cap - 1, p);
    out[k] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_store(void)
{
    char path[1024], err[512];
    t_db_path("changepoint", path, sizeof path);
    sqlite3 *db = NULL;
    CHECK(store_open(path, &db, err, sizeof err) == 0, "open: %s", err);
    fill(db, 0, 20, 11, 125.0);
    cp_config cfg;
    cp_config_default(&cfg);
    size_t slower = 0;
    char buf[1 << 14];
    FILE *out = fmemopen(buf, sizeof buf, "w");
    CHECK(cp_run(db, &cfg, 0, out, &slower, err, sizeof err) == 0, "cp_run: %s", err);
    fclose(out);
    CHECK(slower == 1, "one slowdown (%zu)\n%s", slower, buf);
    CHECK(strstr(buf, "faster") && strstr(buf, "bench2"), "the speed-up is reported:\n%s", buf);
    char want_bad[41], want_good[41], q[1024];
    sha_of(11, want_bad);
    sha_of(10, want_good);
    snprintf(q, sizeof q,
             "SELECT count(*) FROM regression g JOIN series s ON s.id = g.series_id JOIN revision fb ON "
             "fb.id = g.first_bad_revision_id JOIN revision lg ON lg.id = g.last_good_revision_id JOIN run ON "
             "run.id = g.run_id JOIN revision rr ON rr.id = run.revision_id WHERE g.kind = 'changepoint' AND "
             "s.benchmark = 'bench0' AND fb.sha = '%s' AND lg.sha = '%s' AND rr.sha = '%s' AND g.status = 'detected' "
             "AND g.severity = 'fail' AND g.change BETWEEN 0.2 AND 0.3 AND g.baseline_runs = 11 AND g.after_runs = 9 "
             "AND g.reason LIKE '%%introduced in %.12s%%'",
             want_bad, want_good, want_bad, want_bad);
    CHECK(count(db, q) == 1, "bench0's row names first bad %s and last good %s", want_bad, want_good);
    CHECK(count(db, "SELECT count(*) FROM regression") == 1, "only the slowdown is recorded (%lld rows)",
          count(db, "SELECT count(*) FROM regression"));

    /* idempotent; triage kept; the history grows with noise only: same single row */
    out = fmemopen(buf, sizeof buf, "w");
    CHECK(cp_run(db, &cfg, 0, out, &slower, err, sizeof err) == 0, "rerun: %s", err);
    fclose(out);
    CHECK(count(db, "SELECT count(*) FROM regression") == 1, "rerun adds nothing");
    sqlite3_exec(db, "UPDATE regression SET status = 'acknowledged', note = 'bisected'", NULL, NULL, NULL);
    fill(db, 20, 6, 0, 125.0);
    out = fmemopen(buf, sizeof buf, "w");
    CHECK(cp_run(db, &cfg, 0, out, &slower, err, sizeof err) == 0, "grown: %s", err);
    fclose(out);
    /* runs 20..25 continue at the new levels: no new change point */
    CHECK(count(db, "SELECT count(*) FROM regression WHERE kind = 'changepoint'") == 1 &&
          count(db, "SELECT count(*) FROM regression WHERE status = 'acknowledged' AND note = 'bisected'") == 1,
          "triage kept over reruns");

    /* a stale untriaged row at a run where nothing shifted is dropped */
    sqlite3_exec(db,
                 "INSERT INTO regression(series_id, run_id, kind, severity, detected_at, updated_at, driver) "
                 "SELECT s.id, 5, 'changepoint', 'fail', 1, 1, '' FROM series s WHERE s.benchmark = 'bench1'",
                 NULL, NULL, NULL);
    CHECK(count(db, "SELECT count(*) FROM regression") == 2, "stale row planted");
    out = fmemopen(buf, sizeof buf, "w");
    CHECK(cp_run(db, &cfg, 0, out, &slower, err, sizeof err) == 0, "stale: %s", err);
    fclose(out);
    CHECK(count(db, "SELECT count(*) FROM regression") == 1, "stale untriaged row dropped");

    /* --since: only the newest 8 runs (no step inside) -> nothing new, nothing dropped */
    cfg.since = 8;
    out = fmemopen(buf, sizeof buf, "w");
    CHECK(cp_run(db, &cfg, 0, out, &slower, err, sizeof err) == 0 && slower == 0, "since: %s", err);
    fclose(out);
    CHECK(count(db, "SELECT count(*) FROM regression") == 1, "--since leaves older findings alone");
    store_close(db);

    /* the CLI */
    char cli[1 << 14], args[1400];
    CHECK(run_cli("changepoints --help", cli, sizeof cli) == 0 && strstr(cli, "--since"), "help");
    CHECK(run_cli("changepoints", cli, sizeof cli) == 2 && strstr(cli, "--db"), "needs --db: %s", cli);
    snprintf(args, sizeof args, "changepoints --db %s --series x", path);
    CHECK(run_cli(args, cli, sizeof cli) == 2, "bad --series");
    snprintf(args, sizeof args, "changepoints --db %s --series 999", path);
    CHECK(run_cli(args, cli, sizeof cli) == 2 && strstr(cli, "999"), "unknown series: %s", cli);
    snprintf(args, sizeof args, "changepoints --db %s --series 1 --no-record", path);
    CHECK(run_cli(args, cli, sizeof cli) == 0 && strstr(cli, "SLOWER") && strstr(cli, "introduced in 0b"),
          "one series: %s", cli);
    snprintf(args, sizeof args, "changepoints --db %s --all", path);
    CHECK(run_cli(args, cli, sizeof cli) == 0 && strstr(cli, "3 histories analysed, 1 slowdowns"), "all: %s", cli);

    /* gate --changepoints on a fresh store with the step */
    t_db_path("changepoint_gate", path, sizeof path);
    CHECK(store_open(path, &db, err, sizeof err) == 0, "open: %s", err);
    fill(db, 0, 14, 7, 130.0);
    store_close(db);
    snprintf(args, sizeof args, "gate --db %s --changepoints", path);
    int rc = run_cli(args, cli, sizeof cli);
    CHECK(rc == 0 && strstr(cli, "gate: PASS") && strstr(cli, "changepoints: 3 series") &&
              strstr(cli, "introduced in 07"),
          "gate --changepoints (rc %d): %s", rc, cli);
    db = NULL;
    CHECK(store_open(path, &db, err, sizeof err) == 0, "reopen: %s", err);
    CHECK(count(db, "SELECT count(*) FROM regression WHERE kind = 'changepoint'") == 1, "recorded by gate");
    store_close(db);
}

int main(void)
{
    test_pure();
    test_store();
    return t_report("test_changepoint");
}
