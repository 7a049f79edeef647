/* json.c — see json.h. */
#include "json.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_KEYS 4096  /* per object: the duplicate-key check stays cheap */

typedef struct parser {
    const char *s, *end, *p;
    char *err;
    size_t err_cap;
    int failed;
} parser;

static void perr(parser *ps, const char *msg)
{
    if (ps->failed) return;
    ps->failed = 1;
    int line = 1, col = 1;
    for (const char *q = ps->s; q < ps->p && q < ps->end; ++q) {
        if (*q == '\n') { ++line; col = 1; } else ++col;
    }
    if (ps->err && ps->err_cap) snprintf(ps->err, ps->err_cap, "line %d col %d: %s", line, col, msg);
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ++ps->p;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int put_utf8(char *out, size_t *n, uint32_t cp)
{
    if (cp < 0x80) out[(*n)++] = (char)cp;
    else if (cp < 0x800) { out[(*n)++] = (char)(0xC0 | (cp >> 6)); out[(*n)++] = (char)(0x80 | (cp & 0x3F)); }
    else if (cp < 0x10000) {
        out[(*n)++] = (char)(0xE0 | (cp >> 12)); out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*n)++] = (char)(0xF0 | (cp >> 18)); out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
    return 0;
}

size_t json_utf8_seq(const unsigned char *p, const unsigned char *end)
{
    uint32_t cp, min;
    size_t n;
    if (p[0] < 0x80) return 1;
    if ((p[0] & 0xE0) == 0xC0) { n = 2; cp = p[0] & 0x1Fu; min = 0x80; }
    else if ((p[0] & 0xF0) == 0xE0) { n = 3; cp = p[0] & 0x0Fu; min = 0x800; }
    else if ((p[0] & 0xF8) == 0xF0) { n = 4; cp = p[0] & 0x07u; min = 0x10000; }
    else return 0;
    if ((size_t)(end - p) < n) return 0;
    for (size_t i = 1; i < n; ++i) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

static int read_hex4(parser *ps, uint32_t *v)
{
    if (ps->end - ps->p < 4) { perr(ps, "truncated \\u escape"); return -1; }
    uint32_t x = 0;
    for (int i = 0; i < 4; ++i) {
        int h = hexval(ps->p[i]);
        if (h < 0) { perr(ps, "bad hex digit in \\u escape"); return -1; }
        x = x * 16 + (uint32_t)h;
    }
    ps->p += 4;
    *v = x;
    return 0;
}

static char *parse_string_raw(parser *ps)
{
    /* ps->p at the opening quote */
    ++ps->p;
    const char *start = ps->p;
    size_t cap = 16;
    for (const char *q = start; q < ps->end && *q != '"'; ++q) { ++cap; if (*q == '\\') ++q; }
    char *out = malloc(cap * 2 + 8);  /* escapes never grow text by more than 2x */
    if (!out) { perr(ps, "out of memory"); return NULL; }
    size_t n = 0;
    while (ps->p < ps->end) {
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') { ++ps->p; out[n] = 0; return out; }
        if (c < 0x20) { perr(ps, "control character in string"); free(out); return NULL; }
        if (c >= 0x80) {
            size_t k = json_utf8_seq((const unsigned char *)ps->p, (const unsigned char *)ps->end);
            if (!k) { perr(ps, "invalid UTF-8"); free(out); return NULL; }
            memcpy(out + n, ps->p, k);
            n += k;
            ps->p += k;
            continue;
        }
        if (c != '\\') { out[n++] = (char)c; ++ps->p; continue; }
        ++ps->p;
        if (ps->p >= ps->end) break;
        char e = *ps->p++;
        switch (e) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            uint32_t cp;
            if (read_hex4(ps, &cp)) { free(out); return NULL; }
            if (cp >= 0xD800 && cp < 0xDC00) {
                uint32_t lo;
                if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u') {
                    perr(ps, "unpaired surrogate"); free(out); return NULL;
                }
                ps->p += 2;
                if (read_hex4(ps, &lo)) { free(out); return NULL; }
                if (lo < 0xDC00 || lo > 0xDFFF) { perr(ps, "bad low surrogate"); free(out); return NULL; }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                perr(ps, "unpaired surrogate"); free(out); return NULL;
            }
            if (cp == 0) { perr(ps, "\\u0000 not allowed in strings"); free(out); return NULL; }
            put_utf8(out, &n, cp);
            break;
        }
        default: perr(ps, "bad escape in string"); free(out); return NULL;
        }
    }
    perr(ps, "unterminated string");
    free(out);
    return NULL;
}

static int parse_value(parser *ps, json_value *v, int depth);

static int parse_number(parser *ps, json_value *v)
{
    const char *q = ps->p;
    int integer = 1;
    if (q < ps->end && *q == '-') ++q;
    if (q >= ps->end || !isdigit((unsigned char)*q)) { perr(ps, "bad number"); return -1; }
    if (*q == '0' && q + 1 < ps->end && isdigit((unsigned char)q[1])) { perr(ps, "leading zero in number"); return -1; }
    while (q < ps->end && isdigit((unsigned char)*q)) ++q;
    if (q < ps->end && *q == '.') {
        integer = 0; ++q;
        if (q >= ps->end || !isdigit((unsigned char)*q)) { perr(ps, "bad fraction"); return -1; }
        while (q < ps->end && isdigit((unsigned char)*q)) ++q;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        integer = 0; ++q;
        if (q < ps->end && (*q == '+' || *q == '-')) ++q;
        if (q >= ps->end || !isdigit((unsigned char)*q)) { perr(ps, "bad exponent"); return -1; }
        while (q < ps->end && isdigit((unsigned char)*q)) ++q;
    }
    char buf[64];
    size_t n = (size_t)(q - ps->p);
    if (n >= sizeof buf) { perr(ps, "number too long"); return -1; }
    memcpy(buf, ps->p, n);
    buf[n] = 0;
    v->type = JSON_NUMBER;
    v->number = strtod(buf, NULL);
    if (integer) {
        errno = 0;
        long long ll = strtoll(buf, NULL, 10);
        if (errno == 0) { v->is_integer = 1; v->integer = ll; }
    }
    if (!isfinite(v->number)) { perr(ps, "number out of range"); return -1; }
    ps->p = q;
    return 0;
}

static int grow(json_value *v, size_t *cap, int with_keys)
{
    if (v->count < *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 8;
    json_value *ni = realloc(v->items, nc * sizeof *ni);
    if (!ni) return -1;
    v->items = ni;
    if (with_keys) {
        char **nk = realloc(v->keys, nc * sizeof *nk);
        if (!nk) return -1;
        v->keys = nk;
    }
    *cap = nc;
    return 0;
}

static int parse_value(parser *ps, json_value *v, int depth)
{
    memset(v, 0, sizeof *v);
    skip_ws(ps);
    if (ps->p >= ps->end) { perr(ps, "unexpected end of input"); return -1; }
    if (depth > JSON_MAX_DEPTH) { perr(ps, "nesting too deep"); return -1; }
    char c = *ps->p;
    if (c == '{' || c == '[') {
        int obj = c == '{';
        v->type = obj ? JSON_OBJECT : JSON_ARRAY;
        size_t cap = 0;
        ++ps->p;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) { ++ps->p; return 0; }
        for (;;) {
            if (grow(v, &cap, obj)) { perr(ps, "out of memory"); return -1; }
            skip_ws(ps);
            if (obj) {
                if (ps->p >= ps->end || *ps->p != '"') { perr(ps, "expected a string key"); return -1; }
                char *k = parse_string_raw(ps);
                if (!k) return -1;
                if (v->count >= JSON_MAX_KEYS) { free(k); perr(ps, "object with too many keys"); return -1; }
                for (size_t i = 0; i < v->count; ++i)
                    if (strcmp(v->keys[i], k) == 0) { free(k); perr(ps, "duplicate object key"); return -1; }
                v->keys[v->count] = k;
                skip_ws(ps);
                if (ps->p >= ps->end || *ps->p != ':') {
                    v->items[v->count].type = JSON_NULL; v->count++;
                    perr(ps, "expected ':'"); return -1;
                }
                ++ps->p;
            }
            int rc = parse_value(ps, &v->items[v->count], depth + 1);
            v->count++;
            if (rc) return -1;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') { ++ps->p; continue; }
            if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) { ++ps->p; return 0; }
            perr(ps, obj ? "expected ',' or '}'" : "expected ',' or ']'");
            return -1;
        }
    }
    if (c == '"') {
        v->type = JSON_STRING;
        v->string = parse_string_raw(ps);
        return v->string ? 0 : -1;
    }
    if (c == '-' || isdigit((unsigned char)c)) return parse_number(ps, v);
    static const struct { const char *w; json_type t; int b; } lits[] = {
        {"true", JSON_BOOL, 1}, {"false", JSON_BOOL, 0}, {"null", JSON_NULL, 0}};
    for (size_t i = 0; i < 3; ++i) {
        size_t n = strlen(lits[i].w);
        if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, lits[i].w, n) == 0) {
            v->type = lits[i].t; v->boolean = lits[i].b; ps->p += n; return 0;
        }
    }
    perr(ps, "unexpected character");
    return -1;
}

static void free_inner(json_value *v)
{
    if (!v) return;
    free(v->string);
    for (size_t i = 0; i < v->count; ++i) {
        free_inner(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

json_value *json_value_parse(const char *text, size_t len, char *err, size_t err_cap)
{
    parser ps = {text, text + len, text, err, err_cap, 0};
    json_value *v = calloc(1, sizeof *v);
    if (!v) { if (err) snprintf(err, err_cap, "out of memory"); return NULL; }
    /* A byte order mark is not JSON (RFC 8259 8.1 lets a parser refuse it). The top-level
     * value is nesting level 1. */
    if (parse_value(&ps, v, 1) == 0) {
        skip_ws(&ps);
        if (ps.p != ps.end) perr(&ps, "trailing characters after the JSON value");
    }
    if (ps.failed) { free_inner(v); free(v); return NULL; }
    return v;
}

void json_value_free(json_value *v)
{
    free_inner(v);
    free(v);
}

const json_value *json_value_get(const json_value *obj, const char *key)
{
    if (!obj || obj->type != JSON_OBJECT) return NULL;
    for (size_t i = 0; i < obj->count; ++i)
        if (strcmp(obj->keys[i], key) == 0) return &obj->items[i];
    return NULL;
}

const char *json_type_name(json_type t)
{
    switch (t) {
    case JSON_NULL: return "null";
    case JSON_BOOL: return "a boolean";
    case JSON_NUMBER: return "a number";
    case JSON_STRING: return "a string";
    case JSON_ARRAY: return "an array";
    case JSON_OBJECT: return "an object";
    }
    return "?";
}

/* ------------------------------------------------------------------ writer */
void jb_init(json_buf *b) { memset(b, 0, sizeof *b); }
void jb_free(json_buf *b) { free(b->data); memset(b, 0, sizeof *b); }

static void jb_reserve(json_buf *b, size_t extra)
{
    if (b->oom) return;
    if (b->len + extra + 1 <= b->cap) return;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + extra + 1) nc *= 2;
    char *nd = realloc(b->data, nc);
    if (!nd) { b->oom = 1; return; }
    b->data = nd;
    b->cap = nc;
}

static void jb_mem(json_buf *b, const char *s, size_t n)
{
    jb_reserve(b, n);
    if (b->oom) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void jb_raw(json_buf *b, const char *s) { jb_mem(b, s, strlen(s)); }

void jb_printf(json_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    jb_reserve(b, (size_t)n);
    if (b->oom) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void jb_str(json_buf *b, const char *s)
{
    jb_mem(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; ++p) {
        switch (*p) {
        case '"': jb_mem(b, "\\\"", 2); break;
        case '\\': jb_mem(b, "\\\\", 2); break;
        case '\n': jb_mem(b, "\\n", 2); break;
        case '\r': jb_mem(b, "\\r", 2); break;
        case '\t': jb_mem(b, "\\t", 2); break;
        default:
            if (*p < 0x20) jb_printf(b, "\\u%04x", *p);
            else jb_mem(b, (const char *)p, 1);
        }
    }
    jb_mem(b, "\"", 1);
}

void jb_num(json_buf *b, double v)
{
    if (!isfinite(v)) { jb_raw(b, "null"); return; }
    if (v == floor(v) && fabs(v) < 9e15) { jb_printf(b, "%.0f", v); return; }
    jb_printf(b, "%.17g", v);
}

void jb_int(json_buf *b, int64_t v) { jb_printf(b, "%lld", (long long)v); }

static int key_ok(const char *k)
{
    if (!*k) return 0;
    for (; *k; ++k)
        if (!((*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9') || *k == '_')) return 0;
    return 1;
}

static int str_ok(const char *s)
{
    for (; *s; ++s)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e || *s == '"' || *s == '\\') return 0;
    return 1;
}

int json_canonical_params(const json_value *obj, json_buf *out, char *err, size_t err_cap)
{
    if (!obj || obj->type != JSON_OBJECT) { snprintf(err, err_cap, "expected an object"); return -1; }
    size_t n = obj->count;
    size_t *ord = malloc((n ? n : 1) * sizeof *ord);
    if (!ord) { snprintf(err, err_cap, "out of memory"); return -1; }
    for (size_t i = 0; i < n; ++i) ord[i] = i;
    /* insertion sort: params objects have a handful of keys */
    for (size_t i = 1; i < n; ++i)
        for (size_t j = i; j > 0 && strcmp(obj->keys[ord[j - 1]], obj->keys[ord[j]]) > 0; --j) {
            size_t t = ord[j]; ord[j] = ord[j - 1]; ord[j - 1] = t;
        }
    jb_raw(out, "{");
    for (size_t i = 0; i < n; ++i) {
        const char *k = obj->keys[ord[i]];
        const json_value *v = &obj->items[ord[i]];
        if (!key_ok(k)) { snprintf(err, err_cap, "key \"%s\": keys must match [a-z0-9_]+", k); free(ord); return -1; }
        if (i && strcmp(k, obj->keys[ord[i - 1]]) == 0) { snprintf(err, err_cap, "key \"%s\" appears twice", k); free(ord); return -1; }
        if (i) jb_raw(out, ",");
        jb_str(out, k);
        jb_raw(out, ":");
        if (v->type == JSON_NUMBER && v->is_integer) jb_int(out, v->integer);
        else if (v->type == JSON_STRING && str_ok(v->string)) jb_str(out, v->string);
        else {
            snprintf(err, err_cap, "%s: values must be integers or printable ASCII strings without '\"' or '\\'", k);
            free(ord);
            return -1;
        }
    }
    jb_raw(out, "}");
    free(ord);
    return out->oom ? -1 : 0;
}

char *read_file_all(const char *path, size_t max_bytes, size_t *len, char *err, size_t err_cap)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) { snprintf(err, err_cap, "cannot open: %s", strerror(errno)); return NULL; }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    int too_big = 0;
    while (buf) {
        /* read one byte past the cap, so a file of exactly max_bytes is accepted */
        size_t want = cap - n - 1;
        if (want > max_bytes + 1 - n) want = max_bytes + 1 - n;
        size_t got = fread(buf + n, 1, want, f);
        n += got;
        if (n > max_bytes) { too_big = 1; break; }
        if (got < want) break;
        if (n + 1 < cap) continue;
        char *nb = realloc(buf, cap * 2);
        if (!nb) { free(buf); buf = NULL; break; }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    if (f != stdin) fclose(f);
    if (!buf || bad || too_big) {
        if (too_big) snprintf(err, err_cap, "larger than the %zu-byte cap", max_bytes);
        else snprintf(err, err_cap, "%s", buf ? "read error" : "out of memory");
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}
