/* codec/protobuf: the protobuf wire format, and its transcoding to and from JSON by message
 * tables. */
#include "codec/protobuf.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/json.h"

#define MAX_DEPTH 64

typedef kapi_pb_reader reader;
typedef kapi_pb_wire field;

bool kapi_pb_varint(kapi_pb_reader *r, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && r->p < r->end; shift += 7) {
        unsigned char b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

bool kapi_pb_next_field(kapi_pb_reader *r, kapi_pb_wire *f)
{
    uint64_t key;
    if (!kapi_pb_varint(r, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX)
        return false;
    f->num = (uint32_t)(key >> 3);
    f->wire = (uint32_t)(key & 7);
    switch (f->wire) {
    case 0:
        return kapi_pb_varint(r, &f->u);
    case 1:
    case 5: {
        size_t w = f->wire == 1 ? 8 : 4;
        if ((size_t)(r->end - r->p) < w)
            return false;
        f->u = 0;
        memcpy(&f->u, r->p, w);
        r->p += w;
        return true;
    }
    case 2:
        if (!kapi_pb_varint(r, &f->u) || f->u > (uint64_t)(r->end - r->p))
            return false;
        f->bytes = r->p;
        f->len = (size_t)f->u;
        r->p += f->len;
        return true;
    default:
        return false;
    }
}

bool kapi_pb_envelope(const char *p, size_t n, kapi_str *api_version, kapi_str *kind, kapi_str *raw,
                      char **err_out)
{
    *api_version = *kind = *raw = KAPI_STR("");
    if (n < 4 || memcmp(p, "k8s\0", 4) != 0) {
        *err_out = kapi_xstrdup("provided data does not appear to be a protobuf message, "
                                "expected prefix [107 56 115 0]");
        return false;
    }
    reader r = {(const unsigned char *)p + 4, (const unsigned char *)p + n};
    field f;
    while (r.p < r.end) {
        if (!kapi_pb_next_field(&r, &f) || (f.num <= 2 && f.wire != 2))
            goto bad;
        if (f.num == 2) {
            *raw = (kapi_str){(const char *)f.bytes, f.len};
        } else if (f.num == 1) {
            reader tm = {f.bytes, f.bytes + f.len};
            field g;
            while (tm.p < tm.end) {
                if (!kapi_pb_next_field(&tm, &g) || g.wire != 2)
                    goto bad;
                if (g.num == 1)
                    *api_version = (kapi_str){(const char *)g.bytes, g.len};
                else if (g.num == 2)
                    *kind = (kapi_str){(const char *)g.bytes, g.len};
            }
        }
    }
    return true;
bad:
    *err_out = kapi_xstrdup("unable to decode the protobuf envelope");
    return false;
}

/* The instants of 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the years Go's
 * Time.MarshalJSON writes. */
#define TIME_MIN_SECONDS INT64_C(-62167219200)
#define TIME_MAX_SECONDS INT64_C(253402300799)

/* A Time or MicroTime message (seconds = 1, nanos = 2) as Go's time.Unix reads it (nanos
 * outside a second carry into seconds) and metav1 writes it in JSON: RFC 3339 in UTC,
 * with microseconds for MicroTime. JSON null for the zero time (an empty message; any
 * Timestamp, even 0, is an instant); NULL for a malformed message, and with *err set for a
 * year JSON cannot hold. */
static json_t *time_value(const field *f, bool micro, char **err)
{
    reader r = {f->bytes, f->bytes + f->len};
    field g;
    int64_t secs = 0, nanos = 0;
    if (!f->len)
        return json_null();
    while (r.p < r.end) {
        if (!kapi_pb_next_field(&r, &g) || g.wire != 0)
            return NULL;
        if (g.num == 1)
            secs = (int64_t)g.u;
        else if (g.num == 2)
            nanos = (int32_t)g.u;
    }

    secs += nanos / 1000000000;
    nanos %= 1000000000;
    if (nanos < 0)
        secs--, nanos += 1000000000;
    if (secs < TIME_MIN_SECONDS || secs > TIME_MAX_SECONDS) {
        *err = kapi_xprintf("field %u: Time.MarshalJSON: year outside of range [0,9999]", f->num);
        return NULL;
    }
    char buf[40];
    time_t t = (time_t)secs;
    struct tm tm;
    gmtime_r(&t, &tm);
    int n = snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (micro)
        snprintf(buf + n, sizeof(buf) - (size_t)n, ".%06dZ", (int)(nanos / 1000));
    else
        snprintf(buf + n, sizeof(buf) - (size_t)n, "Z");
    return json_string(buf);
}

static json_t *value(const kapi_pb_field *d, const field *f, int depth, char **err);

/* The JSON of a map value that is not on the wire: its kind's zero. */
static json_t *zero_of(const kapi_pb_field *d)
{
    switch (d->kind) {
    case KAPI_PB_STRING:
    case KAPI_PB_BYTES:
    case KAPI_PB_QUANTITY:
        return json_string("");
    case KAPI_PB_BOOL:
        return json_false();
    case KAPI_PB_INT32:
    case KAPI_PB_INT64:
    case KAPI_PB_INT_OR_STRING:
        return json_integer(0);
    case KAPI_PB_DOUBLE:
        return json_real(0);
    case KAPI_PB_MESSAGE:
    case KAPI_PB_FIELDS_V1:
        return json_object();
    case KAPI_PB_LIST: /* Go's decoder starts the value as an empty, non-nil slice */
        return json_array();
    default:
        return json_null();
    }
}

/* A map entry (key = 1, value = 2) into obj; false when malformed (*err may be set). */
static bool map_entry(json_t *obj, const kapi_pb_field *d, const field *f, int depth, char **err)
{
    reader r = {f->bytes, f->bytes + f->len};
    field g;
    char *key = NULL;
    json_t *val = NULL;
    bool ok = true;
    while (ok && r.p < r.end) {
        if (!kapi_pb_next_field(&r, &g)) {
            ok = false;
        } else if (g.num == 1) {
            ok = g.wire == 2;
            free(key);
            key = ok ? kapi_xstrndup((const char *)g.bytes, g.len) : NULL;
        } else if (g.num == 2) {
            json_decref(val);
            val = value(d->value, &g, depth, err);
            ok = val != NULL;
        }
    }
    if (ok)
        json_object_set_new(obj, key ? key : "", val ? val : zero_of(d->value));
    else
        json_decref(val);
    free(key);
    return ok;
}

/* The name of a field's kind in messages. */
static const char *kind_name(const kapi_pb_field *d)
{
    static const char *const names[] = {
        [KAPI_PB_STRING] = "string",
        [KAPI_PB_BYTES] = "bytes",
        [KAPI_PB_BOOL] = "bool",
        [KAPI_PB_INT32] = "int32",
        [KAPI_PB_INT64] = "int64",
        [KAPI_PB_DOUBLE] = "double",
        [KAPI_PB_MAP] = "map",
        [KAPI_PB_LIST] = "list",
        [KAPI_PB_TIME] = "Time",
        [KAPI_PB_MICROTIME] = "MicroTime",
        [KAPI_PB_FIELDS_V1] = "fieldsV1",
        [KAPI_PB_INT_OR_STRING] = "IntOrString",
        [KAPI_PB_QUANTITY] = "Quantity",
        [KAPI_PB_RAW] = "RawExtension",
        [KAPI_PB_SCHEMA_OR_ARRAY] = "JSONSchemaPropsOrArray",
        [KAPI_PB_SCHEMA_OR_BOOL] = "JSONSchemaPropsOrBool",
        [KAPI_PB_SCHEMA_OR_STRINGS] = "JSONSchemaPropsOrStringArray",
    };
    return d->kind == KAPI_PB_MESSAGE ? d->message->name : names[d->kind];
}

/* A FieldsV1 message: its raw JSON is field 1, an object (a field set); NULL when it is
 * anything else. */
static json_t *fields_v1(const field *f)
{
    reader r = {f->bytes, f->bytes + f->len};
    field g;
    while (r.p < r.end && kapi_pb_next_field(&r, &g))
        if (g.num == 1 && g.wire == 2) {
            json_t *v = kapi_json_parse((const char *)g.bytes, g.len, NULL);
            if (!json_is_object(v)) {
                json_decref(v);
                return NULL;
            }
            return v;
        }
    return json_object();
}

/* A scalar read from a varint or a fixed64. */
static json_t *number_value(kapi_pb_kind kind, const field *f)
{
    double d;
    switch (kind) {
    case KAPI_PB_BOOL:
        return json_boolean(f->u != 0);
    case KAPI_PB_INT32:
        return json_integer((int32_t)f->u);
    case KAPI_PB_INT64:
        return json_integer((json_int_t)f->u);
    default:
        /* As Go writes a float64 in JSON and kapi would read it back: a whole number below
         * 1e21 without a point or exponent, so an integer (within int64). */
        memcpy(&d, &f->u, sizeof(d));
        if (d > -9.2e18 && d < 9.2e18 && d == (double)(json_int_t)d)
            return json_integer((json_int_t)d);
        return json_real(d);
    }
}

/* An IntOrString: type = 1 (0 int, 1 string), intVal = 2, strVal = 3. */
static json_t *int_or_string(const field *f)
{
    reader r = {f->bytes, f->bytes + f->len};
    field g;
    uint64_t type = 0, ival = 0;
    const unsigned char *str = NULL;
    size_t len = 0;
    while (r.p < r.end) {
        if (!kapi_pb_next_field(&r, &g) || (g.num <= 2 && g.wire != 0) ||
            (g.num == 3 && g.wire != 2))
            return NULL;
        if (g.num == 1)
            type = g.u;
        else if (g.num == 2)
            ival = g.u;
        else if (g.num == 3)
            str = g.bytes, len = g.len;
    }
    if (type == 1)
        return json_stringn(str ? (const char *)str : "", len);
    return json_integer((int32_t)ival);
}

/* The bytes of field 1 of a one-field message (Quantity's string, RawExtension's and
 * JSON's raw); false when malformed. *set: it was there. */
static bool first_bytes(const field *f, const unsigned char **p, size_t *n, bool *set)
{
    reader r = {f->bytes, f->bytes + f->len};
    field g;
    *p = (const unsigned char *)"";
    *n = 0;
    *set = false;
    while (r.p < r.end) {
        if (!kapi_pb_next_field(&r, &g))
            return false;
        if (g.num == 1) {
            if (g.wire != 2)
                return false;
            *p = g.bytes, *n = g.len, *set = true;
        }
    }
    return true;
}

/* A RawExtension or JSON: its raw bytes are JSON text; none is JSON null. */
static json_t *raw_value(const field *f, char **err)
{
    const unsigned char *p;
    size_t n;
    bool set;
    if (!first_bytes(f, &p, &n, &set))
        return NULL;
    if (!set || !n)
        return json_null();
    json_t *v = kapi_json_parse((const char *)p, n, NULL);
    if (!v && !*err)
        *err = kapi_xprintf("field %u: the raw bytes are not JSON", f->num);
    return v;
}

static json_t *message(const kapi_pb_message *m, const unsigned char *p, size_t n, int depth,
                       char **err);

/* A JSONSchemaPropsOr* wrapper as Go writes it in JSON: the schema (field 1, or 2 for
 * OrBool), else the list (field 2: schemas for OrArray, names for OrStringArray), else
 * OrBool's allows (field 1) or null. */
static json_t *schema_or(const kapi_pb_field *d, const field *f, int depth, char **err)
{
    reader r = {f->bytes, f->bytes + f->len};
    field g;
    uint32_t schema_num = d->kind == KAPI_PB_SCHEMA_OR_BOOL ? 2 : 1;
    json_t *schema = NULL, *list = NULL;
    bool allows = false;
    while (r.p < r.end && !*err) {
        if (!kapi_pb_next_field(&r, &g)) {
            *err = kapi_xprintf("malformed protobuf in %s", kind_name(d));
            break;
        }
        if (g.num == schema_num && g.wire == 2) {
            json_decref(schema);
            schema = message(d->message, g.bytes, g.len, depth + 1, err);
        } else if (d->kind == KAPI_PB_SCHEMA_OR_BOOL && g.num == 1 && g.wire == 0) {
            allows = g.u != 0;
        } else if (d->kind != KAPI_PB_SCHEMA_OR_BOOL && g.num == 2 && g.wire == 2) {
            if (!list)
                list = json_array();
            json_array_append_new(list, d->kind == KAPI_PB_SCHEMA_OR_ARRAY
                                            ? message(d->message, g.bytes, g.len, depth + 1, err)
                                            : json_stringn((const char *)g.bytes, g.len));
        }
    }
    if (*err) {
        json_decref(schema);
        json_decref(list);
        return NULL;
    }
    if (list && json_array_size(list)) {
        json_decref(schema);
        return list;
    }
    json_decref(list);
    if (schema)
        return schema;
    return d->kind == KAPI_PB_SCHEMA_OR_BOOL ? json_boolean(allows) : json_null();
}

/* A KAPI_PB_LIST message: the values of its field 1, in order, as a JSON array (empty
 * when there are none); NULL when malformed (*err set). */
static json_t *list_value(const kapi_pb_field *d, const field *f, int depth, char **err)
{
    reader r = {f->bytes, f->bytes + f->len};
    field g;
    json_t *arr = json_array();
    while (r.p < r.end && !*err) {
        if (!kapi_pb_next_field(&r, &g)) {
            *err = kapi_xprintf("field %u: malformed list", f->num);
        } else if (g.num == 1) {
            json_t *v = value(d->value, &g, depth, err);
            if (v)
                json_array_append_new(arr, v);
        }
    }
    if (*err) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

/* A length-delimited value. */
static json_t *bytes_value(const kapi_pb_field *d, const field *f, int depth, char **err)
{
    const unsigned char *p;
    size_t n;
    bool set;
    switch (d->kind) {
    case KAPI_PB_STRING:
        return json_stringn((const char *)f->bytes, f->len);
    case KAPI_PB_BYTES: {
        char *b = kapi_base64_encode(f->bytes, f->len, KAPI_BASE64_STD);
        json_t *v = json_string(b);
        free(b);
        return v;
    }
    case KAPI_PB_TIME:
    case KAPI_PB_MICROTIME:
        return time_value(f, d->kind == KAPI_PB_MICROTIME, err);
    case KAPI_PB_FIELDS_V1:
        return fields_v1(f);
    case KAPI_PB_INT_OR_STRING:
        return int_or_string(f);
    case KAPI_PB_QUANTITY:
        return first_bytes(f, &p, &n, &set) ? json_stringn((const char *)p, n) : NULL;
    case KAPI_PB_RAW:
        return raw_value(f, err);
    case KAPI_PB_LIST:
        return list_value(d, f, depth, err);
    case KAPI_PB_SCHEMA_OR_ARRAY:
    case KAPI_PB_SCHEMA_OR_BOOL:
    case KAPI_PB_SCHEMA_OR_STRINGS:
        return schema_or(d, f, depth, err);
    default:
        return message(d->message, f->bytes, f->len, depth + 1, err);
    }
}

/* The wire type each kind takes (map entries are read by the caller). */
static const uint32_t wire_of[] = {
    [KAPI_PB_STRING] = 2,
    [KAPI_PB_BYTES] = 2,
    [KAPI_PB_BOOL] = 0,
    [KAPI_PB_INT32] = 0,
    [KAPI_PB_INT64] = 0,
    [KAPI_PB_DOUBLE] = 1,
    [KAPI_PB_MAP] = 2,
    [KAPI_PB_LIST] = 2,
    [KAPI_PB_TIME] = 2,
    [KAPI_PB_MICROTIME] = 2,
    [KAPI_PB_FIELDS_V1] = 2,
    [KAPI_PB_INT_OR_STRING] = 2,
    [KAPI_PB_QUANTITY] = 2,
    [KAPI_PB_RAW] = 2,
    [KAPI_PB_SCHEMA_OR_ARRAY] = 2,
    [KAPI_PB_SCHEMA_OR_BOOL] = 2,
    [KAPI_PB_SCHEMA_OR_STRINGS] = 2,
    [KAPI_PB_MESSAGE] = 2,
};

/* The JSON value of one field by its declared kind; NULL when malformed (*err set). */
static json_t *value(const kapi_pb_field *d, const field *f, int depth, char **err)
{
    json_t *v = NULL;
    if (f->wire == wire_of[d->kind])
        v = f->wire == 2 ? bytes_value(d, f, depth, err) : number_value(d->kind, f);
    if (!v && !*err)
        *err = f->wire == wire_of[d->kind]
                   ? kapi_xprintf("field %u: malformed %s", f->num, kind_name(d))
                   : kapi_xprintf("field %u: wire type %u does not fit %s", f->num, f->wire,
                                  kind_name(d));
    return v;
}

static int field_cmp(const void *key, const void *elem)
{
    uint32_t num = *(const uint32_t *)key, at = ((const kapi_pb_field *)elem)->number;
    return num < at ? -1 : num > at;
}

/* A zero that Go's JSON encoding leaves out of an omitempty value field. */
static bool is_zero(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_FALSE:
    case JSON_NULL:
        return true;
    case JSON_INTEGER:
        return json_integer_value(v) == 0;
    case JSON_REAL:
        return json_real_value(v) == 0;
    case JSON_STRING:
        return json_string_length(v) == 0;
    default:
        return false;
    }
}

/* Puts v (a new reference) in the member d names, appending when d is repeated. */
static void put_field(json_t *obj, const kapi_pb_field *d, json_t *v)
{
    if (!d->repeated) {
        if (d->omitempty && is_zero(v))
            json_decref(v);
        else
            json_object_set_new(obj, d->json, v);
        return;
    }
    json_t *arr = json_object_get(obj, d->json);
    if (!json_is_array(arr)) {
        arr = json_array();
        json_object_set_new(obj, d->json, arr);
    }
    json_array_append_new(arr, v);
}

/* A packed repeated scalar (wire type 2 for a varint or fixed64 kind), as Go's decoders
 * also accept it. */
static bool packed(json_t *obj, const kapi_pb_field *d, const field *f)
{
    reader r = {f->bytes, f->bytes + f->len};
    while (r.p < r.end) {
        field g = {.num = f->num, .wire = wire_of[d->kind]};
        if (g.wire == 1) {
            if (r.end - r.p < 8)
                return false;
            memcpy(&g.u, r.p, 8);
            r.p += 8;
        } else if (!kapi_pb_varint(&r, &g.u)) {
            return false;
        }
        put_field(obj, d, number_value(d->kind, &g));
    }
    return true;
}

static json_t *message(const kapi_pb_message *m, const unsigned char *p, size_t n, int depth,
                       char **err)
{
    if (depth > MAX_DEPTH) {
        *err = kapi_xprintf("no protobuf description of %s", m->name);
        return NULL;
    }
    json_t *obj = json_object();
    reader r = {p, p + n};
    field f;
    while (r.p < r.end && !*err) {
        if (!kapi_pb_next_field(&r, &f)) {
            *err = kapi_xprintf("malformed protobuf in %s", m->name);
            break;
        }
        const kapi_pb_field *d =
            bsearch(&f.num, m->fields, m->nfields, sizeof(*m->fields), field_cmp);
        if (!d)
            continue; /* unknown fields are dropped, as Go's decoder drops them */
        if (d->kind == KAPI_PB_MAP) {
            if ((f.wire != 2 ||
                 !map_entry(kapi_json_object_ensure(obj, d->json), d, &f, depth, err)) &&
                !*err)
                *err = kapi_xprintf("malformed map entry in %s.%s", m->name, d->json);
            continue;
        }
        if (d->repeated && f.wire == 2 && wire_of[d->kind] != 2) {
            if (!packed(obj, d, &f))
                *err = kapi_xprintf("malformed packed field %u in %s", f.num, m->name);
            continue;
        }
        json_t *v = value(d, &f, depth, err);
        if (v && d->embedded)
            json_object_update(obj, v), json_decref(v);
        else if (v)
            put_field(obj, d, v);
    }
    if (*err) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

json_t *kapi_pb_to_json(const kapi_pb_message *m, const char *p, size_t n, char **err_out)
{
    *err_out = NULL;
    return message(m, (const unsigned char *)p, n, 0, err_out);
}

/* ---- writing ---- */

typedef struct writer {
    kapi_buf *out;
    char *err;
} writer;

void kapi_pb_put_varint(kapi_buf *b, uint64_t v)
{
    char tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (char)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (char)v;
    kapi_buf_put(b, tmp, n);
}

void kapi_pb_put_tag(kapi_buf *b, uint32_t num, uint32_t wire)
{
    kapi_pb_put_varint(b, (uint64_t)num << 3 | wire);
}

void kapi_pb_put_bytes(kapi_buf *b, uint32_t num, const void *p, size_t n)
{
    kapi_pb_put_tag(b, num, 2);
    kapi_pb_put_varint(b, n);
    kapi_buf_put(b, p, n);
}

void kapi_pb_close_delimited(kapi_buf *b, uint32_t num, size_t start)
{
    size_t n = b->len - start;
    char head[16];
    size_t h = 0;
    uint64_t key = (uint64_t)num << 3 | 2;
    for (uint64_t v = key;; v >>= 7) {
        head[h++] = (char)(v >= 0x80 ? (v & 0x7f) | 0x80 : v);
        if (v < 0x80)
            break;
    }
    for (uint64_t v = n;; v >>= 7) {
        head[h++] = (char)(v >= 0x80 ? (v & 0x7f) | 0x80 : v);
        if (v < 0x80)
            break;
    }
    kapi_buf_grow(b, h);
    memmove(b->ptr + start + h, b->ptr + start, n);
    memcpy(b->ptr + start, head, h);
    b->len += h;
    b->ptr[b->len] = '\0';
}

static bool fail(writer *w, const kapi_pb_field *d, const char *what)
{
    if (!w->err)
        w->err = kapi_xprintf("%s: %s", d->json ? d->json : "(embedded)", what);
    return false;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* A time as kapi stores it ("2006-01-02T15:04:05Z", with six fractional digits for
 * MicroTime) into seconds and nanoseconds. */
static bool parse_time(const char *s, int64_t *secs, int32_t *nanos)
{
    unsigned y, mo, d, h, mi, sec, frac = 0;
    int n = 0;
    if (sscanf(s, "%4u-%2u-%2uT%2u:%2u:%2u%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19)
        return false;
    const char *p = s + n;
    if (*p == '.') {
        unsigned digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 9)
                frac = frac * 10 + (unsigned)(*p - '0');
        for (; digits < 9; digits++)
            frac *= 10;
    }
    if (strcmp(p, "Z") != 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
        sec > 60)
        return false;
    *secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
    *nanos = (int32_t)(frac / 1000 * 1000);
    return true;
}

static bool write_message(writer *w, const kapi_pb_message *m, const json_t *obj, int depth);

/* The compact JSON text of v, as a RawExtension or JSON holds it. */
static void put_json_bytes(kapi_buf *b, uint32_t num, const json_t *v)
{
    size_t start = b->len;
    kapi_json_encode(b, v);
    kapi_pb_close_delimited(b, num, start);
}

/* Field num holding the message bytes of a JSONSchemaPropsOr* value v. */
static bool write_schema_or(writer *w, const kapi_pb_field *d, const json_t *v, int depth)
{
    kapi_buf *b = w->out;
    bool ok = true;
    if (d->kind == KAPI_PB_SCHEMA_OR_BOOL) {
        /* {allows = 1, schema = 2}: an object is a schema that allows. */
        kapi_pb_put_tag(b, 1, 0);
        kapi_pb_put_varint(b, json_is_object(v) || json_is_true(v));
        if (json_is_object(v)) {
            size_t start = b->len;
            ok = write_message(w, d->message, v, depth + 1);
            kapi_pb_close_delimited(b, 2, start);
        }
        return ok;
    }
    if (json_is_object(v)) {
        size_t start = b->len;
        ok = write_message(w, d->message, v, depth + 1);
        kapi_pb_close_delimited(b, 1, start);
        return ok;
    }
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        if (d->kind == KAPI_PB_SCHEMA_OR_STRINGS) {
            if (!json_is_string(e))
                return fail(w, d, "a list of names holds a non-string");
            kapi_pb_put_bytes(b, 2, json_string_value(e), json_string_length(e));
        } else {
            size_t start = b->len;
            ok = ok && write_message(w, d->message, e, depth + 1);
            kapi_pb_close_delimited(b, 2, start);
        }
    }
    return ok;
}

static bool write_value(writer *w, const kapi_pb_field *d, uint32_t num, const json_t *v,
                        int depth);

/* The body of a KAPI_PB_LIST message: each element of v as field 1 (nothing for null). */
static bool write_list(writer *w, const kapi_pb_field *d, const json_t *v, int depth)
{
    size_t i;
    json_t *e;
    if (v && !json_is_null(v) && !json_is_array(v))
        return fail(w, d, "not a list");
    json_array_foreach(v, i, e) if (!write_value(w, d->value, 1, e, depth)) return false;
    return true;
}

/* The body of a length-delimited value v (NULL: the kind's zero) of kind d, without its
 * tag and length; false when v does not fit. */
static bool write_body(writer *w, const kapi_pb_field *d, const json_t *v, int depth)
{
    kapi_buf *b = w->out;
    int64_t secs;
    int32_t nanos;
    switch (d->kind) {
    case KAPI_PB_STRING:
        if (v && !json_is_string(v))
            return fail(w, d, "not a string");
        if (v)
            kapi_buf_put(b, json_string_value(v), json_string_length(v));
        return true;
    case KAPI_PB_BYTES:
        if (v &&
            (!json_is_string(v) || kapi_base64_decode(json_string_value(v), json_string_length(v),
                                                      KAPI_BASE64_STD, b) < 0))
            return fail(w, d, "not base64");
        return true;
    case KAPI_PB_TIME:
    case KAPI_PB_MICROTIME:
        /* A zero time writes nothing; a time is {seconds = 1, nanos = 2}, both always. */
        if (!v || json_is_null(v))
            return true;
        if (!json_is_string(v) || !parse_time(json_string_value(v), &secs, &nanos))
            return fail(w, d, "not an RFC 3339 time");
        kapi_pb_put_tag(b, 1, 0);
        kapi_pb_put_varint(b, (uint64_t)secs);
        kapi_pb_put_tag(b, 2, 0);
        kapi_pb_put_varint(b, d->kind == KAPI_PB_MICROTIME ? (uint64_t)(int64_t)nanos : 0);
        return true;
    case KAPI_PB_FIELDS_V1:
        if (v)
            put_json_bytes(b, 1, v);
        return true;
    case KAPI_PB_INT_OR_STRING:
        /* {type = 1, intVal = 2, strVal = 3}, all three always. */
        if (v && !json_is_string(v) && !json_is_integer(v))
            return fail(w, d, "neither an integer nor a string");
        kapi_pb_put_tag(b, 1, 0);
        kapi_pb_put_varint(b, json_is_string(v));
        kapi_pb_put_tag(b, 2, 0);
        kapi_pb_put_varint(b, json_is_integer(v) ? (uint64_t)(int64_t)(int32_t)json_integer_value(v)
                                                 : 0);
        kapi_pb_put_bytes(b, 3, json_is_string(v) ? json_string_value(v) : "",
                          json_is_string(v) ? json_string_length(v) : 0);
        return true;
    case KAPI_PB_QUANTITY:
        if (v && !json_is_string(v))
            return fail(w, d, "a quantity that is not a string");
        if (v)
            kapi_pb_put_bytes(b, 1, json_string_value(v), json_string_length(v));
        else
            kapi_pb_put_bytes(b, 1, "0", 1);
        return true;
    case KAPI_PB_RAW:
        if (v && !json_is_null(v))
            put_json_bytes(b, 1, v);
        return true;
    case KAPI_PB_LIST:
        return write_list(w, d, v, depth);
    case KAPI_PB_SCHEMA_OR_ARRAY:
    case KAPI_PB_SCHEMA_OR_BOOL:
    case KAPI_PB_SCHEMA_OR_STRINGS:
        return !v || write_schema_or(w, d, v, depth);
    default:
        return write_message(w, d->message, v, depth + 1);
    }
}

/* One value v (NULL: the kind's zero) of field d with its tag. */
static bool write_value(writer *w, const kapi_pb_field *d, uint32_t num, const json_t *v, int depth)
{
    kapi_buf *b = w->out;
    switch (d->kind) {
    case KAPI_PB_BOOL:
        if (v && !json_is_boolean(v))
            return fail(w, d, "not a boolean");
        kapi_pb_put_tag(b, num, 0);
        kapi_pb_put_varint(b, json_is_true(v));
        return true;
    case KAPI_PB_INT32:
    case KAPI_PB_INT64: {
        if (v && !json_is_integer(v))
            return fail(w, d, "not an integer");
        json_int_t i = v ? json_integer_value(v) : 0;
        kapi_pb_put_tag(b, num, 0);
        kapi_pb_put_varint(b,
                           d->kind == KAPI_PB_INT32 ? (uint64_t)(int64_t)(int32_t)i : (uint64_t)i);
        return true;
    }
    case KAPI_PB_DOUBLE: {
        if (v && !json_is_number(v))
            return fail(w, d, "not a number");
        double x = v ? json_number_value(v) : 0;
        kapi_pb_put_tag(b, num, 1);
        kapi_buf_put(b, &x, sizeof(x));
        return true;
    }
    default: {
        size_t start = b->len;
        bool ok = write_body(w, d, v, depth);
        kapi_pb_close_delimited(b, num, start);
        return ok;
    }
    }
}

/* A map's entries {key = 1, value = 2} in key order, as Go's marshallers sort them. */
static bool write_map(writer *w, const kapi_pb_field *d, const json_t *v, int depth)
{
    if (!json_is_object(v))
        return fail(w, d, "not an object");
    size_t n;
    kapi_json_member *m = kapi_json_sorted_members(v, &n);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        size_t start = w->out->len;
        kapi_pb_put_bytes(w->out, 1, m[i].key, m[i].len);
        ok = write_value(w, d->value, 2, m[i].value, depth);
        kapi_pb_close_delimited(w->out, d->number, start);
    }
    free(m);
    return ok;
}

static bool write_field(writer *w, const kapi_pb_field *d, const json_t *obj, int depth)
{
    if (d->embedded)
        return write_value(w, d, d->number, obj, depth);
    const json_t *v = json_object_get(obj, d->json);
    if (d->kind == KAPI_PB_MAP)
        return !v || json_is_null(v) || write_map(w, d, v, depth);
    if (d->repeated) {
        if (!v || json_is_null(v))
            return true;
        if (!json_is_array(v))
            return fail(w, d, "not a list");
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) if (!write_value(w, d, d->number, e, depth)) return false;
        return true;
    }
    if (json_is_null(v) && d->kind != KAPI_PB_RAW)
        v = NULL; /* null is Go's nil pointer, or a value's zero */
    if (!v && d->pointer)
        return true;
    return write_value(w, d, d->number, v, depth);
}

static bool write_message(writer *w, const kapi_pb_message *m, const json_t *obj, int depth)
{
    if (depth > MAX_DEPTH) {
        if (!w->err)
            w->err = kapi_xprintf("%s: nested too deeply", m->name);
        return false;
    }
    if (obj && !json_is_object(obj)) {
        if (!w->err)
            w->err = kapi_xprintf("%s: not an object", m->name);
        return false;
    }
    for (size_t i = 0; i < m->nfields; i++)
        if (!write_field(w, &m->fields[i], obj, depth))
            return false;
    return true;
}

bool kapi_pb_from_json(const kapi_pb_message *m, const json_t *obj, kapi_buf *out, char **err_out)
{
    writer w = {.out = out};
    bool ok = write_message(&w, m, obj, 0);
    *err_out = w.err;
    return ok;
}

bool kapi_pb_put_message(kapi_buf *out, uint32_t num, const kapi_pb_message *m, const json_t *obj,
                         char **err_out)
{
    size_t start = out->len;
    bool ok = kapi_pb_from_json(m, obj, out, err_out);
    kapi_pb_close_delimited(out, num, start);
    return ok;
}

void kapi_pb_watch_frame(kapi_buf *out, const char *type, const char *obj, size_t n)
{
    size_t at = out->len;
    kapi_buf_put(out, "\0\0\0\0", 4);
    kapi_pb_put_bytes(out, 1, type, strlen(type));
    size_t start = out->len;
    kapi_pb_put_bytes(out, 1, obj, n);
    kapi_pb_close_delimited(out, 2, start);
    uint32_t len = (uint32_t)(out->len - at - 4);
    unsigned char be[4] = {len >> 24, len >> 16 & 0xff, len >> 8 & 0xff, len & 0xff};
    memcpy(out->ptr + at, be, 4);
}

void kapi_pb_envelope_write(kapi_buf *out, const char *api_version, const char *kind,
                            const char *raw, size_t n)
{
    kapi_buf_put(out, "k8s", 4);
    size_t start = out->len;
    kapi_pb_put_bytes(out, 1, api_version, strlen(api_version));
    kapi_pb_put_bytes(out, 2, kind, strlen(kind));
    kapi_pb_close_delimited(out, 1, start);
    kapi_pb_put_bytes(out, 2, raw, n);
    kapi_pb_put_bytes(out, 3, "", 0);
    kapi_pb_put_bytes(out, 4, "", 0);
}
