#version 460
// pad.comp — ops-spec §5 token-group padding (mode 0), its inverse gather (mode 1), and
// DeepGEMM's per-row group ids (mode 2), one lane per output element, rules of
// backends/cpu/cpu_layout.c. Group bounds come from the table offs_prep.comp wrote.
#include "params.h"
#include "common.glsl"
#include "layout.glsl"
layout(local_size_x = 256) in;
// Vector path (host-checked: rows contiguous, row starts 16-byte aligned): a workgroup
// owns 1024 16-byte units of one output row, finds the row's source once, and keeps four
// 16-byte loads in flight per lane.
void main_vec(int64_t U)
{
    const int64_t chunks = (U + 1023) / 1024;
    const int64_t lin = wg_linear();
    if (lin >= P(PD_ROWS) * chunks) return;
    const uint64_t table = PA(PD_TABLE);
    if (tab_bad(table)) return;
    const int64_t row = lin / chunks, u0 = (lin % chunks) * 1024 + int64_t(gl_LocalInvocationID.x);
    const int mode = PI(PD_MODE);
    const int64_t G = P(PD_G);
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
    const int64_t es = P(PD_ESIZE);
    const uint64_t xrow = PA(PD_X) + uint64_t(src * P(PD_XS0) * es), orow = PA(PD_OUT) + uint64_t(row * P(PD_OS0) * es);
    uvec4 v[4];
    for (int k = 0; k < 4; ++k) {
        const int64_t u = u0 + 256 * k;
        v[k] = (src >= 0 && u < U) ? QV16(xrow + uint64_t(u * 16)).v : uvec4(0u);
    }
    for (int k = 0; k < 4; ++k) {
        const int64_t u = u0 + 256 * k;
        if (u < U) QV16(orow + uint64_t(u * 16)).v = v[k];
    }
}

void main()
{
    const int64_t U = P(PD_VEC); // 16-byte units per row on the vector path, else 0
    if (U > 0) { main_vec(U); return; }
    const int64_t n = wg_linear() * 256 + int64_t(gl_LocalInvocationID.x);
    const int64_t D = P(PD_D);
    if (n >= P(PD_ROWS) * D) return;
    const uint64_t table = PA(PD_TABLE);
    if (tab_bad(table)) return;
    const int mode = PI(PD_MODE);
    const int64_t G = P(PD_G);
    const int64_t row = n / D, d = n % D;
    if (mode == 2) {
        int64_t id;
        if (PI(PD_PADDED) != 0) {
            const int64_t g = tab_group_of(table, G, 3, row);
            id = (g >= 0 && row - tab_get(table, g, 2) < tab_get(table, g, 1) - tab_get(table, g, 0)) ? g : -1;
        } else {
            id = tab_group_of(table, G, 1, row);
        }
        st_i32(PA(PD_OUT), row * P(PD_OS0), int(id));
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
    const int es = PI(PD_ESIZE);
    const uint v = src >= 0 ? ld_raw(PA(PD_X), src * P(PD_XS0) + d * P(PD_XS1), es) : 0u;
    st_raw(PA(PD_OUT), row * P(PD_OS0) + d * P(PD_OS1), es, v);
}
