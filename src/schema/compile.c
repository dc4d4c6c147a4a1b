/*
 * schema/compile: JSON schemas into kapi_schema trees.
 *
 * A set's definitions are allocated first and filled afterwards, so that a $ref may
 * point at any definition, itself included (JSONSchemaProps is recursive). Every node
 * and string lives in the arena of its set or root; the JSON they came from is kept
 * alive by the same owner.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "schema/schema.h"
#include "schema/schema_int.h"

typedef struct defaulter_entry {
    const char *name;
    kapi_schema_defaulter_fn fn;
} defaulter_entry;

struct kapi_schema_set {
    kapi_arena arena;
    json_t *defs; /* name → schema JSON, merged from every kapi_schema_set_add */
    /* Definitions by name, sorted after compile for bsearch. */
    kapi_schema **nodes;
    size_t nnodes;
    defaulter_entry *defaulters;
    size_t ndefaulters;
};

struct kapi_schema_root {
    kapi_arena arena;
    json_t *src;
    const kapi_schema *node;
};

typedef struct compiler {
    kapi_arena *arena;
    const kapi_schema_set *set; /* NULL for a standalone schema: $ref is an error */
    bool patterns;              /* compile patterns (not for a walk-only schema) */
    kapi_error *err;
} compiler;

static kapi_schema *node_of(compiler *c, const json_t *j, const char *path);

static kapi_error *compile_error(const char *path, const char *what)
{
    return kapi_error_new(KAPI_STATUS_INVALID, "%s: %s", *path ? path : "<root>", what);
}

static void fail(compiler *c, const char *path, const char *what)
{
    if (!c->err)
        c->err = compile_error(path, what);
}

static const char *child_path(compiler *c, const char *path, const char *key)
{
    return kapi_arena_printf(c->arena, "%s%s%s", path, *path ? "." : "", key);
}

static const char *dup_str(compiler *c, const json_t *v)
{
    const char *s = json_string_value(v);
    return s ? kapi_arena_strdup(c->arena, s) : NULL;
}

static const char *const *str_list(compiler *c, const json_t *arr, const char *path)
{
    if (!arr)
        return NULL;
    if (!json_is_array(arr)) {
        fail(c, path, "must be an array of strings");
        return NULL;
    }
    const char **out = kapi_arena_alloc(c->arena, (json_array_size(arr) + 1) * sizeof(*out));
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (!json_is_string(v)) {
            fail(c, path, "must be an array of strings");
            return NULL;
        }
        out[i] = kapi_arena_strdup(c->arena, json_string_value(v));
    }
    return out;
}

static unsigned type_bit(const char *t)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {
        {"object", KAPI_SCHEMA_OBJECT}, {"array", KAPI_SCHEMA_ARRAY},
        {"string", KAPI_SCHEMA_STRING}, {"integer", KAPI_SCHEMA_INTEGER},
        {"number", KAPI_SCHEMA_NUMBER}, {"boolean", KAPI_SCHEMA_BOOLEAN},
        {"null", KAPI_SCHEMA_NULL},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(names); i++)
        if (strcmp(t, names[i].name) == 0)
            return names[i].bit;
    return 0;
}

static void compile_types(compiler *c, kapi_schema *n, const json_t *t, const char *path)
{
    if (!t)
        return;
    if (json_is_string(t)) {
        n->types = type_bit(json_string_value(t));
        if (!n->types)
            fail(c, path, "unknown type");
        return;
    }
    size_t i;
    json_t *v;
    if (!json_is_array(t)) {
        fail(c, path, "type must be a string or an array of strings");
        return;
    }
    json_array_foreach(t, i, v)
    {
        unsigned b = json_is_string(v) ? type_bit(json_string_value(v)) : 0;
        if (!b) {
            fail(c, path, "unknown type");
            return;
        }
        n->types |= b;
    }
}

static int64_t int_kw(compiler *c, const json_t *j, const char *key, const char *path)
{
    json_t *v = json_object_get(j, key);
    if (!v)
        return -1;
    if (json_is_integer(v) && json_integer_value(v) >= 0)
        return json_integer_value(v);
    if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 0x1p63 &&
        json_real_value(v) == floor(json_real_value(v)))
        return (int64_t)json_real_value(v);
    fail(c, child_path(c, path, key), "must be a non-negative integer");
    return -1;
}

static void bound(compiler *c, const json_t *j, const char *key, const char *excl,
                  kapi_schema_bound *b, const char *path)
{
    json_t *v = json_object_get(j, key);
    if (!v)
        return;
    if (!json_is_number(v)) {
        fail(c, child_path(c, path, key), "must be a number");
        return;
    }
    b->set = true;
    b->value = json_number_value(v);
    b->exclusive = json_is_true(json_object_get(j, excl));
}

/* A pattern is compiled once, with the schema, as Go's regexp.Compile (base/regex.h). */
static void compile_pattern(compiler *c, kapi_schema *n, const json_t *j, const char *path)
{
    json_t *v = json_object_get(j, "pattern");
    if (!v || !c->patterns)
        return;
    if (!json_is_string(v)) {
        fail(c, child_path(c, path, "pattern"), "must be a string");
        return;
    }
    n->pattern = dup_str(c, v);
    char *why = kapi_regex_new(json_string_value(v), json_string_length(v), &n->pattern_re);
    if (why)
        fail(c, child_path(c, path, "pattern"),
             kapi_arena_printf(c->arena, "must be a valid regular expression, but isn't: %s", why));
    free(why);
}

static const kapi_schema *const *node_list(compiler *c, const json_t *arr, const char *path)
{
    if (!arr)
        return NULL;
    if (!json_is_array(arr) || json_array_size(arr) == 0) {
        fail(c, path, "must be a non-empty array of schemas");
        return NULL;
    }
    const kapi_schema **out = kapi_arena_alloc(c->arena, (json_array_size(arr) + 1) * sizeof(*out));
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) out[i] =
        node_of(c, v, kapi_arena_printf(c->arena, "%s[%zu]", path, i));
    return out;
}

static void compile_props(compiler *c, kapi_schema *n, const json_t *props, const char *path)
{
    if (!json_is_object(props)) {
        fail(c, path, "must be an object");
        return;
    }
    n->nprops = json_object_size(props);
    n->props = kapi_arena_alloc(c->arena, n->nprops * sizeof(*n->props) + 1);
    size_t i = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)props, key, v)
    {
        kapi_schema_prop *p = &n->props[i++];
        const char *ppath = child_path(c, path, key);
        p->name = kapi_arena_strdup(c->arena, key);
        p->schema = node_of(c, v, ppath);
        p->description = dup_str(c, json_object_get(v, "description"));
        p->default_value = json_object_get(v, "default");
        p->emit = json_object_get(v, "x-kapi-emit");
        p->protobuf = (int)json_integer_value(json_object_get(v, "x-kapi-protobuf"));
        p->omitempty = json_is_true(json_object_get(v, "x-kapi-omitempty"));
        p->keep_empty = json_is_true(json_object_get(v, "x-kapi-keep-empty"));
    }
}

/* What a standalone (CRD) schema may not use, in apiextensions' words: keywords that
 * are not structural, tuple items, a type that is not one string, type null. */
static void check_structural(compiler *c, const json_t *j, const char *path)
{
    static const char *const unsupported[] = {"id", "additionalItems", "patternProperties",
                                              "definitions", "dependencies"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(unsupported); i++)
        if (json_object_get(j, unsupported[i]))
            fail(c, child_path(c, path, unsupported[i]),
                 kapi_arena_printf(c->arena, "%s is not supported", unsupported[i]));
    if (json_is_array(json_object_get(j, "items")))
        fail(c, child_path(c, path, "items"), "items must be a schema object and not an array");
    json_t *type = json_object_get(j, "type");
    if (type && !json_is_string(type))
        fail(c, child_path(c, path, "type"), "must be a string");
    else if (type && strcmp(json_string_value(type), "null") == 0)
        fail(c, child_path(c, path, "type"),
             "type cannot be set to null, use nullable as an alternative");
}

/* The Go type a definition's values are read as, by the end of its name. */
static kapi_schema_go_value go_value_of(const char *def_name)
{
    static const struct {
        const char *suffix;
        kapi_schema_go_value v;
    } special[] = {
        {".meta.v1.Time", KAPI_SCHEMA_GO_TIME},
        {".meta.v1.MicroTime", KAPI_SCHEMA_GO_MICROTIME},
        {".resource.Quantity", KAPI_SCHEMA_GO_QUANTITY},
    };
    size_t n = def_name ? strlen(def_name) : 0;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(special); i++) {
        size_t m = strlen(special[i].suffix);
        if (n >= m && strcmp(def_name + n - m, special[i].suffix) == 0)
            return special[i].v;
    }
    return KAPI_SCHEMA_GO_PLAIN;
}

/* Fills n from j (an object schema). */
static void fill(compiler *c, kapi_schema *n, const json_t *j, const char *path)
{
    if (!json_is_object(j)) {
        fail(c, path, "a schema must be an object");
        return;
    }
    if (!c->set)
        check_structural(c, j, path);
    n->src = j;
    n->go_value = go_value_of(n->def_name);
    compile_types(c, n, json_object_get(j, "type"), child_path(c, path, "type"));
    n->format = dup_str(c, json_object_get(j, "format"));
    n->description = dup_str(c, json_object_get(j, "description"));
    n->nullable = json_is_true(json_object_get(j, "nullable"));
    n->enum_values = json_object_get(j, "enum");
    n->default_value = json_object_get(j, "default");
    if (n->enum_values && !json_is_array(n->enum_values))
        fail(c, child_path(c, path, "enum"), "must be an array");

    json_t *props = json_object_get(j, "properties");
    if (props)
        compile_props(c, n, props, child_path(c, path, "properties"));
    json_t *add = json_object_get(j, "additionalProperties");
    if (json_is_false(add))
        n->additional_false = true;
    else if (json_is_object(add))
        n->additional = node_of(c, add, child_path(c, path, "additionalProperties"));
    n->required = str_list(c, json_object_get(j, "required"), child_path(c, path, "required"));
    n->required_on_create = str_list(c, json_object_get(j, "x-kapi-required-on-create"),
                                     child_path(c, path, "x-kapi-required-on-create"));
    n->min_props = int_kw(c, j, "minProperties", path);
    n->max_props = int_kw(c, j, "maxProperties", path);

    json_t *items = json_object_get(j, "items");
    if (json_is_object(items))
        n->items = node_of(c, items, child_path(c, path, "items"));
    else if (items)
        fail(c, child_path(c, path, "items"), "must be a schema");
    n->min_items = int_kw(c, j, "minItems", path);
    n->max_items = int_kw(c, j, "maxItems", path);
    n->unique_items = json_is_true(json_object_get(j, "uniqueItems"));

    n->min_length = int_kw(c, j, "minLength", path);
    n->max_length = int_kw(c, j, "maxLength", path);
    compile_pattern(c, n, j, path);

    bound(c, j, "minimum", "exclusiveMinimum", &n->minimum, path);
    bound(c, j, "maximum", "exclusiveMaximum", &n->maximum, path);
    json_t *mo = json_object_get(j, "multipleOf");
    if (mo && (!json_is_number(mo) || json_number_value(mo) <= 0))
        fail(c, child_path(c, path, "multipleOf"), "must be a positive number");
    else if (mo)
        n->multiple_of = json_number_value(mo);

    n->all_of = node_list(c, json_object_get(j, "allOf"), child_path(c, path, "allOf"));
    n->any_of = node_list(c, json_object_get(j, "anyOf"), child_path(c, path, "anyOf"));
    n->one_of = node_list(c, json_object_get(j, "oneOf"), child_path(c, path, "oneOf"));
    json_t *not_src = json_object_get(j, "not");
    if (not_src)
        n->not_schema = node_of(c, not_src, child_path(c, path, "not"));

    n->int_or_string = json_is_true(json_object_get(j, "x-kubernetes-int-or-string"));
    if (n->int_or_string && !n->types)
        n->types = KAPI_SCHEMA_INTEGER | KAPI_SCHEMA_STRING;
    n->embedded_resource = json_is_true(json_object_get(j, "x-kubernetes-embedded-resource"));
    n->preserve_unknown = json_is_true(json_object_get(j, "x-kubernetes-preserve-unknown-fields"));
    n->list_type = dup_str(c, json_object_get(j, "x-kubernetes-list-type"));
    n->list_map_keys = str_list(c, json_object_get(j, "x-kubernetes-list-map-keys"),
                                child_path(c, path, "x-kubernetes-list-map-keys"));
    n->map_type = dup_str(c, json_object_get(j, "x-kubernetes-map-type"));
    n->patch_strategy = dup_str(c, json_object_get(j, "x-kubernetes-patch-strategy"));
    n->patch_merge_key = dup_str(c, json_object_get(j, "x-kubernetes-patch-merge-key"));
    n->gvk = json_object_get(j, "x-kubernetes-group-version-kind");
    n->defaulter = dup_str(c, json_object_get(j, "x-kapi-defaulter"));
}

static int node_cmp(const void *a, const void *b)
{
    return strcmp((*(kapi_schema *const *)a)->def_name, (*(kapi_schema *const *)b)->def_name);
}

static kapi_schema *lookup(const kapi_schema_set *s, const char *name)
{
    kapi_schema key = {.def_name = name}, *kp = &key;
    kapi_schema **found = bsearch(&kp, s->nodes, s->nnodes, sizeof(*s->nodes), node_cmp);
    return found ? *found : NULL;
}

/* The node of a schema JSON: the target of a $ref, or a new inline node. */
static kapi_schema *node_of(compiler *c, const json_t *j, const char *path)
{
    const char *ref = json_string_value(json_object_get(j, "$ref"));
    if (ref) {
        static const char prefix[] = "#/definitions/";
        kapi_schema *target = NULL;
        if (c->set && strncmp(ref, prefix, sizeof(prefix) - 1) == 0)
            target = lookup(c->set, ref + sizeof(prefix) - 1);
        if (!target) {
            fail(c, child_path(c, path, "$ref"),
                 c->set ? "names no definition" : "$ref is not supported");
            return kapi_arena_alloc(c->arena, sizeof(kapi_schema));
        }
        return target;
    }
    kapi_schema *n = kapi_arena_alloc(c->arena, sizeof(*n));
    fill(c, n, j, path);
    return n;
}

kapi_schema_set *kapi_schema_set_new(void)
{
    kapi_schema_set *s = kapi_xcalloc(1, sizeof(*s));
    kapi_arena_init(&s->arena);
    s->defs = json_object();
    return s;
}

static void free_node_patterns(const kapi_schema *n);

void kapi_schema_set_free(kapi_schema_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nnodes; i++)
        free_node_patterns(s->nodes[i]);
    json_decref(s->defs);
    free(s->nodes);
    free(s->defaulters);
    kapi_arena_dispose(&s->arena);
    free(s);
}

kapi_error *kapi_schema_set_add(kapi_schema_set *s, json_t *definitions)
{
    if (!json_is_object(definitions))
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "schema definitions must be an object");
    const char *name;
    json_t *v;
    json_object_foreach(definitions, name, v)
    {
        if (json_object_get(s->defs, name))
            return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "schema %s is defined twice", name);
        json_object_set_nocheck(s->defs, name, v);
    }
    return NULL;
}

void kapi_schema_set_defaulter(kapi_schema_set *s, const char *name, kapi_schema_defaulter_fn fn)
{
    s->defaulters = kapi_xrealloc(s->defaulters, (s->ndefaulters + 1) * sizeof(*s->defaulters));
    s->defaulters[s->ndefaulters++] = (defaulter_entry){name, fn};
}

static kapi_schema_defaulter_fn find_defaulter(const kapi_schema_set *s, const char *name)
{
    for (size_t i = 0; i < s->ndefaulters; i++)
        if (strcmp(s->defaulters[i].name, name) == 0)
            return s->defaulters[i].fn;
    return NULL;
}

/* The Go type name of a definition: its last dotted part. */
static const char *go_name(kapi_arena *a, const char *def)
{
    const char *dot = strrchr(def, '.');
    return kapi_arena_strdup(a, dot ? dot + 1 : def);
}

/* Go decodes the JSONSchemaPropsOr* unions into JSONSchemaProps (see or_schema). */
static void link_or_schemas(kapi_schema_set *s)
{
    static const char *const unions[] = {"JSONSchemaPropsOrArray", "JSONSchemaPropsOrBool",
                                         "JSONSchemaPropsOrStringArray"};
    for (size_t i = 0; i < s->nnodes; i++) {
        kapi_schema *n = s->nodes[i];
        for (size_t u = 0; u < KAPI_ARRAY_LEN(unions); u++) {
            if (strcmp(n->go_name, unions[u]) != 0)
                continue;
            size_t prefix = strlen(n->def_name) - strlen(unions[u]);
            char *props =
                kapi_arena_printf(&s->arena, "%.*sJSONSchemaProps", (int)prefix, n->def_name);
            n->or_schema = lookup(s, props);
        }
    }
}

kapi_error *kapi_schema_set_compile(kapi_schema_set *s)
{
    s->nnodes = json_object_size(s->defs);
    s->nodes = kapi_xcalloc(s->nnodes ? s->nnodes : 1, sizeof(*s->nodes));
    size_t i = 0;
    const char *name;
    json_t *v;
    json_object_foreach(s->defs, name, v)
    {
        kapi_schema *n = kapi_arena_alloc(&s->arena, sizeof(*n));
        n->def_name = kapi_arena_strdup(&s->arena, name);
        n->go_name = go_name(&s->arena, name);
        s->nodes[i++] = n;
    }
    qsort(s->nodes, s->nnodes, sizeof(*s->nodes), node_cmp);
    compiler c = {.arena = &s->arena, .set = s, .patterns = true};
    link_or_schemas(s);
    for (i = 0; i < s->nnodes && !c.err; i++) {
        kapi_schema *n = s->nodes[i];
        fill(&c, n, json_object_get(s->defs, n->def_name), n->def_name);
        if (n->defaulter && !(n->defaulter_fn = find_defaulter(s, n->defaulter)))
            fail(&c, n->def_name, "x-kapi-defaulter names no registered defaulter");
    }
    return c.err;
}

const kapi_schema *kapi_schema_set_get(const kapi_schema_set *s, const char *name)
{
    return lookup(s, name);
}

const json_t *kapi_schema_set_definitions(const kapi_schema_set *s)
{
    return s->defs;
}

static kapi_error *compile_root(const json_t *src, bool patterns, kapi_schema_root **out)
{
    kapi_schema_root *r = kapi_xcalloc(1, sizeof(*r));
    kapi_arena_init(&r->arena);
    r->src = kapi_json_copy(src);
    compiler c = {.arena = &r->arena, .patterns = patterns};
    kapi_schema *root = node_of(&c, r->src, "");
    r->node = root;
    if (!c.err && patterns)
        kapi_schema__compile_rules(&r->arena, root);
    if (c.err) {
        kapi_schema_root_free(r);
        *out = NULL;
        return c.err;
    }
    *out = r;
    return NULL;
}

kapi_error *kapi_schema_compile(const json_t *src, kapi_schema_root **out)
{
    return compile_root(src, true, out);
}

kapi_error *kapi_schema_compile_walk(const json_t *src, kapi_schema_root **out)
{
    return compile_root(src, false, out);
}

const kapi_schema *kapi_schema_root_node(const kapi_schema_root *r)
{
    return r->node;
}

/* Patterns and rules are the only heap memory of a node (their compiled programs). Definitions are
 * freed one by one; an inline node is reached from exactly one parent. */
static void free_children(const kapi_schema *n)
{
    for (size_t i = 0; i < n->nprops; i++)
        if (!n->props[i].schema->def_name)
            free_node_patterns(n->props[i].schema);
    const kapi_schema *kids[] = {n->additional, n->items, n->not_schema};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(kids); i++)
        if (kids[i] && !kids[i]->def_name)
            free_node_patterns(kids[i]);
    const kapi_schema *const *lists[] = {n->all_of, n->any_of, n->one_of};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(lists); i++)
        for (const kapi_schema *const *l = lists[i]; l && *l; l++)
            if (!(*l)->def_name)
                free_node_patterns(*l);
}

static void free_node_patterns(const kapi_schema *n)
{
    kapi_regex_free(n->pattern_re);
    kapi_schema__free_rules(n);
    free_children(n);
}

void kapi_schema_root_free(kapi_schema_root *r)
{
    if (!r)
        return;
    if (r->node)
        free_node_patterns(r->node);
    json_decref(r->src);
    kapi_arena_dispose(&r->arena);
    free(r);
}
