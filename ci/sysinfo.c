/* sysinfo.c — see sysinfo.h. */
#define _GNU_SOURCE
#include "sysinfo.h"
#include "store.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ')) s[--n] = 0;
}

void sysinfo_machine(run_record *r)
{
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    rr_set(&r->hostname, host);
    char cpu[256] = "unknown", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            const char *c = strchr(line, ':');
            if (c) { snprintf(cpu, sizeof cpu, "%s", c + 2); chomp(cpu); break; }
        }
    }
    if (f) fclose(f);
    rr_set(&r->cpu, cpu);
    struct utsname u;
    if (uname(&u) == 0) {
        char os[600];
        snprintf(os, sizeof os, "%s %s %s", u.sysname, u.release, u.machine);
        rr_set(&r->os, os);
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    r->cores = n > 0 ? n : RR_UNSET_I;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    r->memory_bytes = pages > 0 && psz > 0 ? (int64_t)pages * psz : RR_UNSET_I;
}

/* Runs a command, returns its first `cap` bytes of stdout (trimmed) or -1. */
static int run_cmd(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int rc = pclose(p);
    chomp(out);
    return rc == 0 ? 0 : -1;
}

static void shell_quote(const char *s, char *out, size_t cap)
{
    size_t k = 0;
    if (k < cap - 1) out[k++] = '\'';
    for (; *s && k + 5 < cap; ++s) {
        if (*s == '\'') { memcpy(out + k, "'\\''", 4); k += 4; }
        else out[k++] = *s;
    }
    if (k < cap - 1) out[k++] = '\'';
    out[k] = 0;
}

int sysinfo_git(run_record *r, const char *dir)
{
    char q[1200], cmd[1600], buf[1024];
    shell_quote(dir, q, sizeof q);
    rr_set(&r->sha, "unknown");
    snprintf(cmd, sizeof cmd, "git -C %s rev-parse HEAD 2>/dev/null", q);
    if (run_cmd(cmd, buf, sizeof buf) || strlen(buf) < 40) return -1;
    rr_set(&r->sha, buf);
    snprintf(cmd, sizeof cmd, "git -C %s log -1 --format=%%ct HEAD 2>/dev/null", q);
    if (run_cmd(cmd, buf, sizeof buf) == 0 && buf[0]) r->commit_time = atoll(buf);
    snprintf(cmd, sizeof cmd, "git -C %s log -1 --format=%%s HEAD 2>/dev/null", q);
    if (run_cmd(cmd, buf, sizeof buf) == 0) rr_set_clipped(&r->subject, buf, RR_MAX_NAME);
    snprintf(cmd, sizeof cmd, "git -C %s rev-parse --abbrev-ref HEAD 2>/dev/null", q);
    if (run_cmd(cmd, buf, sizeof buf) == 0 && strcmp(buf, "HEAD") != 0) rr_set(&r->branch, buf);
    /* tracked files only: build directories and scratch files do not make a tree dirty */
    snprintf(cmd, sizeof cmd, "git -C %s status --porcelain --untracked-files=no 2>/dev/null", q);
    if (run_cmd(cmd, buf, sizeof buf) == 0) r->dirty = buf[0] != 0;
    return 0;
}

void sysinfo_file_hash(const char *path, char out[40])
{
    out[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    uint64_t h = STORE_FNV_INIT;
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) h = store_fnv1a64(h, buf, n);
    fclose(f);
    snprintf(out, 40, "fnv1a64:%016llx", (unsigned long long)h);
}

void sysinfo_library_of(const void *addr, char *out, size_t cap)
{
    Dl_info info;
    out[0] = 0;
    if (dladdr(addr, &info) && info.dli_fname) {
        char *rp = realpath(info.dli_fname, NULL);
        snprintf(out, cap, "%s", rp ? rp : info.dli_fname);
        free(rp);
    }
}

void sysinfo_nvidia_driver(char *out, size_t cap)
{
    out[0] = 0;
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    char line[512];
    if (f && fgets(line, sizeof line, f)) {
        /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ..." */
        const char *k = strstr(line, "Kernel Module");
        if (k) {
            k += strlen("Kernel Module");
            while (*k == ' ') ++k;
            size_t n = strcspn(k, " \n");
            snprintf(out, cap, "%.*s", (int)n, k);
        }
    }
    if (f) fclose(f);
}

/* Copies the text after `key` up to the first of `stops` into out. */
static int after(const char *s, const char *key, const char *stops, char *out, size_t cap)
{
    const char *p = strstr(s, key);
    if (!p) return -1;
    p += strlen(key);
    size_t n = strcspn(p, stops);
    snprintf(out, cap, "%.*s", (int)n, p);
    return 0;
}

void sysinfo_parse_describe(const char *backend, const char *d, rr_context *c)
{
    char buf[256];
    rr_set(&c->describe, d);
    if (strcmp(backend, "cpu") == 0) return;  /* the caller fills the CPU model */
    rr_set(&c->device_kind, "gpu");
    if (strcmp(backend, "vulkan") == 0) {
        /* "vulkan: NAME (driver X.Y.Z, Vulkan A.B, ...)" */
        const char *p = strstr(d, "vulkan: "), *q = strstr(d, " (driver ");
        if (p && q && q > p + 8) {  /* the name itself may hold parentheses: "llvmpipe (LLVM 15, 256 bits)" */
            snprintf(buf, sizeof buf, "%.*s", (int)(q - (p + 8)), p + 8);
            rr_set(&c->device_name, buf);
        }
        if (strstr(d, "llvmpipe") || strstr(d, "lavapipe") || strstr(d, "SwiftShader")) rr_set(&c->device_kind, "cpu");
    } else {
        /* "cuda device 0: NAME, sm_90, ..." / "hip device 0: NAME, gfx942, ..." */
        const char *colon = strstr(d, ": ");
        if (colon) {
            size_t n = strcspn(colon + 2, ",(");
            snprintf(buf, sizeof buf, "%.*s", (int)n, colon + 2);
            chomp(buf);
            rr_set(&c->device_name, buf);
        }
    }
    if (after(d, "sm_", ", ;)", buf, sizeof buf) == 0) {
        char a[270];
        snprintf(a, sizeof a, "sm_%s", buf);
        rr_set(&c->device_arch, a);
    } else if (after(d, "gfx", ", ;):", buf, sizeof buf) == 0) {
        char a[270];
        snprintf(a, sizeof a, "gfx%s", buf);
        rr_set(&c->device_arch, a);
    }
    if (after(d, "driver ", ",;)", buf, sizeof buf) == 0) {
        char drv[300];
        if (strcmp(backend, "cuda") == 0) {
            char kmod[64];
            sysinfo_nvidia_driver(kmod, sizeof kmod);
            if (kmod[0]) snprintf(drv, sizeof drv, "NVIDIA %s (CUDA %s)", kmod, buf);
            else snprintf(drv, sizeof drv, "CUDA driver %s", buf);
        } else {
            snprintf(drv, sizeof drv, "%s", buf);
        }
        rr_set(&c->driver, drv);
    }
    if (after(d, "runtime ", ",;)", buf, sizeof buf) == 0) {
        char rt[300];
        snprintf(rt, sizeof rt, "%s %s", strcmp(backend, "hip") == 0 ? "HIP" : "CUDA", buf);
        rr_set(&c->runtime, rt);
    } else if (after(d, "Vulkan ", ",;)", buf, sizeof buf) == 0) {
        char rt[300];
        snprintf(rt, sizeof rt, "Vulkan %s", buf);
        rr_set(&c->runtime, rt);
    }
}
