/* API tokens: `qgmm-dash token add NAME` prints a random token once; the store keeps only
 * "sha256:<hex>" of it (SHA-256 from ci/sha256.c), with a scope and a revocation time. */
#ifndef QGMM_DASH_TOKENS_H
#define QGMM_DASH_TOKENS_H
#include <sqlite3.h>
#include <stddef.h>

/* Checks "Authorization: Bearer T" against the store. Returns 0 when T is known, not
 * revoked and allowed `scope` ("ingest" or "triage"); otherwise the HTTP status (401 no/
 * unknown/revoked token, 403 wrong scope) with a reason in msg. */
int token_check(sqlite3 *db, const char *auth_header, const char *scope, char *msg, size_t msgn);

/* The `token` subcommand: add NAME [--scope S] | list | revoke NAME. */
int token_cli(const char *db_path, int argc, char **argv);

#endif
