/*
 * test_hip_plugin.c — the HIP plugin's host-side paths that need no AMD GPU, so CI runs
 * them on a machine without one:
 *  - "hip" is always listed; with libqgmm-hip.so built it is the library recorded;
 *  - without a device it is unavailable with a reason that says so ("no HIP device", or
 *    the runtime's own error), and a context request fails cleanly with that reason;
 *  - qgmm_plugin_entry itself: wrong ABI -> NULL + reason; NULL reason buffer tolerated;
 *    repeated calls give the same answer.
 * With an AMD GPU present the same checks assert the opposite (available, a context
 * that describes its gfx arch). Nothing here is skipped: every branch asserts.
 */
#include "qgmm.h"
#include "qgmm_backend.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int checks, failures;
#define CHECK(cond, ...) do { ++checks; if (!(cond)) { ++failures; \
    printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static int plugin_path(char *out, size_t cap)
{
    const char *dirs = getenv("QGMM_PLUGIN_PATH");
    if (!dirs) return 0;
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", dirs);
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, cap, "%s/libqgmm-hip.so", d);
        if (access(out, R_OK) == 0) return 1;
    }
    return 0;
}

static void check_entry_directly(const char *path, int registry_available)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL, "dlopen %s: %s", path, h ? "" : dlerror());
    if (!h) return;
    qgmm_plugin_entry_fn entry = (qgmm_plugin_entry_fn)dlsym(h, QGMM_PLUGIN_ENTRY_SYMBOL);
    CHECK(entry != NULL, "%s exports %s", path, QGMM_PLUGIN_ENTRY_SYMBOL);
    if (!entry) return;
    char why[256] = "";
    CHECK(entry(QGMM_BACKEND_ABI_VERSION + 7, why, sizeof why) == NULL, "wrong ABI refused");
    CHECK(strstr(why, "ABI") != NULL, "wrong-ABI reason names the ABI: \"%s\"", why);
    const qgmm_backend_vtable *v1 = entry(QGMM_BACKEND_ABI_VERSION, NULL, 0);
    why[0] = 0;
    const qgmm_backend_vtable *v2 = entry(QGMM_BACKEND_ABI_VERSION, why, sizeof why);
    CHECK((v1 != NULL) == (v2 != NULL), "same answer twice");
    CHECK((v2 != NULL) == (registry_available != 0), "entry agrees with the registry");
    if (v2) {
        CHECK(strcmp(v2->name, "hip") == 0 && v2->abi_version == QGMM_BACKEND_ABI_VERSION, "vtable name/ABI");
        CHECK(v2->grouped_gemm && v2->cast && v2->pad_token_groups, "ops filled in");
    } else {
        CHECK(why[0] != 0, "a declining entry gives a reason");
    }
    /* a short buffer is truncated, never overrun */
    char tiny[6];
    memset(tiny, 'x', sizeof tiny);
    if (!entry(QGMM_BACKEND_ABI_VERSION + 1, tiny, 4)) CHECK(tiny[3] == 0 && tiny[4] == 'x', "reason_cap honoured");
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: test_hip_plugin\nChecks how the HIP plugin loads and reports itself (no GPU needed).\n"
               "Set QGMM_PLUGIN_PATH to the folder holding libqgmm-hip.so. Exit 0 pass, 1 fail.\n");
        return 0;
    }
    qgmm_backend_info info;
    int found = 0;
    for (int i = 0; i < qgmm_backend_count(); ++i) {
        qgmm_backend_get_info(i, &info);
        if (strcmp(info.name, "hip") == 0) { found = 1; break; }
    }
    CHECK(found, "hip is listed among the backends");
    if (!found) goto done;
    char path[2100];
    const int built = plugin_path(path, sizeof path);
    printf("hip: available=%d devices=%d library=\"%s\" reason=\"%s\" (plugin %s)\n", info.available,
           info.device_count, info.library, info.reason, built ? path : "not built");
    if (!built) {
        CHECK(!info.available && strstr(info.reason, "not loadable") != NULL,
              "no plugin file: unavailable, reason says not loadable: \"%s\"", info.reason);
    } else {
        CHECK(strstr(info.library, "libqgmm-hip.so") != NULL, "library recorded: \"%s\"", info.library);
        if (!info.available) {
            CHECK(info.device_count == 0, "no devices counted");
            CHECK(strstr(info.reason, "no HIP device") != NULL || strstr(info.reason, "HIP runtime") != NULL,
                  "reason names the missing device/runtime: \"%s\"", info.reason);
        } else {
            CHECK(info.device_count > 0 && info.reason[0] == 0, "available with devices");
        }
        check_entry_directly(path, info.available);
    }
    qgmm_context *ctx = NULL;
    const qgmm_status s = qgmm_context_create("hip", 0, &ctx);
    if (info.available) {
        CHECK(s == QGMM_OK || s == QGMM_ERR_UNSUPPORTED, "context on device 0: %s", qgmm_last_error(NULL));
        if (ctx) {
            CHECK(strstr(qgmm_context_describe(ctx), "gfx") != NULL, "describe names the arch: %s",
                  qgmm_context_describe(ctx));
            qgmm_context_destroy(ctx);
        }
    } else {
        CHECK(s == QGMM_ERR_BACKEND_UNAVAILABLE && ctx == NULL, "context refused with BACKEND_UNAVAILABLE (got %s)",
              qgmm_status_string(s));
        CHECK(strlen(qgmm_last_error(NULL)) > 0, "with a message: \"%s\"", qgmm_last_error(NULL));
        CHECK(qgmm_context_create_with_stream("hip", 0, (void *)0x1, &ctx) == QGMM_ERR_BACKEND_UNAVAILABLE && !ctx,
              "adopted-stream context refused too");
    }
done:
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
