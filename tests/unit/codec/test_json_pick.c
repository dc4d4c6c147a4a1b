/* codec/json_pick: members of metadata picked from stored bytes, as the whole parse has them. */
#include <string.h>

#include "codec/json.h"
#include "codec/json_pick.h"
#include "test.h"

static const char *const keys[] = {"uid", "finalizers", "ownerReferences", NULL};

/* Checks that the picked members of text, encoded, are want ("NULL": none). */
#define CHECK_PICK(text, want)                                                                     \
    do {                                                                                           \
        char *got_ = picked(text);                                                                 \
        CHECK_STR_EQ(got_, want);                                                                  \
        free(got_);                                                                                \
    } while (0)

static char *picked(const char *text)
{
    json_t *v = kapi_json_pick(text, strlen(text), "metadata", keys);
    if (!v)
        return kapi_xstrdup("NULL");
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_json_encode(&b, v);
    json_decref(v);
    return b.ptr;
}

TEST(codec_json_pick_members)
{
    CHECK_PICK("{\"kind\":\"Event\",\"metadata\":{\"name\":\"a\",\"uid\":\"u1\","
               "\"managedFields\":[{\"f:x\":{\"}\":\"]\"}}],"
               "\"ownerReferences\":[{\"uid\":\"o\",\"controller\":true}]},"
               "\"note\":\"a \\\"quoted\\\" } ] text\"}",
               "{\"uid\":\"u1\",\"ownerReferences\":[{\"uid\":\"o\",\"controller\":true}]}");
    /* spaces anywhere, and the last of a repeated name wins, as in the whole parse */
    CHECK_PICK(" { \"metadata\" : { \"uid\" : \"a\" , \"uid\" : \"b\" } ,"
               " \"metadata\" : { \"finalizers\" : [ \"f\" ] } } ",
               "{\"finalizers\":[\"f\"]}");
    CHECK_PICK("{\"metadata\":{}}", "{}");
    /* a string ending in an escaped backslash, and quotes escaped inside one */
    CHECK_PICK("{\"metadata\":{\"a\":\"\\\\\",\"uid\":\"u\"}}", "{\"uid\":\"u\"}");
    CHECK_PICK("{\"metadata\":{\"a\":\"\\\"uid\\\":\\\"x\",\"uid\":\"u\"}}", "{\"uid\":\"u\"}");
}

TEST(codec_json_pick_absent_or_not_an_object)
{
    CHECK_PICK("{\"kind\":\"x\"}", "NULL");
    CHECK_PICK("{\"metadata\":[1]}", "NULL");
    CHECK_PICK("{\"metadata\":null}", "NULL");
    CHECK_PICK("[{\"metadata\":{}}]", "NULL");
    CHECK_PICK("", "NULL");
    CHECK_PICK("{\"metadata\":{\"uid\":", "NULL");
}

TEST(codec_json_pick_escaped_names_parse_whole)
{
    /* "u\u0069d" is "uid": the scanner does not decode names, so the whole parse answers */
    CHECK_PICK("{\"metadata\":{\"u\\u0069d\":\"x\"}}", "{\"uid\":\"x\"}");
    CHECK_PICK("{\"met\\u0061data\":{\"uid\":\"y\"}}", "{\"uid\":\"y\"}");
}

TEST(codec_json_pick_unique_stops_at_metadata)
{
    static const char text[] = "{\"metadata\":{\"uid\":\"a\"},\"spec\":{\"x\":[1,2]}}";
    json_t *v = kapi_json_pick_unique(text, strlen(text), "metadata", keys);
    CHECK_STR_EQ(json_string_value(json_object_get(v, "uid")), "a");
    json_decref(v);
    /* what follows the first metadata is not read: not even a text cut short there */
    v = kapi_json_pick_unique(text, 30, "metadata", keys);
    CHECK_STR_EQ(json_string_value(json_object_get(v, "uid")), "a");
    json_decref(v);
    CHECK(kapi_json_pick(text, 30, "metadata", keys) == NULL);
    /* a text that repeats metadata (kapi never stores one) answers from the first */
    static const char twice[] = "{\"metadata\":{\"uid\":\"a\"},\"metadata\":{\"uid\":\"b\"}}";
    v = kapi_json_pick_unique(twice, strlen(twice), "metadata", keys);
    CHECK_STR_EQ(json_string_value(json_object_get(v, "uid")), "a");
    json_decref(v);
}

/* Checks kapi_json_member_texts of text (the keys "a" and "b") against want_a and
 * want_b ("-": absent); ok is what the call must return. */
static void check_texts(const char *text, bool ok, const char *want_a, const char *want_b)
{
    static const char *const ab[] = {"a", "b", NULL};
    kapi_str t[2];
    CHECK(kapi_json_member_texts(text, strlen(text), ab, t) == ok);
    if (!ok)
        return;
    const char *want[2] = {want_a, want_b};
    for (size_t i = 0; i < 2; i++) {
        char *got = t[i].ptr ? kapi_xprintf("%.*s", KAPI_STR_FMT(t[i])) : kapi_xstrdup("-");
        CHECK_STR_EQ(got, want[i]);
        free(got);
    }
}

TEST(codec_json_member_texts)
{
    check_texts("{\"a\":{\"x\": [1, \"}\"]},\"c\":2,\"b\":\"q\\\"\"}", true, "{\"x\": [1, \"}\"]}",
                "\"q\\\"\"");
    check_texts("{ \"b\" : null }", true, "-", "null");
    /* a member's text, {"a":true} of {"m":{"a":true},"a":1}, read for its own members */
    check_texts("{\"a\":true}", true, "true", "-");
    check_texts("[]", false, "", "");
    check_texts("{\"\\u0061\":1}", false, "", "");
    check_texts("[1]", false, "", "");
}
