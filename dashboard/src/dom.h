/* The JSON tree every API answer (and the page built from it) is assembled in, and its
 * writer. All memory comes from the request's arena. Reading JSON is the store library's
 * (ci/json.h): the ingest and triage routes parse request bodies with it. */
#ifndef QGMM_DASH_DOM_H
#define QGMM_DASH_DOM_H
#include <stddef.h>

#include "buf.h"

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval jval;
struct jval {
  jtype t;
  int b;            /* J_BOOL */
  double n;         /* J_NUM */
  const char *s;    /* J_STR (NUL-terminated) */
  size_t len;       /* J_STR length; J_ARR/J_OBJ element count */
  jval **items;     /* J_ARR/J_OBJ children */
  const char **keys;/* J_OBJ keys, parallel to items */
  size_t cap;
};

/* Lookup helpers: NULL when absent or `o` is not an object/array. */
jval *json_get(const jval *o, const char *key);
jval *json_at(const jval *arr, size_t i);

/* DOM construction (for API answers). Each returns NULL only when the arena is exhausted;
 * adding to NULL is a no-op so builders need no checks until the end. */
jval *jnull(arena *a);
jval *jbool(arena *a, int b);
jval *jnum(arena *a, double v);
jval *jstr(arena *a, const char *s);  /* copies; NULL string becomes JSON null */
jval *jarr(arena *a);
jval *jobj(arena *a);
void jpush(arena *a, jval *arr, jval *v);
void jset(arena *a, jval *obj, const char *key, jval *v);  /* key must outlive the DOM */
/* Shorthands for jset(o, k, jnum/jstr(...)). */
void jset_num(arena *a, jval *o, const char *k, double v);
void jset_str(arena *a, jval *o, const char *k, const char *s);

void json_write(buf *b, const jval *v);

/* Field accessors used by the renderers; they return the fallback on absence/wrong type. */
const char *jget_str(const jval *o, const char *key, const char *fallback);
double jget_num(const jval *o, const char *key, double fallback);

#endif
