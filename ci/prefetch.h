/*
 * prefetch.h — the next case's inputs made on a thread of its own while the main thread
 * checks and times the current case on the device.
 *
 * Preparing a nightly case on the host (drawing its inputs, quantizing a GEMM's operands,
 * the poison masks) takes about as long as checking and timing it on the device, and the
 * main thread would otherwise do both in turn. The main thread names the case it will run
 * next (prefetch_request); the thread prepares it on a CPU context of its own (host copies,
 * masks and GEMM state, exactly what qgmm_case_prepare makes), and the main thread takes the
 * instance when it gets there (prefetch_take) and moves it to the device with
 * qgmm_case_prepare_from, as it moves a case from one backend to the next: the bytes are the
 * same as preparing it in line. Cases too big to hold beside the current one
 * (refworker_case_fits) are prepared in line.
 */
#ifndef QGMM_CI_PREFETCH_H
#define QGMM_CI_PREFETCH_H

#include <pthread.h>
#include <stddef.h>

#include "qgmm_cases.h"

typedef struct prefetcher {
    const qgmm_case *want;       /* requested, not started */
    const qgmm_case *working;    /* being prepared */
    const qgmm_case *ready_case; /* prepared: ready (NULL when its preparation failed) */
    qgmm_case_instance *ready;
    int stop, started;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double busy_s;               /* time spent preparing */
    size_t prepared;
    qgmm_case_clocks clocks;     /* the thread's case-library clocks after its last case */
} prefetcher;

/* Starts the thread (its CPU context is created there). 0, or -1 when no thread could be
 * started (the caller then prepares every case in line). */
int prefetch_start(prefetcher *p);
/* Prepare c next (a case that does not fit is ignored: prefetch_take returns NULL for it).
 * A ready instance of another case is released. */
void prefetch_request(prefetcher *p, const qgmm_case *c);
/* The instance of c, on the thread's CPU context, waiting while it is being prepared; NULL
 * when c was not requested or its preparation failed (the caller prepares it in line). */
qgmm_case_instance *prefetch_take(prefetcher *p, const qgmm_case *c);
/* Stops the thread after its current case and releases what it holds. */
void prefetch_stop(prefetcher *p);

#endif
