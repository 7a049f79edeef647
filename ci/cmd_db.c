/* cmd_db.c — the subcommands that read or write the store without measuring:
 * gate, compare, history, runs, export, import. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "changepoint.h"
#include "gate.h"
#include "json.h"
#include "report.h"
#include "store.h"
#include "store_live.h"
#include "store_json.h"

static const char *const GATE_HELP =
    "usage: qgmm-bench gate --db FILE [--run ID|UUID|latest] [--baseline N] [--min-change F]\n"
    "                       [--noise-mult F] [--p F] [--min-history N] [--no-record]\n"
    "                       [--changepoints [--since N] [--min-runs N] [--window N]]\n"
    "\n"
    "Judges one run (default: the latest). Exit 1 when any result failed its numerics check or\n"
    "errored, or when a series is slower than its baseline — the previous N runs (default 10)\n"
    "of the same series (op, params, device, backend) with the same driver — by at least\n"
    "max(5%%, 3x the series' noise) with a Mann-Whitney U p < 0.001 on the raw samples. Noise =\n"
    "1.4826 MAD / median of the baseline runs' medians. Non-significant slowdowns, slowdowns of\n"
    "ceilings, and slowdowns in a backend whose canary also slowed are warnings (exit 0).\n"
    "Fewer than --min-history (3) baseline runs: no performance verdict. Every line says why.\n"
    "Flags are written to the regression table (triage in the dashboard) unless --no-record.\n"
    "--changepoints then runs the change-point pass over every series (see `qgmm-bench\n"
    "changepoints --help`; same thresholds) to name the revision each shift started at; its\n"
    "findings are printed and recorded but do not change the exit status.\n"
    "Exit 0 pass, 1 fail, 2 usage/database error.\n";

static const char *const COMPARE_HELP =
    "usage: qgmm-bench compare --db FILE RUN_A RUN_B\n"
    "\n"
    "A text table of the series two runs share (matched by op, params, backend and device\n"
    "name): both medians, B/A, the Mann-Whitney p of their samples, both numerics verdicts,\n"
    "and the geometric mean of B/A. RUN is an id, a uuid (or prefix) or \"latest\".\n";

static const char *const HISTORY_HELP =
    "usage: qgmm-bench history --db FILE SERIES [--limit N]\n"
    "\n"
    "The last N (default 30) results of one series, oldest first: run, date, revision, driver,\n"
    "samples, quartiles, rate, %% of ceiling, numerics. SERIES is a series id, its fingerprint,\n"
    "or text matched against op/label/shape/params/backend (several matches are listed).\n";

static const char *const RUNS_HELP =
    "usage: qgmm-bench runs --db FILE [--limit N]\n"
    "\n"
    "Lists the newest N (default 20) runs: id, uuid, time, revision, suite, backends, counts.\n";

static const char *const EXPORT_HELP =
    "usage: qgmm-bench export --db FILE [--run ID|UUID|latest] [--json] [-o FILE]\n"
    "\n"
    "Writes one run (default latest) as the JSON run document of docs/run-format.md to stdout\n"
    "or FILE. (--json is accepted for symmetry: JSON is the only export format.)\n";

static const char *const IMPORT_HELP =
    "usage: qgmm-bench import --db FILE RUN.json [RUN2.json ...]\n"
    "\n"
    "Stores run documents (docs/run-format.md; e.g. from ci/peers/torch_peers.py or another\n"
    "machine's export). Each file is validated completely and written in one transaction:\n"
    "a malformed file is refused with the field that is wrong and changes nothing; the rules\n"
    "are the dashboard's ingest rules (one validator decides for both), and at most 16 MiB is\n"
    "read of a file (the dashboard's default and largest --max-body). Importing a\n"
    "uuid already present changes nothing: the same run again is reported as already\n"
    "present (idempotent), a different run under that uuid is refused. Exit 1 if any file\n"
    "was refused.\n";

static int open_rw(const char *db, sqlite3 **out, const char *cmd)
{
    char err[1024];
    if (!db) { fprintf(stderr, "qgmm-bench %s: --db FILE is required\n", cmd); return -1; }
    if (store_open(db, out, err, sizeof err)) { fprintf(stderr, "qgmm-bench %s: %s\n", cmd, err); return -1; }
    return 0;
}

/* Commands that only read: the store is opened read-only, never created or migrated. */
int open_ro(const char *db, sqlite3 **out, const char *cmd)
{
    char err[1024];
    if (!db) { fprintf(stderr, "qgmm-bench %s: --db FILE is required\n", cmd); return -1; }
    if (store_open_readonly(db, out, err, sizeof err)) { fprintf(stderr, "qgmm-bench %s: %s\n", cmd, err); return -1; }
    return 0;
}

/* Commands that record findings: an existing store of the current schema, read-only
 * when they record nothing. */
int open_recording(const char *db, int record, sqlite3 **out, const char *cmd)
{
    char err[1024];
    if (!record) return open_ro(db, out, cmd);
    if (!db) { fprintf(stderr, "qgmm-bench %s: --db FILE is required\n", cmd); return -1; }
    if (store_open_existing(db, out, err, sizeof err)) { fprintf(stderr, "qgmm-bench %s: %s\n", cmd, err); return -1; }
    return 0;
}

static int resolve(sqlite3 *db, const char *spec, int64_t *id, const char *cmd)
{
    char err[512];
    if (store_resolve_run(db, spec, id, err, sizeof err)) { fprintf(stderr, "qgmm-bench %s: %s\n", cmd, err); return -1; }
    return 0;
}

int cmd_gate(int argc, char **argv)
{
    if (wants_help(argc, argv)) { fputs(GATE_HELP, stdout); return 0; }
    const char *dbp = NULL, *run = "latest", *v;
    gate_config cfg;
    gate_config_default(&cfg);
    cp_config cp;
    cp_config_default(&cp);
    int changepoints = 0;
    for (int i = 1; i < argc; ++i) {
        if (opt_value(argc, argv, &i, "--db", &dbp)) continue;
        if (opt_value(argc, argv, &i, "--run", &run)) continue;
        if (strcmp(argv[i], "--changepoints") == 0) { changepoints = 1; continue; }
        if (cp_parse_option(argc, argv, &i, &cp)) continue;
        if (opt_value(argc, argv, &i, "--baseline", &v)) { cfg.baseline_runs = atoi(v); continue; }
        if (opt_value(argc, argv, &i, "--min-history", &v)) { cfg.min_baseline_runs = atoi(v); continue; }
        if (opt_value(argc, argv, &i, "--min-change", &v)) { cfg.min_change = atof(v); continue; }
        if (opt_value(argc, argv, &i, "--noise-mult", &v)) { cfg.noise_mult = atof(v); continue; }
        if (opt_value(argc, argv, &i, "--p", &v)) { cfg.p_max = atof(v); continue; }
        if (strcmp(argv[i], "--no-record") == 0) { cfg.record = 0; continue; }
        fprintf(stderr, "qgmm-bench gate: unknown argument %s (see --help)\n", argv[i]);
        return 2;
    }
    if (cfg.baseline_runs < 1 || cfg.min_baseline_runs < 1) {
        fprintf(stderr, "qgmm-bench gate: --baseline and --min-history must be >= 1\n");
        return 2;
    }
    sqlite3 *db;
    if (open_recording(dbp, cfg.record, &db, "gate")) return 2;
    int64_t id;
    if (resolve(db, run, &id, "gate")) { store_close(db); return 2; }
    char err[512];
    int rc = gate_run(db, id, &cfg, stdout, err, sizeof err);
    if (rc >= 0 && changepoints) {
        cp.min_change = cfg.min_change;
        cp.noise_mult = cfg.noise_mult;
        cp.p_max = cfg.p_max;
        cp.record = cfg.record;
        size_t slower;
        if (cp.min_runs < 1 || cp.window_runs < 1 || cp.since < 0)
            fprintf(stderr, "qgmm-bench gate: --min-runs and --window must be >= 1, --since >= 0\n"), rc = 2;
        else if (cp_run(db, &cp, 0, stdout, &slower, err, sizeof err)) {
            fprintf(stderr, "qgmm-bench gate: change-point pass: %s\n", err);
            rc = 2;
        }
    }
    store_close(db);
    if (rc < 0) { fprintf(stderr, "qgmm-bench gate: %s\n", err); return 2; }
    return rc;
}

int cmd_compare(int argc, char **argv)
{
    if (wants_help(argc, argv)) { fputs(COMPARE_HELP, stdout); return 0; }
    const char *dbp = NULL, *runs[2] = {NULL, NULL};
    int nr = 0;
    for (int i = 1; i < argc; ++i) {
        if (opt_value(argc, argv, &i, "--db", &dbp)) continue;
        if (argv[i][0] == '-' || nr == 2) { fprintf(stderr, "qgmm-bench compare: unexpected %s (see --help)\n", argv[i]); return 2; }
        runs[nr++] = argv[i];
    }
    if (nr != 2) { fprintf(stderr, "qgmm-bench compare: give two runs (see --help)\n"); return 2; }
    sqlite3 *db;
    if (open_ro(dbp, &db, "compare")) return 2;
    int64_t a, b;
    char err[512];
    int rc = 2;
    if (!resolve(db, runs[0], &a, "compare") && !resolve(db, runs[1], &b, "compare")) {
        rc = report_compare(db, a, b, stdout, err, sizeof err) ? 2 : 0;
        if (rc) fprintf(stderr, "qgmm-bench compare: %s\n", err);
    }
    store_close(db);
    return rc;
}

int cmd_history(int argc, char **argv)
{
    if (wants_help(argc, argv)) { fputs(HISTORY_HELP, stdout); return 0; }
    const char *dbp = NULL, *series = NULL, *v;
    int limit = 30;
    for (int i = 1; i < argc; ++i) {
        if (opt_value(argc, argv, &i, "--db", &dbp)) continue;
        if (opt_value(argc, argv, &i, "--limit", &v)) { limit = atoi(v); continue; }
        if (argv[i][0] == '-' || series) { fprintf(stderr, "qgmm-bench history: unexpected %s (see --help)\n", argv[i]); return 2; }
        series = argv[i];
    }
    if (!series) { fprintf(stderr, "qgmm-bench history: give a SERIES (see --help)\n"); return 2; }
    sqlite3 *db;
    if (open_ro(dbp, &db, "history")) return 2;
    char err[512];
    int rc = report_history(db, series, limit, stdout, err, sizeof err);
    if (rc) fprintf(stderr, "qgmm-bench history: %s\n", err);
    store_close(db);
    return rc ? 2 : 0;
}

int cmd_runs(int argc, char **argv)
{
    if (wants_help(argc, argv)) { fputs(RUNS_HELP, stdout); return 0; }
    const char *dbp = NULL, *v;
    int limit = 20;
    for (int i = 1; i < argc; ++i) {
        if (opt_value(argc, argv, &i, "--db", &dbp)) continue;
        if (opt_value(argc, argv, &i, "--limit", &v)) { limit = atoi(v); continue; }
        fprintf(stderr, "qgmm-bench runs: unexpected %s (see --help)\n", argv[i]);
        return 2;
    }
    sqlite3 *db;
    if (open_ro(dbp, &db, "runs")) return 2;
    char err[512];
    int rc = report_runs(db, limit, stdout, err, sizeof err);
    if (rc) fprintf(stderr, "qgmm-bench runs: %s\n", err);
    store_close(db);
    return rc ? 2 : 0;
}

/* Loads a run as its JSON document (shared by export and upload). */
int load_run_json(const char *dbp, const char *run, json_buf *out, const char *cmd)
{
    sqlite3 *db;
    if (open_ro(dbp, &db, cmd)) return -1;
    int64_t id;
    if (resolve(db, run, &id, cmd)) { store_close(db); return -1; }
    run_record r;
    rr_init(&r);
    char err[512], state[16];
    int64_t stored = 0, expected = -1;
    /* the run format has no state: a document is a complete run, so an unfinished one stays home */
    int rc = store_run_progress(db, id, state, &stored, &expected, err, sizeof err);
    if (rc == 0 && strcmp(state, "complete") != 0) {
        snprintf(err, sizeof err, "run %lld is %s (%lld results stored): only a complete run is exported or uploaded%s",
                 (long long)id, state, (long long)stored,
                 strcmp(state, "running") == 0 ? "" : "; finish it with `qgmm-bench run --db STORE --resume RUN`");
        rc = -1;
    }
    if (rc == 0) rc = store_load_run(db, id, &r, err, sizeof err);
    if (rc) fprintf(stderr, "qgmm-bench %s: %s\n", cmd, err);
    else run_to_json(&r, out, 1);
    rr_free(&r);
    store_close(db);
    return rc;
}

int cmd_export(int argc, char **argv)
{
    if (wants_help(argc, argv)) { fputs(EXPORT_HELP, stdout); return 0; }
    const char *dbp = NULL, *run = "latest", *outp = NULL;
    for (int i = 1; i < argc; ++i) {
        if (opt_value(argc, argv, &i, "--db", &dbp)) continue;
        if (opt_value(argc, argv, &i, "--run", &run)) continue;
        if (opt_value(argc, argv, &i, "-o", &outp)) continue;
        if (strcmp(argv[i], "--json") == 0) continue;
        fprintf(stderr, "qgmm-bench export: unexpected %s (see --help)\n", argv[i]);
        return 2;
    }
    json_buf b;
    jb_init(&b);
    if (load_run_json(dbp, run, &b, "export")) { jb_free(&b); return 2; }
    FILE *f = outp ? fopen(outp, "w") : stdout;
    int ok = f && fwrite(b.data, 1, b.len, f) == b.len;
    if (f && f != stdout) ok = (fclose(f) == 0) && ok;
    jb_free(&b);
    if (!ok) { fprintf(stderr, "qgmm-bench export: cannot write %s\n", outp ? outp : "stdout"); return 2; }
    return 0;
}

int cmd_import(int argc, char **argv)
{
    if (wants_help(argc, argv)) { fputs(IMPORT_HELP, stdout); return 0; }
    const char *dbp = NULL;
    const char *files[256];
    int nf = 0;
    for (int i = 1; i < argc; ++i) {
        if (opt_value(argc, argv, &i, "--db", &dbp)) continue;
        if ((argv[i][0] == '-' && argv[i][1]) || nf == 256) { fprintf(stderr, "qgmm-bench import: unexpected %s (see --help)\n", argv[i]); return 2; }
        files[nf++] = argv[i];
    }
    if (nf == 0) { fprintf(stderr, "qgmm-bench import: give at least one RUN.json (see --help)\n"); return 2; }
    sqlite3 *db;
    if (open_rw(dbp, &db, "import")) return 2;
    int refused = 0;
    for (int k = 0; k < nf; ++k) {
        size_t len = 0;
        char err[1024], uuid[40] = "";
        char *text = read_file_all(files[k], RUN_DOC_MAX_BYTES, &len, err, sizeof err);
        if (!text) {
            fprintf(stderr, "qgmm-bench import: %s refused (nothing written): %s%s\n", files[k], err,
                    strstr(err, "cap") ? " on a run document (the dashboard's default --max-body)" : "");
            ++refused;
            continue;
        }
        int already = 0;
        long long id = 0;
        if (qgmm_store_import_json(db, text, len, "import", &already, &id, uuid, err, sizeof err)) {
            fprintf(stderr, "qgmm-bench import: %s refused (nothing written): %s\n", files[k], err);
            ++refused;
        } else if (already == STORE_RUN_DIFFERENT) {
            /* The dashboard answers 409 to the same upload. */
            fprintf(stderr, "qgmm-bench import: %s refused (nothing written): a different run with uuid %s is "
                    "already stored as run %lld\n", files[k], uuid, id);
            ++refused;
        } else if (already) {
            printf("%s: run %s already present as run %lld (nothing changed)\n", files[k], uuid, id);
        } else {
            printf("%s: imported as run %lld (%s)\n", files[k], id, uuid);
        }
        free(text);
    }
    store_close(db);
    return refused ? 1 : 0;
}
