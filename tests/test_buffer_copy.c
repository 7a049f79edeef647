/* test_buffer_copy.c — qgmm_buffer_copy moves exactly the bytes asked for, on every path a
 * backend has: 16-byte aligned ranges (the Vulkan copy shader, also the runner's copy
 * ceiling), ranges with odd offsets or lengths (the transfer engine), one byte, one partial
 * workgroup, many workgroups; the bytes around the destination range are untouched.
 * Backend: argv[1] or "cpu" (exit 77 when unavailable). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qgmm.h"

#define SIZE ((size_t)3 << 20)

static int failures;

static void one(qgmm_context *ctx, qgmm_buffer *src, qgmm_buffer *dst, const uint8_t *s_host, uint8_t *want,
                uint8_t *got, size_t soff, size_t doff, size_t bytes)
{
    if (qgmm_buffer_fill(dst, 0, SIZE, 0xa5) != QGMM_OK ||
        qgmm_buffer_copy(dst, doff, src, soff, bytes) != QGMM_OK ||
        qgmm_buffer_download(dst, 0, got, SIZE) != QGMM_OK) {
        printf("FAIL copy src+%zu -> dst+%zu, %zu bytes: %s\n", soff, doff, bytes, qgmm_last_error(ctx));
        ++failures;
        return;
    }
    memset(want, 0xa5, SIZE);
    memcpy(want + doff, s_host + soff, bytes);
    if (memcmp(want, got, SIZE) != 0) {
        size_t k = 0;
        while (want[k] == got[k]) ++k;
        printf("FAIL copy src+%zu -> dst+%zu, %zu bytes: byte %zu is 0x%02x, want 0x%02x\n", soff, doff, bytes, k,
               got[k], want[k]);
        ++failures;
    }
}

int main(int argc, char **argv)
{
    const char *backend = argc > 1 ? argv[1] : "cpu";
    qgmm_context *ctx = NULL;
    if (qgmm_context_create(backend, 0, &ctx) != QGMM_OK) {
        printf("SKIP: backend %s unavailable: %s\n", backend, qgmm_last_error(NULL));
        return 77;
    }
    uint8_t *s_host = malloc(SIZE), *want = malloc(SIZE), *got = malloc(SIZE);
    qgmm_buffer *src = NULL, *dst = NULL;
    if (!s_host || !want || !got || qgmm_buffer_alloc(ctx, SIZE, &src) != QGMM_OK ||
        qgmm_buffer_alloc(ctx, SIZE, &dst) != QGMM_OK) {
        printf("FAIL: no memory for two %zu-byte buffers\n", SIZE);
        return 1;
    }
    uint32_t x = 12345;
    for (size_t i = 0; i < SIZE; ++i) {
        x = x * 1664525u + 1013904223u;
        s_host[i] = (uint8_t)(x >> 24);
    }
    if (qgmm_buffer_upload(src, 0, s_host, SIZE) != QGMM_OK) {
        printf("FAIL: upload: %s\n", qgmm_last_error(ctx));
        return 1;
    }
    /* {src offset, dst offset, bytes}: a workgroup of the copy shader moves 32 KiB */
    static const size_t cases[][3] = {
        {0, 0, SIZE},               /* whole buffers, 96 workgroups */
        {0, 0, 16},                 /* one unit */
        {16, 32, 48},               /* aligned, three units */
        {4096, 0, 32768 + 16},      /* one workgroup and one unit */
        {0, 65536, (1 << 20) - 16}, /* many workgroups, the last one partial */
        {1, 0, 4096},               /* odd source offset */
        {0, 3, 4096},               /* odd destination offset */
        {16, 16, 4095},             /* length not a multiple of 16 */
        {7, 9, 1},                  /* one byte */
        {5, 1 << 20, (2 << 20) - 5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        one(ctx, src, dst, s_host, want, got, cases[i][0], cases[i][1], cases[i][2]);
    qgmm_buffer_free(src);
    qgmm_buffer_free(dst);
    qgmm_context_destroy(ctx);
    free(s_host);
    free(want);
    free(got);
    printf("%s: %d failures in %zu copies on %s\n", failures ? "FAIL" : "PASS", failures,
           sizeof cases / sizeof cases[0], backend);
    return failures ? 1 : 0;
}
