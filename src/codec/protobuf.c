/* codec/protobuf: protobuf wire format decoding into JSON by message tables. */
#include "codec/protobuf.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/json.h"

#define MAX_DEPTH 64

typedef struct reader {
    const unsigned char *p, *end;
} reader;

static bool varint(reader *r, uint64_t *out)
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

/* One field: its number, wire type and value (varint or the bytes of a length-delimited
 * field; fixed32/fixed64 come back as varint-like integers). */
typedef struct field {
    uint32_t num, wire;
    uint64_t u;
    const unsigned char *bytes;
    size_t len;
} field;

static bool next_field(reader *r, field *f)
{
    uint64_t key;
    if (!varint(r, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX)
        return false;
    f->num = (uint32_t)(key >> 3);
    f->wire = (uint32_t)(key & 7);
    switch (f->wire) {
    case 0:
        return varint(r, &f->u);
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
        if (!varint(r, &f->u) || f->u > (uint64_t)(r->end - r->p))
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
        if (!next_field(&r, &f) || (f.num <= 2 && f.wire != 2))
            goto bad;
        if (f.num == 2) {
            *raw = (kapi_str){(const char *)f.bytes, f.len};
        } else if (f.num == 1) {
            reader tm = {f.bytes, f.bytes + f.len};
            field g;
            while (tm.p < tm.end) {
                if (!next_field(&tm, &g) || g.wire != 2)
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
 * with microseconds for MicroTime. JSON null for the zero time; NULL for a malformed
 * message, and with *err set for a year JSON cannot hold. */
static json_t *time_value(const field *f, bool micro, char **err)
{
    reader r = {f->bytes, f->bytes + f->len};
    field g;
    int64_t secs = 0, nanos = 0;
    while (r.p < r.end) {
        if (!next_field(&r, &g) || g.wire != 0)
            return NULL;
        if (g.num == 1)
            secs = (int64_t)g.u;
        else if (g.num == 2)
            nanos = (int32_t)g.u;
    }
    if (secs == 0 && nanos == 0)
        return json_null();
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

static json_t *message(const kapi_pb_message *m, const unsigned char *p, size_t n, int depth,
                       char **err);

/* A map<string,string> entry: key = 1, value = 2. */
static bool map_entry(json_t *obj, const field *f)
{
    reader r = {f->bytes, f->bytes + f->len};
    field g;
    char *key = NULL, *val = NULL;
    while (r.p < r.end) {
        if (!next_field(&r, &g) || g.wire != 2) {
            free(key);
            free(val);
            return false;
        }
        char **slot = g.num == 1 ? &key : g.num == 2 ? &val : NULL;
        if (slot) {
            free(*slot);
            *slot = kapi_xstrndup((const char *)g.bytes, g.len);
        }
    }
    json_object_set_new(obj, key ? key : "", json_string(val ? val : ""));
    free(key);
    free(val);
    return true;
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
        [KAPI_PB_TIME] = "Time",
        [KAPI_PB_MICROTIME] = "MicroTime",
        [KAPI_PB_FIELDS_V1] = "fieldsV1",
    };
    return d->kind == KAPI_PB_MESSAGE ? d->message->name : names[d->kind];
}

/* A FieldsV1 message: its raw JSON is field 1. */
static json_t *fields_v1(const field *f)
{
    reader r = {f->bytes, f->bytes + f->len};
    field g;
    while (r.p < r.end && next_field(&r, &g))
        if (g.num == 1 && g.wire == 2)
            return kapi_json_parse((const char *)g.bytes, g.len, NULL);
    return json_object();
}

/* A scalar read from a varint or a fixed64; NULL for its zero value. */
static json_t *number_value(kapi_pb_kind kind, const field *f)
{
    double d;
    switch (kind) {
    case KAPI_PB_BOOL:
        return f->u ? json_true() : NULL;
    case KAPI_PB_INT32:
        return f->u ? json_integer((int32_t)f->u) : NULL;
    case KAPI_PB_INT64:
        return f->u ? json_integer((json_int_t)f->u) : NULL;
    default:
        memcpy(&d, &f->u, sizeof(d));
        return d != 0 ? json_real(d) : NULL;
    }
}

/* A length-delimited value; NULL for an empty string. */
static json_t *bytes_value(const kapi_pb_field *d, const field *f, int depth, char **err)
{
    switch (d->kind) {
    case KAPI_PB_STRING:
        return f->len ? json_stringn((const char *)f->bytes, f->len) : NULL;
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
    default:
        return message(d->message, f->bytes, f->len, depth + 1, err);
    }
}

/* The wire type each kind takes (map entries are read by the caller). */
static const uint32_t wire_of[] = {
    [KAPI_PB_STRING] = 2,    [KAPI_PB_BYTES] = 2,     [KAPI_PB_BOOL] = 0,    [KAPI_PB_INT32] = 0,
    [KAPI_PB_INT64] = 0,     [KAPI_PB_DOUBLE] = 1,    [KAPI_PB_MAP] = 2,     [KAPI_PB_TIME] = 2,
    [KAPI_PB_MICROTIME] = 2, [KAPI_PB_FIELDS_V1] = 2, [KAPI_PB_MESSAGE] = 2,
};

/* The JSON value of one field by its declared kind; NULL for a zero scalar. */
static json_t *value(const kapi_pb_field *d, const field *f, int depth, char **err)
{
    if (f->wire == wire_of[d->kind])
        return f->wire == 2 ? bytes_value(d, f, depth, err) : number_value(d->kind, f);
    if (!*err)
        *err =
            kapi_xprintf("field %u: wire type %u does not fit %s", f->num, f->wire, kind_name(d));
    return NULL;
}

static int field_cmp(const void *key, const void *elem)
{
    uint32_t num = *(const uint32_t *)key, at = ((const kapi_pb_field *)elem)->number;
    return num < at ? -1 : num > at;
}

/* Appends v (NULL: a zero scalar) to the member d names. */
static void put_field(json_t *obj, const kapi_pb_field *d, json_t *v)
{
    if (!d->repeated) {
        if (v)
            json_object_set_new(obj, d->json, v);
        return;
    }
    json_t *arr = json_object_get(obj, d->json);
    if (!json_is_array(arr)) {
        arr = json_array();
        json_object_set_new(obj, d->json, arr);
    }
    json_array_append_new(arr, v ? v : json_string(""));
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
        if (!next_field(&r, &f)) {
            *err = kapi_xprintf("malformed protobuf in %s", m->name);
            break;
        }
        const kapi_pb_field *d =
            bsearch(&f.num, m->fields, m->nfields, sizeof(*m->fields), field_cmp);
        if (!d)
            continue; /* unknown fields are dropped, as Go's decoder drops them */
        if (d->kind == KAPI_PB_MAP) {
            if (f.wire != 2 || !map_entry(kapi_json_object_ensure(obj, d->json), &f))
                *err = kapi_xprintf("malformed map entry in %s.%s", m->name, d->json);
            continue;
        }
        put_field(obj, d, value(d, &f, depth, err));
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
