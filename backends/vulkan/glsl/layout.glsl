// layout.glsl — GLSL mirror of kernels/qgmm_layout_maps.h (same rules, line by line).

// qgmm_blocked_offset
int64_t blocked_offset(int64_t r, int64_t c, int64_t cols_pad)
{
    const int64_t tile = (r / 128) * (cols_pad / 4) + (c / 4);
    const int64_t inner = (r % 32) * 16 + ((r % 128) / 32) * 4 + (c % 4);
    return tile * 512 + inner;
}

// blocked_offset in 32-bit arithmetic, for callers whose host checked that one expert's
// blocked scales (and so every offset) stay below 2^31 bytes (64-bit division and modulo
// cost the shader several times the 32-bit ones).
int blocked_offset32(int r, int c, int cols_pad)
{
    const int tile = (r >> 7) * (cols_pad >> 2) + (c >> 2);
    const int inner = (r & 31) * 16 + ((r & 127) >> 5) * 4 + (c & 3);
    return tile * 512 + inner;
}

// qgmm_blocked_coords
void blocked_coords(int64_t off, int64_t cols_pad, out int64_t r, out int64_t c)
{
    const int64_t tile = off / 512, inner = off % 512;
    const int64_t tiles_per_row = cols_pad / 4;
    const int64_t tr = tile / tiles_per_row, tc = tile % tiles_per_row;
    r = tr * 128 + ((inner % 16) / 4) * 32 + inner / 16;
    c = tc * 4 + inner % 4;
}

// Group table (offs_prep.comp): record fields.
int tab_get(uint64_t table, int64_t g, int field) { return ld_i32(table, TAB_HEADER + g * TAB_STRIDE + field); }
bool tab_bad(uint64_t table) { return ld_u32(table, 0) != 0u; }

// qgmm_group_of over the table's field `field` (end offsets, ascending): the first g with
// end > i, or -1 past the last group.
int64_t tab_group_of(uint64_t table, int64_t G, int field, int64_t i)
{
    int64_t lo = 0, hi = G;
    while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        if (int64_t(tab_get(table, mid, field)) <= i) lo = mid + 1; else hi = mid;
    }
    return lo < G ? lo : -1;
}
