/* Unit tests for kapi_json_duplicates: the paths and words of sigs.k8s.io/json's strict
 * decoding (checked against the golden corpus), escapes, big objects, cut input. */
#include "codec/go.h"
#include "codec/json.h"
#include "codec_test.h"
#include "test.h"

/* The messages found in s, joined with " | ". */
static char *dups_of(const char *s)
{
    kapi_dups d;
    kapi_buf b;
    kapi_dups_init(&d);
    kapi_buf_init(&b);
    size_t n = kapi_json_duplicates(s, strlen(s), &d);
    if (n != d.n)
        test_fail(__FILE__, __LINE__, "returned %zu, listed %zu", n, d.n);
    for (size_t i = 0; i < d.n; i++) {
        kapi_buf_puts(&b, i ? " | " : "");
        kapi_buf_puts(&b, d.v[i].message);
    }
    kapi_dups_dispose(&d);
    return kapi_buf_detach(&b, NULL);
}

#define CHECK_DUPS(json, want)                                                                     \
    do {                                                                                           \
        char *got_ = dups_of(json);                                                                \
        CHECK_STR_EQ(got_, want);                                                                  \
        free(got_);                                                                                \
    } while (0)

/* The warnings kube-apiserver sent for the JSON bodies of cj-fv-default and cr-fv-default
 * name, among the unknown fields, exactly the repeats found here. */
TEST(json_dups_golden)
{
    json_t *reqs = codec_test_golden("requests.jsonl");
    json_t *resps = codec_test_golden("responses.jsonl");
    static const char *const ids[] = {"cj-fv-default", "cr-fv-default"};
    if (!reqs || !resps)
        test_fail(__FILE__, __LINE__, "golden corpus not found");
    for (size_t k = 0; k < KAPI_ARRAY_LEN(ids); k++) {
        const char *body =
            json_string_value(json_object_get(codec_test_golden_id(reqs, ids[k]), "body"));
        const json_t *warnings = json_object_get(
            json_object_get(codec_test_golden_id(resps, ids[k]), "headers"), "Warning");
        kapi_dups d;
        size_t i, found = 0;
        const json_t *w;
        kapi_dups_init(&d);
        CHECK(body != NULL);
        kapi_json_duplicates(body, strlen(body), &d);
        json_array_foreach(warnings, i, w)
        {
            /* 299 - "duplicate field \"spec.schedule\"" */
            const char *text = json_string_value(w);
            if (!strstr(text, "duplicate field"))
                continue;
            CHECK(found < d.n);
            kapi_buf b;
            kapi_buf_init(&b);
            kapi_buf_puts(&b, "299 - ");
            kapi_go_quote(&b, d.v[found].message, strlen(d.v[found].message));
            CHECK_STR_EQ(text, b.ptr);
            kapi_buf_dispose(&b);
            found++;
        }
        CHECK(found > 0);
        CHECK_INT_EQ(found, d.n);
        kapi_dups_dispose(&d);
    }
    json_decref(reqs);
    json_decref(resps);
}

TEST(json_dups_paths)
{
    CHECK_DUPS("{\"a\":1,\"b\":2}", "");
    CHECK_DUPS("{}", "");
    CHECK_DUPS("[]", "");
    CHECK_DUPS("\"x\"", "");
    CHECK_DUPS("{\"a\":1,\"a\":2}", "duplicate field \"a\"");
    CHECK_DUPS("{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":"
               "\"b\",\"image\":\"x\",\"name\":\"c\"}]}}}}",
               "duplicate field \"spec.template.spec.containers[1].name\"");
    CHECK_DUPS("{\"metadata\":{\"labels\":{\"app\":\"a\",\"app\":\"b\"}}}",
               "duplicate field \"metadata.labels.app\"");
    /* A top-level array, arrays in arrays. */
    CHECK_DUPS("[{\"x\":1},{\"y\":{\"z\":[1,{\"q\":1,\"q\":2}]},\"y\":0}]",
               "duplicate field \"[1].y.z[1].q\" | duplicate field \"[1].y\"");
    CHECK_DUPS("{\"a\":[[{\"k\":1,\"k\":1}]]}", "duplicate field \"a[0][0].k\"");
    /* Keys are written as they are: dots, spaces, the empty key. */
    CHECK_DUPS("{\"a.b\":{\"c d\":1,\"c d\":2}}", "duplicate field \"a.b.c d\"");
    CHECK_DUPS("{\"\":{\"\":1,\"\":2}}", "duplicate field \".\"");
    CHECK_DUPS("{\"\":1,\"\":2}", "duplicate field \"\"");
    /* The repeat is reported before what its value holds; each path once. */
    CHECK_DUPS("{\"a\":{\"x\":1,\"x\":2},\"a\":{\"x\":3,\"x\":4},\"a\":5}",
               "duplicate field \"a.x\" | duplicate field \"a\"");
    CHECK_DUPS("{\"a\":1,\"a\":{\"b\":1,\"b\":2}}",
               "duplicate field \"a\" | duplicate field \"a.b\"");
    /* Siblings with the same key are no repeat. */
    CHECK_DUPS("{\"a\":{\"k\":1},\"b\":{\"k\":1},\"c\":[{\"k\":1},{\"k\":2}]}", "");
}

TEST(json_dups_escapes)
{
    /* Keys compare unescaped. */
    CHECK_DUPS("{\"a\":1,\"\\u0061\":2}", "duplicate field \"a\"");
    CHECK_DUPS("{\"\\ud83d\\ude00\":1,\"\xf0\x9f\x98\x80\":2}",
               "duplicate field \"\xf0\x9f\x98\x80\"");
    CHECK_DUPS("{\"\xc3\xa9\":1,\"\\u00e9\":2,\"\\u00E9\":3}", "duplicate field \"\xc3\xa9\"");
    CHECK_DUPS("{\"a\\/b\":1,\"a/b\":2}", "duplicate field \"a/b\"");
    /* The message quotes the path as Go does. */
    CHECK_DUPS("{\"q\\\"t\\n\":1,\"q\\\"t\\n\":2}", "duplicate field \"q\\\"t\\n\"");
    CHECK_DUPS("{\"x\":{\"\\u0007\":1,\"\\u0007\":2}}", "duplicate field \"x.\\a\"");
    /* Strings that hold braces, quotes and backslashes are skipped whole. */
    CHECK_DUPS("{\"a\":\"}\\\"{\\\\\",\"b\":\"\\\\\",\"a\":[]}", "duplicate field \"a\"");
    /* Different keys with equal hashes prefixes or lengths are not repeats. */
    CHECK_DUPS("{\"ab\":1,\"ba\":2,\"a\":3,\"abc\":4,\"\\u0062a\":5}", "duplicate field \"ba\"");
}

TEST(json_dups_offsets)
{
    const char *s = "{\"a\":1, \"b\":{\"c\":1,\"c\":2}, \"a\":3}";
    kapi_dups d;
    kapi_dups_init(&d);
    CHECK_INT_EQ(kapi_json_duplicates(s, strlen(s), &d), 2);
    CHECK_STR_EQ(d.v[0].path, "b.c");
    CHECK_INT_EQ(d.v[0].offset, (size_t)(strstr(s, "\"c\":2") - s));
    CHECK_STR_EQ(d.v[1].path, "a");
    CHECK_INT_EQ(d.v[1].offset, (size_t)(strstr(s, "\"a\":3") - s));
    CHECK_INT_EQ(d.v[1].line, 0);
    /* Appending to a list that already holds entries keeps them. */
    CHECK_INT_EQ(kapi_json_duplicates("{\"z\":1,\"z\":2}", 13, &d), 1);
    CHECK_INT_EQ(d.n, 3);
    kapi_dups_dispose(&d);
}

/* Objects past the linear search get a hash index; repeats are still all found. */
TEST(json_dups_big_objects)
{
    kapi_buf b;
    kapi_dups d;
    kapi_buf_init(&b);
    kapi_dups_init(&d);
    kapi_buf_putc(&b, '{');
    for (int i = 0; i < 5000; i++)
        kapi_buf_printf(&b, "\"k%d\":{\"x\":%d},", i, i);
    kapi_buf_puts(&b, "\"k4999\":1,\"k0\":2,\"k2500\":{\"y\":1,\"y\":2},\"new\":3}");
    CHECK_INT_EQ(kapi_json_duplicates(b.ptr, b.len, &d), 4);
    CHECK_STR_EQ(d.v[0].message, "duplicate field \"k4999\"");
    CHECK_STR_EQ(d.v[1].message, "duplicate field \"k0\"");
    CHECK_STR_EQ(d.v[2].message, "duplicate field \"k2500\"");
    CHECK_STR_EQ(d.v[3].message, "duplicate field \"k2500.y\"");
    kapi_dups_dispose(&d);

    /* At most KAPI_JSON_MAX_DUPS entries. */
    kapi_buf_clear(&b);
    kapi_buf_putc(&b, '{');
    for (int i = 0; i < 300; i++)
        kapi_buf_printf(&b, "\"k%d\":1,\"k%d\":2,", i, i);
    kapi_buf_puts(&b, "\"end\":0}");
    CHECK_INT_EQ(kapi_json_duplicates(b.ptr, b.len, &d), KAPI_JSON_MAX_DUPS);
    CHECK_STR_EQ(d.v[KAPI_JSON_MAX_DUPS - 1].path, "k99");
    kapi_dups_dispose(&d);
    kapi_buf_dispose(&b);
}

/* Input cut anywhere, or not JSON at all, ends the scan without reading past its end. */
TEST(json_dups_cut_anywhere)
{
    static const char doc[] =
        "{\"a\":{\"b\":[1,2,{\"c\":\"x\\\"y\",\"c\":null}],\"b\":true},\"\\u0061\":-1.5e3,"
        "\"d\":[[],{}],\"d\":\"\\\\\"}";
    for (size_t n = 0; n <= sizeof(doc) - 1; n++) {
        char *copy = kapi_xstrndup(doc, n); /* ASan sees any read past n */
        kapi_dups d;
        kapi_dups_init(&d);
        kapi_json_duplicates(copy, n, &d);
        kapi_dups_dispose(&d);
        free(copy);
    }
    CHECK_DUPS(doc, "duplicate field \"a.b[2].c\" | duplicate field \"a.b\" | "
                    "duplicate field \"a\" | duplicate field \"d\"");
    CHECK_DUPS("{\"a\" 1}", "");
    CHECK_DUPS("{\"a\":1,,\"a\":2}", "");
    CHECK_DUPS("]]]}}}", "");
    CHECK_DUPS("{\"a\":1,\"a\":2", "duplicate field \"a\"");
}

TEST(json_quote_go)
{
    static const struct {
        const char *in, *want;
    } rows[] = {
        {"spec.schedule", "\"spec.schedule\""},
        {"a\"b\\c", "\"a\\\"b\\\\c\""},
        {"\a\b\f\n\r\t\v", "\"\\a\\b\\f\\n\\r\\t\\v\""},
        {"\x01\x7f", "\"\\x01\\x7f\""},
        {"\xc3\xa9\xe4\xbd\xa0", "\"\xc3\xa9\xe4\xbd\xa0\""},
        {"\xff", "\"\\xff\""},
        {"\xc2\xa0\xe2\x80\xa8\xef\xbb\xbf", "\"\\u00a0\\u2028\\ufeff\""},
        {"\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\""},
        {"\xf3\xb0\x80\x80", "\"\\U000f0000\""},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(rows); i++) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_go_quote(&b, rows[i].in, strlen(rows[i].in));
        CHECK_STR_EQ(b.ptr, rows[i].want);
        kapi_buf_dispose(&b);
    }
}
