/*
 * schema/structural: the rules a CustomResourceDefinition's openAPIV3Schema must follow,
 * as apiextensions-apiserver 1.26 enforces them (schema.h, "CRD schemas"), on the schema
 * as JSON (apiextensions.k8s.io/v1 JSONSchemaProps: a member is set when present and not
 * null).
 *
 * Three passes, in kube's order, each with kube's words:
 *   1. The structural conversion (NewStructural): members a structural schema cannot
 *      hold at all ('id', '$ref', 'patternProperties', ..., items as a list,
 *      x-kubernetes-preserve-unknown-fields false). Its error is reported only when
 *      nothing else is wrong, as one Invalid cause on the root.
 *   2. ValidateStructural: the invariants (a type on every node but under int-or-string
 *      or preserve-unknown-fields, metadata at the root restricted to name and
 *      generateName, value validations under junctors free of generics and extensions,
 *      patterns that compile, ...) and the completeness of the junctors' fields; these
 *      causes are sorted by their text, as Go sorts them. Only when there are none:
 *      the defaults, each valid against its schema and already pruned (ValidateDefaults).
 *   3. ValidateCustomResourceDefinitionOpenAPISchema: forbidden keywords, defaults where
 *      they are not allowed, additionalProperties with properties, the list-type,
 *      list-map-keys and map-type rules, and the x-kubernetes-validations rule and
 *      message shapes (their CEL compilation is the CEL issue's).
 */
#include <stdlib.h>
#include <string.h>

#include "base/regex.h"
#include "schema/field.h"
#include "schema/schema.h"

/* ---- reading JSONSchemaProps ---- */

static const json_t *get(const json_t *s, const char *key)
{
    const json_t *v = json_object_get(s, key);
    return json_is_null(v) ? NULL : v;
}

static const char *str(const json_t *s, const char *key)
{
    const char *v = json_string_value(get(s, key));
    return v ? v : "";
}

static bool flag(const json_t *s, const char *key)
{
    return json_is_true(get(s, key));
}

/* The single items schema (NULL when absent or a list). */
static const json_t *items_of(const json_t *s)
{
    const json_t *i = get(s, "items");
    return json_is_object(i) ? i : NULL;
}

static size_t nprops(const json_t *s)
{
    return json_object_size(get(s, "properties"));
}

static const json_t *prop(const json_t *s, const char *k)
{
    return json_object_get(get(s, "properties"), k);
}

/* additionalProperties as a schema (NULL when absent or a boolean). */
static const json_t *additional_schema(const json_t *s)
{
    const json_t *a = get(s, "additionalProperties");
    return json_is_object(a) ? a : NULL;
}

static bool nonempty(const json_t *s, const char *key)
{
    const json_t *v = get(s, key);
    return json_is_object(v)  ? json_object_size(v) > 0
           : json_is_array(v) ? json_array_size(v) > 0
                              : v != NULL;
}

/* OpenAPI v3's types, the only ones a CRD may name (openapiV3Types). */
static const char *const openapi_types[] = {"array",  "boolean", "integer", "number",
                                            "object", "string",  NULL};

typedef struct ctx {
    kapi_arena *a;
    kapi_error *err;
} ctx;

static const char *child(ctx *c, const char *path, const char *name)
{
    return kapi_path_child(c->a, path, name);
}

static const char *key_path(ctx *c, const char *path, const char *under, const char *k)
{
    return kapi_path_key(c->a, child(c, path, under), k);
}

static const char *index_path(ctx *c, const char *path, const char *under, size_t i)
{
    return kapi_path_index(c->a, child(c, path, under), i);
}

/* The type a keyword needs (want): Required when the node has none, Invalid when it has
 * another, with kube's words (why). */
static void type_must_be(ctx *c, const json_t *s, const char *path, const char *want,
                         const char *why)
{
    const char *type = str(s, "type");
    if (strcmp(type, want) == 0)
        return;
    if (!*type)
        kapi_field_required(c->err, child(c, path, "type"), why);
    else
        kapi_field_invalid_str(c->err, child(c, path, "type"), type, "%s", why);
}

/* ---- 1. the structural conversion ---- */

static const char *unsupported(const json_t *s)
{
    if (*str(s, "id"))
        return "OpenAPIV3Schema 'id' is not supported";
    if (*str(s, "$schema"))
        return "OpenAPIV3Schema 'schema' is not supported";
    if (*str(s, "$ref"))
        return "OpenAPIV3Schema '$ref' is not supported";
    if (json_object_size(get(s, "patternProperties")))
        return "OpenAPIV3Schema 'patternProperties' is not supported";
    if (json_object_size(get(s, "dependencies")))
        return "OpenAPIV3Schema 'dependencies' is not supported";
    if (get(s, "additionalItems"))
        return "OpenAPIV3Schema 'additionalItems' is not supported";
    if (json_object_size(get(s, "definitions")))
        return "OpenAPIV3Schema 'definitions' is not supported";
    return NULL;
}

static const char *conversion_error(const json_t *s, bool nested);

static const char *junctor_errors(const json_t *s)
{
    static const char *const junctors[] = {"allOf", "anyOf", "oneOf"};
    const char *why;
    if (get(s, "not") && (why = conversion_error(get(s, "not"), true)) != NULL)
        return why;
    for (size_t j = 0; j < KAPI_ARRAY_LEN(junctors); j++) {
        const json_t *l = get(s, junctors[j]);
        for (size_t i = 0; i < json_array_size(l); i++)
            if ((why = conversion_error(json_array_get(l, i), true)) != NULL)
                return why;
    }
    return NULL;
}

/* NewStructural (nested: newNestedValueValidation): the first error, in kube's order. */
static const char *conversion_error(const json_t *s, bool nested)
{
    const char *why, *k;
    json_t *v;
    if (!json_is_object(s))
        return NULL;
    if ((why = unsupported(s)) != NULL || (why = junctor_errors(s)) != NULL)
        return why;
    if (additional_schema(s) && (why = conversion_error(additional_schema(s), false)) != NULL)
        return why;
    const json_t *preserve = get(s, "x-kubernetes-preserve-unknown-fields");
    if (json_is_false(preserve))
        return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined";
    if (json_is_array(get(s, "items")))
        return "OpenAPIV3Schema 'items' must be a schema, but is an array";
    if (items_of(s) && (why = conversion_error(items_of(s), nested)) != NULL)
        return why;
    json_object_foreach((json_t *)get(s, "properties"), k, v)
    {
        if ((why = conversion_error(v, nested)) != NULL)
            return why;
    }
    return NULL;
}

/* ---- 2. ValidateStructural ---- */

typedef enum level { ROOT, ITEM, FIELD } level;

static void invariants(ctx *c, const json_t *s, level lvl, const char *path);

/* {"type":"integer"} then {"type":"string"}: x-kubernetes-int-or-string's anyOf. */
static bool int_or_string_any_of(const json_t *any)
{
    static const char *const types[] = {"integer", "string"};
    if (json_array_size(any) != 2)
        return false;
    for (size_t i = 0; i < 2; i++) {
        const json_t *e = json_array_get(any, i);
        if (json_object_size(e) != 1 || strcmp(str(e, "type"), types[i]) != 0)
            return false;
    }
    return true;
}

static void nested(ctx *c, const json_t *v, bool skip_any_of, const char *path);

static void check_pattern(ctx *c, const json_t *s, const char *path)
{
    const json_t *p = get(s, "pattern");
    if (!json_is_string(p) || !json_string_length(p))
        return;
    kapi_regex *re;
    char *why = kapi_regex_new(json_string_value(p), json_string_length(p), &re);
    kapi_regex_free(re);
    if (why)
        kapi_field_invalid_str(c->err, child(c, path, "pattern"), json_string_value(p),
                               "must be a valid regular expression, but isn't: %s", why);
    free(why);
}

/* validateValueValidation */
static void value_validation(ctx *c, const json_t *s, bool skip_any_of,
                             bool skip_first_all_of_any_of, const char *path)
{
    const json_t *any = get(s, "anyOf"), *all = get(s, "allOf"), *one = get(s, "oneOf");
    for (size_t i = 0; !skip_any_of && i < json_array_size(any); i++)
        nested(c, json_array_get(any, i), false, index_path(c, path, "anyOf", i));
    for (size_t i = 0; i < json_array_size(all); i++)
        nested(c, json_array_get(all, i), skip_first_all_of_any_of && i == 0,
               index_path(c, path, "allOf", i));
    for (size_t i = 0; i < json_array_size(one); i++)
        nested(c, json_array_get(one, i), false, index_path(c, path, "oneOf", i));
    if (json_is_object(get(s, "not")))
        nested(c, get(s, "not"), false, child(c, path, "not"));
    check_pattern(c, s, path);
}

/* validateNestedValueValidation: a junctor's schema holds value validations only. */
static void nested(ctx *c, const json_t *v, bool skip_any_of, const char *path)
{
    static const char *const must_be_empty = "must be empty to be structural";
    static const char *const must_be_undefined = "must be undefined to be structural";
    static const char *const must_be_false = "must be false to be structural";
    const char *k;
    json_t *p;
    if (!json_is_object(v))
        return;
    value_validation(c, v, skip_any_of, false, path);
    if (items_of(v))
        nested(c, items_of(v), false, child(c, path, "items"));
    json_object_foreach((json_t *)get(v, "properties"), k, p)
    {
        nested(c, p, false, key_path(c, path, "properties", k));
    }
    if (*str(v, "type"))
        kapi_field_forbidden(c->err, child(c, path, "type"), must_be_empty);
    if (get(v, "additionalProperties"))
        kapi_field_forbidden(c->err, child(c, path, "additionalProperties"), must_be_undefined);
    if (get(v, "default"))
        kapi_field_forbidden(c->err, child(c, path, "default"), must_be_undefined);
    if (*str(v, "title"))
        kapi_field_forbidden(c->err, child(c, path, "title"), must_be_empty);
    if (*str(v, "description"))
        kapi_field_forbidden(c->err, child(c, path, "description"), must_be_empty);
    if (flag(v, "nullable"))
        kapi_field_forbidden(c->err, child(c, path, "nullable"), must_be_false);
    if (flag(v, "x-kubernetes-preserve-unknown-fields"))
        kapi_field_forbidden(c->err, child(c, path, "x-kubernetes-preserve-unknown-fields"),
                             must_be_false);
    if (flag(v, "x-kubernetes-embedded-resource"))
        kapi_field_forbidden(c->err, child(c, path, "x-kubernetes-embedded-resource"),
                             must_be_false);
    if (flag(v, "x-kubernetes-int-or-string"))
        kapi_field_forbidden(c->err, child(c, path, "x-kubernetes-int-or-string"), must_be_false);
    if (json_array_size(get(v, "x-kubernetes-list-map-keys")))
        kapi_field_forbidden(c->err, child(c, path, "x-kubernetes-list-map-keys"), must_be_empty);
    if (get(v, "x-kubernetes-list-type"))
        kapi_field_forbidden(c->err, child(c, path, "x-kubernetes-list-type"), must_be_undefined);
    if (get(v, "x-kubernetes-map-type"))
        kapi_field_forbidden(c->err, child(c, path, "x-kubernetes-map-type"), must_be_undefined);
    if (json_array_size(get(v, "x-kubernetes-validations")))
        kapi_field_forbidden(c->err, child(c, path, "x-kubernetes-validations"), must_be_empty);
    if (prop(v, "metadata"))
        kapi_field_forbidden(c->err, key_path(c, path, "properties", "metadata"),
                             "must not be specified in a nested context");
}

/* What is left of the root's metadata schema once name/generateName-only properties, its
 * type and its default are set aside (as kube compares it with an empty structural
 * schema): anything makes it forbidden. */
static bool metadata_says_more(const json_t *m)
{
    static const char *const strings[] = {"description", "title", "format", "pattern"};
    static const char *const flags[] = {"nullable",
                                        "x-kubernetes-preserve-unknown-fields",
                                        "x-kubernetes-embedded-resource",
                                        "x-kubernetes-int-or-string",
                                        "exclusiveMaximum",
                                        "exclusiveMinimum",
                                        "uniqueItems"};
    static const char *const set[] = {"additionalProperties",
                                      "x-kubernetes-list-type",
                                      "x-kubernetes-map-type",
                                      "maximum",
                                      "minimum",
                                      "maxLength",
                                      "minLength",
                                      "maxItems",
                                      "minItems",
                                      "multipleOf",
                                      "maxProperties",
                                      "minProperties",
                                      "required",
                                      "not",
                                      "items"};
    static const char *const lists[] = {"x-kubernetes-list-map-keys",
                                        "x-kubernetes-validations",
                                        "enum",
                                        "allOf",
                                        "oneOf",
                                        "anyOf"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(strings); i++)
        if (*str(m, strings[i]))
            return true;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(flags); i++)
        if (flag(m, flags[i]))
            return true;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(set); i++)
        if (get(m, set[i]))
            return true;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(lists); i++)
        if (json_array_size(get(m, lists[i])))
            return true;
    size_t n = nprops(m);
    bool name = prop(m, "name") != NULL, generate = prop(m, "generateName") != NULL;
    bool only_names = (name && generate && n == 2) || ((name || generate) && n == 1);
    return n > 0 && !only_names;
}

/* validateStructuralMetadataInvariants */
static void metadata_invariants(ctx *c, const json_t *m, bool check, level lvl, const char *path)
{
    if (check && strcmp(str(m, "type"), "object") != 0)
        kapi_field_invalid_str(c->err, child(c, path, "type"), str(m, "type"), "must be object");
    if (lvl == ROOT && metadata_says_more(m))
        kapi_field_forbidden(c->err, path,
                             "must not specify anything other than name and generateName, but "
                             "metadata is implicitly specified");
}

/* validateStructuralInvariants */
static void invariants(ctx *c, const json_t *s, level lvl, const char *path)
{
    const char *k, *type = str(s, "type");
    json_t *p;
    if (!json_is_object(s))
        return;
    bool embedded = flag(s, "x-kubernetes-embedded-resource");
    bool int_or_string = flag(s, "x-kubernetes-int-or-string");
    bool preserve = flag(s, "x-kubernetes-preserve-unknown-fields");
    if (strcmp(type, "array") == 0 && !items_of(s))
        kapi_field_required(c->err, child(c, path, "items"), "must be specified");
    if (items_of(s))
        invariants(c, items_of(s), ITEM, child(c, path, "items"));
    json_object_foreach((json_t *)get(s, "properties"), k, p)
    {
        invariants(c, p, FIELD, key_path(c, path, "properties", k));
    }
    if (get(s, "additionalProperties")) { /* validateGeneric */
        if (lvl == ROOT)
            kapi_field_forbidden(c->err, child(c, path, "additionalProperties"),
                                 "must not be used at the root");
        if (additional_schema(s))
            invariants(c, additional_schema(s), FIELD, child(c, path, "additionalProperties"));
    }
    if (int_or_string && preserve) /* validateExtensions */
        kapi_field_invalid_raw(c->err, child(c, path, "x-kubernetes-preserve-unknown-fields"),
                               "true", "must be false if x-kubernetes-int-or-string is true");
    if (int_or_string && embedded)
        kapi_field_invalid_raw(c->err, child(c, path, "x-kubernetes-embedded-resource"), "true",
                               "must be false if x-kubernetes-int-or-string is true");
    const json_t *all = get(s, "allOf");
    value_validation(c, s, int_or_string_any_of(get(s, "anyOf")),
                     json_array_size(all) >= 1 &&
                         int_or_string_any_of(get(json_array_get(all, 0), "anyOf")),
                     path);
    if (embedded && strcmp(type, "object") != 0) {
        type_must_be(c, s, path, "object",
                     "must be object if x-kubernetes-embedded-resource is true");
    } else if (!*type && !int_or_string && !preserve) {
        static const char *const why[] = {"must not be empty at the root",
                                          "must not be empty for specified array items",
                                          "must not be empty for specified object fields"};
        kapi_field_required(c->err, child(c, path, "type"), why[lvl]);
    }
    if (embedded && get(s, "additionalProperties"))
        kapi_field_forbidden(c->err, child(c, path, "additionalProperties"),
                             "must not be used if x-kubernetes-embedded-resource is set");
    if (lvl == ROOT && *type && strcmp(type, "object") != 0)
        kapi_field_invalid_str(c->err, child(c, path, "type"), type, "must be object at the root");
    bool check_meta = lvl == ROOT || embedded;
    static const char *const typed[] = {"kind", "apiVersion"};
    for (size_t i = 0; check_meta && i < KAPI_ARRAY_LEN(typed); i++) {
        const json_t *t = prop(s, typed[i]);
        if (t && strcmp(str(t, "type"), "string") != 0)
            kapi_field_invalid_str(c->err,
                                   child(c, key_path(c, path, "properties", typed[i]), "type"),
                                   str(t, "type"), "must be string");
    }
    if (prop(s, "metadata"))
        metadata_invariants(c, prop(s, "metadata"), check_meta, lvl,
                            key_path(c, path, "properties", "metadata"));
    if (embedded && !preserve && nprops(s) == 0)
        kapi_field_required(c->err, child(c, path, "properties"),
                            "must not be empty if x-kubernetes-embedded-resource is true without "
                            "x-kubernetes-preserve-unknown-fields");
}

static void nested_complete(ctx *c, const json_t *v, const json_t *s, const char *spath,
                            const char *vpath);

/* validateValueValidationCompleteness: the fields a junctor names exist in the schema. */
static void value_complete(ctx *c, const json_t *v, const json_t *s, const char *spath,
                           const char *vpath)
{
    static const char *const junctors[] = {"allOf", "anyOf", "oneOf"};
    if (json_is_object(get(v, "not")))
        nested_complete(c, get(v, "not"), s, spath, child(c, vpath, "not"));
    for (size_t j = 0; j < KAPI_ARRAY_LEN(junctors); j++) {
        const json_t *l = get(v, junctors[j]);
        for (size_t i = 0; i < json_array_size(l); i++)
            nested_complete(c, json_array_get(l, i), s, spath,
                            index_path(c, vpath, junctors[j], i));
    }
}

static void missing(ctx *c, const char *spath, const char *vpath)
{
    char *why = kapi_xprintf("because it is defined in %s", vpath);
    kapi_field_required(c->err, spath, why);
    free(why);
}

static void nested_complete(ctx *c, const json_t *v, const json_t *s, const char *spath,
                            const char *vpath)
{
    const char *k;
    json_t *p;
    if (!json_is_object(v))
        return;
    if (!s) {
        missing(c, spath, vpath);
        return;
    }
    value_complete(c, v, s, spath, vpath);
    if (items_of(v))
        nested_complete(c, items_of(v), items_of(s), child(c, spath, "items"),
                        child(c, vpath, "items"));
    json_object_foreach((json_t *)get(v, "properties"), k, p)
    {
        const char *sp = key_path(c, spath, "properties", k),
                   *vp = key_path(c, vpath, "properties", k);
        if (!prop(s, k))
            missing(c, sp, vp);
        else
            nested_complete(c, p, prop(s, k), sp, vp);
    }
}

/* A cause and its text as Go's field.Error prints it, "<field>: <message>". */
typedef struct sorted_cause {
    char *text;
    const kapi_cause *cause;
} sorted_cause;

static int sorted_cmp(const void *a, const void *b)
{
    return strcmp(((const sorted_cause *)a)->text, ((const sorted_cause *)b)->text);
}

/* Appends the causes of from to to, sorted by their text as Go sorts ValidateStructural's. */
static void move_sorted(kapi_error *to, const kapi_error *from)
{
    sorted_cause *v = kapi_xmalloc((from->ncauses + 1) * sizeof(*v));
    for (size_t i = 0; i < from->ncauses; i++)
        v[i] = (sorted_cause){kapi_xprintf("%s: %s",
                                           from->causes[i].field ? from->causes[i].field : "<nil>",
                                           from->causes[i].message),
                              &from->causes[i]};
    qsort(v, from->ncauses, sizeof(*v), sorted_cmp);
    for (size_t i = 0; i < from->ncauses; i++) {
        kapi_error_add_cause(to, v[i].cause->reason, v[i].cause->field, "%s", v[i].cause->message);
        free(v[i].text);
    }
    free(v);
}

/* ValidateStructural's causes, in the order found, into a fresh error (move_sorted sorts). */
static kapi_error *structural_errors(kapi_arena *a, const json_t *schema, const char *path)
{
    kapi_error *e = kapi_error_new(KAPI_STATUS_INVALID, "structural");
    ctx c = {a, e};
    invariants(&c, schema, ROOT, path);
    value_complete(&c, schema, schema, path, path);
    return e;
}

const char *kapi_schema_crd_structural_causes(const json_t *schema, const char *path,
                                              kapi_error *err)
{
    const char *why = json_is_object(schema) ? conversion_error(schema, false) : NULL;
    if (why || !json_is_object(schema))
        return why;
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_error *e = structural_errors(&a, schema, path);
    move_sorted(err, e);
    kapi_error_free(e);
    kapi_arena_dispose(&a);
    return NULL;
}

bool kapi_schema_crd_structural(const json_t *schema)
{
    if (!json_is_object(schema))
        return true;
    if (conversion_error(schema, false))
        return false;
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_error *e = structural_errors(&a, schema, "");
    bool ok = e->ncauses == 0;
    kapi_error_free(e);
    kapi_arena_dispose(&a);
    return ok;
}

/* ---- 2b. ValidateDefaults ---- */

/* Whether default d of schema node s would lose fields to pruning; err gets nothing. */
static bool unpruned(const kapi_schema *s, const json_t *d)
{
    kapi_arena a;
    kapi_arena_init(&a);
    json_t *copy = json_deep_copy(d);
    kapi_schema_walk w = {.arena = &a};
    kapi_error_free(kapi_schema_decode(s, copy, &w));
    bool lost = w.nunknown > 0;
    json_decref(copy);
    kapi_arena_dispose(&a);
    return lost;
}

/* ValidateCustomResource of a default at path: the messages name fields from the
 * default's root, the causes from the CRD's (the default itself where kapi_schema_validate
 * names none, "<nil>"). */
static void validate_default(ctx *c, const kapi_schema *node, const json_t *d, const char *path)
{
    kapi_error *e = kapi_error_new(KAPI_STATUS_INVALID, "default");
    kapi_schema_validate(node, d, "", e);
    for (size_t i = 0; i < e->ncauses; i++) {
        const kapi_cause *f = &e->causes[i];
        bool root = !f->field || !*f->field || strcmp(f->field, "<nil>") == 0;
        const char *field = root ? path : child(c, path, f->field);
        kapi_error_add_cause(c->err, f->reason, field, "%s", f->message);
    }
    kapi_error_free(e);
}

/* Where the walk of defaults is with respect to the nearest embedded resource: its schema
 * (NULL outside any), whether the node is in its metadata, apiVersion or kind, and the
 * steps from it to the node (a property name, or NULL for a list's items). */
typedef struct meta_frame {
    const json_t *resource;
    bool inside;
    const char **steps;
    size_t nsteps;
} meta_frame;

static meta_frame frame_step(ctx *c, const meta_frame *f, const char *step, bool inside)
{
    meta_frame g = {f->resource, inside, kapi_arena_alloc(c->a, (f->nsteps + 1) * sizeof(char *)),
                    f->nsteps + 1};
    if (f->nsteps)
        memcpy(g.steps, f->steps, f->nsteps * sizeof(char *));
    g.steps[f->nsteps] = step;
    return g;
}

/* A default inside an embedded resource's metadata must leave it valid: the resource
 * around it (TypeMeta validation/v1 Validation, as kube's surrounding object) is
 * validated as objectmeta.Validate does; false, with the one cause kube gives, when not. */
static bool surrounding_valid(ctx *c, const meta_frame *f, const json_t *d, const char *at)
{
    json_t *v = json_deep_copy(d);
    for (size_t i = f->nsteps; i-- > 0;)
        v = f->steps[i] ? json_pack("{s:o}", f->steps[i], v) : json_pack("[o]", v);
    if (!json_object_get(v, "kind"))
        json_object_set_new_nocheck(v, "kind", json_string("Validation"));
    if (!json_object_get(v, "apiVersion"))
        json_object_set_new_nocheck(v, "apiVersion", json_string("validation/v1"));
    kapi_schema_root *root = NULL;
    kapi_error *e = kapi_error_new(KAPI_STATUS_INVALID, "metadata");
    kapi_error *cerr = kapi_schema_compile(f->resource, &root);
    if (!cerr)
        kapi_schema_validate_embedded(kapi_schema_root_node(root), v, "", e);
    bool ok = e->ncauses == 0;
    if (!ok) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_field_aggregate(&b, e);
        kapi_field_invalid_json(c->err, at, d, "must result in valid metadata: %s", b.ptr);
        kapi_buf_dispose(&b);
    }
    kapi_error_free(cerr);
    kapi_error_free(e);
    kapi_schema_root_free(root);
    json_decref(v);
    return ok;
}

/* A default, as kube's defaulting validation checks it: pruned (outside metadata), its
 * embedded resources valid (or, inside one's metadata, the resource around it), then
 * valid by its schema. */
static void check_default(ctx *c, const json_t *s, const json_t *d, const char *path,
                          const meta_frame *f, bool require_pruned, bool *unpruned_out)
{
    kapi_schema_root *root = NULL;
    kapi_error *cerr = kapi_schema_compile(s, &root);
    if (!cerr) {
        const kapi_schema *node = kapi_schema_root_node(root);
        bool lost = unpruned(node, d);
        if (unpruned_out && lost)
            *unpruned_out = true;
        const char *at = child(c, path, "default");
        if (c->err && f->inside) {
            if (surrounding_valid(c, f, d, at))
                validate_default(c, node, d, at);
        } else if (c->err) {
            if (require_pruned && lost)
                kapi_field_invalid_json(c->err, at, d, "must not have unknown fields");
            size_t before = c->err->ncauses;
            kapi_schema_validate_embedded(node, d, at, c->err);
            if (c->err->ncauses == before)
                validate_default(c, node, d, at);
        }
    }
    kapi_error_free(cerr);
    kapi_schema_root_free(root);
}

static void defaults(ctx *c, const json_t *s, const char *path, bool require_pruned,
                     bool *unpruned_out, const meta_frame *f)
{
    const char *k;
    json_t *p;
    if (!json_is_object(s))
        return;
    bool embedded = flag(s, "x-kubernetes-embedded-resource");
    meta_frame here = embedded ? (meta_frame){s, false, NULL, 0} : *f;
    const json_t *d = get(s, "default");
    if (d)
        check_default(c, s, d, path, &here, require_pruned, unpruned_out);
    if (items_of(s)) {
        meta_frame g = frame_step(c, &here, NULL, here.inside);
        defaults(c, items_of(s), child(c, path, "items"), require_pruned, unpruned_out, &g);
    }
    json_object_foreach((json_t *)get(s, "properties"), k, p)
    {
        bool meta = embedded && (strcmp(k, "metadata") == 0 || strcmp(k, "kind") == 0 ||
                                 strcmp(k, "apiVersion") == 0);
        meta_frame g = frame_step(c, &here, k, here.inside || meta);
        defaults(c, p, key_path(c, path, "properties", k), require_pruned, unpruned_out, &g);
    }
}

/* ---- 3. ValidateCustomResourceDefinitionOpenAPISchema ---- */

typedef struct standard {
    bool allow_defaults;
    const char *no_defaults_why;
    bool inside_meta;
} standard;

static void list_map_set(ctx *c, const json_t *s, const char *path);

/* specStandardValidatorV3.validate */
static void standard_rules(ctx *c, const kapi_schema_crd_rules *r, const standard *v,
                           const json_t *s, const char *path)
{
    const char *type = str(s, "type");
    if (r->require_valid_type && *type && !kapi_cstr_in(type, openapi_types))
        kapi_field_not_supported(c->err, child(c, path, "type"), type, openapi_types);
    if (get(s, "default") && !v->allow_defaults) {
        char *why = kapi_xprintf("must not be set%s%s", v->no_defaults_why ? " " : "",
                                 v->no_defaults_why ? v->no_defaults_why : "");
        kapi_field_forbidden(c->err, child(c, path, "default"), why);
        free(why);
    }
    if (*str(s, "id"))
        kapi_field_forbidden(c->err, child(c, path, "id"), "id is not supported");
    if (get(s, "additionalItems"))
        kapi_field_forbidden(c->err, child(c, path, "additionalItems"),
                             "additionalItems is not supported");
    if (nonempty(s, "patternProperties"))
        kapi_field_forbidden(c->err, child(c, path, "patternProperties"),
                             "patternProperties is not supported");
    if (nonempty(s, "definitions"))
        kapi_field_forbidden(c->err, child(c, path, "definitions"), "definitions is not supported");
    if (get(s, "dependencies"))
        kapi_field_forbidden(c->err, child(c, path, "dependencies"),
                             "dependencies is not supported");
    if (get(s, "$ref"))
        kapi_field_forbidden(c->err, child(c, path, "$ref"), "$ref is not supported");
    if (strcmp(type, "null") == 0)
        kapi_field_forbidden(c->err, child(c, path, "type"),
                             "type cannot be set to null, use nullable as an alternative");
    if (json_array_size(get(s, "items")) > 0)
        kapi_field_forbidden(c->err, child(c, path, "items"),
                             "items must be a schema object and not an array");
    if (v->inside_meta && flag(s, "x-kubernetes-embedded-resource"))
        kapi_field_forbidden(c->err, child(c, path, "x-kubernetes-embedded-resource"),
                             "must not be used inside of resource meta");
}

static void openapi(ctx *c, const kapi_schema_crd_rules *r, const standard *v, const json_t *s,
                    bool root, const char *path);

static void openapi_list(ctx *c, const kapi_schema_crd_rules *r, const standard *v, const json_t *s,
                         const char *key, const char *path)
{
    const json_t *l = get(s, key);
    for (size_t i = 0; i < json_array_size(l); i++)
        openapi(c, r, v, json_array_get(l, i), false, index_path(c, path, key, i));
}

static void list_rules(ctx *c, const kapi_schema_crd_rules *r, const json_t *s, const char *path)
{
    static const char *const list_types[] = {"atomic", "set", "map", NULL};
    static const char *const map_types[] = {"atomic", "granular", NULL};
    const char *type = str(s, "type");
    const json_t *map_type = get(s, "x-kubernetes-map-type");
    const json_t *list_type = get(s, "x-kubernetes-list-type");
    const json_t *keys = get(s, "x-kubernetes-list-map-keys");
    const char *lt = json_string_value(list_type) ? json_string_value(list_type) : "";
    if (map_type)
        type_must_be(c, s, path, "object", "must be object if x-kubernetes-map-type is specified");
    if (map_type && !kapi_cstr_in(str(s, "x-kubernetes-map-type"), map_types))
        kapi_field_not_supported(c->err, child(c, path, "x-kubernetes-map-type"),
                                 str(s, "x-kubernetes-map-type"), map_types);
    const json_t *is = items_of(s);
    if (list_type && strcmp(type, "array") != 0) {
        type_must_be(c, s, path, "array", "must be array if x-kubernetes-list-type is specified");
    } else if (r->require_atomic_set_type && strcmp(lt, "set") == 0 && is) {
        const char *it = str(is, "type");
        const json_t *ilt = get(is, "x-kubernetes-list-type");
        if (strcmp(it, "array") == 0 && ilt &&
            strcmp(str(is, "x-kubernetes-list-type"), "atomic") != 0)
            kapi_field_invalid_str(
                c->err, child(c, child(c, path, "items"), "x-kubernetes-list-type"),
                str(is, "x-kubernetes-list-type"),
                "must be atomic as item of a list with x-kubernetes-list-type=set");
        if (strcmp(it, "object") == 0 && strcmp(str(is, "x-kubernetes-map-type"), "atomic") != 0) {
            /* kube shows the items' list type here, which an object rarely has */
            const char *shown = ilt ? str(is, "x-kubernetes-list-type") : "null";
            kapi_field_invalid_str(
                c->err, child(c, child(c, path, "items"), "x-kubernetes-map-type"), shown,
                "must be atomic as item of a list with x-kubernetes-list-type=set");
        }
    }
    if (list_type && !kapi_cstr_in(lt, list_types))
        kapi_field_not_supported(c->err, child(c, path, "x-kubernetes-list-type"), lt, list_types);
    if (json_array_size(keys) > 0) {
        if (!list_type)
            kapi_field_required(c->err, child(c, path, "x-kubernetes-list-type"),
                                "must be map if x-kubernetes-list-map-keys is non-empty");
        else if (strcmp(lt, "map") != 0)
            kapi_field_invalid_str(c->err, child(c, path, "x-kubernetes-list-type"), lt,
                                   "must be map if x-kubernetes-list-map-keys is non-empty");
    }
    if (list_type && strcmp(lt, "map") == 0) {
        if (!json_array_size(keys))
            kapi_field_required(c->err, child(c, path, "x-kubernetes-list-map-keys"),
                                "must not be empty if x-kubernetes-list-type is map");
        if (!get(s, "items"))
            kapi_field_required(c->err, child(c, path, "items"),
                                "must have a schema if x-kubernetes-list-type is map");
        if (get(s, "items") && !is)
            kapi_field_invalid_json(
                c->err, child(c, path, "items"), get(s, "items"),
                "must only have a single schema if x-kubernetes-list-type is map");
        if (is && strcmp(str(is, "type"), "object") != 0)
            kapi_field_invalid_str(
                c->err, child(c, child(c, path, "items"), "type"), str(is, "type"),
                "must be object if parent array's x-kubernetes-list-type is map");
        if (is && strcmp(str(is, "type"), "object") == 0) {
            kapi_buf shown;
            kapi_buf_init(&shown);
            kapi_gofmt_strings(&shown, keys);
            for (size_t i = 0; i < json_array_size(keys); i++) {
                const char *k = json_string_value(json_array_get(keys, i));
                const json_t *kp = k ? prop(is, k) : NULL;
                if (kp) {
                    const char *kt = str(kp, "type");
                    if (strcmp(kt, "array") == 0 || strcmp(kt, "object") == 0)
                        kapi_field_invalid_str(
                            c->err,
                            child(c, key_path(c, child(c, path, "items"), "properties", k), "type"),
                            str(is, "type"),
                            "must be a scalar type if parent array's x-kubernetes-list-type is "
                            "map");
                } else {
                    kapi_field_invalid_raw(c->err, child(c, path, "x-kubernetes-list-map-keys"),
                                           shown.ptr,
                                           "entries must all be names of item properties");
                }
                for (size_t j = 0; k && j < i; j++)
                    if (json_equal(json_array_get(keys, j), json_array_get(keys, i))) {
                        kapi_field_invalid_raw(c->err, child(c, path, "x-kubernetes-list-map-keys"),
                                               shown.ptr, "must not contain duplicate entries");
                        break;
                    }
            }
            kapi_buf_dispose(&shown);
        }
    }
    if (r->require_map_list_keys)
        list_map_set(c, s, path);
}

/* validateMapListKeysMapSet */
static void list_map_set(ctx *c, const json_t *s, const char *path)
{
    const json_t *is = items_of(s);
    const char *lt = str(s, "x-kubernetes-list-type");
    if (!is || !get(s, "x-kubernetes-list-type") ||
        (strcmp(lt, "set") != 0 && strcmp(lt, "map") != 0))
        return;
    const char *items = child(c, path, "items");
    if (flag(is, "nullable")) {
        char *why = kapi_xprintf("cannot be nullable when x-kubernetes-list-type is %s", lt);
        kapi_field_forbidden(c->err, child(c, items, "nullable"), why);
        free(why);
    }
    if (strcmp(lt, "map") != 0)
        return;
    const json_t *keys = get(s, "x-kubernetes-list-map-keys"), *required = get(is, "required");
    for (size_t i = 0; i < json_array_size(keys); i++) {
        const char *k = json_string_value(json_array_get(keys, i));
        const json_t *kp = k ? prop(is, k) : NULL;
        if (!kp)
            continue;
        bool req = false;
        for (size_t j = 0; j < json_array_size(required) && !req; j++)
            req = json_equal(json_array_get(required, j), json_array_get(keys, i));
        const char *at = key_path(c, items, "properties", k);
        if (!req && !get(kp, "default"))
            kapi_field_required(c->err, child(c, at, "default"),
                                "this property is in x-kubernetes-list-map-keys, so it must have a "
                                "default or be a required property");
        if (flag(kp, "nullable"))
            kapi_field_forbidden(c->err, child(c, at, "nullable"),
                                 "this property is in x-kubernetes-list-map-keys, so it cannot be "
                                 "nullable");
    }
}

/* The shapes of x-kubernetes-validations' rules and messages (not their CEL). */
static void validation_shapes(ctx *c, const json_t *s, const char *path)
{
    const json_t *rules = get(s, "x-kubernetes-validations");
    for (size_t i = 0; i < json_array_size(rules); i++) {
        const json_t *rule = json_array_get(rules, i);
        const char *at = index_path(c, path, "x-kubernetes-validations", i);
        const char *text = str(rule, "rule"), *msg = str(rule, "message");
        size_t tb = strspn(text, " \t\n\v\f\r"), mb = strspn(msg, " \t\n\v\f\r");
        size_t tn = strlen(text + tb), mn = strlen(msg + mb);
        while (tn && strchr(" \t\n\v\f\r", text[tb + tn - 1]))
            tn--;
        while (mn && strchr(" \t\n\v\f\r", msg[mb + mn - 1]))
            mn--;
        bool msg_breaks = memchr(msg + mb, '\n', mn) || memchr(msg + mb, '\r', mn);
        bool rule_breaks = memchr(text + tb, '\n', tn) || memchr(text + tb, '\r', tn);
        if (!tn)
            kapi_field_required(c->err, child(c, at, "rule"), "rule is not specified");
        else if (*msg && !mn)
            kapi_field_invalid_str(c->err, child(c, at, "message"), msg,
                                   "message must be non-empty if specified");
        else if (msg_breaks)
            kapi_field_invalid_str(c->err, child(c, at, "message"), msg,
                                   "message must not contain line breaks");
        else if (rule_breaks && !mn)
            kapi_field_required(c->err, child(c, at, "message"),
                                "message must be specified if rule contains line breaks");
    }
}

static void openapi(ctx *c, const kapi_schema_crd_rules *r, const standard *v, const json_t *s,
                    bool root, const char *path)
{
    const char *k;
    json_t *p;
    if (!json_is_object(s))
        return;
    standard_rules(c, r, v, s, path);
    if (flag(s, "uniqueItems"))
        kapi_field_forbidden(c->err, child(c, path, "uniqueItems"),
                             "uniqueItems cannot be set to true since the runtime complexity "
                             "becomes quadratic");
    const json_t *add = get(s, "additionalProperties");
    if (add) {
        if (nprops(s) && (json_is_false(add) || json_is_object(add)))
            kapi_field_forbidden(c->err, child(c, path, "additionalProperties"),
                                 "additionalProperties and properties are mutual exclusive");
        standard sub = *v;
        if (v->inside_meta) {
            sub.allow_defaults = false;
            sub.no_defaults_why = "inside additionalProperties applying to object metadata";
        }
        if (json_is_object(add))
            openapi(c, r, &sub, add, false, child(c, path, "additionalProperties"));
    }
    bool embedded = flag(s, "x-kubernetes-embedded-resource");
    json_object_foreach((json_t *)get(s, "properties"), k, p)
    {
        standard sub = *v;
        bool meta =
            strcmp(k, "metadata") == 0 || strcmp(k, "kind") == 0 || strcmp(k, "apiVersion") == 0;
        if ((root || embedded) && meta) {
            sub.inside_meta = true;
            if (root) {
                sub.allow_defaults = false;
                sub.no_defaults_why = kapi_arena_printf(c->a, "in top-level %s", k);
            }
        }
        openapi(c, r, &sub, p, false, key_path(c, path, "properties", k));
    }
    if (json_is_object(get(s, "not")))
        openapi(c, r, v, get(s, "not"), false, child(c, path, "not"));
    openapi_list(c, r, v, s, "allOf", path);
    openapi_list(c, r, v, s, "oneOf", path);
    openapi_list(c, r, v, s, "anyOf", path);
    json_object_foreach((json_t *)get(s, "definitions"), k, p)
    {
        openapi(c, r, v, p, false, key_path(c, path, "definitions", k));
    }
    if (items_of(s))
        openapi(c, r, v, items_of(s), false, child(c, path, "items"));
    openapi_list(c, r, v, s, "items", path);
    json_object_foreach((json_t *)get(s, "dependencies"), k, p)
    {
        if (json_is_object(p))
            openapi(c, r, v, p, false, key_path(c, path, "dependencies", k));
    }
    if (json_is_false(get(s, "x-kubernetes-preserve-unknown-fields")))
        kapi_field_invalid_raw(c->err, child(c, path, "x-kubernetes-preserve-unknown-fields"),
                               "false", "must be true or undefined");
    list_rules(c, r, s, path);
    validation_shapes(c, s, path);
}

/* ---- the whole check ---- */

void kapi_schema_crd_check(const json_t *schema, const char *path, const kapi_schema_crd_rules *r,
                           kapi_error *err)
{
    kapi_arena a;
    kapi_arena_init(&a);
    ctx c = {&a, err};
    size_t before = err->ncauses;
    const char *init = NULL;
    if (r->require_structural) {
        init = conversion_error(schema, false);
        if (!init) {
            kapi_error *e = structural_errors(&a, schema, path);
            if (e->ncauses)
                move_sorted(err, e);
            else
                defaults(&c, schema, path, r->require_pruned_defaults, NULL, &(meta_frame){0});
            kapi_error_free(e);
        }
    }
    bool cel = r->require_structural && !init && err->ncauses == before;
    standard v = {.allow_defaults = true};
    openapi(&c, r, &v, schema, true, path);
    if (init && err->ncauses == before)
        kapi_field_invalid_str(err, path, "", "%s", init);
    kapi_schema_root *root = NULL;
    kapi_error *cerr = cel ? kapi_schema_compile(schema, &root) : NULL;
    if (root)
        kapi_schema_rules_crd_check(kapi_schema_root_node(root), path, err->ncauses, err);
    kapi_error_free(cerr);
    kapi_schema_root_free(root);
    kapi_arena_dispose(&a);
}

/* ---- what a stored CRD already has (its update keeps being allowed) ---- */

bool kapi_schema_crd_has(const json_t *s, bool (*pred)(const json_t *node))
{
    static const char *const maps[] = {"properties", "patternProperties", "definitions",
                                       "dependencies"};
    static const char *const lists[] = {"allOf", "anyOf", "oneOf", "items"};
    static const char *const ones[] = {"not", "items", "additionalProperties", "additionalItems"};
    const char *k;
    json_t *v;
    if (!json_is_object(s))
        return false;
    if (pred(s))
        return true;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(maps); i++)
        json_object_foreach((json_t *)get(s, maps[i]), k,
                            v) if (kapi_schema_crd_has(v, pred)) return true;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(lists); i++) {
        const json_t *l = get(s, lists[i]);
        for (size_t j = 0; j < json_array_size(l); j++)
            if (kapi_schema_crd_has(json_array_get(l, j), pred))
                return true;
    }
    for (size_t i = 0; i < KAPI_ARRAY_LEN(ones); i++)
        if (kapi_schema_crd_has(get(s, ones[i]), pred))
            return true;
    return false;
}

static bool non_atomic_set(const json_t *s)
{
    const json_t *is = items_of(s);
    if (strcmp(str(s, "x-kubernetes-list-type"), "set") != 0 || !is)
        return false;
    if (strcmp(str(is, "type"), "array") == 0)
        return get(is, "x-kubernetes-list-type") &&
               strcmp(str(is, "x-kubernetes-list-type"), "atomic") != 0;
    if (strcmp(str(is, "type"), "object") == 0)
        return strcmp(str(is, "x-kubernetes-map-type"), "atomic") != 0;
    return false;
}

static bool bad_map_list_keys(const json_t *s)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_error *e = kapi_error_new(KAPI_STATUS_INVALID, "keys");
    ctx c = {&a, e};
    list_map_set(&c, s, "");
    bool bad = e->ncauses > 0;
    kapi_error_free(e);
    kapi_arena_dispose(&a);
    return bad;
}

static bool invalid_type(const json_t *s)
{
    return *str(s, "type") && !kapi_cstr_in(str(s, "type"), openapi_types);
}

kapi_schema_crd_rules kapi_schema_crd_rules_for(const json_t *old_schemas)
{
    kapi_schema_crd_rules r = {true, true, true, true, true};
    for (size_t i = 0; i < json_array_size(old_schemas); i++) {
        const json_t *s = json_array_get(old_schemas, i);
        if (!json_is_object(s))
            continue;
        if (!kapi_schema_crd_structural(s))
            r.require_structural = false;
        else if (r.require_pruned_defaults) {
            kapi_arena a;
            kapi_arena_init(&a);
            ctx c = {&a, NULL};
            bool lost = false;
            defaults(&c, s, "", false, &lost, &(meta_frame){0});
            kapi_arena_dispose(&a);
            r.require_pruned_defaults = !lost;
        }
        r.require_atomic_set_type =
            r.require_atomic_set_type && !kapi_schema_crd_has(s, non_atomic_set);
        r.require_map_list_keys =
            r.require_map_list_keys && !kapi_schema_crd_has(s, bad_map_list_keys);
        r.require_valid_type = r.require_valid_type && !kapi_schema_crd_has(s, invalid_type);
    }
    return r;
}
