/* qgmm-dash: the results dashboard (see docs/dashboard.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "rundoc.h"
#include "server.h"
#include "tokens.h"

static void help(FILE *f) {
  fprintf(f,
          "qgmm-dash: web dashboard over the qgmm-bench results store (SQLite)\n"
          "\n"
          "usage:\n"
          "  qgmm-dash --db FILE [--listen ADDR:PORT] [options]   serve the dashboard\n"
          "  qgmm-dash --db FILE token add NAME [--scope ingest|triage|all]\n"
          "                                                     create an API token (printed once)\n"
          "  qgmm-dash --db FILE token list                    list tokens (never their values)\n"
          "  qgmm-dash --db FILE token revoke NAME             revoke a token\n"
          "\n"
          "options:\n"
          "  --db FILE          results store written by qgmm-bench (required)\n"
          "  --listen ADDR:PORT address to bind (default 127.0.0.1:8080; a bare PORT binds\n"
          "                     127.0.0.1 too; give 0.0.0.0:PORT explicitly to expose it;\n"
          "                     port 0 picks a free port, printed on stderr)\n"
          "  --threads N        worker threads = concurrent requests (default 8, 1..64)\n"
          "  --max-body BYTES   cap on an uploaded run (default and maximum 16777216, the\n"
          "                     run-document cap that qgmm-bench import applies too)\n"
          "  --timeout-ms MS    per-request socket timeout (default 10000)\n"
          "  --quiet            no access log on stderr\n"
          "  --help, --version\n"
          "\n"
          "Views are read-only; POST /api/v1/runs (ingest) and POST /api/v1/regressions/ID\n"
          "(triage) need `Authorization: Bearer TOKEN`. API reference: docs/dashboard.md.\n");
}

static int num_arg(const char *s, long lo, long hi, long *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

int main(int argc, char **argv) {
  dash_config cfg = {NULL, "127.0.0.1:8080", RUN_DOC_MAX_BYTES, 8, 10000, 0};
  char listen[128];
  int i;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    long v;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      help(stdout);
      return 0;
    } else if (!strcmp(a, "--version")) {
      printf("qgmm-dash 0.1.0\n");
      return 0;
    } else if (!strcmp(a, "--db") && i + 1 < argc) {
      cfg.db_path = argv[++i];
    } else if (!strcmp(a, "--listen") && i + 1 < argc) {
      const char *l = argv[++i];
      /* civetweb binds every interface for a bare port: keep the loopback default. */
      snprintf(listen, sizeof listen, "%s%s", strchr(l, ':') ? "" : "127.0.0.1:", l);
      cfg.listen = listen;
    } else if (!strcmp(a, "--threads") && i + 1 < argc) {
      if (!num_arg(argv[++i], 1, 64, &v)) {
        fprintf(stderr, "qgmm-dash: --threads must be 1..64\n");
        return 2;
      }
      cfg.threads = (int)v;
    } else if (!strcmp(a, "--max-body") && i + 1 < argc) {
      if (!num_arg(argv[++i], 1024, RUN_DOC_MAX_BYTES, &v)) {
        fprintf(stderr, "qgmm-dash: --max-body must be 1024..%u bytes\n", RUN_DOC_MAX_BYTES);
        return 2;
      }
      cfg.max_body = (size_t)v;
    } else if (!strcmp(a, "--timeout-ms") && i + 1 < argc) {
      if (!num_arg(argv[++i], 100, 600000, &v)) {
        fprintf(stderr, "qgmm-dash: --timeout-ms must be 100..600000\n");
        return 2;
      }
      cfg.timeout_ms = (int)v;
    } else if (!strcmp(a, "--quiet")) {
      cfg.quiet = 1;
    } else if (!strcmp(a, "token")) {
      break;
    } else {
      fprintf(stderr, "qgmm-dash: unknown or incomplete argument '%s' (see --help)\n", a);
      return 2;
    }
  }
  if (!cfg.db_path) {
    fprintf(stderr, "qgmm-dash: --db FILE is required (see --help)\n");
    return 2;
  }
  if (i < argc) return token_cli(cfg.db_path, argc - i - 1, argv + i + 1);
  char msg[512];
  int up = db_upgrade(cfg.db_path, msg, sizeof msg);
  if (up) fprintf(stderr, "qgmm-dash: %s\n", msg);
  return server_run(&cfg);
}
