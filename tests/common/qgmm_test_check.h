/*
 * qgmm_test_check.h — the CHECK / OK macros and the xorshift generator of the standalone
 * test programs. The including file defines `g_ctx` (the context whose error OK prints)
 * and `g_failures` (a long) before including this header.
 */
#ifndef QGMM_TEST_CHECK_H
#define QGMM_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A failed condition counts and (for the first 40) prints; the test goes on. */
#define CHECK(cond, ...)                                                         \
    do {                                                                         \
        if (!(cond)) {                                                           \
            if (g_failures < 40) {                                               \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);             \
                fprintf(stderr, __VA_ARGS__);                                    \
                fputc('\n', stderr);                                             \
            }                                                                    \
            g_failures++;                                                        \
        }                                                                        \
    } while (0)

/* A setup call that must succeed: anything else ends the program (exit 2). */
#define OK(call)                                                                      \
    do {                                                                              \
        qgmm_status s_ = (call);                                                      \
        if (s_ != QGMM_OK) {                                                          \
            fprintf(stderr, "FATAL %s:%d: %s -> %s (%s)\n", __FILE__, __LINE__, #call, \
                    qgmm_status_string(s_), qgmm_last_error(g_ctx));                  \
            exit(2);                                                                  \
        }                                                                             \
    } while (0)

/* xorshift64: the state must not be 0. */
static inline uint64_t qgmm_test_xorshift(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

#endif /* QGMM_TEST_CHECK_H */
