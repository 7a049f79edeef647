/* Growable byte buffers and the escapers every page and API answer goes through.
 * Allocation failure is sticky (buf.oom) so callers check once, at the end. */
#ifndef QGMM_DASH_BUF_H
#define QGMM_DASH_BUF_H
#include <stdarg.h>
#include <stddef.h>

typedef struct {
  char *p;
  size_t len, cap;
  int oom;
} buf;

void buf_free(buf *b);
void buf_put(buf *b, const void *s, size_t n);
void buf_puts(buf *b, const char *s);
void buf_putc(buf *b, char c);
void buf_vprintf(buf *b, const char *fmt, va_list ap);
void buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Text into HTML element content or a double-quoted attribute: & < > " ' escaped. */
void buf_html(buf *b, const char *s);
/* A JSON string literal, quotes included; control characters as \u00XX, bytes of
 * malformed UTF-8 (ci/json.h json_utf8_seq) as \ufffd; '<', '>' and '&'
 * also escaped so a JSON answer can never be sniffed as markup. */
void buf_json_str(buf *b, const char *s);
/* Percent-encodes everything but unreserved characters (RFC 3986), for query values. */
void buf_url(buf *b, const char *s);
/* A double in JSON form: integers exactly, otherwise up to 15 significant digits;
 * non-finite values become null. */
void buf_json_num(buf *b, double v);

/* Arena: every allocation made while answering one request is released at once. */
typedef struct arena_blk arena_blk;
typedef struct {
  arena_blk *head;
  size_t total;   /* bytes handed out, for the per-request memory cap */
  size_t limit;   /* 0 = unlimited */
  int oom;
} arena;

void *arena_alloc(arena *a, size_t n);
char *arena_strdup(arena *a, const char *s);
char *arena_strndup(arena *a, const char *s, size_t n);
char *arena_printf(arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void arena_free(arena *a);

#endif
