/* main.c — qgmm-bench: the nightly runner, its SQLite store and the CI gate.
 * One subcommand per job; every subcommand has --help. Details: docs/runner.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static const char *const HELP =
    "usage: qgmm-bench COMMAND [options]      (qgmm-bench COMMAND --help for each)\n"
    "\n"
    "  run      run a suite on every backend present, check numerics, time, store (--db)\n"
    "  gate     exit 1 on a numerics failure or a confirmed performance regression\n"
    "  changepoints  name the revision where each series' median shifted (nightly pass)\n"
    "  compare  two runs side by side (text table)\n"
    "  history  one series over time (text table)\n"
    "  runs     list the stored runs\n"
    "  report   the performance summary of a run as Markdown (docs/PERF.md's tables)\n"
    "  cases    list the cases a suite resolves to (--json: input of ci/peers/torch_peers.py)\n"
    "  references  fill the CPU reference cache of run's exact cases (no device needed)\n"
    "  export   one run as the JSON run document (docs/run-format.md)\n"
    "  import   store run documents (peers, other machines); idempotent by uuid\n"
    "  upload   POST a run to the dashboard's ingest API\n"
    "\n"
    "Typical: qgmm-bench run --suite nightly --backend all --db results.db && qgmm-bench gate --db results.db --changepoints\n";

int wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
    return 0;
}

int opt_value(int argc, char **argv, int *i, const char *name, const char **value)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0) return 0;
    if (argv[*i][n] == '=') { *value = argv[*i] + n + 1; return 1; }
    if (argv[*i][n] != 0) return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "qgmm-bench: %s needs a value\n", name);
        exit(2);
    }
    *value = argv[++*i];
    return 1;
}

int main(int argc, char **argv)
{
    static const struct { const char *name; int (*fn)(int, char **); } cmds[] = {
        {"run", cmd_run},         {"gate", cmd_gate},     {"compare", cmd_compare},
        {"history", cmd_history}, {"runs", cmd_runs},     {"cases", cmd_cases},
        {"references", cmd_references},
        {"export", cmd_export},   {"import", cmd_import}, {"upload", cmd_upload},
        {"changepoints", cmd_changepoints}, {"report", cmd_report},
    };
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        fputs(HELP, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) { printf("qgmm-bench %s\n", QGMM_BENCH_VERSION); return 0; }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; ++i)
        if (strcmp(argv[1], cmds[i].name) == 0) return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "qgmm-bench: unknown command \"%s\"\n\n%s", argv[1], HELP);
    return 2;
}
