/* Unit tests for src/schema/protobuf.c: message tables derived from definitions, and the
 * definitions they cannot be derived from. */
#include <string.h>

#include "codec/json.h"
#include "schema/schema.h"
#include "test.h"

/* Compiles defs (JSON text) into *set and derives the message of definition name: NULL
 * and the table in *out, or the error's message (heap). a holds the tables, which borrow
 * their names from the set. */
static char *derive(const char *defs, const char *name, kapi_schema_set **set, kapi_arena *a,
                    const kapi_pb_message **out)
{
    kapi_schema_set *s = *set = kapi_schema_set_new();
    json_t *j = kapi_json_parse(defs, strlen(defs), NULL);
    CHECK(j && kapi_schema_set_add(s, j) == NULL);
    json_decref(j);
    CHECK(kapi_schema_set_compile(s) == NULL);
    kapi_error *err = kapi_schema_protobuf(kapi_schema_set_get(s, name), a, out);
    char *why = err ? kapi_xstrdup(err->message) : NULL;
    kapi_error_free(err);
    return why;
}

/* A definition that reaches itself is one message, its field pointing back at it. */
TEST(schema_protobuf_recursive_definition)
{
    static const char defs[] = "{\"x.Node\":{\"type\":\"object\",\"properties\":{"
                               "\"name\":{\"type\":\"string\",\"x-kapi-protobuf\":2},"
                               "\"kind\":{\"type\":\"string\"},"
                               "\"children\":{\"type\":\"array\",\"items\":"
                               "{\"$ref\":\"#/definitions/x.Node\"},\"x-kapi-protobuf\":1},"
                               "\"size\":{\"type\":\"integer\",\"format\":\"int32\","
                               "\"x-kapi-protobuf\":3},"
                               "\"data\":{\"type\":\"string\",\"format\":\"byte\","
                               "\"x-kapi-protobuf\":4}}}}";
    kapi_schema_set *set;
    kapi_arena a;
    kapi_arena_init(&a);
    const kapi_pb_message *m = NULL;
    CHECK(derive(defs, "x.Node", &set, &a, &m) == NULL);
    CHECK_INT_EQ(m->nfields, 4);
    CHECK_INT_EQ(m->fields[0].number, 1);
    CHECK(m->fields[0].kind == KAPI_PB_MESSAGE && m->fields[0].repeated);
    CHECK(m->fields[0].message == m);
    CHECK_STR_EQ(m->fields[1].json, "name");
    CHECK(m->fields[2].kind == KAPI_PB_INT32 && m->fields[3].kind == KAPI_PB_BYTES);
    kapi_arena_dispose(&a);
    kapi_schema_set_free(set);
}

/* A numbered property kapi cannot read from protobuf, and a number used twice, are
 * refused when the tables are made, naming the property. */
TEST(schema_protobuf_refused)
{
    static const struct {
        const char *defs, *why;
    } cases[] = {
        {"{\"x.T\":{\"type\":\"object\",\"properties\":{\"m\":{\"type\":\"object\","
         "\"additionalProperties\":{\"type\":\"object\",\"additionalProperties\":"
         "{\"type\":\"string\"}},\"x-kapi-protobuf\":1}}}}",
         "x.T.m: no protobuf form for its schema"},
        {"{\"x.T\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\","
         "\"x-kapi-protobuf\":1}},\"x-kapi-protobuf-embed\":{\"field\":2}}}",
         "x.T: x-kapi-protobuf-embed needs field, message, properties"},
        {"{\"x.T\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\",\"items\":"
         "{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"x-kapi-protobuf\":1}}}}",
         "x.T.a: no protobuf form for its schema"},
        {"{\"x.T\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\","
         "\"x-kapi-protobuf\":1},\"b\":{\"type\":\"boolean\",\"x-kapi-protobuf\":1}}}}",
         "x.T: protobuf field 1 twice"},
        {"{\"x.T\":{\"type\":\"string\"}}", "a protobuf message must be a definition with "
                                            "properties"},
        {"{\"x.T\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\",\"items\":"
         "{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"x-kapi-protobuf-wrap\":true},"
         "\"x-kapi-protobuf-wrap\":true,\"x-kapi-protobuf\":1}}}}",
         "x.T.a: no protobuf form for its schema"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        kapi_schema_set *set;
        kapi_arena a;
        kapi_arena_init(&a);
        const kapi_pb_message *m = (const kapi_pb_message *)&a;
        char *why = derive(cases[i].defs, "x.T", &set, &a, &m);
        CHECK_STR_EQ(why, cases[i].why);
        CHECK(m == NULL);
        free(why);
        kapi_arena_dispose(&a);
        kapi_schema_set_free(set);
    }
}

/* A Go named slice type (authentication's ExtraValue) is a message of its own in protobuf,
 * the list as its field 1: it reads as the list, an empty or absent one as [] (Go's
 * decoder makes an empty, non-nil slice of it), and writes back as it read. */
TEST(schema_protobuf_wrapped_list)
{
    static const char defs[] = "{\"x.User\":{\"type\":\"object\",\"properties\":{"
                               "\"name\":{\"type\":\"string\",\"x-kapi-protobuf\":1,"
                               "\"x-kapi-omitempty\":true},"
                               "\"extra\":{\"type\":\"object\",\"additionalProperties\":{"
                               "\"type\":\"array\",\"items\":{\"type\":\"string\"},"
                               "\"x-kapi-protobuf-wrap\":true},\"x-kapi-protobuf\":4}}}}";
    /* name "me"; extra a: [x, y], b: an empty ExtraValue, c: an entry without a value */
    static const char in[] = "\x0a\x02me"
                             "\x22\x0b\x0a\x01"
                             "a\x12\x06\x0a\x01x\x0a\x01y"
                             "\x22\x05\x0a\x01"
                             "b\x12\x00"
                             "\x22\x03\x0a\x01"
                             "c";
    kapi_schema_set *set;
    kapi_arena a;
    kapi_arena_init(&a);
    const kapi_pb_message *m = NULL;
    CHECK(derive(defs, "x.User", &set, &a, &m) == NULL);
    const kapi_pb_field *extra = &m->fields[1];
    CHECK(extra->kind == KAPI_PB_MAP && extra->value->kind == KAPI_PB_LIST);
    CHECK(extra->value->value->number == 1 && extra->value->value->kind == KAPI_PB_STRING);
    char *why = NULL;
    json_t *v = kapi_pb_to_json(m, in, sizeof(in) - 1, &why);
    CHECK(v && !why);
    kapi_buf out, again;
    kapi_buf_init(&out);
    kapi_buf_init(&again);
    kapi_json_encode(&out, v);
    CHECK_STR_EQ(out.ptr, "{\"name\":\"me\",\"extra\":{\"a\":[\"x\",\"y\"],\"b\":[],\"c\":[]}}");
    CHECK(kapi_pb_from_json(m, v, &again, &why));
    /* written as Go writes it: every entry with its value, c's empty too */
    CHECK_INT_EQ(again.len, sizeof(in) - 1 + 2);
    json_t *back = kapi_pb_to_json(m, again.ptr, again.len, &why);
    CHECK(back && json_equal(back, v));
    json_decref(back);
    json_decref(v);
    /* an element of the wrong wire type; a value that is not a list */
    static const char bad[] = "\x22\x07\x0a\x01"
                              "a\x12\x02\x08\x07";
    CHECK(kapi_pb_to_json(m, bad, sizeof(bad) - 1, &why) == NULL);
    CHECK_STR_EQ(why, "field 1: wire type 0 does not fit string");
    free(why);
    v = json_pack("{s:{s:s}}", "extra", "a", "x");
    kapi_buf_clear(&again);
    CHECK(!kapi_pb_from_json(m, v, &again, &why));
    CHECK_STR_EQ(why, "value: not a list");
    free(why);
    json_decref(v);
    kapi_buf_dispose(&out);
    kapi_buf_dispose(&again);
    kapi_arena_dispose(&a);
    kapi_schema_set_free(set);
}
