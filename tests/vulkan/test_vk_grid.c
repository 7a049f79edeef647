/*
 * test_vk_grid.c — the Vulkan backend's dispatch grid (backends/vulkan/vk_grid.h) on the host:
 * for every row width and count tried, the dispatches vk_grid_next makes cover the linear ids
 * 0 .. groups-1 exactly once, in order, none past the end (common.glsl wg_linear: base + x +
 * y * row), and each stays within the 65535 per-dimension minimum limit. A grid rounded up
 * to whole rows ran up to row - 1 workgroups past the end, which wrote past the output of
 * the 3D casts with E * tiles > 65535 (E = 128 on the H100, 2026-11-26).
 */
#include "vk_grid.h"

#include <inttypes.h>
#include <stdio.h>

static int g_fail;

/* Walks the dispatches of `groups` in rows of `row`; 0 when they are exact. */
static int check(int64_t groups, uint32_t row)
{
    int64_t next = 0, calls = 0;
    for (int64_t base = 0; base < groups;) {
        vk_grid d;
        const int64_t after = vk_grid_next(groups, row, base, &d);
        ++calls;
        const int64_t last = (int64_t)d.base + (d.gx - 1) + (int64_t)(d.gy - 1) * row; /* wg_linear of the last */
        if (d.base != (uint64_t)next || d.gx == 0 || d.gy == 0 || d.gx > row || d.gy > 65535 ||
            (d.gy > 1 && d.gx != row) || after != next + (int64_t)d.gx * d.gy || last != after - 1 ||
            after > groups || calls > 1 + groups / ((int64_t)row * 65535) + 1) {
            fprintf(stderr, "FAIL groups %" PRId64 " row %u: dispatch at %" PRId64 " is %u x %u base %u\n", groups,
                    row, base, d.gx, d.gy, d.base);
            return 1;
        }
        next = after;
        base = after;
    }
    if (next != groups) {
        fprintf(stderr, "FAIL groups %" PRId64 " row %u: ids end at %" PRId64 "\n", groups, row, next);
        return 1;
    }
    return 0;
}

int main(void)
{
    static const uint32_t rows[] = {1, 2, 3, 4, 7, 255, 256, 1000, 65534, 65535};
    /* the nightly's failing counts (E = 128: 327680 128x128 tiles, 163840 cast_cols chunks),
     * multiples of 65535 and their neighbours, and the largest count one call takes */
    static const int64_t big[] = {65535, 65536, 131069, 131070, 131071, 163840, 327680, 655360,
                                  (int64_t)65535 * 65535 - 1, (int64_t)65535 * 65535, (int64_t)65535 * 65535 + 1,
                                  VK_GROUPS_MAX};
    int n = 0;
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; ++r) {
        for (int64_t g = 1; g <= 3000; ++g, ++n) g_fail |= check(g, rows[r]);
        for (size_t b = 0; b < sizeof big / sizeof big[0]; ++b, ++n)
            if (rows[r] >= 255 || big[b] <= 1000000) g_fail |= check(big[b], rows[r]);
    }
    printf("%d grids checked: %s\n", n, g_fail ? "FAILED" : "exact");
    return g_fail;
}
