/*
 * qgmm_host_copy.h — memcpy of a large host range on several threads, for the GPU plugins'
 * staged uploads and downloads (backends/cuda/cuda_backend.cu, backends/vulkan/vk_backend.c).
 *
 * One thread's memcpy moves about 5-10 GB/s; a staging chunk copied by one thread was the
 * host side of every upload and download, slower than the PCIe transfer it overlaps. The
 * bytes copied are memcpy's: the range is split into contiguous parts, one per thread.
 */
#ifndef QGMM_HOST_COPY_H
#define QGMM_HOST_COPY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* memcpy(dst, src, n) (non-overlapping ranges), on several OpenMP threads when n is large.
 * Compiled into each plugin with hidden visibility (the plugins build with
 * -fvisibility=hidden). */
void qgmm_host_copy(void *dst, const void *src, size_t n);

#ifdef __cplusplus
}
#endif

#endif
