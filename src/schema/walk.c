/*
 * schema/walk: the decode walk over an object and its schema.
 *
 * kube-apiserver decodes a built-in object into Go structs: unknown fields are dropped
 * (and reported by field validation), a value of the wrong JSON type fails the decode,
 * null means "not set", and encoding the struct again writes the zero value of every
 * field without omitempty and every non-pointer struct, in struct order, maps sorted.
 * Defaulting then fills what the type's defaulters fill. The walk does all of this on
 * the parsed JSON in one pass, driven by the schema. For custom resources the same walk
 * prunes and defaults, and leaves type errors to validation.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/json.h"
#include "schema/quantity.h"
#include "schema/schema.h"
#include "schema/schema_int.h"

/* The metadata of an embedded resource, walked by ObjectMeta's schema after the rest. */
typedef struct deferred_meta {
    json_t *meta;
    const char *path; /* in the walk's arena */
} deferred_meta;

typedef struct walker {
    kapi_schema_walk *w;
    kapi_buf path;    /* field path with indices: spec.containers[0].name */
    kapi_buf go_path; /* Go's field stack: spec.containers.name */
    deferred_meta *deferred;
    size_t ndeferred, deferred_cap;
} walker;

static kapi_error *walk(walker *k, const kapi_schema *s, json_t *v, const char *go_struct);
static void pop(kapi_buf *p, size_t len);

bool kapi_schema_go_zero(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        return json_string_length(v) == 0;
    case JSON_INTEGER:
        return json_integer_value(v) == 0;
    case JSON_REAL:
        return json_real_value(v) == 0;
    case JSON_FALSE:
        return true;
    case JSON_ARRAY:
        return json_array_size(v) == 0;
    case JSON_OBJECT:
        return json_object_size(v) == 0;
    default:
        return false;
    }
}

static void record_unknown(walker *k, const char *key)
{
    kapi_schema_walk *w = k->w;
    if (w->nunknown == w->unknown_cap) {
        size_t cap = w->unknown_cap ? 2 * w->unknown_cap : 8;
        const char **n = kapi_arena_alloc(w->arena, cap * sizeof(*n));
        if (w->nunknown)
            memcpy(n, w->unknown, w->nunknown * sizeof(*n));
        w->unknown = n;
        w->unknown_cap = cap;
    }
    w->unknown[w->nunknown++] = kapi_arena_printf(w->arena, "%.*s%s%s", (int)k->path.len,
                                                  k->path.ptr, k->path.len ? "." : "", key);
}

/* Whether a node describes an object (a struct or a map). */
static bool is_object_node(const kapi_schema *s)
{
    return (s->types & KAPI_SCHEMA_OBJECT) || s->nprops || s->additional;
}

/* A node that accepts any value as it is: no type, nothing to walk. */
static bool is_any_node(const kapi_schema *s)
{
    return !s->types && !s->nprops && !s->additional && !s->items;
}

/* ---- Go's names for types and values, as encoding/json words its errors ---- */

static void go_type(kapi_buf *b, const kapi_schema *s)
{
    if (s->def_name) {
        const char *end = strrchr(s->def_name, '.');
        const char *pkg = end;
        while (pkg && pkg > s->def_name && pkg[-1] != '.')
            pkg--;
        if (end && pkg)
            kapi_buf_printf(b, "%.*s", (int)(strlen(pkg)), pkg);
        else
            kapi_buf_puts(b, s->def_name);
        return;
    }
    if (s->types & KAPI_SCHEMA_ARRAY) {
        kapi_buf_puts(b, "[]");
        if (s->items)
            go_type(b, s->items);
        else
            kapi_buf_puts(b, "interface {}");
    } else if (is_object_node(s) && !s->nprops) {
        kapi_buf_puts(b, "map[string]");
        if (s->additional)
            go_type(b, s->additional);
        else
            kapi_buf_puts(b, "interface {}");
    } else if (is_object_node(s)) {
        kapi_buf_puts(b, "struct");
    } else if (s->types & KAPI_SCHEMA_INTEGER) {
        kapi_buf_puts(b, s->format && strcmp(s->format, "int32") == 0 ? "int32" : "int64");
    } else if (s->types & KAPI_SCHEMA_NUMBER) {
        kapi_buf_puts(b, s->format && strcmp(s->format, "float") == 0 ? "float32" : "float64");
    } else if (s->types & KAPI_SCHEMA_BOOLEAN) {
        kapi_buf_puts(b, "bool");
    } else if (s->types & KAPI_SCHEMA_STRING) {
        kapi_buf_puts(b, s->format && strcmp(s->format, "byte") == 0 ? "[]uint8" : "string");
    } else {
        kapi_buf_puts(b, "interface {}");
    }
}

/* encoding/json's words for the value of an UnmarshalTypeError: its kind, and a number's
 * literal when the decoder had read it ("number 1.5"). */
static void go_value(kapi_buf *b, const json_t *v, bool literal)
{
    kapi_buf_puts(b, kapi_go_json_kind(v));
    if (literal && json_is_number(v)) {
        kapi_buf_putc(b, ' ');
        kapi_json_encode(b, v);
    }
}

/* json: cannot unmarshal <value> into Go struct field <Struct>.<path> of type <type> */
static kapi_error *type_error(walker *k, const kapi_schema *s, const json_t *v,
                              const char *go_struct, bool literal)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "json: cannot unmarshal ");
    go_value(&b, v, literal);
    if (go_struct && k->go_path.len)
        kapi_buf_printf(&b, " into Go struct field %s.%.*s of type ", go_struct,
                        (int)k->go_path.len, k->go_path.ptr);
    else
        kapi_buf_puts(&b, " into Go value of type ");
    go_type(&b, s);
    kapi_error *err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%.*s", (int)b.len, b.ptr);
    kapi_buf_dispose(&b);
    return err;
}

/* ---- scalars ---- */

/* Go reads a quantity from a string or a number and writes it back canonical ("0.5" and
 * 0.5 become "500m", "1000m" becomes "1"). */
static kapi_error *canonical_quantity(json_t *v)
{
    if (json_is_number(v))
        return NULL; /* made a string by as_quantity_text first */
    kapi_buf text;
    kapi_buf_init(&text);
    if (json_is_string(v))
        kapi_buf_puts(&text, json_string_value(v));
    else if (json_is_number(v))
        kapi_json_encode(&text, v);
    kapi_quantity q;
    bool ok = text.len && kapi_quantity_parse(&q, text.ptr);
    if (ok) {
        kapi_buf_clear(&text);
        kapi_quantity_format(&text, &q);
        json_string_set(v, text.ptr);
    }
    kapi_buf_dispose(&text);
    return ok ? NULL : kapi_error_new(KAPI_STATUS_BAD_REQUEST, KAPI_QUANTITY_FORMAT_ERROR);
}

/* A quantity written as a JSON number, as the string the walk canonicalizes; a new
 * reference, or NULL when v stays as it is. */
static json_t *as_quantity_text(const kapi_schema *s, const json_t *v)
{
    if (s->go_value != KAPI_SCHEMA_GO_QUANTITY || !json_is_number(v))
        return NULL;
    kapi_buf text;
    kapi_buf_init(&text);
    kapi_json_encode(&text, v);
    json_t *str = json_string(text.ptr);
    kapi_buf_dispose(&text);
    return str;
}

static kapi_error *check_scalar(walker *k, const kapi_schema *s, json_t *v, const char *go_struct)
{
    if (s->go_value == KAPI_SCHEMA_GO_TIME || s->go_value == KAPI_SCHEMA_GO_MICROTIME) {
        char norm[32];
        if (!json_is_string(v))
            return type_error(k, s, v, go_struct, false);
        kapi_error *err = kapi_schema__parse_time(json_string_value(v),
                                                  s->go_value == KAPI_SCHEMA_GO_MICROTIME, norm);
        if (!err)
            json_string_set(v, norm);
        return err;
    }
    if (s->go_value == KAPI_SCHEMA_GO_QUANTITY)
        return canonical_quantity(v);
    if (s->int_or_string)
        return json_is_string(v) || json_is_integer(v) ? NULL
                                                       : type_error(k, s, v, go_struct, false);
    unsigned t = s->types;
    switch (json_typeof(v)) {
    case JSON_STRING:
        return t & KAPI_SCHEMA_STRING ? NULL : type_error(k, s, v, go_struct, false);
    case JSON_TRUE:
    case JSON_FALSE:
        return t & KAPI_SCHEMA_BOOLEAN ? NULL : type_error(k, s, v, go_struct, false);
    case JSON_INTEGER:
        if (t & KAPI_SCHEMA_INTEGER) {
            json_int_t i = json_integer_value(v);
            bool i32 = s->format && strcmp(s->format, "int32") == 0;
            if (i32 && (i < INT32_MIN || i > INT32_MAX))
                return type_error(k, s, v, go_struct, true);
            return NULL;
        }
        return t & KAPI_SCHEMA_NUMBER ? NULL : type_error(k, s, v, go_struct, false);
    case JSON_REAL:
        if (t & KAPI_SCHEMA_NUMBER)
            return NULL;
        return type_error(k, s, v, go_struct, t & KAPI_SCHEMA_INTEGER);
    default:
        return type_error(k, s, v, go_struct, false);
    }
}

/* ---- objects ---- */

/* Appends ".key" (or "key" at the root) to a path; returns the old length. */
static size_t push(kapi_buf *p, const char *key)
{
    size_t old = p->len;
    if (p->len)
        kapi_buf_putc(p, '.');
    kapi_buf_puts(p, key);
    return old;
}

static void pop(kapi_buf *p, size_t len)
{
    p->len = len;
    if (p->cap)
        p->ptr[len] = '\0';
}

static kapi_error *walk_member(walker *k, const kapi_schema *s, json_t *v, const char *key,
                               bool struct_field, const char *go_struct)
{
    size_t pl = push(&k->path, key), gl = k->go_path.len;
    if (struct_field)
        push(&k->go_path, key);
    kapi_error *err = walk(k, s, v, go_struct);
    pop(&k->path, pl);
    pop(&k->go_path, gl);
    return err;
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* True when obj's members are in the order reorder gives them already. */
static bool in_order(const kapi_schema *s, json_t *obj)
{
    const char *key, *prev = NULL;
    json_t *v;
    size_t at = 0; /* the schema position the next member may not precede */
    json_object_foreach(obj, key, v)
    {
        if (!s->nprops) {
            if (prev && strcmp(prev, key) >= 0)
                return false;
            prev = key;
            continue;
        }
        const kapi_schema_prop *p = kapi_schema__prop(s, key);
        size_t i = p ? (size_t)(p - s->props) : s->nprops;
        if (i < at)
            return false;
        at = i < s->nprops ? i + 1 : s->nprops;
    }
    return true;
}

/* Rebuilds obj with its members in schema order, then the rest; a map's keys sorted. */
static void reorder(const kapi_schema *s, json_t *obj)
{
    size_t n = json_object_size(obj);
    if (n < 2 || in_order(s, obj))
        return;
    const char **keys = kapi_xmalloc(n * sizeof(*keys));
    json_t **vals = kapi_xmalloc(n * sizeof(*vals));
    size_t m = 0;
    const char *key;
    json_t *v;
    if (s->nprops) {
        for (size_t i = 0; i < s->nprops; i++)
            if ((v = json_object_get(obj, s->props[i].name)) != NULL)
                keys[m++] = s->props[i].name;
        json_object_foreach(obj, key, v) if (!kapi_schema__prop(s, key)) keys[m++] = key;
    } else {
        json_object_foreach(obj, key, v) keys[m++] = key;
        qsort(keys, m, sizeof(*keys), key_cmp);
    }
    for (size_t i = 0; i < m; i++) {
        keys[i] = kapi_xstrdup(keys[i]);
        vals[i] = json_incref(json_object_get(obj, keys[i]));
    }
    json_object_clear(obj);
    for (size_t i = 0; i < m; i++) {
        json_object_set_new_nocheck(obj, keys[i], vals[i]);
        free((char *)keys[i]);
    }
    free(keys);
    free(vals);
}

/* apiVersion, kind and metadata: what an embedded resource keeps beside its schema. */
static bool is_meta_field(const char *key)
{
    return strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0 ||
           strcmp(key, "metadata") == 0;
}

static void defer_meta(walker *k, json_t *meta)
{
    kapi_schema_walk *w = k->w;
    if (k->ndeferred == k->deferred_cap) {
        size_t cap = k->deferred_cap ? 2 * k->deferred_cap : 4;
        deferred_meta *n = kapi_arena_alloc(w->arena, cap * sizeof(*n));
        if (k->ndeferred)
            memcpy(n, k->deferred, k->ndeferred * sizeof(*n));
        k->deferred = n;
        k->deferred_cap = cap;
    }
    k->deferred[k->ndeferred++] =
        (deferred_meta){meta, kapi_arena_printf(w->arena, "%.*s%smetadata", (int)k->path.len,
                                                k->path.ptr, k->path.len ? "." : "")};
}

static int unknown_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* go_struct is the Go struct the object's field belongs to; a map's values keep it. */
static kapi_error *walk_object(walker *k, const kapi_schema *s, json_t *obj, const char *go_struct)
{
    kapi_schema_walk *w = k->w;
    kapi_error *err = NULL;
    if (s->nprops)
        go_struct = s->go_name;
    bool keep_unknown = s->preserve_unknown || (!s->nprops && !s->additional);
    const char *key;
    json_t *v, *tmp;
    json_object_foreach_safe(obj, tmp, key, v)
    {
        if (s->embedded_resource && is_meta_field(key)) { /* kept as they are */
            if (strcmp(key, "metadata") == 0 && json_is_object(v) && w->embedded_meta)
                defer_meta(k, v);
            continue;
        }
        const kapi_schema_prop *p = kapi_schema__prop(s, key);
        const kapi_schema *child = p ? p->schema : s->additional;
        if (child && json_is_null(v) && (w->go_types || !child->nullable)) {
            json_object_del(obj, key);
            continue;
        }
        if (!child) {
            if (!keep_unknown) {
                record_unknown(k, key);
                json_object_del(obj, key);
            }
            continue;
        }
        json_t *text = as_quantity_text(child, v);
        if (text) {
            json_object_set_new_nocheck(obj, key, text);
            v = text;
        }
        if ((err = walk_member(k, child, v, key, p != NULL, go_struct)) != NULL)
            return err;
        if (p && p->omitempty && !p->keep_empty && w->go_types && kapi_schema_go_zero(v))
            json_object_del(obj, key);
    }
    if (w->defaults) {
        for (size_t i = 0; i < s->nprops; i++) {
            const kapi_schema_prop *p = &s->props[i];
            json_t *d = p->default_value ? p->default_value : p->emit;
            if (!d || json_object_get(obj, p->name))
                continue;
            json_t *copy = kapi_json_copy(d);
            json_object_set_new_nocheck(obj, p->name, copy);
            if (!json_is_null(copy) &&
                (err = walk_member(k, p->schema, copy, p->name, true, go_struct)) != NULL)
                return err;
        }
        if (s->defaulter_fn)
            s->defaulter_fn(obj);
    }
    if (w->reorder)
        reorder(s, obj);
    return NULL;
}

static kapi_error *walk_array(walker *k, const kapi_schema *s, json_t *arr, const char *go_struct)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (!s->items)
            break;
        json_t *text = as_quantity_text(s->items, v);
        if (text) {
            json_array_set_new(arr, i, text);
            v = text;
        }
        size_t pl = k->path.len;
        kapi_buf_printf(&k->path, "[%zu]", i);
        kapi_error *err = json_is_null(v) ? NULL : walk(k, s->items, v, go_struct);
        pop(&k->path, pl);
        if (err)
            return err;
    }
    return NULL;
}

/* A JSONSchemaPropsOr* union: schemas are walked as JSONSchemaProps, the rest kept. */
static kapi_error *walk_union(walker *k, const kapi_schema *s, json_t *v, const char *go_struct)
{
    if (json_is_object(v))
        return walk(k, s->or_schema, v, go_struct);
    if (!json_is_array(v))
        return NULL;
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x)
    {
        if (!json_is_object(x))
            continue;
        size_t pl = k->path.len;
        kapi_buf_printf(&k->path, "[%zu]", i);
        kapi_error *err = walk(k, s->or_schema, x, go_struct);
        pop(&k->path, pl);
        if (err)
            return err;
    }
    return NULL;
}

static kapi_error *walk(walker *k, const kapi_schema *s, json_t *v, const char *go_struct)
{
    if (s->or_schema)
        return walk_union(k, s, v, go_struct);
    if (is_any_node(s) && !s->int_or_string)
        return NULL;
    bool go = k->w->go_types;
    if (is_object_node(s)) {
        if (json_is_object(v))
            return walk_object(k, s, v, go_struct);
        return go ? type_error(k, s, v, go_struct, false) : NULL;
    }
    if (s->types & KAPI_SCHEMA_ARRAY) {
        if (json_is_array(v))
            return walk_array(k, s, v, go_struct);
        return go ? type_error(k, s, v, go_struct, false) : NULL;
    }
    return go ? check_scalar(k, s, v, go_struct) : NULL;
}

void kapi_schema_protobuf_nulls(const kapi_schema *s, json_t *v)
{
    size_t i;
    json_t *x;
    if (s->or_schema || is_any_node(s))
        return;
    if (json_is_array(v) && s->items) {
        json_array_foreach(v, i, x) kapi_schema_protobuf_nulls(s->items, x);
        return;
    }
    if (!json_is_object(v))
        return;
    for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
        x = json_object_iter_value(it);
        if (!json_is_array(x) && !json_is_object(x)) /* a scalar stays, and holds nothing */
            continue;
        const kapi_schema_prop *p = kapi_schema__prop(s, json_object_iter_key(it));
        const kapi_schema *child = p ? p->schema : s->additional;
        if (p && json_is_null(p->emit) && kapi_schema_go_zero(x))
            json_object_iter_set_new(v, it, json_null());
        else if (child)
            kapi_schema_protobuf_nulls(child, x);
    }
}

kapi_error *kapi_schema_decode(const kapi_schema *s, json_t *obj, kapi_schema_walk *w)
{
    walker k = {.w = w};
    size_t first = w->nunknown;
    kapi_buf_init(&k.path);
    kapi_buf_init(&k.go_path);
    kapi_error *err = walk(&k, s, obj, NULL);
    if (w->embedded_meta) { /* pruning's paths sorted, then the embedded metadata's */
        if (w->nunknown - first > 1)
            qsort(w->unknown + first, w->nunknown - first, sizeof(*w->unknown), unknown_cmp);
        bool go = w->go_types, defaults = w->defaults;
        w->go_types = false; /* a bad member is dropped, as Coerce drops invalid fields */
        w->defaults = false; /* nothing is added: Coerce only takes away */
        for (size_t i = 0; i < k.ndeferred && !err; i++) {
            k.path.len = 0;
            kapi_buf_puts(&k.path, k.deferred[i].path);
            err = walk(&k, w->embedded_meta, k.deferred[i].meta, NULL);
        }
        w->go_types = go;
        w->defaults = defaults;
    }
    kapi_buf_dispose(&k.path);
    kapi_buf_dispose(&k.go_path);
    return err;
}
