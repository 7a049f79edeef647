/*
 * qgmm_test_check.h — the CHECK / OK macros, the xorshift generator and the device-buffer
 * helpers of the standalone test programs. The including file includes qgmm.h and defines
 * `g_ctx` (the context whose error OK prints and whose buffers the helpers make) and
 * `g_failures` (a long) before including this header.
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

/* A buffer of `bytes` (at least 1) on g_ctx holding a copy of src. */
static inline qgmm_buffer *qgmm_test_buf_from(const void *src, size_t bytes)
{
    qgmm_buffer *b;
    OK(qgmm_buffer_alloc(g_ctx, bytes ? bytes : 1, &b));
    if (bytes) OK(qgmm_buffer_upload(b, 0, src, bytes));
    return b;
}

/* A buffer of `bytes` (at least 1) on g_ctx with every byte `poison`. */
static inline qgmm_buffer *qgmm_test_buf_poisoned(size_t bytes, uint8_t poison)
{
    qgmm_buffer *b;
    OK(qgmm_buffer_alloc(g_ctx, bytes ? bytes : 1, &b));
    OK(qgmm_buffer_fill(b, 0, bytes ? bytes : 1, poison));
    return b;
}

/* The first `bytes` of b in a malloc'ed host copy (the caller frees it). */
static inline void *qgmm_test_fetch(qgmm_buffer *b, size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (bytes) OK(qgmm_buffer_download(b, 0, p, bytes));
    return p;
}

/* A rank-1 tensor of n elements at the start of b. */
static inline qgmm_tensor qgmm_test_t1(qgmm_buffer *b, qgmm_dtype dt, int64_t n)
{
    const int64_t s[1] = {n};
    return qgmm_tensor_make(b, 0, dt, 1, s);
}

#endif /* QGMM_TEST_CHECK_H */
