/*
 * The machinery of the API fuzz target: decoding, slot mutation and placement, buffers,
 * and the invariants (see fuzz_harness.h and docs/fuzzing.md). Arithmetic on fuzzed
 * values is done in __int128 or saturated, so the harness itself has no overflow for
 * UBSan to report: every finding is the library's.
 */
#include "fuzz_harness.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef __int128 i128;

qgmm_context *fz_ctx;
static qgmm_buffer *g_sentinel_buf;
static char g_ignore[1024];
static int g_trace;

/* ------------------------------------------------------------------ reporting */
static void dump_call(const fz_call *c)
{
    if (!c) return;
    fprintf(stderr, "  op %s, %d slot(s):\n", c->op, c->n);
    for (int i = 0; i < c->n; ++i) {
        const fz_slot *s = &c->s[i];
        const qgmm_tensor *t = &s->t;
        fprintf(stderr, "    %-12s %-3s %s buf %d size %zu offset %zu dtype %d rank %d shape (%lld, %lld, %lld)"
                " strides (%lld, %lld, %lld)\n",
                s->name, s->role == FZ_OUT ? "out" : s->role == FZ_WS ? "ws" : "in",
                s->null_ptr ? "NULL   " : s->absent ? "absent " : "present", s->buf,
                s->buf >= 0 && s->buf < FZ_MAX_BUFS ? c->size[s->buf] : 0, t->offset, (int)t->dtype,
                t->rank, (long long)t->shape[0], (long long)t->shape[1], (long long)t->shape[2],
                (long long)t->strides[0], (long long)t->strides[1], (long long)t->strides[2]);
        if (s->is_offs && c->offs_vals[i]) {
            const int64_t g = t->shape[0] < 8 ? t->shape[0] : 8;
            fprintf(stderr, "      offsets written:");
            for (int64_t k = 0; k < g; ++k) fprintf(stderr, " %d", c->offs_vals[i][k]);
            fprintf(stderr, "%s\n", t->shape[0] > 8 ? " ..." : "");
        }
    }
    if (c->ws_slot >= 0) fprintf(stderr, "    workspace region [0, %zu)\n", c->ws_need);
    for (int b = 0; b < FZ_MAX_BUFS; ++b)
        if (c->buf[b] && c->root[b] != b)
            fprintf(stderr, "    buffer %d wraps the memory of buffer %d from byte %zu\n", b, c->root[b], c->base[b]);
}

static int violation(const fz_call *c, const char *inv, const char *fmt, va_list ap)
{
    char want[264], want_op[264];
    snprintf(want, sizeof want, ",%s,", inv);
    snprintf(want_op, sizeof want_op, ",%s@%s,", inv, c ? c->op : "");
    if (g_ignore[0] && (strstr(g_ignore, want) || strstr(g_ignore, want_op))) return 1;
    fprintf(stderr, "\nqgmm-fuzz: invariant '%s' violated by %s: ", inv, c ? c->op : "?");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    dump_call(c);
    fprintf(stderr, "  last error: %s\n", qgmm_last_error(fz_ctx));
    abort();
}

int fz_report(const fz_call *c, const char *inv, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int r = violation(c, inv, fmt, ap);
    va_end(ap);
    return r;
}

void fz_init(void)
{
    const char *ig = getenv("QGMM_FUZZ_IGNORE");
    if (ig && ig[0]) snprintf(g_ignore, sizeof g_ignore, ",%s,", ig);
    const char *tr = getenv("QGMM_FUZZ_TRACE");
    g_trace = tr && tr[0] == '1';
    if (qgmm_context_create("cpu", 0, &fz_ctx) != QGMM_OK ||
        qgmm_buffer_alloc(fz_ctx, 16, &g_sentinel_buf) != QGMM_OK) {
        fprintf(stderr, "qgmm-fuzz: cannot create a cpu context: %s\n", qgmm_last_error(NULL));
        exit(1);
    }
}

/* ------------------------------------------------------------------ input bytes */
uint8_t fz_u8(fz_in *in) { return in->i < in->n ? in->p[in->i++] : 0; }

uint32_t fz_u32(fz_in *in)
{
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v |= (uint32_t)fz_u8(in) << (8 * k);
    return v;
}

uint64_t fz_u64(fz_in *in) { return (uint64_t)fz_u32(in) | (uint64_t)fz_u32(in) << 32; }

int fz_rare(fz_in *in)
{
    const uint8_t b = fz_u8(in);
    return b < 192 ? 0 : b < 232 ? 1 : b < 248 ? 2 : 3;
}

static int64_t edge_value(uint8_t k, int64_t granule)
{
    static const int64_t v[] = {0, 1, -1, 2, 65537, (int64_t)1 << 31, ((int64_t)1 << 32) + 1,
                                (int64_t)1 << 40, ((int64_t)1 << 40) + 1, (int64_t)1 << 62,
                                INT64_MAX, INT64_MIN, 3, 127, 129};
    const unsigned n = sizeof v / sizeof v[0];
    if (k % (n + 2) == n) return granule + 1;
    if (k % (n + 2) == n + 1) return granule > 1 ? granule - 1 : 0;
    return v[k % (n + 2)];
}

int64_t fz_dim(fz_in *in, int64_t granule, int64_t cap)
{
    const uint8_t b = fz_u8(in);
    if (cap < granule) cap = granule;
    if (b >= 236) return edge_value(b, granule);
    return granule * (1 + (int64_t)b % (cap / granule));
}

int64_t fz_groups(fz_in *in)
{
    static const int64_t v[] = {32767, 32768, 65535, 65536, 65537, 0, -1, (int64_t)1 << 31,
                                100000, 4096, 16, 9, INT64_MAX, 2, 3, 64};
    const uint8_t b = fz_u8(in);
    if (b >= 240) return v[b - 240];
    return 1 + b % 8;
}

qgmm_dtype fz_fp8(fz_in *in, int ocp_only)
{
    static const qgmm_dtype all[3] = {QGMM_F8E4M3FN, QGMM_F8E5M2, QGMM_F8E4M3FNUZ};
    return all[fz_u8(in) % (ocp_only ? 2 : 3)];
}

/* ------------------------------------------------------------------ geometry */
static i128 clamp128(i128 v, i128 lim) { return v > lim ? lim : v < -lim ? -lim : v; }

/* The byte range [lo, hi) relative to the offset that a tensor's elements occupy, and its
 * element count. Returns 0 for a rank or dtype no geometry exists for. */
static int geom(const qgmm_tensor *t, i128 *lo, i128 *hi, i128 *numel)
{
    const size_t es = qgmm_dtype_size(t->dtype);
    if (t->rank < 1 || t->rank > QGMM_MAX_RANK || es == 0) return 0;
    i128 n = 1, l = 0, h = 0;
    const i128 lim = (i128)1 << 110;
    for (int d = 0; d < t->rank; ++d) {
        if (t->shape[d] < 0) return 0;
        n = t->shape[d] && n > lim / t->shape[d] ? lim : n * t->shape[d];
    }
    *numel = n;
    if (n == 0) { *lo = *hi = 0; return 1; }
    for (int d = 0; d < t->rank; ++d) {
        const i128 e = clamp128((i128)(t->shape[d] - 1) * t->strides[d], lim);
        if (e < 0) l += e; else h += e;
    }
    *lo = l * (i128)es;
    *hi = (h + 1) * (i128)es;
    return 1;
}

/* Whether every element of an accepted tensor lies inside its buffer. */
static int inside(const fz_call *c, const fz_slot *s)
{
    i128 lo, hi, n;
    if (!geom(&s->t, &lo, &hi, &n)) return 0;
    const i128 size = (i128)c->size[s->buf];
    if ((i128)s->t.offset > size) return 0;
    return n == 0 || ((i128)s->t.offset + lo >= 0 && (i128)s->t.offset + hi <= size);
}

/* Calls fn for the byte offset of every element (the whole span as one run when there are
 * too many elements to walk). Stops and returns 1 when fn returns 1. */
typedef int (*elem_fn)(void *u, size_t off, size_t len);
static int each_elem(const qgmm_tensor *t, elem_fn fn, void *u)
{
    i128 lo, hi, n;
    if (!geom(t, &lo, &hi, &n) || n == 0) return 0;
    const size_t es = qgmm_dtype_size(t->dtype);
    if (n > ((i128)1 << 22)) return fn(u, (size_t)((i128)t->offset + lo), (size_t)(hi - lo));
    const int64_t s0 = t->rank > 0 ? t->shape[0] : 1, s1 = t->rank > 1 ? t->shape[1] : 1,
                  s2 = t->rank > 2 ? t->shape[2] : 1;
    const i128 t0 = t->strides[0], t1 = t->rank > 1 ? t->strides[1] : 0,
               t2 = t->rank > 2 ? t->strides[2] : 0;
    for (int64_t a = 0; a < s0; ++a)
        for (int64_t b = 0; b < s1; ++b)
            for (int64_t k = 0; k < s2; ++k) {
                const i128 off = (i128)t->offset + (a * t0 + b * t1 + k * t2) * (i128)es;
                if (fn(u, (size_t)off, es)) return 1;
            }
    return 0;
}

/* ------------------------------------------------------------------ slots */
enum { FZ_FRESH = 0, FZ_OVERLAP = 1, FZ_ABS = 2 };

void fz_begin(fz_call *c, const char *op)
{
    memset(c, 0, sizeof *c);
    c->op = op;
    c->ws_slot = -1;
}

static void contiguous(qgmm_tensor *t)
{
    i128 stride = 1;
    for (int d = QGMM_MAX_RANK - 1; d >= 0; --d) {
        if (d >= t->rank) continue;
        t->strides[d] = (int64_t)clamp128(stride, INT64_MAX);
        stride = clamp128(stride * (t->shape[d] > 0 ? t->shape[d] : 1), INT64_MAX);
    }
}

int fz_add(fz_call *c, const char *name, fz_role role, qgmm_dtype dt, int rank, int64_t d0,
           int64_t d1, int64_t d2)
{
    const int i = c->n++;
    fz_slot *s = &c->s[i];
    s->name = name;
    s->role = role;
    s->buf = i;
    s->offs_from = -1;
    s->ext_slot = -1;
    s->ext_multiple = 1;
    s->t.dtype = dt;
    s->t.rank = rank;
    s->t.shape[0] = d0;
    s->t.shape[1] = d1;
    s->t.shape[2] = d2;
    contiguous(&s->t);
    return i;
}

int fz_add_offs(fz_call *c, fz_in *in, const char *name, int64_t groups, int64_t len,
                int64_t granule)
{
    const int i = fz_add(c, name, FZ_IN, QGMM_I32, 1, groups, 0, 0);
    fz_slot *s = &c->s[i];
    s->is_offs = 1;
    s->offs_mode = fz_rare(in) ? fz_u8(in) : 0;
    s->offs_seed = fz_u32(in);
    s->offs_len = len;
    s->offs_granule = granule > 0 ? granule : 1;
    return i;
}

void fz_offs_extent(fz_call *c, int offs_slot, int ext_slot, int dim, int64_t mult)
{
    c->s[offs_slot].ext_slot = ext_slot;
    c->s[offs_slot].ext_dim = dim;
    c->s[offs_slot].ext_mult = mult;
}

static int64_t edge_stride(uint8_t k)
{
    static const int64_t v[] = {0, -1, 2, 3, (int64_t)1 << 20, (int64_t)1 << 24, (int64_t)1 << 31,
                                (int64_t)1 << 32, (int64_t)1 << 40, (int64_t)1 << 48,
                                (int64_t)1 << 62, INT64_MAX, INT64_MIN, ((int64_t)1 << 62) + 1,
                                -((int64_t)1 << 40), 7};
    return v[k % 16];
}

static void permuted(qgmm_tensor *t, uint8_t which)
{
    static const int p3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    const int r = t->rank < 1 ? 1 : t->rank > 3 ? 3 : t->rank;
    int order[3], k = 0;
    for (int j = 0; j < 3; ++j) {
        const int d = r == 3 ? p3[which % 6][j] : r == 2 ? (which & 1 ? 1 - j : j) : 0;
        if (d < r && k < r) order[k++] = d;
    }
    i128 stride = 1;
    for (int j = r - 1; j >= 0; --j) {
        t->strides[order[j]] = (int64_t)clamp128(stride, INT64_MAX);
        stride = clamp128(stride * (t->shape[order[j]] > 0 ? t->shape[order[j]] : 1), INT64_MAX);
    }
}

static void mutate_one(fz_call *c, int i, fz_in *in)
{
    fz_slot *s = &c->s[i];
    qgmm_tensor *t = &s->t;
    uint8_t kind = fz_u8(in);
    const uint8_t arg = fz_u8(in);
    const int d = arg % 3;
    if (s->role == FZ_WS) kind = kind % 3 ? 11 : 9; /* a workspace is a whole buffer */
    switch (kind % 16) {
    case 0: t->dtype = (qgmm_dtype)(arg % 11); break;
    case 1: t->rank = arg % 5; break;
    case 2: t->shape[d] = edge_value(fz_u8(in), 32); break;
    case 3:
        if (arg & 8) { if (t->shape[d] < INT64_MAX) t->shape[d]++; }
        else if (t->shape[d] > INT64_MIN) t->shape[d]--;
        break;
    case 4: t->strides[d] = edge_stride(fz_u8(in)); break;
    case 5: for (int k = 0; k < QGMM_MAX_RANK; ++k) t->strides[k] = 1; break;
    case 6: permuted(t, arg); break;
    case 7: { /* rows padded: every dim's stride grows by the padding of the dims inside it */
        const int64_t pad = 1 + arg % 7;
        for (int k = 0; k + 1 < t->rank && k < QGMM_MAX_RANK; ++k)
            if (t->strides[k] <= INT64_MAX - pad * (k + 1)) t->strides[k] += pad * (k + 1);
        break;
    }
    case 8:
        switch (arg % 6) {
        case 0: s->adj = 1; break;
        case 1: s->adj = 2; break;
        case 2: s->place = FZ_ABS; s->abs_off = SIZE_MAX; break;
        case 3: s->place = FZ_ABS; s->abs_off = SIZE_MAX - fz_u8(in); break;
        case 4: s->place = FZ_ABS; s->abs_off = (size_t)1 << 40; break;
        default: s->place = FZ_ABS; s->abs_off = (size_t)fz_u64(in); break;
        }
        break;
    case 9:
        s->absent = 1;
        s->null_ptr = arg & 1;
        break;
    case 10:
        s->place = FZ_OVERLAP;
        s->ref = arg % c->n;
        s->delta = (int64_t)(int8_t)fz_u8(in) * (1 + (arg >> 5));
        break;
    case 11: s->buf = arg % FZ_MAX_BUFS; s->place = FZ_FRESH; break;
    case 12: t->strides[d] = 0; break;
    case 13: t->strides[d] = t->strides[d] > INT64_MIN && t->strides[d] != 0 ? -t->strides[d] : -1; break;
    case 14: t->shape[d] = 0; break;
    default: t->shape[d] = 1; break;
    }
}

void fz_mutate(fz_call *c, fz_in *in)
{
    for (int i = 0; i < c->n; ++i)
        for (int k = fz_rare(in); k > 0; --k) mutate_one(c, i, in);
}

const qgmm_tensor *fz_t(const fz_call *c, int slot)
{
    if (slot < 0 || c->s[slot].null_ptr) return NULL;
    return &c->s[slot].t;
}

qgmm_buffer *fz_ws(const fz_call *c)
{
    if (c->ws_slot < 0 || c->s[c->ws_slot].absent) return NULL;
    return c->buf[c->s[c->ws_slot].buf];
}

/* ------------------------------------------------------------------ offsets contents */
static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static int cmp_i32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void gen_offsets(int32_t *o, int64_t G, const fz_slot *s, const int32_t *from)
{
    uint64_t r = 0x9E3779B97F4A7C15ull ^ s->offs_seed;
    const int64_t gran = s->offs_granule;
    int64_t len = s->offs_len < 0 ? 0 : s->offs_len > INT32_MAX ? INT32_MAX : s->offs_len;
    const int64_t units = len / gran;
    if (from) { /* padded offsets of `from`: cumsum of sizes rounded up to the alignment */
        int64_t run = 0, prev = 0;
        const int64_t A = s->offs_align > 0 ? s->offs_align : 1;
        for (int64_t g = 0; g < G; ++g) {
            const int64_t size = (int64_t)from[g] - prev;
            run += size > 0 ? (size + A - 1) / A * A : 0;
            if (run > INT32_MAX) run = INT32_MAX;
            o[g] = (int32_t)run;
            prev = from[g];
        }
        if (s->offs_mode == 0) return;
    } else {
        for (int64_t g = 0; g < G; ++g) o[g] = (int32_t)(rng_next(&r) % (uint64_t)(units + 1) * gran);
        qsort(o, (size_t)G, sizeof *o, cmp_i32);
        if (s->offs_mode % 12 != 1) o[G - 1] = (int32_t)(units * gran);
    }
    const int64_t k = (int64_t)(rng_next(&r) % (uint64_t)G);
    switch (s->offs_mode % 12) {
    case 2: for (int64_t g = 0; g < G; ++g) o[g] = (int32_t)(units * gran); break;
    case 3: memset(o, 0, (size_t)G * sizeof *o); break;
    case 4:
        if (G >= 2) o[k > 0 ? k - 1 : 0] = (int32_t)((int64_t)o[k > 0 ? k : 1] + 1);
        else o[0] = -1;
        break;
    case 5: o[0] = -(int32_t)gran; break;
    case 6: o[G - 1] = (int32_t)(len < INT32_MAX ? len + 1 : INT32_MAX); break;
    case 7: for (int64_t g = 0; g < G; ++g) o[g] = (int32_t)rng_next(&r); break;
    case 8: o[k] = INT32_MAX; break;
    case 9: o[k] = INT32_MIN; break;
    case 10: if (o[k] < INT32_MAX) o[k] += 1; break;
    case 11: for (int64_t g = 0; g < G; ++g) o[g] = g < k ? 0 : (int32_t)(units * gran); break;
    default: break;
    }
}

static void write_offsets(fz_call *c, int i)
{
    fz_slot *s = &c->s[i];
    const qgmm_tensor *t = &s->t;
    if (s->absent || s->null_ptr || t->dtype != QGMM_I32 || t->rank < 1 || t->rank > 3) return;
    const int64_t G = t->shape[0];
    if (G < 1 || G > 65536 * 2) return;
    int32_t *o = calloc((size_t)G, sizeof *o);
    if (!o) return;
    const int32_t *from = NULL;
    if (s->offs_from >= 0 && c->offs_vals[s->offs_from] && c->s[s->offs_from].t.shape[0] >= G)
        from = c->offs_vals[s->offs_from];
    gen_offsets(o, G, s, from);
    c->offs_vals[i] = o;
    for (int64_t g = 0; g < G; ++g) {
        const i128 off = (i128)t->offset + (i128)g * t->strides[0] * 4;
        if (off >= 0 && off + 4 <= (i128)c->size[s->buf]) memcpy(c->host[s->buf] + (size_t)off, &o[g], 4);
    }
}

/* ------------------------------------------------------------------ buffers */
static void fill(uint8_t *p, size_t n, int mode, uint64_t seed)
{
    uint64_t r = 0xD1B54A32D192ED03ull ^ seed;
    switch (mode) {
    case 0: /* moderate magnitudes in every float format, either sign: 0x38..0x47 | sign */
        for (size_t k = 0; k < n; k += 8) {
            uint64_t v = rng_next(&r);
            v = (v & 0x8080808080808080ull) | (0x3838383838383838ull + ((v >> 1) & 0x0707070707070707ull) * 2);
            memcpy(p + k, &v, n - k < 8 ? n - k : 8);
        }
        break;
    case 1:
        for (size_t k = 0; k < n; k += 8) {
            const uint64_t v = rng_next(&r);
            memcpy(p + k, &v, n - k < 8 ? n - k : 8);
        }
        break;
    case 2: memset(p, 0, n); break;
    default: memset(p, 0xFF, n); break;
    }
}

/* Triage of a known finding (QGMM_FUZZ_IGNORE=huge-empty): an empty tensor with a huge
 * extent elsewhere, which some ops walk element-free for minutes. */
static int huge_empty(const fz_call *c)
{
    for (int i = 0; i < c->n; ++i) {
        i128 lo, hi, n;
        const qgmm_tensor *t = &c->s[i].t;
        if (c->s[i].absent || !geom(t, &lo, &hi, &n) || n) continue;
        for (int d = 0; d < t->rank; ++d)
            if (t->shape[d] > (1 << 24)) return 1;
    }
    return 0;
}

int fz_layout(fz_call *c, fz_in *in)
{
    i128 need[FZ_MAX_BUFS] = {0};
    int used[FZ_MAX_BUFS] = {0};
    const i128 cap = (i128)FZ_BUF_CAP;
    if (strstr(g_ignore, ",huge-empty,") && huge_empty(c)) return 0;
    for (int i = 0; i < c->n; ++i) {
        fz_slot *s = &c->s[i];
        if (s->absent || s->null_ptr) continue;
        i128 lo = 0, hi = 0, n = 0;
        if (!geom(&s->t, &lo, &hi, &n) || n == 0) lo = hi = 0;
        i128 off;
        if (s->place == FZ_OVERLAP && s->ref < i && !c->s[s->ref].absent && !c->s[s->ref].null_ptr) {
            s->buf = c->s[s->ref].buf;
            off = (i128)c->s[s->ref].t.offset + s->delta;
            if (off < 0) off = 0;
        } else if (s->place == FZ_ABS) {
            off = (i128)s->abs_off;
        } else {
            off = (need[s->buf] + 63) / 64 * 64 + (lo < 0 ? -lo : 0);
        }
        used[s->buf] = 1;
        const i128 end = off + hi;
        if (off <= cap) need[s->buf] = end > need[s->buf] ? (end < cap ? end : cap) : need[s->buf];
        s->t.offset = (size_t)(uint64_t)(off + (i128)s->adj); /* wraps for the huge ones, on purpose */
    }
    size_t total = 0;
    for (int b = 0; b < FZ_MAX_BUFS; ++b) {
        if (!used[b]) continue;
        const uint8_t k = fz_u8(in);
        const uint64_t seed = fz_u32(in);
        i128 size = need[b];
        switch ((k >> 3) & 7) {
        case 1: size += 1; break;
        case 2: size += 64; break;
        case 3: size += 256; break;
        case 4: size -= 1; break;
        case 5: size -= 4; break;
        case 6: size /= 2; break;
        case 7: size = 0; break;
        default: break;
        }
        if (size < 0) size = 0;
        if (size > cap) size = cap;
        if ((size_t)size > FZ_TOTAL_CAP - total) size = (i128)(FZ_TOTAL_CAP - total);
        total += (size_t)size;
        c->size[b] = (size_t)size;
        c->root[b] = b;
        int alias = -1; /* a second buffer over the memory of an earlier one */
        for (int j = 0; ((k >> 2) & 3) == 2 && j < b; ++j)
            if (c->buf[j] && c->root[j] == j) alias = j;
        qgmm_status st;
        if (alias >= 0) {
            c->root[b] = alias;
            c->base[b] = (size_t)(seed % (c->size[alias] + 1)) & ~(size_t)15;
            if (c->size[b] > c->size[alias] - c->base[b]) c->size[b] = c->size[alias] - c->base[b];
            c->host[b] = c->host[alias] + c->base[b];
            st = qgmm_buffer_wrap(fz_ctx, c->host[b], c->size[b], &c->buf[b]);
        } else if ((k >> 2) & 1) {
            st = qgmm_buffer_alloc(fz_ctx, c->size[b], &c->buf[b]);
            if (st == QGMM_OK) c->host[b] = qgmm_buffer_native(c->buf[b]);
        } else {
            /* caller-owned memory of exactly the size: ASan sees one byte past the end */
            c->owned[b] = malloc(c->size[b] ? c->size[b] : 1);
            if (!c->owned[b]) return 0;
            st = qgmm_buffer_wrap(fz_ctx, c->owned[b], c->size[b], &c->buf[b]);
            c->host[b] = c->owned[b];
        }
        if (st != QGMM_OK || !c->host[b]) {
            fz_report(c, "small-alloc", "a %zu-byte buffer could not be made: %s", c->size[b],
                      qgmm_last_error(fz_ctx));
            return 0;
        }
        if (qgmm_buffer_size(c->buf[b]) != c->size[b])
            fz_report(c, "buffer-size", "qgmm_buffer_size says %zu for a %zu-byte buffer",
                      qgmm_buffer_size(c->buf[b]), c->size[b]);
        if (alias < 0) fill(c->host[b], c->size[b], k & 3, seed);
    }
    for (int i = 0; i < c->n; ++i)
        if (!c->s[i].absent) c->s[i].t.buffer = c->s[i].null_ptr ? NULL : c->buf[c->s[i].buf];
    for (int i = 0; i < c->n; ++i)
        if (c->s[i].is_offs) write_offsets(c, i);
    return 1;
}

void fz_arm(fz_call *c)
{
    for (int b = 0; b < FZ_MAX_BUFS; ++b) {
        if (!c->buf[b] || c->root[b] != b) continue;
        c->snap[b] = malloc(c->size[b] ? c->size[b] : 1);
        if (!c->snap[b]) abort();
        memcpy(c->snap[b], c->host[b], c->size[b]);
    }
    /* A call that fails must leave its own message: set a known one first. */
    (void)qgmm_buffer_fill(g_sentinel_buf, SIZE_MAX - 7, 1, 0);
    snprintf(c->sentinel, sizeof c->sentinel, "%s", qgmm_last_error(fz_ctx));
}

void fz_release(fz_call *c)
{
    for (int b = 0; b < FZ_MAX_BUFS; ++b) {
        qgmm_buffer_free(c->buf[b]);
        free(c->owned[b]);
        free(c->snap[b]);
    }
    for (int i = 0; i < FZ_MAX_SLOTS; ++i) free(c->offs_vals[i]);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------------ invariants */
void fz_check_status(const fz_call *c, qgmm_status rc)
{
    switch (rc) {
    case QGMM_OK: case QGMM_ERR_INVALID_ARGUMENT: case QGMM_ERR_UNSUPPORTED:
    case QGMM_ERR_OUT_OF_MEMORY:
        break;
    default:
        /* the cpu backend has no runtime to fail (DEVICE, BACKEND_UNAVAILABLE), bad offsets
         * are reported by qgmm_synchronize only, and INTERNAL is a bug by its name */
        if (fz_report(c, "status", "returned %d (%s), not a status a cpu call may return", (int)rc,
                      qgmm_status_string(rc)))
            return;
    }
    if (rc == QGMM_OK) return;
    const char *e = qgmm_last_error(c->tls_error ? NULL : fz_ctx);
    if (!e[0]) fz_report(c, "error-message", "returned %s with an empty qgmm_last_error", qgmm_status_string(rc));
    else if (!strcmp(e, c->sentinel))
        fz_report(c, "error-message", "returned %s but left the previous message: %s", qgmm_status_string(rc), e);
}

typedef struct mark_ctx {
    fz_call *c;
    uint8_t *owner;    /* per byte of the root buffer: 0, slot + 1, or FZ_MAX_SLOTS + 1 (workspace) */
    size_t base;       /* where the tensor's buffer starts in the root */
    size_t size;       /* the root's size */
    int slot;
    int hit;           /* owner found where a byte was to be marked */
    size_t hit_off;
} mark_ctx;

static int mark_out(void *u, size_t off, size_t len)
{
    mark_ctx *m = u;
    off += m->base;
    for (size_t k = 0; k < len; ++k) {
        if (off + k >= m->size) break;
        if (m->owner[off + k]) { m->hit = m->owner[off + k]; m->hit_off = off + k; return 1; }
        m->owner[off + k] = (uint8_t)(m->slot + 1);
    }
    return 0;
}

static int probe_in(void *u, size_t off, size_t len)
{
    mark_ctx *m = u;
    off += m->base;
    for (size_t k = 0; k < len; ++k) {
        if (off + k >= m->size) break;
        if (m->owner[off + k]) { m->hit = m->owner[off + k]; m->hit_off = off + k; return 1; }
    }
    return 0;
}

static const char *owner_name(const fz_call *c, int owner)
{
    return owner == FZ_MAX_SLOTS + 1 ? "the workspace" : c->s[owner - 1].name;
}

static int present(const fz_slot *s) { return !s->absent && !s->null_ptr; }

/* The extent slot i's offsets index, or -1 when not known. */
static int64_t offs_extent(const fz_call *c, const fz_slot *s)
{
    if (s->ext_slot == -2) return INT32_MAX;
    if (s->ext_slot < 0 || !present(&c->s[s->ext_slot])) return -1;
    const qgmm_tensor *t = &c->s[s->ext_slot].t;
    if (s->ext_dim < 0 || s->ext_dim >= t->rank || s->ext_dim >= QGMM_MAX_RANK) return -1;
    const i128 e = (i128)t->shape[s->ext_dim] * s->ext_mult;
    return e > INT64_MAX ? -1 : (int64_t)e;
}

/* Whether the offsets the op saw (read from the snapshot) break the monotone, in-range
 * rule that every grouped op enforces, or the op's group-size multiple. */
static int offsets_bad(const fz_call *c, const fz_slot *s, int64_t extent)
{
    int32_t prev = 0;
    if (s->t.dtype != QGMM_I32 || s->t.rank != 1) return 0;
    for (int64_t g = 0; g < s->t.shape[0]; ++g) {
        int32_t v;
        memcpy(&v, c->snap[c->root[s->buf]] + c->base[s->buf] + s->t.offset + (size_t)(g * s->t.strides[0]) * 4, 4);
        if (v < prev || v > extent || ((int64_t)v - prev) % s->ext_multiple) return 1;
        prev = v;
    }
    return 0;
}

static void check_accepted(fz_call *c, qgmm_status sync)
{
    for (int i = 0; i < c->n; ++i) {
        const fz_slot *s = &c->s[i];
        if (!present(s) || s->role == FZ_WS) continue;
        if (!inside(c, s) &&
            fz_report(c, "accepted-out-of-bounds", "%s addresses bytes outside its %zu-byte buffer",
                      s->name, c->size[s->buf]))
            return;
    }
    /* the one aliasing rule: an output overlaps no input, no other output, not itself, and
     * not the workspace region */
    uint8_t *owner[FZ_MAX_BUFS] = {0};
    for (int b = 0; b < FZ_MAX_BUFS; ++b)
        if (c->buf[b] && c->root[b] == b) owner[b] = calloc(c->size[b] ? c->size[b] : 1, 1);
    int stop = 0;
    if (c->ws_slot >= 0 && present(&c->s[c->ws_slot])) {
        const int b = c->s[c->ws_slot].buf;
        const size_t n = c->ws_need < c->size[b] ? c->ws_need : c->size[b];
        memset(owner[c->root[b]] + c->base[b], FZ_MAX_SLOTS + 1, n);
    }
    for (int i = 0; i < c->n && !stop; ++i) {
        const fz_slot *s = &c->s[i];
        if (!present(s) || s->role != FZ_OUT) continue;
        const int r = c->root[s->buf];
        mark_ctx m = {c, owner[r], c->base[s->buf], c->size[r], i, 0, 0};
        if (each_elem(&s->t, mark_out, &m))
            stop = fz_report(c, "output-overlap", "output %s overlaps %s at byte %zu of buffer %d",
                             s->name, m.hit == i + 1 ? "itself" : owner_name(c, m.hit), m.hit_off, r);
    }
    for (int i = 0; i < c->n && !stop; ++i) {
        const fz_slot *s = &c->s[i];
        if (!present(s) || s->role != FZ_IN) continue;
        const int r = c->root[s->buf];
        mark_ctx m = {c, owner[r], c->base[s->buf], c->size[r], i, 0, 0};
        if (each_elem(&s->t, probe_in, &m))
            stop = fz_report(c, "output-overlap", "input %s overlaps %s at byte %zu of buffer %d", s->name,
                             owner_name(c, m.hit), m.hit_off, r);
    }
    /* offsets that decrease, are negative or pass the extent must be refused on the device */
    for (int i = 0; i < c->n && !stop; ++i) {
        const fz_slot *s = &c->s[i];
        if (!s->is_offs || !present(s)) continue;
        const int64_t extent = offs_extent(c, s);
        if (extent >= 0 && sync != QGMM_ERR_BAD_OFFSETS && offsets_bad(c, s, extent))
            stop = fz_report(c, "bad-offsets-unreported",
                             "%s breaks the offsets rule over extent %lld but qgmm_synchronize said %s",
                             s->name, (long long)extent, qgmm_status_string(sync));
    }
    /* every changed byte belongs to an output (none after BAD_OFFSETS) or the workspace */
    for (int b = 0; b < FZ_MAX_BUFS && !stop; ++b) {
        if (!c->snap[b] || !memcmp(c->host[b], c->snap[b], c->size[b])) continue;
        for (size_t k = 0; k < c->size[b]; ++k) {
            if (c->host[b][k] == c->snap[b][k]) continue;
            const int o = owner[b][k];
            if (o == FZ_MAX_SLOTS + 1) continue;
            if (sync == QGMM_ERR_BAD_OFFSETS) {
                stop = fz_report(c, "write-after-bad-offsets",
                                 "qgmm_synchronize said BAD_OFFSETS but byte %zu of buffer %d (%s) changed"
                                 " %02x -> %02x", k, b, o ? owner_name(c, o) : "no output",
                                 c->snap[b][k], c->host[b][k]);
                break;
            }
            if (!o) {
                stop = fz_report(c, "write-outside-outputs",
                                 "byte %zu of buffer %d changed %02x -> %02x; it belongs to no output", k,
                                 b, c->snap[b][k], c->host[b][k]);
                break;
            }
        }
    }
    for (int b = 0; b < FZ_MAX_BUFS; ++b) free(owner[b]);
}

void fz_check(fz_call *c, qgmm_status rc)
{
    fz_check_status(c, rc);
    const qgmm_status sync = qgmm_synchronize(fz_ctx);
    if (g_trace) {
        fprintf(stderr, "[qgmm-fuzz] %s: %s, synchronize %s%s%s\n", c->op, qgmm_status_string(rc),
                qgmm_status_string(sync), rc ? ": " : "", rc ? qgmm_last_error(c->tls_error ? NULL : fz_ctx) : "");
        dump_call(c);
    }
    if (rc != QGMM_OK) {
        if (sync != QGMM_OK &&
            fz_report(c, "error-left-pending", "returned %s and qgmm_synchronize then said %s",
                      qgmm_status_string(rc), qgmm_status_string(sync)))
            return;
        for (int b = 0; b < FZ_MAX_BUFS; ++b) {
            if (!c->snap[b] || !memcmp(c->host[b], c->snap[b], c->size[b])) continue;
            for (size_t k = 0; k < c->size[b]; ++k)
                if (c->host[b][k] != c->snap[b][k]) {
                    fz_report(c, "error-changed-bytes",
                              "returned %s but byte %zu of buffer %d changed %02x -> %02x",
                              qgmm_status_string(rc), k, b, c->snap[b][k], c->host[b][k]);
                    return;
                }
        }
        return;
    }
    if (sync != QGMM_OK && sync != QGMM_ERR_BAD_OFFSETS &&
        fz_report(c, "status", "qgmm_synchronize said %s", qgmm_status_string(sync)))
        return;
    check_accepted(c, sync);
}
