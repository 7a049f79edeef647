#version 460
// copy_probe.comp — the plain copy shader of vk_copy_probe.c: what a compute shader can
// move on this driver. Workgroup w copies 16-byte units [w * 256 * PER, (w + 1) * 256 * PER),
// PER per lane, all loads issued before the stores (PER <= 8), through buffer device
// addresses as the qgmm shaders do.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer V16 { uvec4 v; };
layout(push_constant) uniform Push { uint64_t src, dst, units; uint per; } pc;

void main()
{
    const uint64_t base = uint64_t(gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u) * 256ul * pc.per;
    uvec4 v[8];
    for (uint k = 0u; k < 8u; ++k) {
        const uint64_t u = base + gl_LocalInvocationID.x + 256u * k;
        if (k < pc.per && u < pc.units) v[k] = V16(pc.src + u * 16ul).v;
    }
    for (uint k = 0u; k < 8u; ++k) {
        const uint64_t u = base + gl_LocalInvocationID.x + 256u * k;
        if (k < pc.per && u < pc.units) V16(pc.dst + u * 16ul).v = v[k];
    }
}
