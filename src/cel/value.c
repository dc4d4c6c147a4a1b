/*
 * cel/value: CEL values as cel-spec defines their equality and ordering: numbers of the
 * three kinds compare by value (1 == 1u == 1.0; NaN equals nothing; an int and a double
 * as doubles, as cel-go compares them),
 * lists and maps element by element, values of different kinds are unequal (not an
 * error); map keys are found the same way (a double key finds an int or uint key of the
 * same value).
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "cel/cel_int.h"

static const char *const type_names[] = {
    [KAPI_CEL_T_NULL] = "null_type",
    [KAPI_CEL_T_BOOL] = "bool",
    [KAPI_CEL_T_INT] = "int",
    [KAPI_CEL_T_UINT] = "uint",
    [KAPI_CEL_T_DOUBLE] = "double",
    [KAPI_CEL_T_STRING] = "string",
    [KAPI_CEL_T_BYTES] = "bytes",
    [KAPI_CEL_T_LIST] = "list",
    [KAPI_CEL_T_MAP] = "map",
    [KAPI_CEL_T_TYPE] = "type",
    [KAPI_CEL_T_DURATION] = "google.protobuf.Duration",
    [KAPI_CEL_T_URL] = "kubernetes.URL",
    [KAPI_CEL_T_TIMESTAMP] = "google.protobuf.Timestamp",
    [KAPI_CEL_T_ERROR] = "error",
};

const char *kapi_cel_type_name(const kapi_cel_value *v)
{
    return type_names[v->t];
}

bool kapi_cel__is_number(const kapi_cel_value *v)
{
    return v->t == KAPI_CEL_T_INT || v->t == KAPI_CEL_T_UINT || v->t == KAPI_CEL_T_DOUBLE;
}

static int cmp_doubles(double a, double b)
{
    if (isnan(a) || isnan(b))
        return 2;
    return a < b ? -1 : a > b;
}

/* An int against a double as cel-go compares them: outside the int range the double
 * decides, inside the int is converted to a double (so 2^63 - 1 equals 2^63.0). */
static int cmp_int_double(int64_t i, double d)
{
    if (d < -9223372036854775808.0)
        return 1;
    if (d > 9223372036854775808.0)
        return -1;
    return cmp_doubles((double)i, d);
}

static int cmp_uint_double(uint64_t u, double d)
{
    if (d < 0)
        return 1;
    if (d > 18446744073709551616.0)
        return -1;
    return cmp_doubles((double)u, d);
}

int kapi_cel__cmp_numbers(const kapi_cel_value *a, const kapi_cel_value *b)
{
    switch (a->t * 16 + b->t) {
    case KAPI_CEL_T_INT * 16 + KAPI_CEL_T_INT:
        return a->u.i < b->u.i ? -1 : a->u.i > b->u.i;
    case KAPI_CEL_T_UINT * 16 + KAPI_CEL_T_UINT:
        return a->u.u < b->u.u ? -1 : a->u.u > b->u.u;
    case KAPI_CEL_T_DOUBLE * 16 + KAPI_CEL_T_DOUBLE:
        return cmp_doubles(a->u.d, b->u.d);
    case KAPI_CEL_T_INT * 16 + KAPI_CEL_T_UINT:
        return a->u.i < 0 || (uint64_t)a->u.i < b->u.u ? -1 : (uint64_t)a->u.i > b->u.u;
    case KAPI_CEL_T_UINT * 16 + KAPI_CEL_T_INT:
        return b->u.i < 0 || (uint64_t)b->u.i < a->u.u ? 1 : -((uint64_t)b->u.i > a->u.u);
    case KAPI_CEL_T_INT * 16 + KAPI_CEL_T_DOUBLE:
        return cmp_int_double(a->u.i, b->u.d);
    case KAPI_CEL_T_DOUBLE * 16 + KAPI_CEL_T_INT: {
        int c = cmp_int_double(b->u.i, a->u.d);
        return c == 2 ? 2 : -c;
    }
    case KAPI_CEL_T_UINT * 16 + KAPI_CEL_T_DOUBLE:
        return cmp_uint_double(a->u.u, b->u.d);
    case KAPI_CEL_T_DOUBLE * 16 + KAPI_CEL_T_UINT: {
        int c = cmp_uint_double(b->u.u, a->u.d);
        return c == 2 ? 2 : -c;
    }
    default:
        return 2;
    }
}

static int cmp_bytes(kapi_str a, kapi_str b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.ptr, b.ptr, n) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return a.len < b.len ? -1 : a.len > b.len;
}

int kapi_cel__cmp(const kapi_cel_value *a, const kapi_cel_value *b)
{
    if (kapi_cel__is_number(a) && kapi_cel__is_number(b))
        return kapi_cel__cmp_numbers(a, b);
    if (a->t != b->t)
        return 2;
    switch (a->t) {
    case KAPI_CEL_T_BOOL:
        return (int)a->u.b - (int)b->u.b;
    case KAPI_CEL_T_DURATION:
        return a->u.i < b->u.i ? -1 : a->u.i > b->u.i;
    case KAPI_CEL_T_TIMESTAMP: /* the instants, whatever their zones */
        if (a->u.ts.secs != b->u.ts.secs)
            return a->u.ts.secs < b->u.ts.secs ? -1 : 1;
        return a->u.ts.nsec < b->u.ts.nsec ? -1 : a->u.ts.nsec > b->u.ts.nsec;
    case KAPI_CEL_T_STRING: /* UTF-8's byte order is the code points' order */
    case KAPI_CEL_T_BYTES:
        return cmp_bytes(a->u.s, b->u.s);
    default:
        return 2;
    }
}

const kapi_cel_value *kapi_cel__map_find(const kapi_cel_value *m, const kapi_cel_value *key)
{
    for (size_t i = 0; i < m->u.map.n; i++)
        if (kapi_cel_equal(&m->u.map.keys[i], key))
            return &m->u.map.values[i];
    return NULL;
}

/* Two lists of one size, one of them a list-type set or map: every item of a is in b
 * (their items are unique, so the order alone may differ). */
static bool unordered_equal(const kapi_cel_value *a, const kapi_cel_value *b)
{
    for (size_t i = 0; i < a->u.list.n; i++) {
        size_t j = 0;
        while (j < b->u.list.n && !kapi_cel_equal(&a->u.list.v[i], &b->u.list.v[j]))
            j++;
        if (j == b->u.list.n)
            return false;
    }
    return true;
}

bool kapi_cel_equal(const kapi_cel_value *a, const kapi_cel_value *b)
{
    if (kapi_cel__is_number(a) && kapi_cel__is_number(b))
        return kapi_cel__cmp_numbers(a, b) == 0;
    if (a->t != b->t)
        return false;
    switch (a->t) {
    case KAPI_CEL_T_NULL:
        return true;
    case KAPI_CEL_T_BOOL:
        return a->u.b == b->u.b;
    case KAPI_CEL_T_STRING:
    case KAPI_CEL_T_BYTES:
        return a->u.s.len == b->u.s.len && memcmp(a->u.s.ptr, b->u.s.ptr, a->u.s.len) == 0;
    case KAPI_CEL_T_LIST:
        if (a->u.list.n != b->u.list.n)
            return false;
        if (a->u.list.unordered || b->u.list.unordered)
            return unordered_equal(a, b);
        for (size_t i = 0; i < a->u.list.n; i++)
            if (!kapi_cel_equal(&a->u.list.v[i], &b->u.list.v[i]))
                return false;
        return true;
    case KAPI_CEL_T_MAP:
        if (a->u.map.n != b->u.map.n)
            return false;
        for (size_t i = 0; i < a->u.map.n; i++) {
            const kapi_cel_value *v = kapi_cel__map_find(b, &a->u.map.keys[i]);
            if (!v || !kapi_cel_equal(&a->u.map.values[i], v))
                return false;
        }
        return true;
    case KAPI_CEL_T_TYPE:
        return strcmp(a->u.type, b->u.type) == 0;
    case KAPI_CEL_T_DURATION:
        return a->u.i == b->u.i;
    case KAPI_CEL_T_URL:
        return kapi_str_eq(a->u.url->text, b->u.url->text);
    case KAPI_CEL_T_TIMESTAMP:
        return kapi_cel__cmp(a, b) == 0;
    default:
        return false;
    }
}

kapi_cel_value kapi_cel_from_json(kapi_arena *a, const json_t *v)
{
    kapi_cel_value out = {.t = KAPI_CEL_T_NULL};
    switch (json_typeof(v)) {
    case JSON_TRUE:
    case JSON_FALSE:
        out.t = KAPI_CEL_T_BOOL;
        out.u.b = json_is_true(v);
        break;
    case JSON_INTEGER:
        out.t = KAPI_CEL_T_INT;
        out.u.i = json_integer_value(v);
        break;
    case JSON_REAL:
        out.t = KAPI_CEL_T_DOUBLE;
        out.u.d = json_real_value(v);
        break;
    case JSON_STRING:
        out.t = KAPI_CEL_T_STRING;
        out.u.s = (kapi_str){kapi_arena_strndup(a, json_string_value(v), json_string_length(v)),
                             json_string_length(v)};
        break;
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        kapi_cel_value *items = kapi_arena_alloc(a, (n ? n : 1) * sizeof(*items));
        for (size_t i = 0; i < n; i++)
            items[i] = kapi_cel_from_json(a, json_array_get(v, i));
        out.t = KAPI_CEL_T_LIST;
        out.u.list.v = items;
        out.u.list.n = n;
        break;
    }
    case JSON_OBJECT: {
        size_t n = json_object_size(v), i = 0;
        kapi_cel_value *keys = kapi_arena_alloc(a, (n ? n : 1) * sizeof(*keys));
        kapi_cel_value *values = kapi_arena_alloc(a, (n ? n : 1) * sizeof(*values));
        const char *k;
        json_t *m;
        json_object_foreach((json_t *)v, k, m)
        {
            keys[i] = (kapi_cel_value){.t = KAPI_CEL_T_STRING,
                                       .u.s = {kapi_arena_strdup(a, k), strlen(k)}};
            values[i++] = kapi_cel_from_json(a, m);
        }
        out.t = KAPI_CEL_T_MAP;
        out.u.map.keys = keys;
        out.u.map.values = values;
        out.u.map.n = n;
        break;
    }
    default:
        break;
    }
    return out;
}

kapi_cel_value kapi_cel__string(kapi_arena *a, kapi_cel_type t, const char *p, size_t n)
{
    return (kapi_cel_value){.t = t, .u.s = {kapi_arena_strndup(a, p, n), n}};
}

kapi_cel_value kapi_cel__error(kapi_arena *a, const char *fmt, ...)
{
    kapi_buf b;
    va_list ap;
    kapi_buf_init(&b);
    va_start(ap, fmt);
    kapi_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    kapi_cel_value e = {.t = KAPI_CEL_T_ERROR, .u.error = kapi_arena_strndup(a, b.ptr, b.len)};
    kapi_buf_dispose(&b);
    return e;
}
