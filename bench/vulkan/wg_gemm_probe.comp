#version 460
// wg_gemm_probe.comp — dense bf16 GEMM C[M,N] (f32) = A[M,K] * B[N,K]^T on workgroup-scope
// cooperative matrices (VK_NV_cooperative_matrix2), for vk_wg_gemm_probe.c: one TM x TN
// accumulator per workgroup, the driver decides how the MMAs are spread over the subgroups.
// Compiled with GL_NV_cooperative_matrix (f16 types, gl_ScopeWorkgroup) and rewritten to KHR
// with bfloat16 by backends/vulkan/spirv_coop_khr.c, like gemm_coopmat.comp.
//   STAGED=0: fragments loaded straight from global memory (the driver stages them);
//   STAGED=1: our own double-buffered shared tiles, 16-byte chunks per lane;
//   STAGED=2: the same with two steps of global loads in flight (two register sets);
//   STAGED=3: three;
//   STAGED=4: fragments loaded straight from global memory by tensor-addressed loads
//   (spirv_coop_khr --tensor turns the buffer loads below into them). Built by backends/vulkan/CMakeLists.txt (the variants of the table
//   in vk_wg_gemm_probe.c).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_control_flow_attributes : require
#pragma use_vulkan_memory_model
// Sizes are compiled in (-DTM_= -DTN_= -DTK_= -DWG= -DSTAGED=): the NVIDIA 580 driver's
// compiler dies (SIGFPE in vkCreateComputePipelines) on workgroup-scope matrix types whose
// dimensions are specialization constants. The index math is unsigned (TM, TN, TK below):
// the same kernel with signed sizes timed 150 instead of 208 TFLOP/s (deep, H100).
#if STAGED && STAGED != 4 && 2 * (TM_ + TN_) * (TK_ / 8 + 1) * 16 + 8192 > 49152
#error "two shared stages plus the driver's 8 KB workgroup-scope reserve exceed 48 KB"
#endif
layout(local_size_x = WG) in;
const uint TM = TM_, TN = TN_, TK = TK_;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer V4 { uvec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer F32 { float f[]; };
#if STAGED == 4
layout(buffer_reference, std430, buffer_reference_align = 16) buffer H { float16_t h[]; };
layout(push_constant) uniform P { H a; H b; F32 c; uint M, N, K; } p;
#else
layout(push_constant) uniform P { V4 a; V4 b; F32 c; uint M, N, K; } p;
#endif

#define ACC fcoopmatNV<32, gl_ScopeWorkgroup, TM, TN>
#define MA fcoopmatNV<16, gl_ScopeWorkgroup, TM, TK>
#define MB fcoopmatNV<16, gl_ScopeWorkgroup, TK, TN>

#if STAGED && STAGED != 4
#define PITCH (TK / 8 + 1)  // uvec4 per shared row: one spare chunk against bank conflicts
shared uvec4 sh[2 * (TM + TN) * PITCH];
#endif

#define LOADS(RA, RB, STEP) \
    [[unroll]] for (uint i = 0; i < NA; ++i) { const uint q = t + i * WG; RA[i] = p.a.v[(m0 + q / CPR) * kc + (STEP) * CPR + q % CPR]; } \
    [[unroll]] for (uint i = 0; i < NBC; ++i) { const uint q = t + i * WG; RB[i] = p.b.v[(n0 + q / CPR) * kc + (STEP) * CPR + q % CPR]; }
#define STORES(RA, RB, ST) \
    [[unroll]] for (uint i = 0; i < NA; ++i) { const uint q = t + i * WG; sh[(ST) * STAGE + (q / CPR) * PITCH + q % CPR] = RA[i]; } \
    [[unroll]] for (uint i = 0; i < NBC; ++i) { const uint q = t + i * WG; sh[(ST) * STAGE + SA + (q / CPR) * PITCH + q % CPR] = RB[i]; }
#define MMA(ST) { MA a; MB b; coopMatLoadNV(a, sh, (ST) * STAGE, PITCH, false); \
                  coopMatLoadNV(b, sh, (ST) * STAGE + SA, PITCH, true); acc = coopMatMulAddNV(a, b, acc); }
void main()
{
    const uint m0 = gl_WorkGroupID.y * TM, n0 = gl_WorkGroupID.x * TN, kc = p.K / 8;
    ACC acc = ACC(0.0);
#if STAGED == 0
    for (uint k = 0; k < kc; k += TK / 8) {
        MA a;
        MB b;
        coopMatLoadNV(a, p.a.v, m0 * kc + k, kc, false);
        coopMatLoadNV(b, p.b.v, n0 * kc + k, kc, true);
        acc = coopMatMulAddNV(a, b, acc);
    }
#elif STAGED == 4
    for (uint k = 0; k < p.K; k += TK) {
        MA a;
        MB b;
        coopMatLoadNV(a, p.a.h, m0 * p.K + k, p.K, false);
        coopMatLoadNV(b, p.b.h, n0 * p.K + k, p.K, true);
        acc = coopMatMulAddNV(a, b, acc);
    }
#elif STAGED == 2
    // two register sets in flight: set 0 carries even steps, set 1 odd ones; a step's
    // chunks are stored to shared one step after their load was issued, so every load has
    // a whole step of MMAs (not half of one) to arrive
    const uint SA = TM * PITCH, SB = TN * PITCH, STAGE = SA + SB;
    const uint CPR = TK / 8;
    const uint NA = TM * CPR / WG, NBC = TN * CPR / WG;
    uvec4 ra0[16], rb0[16], ra1[16], rb1[16];
    const uint t = gl_LocalInvocationID.x;
    const uint steps = kc / CPR;
    // prologue: step 0 into shared 0, step 1 in set 1, step 2 in set 0 (steps >= 4, even)
    LOADS(ra0, rb0, 0u)
    LOADS(ra1, rb1, 1u)
    STORES(ra0, rb0, 0u)
    LOADS(ra0, rb0, 2u)
    barrier();
    for (uint s = 0; s < steps; s += 2) {
        // step s in shared 0; set 1 = step s+1, set 0 = step s+2 (in flight)
        STORES(ra1, rb1, 1u)
        if (s + 3 < steps) { LOADS(ra1, rb1, s + 3) }
        MMA(0u)
        barrier();
        // step s+1 in shared 1; set 0 = step s+2, set 1 = step s+3
        if (s + 2 < steps) { STORES(ra0, rb0, 0u) }
        if (s + 4 < steps) { LOADS(ra0, rb0, s + 4) }
        MMA(1u)
        barrier();
    }
#elif STAGED == 3
    // three register sets in flight (step s lives in set s % 3, shared stage s % 2): the
    // loop is unrolled by 6 so that every set and stage index is a constant
    const uint SA = TM * PITCH, SB = TN * PITCH, STAGE = SA + SB;
    const uint CPR = TK / 8;
    const uint NA = TM * CPR / WG, NBC = TN * CPR / WG;
    uvec4 ra0[16], rb0[16], ra1[16], rb1[16], ra2[16], rb2[16];
    const uint t = gl_LocalInvocationID.x;
    const uint steps = kc / CPR;
    LOADS(ra0, rb0, 0u)
    LOADS(ra1, rb1, 1u)
    LOADS(ra2, rb2, 2u)
    STORES(ra0, rb0, 0u)
    LOADS(ra0, rb0, 3u)
    barrier();
#define BODY(J, SET, NXT)                                                   \
    if (s + J < steps) {                                                    \
        if (s + J + 1 < steps) { STORES(ra##SET, rb##SET, NXT) }            \
        if (s + J + 4 < steps) { LOADS(ra##SET, rb##SET, s + J + 4) }       \
        MMA((J) & 1u)                                                       \
        barrier();                                                          \
    }
    for (uint s = 0; s < steps; s += 6) {
        BODY(0u, 1, 1u) BODY(1u, 2, 0u) BODY(2u, 0, 1u) BODY(3u, 1, 0u) BODY(4u, 2, 1u) BODY(5u, 0, 0u)
    }
#else
    const uint SA = TM * PITCH, SB = TN * PITCH, STAGE = SA + SB;
    const uint CPR = TK / 8;                    // chunks per row
    const uint NA = TM * CPR / WG, NBC = TN * CPR / WG;
    uvec4 ra[16], rb[16];  // NA, NBC <= 16
    const uint t = gl_LocalInvocationID.x;
    [[unroll]] for (uint i = 0; i < NA; ++i) { const uint q = t + i * WG; ra[i] = p.a.v[(m0 + q / CPR) * kc + q % CPR]; }
    [[unroll]] for (uint i = 0; i < NBC; ++i) { const uint q = t + i * WG; rb[i] = p.b.v[(n0 + q / CPR) * kc + q % CPR]; }
    [[unroll]] for (uint i = 0; i < NA; ++i) { const uint q = t + i * WG; sh[(q / CPR) * PITCH + q % CPR] = ra[i]; }
    [[unroll]] for (uint i = 0; i < NBC; ++i) { const uint q = t + i * WG; sh[SA + (q / CPR) * PITCH + q % CPR] = rb[i]; }
    barrier();
    uint cur = 0;
    for (uint k = 0; k < kc; k += CPR) {
        const bool more = k + CPR < kc;
        if (more) {
            [[unroll]] for (uint i = 0; i < NA; ++i) { const uint q = t + i * WG; ra[i] = p.a.v[(m0 + q / CPR) * kc + k + CPR + q % CPR]; }
            [[unroll]] for (uint i = 0; i < NBC; ++i) { const uint q = t + i * WG; rb[i] = p.b.v[(n0 + q / CPR) * kc + k + CPR + q % CPR]; }
        }
        MA a;
        MB b;
        coopMatLoadNV(a, sh, cur * STAGE, PITCH, false);
        coopMatLoadNV(b, sh, cur * STAGE + SA, PITCH, true);
        acc = coopMatMulAddNV(a, b, acc);
        if (more) {
            const uint nx = (cur ^ 1u) * STAGE;
            [[unroll]] for (uint i = 0; i < NA; ++i) { const uint q = t + i * WG; sh[nx + (q / CPR) * PITCH + q % CPR] = ra[i]; }
            [[unroll]] for (uint i = 0; i < NBC; ++i) { const uint q = t + i * WG; sh[nx + SA + (q / CPR) * PITCH + q % CPR] = rb[i]; }
        }
        barrier();
        cur ^= 1u;
    }
#endif
    coopMatStoreNV(acc, p.c.f, m0 * p.N + n0, p.N, false);
}
