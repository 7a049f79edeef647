/* prefetch.c — see prefetch.h. */
#include "prefetch.h"

#include <string.h>
#include <time.h>

#include "refworker.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *prefetch_main(void *arg)
{
    prefetcher *p = arg;
    qgmm_context *cpu = NULL;
    if (qgmm_context_create("cpu", 0, &cpu) != QGMM_OK) cpu = NULL;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && !p->want) pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop) break;
        const qgmm_case *c = p->want;
        p->want = NULL;
        p->working = c;
        pthread_mutex_unlock(&p->mu);
        const double t0 = now_s();
        qgmm_case_instance *inst = NULL;
        if (!cpu || qgmm_case_prepare(c, cpu, &inst) != QGMM_OK) inst = NULL;
        const double t1 = now_s();
        pthread_mutex_lock(&p->mu);
        p->working = NULL;
        p->ready_case = inst ? c : NULL;
        p->ready = inst;
        p->busy_s += t1 - t0;
        p->prepared += inst != NULL;
        qgmm_case_clocks_get(&p->clocks);
        pthread_cond_broadcast(&p->cv);
    }
    qgmm_case_instance *left = p->ready; /* made on cpu: released before it goes */
    p->ready = NULL;
    p->ready_case = NULL;
    pthread_mutex_unlock(&p->mu);
    qgmm_case_release(left);
    qgmm_context_destroy(cpu); /* instances taken from here were moved off it (prepare_from) */
    return NULL;
}

int prefetch_start(prefetcher *p)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (pthread_create(&p->thread, NULL, prefetch_main, p) != 0) return -1;
    p->started = 1;
    return 0;
}

void prefetch_request(prefetcher *p, const qgmm_case *c)
{
    if (!p->started || !c || !refworker_case_fits(c)) return;
    pthread_mutex_lock(&p->mu);
    /* one instance at a time: the previous one is taken before the next is asked for */
    while (p->working) pthread_cond_wait(&p->cv, &p->mu);
    qgmm_case_instance *drop = p->ready;
    p->ready = NULL;
    p->ready_case = NULL;
    p->want = c;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    qgmm_case_release(drop);
}

qgmm_case_instance *prefetch_take(prefetcher *p, const qgmm_case *c)
{
    if (!p->started) return NULL;
    pthread_mutex_lock(&p->mu);
    if (p->want == c) p->want = NULL; /* not started yet: the caller is as quick */
    while (p->working == c) pthread_cond_wait(&p->cv, &p->mu);
    qgmm_case_instance *inst = p->ready_case == c ? p->ready : NULL;
    if (inst) {
        p->ready = NULL;
        p->ready_case = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    return inst;
}

void prefetch_stop(prefetcher *p)
{
    if (!p->started) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    p->want = NULL;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    p->started = 0;
}
