/*
 * vk_backend.c — the Vulkan plugin's vtable: contexts, buffers (device-local, staged
 * transfers), fills/copies, timestamp events, synchronize with the device status word.
 */
#include "vk_internal.h"
#include "glsl/fill_params.h"
#include "qgmm_host_copy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t vk_tensor_addr(const qgmm_tensor *t)
{
    if (!t || !t->buffer) return 0;
    return vkbuf_of(t->buffer)->m.addr + t->offset;
}

uint64_t vk_ref_addr(const qgmm_ref *r)
{
    return r->buffer ? vkbuf_of(r->buffer)->m.addr + r->offset : 0;
}

static int vk_device_count(void) { return g_vk.ndev; }

static qgmm_status vk_context_create(qgmm_context *ctx, int device, void *stream, qgmm_backend_ctx **out)
{
    if (stream)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "native_stream: the vulkan backend cannot adopt a stream");
    vk_ctx *c = NULL;
    qgmm_status st = vk_ctx_create(ctx, device, &c);
    if (st == QGMM_OK) *out = c;
    return st;
}

static void vk_context_destroy(qgmm_backend_ctx *b) { vk_ctx_destroy((vk_ctx *)b); }

static void vk_context_describe(qgmm_backend_ctx *b, char *out, size_t cap)
{
    snprintf(out, cap, "%s", ((vk_ctx *)b)->describe);
}

static qgmm_status vk_synchronize(qgmm_context *ctx, uint32_t *device_status)
{
    vk_ctx *c = vk_of(ctx);
    VkCommandBuffer cb = vk_begin(c);
    VkBufferCopy r = {.srcOffset = 0, .dstOffset = 0, .size = 4};
    g_vk.vkCmdCopyBuffer(cb, c->status.buf, c->readback.buf, 1, &r);
    vk_barrier(c, cb);
    cb = vk_begin(c);
    g_vk.vkCmdFillBuffer(cb, c->status.buf, 0, 4, 0);
    vk_barrier(c, cb);
    /* QGMM_VK_DUMP_TABLE=1: also print the head of the last group table (debug aid) */
    const int dump = c->tune.dump_table;
    if (dump) {
        cb = vk_begin(c);
        VkBufferCopy t = {.srcOffset = 0, .dstOffset = 64, .size = 192};
        g_vk.vkCmdCopyBuffer(cb, c->scratch.buf, c->readback.buf, 1, &t);
        vk_barrier(c, cb);
    }
    qgmm_status st = vk_wait_all(c);
    *device_status = *(volatile uint32_t *)c->readback.map;
    if (dump) {
        const int32_t *w = (const int32_t *)((const char *)c->readback.map + 64);
        fprintf(stderr, "qgmm-vulkan group table:");
        for (int i = 0; i < 48; ++i) fprintf(stderr, " %d", w[i]);
        fprintf(stderr, "\n");
    }
    return st;
}

static qgmm_status vk_buffer_alloc(qgmm_context *ctx, size_t bytes, qgmm_backend_buf **out, void **native)
{
    vk_buf *b = calloc(1, sizeof *b);
    if (!b) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "no host memory for a buffer handle");
    qgmm_status st = vk_mem_create(vk_of(ctx), bytes, 0, &b->m);
    if (st != QGMM_OK) {
        free(b);
        return st;
    }
    b->owned = 1;
    *out = b;
    *native = (void *)b->m.buf;
    return QGMM_OK;
}

/* A wrapped VkBuffer must belong to this context's VkDevice and have been created with
 * STORAGE_BUFFER | TRANSFER_SRC | TRANSFER_DST | SHADER_DEVICE_ADDRESS usage (memory
 * allocated with VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT): the shaders reach it by address. */
static qgmm_status vk_buffer_wrap(qgmm_context *ctx, void *native, size_t bytes, qgmm_backend_buf **out)
{
    if (!native) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "native: a NULL VkBuffer");
    vk_buf *b = calloc(1, sizeof *b);
    if (!b) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "no host memory for a buffer handle");
    b->m.buf = (VkBuffer)native;
    b->m.size = bytes;
    VkBufferDeviceAddressInfo ad = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, .buffer = b->m.buf};
    b->m.addr = g_vk.vkGetBufferDeviceAddress(vk_of(ctx)->dev, &ad);
    if (!b->m.addr) {
        free(b);
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "native: the VkBuffer has no device address (needs SHADER_DEVICE_ADDRESS usage)");
    }
    *out = b;
    return QGMM_OK;
}

static void vk_buffer_free(qgmm_context *ctx, qgmm_backend_buf *bb, int owned)
{
    vk_buf *b = (vk_buf *)bb;
    if (!b) return;
    vk_ctx *c = vk_of(ctx);
    vk_wait_all(c); /* pending work may still use it */
    if (owned && b->owned) vk_mem_destroy(c, &b->m);
    free(b);
}

static void host_barrier(VkCommandBuffer cb)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    g_vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
                              NULL, 0, NULL);
}

/* Transfers go through two host-visible staging chunks: the device copies one while the host
 * copies the other between it and the caller's memory on several threads (qgmm_host_copy);
 * one chunk copied, waited for and memcpy'd by one thread at a time was most of the host time
 * of `qgmm-bench run` on Vulkan. Same bytes. */
static qgmm_status vk_buffer_upload(qgmm_context *ctx, qgmm_backend_buf *bb, size_t off, const void *src,
                                    size_t bytes)
{
    vk_ctx *c = vk_of(ctx);
    vk_buf *b = (vk_buf *)bb;
    qgmm_status st = vk_wait_all(c); /* earlier ops must read the old contents first */
    int slot[2] = {-1, -1};          /* the submission that last read each staging chunk */
    for (size_t done = 0, i = 0; st == QGMM_OK && done < bytes; ++i) {
        const size_t n = bytes - done < VK_STAGING_BYTES ? bytes - done : VK_STAGING_BYTES;
        const int s = (int)(i & 1);
        st = vk_wait_slot(c, slot[s]);
        if (st != QGMM_OK) break;
        qgmm_host_copy(c->staging[s].map, (const char *)src + done, n);
        VkCommandBuffer cb = vk_begin(c);
        slot[s] = c->cur; /* vk_barrier may submit it already */
        VkBufferCopy r = {.srcOffset = 0, .dstOffset = off + done, .size = n};
        g_vk.vkCmdCopyBuffer(cb, c->staging[s].buf, b->m.buf, 1, &r);
        vk_barrier(c, cb);
        st = vk_flush(c);
        done += n;
    }
    const qgmm_status w = vk_wait_all(c);
    return st != QGMM_OK ? st : w;
}

/* Records chunk j's copy into its staging chunk and submits it; returns its ring slot. */
static int download_chunk(vk_ctx *c, vk_buf *b, size_t off, size_t bytes, size_t j, qgmm_status *st)
{
    const size_t at = j * VK_STAGING_BYTES, n = bytes - at < VK_STAGING_BYTES ? bytes - at : VK_STAGING_BYTES;
    VkCommandBuffer cb = vk_begin(c);
    const int slot = c->cur; /* vk_barrier may submit it already */
    VkBufferCopy r = {.srcOffset = off + at, .dstOffset = 0, .size = n};
    g_vk.vkCmdCopyBuffer(cb, b->m.buf, c->staging[j & 1].buf, 1, &r);
    host_barrier(cb);
    vk_barrier(c, cb);
    *st = vk_flush(c);
    return slot;
}

static qgmm_status vk_buffer_download(qgmm_context *ctx, qgmm_backend_buf *bb, size_t off, void *dst,
                                      size_t bytes)
{
    vk_ctx *c = vk_of(ctx);
    vk_buf *b = (vk_buf *)bb;
    qgmm_status st = QGMM_OK;
    const size_t nch = (bytes + VK_STAGING_BYTES - 1) / VK_STAGING_BYTES;
    int slot[2] = {-1, -1};
    if (nch > 0) slot[0] = download_chunk(c, b, off, bytes, 0, &st);
    for (size_t i = 0; st == QGMM_OK && i < nch; ++i) {
        /* chunk i+1 goes into the other staging chunk, whose chunk i-1 the host has copied out */
        if (i + 1 < nch) slot[(i + 1) & 1] = download_chunk(c, b, off, bytes, i + 1, &st);
        if (st == QGMM_OK) st = vk_wait_slot(c, slot[i & 1]);
        if (st != QGMM_OK) break;
        const size_t at = i * VK_STAGING_BYTES, n = bytes - at < VK_STAGING_BYTES ? bytes - at : VK_STAGING_BYTES;
        qgmm_host_copy((char *)dst + at, c->staging[i & 1].map, n);
    }
    const qgmm_status w = vk_wait_all(c);
    return st != QGMM_OK ? st : w;
}

static qgmm_status vk_buffer_fill(qgmm_context *ctx, qgmm_backend_buf *bb, size_t off, size_t bytes, uint8_t v)
{
    vk_ctx *c = vk_of(ctx);
    vk_buf *b = (vk_buf *)bb;
    if (off % 4 == 0 && bytes % 4 == 0 && bytes > 0) { /* the transfer engine's fill */
        VkCommandBuffer cb = vk_begin(c);
        g_vk.vkCmdFillBuffer(cb, b->m.buf, off, bytes, 0x01010101u * v);
        vk_barrier(c, cb);
        return QGMM_OK;
    }
    return vk_fill(c, b->m.addr + off, (int64_t)bytes, v);
}

static qgmm_status vk_buffer_copy(qgmm_context *ctx, qgmm_backend_buf *dst, size_t doff, qgmm_backend_buf *src,
                                  size_t soff, size_t bytes)
{
    vk_ctx *c = vk_of(ctx);
    if (bytes == 0) return QGMM_OK;
    const uint64_t sa = ((vk_buf *)src)->m.addr + soff, da = ((vk_buf *)dst)->m.addr + doff;
    if (sa % 16 == 0 && da % 16 == 0 && bytes % 16 == 0) {
        /* the copy shader: vkCmdCopyBuffer moves a fraction of what a compute shader does */
        const int64_t units = (int64_t)(bytes / 16), per_group = 256 * COPY_PER_LANE;
        const qg_copy_params p = {.src = (int64_t)sa, .dst = (int64_t)da, .units = units};
        return vk_dispatch(c, VKP_COPY, (const int64_t *)&p, QG_COPY_NP, (units + per_group - 1) / per_group);
    }
    VkCommandBuffer cb = vk_begin(c);
    VkBufferCopy r = {.srcOffset = soff, .dstOffset = doff, .size = bytes};
    g_vk.vkCmdCopyBuffer(cb, ((vk_buf *)src)->m.buf, ((vk_buf *)dst)->m.buf, 1, &r);
    vk_barrier(c, cb);
    return QGMM_OK;
}

/* ---- events: one timestamp query each */
typedef struct vk_event { VkQueryPool pool; } vk_event;

static qgmm_status vk_event_create(qgmm_context *ctx, qgmm_backend_event **out)
{
    vk_ctx *c = vk_of(ctx);
    if (!c->ts_ok) return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "the Vulkan queue has no timestamps");
    vk_event *e = calloc(1, sizeof *e);
    if (!e) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "no host memory for an event");
    VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                .queryCount = 1};
    if (g_vk.vkCreateQueryPool(c->dev, &qi, NULL, &e->pool) != VK_SUCCESS) {
        free(e);
        return qgmm_set_error(ctx, QGMM_ERR_DEVICE, "vkCreateQueryPool failed");
    }
    *out = e;
    return QGMM_OK;
}

static qgmm_status vk_event_record(qgmm_context *ctx, qgmm_backend_event *ev)
{
    vk_ctx *c = vk_of(ctx);
    vk_event *e = (vk_event *)ev;
    VkCommandBuffer cb = vk_begin(c);
    g_vk.vkCmdResetQueryPool(cb, e->pool, 0, 1);
    g_vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, e->pool, 0);
    /* no submission here: a timestamp submitted on its own ran ahead of the work recorded
     * after it, so the interval took in the host's time to record and submit that work
     * (tens of microseconds per op, more while the host thread stalls). The work goes at the
     * next flush (elapsed_ms, synchronize, or every VK_AUTOFLUSH commands), both timestamps
     * in the same submission. */
    return QGMM_OK;
}

static qgmm_status vk_event_elapsed_ms(qgmm_context *ctx, qgmm_backend_event *s, qgmm_backend_event *e, double *ms)
{
    vk_ctx *c = vk_of(ctx);
    qgmm_status st = vk_wait_all(c);
    if (st != QGMM_OK) return st;
    uint64_t t0 = 0, t1 = 0;
    VkResult r0 = g_vk.vkGetQueryPoolResults(c->dev, ((vk_event *)s)->pool, 0, 1, 8, &t0, 8,
                                             VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    VkResult r1 = g_vk.vkGetQueryPoolResults(c->dev, ((vk_event *)e)->pool, 0, 1, 8, &t1, 8,
                                             VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r0 != VK_SUCCESS || r1 != VK_SUCCESS)
        return qgmm_set_error(ctx, QGMM_ERR_DEVICE, "vkGetQueryPoolResults failed (%d, %d)", (int)r0, (int)r1);
    const uint64_t d = (t1 - t0) & c->ts_mask;
    *ms = (double)d * (double)c->props.limits.timestampPeriod * 1e-6;
    return QGMM_OK;
}

static void vk_event_destroy(qgmm_context *ctx, qgmm_backend_event *ev)
{
    vk_ctx *c = vk_of(ctx);
    vk_event *e = (vk_event *)ev;
    if (!e) return;
    vk_wait_all(c);
    g_vk.vkDestroyQueryPool(c->dev, e->pool, NULL);
    free(e);
}

static const qgmm_backend_vtable g_vtable = {
    .abi_version = QGMM_BACKEND_ABI_VERSION,
    .name = "vulkan",
    .device_count = vk_device_count,
    .context_create = vk_context_create,
    .context_destroy = vk_context_destroy,
    .context_describe = vk_context_describe,
    .synchronize = vk_synchronize,
    .buffer_alloc = vk_buffer_alloc,
    .buffer_wrap = vk_buffer_wrap,
    .buffer_free = vk_buffer_free,
    .buffer_upload = vk_buffer_upload,
    .buffer_download = vk_buffer_download,
    .buffer_fill = vk_buffer_fill,
    .buffer_copy = vk_buffer_copy,
    .event_create = vk_event_create,
    .event_record = vk_event_record,
    .event_elapsed_ms = vk_event_elapsed_ms,
    .event_destroy = vk_event_destroy,
    .ep_route = vk_ep_route,
    .ep_layout = vk_ep_layout,
    .ep_pack = vk_ep_pack,
    .ep_unpack = vk_ep_unpack,
    .cast = vk_cast,
    .scales_to_blocked = vk_scales_to_blocked,
    .scales_from_blocked = vk_scales_from_blocked,
    .pad_token_groups = vk_pad_token_groups,
    .unpad_token_groups = vk_unpad_token_groups,
    .group_row_ids = vk_group_row_ids,
    .grouped_gemm = vk_grouped_gemm,
};

QGMM_API const qgmm_backend_vtable *qgmm_plugin_entry(uint32_t abi_version, char *reason, size_t cap)
{
    if (abi_version != QGMM_BACKEND_ABI_VERSION) {
        snprintf(reason, cap, "ABI version %u, the vulkan plugin speaks %u", abi_version, QGMM_BACKEND_ABI_VERSION);
        return NULL;
    }
    if (vk_loader_init(reason, cap) != QGMM_OK) return NULL;
    return &g_vtable;
}
