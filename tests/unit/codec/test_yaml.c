/* Unit tests for src/codec/yaml: decoding and encoding tables (tests/data/yaml: go-yaml
 * v2.4.0's own test rows plus kapi's, see its README), the YAML answers and bodies of the
 * golden corpus (a real kube-apiserver 1.26), limits, and inputs cut anywhere. */
#include <math.h>

#include "codec/codec_int.h"
#include "codec/yaml.h"
#include "codec_test.h"
#include "test.h"

/* ---- helpers ---- */

static char *dump(const json_t *v)
{
    kapi_buf b;
    kapi_buf_init(&b);
    if (v)
        kapi_json_encode(&b, v);
    else
        kapi_buf_puts(&b, "(none)");
    return kapi_buf_detach(&b, NULL);
}

/* Compares the dups found with the expected messages; prints what differs. */
static bool same_dups(const kapi_dups *got, const json_t *want)
{
    bool same = got->n == json_array_size(want);
    for (size_t i = 0; same && i < got->n; i++)
        same = strcmp(got->v[i].message, json_string_value(json_array_get(want, i))) == 0;
    if (!same)
        for (size_t i = 0; i < got->n; i++)
            printf("    dup: %s\n", got->v[i].message);
    return same;
}

/* One row of decode.jsonl; prints it and returns false when kapi disagrees. */
static bool decode_row(const json_t *row)
{
    const json_t *yaml = json_object_get(row, "yaml"), *want = json_object_get(row, "json");
    const char *want_err = json_string_value(json_object_get(row, "error"));
    json_t *no_dups = json_array(), *got = NULL;
    const json_t *want_dups = json_object_get(row, "dups") ? json_object_get(row, "dups") : no_dups;
    kapi_dups dups;
    kapi_dups_init(&dups);
    kapi_error *err =
        kapi_yaml_parse(json_string_value(yaml), json_string_length(yaml), &got, &dups);
    bool ok;
    if (want_err)
        ok = err && err->status == KAPI_STATUS_BAD_REQUEST && strcmp(err->message, want_err) == 0;
    else
        ok = !err && json_equal(got, want) && same_dups(&dups, want_dups);
    if (!ok) {
        char *g = dump(got), *w = dump(want);
        printf("  yaml %s\n    got %s%s%s\n    want %s%s\n", json_dumps(yaml, JSON_ENCODE_ANY), g,
               err ? " error: " : "", err ? err->message : "", w, want_err ? want_err : "");
        free(g);
        free(w);
    }
    json_decref(got);
    json_decref(no_dups);
    kapi_dups_dispose(&dups);
    if (err)
        kapi_error_free(err);
    return ok;
}

static char *encode(const json_t *v)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_yaml_encode(&b, v);
    return kapi_buf_detach(&b, NULL);
}

/* Replaces every string equal to from (at any depth) with to. */
static void replace_strings(json_t *v, const char *from, const char *to)
{
    const char *key;
    json_t *x;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach(v, key, x)
        {
            if (json_is_string(x) && strcmp(json_string_value(x), from) == 0)
                json_object_set_new(v, key, json_string(to));
            else
                replace_strings(x, from, to);
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x) replace_strings(x, from, to);
    }
}

/* Replaces each occurrence of from in s with to; returns a new string. */
static char *replace_text(char *s, const char *from, const char *to)
{
    kapi_buf b;
    size_t fl = strlen(from);
    kapi_buf_init(&b);
    for (const char *p = s, *q; *p; p = q + fl) {
        q = strstr(p, from);
        if (!q) {
            kapi_buf_puts(&b, p);
            break;
        }
        kapi_buf_put(&b, p, (size_t)(q - p));
        kapi_buf_puts(&b, to);
    }
    free(s);
    return kapi_buf_detach(&b, NULL);
}

/* ---- tables ---- */

TEST(yaml_decode_table)
{
    json_t *rows = codec_test_cases("tests/data/yaml/decode.jsonl");
    size_t i, bad = 0;
    const json_t *row;
    CHECK(json_array_size(rows) > 100);
    json_array_foreach(rows, i, row) bad += !decode_row(row);
    json_decref(rows);
    CHECK_INT_EQ(bad, 0);
}

TEST(yaml_encode_table)
{
    json_t *rows = codec_test_cases("tests/data/yaml/encode.jsonl");
    size_t i, bad = 0;
    const json_t *row;
    CHECK(json_array_size(rows) > 100);
    json_array_foreach(rows, i, row)
    {
        const char *want = json_string_value(json_object_get(row, "yaml"));
        char *got = encode(json_object_get(row, "json"));
        if (strcmp(got, want) != 0) {
            printf("  json %s\n    got  \"%s\"\n    want \"%s\"\n",
                   json_dumps(json_object_get(row, "json"), JSON_ENCODE_ANY), got, want);
            bad++;
        }
        free(got);
    }
    json_decref(rows);
    CHECK_INT_EQ(bad, 0);
}

/* Every YAML answer of the corpus, read back and written again byte for byte. The corpus
 * replaced times, resource versions and UIDs with placeholders (keeping the quotes): real
 * values go in before encoding and come out again after. */
TEST(yaml_golden_answers)
{
    json_t *rows = codec_test_golden("responses.jsonl");
    size_t i, seen = 0;
    const json_t *row;
    if (!rows)
        test_fail(__FILE__, __LINE__, "golden corpus not found");
    json_array_foreach(rows, i, row)
    {
        const char *ct =
            json_string_value(json_object_get(json_object_get(row, "headers"), "Content-Type"));
        const char *body = json_string_value(json_object_get(row, "body"));
        json_t *v;
        if (!ct || strcmp(ct, KAPI_YAML_MEDIA_TYPE) != 0 || !body)
            continue;
        kapi_error *err = kapi_yaml_parse(body, strlen(body), &v, NULL);
        CHECK(err == NULL);
        CHECK(json_is_object(v));
        replace_strings(v, "<time>", "2024-01-02T03:04:05Z");
        replace_strings(v, "<rv>", "12345");
        replace_strings(v, "<uid>", "7d3f1a2b-0c4d-4e5f-8a9b-0c1d2e3f4a5b");
        char *got = encode(v);
        got = replace_text(got, "2024-01-02T03:04:05Z", "<time>");
        got = replace_text(got, "\"12345\"", "\"<rv>\"");
        got = replace_text(got, "7d3f1a2b-0c4d-4e5f-8a9b-0c1d2e3f4a5b", "<uid>");
        CHECK_STR_EQ(got, body);
        free(got);
        json_decref(v);
        seen++;
    }
    json_decref(rows);
    CHECK(seen >= 2);
}

/* Every YAML request body of the corpus decodes to an object of the kind it names; the
 * repeated key of cj-fv-yaml-* is reported as kube-apiserver warned and failed. */
TEST(yaml_golden_bodies)
{
    json_t *reqs = codec_test_golden("requests.jsonl");
    json_t *resps = codec_test_golden("responses.jsonl");
    size_t i, seen = 0;
    const json_t *row;
    if (!reqs || !resps)
        test_fail(__FILE__, __LINE__, "golden corpus not found");
    json_array_foreach(reqs, i, row)
    {
        const char *ct =
            json_string_value(json_object_get(json_object_get(row, "headers"), "Content-Type"));
        const char *body = json_string_value(json_object_get(row, "body"));
        const char *id = json_string_value(json_object_get(row, "id"));
        json_t *v;
        kapi_dups dups;
        if (!ct || strcmp(ct, KAPI_YAML_MEDIA_TYPE) != 0 || !body)
            continue;
        kapi_dups_init(&dups);
        CHECK(kapi_yaml_parse(body, strlen(body), &v, &dups) == NULL);
        CHECK(json_is_string(json_object_get(v, "kind")));
        if (strncmp(id, "cj-fv-yaml-", 11) != 0) {
            CHECK_INT_EQ(dups.n, 0);
        } else {
            CHECK_INT_EQ(dups.n, 1);
            CHECK_STR_EQ(dups.v[0].message, "line 7: key \"schedule\" already set in map");
            CHECK_INT_EQ(dups.v[0].line, 7);
            CHECK_STR_EQ(kapi_json_path_str(v, "spec.schedule"), "0 4 29 2 *");
        }
        if (strcmp(id, "cj-fv-yaml-strict") == 0) {
            const json_t *resp = codec_test_golden_id(resps, id);
            const char *msg = kapi_json_path_str(json_object_get(resp, "body"), "message");
            kapi_buf b;
            kapi_buf_init(&b);
            kapi_buf_puts(&b, "strict decoding error: ");
            kapi_yaml_strict_message(&b, &dups);
            kapi_buf_puts(&b, ", unknown field");
            CHECK(msg && strstr(msg, b.ptr));
            kapi_buf_dispose(&b);
        }
        kapi_dups_dispose(&dups);
        json_decref(v);
        seen++;
    }
    json_decref(reqs);
    json_decref(resps);
    CHECK(seen >= 5);
}

/* Every JSON body of the corpus written as YAML reads back as the same value. */
TEST(yaml_golden_round_trip)
{
    json_t *rows = codec_test_golden("responses.jsonl");
    size_t i, seen = 0;
    const json_t *row;
    if (!rows)
        test_fail(__FILE__, __LINE__, "golden corpus not found");
    json_array_foreach(rows, i, row)
    {
        const json_t *body = json_object_get(row, "body");
        json_t *back = NULL;
        if (!json_is_object(body))
            continue;
        char *text = encode(body);
        kapi_error *err = kapi_yaml_parse(text, strlen(text), &back, NULL);
        if (err || !json_equal(back, body))
            test_fail(__FILE__, __LINE__, "%s: %s", json_string_value(json_object_get(row, "id")),
                      err ? err->message : text);
        json_decref(back);
        free(text);
        seen++;
    }
    json_decref(rows);
    CHECK(seen > 300);
}

/* ---- limits and robustness ---- */

TEST(yaml_depth_limit)
{
    kapi_buf b;
    json_t *v;
    kapi_error *err;
    kapi_buf_init(&b);
    for (int i = 0; i < KAPI_YAML_MAX_DEPTH; i++)
        kapi_buf_putc(&b, '[');
    for (int i = 0; i < KAPI_YAML_MAX_DEPTH; i++)
        kapi_buf_putc(&b, ']');
    CHECK(kapi_yaml_parse(b.ptr, b.len, &v, NULL) == NULL);
    json_decref(v);
    kapi_buf_clear(&b);
    for (int i = 0; i <= KAPI_YAML_MAX_DEPTH; i++)
        kapi_buf_putc(&b, '[');
    CHECK((err = kapi_yaml_parse(b.ptr, b.len, &v, NULL)) != NULL);
    CHECK(v == NULL);
    CHECK_STR_EQ(err->message, "yaml: line 1: exceeded max depth of 2048");
    kapi_error_free(err);

    /* An alias adds the depth of what it names to where it stands: 1 (the top mapping) +
     * 1047 + 1000 collections is the limit, one more is too many. */
    for (int extra = 0; extra <= 1; extra++) {
        kapi_buf_clear(&b);
        kapi_buf_puts(&b, "x: &x ");
        for (int i = 0; i < 1000; i++)
            kapi_buf_putc(&b, '[');
        for (int i = 0; i < 1000; i++)
            kapi_buf_putc(&b, ']');
        kapi_buf_puts(&b, "\ny: ");
        for (int i = 0; i < 1047 + extra; i++)
            kapi_buf_putc(&b, '[');
        kapi_buf_puts(&b, "*x");
        for (int i = 0; i < 1047 + extra; i++)
            kapi_buf_putc(&b, ']');
        err = kapi_yaml_parse(b.ptr, b.len, &v, NULL);
        CHECK((err != NULL) == (extra == 1));
        if (err)
            kapi_error_free(err);
        json_decref(v);
    }

    /* An alias adds the depth of what it names to where it stands. */
    kapi_buf_clear(&b);
    kapi_buf_puts(&b, "a0: &a0 [");
    for (int i = 0; i < 1500; i++)
        kapi_buf_putc(&b, '[');
    for (int i = 0; i < 1500; i++)
        kapi_buf_putc(&b, ']');
    kapi_buf_puts(&b, "]\na1: ");
    for (int i = 0; i < 600; i++)
        kapi_buf_putc(&b, '[');
    kapi_buf_puts(&b, "*a0");
    for (int i = 0; i < 600; i++)
        kapi_buf_putc(&b, ']');
    kapi_buf_putc(&b, '\n');
    CHECK((err = kapi_yaml_parse(b.ptr, b.len, &v, NULL)) != NULL);
    CHECK(strstr(err->message, "exceeded max depth") != NULL);
    kapi_error_free(err);
    kapi_buf_dispose(&b);
}

/* A body cut at any byte is an error or a value, never a crash or a leak. */
TEST(yaml_cut_anywhere)
{
    static const char doc[] =
        "apiVersion: v1\nkind: ConfigMap # c\nmetadata:\n  name: &n x\n  labels: {a: \"1\", "
        "b: 'two'}\n  annotations:\n    k: |\n      line\n    j: >-\n      folded\ndata:\n"
        "  <<: {m: 1}\n  list:\n  - *n\n  - !!binary aGk=\n  - [1, 2.5, .inf, ~, 0x1f]\n"
        "  a: 1\n  a: 2\n? complex\n: \"esc\\u00e9\\n\"\n---\nnext: doc\n";
    for (size_t n = 0; n <= sizeof(doc) - 1; n++) {
        json_t *v = NULL;
        kapi_dups dups;
        kapi_dups_init(&dups);
        kapi_error *err = kapi_yaml_parse(doc, n, &v, &dups);
        CHECK((err == NULL) != (v == NULL));
        if (err)
            kapi_error_free(err);
        json_decref(v);
        kapi_dups_dispose(&dups);
    }
}

TEST(yaml_strict_message)
{
    kapi_dups dups;
    kapi_buf b;
    json_t *v;
    kapi_dups_init(&dups);
    kapi_buf_init(&b);
    const char *body = "a: 1\nb: 2\na: 3\nb: 4\n";
    CHECK(kapi_yaml_parse(body, strlen(body), &v, &dups) == NULL);
    kapi_yaml_strict_message(&b, &dups);
    CHECK_STR_EQ(b.ptr, "yaml: unmarshal errors:\n  line 3: key \"a\" already set in map\n"
                        "  line 4: key \"b\" already set in map");
    CHECK_INT_EQ(json_integer_value(json_object_get(v, "a")), 3);
    json_decref(v);
    kapi_buf_dispose(&b);
    kapi_dups_dispose(&dups);
}

/* ---- Go's number formatting and go-yaml's key order ---- */

TEST(yaml_go_numbers)
{
    static const struct {
        double x;
        int bits;
        const char *want;
    } rows[] = {
        {0.1, 64, "0.1"},       {1e6, 64, "1e+06"},
        {123456, 64, "123456"}, {1.5e-5, 64, "1.5e-05"},
        {0.0001, 64, "0.0001"}, {-2.5, 64, "-2.5"},
        {1e21, 64, "1e+21"},    {1.7976931348623157e308, 64, "1.7976931348623157e+308"},
        {5e-324, 64, "5e-324"}, {3.14159265358979, 32, "3.1415927"},
        {0.1, 32, "0.1"},       {16777217, 32, "1.6777216e+07"},
        {-0.0, 64, "-0"},       {INFINITY, 64, "+Inf"},
    };
    char out[40];
    for (size_t i = 0; i < KAPI_ARRAY_LEN(rows); i++) {
        kapi_go_format_float(out, rows[i].x, rows[i].bits);
        CHECK_STR_EQ(out, rows[i].want);
    }
}

TEST(yaml_go_key_order)
{
    static const char *const sorted[] = {"",   ".", "_x", "1",   "01",   "9",    "10",
                                         "A",  "B", "a",  "a1",  "a01",  "a2",   "a10",
                                         "aa", "b", "x2", "x2y", "x02y", "x10y", "é"};
    for (size_t i = 0; i + 1 < KAPI_ARRAY_LEN(sorted); i++) {
        const char *a = sorted[i], *b = sorted[i + 1];
        if (kapi_yaml__key_cmp(a, strlen(a), b, strlen(b)) >= 0 ||
            kapi_yaml__key_cmp(b, strlen(b), a, strlen(a)) <= 0)
            test_fail(__FILE__, __LINE__, "\"%s\" should sort before \"%s\"", a, b);
    }
}
