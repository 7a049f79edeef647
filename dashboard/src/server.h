/* The HTTP side: civetweb set-up, one router, and the response helpers that put the
 * hardening headers on every answer. */
#ifndef QGMM_DASH_SERVER_H
#define QGMM_DASH_SERVER_H
#include <sqlite3.h>
#include <stddef.h>

#include "buf.h"
#include "dom.h"

struct mg_connection;

typedef struct {
  const char *db_path;
  const char *listen;        /* civetweb listening_ports syntax, e.g. "127.0.0.1:8080" */
  size_t max_body;           /* ingest body cap, bytes */
  int threads;               /* civetweb worker threads (the concurrency cap) */
  int timeout_ms;            /* per-request socket timeout */
  int quiet;                 /* no access log */
} dash_config;

typedef struct {
  struct mg_connection *conn;
  const dash_config *cfg;
  const char *method;
  const char *path;          /* decoded local URI, no query */
  const char *query;         /* raw query string or NULL */
  arena a;                   /* everything allocated for this request */
  int status;
  const char *ctype;
  const char *extra_headers; /* appended verbatim (each line ends in \r\n) */
  buf body;
} req;

/* Query parameter (URL-decoded) or NULL when absent; copies into the request arena. */
const char *req_param(req *r, const char *name);
/* Finishes the request with a JSON body / an error body in the API's error shape
 * {"error": msg, "field": field-or-null}. */
void reply_json(req *r, int status, const jval *v);
void reply_api_error(req *r, int status, const char *msg, const char *field);

int server_run(const dash_config *cfg);

#endif
