/*
 * The backend registry: the built-in cpu backend plus plugins (libqgmm-<name>.so) opened
 * with dlopen the first time backends are enumerated or a context is asked for. A plugin
 * that is missing, lacks its vendor runtime or sees no device is listed as unavailable
 * with the reason; nothing else fails.
 */
#define _GNU_SOURCE
#include "qgmm_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef QGMM_BUILTIN_PLUGINS
#define QGMM_BUILTIN_PLUGINS "cuda:hip:vulkan"
#endif
/* Installed plugins sit in this folder beside libqgmm (api/CMakeLists.txt sets it). */
#ifndef QGMM_PLUGIN_SUBDIR
#define QGMM_PLUGIN_SUBDIR "qgmm"
#endif

#define QGMM_MAX_BACKENDS 16

typedef struct registry_entry {
    qgmm_backend_info info;
    const qgmm_backend_vtable *vt;
    void *handle;
} registry_entry;

static registry_entry g_entries[QGMM_MAX_BACKENDS];
static int g_count;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Directory holding libqgmm itself, as the loader opened it: installed plugins are in its
 * QGMM_PLUGIN_SUBDIR folder, build-tree plugins beside it. */
static void self_dir(char *out, size_t cap)
{
    Dl_info di;
    out[0] = 0;
    if (dladdr((void *)&qgmm_backend_count, &di) && di.dli_fname) {
        snprintf(out, cap, "%s", di.dli_fname);
        char *slash = strrchr(out, '/');
        if (slash) *slash = 0; else out[0] = 0;
    }
}

/* Opens dir/file (file alone: the loader's search). A plugin that exists but does not load
 * (a missing dependency, an undefined symbol) is the reason worth reporting rather than the
 * misses after it: its dlerror() goes to `why` when `why` is still empty. */
static void *try_open(const char *dir, const char *file, char *path, size_t cap, char *why,
                      size_t why_cap)
{
    if (dir && dir[0]) snprintf(path, cap, "%s/%s", dir, file);
    else snprintf(path, cap, "%s", file);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h && !why[0] && dir && dir[0] && access(path, F_OK) == 0) {
        const char *err = dlerror();
        snprintf(why, why_cap, "%s", err ? err : "dlopen failed");
    }
    return h;
}

static void load_plugin(registry_entry *e, const char *name)
{
    char file[128], path[1024], tried[512] = "";
    const size_t tc = sizeof tried;
    snprintf(file, sizeof file, "libqgmm-%s.so", name);
    void *h = NULL;
    const char *env = getenv("QGMM_PLUGIN_PATH");
    if (env && env[0]) {
        char dirs[2048];
        snprintf(dirs, sizeof dirs, "%s", env);
        for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !h;
             d = strtok_r(NULL, ":", &save))
            h = try_open(d, file, path, sizeof path, tried, tc);
    }
    if (!h) {
        char dir[1024], sub[1100];
        self_dir(dir, sizeof dir);
        if (dir[0]) {
            snprintf(sub, sizeof sub, "%s/" QGMM_PLUGIN_SUBDIR, dir);
            h = try_open(sub, file, path, sizeof path, tried, tc);
            if (!h) h = try_open(dir, file, path, sizeof path, tried, tc);
        }
    }
    if (!h) h = try_open(NULL, file, path, sizeof path, tried, tc);
    if (!h) {
        if (!tried[0]) {
            const char *err = dlerror();
            snprintf(tried, tc, "%s", err ? err : "not found");
        }
        snprintf(e->info.reason, sizeof e->info.reason,
                 "plugin %s not loadable (searched QGMM_PLUGIN_PATH, libqgmm's directory and "
                 "its " QGMM_PLUGIN_SUBDIR "/ folder, the loader path): %s", file, tried);
        return;
    }
    snprintf(e->info.library, sizeof e->info.library, "%s", path);
    qgmm_plugin_entry_fn entry = (qgmm_plugin_entry_fn)dlsym(h, QGMM_PLUGIN_ENTRY_SYMBOL);
    if (!entry) {
        snprintf(e->info.reason, sizeof e->info.reason, "%s has no symbol %s", path,
                 QGMM_PLUGIN_ENTRY_SYMBOL);
        dlclose(h);
        return;
    }
    char why[256] = "";
    const qgmm_backend_vtable *vt = entry(QGMM_BACKEND_ABI_VERSION, why, sizeof why);
    if (!vt) {
        snprintf(e->info.reason, sizeof e->info.reason, "%s", why[0] ? why : "plugin declined to load");
        /* Kept open: a plugin may have registered atexit handlers or TLS. */
        e->handle = h;
        return;
    }
    if (vt->abi_version != QGMM_BACKEND_ABI_VERSION) {
        snprintf(e->info.reason, sizeof e->info.reason,
                 "%s speaks backend ABI %u, libqgmm speaks %u", path, vt->abi_version,
                 QGMM_BACKEND_ABI_VERSION);
        e->handle = h;
        return;
    }
    int n = vt->device_count ? vt->device_count() : 0;
    e->handle = h;
    e->vt = vt;
    e->info.device_count = n > 0 ? n : 0;
    if (n <= 0) {
        snprintf(e->info.reason, sizeof e->info.reason, "%s loaded but sees no device", path);
        return;
    }
    e->info.available = 1;
}

static int known(const char *name)
{
    for (int i = 0; i < g_count; ++i)
        if (strcmp(g_entries[i].info.name, name) == 0) return 1;
    return 0;
}

static void add_plugins(const char *list)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *n = strtok_r(buf, ":,", &save); n; n = strtok_r(NULL, ":,", &save)) {
        if (!n[0] || strlen(n) >= sizeof g_entries[0].info.name || known(n)) continue;
        if (g_count >= QGMM_MAX_BACKENDS) break;
        registry_entry *e = &g_entries[g_count++];
        memset(e, 0, sizeof *e);
        snprintf(e->info.name, sizeof e->info.name, "%s", n);
        load_plugin(e, n);
    }
}

static void registry_init(void)
{
    registry_entry *cpu = &g_entries[g_count++];
    memset(cpu, 0, sizeof *cpu);
    snprintf(cpu->info.name, sizeof cpu->info.name, "cpu");
    snprintf(cpu->info.library, sizeof cpu->info.library, "built-in");
    cpu->vt = qgmm_cpu_backend_vtable();
    cpu->info.available = 1;
    cpu->info.device_count = 1;
    add_plugins(QGMM_BUILTIN_PLUGINS);
    const char *extra = getenv("QGMM_EXTRA_BACKENDS");
    if (extra) add_plugins(extra);
}

int qgmm_backend_count(void)
{
    pthread_once(&g_once, registry_init);
    return g_count;
}

qgmm_status qgmm_backend_get_info(int index, qgmm_backend_info *out)
{
    qgmm_clear_error(NULL);
    int n = qgmm_backend_count();
    if (!out) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "out is NULL");
    if (index < 0 || index >= n)
        return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT,
                              "index %d is out of range [0, %d)", index, n);
    *out = g_entries[index].info;
    return QGMM_OK;
}

const qgmm_backend_vtable *qgmm_registry_find(const char *name, char *reason, size_t cap)
{
    int n = qgmm_backend_count();
    for (int i = 0; i < n; ++i) {
        if (strcmp(g_entries[i].info.name, name) != 0) continue;
        if (!g_entries[i].info.available) {
            snprintf(reason, cap, "%s", g_entries[i].info.reason);
            return NULL;
        }
        return g_entries[i].vt;
    }
    snprintf(reason, cap, "no backend named \"%s\" is known (known: cpu, " QGMM_BUILTIN_PLUGINS
             " and QGMM_EXTRA_BACKENDS)", name);
    return NULL;
}
