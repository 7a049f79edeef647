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
#include "json.h"
#include "rundoc.h"
#include "store.h"
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
  store_state s = access(r->cfg->db_path, F_OK) == 0 && !store_writable(r->cfg->db_path)
                      ? STORE_ERROR
                      : store_open_upgrade(r->cfg->db_path, db, msg, sizeof msg);
  if (s != STORE_OK) {
    if (s == STORE_MISSING || s == STORE_EMPTY)
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
  /* The runner's validator decides (ci/rundoc.h) and the runner's store writes: what
   * qgmm-bench import refuses is refused here with the same sentence, and the reverse. */
  char field[160], why[1024];
  run_record run;
  rr_init(&run);
  if (run_from_json_field(body.p ? body.p : "", body.len, &run, field, sizeof field, why, sizeof why)) {
    reply_api_error(r, 400, why, field[0] ? field : NULL);
    rr_free(&run);
    goto done;
  }
  int already = 0;
  int64_t run_id = 0;
  int rc = store_write_run(db, &run, "upload", &already, &run_id, why, sizeof why);
  if (rc == 0 && already == STORE_RUN_DIFFERENT) {
    char m[128];
    snprintf(m, sizeof m, "a different run with uuid %s is already stored", run.uuid);
    reply_api_error(r, 409, m, "uuid");
  } else if (rc == 0) {
    jval *o = jobj(&r->a);
    jset_str(&r->a, o, "status", already ? "already_present" : "stored");
    jset_str(&r->a, o, "uuid", run.uuid);
    jset_num(&r->a, o, "results", (double)run.n_results);
    jset_str(&r->a, o, "url", arena_printf(&r->a, "/runs/%s", run.uuid));
    reply_json(r, already ? 200 : 201, o);
  } else {
    reply_api_error(r, rc == STORE_WRITE_BUSY ? 503 : 500, why, NULL);
  }
  rr_free(&run);
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
  json_value *doc = NULL;
  buf body = {0};
  int st = read_body(r, TRIAGE_MAX_BODY, &body);
  if (st) {
    reply_api_error(r, st, st == 413 ? "body too large" : "incomplete body", NULL);
    goto done;
  }
  char jerr[160];
  doc = json_value_parse(body.p ? body.p : "", body.len, jerr, sizeof jerr);
  if (!doc || doc->type != JSON_OBJECT) {
    reply_api_error(r, 400, "expected a JSON object {\"status\": ..., \"note\": ...}", NULL);
    goto done;
  }
  const json_value *sv = json_value_get(doc, "status"), *nv = json_value_get(doc, "note");
  if ((!sv && !nv) || (sv && sv->type != JSON_STRING) || (nv && nv->type != JSON_STRING)) {
    reply_api_error(r, 400, "status and note must be strings; give at least one",
                    sv && sv->type != JSON_STRING ? "status" : nv && nv->type != JSON_STRING ? "note" : NULL);
    goto done;
  }
  if (sv) {
    int known = 0;
    for (int i = 0; TRIAGE_STATES[i]; i++) known |= strcmp(sv->string, TRIAGE_STATES[i]) == 0;
    if (!known) {
      reply_api_error(r, 400, "status: expected detected, acknowledged, fixed or ignored", "status");
      goto done;
    }
  }
  if (nv && strlen(nv->string) > 4096) {
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
  if (sv) sqlite3_bind_text(up, 1, sv->string, -1, SQLITE_STATIC);
  else sqlite3_bind_null(up, 1);
  if (nv) sqlite3_bind_text(up, 2, nv->string, -1, SQLITE_STATIC);
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
  json_value_free(doc);
  buf_free(&body);
  sqlite3_close(db);
}
