/* Unit tests for the parts of qgmm-dash that read network input or produce escaped output:
 * SHA-256 (FIPS 180-4 vectors), the strict JSON reader, and the HTML/JSON escapers. */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "sha256.h"

static int fails, checks;
#define CHECK(cond, ...)                       \
  do {                                         \
    checks++;                                  \
    if (!(cond)) {                             \
      fails++;                                 \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);            \
      fprintf(stderr, "\n");                   \
    }                                          \
  } while (0)

static void sha_vectors(void) {
  char hex[65];
  sha256_hex("", 0, hex);
  CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "sha256('') = %s", hex);
  sha256_hex("abc", 3, hex);
  CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "sha256(abc) = %s", hex);
  const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  sha256_hex(m, strlen(m), hex);
  CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"), "sha256(448 bits) = %s", hex);
  /* one million 'a', fed in odd-sized pieces to cross block boundaries */
  sha256_ctx c;
  uint8_t d[32];
  char a[997];
  memset(a, 'a', sizeof a);
  sha256_init(&c);
  size_t left = 1000000;
  while (left) {
    size_t n = left < sizeof a ? left : sizeof a;
    sha256_update(&c, a, n);
    left -= n;
  }
  sha256_final(&c, d);
  char h2[65];
  for (int i = 0; i < 32; i++) sprintf(h2 + 2 * i, "%02x", d[i]);
  CHECK(!strcmp(h2, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "sha256(1M a) = %s", h2);
}

static int parses(const char *s, size_t n) {
  arena a = {0};
  json_err e;
  jval *v = json_parse(&a, s, n, &e);
  arena_free(&a);
  return v != NULL;
}
#define OK(s) CHECK(parses(s, sizeof(s) - 1), "should parse: %s", s)
#define BAD(s) CHECK(!parses(s, sizeof(s) - 1), "should be refused: %s", s)

static void json_reader(void) {
  OK("{}");
  OK("[1, -0.5e3, true, false, null, \"x\"]");
  OK("{\"a\": {\"b\": [\"\\u00e9\\ud83d\\ude00\"]}}");
  OK("\"caf\xc3\xa9\"");
  BAD("");
  BAD("{");
  BAD("{\"a\":1,}");
  BAD("[1,]");
  BAD("{\"a\":1}x");
  BAD("{\"a\":1,\"a\":2}");              /* duplicate key */
  BAD("\"\\u0000\"");                    /* NUL */
  BAD("\"\\ud800\"");                    /* lone surrogate */
  BAD("\"\\udc00x\"");
  BAD("\"\xff\"");                       /* invalid UTF-8 */
  BAD("\"\xc0\xaf\"");                   /* overlong */
  BAD("\"\xed\xa0\x80\"");               /* encoded surrogate */
  BAD("\"a\nb\"");                       /* raw control character */
  BAD("01");
  BAD("1.");
  BAD("NaN");
  BAD("1e999");
  BAD("\xef\xbb\xbf{}");                 /* BOM */
  /* nesting: JSON_MAX_DEPTH is accepted, one more is not */
  char deep[200];
  int k = 0;
  for (int i = 0; i < JSON_MAX_DEPTH; i++) deep[k++] = '[';
  for (int i = 0; i < JSON_MAX_DEPTH; i++) deep[k++] = ']';
  CHECK(parses(deep, (size_t)k), "depth %d should parse", JSON_MAX_DEPTH);
  k = 0;
  for (int i = 0; i <= JSON_MAX_DEPTH; i++) deep[k++] = '[';
  for (int i = 0; i <= JSON_MAX_DEPTH; i++) deep[k++] = ']';
  CHECK(!parses(deep, (size_t)k), "depth %d should be refused", JSON_MAX_DEPTH + 1);

  arena a = {0};
  json_err e;
  jval *v = json_parse(&a, "{\"n\": 12, \"f\": 1.5, \"s\": \"a\\\"b\"}", 32, &e);
  CHECK(v && jget_num(v, "n", 0) == 12 && json_get(v, "n")->is_int, "integer field");
  CHECK(v && jget_num(v, "f", 0) == 1.5 && !json_get(v, "f")->is_int, "real field");
  CHECK(v && !strcmp(jget_str(v, "s", ""), "a\"b"), "escaped string");
  v = json_parse(&a, "{\"a\": [1, 2", 11, &e);
  CHECK(!v && e.offset == 11, "error offset %zu (%s)", e.offset, e.msg);
  arena_free(&a);
}

static void escapers(void) {
  buf b = {0};
  buf_html(&b, "<script>alert('x')</script>&\"");
  CHECK(!strcmp(b.p, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"), "html: %s", b.p);
  buf_free(&b);
  buf_json_str(&b, "</script><b>\"\\\n\x01");
  CHECK(!strcmp(b.p, "\"\\u003c/script\\u003e\\u003cb\\u003e\\\"\\\\\\n\\u0001\""), "json: %s", b.p);
  buf_free(&b);
  buf_url(&b, "a b&c=d/é");
  CHECK(!strcmp(b.p, "a%20b%26c%3Dd%2F%C3%A9"), "url: %s", b.p);
  buf_free(&b);
  buf_json_num(&b, 3.0);
  buf_putc(&b, ' ');
  buf_json_num(&b, 0.1);
  buf_putc(&b, ' ');
  buf_json_num(&b, 1.0 / 0.0);
  CHECK(!strcmp(b.p, "3 0.1 null"), "numbers: %s", b.p);
  buf_free(&b);
}

int main(void) {
  sha_vectors();
  json_reader();
  escapers();
  printf("dash units: %d checks, %d failed\n", checks, fails);
  return fails ? 1 : 0;
}
