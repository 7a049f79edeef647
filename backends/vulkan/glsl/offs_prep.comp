#version 460
// offs_prep.comp — reads device group offsets once per op, checks them (the rules of
// qgmm_offsets_valid and of the CPU reference's per-op checks), and writes the group
// table the op's main kernel reads: a "bad" flag word, then per group start, end,
// padded start, padded end, tiles before, tiles through the group. Bad offsets raise the context status word and
// set the flag, so the main kernel writes nothing.
// One workgroup: each lane walks a run of ceil(G / 256) consecutive groups twice (checks
// and sums, then the records) and a workgroup scan of the per-lane sums gives each run its
// padded start and tiles before it, exact in 64-bit integers. No lane walks every group:
// llvmpipe (lavapipe) stops an invocation after 65535 iterations of all its loops together
// (the API allows 65536 groups), and one lane is slow on any device at that count.
#include "params.h"
#include "common.glsl"
#include "offs_params.h"
layout(local_size_x = 256) in;
shared int64_t sh_pad[256], sh_tiles[256];
shared uint sh_bad;

void main()
{
    const uint64_t offs = uint64_t(OPP.offs), table = uint64_t(OPP.table);
    const int64_t G = OPP.g, extent = OPP.extent, multiple = OPP.multiple;
    const int64_t align = OPP.align, tile = OPP.tile, dv = max(OPP.div, 1l);
    const int64_t cap = OPP.padcap - 1; // padcap holds cap + 1; 0 = no cap
    const uint64_t po = uint64_t(OPP.padoffs);
    const int lane = int(gl_LocalInvocationID.x);
    const int64_t run = (G + 255) / 256;
    const int64_t g0 = min(G, int64_t(lane) * run), g1 = min(G, g0 + run);

    // pass 1: the run's checks, its padded rows and its tiles
    bool bad = false;
    int64_t prev = g0 > 0 ? ld_i32(offs, g0 - 1) : 0, pprev = (po != 0ul && g0 > 0) ? ld_i32(po, g0 - 1) : 0;
    int64_t pad_sum = 0, tile_sum = 0;
    for (int64_t g = g0; g < g1; ++g) {
        const int64_t o = ld_i32(offs, g);
        if (o < prev || o > extent) bad = true;
        if (multiple > 1 && ((o - prev) % multiple) != 0) bad = true;
        if (po != 0ul) { // row ids in padded space: padded_offs monotonic, within cap, big enough
            const int64_t p = ld_i32(po, g);
            if (p < pprev || p > cap || p - pprev < o - prev) bad = true;
            pprev = p;
        }
        const int64_t size = (o - prev) / dv;
        pad_sum += align > 1 ? ((size + align - 1) / align) * align : size;
        if (tile > 0) tile_sum += (size + tile - 1) / tile;
        prev = o;
    }

    // inclusive scan of the runs' sums (Hillis-Steele over the 256 lanes)
    sh_pad[lane] = pad_sum;
    sh_tiles[lane] = tile_sum;
    if (lane == 0) sh_bad = 0u;
    barrier();
    if (bad) atomicOr(sh_bad, 1u);
    for (int d = 1; d < 256; d <<= 1) {
        const int64_t a = lane >= d ? sh_pad[lane - d] : 0l, b = lane >= d ? sh_tiles[lane - d] : 0l;
        barrier();
        sh_pad[lane] += a;
        sh_tiles[lane] += b;
        barrier();
    }
    if (sh_bad != 0u || (po == 0ul && cap >= 0 && sh_pad[255] > cap)) { // uniform
        if (lane == 0) {
            st_u32(table, 0, 1u);
            atomicOr(QU32(uint64_t(OPP.status)).v, 1u);
        }
        return;
    }
    if (lane == 0) st_u32(table, 0, 0u);

    // pass 2: the run's records, from the exclusive prefix of the scan
    int64_t pstart = lane > 0 ? sh_pad[lane - 1] : 0l, tiles = lane > 0 ? sh_tiles[lane - 1] : 0l;
    prev = g0 > 0 ? ld_i32(offs, g0 - 1) : 0;
    for (int64_t g = g0; g < g1; ++g) {
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
        if (uint64_t(OPP.out0) != 0ul) st_i32(uint64_t(OPP.out0), g, int(ps));
        if (uint64_t(OPP.out1) != 0ul) st_i32(uint64_t(OPP.out1), g, int(pe));
        if (tile > 0) tiles += (size + tile - 1) / tile;
        st_i32(table, t + 5, int(tiles));
        pstart = pe;
        prev = o;
    }
}
