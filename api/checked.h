/*
 * checked.h — the overflow-checked arithmetic of every size, span, bound and byte range
 * the API and the CPU allocator compute from caller-given numbers. Each helper stores the
 * exact result and returns 1, or returns 0 when it does not fit (the result is then
 * unspecified). A caller that gets 0 refuses the call; nothing is computed modulo 2^64.
 */
#ifndef QGMM_CHECKED_H
#define QGMM_CHECKED_H

#include <stddef.h>
#include <stdint.h>

static inline int qgmm_add_i64(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline int qgmm_mul_i64(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }
static inline int qgmm_add_size(size_t a, size_t b, size_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline int qgmm_mul_size(size_t a, size_t b, size_t *r) { return !__builtin_mul_overflow(a, b, r); }

/* v rounded up to a multiple of m (m >= 1), v >= 0. */
static inline int qgmm_round_up_checked(int64_t v, int64_t m, int64_t *r)
{
    int64_t t;
    if (v < 0 || m < 1 || !qgmm_add_i64(v, m - 1, &t)) return 0;
    *r = t / m * m;
    return 1;
}

/* v rounded up to a multiple of the power of two m. */
static inline int qgmm_round_up_size(size_t v, size_t m, size_t *r)
{
    size_t t;
    if (!qgmm_add_size(v, m - 1, &t)) return 0;
    *r = t & ~(m - 1);
    return 1;
}

#endif /* QGMM_CHECKED_H */
