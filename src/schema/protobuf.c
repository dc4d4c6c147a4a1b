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

#define APIEXT "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."

/* The definitions whose protobuf form is a message the codec reads and writes itself. */
static const struct {
    const char *def;
    kapi_pb_kind kind;
} well_known[] = {
    {"io.k8s.apimachinery.pkg.apis.meta.v1.Time", KAPI_PB_TIME},
    {"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime", KAPI_PB_MICROTIME},
    {"io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1", KAPI_PB_FIELDS_V1},
    {"io.k8s.apimachinery.pkg.util.intstr.IntOrString", KAPI_PB_INT_OR_STRING},
    {"io.k8s.apimachinery.pkg.api.resource.Quantity", KAPI_PB_QUANTITY},
    {"io.k8s.apimachinery.pkg.runtime.RawExtension", KAPI_PB_RAW},
    {APIEXT "JSON", KAPI_PB_RAW},
    {APIEXT "JSONSchemaPropsOrArray", KAPI_PB_SCHEMA_OR_ARRAY},
    {APIEXT "JSONSchemaPropsOrBool", KAPI_PB_SCHEMA_OR_BOOL},
    {APIEXT "JSONSchemaPropsOrStringArray", KAPI_PB_SCHEMA_OR_STRINGS},
};

/* The message the KAPI_PB_SCHEMA_OR_* kinds wrap. */
#define SCHEMA_PROPS APIEXT "JSONSchemaProps"

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

static bool is_map(const kapi_schema *s)
{
    return s->types == KAPI_SCHEMA_OBJECT && s->nprops == 0 && s->additional;
}

/* The JSONSchemaProps message the wrappers hold: they are reached only from inside it,
 * so it is being derived. */
static const kapi_pb_message *schema_props(deriver *d, kapi_error **err)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->msgs[i]->name, SCHEMA_PROPS) == 0)
            return d->msgs[i];
    *err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "a JSONSchemaProps wrapper outside of "
                                                      "JSONSchemaProps");
    return NULL;
}

static bool field_kind(deriver *d, const kapi_schema *s, kapi_pb_field *f, kapi_error **err);

/* f is a map whose values have schema s: its value field, number 2. */
static bool map_kind(deriver *d, const kapi_schema *s, kapi_pb_field *f, kapi_error **err)
{
    kapi_pb_field *v = kapi_arena_alloc(d->arena, sizeof(*v));
    *v = (kapi_pb_field){.number = 2, .json = "value"};
    f->kind = KAPI_PB_MAP;
    f->value = v;
    return field_kind(d, s, v, err) && !v->repeated && v->kind != KAPI_PB_MAP;
}

/* f is an array protobuf holds in a message of its own (x-kapi-protobuf-wrap), whose
 * elements have schema s: its element field, number 1. */
static bool list_kind(deriver *d, const kapi_schema *s, kapi_pb_field *f, kapi_error **err)
{
    kapi_pb_field *v = kapi_arena_alloc(d->arena, sizeof(*v));
    *v = (kapi_pb_field){.number = 1, .json = "items"};
    f->kind = KAPI_PB_LIST;
    f->value = v;
    return field_kind(d, s, v, err) && !v->repeated && v->kind != KAPI_PB_MAP &&
           v->kind != KAPI_PB_LIST;
}

/* The kind of a field whose value has schema s; false when it has no protobuf form. */
static bool field_kind(deriver *d, const kapi_schema *s, kapi_pb_field *f, kapi_error **err)
{
    for (size_t i = 0; s->def_name && i < KAPI_ARRAY_LEN(well_known); i++)
        if (strcmp(s->def_name, well_known[i].def) == 0) {
            f->kind = well_known[i].kind;
            if (f->kind >= KAPI_PB_SCHEMA_OR_ARRAY && f->kind <= KAPI_PB_SCHEMA_OR_STRINGS)
                f->message = schema_props(d, err);
            return true;
        }
    if (s->types == KAPI_SCHEMA_ARRAY && s->items &&
        json_is_true(json_object_get(s->src, "x-kapi-protobuf-wrap")))
        return list_kind(d, s->items, f, err);
    if (s->types == KAPI_SCHEMA_ARRAY && s->items && !f->repeated) {
        f->repeated = true;
        return field_kind(d, s->items, f, err) && f->kind != KAPI_PB_MAP;
    }
    if (is_map(s))
        return map_kind(d, s->additional, f, err);
    if (s->types == KAPI_SCHEMA_OBJECT && s->def_name) { /* empty ones too */
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

static bool named_in(const json_t *names, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v) if (json_is_string(v) &&
                                        strcmp(json_string_value(v), name) == 0) return true;
    return false;
}

/* The fields of the numbered properties of s, in number order: those that names lists
 * (all when names is NULL; none listed when except) into *out. */
static kapi_error *props_fields(deriver *d, const kapi_schema *s, const json_t *names, bool except,
                                kapi_pb_field *fields, size_t *out)
{
    kapi_error *err = NULL;
    size_t n = *out;
    for (size_t i = 0; i < s->nprops && !err; i++) {
        const kapi_schema_prop *p = &s->props[i];
        if (p->protobuf <= 0 || (names && named_in(names, p->name) == except))
            continue;
        kapi_pb_field *f = &fields[n++];
        f->number = (uint32_t)p->protobuf;
        f->json = p->name;
        if (!field_kind(d, p->schema, f, &err) && !err)
            err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                                 "%s.%s: no protobuf form for its schema", s->def_name, p->name);
        f->omitempty = p->omitempty;
        f->pointer = !p->emit && !p->omitempty && !f->repeated && f->kind != KAPI_PB_MAP;
    }
    *out = n;
    return err;
}

static kapi_error *sort_fields(const char *name, kapi_pb_field *fields, size_t n)
{
    qsort(fields, n, sizeof(*fields), field_order);
    for (size_t i = 1; i < n; i++)
        if (fields[i].number == fields[i - 1].number)
            return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "%s: protobuf field %u twice", name,
                                  fields[i].number);
    return NULL;
}

/* The fields of m from the numbered properties of s, in number order; the properties
 * x-kapi-protobuf-embed lists go into a message of their own, at its field. */
static kapi_error *fill_fields(deriver *d, const kapi_schema *s, kapi_pb_message *m)
{
    kapi_pb_field *fields = kapi_arena_alloc(d->arena, (s->nprops + 1) * sizeof(*fields));
    const json_t *embed = json_object_get(s->src, "x-kapi-protobuf-embed");
    const json_t *names = json_object_get(embed, "properties");
    size_t n = 0;
    kapi_error *err = props_fields(d, s, embed ? names : NULL, true, fields, &n);
    if (!err && embed) {
        const char *name = json_string_value(json_object_get(embed, "message"));
        json_int_t num = json_integer_value(json_object_get(embed, "field"));
        kapi_pb_message *inner = kapi_arena_alloc(d->arena, sizeof(*inner));
        kapi_pb_field *in = kapi_arena_alloc(d->arena, (s->nprops + 1) * sizeof(*in));
        size_t nin = 0;
        if (!name || num <= 0 || !json_is_array(names))
            return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                                  "%s: x-kapi-protobuf-embed needs field, message, properties",
                                  s->def_name);
        err = props_fields(d, s, names, false, in, &nin);
        if (!err)
            err = sort_fields(name, in, nin);
        *inner = (kapi_pb_message){.name = name, .fields = in, .nfields = nin};
        fields[n++] = (kapi_pb_field){
            .number = (uint32_t)num, .kind = KAPI_PB_MESSAGE, .embedded = true, .message = inner};
    }
    if (!err)
        err = sort_fields(s->def_name, fields, n);
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
