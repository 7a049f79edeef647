/*
 * vk_tuning.c — the Vulkan backend's tuning, read from the environment once when a context
 * is created (ops never read the environment). Every knob selects among paths or layouts
 * that write the same bytes; none can change an op's result. A value outside a knob's set
 * fails context creation with the knob, the value and what it accepts. One table lists each
 * knob once: its variable, field, default and accepted values; the context description
 * prints the knobs that differ from their defaults (docs/backends-vulkan.md, "Tuning").
 */
#include "vk_internal.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct knob {
    const char *env;
    size_t field;      /* offsetof(vk_tuning, ...) */
    int def;           /* when unset or empty */
    int lo, hi;        /* integer knobs: the accepted range */
    int pow2;          /* integer knobs: powers of two only */
    const char *words; /* word knobs: "w0|w1|...", value = the word's index */
} knob;

#define F(name) offsetof(vk_tuning, name)
static const knob g_knobs[] = {
    {"QGMM_VULKAN_GEMM_PATH", F(gemm_path), VK_WANT_AUTO, 0, 0, 0, "auto|tiled|coopmat|coopmat-nv"},
    {"QGMM_VULKAN_GEMM_WG", F(gemm_wg), 1, 0, 1, 0, NULL},
    {"QGMM_VULKAN_CAST_LANES", F(cast_lanes), VK_LANES_DEFAULT, 0, 0, 0, "generic|default|v1"},
    {"QGMM_VULKAN_CAST_SPEC", F(cast_spec), VK_SPEC_DEFAULT, 0, 0, 0, "none|default|all"},
    {"QGMM_VULKAN_CAST_ENC", F(cast_enc), VK_ENC_BINADE, 0, 0, 0, "b|a|binade"},
    {"QGMM_VULKAN_CAST_ROWS", F(rows), 1, 0, 1, 0, NULL},
    {"QGMM_VULKAN_CAST_ROWS_KPS", F(rows_kps), 0, 1, 8, 0, NULL},
    {"QGMM_VULKAN_CAST_ROWS_SPL", F(rows_spl), 2, 1, 4, 1, NULL},
    {"QGMM_VULKAN_CAST_2D", F(twod), 1, 0, 1, 0, NULL},
    {"QGMM_VULKAN_CAST_2D_RPL", F(twod_rpl), 8, 8, 16, 1, NULL},
    {"QGMM_VULKAN_CAST_2D_BPW", F(twod_bpw), 4, 1, 4, 1, NULL},
    {"QGMM_VULKAN_CAST_COLS", F(cols), 1, 0, 1, 0, NULL},
    {"QGMM_VULKAN_CAST_COLS_LC", F(cols_lc), 8, 1, 16, 1, NULL},
    {"QGMM_VULKAN_CAST_COLS_KPL", F(cols_kpl), 0, 8, 16, 1, NULL},
    {"QGMM_VULKAN_CAST_JROWS", F(jrows), 1, 0, 1, 0, NULL},
    {"QGMM_VULKAN_CAST_JROWS_LS", F(jrows_ls), 0, 1, 256, 1, NULL},
    {"QGMM_VULKAN_CAST_JROWS_KPS", F(jrows_kps), 4, 1, 8, 0, NULL},
    {"QGMM_VULKAN_CAST_JROWS_WGS", F(jrows_wgs), 1056, 1, 65535, 0, NULL},
    {"QGMM_VULKAN_CAST_LONGROWS", F(longrows), 1, 0, 1, 0, NULL},
    {"QGMM_VULKAN_DISPATCH_X", F(dispatch_x), 65535, 1, 65535, 0, NULL},
    {"QGMM_VK_PIPELINE_STATS", F(pipestats), 0, 0, 1, 0, NULL},
    {"QGMM_VK_DUMP_TABLE", F(dump_table), 0, 0, 1, 0, NULL},
};
#undef F
#define NKNOBS ((int)(sizeof g_knobs / sizeof g_knobs[0]))

static int *slot(vk_tuning *t, const knob *k) { return (int *)((char *)t + k->field); }

/* The index of word w in "a|b|c", -1 if absent. */
static int word_index(const char *words, const char *w)
{
    const size_t n = strlen(w);
    int i = 0;
    for (const char *s = words; *s; ++i) {
        const char *e = strchr(s, '|');
        const size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == n && !strncmp(s, w, n)) return i;
        if (!e) break;
        s = e + 1;
    }
    return -1;
}

/* The i-th word of "a|b|c" into out. */
static void word_at(const char *words, int i, char *out, size_t cap)
{
    const char *s = words;
    for (; i > 0 && s; --i) {
        s = strchr(s, '|');
        if (s) ++s;
    }
    const char *e = s ? strchr(s, '|') : NULL;
    snprintf(out, cap, "%.*s", s ? (int)(e ? (size_t)(e - s) : strlen(s)) : 0, s ? s : "");
}

static int parse_int(const char *v, int *out)
{
    char *end = NULL;
    const long n = strtol(v, &end, 10);
    if (end == v || *end || n < -1000000 || n > 1000000) return 0;
    *out = (int)n;
    return 1;
}

qgmm_status vk_tuning_read(qgmm_context *api, uint32_t subgroup_size, vk_tuning *t)
{
    for (int i = 0; i < NKNOBS; ++i) {
        const knob *k = &g_knobs[i];
        int *v = slot(t, k);
        *v = k->def;
        const char *s = getenv(k->env);
        if (!s || !s[0]) continue;
        if (k->words) {
            *v = word_index(k->words, s);
            if (*v < 0)
                return qgmm_set_error(api, QGMM_ERR_INVALID_ARGUMENT, "%s=\"%s\": expected one of %s", k->env, s,
                                      k->words);
            continue;
        }
        if (!parse_int(s, v) || *v < k->lo || *v > k->hi || (k->pow2 && (*v & (*v - 1))))
            return qgmm_set_error(api, QGMM_ERR_INVALID_ARGUMENT, "%s=\"%s\": expected %s from %d to %d", k->env,
                                  s, k->pow2 ? "a power of two" : "an integer", k->lo, k->hi);
    }
    if ((uint32_t)t->jrows_ls > subgroup_size)
        return qgmm_set_error(api, QGMM_ERR_INVALID_ARGUMENT,
                              "QGMM_VULKAN_CAST_JROWS_LS=%d: more than the device's subgroup size %u", t->jrows_ls,
                              subgroup_size);
    return QGMM_OK;
}

void vk_tuning_describe(const vk_tuning *t, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "tuning:");
    int any = 0;
    for (int i = 0; i < NKNOBS && n < cap; ++i) {
        const knob *k = &g_knobs[i];
        const int v = *slot((vk_tuning *)t, k);
        if (v == k->def) continue;
        char w[32];
        if (k->words) word_at(k->words, v, w, sizeof w);
        else snprintf(w, sizeof w, "%d", v);
        n += (size_t)snprintf(out + n, cap - n, " %s=%s", k->env, w);
        any = 1;
    }
    if (!any && n < cap) snprintf(out + n, cap - n, " defaults");
}
