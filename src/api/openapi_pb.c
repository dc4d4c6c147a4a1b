/*
 * api/openapi_pb: the Swagger 2.0 document in protobuf, as client-go asks for it
 * (Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf).
 *
 * The messages are gnostic's openapi_v2 (OpenAPIv2.proto): a Document of Paths and
 * Definitions, whose Schemas carry vendor extensions and values (default, enum) as
 * `Any { string yaml = 2; }`. Clients parse that text with a YAML parser, so kapi writes
 * the value's JSON, which YAML reads as the same value.
 *
 * Each message is written into its own buffer and then framed into its parent, so
 * lengths are known before they are written.
 */
#include <string.h>

#include "api/api_int.h"

enum { VARINT = 0, FIXED64 = 1, BYTES = 2 };

static void put_varint(kapi_buf *b, uint64_t v)
{
    while (v >= 0x80) {
        kapi_buf_putc(b, (char)(v | 0x80));
        v >>= 7;
    }
    kapi_buf_putc(b, (char)v);
}

static void put_tag(kapi_buf *b, int field, int wire)
{
    put_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

static void put_bytes(kapi_buf *b, int field, const char *p, size_t n)
{
    put_tag(b, field, BYTES);
    put_varint(b, n);
    kapi_buf_put(b, p, n);
}

static void put_str(kapi_buf *b, int field, const json_t *v)
{
    if (json_is_string(v))
        put_bytes(b, field, json_string_value(v), json_string_length(v));
}

static void put_bool(kapi_buf *b, int field, const json_t *v)
{
    if (json_is_true(v)) {
        put_tag(b, field, VARINT);
        put_varint(b, 1);
    }
}

static void put_int(kapi_buf *b, int field, const json_t *v)
{
    if (json_is_integer(v) && json_integer_value(v) != 0) {
        put_tag(b, field, VARINT);
        put_varint(b, (uint64_t)json_integer_value(v));
    }
}

static void put_double(kapi_buf *b, int field, const json_t *v)
{
    if (!json_is_number(v))
        return;
    double d = json_number_value(v);
    uint64_t bits;
    memcpy(&bits, &d, sizeof(bits));
    put_tag(b, field, FIXED64);
    for (int i = 0; i < 8; i++)
        kapi_buf_putc(b, (char)(bits >> (8 * i)));
}

/* Frames the message in m as field of b and empties m. */
static void put_msg(kapi_buf *b, int field, kapi_buf *m)
{
    put_bytes(b, field, m->ptr, m->len);
    kapi_buf_clear(m);
}

static void put_strings(kapi_buf *b, int field, const json_t *arr)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) put_str(b, field, v);
}

/* Any { string yaml = 2; } holding the value's JSON text. */
static void put_any(kapi_buf *b, int field, const json_t *v)
{
    kapi_buf text, m;
    kapi_buf_init(&text);
    kapi_buf_init(&m);
    kapi_json_encode(&text, v);
    kapi_buf_putc(&text, '\n');
    put_bytes(&m, 2, text.ptr, text.len);
    put_msg(b, field, &m);
    kapi_buf_dispose(&text);
    kapi_buf_dispose(&m);
}

/* The x-* members of obj as repeated NamedAny { name = 1; value = 2; }. */
static void put_extensions(kapi_buf *b, int field, const json_t *obj)
{
    kapi_buf m;
    kapi_buf_init(&m);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (strncmp(key, "x-", 2) != 0)
            continue;
        put_bytes(&m, 1, key, strlen(key));
        put_any(&m, 2, v);
        put_msg(b, field, &m);
    }
    kapi_buf_dispose(&m);
}

static void put_schema(kapi_buf *b, int field, const json_t *s);

/* repeated NamedSchema { name = 1; value = 2; } inside a message at field. */
static void put_named_schemas(kapi_buf *b, int field, const json_t *map)
{
    kapi_buf m, named;
    kapi_buf_init(&m);
    kapi_buf_init(&named);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)map, key, v)
    {
        put_bytes(&named, 1, key, strlen(key));
        put_schema(&named, 2, v);
        put_msg(&m, 1, &named);
    }
    put_msg(b, field, &m);
    kapi_buf_dispose(&m);
    kapi_buf_dispose(&named);
}

static void put_schema(kapi_buf *b, int field, const json_t *s)
{
    kapi_buf m, sub;
    kapi_buf_init(&m);
    kapi_buf_init(&sub);
    put_str(&m, 1, json_object_get(s, "$ref"));
    put_str(&m, 2, json_object_get(s, "format"));
    put_str(&m, 3, json_object_get(s, "title"));
    put_str(&m, 4, json_object_get(s, "description"));
    if (json_object_get(s, "default"))
        put_any(&m, 5, json_object_get(s, "default"));
    put_double(&m, 6, json_object_get(s, "multipleOf"));
    put_double(&m, 7, json_object_get(s, "maximum"));
    put_bool(&m, 8, json_object_get(s, "exclusiveMaximum"));
    put_double(&m, 9, json_object_get(s, "minimum"));
    put_bool(&m, 10, json_object_get(s, "exclusiveMinimum"));
    put_int(&m, 11, json_object_get(s, "maxLength"));
    put_int(&m, 12, json_object_get(s, "minLength"));
    put_str(&m, 13, json_object_get(s, "pattern"));
    put_int(&m, 14, json_object_get(s, "maxItems"));
    put_int(&m, 15, json_object_get(s, "minItems"));
    put_bool(&m, 16, json_object_get(s, "uniqueItems"));
    put_int(&m, 17, json_object_get(s, "maxProperties"));
    put_int(&m, 18, json_object_get(s, "minProperties"));
    put_strings(&m, 19, json_object_get(s, "required"));
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(s, "enum"), i, v) put_any(&m, 20, v);
    json_t *add = json_object_get(s, "additionalProperties");
    if (json_is_object(add)) {
        put_schema(&sub, 1, add);
        put_msg(&m, 21, &sub);
    } else if (json_is_boolean(add)) {
        put_tag(&sub, 2, VARINT);
        put_varint(&sub, json_is_true(add));
        put_msg(&m, 21, &sub);
    }
    json_t *type = json_object_get(s, "type");
    if (json_is_string(type)) {
        put_str(&sub, 1, type);
        put_msg(&m, 22, &sub);
    }
    json_t *items = json_object_get(s, "items");
    if (json_is_object(items)) {
        put_schema(&sub, 1, items);
        put_msg(&m, 23, &sub);
    }
    json_array_foreach(json_object_get(s, "allOf"), i, v) put_schema(&m, 24, v);
    json_t *props = json_object_get(s, "properties");
    if (json_is_object(props))
        put_named_schemas(&m, 25, props);
    put_bool(&m, 27, json_object_get(s, "readOnly"));
    if (json_object_get(s, "example"))
        put_any(&m, 30, json_object_get(s, "example"));
    put_extensions(&m, 31, s);
    put_msg(b, field, &m);
    kapi_buf_dispose(&m);
    kapi_buf_dispose(&sub);
}

/* A parameter: BodyParameter or, inside NonBodyParameter, a query or path one. */
static void put_parameter(kapi_buf *b, int field, const json_t *p)
{
    kapi_buf item, param, sub, m;
    kapi_buf_init(&item);
    kapi_buf_init(&param);
    kapi_buf_init(&sub);
    kapi_buf_init(&m);
    const char *in = json_string_value(json_object_get(p, "in"));
    if (in && strcmp(in, "body") == 0) {
        put_str(&m, 1, json_object_get(p, "description"));
        put_str(&m, 2, json_object_get(p, "name"));
        put_str(&m, 3, json_object_get(p, "in"));
        put_bool(&m, 4, json_object_get(p, "required"));
        put_schema(&m, 5, json_object_get(p, "schema"));
        put_msg(&param, 1, &m);
    } else {
        bool path = in && strcmp(in, "path") == 0;
        /* Path parameters have no allowEmptyValue, so their later fields shift by one. */
        int shift = path ? 1 : 0;
        put_bool(&m, 1, json_object_get(p, "required"));
        put_str(&m, 2, json_object_get(p, "in"));
        put_str(&m, 3, json_object_get(p, "description"));
        put_str(&m, 4, json_object_get(p, "name"));
        put_str(&m, 6 - shift, json_object_get(p, "type"));
        put_str(&m, 7 - shift, json_object_get(p, "format"));
        put_bool(&m, 20 - shift, json_object_get(p, "uniqueItems"));
        put_msg(&sub, path ? 4 : 3, &m);
        put_msg(&param, 2, &sub);
    }
    put_msg(&item, 1, &param);
    put_msg(b, field, &item);
    kapi_buf_dispose(&item);
    kapi_buf_dispose(&param);
    kapi_buf_dispose(&sub);
    kapi_buf_dispose(&m);
}

static void put_parameters(kapi_buf *b, int field, const json_t *arr)
{
    size_t i;
    json_t *p;
    json_array_foreach(arr, i, p) put_parameter(b, field, p);
}

static void put_responses(kapi_buf *b, int field, const json_t *responses)
{
    kapi_buf m, named, value, resp, item;
    kapi_buf_init(&m);
    kapi_buf_init(&named);
    kapi_buf_init(&value);
    kapi_buf_init(&resp);
    kapi_buf_init(&item);
    const char *code;
    json_t *r;
    json_object_foreach((json_t *)responses, code, r)
    {
        put_str(&resp, 1, json_object_get(r, "description"));
        if (json_object_get(r, "schema")) {
            put_schema(&item, 1, json_object_get(r, "schema"));
            put_msg(&resp, 2, &item);
        }
        put_msg(&value, 1, &resp);
        put_bytes(&named, 1, code, strlen(code));
        put_msg(&named, 2, &value);
        put_msg(&m, 1, &named);
    }
    put_msg(b, field, &m);
    kapi_buf_dispose(&m);
    kapi_buf_dispose(&named);
    kapi_buf_dispose(&value);
    kapi_buf_dispose(&resp);
    kapi_buf_dispose(&item);
}

static void put_operation(kapi_buf *b, int field, const json_t *op)
{
    if (!op)
        return;
    kapi_buf m;
    kapi_buf_init(&m);
    put_strings(&m, 1, json_object_get(op, "tags"));
    put_str(&m, 3, json_object_get(op, "description"));
    put_str(&m, 5, json_object_get(op, "operationId"));
    put_strings(&m, 6, json_object_get(op, "produces"));
    put_strings(&m, 7, json_object_get(op, "consumes"));
    put_parameters(&m, 8, json_object_get(op, "parameters"));
    put_responses(&m, 9, json_object_get(op, "responses"));
    put_strings(&m, 10, json_object_get(op, "schemes"));
    put_extensions(&m, 13, op);
    put_msg(b, field, &m);
    kapi_buf_dispose(&m);
}

static void put_paths(kapi_buf *b, int field, const json_t *paths)
{
    static const struct {
        const char *method;
        int field;
    } methods[] = {{"get", 2},     {"put", 3},  {"post", 4}, {"delete", 5},
                   {"options", 6}, {"head", 7}, {"patch", 8}};
    kapi_buf m, named, item;
    kapi_buf_init(&m);
    kapi_buf_init(&named);
    kapi_buf_init(&item);
    const char *path;
    json_t *pi;
    json_object_foreach((json_t *)paths, path, pi)
    {
        for (size_t i = 0; i < KAPI_ARRAY_LEN(methods); i++)
            put_operation(&item, methods[i].field, json_object_get(pi, methods[i].method));
        put_parameters(&item, 9, json_object_get(pi, "parameters"));
        put_bytes(&named, 1, path, strlen(path));
        put_msg(&named, 2, &item);
        put_msg(&m, 2, &named);
    }
    put_msg(b, field, &m);
    kapi_buf_dispose(&m);
    kapi_buf_dispose(&named);
    kapi_buf_dispose(&item);
}

char *kapi_api__openapi_v2_proto(const json_t *doc, size_t *len)
{
    kapi_buf b, m;
    kapi_buf_init(&b);
    kapi_buf_init(&m);
    put_str(&b, 1, json_object_get(doc, "swagger"));
    json_t *info = json_object_get(doc, "info");
    put_str(&m, 1, json_object_get(info, "title"));
    put_str(&m, 2, json_object_get(info, "version"));
    put_msg(&b, 2, &m);
    put_paths(&b, 8, json_object_get(doc, "paths"));
    put_named_schemas(&b, 9, json_object_get(doc, "definitions"));
    kapi_buf_dispose(&m);
    return kapi_buf_detach(&b, len);
}
