#include "server.h"

#include <civetweb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "assets.h"
#include "db.h"
#include "ingest.h"
#include "model.h"
#include "render.h"

/* No inline script or style anywhere, so the policy can be strict: scripts, styles and
 * fetches only from this origin, images only inline SVG/data, no framing, no forms. */
static const char *HARDENING =
    "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'\r\n"
    "X-Content-Type-Options: nosniff\r\n"
    "X-Frame-Options: DENY\r\n"
    "Referrer-Policy: no-referrer\r\n"
    "Cross-Origin-Opener-Policy: same-origin\r\n"
    "Cross-Origin-Resource-Policy: same-origin\r\n"
    "Permissions-Policy: camera=(), microphone=(), geolocation=()\r\n";

static const char *reason(int s) {
  switch (s) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

const char *req_param(req *r, const char *name) {
  if (!r->query) return NULL;
  size_t qn = strlen(r->query);
  char *dst = arena_alloc(&r->a, qn + 1);
  if (!dst) return NULL;
  int n = mg_get_var(r->query, qn, name, dst, qn + 1);
  return n >= 0 ? dst : NULL;
}

void reply_json(req *r, int status, const jval *v) {
  r->status = status;
  r->ctype = "application/json; charset=utf-8";
  r->body.len = 0;
  json_write(&r->body, v);
  buf_putc(&r->body, '\n');
}

void reply_api_error(req *r, int status, const char *msg, const char *field) {
  jval *o = jobj(&r->a);
  jset_str(&r->a, o, "error", msg);
  jset(&r->a, o, "field", field ? jstr(&r->a, field) : jnull(&r->a));
  reply_json(r, status, o);
}

static void send_response(req *r) {
  if (r->body.oom || r->a.oom) {
    /* Views are paginated so this does not happen at the ingest's limits; if it does, the
     * answer keeps the route's shape (JSON errors on the API). */
    buf_free(&r->body);
    r->status = 500;
    if (strncmp(r->path, "/api/", 5) == 0) {
      r->ctype = "application/json; charset=utf-8";
      buf_puts(&r->body, "{\"error\":\"response too large\",\"field\":null}\n");
    } else {
      r->ctype = "text/plain; charset=utf-8";
      buf_puts(&r->body, "response too large\n");
    }
  }
  mg_printf(r->conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: %s\r\n%s%sConnection: close\r\n\r\n",
            r->status, reason(r->status), r->ctype, r->body.len,
            strncmp(r->path, "/static/", 8) == 0 && r->status == 200 ? "public, max-age=3600"
                                                                      : "no-store",
            HARDENING, r->extra_headers ? r->extra_headers : "");
  if (strcmp(r->method, "HEAD") != 0 && r->body.len) mg_write(r->conn, r->body.p, r->body.len);
}

/* ----------------------------------------------------------------- views */
typedef struct {
  const char *html_prefix;  /* "/series/" or exact "/matrix" */
  const char *api_prefix;
  int takes_arg;            /* path ends in /{arg} */
  model_fn model;
  render_fn render;
  const char *title;
} view;

static const view VIEWS[] = {
    {"/", "/api/v1/overview", 0, model_overview, render_overview, "Overview"},
    {"/matrix", "/api/v1/matrix", 0, model_matrix, render_matrix, "Matrix"},
    {"/series", "/api/v1/series", 0, model_series_list, render_series_list, "Series"},
    {"/series/", "/api/v1/series/", 1, model_series, render_series, "Series"},
    {"/runs", "/api/v1/runs", 0, model_runs, render_runs, "Runs"},
    {"/runs/", "/api/v1/runs/", 1, model_run, render_run, "Run"},
    {"/compare", "/api/v1/compare", 0, model_compare, render_compare, "Compare"},
    {"/regressions", "/api/v1/regressions", 0, model_regressions, render_regressions,
     "Regressions"},
    {"/regressions/", "/api/v1/regressions/", 1, model_regression, render_regression,
     "Regression"},
};

/* Returns the view and sets *arg / *api when path matches. An argument is one path
 * segment: no '/' inside, not empty. */
static const view *match_view(const char *path, const char **arg, int *api) {
  for (size_t i = 0; i < sizeof VIEWS / sizeof *VIEWS; i++) {
    for (int k = 0; k < 2; k++) {
      const char *p = k ? VIEWS[i].api_prefix : VIEWS[i].html_prefix;
      size_t n = strlen(p);
      if (VIEWS[i].takes_arg) {
        if (strncmp(path, p, n) == 0 && path[n] && !strchr(path + n, '/')) {
          *arg = path + n;
          *api = k;
          return &VIEWS[i];
        }
      } else if (strcmp(path, p) == 0) {
        *arg = NULL;
        *api = k;
        return &VIEWS[i];
      }
    }
  }
  return NULL;
}

static void serve_view(req *r, const view *v, const char *arg, int api) {
  sqlite3 *db = NULL;
  char msg[512];
  int uv = 0;
  store_state st = db_open_ro(r->cfg->db_path, &db, &uv, msg, sizeof msg);
  if (st != STORE_OK) {
    if (api) {
      jval *o = jobj(&r->a);
      jset_str(&r->a, o, "error", msg);
      jset(&r->a, o, "field", jnull(&r->a));
      jset_str(&r->a, o, "store",
               st == STORE_MISSING ? "missing" : st == STORE_EMPTY ? "empty" : st == STORE_TOO_NEW ? "too_new"
               : st == STORE_TOO_OLD ? "too_old" : st == STORE_FOREIGN ? "foreign" : "error");
      reply_json(r, 503, o);
    } else {
      r->status = 503;
      render_message(r, st == STORE_MISSING || st == STORE_EMPTY ? "No results yet" : "Store unavailable", msg);
    }
    return;
  }
  mctx m = {r, db, uv, db_has_table(db, "regression")};
  jval *model = NULL;
  /* One read transaction so every query of the view sees the same snapshot even while
   * an ingest commits. */
  sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
  int status = v->model(&m, arg, &model);
  sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(db);
  if (api) {
    reply_json(r, status, model);
  } else if (status == 200) {
    r->status = 200;
    v->render(r, model);
  } else {
    r->status = status;
    render_message(r, status == 404 ? "Not found" : "Cannot show this", jget_str(model, "error", "error"));
  }
}

static void serve_asset(req *r, const char *name) {
  const dash_asset *as = dash_asset_find(name);
  if (!as) {
    r->status = 404;
    r->ctype = "text/plain; charset=utf-8";
    buf_puts(&r->body, "not found\n");
    return;
  }
  r->status = 200;
  r->ctype = as->type;
  buf_put(&r->body, as->data, as->size);
}

static void route(req *r) {
  const char *arg = NULL;
  int api = 0;
  int is_get = strcmp(r->method, "GET") == 0 || strcmp(r->method, "HEAD") == 0;
  int is_post = strcmp(r->method, "POST") == 0;
  int is_api = strncmp(r->path, "/api/", 5) == 0;

  if (is_post && strcmp(r->path, "/api/v1/runs") == 0) {
    ingest_handle(r);
    return;
  }
  if (is_post && strncmp(r->path, "/api/v1/regressions/", 20) == 0) {
    triage_handle(r, r->path + 20);
    return;
  }
  if (is_get && strncmp(r->path, "/static/", 8) == 0) {
    serve_asset(r, r->path + 8);
    return;
  }
  if (is_get && strcmp(r->path, "/api/v1/health") == 0) {
    jval *o = jobj(&r->a);
    jset(&r->a, o, "ok", jbool(&r->a, 1));
    jset_str(&r->a, o, "service", "qgmm-dash");
    reply_json(r, 200, o);
    return;
  }
  const view *v = match_view(r->path, &arg, &api);
  if (v && is_get) {
    serve_view(r, v, arg, api);
    return;
  }
  if (v || strcmp(r->path, "/api/v1/runs") == 0) {
    r->extra_headers = v && v->model == model_runs && api ? "Allow: GET, POST\r\n"
                                                          : "Allow: GET\r\n";
    if (is_api || api) reply_api_error(r, 405, "method not allowed", NULL);
    else {
      r->status = 405;
      render_message(r, "Method not allowed", "This page only answers GET.");
    }
    return;
  }
  if (is_api) {
    reply_api_error(r, 404, "no such API route", NULL);
  } else {
    r->status = 404;
    render_message(r, "Not found", "There is no page at this address.");
  }
}

/* civetweb runs with decode_url=no, so the path is decoded here, where a decoded NUL
 * cannot cut it short: "/api/v1/health%00xyz" must not match "/api/v1/health". A path
 * holding NUL or any other control byte is refused (400); routes match the whole decoded
 * path. Returns 1 when the request may be routed. */
static int decode_path(req *r, const char *raw) {
  size_t n = strlen(raw);
  char *dst = arena_alloc(&r->a, n + 1);
  int len = dst ? mg_url_decode(raw, (int)n, dst, (int)n + 1, 0) : -1;
  int ok = len >= 0;
  for (int i = 0; ok && i < len; i++) ok = (unsigned char)dst[i] >= 0x20 && dst[i] != 0x7f;
  if (ok) {
    r->path = dst;
    return 1;
  }
  r->path = raw;  /* still percent-encoded: safe to log */
  if (strncmp(raw, "/api/", 5) == 0) {
    reply_api_error(r, 400, "the request path holds a control character (NUL, CR, LF ...)", NULL);
  } else {
    r->status = 400;
    render_message(r, "Bad request", "The address holds a control character.");
  }
  return 0;
}

static int handler(struct mg_connection *conn, void *cbdata) {
  const dash_config *cfg = cbdata;
  const struct mg_request_info *ri = mg_get_request_info(conn);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  req r;
  memset(&r, 0, sizeof r);
  r.conn = conn;
  r.cfg = cfg;
  r.method = ri->request_method;
  r.query = ri->query_string;
  r.a.limit = 512u << 20;   /* a view or an ingest never needs more than this */
  r.status = 500;
  r.ctype = "text/html; charset=utf-8";
  if (decode_path(&r, ri->local_uri ? ri->local_uri : "/")) route(&r);
  send_response(&r);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (!cfg->quiet) {
    /* The path is client-chosen and URL-decoded: escape control bytes so a request cannot
     * forge log lines or terminal escapes. */
    char safe[512];
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)r.path; *p && k + 5 < sizeof safe; p++) {
      if (*p < 0x20 || *p == 0x7f || *p == '\\') k += (size_t)snprintf(safe + k, sizeof safe - k, "\\x%02x", *p);
      else safe[k++] = (char)*p;
    }
    safe[k] = 0;
    fprintf(stderr, "%s %s %d %zu %.1fms\n", r.method, safe, r.status, r.body.len,
            (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
  }
  int status = r.status;
  buf_free(&r.body);
  arena_free(&r.a);
  return status;
}

static int log_message(const struct mg_connection *conn, const char *message) {
  (void)conn;
  fprintf(stderr, "civetweb: %s\n", message);
  return 1;
}

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

int server_run(const dash_config *cfg) {
  char threads[16], timeout[16];
  snprintf(threads, sizeof threads, "%d", cfg->threads);
  snprintf(timeout, sizeof timeout, "%d", cfg->timeout_ms);
  /* No document_root: civetweb serves no file from disk. The extra header reaches the
   * error pages civetweb writes itself (malformed requests), ours carry it already. */
  const char *opts[] = {"listening_ports", cfg->listen,
                        "num_threads", threads,
                        "request_timeout_ms", timeout,
                        "enable_keep_alive", "no",
                        "enable_directory_listing", "no",
                        "decode_url", "no",
                        "max_request_size", "16384",
                        "additional_header",
                        "Content-Security-Policy: default-src 'none'; frame-ancestors 'none'\r\n"
                        "X-Content-Type-Options: nosniff",
                        NULL};
  struct mg_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.log_message = log_message;
  mg_init_library(0);
  struct mg_context *ctx = mg_start(&cb, NULL, opts);
  if (!ctx) {
    fprintf(stderr, "qgmm-dash: cannot listen on %s (in use, or not an address:port)\n",
            cfg->listen);
    mg_exit_library();
    return 1;
  }
  mg_set_request_handler(ctx, "/", handler, (void *)cfg);
  struct mg_server_port ports[4];
  int np = mg_get_server_ports(ctx, 4, ports);
  /* Host part as configured, port as bound (so --listen 127.0.0.1:0 reports the port the
   * kernel chose; the tests rely on this line). */
  const char *colon = strrchr(cfg->listen, ':');
  int hostlen = colon ? (int)(colon - cfg->listen) : 0;
  for (int i = 0; i < np; i++)
    fprintf(stderr, "qgmm-dash: serving %s at http://%.*s:%d/ (%d threads)\n", cfg->db_path,
            hostlen ? hostlen : 9, hostlen ? cfg->listen : "127.0.0.1", ports[i].port,
            cfg->threads);
  fflush(stderr);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);
  while (!stop_flag) usleep(100000);
  mg_stop(ctx);
  mg_exit_library();
  return 0;
}
