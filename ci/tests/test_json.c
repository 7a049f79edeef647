/* test_json.c — the JSON reader both tools read network and file input with (ci/json.h):
 * RFC 8259 strictly, well-formed UTF-8 only, no duplicate keys, no \u0000, no lone
 * surrogates, no byte order mark, nothing after the value, nesting at most JSON_MAX_DEPTH;
 * every refusal says where. */
#include <string.h>

#include "json.h"
#include "runner_testutil.h"

static int parses(const char *s, size_t n)
{
    char err[256];
    json_value *v = json_value_parse(s, n, err, sizeof err);
    json_value_free(v);
    return v != NULL;
}
#define OK(s) CHECK(parses(s, sizeof(s) - 1), "should parse: %s", s)
#define BAD(s) CHECK(!parses(s, sizeof(s) - 1), "should be refused: %s", s)

int main(void)
{
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
    BAD("\xef\xbb\xbf{}");                 /* byte order mark */

    /* nesting: JSON_MAX_DEPTH levels are read, one more is not */
    char deep[2 * JSON_MAX_DEPTH + 2];
    int k = 0;
    for (int i = 0; i < JSON_MAX_DEPTH; ++i) deep[k++] = '[';
    for (int i = 0; i < JSON_MAX_DEPTH; ++i) deep[k++] = ']';
    CHECK(parses(deep, (size_t)k), "depth %d should parse", JSON_MAX_DEPTH);
    k = 0;
    for (int i = 0; i <= JSON_MAX_DEPTH; ++i) deep[k++] = '[';
    for (int i = 0; i <= JSON_MAX_DEPTH; ++i) deep[k++] = ']';
    CHECK(!parses(deep, (size_t)k), "depth %d should be refused", JSON_MAX_DEPTH + 1);

    /* values, and where a refusal is */
    char err[256];
    const char *text = "{\"n\": 12, \"f\": 1.5, \"s\": \"a\\\"b\"}";
    json_value *v = json_value_parse(text, strlen(text), err, sizeof err);
    const json_value *n = json_value_get(v, "n"), *f = json_value_get(v, "f"), *s = json_value_get(v, "s");
    CHECK(n && n->is_integer && n->integer == 12, "integer member");
    CHECK(f && !f->is_integer && f->number == 1.5, "real member");
    CHECK(s && s->type == JSON_STRING && !strcmp(s->string, "a\"b"), "escaped string");
    CHECK(!json_value_get(v, "absent"), "absent member");
    json_value_free(v);
    CHECK(!json_value_parse("{\"a\": [1,\n 2", 12, err, sizeof err) && strstr(err, "line 2"), "error position: %s", err);

    /* the UTF-8 rule the dashboard's escaper shares */
    const unsigned char ok3[] = "\xe2\x82\xac", bad2[] = "\xc0\xaf";
    CHECK(json_utf8_seq(ok3, ok3 + 3) == 3 && json_utf8_seq(ok3, ok3 + 2) == 0, "euro sign, whole and cut");
    CHECK(json_utf8_seq(bad2, bad2 + 2) == 0, "overlong");
    return t_report("test_json");
}
