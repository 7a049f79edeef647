/* HTTP side of the two write routes: auth, body cap, parse, validate, store. */
#include "ingest.h"

#include <civetweb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "rundoc.h"
#include "store_ro.h"
#include "tokens.h"

#define TRIAGE_MAX_BODY 65536

extern const char *const TRIAGE_STATES[];

/* Reads the whole body into b, up to cap bytes. Returns 0, or the HTTP status to answer
 * (413 over the cap, 400 when the client stops early). */
static int read_body(req *r, size_t cap, buf *b) {
  const struct mg_request_info *ri = mg_get_request_info(r->conn);
  if (ri->content_length > (long long)cap) return 413;
  char chunk[16384];
  while (1) {
    int n = mg_read(r->conn, chunk, sizeof chunk);
    if (n < 0) return 400;
    if (n == 0) break;
    if (b->len + (size_t)n > cap) return 413;
    buf_put(b, chunk, (size_t)n);
    if (b->oom) return 413;
  }
  if (ri->content_length >= 0 && (long long)b->len != ri->content_length) return 400;
  return 0;
}

static int is_json(req *r) {
  const char *ct = mg_get_header(r->conn, "Content-Type");
  if (!ct) return 0;
  size_t n = strlen("application/json");
  return strncasecmp(ct, "application/json", n) == 0 && (ct[n] == 0 || ct[n] == ';' || ct[n] == ' ');
}

/* Opens the store for writing and checks the token. Returns 0 with *db open, or answers
 * the request itself and returns the status. */
static int open_authorized(req *r, const char *scope, sqlite3 **db) {
  char msg[512];
  *db = NULL;
  db_state s = access(r->cfg->db_path, F_OK) == 0 && !store_writable(r->cfg->db_path)
                   ? DB_ERROR
                   : db_open_rw(r->cfg->db_path, 0, db, msg, sizeof msg);
  if (s != DB_OK) {
    if (s == DB_MISSING || s == DB_EMPTY)
      /* Without a store there are no tokens, so nobody can be authorised: say how to start. */
      reply_api_error(r, 503, "the store is not initialised: create a token first with "
                              "`qgmm-dash --db FILE token add NAME`", NULL);
    else if (!store_writable(r->cfg->db_path))
      reply_api_error(r, 503, "the store is read-only for this qgmm-dash: views answer, but ingest and "
                              "triage need write access to the file and its directory", NULL);
    else
      reply_api_error(r, 503, msg, NULL);
    return 503;
  }
  int st = token_check(*db, mg_get_header(r->conn, "Authorization"), scope, msg, sizeof msg);
  if (st) {
    r->extra_headers = st == 401 ? "WWW-Authenticate: Bearer realm=\"qgmm-dash\"\r\n" : NULL;
    reply_api_error(r, st, msg, NULL);
    sqlite3_close(*db);
    *db = NULL;
  }
  return st;
}

void ingest_handle(req *r) {
  if (!is_json(r)) {
    reply_api_error(r, 415, "Content-Type must be application/json", NULL);
    return;
  }
  sqlite3 *db;
  if (open_authorized(r, "ingest", &db)) return;
  buf body = {0};
  int st = read_body(r, r->cfg->max_body, &body);
  if (st) {
    char m[128];
    snprintf(m, sizeof m, st == 413 ? "body larger than the %zu-byte cap" : "incomplete body",
             r->cfg->max_body);
    reply_api_error(r, st, m, NULL);
    goto done;
  }
  /* The runner's validator decides (ci/rundoc.h): what qgmm-bench import refuses is
   * refused here with the same sentence, and the reverse. */
  char dfield[160], why_doc[1024];
  if (rundoc_check(body.p ? body.p : "", body.len, dfield, sizeof dfield, why_doc, sizeof why_doc)) {
    reply_api_error(r, 400, why_doc, dfield[0] ? dfield : NULL);
    goto done;
  }
  json_err je;
  jval *doc = json_parse(&r->a, body.p ? body.p : "", body.len, &je);
  if (!doc) {
    char m[200];
    snprintf(m, sizeof m, "invalid JSON at byte %zu: %s", je.offset, je.msg);
    reply_api_error(r, 400, m, NULL);
    goto done;
  }
  run_doc d;
  const char *field = NULL, *why = NULL;
  if (run_validate(&r->a, doc, &d, &field, &why)) {
    char *m = arena_printf(&r->a, "%s%s%s", field && *field ? field : "", field && *field ? ": " : "", why);
    reply_api_error(r, 400, m ? m : why, field && *field ? field : NULL);
    goto done;
  }
  char msg[512];
  st = run_store(db, &d, msg, sizeof msg);
  if (st == 200 || st == 201) {
    jval *o = jobj(&r->a);
    jset_str(&r->a, o, "status", st == 201 ? "stored" : "already_present");
    jset_str(&r->a, o, "uuid", d.uuid);
    jset_num(&r->a, o, "results", (double)d.n_res);
    jset_str(&r->a, o, "url", arena_printf(&r->a, "/runs/%s", d.uuid));
    reply_json(r, st, o);
  } else {
    reply_api_error(r, st, msg, st == 409 ? "uuid" : NULL);
  }
done:
  buf_free(&body);
  sqlite3_close(db);
}

/* POST /api/v1/regressions/{id} {"status": "...", "note": "..."}: people's triage. */
void triage_handle(req *r, const char *idtext) {
  long long id = 0;
  for (const char *p = idtext; *p; p++)
    if (*p < '0' || *p > '9' || p - idtext > 17) {
      reply_api_error(r, 404, "no such regression", NULL);
      return;
    }
  id = atoll(idtext);
  if (!is_json(r)) {
    reply_api_error(r, 415, "Content-Type must be application/json", NULL);
    return;
  }
  sqlite3 *db;
  if (open_authorized(r, "triage", &db)) return;
  buf body = {0};
  int st = read_body(r, TRIAGE_MAX_BODY, &body);
  if (st) {
    reply_api_error(r, st, st == 413 ? "body too large" : "incomplete body", NULL);
    goto done;
  }
  json_err je;
  jval *doc = json_parse(&r->a, body.p ? body.p : "", body.len, &je);
  if (!doc || doc->t != J_OBJ) {
    reply_api_error(r, 400, "expected a JSON object {\"status\": ..., \"note\": ...}", NULL);
    goto done;
  }
  jval *sv = json_get(doc, "status"), *nv = json_get(doc, "note");
  if ((!sv && !nv) || (sv && sv->t != J_STR) || (nv && nv->t != J_STR)) {
    reply_api_error(r, 400, "status and note must be strings; give at least one",
                    sv && sv->t != J_STR ? "status" : nv && nv->t != J_STR ? "note" : NULL);
    goto done;
  }
  if (sv) {
    int known = 0;
    for (int i = 0; TRIAGE_STATES[i]; i++) known |= strcmp(sv->s, TRIAGE_STATES[i]) == 0;
    if (!known) {
      reply_api_error(r, 400, "status: expected detected, acknowledged, fixed or ignored", "status");
      goto done;
    }
  }
  if (nv && nv->len > 4096) {
    reply_api_error(r, 400, "note: longer than 4096 bytes", "note");
    goto done;
  }
  if (!db_has_table(db, "regression")) {
    reply_api_error(r, 404, "no such regression", NULL);
    goto done;
  }
  sqlite3_stmt *up;
  if (sqlite3_prepare_v2(db,
                         "UPDATE regression SET status = coalesce(?1, status),"
                         " note = coalesce(?2, note), updated_at = ?3 WHERE id = ?4",
                         -1, &up, NULL) != SQLITE_OK) {
    reply_api_error(r, 500, sqlite3_errmsg(db), NULL);
    goto done;
  }
  if (sv) sqlite3_bind_text(up, 1, sv->s, -1, SQLITE_STATIC);
  else sqlite3_bind_null(up, 1);
  if (nv) sqlite3_bind_text(up, 2, nv->s, -1, SQLITE_STATIC);
  else sqlite3_bind_null(up, 2);
  sqlite3_bind_int64(up, 3, (sqlite3_int64)time(NULL));
  sqlite3_bind_int64(up, 4, id);
  int rc = sqlite3_step(up);
  sqlite3_finalize(up);
  if (rc != SQLITE_DONE) {
    reply_api_error(r, 503, sqlite3_errmsg(db), NULL);
  } else if (sqlite3_changes(db) != 1) {
    reply_api_error(r, 404, "no such regression", NULL);
  } else {
    jval *o = jobj(&r->a);
    jset_num(&r->a, o, "id", (double)id);
    jset_str(&r->a, o, "status", "updated");
    reply_json(r, 200, o);
  }
done:
  buf_free(&body);
  sqlite3_close(db);
}
