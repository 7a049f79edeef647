/* cmd_report.c — `qgmm-bench report`: the performance summary of a stored run (report.h). */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "report.h"
#include "store.h"

static const char *const REPORT_HELP =
    "usage: qgmm-bench report --db FILE [--run RUN] [--markdown] [-o FILE]\n"
    "\n"
    "Writes the performance summary of one stored run (default: the latest) as Markdown: a\n"
    "table per family (ceilings and canary, each cast family, padding, layout, each GEMM kind\n"
    "and recipe), one row per case with each qgmm backend's rate (GB/s or TFLOP/s) and its %\n"
    "of that backend's ceiling in the run, and, when the run holds PyTorch peers (`run --peers\n"
    "torch`), torch's rate and each backend's speed relative to it. docs/PERF.md's summary\n"
    "tables are regenerated with it instead of edited by hand. A percentage above 100 is\n"
    "marked '!' and the ceiling named suspect. The store is opened read-only.\n"
    "\n"
    "  --db FILE     the store\n"
    "  --run RUN     an id, a uuid or prefix, or latest (default)\n"
    "  --markdown    the format (the only one; accepted for clarity in scripts)\n"
    "  -o FILE       write there instead of stdout\n";

int cmd_report(int argc, char **argv)
{
    if (wants_help(argc, argv)) { fputs(REPORT_HELP, stdout); return 0; }
    const char *dbp = NULL, *run = "latest", *outp = NULL;
    for (int i = 1; i < argc; ++i) {
        if (opt_value(argc, argv, &i, "--db", &dbp)) continue;
        if (opt_value(argc, argv, &i, "--run", &run)) continue;
        if (opt_value(argc, argv, &i, "-o", &outp)) continue;
        if (strcmp(argv[i], "--markdown") == 0) continue;
        fprintf(stderr, "qgmm-bench report: unexpected %s (see --help)\n", argv[i]);
        return 2;
    }
    sqlite3 *db = NULL;
    if (open_ro(dbp, &db, "report")) return 2;
    char err[1024];
    int64_t id = 0;
    if (store_resolve_run(db, run, &id, err, sizeof err)) {
        fprintf(stderr, "qgmm-bench report: %s\n", err);
        store_close(db);
        return 2;
    }
    FILE *f = outp ? fopen(outp, "w") : stdout;
    if (!f) {
        fprintf(stderr, "qgmm-bench report: cannot write %s\n", outp);
        store_close(db);
        return 2;
    }
    int rc = report_markdown(db, id, f, err, sizeof err);
    if (rc) fprintf(stderr, "qgmm-bench report: %s\n", err);
    if (f != stdout && fclose(f) != 0) rc = -1;
    store_close(db);
    return rc ? 2 : 0;
}
