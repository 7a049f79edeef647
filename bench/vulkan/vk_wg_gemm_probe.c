/*
 * vk_wg_gemm_probe.c — how fast is a workgroup-scope cooperative-matrix GEMM
 * (VK_NV_cooperative_matrix2) on this device? Raw Vulkan, no qgmm: a dense bf16 GEMM
 * C[M,N] (f32) = A[M,K] B[N,K]^T (wg_gemm_probe.comp) at each tile shape given, with the
 * fragments loaded from global memory by the driver ("global") or from our own
 * double-buffered shared tiles ("staged"; "deep": two steps of loads in flight, "deep3":
 * three). Prints the device's flexible-dimension list,
 * then per variant: median of --iters timestamp-timed dispatches after 3 warm-ups, TFLOP/s,
 * and the largest error of 512 sampled outputs against a double-precision product of the
 * same bf16 inputs (a variant that computes garbage fails the run).
 *
 * usage: vk_wg_gemm_probe [--m M] [--n N] [--k K] [--iters N] [VARIANT...]
 *   VARIANT: KIND:TMxTNxTK:WG[@FILE.spv]  (default: every built-in variant; @FILE: that
 *            module, compiled by hand with other sizes)   --help: this text.
 */
#include "vk_raw.h"

#include <math.h>
#include <string.h>

#include "../../backends/vulkan/vk_khr_compat.h"

/* the built-in variants, compiled with their sizes by backends/vulkan/CMakeLists.txt */
static const uint32_t spv_g128[] =
#include "wgp_global_128x128x32_128.spv.inc"
    ;
static const uint32_t spv_s128[] =
#include "wgp_staged_128x128x32_128.spv.inc"
    ;
static const uint32_t spv_s256[] =
#include "wgp_staged_128x128x32_256.spv.inc"
    ;
static const uint32_t spv_d256[] =
#include "wgp_deep_128x128x32_256.spv.inc"
    ;
static const uint32_t spv_d3_256[] =
#include "wgp_deep3_128x128x32_256.spv.inc"
    ;
static const uint32_t spv_t1[] =
#include "wgp_tensor_128x128x32_256.spv.inc"
    ;
static const uint32_t spv_t2[] =
#include "wgp_tensor_128x128x64_256.spv.inc"
    ;
static const uint32_t spv_t3[] =
#include "wgp_tensor_256x128x32_256.spv.inc"
    ;
static const uint32_t spv_t4[] =
#include "wgp_tensor_128x256x32_256.spv.inc"
    ;
static const uint32_t spv_t5[] =
#include "wgp_tensor_256x128x64_256.spv.inc"
    ;
static const uint32_t spv_t6[] =
#include "wgp_tensor_128x128x32_128.spv.inc"
    ;
static const uint32_t spv_d1[] =
#include "wgp_deep_128x128x32_128.spv.inc"
    ;
static const uint32_t spv_d2[] =
#include "wgp_deep_256x128x16_256.spv.inc"
    ;
static const uint32_t spv_d3[] =
#include "wgp_deep_128x256x16_256.spv.inc"
    ;
static const uint32_t spv_d4[] =
#include "wgp_deep3_256x128x16_256.spv.inc"
    ;
static const uint32_t spv_d5[] =
#include "wgp_deep_128x128x16_256.spv.inc"
    ;
static const uint32_t spv_d6[] =
#include "wgp_deep3_128x128x32_128.spv.inc"
    ;

typedef struct push { uint64_t a, b, c; uint32_t m, n, k, pad; } push;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next_u32(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}
static float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static const char *ctype(uint32_t t)
{
    switch (t) {
    case 0: return "f16"; case 1: return "f32"; case 3: return "s8"; case 5: return "s32"; case 7: return "u8";
    case 9: return "u32"; case QGMM_VK_COMPONENT_TYPE_BFLOAT16_KHR: return "bf16";
    default: return "other";
    }
}

typedef struct variant {
    const char *kind; /* global, staged, deep (two register sets), deep3 (three), tensor (tensor-addressed loads) */
    uint32_t tm, tn, tk, wg;
    const uint32_t *code;
    size_t bytes;
    const char *spv; /* a module file instead (KIND:TILE:WG@FILE) */
} variant;
static const variant builtin[] = {
    {"global", 128, 128, 32, 128, spv_g128, sizeof spv_g128, NULL},
    {"staged", 128, 128, 32, 128, spv_s128, sizeof spv_s128, NULL},
    {"staged", 128, 128, 32, 256, spv_s256, sizeof spv_s256, NULL},
    {"deep", 128, 128, 32, 256, spv_d256, sizeof spv_d256, NULL},
    {"deep3", 128, 128, 32, 256, spv_d3_256, sizeof spv_d3_256, NULL},
    {"tensor", 128, 128, 32, 256, spv_t1, sizeof spv_t1, NULL},
    {"tensor", 128, 128, 64, 256, spv_t2, sizeof spv_t2, NULL},
    {"tensor", 256, 128, 32, 256, spv_t3, sizeof spv_t3, NULL},
    {"tensor", 128, 256, 32, 256, spv_t4, sizeof spv_t4, NULL},
    {"tensor", 256, 128, 64, 256, spv_t5, sizeof spv_t5, NULL},
    {"tensor", 128, 128, 32, 128, spv_t6, sizeof spv_t6, NULL},
    {"deep", 128, 128, 32, 128, spv_d1, sizeof spv_d1, NULL},
    {"deep", 256, 128, 16, 256, spv_d2, sizeof spv_d2, NULL},
    {"deep", 128, 256, 16, 256, spv_d3, sizeof spv_d3, NULL},
    {"deep3", 256, 128, 16, 256, spv_d4, sizeof spv_d4, NULL},
    {"deep", 128, 128, 16, 256, spv_d5, sizeof spv_d5, NULL},
    {"deep3", 128, 128, 32, 128, spv_d6, sizeof spv_d6, NULL},
};
#define NBUILTIN (int)(sizeof builtin / sizeof *builtin)

/* KIND:TMxTNxTK:WG names a built-in variant; KIND:TMxTNxTK:WG@FILE a module compiled by hand
 * (glslc -DSTAGED= -DTM= ... then spirv_coop_khr --bf16, as CMakeLists.txt does) */
static int parse_variant(const char *s, variant *v)
{
    char kind[16];
    variant x = {0};
    const char *at = strchr(s, '@');
    if (sscanf(s, "%15[a-z0-9]:%ux%ux%u:%u", kind, &x.tm, &x.tn, &x.tk, &x.wg) != 5) return 0;
    for (int i = 0; i < NBUILTIN; ++i)
        if (!strcmp(builtin[i].kind, kind) && builtin[i].tm == x.tm && builtin[i].tn == x.tn &&
            builtin[i].tk == x.tk && builtin[i].wg == x.wg) {
            *v = builtin[i];
            v->spv = at ? at + 1 : NULL;
            return 1;
        }
    if (!at) return 0;
    for (int i = 0; i < NBUILTIN; ++i)
        if (!strcmp(builtin[i].kind, kind)) x.kind = builtin[i].kind;
    if (!x.kind) return 0;
    x.spv = at + 1;
    *v = x;
    return x.tm && x.tn && x.tk % 8 == 0 && x.wg;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* a driver crash must not eat the rows before it */
    uint32_t M = 8192, N = 8192, K = 8192;
    int iters = 10, nvar = 0;
    variant vars[32];
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--m") && i + 1 < argc) M = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) N = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--k") && i + 1 < argc) K = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (nvar < 32 && parse_variant(argv[i], &vars[nvar])) ++nvar;
        else {
            printf("usage: vk_wg_gemm_probe [--m M] [--n N] [--k K] [--iters N] [KIND:TMxTNxTK:WG[@FILE.spv] ...]\n"
                   "  KIND global|staged|deep|deep3|tensor; built in:");
            for (int b = 0; b < NBUILTIN; ++b)
                printf(" %s:%ux%ux%u:%u", builtin[b].kind, builtin[b].tm, builtin[b].tn, builtin[b].tk, builtin[b].wg);
            printf("\n");
            return strcmp(argv[i], "--help") && strcmp(argv[i], "-h") ? 2 : 0;
        }
    }
    if (!nvar) {
        nvar = NBUILTIN;
        memcpy(vars, builtin, sizeof builtin);
    }
    vk_raw r = {0};
    const int rc = vk_raw_instance(&r, "vk_wg_gemm_probe", VK_API_VERSION_1_3);
    if (rc) return rc;
    qgmm_PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV flex =
        (qgmm_PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV)r.gipa(
            r.inst, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
    const VkPhysicalDevice pd = r.pd;
    const VkPhysicalDeviceProperties props = r.props;
    uint32_t ne = 0;
    r.EnumerateDeviceExtensionProperties(pd, NULL, &ne, NULL);
    VkExtensionProperties *ext = calloc(ne, sizeof *ext);
    r.EnumerateDeviceExtensionProperties(pd, NULL, &ne, ext);
    int have = 0;
    for (uint32_t i = 0; i < ne; ++i)
        have |= (!strcmp(ext[i].extensionName, QGMM_VK_KHR_COOPERATIVE_MATRIX_NAME) ? 1 : 0) |
                (!strcmp(ext[i].extensionName, QGMM_VK_NV_COOPERATIVE_MATRIX_2_NAME) ? 2 : 0) |
                (!strcmp(ext[i].extensionName, QGMM_VK_KHR_SHADER_BFLOAT16_NAME) ? 4 : 0);
    free(ext);
    if (have != 7 || !flex) {
        fprintf(stderr, "%s lacks VK_KHR_cooperative_matrix, VK_NV_cooperative_matrix2 or VK_KHR_shader_bfloat16\n",
                props.deviceName);
        return 77;
    }
    qgmm_VkPhysicalDeviceCooperativeMatrix2PropertiesNV cm2p = {.sType = QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &cm2p};
    r.GetPhysicalDeviceProperties2(pd, &p2);
    printf("# %s, driver 0x%x; workgroup scope: max %u invocations, max dimension %u, %u B shared reserved\n",
           props.deviceName, props.driverVersion, cm2p.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize,
           cm2p.cooperativeMatrixFlexibleDimensionsMaxDimension, cm2p.cooperativeMatrixWorkgroupScopeReservedSharedMemory);
    uint32_t nf = 0;
    CHECK(flex(pd, &nf, NULL));
    qgmm_VkCooperativeMatrixFlexibleDimensionsPropertiesNV *fp = calloc(nf, sizeof *fp);
    for (uint32_t i = 0; i < nf; ++i) fp[i].sType = QGMM_VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV;
    CHECK(flex(pd, &nf, fp));
    for (uint32_t i = 0; i < nf; ++i)
        printf("# flexible %ux%ux%u %s*%s+%s->%s scope %u invocations %u\n", fp[i].MGranularity, fp[i].NGranularity,
               fp[i].KGranularity, ctype(fp[i].AType), ctype(fp[i].BType), ctype(fp[i].CType), ctype(fp[i].ResultType),
               fp[i].scope, fp[i].workgroupInvocations);
    free(fp);

    qgmm_VkPhysicalDeviceCooperativeMatrix2FeaturesNV cm2f = {.sType = QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
    qgmm_VkPhysicalDeviceShaderBfloat16FeaturesKHR bff = {.sType = QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR, .pNext = &cm2f};
    qgmm_VkPhysicalDeviceCooperativeMatrixFeaturesKHR cmf = {.sType = QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, .pNext = &bff};
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = &cmf};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12};
    r.GetPhysicalDeviceFeatures2(pd, &f2);
    if (!cm2f.cooperativeMatrixWorkgroupScope || !cm2f.cooperativeMatrixFlexibleDimensions || !bff.shaderBFloat16CooperativeMatrix ||
        !f12.vulkanMemoryModel || !f12.bufferDeviceAddress) {
        fprintf(stderr, "workgroup scope %u, flexible dimensions %u, bf16 matrices %u: not all there\n",
                cm2f.cooperativeMatrixWorkgroupScope, cm2f.cooperativeMatrixFlexibleDimensions,
                bff.shaderBFloat16CooperativeMatrix);
        return 77;
    }
    fprintf(stderr, "tensor addressing: %u\n", cm2f.cooperativeMatrixTensorAddressing);
    /* enable what the shader needs and nothing it does not */
    cm2f = (qgmm_VkPhysicalDeviceCooperativeMatrix2FeaturesNV){QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV,
                                                               NULL, VK_TRUE, VK_TRUE, 0, 0, 0,
                                                               cm2f.cooperativeMatrixTensorAddressing, 0};
    bff = (qgmm_VkPhysicalDeviceShaderBfloat16FeaturesKHR){QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR,
                                                           &cm2f, VK_TRUE, 0, VK_TRUE};
    cmf = (qgmm_VkPhysicalDeviceCooperativeMatrixFeaturesKHR){QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR,
                                                              &bff, VK_TRUE, 0};
    const VkBool32 fp16 = f12.shaderFloat16;
    f12 = (VkPhysicalDeviceVulkan12Features){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = &cmf,
                                             .bufferDeviceAddress = VK_TRUE, .vulkanMemoryModel = VK_TRUE,
                                             .vulkanMemoryModelDeviceScope = VK_TRUE, .shaderFloat16 = fp16};
    f2 = (VkPhysicalDeviceFeatures2){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12};
    f2.features.shaderInt64 = VK_TRUE;
    const char *exts[] = {QGMM_VK_KHR_COOPERATIVE_MATRIX_NAME, QGMM_VK_NV_COOPERATIVE_MATRIX_2_NAME,
                          QGMM_VK_KHR_SHADER_BFLOAT16_NAME};
    vk_raw_device(&r, &f2, exts, 3);

    const VkDeviceSize sz[5] = {(VkDeviceSize)M * K * 2, (VkDeviceSize)N * K * 2, (VkDeviceSize)M * N * 4,
                                (VkDeviceSize)(M + N) * K * 2, (VkDeviceSize)M * N * 4}; /* a, b, c, upload, readback */
    VkBuffer buf[5];
    VkDeviceMemory mem[5];
    VkDeviceAddress addr[3];
    for (int i = 0; i < 5; ++i) vk_raw_buffer(&r, sz[i], i >= 3, &buf[i], &mem[i], i < 3 ? &addr[i] : NULL);
    uint16_t *up;
    CHECK(r.MapMemory(r.dev, mem[3], 0, sz[3], 0, (void **)&up));
    for (size_t i = 0; i < (size_t)(M + N) * K; ++i) { /* bf16 in (-2, 2), never zero-heavy */
        const float v = ((float)(next_u32() & 0xFFFF) - 32767.5f) / 16384.0f;
        uint32_t u;
        memcpy(&u, &v, 4);
        up[i] = (uint16_t)(u >> 16);
    }
    float *rb;
    CHECK(r.MapMemory(r.dev, mem[4], 0, sz[4], 0, (void **)&rb));

    vk_raw_begin(&r);
    const VkBufferCopy ca = {0, 0, sz[0]}, cbp = {sz[0], 0, sz[1]};
    r.CmdCopyBuffer(r.cb, buf[3], buf[0], 1, &ca);
    r.CmdCopyBuffer(r.cb, buf[3], buf[1], 1, &cbp);
    vk_raw_submit(&r);
    const VkPipelineLayout pl = vk_raw_layout(&r, sizeof(push));
    printf("\n%u x %u x %u bf16 -> f32, median of %d\n\n| variant | tile | invocations | ms | TFLOP/s | max err / bound |\n"
           "|---|---|---|---|---|---|\n", M, N, K, iters);
    double *ms = calloc((size_t)iters, sizeof *ms);
    int failed = 0;
    for (int v = 0; v < nvar; ++v) {
        const variant *x = &vars[v];
        if (M % x->tm || N % x->tn || K % x->tk) { printf("| %s | %ux%ux%u | %u | shape not a multiple of the tile | | |\n",
                                                          x->kind, x->tm, x->tn, x->tk, x->wg); continue; }
        const uint32_t *code = x->code;
        size_t bytes = x->bytes;
        if (x->spv) {
            FILE *f = fopen(x->spv, "rb");
            if (!f) { perror(x->spv); return 2; }
            static uint32_t words[1 << 18];
            bytes = 4 * fread(words, 4, sizeof words / 4, f);
            fclose(f);
            code = words;
        }
        VkPipeline pipe;
        fprintf(stderr, "variant %d: building the pipeline\n", v);
        const VkResult pr = vk_raw_pipeline(&r, code, bytes, pl, &pipe);
        if (pr != VK_SUCCESS) {
            printf("| %s | %ux%ux%u | %u | pipeline refused (%d) | | |\n", x->kind, x->tm, x->tn,
                   x->tk, x->wg, pr);
            continue;
        }
        const push pc = {addr[0], addr[1], addr[2], M, N, K, 0};
        for (int it = -3; it < iters; ++it) {
            vk_raw_begin(&r);
            r.CmdResetQueryPool(r.cb, r.qp, 0, 2);
            if (it == -3) r.CmdFillBuffer(r.cb, buf[2], 0, sz[2], 0x7FC00000u); /* poison: NaN */
            vk_raw_barrier(&r);
            r.CmdWriteTimestamp(r.cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, r.qp, 0);
            r.CmdBindPipeline(r.cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
            r.CmdPushConstants(r.cb, pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, &pc);
            r.CmdDispatch(r.cb, N / x->tn, M / x->tm, 1);
            r.CmdWriteTimestamp(r.cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, r.qp, 1);
            if (it == iters - 1) {
                vk_raw_barrier(&r);
                const VkBufferCopy cc = {0, 0, sz[2]};
                r.CmdCopyBuffer(r.cb, buf[2], buf[4], 1, &cc);
            }
            vk_raw_submit(&r);
            if (it >= 0) ms[it] = vk_raw_elapsed_ms(&r);
        }
        r.DestroyPipeline(r.dev, pipe, NULL);
        const double med = vk_raw_median(ms, iters);
        double worst = 0;
        for (int s = 0; s < 512; ++s) { /* error over the f32-accumulation bound K 2^-24 sum|a*b| */
            const uint32_t i = next_u32() % M, j = next_u32() % N;
            double ref = 0, mag = 0;
            for (uint32_t k = 0; k < K; ++k) {
                const double pr2 = (double)bf16_to_f32(up[(size_t)i * K + k]) * bf16_to_f32(up[(size_t)M * K + (size_t)j * K + k]);
                ref += pr2;
                mag += fabs(pr2);
            }
            const double got = rb[(size_t)i * N + j], e = fabs(got - ref) / (mag * (double)K * 0x1p-24 + 1e-30);
            worst = isfinite(got) && e > worst ? e : (isfinite(got) ? worst : INFINITY);
        }
        if (!(worst <= 1.0)) failed = 1;
        printf("| %s | %ux%ux%u | %u | %.3f | %.1f | %.3f%s |\n", x->kind, x->tm, x->tn, x->tk,
               x->wg, med, 2.0 * M * N * (double)K / (med * 1e9), worst, worst <= 1.0 ? "" : " FAIL");
        fflush(stdout);
    }
    free(ms);
    return failed; /* the process exit releases the device */
}
