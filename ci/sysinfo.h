/*
 * sysinfo.h — facts recorded with every run: the machine, the git revision, the hash of
 * a backend's library file, and what can be read out of a context's describe line.
 */
#ifndef QGMM_CI_SYSINFO_H
#define QGMM_CI_SYSINFO_H

#include "runrec.h"

/* hostname, cpu model, os, cores, memory into r. */
void sysinfo_machine(run_record *r);

/* Fills sha / commit_time / subject / branch / dirty from `git` run in `dir` (the
 * current directory when it is inside a work tree, else the source dir compiled in).
 * Leaves "unknown" when git is unavailable. Returns 0 when git answered. */
int sysinfo_git(run_record *r, const char *dir);

/* "fnv1a64:<hex>" of a file's bytes; "" when it cannot be read. */
void sysinfo_file_hash(const char *path, char out[40]);

/* Path of the shared object that holds `symbol_addr` (dladdr), "" if unknown. */
void sysinfo_library_of(const void *symbol_addr, char *out, size_t cap);

/* Splits a qgmm_context_describe() line into device name, arch, driver and runtime
 * (formats of the cpu, cuda, hip and vulkan backends; unknown text leaves fields ""). */
void sysinfo_parse_describe(const char *backend, const char *describe, rr_context *c);

/* The NVIDIA kernel driver version ("580.65.06") from /proc, "" when absent. */
void sysinfo_nvidia_driver(char *out, size_t cap);

#endif
