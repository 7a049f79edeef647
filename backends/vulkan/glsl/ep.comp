#version 460
// ep.comp — the expert-parallel routing ops of docs/ep.md ("Backend contract"), one mode
// per dispatch, rules and orders of backends/cpu/cpu_ep.c. Route and layout run on one
// lane (the stable order is the contract; correct, not fast); pack, the dispatch's zero
// fill and scatter move one byte per lane; combine sums one (token, column) per lane.
// Every mode reads the plan's state word and writes nothing when the step is refused.
// Indices read from tables are clamped before they address memory: a driver may execute
// the loads of a branch not taken (llvmpipe runs masked-off paths' loads), so a guard alone
// is not enough.
#include "common.glsl"
#include "ep_params.h"
#include "codec.glsl"
layout(local_size_x = 256) in;

int tab(int64_t table, int64_t i) { return ld_i32(uint64_t(table), i); }
void set_tab(int64_t table, int64_t i, int v) { st_i32(uint64_t(table), i, v); }
void raise_status() { atomicOr(QU32(uint64_t(EPP.status)).v, 1u); }
bool refused() { return tab(EPP.state, 0) != 0; }
int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// An element of a bf16 or f32 tensor as f32 bits.
uint ld_f32_bits(uint64_t base, int64_t i, int dt) { return dt == DT_F32 ? ld_u32(base, i) : bf16_to_f32(ld_u16(base, i)); }

void route()
{
    const int64_t T = EPP.t, k = EPP.topk, R = EPP.nranks, S = EPP.lmax + 1, E = EPP.e, cap = EPP.cap;
    for (int64_t i = 0; i < R * S; ++i) set_tab(EPP.scratch, i, 0);
    bool bad = false;
    for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < k; ++j) {
            const int64_t e = ld_i32(uint64_t(EPP.ids), t * EPP.ids0 + j * EPP.ids1);
            if (e < 0 || e >= E) bad = true;
            if (bad) continue;
            const int64_t ec = clamp(e, 0l, E - 1);
            const int64_t c = tab(EPP.erank, ec) * S + tab(EPP.elocal, ec);
            set_tab(EPP.scratch, c, tab(EPP.scratch, c) + 1);
        }
    for (int64_t p = 0; p < R && !bad; ++p) {
        int64_t rows = 0;
        for (int64_t l = 0; l < S - 1; ++l) rows += tab(EPP.scratch, p * S + l);
        if (rows > cap) bad = true;
    }
    if (bad) {
        for (int64_t p = 0; p < R; ++p) {
            for (int64_t l = 0; l < S - 1; ++l) set_tab(EPP.scnt, p * S + l, 0);
            set_tab(EPP.scnt, p * S + S - 1, 1);
            set_tab(EPP.srows, p, 0);
        }
        for (int64_t i = 0; i < T * k; ++i) set_tab(EPP.pos, i, -1);
        set_tab(EPP.state, 0, 1);
        raise_status();
        return;
    }
    for (int64_t p = 0; p < R; ++p) {
        int at = 0;
        for (int64_t l = 0; l < S - 1; ++l) {
            const int c = tab(EPP.scratch, p * S + l);
            set_tab(EPP.scnt, p * S + l, c);
            set_tab(EPP.scratch, p * S + l, at);
            at += c;
        }
        set_tab(EPP.scnt, p * S + S - 1, 0);
        set_tab(EPP.srows, p, at);
    }
    for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < k; ++j) {
            const int64_t e = clamp(int64_t(ld_i32(uint64_t(EPP.ids), t * EPP.ids0 + j * EPP.ids1)), 0l, E - 1);
            const int64_t p = tab(EPP.erank, e), c = p * S + tab(EPP.elocal, e);
            const int i = tab(EPP.scratch, c);
            set_tab(EPP.scratch, c, i + 1);
            set_tab(EPP.pos, t * k + j, int(p * cap + i));
            set_tab(EPP.src, p * cap + i, int(t * k + j));
        }
    set_tab(EPP.state, 0, 0);
}

void layout_()
{
    const int64_t R = EPP.nranks, S = EPP.lmax + 1, L = EPP.l, A = EPP.align, cap = EPP.cap;
    bool peer_bad = false;
    for (int64_t r = 0; r < R; ++r) {
        int64_t rows = 0;
        for (int64_t l = 0; l < S - 1; ++l) rows += tab(EPP.rcnt, r * S + l);
        if (tab(EPP.rcnt, r * S + S - 1) != 0 || rows > cap) peer_bad = true;
    }
    if (peer_bad) {
        for (int64_t r = 0; r < R; ++r) { set_tab(EPP.srows, r, 0); set_tab(EPP.rrows, r, 0); }
        set_tab(EPP.state, 0, 1);
        raise_status();
        return;
    }
    for (int64_t r = 0; r < R; ++r) {
        int rows = 0;
        for (int64_t l = 0; l < L; ++l) rows += tab(EPP.rcnt, r * S + l);
        set_tab(EPP.rrows, r, rows);
    }
    int64_t total = 0;
    for (int64_t l = 0; l < L; ++l) {
        int64_t n = 0;
        for (int64_t r = 0; r < R; ++r) n += tab(EPP.rcnt, r * S + l);
        total += round_up(n, A);
    }
    if (total > EPP.maxrecv) {
        set_tab(EPP.state, 0, 1);
        raise_status();
        return;
    }
    int64_t start = 0;
    for (int64_t l = 0; l < L; ++l) {
        int64_t at = start;
        for (int64_t r = 0; r < R; ++r) {
            int64_t i0 = 0;
            for (int64_t m = 0; m < l; ++m) i0 += tab(EPP.rcnt, r * S + m);
            const int64_t c = tab(EPP.rcnt, r * S + l);
            for (int64_t i = 0; i < c; ++i) set_tab(EPP.dst, r * cap + i0 + i, int(at + i));
            at += c;
        }
        start += round_up(at - start, A);
        set_tab(EPP.offs, l, int(start));
    }
}

// The padded end of the last local expert (0 without experts).
int64_t received_rows() { return EPP.l > 0 ? int64_t(tab(EPP.offs, EPP.l - 1)) : 0; }

void pack(int64_t n)
{
    const int64_t rowb = EPP.rowb, cap = EPP.cap, k = EPP.topk;
    if (n >= EPP.nranks * cap * rowb) return;
    const int64_t row = n / rowb, b = n % rowb, p = row / cap, i = row % cap;
    const int dir = int(EPP.dir);
    if (i >= tab(dir == 0 ? EPP.srows : EPP.rrows, p)) return;
    const int64_t idx = tab(dir == 0 ? EPP.src : EPP.dst, row);
    const int64_t t = clamp(dir == 0 ? idx / k : idx, 0l, max(EPP.xrows - 1, 0l));
    const int64_t es = EPP.xes, pb = EPP.d * es, sb = EPP.scols * EPP.ses;
    uint v = 0u;
    if (b < pb) {
        if (int(EPP.wdt) == 0) {
            v = ld_u8(uint64_t(EPP.x), t * EPP.xs0 * es + b);
        } else { // weighted rows: x[t] * weights[t, j], rounded to x's dtype
            const int64_t j = clamp(idx % k, 0l, k - 1), c = b / es;
            const uint w = ld_f32_bits(uint64_t(EPP.w), t * EPP.w0 + j * EPP.w1, int(EPP.wdt));
            const uint prod = f32_mul_rn(ld_f32_bits(uint64_t(EPP.x), t * EPP.xs0 + c, int(EPP.xdt)), w);
            const uint e = int(EPP.xdt) == DT_F32 ? prod : f32_to_bf16(prod);
            v = (e >> uint(8 * (b % es))) & 0xFFu;
        }
    } else if (b < pb + sb) {
        v = ld_u8(uint64_t(EPP.s), t * EPP.ss0 * EPP.ses + (b - pb));
    }
    st_u8(uint64_t(EPP.wire), row * rowb + b, v);
}

// Dispatch's unpack may run: the step is not refused and out holds what arrives.
bool unpack_ok() { return !refused() && received_rows() <= EPP.orows; }

void zero(int64_t n)
{
    const int64_t rowbytes = EPP.d * EPP.oes;
    if (n < EPP.orows * rowbytes) {
        const int64_t r = n / rowbytes;
        st_u8(uint64_t(EPP.o), r * EPP.o0 * EPP.oes + n % rowbytes, 0u);
    }
    if (EPP.scols == 0) return;
    if (EPP.osblk != 0) {
        if (n < EPP.osbytes) st_u8(uint64_t(EPP.s), n, 0u);
        return;
    }
    const int64_t sbytes = EPP.scols * EPP.ses;
    if (n < EPP.orows * sbytes) st_u8(uint64_t(EPP.s), (n / sbytes) * EPP.ss0 * EPP.ses + n % sbytes, 0u);
}

int64_t blocked_offset(int64_t r, int64_t c, int64_t cols_pad)
{
    const int64_t tile = (r / 128) * (cols_pad / 4) + (c / 4);
    const int64_t inner = (r % 32) * 16 + ((r % 128) / 32) * 4 + (c % 4);
    return tile * 512 + inner;
}

void scatter(int64_t n)
{
    const int64_t L = EPP.l;
    if (n < L && uint64_t(EPP.offsout) != 0ul) set_tab(EPP.offsout, n, tab(EPP.offs, n));
    const int64_t rowb = EPP.rowb, cap = EPP.cap;
    if (n >= EPP.nranks * cap * rowb) return;
    const int64_t row = n / rowb, b = n % rowb, p = row / cap, i = row % cap;
    if (i >= tab(EPP.rrows, p)) return;
    const int64_t to = clamp(int64_t(tab(EPP.dst, row)), 0l, max(EPP.orows - 1, 0l)), es = EPP.oes, pb = EPP.d * es, sb = EPP.scols * EPP.ses;
    if (b >= pb + sb) return;
    const uint v = ld_u8(uint64_t(EPP.wire), row * rowb + b);
    if (b < pb) {
        st_u8(uint64_t(EPP.o), to * EPP.o0 * es + b, v);
    } else if (EPP.osblk == 0) {
        st_u8(uint64_t(EPP.s), to * EPP.ss0 * EPP.ses + (b - pb), v);
    } else { // the M-groups blocked layout over the padded offsets (ops-spec §4)
        int64_t g = 0, start = 0;
        while (g < L && tab(EPP.offs, g) <= to) {
            start += round_up(tab(EPP.offs, g) - (g > 0 ? tab(EPP.offs, g - 1) : 0), 128);
            ++g;
        }
        const int64_t r0 = g > 0 ? tab(EPP.offs, g - 1) : 0, cols_pad = round_up(EPP.scols, 4);
        st_u8(uint64_t(EPP.s), start * cols_pad + blocked_offset(to - r0, b - pb, cols_pad), v);
    }
}

void combine(int64_t n)
{
    const int64_t H = EPP.d, k = EPP.topk;
    if (n >= EPP.t * H) return;
    const int64_t t = n / H, h = n % H, rowb = EPP.rowb;
    const int wdt = int(EPP.xdt); // the wire rows' dtype (y's)
    precise float acc = 0.0;
    for (int64_t j = 0; j < k; ++j) {
        const int64_t at = clamp(int64_t(tab(EPP.pos, t * k + j)), 0l, EPP.nranks * EPP.cap - 1) * rowb;
        const uint v = wdt == DT_F32 ? ld_u32(uint64_t(EPP.wire) + uint64_t(at), h) : bf16_to_f32(ld_u16(uint64_t(EPP.wire) + uint64_t(at), h));
        const uint w = int(EPP.wdt) == 0 ? 0x3F800000u : ld_f32_bits(uint64_t(EPP.w), t * EPP.w0 + j * EPP.w1, int(EPP.wdt));
        precise float prod = uintBitsToFloat(f32_mul_rn(w, v));
        acc = acc + prod;
    }
    const int64_t o = t * EPP.o0 + h * EPP.o1;
    if (int(EPP.odt) == DT_F32) st_u32(uint64_t(EPP.o), o, floatBitsToUint(acc));
    else st_u16(uint64_t(EPP.o), o, f32_to_bf16(floatBitsToUint(acc)));
}

void main()
{
    const int64_t n = wg_linear() * 256 + int64_t(gl_LocalInvocationID.x);
    const int mode = int(EPP.mode);
    if (mode == EP_MODE_ROUTE) { if (n == 0) route(); return; }
    if (mode == EP_MODE_LAYOUT) { if (n == 0) layout_(); return; }
    if (refused()) return;
    if (mode == EP_MODE_PACK) {
        if (int(EPP.dir) == 1 && received_rows() > EPP.xrows) { if (n == 0) raise_status(); return; }
        pack(n);
    } else if (mode == EP_MODE_ZERO) {
        if (unpack_ok()) zero(n);
    } else if (mode == EP_MODE_SCATTER) {
        if (!unpack_ok()) { if (n == 0) raise_status(); return; }
        scatter(n);
    } else {
        combine(n);
    }
}
