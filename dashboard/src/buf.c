#include "buf.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

static int grow(buf *b, size_t need) {
  if (b->oom) return 0;
  if (b->len + need + 1 <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + need + 1) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = 1;
    return 0;
  }
  b->p = p;
  b->cap = cap;
  return 1;
}

void buf_free(buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

void buf_put(buf *b, const void *s, size_t n) {
  if (!grow(b, n)) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

void buf_puts(buf *b, const char *s) { buf_put(b, s, strlen(s)); }
void buf_putc(buf *b, char c) { buf_put(b, &c, 1); }

void buf_vprintf(buf *b, const char *fmt, va_list ap) {
  va_list again;
  va_copy(again, ap);
  char tmp[512];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  if (n >= 0 && (size_t)n < sizeof tmp) {
    buf_put(b, tmp, (size_t)n);
  } else if (n >= 0 && grow(b, (size_t)n)) {
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, again);
    b->len += (size_t)n;
  }
  va_end(again);
}

void buf_printf(buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  buf_vprintf(b, fmt, ap);
  va_end(ap);
}

void buf_html(buf *b, const char *s) {
  if (!s) return;
  for (; *s; s++) {
    switch (*s) {
      case '&': buf_puts(b, "&amp;"); break;
      case '<': buf_puts(b, "&lt;"); break;
      case '>': buf_puts(b, "&gt;"); break;
      case '"': buf_puts(b, "&quot;"); break;
      case '\'': buf_puts(b, "&#39;"); break;
      default: buf_putc(b, *s);
    }
  }
}

void buf_json_str(buf *b, const char *s) {
  buf_putc(b, '"');
  if (s) {
    const unsigned char *end = (const unsigned char *)s + strlen(s);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
      unsigned char c = *p;
      if (c >= 0x80) {
        /* Whatever a store holds, the answer stays valid JSON: a byte that starts no
         * well-formed UTF-8 sequence becomes U+FFFD. */
        size_t n = json_utf8_seq(p, end);
        if (n) buf_put(b, p, n), p += n - 1;
        else buf_puts(b, "\\ufffd");
      } else if (c == '"') buf_puts(b, "\\\"");
      else if (c == '\\') buf_puts(b, "\\\\");
      else if (c == '\n') buf_puts(b, "\\n");
      else if (c == '\r') buf_puts(b, "\\r");
      else if (c == '\t') buf_puts(b, "\\t");
      else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f)
        buf_printf(b, "\\u%04x", c);
      else buf_putc(b, (char)c);
    }
  }
  buf_putc(b, '"');
}

void buf_url(buf *b, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
    unsigned char c = *p;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        c == '-' || c == '_' || c == '.' || c == '~') {
      buf_putc(b, (char)c);
    } else {
      char e[3] = {'%', hex[c >> 4], hex[c & 15]};
      buf_put(b, e, 3);
    }
  }
}

void buf_json_num(buf *b, double v) {
  if (!isfinite(v)) {
    buf_puts(b, "null");
  } else if (v == floor(v) && fabs(v) < 9007199254740992.0) {
    buf_printf(b, "%lld", (long long)v);
  } else {
    buf_printf(b, "%.15g", v);
  }
}

/* ------------------------------------------------------------------ arena */
struct arena_blk {
  arena_blk *next;
  size_t used, cap;
  max_align_t data[];
};

void *arena_alloc(arena *a, size_t n) {
  if (a->oom) return NULL;
  n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
  if (n == 0) n = sizeof(max_align_t);
  if (a->limit && a->total + n > a->limit) {
    a->oom = 1;
    return NULL;
  }
  arena_blk *h = a->head;
  if (!h || h->cap - h->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    h = malloc(sizeof *h + cap);
    if (!h) {
      a->oom = 1;
      return NULL;
    }
    h->used = 0;
    h->cap = cap;
    h->next = a->head;
    a->head = h;
  }
  void *p = (char *)h->data + h->used;
  h->used += n;
  a->total += n;
  memset(p, 0, n);
  return p;
}

char *arena_strndup(arena *a, const char *s, size_t n) {
  char *p = arena_alloc(a, n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *arena_strdup(arena *a, const char *s) { return s ? arena_strndup(a, s, strlen(s)) : NULL; }

char *arena_printf(arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *p = arena_alloc(a, (size_t)n + 1);
  if (!p) return NULL;
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}

void arena_free(arena *a) {
  arena_blk *h = a->head;
  while (h) {
    arena_blk *n = h->next;
    free(h);
    h = n;
  }
  a->head = NULL;
  a->total = 0;
  a->oom = 0;
}
