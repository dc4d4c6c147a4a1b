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

/* A Time or MicroTime message: seconds = 1, nanos = 2. NULL for the zero time. */
static json_t *time_value(const field *f, bool micro)
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
    char buf[40];
    time_t t = (time_t)secs;
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    if (micro)
        snprintf(buf + n, sizeof(buf) - n, ".%06dZ", (int)(nanos / 1000));
    else
        snprintf(buf + n, sizeof(buf) - n, "Z");
    return json_string(buf);
}

static json_t *message(const json_t *messages, const char *name, const unsigned char *p, size_t n,
                       int depth, char **err);

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

/* The JSON value of one field by its declared type; NULL for a zero scalar. */
static json_t *value(const json_t *messages, const char *type, const field *f, int depth,
                     char **err)
{
    bool lendelim = f->wire == 2;
    if (strcmp(type, "string") == 0 && lendelim)
        return f->len ? json_stringn((const char *)f->bytes, f->len) : NULL;
    if (strcmp(type, "bytes") == 0 && lendelim) {
        char *b = kapi_base64_encode(f->bytes, f->len, KAPI_BASE64_STD);
        json_t *v = json_string(b);
        free(b);
        return v;
    }
    if (strcmp(type, "bool") == 0 && f->wire == 0)
        return f->u ? json_true() : NULL;
    if (strcmp(type, "int32") == 0 && f->wire == 0)
        return f->u ? json_integer((int32_t)f->u) : NULL;
    if (strcmp(type, "int64") == 0 && f->wire == 0)
        return f->u ? json_integer((json_int_t)f->u) : NULL;
    if (strcmp(type, "double") == 0 && f->wire == 1) {
        double d;
        memcpy(&d, &f->u, sizeof(d));
        return d != 0 ? json_real(d) : NULL;
    }
    if ((strcmp(type, "Time") == 0 || strcmp(type, "MicroTime") == 0) && lendelim)
        return time_value(f, type[0] == 'M');
    if (strcmp(type, "fieldsV1") == 0 && lendelim) {
        reader r = {f->bytes, f->bytes + f->len};
        field g;
        while (r.p < r.end && next_field(&r, &g))
            if (g.num == 1 && g.wire == 2)
                return kapi_json_parse((const char *)g.bytes, g.len, NULL);
        return json_object();
    }
    if (lendelim && json_object_get(messages, type))
        return message(messages, type, f->bytes, f->len, depth + 1, err);
    if (!*err)
        *err = kapi_xprintf("field %u: wire type %u does not fit %s", f->num, f->wire, type);
    return NULL;
}

static json_t *message(const json_t *messages, const char *name, const unsigned char *p, size_t n,
                       int depth, char **err)
{
    const json_t *fields = json_object_get(messages, name);
    if (!fields || depth > MAX_DEPTH) {
        *err = kapi_xprintf("no protobuf description of %s", name);
        return NULL;
    }
    json_t *obj = json_object();
    reader r = {p, p + n};
    field f;
    char num[16];
    while (r.p < r.end && !*err) {
        if (!next_field(&r, &f)) {
            *err = kapi_xprintf("malformed protobuf in %s", name);
            break;
        }
        snprintf(num, sizeof(num), "%u", f.num);
        const json_t *desc = json_object_get(fields, num);
        if (!desc)
            continue; /* unknown fields are dropped, as Go's decoder drops them */
        const char *key = kapi_json_path_str(desc, "json");
        const char *type = kapi_json_path_str(desc, "type");
        if (!key || !type)
            continue;
        if (strcmp(type, "map") == 0) {
            if (f.wire != 2 || !map_entry(kapi_json_object_ensure(obj, key), &f))
                *err = kapi_xprintf("malformed map entry in %s.%s", name, key);
            continue;
        }
        json_t *v = value(messages, type, &f, depth, err);
        if (json_is_true(json_object_get(desc, "repeated"))) {
            json_t *arr = json_object_get(obj, key);
            if (!json_is_array(arr)) {
                arr = json_array();
                json_object_set_new(obj, key, arr);
            }
            json_array_append_new(arr, v ? v : json_string(""));
        } else if (v) {
            json_object_set_new(obj, key, v);
        }
    }
    if (*err) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

json_t *kapi_pb_to_json(const json_t *messages, const char *msg, const char *p, size_t n,
                        char **err_out)
{
    *err_out = NULL;
    return message(messages, msg, (const unsigned char *)p, n, 0, err_out);
}
