#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

jval *model_error(arena *a, const char *msg) {
  jval *o = jobj(a);
  jset_str(a, o, "error", msg);
  return o;
}

int model_sql_error(mctx *m, const char *err, jval **out) {
  *out = model_error(&m->r->a, err ? err : "query failed");
  return 500;
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
