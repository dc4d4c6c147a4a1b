/* codec/gofmt: Go's printing of decoded JSON values (go.h, json.h): fmt's %v and %s, as
 * messages quote a patch or one of its maps; field.Error's value and %#v, as validation
 * messages show a custom resource's values; encoding/json's Marshal and kind names. */
#include "codec/go.h"
#include "codec/json.h"

#include "codec/codec_int.h"

#include <stdlib.h>
#include <string.h>

static int member_cmp(const void *a, const void *b)
{
    const kapi_json_member *x = a, *y = b;
    int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

kapi_json_member *kapi_json_sorted_members(const json_t *obj, size_t *n)
{
    kapi_json_member *m = kapi_xmalloc((json_object_size(obj) + 1) * sizeof(*m));
    const char *key;
    size_t len;
    json_t *x;
    *n = 0;
    json_object_keylen_foreach((json_t *)obj, key, len, x)
    {
        m[(*n)++] = (kapi_json_member){key, len, x};
    }
    qsort(m, *n, sizeof(*m), member_cmp);
    return m;
}

static void put_value(kapi_buf *b, const json_t *v, char verb, bool nested);

/* map[k1:v1 k2:v2], keys in byte order as fmt sorts string keys. */
static void put_map(kapi_buf *b, const json_t *obj, char verb)
{
    size_t n;
    kapi_json_member *m = kapi_json_sorted_members(obj, &n);
    kapi_buf_puts(b, "map[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            kapi_buf_putc(b, ' ');
        kapi_buf_put(b, m[i].key, m[i].len);
        kapi_buf_putc(b, ':');
        put_value(b, m[i].value, verb, true);
    }
    kapi_buf_putc(b, ']');
    free(m);
}

/* [a b c]: a slice's items separated by spaces. */
static void put_list(kapi_buf *b, const json_t *list, char verb)
{
    kapi_buf_putc(b, '[');
    for (size_t i = 0; i < json_array_size(list); i++) {
        if (i)
            kapi_buf_putc(b, ' ');
        put_value(b, json_array_get(list, i), verb, true);
    }
    kapi_buf_putc(b, ']');
}

/* Appends a number or a boolean as %v prints it; returns its Go type name. */
static const char *put_scalar(kapi_buf *b, const json_t *v)
{
    char num[40];
    switch (json_typeof(v)) {
    case JSON_INTEGER:
        kapi_buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return "int64";
    case JSON_REAL:
        kapi_go_format_float(num, json_real_value(v), 64);
        kapi_buf_puts(b, num);
        return "float64";
    default:
        kapi_buf_puts(b, json_is_true(v) ? "true" : "false");
        return "bool";
    }
}

/* A number or a boolean: %v prints the value, %s names the wrong verb, the type and the
 * value. */
static void put_other(kapi_buf *b, const json_t *v, char verb)
{
    kapi_buf s;
    kapi_buf_init(&s);
    const char *type = put_scalar(&s, v);
    if (verb == 'v')
        kapi_buf_put(b, s.ptr, s.len);
    else
        kapi_buf_printf(b, "%%!s(%s=%s)", type, s.ptr);
    kapi_buf_dispose(&s);
}

static void put_value(kapi_buf *b, const json_t *v, char verb, bool nested)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        put_map(b, v, verb);
        break;
    case JSON_ARRAY:
        put_list(b, v, verb);
        break;
    case JSON_STRING:
        kapi_buf_put(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_NULL:
        kapi_buf_puts(b, nested || verb == 'v' ? "<nil>" : "%!s(<nil>)");
        break;
    default:
        put_other(b, v, verb);
    }
}

void kapi_go_put_fmt(kapi_buf *b, const json_t *v, char verb)
{
    put_value(b, v, verb, false);
}

/* ---- field.Error's values, %#v, encoding/json ---- */

void kapi_go_value(kapi_buf *b, const json_t *v)
{
    char num[40];
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_OBJECT:
    case JSON_ARRAY:
        kapi_go_sharp_v(b, v, KAPI_GO_JSON_MAP);
        break;
    case JSON_STRING:
        kapi_go_quote(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        kapi_buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        kapi_go_format_float(num, json_real_value(v), 64);
        kapi_buf_puts(b, num);
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        kapi_buf_puts(b, json_is_true(v) ? "true" : "false");
        break;
    case JSON_NULL:
        kapi_buf_puts(b, "\"null\"");
        break;
    }
}

static void sharp_v(kapi_buf *b, const json_t *v, kapi_go_map map, bool top)
{
    size_t n;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        kapi_json_member *m = kapi_json_sorted_members(v, &n);
        kapi_buf_puts(b, map == KAPI_GO_YAML_MAP ? "map[interface {}]interface {}{"
                                                 : "map[string]interface {}{");
        for (size_t i = 0; i < n; i++) {
            if (i)
                kapi_buf_puts(b, ", ");
            kapi_go_quote(b, m[i].key, m[i].len);
            kapi_buf_putc(b, ':');
            sharp_v(b, m[i].value, map, false);
        }
        kapi_buf_putc(b, '}');
        free(m);
        break;
    }
    case JSON_ARRAY:
        kapi_buf_puts(b, "[]interface {}{");
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                kapi_buf_puts(b, ", ");
            sharp_v(b, json_array_get(v, i), map, false);
        }
        kapi_buf_putc(b, '}');
        break;
    case JSON_NULL:
        kapi_buf_puts(b, top ? "<nil>" : "interface {}(nil)");
        break;
    default:
        kapi_go_value(b, v);
    }
}

void kapi_go_sharp_v(kapi_buf *b, const json_t *v, kapi_go_map map)
{
    sharp_v(b, v, map, true);
}

void kapi_go_json(kapi_buf *b, const json_t *v)
{
    size_t n;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        kapi_json_member *m = kapi_json_sorted_members(v, &n);
        kapi_buf_putc(b, '{');
        for (size_t i = 0; i < n; i++) {
            if (i)
                kapi_buf_putc(b, ',');
            kapi_json_put_string(b, m[i].key, m[i].len);
            kapi_buf_putc(b, ':');
            kapi_go_json(b, m[i].value);
        }
        kapi_buf_putc(b, '}');
        free(m);
        break;
    }
    case JSON_ARRAY:
        kapi_buf_putc(b, '[');
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                kapi_buf_putc(b, ',');
            kapi_go_json(b, json_array_get(v, i));
        }
        kapi_buf_putc(b, ']');
        break;
    default:
        kapi_json_encode(b, v); /* scalars: kapi writes them as encoding/json does */
    }
}

const char *kapi_go_type_name(const json_t *v)
{
    static const char *const names[] = {
        [JSON_OBJECT] = "map[string]interface {}",
        [JSON_ARRAY] = "[]interface {}",
        [JSON_STRING] = "string",
        [JSON_INTEGER] = "int64",
        [JSON_REAL] = "float64",
        [JSON_TRUE] = "bool",
        [JSON_FALSE] = "bool",
        [JSON_NULL] = "<nil>",
    };
    return v ? names[json_typeof(v)] : "<nil>";
}

const char *kapi_go_json_kind(const json_t *v)
{
    static const char *const kinds[] = {
        [JSON_OBJECT] = "object",  [JSON_ARRAY] = "array", [JSON_STRING] = "string",
        [JSON_INTEGER] = "number", [JSON_REAL] = "number", [JSON_TRUE] = "bool",
        [JSON_FALSE] = "bool",     [JSON_NULL] = "null",
    };
    return v ? kinds[json_typeof(v)] : "null";
}
