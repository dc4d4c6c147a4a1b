/* Unit tests for src/codec/go.h: utf8.DecodeRune, unicode.IsPrint, %#v, %T and
 * encoding/json's kind names (the other printers are tested with their callers, in
 * schema/test_field.c and schema/test_validate.c). */
#include <string.h>

#include "codec/go.h"
#include "codec/json.h"
#include "test.h"

TEST(go_rune)
{
    static const struct {
        const char *s;
        int32_t r;
        size_t width;
    } cases[] = {
        {"a", 'a', 1},
        {"\xc3\xa9", 0xe9, 2},
        {"\xe2\x82\xac", 0x20ac, 3},
        {"\xf0\x9f\x98\x80", 0x1f600, 4},
        {"\xc0\x80", -1, 1},         /* overlong */
        {"\xed\xa0\x80", -1, 1},     /* a surrogate */
        {"\xf4\x90\x80\x80", -1, 1}, /* past U+10FFFF */
        {"\xe2\x82", -1, 1},         /* cut short */
        {"\x80", -1, 1},             /* a continuation byte alone */
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        size_t w = 0;
        CHECK_INT_EQ(kapi_go_rune(cases[i].s, strlen(cases[i].s), &w), cases[i].r);
        CHECK_INT_EQ(w, cases[i].width);
    }
}

TEST(go_is_print)
{
    static const int32_t printable[] = {' ', 'a', 0xe9, 0x20ac, 0xfffd, 0x1f600};
    static const int32_t hidden[] = {0x7,    0x7f,   0x85,    0xa0,    0xad,    0x200b,
                                     0x2028, 0xfeff, 0x110bd, 0x1d173, 0xe0001, 0xf0000};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(printable); i++)
        CHECK(kapi_go_is_print(printable[i]));
    for (size_t i = 0; i < KAPI_ARRAY_LEN(hidden); i++)
        CHECK(!kapi_go_is_print(hidden[i]));
}

TEST(go_type_name)
{
    static const struct {
        const char *json, *name;
    } cases[] = {
        {"{}", "map[string]interface {}"},
        {"[]", "[]interface {}"},
        {"\"\"", "string"},
        {"1", "int64"},
        {"1.5", "float64"},
        {"true", "bool"},
        {"null", "<nil>"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
        CHECK_STR_EQ(kapi_go_type_name(v), cases[i].name);
        json_decref(v);
    }
    json_t *nul = json_object();
    json_object_setn_new(nul, "a\0b", 3, json_true());
    json_object_set_new(nul, "a", json_false());
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_go_sharp_v(&b, nul, KAPI_GO_JSON_MAP);
    CHECK_STR_EQ(b.ptr, "map[string]interface {}{\"a\":false, \"a\\x00b\":true}");
    kapi_buf_dispose(&b);
    json_decref(nul);
}

TEST(go_json_kind)
{
    static const struct {
        const char *json, *kind;
    } cases[] = {
        {"{}", "object"},  {"[]", "array"},  {"\"\"", "string"}, {"1", "number"},
        {"1.5", "number"}, {"true", "bool"}, {"false", "bool"},  {"null", "null"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
        CHECK_STR_EQ(kapi_go_json_kind(v), cases[i].kind);
        json_decref(v);
    }
    CHECK_STR_EQ(kapi_go_json_kind(NULL), "null");
}

/* %#v as Go prints a decoded value, for each decoder's map type; keys sorted by their
 * bytes, a key holding a NUL byte whole. */
TEST(go_sharp_v)
{
    static const struct {
        const char *json;
        kapi_go_map map;
        const char *out;
    } cases[] = {
        {"{\"b\":[1,\"x\",null],\"a\":1.5}", KAPI_GO_JSON_MAP,
         "map[string]interface {}{\"a\":1.5, \"b\":[]interface {}{1, \"x\", interface {}(nil)}}"},
        {"{\"k\":{\"n\":null}}", KAPI_GO_YAML_MAP,
         "map[interface {}]interface {}{\"k\":map[interface {}]interface {}{\"n\":interface "
         "{}(nil)}}"},
        {"null", KAPI_GO_YAML_MAP, "<nil>"},
        {"\"\\u00e9\\t\"", KAPI_GO_JSON_MAP, "\"\u00e9\\t\""},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_go_sharp_v(&b, v, cases[i].map);
        CHECK_STR_EQ(b.ptr, cases[i].out);
        kapi_buf_dispose(&b);
        json_decref(v);
    }
    json_t *nul = json_object();
    json_object_setn_new(nul, "a\0b", 3, json_true());
    json_object_set_new(nul, "a", json_false());
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_go_sharp_v(&b, nul, KAPI_GO_JSON_MAP);
    CHECK_STR_EQ(b.ptr, "map[string]interface {}{\"a\":false, \"a\\x00b\":true}");
    kapi_buf_dispose(&b);
    json_decref(nul);
}

/* The RFC 3339 text of s after Go's time.Parse and Format(time.RFC3339Nano), or the
 * parse's error. */
static char *time_round_trip(const char *s)
{
    kapi_go_time t;
    char *why = kapi_go_parse_time(s, false, &t);
    if (why)
        return why;
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_go_format_time(&b, &t);
    kapi_buf_printf(&b, " %lld", (long long)t.secs);
    return kapi_buf_detach(&b, NULL);
}

#define CHECK_TIME(s, want)                                                                        \
    do {                                                                                           \
        char *got_ = time_round_trip(s);                                                           \
        CHECK_STR_EQ(got_, want);                                                                  \
        free(got_);                                                                                \
    } while (0)

/* time.Parse(time.RFC3339, s) keeps nine digits of a fraction and the offset written;
 * Format writes the offset back, "Z" for zero, and the fraction without its trailing
 * zeros. */
TEST(go_time)
{
    CHECK_TIME("2009-02-13T23:31:30Z", "2009-02-13T23:31:30Z 1234567890");
    CHECK_TIME("2009-02-14T00:31:30.1234567899+01:00",
               "2009-02-14T00:31:30.123456789+01:00 1234567890");
    CHECK_TIME("2009-02-13T23:31:30,50-00:00", "2009-02-13T23:31:30.5Z 1234567890");
    CHECK_TIME("0000-01-01T1:00:00-02:30", "0000-01-01T01:00:00-02:30 -62167206600");
    CHECK_TIME("2009-02-30T00:00:00Z", "parsing time \"2009-02-30T00:00:00Z\": day out of range");
    CHECK_TIME("2009-02-13 23:31:30Z", "parsing time \"2009-02-13 23:31:30Z\" as "
                                       "\"2006-01-02T15:04:05Z07:00\": cannot parse \" "
                                       "23:31:30Z\" as \"T\"");
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_go_format_time(&b, &(kapi_go_time){-62135596800 - 3600, 0, 0});
    CHECK_STR_EQ(b.ptr, "0000-12-31T23:00:00Z");
    kapi_buf_dispose(&b);
}

/* time.Duration.String: the unit by size, trailing zeros of the fraction dropped. */
TEST(go_format_duration)
{
    static const struct {
        int64_t ns;
        const char *want;
    } cases[] = {
        {0, "0s"},
        {850, "850ns"},
        {1500, "1.5\xc2\xb5s"},
        {1000, "1\xc2\xb5s"},
        {1234567, "1.234567ms"},
        {20000000, "20ms"},
        {2500000000LL, "2.5s"},
        {60000000000LL, "1m0s"},
        {3723000000001LL, "1h2m3.000000001s"},
        {3600000000000LL, "1h0m0s"},
        {-1500000, "-1.5ms"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_go_format_duration(&b, cases[i].ns);
        CHECK_STR_EQ(b.ptr, cases[i].want);
        kapi_buf_dispose(&b);
    }
}
