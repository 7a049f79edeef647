/*
 * vk_coop.c — which cooperative-matrix GEMM a Vulkan device can run (gemm_coopmat.comp in
 * its NV, KHR and KHR-bfloat16 builds), and what vkCreateDevice must enable for it.
 *
 * Order of preference: VK_KHR_cooperative_matrix (the ratified extension; with
 * VK_KHR_shader_bfloat16 it also runs the BF16 recipe), then VK_NV_cooperative_matrix
 * (FP8 recipes only), then the tiled shader. Every path needs what the shader's SPIR-V
 * declares: the Vulkan memory model, Float16 (fp8 is decoded to f16), subgroups of 32 (the
 * tile assumes them) and VK_COOP_SHARED_BYTES of shared memory.
 * With VK_NV_cooperative_matrix2 as well (workgroup-scope matrices of flexible size, a
 * 64x128x32 bf16 or f16 shape for 256 invocations), BF16 and FP8 rowwise run on the
 * workgroup-scope builds, which measured faster on the H100 (docs/backends-vulkan.md);
 * QGMM_VULKAN_GEMM_WG=0 keeps the subgroup-scope ones.
 * QGMM_VULKAN_GEMM_PATH (the context's tuning, vk_tuning.c): auto | tiled | coopmat (the
 * best available; error where none is) | coopmat-nv (the NV build; for comparisons).
 * vk_coop_choose decides per device which builds can run; gemm_pipe (vk_ops_gemm.c)
 * picks among them per problem.
 */
#include "vk_internal.h"
#include "vk_khr_compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int vk_has_ext(VkPhysicalDevice pd, const char *name)
{
    uint32_t n = 0;
    g_vk.vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
    VkExtensionProperties *e = calloc(n ? n : 1, sizeof *e);
    if (!e) return 0;
    g_vk.vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e);
    int found = 0;
    for (uint32_t i = 0; i < n && !found; ++i) found = strcmp(e[i].extensionName, name) == 0;
    free(e);
    return found;
}

/* What every cooperative-matrix build needs besides the extension itself. */
static int common_ok(vk_ctx *c, const VkPhysicalDeviceSubgroupProperties *sg, char *why, size_t cap)
{
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12};
    g_vk.vkGetPhysicalDeviceFeatures2(c->pd, &f);
    if (!f12.shaderFloat16) { snprintf(why, cap, "no shaderFloat16"); return 0; }
    /* glslang emits Device-scope availability/visibility operations under the Vulkan memory
     * model, which needs the device-scope feature as well (VUID-RuntimeSpirv-vulkanMemoryModel-06265) */
    if (!f12.vulkanMemoryModel || !f12.vulkanMemoryModelDeviceScope) {
        snprintf(why, cap, "no vulkanMemoryModel with device scope");
        return 0;
    }
    /* the fp8 -> f16 decode scales f16 subnormals by a power of two */
    VkPhysicalDeviceFloatControlsProperties fc = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &fc};
    g_vk.vkGetPhysicalDeviceProperties2(c->pd, &p2);
    if (!fc.shaderDenormPreserveFloat16) { snprintf(why, cap, "f16 denormals not preserved"); return 0; }
    if (sg->subgroupSize != 32 || !(sg->supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ||
        !(sg->supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT)) {
        snprintf(why, cap, "subgroup size %u (the tile needs 32 with basic ops)", sg->subgroupSize);
        return 0;
    }
    if (c->props.limits.maxComputeSharedMemorySize < VK_COOP_SHARED_BYTES) {
        snprintf(why, cap, "shared memory %u B < %u B", c->props.limits.maxComputeSharedMemorySize,
                 VK_COOP_SHARED_BYTES);
        return 0;
    }
    return 1;
}

static int nv_ok(vk_ctx *c, char *why, size_t cap)
{
    if (!vk_has_ext(c->pd, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) { snprintf(why, cap, "no VK_NV_cooperative_matrix"); return 0; }
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cf = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &cf};
    g_vk.vkGetPhysicalDeviceFeatures2(c->pd, &f);
    if (!cf.cooperativeMatrix) { snprintf(why, cap, "NV cooperativeMatrix feature off"); return 0; }
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV props =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)g_vk.GetInstanceProcAddr(
            g_vk.instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
    uint32_t n = 0;
    if (!props || props(c->pd, &n, NULL) != VK_SUCCESS || n == 0) { snprintf(why, cap, "no NV matrix shapes"); return 0; }
    VkCooperativeMatrixPropertiesNV *cp = calloc(n, sizeof *cp);
    if (!cp) { snprintf(why, cap, "out of host memory"); return 0; }
    for (uint32_t i = 0; i < n; ++i) cp[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
    int ok = 0;
    if (props(c->pd, &n, cp) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !ok; ++i)
            ok = cp[i].MSize == 16 && cp[i].NSize == 16 && cp[i].KSize == 16 &&
                 cp[i].AType == VK_COMPONENT_TYPE_FLOAT16_NV && cp[i].BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                 cp[i].CType == VK_COMPONENT_TYPE_FLOAT32_NV && cp[i].DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
                 cp[i].scope == VK_SCOPE_SUBGROUP_NV;
    free(cp);
    if (!ok) snprintf(why, cap, "no NV 16x16x16 f16*f16->f32 subgroup shape among %u", n);
    return ok;
}

/* 1 when the KHR list has a 16x16x16 subgroup shape of `in` x `in` -> f32. */
static int khr_shape(vk_ctx *c, uint32_t in)
{
    qgmm_PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR props =
        (qgmm_PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)g_vk.GetInstanceProcAddr(
            g_vk.instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    uint32_t n = 0;
    if (!props || props(c->pd, &n, NULL) != VK_SUCCESS || n == 0) return 0;
    qgmm_VkCooperativeMatrixPropertiesKHR *cp = calloc(n, sizeof *cp);
    if (!cp) return 0;
    for (uint32_t i = 0; i < n; ++i) cp[i].sType = QGMM_VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
    int ok = 0;
    if (props(c->pd, &n, cp) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !ok; ++i)
            ok = cp[i].MSize == 16 && cp[i].NSize == 16 && cp[i].KSize == 16 && cp[i].AType == in &&
                 cp[i].BType == in && cp[i].CType == QGMM_VK_COMPONENT_TYPE_FLOAT32_KHR &&
                 cp[i].ResultType == QGMM_VK_COMPONENT_TYPE_FLOAT32_KHR && !cp[i].saturatingAccumulation &&
                 cp[i].scope == QGMM_VK_SCOPE_SUBGROUP_KHR;
    free(cp);
    return ok;
}

static int khr_ok(vk_ctx *c, int *bf16, char *why, size_t cap, char *bfwhy, size_t bfcap)
{
    *bf16 = 0;
    if (!vk_has_ext(c->pd, QGMM_VK_KHR_COOPERATIVE_MATRIX_NAME)) { snprintf(why, cap, "no VK_KHR_cooperative_matrix"); return 0; }
    qgmm_VkPhysicalDeviceCooperativeMatrixFeaturesKHR kf = {.sType = QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &kf};
    g_vk.vkGetPhysicalDeviceFeatures2(c->pd, &f);
    if (!kf.cooperativeMatrix) { snprintf(why, cap, "KHR cooperativeMatrix feature off"); return 0; }
    if (!khr_shape(c, QGMM_VK_COMPONENT_TYPE_FLOAT16_KHR)) { snprintf(why, cap, "no KHR 16x16x16 f16*f16->f32 subgroup shape"); return 0; }
    if (!vk_has_ext(c->pd, QGMM_VK_KHR_SHADER_BFLOAT16_NAME)) { snprintf(bfwhy, bfcap, "no VK_KHR_shader_bfloat16"); return 1; }
    qgmm_VkPhysicalDeviceShaderBfloat16FeaturesKHR bf = {.sType = QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &bf};
    g_vk.vkGetPhysicalDeviceFeatures2(c->pd, &f2);
    if (!bf.shaderBFloat16Type || !bf.shaderBFloat16CooperativeMatrix) { snprintf(bfwhy, bfcap, "bfloat16 matrix features off"); return 1; }
    if (!khr_shape(c, QGMM_VK_COMPONENT_TYPE_BFLOAT16_KHR)) { snprintf(bfwhy, bfcap, "no 16x16x16 bf16*bf16->f32 shape"); return 1; }
    *bf16 = 1;
    return 1;
}

/* 1 when a workgroup-scope build of gemm_coopmat.comp can run with matrix components `comp`
 * (bfloat16: BF16; float16: FP8 rowwise, fp8 decoded to f16): VK_NV_cooperative_matrix2 with
 * workgroup scope and flexible dimensions, a comp*comp+f32 workgroup shape for 256
 * invocations whose granularities divide 64x128x32, and the tile's shared memory next to the
 * driver's reserve. */
static int wg_ok(vk_ctx *c, uint32_t comp, char *why, size_t cap)
{
    if (!c->tune.gemm_wg) { snprintf(why, cap, "QGMM_VULKAN_GEMM_WG=0"); return 0; }
    if (!vk_has_ext(c->pd, QGMM_VK_NV_COOPERATIVE_MATRIX_2_NAME)) { snprintf(why, cap, "no VK_NV_cooperative_matrix2"); return 0; }
    qgmm_VkPhysicalDeviceCooperativeMatrix2FeaturesNV f2 = {.sType = QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f2};
    g_vk.vkGetPhysicalDeviceFeatures2(c->pd, &f);
    if (!f2.cooperativeMatrixWorkgroupScope || !f2.cooperativeMatrixFlexibleDimensions) {
        snprintf(why, cap, "workgroup scope / flexible dimensions off");
        return 0;
    }
    qgmm_VkPhysicalDeviceCooperativeMatrix2PropertiesNV p2 = {.sType = QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV};
    VkPhysicalDeviceProperties2 pp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &p2};
    g_vk.vkGetPhysicalDeviceProperties2(c->pd, &pp);
    if (p2.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize < 256 || p2.cooperativeMatrixFlexibleDimensionsMaxDimension < 128 ||
        (uint64_t)VK_COOP_BF16_SHARED_BYTES + p2.cooperativeMatrixWorkgroupScopeReservedSharedMemory > c->props.limits.maxComputeSharedMemorySize) {
        snprintf(why, cap, "workgroup-scope limits (%u invocations, dimension %u, %u B reserved)",
                 p2.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize, p2.cooperativeMatrixFlexibleDimensionsMaxDimension,
                 p2.cooperativeMatrixWorkgroupScopeReservedSharedMemory);
        return 0;
    }
    qgmm_PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV props =
        (qgmm_PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV)g_vk.GetInstanceProcAddr(
            g_vk.instance, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
    uint32_t n = 0;
    if (!props || props(c->pd, &n, NULL) != VK_SUCCESS || n == 0) { snprintf(why, cap, "no flexible shapes"); return 0; }
    qgmm_VkCooperativeMatrixFlexibleDimensionsPropertiesNV *cp = calloc(n, sizeof *cp);
    if (!cp) { snprintf(why, cap, "out of host memory"); return 0; }
    for (uint32_t i = 0; i < n; ++i) cp[i].sType = QGMM_VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV;
    int ok = 0;
    if (props(c->pd, &n, cp) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !ok; ++i)
            ok = cp[i].scope == QGMM_VK_SCOPE_WORKGROUP_KHR && cp[i].workgroupInvocations == 256 &&
                 cp[i].AType == comp && cp[i].BType == comp &&
                 cp[i].CType == QGMM_VK_COMPONENT_TYPE_FLOAT32_KHR && cp[i].ResultType == QGMM_VK_COMPONENT_TYPE_FLOAT32_KHR &&
                 !cp[i].saturatingAccumulation && cp[i].MGranularity && 64 % cp[i].MGranularity == 0 &&
                 cp[i].NGranularity && 128 % cp[i].NGranularity == 0 && cp[i].KGranularity && 32 % cp[i].KGranularity == 0;
    free(cp);
    if (!ok)
        snprintf(why, cap, "no workgroup-scope %s shape for 256 invocations dividing 64x128x32",
                 comp == QGMM_VK_COMPONENT_TYPE_BFLOAT16_KHR ? "bf16" : "f16");
    return ok;
}

qgmm_status vk_coop_choose(vk_ctx *c, const VkPhysicalDeviceSubgroupProperties *sg)
{
    const int want = c->tune.gemm_path;
    const int force_nv = want == VK_WANT_COOPMAT_NV, force_tiled = want == VK_WANT_TILED;
    c->gemm_path = VK_GEMM_TILED;
    c->coop_bf16 = 0;
    c->coop_wg = 0;
    c->coop_wg_fp8 = 0;
    c->bf16_why[0] = 0;
    snprintf(c->wg_why, sizeof c->wg_why, "no BF16 cooperative-matrix path");
    snprintf(c->wg_fp8_why, sizeof c->wg_fp8_why, "no VK_KHR_cooperative_matrix path");
    char why_khr[128] = "", why_nv[128] = "";
    int bf16 = 0;
    if (!common_ok(c, sg, c->coop_why, sizeof c->coop_why)) {
        /* coop_why says why */
    } else if (!force_nv && khr_ok(c, &bf16, why_khr, sizeof why_khr, c->bf16_why, sizeof c->bf16_why)) {
        c->gemm_path = VK_GEMM_COOP_KHR;
        c->coop_bf16 = bf16;
        /* not asked where the tiled path is forced: that query's property structure is what
         * Debian 12's validation layer (1.3.239) reports as unknown, and the validation runs
         * use the tiled path (docs/backends-vulkan.md, "Conformance") */
        if (bf16 && !force_tiled) c->coop_wg = wg_ok(c, QGMM_VK_COMPONENT_TYPE_BFLOAT16_KHR, c->wg_why, sizeof c->wg_why);
        if (c->coop_wg) c->wg_why[0] = 0;
        if (!force_tiled) c->coop_wg_fp8 = wg_ok(c, QGMM_VK_COMPONENT_TYPE_FLOAT16_KHR, c->wg_fp8_why, sizeof c->wg_fp8_why);
        if (c->coop_wg_fp8) c->wg_fp8_why[0] = 0;
    } else if (nv_ok(c, why_nv, sizeof why_nv)) {
        c->gemm_path = VK_GEMM_COOP_NV;
        snprintf(c->bf16_why, sizeof c->bf16_why, "%s", force_nv ? "QGMM_VULKAN_GEMM_PATH=coopmat-nv" : why_khr);
    } else {
        snprintf(c->coop_why, sizeof c->coop_why, "%s%s%s", force_nv ? "" : why_khr, force_nv ? "" : "; ", why_nv);
    }
    if (c->gemm_path != VK_GEMM_TILED) c->coop_why[0] = 0;
    if ((want == VK_WANT_COOPMAT || force_nv) && c->gemm_path == VK_GEMM_TILED)
        return qgmm_set_error(c->api, QGMM_ERR_UNSUPPORTED, "QGMM_VULKAN_GEMM_PATH=%s but %s: %s",
                              force_nv ? "coopmat-nv" : "coopmat", c->props.deviceName, c->coop_why);
    if (force_tiled && c->gemm_path != VK_GEMM_TILED) {
        c->gemm_path = VK_GEMM_TILED;
        c->coop_bf16 = 0;
        c->coop_wg = 0;
        c->coop_wg_fp8 = 0;
        snprintf(c->coop_why, sizeof c->coop_why, "QGMM_VULKAN_GEMM_PATH=tiled");
    }
    return QGMM_OK;
}

/* Hangs the feature structure s (sType and flags set) off f12's chain and asks for ext. */
static void chain(VkPhysicalDeviceVulkan12Features *f12, void *s, vk_coop_features *e, const char *ext)
{
    ((VkBaseOutStructure *)s)->pNext = (VkBaseOutStructure *)f12->pNext;
    f12->pNext = s;
    e->ext[e->next++] = ext;
}

void vk_coop_enable(vk_ctx *c, vk_coop_features *e, VkPhysicalDeviceVulkan12Features *f12)
{
    memset(e, 0, sizeof *e);
    if (c->gemm_path == VK_GEMM_TILED) return;
    f12->shaderFloat16 = VK_TRUE;
    f12->vulkanMemoryModel = VK_TRUE;
    f12->vulkanMemoryModelDeviceScope = VK_TRUE;
    if (c->gemm_path == VK_GEMM_COOP_NV) {
        VkPhysicalDeviceCooperativeMatrixFeaturesNV *nv = (VkPhysicalDeviceCooperativeMatrixFeaturesNV *)e->nv;
        nv->sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
        nv->cooperativeMatrix = VK_TRUE;
        chain(f12, nv, e, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
        return;
    }
    qgmm_VkPhysicalDeviceCooperativeMatrixFeaturesKHR *khr = (qgmm_VkPhysicalDeviceCooperativeMatrixFeaturesKHR *)e->khr;
    khr->sType = QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR;
    khr->cooperativeMatrix = VK_TRUE;
    chain(f12, khr, e, QGMM_VK_KHR_COOPERATIVE_MATRIX_NAME);
    if (c->coop_bf16) {
        qgmm_VkPhysicalDeviceShaderBfloat16FeaturesKHR *bf = (qgmm_VkPhysicalDeviceShaderBfloat16FeaturesKHR *)e->bf16;
        bf->sType = QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR;
        bf->shaderBFloat16Type = VK_TRUE;
        bf->shaderBFloat16CooperativeMatrix = VK_TRUE;
        chain(f12, bf, e, QGMM_VK_KHR_SHADER_BFLOAT16_NAME);
    }
    if (c->coop_wg || c->coop_wg_fp8) {
        qgmm_VkPhysicalDeviceCooperativeMatrix2FeaturesNV *w = (qgmm_VkPhysicalDeviceCooperativeMatrix2FeaturesNV *)e->cm2;
        w->sType = QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV;
        w->cooperativeMatrixWorkgroupScope = VK_TRUE;
        w->cooperativeMatrixFlexibleDimensions = VK_TRUE;
        chain(f12, w, e, QGMM_VK_NV_COOPERATIVE_MATRIX_2_NAME);
    }
}
