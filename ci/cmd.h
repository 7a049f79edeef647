/* cmd.h — the qgmm-bench subcommands (one function each; argv[0] is the subcommand). */
#ifndef QGMM_CI_CMD_H
#define QGMM_CI_CMD_H

int cmd_run(int argc, char **argv);
int cmd_cases(int argc, char **argv);
int cmd_references(int argc, char **argv);
int cmd_gate(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_upload(int argc, char **argv);
int cmd_changepoints(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* Shared option helpers: returns 1 and the value when argv[*i] is `name VALUE` or
 * `name=VALUE` (advancing *i), 0 otherwise; exits 2 on a missing value. */
int opt_value(int argc, char **argv, int *i, const char *name, const char **value);
int wants_help(int argc, char **argv);
/* Opening the store (cmd_db.c): read-only for commands that only read; an existing store
 * of the current schema for those that record (read-only when record is 0). Print the
 * reason and return -1 on failure. Only run and import create or migrate a store. */
struct sqlite3;
int open_ro(const char *db, struct sqlite3 **out, const char *cmd);
int open_recording(const char *db, int record, struct sqlite3 **out, const char *cmd);
/* The change-point options shared by `changepoints` and `gate --changepoints`. */
struct cp_config;
int cp_parse_option(int argc, char **argv, int *i, struct cp_config *cfg);

#endif
