/* test_buffer_copy.c — qgmm_buffer_copy moves exactly the bytes asked for, on every path a
 * backend has: 16-byte aligned ranges (the Vulkan copy shader, also the runner's copy
 * ceiling), ranges with odd offsets or lengths (the transfer engine), one byte, one partial
 * workgroup, many workgroups; the bytes around the destination range are untouched.
 * Then qgmm_buffer_upload / _download of ranges over several of the GPU plugins' 32 MiB
 * staging chunks, at odd offsets and lengths, and just under and at the 4 MiB from which
 * CUDA stages: the bytes asked for arrive, the others are untouched.
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

/* Uploads and downloads of big ranges (the staged paths), checked byte for byte: upload
 * [off, off+bytes) over a filled buffer, download the whole buffer, and download the range
 * alone into the middle of a host area whose other bytes must stay. Returns the count. */
#define BIG (((size_t)100 << 20) + 13)
static size_t transfers(qgmm_context *ctx)
{
    static const size_t cases[][2] = {
        {3, ((size_t)97 << 20) + 5},  /* four chunks, the last partial, odd offset and length */
        {0, (size_t)64 << 20},        /* two full chunks */
        {4096, ((size_t)4 << 20) - 1},/* just under the staging threshold */
        {1, (size_t)4 << 20},         /* at it: one partial chunk */
        {BIG - ((size_t)33 << 20), (size_t)33 << 20}, /* up to the buffer's end */
    };
    const size_t nc = sizeof cases / sizeof cases[0];
    uint8_t *host = malloc(BIG), *got = malloc(BIG + 64);
    qgmm_buffer *b = NULL;
    if (!host || !got || qgmm_buffer_alloc(ctx, BIG, &b) != QGMM_OK) {
        printf("FAIL: no memory for a %zu-byte buffer\n", BIG);
        ++failures;
        free(host);
        free(got);
        return 0;
    }
    uint32_t x = 777;
    for (size_t i = 0; i < BIG; ++i) {
        x = x * 1664525u + 1013904223u;
        host[i] = (uint8_t)(x >> 24);
    }
    for (size_t i = 0; i < nc; ++i) {
        const size_t off = cases[i][0], bytes = cases[i][1];
        int bad = qgmm_buffer_fill(b, 0, BIG, 0x5a) != QGMM_OK ||
                  qgmm_buffer_upload(b, off, host + off, bytes) != QGMM_OK ||
                  qgmm_buffer_download(b, 0, got, BIG) != QGMM_OK;
        if (bad) {
            printf("FAIL transfer +%zu, %zu bytes: %s\n", off, bytes, qgmm_last_error(ctx));
            ++failures;
            continue;
        }
        size_t k = 0;
        for (; k < BIG; ++k)
            if (got[k] != (k >= off && k < off + bytes ? host[k] : 0x5a)) break;
        if (k < BIG) {
            printf("FAIL upload +%zu, %zu bytes: byte %zu is 0x%02x\n", off, bytes, k, got[k]);
            ++failures;
            continue;
        }
        /* the range alone, 7 bytes into a host area: the 7 before and the bytes after stay */
        memset(got, 0xee, BIG + 64);
        const size_t n = bytes < BIG + 64 - 7 - 8 ? bytes : BIG + 64 - 7 - 8;
        if (qgmm_buffer_download(b, off, got + 7, n) != QGMM_OK) {
            printf("FAIL download +%zu, %zu bytes: %s\n", off, n, qgmm_last_error(ctx));
            ++failures;
            continue;
        }
        for (k = 0; k < n + 15; ++k)
            if (got[k] != (k >= 7 && k < 7 + n ? host[off + k - 7] : 0xee)) break;
        if (k < n + 15) {
            printf("FAIL download +%zu, %zu bytes: host byte %zu is 0x%02x\n", off, n, k, got[k]);
            ++failures;
        }
    }
    qgmm_buffer_free(b);
    free(host);
    free(got);
    return nc;
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
    const size_t nt = transfers(ctx);
    qgmm_context_destroy(ctx);
    free(s_host);
    free(want);
    free(got);
    printf("%s: %d failures in %zu copies and %zu transfers on %s\n", failures ? "FAIL" : "PASS", failures,
           sizeof cases / sizeof cases[0], nt, backend);
    return failures ? 1 : 0;
}
