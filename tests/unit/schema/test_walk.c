/* Unit tests for the decode walk (src/schema/walk.c) and Go's time parsing
 * (src/schema/gotime.c), on a small set of definitions shaped like the built-ins. */
#include "codec/json.h"
#include "schema/quantity.h"
#include "schema/schema.h"
#include "schema/schema_int.h"
#include "test.h"

static const char defs_json[] =
    "{\"io.k8s.api.x.v1.Thing\":{\"type\":\"object\",\"properties\":{"
    "  \"kind\":{\"type\":\"string\"},\"apiVersion\":{\"type\":\"string\"},"
    "  \"metadata\":{\"$ref\":\"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta\","
    "              \"x-kapi-emit\":{}},"
    "  \"spec\":{\"$ref\":\"#/definitions/io.k8s.api.x.v1.ThingSpec\"},"
    "  \"status\":{\"$ref\":\"#/definitions/io.k8s.api.x.v1.ThingStatus\",\"x-kapi-emit\":{}}}},"
    " \"io.k8s.api.x.v1.ThingSpec\":{\"type\":\"object\",\"properties\":{"
    "  \"schedule\":{\"type\":\"string\"},"
    "  \"suspend\":{\"type\":\"boolean\",\"default\":false},"
    "  \"limit\":{\"type\":\"integer\",\"format\":\"int32\",\"default\":3},"
    "  \"zone\":{\"type\":\"string\",\"x-kapi-emit\":\"\"},"
    "  \"when\":{\"$ref\":\"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Time\"},"
    "  \"items\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/definitions/io.k8s.api.x.v1.Item\"}},"
    "  \"tags\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
    "  \"hosts\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"x-kapi-emit\":null},"
    "  \"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"
    "           \"x-kapi-emit\":null}}},"
    " \"io.k8s.api.x.v1.ThingStatus\":{\"type\":\"object\",\"properties\":{"
    "  \"active\":{\"type\":\"integer\"}}},"
    " \"io.k8s.api.x.v1.Item\":{\"type\":\"object\",\"x-kapi-defaulter\":\"item\","
    "  \"properties\":{\"name\":{\"type\":\"string\"},\"image\":{\"type\":\"string\"},"
    "  \"policy\":{\"type\":\"string\"},"
    "  \"args\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"x-kapi-emit\":null},"
    "  \"path\":{\"type\":\"string\",\"default\":\"/dev/termination-log\"}}},"
    " \"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta\":{\"type\":\"object\",\"properties\":{"
    "  \"name\":{\"type\":\"string\"},"
    "  \"creationTimestamp\":{\"$ref\":\"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Time\","
    "                       \"x-kapi-emit\":null},"
    "  \"labels\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}}},"
    " \"io.k8s.apimachinery.pkg.apis.meta.v1.Time\":{\"type\":\"string\",\"format\":\"date-time\"}"
    "}";

static void item_defaulter(json_t *obj)
{
    if (!json_object_get(obj, "policy"))
        json_object_set_new(obj, "policy", json_string("IfNotPresent"));
}

static kapi_schema_set *load(void)
{
    kapi_schema_set *s = kapi_schema_set_new();
    json_t *defs = kapi_json_parse(defs_json, sizeof(defs_json) - 1, NULL);
    CHECK(defs);
    CHECK(kapi_schema_set_add(s, defs) == NULL);
    json_decref(defs);
    kapi_schema_set_defaulter(s, "item", item_defaulter);
    kapi_error *err = kapi_schema_set_compile(s);
    if (err)
        test_fail(__FILE__, __LINE__, "compile: %s", err->message);
    return s;
}

/* Decodes body against Thing; returns the error message or the encoded result. */
static char *decode(const char *body, kapi_schema_walk *w)
{
    kapi_schema_set *s = load();
    json_t *obj = kapi_json_parse(body, strlen(body), NULL);
    CHECK(obj);
    kapi_error *err = kapi_schema_decode(kapi_schema_set_get(s, "io.k8s.api.x.v1.Thing"), obj, w);
    char *out;
    if (err) {
        out = kapi_xstrdup(err->message);
        kapi_error_free(err);
    } else {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_json_encode(&b, obj);
        size_t len;
        out = kapi_buf_detach(&b, &len);
    }
    json_decref(obj);
    kapi_schema_set_free(s);
    return out;
}

TEST(schema_walk_unknown_fields_in_document_order)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_schema_walk w = {.arena = &a, .go_types = true};
    char *out = decode("{\"spec\":{\"bogus\":1,\"items\":[{\"name\":\"a\",\"extra\":true}]},"
                       "\"alsoBogus\":{\"x\":1}}",
                       &w);
    CHECK_STR_EQ(out, "{\"spec\":{\"items\":[{\"name\":\"a\"}]}}");
    CHECK_INT_EQ(w.nunknown, 3);
    CHECK_STR_EQ(w.unknown[0], "spec.bogus");
    CHECK_STR_EQ(w.unknown[1], "spec.items[0].extra");
    CHECK_STR_EQ(w.unknown[2], "alsoBogus");
    free(out);
    kapi_arena_dispose(&a);
}

TEST(schema_walk_go_type_errors)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_schema_walk w = {.arena = &a, .go_types = true};
    char *out = decode("{\"spec\":{\"suspend\":\"yes\"}}", &w);
    CHECK_STR_EQ(out, "json: cannot unmarshal string into Go struct field ThingSpec.spec.suspend "
                      "of type bool");
    free(out);
    out = decode("{\"spec\":{\"items\":[{\"name\":5}]}}", &w);
    CHECK_STR_EQ(out, "json: cannot unmarshal number into Go struct field Item.spec.items.name of "
                      "type string");
    free(out);
    out = decode("{\"spec\":{\"limit\":1.5}}", &w);
    CHECK_STR_EQ(out, "json: cannot unmarshal number 1.5 into Go struct field ThingSpec.spec.limit "
                      "of type int32");
    free(out);
    out = decode("{\"spec\":{\"limit\":3000000000}}", &w);
    CHECK_STR_EQ(out, "json: cannot unmarshal number 3000000000 into Go struct field "
                      "ThingSpec.spec.limit of type int32");
    free(out);
    out = decode("{\"spec\":[]}", &w);
    CHECK_STR_EQ(out, "json: cannot unmarshal array into Go struct field Thing.spec of type "
                      "v1.ThingSpec");
    free(out);
    out = decode("{\"spec\":{\"tags\":{\"a\":1}}}", &w);
    CHECK_STR_EQ(out, "json: cannot unmarshal number into Go struct field ThingSpec.spec.tags of "
                      "type string");
    free(out);
    kapi_arena_dispose(&a);
}

TEST(schema_walk_defaults_emit_and_order)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_schema_walk w = {.arena = &a, .go_types = true, .defaults = true, .reorder = true};
    char *out = decode("{\"status\":null,\"spec\":{\"tags\":{\"b\":\"1\",\"a\":\"2\"},"
                       "\"items\":[{\"image\":\"x\",\"name\":\"a\"}],\"schedule\":\"s\"},"
                       "\"kind\":\"Thing\"}",
                       &w);
    CHECK_STR_EQ(out, "{\"kind\":\"Thing\",\"metadata\":{\"creationTimestamp\":null},\"spec\":{"
                      "\"schedule\":\"s\",\"suspend\":false,\"limit\":3,\"zone\":\"\",\"items\":[{"
                      "\"name\":\"a\",\"image\":\"x\",\"policy\":\"IfNotPresent\",\"args\":null,"
                      "\"path\":\"/dev/termination-log\"}],\"tags\":{\"a\":\"2\",\"b\":\"1\"},"
                      "\"hosts\":null,\"env\":null},\"status\":{}}");
    free(out);
    kapi_arena_dispose(&a);
}

/* Defaults that follow the members already there are appended; one that belongs before a
 * member present puts the object in schema order again. */
TEST(schema_walk_defaults_appended_or_reordered)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_schema_walk w = {.arena = &a, .go_types = true, .defaults = true, .reorder = true};
    char *out = decode("{\"kind\":\"Thing\",\"metadata\":{\"name\":\"n\"},"
                       "\"spec\":{\"schedule\":\"s\",\"when\":\"2024-01-01T00:00:00Z\"}}",
                       &w);
    CHECK_STR_EQ(out,
                 "{\"kind\":\"Thing\",\"metadata\":{\"name\":\"n\",\"creationTimestamp\":null},"
                 "\"spec\":{\"schedule\":\"s\",\"suspend\":false,\"limit\":3,\"zone\":\"\","
                 "\"when\":\"2024-01-01T00:00:00Z\",\"hosts\":null,\"env\":null},"
                 "\"status\":{}}");
    free(out);
    out = decode(
        "{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"b\"}},\"spec\":{\"schedule\":\"s\","
        "\"tags\":{},\"suspend\":true,\"limit\":1,\"zone\":\"z\"}}",
        &w);
    CHECK_STR_EQ(
        out, "{\"metadata\":{\"name\":\"n\",\"creationTimestamp\":null,\"labels\":{\"a\":\"b\"}},"
             "\"spec\":{\"schedule\":\"s\",\"suspend\":true,\"limit\":1,\"zone\":\"z\",\"tags\":{},"
             "\"hosts\":null,\"env\":null},\"status\":{}}");
    free(out);
    out = decode("{\"spec\":{\"items\":[{\"policy\":\"Always\",\"name\":\"a\"},{\"args\":[]}],"
                 "\"limit\":1.5}}",
                 &w);
    CHECK_STR_EQ(out, "json: cannot unmarshal number 1.5 into Go struct field ThingSpec.spec.limit "
                      "of type int32");
    free(out);
    kapi_arena_dispose(&a);
}

/* What protobuf storage reads back: an empty list or map of a field Go writes without
 * omitempty is null; one with members, or of a field without x-kapi-emit, stays. */
TEST(schema_protobuf_nulls)
{
    kapi_schema_set *s = load();
    const char *body = "{\"spec\":{\"hosts\":[],\"env\":{},\"tags\":{},\"items\":[{\"args\":[]},"
                       "{\"args\":[\"x\"]}]},\"status\":{}}";
    json_t *obj = kapi_json_parse(body, strlen(body), NULL);
    CHECK(obj);
    kapi_schema_protobuf_nulls(kapi_schema_set_get(s, "io.k8s.api.x.v1.Thing"), obj);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_json_encode(&b, obj);
    CHECK_STR_EQ(b.ptr, "{\"spec\":{\"hosts\":null,\"env\":null,\"tags\":{},\"items\":[{\"args\":"
                        "null},{\"args\":[\"x\"]}]},\"status\":{}}");
    kapi_buf_dispose(&b);
    json_decref(obj);
    kapi_schema_set_free(s);
}

TEST(schema_walk_time_normalized)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_schema_walk w = {.arena = &a, .go_types = true};
    char *out = decode("{\"spec\":{\"when\":\"2024-01-02T03:04:05.123+02:00\"}}", &w);
    CHECK_STR_EQ(out, "{\"spec\":{\"when\":\"2024-01-02T01:04:05Z\"}}");
    free(out);
    kapi_arena_dispose(&a);
}

static void check_time(const char *in, bool micro, const char *want)
{
    char out[32];
    kapi_error *err = kapi_schema__parse_time(in, micro, out);
    if (err) {
        CHECK_STR_EQ(err->message, want);
        kapi_error_free(err);
    } else {
        CHECK_STR_EQ(out, want);
    }
}

TEST(schema_go_time_parse_errors)
{
    check_time("2024-01-02T03:04:05Z", true,
               "parsing time \"2024-01-02T03:04:05Z\" as \"2006-01-02T15:04:05.000000Z07:00\": "
               "cannot parse \"Z\" as \".000000\"");
    check_time("2024-01-02T03:04:05.123456Z", true, "2024-01-02T03:04:05.123456Z");
    check_time("", false,
               "parsing time \"\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"\" as \"2006\"");
    check_time("2024-01-02 03:04:05Z", false,
               "parsing time \"2024-01-02 03:04:05Z\" as \"2006-01-02T15:04:05Z07:00\": cannot "
               "parse \" 03:04:05Z\" as \"T\"");
    check_time("2024-13-02T03:04:05Z", false,
               "parsing time \"2024-13-02T03:04:05Z\": month out of "
               "range");
    check_time("2023-02-29T03:04:05Z", false,
               "parsing time \"2023-02-29T03:04:05Z\": day out of "
               "range");
    check_time("2024-01-02T03:04:05Zjunk", false,
               "parsing time \"2024-01-02T03:04:05Zjunk\": extra text: \"junk\"");
    check_time("2024-01-02T03:04:05", false,
               "parsing time \"2024-01-02T03:04:05\" as \"2006-01-02T15:04:05Z07:00\": cannot "
               "parse \"\" as \"Z07:00\"");
}

TEST(schema_compile_errors_name_the_path)
{
    kapi_schema_root *r = NULL;
    json_t *src =
        json_pack("{s:s,s:{s:{s:s}}}", "type", "object", "properties", "a", "type", "strange");
    kapi_error *err = kapi_schema_compile(src, &r);
    CHECK(err && !r);
    CHECK_STR_EQ(err->message, "properties.a.type: unknown type");
    kapi_error_free(err);
    json_decref(src);
}

TEST(schema_quantities_canonical_and_rounded)
{
    kapi_quantity q;
    kapi_buf b;
    kapi_buf_init(&b);
    CHECK(kapi_quantity_parse(&q, "0.0001"));
    kapi_quantity_round_up(&q, -3);
    kapi_quantity_format(&b, &q);
    CHECK_STR_EQ(b.ptr, "1m");
    kapi_buf_clear(&b);
    CHECK(kapi_quantity_parse(&q, "1000m"));
    kapi_quantity_format(&b, &q);
    CHECK_STR_EQ(b.ptr, "1");
    kapi_buf_dispose(&b);
}
