/*
 * test_fp8_binade.c — proves codec.glsl's fp8_mag_binade (the encoder of cast_rows.comp,
 * cast_2d.comp) equal to the reference qgmm_f32_to_fp8 on every non-negative f32 bit
 * pattern from +0 to +inf, for each fp8 format. The GLSL function is written here again
 * operation for operation in C float arithmetic, which is IEEE round-to-nearest-even as
 * Vulkan's OpFAdd / OpFMul / min / max are for the operands it sees (finite, clamped; see
 * codec.glsl for why subnormal flushing cannot change a code). No GPU needed.
 * usage: test_fp8_binade [--stride N]  (N > 1 checks every N-th pattern, for quick runs)
 */
#include "qgmm_fp8_codec.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float f_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t u_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* codec.glsl fp8_mag_binade, line by line */
static uint32_t mag_binade(float a, int mbits, int bias, uint32_t maxbits, int has_inf)
{
    const float pm = fminf(a, f_of(maxbits));
    const float pe = fmaxf(pm, f_of((uint32_t)(128 - bias) << 23));
    const uint32_t eb = u_of(pe) & 0x7F800000u;
    const float M = f_of(eb) * f_of((uint32_t)(127 + 23 - mbits) << 23);
    const float t = pm + M;
    uint32_t code = (u_of(t) - u_of(M)) + ((u_of(M) >> (23 - mbits)) - (uint32_t)((128 - bias + 23 - mbits) << mbits));
    if (has_inf && u_of(a) == 0x7F800000u) code = 0x7Cu;
    return code;
}

int main(int argc, char **argv)
{
    uint32_t stride = 1;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--stride") && i + 1 < argc) stride = (uint32_t)strtoul(argv[++i], NULL, 10);
        else {
            printf("usage: test_fp8_binade [--stride N]\n");
            return strcmp(argv[i], "--help") && strcmp(argv[i], "-h") ? 2 : 0;
        }
    }
    if (!stride) stride = 1;
    static const struct { int fmt, mbits, bias, has_inf; uint32_t maxbits; const char *name; } F[] = {
        {QGMM_FMT_E4M3FN, 3, 7, 0, 0x43E00000u, "e4m3fn"},
        {QGMM_FMT_E4M3FNUZ, 3, 8, 0, 0x43700000u, "e4m3fnuz"},
        {QGMM_FMT_E5M2, 2, 15, 1, 0x47600000u, "e5m2"},
    };
    long long bad = 0, n = 0;
    for (int f = 0; f < 3; ++f) {
        long long fb = 0;
        for (uint64_t u = 0; u <= 0x7F800000u; u += stride) {
            const uint32_t want = qgmm_f32_to_fp8(f_of((uint32_t)u), F[f].fmt);
            const uint32_t got = mag_binade(f_of((uint32_t)u), F[f].mbits, F[f].bias, F[f].maxbits, F[f].has_inf);
            ++n;
            if (got != want && fb++ < 5)
                fprintf(stderr, "%s: f32 0x%08x -> 0x%02x, reference 0x%02x\n", F[f].name, (unsigned)u, got, want);
        }
        bad += fb;
    }
    printf("test_fp8_binade: %lld patterns, %lld differ\n", n, bad);
    return bad != 0;
}
