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

/* Copies n bytes with 16-byte units where both ends allow it; one block per row. */
__device__ void copy_bytes(uint8_t *to, const uint8_t *from, int64_t n)
{
    if ((((uintptr_t)to | (uintptr_t)from | (uintptr_t)n) & 15) == 0) {
        for (int64_t i = threadIdx.x; i < n / 16; i += blockDim.x)
            ((uint4 *)to)[i] = ((const uint4 *)from)[i];
        return;
    }
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) to[i] = from[i];
}

/* One block per wire row (p, i) of the window, grid-stride over its nranks * wn rows. */
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
    for (int64_t q = blockIdx.x; q < e.nranks * e.wn; q += gridDim.x) {
        const int64_t p = q / e.wn, i = e.lo + q % e.wn, g = p * e.cap + i;
        if (i >= rows[p]) continue;
        const int64_t s = index[g];
        const int64_t t = k.dir == QGMM_EP_DISPATCH ? s / e.top_k : s;
        if (s < 0 || t >= k.x_rows) continue; /* unreachable with the route's tables */
        uint8_t *row = k.wire + g * k.row_bytes;
        const uint8_t *xr = k.x + t * k.x_rs;
        const int64_t payload = k.D * k.esz;
        if (!k.w) {
            copy_bytes(row, xr, payload);
        } else {
            const float wt = load_hp(k.w, (s / e.top_k) * k.ws0 + (s % e.top_k) * k.ws1, k.w_f32);
            for (int64_t c = threadIdx.x; c < k.D; c += blockDim.x)
                store_hp(row, c, k.x_f32, __fmul_rn(load_hp(xr, c, k.x_f32), wt));
        }
        int64_t used = payload;
        if (k.sbytes) {
            copy_bytes(row + used, k.xs + t * k.xs_rs, k.sbytes);
            used += k.sbytes;
        }
        for (int64_t c = used + threadIdx.x; c < k.row_bytes; c += blockDim.x) row[c] = 0;
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

/* Zero the receive layout's rows that receive nothing (padding and past offs[L-1]; the
 * scatter overwrites the others whole) and all of the scales. */
__global__ void unpack_zero(unpack_k k)
{
    if (unpack_refused(k)) return;
    const ep_k &e = k.e;
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, n = (int64_t)gridDim.x * blockDim.x;
    for (int64_t r = blockIdx.x; r < k.out_rows; r += gridDim.x) {
        const int64_t g = qgmm_group_of(e.offs, e.L, r);
        if (g >= 0) {
            int64_t got = 0;
            for (int64_t q = 0; q < e.nranks; ++q) got += e.rcnt[q * e.S + g];
            if (r - (g ? e.offs[g - 1] : 0) < got) continue;
        }
        uint8_t *row = k.out + r * k.out_rs;
        if (k.payload % 16 == 0 && ((uintptr_t)row & 15) == 0)
            for (int64_t c = threadIdx.x; c < k.payload / 16; c += blockDim.x) ((uint4 *)row)[c] = make_uint4(0, 0, 0, 0);
        else
            for (int64_t c = threadIdx.x; c < k.payload; c += blockDim.x) row[c] = 0;
    }
    if (!k.os) return;
    if (k.os_bytes)
        for (int64_t i = tid; i < k.os_bytes; i += n) k.os[i] = 0;
    else
        for (int64_t i = tid; i < k.out_rows * k.srow; i += n) k.os[(i / k.srow) * k.os_rs + i % k.srow] = 0;
}

/* One block per received wire row of the window: the payload to its row, the scales
 * beside it (plain, or at their M-groups blocked place: group starts in dynamic shared
 * memory). */
__global__ void unpack_scatter(unpack_k k)
{
    extern __shared__ int64_t mx_start[];
    if (unpack_refused(k)) return;
    const ep_k &e = k.e;
    if (k.blocked) {
        if (threadIdx.x == 0)
            for (int64_t g = 0, s = 0; g < e.L; ++g) {
                mx_start[g] = s;
                s += qgmm_blocked_rows(e.offs[g] - (g ? e.offs[g - 1] : 0));
            }
        __syncthreads();
    }
    if (k.offs_out && blockIdx.x == 0)
        for (int64_t l = threadIdx.x; l < e.L; l += blockDim.x) k.offs_out[l] = e.offs[l];
    const int64_t cols_pad = qgmm_blocked_cols(k.scols);
    for (int64_t q = blockIdx.x; q < e.nranks * e.wn; q += gridDim.x) {
        const int64_t p = q / e.wn, i = e.lo + q % e.wn, g = p * e.cap + i;
        if (i >= e.rrows[p]) continue;
        const int64_t to = e.dst[g];
        if (to < 0 || to >= k.out_rows) continue; /* unreachable: rows below offs[L-1] */
        const uint8_t *w = k.wire + g * k.row_bytes;
        copy_bytes(k.out + to * k.out_rs, w, k.payload);
        if (!k.os) continue;
        if (!k.blocked) {
            copy_bytes(k.os + to * k.os_rs, w + k.payload, k.srow);
            continue;
        }
        const int64_t grp = qgmm_group_of(e.offs, e.L, to);
        if (grp < 0) continue; /* unreachable: rows below offs[L-1] */
        const int64_t r0 = grp ? e.offs[grp - 1] : 0;
        for (int64_t c = threadIdx.x; c < k.scols; c += blockDim.x) {
            const int64_t at = mx_start[grp] * cols_pad + qgmm_blocked_offset(to - r0, c, cols_pad);
            if (at < k.os_bytes) k.os[at] = w[k.payload + c];
        }
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
};

/* out[t, h] = sum over j in order of w[t, j] * row(t, j)[h], f32 multiply then add (no
 * contraction), rounded once: the CPU's order. Grid-stride over (token, column). */
__global__ void combine_kernel(combine_k k)
{
    const ep_k &e = k.e;
    if (e.state[0]) return;
    const int64_t n = e.T * k.H, limit = (int64_t)e.nranks * e.cap;
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < n; q += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = q / k.H, h = q % k.H;
        float acc = 0.0f;
        for (int64_t j = 0; j < e.top_k; ++j) {
            const int64_t at = e.pos[t * e.top_k + j];
            if (at < 0 || at >= limit) continue; /* unreachable with the route's tables */
            const float wt = k.w ? load_hp(k.w, t * k.ws0 + j * k.ws1, k.w_f32) : 1.0f;
            acc = __fadd_rn(acc, __fmul_rn(wt, load_hp(k.wire + at * k.row_bytes, h, k.wire_f32)));
        }
        store_hp(k.out, t * k.os0 + h * k.os1, k.out_f32, acc);
    }
}

/* combine_kernel for bf16 rows (wire and out) with H a multiple of 8 and 16-byte aligned
 * rows: 8 columns per thread, 16-byte loads and stores; the same sums in the same order. */
__global__ void combine_kernel8(combine_k k)
{
    const ep_k &e = k.e;
    if (e.state[0]) return;
    const int64_t H8 = k.H / 8, n = e.T * H8, limit = (int64_t)e.nranks * e.cap;
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < n; q += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = q / H8, h = (q % H8) * 8;
        float acc[8];
#pragma unroll
        for (int c = 0; c < 8; ++c) acc[c] = 0.0f;
        for (int64_t j = 0; j < e.top_k; ++j) {
            const int64_t at = e.pos[t * e.top_k + j];
            if (at < 0 || at >= limit) continue; /* unreachable with the route's tables */
            const float wt = k.w ? load_hp(k.w, t * k.ws0 + j * k.ws1, k.w_f32) : 1.0f;
            const uint4 v = *(const uint4 *)(k.wire + at * k.row_bytes + h * 2);
            const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int c = 0; c < 8; ++c) {
                const uint16_t b = (uint16_t)(c & 1 ? u[c / 2] >> 16 : u[c / 2] & 0xFFFFu);
                acc[c] = __fadd_rn(acc[c], __fmul_rn(wt, qgmm_bf16_to_f32(b)));
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

/* Blocks for one per row; a window narrower than the slot runs beside the transport's
 * exchange of another, so it takes a quarter of the SMs' block slots and leaves room. */
static unsigned row_grid(qgmm_context *ctx, const qgmm_ep_desc *d, int64_t rows)
{
    return qgmm_cuda_grid(ctx, rows > 0 ? rows : 1, kThreads, d->win_hi - d->win_lo < d->cap ? 2 : 8);
}

static qgmm_status ep_pack(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir, const qgmm_tensor *x,
                           const qgmm_tensor *xs, const qgmm_tensor *w, const qgmm_tensor *wire, int64_t row_bytes)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
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
    k.wire = (uint8_t *)qgmm_tensor_data(wire);
    k.row_bytes = row_bytes;
    pack_kernel<<<row_grid(ctx, d, d->nranks * (d->win_hi - d->win_lo)), kThreads, 0, qgmm_cuda_ctx_of(ctx)->stream>>>(k);
    return qgmm_cuda_launch_check(ctx, "ep pack");
}

static qgmm_status unpack_dispatch(qgmm_context *ctx, const qgmm_ep_desc *d, const qgmm_tensor *wire,
                                   int64_t row_bytes, const qgmm_tensor *out, const qgmm_tensor *os, int blocked,
                                   const qgmm_tensor *offs_out)
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
    cudaStream_t s = qgmm_cuda_ctx_of(ctx)->stream;
    if (d->win_lo == 0) { /* the first window's call zero-fills for all */
        unpack_zero<<<row_grid(ctx, d, k.out_rows), kThreads, 0, s>>>(k);
        const qgmm_status st = qgmm_cuda_launch_check(ctx, "ep unpack_zero");
        if (st != QGMM_OK) return st;
    }
    const size_t smem = blocked ? (size_t)(d->local > 0 ? d->local : 1) * sizeof(int64_t) : 0;
    if (smem > 48 * 1024)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "ep_unpack on cuda: %lld local experts with blocked MXFP8 scales; at most %d",
                              (long long)d->local, 48 * 1024 / 8);
    unpack_scatter<<<row_grid(ctx, d, d->nranks * (d->win_hi - d->win_lo)), kThreads, smem, s>>>(k);
    return qgmm_cuda_launch_check(ctx, "ep unpack_scatter");
}

static qgmm_status unpack_combine(qgmm_context *ctx, const qgmm_ep_desc *d, const qgmm_tensor *wire,
                                  int64_t row_bytes, const qgmm_tensor *w, const qgmm_tensor *out)
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
    cudaStream_t s = qgmm_cuda_ctx_of(ctx)->stream;
    const bool by8 = !k.wire_f32 && !k.out_f32 && k.H % 8 == 0 && k.os1 == 1 && k.os0 % 8 == 0 &&
                     row_bytes % 16 == 0 && ((uintptr_t)k.wire | (uintptr_t)k.out) % 16 == 0;
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
    return unpack_combine(ctx, d, wire, row_bytes, w, out);
}

extern "C" void qgmm_cuda_fill_ep_ops(qgmm_backend_vtable *v)
{
    v->ep_route = ep_route;
    v->ep_layout = ep_layout;
    v->ep_pack = ep_pack;
    v->ep_unpack = ep_unpack;
#ifdef QGMM_HAVE_NCCL
    qgmm_cuda_fill_ep_transport(v);
#endif
}
