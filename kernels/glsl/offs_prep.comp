#version 460
// offs_prep.comp — reads device group offsets once per op, checks them (the rules of
// qgmm_offsets_valid and of the CPU reference's per-op checks), and writes the group
// table the op's main kernel reads: a "bad" flag word, then per group start, end,
// padded start, padded end, tiles before, tiles through the group. Bad offsets raise the context status word and
// set the flag, so the main kernel writes nothing. One lane walks the groups: G is small
// (experts, <= a few hundred) and a serial walk keeps the prefix sums trivially exact.
#include "params.h"
#include "common.glsl"
layout(local_size_x = 1) in;
void main()
{
    const uint64_t offs = PA(OP_OFFS), table = PA(OP_TABLE);
    const int64_t G = P(OP_G), extent = P(OP_EXTENT), multiple = P(OP_MULTIPLE);
    const int64_t align = P(OP_ALIGN), tile = P(OP_TILE), dv = max(P(OP_DIV), 1l);
    const int64_t cap = P(OP_PADCAP) - 1; // slot holds cap + 1; 0 = no cap
    const uint64_t po = PA(OP_PADOFFS);
    bool bad = false;
    int64_t prev = 0, pprev = 0, padded_total = 0;
    for (int64_t g = 0; g < G && !bad; ++g) {
        const int64_t o = ld_i32(offs, g);
        if (o < prev || o > extent) bad = true;
        if (multiple > 1 && ((o - prev) % multiple) != 0) bad = true;
        if (po != 0ul) { // row ids in padded space: padded_offs monotonic, within cap, big enough
            const int64_t p = ld_i32(po, g);
            if (p < pprev || p > cap || p - pprev < o - prev) bad = true;
            pprev = p;
        }
        padded_total += align > 1 ? (((o - prev) / dv + align - 1) / align) * align : (o - prev) / dv;
        prev = o;
    }
    if (!bad && po == 0ul && cap >= 0 && padded_total > cap) bad = true;
    if (bad) {
        st_u32(table, 0, 1u);
        atomicOr(QU32(PA(OP_STATUS)).v, 1u);
        return;
    }
    st_u32(table, 0, 0u);
    int64_t pstart = 0, tiles = 0;
    prev = 0;
    for (int64_t g = 0; g < G; ++g) {
        const int64_t o = ld_i32(offs, g);
        const int64_t size = (o - prev) / dv;
        int64_t ps = pstart, pe;
        if (po != 0ul) {
            ps = g == 0 ? 0 : ld_i32(po, g - 1);
            pe = ld_i32(po, g);
        } else {
            pe = pstart + (align > 1 ? ((size + align - 1) / align) * align : size);
        }
        const int64_t t = TAB_HEADER + g * TAB_STRIDE;
        st_i32(table, t + 0, int(prev));
        st_i32(table, t + 1, int(o));
        st_i32(table, t + 2, int(ps));
        st_i32(table, t + 3, int(pe));
        st_i32(table, t + 4, int(tiles));
        if (PA(OP_OUT0) != 0ul) st_i32(PA(OP_OUT0), g, int(ps));
        if (PA(OP_OUT1) != 0ul) st_i32(PA(OP_OUT1), g, int(pe));
        if (tile > 0) tiles += (size + tile - 1) / tile;
        st_i32(table, t + 5, int(tiles));
        pstart = pe;
        prev = o;
    }
}
