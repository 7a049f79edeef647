/* runner_testutil.h — checks and synthetic runs for the ci/ tests. */
#ifndef QGMM_CI_RUNNER_TESTUTIL_H
#define QGMM_CI_RUNNER_TESTUTIL_H
#include <stdio.h>
#include <stdlib.h>

#include "runrec.h"
#include "store.h"

extern int t_failures, t_checks;
#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        ++t_checks;                                                                   \
        if (!(cond)) {                                                                \
            ++t_failures;                                                             \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                             \
            fprintf(stderr, "\n");                                                    \
        }                                                                             \
    } while (0)
int t_report(const char *name);

/* A fresh database path under QGMM_TEST_TMP (any old file removed). */
void t_db_path(const char *name, char *out, size_t cap);
/* A synthetic run: one cpu context on machine "testhost", `nres` results of series
 * bench0..bench{nres-1}, each with `n` samples drawn around `center_us` with relative
 * spread `noise` (deterministic from `seed`); started_at = t. */
void t_make_run(run_record *r, int nres, int n, double center_us, double noise, unsigned seed, long long t);
long long t_count(sqlite3 *db, const char *sql);
/* Runs a shell command, its stdout (up to cap - 1 bytes) into out; its exit code, -1 if it
 * did not exit normally. */
int t_sh(const char *cmd, char *out, size_t cap);
#endif
