/*
 * refcache.h — the CPU reference of exact cases, computed once and kept on disk.
 *
 * An exact case (a cast, a layout op, padding) passes when every output byte equals the
 * CPU reference's. The reference is the same for every backend and every night as long as
 * the case and the reference code are the same, so the runner keeps the FNV-1a 64 hash of
 * the reference's output bytes under a key that hashes (case id, params, seed, dtypes,
 * reference code version): computed once per run at most, and not at all while the cache
 * holds it. Each entry is one small text file ending in a checksum of the lines before it;
 * a file that is truncated, corrupted or written for another key is counted, removed and
 * recomputed, never trusted. The calls are thread-safe (the runner's reference worker and
 * its main thread share one cache).
 */
#ifndef QGMM_CI_REFCACHE_H
#define QGMM_CI_REFCACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct refcache_entry { uint64_t key, hash; } refcache_entry;

typedef struct refcache {
    char dir[1024];          /* "" = no disk cache (still once per run) */
    uint64_t code_version;   /* hash of the reference code: libqgmm and the case library */
    refcache_entry *mem;
    size_t n, cap;
    size_t hits, misses, rejected;   /* disk lookups found, absent, refused (corrupt) */
    pthread_mutex_t mu;
} refcache;

/* dir: the cache directory (created when absent), or NULL / "" for none. */
void refcache_init(refcache *rc, const char *dir, uint64_t code_version);
void refcache_free(refcache *rc);
/* The key of a case: its identity and the reference code version. */
uint64_t refcache_key(const refcache *rc, const char *case_id, const char *params_json, uint64_t seed, int in_dtype,
                      int q_dtype, int out_dtype);
/* 1 with *hash when known (this run, or a valid file), 0 when not. */
int refcache_get(refcache *rc, uint64_t key, const char *case_id, uint64_t *hash);
/* Remembers it for this run and writes its file (atomically: a temporary file renamed).
 * Returns 0, or -1 when the file could not be written (the run goes on). */
int refcache_put(refcache *rc, uint64_t key, const char *case_id, uint64_t hash);
/* The path of a key's file (tests corrupt it). */
void refcache_path(const refcache *rc, uint64_t key, char *out, size_t cap);

#endif
