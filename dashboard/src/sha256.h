/* SHA-256 (FIPS 180-4), implemented here so qgmm-dash needs no crypto library just to
 * hash API tokens. Checked against the FIPS test vectors in tests/test_dash_units.c. */
#ifndef QGMM_DASH_SHA256_H
#define QGMM_DASH_SHA256_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint32_t h[8];
  uint64_t len;        /* bytes hashed so far */
  uint8_t block[64];
  size_t fill;         /* bytes waiting in block */
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t n);
void sha256_final(sha256_ctx *c, uint8_t out[32]);
/* One-shot helper: lower-case hex digest into hex[65] (NUL-terminated). */
void sha256_hex(const void *data, size_t n, char hex[65]);

#endif
