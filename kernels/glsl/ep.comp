#version 460
// ep.comp — the expert-parallel routing ops of docs/ep.md ("Backend contract"), one mode
// per dispatch, rules and orders of backends/cpu/cpu_ep.c. Route and layout run on one
// lane (the stable order is the contract; correct, not fast); pack, the dispatch's zero
// fill and scatter move one byte per lane; combine sums one (token, column) per lane.
// Every mode reads the plan's state word and writes nothing when the step is refused.
// Indices read from tables are clamped before they address memory: a driver may execute
// the loads of a branch not taken (llvmpipe runs masked-off paths' loads), so a guard alone
// is not enough.
#include "ep_params.h"
#include "common.glsl"
#include "codec.glsl"
layout(local_size_x = 256) in;

int tab(int slot, int64_t i) { return ld_i32(PA(slot), i); }
void set_tab(int slot, int64_t i, int v) { st_i32(PA(slot), i, v); }
void raise_status() { atomicOr(QU32(PA(EP_STATUS)).v, 1u); }
bool refused() { return tab(EP_STATE, 0) != 0; }
int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// An element of a bf16 or f32 tensor as f32 bits.
uint ld_f32_bits(uint64_t base, int64_t i, int dt) { return dt == DT_F32 ? ld_u32(base, i) : bf16_to_f32(ld_u16(base, i)); }

void route()
{
    const int64_t T = P(EP_T), k = P(EP_TOPK), R = P(EP_NRANKS), S = P(EP_LMAX) + 1, E = P(EP_E), cap = P(EP_CAP);
    for (int64_t i = 0; i < R * S; ++i) set_tab(EP_SCRATCH, i, 0);
    bool bad = false;
    for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < k; ++j) {
            const int64_t e = ld_i32(PA(EP_IDS), t * P(EP_IDS0) + j * P(EP_IDS1));
            if (e < 0 || e >= E) bad = true;
            if (bad) continue;
            const int64_t ec = clamp(e, 0l, E - 1);
            const int64_t c = tab(EP_ERANK, ec) * S + tab(EP_ELOCAL, ec);
            set_tab(EP_SCRATCH, c, tab(EP_SCRATCH, c) + 1);
        }
    for (int64_t p = 0; p < R && !bad; ++p) {
        int64_t rows = 0;
        for (int64_t l = 0; l < S - 1; ++l) rows += tab(EP_SCRATCH, p * S + l);
        if (rows > cap) bad = true;
    }
    if (bad) {
        for (int64_t p = 0; p < R; ++p) {
            for (int64_t l = 0; l < S - 1; ++l) set_tab(EP_SCNT, p * S + l, 0);
            set_tab(EP_SCNT, p * S + S - 1, 1);
            set_tab(EP_SROWS, p, 0);
        }
        for (int64_t i = 0; i < T * k; ++i) set_tab(EP_POS, i, -1);
        set_tab(EP_STATE, 0, 1);
        raise_status();
        return;
    }
    for (int64_t p = 0; p < R; ++p) {
        int at = 0;
        for (int64_t l = 0; l < S - 1; ++l) {
            const int c = tab(EP_SCRATCH, p * S + l);
            set_tab(EP_SCNT, p * S + l, c);
            set_tab(EP_SCRATCH, p * S + l, at);
            at += c;
        }
        set_tab(EP_SCNT, p * S + S - 1, 0);
        set_tab(EP_SROWS, p, at);
    }
    for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < k; ++j) {
            const int64_t e = clamp(int64_t(ld_i32(PA(EP_IDS), t * P(EP_IDS0) + j * P(EP_IDS1))), 0l, E - 1);
            const int64_t p = tab(EP_ERANK, e), c = p * S + tab(EP_ELOCAL, e);
            const int i = tab(EP_SCRATCH, c);
            set_tab(EP_SCRATCH, c, i + 1);
            set_tab(EP_POS, t * k + j, int(p * cap + i));
            set_tab(EP_SRC, p * cap + i, int(t * k + j));
        }
    set_tab(EP_STATE, 0, 0);
}

void layout_()
{
    const int64_t R = P(EP_NRANKS), S = P(EP_LMAX) + 1, L = P(EP_L), A = P(EP_ALIGN), cap = P(EP_CAP);
    bool peer_bad = false;
    for (int64_t r = 0; r < R; ++r) {
        int64_t rows = 0;
        for (int64_t l = 0; l < S - 1; ++l) rows += tab(EP_RCNT, r * S + l);
        if (tab(EP_RCNT, r * S + S - 1) != 0 || rows > cap) peer_bad = true;
    }
    if (peer_bad) {
        for (int64_t r = 0; r < R; ++r) { set_tab(EP_SROWS, r, 0); set_tab(EP_RROWS, r, 0); }
        set_tab(EP_STATE, 0, 1);
        raise_status();
        return;
    }
    for (int64_t r = 0; r < R; ++r) {
        int rows = 0;
        for (int64_t l = 0; l < L; ++l) rows += tab(EP_RCNT, r * S + l);
        set_tab(EP_RROWS, r, rows);
    }
    int64_t total = 0;
    for (int64_t l = 0; l < L; ++l) {
        int64_t n = 0;
        for (int64_t r = 0; r < R; ++r) n += tab(EP_RCNT, r * S + l);
        total += round_up(n, A);
    }
    if (total > P(EP_MAXRECV)) {
        set_tab(EP_STATE, 0, 1);
        raise_status();
        return;
    }
    int64_t start = 0;
    for (int64_t l = 0; l < L; ++l) {
        int64_t at = start;
        for (int64_t r = 0; r < R; ++r) {
            int64_t i0 = 0;
            for (int64_t m = 0; m < l; ++m) i0 += tab(EP_RCNT, r * S + m);
            const int64_t c = tab(EP_RCNT, r * S + l);
            for (int64_t i = 0; i < c; ++i) set_tab(EP_DST, r * cap + i0 + i, int(at + i));
            at += c;
        }
        start += round_up(at - start, A);
        set_tab(EP_OFFS, l, int(start));
    }
}

// The padded end of the last local expert (0 without experts).
int64_t received_rows() { return P(EP_L) > 0 ? int64_t(tab(EP_OFFS, P(EP_L) - 1)) : 0; }

void pack(int64_t n)
{
    const int64_t rowb = P(EP_ROWB), cap = P(EP_CAP), k = P(EP_TOPK);
    if (n >= P(EP_NRANKS) * cap * rowb) return;
    const int64_t row = n / rowb, b = n % rowb, p = row / cap, i = row % cap;
    const int dir = PI(EP_DIR);
    if (i >= tab(dir == 0 ? EP_SROWS : EP_RROWS, p)) return;
    const int64_t idx = tab(dir == 0 ? EP_SRC : EP_DST, row);
    const int64_t t = clamp(dir == 0 ? idx / k : idx, 0l, max(P(EP_XROWS) - 1, 0l));
    const int64_t es = P(EP_XES), pb = P(EP_D) * es, sb = P(EP_SCOLS) * P(EP_SES);
    uint v = 0u;
    if (b < pb) {
        if (PI(EP_WDT) == 0) {
            v = ld_u8(PA(EP_X), t * P(EP_XS0) * es + b);
        } else { // weighted rows: x[t] * weights[t, j], rounded to x's dtype
            const int64_t j = clamp(idx % k, 0l, k - 1), c = b / es;
            const uint w = ld_f32_bits(PA(EP_W), t * P(EP_W0) + j * P(EP_W1), PI(EP_WDT));
            const uint prod = f32_mul_rn(ld_f32_bits(PA(EP_X), t * P(EP_XS0) + c, PI(EP_XDT)), w);
            const uint e = PI(EP_XDT) == DT_F32 ? prod : f32_to_bf16(prod);
            v = (e >> uint(8 * (b % es))) & 0xFFu;
        }
    } else if (b < pb + sb) {
        v = ld_u8(PA(EP_S), t * P(EP_SS0) * P(EP_SES) + (b - pb));
    }
    st_u8(PA(EP_WIRE), row * rowb + b, v);
}

// Dispatch's unpack may run: the step is not refused and out holds what arrives.
bool unpack_ok() { return !refused() && received_rows() <= P(EP_OROWS); }

void zero(int64_t n)
{
    const int64_t rowbytes = P(EP_D) * P(EP_OES);
    if (n < P(EP_OROWS) * rowbytes) {
        const int64_t r = n / rowbytes;
        st_u8(PA(EP_OUT), r * P(EP_O0) * P(EP_OES) + n % rowbytes, 0u);
    }
    if (P(EP_SCOLS) == 0) return;
    if (P(EP_OSBLK) != 0) {
        if (n < P(EP_OSBYTES)) st_u8(PA(EP_S), n, 0u);
        return;
    }
    const int64_t sbytes = P(EP_SCOLS) * P(EP_SES);
    if (n < P(EP_OROWS) * sbytes) st_u8(PA(EP_S), (n / sbytes) * P(EP_SS0) * P(EP_SES) + n % sbytes, 0u);
}

int64_t blocked_offset(int64_t r, int64_t c, int64_t cols_pad)
{
    const int64_t tile = (r / 128) * (cols_pad / 4) + (c / 4);
    const int64_t inner = (r % 32) * 16 + ((r % 128) / 32) * 4 + (c % 4);
    return tile * 512 + inner;
}

void scatter(int64_t n)
{
    const int64_t L = P(EP_L);
    if (n < L && PA(EP_OFFSOUT) != 0ul) set_tab(EP_OFFSOUT, n, tab(EP_OFFS, n));
    const int64_t rowb = P(EP_ROWB), cap = P(EP_CAP);
    if (n >= P(EP_NRANKS) * cap * rowb) return;
    const int64_t row = n / rowb, b = n % rowb, p = row / cap, i = row % cap;
    if (i >= tab(EP_RROWS, p)) return;
    const int64_t to = clamp(int64_t(tab(EP_DST, row)), 0l, max(P(EP_OROWS) - 1, 0l)), es = P(EP_OES), pb = P(EP_D) * es, sb = P(EP_SCOLS) * P(EP_SES);
    if (b >= pb + sb) return;
    const uint v = ld_u8(PA(EP_WIRE), row * rowb + b);
    if (b < pb) {
        st_u8(PA(EP_OUT), to * P(EP_O0) * es + b, v);
    } else if (P(EP_OSBLK) == 0) {
        st_u8(PA(EP_S), to * P(EP_SS0) * P(EP_SES) + (b - pb), v);
    } else { // the M-groups blocked layout over the padded offsets (ops-spec §4)
        int64_t g = 0, start = 0;
        while (g < L && tab(EP_OFFS, g) <= to) {
            start += round_up(tab(EP_OFFS, g) - (g > 0 ? tab(EP_OFFS, g - 1) : 0), 128);
            ++g;
        }
        const int64_t r0 = g > 0 ? tab(EP_OFFS, g - 1) : 0, cols_pad = round_up(P(EP_SCOLS), 4);
        st_u8(PA(EP_S), start * cols_pad + blocked_offset(to - r0, b - pb, cols_pad), v);
    }
}

void combine(int64_t n)
{
    const int64_t H = P(EP_D), k = P(EP_TOPK);
    if (n >= P(EP_T) * H) return;
    const int64_t t = n / H, h = n % H, rowb = P(EP_ROWB);
    const int wdt = PI(EP_XDT); // the wire rows' dtype (y's)
    precise float acc = 0.0;
    for (int64_t j = 0; j < k; ++j) {
        const int64_t at = clamp(int64_t(tab(EP_POS, t * k + j)), 0l, P(EP_NRANKS) * P(EP_CAP) - 1) * rowb;
        const uint v = wdt == DT_F32 ? ld_u32(PA(EP_WIRE) + uint64_t(at), h) : bf16_to_f32(ld_u16(PA(EP_WIRE) + uint64_t(at), h));
        const uint w = PI(EP_WDT) == 0 ? 0x3F800000u : ld_f32_bits(PA(EP_W), t * P(EP_W0) + j * P(EP_W1), PI(EP_WDT));
        precise float prod = uintBitsToFloat(f32_mul_rn(w, v));
        acc = acc + prod;
    }
    const int64_t o = t * P(EP_O0) + h * P(EP_O1);
    if (PI(EP_ODT) == DT_F32) st_u32(PA(EP_OUT), o, floatBitsToUint(acc));
    else st_u16(PA(EP_OUT), o, f32_to_bf16(floatBitsToUint(acc)));
}

void main()
{
    const int64_t n = wg_linear() * 256 + int64_t(gl_LocalInvocationID.x);
    const int mode = PI(EP_MODE);
    if (mode == EP_MODE_ROUTE) { if (n == 0) route(); return; }
    if (mode == EP_MODE_LAYOUT) { if (n == 0) layout_(); return; }
    if (refused()) return;
    if (mode == EP_MODE_PACK) {
        if (PI(EP_DIR) == 1 && received_rows() > P(EP_XROWS)) { if (n == 0) raise_status(); return; }
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
