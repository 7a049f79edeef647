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
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t spv_copy[] =
#include "copy_probe.spv.inc"
    ;

#define CHECK(x)                                                                   \
    do {                                                                           \
        VkResult r_ = (x);                                                         \
        if (r_ != VK_SUCCESS) {                                                    \
            fprintf(stderr, "FATAL %s:%d: %s -> %d\n", __FILE__, __LINE__, #x, r_); \
            exit(2);                                                               \
        }                                                                          \
    } while (0)

#define FN(inst, n) PFN_##n n = (PFN_##n)gipa(inst, #n)

typedef struct push { uint64_t src, dst, units; uint32_t per, pad; } push;

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

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
    void *lib = dlopen("libvulkan.so.1", RTLD_NOW);
    if (!lib) { fprintf(stderr, "no libvulkan.so.1\n"); return 77; }
    PFN_vkGetInstanceProcAddr gipa = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
    FN(NULL, vkCreateInstance);
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "vk_copy_probe", 1, NULL, 0, VK_API_VERSION_1_2};
    VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, NULL, 0, &app, 0, NULL, 0, NULL};
    VkInstance inst;
    CHECK(vkCreateInstance(&ici, NULL, &inst));
    FN(inst, vkEnumeratePhysicalDevices); FN(inst, vkGetPhysicalDeviceProperties);
    FN(inst, vkGetPhysicalDeviceQueueFamilyProperties); FN(inst, vkGetPhysicalDeviceMemoryProperties);
    FN(inst, vkCreateDevice); FN(inst, vkGetDeviceProcAddr);
    uint32_t npd = 8;
    VkPhysicalDevice pds[8];
    CHECK(vkEnumeratePhysicalDevices(inst, &npd, pds));
    if (npd == 0) { fprintf(stderr, "no Vulkan device\n"); return 77; }
    VkPhysicalDevice pd = pds[0];
    VkPhysicalDeviceProperties props;
    for (uint32_t i = 0; i < npd; ++i) { /* a discrete GPU first, as qgmm does */
        vkGetPhysicalDeviceProperties(pds[i], &props);
        if (props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) { pd = pds[i]; break; }
    }
    vkGetPhysicalDeviceProperties(pd, &props);
    uint32_t nq = 16;
    VkQueueFamilyProperties qf[16];
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf);
    uint32_t fam = 0;
    while (fam < nq && !(qf[fam].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++fam;
    const float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, fam, 1, &prio};
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .bufferDeviceAddress = VK_TRUE};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12};
    f2.features.shaderInt64 = VK_TRUE;
    VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &f2, 0, 1, &qci, 0, NULL, 0, NULL, NULL};
    VkDevice dev;
    CHECK(vkCreateDevice(pd, &dci, NULL, &dev));
#define DF(n) PFN_##n n = (PFN_##n)vkGetDeviceProcAddr(dev, #n)
    DF(vkGetDeviceQueue); DF(vkCreateBuffer); DF(vkGetBufferMemoryRequirements); DF(vkAllocateMemory);
    DF(vkBindBufferMemory); DF(vkGetBufferDeviceAddress); DF(vkCreateShaderModule); DF(vkCreatePipelineLayout);
    DF(vkCreateComputePipelines); DF(vkCreateCommandPool); DF(vkAllocateCommandBuffers); DF(vkBeginCommandBuffer);
    DF(vkEndCommandBuffer); DF(vkCmdBindPipeline); DF(vkCmdPushConstants); DF(vkCmdDispatch); DF(vkCmdCopyBuffer);
    DF(vkCmdFillBuffer); DF(vkCmdPipelineBarrier); DF(vkCreateQueryPool); DF(vkCmdResetQueryPool);
    DF(vkCmdWriteTimestamp); DF(vkGetQueryPoolResults); DF(vkQueueSubmit); DF(vkQueueWaitIdle); DF(vkMapMemory);
    VkQueue queue;
    vkGetDeviceQueue(dev, fam, 0, &queue);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);

    const size_t bytes = mib << 20;
    VkBuffer buf[3];
    VkDeviceMemory mem[3];
    VkDeviceAddress addr[2];
    for (int i = 0; i < 3; ++i) { /* src, dst (device-local), readback (host-visible, 4 KiB) */
        const VkDeviceSize sz = i < 2 ? bytes : 4096;
        VkBufferCreateInfo bci = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, NULL, 0, sz,
                                  VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT,
                                  VK_SHARING_MODE_EXCLUSIVE, 0, NULL};
        CHECK(vkCreateBuffer(dev, &bci, NULL, &buf[i]));
        VkMemoryRequirements mr;
        vkGetBufferMemoryRequirements(dev, buf[i], &mr);
        const VkMemoryPropertyFlags want = i < 2 ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
                                                 : VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        uint32_t t = 0;
        while (t < mp.memoryTypeCount && !((mr.memoryTypeBits >> t & 1) && (mp.memoryTypes[t].propertyFlags & want) == want)) ++t;
        VkMemoryAllocateFlagsInfo fi = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO, NULL, VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT, 0};
        VkMemoryAllocateInfo mai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, &fi, mr.size, t};
        CHECK(vkAllocateMemory(dev, &mai, NULL, &mem[i]));
        CHECK(vkBindBufferMemory(dev, buf[i], mem[i], 0));
        if (i < 2) {
            VkBufferDeviceAddressInfo ai = {VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, NULL, buf[i]};
            addr[i] = vkGetBufferDeviceAddress(dev, &ai);
        }
    }
    VkShaderModuleCreateInfo smi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, NULL, 0, sizeof spv_copy, spv_copy};
    VkShaderModule sm;
    CHECK(vkCreateShaderModule(dev, &smi, NULL, &sm));
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push)};
    VkPipelineLayoutCreateInfo pli = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, NULL, 0, 0, NULL, 1, &pcr};
    VkPipelineLayout pl;
    CHECK(vkCreatePipelineLayout(dev, &pli, NULL, &pl));
    VkComputePipelineCreateInfo cpi = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, NULL, 0,
                                       {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0,
                                        VK_SHADER_STAGE_COMPUTE_BIT, sm, "main", NULL},
                                       pl, VK_NULL_HANDLE, 0};
    VkPipeline pipe;
    CHECK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpi, NULL, &pipe));
    VkCommandPoolCreateInfo cpci = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL,
                                    VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, fam};
    VkCommandPool pool;
    CHECK(vkCreateCommandPool(dev, &cpci, NULL, &pool));
    VkCommandBufferAllocateInfo cbai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, pool,
                                        VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    VkCommandBuffer cb;
    CHECK(vkAllocateCommandBuffers(dev, &cbai, &cb));
    VkQueryPoolCreateInfo qpi = {VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, NULL, 0, VK_QUERY_TYPE_TIMESTAMP, 2, 0};
    VkQueryPool qp;
    CHECK(vkCreateQueryPool(dev, &qpi, NULL, &qp));
    const VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL,
                                         VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, NULL};
    const VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, &cb, 0, NULL};
    const VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_MEMORY_WRITE_BIT,
                                VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT};

    /* source: two halves of different words, so a copy that moved nothing or the wrong
     * half shows in the read-back check after each variant */
    CHECK(vkBeginCommandBuffer(cb, &bi));
    vkCmdFillBuffer(cb, buf[0], 0, bytes / 2, 0x01234567u);
    vkCmdFillBuffer(cb, buf[0], bytes / 2, bytes / 2, 0x89ABCDEFu);
    vkCmdFillBuffer(cb, buf[1], 0, bytes, 0);
    CHECK(vkEndCommandBuffer(cb));
    CHECK(vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE));
    CHECK(vkQueueWaitIdle(queue));

    printf("# %s, Vulkan %u.%u, driver 0x%x; %zu MiB, median of %d after 3 warm-ups, read + write\n",
           props.deviceName, VK_VERSION_MAJOR(props.apiVersion), VK_VERSION_MINOR(props.apiVersion),
           props.driverVersion, mib, iters);
    printf("| copy | ms | GB/s |\n|---|---|---|\n");
    const uint64_t units = bytes / 16;
    double *ms = calloc((size_t)iters, sizeof *ms);
    static const uint32_t pers[3] = {1, 4, 8};
    for (int v = 0; v < 4; ++v) { /* v < 3: shader with pers[v] units per lane; 3: vkCmdCopyBuffer */
        for (int it = -3; it < iters; ++it) {
            CHECK(vkBeginCommandBuffer(cb, &bi));
            vkCmdResetQueryPool(cb, qp, 0, 2);
            vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb,
                                 0, NULL, 0, NULL);
            vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0);
            if (v < 3) {
                const push p = {addr[0], addr[1], units, pers[v], 0};
                const uint64_t groups = (units + 256u * pers[v] - 1) / (256u * pers[v]);
                vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
                vkCmdPushConstants(cb, pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof p, &p);
                vkCmdDispatch(cb, groups < 65535 ? (uint32_t)groups : 65535u, (uint32_t)((groups + 65534) / 65535), 1);
            } else {
                const VkBufferCopy region = {0, 0, bytes};
                vkCmdCopyBuffer(cb, buf[0], buf[1], 1, &region);
            }
            vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 1);
            CHECK(vkEndCommandBuffer(cb));
            CHECK(vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE));
            CHECK(vkQueueWaitIdle(queue));
            uint64_t ts[2];
            CHECK(vkGetQueryPoolResults(dev, qp, 0, 2, sizeof ts, ts, 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
            if (it >= 0) ms[it] = (double)(ts[1] - ts[0]) * props.limits.timestampPeriod * 1e-6;
        }
        qsort(ms, (size_t)iters, sizeof *ms, cmp_double);
        const double med = iters % 2 ? ms[iters / 2] : 0.5 * (ms[iters / 2 - 1] + ms[iters / 2]);
        if (v < 3) printf("| copy shader, %u x 16 B per lane | %.4f | %.0f |\n", pers[v], med, 2.0 * (double)bytes / (med * 1e6));
        else printf("| vkCmdCopyBuffer | %.4f | %.0f |\n", med, 2.0 * (double)bytes / (med * 1e6));
        /* the copy must have copied: the first word of each half, read back */
        CHECK(vkBeginCommandBuffer(cb, &bi));
        const VkBufferCopy rb[2] = {{0, 0, 4}, {bytes / 2, 4, 4}};
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb,
                             0, NULL, 0, NULL);
        vkCmdCopyBuffer(cb, buf[1], buf[2], 2, rb);
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb,
                             0, NULL, 0, NULL);
        vkCmdFillBuffer(cb, buf[1], 0, bytes, 0);
        CHECK(vkEndCommandBuffer(cb));
        CHECK(vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE));
        CHECK(vkQueueWaitIdle(queue));
        uint32_t *h;
        CHECK(vkMapMemory(dev, mem[2], 0, 8, 0, (void **)&h));
        if (h[0] != 0x01234567u || h[1] != 0x89ABCDEFu) {
            fprintf(stderr, "copy variant %d did not copy (%08x %08x)\n", v, h[0], h[1]);
            return 1;
        }
        PFN_vkUnmapMemory unmap = (PFN_vkUnmapMemory)vkGetDeviceProcAddr(dev, "vkUnmapMemory");
        unmap(dev, mem[2]);
    }
    free(ms);
    return 0; /* the process exit releases the device */
}
