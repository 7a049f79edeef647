#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

jval *model_error(arena *a, const char *msg) {
  jval *o = jobj(a);
  jset_str(a, o, "error", msg);
  jset(a, o, "field", jnull(a));
  return o;
}

int model_sql_error(mctx *m, const char *err, jval **out) {
  *out = model_error(&m->r->a, err ? err : "query failed");
  return 500;
}

int page_args(mctx *m, long long def, long long max, long long *limit, long long *offset, jval **out) {
  arena *a = &m->r->a;
  const char *ls = req_param(m->r, "limit"), *os = req_param(m->r, "offset");
  *limit = def;
  *offset = 0;
  if (ls && (!parse_id(ls, limit) || *limit > max)) {
    *out = model_error(a, arena_printf(a, "limit must be an integer in 1..%lld", max));
    return 0;
  }
  if (os && strcmp(os, "0") != 0 && !parse_id(os, offset)) {
    *out = model_error(a, "offset must be a non-negative integer");
    return 0;
  }
  return 1;
}

void page_info(arena *a, jval *o, const char *prefix, long long total, long long limit, long long offset) {
  jset_num(a, o, arena_printf(a, "%stotal", prefix), (double)total);
  jset_num(a, o, arena_printf(a, "%slimit", prefix), (double)limit);
  jset_num(a, o, arena_printf(a, "%soffset", prefix), (double)offset);
}

int parse_id(const char *s, long long *out) {
  if (!s || !*s || strlen(s) > 18) return 0;
  for (const char *p = s; *p; p++)
    if (!isdigit((unsigned char)*p)) return 0;
  *out = atoll(s);
  return *out > 0;
}

int valid_uuid(const char *s) {
  if (!s || strlen(s) != 36) return 0;
  for (int i = 0; i < 36; i++) {
    char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return 0;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return 0;
    }
  }
  return 1;
}

const char *gate_verdict(double fail, double error, double reg_fail, double reg_warn) {
  if (fail > 0 || error > 0 || reg_fail > 0) return "fail";
  if (reg_warn > 0) return "warn";
  return "pass";
}
