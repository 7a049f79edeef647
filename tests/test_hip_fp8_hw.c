/*
 * test_hip_fp8_hw.c — on an MI300X (gfx94x), sweeps all 2^32 f32 bit patterns through the
 * wrapped hardware conversion v_cvt_pk_fp8_f32 (backends/hip/fp8_hw.hip) and compares each
 * byte with the reference codec (kernels/qgmm_fp8_codec.h, e4m3fnuz). Zero mismatches is
 * the condition for letting the casts use the hardware conversion on gfx94x.
 * Exit: 0 pass, 1 mismatches or error, 77 skip (no HIP device, or not gfx94x — there is
 * nothing to compare; the skip is reported as a skip, never as a pass).
 */
#include "qgmm.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: test_hip_fp8_hw\nExhaustive f32 -> e4m3fnuz check of gfx94x's hardware conversion against "
               "the reference codec. Needs libqgmm-hip.so (QGMM_PLUGIN_PATH) and an MI300-class GPU.\n"
               "Exit 0 pass, 1 fail, 77 skip.\n");
        return 0;
    }
    qgmm_context *ctx = NULL;
    if (qgmm_context_create("hip", 0, &ctx) != QGMM_OK) {
        printf("SKIP: no usable hip backend: %s\n", qgmm_last_error(NULL));
        return 77;
    }
    qgmm_context_destroy(ctx);
    qgmm_backend_info info;
    for (int i = 0; i < qgmm_backend_count(); ++i) {
        qgmm_backend_get_info(i, &info);
        if (!strcmp(info.name, "hip")) break;
    }
    void *h = dlopen(info.library, RTLD_NOW | RTLD_NOLOAD);
    if (!h) h = dlopen(info.library, RTLD_NOW);
    long long (*check)(uint32_t *) = h ? (long long (*)(uint32_t *))dlsym(h, "qgmm_hip_fp8_hw_selfcheck") : NULL;
    if (!check) {
        printf("FAIL: %s has no qgmm_hip_fp8_hw_selfcheck\n", info.library);
        return 1;
    }
    uint32_t first = 0;
    const long long bad = check(&first);
    if (bad == -1) {
        printf("SKIP: the device is not gfx94x (no hardware fp8 conversion to check)\n");
        return 77;
    }
    if (bad < 0) {
        printf("FAIL: the self-check could not run (HIP error)\n");
        return 1;
    }
    printf("%lld mismatches over 2^32 inputs%s", bad, bad ? "" : "\n");
    if (bad) printf("; first at f32 bits 0x%08x\n", first);
    return bad ? 1 : 0;
}
