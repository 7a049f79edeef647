/*
 * json.h — a small JSON reader (DOM) and writer for the run format (docs/run-format.md).
 * No JSON library is packaged on the CI machine, and the format is small; this keeps the
 * runner dependency-free beyond SQLite. Strict RFC 8259: no comments, no trailing commas,
 * depth limited (so hostile uploads cannot blow the stack).
 */
#ifndef QGMM_CI_JSON_H
#define QGMM_CI_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32   /* deepest nesting the reader accepts */

typedef enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value json_value;
struct json_value {
    json_type type;
    int boolean;
    double number;
    int is_integer;         /* the literal had no fraction/exponent and fits int64 */
    int64_t integer;
    char *string;           /* STRING (NUL-terminated, may contain no NUL: \u0000 refused) */
    size_t count;           /* ARRAY / OBJECT entries */
    json_value *items;      /* ARRAY elements / OBJECT values */
    char **keys;            /* OBJECT keys */
};

/* Parses `text` (len bytes): RFC 8259 with strings in well-formed UTF-8, no duplicate
 * keys, no \u0000, no byte order mark, nesting at most JSON_MAX_DEPTH. Returns NULL with a
 * message "line L col C: ..." in err. */
json_value *json_value_parse(const char *text, size_t len, char *err, size_t err_cap);
void json_value_free(json_value *v);

/* Object member lookup (NULL when absent). */
const json_value *json_value_get(const json_value *obj, const char *key);
const char *json_type_name(json_type t);

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlongs, no surrogates,
 * nothing above U+10FFFF), or 0. */
size_t json_utf8_seq(const unsigned char *p, const unsigned char *end);

/* ---- writer: streams to a FILE* or into a growable buffer */
typedef struct json_buf {
    char *data;
    size_t len, cap;
    int oom;
} json_buf;
void jb_init(json_buf *b);
void jb_free(json_buf *b);
void jb_raw(json_buf *b, const char *s);
void jb_printf(json_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A JSON string literal with escapes. */
void jb_str(json_buf *b, const char *s);
/* A number: integers print exactly, doubles with 17 significant digits; NaN/inf -> null. */
void jb_num(json_buf *b, double v);
void jb_int(json_buf *b, int64_t v);

/* Canonical form of a params object (keys sorted bytewise, no whitespace): see
 * docs/run-format.md "Series identity". Returns 0, or -1 with err if a value is not an
 * integer or a plain ASCII string, or a key is not [a-z0-9_]+. */
int json_canonical_params(const json_value *obj, json_buf *out, char *err, size_t err_cap);

/* Reads a whole file (or stdin for "-"), at most max_bytes of it. Returns malloc'ed text
 * (NUL-terminated), or NULL with a sentence in err: cannot open/read, or larger than
 * max_bytes (reading stops there, so /dev/zero or a runaway pipe cannot exhaust memory). */
char *read_file_all(const char *path, size_t max_bytes, size_t *len, char *err, size_t err_cap);

#endif
