/* vk_raw.h — what the raw-Vulkan probes share (vk_copy_probe.c, vk_wg_gemm_probe.c; no qgmm):
 * the loader opened with dlopen, a device (a discrete GPU first) with one compute queue, a
 * command buffer and a two-slot timestamp pool, buffers with device addresses, compute
 * pipelines taking push constants only, submit-and-wait and the median. Fatal Vulkan errors
 * exit 2; no loader or no device: the instance call returns 77 (the ctest skip code). */
#ifndef QGMM_VK_RAW_H
#define QGMM_VK_RAW_H
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                                                                   \
    do {                                                                           \
        VkResult r_ = (x);                                                         \
        if (r_ != VK_SUCCESS) {                                                    \
            fprintf(stderr, "FATAL %s:%d: %s -> %d\n", __FILE__, __LINE__, #x, r_); \
            exit(2);                                                               \
        }                                                                          \
    } while (0)

typedef struct vk_raw {
    PFN_vkGetInstanceProcAddr gipa;
    VkInstance inst;
    VkPhysicalDevice pd;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mp;
    VkDevice dev;
    VkQueue queue;
    uint32_t fam;
    VkCommandPool pool;
    VkCommandBuffer cb;
    VkQueryPool qp; /* timestamps 0 and 1 */
    PFN_vkGetPhysicalDeviceProperties2 GetPhysicalDeviceProperties2;
    PFN_vkGetPhysicalDeviceFeatures2 GetPhysicalDeviceFeatures2;
    PFN_vkEnumerateDeviceExtensionProperties EnumerateDeviceExtensionProperties;
    PFN_vkCreateBuffer CreateBuffer;
    PFN_vkGetBufferMemoryRequirements GetBufferMemoryRequirements;
    PFN_vkAllocateMemory AllocateMemory;
    PFN_vkBindBufferMemory BindBufferMemory;
    PFN_vkGetBufferDeviceAddress GetBufferDeviceAddress;
    PFN_vkMapMemory MapMemory;
    PFN_vkUnmapMemory UnmapMemory;
    PFN_vkCreateShaderModule CreateShaderModule;
    PFN_vkCreatePipelineLayout CreatePipelineLayout;
    PFN_vkCreateComputePipelines CreateComputePipelines;
    PFN_vkDestroyPipeline DestroyPipeline;
    PFN_vkBeginCommandBuffer BeginCommandBuffer;
    PFN_vkEndCommandBuffer EndCommandBuffer;
    PFN_vkCmdBindPipeline CmdBindPipeline;
    PFN_vkCmdPushConstants CmdPushConstants;
    PFN_vkCmdDispatch CmdDispatch;
    PFN_vkCmdCopyBuffer CmdCopyBuffer;
    PFN_vkCmdFillBuffer CmdFillBuffer;
    PFN_vkCmdPipelineBarrier CmdPipelineBarrier;
    PFN_vkCmdResetQueryPool CmdResetQueryPool;
    PFN_vkCmdWriteTimestamp CmdWriteTimestamp;
    PFN_vkGetQueryPoolResults GetQueryPoolResults;
    PFN_vkQueueSubmit QueueSubmit;
    PFN_vkQueueWaitIdle QueueWaitIdle;
} vk_raw;

/* The instance and the physical device (a discrete GPU first). 0, or 77 without a loader or
 * a device. */
static int vk_raw_instance(vk_raw *r, const char *app_name, uint32_t api)
{
    void *lib = dlopen("libvulkan.so.1", RTLD_NOW);
    if (!lib) { fprintf(stderr, "no libvulkan.so.1\n"); return 77; }
    r->gipa = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
    PFN_vkCreateInstance create = (PFN_vkCreateInstance)r->gipa(NULL, "vkCreateInstance");
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, app_name, 1, NULL, 0, api};
    VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, NULL, 0, &app, 0, NULL, 0, NULL};
    CHECK(create(&ici, NULL, &r->inst));
    PFN_vkEnumeratePhysicalDevices enumerate = (PFN_vkEnumeratePhysicalDevices)r->gipa(r->inst, "vkEnumeratePhysicalDevices");
    PFN_vkGetPhysicalDeviceProperties getprops = (PFN_vkGetPhysicalDeviceProperties)r->gipa(r->inst, "vkGetPhysicalDeviceProperties");
    r->GetPhysicalDeviceProperties2 = (PFN_vkGetPhysicalDeviceProperties2)r->gipa(r->inst, "vkGetPhysicalDeviceProperties2");
    r->GetPhysicalDeviceFeatures2 = (PFN_vkGetPhysicalDeviceFeatures2)r->gipa(r->inst, "vkGetPhysicalDeviceFeatures2");
    r->EnumerateDeviceExtensionProperties =
        (PFN_vkEnumerateDeviceExtensionProperties)r->gipa(r->inst, "vkEnumerateDeviceExtensionProperties");
    uint32_t npd = 8;
    VkPhysicalDevice pds[8];
    CHECK(enumerate(r->inst, &npd, pds));
    if (npd == 0) { fprintf(stderr, "no Vulkan device\n"); return 77; }
    r->pd = pds[0];
    for (uint32_t i = 0; i < npd; ++i) {
        getprops(pds[i], &r->props);
        if (r->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) { r->pd = pds[i]; break; }
    }
    getprops(r->pd, &r->props);
    ((PFN_vkGetPhysicalDeviceMemoryProperties)r->gipa(r->inst, "vkGetPhysicalDeviceMemoryProperties"))(r->pd, &r->mp);
    return 0;
}

/* The device with `exts` and the feature chain `features` (a VkPhysicalDeviceFeatures2),
 * its first compute queue, a command buffer and the timestamp pool. */
static void vk_raw_device(vk_raw *r, const void *features, const char *const *exts, uint32_t next)
{
    PFN_vkGetPhysicalDeviceQueueFamilyProperties qfp =
        (PFN_vkGetPhysicalDeviceQueueFamilyProperties)r->gipa(r->inst, "vkGetPhysicalDeviceQueueFamilyProperties");
    uint32_t nq = 16;
    VkQueueFamilyProperties qf[16];
    qfp(r->pd, &nq, qf);
    r->fam = 0;
    while (r->fam < nq && !(qf[r->fam].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++r->fam;
    const float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, r->fam, 1, &prio};
    VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, features, 0, 1, &qci, 0, NULL, next, exts, NULL};
    CHECK(((PFN_vkCreateDevice)r->gipa(r->inst, "vkCreateDevice"))(r->pd, &dci, NULL, &r->dev));
    PFN_vkGetDeviceProcAddr gdpa = (PFN_vkGetDeviceProcAddr)r->gipa(r->inst, "vkGetDeviceProcAddr");
#define VK_RAW_DF(n) r->n = (PFN_vk##n)gdpa(r->dev, "vk" #n)
    VK_RAW_DF(CreateBuffer); VK_RAW_DF(GetBufferMemoryRequirements); VK_RAW_DF(AllocateMemory);
    VK_RAW_DF(BindBufferMemory); VK_RAW_DF(GetBufferDeviceAddress); VK_RAW_DF(MapMemory); VK_RAW_DF(UnmapMemory);
    VK_RAW_DF(CreateShaderModule); VK_RAW_DF(CreatePipelineLayout); VK_RAW_DF(CreateComputePipelines);
    VK_RAW_DF(DestroyPipeline); VK_RAW_DF(BeginCommandBuffer); VK_RAW_DF(EndCommandBuffer); VK_RAW_DF(CmdBindPipeline);
    VK_RAW_DF(CmdPushConstants); VK_RAW_DF(CmdDispatch); VK_RAW_DF(CmdCopyBuffer); VK_RAW_DF(CmdFillBuffer);
    VK_RAW_DF(CmdPipelineBarrier); VK_RAW_DF(CmdResetQueryPool); VK_RAW_DF(CmdWriteTimestamp);
    VK_RAW_DF(GetQueryPoolResults); VK_RAW_DF(QueueSubmit); VK_RAW_DF(QueueWaitIdle);
#undef VK_RAW_DF
    ((PFN_vkGetDeviceQueue)gdpa(r->dev, "vkGetDeviceQueue"))(r->dev, r->fam, 0, &r->queue);
    VkCommandPoolCreateInfo cpci = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL,
                                    VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, r->fam};
    CHECK(((PFN_vkCreateCommandPool)gdpa(r->dev, "vkCreateCommandPool"))(r->dev, &cpci, NULL, &r->pool));
    VkCommandBufferAllocateInfo cbai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, r->pool,
                                        VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    CHECK(((PFN_vkAllocateCommandBuffers)gdpa(r->dev, "vkAllocateCommandBuffers"))(r->dev, &cbai, &r->cb));
    VkQueryPoolCreateInfo qpi = {VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, NULL, 0, VK_QUERY_TYPE_TIMESTAMP, 2, 0};
    CHECK(((PFN_vkCreateQueryPool)gdpa(r->dev, "vkCreateQueryPool"))(r->dev, &qpi, NULL, &r->qp));
}

/* A storage / transfer buffer: device-local, or host-visible and coherent (host != 0);
 * *addr (may be NULL) gets its device address. */
static void vk_raw_buffer(vk_raw *r, VkDeviceSize size, int host, VkBuffer *buf, VkDeviceMemory *mem, VkDeviceAddress *addr)
{
    VkBufferCreateInfo bci = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, NULL, 0, size,
                              VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                  VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT,
                              VK_SHARING_MODE_EXCLUSIVE, 0, NULL};
    CHECK(r->CreateBuffer(r->dev, &bci, NULL, buf));
    VkMemoryRequirements mr;
    r->GetBufferMemoryRequirements(r->dev, *buf, &mr);
    const VkMemoryPropertyFlags want = host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                            : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    uint32_t t = 0;
    while (t < r->mp.memoryTypeCount && !((mr.memoryTypeBits >> t & 1) && (r->mp.memoryTypes[t].propertyFlags & want) == want)) ++t;
    VkMemoryAllocateFlagsInfo fi = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO, NULL, VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT, 0};
    VkMemoryAllocateInfo mai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, &fi, mr.size, t};
    CHECK(r->AllocateMemory(r->dev, &mai, NULL, mem));
    CHECK(r->BindBufferMemory(r->dev, *buf, *mem, 0));
    if (addr) {
        VkBufferDeviceAddressInfo ai = {VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, NULL, *buf};
        *addr = r->GetBufferDeviceAddress(r->dev, &ai);
    }
}

/* A compute pipeline layout with `push` bytes of push constants and no descriptor sets. */
static VkPipelineLayout vk_raw_layout(vk_raw *r, uint32_t push)
{
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, push};
    VkPipelineLayoutCreateInfo pli = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, NULL, 0, 0, NULL, 1, &pcr};
    VkPipelineLayout pl;
    CHECK(r->CreatePipelineLayout(r->dev, &pli, NULL, &pl));
    return pl;
}

/* The pipeline of a SPIR-V module; VK_SUCCESS or the driver's refusal. */
static VkResult vk_raw_pipeline(vk_raw *r, const uint32_t *code, size_t bytes, VkPipelineLayout pl, VkPipeline *out)
{
    VkShaderModuleCreateInfo smi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, NULL, 0, bytes, code};
    VkShaderModule sm;
    CHECK(r->CreateShaderModule(r->dev, &smi, NULL, &sm));
    VkComputePipelineCreateInfo cpi = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, NULL, 0,
                                       {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0,
                                        VK_SHADER_STAGE_COMPUTE_BIT, sm, "main", NULL},
                                       pl, VK_NULL_HANDLE, 0};
    return r->CreateComputePipelines(r->dev, VK_NULL_HANDLE, 1, &cpi, NULL, out);
}

static void vk_raw_begin(vk_raw *r)
{
    const VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL,
                                         VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, NULL};
    CHECK(r->BeginCommandBuffer(r->cb, &bi));
}

/* Every earlier write visible to every later command. */
static void vk_raw_barrier(vk_raw *r)
{
    const VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_MEMORY_WRITE_BIT,
                                VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT};
    r->CmdPipelineBarrier(r->cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb, 0,
                          NULL, 0, NULL);
}

/* End the command buffer, submit it and wait for the queue. */
static void vk_raw_submit(vk_raw *r)
{
    CHECK(r->EndCommandBuffer(r->cb));
    const VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, &r->cb, 0, NULL};
    CHECK(r->QueueSubmit(r->queue, 1, &si, VK_NULL_HANDLE));
    CHECK(r->QueueWaitIdle(r->queue));
}

/* ms between the two timestamps of the last submitted command buffer */
static double vk_raw_elapsed_ms(vk_raw *r)
{
    uint64_t ts[2];
    CHECK(r->GetQueryPoolResults(r->dev, r->qp, 0, 2, sizeof ts, ts, 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    return (double)(ts[1] - ts[0]) * r->props.limits.timestampPeriod * 1e-6;
}

static int vk_raw_cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* median of v[0..n) (sorts v) */
static double vk_raw_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, vk_raw_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
#endif
