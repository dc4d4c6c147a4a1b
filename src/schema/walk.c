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

/* One step of the path to the value being walked: a member's key, or an array position.
 * Paths are only written out when a message needs one. */
typedef struct step {
    const char *key; /* NULL: an array position */
    size_t index;
    bool go; /* a struct field: a step of Go's field path too */
} step;

/* What a struct keeps of one of its properties while it is walked. */
typedef struct slot {
    json_t *v;  /* the member's value, borrowed from the object; NULL when absent */
    bool fresh; /* v is a default not set in the object yet (a new reference) */
} slot;

typedef struct walker {
    kapi_schema_walk *w;
    const char *base; /* the path the walk starts at ("" for an object's root) */
    step *steps;      /* a stack: the path from base */
    size_t nsteps, steps_cap;
    slot *slots; /* a stack: each struct being walked holds one per property */
    size_t nslots, slots_cap;
    deferred_meta *deferred;
    size_t ndeferred, deferred_cap;
} walker;

static kapi_error *walk(walker *k, const kapi_schema *s, json_t *v, const char *go_struct);

static void push_step(walker *k, step st)
{
    if (k->nsteps == k->steps_cap) {
        k->steps_cap = k->steps_cap ? 2 * k->steps_cap : 32;
        k->steps = kapi_xrealloc(k->steps, k->steps_cap * sizeof(*k->steps));
    }
    k->steps[k->nsteps++] = st;
}

/* Appends the path walked so far: a key after anything else follows a ".", a position is
 * "[i]" (spec.containers[0].name); go: Go's field stack, the struct fields' keys alone
 * (spec.containers.name). */
static void put_path(const walker *k, kapi_buf *b, bool go)
{
    size_t start = b->len;
    if (!go)
        kapi_buf_puts(b, k->base);
    for (size_t i = 0; i < k->nsteps; i++) {
        const step *st = &k->steps[i];
        if (go && !st->go)
            continue;
        if (!st->key) {
            kapi_buf_printf(b, "[%zu]", st->index);
            continue;
        }
        if (b->len > start)
            kapi_buf_putc(b, '.');
        kapi_buf_puts(b, st->key);
    }
}

/* The path walked so far, then "." and key when key is not NULL, in the walk's arena. */
static const char *path_to(const walker *k, const char *key)
{
    kapi_buf b;
    kapi_buf_init(&b);
    put_path(k, &b, false);
    if (key && b.len)
        kapi_buf_putc(&b, '.');
    if (key)
        kapi_buf_puts(&b, key);
    const char *path = kapi_arena_strndup(k->w->arena, b.ptr, b.len);
    kapi_buf_dispose(&b);
    return path;
}

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
    w->unknown[w->nunknown++] = path_to(k, key);
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
    kapi_buf field;
    kapi_buf_init(&field);
    put_path(k, &field, true);
    if (go_struct && field.len)
        kapi_buf_printf(&b, " into Go struct field %s.%s of type ", go_struct, field.ptr);
    else
        kapi_buf_puts(&b, " into Go value of type ");
    kapi_buf_dispose(&field);
    go_type(&b, s);
    kapi_error *err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%.*s", (int)b.len, b.ptr);
    kapi_buf_dispose(&b);
    return err;
}

/* ---- scalars ---- */

/* Makes the string v hold s, unless it does already (bytes and length). */
static void set_text(json_t *v, const char *s)
{
    size_t n = strlen(s);
    if (json_string_length(v) != n || memcmp(json_string_value(v), s, n) != 0)
        json_string_set(v, s);
}

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
        set_text(v, text.ptr);
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
            set_text(v, norm);
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

static kapi_error *walk_member(walker *k, const kapi_schema *s, json_t *v, const char *key,
                               bool struct_field, const char *go_struct)
{
    push_step(k, (step){key, 0, struct_field});
    kapi_error *err = walk(k, s, v, go_struct);
    k->nsteps--;
    return err;
}

/* walk for the element at index i of an array or union. */
static kapi_error *walk_element(walker *k, const kapi_schema *s, json_t *v, size_t i,
                                const char *go_struct)
{
    push_step(k, (step){NULL, i, false});
    kapi_error *err = walk(k, s, v, go_struct);
    k->nsteps--;
    return err;
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Rebuilds a map with its keys sorted, as Go writes maps, unless they are already. */
static void sort_map(json_t *obj)
{
    size_t n = json_object_size(obj), m = 0;
    const char *key, *prev = NULL;
    json_t *v;
    bool sorted = true;
    if (n < 2)
        return;
    json_object_foreach(obj, key, v)
    {
        sorted = sorted && (!prev || strcmp(prev, key) < 0);
        prev = key;
    }
    if (sorted)
        return;
    const char **keys = kapi_xmalloc(n * sizeof(*keys));
    json_t **vals = kapi_xmalloc(n * sizeof(*vals));
    json_object_foreach(obj, key, v) keys[m++] = key;
    qsort(keys, m, sizeof(*keys), key_cmp);
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

/* Whether a struct's members, as seen so far, are in schema order: its properties in their
 * order, then the other members. */
typedef struct order {
    size_t at;     /* the schema position the next member may not precede */
    size_t others; /* members that are not properties */
    bool ok;
} order;

/* Counts a member at schema position i (s->nprops: not a property). */
static void order_see(order *o, const kapi_schema *s, size_t i)
{
    if (i < o->at)
        o->ok = false;
    if (i == s->nprops)
        o->others++;
    o->at = i < s->nprops ? i + 1 : s->nprops;
}

/* Reserves a slot for each of n properties, empty; returns the first one's index. */
static size_t push_slots(walker *k, size_t n)
{
    size_t base = k->nslots;
    if (base + n > k->slots_cap) { /* 128: a pod template's structs, from the object down */
        size_t cap = k->slots_cap ? 2 * k->slots_cap : 128;
        k->slots_cap = cap > base + n ? cap : base + n;
        k->slots = kapi_xrealloc(k->slots, k->slots_cap * sizeof(*k->slots));
    }
    if (n) /* a struct without properties: no slots, perhaps no array yet */
        memset(k->slots + base, 0, n * sizeof(*k->slots));
    k->nslots = base + n;
    return base;
}

/* Drops the slots from base; failed: the walk stopped, and the defaults in them that were
 * never set are freed. */
static void pop_slots(walker *k, size_t base, bool failed)
{
    for (size_t i = base; failed && i < k->nslots; i++)
        if (k->slots[i].fresh)
            json_decref(k->slots[i].v);
    k->nslots = base;
}

/* The property called key, looked for from position from (wrapping round): members come
 * mostly in schema order, so the next one is mostly found at or soon after the last. */
static const kapi_schema_prop *find_prop(const kapi_schema *s, const char *key, size_t from)
{
    for (size_t n = 0, i = from; n < s->nprops; n++, i = i + 1 < s->nprops ? i + 1 : 0) {
        const kapi_schema_prop *p = &s->props[i];
        if (p->name[0] == key[0] && strcmp(p->name, key) == 0)
            return p;
    }
    return NULL;
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
    k->deferred[k->ndeferred++] = (deferred_meta){meta, path_to(k, "metadata")};
}

static int unknown_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Walks the member of obj at iterator it, whose property is p (NULL: none). *kept is its
 * value after the walk, or NULL when the walk dropped it: null, unknown, or zero and
 * omitempty. */
static kapi_error *walk_entry(walker *k, const kapi_schema *s, json_t *obj, void *it,
                              const kapi_schema_prop *p, const char *go_struct, json_t **kept)
{
    kapi_schema_walk *w = k->w;
    const char *key = json_object_iter_key(it);
    json_t *v = json_object_iter_value(it), *text;
    const kapi_schema *child = p ? p->schema : s->additional;
    *kept = v;
    if (s->embedded_resource && is_meta_field(key)) { /* kept as they are */
        if (strcmp(key, "metadata") == 0 && json_is_object(v) && w->embedded_meta)
            defer_meta(k, v);
        return NULL;
    }
    if (!child && (s->preserve_unknown || (!s->nprops && !s->additional)))
        return NULL;
    if (!child)
        record_unknown(k, key);
    if (!child || (json_is_null(v) && (w->go_types || !child->nullable))) {
        json_object_del(obj, key);
        *kept = NULL;
        return NULL;
    }
    if ((text = as_quantity_text(child, v)) != NULL) {
        json_object_iter_set_new(obj, it, text);
        *kept = v = text;
    }
    kapi_error *err = walk_member(k, child, v, key, p != NULL, go_struct);
    if (!err && p && p->omitempty && !p->keep_empty && w->go_types && kapi_schema_go_zero(v)) {
        json_object_del(obj, key);
        *kept = NULL;
    }
    return err;
}

/* Walks obj's members in their order; the value each property keeps goes to its slot
 * (from base). */
static kapi_error *walk_members(walker *k, const kapi_schema *s, json_t *obj, const char *go_struct,
                                size_t base, order *o)
{
    void *next;
    for (void *it = json_object_iter(obj); it; it = next) {
        next = json_object_iter_next(obj, it);
        const kapi_schema_prop *p =
            find_prop(s, json_object_iter_key(it), o->at < s->nprops ? o->at : 0);
        json_t *kept;
        kapi_error *err = walk_entry(k, s, obj, it, p, go_struct, &kept);
        if (err)
            return err;
        size_t i = p ? (size_t)(p - s->props) : s->nprops;
        if (kept)
            order_see(o, s, i);
        if (kept && p)
            k->slots[base + i].v = kept;
    }
    return NULL;
}

/* Gives each absent property its default, or the zero value Go writes for it, and walks
 * it. A value that would break schema order stays fresh in its slot, for put_in_order to
 * set; the others are set now (all of them when obj is not to be reordered or has a
 * defaulter to see them). */
static kapi_error *add_defaults(walker *k, const kapi_schema *s, json_t *obj, const char *go_struct,
                                size_t base, order *o)
{
    bool set_all = !k->w->reorder || s->defaulter_fn;
    for (size_t i = 0; i < s->nprops; i++) {
        const kapi_schema_prop *p = &s->props[i];
        json_t *d = p->default_value ? p->default_value : p->emit;
        if (!d || k->slots[base + i].v)
            continue;
        json_t *copy = kapi_json_copy(d);
        bool fresh = !set_all && (!o->ok || i < o->at);
        if (fresh)
            o->ok = false;
        else
            json_object_set_new_nocheck(obj, p->name, copy);
        order_see(o, s, i);
        k->slots[base + i] = (slot){copy, fresh};
        kapi_error *err =
            json_is_null(copy) ? NULL : walk_member(k, p->schema, copy, p->name, true, go_struct);
        if (err)
            return err;
    }
    return NULL;
}

/* Fills the slots (from base) and o again from obj's members as they are now. */
static void collect(walker *k, const kapi_schema *s, json_t *obj, size_t base, order *o)
{
    const char *key;
    json_t *v;
    if (s->nprops)
        memset(k->slots + base, 0, s->nprops * sizeof(*k->slots));
    *o = (order){.ok = true};
    json_object_foreach(obj, key, v)
    {
        const kapi_schema_prop *p = kapi_schema__prop(s, key);
        size_t i = p ? (size_t)(p - s->props) : s->nprops;
        order_see(o, s, i);
        if (p)
            k->slots[base + i].v = v;
    }
}

/* Rebuilds obj with the values of its slots (from base) in schema order, the fresh ones
 * included, then the members that are not properties as they were. */
static void put_in_order(walker *k, const kapi_schema *s, json_t *obj, size_t base, size_t others)
{
    slot *sl = k->slots + base;
    kapi_json_member *rest = kapi_xmalloc((others + 1) * sizeof(*rest));
    size_t m = 0;
    const char *key;
    json_t *v;
    if (others)
        json_object_foreach(obj, key, v) if (!kapi_schema__prop(s, key)) rest[m++] =
            (kapi_json_member){kapi_xstrdup(key), 0, json_incref(v)};
    for (size_t i = 0; i < s->nprops; i++)
        if (sl[i].v && !sl[i].fresh)
            json_incref(sl[i].v);
    json_object_clear(obj);
    for (size_t i = 0; i < s->nprops; i++) {
        if (sl[i].v)
            json_object_set_new_nocheck(obj, s->props[i].name, sl[i].v);
        sl[i].fresh = false;
    }
    for (size_t i = 0; i < m; i++) {
        json_object_set_new_nocheck(obj, rest[i].key, rest[i].value);
        free((char *)rest[i].key);
    }
    free(rest);
}

/* go_struct is the Go struct the object's field belongs to; a map's values keep it. A
 * struct's members are walked in their order, then its absent properties get their
 * defaults, its defaulter runs, and it is put in schema order: the slots hold what each
 * property keeps, so that neither step looks a member up by its key. */
static kapi_error *walk_object(walker *k, const kapi_schema *s, json_t *obj, const char *go_struct)
{
    kapi_schema_walk *w = k->w;
    if (s->nprops)
        go_struct = s->go_name;
    size_t base = push_slots(k, s->nprops);
    order o = {.ok = true};
    kapi_error *err = walk_members(k, s, obj, go_struct, base, &o);
    if (!err && w->defaults)
        err = add_defaults(k, s, obj, go_struct, base, &o);
    if (!err && w->defaults && s->defaulter_fn) {
        s->defaulter_fn(obj);
        collect(k, s, obj, base, &o);
    }
    if (!err && w->reorder && !s->nprops)
        sort_map(obj);
    else if (!err && w->reorder && !o.ok)
        put_in_order(k, s, obj, base, o.others);
    pop_slots(k, base, err != NULL);
    return err;
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
        kapi_error *err = json_is_null(v) ? NULL : walk_element(k, s->items, v, i, go_struct);
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
        kapi_error *err = json_is_object(x) ? walk_element(k, s->or_schema, x, i, go_struct) : NULL;
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
    walker k = {.w = w, .base = ""};
    size_t first = w->nunknown;
    kapi_error *err = walk(&k, s, obj, NULL);
    if (w->embedded_meta) { /* pruning's paths sorted, then the embedded metadata's */
        if (w->nunknown - first > 1)
            qsort(w->unknown + first, w->nunknown - first, sizeof(*w->unknown), unknown_cmp);
        bool go = w->go_types, defaults = w->defaults;
        w->go_types = false; /* a bad member is dropped, as Coerce drops invalid fields */
        w->defaults = false; /* nothing is added: Coerce only takes away */
        for (size_t i = 0; i < k.ndeferred && !err; i++) {
            k.base = k.deferred[i].path;
            err = walk(&k, w->embedded_meta, k.deferred[i].meta, NULL);
        }
        w->go_types = go;
        w->defaults = defaults;
    }
    free(k.steps);
    free(k.slots);
    return err;
}
