/* Unit tests for the protobuf form of /openapi/v2 (src/api/openapi_pb.c): the bytes are
 * read back with a minimal protobuf wire reader and checked against gnostic's field
 * numbers (openapi_v2.Document, NamedSchema, Schema, NamedAny, Any). */
#include "api/api_int.h"
#include "test.h"

typedef struct field {
    int num, wire;
    uint64_t varint;
    const char *p; /* length-delimited payload */
    size_t n;
} field;

static uint64_t varint(const char **p, const char *end)
{
    uint64_t v = 0;
    for (int shift = 0; *p < end; shift += 7) {
        unsigned char c = (unsigned char)*(*p)++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return v;
    }
    test_fail(__FILE__, __LINE__, "truncated varint");
}

/* The next field of the message [*p, end), or false at its end. */
static bool next(const char **p, const char *end, field *f)
{
    if (*p >= end)
        return false;
    uint64_t key = varint(p, end);
    f->num = (int)(key >> 3);
    f->wire = (int)(key & 7);
    if (f->wire == 0) {
        f->varint = varint(p, end);
    } else if (f->wire == 1) {
        *p += 8;
    } else if (f->wire == 2) {
        f->n = varint(p, end);
        f->p = *p;
        *p += f->n;
    } else {
        test_fail(__FILE__, __LINE__, "unexpected wire type %d", f->wire);
    }
    CHECK(*p <= end);
    return true;
}

/* The first length-delimited field num of a message. */
static bool find(const char *p, size_t n, int num, field *out)
{
    const char *end = p + n;
    field f;
    while (next(&p, end, &f))
        if (f.num == num && f.wire == 2) {
            *out = f;
            return true;
        }
    return false;
}

static bool str_is(const field *f, const char *s)
{
    return f->n == strlen(s) && memcmp(f->p, s, f->n) == 0;
}

TEST(api_openapi_v2_protobuf_fields)
{
    json_t *doc =
        json_pack("{s:s,s:{s:s,s:s},s:{},s:{s:{s:s,s:s,s:{s:{s:s,s:s}},s:[{s:s,s:s,s:s}]}}}",
                  "swagger", "2.0", "info", "title", "Kubernetes", "version", "v1", "paths",
                  "definitions", "a.B", "description", "a thing", "type", "object", "properties",
                  "spec", "type", "string", "x-kubernetes-patch-strategy", "merge",
                  "x-kubernetes-group-version-kind", "group", "", "kind", "B", "version", "v1");
    size_t len;
    char *pb = kapi_api__openapi_v2_proto(doc, &len);
    field f, defs, named, schema, x;
    CHECK(find(pb, len, 1, &f) && str_is(&f, "2.0"));
    CHECK(find(pb, len, 2, &f) && find(f.p, f.n, 1, &x) && str_is(&x, "Kubernetes"));
    CHECK(find(pb, len, 9, &defs));
    CHECK(find(defs.p, defs.n, 1, &named));
    CHECK(find(named.p, named.n, 1, &f) && str_is(&f, "a.B"));
    CHECK(find(named.p, named.n, 2, &schema));
    CHECK(find(schema.p, schema.n, 4, &f) && str_is(&f, "a thing"));
    CHECK(find(schema.p, schema.n, 22, &f) && find(f.p, f.n, 1, &x) && str_is(&x, "object"));
    /* properties (25) → NamedSchema → Schema with the patch strategy as a NamedAny (31) */
    CHECK(find(schema.p, schema.n, 25, &f) && find(f.p, f.n, 1, &named));
    CHECK(find(named.p, named.n, 1, &x) && str_is(&x, "spec"));
    CHECK(find(named.p, named.n, 2, &f));
    CHECK(find(f.p, f.n, 31, &named));
    CHECK(find(named.p, named.n, 1, &x) && str_is(&x, "x-kubernetes-patch-strategy"));
    CHECK(find(named.p, named.n, 2, &f) && find(f.p, f.n, 2, &x) && str_is(&x, "\"merge\"\n"));
    CHECK(find(schema.p, schema.n, 31, &named));
    CHECK(find(named.p, named.n, 1, &x) && str_is(&x, "x-kubernetes-group-version-kind"));
    free(pb);
    json_decref(doc);
}
