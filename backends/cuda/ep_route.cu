/*
 * ep_route.cu — the expert-parallel routing ops on CUDA (docs/ep.md, "Backend contract"):
 * route, receive layout, pack and unpack of wire rows, byte for byte the CPU reference
 * (backends/cpu/cpu_ep.c). Every kernel reads the plan's `state` word first and writes
 * nothing when the step is refused; refusals raise the status word on the device.
 *
 * route: a one-block histogram of the (token, slot) rows by (peer, local expert) with the
 * checks, then one block per bucket walking the rows in token, slot order with a block
 * scan, so each row's wire slot is the CPU's stable order (no arrival-order atomics).
 */
#include "cuda_internal.h"
#include "cuda_ep.h"
#include "qgmm_fp8_codec.h"
#include "qgmm_layout_maps.h"

#include <string.h>

namespace {

constexpr int kThreads = 256;

struct ep_k {
    int nranks, rank, top_k, alignment;
    int64_t E, L, S, T, cap, max_recv;
    int64_t lo, wn; /* the wire window: rows [lo, lo + wn) of every slot */
    int own;        /* own_direct: the row kernels walk the peers' slots only */
    int64_t slots;  /* the slots they walk */
    const int32_t *rank_of, *local_of;
    int32_t *pos, *src, *scnt, *rcnt, *srows, *rrows, *dst, *offs, *state;
    uint32_t *status;
};

ep_k make_k(qgmm_context *ctx, const qgmm_ep_desc *d)
{
    ep_k k;
    k.nranks = d->nranks;
    k.rank = d->rank;
    k.top_k = d->top_k;
    k.alignment = d->alignment;
    k.E = d->num_experts;
    k.L = d->local;
    k.S = d->local_max + 1;
    k.T = d->tokens;
    k.cap = d->cap;
    k.max_recv = d->max_recv_rows;
    k.lo = d->win_lo;
    k.wn = d->win_hi - d->win_lo;
    k.own = d->own_direct;
    k.slots = d->own_direct ? d->nranks - 1 : d->nranks;
    k.rank_of = (const int32_t *)qgmm_tensor_data(&d->expert_rank);
    k.local_of = (const int32_t *)qgmm_tensor_data(&d->expert_local);
    k.pos = (int32_t *)qgmm_tensor_data(&d->pos);
    k.src = (int32_t *)qgmm_tensor_data(&d->send_src);
    k.scnt = (int32_t *)qgmm_tensor_data(&d->send_counts);
    k.rcnt = (int32_t *)qgmm_tensor_data(&d->recv_counts);
    k.srows = (int32_t *)qgmm_tensor_data(&d->send_rows);
    k.rrows = (int32_t *)qgmm_tensor_data(&d->recv_rows);
    k.dst = (int32_t *)qgmm_tensor_data(&d->recv_dst);
    k.offs = (int32_t *)qgmm_tensor_data(&d->offs);
    k.state = (int32_t *)qgmm_tensor_data(&d->state);
    k.status = qgmm_cuda_ctx_of(ctx)->status_dev;
    return k;
}

__device__ void raise_bad(uint32_t *status) { atomicOr(status, QGMM_DEVICE_STATUS_BAD_OFFSETS); }

/* Block-wide exclusive scan of one int per thread; *total gets the sum. */
__device__ int block_scan(int v, int *total)
{
    __shared__ int warp_sum[kThreads / 32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int x = v;
    for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) warp_sum[w] = x;
    __syncthreads();
    if (w == 0) {
        int s = lane < kThreads / 32 ? warp_sum[lane] : 0;
        for (int o = 1; o < 32; o <<= 1) {
            const int y = __shfl_up_sync(0xffffffffu, s, o);
            if (lane >= o) s += y;
        }
        if (lane < kThreads / 32) warp_sum[lane] = s;
    }
    __syncthreads();
    const int before = (w ? warp_sum[w - 1] : 0) + x - v;
    *total = warp_sum[kThreads / 32 - 1];
    __syncthreads();
    return before;
}

/* One block: counts per (peer, local expert), the id and capacity checks, send_rows. */
__global__ void route_count(ep_k k, const int32_t *ids, int64_t is0, int64_t is1)
{
    __shared__ int bad;
    const int64_t P = k.nranks, S = k.S, n = k.T * k.top_k;
    if (threadIdx.x == 0) bad = 0;
    for (int64_t i = threadIdx.x; i < P * S; i += blockDim.x) k.scnt[i] = 0;
    __syncthreads();
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) {
        const int64_t t = r / k.top_k, j = r % k.top_k;
        const int64_t e = ids[t * is0 + j * is1];
        if (e < 0 || e >= k.E) {
            bad = 1;
            continue;
        }
        atomicAdd(&k.scnt[k.rank_of[e] * S + k.local_of[e]], 1);
    }
    __syncthreads();
    for (int64_t p = threadIdx.x; p < P; p += blockDim.x) {
        int64_t rows = 0;
        for (int64_t l = 0; l < S - 1; ++l) rows += k.scnt[p * S + l];
        if (rows > k.cap) bad = 1;
        else k.srows[p] = (int32_t)rows;
    }
    __syncthreads();
    if (!bad) {
        if (threadIdx.x == 0) k.state[0] = 0;
        return;
    }
    for (int64_t p = threadIdx.x; p < P; p += blockDim.x) {
        for (int64_t l = 0; l < S - 1; ++l) k.scnt[p * S + l] = 0;
        k.scnt[p * S + S - 1] = 1;
        k.srows[p] = 0;
    }
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) k.pos[r] = -1;
    if (threadIdx.x == 0) {
        k.state[0] = 1;
        raise_bad(k.status);
    }
}

/* One block per bucket (peer p, local expert l): its rows in (token, slot) order take the
 * wire rows base.. of slot p, base the rows of p's earlier local experts. */
__global__ void route_assign(ep_k k, const int32_t *ids, int64_t is0, int64_t is1)
{
    if (k.state[0]) return;
    const int64_t S = k.S, p = blockIdx.x / (S - 1), l = blockIdx.x % (S - 1), n = k.T * k.top_k;
    if (k.scnt[p * S + l] == 0) return;
    int64_t base = 0;
    for (int64_t m = 0; m < l; ++m) base += k.scnt[p * S + m];
    for (int64_t r0 = 0; r0 < n; r0 += blockDim.x) {
        const int64_t r = r0 + threadIdx.x;
        int mine = 0;
        if (r < n) {
            const int64_t e = ids[(r / k.top_k) * is0 + (r % k.top_k) * is1];
            mine = k.rank_of[e] == p && k.local_of[e] == l;
        }
        int total;
        const int before = block_scan(mine, &total);
        if (mine) {
            const int64_t i = base + before;
            k.pos[r] = (int32_t)(p * k.cap + i);
            k.src[p * k.cap + i] = (int32_t)r;
        }
        base += total;
    }
}

/* One block: recv_rows, offs and the checks; then one warp per (peer, local expert) writes
 * recv_dst. Local expert l's block holds rank 0's rows, then rank 1's, ..., padded. */
__global__ void layout_kernel(ep_k k)
{
    __shared__ int bad;
    const int64_t P = k.nranks, S = k.S, L = k.L;
    if (threadIdx.x == 0) {
        bad = 0;
        for (int64_t r = 0; r < P; ++r) {
            int64_t rows = 0;
            for (int64_t l = 0; l < S - 1; ++l) {
                const int32_t c = k.rcnt[r * S + l];
                if (c < 0) bad = 1;
                rows += c;
            }
            if (k.rcnt[r * S + S - 1] != 0 || rows > k.cap) bad = 1;
        }
        if (bad) { /* some rank refused the step: nobody sends anything */
            for (int64_t r = 0; r < P; ++r) k.srows[r] = k.rrows[r] = 0;
        } else {
            for (int64_t r = 0; r < P; ++r) {
                int64_t rows = 0;
                for (int64_t l = 0; l < L; ++l) rows += k.rcnt[r * S + l];
                k.rrows[r] = (int32_t)rows;
            }
            int64_t total = 0;
            for (int64_t l = 0; l < L; ++l) {
                int64_t n = 0;
                for (int64_t r = 0; r < P; ++r) n += k.rcnt[r * S + l];
                total += qgmm_padded_size(n, k.alignment);
            }
            if (total > k.max_recv) bad = 1;
            else
                for (int64_t l = 0, start = 0; l < L; ++l) {
                    int64_t n = 0;
                    for (int64_t r = 0; r < P; ++r) n += k.rcnt[r * S + l];
                    start += qgmm_padded_size(n, k.alignment);
                    k.offs[l] = (int32_t)start;
                }
        }
        if (bad) {
            k.state[0] = 1;
            raise_bad(k.status);
        }
    }
    __syncthreads();
    if (bad) return;
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    for (int64_t q = threadIdx.x >> 5; q < P * L; q += warps) {
        const int64_t r = q / L, l = q % L;
        int64_t i0 = 0, at = l ? k.offs[l - 1] : 0;
        for (int64_t m = 0; m < l; ++m) i0 += k.rcnt[r * S + m];
        for (int64_t rr = 0; rr < r; ++rr) at += k.rcnt[rr * S + l];
        const int64_t c = k.rcnt[r * S + l];
        for (int64_t i = lane; i < c; i += 32) k.dst[r * k.cap + i0 + i] = (int32_t)(at + i);
    }
}

struct pack_k {
    ep_k e;
    int dir;
    const uint8_t *x;
    int64_t x_rows, x_rs; /* rows, bytes between rows */
    int64_t D, esz;       /* elements per row, element bytes */
    int x_f32;
    const uint8_t *xs;
    int64_t xs_rs, sbytes;
    const uint8_t *w;
    int w_f32;
    int64_t ws0, ws1;
    uint8_t *wire;
    int64_t row_bytes;
};

__device__ float load_hp(const uint8_t *p, int64_t i, int f32)
{
    if (f32) return ((const float *)p)[i];
    return qgmm_bf16_to_f32(((const uint16_t *)p)[i]);
}

__device__ void store_hp(uint8_t *p, int64_t i, int f32, float v)
{
    if (f32) ((float *)p)[i] = v;
    else ((uint16_t *)p)[i] = qgmm_f32_to_bf16(v);
}

/* The row kernels give each row to one warp of a kRowThreads block; kUnroll 16-byte loads
 * per lane are in flight before their stores, so one block per SM keeps HBM busy. */
constexpr int kRowThreads = 512;
constexpr int kRowWarps = kRowThreads / 32;
constexpr int kUnroll = 8;
/* SMs the row kernels leave free while the transport's exchange runs beside them: an NCCL
 * block takes most of an SM's registers, so it needs SMs that hold none of ours. */
constexpr int kNcclSms = 32;

__device__ __forceinline__ int lane_id() { return threadIdx.x & 31; }
__device__ __forceinline__ int64_t warp_id() { return ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; }
__device__ __forceinline__ int64_t warp_count() { return ((int64_t)gridDim.x * blockDim.x) >> 5; }

/* One warp moves n16 16-byte units from f to o through op, U loads in flight per lane
 * before their stores. */
template <int U, typename Op>
__device__ __forceinline__ void warp_map16(uint4 *o, const uint4 *f, int64_t n16, Op op)
{
    for (int64_t b = lane_id(); b < n16; b += U * 32) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = b + u * 32 < n16 ? __ldg(f + b + u * 32) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (b + u * 32 < n16) o[b + u * 32] = op(v[u]);
    }
}

/* One warp copies n bytes: 16-byte units where both ends and n allow it, else bytes. */
__device__ void warp_copy(uint8_t *to, const uint8_t *from, int64_t n)
{
    if ((((uintptr_t)to | (uintptr_t)from | (uintptr_t)n) & 15) == 0) {
        warp_map16<kUnroll>((uint4 *)to, (const uint4 *)from, n / 16, [](uint4 v) { return v; });
        return;
    }
    for (int64_t i = lane_id(); i < n; i += 32) to[i] = from[i];
}

/* 16 bytes of bf16 (8) or f32 (4) elements, each times wt: the f32 product (__fmul_rn, no
 * contraction) rounded to the dtype, as store_hp(load_hp(..) * wt) does element by element. */
__device__ __forceinline__ uint4 scale16(uint4 v, int f32, float wt)
{
    uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int c = 0; c < 4; ++c) {
        if (f32) {
            u[c] = __float_as_uint(__fmul_rn(__uint_as_float(u[c]), wt));
        } else {
            const uint32_t lo = qgmm_f32_to_bf16(__fmul_rn(qgmm_bf16_to_f32((uint16_t)(u[c] & 0xFFFFu)), wt));
            const uint32_t hi = qgmm_f32_to_bf16(__fmul_rn(qgmm_bf16_to_f32((uint16_t)(u[c] >> 16)), wt));
            u[c] = lo | hi << 16;
        }
    }
    return make_uint4(u[0], u[1], u[2], u[3]);
}

/* One warp writes the D elements of `from` times wt (bf16 or f32) to `to`. */
__device__ void warp_scale(uint8_t *to, const uint8_t *from, int64_t D, int f32, float wt)
{
    const int64_t n = D * (f32 ? 4 : 2);
    if ((((uintptr_t)to | (uintptr_t)from | (uintptr_t)n) & 15) == 0) {
        warp_map16<kUnroll / 2>((uint4 *)to, (const uint4 *)from, n / 16,
                                [=](uint4 v) { return scale16(v, f32, wt); });
        return;
    }
    for (int64_t c = lane_id(); c < D; c += 32) store_hp(to, c, f32, __fmul_rn(load_hp(from, c, f32), wt));
}

/* Row s (t * k + j) of the dispatch: x's row t, times weights[t, j] when given, to `to`. */
__device__ void put_payload(const pack_k &k, uint8_t *to, int64_t s, int64_t t)
{
    const uint8_t *xr = k.x + t * k.x_rs;
    if (!k.w) {
        warp_copy(to, xr, k.D * k.esz);
        return;
    }
    const int64_t top_k = k.e.top_k;
    const float wt = load_hp(k.w, (s / top_k) * k.ws0 + (s % top_k) * k.ws1, k.w_f32);
    warp_scale(to, xr, k.D, k.x_f32, wt);
}

/* Slot q of the wire slots a kernel walks: every rank's, or every peer's (own_direct). */
__device__ __forceinline__ int64_t slot_of(const ep_k &e, int64_t q)
{
    return e.own && q >= e.rank ? q + 1 : q;
}

/* One warp per wire row (p, i) of the window, grid-stride over the walked slots' rows. */
__global__ void pack_kernel(pack_k k)
{
    const ep_k &e = k.e;
    if (e.state[0]) return;
    if (k.dir == QGMM_EP_COMBINE && e.L > 0 && e.offs[e.L - 1] > k.x_rows) {
        if (blockIdx.x == 0 && threadIdx.x == 0) raise_bad(e.status);
        return;
    }
    const int32_t *rows = k.dir == QGMM_EP_DISPATCH ? e.srows : e.rrows;
    const int32_t *index = k.dir == QGMM_EP_DISPATCH ? e.src : e.dst;
    const int lane = lane_id();
    for (int64_t q = warp_id(); q < e.slots * e.wn; q += warp_count()) {
        const int64_t p = slot_of(e, q / e.wn), i = e.lo + q % e.wn, g = p * e.cap + i;
        if (i >= rows[p]) continue;
        const int64_t s = index[g];
        const int64_t t = k.dir == QGMM_EP_DISPATCH ? s / e.top_k : s;
        if (s < 0 || t >= k.x_rows) continue; /* unreachable with the route's tables */
        uint8_t *row = k.wire + g * k.row_bytes;
        put_payload(k, row, s, t);
        int64_t used = k.D * k.esz;
        if (k.sbytes) {
            warp_copy(row + used, k.xs + t * k.xs_rs, k.sbytes);
            used += k.sbytes;
        }
        for (int64_t c = used + lane; c < k.row_bytes; c += 32) row[c] = 0;
    }
}

struct unpack_k {
    ep_k e;
    const uint8_t *wire;
    int64_t row_bytes;
    uint8_t *out;
    int64_t out_rows, out_rs, payload; /* rows, bytes between rows, bytes per row */
    uint8_t *os;
    int64_t os_bytes;                  /* blocked or rank-1: the whole tensor's bytes */
    int64_t os_rs, srow;               /* plain rank 2: bytes between rows, bytes per row */
    int blocked;
    int64_t scols;
    int32_t *offs_out;
};

__device__ bool unpack_refused(const unpack_k &k)
{
    if (k.e.state[0]) return true;
    if (k.e.L > 0 && k.e.offs[k.e.L - 1] > k.out_rows) {
        if (blockIdx.x == 0 && threadIdx.x == 0) raise_bad(k.e.status);
        return true;
    }
    return false;
}

/* One warp zeroes n bytes at row (16-byte stores where aligned). */
__device__ void warp_zero(uint8_t *row, int64_t n)
{
    const int lane = lane_id();
    if ((((uintptr_t)row | (uintptr_t)n) & 15) == 0)
        for (int64_t c = lane; c < n / 16; c += 32) ((uint4 *)row)[c] = make_uint4(0, 0, 0, 0);
    else
        for (int64_t c = lane; c < n; c += 32) row[c] = 0;
}

/* Zero the receive layout's rows that receive nothing (the scatter overwrites the others
 * whole): one warp per local expert's padding rows, then the warps over the rows past
 * offs[L-1]; and all of the scales. */
__global__ void unpack_zero(unpack_k k)
{
    if (unpack_refused(k)) return;
    const ep_k &e = k.e;
    const int64_t wid = warp_id(), nw = warp_count();
    for (int64_t g = wid; g < e.L; g += nw) {
        int64_t got = 0;
        for (int64_t q = 0; q < e.nranks; ++q) got += e.rcnt[q * e.S + g];
        for (int64_t r = (g ? e.offs[g - 1] : 0) + got; r < e.offs[g] && r < k.out_rows; ++r)
            warp_zero(k.out + r * k.out_rs, k.payload);
    }
    for (int64_t r = (e.L > 0 ? e.offs[e.L - 1] : 0) + wid; r < k.out_rows; r += nw)
        warp_zero(k.out + r * k.out_rs, k.payload);
    if (!k.os) return;
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, n = (int64_t)gridDim.x * blockDim.x;
    if (k.os_bytes)
        for (int64_t i = tid; i < k.os_bytes; i += n) k.os[i] = 0;
    else
        for (int64_t i = tid; i < k.out_rows * k.srow; i += n) k.os[(i / k.srow) * k.os_rs + i % k.srow] = 0;
}

/* The M-groups blocked layout's group starts (in scale rows), in dynamic shared memory. */
__device__ void blocked_starts(const unpack_k &k, int64_t *mx_start)
{
    if (threadIdx.x == 0)
        for (int64_t g = 0, s = 0; g < k.e.L; ++g) {
            mx_start[g] = s;
            s += qgmm_blocked_rows(k.e.offs[g] - (g ? k.e.offs[g - 1] : 0));
        }
    __syncthreads();
}

/* One warp: a row's scales (at `sc`) to the scales of out's row `to`, plain or at their
 * M-groups blocked place. */
__device__ void put_out_scales(const unpack_k &k, const int64_t *mx_start, int64_t to, const uint8_t *sc)
{
    if (!k.blocked) {
        warp_copy(k.os + to * k.os_rs, sc, k.srow);
        return;
    }
    const ep_k &e = k.e;
    const int64_t grp = qgmm_group_of(e.offs, e.L, to);
    if (grp < 0) return; /* unreachable: rows below offs[L-1] */
    const int64_t r0 = grp ? e.offs[grp - 1] : 0, cols_pad = qgmm_blocked_cols(k.scols);
    for (int64_t c = lane_id(); c < k.scols; c += 32) {
        const int64_t at = mx_start[grp] * cols_pad + qgmm_blocked_offset(to - r0, c, cols_pad);
        if (at < k.os_bytes) k.os[at] = sc[c];
    }
}

/* One warp: a row's payload (at `from`) to out's row `to`, its scales (at `sc`) beside it. */
__device__ void put_out_row(const unpack_k &k, const int64_t *mx_start, int64_t to, const uint8_t *from,
                            const uint8_t *sc)
{
    warp_copy(k.out + to * k.out_rs, from, k.payload);
    if (k.os) put_out_scales(k, mx_start, to, sc);
}

/* One warp per received wire row of the window (the walked slots): the payload to its row,
 * the scales beside it. */
__global__ void unpack_scatter(unpack_k k)
{
    extern __shared__ int64_t mx_start[];
    if (unpack_refused(k)) return;
    const ep_k &e = k.e;
    if (k.blocked) blocked_starts(k, mx_start);
    if (k.offs_out && blockIdx.x == 0)
        for (int64_t l = threadIdx.x; l < e.L; l += blockDim.x) k.offs_out[l] = e.offs[l];
    for (int64_t q = warp_id(); q < e.slots * e.wn; q += warp_count()) {
        const int64_t p = slot_of(e, q / e.wn), i = e.lo + q % e.wn, g = p * e.cap + i;
        if (i >= e.rrows[p]) continue;
        const int64_t to = e.dst[g];
        if (to < 0 || to >= k.out_rows) continue; /* unreachable: rows below offs[L-1] */
        const uint8_t *w = k.wire + g * k.row_bytes;
        put_out_row(k, mx_start, to, w, w + k.payload);
    }
}

/* own_direct: one warp per row of the own slot's window, straight from x (times the
 * weight, + scales) to the receive layout, the bytes pack and unpack_scatter would give. */
__global__ void own_dispatch(pack_k a, unpack_k k)
{
    extern __shared__ int64_t mx_start[];
    if (unpack_refused(k)) return;
    const ep_k &e = k.e;
    if (k.blocked) blocked_starts(k, mx_start);
    if (k.offs_out && blockIdx.x == 0)
        for (int64_t l = threadIdx.x; l < e.L; l += blockDim.x) k.offs_out[l] = e.offs[l];
    for (int64_t q = warp_id(); q < e.wn; q += warp_count()) {
        const int64_t i = e.lo + q, g = e.rank * e.cap + i;
        if (i >= e.rrows[e.rank]) continue;
        const int64_t s = e.src[g], to = e.dst[g];
        if (s < 0 || s / e.top_k >= a.x_rows || to < 0 || to >= k.out_rows) continue; /* unreachable */
        const int64_t t = s / e.top_k;
        uint8_t *orow = k.out + to * k.out_rs;
        put_payload(a, orow, s, t);
        if (k.os) put_out_scales(k, mx_start, to, a.xs + t * a.xs_rs);
    }
}

struct combine_k {
    ep_k e;
    const uint8_t *wire;
    int64_t row_bytes;
    int wire_f32;
    const uint8_t *w;
    int w_f32;
    int64_t ws0, ws1;
    uint8_t *out;
    int out_f32;
    int64_t os0, os1, H;
    const uint8_t *y; /* own_direct: the own slot's rows are y's rows recv_dst[at] */
    int64_t y_rows, y_rs;
};

/* own_direct with y holding fewer rows than this rank receives: raise, write nothing. */
__device__ bool combine_refused(const combine_k &k)
{
    const ep_k &e = k.e;
    if (e.state[0]) return true;
    if (k.y && e.L > 0 && e.offs[e.L - 1] > k.y_rows) {
        if (blockIdx.x == 0 && threadIdx.x == 0) raise_bad(e.status);
        return true;
    }
    return false;
}

/* The row (t, j) reads, from the wire row `at` or (own_direct, own slot) y's row; NULL for
 * an index outside the tables' range (unreachable with the route's tables). */
__device__ __forceinline__ const uint8_t *combine_row(const combine_k &k, int64_t at)
{
    const ep_k &e = k.e;
    if (at < 0 || at >= (int64_t)e.nranks * e.cap) return nullptr;
    if (!k.y || at / e.cap != e.rank) return k.wire + at * k.row_bytes;
    const int64_t to = e.dst[at];
    return to >= 0 && to < k.y_rows ? k.y + to * k.y_rs : nullptr;
}

/* out[t, h] = sum over j in order of w[t, j] * row(t, j)[h], f32 multiply then add (no
 * contraction), rounded once: the CPU's order. Grid-stride over (token, column). */
__global__ void combine_kernel(combine_k k)
{
    const ep_k &e = k.e;
    if (combine_refused(k)) return;
    const int64_t n = e.T * k.H;
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < n; q += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = q / k.H, h = q % k.H;
        float acc = 0.0f;
        for (int64_t j = 0; j < e.top_k; ++j) {
            const uint8_t *row = combine_row(k, e.pos[t * e.top_k + j]);
            if (!row) continue;
            const float wt = k.w ? load_hp(k.w, t * k.ws0 + j * k.ws1, k.w_f32) : 1.0f;
            acc = __fadd_rn(acc, __fmul_rn(wt, load_hp(row, h, k.wire_f32)));
        }
        store_hp(k.out, t * k.os0 + h * k.os1, k.out_f32, acc);
    }
}

/* combine_kernel for bf16 rows (wire, y and out) with H a multiple of 8 and 16-byte aligned
 * rows: 8 columns per thread, 16-byte loads (4 rows' in flight at once) and stores; the
 * same sums in the same order. */
__global__ void combine_kernel8(combine_k k)
{
    const ep_k &e = k.e;
    if (combine_refused(k)) return;
    constexpr int U = 4;
    const int64_t H8 = k.H / 8, n = e.T * H8;
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < n; q += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = q / H8, h = (q % H8) * 8;
        float acc[8];
#pragma unroll
        for (int c = 0; c < 8; ++c) acc[c] = 0.0f;
        for (int64_t j0 = 0; j0 < e.top_k; j0 += U) {
            uint4 v[U];
            float wt[U];
            bool ok[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int64_t j = j0 + u;
                const uint8_t *row = j < e.top_k ? combine_row(k, e.pos[t * e.top_k + j]) : nullptr;
                ok[u] = row != nullptr;
                v[u] = row ? __ldg((const uint4 *)(row + h * 2)) : make_uint4(0, 0, 0, 0);
                wt[u] = row && k.w ? load_hp(k.w, t * k.ws0 + j * k.ws1, k.w_f32) : 1.0f;
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                if (!ok[u]) continue;
                const uint32_t w32[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
                for (int c = 0; c < 8; ++c) {
                    const uint16_t b = (uint16_t)(c & 1 ? w32[c / 2] >> 16 : w32[c / 2] & 0xFFFFu);
                    acc[c] = __fadd_rn(acc[c], __fmul_rn(wt[u], qgmm_bf16_to_f32(b)));
                }
            }
        }
        uint32_t o[4];
#pragma unroll
        for (int c = 0; c < 4; ++c)
            o[c] = (uint32_t)qgmm_f32_to_bf16(acc[2 * c]) | ((uint32_t)qgmm_f32_to_bf16(acc[2 * c + 1]) << 16);
        *(uint4 *)(k.out + (t * k.os0 + h) * 2) = make_uint4(o[0], o[1], o[2], o[3]);
    }
}

} // namespace

static qgmm_status ep_route(qgmm_context *ctx, const qgmm_ep_desc *d, const qgmm_tensor *ids)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    const ep_k k = make_k(ctx, d);
    cudaStream_t s = qgmm_cuda_ctx_of(ctx)->stream;
    const int32_t *id = (const int32_t *)qgmm_tensor_data(ids);
    route_count<<<1, 1024, 0, s>>>(k, id, ids->strides[0], ids->strides[1]);
    if ((st = qgmm_cuda_launch_check(ctx, "ep route_count")) != QGMM_OK) return st;
    if (d->local_max == 0) return QGMM_OK;
    route_assign<<<(unsigned)(d->nranks * d->local_max), kThreads, 0, s>>>(k, id, ids->strides[0], ids->strides[1]);
    return qgmm_cuda_launch_check(ctx, "ep route_assign");
}

static qgmm_status ep_layout(qgmm_context *ctx, const qgmm_ep_desc *d)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    layout_kernel<<<1, 1024, 0, qgmm_cuda_ctx_of(ctx)->stream>>>(make_k(ctx, d));
    return qgmm_cuda_launch_check(ctx, "ep layout");
}

/* Blocks for one warp per row. Beside the transport's exchange (own_direct with peers: every
 * row kernel of the dispatch and the combine's pack) one block on each of all but kNcclSms
 * SMs, so NCCL's kernels find whole SMs; else (loopback, one rank) the whole GPU. */
static unsigned row_grid(qgmm_context *ctx, const qgmm_ep_desc *d, int64_t rows)
{
    int64_t blocks = (rows + kRowWarps - 1) / kRowWarps;
    if (blocks < 1) blocks = 1;
    if (!d->own_direct || d->nranks == 1) return qgmm_cuda_grid(ctx, blocks, kRowThreads, 4);
    const int64_t sms = qgmm_cuda_ctx_of(ctx)->sm_count, room = sms > 2 * kNcclSms ? sms - kNcclSms : (sms + 1) / 2;
    return (unsigned)(blocks < room ? blocks : room);
}

/* The wire slots the row kernels walk (every rank's, or the peers' with own_direct). */
static int64_t walked_slots(const qgmm_ep_desc *d) { return d->own_direct ? d->nranks - 1 : d->nranks; }

static pack_k make_pack(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir, const qgmm_tensor *x,
                        const qgmm_tensor *xs, const qgmm_tensor *w, const qgmm_tensor *wire, int64_t row_bytes)
{
    pack_k k;
    memset(&k, 0, sizeof k);
    k.e = make_k(ctx, d);
    k.dir = dir;
    k.esz = (int64_t)qgmm_dtype_size(x->dtype);
    k.x = (const uint8_t *)qgmm_tensor_data(x);
    k.x_rows = x->shape[0];
    k.x_rs = x->strides[0] * k.esz;
    k.D = x->shape[1];
    k.x_f32 = x->dtype == QGMM_F32;
    if (xs->buffer) {
        const int64_t ses = (int64_t)qgmm_dtype_size(xs->dtype);
        k.xs = (const uint8_t *)qgmm_tensor_data(xs);
        k.xs_rs = xs->strides[0] * ses;
        k.sbytes = (xs->rank == 1 ? 1 : xs->shape[1]) * ses;
    }
    if (w->buffer) {
        k.w = (const uint8_t *)qgmm_tensor_data(w);
        k.w_f32 = w->dtype == QGMM_F32;
        k.ws0 = w->strides[0];
        k.ws1 = w->strides[1];
    }
    k.wire = wire ? (uint8_t *)qgmm_tensor_data(wire) : NULL;
    k.row_bytes = row_bytes;
    return k;
}

static qgmm_status ep_pack(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir, const qgmm_tensor *x,
                           const qgmm_tensor *xs, const qgmm_tensor *w, const qgmm_tensor *wire, int64_t row_bytes)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    const int64_t rows = walked_slots(d) * (d->win_hi - d->win_lo);
    if (rows == 0) return QGMM_OK;
    const pack_k k = make_pack(ctx, d, dir, x, xs, w, wire, row_bytes);
    pack_kernel<<<row_grid(ctx, d, rows), kRowThreads, 0, qgmm_cuda_ctx_of(ctx)->stream>>>(k);
    return qgmm_cuda_launch_check(ctx, "ep pack");
}

static unpack_k make_unpack(qgmm_context *ctx, const qgmm_ep_desc *d, const qgmm_tensor *wire, int64_t row_bytes,
                            const qgmm_tensor *out, const qgmm_tensor *os, int blocked, const qgmm_tensor *offs_out)
{
    unpack_k k;
    memset(&k, 0, sizeof k);
    k.e = make_k(ctx, d);
    k.wire = (const uint8_t *)qgmm_tensor_data(wire);
    k.row_bytes = row_bytes;
    const int64_t esz = (int64_t)qgmm_dtype_size(out->dtype);
    k.out = (uint8_t *)qgmm_tensor_data(out);
    k.out_rows = out->shape[0];
    k.out_rs = out->strides[0] * esz;
    k.payload = out->shape[1] * esz;
    k.blocked = blocked;
    if (os->buffer) {
        const int64_t ses = (int64_t)qgmm_dtype_size(os->dtype);
        k.os = (uint8_t *)qgmm_tensor_data(os);
        k.scols = blocked ? out->shape[1] / 32 : os->rank == 1 ? 1 : os->shape[1];
        k.srow = k.scols * ses;
        if (blocked) k.os_bytes = os->shape[0];
        else if (os->rank == 1) k.os_bytes = k.out_rows * ses;
        else k.os_rs = os->strides[0] * ses;
        if (!blocked && os->rank == 1) k.os_rs = os->strides[0] * ses;
    }
    if (offs_out->buffer) k.offs_out = (int32_t *)qgmm_tensor_data(offs_out);
    return k;
}

/* The blocked scales' group starts in dynamic shared memory: its bytes, or an error. */
static qgmm_status blocked_smem(qgmm_context *ctx, const qgmm_ep_desc *d, int blocked, size_t *smem)
{
    *smem = blocked ? (size_t)(d->local > 0 ? d->local : 1) * sizeof(int64_t) : 0;
    if (*smem <= 48 * 1024) return QGMM_OK;
    return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                          "ep_unpack on cuda: %lld local experts with blocked MXFP8 scales; at most %d",
                          (long long)d->local, 48 * 1024 / 8);
}

/* The dispatch's zero fill of out and its scales (once per step, before any row lands). */
static qgmm_status zero_fill(qgmm_context *ctx, const qgmm_ep_desc *d, const unpack_k &k)
{
    const unsigned grid = row_grid(ctx, d, k.out_rows);
    unpack_zero<<<grid, kRowThreads, 0, qgmm_cuda_ctx_of(ctx)->stream>>>(k);
    return qgmm_cuda_launch_check(ctx, "ep unpack_zero");
}

static qgmm_status unpack_dispatch(qgmm_context *ctx, const qgmm_ep_desc *d, const qgmm_tensor *wire,
                                   int64_t row_bytes, const qgmm_tensor *out, const qgmm_tensor *os, int blocked,
                                   const qgmm_tensor *offs_out)
{
    const unpack_k k = make_unpack(ctx, d, wire, row_bytes, out, os, blocked, offs_out);
    qgmm_status st = QGMM_OK;
    if (d->win_lo == 0 && !d->own_direct && (st = zero_fill(ctx, d, k)) != QGMM_OK) return st; /* once, for all */
    size_t smem = 0;
    if ((st = blocked_smem(ctx, d, blocked, &smem)) != QGMM_OK) return st;
    const int64_t rows = walked_slots(d) * (d->win_hi - d->win_lo);
    unpack_scatter<<<row_grid(ctx, d, rows), kRowThreads, smem, qgmm_cuda_ctx_of(ctx)->stream>>>(k);
    return qgmm_cuda_launch_check(ctx, "ep unpack_scatter");
}

static combine_k make_combine(qgmm_context *ctx, const qgmm_ep_desc *d, const qgmm_tensor *wire, int64_t row_bytes,
                              const qgmm_tensor *w, const qgmm_tensor *out)
{
    combine_k k;
    memset(&k, 0, sizeof k);
    k.e = make_k(ctx, d);
    k.wire = (const uint8_t *)qgmm_tensor_data(wire);
    k.row_bytes = row_bytes;
    k.wire_f32 = wire->dtype == QGMM_F32;
    if (w->buffer) {
        k.w = (const uint8_t *)qgmm_tensor_data(w);
        k.w_f32 = w->dtype == QGMM_F32;
        k.ws0 = w->strides[0];
        k.ws1 = w->strides[1];
    }
    k.out = (uint8_t *)qgmm_tensor_data(out);
    k.out_f32 = out->dtype == QGMM_F32;
    k.os0 = out->strides[0];
    k.os1 = out->strides[1];
    k.H = out->shape[1];
    return k;
}

static qgmm_status run_combine(qgmm_context *ctx, const qgmm_ep_desc *d, const combine_k &k)
{
    cudaStream_t s = qgmm_cuda_ctx_of(ctx)->stream;
    const bool by8 = !k.wire_f32 && !k.out_f32 && k.H % 8 == 0 && k.os1 == 1 && k.os0 % 8 == 0 &&
                     k.row_bytes % 16 == 0 && ((uintptr_t)k.wire | (uintptr_t)k.out) % 16 == 0 &&
                     (!k.y || (k.y_rs % 16 == 0 && (uintptr_t)k.y % 16 == 0));
    const int64_t n = d->tokens * (by8 ? k.H / 8 : k.H);
    const unsigned grid = qgmm_cuda_grid(ctx, (n + kThreads - 1) / kThreads, kThreads, 8);
    if (by8) combine_kernel8<<<grid, kThreads, 0, s>>>(k);
    else combine_kernel<<<grid, kThreads, 0, s>>>(k);
    return qgmm_cuda_launch_check(ctx, "ep combine");
}

static qgmm_status ep_unpack(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir, const qgmm_tensor *wire,
                             int64_t row_bytes, const qgmm_tensor *w, const qgmm_tensor *out,
                             const qgmm_tensor *out_scales, int scales_blocked, const qgmm_tensor *offs_out)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    if (dir == QGMM_EP_DISPATCH)
        return unpack_dispatch(ctx, d, wire, row_bytes, out, out_scales, scales_blocked, offs_out);
    return run_combine(ctx, d, make_combine(ctx, d, wire, row_bytes, w, out));
}

/* own_direct: the own slot's rows where they are (the backend contract's ep_own_rows). */
static qgmm_status ep_own_rows(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir, const qgmm_tensor *x,
                               const qgmm_tensor *xs, const qgmm_tensor *w, const qgmm_tensor *wire,
                               int64_t row_bytes, const qgmm_tensor *out, const qgmm_tensor *os, int blocked,
                               const qgmm_tensor *offs_out)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    if (dir == QGMM_EP_COMBINE) {
        combine_k k = make_combine(ctx, d, wire, row_bytes, w, out);
        k.y = (const uint8_t *)qgmm_tensor_data(x);
        k.y_rows = x->shape[0];
        k.y_rs = x->strides[0] * (int64_t)qgmm_dtype_size(x->dtype);
        return run_combine(ctx, d, k);
    }
    const unpack_k k = make_unpack(ctx, d, wire, row_bytes, out, os, blocked, offs_out);
    if (d->win_lo == 0 && (st = zero_fill(ctx, d, k)) != QGMM_OK) return st;
    size_t smem = 0;
    if ((st = blocked_smem(ctx, d, blocked, &smem)) != QGMM_OK) return st;
    const pack_k a = make_pack(ctx, d, dir, x, xs, w, NULL, row_bytes);
    own_dispatch<<<row_grid(ctx, d, d->win_hi - d->win_lo), kRowThreads, smem, qgmm_cuda_ctx_of(ctx)->stream>>>(a, k);
    return qgmm_cuda_launch_check(ctx, "ep own_dispatch");
}

extern "C" void qgmm_cuda_fill_ep_ops(qgmm_backend_vtable *v)
{
    v->ep_route = ep_route;
    v->ep_layout = ep_layout;
    v->ep_pack = ep_pack;
    v->ep_unpack = ep_unpack;
    v->ep_own_rows = ep_own_rows;
#ifdef QGMM_HAVE_NCCL
    qgmm_cuda_fill_ep_transport(v);
#endif
}
