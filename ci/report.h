/*
 * report.h — the text tables: the end-of-run table, `compare RUN_A RUN_B`,
 * `history SERIES` and `runs` (the list of runs).
 */
#ifndef QGMM_CI_REPORT_H
#define QGMM_CI_REPORT_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#include "runrec.h"

/* op, shape, backend, median us, GB/s or TFLOP/s, % of ceiling, numerics verdict. */
void report_run_table(const run_record *r, FILE *out);

/* Results of A and B matched by (benchmark, params, backend, device name): medians,
 * ratio B/A, Mann-Whitney p of the samples, verdicts. Returns 0 or -1 (err). */
int report_compare(sqlite3 *db, int64_t run_a, int64_t run_b, FILE *out, char *err, size_t err_cap);

/* SERIES: a series id, a fingerprint, or a substring of "benchmark params backend" —
 * several matches list the candidates. Returns 0 or -1 (err). */
int report_history(sqlite3 *db, const char *series, int limit, FILE *out, char *err, size_t err_cap);

/* The newest `limit` runs. */
int report_runs(sqlite3 *db, int limit, FILE *out, char *err, size_t err_cap);

/* The performance summary of one run as Markdown (docs/PERF.md's tables): per family
 * (ceilings and canary first, then each cast family and each GEMM kind and recipe) one row per
 * case with every qgmm backend's rate and % of its ceiling, the torch peer's rate and each
 * backend's speed relative to it when the run holds peers. Returns 0 or -1 (err). */
int report_markdown(sqlite3 *db, int64_t run_id, FILE *out, char *err, size_t err_cap);

/* "1.23 ms" style with a fixed width. */
void report_fmt_us(double us, char *out, size_t cap);

#endif
