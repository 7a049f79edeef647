/* test_rundoc.c — the run-document validator that `import`, `upload` and the dashboard's
 * ingest share (ci/rundoc.h): documents the ingest refuses (invalid UTF-8, over-long
 * names, duplicate keys, a BOM) are refused by `import` with the field named and nothing
 * written; `import` reads at most the 16 MiB document cap, so /dev/zero is refused at once. */
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "json.h"
#include "rundoc.h"
#include "runner_testutil.h"
#include "store_json.h"

/* A valid one-result document with subject and hostname as given (raw JSON text inside
 * the quotes). */
static char *make_doc(const char *subject, const char *hostname)
{
    const char *fmt =
        "{\"format\": \"qgmm-run\", \"version\": 1, \"uuid\": \"8c5a0a3e-3f51-4d8e-9a57-2f4ad1c3b001\","
        " \"suite\": \"s\", \"started_at\": \"2026-11-22T15:40:00Z\", \"finished_at\": \"2026-11-22T15:40:01Z\","
        " \"runner\": \"qgmm-bench\", \"runner_version\": \"0.1.0\","
        " \"machine\": {\"hostname\": \"%s\", \"cpu\": \"Test CPU\"},"
        " \"revision\": {\"sha\": \"unknown\", \"subject\": \"%s\"},"
        " \"contexts\": [{\"backend\": \"cpu\", \"device\": {\"name\": \"Test CPU\", \"kind\": \"cpu\"}}],"
        " \"results\": [{\"context\": 0, \"benchmark\": \"b\", \"params\": {\"m\": 1}, \"status\": \"ok\","
        " \"verdict\": \"pass\", \"samples_us\": [1.5]}]}";
    size_t n = strlen(fmt) + strlen(subject) + strlen(hostname) + 1;
    char *d = malloc(n);
    snprintf(d, n, fmt, hostname, subject);
    return d;
}

static char *repeat(char c, size_t n)
{
    char *s = malloc(n + 1);
    memset(s, c, n);
    s[n] = 0;
    return s;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
}

int main(void)
{
    char field[160], err[1024];
    char *ok = make_doc("a subject", "host-1");
    CHECK(rundoc_check(ok, strlen(ok), field, sizeof field, err, sizeof err) == 0, "valid document: %s", err);

    /* what the dashboard's ingest refuses, the validator refuses, naming the field */
    char *big_subject = repeat('s', 100 * 1024), *big_host = repeat('h', 1024 * 1024);
    struct { const char *what; char *doc; const char *field; } bad[] = {
        {"invalid UTF-8", make_doc("bad \xff\xfe bytes", "host-1"), ""},
        {"overlong UTF-8", make_doc("\xc0\xaf", "host-1"), ""},
        {"UTF-8 surrogate", make_doc("\xed\xa0\x80", "host-1"), ""},
        {"100 KB subject", make_doc(big_subject, "host-1"), "revision.subject"},
        {"1 MB hostname", make_doc("a subject", big_host), "machine.hostname"},
        {"empty hostname", make_doc("a subject", ""), "machine.hostname"},
        {"duplicate key", make_doc("x\", \"subject\": \"y", "host-1"), ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        int rc = rundoc_check(bad[i].doc, strlen(bad[i].doc), field, sizeof field, err, sizeof err);
        CHECK(rc != 0, "%s accepted", bad[i].what);
        CHECK(strcmp(field, bad[i].field) == 0 && strncmp(err, bad[i].field, strlen(bad[i].field)) == 0,
              "%s: field \"%s\", message \"%.120s\"", bad[i].what, field, err);
    }
    size_t n = strlen(ok);
    char *bom = malloc(n + 4);
    memcpy(bom, "\xef\xbb\xbf", 3);
    memcpy(bom + 3, ok, n + 1);
    CHECK(rundoc_check(bom, n + 3, field, sizeof field, err, sizeof err) != 0, "a byte order mark is refused");
    CHECK(rundoc_check(ok, RUN_DOC_MAX_BYTES + 1, field, sizeof field, err, sizeof err) != 0 && strstr(err, "cap"),
          "a document over the cap is refused: %s", err);

    /* the same through `qgmm-bench import`: exit 1, the field named, nothing written */
    char db[1024], path[1200], cmd[4096];
    static char out[1 << 16];
    t_db_path("rundoc", db, sizeof db);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        snprintf(path, sizeof path, "%s/rundoc-bad-%zu.json", QGMM_TEST_TMP, i);
        write_file(path, bad[i].doc);
        snprintf(cmd, sizeof cmd, "%s import --db %s %s 2>&1", QGMM_BENCH_EXE, db, path);
        int rc = t_sh(cmd, out, sizeof out);
        CHECK(rc == 1 && strstr(out, "nothing written") && strstr(out, bad[i].field),
              "import of %s: rc %d: %.200s", bad[i].what, rc, out);
    }
    snprintf(path, sizeof path, "%s/rundoc-ok.json", QGMM_TEST_TMP);
    write_file(path, ok);
    snprintf(cmd, sizeof cmd, "%s import --db %s %s 2>&1", QGMM_BENCH_EXE, db, path);
    CHECK(t_sh(cmd, out, sizeof out) == 0 && strstr(out, "imported"), "valid import: %s", out);
    sqlite3 *h = NULL;
    sqlite3_open(db, &h);
    CHECK(t_count(h, "SELECT count(*) FROM run") == 1 && t_count(h, "SELECT count(*) FROM machine") == 1,
          "only the valid document was stored");
    sqlite3_close(h);

    /* /dev/zero: refused at the cap, fast, with the cap in the sentence */
    time_t t0 = time(NULL);
    snprintf(cmd, sizeof cmd, "timeout 60 %s import --db %s /dev/zero 2>&1", QGMM_BENCH_EXE, db);
    int rc = t_sh(cmd, out, sizeof out);
    CHECK(rc == 1 && strstr(out, "16777216-byte cap"), "import /dev/zero: rc %d: %.200s", rc, out);
    CHECK(time(NULL) - t0 < 30, "import /dev/zero stops at the cap (%lld s)", (long long)(time(NULL) - t0));
    /* upload checks with the same validator before sending anything */
    snprintf(path, sizeof path, "%s/rundoc-bad-4.json", QGMM_TEST_TMP);
    snprintf(cmd, sizeof cmd, "%s upload http://127.0.0.1:9/api/v1/runs --token t --file %s 2>&1", QGMM_BENCH_EXE, path);
    rc = t_sh(cmd, out, sizeof out);
    CHECK(rc == 1 && strstr(out, "not sent") && strstr(out, "machine.hostname"), "upload refuses first: %.200s", out);

    /* the reader itself: nesting and duplicate keys */
    char *deep = repeat('[', 40);
    CHECK(json_value_parse(deep, strlen(deep), err, sizeof err) == NULL, "nesting deeper than 32 refused");
    CHECK(json_value_parse("{\"a\":1,\"a\":2}", 13, err, sizeof err) == NULL && strstr(err, "duplicate"),
          "duplicate key refused: %s", err);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) free(bad[i].doc);
    free(deep);
    free(bom);
    free(ok);
    free(big_subject);
    free(big_host);
    return t_report("test_rundoc");
}
