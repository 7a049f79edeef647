/* vk_bench_util.h — what the Vulkan benchmarks share: a fatal check on qgmm calls and a
 * xorshift generator (deterministic data, never zeros when used as the benches do). */
#ifndef QGMM_VK_BENCH_UTIL_H
#define QGMM_VK_BENCH_UTIL_H
#include "qgmm.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define OK(call)                                                                          \
    do {                                                                                  \
        qgmm_status s_ = (call);                                                          \
        if (s_ != QGMM_OK) {                                                              \
            fprintf(stderr, "FATAL %s:%d: %s -> %s (%s)\n", __FILE__, __LINE__, #call,     \
                    qgmm_status_string(s_), qgmm_last_error(NULL));                       \
            exit(2);                                                                      \
        }                                                                                 \
    } while (0)

static uint64_t g_rng = RNG_SEED;
static inline uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}
#endif
