#include "tokens.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "db.h"
#include "sha256.h"
#include "store.h"

#define TOKEN_PREFIX "qgmmdash_"

int token_check(sqlite3 *db, const char *auth, const char *scope, char *msg, size_t msgn) {
  if (!auth || strncmp(auth, "Bearer ", 7) != 0 || !auth[7]) {
    snprintf(msg, msgn, "missing bearer token (Authorization: Bearer TOKEN)");
    return 401;
  }
  const char *tok = auth + 7;
  if (strlen(tok) > 256) {
    snprintf(msg, msgn, "unknown token");
    return 401;
  }
  char hex[65], stored[80];
  sha256_hex(tok, strlen(tok), hex);
  snprintf(stored, sizeof stored, "sha256:%s", hex);
  if (!db_has_table(db, "dash_token")) {
    snprintf(msg, msgn, "unknown token (no tokens exist: qgmm-dash token add NAME)");
    return 401;
  }
  sqlite3_stmt *st;
  int status = 401;
  snprintf(msg, msgn, "unknown token");
  if (sqlite3_prepare_v2(db, "SELECT id, scope, revoked_at FROM dash_token WHERE token_hash = ?1",
                         -1, &st, NULL) != SQLITE_OK) {
    snprintf(msg, msgn, "token lookup failed: %s", sqlite3_errmsg(db));
    return 500;
  }
  sqlite3_bind_text(st, 1, stored, -1, SQLITE_STATIC);
  long long id = 0;
  if (sqlite3_step(st) == SQLITE_ROW) {
    const char *sc = (const char *)sqlite3_column_text(st, 1);
    id = sqlite3_column_int64(st, 0);
    if (sqlite3_column_type(st, 2) != SQLITE_NULL) {
      snprintf(msg, msgn, "token revoked");
    } else if (strcmp(sc, "all") != 0 && strcmp(sc, scope) != 0) {
      snprintf(msg, msgn, "token scope '%s' does not allow %s", sc, scope);
      status = 403;
    } else {
      status = 0;
      msg[0] = 0;
    }
  }
  sqlite3_finalize(st);
  if (status == 0 &&
      sqlite3_prepare_v2(db, "UPDATE dash_token SET last_used_at = ?1 WHERE id = ?2", -1, &st,
                         NULL) == SQLITE_OK) {
    sqlite3_bind_int64(st, 1, (sqlite3_int64)time(NULL));
    sqlite3_bind_int64(st, 2, id);
    sqlite3_step(st); /* best effort: a busy store must not refuse a valid token */
    sqlite3_finalize(st);
  }
  return status;
}

static int usage(void) {
  fprintf(stderr,
          "usage: qgmm-dash --db FILE token add NAME [--scope ingest|triage|all]\n"
          "       qgmm-dash --db FILE token list\n"
          "       qgmm-dash --db FILE token revoke NAME\n");
  return 2;
}

static int token_add(sqlite3 *db, const char *name, const char *scope) {
  size_t nlen = strlen(name);
  if (nlen == 0 || nlen > 64 ||
      strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != nlen) {
    fprintf(stderr, "qgmm-dash: token names are 1..64 of [A-Za-z0-9._-]\n");
    return 2;
  }
  if (strcmp(scope, "ingest") && strcmp(scope, "triage") && strcmp(scope, "all")) {
    fprintf(stderr, "qgmm-dash: --scope must be ingest, triage or all\n");
    return 2;
  }
  unsigned char raw[24];
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
    perror("qgmm-dash: getrandom");
    return 1;
  }
  char tok[64];
  int n = snprintf(tok, sizeof tok, "%s", TOKEN_PREFIX);
  for (size_t i = 0; i < sizeof raw; i++) n += snprintf(tok + n, sizeof tok - (size_t)n, "%02x", raw[i]);
  char hex[65], stored[80];
  sha256_hex(tok, strlen(tok), hex);
  snprintf(stored, sizeof stored, "sha256:%s", hex);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db,
                         "INSERT INTO dash_token (name, token_hash, scope, created_at)"
                         " VALUES (?1, ?2, ?3, ?4)",
                         -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "qgmm-dash: %s\n", sqlite3_errmsg(db));
    return 1;
  }
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, stored, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, scope, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL));
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    fprintf(stderr, "qgmm-dash: cannot add token '%s': %s\n", name,
            rc == SQLITE_CONSTRAINT ? "a token with this name exists (revoke it or pick another name)"
                                    : sqlite3_errmsg(db));
    return 1;
  }
  /* The token itself goes to stdout (and nowhere else): scripts capture it. */
  printf("%s\n", tok);
  fprintf(stderr, "qgmm-dash: token '%s' (scope %s) created; it is shown only this once\n",
          name, scope);
  return 0;
}

static int token_list(sqlite3 *db) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db,
                         "SELECT name, scope, created_at, revoked_at, last_used_at FROM dash_token"
                         " ORDER BY name",
                         -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "qgmm-dash: %s\n", sqlite3_errmsg(db));
    return 1;
  }
  printf("%-24s %-7s %-20s %-20s %s\n", "name", "scope", "created", "last used", "state");
  while (sqlite3_step(st) == SQLITE_ROW) {
    char c[32] = "-", u[32] = "-";
    time_t t = (time_t)sqlite3_column_int64(st, 2);
    strftime(c, sizeof c, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    if (sqlite3_column_type(st, 4) != SQLITE_NULL) {
      t = (time_t)sqlite3_column_int64(st, 4);
      strftime(u, sizeof u, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    }
    printf("%-24s %-7s %-20s %-20s %s\n", sqlite3_column_text(st, 0), sqlite3_column_text(st, 1),
           c, u, sqlite3_column_type(st, 3) == SQLITE_NULL ? "active" : "revoked");
  }
  sqlite3_finalize(st);
  return 0;
}

static int token_revoke(sqlite3 *db, const char *name) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db,
                         "UPDATE dash_token SET revoked_at = ?2 WHERE name = ?1 AND revoked_at IS NULL",
                         -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "qgmm-dash: %s\n", sqlite3_errmsg(db));
    return 1;
  }
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, (sqlite3_int64)time(NULL));
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE || sqlite3_changes(db) != 1) {
    fprintf(stderr, "qgmm-dash: no active token named '%s'\n", name);
    return 1;
  }
  fprintf(stderr, "qgmm-dash: token '%s' revoked\n", name);
  return 0;
}

int token_cli(const char *db_path, int argc, char **argv) {
  if (argc < 1) return usage();
  sqlite3 *db;
  char msg[512];
  /* Adding a token to a new file creates the store (with the runner's schema), so a
   * central dashboard can be set up before any run exists. */
  int failed = strcmp(argv[0], "add") == 0 ? store_open(db_path, &db, msg, sizeof msg) != 0
                                             : store_open_upgrade(db_path, &db, msg, sizeof msg) != STORE_OK;
  if (failed) {
    fprintf(stderr, "qgmm-dash: %s\n", msg);
    return 1;
  }
  /* dash_token is part of the schema (ci/schema.sql, migration 3): the open above
   * created or upgraded it. */
  int rc;
  if (strcmp(argv[0], "add") == 0 && argc >= 2) {
    const char *scope = "ingest";
    for (int i = 2; i < argc; i++) {
      if (strcmp(argv[i], "--scope") == 0 && i + 1 < argc) scope = argv[++i];
      else {
        sqlite3_close(db);
        return usage();
      }
    }
    rc = token_add(db, argv[1], scope);
  } else if (strcmp(argv[0], "list") == 0 && argc == 1) {
    rc = token_list(db);
  } else if (strcmp(argv[0], "revoke") == 0 && argc == 2) {
    rc = token_revoke(db, argv[1]);
  } else {
    rc = usage();
  }
  sqlite3_close(db);
  return rc;
}
