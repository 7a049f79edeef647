/* qgmm_host_copy.c — see qgmm_host_copy.h. */
#include "qgmm_host_copy.h"

#include <stdint.h>
#include <string.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

/* Below this a single memcpy beats waking a thread team. */
#define HOST_COPY_PARALLEL_MIN ((size_t)2 << 20)
/* Memory bandwidth is reached well before this many threads. */
#define HOST_COPY_MAX_THREADS 16

void qgmm_host_copy(void *dst, const void *src, size_t n)
{
#if defined(_OPENMP)
    if (n >= HOST_COPY_PARALLEL_MIN && omp_get_max_threads() > 1 && !omp_in_parallel()) {
        int nt = omp_get_max_threads();
        if (nt > HOST_COPY_MAX_THREADS) nt = HOST_COPY_MAX_THREADS;
#pragma omp parallel num_threads(nt)
        {
            /* contiguous parts, boundaries on 4 KiB (pages of both ranges split evenly) */
            const size_t t = (size_t)omp_get_thread_num(), k = (size_t)omp_get_num_threads();
            const size_t pages = (n + 4095) / 4096;
            size_t lo = pages * t / k * 4096, hi = pages * (t + 1) / k * 4096;
            if (hi > n) hi = n;
            if (lo < hi) memcpy((char *)dst + lo, (const char *)src + lo, hi - lo);
        }
        return;
    }
#endif
    memcpy(dst, src, n);
}
