/*
 * vk_copy_probe.c — the Vulkan copy baselines for the cast bandwidth figures, on raw
 * Vulkan (no qgmm): device-to-device copy of --mib MiB (default 1024) by a plain compute
 * shader (copy_probe.comp, 1, 4 and 8 16-byte units per lane) and by vkCmdCopyBuffer,
 * timestamp queries around each dispatch, median of --iters (default 20) after 3 warm-ups,
 * GB/s counted as read + write. The destination is checked against the source once.
 *
 * build: glslc --target-env=vulkan1.2 -O -mfmt=c -o DIR/copy_probe.spv.inc bench/vulkan/copy_probe.comp
 *        gcc -O2 -IDIR bench/vulkan/vk_copy_probe.c -ldl -o vk_copy_probe
 */
#include "vk_raw.h"

#include <string.h>

static const uint32_t spv_copy[] =
#include "copy_probe.spv.inc"
    ;

typedef struct push { uint64_t src, dst, units; uint32_t per, pad; } push;

int main(int argc, char **argv)
{
    size_t mib = 1024;
    int iters = 20;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--mib") && i + 1 < argc) mib = (size_t)atoll(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else {
            printf("usage: vk_copy_probe [--mib N] [--iters N]: copy-shader and vkCmdCopyBuffer bandwidth\n");
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    vk_raw r = {0};
    const int rc = vk_raw_instance(&r, "vk_copy_probe", VK_API_VERSION_1_2);
    if (rc) return rc;
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .bufferDeviceAddress = VK_TRUE};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12};
    f2.features.shaderInt64 = VK_TRUE;
    vk_raw_device(&r, &f2, NULL, 0);

    const size_t bytes = mib << 20;
    VkBuffer buf[3];
    VkDeviceMemory mem[3];
    VkDeviceAddress addr[2];
    vk_raw_buffer(&r, bytes, 0, &buf[0], &mem[0], &addr[0]); /* src */
    vk_raw_buffer(&r, bytes, 0, &buf[1], &mem[1], &addr[1]); /* dst */
    vk_raw_buffer(&r, 4096, 1, &buf[2], &mem[2], NULL);      /* read-back */
    const VkPipelineLayout pl = vk_raw_layout(&r, sizeof(push));
    VkPipeline pipe;
    CHECK(vk_raw_pipeline(&r, spv_copy, sizeof spv_copy, pl, &pipe));

    /* source: two halves of different words, so a copy that moved nothing or the wrong
     * half shows in the read-back check after each variant */
    vk_raw_begin(&r);
    r.CmdFillBuffer(r.cb, buf[0], 0, bytes / 2, 0x01234567u);
    r.CmdFillBuffer(r.cb, buf[0], bytes / 2, bytes / 2, 0x89ABCDEFu);
    r.CmdFillBuffer(r.cb, buf[1], 0, bytes, 0);
    vk_raw_submit(&r);

    printf("# %s, Vulkan %u.%u, driver 0x%x; %zu MiB, median of %d after 3 warm-ups, read + write\n",
           r.props.deviceName, VK_VERSION_MAJOR(r.props.apiVersion), VK_VERSION_MINOR(r.props.apiVersion),
           r.props.driverVersion, mib, iters);
    printf("| copy | ms | GB/s |\n|---|---|---|\n");
    const uint64_t units = bytes / 16;
    double *ms = calloc((size_t)iters, sizeof *ms);
    static const uint32_t pers[3] = {1, 4, 8};
    for (int v = 0; v < 4; ++v) { /* v < 3: shader with pers[v] units per lane; 3: vkCmdCopyBuffer */
        for (int it = -3; it < iters; ++it) {
            vk_raw_begin(&r);
            r.CmdResetQueryPool(r.cb, r.qp, 0, 2);
            vk_raw_barrier(&r);
            r.CmdWriteTimestamp(r.cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, r.qp, 0);
            if (v < 3) {
                const push p = {addr[0], addr[1], units, pers[v], 0};
                const uint64_t groups = (units + 256u * pers[v] - 1) / (256u * pers[v]);
                r.CmdBindPipeline(r.cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
                r.CmdPushConstants(r.cb, pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof p, &p);
                r.CmdDispatch(r.cb, groups < 65535 ? (uint32_t)groups : 65535u, (uint32_t)((groups + 65534) / 65535), 1);
            } else {
                const VkBufferCopy region = {0, 0, bytes};
                r.CmdCopyBuffer(r.cb, buf[0], buf[1], 1, &region);
            }
            r.CmdWriteTimestamp(r.cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, r.qp, 1);
            vk_raw_submit(&r);
            if (it >= 0) ms[it] = vk_raw_elapsed_ms(&r);
        }
        const double med = vk_raw_median(ms, iters);
        if (v < 3) printf("| copy shader, %u x 16 B per lane | %.4f | %.0f |\n", pers[v], med, 2.0 * (double)bytes / (med * 1e6));
        else printf("| vkCmdCopyBuffer | %.4f | %.0f |\n", med, 2.0 * (double)bytes / (med * 1e6));
        /* the copy must have copied: the first word of each half, read back */
        vk_raw_begin(&r);
        const VkBufferCopy rb[2] = {{0, 0, 4}, {bytes / 2, 4, 4}};
        vk_raw_barrier(&r);
        r.CmdCopyBuffer(r.cb, buf[1], buf[2], 2, rb);
        vk_raw_barrier(&r);
        r.CmdFillBuffer(r.cb, buf[1], 0, bytes, 0);
        vk_raw_submit(&r);
        uint32_t *h;
        CHECK(r.MapMemory(r.dev, mem[2], 0, 8, 0, (void **)&h));
        if (h[0] != 0x01234567u || h[1] != 0x89ABCDEFu) {
            fprintf(stderr, "copy variant %d did not copy (%08x %08x)\n", v, h[0], h[1]);
            return 1;
        }
        r.UnmapMemory(r.dev, mem[2]);
    }
    free(ms);
    return 0; /* the process exit releases the device */
}
