#version 460
// gemm_coopmat.comp — grouped GEMM (M- and K-grouped) on tensor-core cooperative matrices:
// 16x16x16 MMAs with f32 accumulation, every recipe.
//   QG_BF16=1: bf16 operands staged as raw bits. Compiled with GL_NV_cooperative_matrix
//              f16 types, then backends/vulkan/spirv_coop_khr.c rewrites the SPIR-V to
//              VK_KHR_cooperative_matrix with bfloat16 components (this glslc, glslang 11,
//              knows neither KHR extension). Operands are exact: nothing is converted.
//   QG_BF16=0: fp8 operands (e4m3fn, e4m3fnuz, e5m2) decoded to f16 bits while staging.
//              Every fp8 value (subnormals, max, e5m2 inf, NaN) is an f16 value, so the
//              MMA multiplies exactly what the CPU reference multiplies; each f16 x f16
//              product is exact in f32. Runs on the NV extension as compiled, or rewritten
//              to KHR.
// Scales (cpu_gemm.c order): blockwise / MX block sums are promoted in f32 as
// total += (sa * sb) * block_sum; rowwise: epilogue (total * ra) * rb.
//
// Why the shape of this kernel (see docs/backends-vulkan.md): staging bounds a GEMM here,
// so every lane moves 16-byte chunks along whichever dim of an operand is
// contiguous in memory, tiles are double-buffered in shared memory (the next K step's
// global loads are in flight in registers while the MMAs run, one barrier per step), and
// the shared tile keeps the global orientation so that the fragment load's row/column-major
// flag, not a transposing copy, absorbs the layout.
//
// Tile: 128x128 outputs per workgroup of 8 subgroups of 32 (the host enables this path only
// for subgroup size 32); subgroup (wm, wn) owns rows wm*64.., cols wn*32..: 4x2 fragments.
// The workgroup-scope builds (QG_WGSCOPE: gemm_coop_bf16_wg_khr, and gemm_coop_fp8_wg_khr for
// FP8 rowwise, fp8 decoded to f16 as in the other fp8 builds) instead hold the tile as two
// 64x128 workgroup-scope accumulators, keep two steps of loads in flight and compute only the
// lean tiles (whole, aligned); the host runs the subgroup-scope build for the rest.
// Depth steps of 32. Fragment element -> (row, col) maps are implementation-defined, so the
// kernel reads the map once from a matrix of known contents (idmap) and uses it for the
// scale promotion and the epilogue.
#include "params.h"
#include "common.glsl"
#include "gemm_params.h"
#include "codec.glsl"
#include "layout.glsl"
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
// QG_WARPS=4: 4 subgroups of 64x64 outputs (BF16 and rowwise builds: half the threads, twice
// the MMAs per fragment load, two workgroups fit an SM); 8: 8 subgroups of 64x32 (the
// promote builds, whose f32 totals double the accumulator registers).
#ifndef QG_WARPS
#define QG_WARPS 8
#endif
#define NT (32 * QG_WARPS)  // lanes per workgroup
#if QG_WARPS == 4
#define NB 4  // 16-column fragments per subgroup
#else
#define NB 2
#endif
#define NF (4 * NB)                 // fragments per subgroup (4 rows of 16)
layout(local_size_x = NT) in;

#ifndef QG_BF16
#define QG_BF16 0
#endif
// QG_PROMOTE=1: the blockwise / MX build (per-scale-block promotion into f32 registers);
// 0: BF16 and FP8 rowwise, whose accumulators run over the whole depth.
#ifndef QG_PROMOTE
#define QG_PROMOTE 0
#endif
// Specialization constants (set by vk_ops_gemm.c from the parameters it also passes):
// folded at pipeline creation, so the driver compiles the fp8 decode and the epilogue for
// the actual recipe and formats instead of every combination (an unspecialized pipeline is
// several times slower). The grouping kind and the operand layouts stay runtime values:
// as specialization constants, the NVIDIA 580 driver left whole K-grouped output tiles
// unwritten (root cause not found; see docs/backends-vulkan.md).
layout(constant_id = 0) const int SC_RECIPE = 0;
layout(constant_id = 1) const int SC_AFMT = 4;    // fp8 dtype ids (bf16 build: unused)
layout(constant_id = 2) const int SC_BFMT = 4;

#define BM 128
#define BN 128
#if QG_PROMOTE && QG_WARPS != 8
#error "the promote build loads one scale per lane: it needs BM + BN = 256 lanes"
#endif
#define BK 32
// QG_WGSCOPE=1 (BF16, FP8 rowwise): the MMAs on workgroup-scope matrices (VK_NV_cooperative_matrix2),
// two 64x128 accumulators per 128x128 tile; the driver spreads them over the subgroups.
// QG_SETS=2: two register sets of prefetched chunks (gemm_coop_step.glsl); why these two
// settings: docs/backends-vulkan.md.
#ifndef QG_WGSCOPE
#define QG_WGSCOPE 0
#endif
#ifndef QG_SETS
#define QG_SETS 1
#endif
#if QG_WGSCOPE && (QG_PROMOTE || QG_WARPS != 8)
#error "the workgroup-scope builds are BF16 and FP8 rowwise (no promotion), 256 lanes"
#endif
// Shared tiles in 16-byte units (8 halves). K-contiguous operand: BM rows x (BK+8) halves;
// outer-contiguous operand: BK rows x (BM+8) halves. The +8 halves keep the 8 rows an
// ldmatrix-style fragment load touches on distinct banks.
#define PITCH_KC 5     // (BK + 8) / 8
#define PITCH_OC 17    // (BM + 8) / 8
#define TILE_U4 640    // max(BM * PITCH_KC, BK * PITCH_OC); B is BN = BM wide
shared uvec4 tiles[4 * TILE_U4];  // [stage 0 A, stage 0 B, stage 1 A, stage 1 B]
shared float scA[2 * BM];         // per stage: scale of each row / column for the step
shared float scB[2 * BN];

#define R_BF16 0
#define R_ROWWISE 1
#define R_BLOCKWISE 2
#define R_MX 3
#if QG_BF16
#define CH 8      // elements per 16-byte chunk
#else
#define CH 16
#endif
#define NCH (BM * BK / CH / NT)  // chunks per lane per operand and step

#if !QG_BF16
// Two bytes in the low bytes of 16-bit lanes -> two f16, exact (QGMM codec semantics of
// kernels/qgmm_fp8_codec.h). The magnitude bits shifted into f16 position read as an f16
// 2^(15-bias) too small, for normals and subnormals alike (an e4m3 subnormal m*2^-9 lands
// on the f16 subnormal m*2^-17); one exact f16 multiply by a power of two restores it.
// Needs f16 denormals preserved (vk_coop.c checks the device). NaN bytes come out wrong
// here; fp8x4_to_h16 deals with them.
uint e4m3_pair(uint p, float16_t k)
{
    const f16vec2 v = unpackFloat2x16((p & 0x007F007Fu) << 7) * k;
    return packFloat2x16(v) | ((p & 0x00800080u) << 8);
}

// The halves of h whose source byte (bit 7 / bit 15 of nan) is this format's NaN become the
// reference's NaN: e4m3fn 0x7F / 0xFF -> 0x7E00 / 0xFE00 (sign kept), e4m3fnuz 0x80 -> 0x7E00.
uint patch_nan(uint h, uint nan, bool fnuz)
{
    const uint m = ((nan & 0x80u) != 0u ? 0x0000FFFFu : 0u) | ((nan & 0x8000u) != 0u ? 0xFFFF0000u : 0u);
    const uint q = fnuz ? 0x7E007E00u : (h & 0x80008000u) | 0x7E007E00u;
    return (h & ~m) | (q & m);
}

#if !QG_WGSCOPE
// One fp8 byte -> f16 bits, exact: the per-byte path for words holding a NaN. e4m3fn:
// normals re-bias the exponent (+8), subnormals m*2^-9 become f16 normals, 0x7F/0xFF are
// NaN. e4m3fnuz: the same values at half the magnitude (bias 8), 0x80 is the only NaN, no
// negative zero.
uint fp8_to_h16(uint b, int fmt)
{
    const uint m = b & 0x7Fu;
    const uint p = uint(findMSB(max(m, 1u)));  // subnormal: position of the leading bit
    uint h = m >= 8u ? (m << 7) + 0x2000u : (m == 0u ? 0u : ((6u + p) << 10) | ((m << (10u - p)) & 0x3FFu));
    if (fmt == DT_E4M3FNUZ) {
        if (b == 0x80u) return 0x7E00u;
        if (m != 0u) h -= 0x400u;
        return ((b & 0x80u) << 8) | h;
    }
    if (m == 0x7Fu) h = 0x7E00u;
    return ((b & 0x80u) << 8) | h;
}
#endif

// 4 fp8 bytes -> 4 f16 (as 2 words), exact. e5m2 is f16 with the low byte cut off. e4m3: x
// has a zero byte exactly where w holds this format's NaN; (x + 0x7F) sets bit 7 of every
// nonzero 7-bit byte (no carry leaves a byte). Words holding a NaN byte: the workgroup-scope
// build patches the NaN halves without a branch, the subgroup-scope builds take a per-byte
// path behind a branch. This code is inlined at every staging store, and each build is
// fastest its way on the H100: the branch-free form halves the workgroup-scope build's
// code but takes the subgroup-scope builds to the register limit, where they slow down
// (docs/backends-vulkan.md).
uvec2 fp8x4_to_h16(uint w, int fmt)
{
    if (fmt == DT_E5M2)
        return uvec2(((w & 0xFFu) << 8) | ((w & 0xFF00u) << 16), ((w >> 8) & 0xFF00u) | (w & 0xFF000000u));
    const bool fnuz = fmt == DT_E4M3FNUZ;
    const uint x = fnuz ? w ^ 0x80808080u : (w & 0x7F7F7F7Fu) ^ 0x7F7F7F7Fu;
    const uint nan = ~((x & 0x7F7F7F7Fu) + 0x7F7F7F7Fu | x) & 0x80808080u;  // bit 7 of each NaN byte
#if !QG_WGSCOPE
    if (nan != 0u)
        return uvec2(fp8_to_h16(w & 0xFFu, fmt) | (fp8_to_h16((w >> 8) & 0xFFu, fmt) << 16),
                     fp8_to_h16((w >> 16) & 0xFFu, fmt) | (fp8_to_h16(w >> 24, fmt) << 16));
#endif
    const float16_t k = fnuz ? float16_t(128.0) : float16_t(256.0);
    const uint lo = e4m3_pair((w & 0xFFu) | ((w & 0xFF00u) << 8), k);
    const uint hi = e4m3_pair(((w >> 16) & 0xFFu) | ((w >> 8) & 0xFF0000u), k);
#if !QG_WGSCOPE
    return uvec2(lo, hi);
#else
    return uvec2(patch_nan(lo, nan & 0x8080u, fnuz), patch_nan(hi, (nan >> 16) & 0x8080u, fnuz));
#endif
}
#endif

// One operand's staging geometry. kc: the operand's contiguous dim is the GEMM depth.
struct Opnd {
    uint64_t base;   // element (0, 0) of this operand (group offset applied)
    int64_t ostride; // elements between consecutive outer indices (rows if kc, depth if !kc)
    int es;          // element size
    bool kc;
};

// Loads this lane's chunk q of the (outer, contiguous) tile starting at (o0, x0), with
// valid ranges o < ohi, x < xhi; out-of-range elements read as zero. A chunk that is whole
// and 16-byte aligned is one load; any other chunk goes element by element.
uvec4 load_chunk(Opnd op, int q, int64_t o0, int64_t x0, int64_t ohi, int64_t xhi)
{
    const int c = int(gl_LocalInvocationID.x) + NT * q;
    const int runlen = op.kc ? BK / CH : BM / CH;  // chunks per run
    const int64_t o = o0 + c / runlen, x = x0 + (c % runlen) * CH;
    if (o >= ohi) return uvec4(0);
    const uint64_t addr = op.base + uint64_t(o * op.ostride + x) * uint64_t(op.es);
    if (x + CH <= xhi && (addr & 15ul) == 0ul) return QV16(addr).v;
    uvec4 v = uvec4(0);
    for (int e = 0; e < CH; ++e) {
        if (x + e >= xhi) break;
        const uint bits = op.es == 2 ? ld_u16(addr, e) : ld_u8(addr, e);
        const int word = (e * op.es) / 4, sh = ((e * op.es) % 4) * 8;
        v[word] |= bits << sh;
    }
    return v;
}

// Writes chunk q (as loaded) into the shared tile of `which` (0 A, 1 B) in stage st.
void store_chunk(int which, int st, bool kc, int q, uvec4 v, int fmt)
{
    const int c = int(gl_LocalInvocationID.x) + NT * q;
    const int runlen = kc ? BK / CH : BM / CH;
    const int run = c / runlen, part = c % runlen;
    const int base = (2 * st + which) * TILE_U4 + run * (kc ? PITCH_KC : PITCH_OC);
#if QG_BF16
    tiles[base + part] = v;
#else
    tiles[base + 2 * part] = uvec4(fp8x4_to_h16(v.x, fmt), fp8x4_to_h16(v.y, fmt));
    tiles[base + 2 * part + 1] = uvec4(fp8x4_to_h16(v.z, fmt), fp8x4_to_h16(v.w, fmt));
#endif
}

float e8m0f(uint64_t base, int64_t byteoff, int64_t stride)
{
    return uintBitsToFloat(e8m0_to_f32(ld_u8(base, byteoff * stride)));
}

#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define FRAG fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define WACC fcoopmatNV<32, gl_ScopeWorkgroup, 64, 128>
#define WA fcoopmatNV<16, gl_ScopeWorkgroup, 64, 32>
#define WB fcoopmatNV<16, gl_ScopeWorkgroup, 32, 128>

// Fragment element -> (row, col) map, implementation-defined: load a 16x16 matrix holding
// r*16+c through this subgroup's part of the tile memory and read back what each lane got.
// A 16x16 fragment over 32 lanes holds 8 elements per lane (length() would be a
// spec-constant op, which the KHR rewrite does not carry over).
void load_idmap(uint sg, uint lane, out int rc[8])
{
    for (int e = int(lane); e < 64; e += 32)
        tiles[sg * (64u * NB) + uint(e)] = uvec4(floatBitsToUint(float(4 * e)), floatBitsToUint(float(4 * e + 1)),
                                           floatBitsToUint(float(4 * e + 2)), floatBitsToUint(float(4 * e + 3)));
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    ACC idmap;
    coopMatLoadNV(idmap, tiles, sg * (64u * NB), 4u, false);
    [[unroll]] for (int i = 0; i < 8; ++i) rc[i] = int(idmap[i]);
    subgroupBarrier();
}

// Writes v[16], the outputs (gi, gj0 .. gj0+15), with the rowwise scales, in the output
// dtype; 16-byte stores where the row is contiguous and aligned.
#define EPI_STORE16 \
            if (recipe == R_ROWWISE) { \
                const float ra = uintBitsToFloat(ld_u32(SA, g * sSAg + gi * sSAi)); \
                [[unroll]] for (int k = 0; k < 16; ++k) \
                    if (gj0 + k < j1) v[k] = v[k] * ra * uintBitsToFloat(ld_u32(SB, g * sSBg + (gj0 + k) * sSBj)); \
            } \
            const int64_t oi = gi * sOi + gj0 * sOj; \
            const uint64_t oaddr = OUT + uint64_t(oi) * uint64_t(oes); \
            if (sOj == 1 && gj0 + 16 <= j1 && (oaddr & 15ul) == 0ul) { \
                if (odt == DT_BF16) { \
                    uint h[8]; \
                    [[unroll]] for (int k = 0; k < 8; ++k) \
                        h[k] = f32_to_bf16(floatBitsToUint(v[2 * k])) | (f32_to_bf16(floatBitsToUint(v[2 * k + 1])) << 16); \
                    QV16(oaddr).v = uvec4(h[0], h[1], h[2], h[3]); \
                    QV16(oaddr + 16ul).v = uvec4(h[4], h[5], h[6], h[7]); \
                } else { \
                    [[unroll]] for (int k = 0; k < 4; ++k) \
                        QV16(oaddr + uint64_t(16 * k)).v = uvec4(floatBitsToUint(v[4 * k]), floatBitsToUint(v[4 * k + 1]), \
                                                                 floatBitsToUint(v[4 * k + 2]), floatBitsToUint(v[4 * k + 3])); \
                } \
            } else { \
                [[unroll]] for (int k = 0; k < 16; ++k) { \
                    if (gj0 + k >= j1) break; \
                    const int64_t o = oi + k * sOj; \
                    if (odt == DT_BF16) st_u16(OUT, o, f32_to_bf16(floatBitsToUint(v[k]))); \
                    else st_u32(OUT, o, floatBitsToUint(v[k])); \
                } \
            }

void main()
{
    const int tid = int(gl_LocalInvocationID.x);
    const int kind = int(GP.kind), recipe = SC_RECIPE;
    const uint64_t table = uint64_t(GP.table);
    if (tab_bad(table)) return;
    const int64_t G = GP.groups, ntj = GP.ntj;
    const int64_t wid = wg_linear();
    if (wid >= GP.nwg) return;
    const int64_t tj = wid % ntj, ti_all = wid / ntj;

    // ---- which group, rows and depth (same schedule as gemm.comp, tile BM)
    // tile coordinates in 32 bits (extents < 2^31): 64-bit values cost two registers each
    int g, i0, i1, c0, c1;
    if (kind == 0) {
        const int t = int(ti_all);
        int lo = 0, hi = int(G);
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            if (tab_get(table, mid, 5) <= t) lo = mid + 1; else hi = mid;
        }
        if (lo >= int(G)) return;
        g = lo;
        const int gs = tab_get(table, g, 0), ge = tab_get(table, g, 1);
        const int r0 = gs + (t - tab_get(table, g, 4)) * BM;
        if (r0 < gs || r0 >= ge) return;
        i0 = r0;
        i1 = min(r0 + BM, ge);
        c0 = 0;
        c1 = int(GP.depth);
    } else {
        // the t-th non-empty group (field 5 counts them; gemm_zero.comp zeroes the empty ones)
        const int t = int(ti_all / GP.nti);
        int lo = 0, hi = int(G);
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            if (tab_get(table, mid, 5) <= t) lo = mid + 1; else hi = mid;
        }
        if (lo >= int(G)) return;
        g = lo;
        i0 = int(ti_all % GP.nti) * BM;
        i1 = min(i0 + BM, int(GP.rows));
        c0 = tab_get(table, g, 0);
        c1 = tab_get(table, g, 1);
    }
    const int j0 = int(tj) * BN, j1 = min(j0 + BN, int(GP.cols));
    const int afmt = SC_AFMT, bfmt = SC_BFMT;

    // ---- operand geometry: A is (rows i, depth c), B is (depth c, cols j)
    Opnd A, B;
    A.es = QG_BF16 != 0 ? 2 : 1;
    B.es = A.es;
    A.kc = int(GP.a_c) == 1;
    B.kc = int(GP.b_c) == 1;
    A.base = uint64_t(GP.a_addr);
    B.base = uint64_t(GP.b_addr) + uint64_t(g * GP.b_g * B.es);
    A.ostride = A.kc ? GP.a_i : GP.a_c;
    B.ostride = B.kc ? GP.b_j : GP.b_c;
    // outer / contiguous tile origins and limits at depth kc: K-contiguous: (row, depth),
    // otherwise (depth, row)
#define A_O0(kc_) (A.kc ? i0 : (kc_))
#define A_X0(kc_) (A.kc ? (kc_) : i0)
#define A_OHI (A.kc ? i1 : c1)
#define A_XHI (A.kc ? c1 : i1)
#define B_O0(kc_) (B.kc ? j0 : (kc_))
#define B_X0(kc_) (B.kc ? (kc_) : j0)
#define B_OHI (B.kc ? j1 : c1)
#define B_XHI (B.kc ? c1 : j1)

#if !QG_PROMOTE
    // Lean tile: whole rows and cols, depth a multiple of CH, every 16-byte chunk aligned
    // (from the bases and strides, so the same on every lane). A workgroup-scope build
    // computes only these, with no element-wise path compiled in (its code size is what kept
    // it fast, see docs/backends-vulkan.md); the host then runs the subgroup-scope build with
    // skip_lean for the rest. Uniform, so returning here is safe (before any barrier).
    const bool lean = i1 - i0 == BM && j1 - j0 == BN && (c1 - c0) % CH == 0 &&
        ((A.base + uint64_t(A_O0(c0) * A.ostride + A_X0(c0)) * uint64_t(A.es)) & 15ul) == 0ul &&
        ((B.base + uint64_t(B_O0(c0) * B.ostride + B_X0(c0)) * uint64_t(B.es)) & 15ul) == 0ul &&
        ((A.ostride * A.es) & 15l) == 0l && ((B.ostride * B.es) & 15l) == 0l;
#if QG_WGSCOPE
    if (!lean) return;
#else
    if (lean && int(GP.skip_lean) != 0) return;
#endif
#endif

    // ---- scales
    int64_t mxa_base = 0, mxa_row0 = 0, mxa_c0 = 0, mxa_cp = 1, mxb_base = 0, mxb_c0 = 0, mxb_cp = 1;
    if (recipe == R_MX) {
        const int64_t ps = tab_get(table, g, 2), pe = tab_get(table, g, 3);
        if (kind == 0) {
            mxa_base = ps * GP.a_cols_pad; mxa_row0 = tab_get(table, g, 0); mxa_cp = GP.a_cols_pad;
            mxb_base = g * GP.b_per_exp; mxb_cp = GP.b_cols_pad;
        } else {
            mxa_base = ps * GP.a_rows_pad; mxa_c0 = c0; mxa_cp = pe - ps;
            mxb_base = ps * GP.b_rows_pad; mxb_c0 = c0; mxb_cp = pe - ps;
        }
    }
    const uint64_t SA = uint64_t(GP.sa_addr), SB = uint64_t(GP.sb_addr);
    const int64_t sSAg = GP.sa_g, sSAi = GP.sa_i, sSAc = GP.sa_c;
    const int64_t sSBg = GP.sb_g, sSBj = GP.sb_j, sSBc = GP.sb_c, sbjdiv = max(GP.sb_jdiv, 1l);
    const int64_t sastride = GP.sa_stride, sbstride = GP.sb_stride;
    const bool promote_blocks = QG_PROMOTE != 0;
    const int64_t bd = recipe == R_BLOCKWISE ? 128 : 32;  // depth of one scale block

    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const int wm = int(sg) / (QG_WARPS / 2), wn = int(sg) % (QG_WARPS / 2);  // rows wm*64, cols wn*16*NB
    const int flen = 8;
    int rc[8];
#if QG_PROMOTE
    load_idmap(sg, lane, rc);
#endif
#if QG_WGSCOPE
    WACC wacc0 = WACC(0.0), wacc1 = WACC(0.0);  // rows 0-63, 64-127 of the tile
#else
    ACC acc[NF];
    [[unroll]] for (int f = 0; f < NF; ++f) acc[f] = ACC(0.0);
#endif
#if QG_PROMOTE
    float tot[NF * 8];
    [[unroll]] for (int e = 0; e < NF * 8; ++e) tot[e] = 0.0;
#endif
    barrier();

    // ---- prologue: stage step 0
    const int nsteps = int((c1 - c0 + BK - 1) / BK);
    const uint64_t aadv = uint64_t(A.kc ? BK * A.es : BK * A.ostride * A.es);
    const uint64_t badv = uint64_t(B.kc ? BK * B.es : BK * B.ostride * B.es);
    // Lane chunk q covers run run0 + q*RS of the tile (runs: rows if K-contiguous, depth
    // steps otherwise) at offset part*CH along the contiguous dim; its address is the lane's
    // q = 0 address (advanced by one step per step) plus q * RS runs. Little per-lane state:
    // per-chunk arrays and structs end up in local memory on the driver.
    const int a_rl = A.kc ? BK / CH : BM / CH, b_rl = B.kc ? BK / CH : BM / CH;  // chunks per run
    const int a_run0 = tid / a_rl, a_part = tid % a_rl, b_run0 = tid / b_rl, b_part = tid % b_rl;
    const int a_rs = NT / a_rl, b_rs = NT / b_rl;
    const uint64_t a_qs = uint64_t(a_rs * A.ostride * A.es), b_qs = uint64_t(b_rs * B.ostride * B.es);
    uint64_t a_addr = A.base + uint64_t((A_O0(c0) + a_run0) * A.ostride + A_X0(c0) + a_part * CH) * uint64_t(A.es);
    uint64_t b_addr = B.base + uint64_t((B_O0(c0) + b_run0) * B.ostride + B_X0(c0) + b_part * CH) * uint64_t(B.es);
    const bool a_al = (a_addr & 15ul) == 0ul && (aadv & 15ul) == 0ul && (a_qs & 15ul) == 0ul;
    const bool b_al = (b_addr & 15ul) == 0ul && (badv & 15ul) == 0ul && (b_qs & 15ul) == 0ul;
#if NCH == 1
#define EACH_CHUNK(M) M(0)
#elif NCH == 2
#define EACH_CHUNK(M) M(0) M(1)
#else
#define EACH_CHUNK(M) M(0) M(1) M(2) M(3)
#endif
// all of A's chunks, then all of B's
#define FOR_CHUNKS(M) EACH_CHUNK(M##_A) EACH_CHUNK(M##_B)
#if QG_SETS == 2
#define CHUNK_DECL_A(q) uvec4 pa##q, xa##q;
#define CHUNK_DECL_B(q) uvec4 pb##q, xb##q;
#else
#define CHUNK_DECL_A(q) uvec4 pa##q;
#define CHUNK_DECL_B(q) uvec4 pb##q;
#endif
    // kf: depth of the step being fetched into dst
#if QG_WGSCOPE
    // lean tiles only: a chunk is wholly in range or wholly past the depth (zero)
#define CHUNK_FETCH_INTO_A(q, dst)                                                              \
    {                                                                                           \
        const int ao = A_O0(kf) + a_run0 + q * a_rs, ax = A_X0(kf) + a_part * CH;             \
        dst = ao < A_OHI && ax + CH <= A_XHI ? QV16(a_addr + uint64_t(q) * a_qs).v : uvec4(0);  \
    }
#define CHUNK_FETCH_INTO_B(q, dst)                                                              \
    {                                                                                           \
        const int bo = B_O0(kf) + b_run0 + q * b_rs, bx = B_X0(kf) + b_part * CH;             \
        dst = bo < B_OHI && bx + CH <= B_XHI ? QV16(b_addr + uint64_t(q) * b_qs).v : uvec4(0);  \
    }
#else
#define CHUNK_FETCH_INTO_A(q, dst)                                                              \
    {                                                                                           \
        const int ao = A_O0(kf) + a_run0 + q * a_rs, ax = A_X0(kf) + a_part * CH;             \
        if (a_al && ao < A_OHI && ax + CH <= A_XHI) dst = QV16(a_addr + uint64_t(q) * a_qs).v;  \
        else dst = load_chunk(A, q, A_O0(kf), A_X0(kf), A_OHI, A_XHI);                          \
    }
#define CHUNK_FETCH_INTO_B(q, dst)                                                              \
    {                                                                                           \
        const int bo = B_O0(kf) + b_run0 + q * b_rs, bx = B_X0(kf) + b_part * CH;             \
        if (b_al && bo < B_OHI && bx + CH <= B_XHI) dst = QV16(b_addr + uint64_t(q) * b_qs).v;  \
        else dst = load_chunk(B, q, B_O0(kf), B_X0(kf), B_OHI, B_XHI);                          \
    }
#endif
    // SET_A / SET_B name the register set a fetch fills and a store empties: pa/pb, or
    // (QG_SETS 2, odd steps) xa/xb
#define SET_A(q) pa##q
#define SET_B(q) pb##q
#define CHUNK_FETCH_A(q) CHUNK_FETCH_INTO_A(q, SET_A(q))
#define CHUNK_FETCH_B(q) CHUNK_FETCH_INTO_B(q, SET_B(q))
#define CHUNK_STORE_A(q) store_chunk(0, cur, A.kc, q, SET_A(q), afmt);
#define CHUNK_STORE_B(q) store_chunk(1, cur, B.kc, q, SET_B(q), bfmt);
    FOR_CHUNKS(CHUNK_DECL)
    float psa = 1.0, psb = 1.0;
    if (nsteps > 0) {
        const int kf = c0;
        FOR_CHUNKS(CHUNK_FETCH)
        a_addr += aadv;
        b_addr += badv;
    }

#if QG_SETS == 2
#undef SET_A
#undef SET_B
#define SET_A(q) xa##q
#define SET_B(q) xb##q
    if (nsteps > 1) {  // step 1 into the odd set
        const int kf = c0 + BK;
        FOR_CHUNKS(CHUNK_FETCH)
        a_addr += aadv;
        b_addr += badv;
    }
    for (int s0 = 0; s0 <= nsteps; s0 += 2) {
#undef SET_A
#undef SET_B
#define SET_A(q) pa##q
#define SET_B(q) pb##q
        {
            const int s = s0, cur = 0;
#include "gemm_coop_step.glsl"
        }
#undef SET_A
#undef SET_B
#define SET_A(q) xa##q
#define SET_B(q) xb##q
        {
            const int s = s0 + 1, cur = 1;
#include "gemm_coop_step.glsl"
        }
    }
#else
    for (int s = 0; s <= nsteps; ++s) {
        const int cur = s & 1;
#include "gemm_coop_step.glsl"
    }
#endif

    // ---- epilogue: per subgroup, one 16-row strip (2 fragments) at a time through its own
    // part of the (now free) tile memory, then 16 contiguous outputs per lane
    barrier();
#if !QG_WGSCOPE && !QG_PROMOTE
    load_idmap(sg, lane, rc);
#endif
    const int odt = int(GP.o_dt);
    const int64_t sOi = GP.o_i, sOj = GP.o_j;
    const int oes = odt == DT_BF16 ? 2 : 4;
    const uint64_t OUT = uint64_t(GP.o_addr) + uint64_t(g * GP.o_g * oes);
#if QG_WGSCOPE
    // each 64x128 accumulator through the (now free) tile memory, then 32 outputs per lane
    [[unroll]] for (int half_ = 0; half_ < 2; ++half_) {
        if (half_ == 0) coopMatStoreNV(wacc0, tiles, 0u, 32u, false);
        else coopMatStoreNV(wacc1, tiles, 0u, 32u, false);
        barrier();
        [[unroll]] for (int piece = 0; piece < 2; ++piece) {
            const int r = tid / 4, cbase = (tid % 4) * 32 + piece * 16;
            const int64_t gi = i0 + half_ * 64 + r, gj0 = j0 + cbase;
            if (gi < i1 && gj0 < j1) {
                float v[16];
                [[unroll]] for (int k = 0; k < 4; ++k) {
                    const uvec4 w = tiles[uint(r * 32 + cbase / 4 + k)];
                    v[4 * k] = uintBitsToFloat(w.x); v[4 * k + 1] = uintBitsToFloat(w.y);
                    v[4 * k + 2] = uintBitsToFloat(w.z); v[4 * k + 3] = uintBitsToFloat(w.w);
                }
                EPI_STORE16
            }
        }
        barrier();
    }
#else
    const uint strip = sg * (64u * NB);  // 16 rows x 16*NB f32 per subgroup
    [[unroll]] for (int fm = 0; fm < 4; ++fm) {
        [[unroll]] for (int fn = 0; fn < NB; ++fn) {
            const int f = fm * NB + fn;
            [[unroll]] for (int i = 0; i < flen; ++i) {
#if QG_PROMOTE
                const float v = tot[f * 8 + i];
#else
                const float v = acc[f][i];
#endif
                const int r = rc[i] / 16, cc = fn * 16 + rc[i] % 16;
                tiles[strip + uint(r * 4 * NB + cc / 4)][cc % 4] = floatBitsToUint(v);
            }
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        // lane: row lane/2, 16-column pieces (lane%2) + 2p
        [[unroll]] for (int piece = 0; piece < NB / 2; ++piece) {
        const int r = int(lane) / 2, cbase = (int(lane) % 2 + 2 * piece) * 16;
        const int64_t gi = i0 + wm * 64 + fm * 16 + r, gj0 = j0 + wn * 16 * NB + cbase;
        if (gi < i1 && gj0 < j1) {
            float v[16];
            [[unroll]] for (int k = 0; k < 4; ++k) {
                const uvec4 w = tiles[strip + uint(r * 4 * NB + cbase / 4 + k)];
                v[4 * k] = uintBitsToFloat(w.x); v[4 * k + 1] = uintBitsToFloat(w.y);
                v[4 * k + 2] = uintBitsToFloat(w.z); v[4 * k + 3] = uintBitsToFloat(w.w);
            }
            EPI_STORE16
        }
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
    }
#endif
}
