/*
 * schema/protobuf: a definition's protobuf message table (codec/protobuf.h), derived
 * from the schema (DESIGN.md invariant 1): each property's field number is its
 * x-kapi-protobuf annotation (Kubernetes' generated.proto numbers), its kind follows
 * from its schema, and properties without a number (kind, apiVersion: TypeMeta is not
 * part of a protobuf message) are left out.
 */
#include <stdlib.h>
#include <string.h>

#include "schema/schema.h"

/* The definitions whose protobuf form is a message the decoder reads itself. */
static const struct {
    const char *def;
    kapi_pb_kind kind;
} well_known[] = {
    {"io.k8s.apimachinery.pkg.apis.meta.v1.Time", KAPI_PB_TIME},
    {"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime", KAPI_PB_MICROTIME},
    {"io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1", KAPI_PB_FIELDS_V1},
};

/* Scalars: a schema type and format (NULL: any other) and their protobuf kind. */
static const struct {
    unsigned type;
    const char *format;
    kapi_pb_kind kind;
} scalars[] = {
    {KAPI_SCHEMA_STRING, "byte", KAPI_PB_BYTES}, {KAPI_SCHEMA_STRING, NULL, KAPI_PB_STRING},
    {KAPI_SCHEMA_BOOLEAN, NULL, KAPI_PB_BOOL},   {KAPI_SCHEMA_INTEGER, "int32", KAPI_PB_INT32},
    {KAPI_SCHEMA_INTEGER, NULL, KAPI_PB_INT64},  {KAPI_SCHEMA_NUMBER, NULL, KAPI_PB_DOUBLE},
};

/* One derivation: the messages made so far (a definition reached twice, or from
 * itself, is one message). */
typedef struct deriver {
    kapi_arena *arena;
    const kapi_schema **nodes;
    kapi_pb_message **msgs;
    size_t n;
} deriver;

static kapi_error *message_of(deriver *d, const kapi_schema *s, const kapi_pb_message **out);

static bool format_is(const kapi_schema *s, const char *format)
{
    return !format || (s->format && strcmp(s->format, format) == 0);
}

static bool is_string_map(const kapi_schema *s)
{
    return s->types == KAPI_SCHEMA_OBJECT && s->nprops == 0 && s->additional &&
           s->additional->types == KAPI_SCHEMA_STRING;
}

/* The kind of a field whose value has schema s; false when it has no protobuf form. */
static bool field_kind(deriver *d, const kapi_schema *s, kapi_pb_field *f, kapi_error **err)
{
    for (size_t i = 0; s->def_name && i < KAPI_ARRAY_LEN(well_known); i++)
        if (strcmp(s->def_name, well_known[i].def) == 0) {
            f->kind = well_known[i].kind;
            return true;
        }
    if (s->types == KAPI_SCHEMA_ARRAY && s->items && !f->repeated) {
        f->repeated = true;
        return field_kind(d, s->items, f, err) && f->kind != KAPI_PB_MAP;
    }
    if (is_string_map(s)) {
        f->kind = KAPI_PB_MAP;
        return true;
    }
    if (s->types == KAPI_SCHEMA_OBJECT && s->def_name && s->nprops) {
        f->kind = KAPI_PB_MESSAGE;
        *err = message_of(d, s, &f->message);
        return true;
    }
    for (size_t i = 0; i < KAPI_ARRAY_LEN(scalars); i++)
        if (s->types == scalars[i].type && format_is(s, scalars[i].format)) {
            f->kind = scalars[i].kind;
            return true;
        }
    return false;
}

static int field_order(const void *a, const void *b)
{
    uint32_t x = ((const kapi_pb_field *)a)->number, y = ((const kapi_pb_field *)b)->number;
    return x < y ? -1 : x > y;
}

/* The fields of m from the numbered properties of s, in number order. */
static kapi_error *fill_fields(deriver *d, const kapi_schema *s, kapi_pb_message *m)
{
    kapi_pb_field *fields = kapi_arena_alloc(d->arena, (s->nprops + 1) * sizeof(*fields));
    kapi_error *err = NULL;
    size_t n = 0;
    for (size_t i = 0; i < s->nprops && !err; i++) {
        const kapi_schema_prop *p = &s->props[i];
        if (p->protobuf <= 0)
            continue;
        kapi_pb_field *f = &fields[n++];
        f->number = (uint32_t)p->protobuf;
        f->json = p->name;
        if (!field_kind(d, p->schema, f, &err) && !err)
            err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                                 "%s.%s: no protobuf form for its schema", s->def_name, p->name);
    }
    qsort(fields, n, sizeof(*fields), field_order);
    for (size_t i = 1; i < n && !err; i++)
        if (fields[i].number == fields[i - 1].number)
            err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "%s: protobuf field %u twice",
                                 s->def_name, fields[i].number);
    m->fields = fields;
    m->nfields = n;
    return err;
}

static kapi_error *message_of(deriver *d, const kapi_schema *s, const kapi_pb_message **out)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->nodes[i] == s) {
            *out = d->msgs[i];
            return NULL;
        }
    kapi_pb_message *m = kapi_arena_alloc(d->arena, sizeof(*m));
    m->name = s->def_name;
    d->nodes = kapi_xrealloc(d->nodes, (d->n + 1) * sizeof(*d->nodes));
    d->msgs = kapi_xrealloc(d->msgs, (d->n + 1) * sizeof(*d->msgs));
    d->nodes[d->n] = s;
    d->msgs[d->n++] = m;
    *out = m;
    return fill_fields(d, s, m);
}

kapi_error *kapi_schema_protobuf(const kapi_schema *s, kapi_arena *a, const kapi_pb_message **out)
{
    deriver d = {.arena = a};
    kapi_error *err = NULL;
    *out = NULL;
    if (!s->def_name || !s->nprops)
        err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "a protobuf message must be a definition "
                                                         "with properties");
    else
        err = message_of(&d, s, out);
    free(d.nodes);
    free(d.msgs);
    if (err)
        *out = NULL;
    return err;
}
