#include "json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  arena *a;
  const unsigned char *p, *start, *end;
  json_err *err;
  size_t nodes;
  int failed;
} reader;

static void fail(reader *r, const char *msg) {
  if (r->failed) return;
  r->failed = 1;
  if (r->err) {
    r->err->offset = (size_t)(r->p - r->start);
    snprintf(r->err->msg, sizeof r->err->msg, "%s", msg);
  }
}

static void skip_ws(reader *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
    r->p++;
}

static jval *node(reader *r, jtype t) {
  if (++r->nodes > JSON_MAX_NODES) {
    fail(r, "too many JSON values");
    return NULL;
  }
  jval *v = arena_alloc(r->a, sizeof *v);
  if (!v) {
    fail(r, "document too large");
    return NULL;
  }
  v->t = t;
  return v;
}

static int push_child(arena *a, jval *c, const char *key, jval *v) {
  if (c->len == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 8;
    jval **items = arena_alloc(a, cap * sizeof *items);
    const char **keys = c->t == J_OBJ ? arena_alloc(a, cap * sizeof *keys) : NULL;
    if (!items || (c->t == J_OBJ && !keys)) return 0;
    if (c->len) {
      memcpy(items, c->items, c->len * sizeof *items);
      if (keys) memcpy(keys, c->keys, c->len * sizeof *keys);
    }
    c->items = items;
    c->keys = keys;
    c->cap = cap;
  }
  c->items[c->len] = v;
  if (c->t == J_OBJ) c->keys[c->len] = key;
  c->len++;
  return 1;
}

static int hex4(const unsigned char *p, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned c = p[i], d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return 0;
    v = v * 16 + d;
  }
  *out = v;
  return 1;
}

static void put_utf8(buf *b, unsigned cp) {
  char o[4];
  if (cp < 0x80) {
    o[0] = (char)cp;
    buf_put(b, o, 1);
  } else if (cp < 0x800) {
    o[0] = (char)(0xC0 | cp >> 6);
    o[1] = (char)(0x80 | (cp & 63));
    buf_put(b, o, 2);
  } else if (cp < 0x10000) {
    o[0] = (char)(0xE0 | cp >> 12);
    o[1] = (char)(0x80 | ((cp >> 6) & 63));
    o[2] = (char)(0x80 | (cp & 63));
    buf_put(b, o, 3);
  } else {
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63));
    o[3] = (char)(0x80 | (cp & 63));
    buf_put(b, o, 4);
  }
}

static const char *read_string(reader *r, size_t *len_out) {
  /* r->p at the opening quote */
  r->p++;
  buf b = {0};
  while (1) {
    if (r->p >= r->end) {
      fail(r, "unterminated string");
      break;
    }
    unsigned c = *r->p;
    if (c == '"') {
      r->p++;
      break;
    }
    if (c < 0x20) {
      fail(r, "control character in string");
      break;
    }
    if (c == '\\') {
      if (r->end - r->p < 2) {
        fail(r, "unterminated escape");
        break;
      }
      unsigned e = r->p[1];
      r->p += 2;
      switch (e) {
        case '"': buf_putc(&b, '"'); break;
        case '\\': buf_putc(&b, '\\'); break;
        case '/': buf_putc(&b, '/'); break;
        case 'b': buf_putc(&b, '\b'); break;
        case 'f': buf_putc(&b, '\f'); break;
        case 'n': buf_putc(&b, '\n'); break;
        case 'r': buf_putc(&b, '\r'); break;
        case 't': buf_putc(&b, '\t'); break;
        case 'u': {
          unsigned cp;
          if (r->end - r->p < 4 || !hex4(r->p, &cp)) {
            fail(r, "bad \\u escape");
            goto out;
          }
          r->p += 4;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo;
            if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' ||
                !hex4(r->p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
              fail(r, "lone surrogate in \\u escape");
              goto out;
            }
            r->p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail(r, "lone surrogate in \\u escape");
            goto out;
          }
          if (cp == 0) {
            fail(r, "\\u0000 is not accepted");
            goto out;
          }
          put_utf8(&b, cp);
          break;
        }
        default:
          r->p -= 1;
          fail(r, "bad escape");
          goto out;
      }
      continue;
    }
    size_t n = utf8_seq((const unsigned char *)r->p, (const unsigned char *)r->end);
    if (!n) {
      fail(r, "invalid UTF-8");
      break;
    }
    buf_put(&b, r->p, n);
    r->p += n;
  }
out:;
  const char *s = NULL;
  if (!r->failed) {
    if (b.oom) fail(r, "out of memory");
    else {
      s = arena_strndup(r->a, b.p ? b.p : "", b.len);
      if (!s) fail(r, "document too large");
      *len_out = b.len;
    }
  }
  buf_free(&b);
  return s;
}

static jval *read_value(reader *r, int depth);

static jval *read_number(reader *r) {
  const unsigned char *s = r->p;
  int is_int = 1;
  if (r->p < r->end && *r->p == '-') r->p++;
  if (r->p >= r->end) goto bad;
  if (*r->p == '0') {
    r->p++;
  } else if (*r->p >= '1' && *r->p <= '9') {
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
  } else {
    goto bad;
  }
  if (r->p < r->end && *r->p == '.') {
    is_int = 0;
    r->p++;
    if (r->p >= r->end || *r->p < '0' || *r->p > '9') goto bad;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
  }
  if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
    is_int = 0;
    r->p++;
    if (r->p < r->end && (*r->p == '+' || *r->p == '-')) r->p++;
    if (r->p >= r->end || *r->p < '0' || *r->p > '9') goto bad;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
  }
  {
    size_t n = (size_t)(r->p - s);
    if (n > 64) {
      fail(r, "number literal too long");
      return NULL;
    }
    char tmp[80];
    memcpy(tmp, s, n);
    tmp[n] = 0;
    double v = strtod(tmp, NULL);
    if (!isfinite(v)) {
      fail(r, "number out of range");
      return NULL;
    }
    jval *j = node(r, J_NUM);
    if (!j) return NULL;
    j->n = v;
    j->is_int = is_int && fabs(v) <= 9007199254740992.0;
    return j;
  }
bad:
  fail(r, "malformed number");
  return NULL;
}

static int lit(reader *r, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n) != 0) return 0;
  r->p += n;
  return 1;
}

static jval *read_value(reader *r, int depth) {
  if (depth > JSON_MAX_DEPTH) {
    fail(r, "nesting too deep");
    return NULL;
  }
  skip_ws(r);
  if (r->p >= r->end) {
    fail(r, "unexpected end of input");
    return NULL;
  }
  unsigned c = *r->p;
  if (c == '{') {
    jval *o = node(r, J_OBJ);
    if (!o) return NULL;
    r->p++;
    skip_ws(r);
    if (r->p < r->end && *r->p == '}') {
      r->p++;
      return o;
    }
    while (1) {
      skip_ws(r);
      if (r->p >= r->end || *r->p != '"') {
        fail(r, "expected a string key");
        return NULL;
      }
      size_t klen;
      const char *k = read_string(r, &klen);
      if (!k) return NULL;
      for (size_t i = 0; i < o->len; i++) {
        if (strcmp(o->keys[i], k) == 0) {
          fail(r, "duplicate object key");
          return NULL;
        }
      }
      skip_ws(r);
      if (r->p >= r->end || *r->p != ':') {
        fail(r, "expected ':'");
        return NULL;
      }
      r->p++;
      jval *v = read_value(r, depth + 1);
      if (!v) return NULL;
      if (!push_child(r->a, o, k, v)) {
        fail(r, "document too large");
        return NULL;
      }
      skip_ws(r);
      if (r->p < r->end && *r->p == ',') {
        r->p++;
        continue;
      }
      if (r->p < r->end && *r->p == '}') {
        r->p++;
        return o;
      }
      fail(r, "expected ',' or '}'");
      return NULL;
    }
  }
  if (c == '[') {
    jval *arr = node(r, J_ARR);
    if (!arr) return NULL;
    r->p++;
    skip_ws(r);
    if (r->p < r->end && *r->p == ']') {
      r->p++;
      return arr;
    }
    while (1) {
      jval *v = read_value(r, depth + 1);
      if (!v) return NULL;
      if (!push_child(r->a, arr, NULL, v)) {
        fail(r, "document too large");
        return NULL;
      }
      skip_ws(r);
      if (r->p < r->end && *r->p == ',') {
        r->p++;
        continue;
      }
      if (r->p < r->end && *r->p == ']') {
        r->p++;
        return arr;
      }
      fail(r, "expected ',' or ']'");
      return NULL;
    }
  }
  if (c == '"') {
    size_t len;
    const char *s = read_string(r, &len);
    if (!s) return NULL;
    jval *v = node(r, J_STR);
    if (!v) return NULL;
    v->s = s;
    v->len = len;
    return v;
  }
  if (c == '-' || (c >= '0' && c <= '9')) return read_number(r);
  if (lit(r, "true")) {
    jval *v = node(r, J_BOOL);
    if (v) v->b = 1;
    return v;
  }
  if (lit(r, "false")) return node(r, J_BOOL);
  if (lit(r, "null")) return node(r, J_NULL);
  fail(r, "unexpected character");
  return NULL;
}

jval *json_parse(arena *a, const char *text, size_t n, json_err *err) {
  reader r = {a, (const unsigned char *)text, (const unsigned char *)text,
              (const unsigned char *)text + n, err, 0, 0};
  if (err) {
    err->offset = 0;
    err->msg[0] = 0;
  }
  /* A UTF-8 byte order mark is not JSON (RFC 8259 §8.1 lets parsers refuse it). */
  jval *v = read_value(&r, 1);
  if (!v) {
    if (!r.failed) fail(&r, "invalid JSON");
    return NULL;
  }
  skip_ws(&r);
  if (r.p != r.end) {
    fail(&r, "trailing bytes after the JSON value");
    return NULL;
  }
  return v;
}

jval *json_get(const jval *o, const char *key) {
  if (!o || o->t != J_OBJ) return NULL;
  for (size_t i = 0; i < o->len; i++)
    if (strcmp(o->keys[i], key) == 0) return o->items[i];
  return NULL;
}

jval *json_at(const jval *arr, size_t i) {
  if (!arr || (arr->t != J_ARR && arr->t != J_OBJ) || i >= arr->len) return NULL;
  return arr->items[i];
}

static jval *mk(arena *a, jtype t) {
  jval *v = arena_alloc(a, sizeof *v);
  if (v) v->t = t;
  return v;
}
jval *jnull(arena *a) { return mk(a, J_NULL); }
jval *jbool(arena *a, int b) {
  jval *v = mk(a, J_BOOL);
  if (v) v->b = !!b;
  return v;
}
jval *jnum(arena *a, double x) {
  jval *v = mk(a, J_NUM);
  if (v) v->n = x;
  return v;
}
jval *jstr(arena *a, const char *s) {
  if (!s) return mk(a, J_NULL);
  jval *v = mk(a, J_STR);
  if (v) {
    v->s = arena_strdup(a, s);
    v->len = strlen(s);
  }
  return v;
}
jval *jarr(arena *a) { return mk(a, J_ARR); }
jval *jobj(arena *a) { return mk(a, J_OBJ); }
void jpush(arena *a, jval *arr, jval *v) {
  if (arr && v && arr->t == J_ARR && !push_child(a, arr, NULL, v)) a->oom = 1;
}
void jset(arena *a, jval *o, const char *key, jval *v) {
  if (o && v && o->t == J_OBJ && !push_child(a, o, key, v)) a->oom = 1;
}
void jset_num(arena *a, jval *o, const char *k, double v) { jset(a, o, k, jnum(a, v)); }
void jset_str(arena *a, jval *o, const char *k, const char *s) { jset(a, o, k, jstr(a, s)); }

void json_write(buf *b, const jval *v) {
  if (!v) {
    buf_puts(b, "null");
    return;
  }
  switch (v->t) {
    case J_NULL: buf_puts(b, "null"); break;
    case J_BOOL: buf_puts(b, v->b ? "true" : "false"); break;
    case J_NUM: buf_json_num(b, v->n); break;
    case J_STR: buf_json_str(b, v->s); break;
    case J_ARR:
      buf_putc(b, '[');
      for (size_t i = 0; i < v->len; i++) {
        if (i) buf_putc(b, ',');
        json_write(b, v->items[i]);
      }
      buf_putc(b, ']');
      break;
    case J_OBJ:
      buf_putc(b, '{');
      for (size_t i = 0; i < v->len; i++) {
        if (i) buf_putc(b, ',');
        buf_json_str(b, v->keys[i]);
        buf_putc(b, ':');
        json_write(b, v->items[i]);
      }
      buf_putc(b, '}');
      break;
  }
}

const char *jget_str(const jval *o, const char *key, const char *fallback) {
  jval *v = json_get(o, key);
  return v && v->t == J_STR ? v->s : fallback;
}

double jget_num(const jval *o, const char *key, double fallback) {
  jval *v = json_get(o, key);
  return v && v->t == J_NUM ? v->n : fallback;
}
