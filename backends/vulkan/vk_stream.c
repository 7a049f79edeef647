/*
 * vk_stream.c — command recording and submission for a context's queue, the per-dispatch
 * parameter ring, lazily created pipelines, fills and the group-offset prepass.
 */
#include "vk_internal.h"
#include "glsl/params.h"
#include "glsl/fill_params.h"
#include "glsl/offs_params.h"

#include <string.h>

/* Waits for submitted command buffer k's fence and makes the slot free again. */
static VkResult cmd_wait(vk_ctx *c, vk_cmd *k)
{
    VkResult r = g_vk.vkWaitForFences(c->dev, 1, &k->fence, VK_TRUE, UINT64_MAX);
    g_vk.vkResetFences(c->dev, 1, &k->fence);
    k->state = 0;
    return r;
}

VkCommandBuffer vk_begin(vk_ctx *c)
{
    if (c->cur >= 0) return c->cmds[c->cur].cb;
    vk_cmd *k = &c->cmds[c->next];
    if (k->state == 2) cmd_wait(c, k); /* ring full: reuse the oldest once it has finished */
    g_vk.vkResetCommandBuffer(k->cb, 0);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    g_vk.vkBeginCommandBuffer(k->cb, &bi);
    k->state = 1;
    c->cur = c->next;
    c->next = (c->next + 1) % VK_NCMD;
    c->recorded = 0;
    return k->cb;
}

/* A full barrier: every later command sees every earlier command's writes (ops are
 * serialised on the queue; the GPU still runs each op's workgroups in parallel). */
void vk_barrier(vk_ctx *c, VkCommandBuffer cb)
{
    /* explicit stages and access bits (compute shaders and transfers are all we record) */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                                           VK_ACCESS_HOST_READ_BIT};
    const VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    g_vk.vkCmdPipelineBarrier(cb, st, st | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    if (++c->recorded >= VK_AUTOFLUSH) vk_flush(c);
}

qgmm_status vk_flush(vk_ctx *c)
{
    if (c->cur < 0) return QGMM_OK;
    vk_cmd *k = &c->cmds[c->cur];
    c->cur = -1;
    g_vk.vkEndCommandBuffer(k->cb);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &k->cb};
    VkResult r = g_vk.vkQueueSubmit(c->queue, 1, &si, k->fence);
    k->state = 2;
    if (r != VK_SUCCESS) return qgmm_set_error(c->api, QGMM_ERR_DEVICE, "vkQueueSubmit failed (VkResult %d)", (int)r);
    return QGMM_OK;
}

qgmm_status vk_wait_slot(vk_ctx *c, int i)
{
    if (i < 0) return QGMM_OK;
    vk_cmd *k = &c->cmds[i];
    if (k->state != 2) return QGMM_OK;
    const VkResult r = cmd_wait(c, k);
    if (r != VK_SUCCESS) return qgmm_set_error(c->api, QGMM_ERR_DEVICE, "vkWaitForFences failed (VkResult %d)", (int)r);
    return QGMM_OK;
}

qgmm_status vk_wait_all(vk_ctx *c)
{
    qgmm_status st = vk_flush(c);
    for (int i = 0; i < VK_NCMD; ++i) {
        vk_cmd *k = &c->cmds[i];
        if (k->state != 2) continue;
        const VkResult r = cmd_wait(c, k);
        if (r != VK_SUCCESS && st == QGMM_OK)
            st = qgmm_set_error(c->api, QGMM_ERR_DEVICE, "vkWaitForFences failed (VkResult %d)", (int)r);
    }
    c->param_cursor = 0; /* nothing in flight reads the parameter ring any more */
    return st;
}

/* The pipeline of shader `pipe` with specialization constants spec[0..nspec) (ids 0..), built
 * on first use and kept for the context's life. Why specialization: the GEMM's operand
 * layouts and formats, folded at pipeline creation, leave the driver one lean loop instead
 * of one loop per combination. */
qgmm_status vk_pipeline_spec(vk_ctx *c, int pipe, const int32_t *spec, int nspec, VkPipeline *out)
{
    VkPipeline *slot = NULL;
    if (nspec == 0) {
        slot = &c->pipes[pipe];
    } else {
        if (nspec > VK_MAX_SPEC_CONST)
            return qgmm_set_error(c->api, QGMM_ERR_INTERNAL, "%d specialization constants > %d", nspec, VK_MAX_SPEC_CONST);
        for (int i = 0; i < c->nspec_pipes && !slot; ++i) {
            vk_spec_pipe *e = &c->spec_pipes[i];
            if (e->pipe == pipe && e->nspec == nspec && !memcmp(e->spec, spec, sizeof(int32_t) * (size_t)nspec))
                slot = &e->pl;
        }
        if (!slot) {
            if (c->nspec_pipes == VK_MAX_SPEC_PIPES)
                return qgmm_set_error(c->api, QGMM_ERR_UNSUPPORTED, "more than %d specialized pipelines", VK_MAX_SPEC_PIPES);
            vk_spec_pipe *e = &c->spec_pipes[c->nspec_pipes];
            memset(e, 0, sizeof *e);
            e->pipe = pipe;
            e->nspec = nspec;
            memcpy(e->spec, spec, sizeof(int32_t) * (size_t)nspec);
            slot = &e->pl;
        }
    }
    if (*slot) {
        *out = *slot;
        return QGMM_OK;
    }
    const vk_spirv *s = &g_vk_spirv[pipe];
    VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = s->bytes,
                                   .pCode = s->code};
    VkShaderModule mod;
    if (g_vk.vkCreateShaderModule(c->dev, &mi, NULL, &mod) != VK_SUCCESS)
        return qgmm_set_error(c->api, QGMM_ERR_DEVICE, "vkCreateShaderModule(%s) failed", s->name);
    VkSpecializationMapEntry map[VK_MAX_SPEC_CONST];
    for (int i = 0; i < nspec; ++i)
        map[i] = (VkSpecializationMapEntry){.constantID = (uint32_t)i, .offset = (uint32_t)(4 * i), .size = 4};
    VkSpecializationInfo si = {.mapEntryCount = (uint32_t)nspec, .pMapEntries = map,
                               .dataSize = 4 * (size_t)nspec, .pData = spec};
    VkComputePipelineCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                                      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                                                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                                                .module = mod,
                                                .pName = "main",
                                                .pSpecializationInfo = nspec ? &si : NULL},
                                      .flags = c->pipestats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
                                      .layout = c->layout};
    VkResult r = g_vk.vkCreateComputePipelines(c->dev, VK_NULL_HANDLE, 1, &ci, NULL, slot);
    g_vk.vkDestroyShaderModule(c->dev, mod, NULL);
    if (r != VK_SUCCESS) {
        *slot = VK_NULL_HANDLE;
        return qgmm_set_error(c->api, QGMM_ERR_DEVICE, "vkCreateComputePipelines(%s) failed (VkResult %d)",
                              s->name, (int)r);
    }
    if (nspec) c->nspec_pipes += slot == &c->spec_pipes[c->nspec_pipes].pl;
    if (c->pipestats) vk_pipestats_print(c, *slot, s->name);
    *out = *slot;
    return QGMM_OK;
}

qgmm_status vk_pipeline(vk_ctx *c, int pipe, VkPipeline *out) { return vk_pipeline_spec(c, pipe, NULL, 0, out); }

qgmm_status vk_dispatch_spec(vk_ctx *c, int pipe, const int32_t *spec, int nspec, const int64_t *p, int n,
                             int64_t groups)
{
    return vk_dispatch_spec_ex(c, pipe, spec, nspec, p, n, groups, 1);
}

/* Records the dispatches of `groups` workgroups (vk_grid_next with the context's row width,
 * QGMM_VULKAN_DISPATCH_X), each with its push constants: the parameter block's address, the
 * row width and the dispatch's first linear id (common.glsl wg_linear). */
static void vk_grid_dispatch(vk_ctx *c, VkCommandBuffer cb, uint64_t addr, int64_t groups)
{
    const uint32_t row = (uint32_t)c->tune.dispatch_x;
    for (int64_t base = 0; base < groups;) {
        vk_grid g;
        base = vk_grid_next(groups, row, base, &g);
        const struct {
            uint64_t params;
            uint32_t row, base;
        } pc = {addr, row, g.base};
        g_vk.vkCmdPushConstants(cb, c->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, (uint32_t)sizeof pc, &pc);
        g_vk.vkCmdDispatch(cb, g.gx, g.gy, 1);
    }
}

qgmm_status vk_dispatch_spec_ex(vk_ctx *c, int pipe, const int32_t *spec, int nspec, const int64_t *p, int n,
                                int64_t groups, int barrier_after)
{
    if (groups <= 0) return QGMM_OK;
    if (groups > VK_GROUPS_MAX)
        return qgmm_set_error(c->api, QGMM_ERR_UNSUPPORTED, "vulkan: %lld workgroups in one dispatch (at most %lld)",
                              (long long)groups, (long long)VK_GROUPS_MAX);
    VkPipeline pl;
    qgmm_status st = vk_pipeline_spec(c, pipe, spec, nspec, &pl);
    if (st != QGMM_OK) return st;
    if (c->param_cursor + VK_PARAM_SLOT > VK_PARAM_RING) {
        st = vk_wait_all(c); /* ring full: wait until no dispatch reads it */
        if (st != QGMM_OK) return st;
    }
    const size_t off = c->param_cursor;
    c->param_cursor += VK_PARAM_SLOT;
    memset((char *)c->params.map + off, 0, VK_PARAM_SLOT);
    memcpy((char *)c->params.map + off, p, (size_t)n * sizeof(int64_t));
    VkCommandBuffer cb = vk_begin(c);
    g_vk.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl);
    vk_grid_dispatch(c, cb, c->params.addr + off, groups);
    if (barrier_after) vk_barrier(c, cb);
    return QGMM_OK;
}

qgmm_status vk_dispatch(vk_ctx *c, int pipe, const int64_t *p, int n, int64_t groups)
{
    return vk_dispatch_spec(c, pipe, NULL, 0, p, n, groups);
}

qgmm_status vk_fill(vk_ctx *c, uint64_t addr, int64_t bytes, uint8_t value)
{
    if (bytes <= 0) return QGMM_OK;
    const qg_fill_params p = {.dst = (int64_t)addr, .bytes = bytes, .value = value};
    return vk_dispatch(c, VKP_FILL, (const int64_t *)&p, QG_FILL_NP, (bytes + 1023) / 1024);
}

qgmm_status vk_offs_prep(vk_ctx *c, const qgmm_tensor *offs, int64_t extent, int64_t multiple,
                         int64_t align, int64_t tile, int64_t div, uint64_t out0, uint64_t out1,
                         uint64_t padoffs, int64_t cap)
{
    const int64_t G = offs->shape[0];
    if ((TAB_HEADER + G * TAB_STRIDE) * 4 > (int64_t)VK_SCRATCH_BYTES)
        return qgmm_set_error(c->api, QGMM_ERR_UNSUPPORTED, "offs: %lld groups exceed the Vulkan group table",
                              (long long)G);
    if (offs->rank == 1 && offs->shape[0] > 1 && offs->strides[0] != 1)
        return qgmm_set_error(c->api, QGMM_ERR_UNSUPPORTED, "offs: the Vulkan backend needs contiguous offsets");
    qg_offs_params p;
    memset(&p, 0, sizeof p);
    p.offs = (int64_t)vk_tensor_addr(offs);
    p.g = G;
    p.extent = extent;
    p.multiple = multiple;
    p.align = align;
    p.tile = tile;
    p.table = (int64_t)c->scratch.addr;
    p.status = (int64_t)c->status.addr;
    p.out0 = (int64_t)out0;
    p.out1 = (int64_t)out1;
    p.padoffs = (int64_t)padoffs;
    p.div = div;
    p.padcap = cap + 1;
    return vk_dispatch(c, VKP_OFFS_PREP, (const int64_t *)&p, QG_OFFS_NP, 1);
}
