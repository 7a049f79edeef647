#version 460
// gemm_zero.comp — the K-grouped GEMM's empty groups: out[g] = 0 for every g that offs
// gives no rows, so that gemm.comp / gemm_coopmat.comp take workgroups for the non-empty
// groups only (how many there are is known on the device alone). A workgroup zeroes
// GZ_CHUNK elements of one group's (rows x cols) output; those of non-empty groups exit
// after one table read. No barriers: llvmpipe runs a workgroup without them as one loop,
// with them as a coroutine per lane, and tens of thousands of groups mean as many
// workgroups.
#include "params.h"
#include "common.glsl"
#include "gemm_params.h"
#include "layout.glsl"
layout(local_size_x = 256) in;
void main()
{
    const uint64_t table = uint64_t(GP.table);
    if (tab_bad(table)) return;
    const int64_t wid = wg_linear(), per = GP.zchunks;
    const int64_t g = wid / per, ch = wid % per;
    if (g >= GP.groups || tab_get(table, g, 1) != tab_get(table, g, 0)) return;
    const int64_t cols = GP.cols, n = GP.rows * cols;
    const uint64_t dst = uint64_t(GP.o_addr);
    const int64_t og = g * GP.o_g, oi = GP.o_i, oj = GP.o_j;
    const bool f32 = int(GP.o_dt) == DT_F32;
    for (int k = 0; k < GZ_CHUNK / 256; ++k) {
        const int64_t e = ch * GZ_CHUNK + k * 256 + int64_t(gl_LocalInvocationID.x);
        if (e >= n) return;
        const int64_t at = og + (e / cols) * oi + (e % cols) * oj;
        if (f32) st_u32(dst, at, 0u); else st_u16(dst, at, 0u);
    }
}
