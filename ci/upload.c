/* upload.c — `qgmm-bench upload`: POST one run document to the dashboard's ingest API
 * (docs/run-format.md, "Upload"). The HTTP(S) client is curl(1): TLS, proxies and
 * redirects are its job. The token goes through a 0600 config file, never argv, so it
 * does not show in the process list. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "json.h"
#include "rundoc.h"

int load_run_json(const char *dbp, const char *run, json_buf *out, const char *cmd);

static const char *const UPLOAD_HELP =
    "usage: qgmm-bench upload URL --token T --db FILE [--run ID|UUID|latest]\n"
    "       qgmm-bench upload URL --token T --file RUN.json\n"
    "\n"
    "POSTs one run (default the latest in --db, or a run document file) to URL with\n"
    "Content-Type: application/json and Authorization: Bearer T (also $QGMM_UPLOAD_TOKEN).\n"
    "The server stores it idempotently by uuid. Exit 0 on HTTP 200/201, 1 otherwise (the\n"
    "response body is printed), 2 on usage errors. Needs curl(1).\n";

static int write_tmp(char *path, const void *data, size_t n)
{
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    fchmod(fd, 0600);
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, (const char *)data + off, n - off);
        if (w <= 0) { close(fd); unlink(path); return -1; }
        off += (size_t)w;
    }
    close(fd);
    return 0;
}

int cmd_upload(int argc, char **argv)
{
    if (wants_help(argc, argv)) { fputs(UPLOAD_HELP, stdout); return 0; }
    const char *url = NULL, *token = getenv("QGMM_UPLOAD_TOKEN"), *dbp = NULL, *run = "latest", *file = NULL;
    for (int i = 1; i < argc; ++i) {
        if (opt_value(argc, argv, &i, "--token", &token)) continue;
        if (opt_value(argc, argv, &i, "--db", &dbp)) continue;
        if (opt_value(argc, argv, &i, "--run", &run)) continue;
        if (opt_value(argc, argv, &i, "--file", &file)) continue;
        if (argv[i][0] == '-' || url) { fprintf(stderr, "qgmm-bench upload: unexpected %s (see --help)\n", argv[i]); return 2; }
        url = argv[i];
    }
    if (!url || !token || !*token) { fprintf(stderr, "qgmm-bench upload: give URL and --token T (see --help)\n"); return 2; }
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
        fprintf(stderr, "qgmm-bench upload: URL must start with http:// or https://\n");
        return 2;
    }
    if (strpbrk(url, "'\"\\ \n") || strpbrk(token, "\"\\\n")) {
        fprintf(stderr, "qgmm-bench upload: URL or token contains quotes, spaces or newlines\n");
        return 2;
    }
    json_buf b;
    jb_init(&b);
    if (file) {
        size_t n = 0;
        char err[512];
        char *t = read_file_all(file, RUN_DOC_MAX_BYTES, &n, err, sizeof err);
        if (!t) { fprintf(stderr, "qgmm-bench upload: %s: %s\n", file, err); return 2; }
        jb_raw(&b, t);
        free(t);
    } else if (load_run_json(dbp, run, &b, "upload")) {
        jb_free(&b);
        return 2;
    }
    {
        /* The dashboard decides with the same validator: a document it would refuse is
         * refused here, with the same sentence, before anything is sent. */
        char err[1024], field[160];
        if (rundoc_check(b.data ? b.data : "", b.len, field, sizeof field, err, sizeof err)) {
            fprintf(stderr, "qgmm-bench upload: run refused (not sent): %s\n", err);
            jb_free(&b);
            return 1;
        }
    }
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char body[512], cfg[512], resp[512];
    snprintf(body, sizeof body, "%s/qgmm-upload-body-XXXXXX", tmp);
    snprintf(cfg, sizeof cfg, "%s/qgmm-upload-cfg-XXXXXX", tmp);
    snprintf(resp, sizeof resp, "%s/qgmm-upload-resp-XXXXXX", tmp);
    char conf[1024];
    int cn = snprintf(conf, sizeof conf, "header = \"Authorization: Bearer %s\"\n", token);
    int rc = 1;
    if (write_tmp(body, b.data, b.len) || write_tmp(cfg, conf, (size_t)cn) || write_tmp(resp, "", 0)) {
        fprintf(stderr, "qgmm-bench upload: cannot write temporary files in %s\n", tmp);
        jb_free(&b);
        return 2;
    }
    jb_free(&b);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "curl -sS -X POST -H 'Content-Type: application/json' --data-binary @'%s' -K '%s' -o '%s' -w '%%{http_code}' '%s'",
             body, cfg, resp, url);
    FILE *p = popen(cmd, "r");
    int code = 0;
    if (!p || fscanf(p, "%d", &code) != 1) code = 0;
    int prc = p ? pclose(p) : -1;
    size_t rn = 0;
    char rerr[256];
    char *rtext = read_file_all(resp, 1 << 20, &rn, rerr, sizeof rerr);
    if (code == 200 || code == 201) {
        printf("uploaded to %s: HTTP %d %s\n", url, code, rtext ? rtext : "");
        rc = 0;
    } else {
        fprintf(stderr, "qgmm-bench upload: %s answered HTTP %d%s: %s\n", url, code,
                prc != 0 && code == 0 ? " (curl failed: is the server up, is curl installed?)" : "", rtext ? rtext : "");
    }
    free(rtext);
    unlink(body);
    unlink(cfg);
    unlink(resp);
    return rc;
}
