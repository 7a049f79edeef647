#version 460
// copy.comp — qgmm_buffer_copy of 16-byte aligned ranges. Workgroup w moves the 16-byte
// units [w * 256 * COPY_PER_LANE, (w + 1) * 256 * COPY_PER_LANE), COPY_PER_LANE per lane,
// every load issued before the first store: the access pattern of the fastest casts, where
// vkCmdCopyBuffer moves a fraction of the bandwidth on the NVIDIA driver (the runner's copy
// ceiling is this copy). Other ranges go through vkCmdCopyBuffer.
#include "common.glsl"
#include "fill_params.h"
layout(local_size_x = 256) in;
void main()
{
    const int64_t units = COPYP.units;
    const uint64_t src = uint64_t(COPYP.src), dst = uint64_t(COPYP.dst);
    const int64_t base = wg_linear() * 256 * COPY_PER_LANE + int64_t(gl_LocalInvocationID.x);
    uvec4 v[COPY_PER_LANE];
    for (int k = 0; k < COPY_PER_LANE; ++k) {
        const int64_t u = base + 256 * k;
        if (u < units) v[k] = QV16(src + uint64_t(u) * 16ul).v;
    }
    for (int k = 0; k < COPY_PER_LANE; ++k) {
        const int64_t u = base + 256 * k;
        if (u < units) QV16(dst + uint64_t(u) * 16ul).v = v[k];
    }
}
