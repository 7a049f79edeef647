#version 460
// pad.comp — ops-spec §5 token-group padding (mode 0), its inverse gather (mode 1), and
// DeepGEMM's per-row group ids (mode 2), one lane per output element, rules of
// backends/cpu/cpu_layout.c. Group bounds come from the table offs_prep.comp wrote.
#include "params.h"
#include "common.glsl"
#include "pad_params.h"
#include "layout.glsl"
layout(local_size_x = 256) in;
// Vector path (host-checked: rows contiguous, row starts 16-byte aligned): the output is
// viewed as one flat sequence of 16-byte units (rows x U) and a workgroup moves PDP.span
// consecutive units of it, 8 per lane, all loads before the stores, so short rows do not
// leave lanes idle and every lane keeps 128 bytes in flight. The source row of each output
// row the workgroup touches (at most 256, host-checked) is found once, by one lane, into
// shared memory; unit addresses are 32-bit offsets from 64-bit row bases.
shared int sh_src[256];

int64_t source_row(uint64_t table, int mode, int64_t G, int64_t row)
{
    if (mode == 0) {
        const int64_t g = tab_group_of(table, G, 3, row);
        if (g >= 0) {
            const int64_t local = row - tab_get(table, g, 2);
            const int64_t r0 = tab_get(table, g, 0);
            if (local >= 0 && local < tab_get(table, g, 1) - r0) return r0 + local;
        }
        return -1;
    }
    const int64_t g = tab_group_of(table, G, 1, row);
    return g >= 0 ? tab_get(table, g, 2) + (row - tab_get(table, g, 0)) : -1;
}

void main_vec(int64_t U)
{
    const int64_t span = PDP.span, total = PDP.rows * U;
    const int64_t f0 = wg_linear() * span;
    if (f0 >= total) return;
    const uint64_t table = uint64_t(PDP.table);
    if (tab_bad(table)) return;
    const int tid = int(gl_LocalInvocationID.x);
    const int64_t row0 = f0 / U;
    const uint u0 = uint(f0 - row0 * U), n = uint(min(span, total - f0)), uu = uint(U);
    const int nrows = int((u0 + n - 1u) / uu) + 1;
    if (tid < nrows) sh_src[tid] = int(source_row(table, int(PDP.mode), PDP.g, row0 + tid));
    barrier();
    const int64_t es = PDP.esize, xs = PDP.xs0 * es, os = PDP.ys0 * es;
    const uint64_t X = uint64_t(PDP.x), Y = uint64_t(PDP.y);
    uvec4 v[8];
    for (int k = 0; k < 8; ++k) {
        const uint l = uint(tid + 256 * k);
        v[k] = uvec4(0u);
        if (l < n) {
            const uint f = u0 + l, rl = f / uu;
            const int src = sh_src[rl];
            if (src >= 0) v[k] = QV16(X + uint64_t(int64_t(src) * xs) + uint64_t((f - rl * uu) * 16u)).v;
        }
    }
    for (int k = 0; k < 8; ++k) {
        const uint l = uint(tid + 256 * k);
        if (l < n) {
            const uint f = u0 + l, rl = f / uu;
            QV16(Y + uint64_t((row0 + int64_t(rl)) * os) + uint64_t((f - rl * uu) * 16u)).v = v[k];
        }
    }
}

void main()
{
    const int64_t U = PDP.vec; // 16-byte units per row on the vector path, else 0
    if (U > 0) { main_vec(U); return; }
    const int64_t n = wg_linear() * 256 + int64_t(gl_LocalInvocationID.x);
    const int64_t D = PDP.d;
    if (n >= PDP.rows * D) return;
    const uint64_t table = uint64_t(PDP.table);
    if (tab_bad(table)) return;
    const int mode = int(PDP.mode);
    const int64_t G = PDP.g;
    const int64_t row = n / D, d = n % D;
    if (mode == 2) {
        int64_t id;
        if (int(PDP.padded) != 0) {
            const int64_t g = tab_group_of(table, G, 3, row);
            id = (g >= 0 && row - tab_get(table, g, 2) < tab_get(table, g, 1) - tab_get(table, g, 0)) ? g : -1;
        } else {
            id = tab_group_of(table, G, 1, row);
        }
        st_i32(uint64_t(PDP.y), row * PDP.ys0, int(id));
        return;
    }
    int64_t src = -1;
    if (mode == 0) {
        const int64_t g = tab_group_of(table, G, 3, row);
        if (g >= 0) {
            const int64_t local = row - tab_get(table, g, 2);
            const int64_t r0 = tab_get(table, g, 0);
            if (local >= 0 && local < tab_get(table, g, 1) - r0) src = r0 + local;
        }
    } else {
        const int64_t g = tab_group_of(table, G, 1, row);
        if (g >= 0) src = tab_get(table, g, 2) + (row - tab_get(table, g, 0));
    }
    const int es = int(PDP.esize);
    const uint v = src >= 0 ? ld_raw(uint64_t(PDP.x), src * PDP.xs0 + d * PDP.xs1, es) : 0u;
    st_raw(uint64_t(PDP.y), row * PDP.ys0 + d * PDP.ys1, es, v);
}
