/*
 * vk_device.c — the Vulkan loader (dlopen'ed, never linked, so libqgmm and the other
 * backends run on machines without Vulkan), device choice and per-context device state.
 *
 * A device is usable when it offers Vulkan >= 1.2 with bufferDeviceAddress, 8/16-bit
 * storage and shaderInt64 (the shaders address tensors by 64-bit device addresses and
 * store fp8 bytes / bf16 halves directly). Order: discrete, integrated, virtual, other,
 * CPU implementations (lavapipe) last; QGMM_VULKAN_DEVICE (a name substring) overrides
 * the index.
 */
#include "vk_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

vk_api g_vk;

static int type_rank(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 4;
    default: return 3;
    }
}

/* Why a physical device cannot run the backend ("" when it can). */
static void device_lacks(VkPhysicalDevice pd, char *why, size_t cap)
{
    VkPhysicalDeviceProperties p;
    g_vk.vkGetPhysicalDeviceProperties(pd, &p);
    why[0] = 0;
    if (p.apiVersion < VK_API_VERSION_1_2) {
        snprintf(why, cap, "Vulkan %u.%u < 1.2", VK_API_VERSION_MAJOR(p.apiVersion),
                 VK_API_VERSION_MINOR(p.apiVersion));
        return;
    }
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &f12};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
    g_vk.vkGetPhysicalDeviceFeatures2(pd, &f);
    if (!f12.bufferDeviceAddress) snprintf(why, cap, "no bufferDeviceAddress");
    else if (!f12.storageBuffer8BitAccess) snprintf(why, cap, "no storageBuffer8BitAccess");
    else if (!f11.storageBuffer16BitAccess) snprintf(why, cap, "no storageBuffer16BitAccess");
    else if (!f.features.shaderInt64) snprintf(why, cap, "no shaderInt64");
}

qgmm_status vk_loader_init(char *reason, size_t cap)
{
    if (g_vk.instance) return QGMM_OK;
    g_vk.lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!g_vk.lib) {
        snprintf(reason, cap, "libvulkan.so.1 not found (%s)", dlerror());
        return QGMM_ERR_BACKEND_UNAVAILABLE;
    }
    g_vk.GetInstanceProcAddr = (PFN_vkGetInstanceProcAddr)dlsym(g_vk.lib, "vkGetInstanceProcAddr");
    if (!g_vk.GetInstanceProcAddr) {
        snprintf(reason, cap, "libvulkan.so.1 has no vkGetInstanceProcAddr");
        return QGMM_ERR_BACKEND_UNAVAILABLE;
    }
    g_vk.CreateInstance = (PFN_vkCreateInstance)g_vk.GetInstanceProcAddr(NULL, "vkCreateInstance");
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "qgmm",
                             .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkResult r = g_vk.CreateInstance ? g_vk.CreateInstance(&ici, NULL, &g_vk.instance) : VK_ERROR_INITIALIZATION_FAILED;
    if (r != VK_SUCCESS) {
        g_vk.instance = VK_NULL_HANDLE;
        snprintf(reason, cap, "vkCreateInstance failed (VkResult %d): no Vulkan driver?", (int)r);
        return QGMM_ERR_BACKEND_UNAVAILABLE;
    }
#define X(n)                                                                              \
    g_vk.n = (PFN_##n)g_vk.GetInstanceProcAddr(g_vk.instance, #n);                        \
    if (!g_vk.n) {                                                                        \
        snprintf(reason, cap, "the Vulkan loader lacks %s", #n);                          \
        return QGMM_ERR_BACKEND_UNAVAILABLE;                                              \
    }
    VK_FUNCS(X)
#undef X
    uint32_t n = 0;
    g_vk.vkEnumeratePhysicalDevices(g_vk.instance, &n, NULL);
    VkPhysicalDevice all[16];
    if (n > 16) n = 16;
    g_vk.vkEnumeratePhysicalDevices(g_vk.instance, &n, all);
    char first_why[160] = "";
    g_vk.ndev = 0;
    for (int rank = 0; rank <= 4; ++rank)
        for (uint32_t i = 0; i < n; ++i) {
            VkPhysicalDeviceProperties p;
            g_vk.vkGetPhysicalDeviceProperties(all[i], &p);
            if (type_rank(p.deviceType) != rank) continue;
            char why[96];
            device_lacks(all[i], why, sizeof why);
            if (why[0]) {
                if (!first_why[0]) snprintf(first_why, sizeof first_why, "%s: %s", p.deviceName, why);
                continue;
            }
            g_vk.devs[g_vk.ndev++] = all[i];
        }
    if (g_vk.ndev == 0) {
        snprintf(reason, cap, "no usable Vulkan device (%u seen%s%s)", n, first_why[0] ? "; " : "", first_why);
        return QGMM_ERR_BACKEND_UNAVAILABLE;
    }
    return QGMM_OK;
}

static int mem_type(vk_ctx *c, uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer)
{
    for (int pass = 0; pass < 2; ++pass)
        for (uint32_t i = 0; i < c->memprops.memoryTypeCount; ++i) {
            VkMemoryPropertyFlags f = c->memprops.memoryTypes[i].propertyFlags;
            if (!(bits & (1u << i)) || (f & want) != want) continue;
            if (pass == 0 && (f & prefer) != prefer) continue;
            return (int)i;
        }
    return -1;
}

qgmm_status vk_mem_create(vk_ctx *c, size_t bytes, int host_visible, vk_mem *m)
{
    memset(m, 0, sizeof *m);
    m->size = bytes;
    if (bytes < 256) bytes = 256; /* zero-size Vulkan buffers do not exist */
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = bytes,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                      VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    if (g_vk.vkCreateBuffer(c->dev, &bi, NULL, &m->buf) != VK_SUCCESS)
        return qgmm_set_error(c->api, QGMM_ERR_OUT_OF_MEMORY, "vkCreateBuffer of %zu bytes failed", bytes);
    VkMemoryRequirements req;
    g_vk.vkGetBufferMemoryRequirements(c->dev, m->buf, &req);
    int t = host_visible
                ? mem_type(c, req.memoryTypeBits,
                           VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                           host_visible == 2 ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT : VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
                : mem_type(c, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    if (t < 0) {
        g_vk.vkDestroyBuffer(c->dev, m->buf, NULL);
        m->buf = VK_NULL_HANDLE;
        return qgmm_set_error(c->api, QGMM_ERR_DEVICE, "no suitable Vulkan memory type for %zu bytes", bytes);
    }
    VkMemoryAllocateFlagsInfo fi = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                    .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .pNext = &fi,
                               .allocationSize = req.size,
                               .memoryTypeIndex = (uint32_t)t};
    if (g_vk.vkAllocateMemory(c->dev, &ai, NULL, &m->mem) != VK_SUCCESS) {
        g_vk.vkDestroyBuffer(c->dev, m->buf, NULL);
        m->buf = VK_NULL_HANDLE;
        return qgmm_set_error(c->api, QGMM_ERR_OUT_OF_MEMORY, "vkAllocateMemory of %zu bytes failed", bytes);
    }
    g_vk.vkBindBufferMemory(c->dev, m->buf, m->mem, 0);
    if (host_visible && g_vk.vkMapMemory(c->dev, m->mem, 0, VK_WHOLE_SIZE, 0, &m->map) != VK_SUCCESS) {
        vk_mem_destroy(c, m);
        return qgmm_set_error(c->api, QGMM_ERR_DEVICE, "vkMapMemory failed");
    }
    VkBufferDeviceAddressInfo ad = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, .buffer = m->buf};
    m->addr = g_vk.vkGetBufferDeviceAddress(c->dev, &ad);
    return QGMM_OK;
}

void vk_mem_destroy(vk_ctx *c, vk_mem *m)
{
    if (m->map) g_vk.vkUnmapMemory(c->dev, m->mem);
    if (m->buf) g_vk.vkDestroyBuffer(c->dev, m->buf, NULL);
    if (m->mem) g_vk.vkFreeMemory(c->dev, m->mem, NULL);
    memset(m, 0, sizeof *m);
}

/* The index into g_vk.devs: the first whose name contains `want` (QGMM_VULKAN_DEVICE) when
 * set, else `device`; -1 when none. */
static int pick_device(int device, const char *want)
{
    if (want && want[0]) {
        for (int i = 0; i < g_vk.ndev; ++i) {
            VkPhysicalDeviceProperties p;
            g_vk.vkGetPhysicalDeviceProperties(g_vk.devs[i], &p);
            if (strstr(p.deviceName, want)) return i;
        }
        return -1;
    }
    return device >= 0 && device < g_vk.ndev ? device : -1;
}

qgmm_status vk_ctx_create(qgmm_context *api, int device, vk_ctx **out)
{
    const char *want = getenv("QGMM_VULKAN_DEVICE");
    const int idx = pick_device(device, want);
    if (idx < 0) {
        if (want && want[0])
            return qgmm_set_error(api, QGMM_ERR_INVALID_ARGUMENT,
                                  "QGMM_VULKAN_DEVICE=\"%s\" matches none of the %d usable Vulkan devices",
                                  want, g_vk.ndev);
        return qgmm_set_error(api, QGMM_ERR_INVALID_ARGUMENT, "device %d: only %d usable Vulkan devices",
                              device, g_vk.ndev);
    }
    vk_ctx *c = calloc(1, sizeof *c);
    if (!c) return qgmm_set_error(api, QGMM_ERR_OUT_OF_MEMORY, "no host memory for a Vulkan context");
    c->api = api;
    c->pd = g_vk.devs[idx];
    c->cur = -1;
    g_vk.vkGetPhysicalDeviceProperties(c->pd, &c->props);
    g_vk.vkGetPhysicalDeviceMemoryProperties(c->pd, &c->memprops);

    VkPhysicalDeviceSubgroupProperties sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg};
    g_vk.vkGetPhysicalDeviceProperties2(c->pd, &p2);
    c->subgroup_size = sg.subgroupSize;
    {
        const VkSubgroupFeatureFlags need =
            VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
        c->cast_rows_ok = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (sg.supportedOperations & need) == need &&
                          sg.subgroupSize >= 4 && sg.subgroupSize <= 256 && !(sg.subgroupSize & (sg.subgroupSize - 1));
    }
    {
        qgmm_status cs = vk_tuning_read(api, c->subgroup_size, &c->tune);
        if (cs == QGMM_OK) cs = vk_coop_choose(c, &sg);
        if (cs != QGMM_OK) {
            free(c);
            return cs;
        }
    }

    uint32_t nq = 0;
    g_vk.vkGetPhysicalDeviceQueueFamilyProperties(c->pd, &nq, NULL);
    VkQueueFamilyProperties qf[16];
    if (nq > 16) nq = 16;
    g_vk.vkGetPhysicalDeviceQueueFamilyProperties(c->pd, &nq, qf);
    int fam = -1;
    for (uint32_t i = 0; i < nq; ++i) /* prefer a compute queue that also reports timestamps */
        if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && (fam < 0 || (!qf[fam].timestampValidBits && qf[i].timestampValidBits)))
            fam = (int)i;
    if (fam < 0) {
        free(c);
        return qgmm_set_error(api, QGMM_ERR_DEVICE, "the Vulkan device has no compute queue");
    }
    c->qfam = (uint32_t)fam;
    c->ts_ok = qf[fam].timestampValidBits > 0;
    c->ts_mask = qf[fam].timestampValidBits >= 64 ? ~0ull : ((1ull << qf[fam].timestampValidBits) - 1);

    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .bufferDeviceAddress = VK_TRUE,
                                            .storageBuffer8BitAccess = VK_TRUE};
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &f12,
                                            .storageBuffer16BitAccess = VK_TRUE};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
    f.features.shaderInt64 = VK_TRUE;
    vk_coop_features coopf;
    vk_coop_enable(c, &coopf, &f12);
    const char *exts[4];
    uint32_t next = 0;
    for (uint32_t i = 0; i < coopf.next; ++i) exts[next++] = coopf.ext[i];
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pef = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pipelineExecutableInfo = VK_TRUE};
    c->pipestats = vk_pipestats_wanted(c);
    if (c->pipestats) {
        pef.pNext = f.pNext;
        f.pNext = &pef;
        exts[next++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
    }
    {
        VkPhysicalDeviceFeatures2 have = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
        g_vk.vkGetPhysicalDeviceFeatures2(c->pd, &have);
        c->has_f64 = have.features.shaderFloat64;
    }
    const float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = c->qfam,
                                   .queueCount = 1,
                                   .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = &f,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci,
                              .enabledExtensionCount = next,
                              .ppEnabledExtensionNames = exts};
    VkResult r = g_vk.vkCreateDevice(c->pd, &dci, NULL, &c->dev);
    if (r != VK_SUCCESS) {
        free(c);
        return qgmm_set_error(api, QGMM_ERR_DEVICE, "vkCreateDevice failed (VkResult %d)", (int)r);
    }
    g_vk.vkGetDeviceQueue(c->dev, c->qfam, 0, &c->queue);

    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = c->qfam};
    qgmm_status st = QGMM_OK;
    if (g_vk.vkCreateCommandPool(c->dev, &pci, NULL, &c->pool) != VK_SUCCESS)
        st = qgmm_set_error(api, QGMM_ERR_DEVICE, "vkCreateCommandPool failed");
    for (int i = 0; st == QGMM_OK && i < VK_NCMD; ++i) {
        VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                          .commandPool = c->pool,
                                          .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                          .commandBufferCount = 1};
        VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        if (g_vk.vkAllocateCommandBuffers(c->dev, &ai, &c->cmds[i].cb) != VK_SUCCESS ||
            g_vk.vkCreateFence(c->dev, &fci, NULL, &c->cmds[i].fence) != VK_SUCCESS)
            st = qgmm_set_error(api, QGMM_ERR_DEVICE, "command buffer / fence creation failed");
    }
    /* the parameter block's address, the grid's row width and first linear id (common.glsl) */
    VkPushConstantRange pcr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = 16};
    VkPipelineLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &pcr};
    if (st == QGMM_OK && g_vk.vkCreatePipelineLayout(c->dev, &lci, NULL, &c->layout) != VK_SUCCESS)
        st = qgmm_set_error(api, QGMM_ERR_DEVICE, "vkCreatePipelineLayout failed");
    /* parameters: host-written, read by every workgroup: device-local host-visible (BAR)
     * memory where the device has it, so shaders do not read them across PCIe */
    if (st == QGMM_OK) st = vk_mem_create(c, VK_PARAM_RING, 2, &c->params);
    if (st == QGMM_OK) st = vk_mem_create(c, VK_SCRATCH_BYTES, 0, &c->scratch);
    if (st == QGMM_OK) st = vk_mem_create(c, 256, 0, &c->status);
    if (st == QGMM_OK) st = vk_mem_create(c, 256, 1, &c->readback);
    for (int i = 0; i < 2 && st == QGMM_OK; ++i) st = vk_mem_create(c, VK_STAGING_BYTES, 1, &c->staging[i]);
    if (st == QGMM_OK) st = vk_fill(c, c->status.addr, 4, 0);
    if (st != QGMM_OK) {
        vk_ctx_destroy(c);
        return st;
    }
    char gemm[768], fp8wg[192] = "", tuning[640];
    vk_tuning_describe(&c->tune, tuning, sizeof tuning);
    if (c->gemm_path == VK_GEMM_COOP_KHR)
        snprintf(fp8wg, sizeof fp8wg, "; FP8 rowwise on %s%s%s",
                 c->coop_wg_fp8 ? "workgroup-scope matrices" : "subgroup-scope matrices (workgroup scope off: ",
                 c->wg_fp8_why, c->coop_wg_fp8 ? "" : ")");
    if (c->gemm_path == VK_GEMM_TILED)
        snprintf(gemm, sizeof gemm,
                 "gemm: shared-memory tiled f32 FMA 64x64x16, 4x4 per lane (cooperative matrix off: %s)",
                 c->coop_why);
    else if (c->coop_bf16)
        snprintf(gemm, sizeof gemm,
                 "gemm: every recipe on VK_KHR_cooperative_matrix 16x16x16 -> f32 (bf16 operands as "
                 "bfloat16, fp8 exactly as f16; 128x128x32 tiles, double-buffered, per-scale-block f32 promotion); "
                 "BF16 on %s%s%s%s", c->coop_wg ? "workgroup-scope matrices (VK_NV_cooperative_matrix2), two steps of loads in flight"
                                               : "subgroup-scope matrices (workgroup scope off: ",
                 c->wg_why, c->coop_wg ? "" : ")", fp8wg);
    else
        snprintf(gemm, sizeof gemm,
                 "gemm: FP8 recipes on %s 16x16x16 f16*f16->f32 (fp8 exactly as f16; 128x128x32 tiles, "
                 "double-buffered, per-scale-block f32 promotion); BF16 on the tiled f32 FMA shader (%s)%s",
                 c->gemm_path == VK_GEMM_COOP_KHR ? "VK_KHR_cooperative_matrix" : "VK_NV_cooperative_matrix",
                 c->bf16_why, fp8wg);
    snprintf(c->describe, sizeof c->describe,
             "vulkan: %s (driver %u.%u.%u, Vulkan %u.%u, subgroup %u, shared %u KB, timestamps %s); "
             "casts: integer-exact codec (f64 scale division emulated with integers, shaderFloat64 %s), row and "
             "block segments %s; %s; %s",
             c->props.deviceName, VK_API_VERSION_MAJOR(c->props.driverVersion),
             VK_API_VERSION_MINOR(c->props.driverVersion), VK_API_VERSION_PATCH(c->props.driverVersion),
             VK_API_VERSION_MAJOR(c->props.apiVersion), VK_API_VERSION_MINOR(c->props.apiVersion),
             c->subgroup_size, c->props.limits.maxComputeSharedMemorySize / 1024, c->ts_ok ? "yes" : "no",
             c->has_f64 ? "present" : "absent",
             c->cast_rows_ok ? "on few lanes each (cast_rows, subgroup reductions), strided reduce dims in passes "
                               "(cast_cols), jagged rows per segment (cast_jrows), each for bf16 and f32 x"
                             : "on cast.comp (no compute subgroup arithmetic and shuffle)",
             gemm, tuning);
    *out = c;
    return QGMM_OK;
}

void vk_ctx_destroy(vk_ctx *c)
{
    if (!c) return;
    if (c->dev) {
        vk_wait_all(c);
        g_vk.vkDeviceWaitIdle(c->dev);
        for (int i = 0; i < VKP_COUNT; ++i)
            if (c->pipes[i]) g_vk.vkDestroyPipeline(c->dev, c->pipes[i], NULL);
        for (int i = 0; i < c->nspec_pipes; ++i)
            if (c->spec_pipes[i].pl) g_vk.vkDestroyPipeline(c->dev, c->spec_pipes[i].pl, NULL);
        if (c->layout) g_vk.vkDestroyPipelineLayout(c->dev, c->layout, NULL);
        vk_mem_destroy(c, &c->params);
        vk_mem_destroy(c, &c->scratch);
        vk_mem_destroy(c, &c->status);
        vk_mem_destroy(c, &c->readback);
        vk_mem_destroy(c, &c->staging[0]);
        vk_mem_destroy(c, &c->staging[1]);
        for (int i = 0; i < VK_NCMD; ++i)
            if (c->cmds[i].fence) g_vk.vkDestroyFence(c->dev, c->cmds[i].fence, NULL);
        if (c->pool) g_vk.vkDestroyCommandPool(c->dev, c->pool, NULL);
        g_vk.vkDestroyDevice(c->dev, NULL);
    }
    free(c);
}
