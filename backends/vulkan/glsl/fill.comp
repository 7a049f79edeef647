#version 460
// fill.comp — byte fill of [dst, dst + bytes) (vkCmdFillBuffer needs 4-byte alignment;
// qgmm offsets need not have it).
#include "common.glsl"
#include "fill_params.h"
layout(local_size_x = 256) in;
void main()
{
    const int64_t i0 = (wg_linear() * 256 + int64_t(gl_LocalInvocationID.x)) * 4;
    const int64_t n = FILLP.bytes;
    for (int64_t i = i0; i < min(i0 + 4, n); ++i) st_u8(uint64_t(FILLP.dst), i, uint(FILLP.value));
}
