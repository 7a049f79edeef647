/* Unit tests of what every qgmm-dash answer goes through: the answer tree and its writer,
 * and the HTML/JSON/URL escapers. The JSON reader and SHA-256 that read network input are
 * the store library's, tested in ci/tests (test_json.c, test_digest.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "dom.h"

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

/* The answer tree: members in insertion order, strings through the escaper, non-finite
 * numbers as null, and adding to NULL (an exhausted arena) is harmless. */
static void dom_writer(void) {
  arena a = {0};
  jval *o = jobj(&a), *arr = jarr(&a);
  jset_str(&a, o, "s", "<b>");
  jset_num(&a, o, "n", 1.5);
  jset(&a, o, "z", jnum(&a, NAN));
  jpush(&a, arr, jbool(&a, 1));
  jpush(&a, arr, jnull(&a));
  jpush(&a, arr, jstr(&a, NULL));
  jset(&a, o, "a", arr);
  jset(&a, NULL, "ignored", jnum(&a, 1));
  buf b = {0};
  json_write(&b, o);
  CHECK(b.p && !strcmp(b.p, "{\"s\":\"\\u003cb\\u003e\",\"n\":1.5,\"z\":null,\"a\":[true,null,null]}"), "dom: %s", b.p);
  CHECK(!strcmp(jget_str(o, "s", "?"), "<b>") && jget_num(o, "n", 0) == 1.5 && jget_num(o, "s", -1) == -1,
        "dom accessors");
  buf_free(&b);
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
  buf_json_str(&b, "caf\xc3\xa9 \xff \xed\xa0\x80");
  CHECK(!strcmp(b.p, "\"caf\xc3\xa9 \\ufffd \\ufffd\\ufffd\\ufffd\""), "json, malformed UTF-8: %s", b.p);
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
  dom_writer();
  escapers();
  printf("dash units: %d checks, %d failed\n", checks, fails);
  return fails ? 1 : 0;
}
