/*
 * qgmm_layout_maps.h — index maps of ops-spec §4 (blocked scale layout) and §5 (token
 * group padding), and the device-side offset checks every grouped op shares.
 */
#ifndef QGMM_LAYOUT_MAPS_H
#define QGMM_LAYOUT_MAPS_H

#include "qgmm_hd.h"

/* Padded extents of an R x C scale matrix in the blocked layout. */
QGMM_HD int64_t qgmm_blocked_rows(int64_t r) { return qgmm_round_up_i64(r, 128); }
QGMM_HD int64_t qgmm_blocked_cols(int64_t c) { return qgmm_round_up_i64(c, 4); }

/* Byte offset of scale (r, c) inside one blocked matrix whose padded width is cols_pad
 * (a multiple of 4): 128x4 tiles row-major over tiles, "32x4x4" interleave inside. */
QGMM_HD int64_t qgmm_blocked_offset(int64_t r, int64_t c, int64_t cols_pad)
{
    const int64_t tile = (r / 128) * (cols_pad / 4) + (c / 4);
    const int64_t inner = (r % 32) * 16 + ((r % 128) / 32) * 4 + (c % 4);
    return tile * 512 + inner;
}

/* The inverse of qgmm_blocked_offset: (r, c) of byte `off`. */
QGMM_HD void qgmm_blocked_coords(int64_t off, int64_t cols_pad, int64_t *r, int64_t *c)
{
    const int64_t tile = off / 512, inner = off % 512;
    const int64_t tiles_per_row = cols_pad / 4;
    const int64_t tr = tile / tiles_per_row, tc = tile % tiles_per_row;
    *r = tr * 128 + ((inner % 16) / 4) * 32 + inner / 16;
    *c = tc * 4 + inner % 4;
}

/* §5 padding. */
QGMM_HD int64_t qgmm_padded_size(int64_t size, int64_t align) { return qgmm_round_up_i64(size, align); }

/* Upper bound of padded rows, known without reading offsets: A*ceil((T + G*A)/A). */
QGMM_HD int64_t qgmm_padded_bound(int64_t tokens, int64_t groups, int64_t align)
{
    return qgmm_round_up_i64(tokens + groups * align, align);
}

/* Offsets are valid when 0 <= offs[0] <= offs[1] <= ... <= offs[G-1] <= extent and, when
 * multiple > 1, every group size is a multiple of it. Returns 1 when valid. */
QGMM_HD int qgmm_offsets_valid(const int32_t *offs, int64_t groups, int64_t extent, int64_t multiple)
{
    int64_t prev = 0;
    for (int64_t g = 0; g < groups; ++g) {
        const int64_t o = offs[g];
        if (o < prev || o > extent) return 0;
        if (multiple > 1 && ((o - prev) % multiple) != 0) return 0;
        prev = o;
    }
    return 1;
}

/* The group that owns index i (offs valid, i < offs[G-1]); binary search over end
 * offsets. Returns -1 when i is past the last group. */
QGMM_HD int64_t qgmm_group_of(const int32_t *offs, int64_t groups, int64_t i)
{
    int64_t lo = 0, hi = groups;
    while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        if ((int64_t)offs[mid] <= i) lo = mid + 1; else hi = mid;
    }
    return lo < groups ? lo : -1;
}

#endif /* QGMM_LAYOUT_MAPS_H */
