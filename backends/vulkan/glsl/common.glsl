// common.glsl — what every qgmm compute shader shares: extensions, the parameter block,
// typed loads/stores through buffer device addresses, the workgroup-id folding and the
// bad-offsets flag.
//
// Why buffer device addresses: tensors may start at any element offset inside a buffer
// and may exceed maxStorageBufferRange; 64-bit addresses avoid descriptor sets, alignment
// rules and range limits in one go. Every op reads its parameters (addresses, shapes,
// strides in elements) from a small host-written block of int64 members, a struct that C
// and GLSL both compile (backends/vulkan/glsl/*_params.h), whose address is pushed with the
// dispatch grid's row width and first workgroup id (wg_linear below).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require

// The block as an int64 array. No shader reads it, but glslc (shaderc 2023.2 here) needs
// the declaration: without it, optimizing cast_2d.comp took over 23 GB.
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer QParams { int64_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 1) buffer QU8 { uint8_t v; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer QU16 { uint16_t v; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer QU32 { uint v; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer QI32 { int v; };

// 16-byte / 8-byte views for the vectorized paths (the host checks the alignment).
layout(buffer_reference, std430, buffer_reference_align = 16) buffer QV16 { uvec4 v; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer QV8 { uvec2 v; };

// The push constants (vk_stream.c vk_dispatch_spec_ex): the parameter block's address, and
// the row width and first linear id of this dispatch's workgroup grid (wg_linear).
layout(push_constant) uniform QPush { uint64_t params; uint row; uint base; } qpush;

// dtype ids of api/qgmm.h
#define DT_F32 1
#define DT_BF16 2
#define DT_F16 3
#define DT_E4M3FN 4
#define DT_E4M3FNUZ 5
#define DT_E5M2 6
#define DT_E8M0 7
#define DT_I32 8
#define DT_U8 9

uint ld_u8(uint64_t base, int64_t i) { return uint(QU8(base + uint64_t(i)).v); }
uint ld_u16(uint64_t base, int64_t i) { return uint(QU16(base + uint64_t(i) * 2ul).v); }
uint ld_u32(uint64_t base, int64_t i) { return QU32(base + uint64_t(i) * 4ul).v; }
int ld_i32(uint64_t base, int64_t i) { return QI32(base + uint64_t(i) * 4ul).v; }
void st_u8(uint64_t base, int64_t i, uint v) { QU8(base + uint64_t(i)).v = uint8_t(v); }
void st_u16(uint64_t base, int64_t i, uint v) { QU16(base + uint64_t(i) * 2ul).v = uint16_t(v); }
void st_u32(uint64_t base, int64_t i, uint v) { QU32(base + uint64_t(i) * 4ul).v = v; }
void st_i32(uint64_t base, int64_t i, int v) { QI32(base + uint64_t(i) * 4ul).v = v; }

// Raw element of any size (1, 2 or 4 bytes) as a uint.
uint ld_raw(uint64_t base, int64_t i, int esize)
{
    if (esize == 4) return ld_u32(base, i);
    if (esize == 2) return ld_u16(base, i);
    return ld_u8(base, i);
}
void st_raw(uint64_t base, int64_t i, int esize, uint v)
{
    if (esize == 4) st_u32(base, i, v);
    else if (esize == 2) st_u16(base, i, v);
    else st_u8(base, i, v);
}

// A count of n workgroups is dispatched (vk_grid.h) as grids of whole rows of `row`
// workgroups (row <= 65535, the per-dimension minimum limit; at most 65535 rows a dispatch)
// and, where row does not divide n, one last dispatch of the n % row remaining ones, each
// with its first linear id in `base`: the ids are exactly 0 .. n-1, no workgroup lies past
// the end, so a shader may decode its id into (expert, tile, ...) without a bound check.
int64_t wg_linear() { return int64_t(qpush.base) + int64_t(gl_WorkGroupID.x) + int64_t(gl_WorkGroupID.y) * int64_t(qpush.row); }
