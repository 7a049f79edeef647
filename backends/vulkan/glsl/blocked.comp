#version 460
// blocked.comp — ops-spec §4: scales to the blocked ("32x4x4") layout and back, 2D, 3D,
// M-groups and K-groups, with the group geometry of backends/cpu/cpu_layout.c:
//  M-groups: group g is a blocked matrix of 128*ceil(size_g/128) rows at padded row
//            start_g of one matrix of width cols_pad (table fields 2/3, rows);
//  K-groups: group g is a rows_pad x 4*ceil(size_g/4) blocked matrix at byte
//            start_g * rows_pad (table fields 2/3, scale columns; fields 0/1 in elements).
// To-blocked runs one lane per 4 blocked bytes (one row's 4 columns of a tile: one group
// lookup, one 4-byte store where aligned), so padding bytes are written (zero) too;
// from-blocked one lane per plain scale (scales no group owns come back 0). Direction 2
// (qgmm_quantize_mxfp8_grouped, before its cast writes the scales) writes 0 to the bytes
// that hold no scale and leaves the others alone.
#include "params.h"
#include "common.glsl"
#include "blocked_params.h"
#include "layout.glsl"
layout(local_size_x = 256) in;

#define V_2D 0
#define V_3D 1
#define V_MG 2
#define V_KG 3

uint plain_at(int64_t e, int64_t r, int64_t c)
{
    return ld_u8(uint64_t(BLP.plain), e * BLP.pe + r * BLP.pr + c * BLP.pc);
}

// The blocked bytes off .. off + 3 (off a multiple of 4: columns c .. c + 3 of one row of
// one tile), packed little-endian when `read`: the source row and first column are found
// once; bit k of `home` says whether byte off + k holds a scale.
uint blocked_word(int var, uint64_t table, int64_t off, bool read, out uint home)
{
    const int64_t R = BLP.r, C = BLP.c, G = BLP.g;
    const int64_t colspad = BLP.colspad, rowspad = BLP.rowspad;
    int64_t e = 0, r = -1, c = 0, lim = C; // source (e, r, c .. c + 3), columns below lim
    if (var == V_2D || var == V_3D) {
        e = off / BLP.perexp;
        blocked_coords(off % BLP.perexp, colspad, r, c);
        if (r >= R) r = -1;
    } else if (var == V_MG) {
        int64_t pr;
        blocked_coords(off, colspad, pr, c);
        const int64_t g = tab_group_of(table, G, 3, pr);
        if (g >= 0) {
            const int64_t local = pr - tab_get(table, g, 2);
            const int64_t r0 = tab_get(table, g, 0), size = tab_get(table, g, 1) - r0;
            if (local >= 0 && local < size) r = r0 + local;
        }
    } else {
        const int64_t u = off / rowspad;
        const int64_t g = tab_group_of(table, G, 3, u);
        if (g >= 0) {
            const int64_t ps = tab_get(table, g, 2), pe = tab_get(table, g, 3);
            const int64_t c0 = tab_get(table, g, 0) / 32;
            int64_t br, cl;
            blocked_coords(off - ps * rowspad, pe - ps, br, cl);
            if (u >= ps && br < R) {
                r = br;
                c = c0 + cl;
                lim = tab_get(table, g, 1) / 32;
            }
        }
    }
    uint w = 0u;
    home = 0u;
    if (r >= 0)
        for (int k = 0; k < 4; ++k)
            if (c + k < lim) {
                home |= 1u << k;
                if (read) w |= plain_at(e, r, c + k) << (8 * k);
            }
    return w;
}

void main()
{
    const int64_t n = wg_linear() * 256 + int64_t(gl_LocalInvocationID.x);
    if (n >= BLP.n) return;
    const int var = int(BLP.var);
    const uint64_t table = uint64_t(BLP.table);
    if ((var == V_MG || var == V_KG) && tab_bad(table)) return;
    const int64_t R = BLP.r, C = BLP.c, G = BLP.g;
    const int64_t colspad = BLP.colspad, rowspad = BLP.rowspad;
    const uint64_t B = uint64_t(BLP.blk);
    const int64_t bs = BLP.bstride;

    if (int(BLP.dir) == 2) { // n enumerates 4-byte words: zero those bytes that hold no scale
        const int64_t off = n * 4, len = BLP.blen;
        uint home;
        blocked_word(var, table, off, false, home);
        for (int k = 0; k < 4; ++k)
            if (off + k < len && ((home >> k) & 1u) == 0u) st_u8(B, (off + k) * bs, 0u);
        return;
    }
    if (int(BLP.dir) == 0) { // n enumerates 4-byte words of the blocked buffer
        const int64_t off = n * 4, len = BLP.blen;
        uint home;
        const uint w = blocked_word(var, table, off, true, home);
        if (int(BLP.words) != 0 && off + 4 <= len) {
            st_u32(B, n, w);
        } else {
            for (int k = 0; k < 4; ++k)
                if (off + k < len) st_u8(B, (off + k) * bs, (w >> (8 * k)) & 0xFFu);
        }
        return;
    }
    // blocked -> plain: n enumerates (e, r, c)
    const int64_t c = n % C, r = (n / C) % R, e = n / (C * R);
    int64_t off = -1;
    if (var == V_2D || var == V_3D) {
        off = e * BLP.perexp + blocked_offset(r, c, colspad);
    } else if (var == V_MG) {
        const int64_t g = tab_group_of(table, G, 1, r);
        if (g >= 0) off = blocked_offset(tab_get(table, g, 2) + (r - tab_get(table, g, 0)), c, colspad);
    } else {
        const int64_t g = tab_group_of(table, G, 1, c * 32);
        if (g >= 0) {
            const int64_t ps = tab_get(table, g, 2), pe = tab_get(table, g, 3);
            off = ps * rowspad + blocked_offset(r, c - tab_get(table, g, 0) / 32, pe - ps);
        }
    }
    uint v = 0u;
    if (off >= 0 && off < BLP.blen) v = ld_u8(B, off * bs);
    st_u8(uint64_t(BLP.plain), e * BLP.pe + r * BLP.pr + c * BLP.pc, v);
}
