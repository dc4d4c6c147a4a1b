/*
 * smd/type: the merge facts of a schema (smd.h, "types"), as kube-openapi's proto parser
 * and schemaconv derive them from a type's OpenAPI v2 document: which values are lists,
 * maps or scalars, which lists are atomic, sets or list maps and by which keys, which
 * maps are atomic, which members a struct declares and whether it keeps others.
 *
 * A definition (a schema node with a name) is made once per kapi_smd_types, before its
 * members, so a definition that reaches itself becomes a cyclic type. Inline nodes are
 * made where they stand: whether they keep unknown members follows their inline
 * ancestors, which a definition does not inherit.
 */
#include "smd/smd.h"

#include <stdlib.h>
#include <string.h>

#include "base/map.h"

/* schemaconv's __untyped_atomic_: any value, owned whole. */
static const kapi_smd_type untyped_atomic = {
    .atoms = KAPI_SMD_ATOM_SCALAR | KAPI_SMD_ATOM_LIST | KAPI_SMD_ATOM_MAP,
    .list_atomic = true,
    .list_elem = &untyped_atomic,
    .map_atomic = true,
    .map_elem = &untyped_atomic,
};

/* schemaconv's __untyped_deduced_: a value taken for what it is; a map's members are
 * owned one by one, a list whole. */
static const kapi_smd_type deduced = {
    .atoms = KAPI_SMD_ATOM_SCALAR | KAPI_SMD_ATOM_LIST | KAPI_SMD_ATOM_MAP,
    .list_atomic = true,
    .list_elem = &untyped_atomic,
    .map_elem = &deduced,
};

struct kapi_smd_types {
    kapi_arena arena;
    kapi_map *named; /* definition node -> its type */
};

static uint64_t ptr_hash(const void *key, uint64_t seed)
{
    return kapi_map_hash_bytes(&key, sizeof(key), seed);
}

static bool ptr_equal(const void *a, const void *b)
{
    return a == b;
}

static const kapi_map_type named_map = {.hash = ptr_hash, .equal = ptr_equal};

kapi_smd_types *kapi_smd_types_new(void)
{
    kapi_smd_types *ts = kapi_xcalloc(1, sizeof(*ts));
    kapi_arena_init(&ts->arena);
    ts->named = kapi_map_new(&named_map);
    return ts;
}

void kapi_smd_types_free(kapi_smd_types *ts)
{
    if (!ts)
        return;
    kapi_map_free(ts->named);
    kapi_arena_dispose(&ts->arena);
    free(ts);
}

static const kapi_smd_type *type_of(kapi_smd_types *ts, const kapi_schema *s, bool preserve);

static int field_cmp(const void *a, const void *b)
{
    const kapi_smd_type_field *x = a, *y = b;
    size_t n = x->name.len < y->name.len ? x->name.len : y->name.len;
    if (n && x->name.ptr[0] != y->name.ptr[0]) /* most names differ there: no memcmp call */
        return (unsigned char)x->name.ptr[0] - (unsigned char)y->name.ptr[0];
    int c = memcmp(x->name.ptr, y->name.ptr, n);
    return c ? c : (x->name.len > y->name.len) - (x->name.len < y->name.len);
}

static bool is(const char *s, const char *want)
{
    return s && strcmp(s, want) == 0;
}

/* VisitKind: a struct of s's properties; x-kubernetes-preserve-unknown-fields here or
 * above keeps other members as deduced values. */
static void make_struct(kapi_smd_types *ts, kapi_smd_type *t, const kapi_schema *s, bool preserve)
{
    preserve = preserve || s->preserve_unknown;
    kapi_smd_type_field *f = kapi_arena_alloc(&ts->arena, s->nprops * sizeof(*f));
    for (size_t i = 0; i < s->nprops; i++) {
        const kapi_schema_prop *p = &s->props[i];
        f[i] = (kapi_smd_type_field){
            .name = kapi_str_c(p->name),
            .type = type_of(ts, p->schema, p->schema->def_name ? false : preserve),
            .default_value = p->default_value ? p->default_value : p->schema->default_value,
        };
    }
    qsort(f, s->nprops, sizeof(*f), field_cmp);
    t->atoms = KAPI_SMD_ATOM_MAP;
    t->fields = f;
    t->nfields = s->nprops;
    t->map_elem = preserve ? &deduced : NULL;
    t->map_atomic = is(s->map_type, "atomic");
}

/* VisitMap: a map of additionalProperties (deduced values without). */
static void make_map(kapi_smd_types *ts, kapi_smd_type *t, const kapi_schema *s, bool preserve)
{
    t->atoms = KAPI_SMD_ATOM_MAP;
    t->map_elem =
        s->additional ? type_of(ts, s->additional, !s->additional->def_name && preserve) : &deduced;
    t->map_atomic = is(s->map_type, "atomic");
}

/* VisitArray: atomic unless x-kubernetes-list-type or a merge patch strategy says
 * otherwise. */
static void make_list(kapi_smd_types *ts, kapi_smd_type *t, const kapi_schema *s, bool preserve)
{
    t->atoms = KAPI_SMD_ATOM_LIST;
    t->list_elem = s->items ? type_of(ts, s->items, !s->items->def_name && preserve) : &deduced;
    t->list_atomic = true;
    if (s->list_type) {
        t->list_atomic =
            is(s->list_type, "atomic") || (!is(s->list_type, "set") && !is(s->list_type, "map"));
        if (is(s->list_type, "map"))
            for (const char *const *k = s->list_map_keys; k && *k; k++)
                t->nkeys++;
        t->keys = t->nkeys ? s->list_map_keys : NULL;
    } else if (is(s->patch_strategy, "merge") || is(s->patch_strategy, "merge,retainKeys")) {
        t->list_atomic = false;
        if (s->patch_merge_key) {
            const char **k = kapi_arena_alloc(&ts->arena, 2 * sizeof(*k));
            k[0] = s->patch_merge_key;
            t->keys = k;
            t->nkeys = 1;
        }
    }
}

/* VisitPrimitive: numbers, plain and byte strings, booleans; other strings (dates,
 * int-or-string, quantities) are untyped. */
static void make_scalar(kapi_smd_type *t, const kapi_schema *s)
{
    t->atoms = KAPI_SMD_ATOM_SCALAR;
    if (s->types & (KAPI_SCHEMA_INTEGER | KAPI_SCHEMA_NUMBER))
        t->scalar = KAPI_SMD_NUMERIC;
    else if (s->types & KAPI_SCHEMA_BOOLEAN)
        t->scalar = KAPI_SMD_BOOLEAN;
    else if ((s->types & KAPI_SCHEMA_STRING) && !s->int_or_string &&
             (!s->format || !*s->format || is(s->format, "byte")))
        t->scalar = KAPI_SMD_STRING_SCALAR;
    else
        t->scalar = KAPI_SMD_UNTYPED;
}

static void fill(kapi_smd_types *ts, kapi_smd_type *t, const kapi_schema *s, bool preserve)
{
    unsigned types = s->types & ~KAPI_SCHEMA_NULL;
    if (is(s->def_name, "io.k8s.apimachinery.pkg.api.resource.Quantity") ||
        (s->int_or_string && s->def_name))
        make_scalar(t, &(kapi_schema){.types = KAPI_SCHEMA_STRING, .format = "untyped"});
    else if (s->int_or_string)
        *t = deduced; /* a CRD's int-or-string is published without a type */
    else if (types == KAPI_SCHEMA_OBJECT || (types == 0 && s->nprops))
        s->nprops ? make_struct(ts, t, s, preserve) : make_map(ts, t, s, preserve);
    else if (types == KAPI_SCHEMA_ARRAY)
        make_list(ts, t, s, preserve);
    else if (types == 0)
        *t = deduced;
    else
        make_scalar(t, s);
}

static const kapi_smd_type *type_of(kapi_smd_types *ts, const kapi_schema *s, bool preserve)
{
    if (is(s->def_name, "io.k8s.apimachinery.pkg.runtime.RawExtension"))
        return &untyped_atomic;
    if (s->def_name) {
        kapi_smd_type *t = kapi_map_get(ts->named, s);
        if (t)
            return t;
        t = kapi_arena_alloc(&ts->arena, sizeof(*t));
        kapi_map_put(ts->named, (void *)s, t);
        fill(ts, t, s, false);
        return t;
    }
    kapi_smd_type *t = kapi_arena_alloc(&ts->arena, sizeof(*t));
    fill(ts, t, s, preserve);
    return t;
}

const kapi_smd_type *kapi_smd_type_of(kapi_smd_types *ts, const kapi_schema *s)
{
    return type_of(ts, s, false);
}

const kapi_smd_type *kapi_smd_type_custom(kapi_smd_types *ts, const kapi_schema *s,
                                          const kapi_smd_type *object_meta)
{
    static const kapi_smd_type string = {.atoms = KAPI_SMD_ATOM_SCALAR,
                                         .scalar = KAPI_SMD_STRING_SCALAR};
    static const char *const envelope[] = {"apiVersion", "kind", "metadata"};
    kapi_smd_type *t = kapi_arena_alloc(&ts->arena, sizeof(*t));
    fill(ts, t, s, false);
    if (!(t->atoms & KAPI_SMD_ATOM_MAP))
        return t;
    kapi_smd_type_field *f =
        kapi_arena_alloc(&ts->arena, (t->nfields + KAPI_ARRAY_LEN(envelope)) * sizeof(*f));
    size_t n = 0;
    for (size_t i = 0; i < t->nfields; i++)
        if (!kapi_str_eqc(t->fields[i].name, "apiVersion") &&
            !kapi_str_eqc(t->fields[i].name, "kind") &&
            !kapi_str_eqc(t->fields[i].name, "metadata"))
            f[n++] = t->fields[i];
    f[n++] = (kapi_smd_type_field){.name = KAPI_STR("apiVersion"), .type = &string};
    f[n++] = (kapi_smd_type_field){.name = KAPI_STR("kind"), .type = &string};
    f[n++] = (kapi_smd_type_field){.name = KAPI_STR("metadata"), .type = object_meta};
    qsort(f, n, sizeof(*f), field_cmp);
    t->fields = f;
    t->nfields = n;
    return t;
}

const kapi_smd_type_field *kapi_smd_type_find(const kapi_smd_type *t, kapi_str name)
{
    size_t lo = 0, hi = t->nfields;
    kapi_smd_type_field key = {.name = name};
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = field_cmp(&key, &t->fields[mid]);
        if (c == 0)
            return &t->fields[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}
