/* cmd_changepoint.c — `qgmm-bench changepoints`: the nightly change-point pass
 * (ci/changepoint.h) over the store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changepoint.h"
#include "cmd.h"
#include "store.h"

static const char *const CP_HELP =
    "usage: qgmm-bench changepoints --db FILE [--series ID | --all] [--since N] [--min-runs N]\n"
    "                               [--window N] [--min-change F] [--noise-mult F] [--p F] [--no-record]\n"
    "\n"
    "Finds, per series and driver, the runs where the median time shifted, and names the first\n"
    "bad revision (the first run after the shift) and the last good one. Binary segmentation over\n"
    "the runs' medians; a shift counts when the medians before and after differ by at least\n"
    "max(5%%, 3x the series' night-to-night noise) and a Mann-Whitney U test of the raw samples\n"
    "of up to --window (10) runs each side gives p < 0.001 — the gate's rule — with at least\n"
    "--min-runs (3) runs on each side. --since N looks at the newest N runs of each series only.\n"
    "Slowdowns are written to the regression table as kind 'changepoint' (the dashboard's\n"
    "regressions list shows \"introduced in <sha>\"), unless --no-record; untriaged changepoint\n"
    "rows of the analysed runs that are no longer found are dropped. Run it after `gate` in the\n"
    "nightly job (or `gate --changepoints`). Exit 0 (findings are information), 2 usage/database\n"
    "error.\n";

int cp_parse_option(int argc, char **argv, int *i, cp_config *cfg)
{
    const char *v;
    if (opt_value(argc, argv, i, "--since", &v)) { cfg->since = atoi(v); return 1; }
    if (opt_value(argc, argv, i, "--min-runs", &v)) { cfg->min_runs = atoi(v); return 1; }
    if (opt_value(argc, argv, i, "--window", &v)) { cfg->window_runs = atoi(v); return 1; }
    return 0;
}

int cmd_changepoints(int argc, char **argv)
{
    if (wants_help(argc, argv)) { fputs(CP_HELP, stdout); return 0; }
    const char *dbp = NULL, *series = NULL, *v;
    cp_config cfg;
    cp_config_default(&cfg);
    for (int i = 1; i < argc; ++i) {
        if (opt_value(argc, argv, &i, "--db", &dbp)) continue;
        if (opt_value(argc, argv, &i, "--series", &series)) continue;
        if (strcmp(argv[i], "--all") == 0) continue;
        if (cp_parse_option(argc, argv, &i, &cfg)) continue;
        if (opt_value(argc, argv, &i, "--min-change", &v)) { cfg.min_change = atof(v); continue; }
        if (opt_value(argc, argv, &i, "--noise-mult", &v)) { cfg.noise_mult = atof(v); continue; }
        if (opt_value(argc, argv, &i, "--p", &v)) { cfg.p_max = atof(v); continue; }
        if (strcmp(argv[i], "--no-record") == 0) { cfg.record = 0; continue; }
        fprintf(stderr, "qgmm-bench changepoints: unknown argument %s (see --help)\n", argv[i]);
        return 2;
    }
    if (cfg.min_runs < 1 || cfg.window_runs < 1 || cfg.since < 0 || !(cfg.p_max > 0) || cfg.min_change < 0) {
        fprintf(stderr, "qgmm-bench changepoints: --min-runs and --window must be >= 1, --since >= 0, --p > 0\n");
        return 2;
    }
    long long sid = 0;
    if (series) {
        char *end;
        sid = strtoll(series, &end, 10);
        if (*end || sid <= 0) {
            fprintf(stderr, "qgmm-bench changepoints: --series takes a series id (see `qgmm-bench history`)\n");
            return 2;
        }
    }
    if (!dbp) { fprintf(stderr, "qgmm-bench changepoints: --db FILE is required\n"); return 2; }
    sqlite3 *db;
    char err[1024];
    if (open_recording(dbp, cfg.record, &db, "changepoints")) return 2;
    size_t slower;
    int rc = cp_run(db, &cfg, (int64_t)sid, stdout, &slower, err, sizeof err);
    store_close(db);
    if (rc) { fprintf(stderr, "qgmm-bench changepoints: %s\n", err); return 2; }
    return 0;
}
