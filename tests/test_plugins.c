/*
 * Plugin loading: the registry opens libqgmm-<name>.so with dlopen, lists every backend
 * with availability and reason, and a missing or broken plugin never breaks anything
 * else. Each scenario runs in a child process (the registry is built once per process),
 * selected by argv[1]; the parent runs them all and tallies.
 */
#include "qgmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int checks, failures;
#define CHECK(cond, ...) do { ++checks; if (!(cond)) { ++failures; \
    printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static int find(const char *name, qgmm_backend_info *out)
{
    for (int i = 0; i < qgmm_backend_count(); ++i) {
        qgmm_backend_get_info(i, out);
        if (strcmp(out->name, name) == 0) return 1;
    }
    return 0;
}

static void scenario_ok(void)
{
    qgmm_backend_info info;
    CHECK(find("cpu", &info) && info.available && strcmp(info.library, "built-in") == 0, "cpu listed");
    CHECK(find("testplugin", &info), "testplugin listed");
    CHECK(info.available && info.device_count == 2, "testplugin available with 2 devices: %s", info.reason);
    CHECK(strstr(info.library, "libqgmm-testplugin.so") != NULL, "library path recorded: %s", info.library);
    for (const char *n = "cuda"; n; n = strcmp(n, "cuda") == 0 ? "hip" : strcmp(n, "hip") == 0 ? "vulkan" : NULL)
        CHECK(find(n, &info), "%s listed (available or not)", n);
    qgmm_context *ctx = NULL;
    CHECK(qgmm_context_create("testplugin", 1, &ctx) == QGMM_OK, "context on device 1: %s", qgmm_last_error(NULL));
    if (!ctx) return;
    CHECK(strcmp(qgmm_context_describe(ctx), "testplugin (host memory)") == 0, "describe");
    CHECK(qgmm_context_create("testplugin", 2, &(qgmm_context *){0}) == QGMM_ERR_INVALID_ARGUMENT, "device 2 refused");
    qgmm_buffer *offs = NULL, *ids = NULL;
    qgmm_buffer_alloc(ctx, 12, &offs);
    qgmm_buffer_alloc(ctx, 40, &ids);
    const int32_t o[3] = {2, 2, 7};
    qgmm_buffer_upload(offs, 0, o, sizeof o);
    const int64_t g = 3, r = 10;
    qgmm_tensor to = qgmm_tensor_make(offs, 0, QGMM_I32, 1, &g), ti = qgmm_tensor_make(ids, 0, QGMM_I32, 1, &r);
    CHECK(qgmm_group_row_ids(ctx, &to, NULL, &ti) == QGMM_OK, "row ids through the plugin");
    int32_t got[10];
    qgmm_buffer_download(ids, 0, got, sizeof got);
    const int32_t want[10] = {0, 0, 2, 2, 2, 2, 2, -1, -1, -1};
    CHECK(memcmp(got, want, sizeof want) == 0, "row ids values");
    /* an op the plugin leaves NULL */
    qgmm_fp8_rowwise_params p = {1, 0, QGMM_SCALE_MULTIPLIER};
    qgmm_buffer *x = NULL, *q = NULL, *s = NULL;
    qgmm_buffer_alloc(ctx, 4 * 64, &x);
    qgmm_buffer_alloc(ctx, 64, &q);
    qgmm_buffer_alloc(ctx, 16, &s);
    const int64_t sh[2] = {4, 16}, sv = 4;
    qgmm_tensor tx = qgmm_tensor_make(x, 0, QGMM_F32, 2, sh), tq = qgmm_tensor_make(q, 0, QGMM_F8E4M3FN, 2, sh);
    qgmm_tensor ts = qgmm_tensor_make(s, 0, QGMM_F32, 1, &sv);
    qgmm_status st = qgmm_quantize_fp8_rowwise(ctx, &p, &tx, NULL, &tq, &ts);
    CHECK(st == QGMM_ERR_UNSUPPORTED && strstr(qgmm_last_error(ctx), "testplugin"),
          "missing op is UNSUPPORTED naming the backend: %s / %s", qgmm_status_string(st), qgmm_last_error(ctx));
    /* bad offsets go through the plugin's status word */
    const int32_t bad[3] = {5, 3, 7};
    qgmm_buffer_upload(offs, 0, bad, sizeof bad);
    CHECK(qgmm_group_row_ids(ctx, &to, NULL, &ti) == QGMM_OK, "bad offsets accepted by the call");
    CHECK(qgmm_synchronize(ctx) == QGMM_ERR_BAD_OFFSETS, "bad offsets reported at synchronize");
    CHECK(qgmm_buffer_wrap(ctx, (void *)o, 12, &(qgmm_buffer *){0}) == QGMM_ERR_UNSUPPORTED, "wrap unsupported");
    qgmm_buffer_free(x); qgmm_buffer_free(q); qgmm_buffer_free(s);
    qgmm_buffer_free(offs); qgmm_buffer_free(ids);
    qgmm_context_destroy(ctx);
}

static void scenario_unavailable(const char *name, const char *reason_part)
{
    qgmm_backend_info info;
    CHECK(find(name, &info), "%s listed", name);
    CHECK(!info.available, "%s unavailable", name);
    CHECK(strstr(info.reason, reason_part) != NULL, "%s reason \"%s\" mentions \"%s\"", name, info.reason, reason_part);
    qgmm_context *ctx = NULL;
    CHECK(qgmm_context_create(name, 0, &ctx) == QGMM_ERR_BACKEND_UNAVAILABLE && !ctx, "%s context refused", name);
    CHECK(strstr(qgmm_last_error(NULL), reason_part) != NULL, "error carries the reason: %s", qgmm_last_error(NULL));
    /* the rest still works */
    CHECK(qgmm_context_create("cpu", 0, &ctx) == QGMM_OK, "cpu still works");
    qgmm_context_destroy(ctx);
}

static int child(const char *which)
{
    if (strcmp(which, "ok") == 0) scenario_ok();
    else if (strcmp(which, "decline") == 0) scenario_unavailable("testplugin", "libfake-runtime.so.1 not found");
    else if (strcmp(which, "badabi") == 0) scenario_unavailable("testplugin", "ABI");
    else if (strcmp(which, "nodevice") == 0) scenario_unavailable("testplugin", "no device");
    else if (strcmp(which, "missing") == 0) scenario_unavailable("nosuchplugin", "not loadable");
    else if (strcmp(which, "nosymbol") == 0) scenario_unavailable("qgmm", "no symbol");
    printf("  %-9s %d checks, %d failed\n", which, checks, failures);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc > 1) return child(argv[1]);
    const char *scen[][3] = {
        {"ok", "ok", "testplugin"},           {"decline", "decline", "testplugin"},
        {"badabi", "badabi", "testplugin"},   {"nodevice", "nodevice", "testplugin"},
        {"missing", "ok", "nosuchplugin"},
        /* libqgmm.so itself is a library without the entry symbol: "libqgmm-qgmm.so"
         * does not exist, so point the name at a real file through a symlink-free trick:
         * QGMM_EXTRA_BACKENDS=qgmm looks for libqgmm-qgmm.so, created below. */
        {"nosymbol", "ok", "qgmm"},
    };
    int failed = 0, passed = 0;
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 2;
    self[n] = 0;
    const char *plugdir = getenv("QGMM_PLUGIN_PATH");
    if (plugdir) { /* a library without the entry symbol, under a plugin name */
        char src[4096], dst[4096];
        snprintf(src, sizeof src, "%s/libqgmm.so", plugdir);
        snprintf(dst, sizeof dst, "%s/libqgmm-qgmm.so", plugdir);
        if (access(dst, F_OK) != 0 && symlink(src, dst) != 0) perror("symlink");
    }
    for (size_t i = 0; i < sizeof scen / sizeof scen[0]; ++i) {
        pid_t pid = fork();
        if (pid == 0) {
            setenv("QGMM_TESTPLUGIN_MODE", scen[i][1], 1);
            setenv("QGMM_EXTRA_BACKENDS", scen[i][2], 1);
            execl(self, self, scen[i][0], (char *)NULL);
            _exit(3);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) ++passed; else { ++failed; printf("FAIL scenario %s\n", scen[i][0]); }
    }
    printf("plugin scenarios: %d passed, %d failed\n", passed, failed);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
