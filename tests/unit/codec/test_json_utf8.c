/* codec/json: bytes that are not UTF-8, as Go's encoding/json reads and writes them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/json.h"
#include "test.h"

static void check_put(const char *s, size_t n, const char *want)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_json_put_string(&b, s, n);
    CHECK_STR_EQ(b.ptr, want);
    kapi_buf_dispose(&b);
}

TEST(codec_json_put_string_invalid_utf8)
{
    check_put("\xff\xfe\x80garbage", 10, "\"\\ufffd\\ufffd\\ufffdgarbage\"");
    check_put("caf\xc3\xa9", 5, "\"caf\xc3\xa9\"");
    /* A truncated sequence, an overlong form and a surrogate each start no rune. */
    check_put("a\xe2\x82", 3, "\"a\\ufffd\\ufffd\"");
    check_put("\xc0\xaf", 2, "\"\\ufffd\\ufffd\"");
    check_put("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"");
    check_put("\xe2\x80\xa8|\xe2\x80\xa9", 7, "\"\\u2028|\\u2029\"");
    check_put("<&>\x01", 4, "\"\\u003c\\u0026\\u003e\\u0001\"");
}

/* The encoder skips plain bytes a word at a time: every byte that needs escaping is
 * found wherever it falls in or after a word, and a multi-byte rune across two words
 * is kept whole. */
TEST(codec_json_put_string_special_at_every_offset)
{
    static const struct {
        const char *in, *out;
    } special[] = {
        {"\"", "\\\""},
        {"\\", "\\\\"},
        {"<", "\\u003c"},
        {">", "\\u003e"},
        {"&", "\\u0026"},
        {"\n", "\\n"},
        {"\x1f", "\\u001f"},
        {"\x7f", "\x7f"},
        {"\xff", "\\ufffd"},
        {"\xc3\xa9", "\xc3\xa9"},
        {"\xe2\x80\xa8", "\\u2028"},
    };
    const char plain[] = "abcdefghijklmnopqrstuvwx";
    for (size_t k = 0; k < sizeof(special) / sizeof(special[0]); k++) {
        for (size_t at = 0; at < 20; at++) {
            char in[64], want[64];
            snprintf(in, sizeof(in), "%.*s%s%s", (int)at, plain, special[k].in, plain + at);
            snprintf(want, sizeof(want), "\"%.*s%s%s\"", (int)at, plain, special[k].out,
                     plain + at);
            check_put(in, strlen(in), want);
        }
    }
}

TEST(codec_json_parse_invalid_utf8_in_strings)
{
    char *err = NULL;
    const char doc[] = "{\"a\\\"\xff\":\"x\xffy\\\\\",\"b\":[\"\xc3\"]}";
    json_t *v = kapi_json_parse(doc, sizeof(doc) - 1, &err);
    CHECK(v != NULL);
    CHECK_STR_EQ(json_string_value(json_object_get(v, "a\"\xef\xbf\xbd")), "x\xef\xbf\xbdy\\");
    CHECK_STR_EQ(json_string_value(json_array_get(json_object_get(v, "b"), 0)), "\xef\xbf\xbd");
    json_decref(v);
    /* Outside a string an invalid byte stays a syntax error, named as Go names it. */
    v = kapi_json_parse("\xff\xfe", 2, &err);
    CHECK(v == NULL);
    CHECK_STR_EQ(err, "invalid character '\xc3\xbf' looking for beginning of value");
    free(err);
}
