/* refworker.c — see refworker.h. */
#include "refworker.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A case moving more than this share of the host's memory is checked by the main thread: a
 * reference's check holds about 11 times the case's bytes (two CPU instances, each with its
 * buffers, host copies and poison masks: 21 GB at the peak for a 1.9 GB cast), and the
 * worker is to use at most a quarter of the memory beside the main thread's case. */
#define MEM_SHARE_DIVISOR 48.0

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The next listed job: the first at or after the main thread's position, else the first. */
static long next_job(const refworker *w)
{
    for (size_t i = w->at; i < w->n; ++i)
        if (w->jobs[i].state == 0) return (long)i;
    for (size_t i = 0; i < w->at && i < w->n; ++i)
        if (w->jobs[i].state == 0) return (long)i;
    return -1;
}

static void *worker(void *arg)
{
    refworker *w = arg;
    qgmm_context *cpu = NULL;
    if (qgmm_context_create("cpu", 0, &cpu) != QGMM_OK) cpu = NULL;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        long i;
        while (!w->stop && (i = next_job(w)) < 0) pthread_cond_wait(&w->cv, &w->mu);
        if (w->stop) break;
        refworker_job *j = &w->jobs[i];
        j->state = 1;
        const qgmm_case *c = j->c;
        const uint64_t key = j->key;
        const long long max_bytes = j->max_bytes;
        pthread_mutex_unlock(&w->mu);
        uint64_t h = 0;
        int have = refcache_get(w->cache, key, c->id, &h);
        double t0 = now_s();
        int computed = 0;
        if (!have && cpu && !(max_bytes > 0 && c->bytes > (double)max_bytes)) {
            have = refcheck_compute(cpu, &w->opts, c, &h);
            if (have) refcache_put(w->cache, key, c->id, h);
            computed = 1;
        }
        pthread_mutex_lock(&w->mu);
        j = &w->jobs[i]; /* the array may have grown meanwhile */
        j->have = have;
        j->hash = h;
        j->state = 2;
        if (computed) { w->busy_s += now_s() - t0; ++w->computed; }
        qgmm_case_clocks_get(&w->clocks);
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    qgmm_context_destroy(cpu);
    return NULL;
}

int refworker_start(refworker *w, refcache *cache, const qgmm_check_options *opts)
{
    memset(w, 0, sizeof *w);
    w->cache = cache;
    w->opts = *opts;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->thread, NULL, worker, w) != 0) return -1;
    w->started = 1;
    return 0;
}

long refworker_find(refworker *w, uint64_t key)
{
    pthread_mutex_lock(&w->mu);
    long r = -1;
    for (size_t i = 0; i < w->n && r < 0; ++i)
        if (w->jobs[i].key == key) r = (long)i;
    pthread_mutex_unlock(&w->mu);
    return r;
}

size_t refworker_add(refworker *w, const qgmm_case *c, uint64_t key, long long max_bytes)
{
    long have = refworker_find(w, key);
    if (have >= 0) return (size_t)have;
    pthread_mutex_lock(&w->mu);
    if (w->n == w->cap) {
        size_t nc = w->cap ? 2 * w->cap : 64;
        refworker_job *n = realloc(w->jobs, nc * sizeof *n);
        if (!n) abort(); /* a few bytes per case: no memory here means no run */
        w->jobs = n;
        w->cap = nc;
    }
    refworker_job *j = &w->jobs[w->n];
    memset(j, 0, sizeof *j);
    j->c = c;
    j->key = key;
    j->max_bytes = max_bytes;
    const double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (mem > 0 && c->bytes * MEM_SHARE_DIVISOR > mem) j->state = 2; /* left to the main thread */
    size_t i = w->n++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return i;
}

void refworker_at(refworker *w, size_t i)
{
    pthread_mutex_lock(&w->mu);
    w->at = i;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

int refworker_wait(refworker *w, size_t i, uint64_t *hash)
{
    pthread_mutex_lock(&w->mu);
    if (w->jobs[i].state == 0 && w->at != i) { /* first in line */
        w->at = i;
        pthread_cond_broadcast(&w->cv);
    }
    while (w->jobs[i].state != 2) pthread_cond_wait(&w->cv, &w->mu);
    int have = w->jobs[i].have;
    *hash = w->jobs[i].hash;
    pthread_mutex_unlock(&w->mu);
    return have;
}

void refworker_stop(refworker *w)
{
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->stop = 1;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
    }
    free(w->jobs);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    w->jobs = NULL;
    w->n = w->cap = 0;
    w->started = 0;
}

void refworker_abandon(refworker *w)
{
    if (!w->started) return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_detach(w->thread);
}
