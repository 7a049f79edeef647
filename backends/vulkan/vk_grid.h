/*
 * vk_grid.h — how a count of workgroups becomes vkCmdDispatch calls (vk_stream.c) and how a
 * shader gets its linear id back (common.glsl wg_linear: base + x + y * row, from the push
 * constants). No Vulkan types: tests/vulkan/test_vk_grid.c checks the arithmetic on the host.
 */
#ifndef QGMM_VK_GRID_H
#define QGMM_VK_GRID_H

#include <stdint.h>

/* One vkCmdDispatch: gx x gy workgroups whose linear ids start at base. */
typedef struct vk_grid {
    uint32_t gx, gy, base;
} vk_grid;

/* The most workgroups one dispatch call takes (linear ids are 32-bit push constants). */
#define VK_GROUPS_MAX ((int64_t)UINT32_MAX)

/* The dispatch of the workgroups from linear id `base` on, of `groups` (<= VK_GROUPS_MAX) in
 * all, in rows of `row` (1-65535, QGMM_VULKAN_DISPATCH_X): whole rows (at most 65535, the
 * minimum maxComputeWorkGroupCount) while a whole row remains, else the last groups % row
 * workgroups as one row of their own. So the ids cover 0 .. groups-1 exactly once and no
 * workgroup lies past the end. Shaders rely on it: a grid rounded up to whole rows runs up to
 * row - 1 surplus workgroups, which cast_cols.comp, cast_2d.comp and cast.comp's tile and MX
 * dim1 paths decode into an expert past E (they have no bound of their own) and write past
 * their output (the E = 128 weight casts). Returns the next base. */
static inline int64_t vk_grid_next(int64_t groups, uint32_t row, int64_t base, vk_grid *d)
{
    const int64_t left = groups - base, rows = left / row;
    d->base = (uint32_t)base;
    if (rows > 0) {
        d->gx = row;
        d->gy = (uint32_t)(rows < 65535 ? rows : 65535);
    } else {
        d->gx = (uint32_t)left;
        d->gy = 1;
    }
    return base + (int64_t)d->gx * d->gy;
}

#endif
