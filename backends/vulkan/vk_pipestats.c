/*
 * vk_pipestats.c — QGMM_VK_PIPELINE_STATS=1 (the context's tuning, vk_tuning.c) prints what the driver reports about each
 * compiled pipeline (VK_KHR_pipeline_executable_properties: registers, spills, shared
 * memory, instruction counts) to stderr when the pipeline is created. Why: a shader's speed
 * on a vendor driver hangs on these numbers, and no vendor profiler is at hand on the lent
 * GPU. Off by default; a device without the extension just prints nothing.
 */
#include "vk_internal.h"

#include <stdio.h>
#include <stdlib.h>

int vk_pipestats_wanted(vk_ctx *c)
{
    if (!c->tune.pipestats) return 0;
    const int found = vk_has_ext(c->pd, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    if (!found) fprintf(stderr, "qgmm vulkan: QGMM_VK_PIPELINE_STATS: the device lacks %s\n",
                        VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    return found;
}

void vk_pipestats_print(vk_ctx *c, VkPipeline pl, const char *name)
{
    PFN_vkGetPipelineExecutablePropertiesKHR props = (PFN_vkGetPipelineExecutablePropertiesKHR)
        g_vk.GetInstanceProcAddr(g_vk.instance, "vkGetPipelineExecutablePropertiesKHR");
    PFN_vkGetPipelineExecutableStatisticsKHR stats = (PFN_vkGetPipelineExecutableStatisticsKHR)
        g_vk.GetInstanceProcAddr(g_vk.instance, "vkGetPipelineExecutableStatisticsKHR");
    if (!props || !stats) return;
    VkPipelineInfoKHR pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = pl};
    uint32_t ne = 0;
    if (props(c->dev, &pi, &ne, NULL) != VK_SUCCESS) return;
    for (uint32_t e = 0; e < ne; ++e) {
        VkPipelineExecutableInfoKHR ei = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                          .pipeline = pl, .executableIndex = e};
        uint32_t ns = 0;
        if (stats(c->dev, &ei, &ns, NULL) != VK_SUCCESS || !ns) continue;
        VkPipelineExecutableStatisticKHR *s = calloc(ns, sizeof *s);
        if (!s) return;
        for (uint32_t i = 0; i < ns; ++i) s[i].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
        if (stats(c->dev, &ei, &ns, s) == VK_SUCCESS) {
            fprintf(stderr, "qgmm vulkan pipeline %s:", name);
            for (uint32_t i = 0; i < ns; ++i) {
                switch (s[i].format) {
                case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
                    fprintf(stderr, " [%s=%u]", s[i].name, s[i].value.b32); break;
                case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
                    fprintf(stderr, " [%s=%lld]", s[i].name, (long long)s[i].value.i64); break;
                case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
                    fprintf(stderr, " [%s=%llu]", s[i].name, (unsigned long long)s[i].value.u64); break;
                default:
                    fprintf(stderr, " [%s=%g]", s[i].name, s[i].value.f64);
                }
            }
            fputc('\n', stderr);
        }
        free(s);
    }
}
