/* Writing a validated run into the store: one IMMEDIATE transaction, so a run is either
 * entirely visible or absent, and two ingesters of the same uuid cannot both insert. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ingest.h"
#include "sha256.h"

/* ------------------------------------------------------------ content digest */
/* What "the same run" means for idempotency: the run's identity fields and, per series
 * (benchmark, params, device, backend, metric), status, verdict and the raw samples.
 * Derived values (stats, rates) and free-form maps (env, clocks) are left out: they follow
 * from these or do not change the measurement. Both sides hash the same text. */
static void dg_field(sha256_ctx *h, const char *s) {
  sha256_update(h, s ? s : "", s ? strlen(s) : 0);
  sha256_update(h, "\t", 1);
}

static void dg_int(sha256_ctx *h, long long v) {
  char s[32];
  int n = snprintf(s, sizeof s, "%lld\t", v);
  sha256_update(h, s, (size_t)n);
}

static void dg_sample(sha256_ctx *h, double v) {
  char s[40];
  int n = snprintf(s, sizeof s, "%.17g,", v);
  sha256_update(h, s, (size_t)n);
}

static void hexify(sha256_ctx *h, char hex[65]) {
  static const char dig[] = "0123456789abcdef";
  unsigned char d[32];
  sha256_final(h, d);
  for (int i = 0; i < 32; i++) {
    hex[2 * i] = dig[d[i] >> 4];
    hex[2 * i + 1] = dig[d[i] & 15];
  }
  hex[64] = 0;
}

static int by_identity(const void *x, const void *y, void *ud) {
  const run_doc *d = ud;
  const run_result *a = *(run_result *const *)x, *b = *(run_result *const *)y;
  int c = strcmp(a->benchmark, b->benchmark);
  if (!c) c = strcmp(a->params, b->params);
  if (!c) c = strcmp(d->ctx[a->ctx].dev_name, d->ctx[b->ctx].dev_name);
  if (!c) c = strcmp(d->ctx[a->ctx].backend, d->ctx[b->ctx].backend);
  if (!c) c = strcmp(a->metric, b->metric);
  return c;
}

static void dg_head(sha256_ctx *h, const char *uuid, const char *suite, const char *reason,
                    long long t0, long long t1, const char *runner, const char *rver,
                    const char *host, const char *cpu, const char *sha, int dirty) {
  const char *f[] = {uuid, suite, reason, runner, rver, host, cpu, sha};
  for (int i = 0; i < 8; i++) dg_field(h, f[i]);
  dg_int(h, t0);
  dg_int(h, t1);
  dg_int(h, dirty);
  sha256_update(h, "\n", 1);
}

void run_digest_doc(const run_doc *d, char hex[65]) {
  sha256_ctx h;
  sha256_init(&h);
  dg_head(&h, d->uuid, d->suite, d->reason, (long long)d->started_at, (long long)d->finished_at,
          d->runner, d->runner_version, d->hostname, d->cpu, d->sha, d->dirty);
  const run_result **order = malloc((d->n_res + 1) * sizeof *order);
  if (!order) {
    memset(hex, '0', 64);
    hex[64] = 0;
    return;
  }
  for (size_t i = 0; i < d->n_res; i++) order[i] = &d->res[i];
  qsort_r(order, d->n_res, sizeof *order, by_identity, (void *)d);
  for (size_t i = 0; i < d->n_res; i++) {
    const run_result *r = order[i];
    const char *f[] = {r->benchmark, r->params, d->ctx[r->ctx].dev_name, d->ctx[r->ctx].backend,
                       r->metric, r->status, r->verdict};
    for (int k = 0; k < 7; k++) dg_field(&h, f[k]);
    dg_int(&h, (long long)r->n_samples);
    for (size_t s = 0; s < r->n_samples; s++) dg_sample(&h, r->samples[s]);
    sha256_update(&h, "\n", 1);
  }
  free(order);
  hexify(&h, hex);
}

static const char *col(sqlite3_stmt *st, int i) {
  const char *s = (const char *)sqlite3_column_text(st, i);
  return s ? s : "";
}

int run_digest_db(sqlite3 *db, const char *uuid, char hex[65]) {
  sqlite3_stmt *st = NULL, *rs = NULL, *ss = NULL;
  int ok = 0;
  sha256_ctx h;
  sha256_init(&h);
  if (sqlite3_prepare_v2(db,
                         "SELECT r.id, r.uuid, r.suite, r.reason, r.started_at, r.finished_at,"
                         " r.runner, r.runner_version, m.hostname, m.cpu, rv.sha, r.dirty"
                         " FROM run r JOIN machine m ON m.id = r.machine_id"
                         " JOIN revision rv ON rv.id = r.revision_id WHERE r.uuid = ?1",
                         -1, &st, NULL) != SQLITE_OK)
    goto done;
  sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
  if (sqlite3_step(st) != SQLITE_ROW) goto done;
  dg_head(&h, col(st, 1), col(st, 2), col(st, 3), sqlite3_column_int64(st, 4),
          sqlite3_column_int64(st, 5), col(st, 6), col(st, 7), col(st, 8), col(st, 9),
          col(st, 10), sqlite3_column_int(st, 11));
  sqlite3_int64 run_id = sqlite3_column_int64(st, 0);
  if (sqlite3_prepare_v2(db,
                         "SELECT s.benchmark, s.params, d.name, s.backend, s.metric, x.status,"
                         " x.verdict, x.id,"
                         " (SELECT count(*) FROM sample p WHERE p.result_id = x.id)"
                         " FROM result x JOIN series s ON s.id = x.series_id"
                         " JOIN device d ON d.id = s.device_id WHERE x.run_id = ?1"
                         " ORDER BY s.benchmark, s.params, d.name, s.backend, s.metric",
                         -1, &rs, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "SELECT time_us FROM sample WHERE result_id = ?1 ORDER BY idx", -1,
                         &ss, NULL) != SQLITE_OK)
    goto done;
  sqlite3_bind_int64(rs, 1, run_id);
  int rc;
  while ((rc = sqlite3_step(rs)) == SQLITE_ROW) {
    for (int k = 0; k < 7; k++) dg_field(&h, col(rs, k));
    dg_int(&h, sqlite3_column_int64(rs, 8));
    sqlite3_reset(ss);
    sqlite3_bind_int64(ss, 1, sqlite3_column_int64(rs, 7));
    while (sqlite3_step(ss) == SQLITE_ROW) dg_sample(&h, sqlite3_column_double(ss, 0));
    sha256_update(&h, "\n", 1);
  }
  ok = rc == SQLITE_DONE;
done:
  sqlite3_finalize(st);
  sqlite3_finalize(rs);
  sqlite3_finalize(ss);
  hexify(&h, hex);
  return ok;
}

/* ------------------------------------------------------------ inserts */
typedef struct {
  sqlite3 *db;
  sqlite3_stmt *st;
  int failed;
} ins;

static void b_text(ins *w, int i, const char *s) {
  if (!w->failed && sqlite3_bind_text(w->st, i, s ? s : "", -1, SQLITE_STATIC) != SQLITE_OK)
    w->failed = 1;
}
static void b_int(ins *w, int i, long long v) {
  if (!w->failed && sqlite3_bind_int64(w->st, i, v) != SQLITE_OK) w->failed = 1;
}
static void b_opt_int(ins *w, int i, opt_num o) {
  if (w->failed) return;
  if ((o.set ? sqlite3_bind_int64(w->st, i, (sqlite3_int64)o.v) : sqlite3_bind_null(w->st, i)) != SQLITE_OK)
    w->failed = 1;
}
static void b_opt_real(ins *w, int i, opt_num o) {
  if (w->failed) return;
  if ((o.set ? sqlite3_bind_double(w->st, i, o.v) : sqlite3_bind_null(w->st, i)) != SQLITE_OK)
    w->failed = 1;
}

static int prep(ins *w, const char *sql) {
  sqlite3_finalize(w->st);
  w->st = NULL;
  if (w->failed) return 1;
  if (sqlite3_prepare_v2(w->db, sql, -1, &w->st, NULL) != SQLITE_OK) w->failed = 1;
  return w->failed;
}

/* Steps the statement; returns the first column of the first row (RETURNING id) or the
 * last rowid. */
static long long step_id(ins *w) {
  if (w->failed) return 0;
  long long id = 0;
  int rc = sqlite3_step(w->st);
  if (rc == SQLITE_ROW) {
    id = sqlite3_column_int64(w->st, 0);
    rc = sqlite3_step(w->st);
  } else if (rc == SQLITE_DONE) {
    id = sqlite3_last_insert_rowid(w->db);
  }
  if (rc != SQLITE_DONE) w->failed = 1;
  sqlite3_reset(w->st);
  return id;
}

static unsigned long long fnv1a64(const char *const *parts, int n) {
  unsigned long long h = 0xcbf29ce484222325ULL;
  for (int i = 0; i < n; i++) {
    if (i) {
      h ^= (unsigned char)'\n';
      h *= 0x100000001b3ULL;
    }
    for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++) {
      h ^= *p;
      h *= 0x100000001b3ULL;
    }
  }
  return h;
}

static int insert_run(sqlite3 *db, const run_doc *d, char *msg, size_t msgn) {
  ins w = {db, NULL, 0};
  long long machine = 0, revision = 0, run = 0;
  long long *dev = calloc(d->n_ctx + 1, sizeof *dev), *ctx = calloc(d->n_ctx + 1, sizeof *ctx);
  if (!dev || !ctx) w.failed = 1;

  if (!prep(&w, "INSERT INTO machine (hostname, cpu, os, cores, memory_bytes)"
                " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (hostname, cpu) DO UPDATE SET"
                " os = CASE WHEN excluded.os <> '' THEN excluded.os ELSE machine.os END,"
                " cores = coalesce(excluded.cores, machine.cores),"
                " memory_bytes = coalesce(excluded.memory_bytes, machine.memory_bytes)"
                " RETURNING id")) {
    b_text(&w, 1, d->hostname);
    b_text(&w, 2, d->cpu);
    b_text(&w, 3, d->os);
    b_opt_int(&w, 4, d->cores);
    b_opt_int(&w, 5, d->memory);
    machine = step_id(&w);
  }
  if (!prep(&w, "INSERT INTO revision (sha, commit_time, subject, branch) VALUES (?1, ?2, ?3, ?4)"
                " ON CONFLICT (sha) DO UPDATE SET"
                " commit_time = coalesce(revision.commit_time, excluded.commit_time),"
                " subject = CASE WHEN revision.subject = '' THEN excluded.subject"
                "           ELSE revision.subject END,"
                " branch = CASE WHEN revision.branch = '' THEN excluded.branch"
                "          ELSE revision.branch END"
                " RETURNING id")) {
    b_text(&w, 1, d->sha);
    b_opt_int(&w, 2, d->commit_time);
    b_text(&w, 3, d->subject);
    b_text(&w, 4, d->branch);
    revision = step_id(&w);
  }
  if (!prep(&w, "INSERT INTO run (uuid, machine_id, revision_id, suite, reason, started_at,"
                " finished_at, runner, runner_version, dirty, env, source, imported_at)"
                " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'upload', ?12)")) {
    b_text(&w, 1, d->uuid);
    b_int(&w, 2, machine);
    b_int(&w, 3, revision);
    b_text(&w, 4, d->suite);
    b_text(&w, 5, d->reason);
    b_int(&w, 6, d->started_at);
    b_int(&w, 7, d->finished_at);
    b_text(&w, 8, d->runner);
    b_text(&w, 9, d->runner_version);
    b_int(&w, 10, d->dirty);
    b_text(&w, 11, d->env);
    b_int(&w, 12, (long long)time(NULL));
    run = step_id(&w);
  }
  if (!prep(&w, "INSERT INTO device (machine_id, name, kind, arch, memory_bytes)"
                " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (machine_id, name) DO UPDATE SET"
                " kind = CASE WHEN excluded.kind <> 'other' THEN excluded.kind ELSE device.kind END,"
                " arch = CASE WHEN excluded.arch <> '' THEN excluded.arch ELSE device.arch END,"
                " memory_bytes = coalesce(excluded.memory_bytes, device.memory_bytes)"
                " RETURNING id")) {
    for (size_t i = 0; i < d->n_ctx && !w.failed; i++) {
      b_int(&w, 1, machine);
      b_text(&w, 2, d->ctx[i].dev_name);
      b_text(&w, 3, d->ctx[i].dev_kind);
      b_text(&w, 4, d->ctx[i].dev_arch);
      b_opt_int(&w, 5, d->ctx[i].dev_mem);
      dev[i] = step_id(&w);
    }
  }
  if (!prep(&w, "INSERT INTO context (run_id, backend, device_id, describe, driver, runtime,"
                " clocks, code_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")) {
    for (size_t i = 0; i < d->n_ctx && !w.failed; i++) {
      const run_context *c = &d->ctx[i];
      b_int(&w, 1, run);
      b_text(&w, 2, c->backend);
      b_int(&w, 3, dev[i]);
      b_text(&w, 4, c->describe);
      b_text(&w, 5, c->driver);
      b_text(&w, 6, c->runtime);
      b_text(&w, 7, c->clocks);
      b_text(&w, 8, c->code_hash);
      ctx[i] = step_id(&w);
    }
  }
  ins series = {db, NULL, 0}, samp = {db, NULL, 0};
  prep(&series, "INSERT INTO series (fingerprint, benchmark, params, label, shape, role, device_id,"
                " backend, metric, unit) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
                " ON CONFLICT (fingerprint) DO UPDATE SET"
                " label = CASE WHEN excluded.label <> '' THEN excluded.label ELSE series.label END,"
                " shape = CASE WHEN excluded.shape <> '' THEN excluded.shape ELSE series.shape END"
                " RETURNING id");
  prep(&samp, "INSERT INTO sample (result_id, idx, time_us) VALUES (?1, ?2, ?3)");
  prep(&w, "INSERT INTO result (run_id, series_id, context_id, status, verdict, message,"
           " n_samples, warmup, min_us, q1_us, median_us, q3_us, max_us, mean_us, stddev_us,"
           " bytes, flops, gbps, tflops, ceiling, pct_of_ceiling, mismatched_bytes,"
           " checked_bytes, max_abs_err, rel_err, sqnr_db, threshold, output_hash, code_hash)"
           " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,"
           " ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29)");
  for (size_t i = 0; i < d->n_res && !w.failed && !series.failed && !samp.failed; i++) {
    const run_result *r = &d->res[i];
    const run_context *c = &d->ctx[r->ctx];
    const char *parts[] = {r->benchmark, r->params, d->hostname, d->cpu, c->dev_name, c->backend, r->metric};
    char fp[40];
    snprintf(fp, sizeof fp, "fnv1a64:%016llx", fnv1a64(parts, 7));
    b_text(&series, 1, fp);
    b_text(&series, 2, r->benchmark);
    b_text(&series, 3, r->params);
    b_text(&series, 4, r->label);
    b_text(&series, 5, r->shape);
    b_text(&series, 6, r->role);
    b_int(&series, 7, dev[r->ctx]);
    b_text(&series, 8, c->backend);
    b_text(&series, 9, r->metric);
    b_text(&series, 10, r->unit);
    long long sid = step_id(&series);
    b_int(&w, 1, run);
    b_int(&w, 2, sid);
    b_int(&w, 3, ctx[r->ctx]);
    b_text(&w, 4, r->status);
    b_text(&w, 5, r->verdict);
    b_text(&w, 6, r->message);
    b_int(&w, 7, (long long)r->n_samples);
    b_int(&w, 8, r->warmup);
    b_opt_real(&w, 9, r->min);
    b_opt_real(&w, 10, r->q1);
    b_opt_real(&w, 11, r->median);
    b_opt_real(&w, 12, r->q3);
    b_opt_real(&w, 13, r->max);
    b_opt_real(&w, 14, r->mean);
    b_opt_real(&w, 15, r->stddev);
    b_opt_int(&w, 16, r->bytes);
    b_opt_int(&w, 17, r->flops);
    b_opt_real(&w, 18, r->gbps);
    b_opt_real(&w, 19, r->tflops);
    b_text(&w, 20, r->ceiling);
    b_opt_real(&w, 21, r->pct);
    b_opt_int(&w, 22, r->mismatched);
    b_opt_int(&w, 23, r->checked);
    b_opt_real(&w, 24, r->max_abs_err);
    b_opt_real(&w, 25, r->rel_err);
    b_opt_real(&w, 26, r->sqnr);
    b_text(&w, 27, r->threshold);
    b_text(&w, 28, r->output_hash);
    b_text(&w, 29, r->code_hash);
    long long rid = step_id(&w);
    for (size_t s = 0; s < r->n_samples && !samp.failed; s++) {
      b_int(&samp, 1, rid);
      b_int(&samp, 2, (long long)s);
      if (!samp.failed && sqlite3_bind_double(samp.st, 3, r->samples[s]) != SQLITE_OK) samp.failed = 1;
      step_id(&samp);
    }
  }
  int failed = w.failed || series.failed || samp.failed;
  if (failed) snprintf(msg, msgn, "store write failed: %s", sqlite3_errmsg(db));
  sqlite3_finalize(w.st);
  sqlite3_finalize(series.st);
  sqlite3_finalize(samp.st);
  free(dev);
  free(ctx);
  return failed;
}

int run_store(sqlite3 *db, const run_doc *d, char *msg, size_t msgn) {
  if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
    snprintf(msg, msgn, "store busy: %s", sqlite3_errmsg(db));
    return 503;
  }
  sqlite3_stmt *st;
  int exists = 0;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM run WHERE uuid = ?1", -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, d->uuid, -1, SQLITE_STATIC);
    exists = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
  }
  if (exists) {
    char a[65], b[65];
    run_digest_doc(d, a);
    int ok = run_digest_db(db, d->uuid, b);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    if (!ok) {
      snprintf(msg, msgn, "reading the stored run failed");
      return 500;
    }
    if (strcmp(a, b) == 0) {
      snprintf(msg, msgn, "already present");
      return 200;
    }
    snprintf(msg, msgn, "a different run with uuid %s is already stored", d->uuid);
    return 409;
  }
  if (insert_run(db, d, msg, msgn)) {
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return 500;
  }
  if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
    snprintf(msg, msgn, "commit failed: %s", sqlite3_errmsg(db));
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return 503;
  }
  snprintf(msg, msgn, "stored");
  return 201;
}
