/* test_durable.c — a run stored as it goes (issue 23): SIGKILL and SIGTERM at random points
 * of real cpu runs, each followed by checks and `run --resume`; a stale heartbeat read as
 * interrupted by every reader; two runners writing one store at once beside a reader.
 *
 * Each iteration uses a fresh store, so the gate sees no history and its answer on the
 * resumed run must equal its answer on an uninterrupted run (numerics only, same counts).
 * 50 kills on the cpu backend (QGMM_DURABLE_ITERS), then 6 on Vulkan where a Vulkan device
 * (lavapipe in CI) is present (QGMM_DURABLE_VK_ITERS; without ceilings: lavapipe's take
 * seconds). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner_testutil.h"

#define FILTER "recip.e4m3fn.bf16/"   /* three rowwise casts of the smoke suite + 6 ceilings: under 1 s on cpu */

static const char *g_backend = "cpu";
static int g_no_ceilings;
static char g_refdir[1100];

/* Starts `qgmm-bench run` on db (stdout/stderr to log) and returns its pid. */
static pid_t start_run(const char *db, const char *log)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); close(fd); }
        execl(QGMM_BENCH_EXE, QGMM_BENCH_EXE, "run", "--suite", "smoke", "--backend", g_backend, "--filter", FILTER,
              "--budget-ms", "1", "--reason", "test", "--ref-cache", g_refdir, "--db", db,
              g_no_ceilings ? "--no-ceilings" : (char *)NULL, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int wait_rc(pid_t pid)
{
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The gate's summary line (no ids in it) and exit status. */
static int gate_answer(const char *db, char *summary, size_t cap)
{
    char cmd[2048], out[1 << 16];
    snprintf(cmd, sizeof cmd, "%s gate --no-record --db %s 2>&1", QGMM_BENCH_EXE, db);
    int rc = t_sh(cmd, out, sizeof out);
    const char *p = strstr(out, "gate: PASS");
    if (!p) p = strstr(out, "gate: FAIL");
    snprintf(summary, cap, "%.*s", p ? (int)strcspn(p, "\n") : 0, p ? p : "");
    return rc;
}

static void fresh(const char *db)
{
    char p[1100];
    unlink(db);
    snprintf(p, sizeof p, "%s-wal", db); unlink(p);
    snprintf(p, sizeof p, "%s-shm", db); unlink(p);
}

static int integrity_ok(sqlite3 *h)
{
    sqlite3_stmt *st;
    int ok = sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
             strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
    sqlite3_finalize(st);
    return ok;
}

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

/* `iters` runs of g_backend, each hit by SIGKILL or SIGTERM after a random delay, checked and
 * resumed. Returns the duration of an uninterrupted run, or -1 when the backend is absent. */
static double kill_loop(const char *db, const char *log, int iters, long long *expected_out)
{
    char cmd[4096], out[1 << 16];
    fresh(db);
    double t0 = now_s();
    int rc = wait_rc(start_run(db, log));
    double full_s = now_s() - t0;
    if (rc == 2 && strcmp(g_backend, "cpu") != 0) {
        printf("backend %s not available here: its kill loop skipped\n", g_backend);
        return -1;
    }
    CHECK(rc == 0, "uninterrupted %s run exit %d", g_backend, rc);
    sqlite3 *h;
    sqlite3_open(db, &h);
    long long expected = t_count(h, "SELECT count(*) FROM result");
    CHECK(expected >= 3, "reference run stored %lld results", expected);
    *expected_out = expected;
    CHECK(t_count(h, "SELECT count(*) FROM run WHERE state = 'complete' AND heartbeat_at IS NOT NULL") == 1, "closed complete");
    sqlite3_close(h);
    char ref_summary[512];
    int ref_gate = gate_answer(db, ref_summary, sizeof ref_summary);
    CHECK(ref_gate == 0 || ref_gate == 1, "reference gate exit %d", ref_gate);
    /* the delays are drawn over a run with the reference cache warm, as every later run is */
    fresh(db);
    t0 = now_s();
    wait_rc(start_run(db, log));
    full_s = now_s() - t0;
    printf("%s uninterrupted: %lld results in %.2f s; gate %d: %s\n", g_backend, expected, full_s, ref_gate, ref_summary);

    int kills = 0, terms = 0, resumed = 0, before_row = 0, finished_first = 0;
    for (int it = 0; it < iters; ++it) {
        fresh(db);
        int sig = rand() % 2 ? SIGKILL : SIGTERM;
        useconds_t delay = (useconds_t)((double)rand() / RAND_MAX * full_s * 0.9e6);
        pid_t pid = start_run(db, log);
        usleep(delay);
        kill(pid, sig);
        rc = wait_rc(pid);
        sig == SIGKILL ? ++kills : ++terms;
        if (access(db, F_OK) != 0) { ++before_row; continue; }  /* killed before it opened the store */
        CHECK(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK && integrity_ok(h),
              "iteration %d: the store opens and is intact after signal %d", it, sig);
        if (t_count(h, "SELECT count(*) FROM sqlite_schema WHERE name = 'run_status'") != 1) {
            /* killed while the schema was installed (each migration is one transaction: the
             * next writer applies the rest) */
            sqlite3_close(h);
            ++before_row;
            continue;
        }
        long long runs = t_count(h, "SELECT count(*) FROM run");
        long long stored = t_count(h, "SELECT count(*) FROM result");
        long long distinct = t_count(h, "SELECT count(DISTINCT series_id) FROM result");
        long long torn = t_count(h, "SELECT count(*) FROM result r WHERE n_samples <> (SELECT count(*) FROM sample s WHERE s.result_id = r.id)");
        long long complete = t_count(h, "SELECT count(*) FROM run WHERE state = 'complete'");
        long long running = t_count(h, "SELECT count(*) FROM run WHERE state = 'running'");
        long long interrupted = t_count(h, "SELECT count(*) FROM run WHERE state = 'interrupted'");
        sqlite3_close(h);
        CHECK(runs <= 1 && stored == distinct && torn == 0 && stored <= expected,
              "iteration %d: %lld runs, %lld results (%lld series, %lld torn) of %lld", it, runs, stored, distinct, torn, expected);
        if (runs == 0) { ++before_row; continue; }
        if (complete) {  /* the signal came after the run closed */
            ++finished_first;
            CHECK(stored == expected, "iteration %d: complete with %lld of %lld", it, stored, expected);
            continue;
        }
        if (sig == SIGKILL)
            CHECK(running == 1 && rc == 137, "iteration %d: SIGKILL leaves 'running' (exit %d)", it, rc);
        else
            CHECK(interrupted == 1 && rc == 143, "iteration %d: SIGTERM closes 'interrupted' (exit %d)", it, rc);
        snprintf(cmd, sizeof cmd, "%s run --db %s --resume latest >/dev/null 2>%s; echo $?", QGMM_BENCH_EXE, db, log);
        t_sh(cmd, out, sizeof out);
        CHECK(atoi(out) == 0, "iteration %d: --resume exit %s", it, out);
        sqlite3_open(db, &h);
        CHECK(t_count(h, "SELECT count(*) FROM run") == 1 && t_count(h, "SELECT count(*) FROM run WHERE state = 'complete'") == 1,
              "iteration %d: resumed under the same id, complete", it);
        CHECK(t_count(h, "SELECT count(*) FROM result") == expected &&
              t_count(h, "SELECT count(DISTINCT series_id) FROM result") == expected,
              "iteration %d: every result exactly once after resume (%lld)", it, t_count(h, "SELECT count(*) FROM result"));
        sqlite3_close(h);
        char summary[512];
        int g = gate_answer(db, summary, sizeof summary);
        CHECK(g == ref_gate && strcmp(summary, ref_summary) == 0, "iteration %d: gate on the resumed run %d \"%s\" vs %d \"%s\"",
              it, g, summary, ref_gate, ref_summary);
        ++resumed;
    }
    printf("%s: %d kills (%d SIGKILL, %d SIGTERM): %d resumed, %d before the run row, %d after it closed\n", g_backend,
           iters, kills, terms, resumed, before_row, finished_first);
    CHECK(resumed >= iters / 3, "most signals landed inside a run (%d of %d)", resumed, iters);
    return full_s;
}

int main(void)
{
    char db[1024], log[1100], cmd[4096], out[1 << 16];
    t_db_path("durable", db, sizeof db);
    snprintf(log, sizeof log, "%s.log", db);
    snprintf(g_refdir, sizeof g_refdir, "%s.refcache", db);
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    long long expected = 0, vk_expected = 0;
    kill_loop(db, log, env_int("QGMM_DURABLE_ITERS", 50), &expected);
    g_backend = "vulkan";
    g_no_ceilings = 1;
    kill_loop(db, log, env_int("QGMM_DURABLE_VK_ITERS", 6), &vk_expected);
    g_backend = "cpu";
    g_no_ceilings = 0;
    int rc;
    sqlite3 *h;

    /* a SIGKILLed run with a stale heartbeat: every reader says interrupted, the gate refuses it */
    fresh(db);
    pid_t pid = start_run(db, log);
    for (int i = 0; i < 3000; ++i) {  /* until it has stored a few results */
        usleep(10000);
        if (access(db, F_OK) != 0 || sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) continue;
        long long got = t_count(h, "SELECT count(*) FROM result");
        sqlite3_close(h);
        if (got >= 3) break;
    }
    kill(pid, SIGKILL);
    wait_rc(pid);
    sqlite3_open(db, &h);
    CHECK(t_count(h, "SELECT count(*) FROM run WHERE state = 'running'") == 1, "SIGKILL mid-run leaves 'running'");
    sqlite3_exec(h, "UPDATE run SET heartbeat_at = heartbeat_at - 120, started_at = started_at - 120", NULL, NULL, NULL);
    CHECK(t_count(h, "SELECT count(*) FROM run_status WHERE state = 'interrupted'") == 1, "stale heartbeat -> interrupted");
    sqlite3_close(h);
    snprintf(cmd, sizeof cmd, "%s runs --db %s 2>&1", QGMM_BENCH_EXE, db);
    CHECK(t_sh(cmd, out, sizeof out) == 0 && strstr(out, "interrupted"), "runs shows interrupted: %s", out);
    snprintf(cmd, sizeof cmd, "%s gate --db %s 2>&1", QGMM_BENCH_EXE, db);
    rc = t_sh(cmd, out, sizeof out);
    CHECK(rc == 1 && strstr(out, "interrupted") && strstr(out, "--resume"), "gate refuses an interrupted run (%d): %s", rc, out);
    snprintf(cmd, sizeof cmd, "%s export --db %s 2>&1 >/dev/null", QGMM_BENCH_EXE, db);
    rc = t_sh(cmd, out, sizeof out);
    CHECK(rc == 2 && strstr(out, "only a complete run"), "export refuses an interrupted run (%d): %s", rc, out);
    snprintf(cmd, sizeof cmd, "%s run --db %s --resume latest --filter x 2>&1", QGMM_BENCH_EXE, db);
    CHECK(t_sh(cmd, out, sizeof out) == 2 && strstr(out, "only"), "--resume takes no measuring options: %s", out);
    snprintf(cmd, sizeof cmd, "%s run --db %s --resume latest >/dev/null 2>&1 && %s run --db %s --resume latest 2>&1",
             QGMM_BENCH_EXE, db, QGMM_BENCH_EXE, db);
    CHECK(t_sh(cmd, out, sizeof out) == 2 && strstr(out, "complete"), "a complete run is not resumed again: %s", out);

    /* two runners on one store at once, and a reader polling it: nothing lost, nothing
     * doubled, no "database is locked" */
    fresh(db);
    char log2[1100];
    snprintf(log2, sizeof log2, "%s.2.log", db);
    pid_t a = start_run(db, log), b = start_run(db, log2);
    int reads = 0, read_fail = 0;
    for (;;) {
        int st;
        if (a > 0 && waitpid(a, &st, WNOHANG) == a) { a = -1; CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "runner A exit"); }
        if (b > 0 && waitpid(b, &st, WNOHANG) == b) { b = -1; CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "runner B exit"); }
        if (a < 0 && b < 0) break;
        snprintf(cmd, sizeof cmd, "%s runs --db %s 2>&1", QGMM_BENCH_EXE, db);
        if (access(db, F_OK) == 0) {
            int r = t_sh(cmd, out, sizeof out);
            ++reads;
            if (r != 0 && !strstr(out, "no such results store") && !strstr(out, "schema")) {
                ++read_fail;
                fprintf(stderr, "reader: %s", out);
            }
        }
        usleep(50000);
    }
    sqlite3_open(db, &h);
    CHECK(t_count(h, "SELECT count(*) FROM run WHERE state = 'complete'") == 2, "both runs complete");
    CHECK(t_count(h, "SELECT count(*) FROM result") == 2 * expected, "every result of both runs (%lld)",
          t_count(h, "SELECT count(*) FROM result"));
    CHECK(t_count(h, "SELECT count(*) FROM (SELECT run_id, series_id FROM result GROUP BY 1, 2 HAVING count(*) > 1)") == 0,
          "no result doubled");
    sqlite3_close(h);
    snprintf(cmd, sizeof cmd, "cat %s %s | grep -ci 'database is locked'", log, log2);
    t_sh(cmd, out, sizeof out);
    CHECK(atoi(out) == 0 && read_fail == 0, "no lock failure (%s in the runners' logs, %d of %d reads failed)", out, read_fail,
          reads);
    printf("concurrent: 2 runners, %d reads\n", reads);
    return t_report("test_durable");
}
