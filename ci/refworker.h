/*
 * refworker.h — the CPU reference of exact cases, computed on a thread of its own while the
 * main thread checks and times cases on the device.
 *
 * The main thread lists the exact cases a device backend will check, in the order it will
 * check them (refworker_add), says where it is (refworker_at) and, once a case's device
 * run is checked and timed, asks for its reference hash (refworker_wait). The worker takes
 * the first listed case at or after the main thread's position whose reference is not in
 * the cache, computes it on its own CPU context exactly as the main thread would (prepare
 * and check the case on the CPU reference; the output hash of a passing check) and puts it
 * in the cache. So the host's reference work overlaps the device's timing, and the hashes,
 * verdicts and messages stored are those of a run that computes every reference in line
 * (`run --serial-checks`).
 *
 * Memory: a case and its CPU reference are held in host memory several times over (inputs,
 * outputs, poison masks, the CPU reference's own buffers, downloaded copies: about 11
 * times its bytes), and the main thread holds its own case meanwhile. A case moving more
 * than 1/48 of the machine's memory (on a 128 GiB host the 128-expert weight casts and the
 * largest 2D ones) is left to the main thread, which checks it against the CPU in line after
 * timing, as --serial-checks does.
 */
#ifndef QGMM_CI_REFWORKER_H
#define QGMM_CI_REFWORKER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "qgmm_cases.h"
#include "refcache.h"

typedef struct refworker_job {
    const qgmm_case *c;        /* owned by the suite, which outlives the worker */
    uint64_t key;
    long long max_bytes;       /* > 0: a case moving more is not computed (only looked up) */
    int state;                 /* 0 listed, 1 being computed, 2 done (or left to the main thread) */
    int have;                  /* done: the reference hash is known */
    uint64_t hash;
} refworker_job;

typedef struct refworker {
    refcache *cache;
    qgmm_check_options opts;
    refworker_job *jobs;
    size_t n, cap, at;
    int stop, started;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double busy_s;             /* time spent computing references */
    size_t computed;
    qgmm_case_clocks clocks;   /* the worker thread's case-library clocks after its last job */
} refworker;

/* The CPU reference of exact case c: prepared on cpu and checked there (the hash-only
 * check: two runs, coverage, determinism); 1 with its output hash when that check passed,
 * 0 when not. What the worker and the main thread (in line) both compute (cmd_run.c). */
int refcheck_compute(qgmm_context *cpu, const qgmm_check_options *opts, const qgmm_case *c, uint64_t *hash);

/* Starts the thread (its CPU context is created there). Returns 0, or -1 when no thread
 * could be started (the caller then computes references in line). */
int refworker_start(refworker *w, refcache *cache, const qgmm_check_options *opts);
/* Lists a case (once per key); returns its job index. */
size_t refworker_add(refworker *w, const qgmm_case *c, uint64_t key, long long max_bytes);
/* The job index of key, or -1. */
long refworker_find(refworker *w, uint64_t key);
/* The main thread is at job i: the worker computes from there on. */
void refworker_at(refworker *w, size_t i);
/* Waits until job i is done: 1 with *hash when its reference is known, 0 when not (over the
 * size limit and not cached, the reference's own check did not pass, or the case is left to
 * the main thread: it then looks the cache up itself, and computes in line on a miss). */
int refworker_wait(refworker *w, size_t i, uint64_t *hash);
/* Stops the thread after its current case and frees the jobs. */
void refworker_stop(refworker *w);
/* For a run stopped by a signal, which must not wait for a reference that takes minutes:
 * the thread is told to stop and left to the process's exit; w and its cache stay
 * allocated (the caller frees neither). */
void refworker_abandon(refworker *w);

#endif
