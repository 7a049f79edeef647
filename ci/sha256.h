/* sha256.h — SHA-256 (FIPS 180-4), so neither tool needs a crypto library: the store's
 * run-content digest (store_run_digest) and qgmm-dash's hashed API tokens. Checked against
 * the FIPS test vectors in ci/tests/test_digest.c. */
#ifndef QGMM_CI_SHA256_H
#define QGMM_CI_SHA256_H
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
/* sha256_final as lower-case hex into hex[65] (NUL-terminated). */
void sha256_final_hex(sha256_ctx *c, char hex[65]);
/* One-shot: the lower-case hex digest of data. */
void sha256_hex(const void *data, size_t n, char hex[65]);

#endif
