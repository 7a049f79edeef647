/* refcache.c — see refcache.h. */
#include "refcache.h"
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REFCACHE_MAGIC "qgmm-refcache 2"
#define REFCACHE_MAX_FILE 4096

static void mkdirs(const char *dir)
{
    char p[1024];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; ++s)
        if (*s == '/') { *s = 0; mkdir(p, 0755); *s = '/'; }
    mkdir(p, 0755);
}

void refcache_init(refcache *rc, const char *dir, uint64_t code_version)
{
    memset(rc, 0, sizeof *rc);
    pthread_mutex_init(&rc->mu, NULL);
    rc->code_version = code_version;
    if (dir && dir[0]) {
        snprintf(rc->dir, sizeof rc->dir, "%s", dir);
        mkdirs(rc->dir);
    }
}

void refcache_free(refcache *rc)
{
    free(rc->mem);
    rc->mem = NULL;
    rc->n = rc->cap = 0;
    pthread_mutex_destroy(&rc->mu);
}

uint64_t refcache_key(const refcache *rc, const char *case_id, const char *params_json, uint64_t seed, int in_dtype,
                      int q_dtype, int out_dtype)
{
    char tail[160];
    snprintf(tail, sizeof tail, "\n%llu\n%d %d %d\n%016llx", (unsigned long long)seed, in_dtype, q_dtype, out_dtype,
             (unsigned long long)rc->code_version);
    uint64_t h = store_fnv1a64(STORE_FNV_INIT, case_id, strlen(case_id));
    h = store_fnv1a64(h, "\n", 1);
    h = store_fnv1a64(h, params_json, strlen(params_json));
    return store_fnv1a64(h, tail, strlen(tail));
}

void refcache_path(const refcache *rc, uint64_t key, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%016llx.ref", rc->dir, (unsigned long long)key);
}

static void remember(refcache *rc, uint64_t key, uint64_t hash)
{
    if (rc->n == rc->cap) {
        size_t nc = rc->cap ? rc->cap * 2 : 64;
        refcache_entry *m = realloc(rc->mem, nc * sizeof *m);
        if (!m) return;  /* only costs a recomputation */
        rc->mem = m;
        rc->cap = nc;
    }
    rc->mem[rc->n++] = (refcache_entry){key, hash};
}

/* The body of an entry file, without its checksum line. */
static int body(uint64_t key, const char *case_id, uint64_t hash, char *out, size_t cap)
{
    return snprintf(out, cap, REFCACHE_MAGIC "\nkey %016llx\ncase %.400s\noutput_hash fnv1a64c:%016llx\n",
                    (unsigned long long)key, case_id, (unsigned long long)hash);
}

/* Reads and verifies a file: 1 valid (*hash set), 0 absent, -1 present but not valid. */
static int read_entry(const refcache *rc, uint64_t key, const char *case_id, uint64_t *hash)
{
    char path[1100], buf[REFCACHE_MAX_FILE + 1];
    refcache_path(rc, key, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f) return errno == ENOENT ? 0 : -1;
    size_t n = fread(buf, 1, REFCACHE_MAX_FILE, f);
    int more = fgetc(f) != EOF;
    fclose(f);
    buf[n] = 0;
    if (more || memchr(buf, 0, n)) return -1;
    char *ck = strstr(buf, "checksum fnv1a64:");
    unsigned long long want_sum = 0, h = 0;
    if (!ck || sscanf(ck, "checksum fnv1a64:%16llx", &want_sum) != 1 || strlen(ck) != 17 + 16 + 1 || ck[33] != '\n')
        return -1;
    if (store_fnv1a64(STORE_FNV_INIT, buf, (size_t)(ck - buf)) != want_sum) return -1;
    char *p = strstr(buf, "output_hash fnv1a64c:");
    if (!p || sscanf(p, "output_hash fnv1a64c:%16llx", &h) != 1) return -1;
    char expect[600];
    body(key, case_id, h, expect, sizeof expect);  /* same key, same case, nothing else */
    if ((size_t)(ck - buf) != strlen(expect) || memcmp(buf, expect, strlen(expect)) != 0) return -1;
    *hash = h;
    return 1;
}

static int get_locked(refcache *rc, uint64_t key, const char *case_id, uint64_t *hash)
{
    for (size_t i = 0; i < rc->n; ++i)
        if (rc->mem[i].key == key) { *hash = rc->mem[i].hash; return 1; }
    if (!rc->dir[0]) return 0;
    int r = read_entry(rc, key, case_id, hash);
    if (r == 1) {
        ++rc->hits;
        remember(rc, key, *hash);
        return 1;
    }
    if (r < 0) {
        char path[1100];
        refcache_path(rc, key, path, sizeof path);
        unlink(path);
        ++rc->rejected;
    } else {
        ++rc->misses;
    }
    return 0;
}

int refcache_get(refcache *rc, uint64_t key, const char *case_id, uint64_t *hash)
{
    pthread_mutex_lock(&rc->mu);
    int r = get_locked(rc, key, case_id, hash);
    pthread_mutex_unlock(&rc->mu);
    return r;
}

static int put_locked(refcache *rc, uint64_t key, const char *case_id, uint64_t hash)
{
    remember(rc, key, hash);
    if (!rc->dir[0]) return 0;
    char text[800], path[1100], tmp[1200];
    int n = body(key, case_id, hash, text, sizeof text);
    snprintf(text + n, sizeof text - (size_t)n, "checksum fnv1a64:%016llx\n",
             (unsigned long long)store_fnv1a64(STORE_FNV_INIT, text, (size_t)n));
    refcache_path(rc, key, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return -1;
    int ok = fputs(text, f) >= 0;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) { unlink(tmp); return -1; }
    return 0;
}

int refcache_put(refcache *rc, uint64_t key, const char *case_id, uint64_t hash)
{
    pthread_mutex_lock(&rc->mu);
    int r = put_locked(rc, key, case_id, hash);
    pthread_mutex_unlock(&rc->mu);
    return r;
}
