/* vk_coop_probe.c — prints what a Vulkan device offers for cooperative-matrix GEMMs: the
 * NV and KHR shape lists, the bfloat16 features and the limits gemm_coopmat.comp depends
 * on. Built against headers that may predate VK_KHR_cooperative_matrix, so the KHR
 * structures come from backends/vulkan/vk_khr_compat.h. --help: this text. */
#include <vulkan/vulkan.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../backends/vulkan/vk_khr_compat.h"

static const char *ct(uint32_t t)
{
    switch (t) {
    case 0: return "f16"; case 1: return "f32"; case 2: return "f64"; case 3: return "s8";
    case 7: return "u8"; case 5: return "s32"; case 9: return "u32";
    case QGMM_VK_COMPONENT_TYPE_BFLOAT16_KHR: return "bf16";
    default: return "other";
    }
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        printf("usage: vk_coop_probe  (lists cooperative-matrix shapes of every Vulkan device)\n");
        return strcmp(argv[1], "--help") && strcmp(argv[1], "-h") ? 2 : 0;
    }
    void *lib = dlopen("libvulkan.so.1", RTLD_NOW);
    if (!lib) { fprintf(stderr, "no libvulkan.so.1\n"); return 1; }
    PFN_vkGetInstanceProcAddr gipa = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
    PFN_vkCreateInstance ci = (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance");
    VkApplicationInfo ai = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_3};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &ai};
    VkInstance inst;
    if (ci(&ici, NULL, &inst) != VK_SUCCESS) { fprintf(stderr, "vkCreateInstance failed\n"); return 1; }
#define GET(T, n) T n = (T)gipa(inst, #n)
    GET(PFN_vkEnumeratePhysicalDevices, vkEnumeratePhysicalDevices);
    GET(PFN_vkGetPhysicalDeviceProperties2, vkGetPhysicalDeviceProperties2);
    GET(PFN_vkGetPhysicalDeviceFeatures2, vkGetPhysicalDeviceFeatures2);
    GET(PFN_vkEnumerateDeviceExtensionProperties, vkEnumerateDeviceExtensionProperties);
    GET(PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV, vkGetPhysicalDeviceCooperativeMatrixPropertiesNV);
    GET(qgmm_PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR, vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR);
    uint32_t nd = 8;
    VkPhysicalDevice pd[8];
    vkEnumeratePhysicalDevices(inst, &nd, pd);
    for (uint32_t d = 0; d < nd; ++d) {
        VkPhysicalDeviceFloatControlsProperties fc = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
        VkPhysicalDeviceProperties2 p = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &fc};
        vkGetPhysicalDeviceProperties2(pd[d], &p);
        printf("device %u: %s, api %u.%u, shared %u B, denormPreserve f16 %u f32 %u\n", d, p.properties.deviceName,
               VK_API_VERSION_MAJOR(p.properties.apiVersion), VK_API_VERSION_MINOR(p.properties.apiVersion),
               p.properties.limits.maxComputeSharedMemorySize, fc.shaderDenormPreserveFloat16, fc.shaderDenormPreserveFloat32);
        uint32_t ne = 0;
        vkEnumerateDeviceExtensionProperties(pd[d], NULL, &ne, NULL);
        VkExtensionProperties *e = calloc(ne, sizeof *e);
        vkEnumerateDeviceExtensionProperties(pd[d], NULL, &ne, e);
        int has_nv = 0, has_khr = 0;
        for (uint32_t i = 0; i < ne; ++i) {
            has_nv |= !strcmp(e[i].extensionName, "VK_NV_cooperative_matrix");
            has_khr |= !strcmp(e[i].extensionName, QGMM_VK_KHR_COOPERATIVE_MATRIX_NAME);
            if (strstr(e[i].extensionName, "cooperative") || strstr(e[i].extensionName, "bfloat16") ||
                strstr(e[i].extensionName, "float8") || strstr(e[i].extensionName, "memory_model"))
                printf("  ext %s\n", e[i].extensionName);
        }
        free(e);
        qgmm_VkPhysicalDeviceShaderBfloat16FeaturesKHR bf = {.sType = QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR};
        qgmm_VkPhysicalDeviceCooperativeMatrixFeaturesKHR kf = {.sType = QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, .pNext = &bf};
        VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &kf};
        vkGetPhysicalDeviceFeatures2(pd[d], &f);
        printf("  KHR coopmat feature %u; bf16 type %u dot %u coopmat %u\n", kf.cooperativeMatrix, bf.shaderBFloat16Type,
               bf.shaderBFloat16DotProduct, bf.shaderBFloat16CooperativeMatrix);
        uint32_t n = 0;
        if (has_nv && vkGetPhysicalDeviceCooperativeMatrixPropertiesNV && vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd[d], &n, NULL) == VK_SUCCESS) {
            VkCooperativeMatrixPropertiesNV *c = calloc(n, sizeof *c);
            for (uint32_t i = 0; i < n; ++i) c[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
            vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd[d], &n, c);
            for (uint32_t i = 0; i < n; ++i)
                printf("  NV  %ux%ux%u %s*%s+%s->%s scope %u\n", c[i].MSize, c[i].NSize, c[i].KSize, ct(c[i].AType),
                       ct(c[i].BType), ct(c[i].CType), ct(c[i].DType), c[i].scope);
            free(c);
        }
        n = 0;
        if (has_khr && vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR && vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd[d], &n, NULL) == VK_SUCCESS) {
            qgmm_VkCooperativeMatrixPropertiesKHR *c = calloc(n, sizeof *c);
            for (uint32_t i = 0; i < n; ++i) c[i].sType = QGMM_VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
            vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd[d], &n, c);
            for (uint32_t i = 0; i < n; ++i)
                printf("  KHR %ux%ux%u %s*%s+%s->%s sat %u scope %u\n", c[i].MSize, c[i].NSize, c[i].KSize, ct(c[i].AType),
                       ct(c[i].BType), ct(c[i].CType), ct(c[i].ResultType), c[i].saturatingAccumulation, c[i].scope);
            free(c);
        }
    }
    return 0;
}
