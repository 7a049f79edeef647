/* dom.c — see dom.h. */
#include "dom.h"

#include <string.h>

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
