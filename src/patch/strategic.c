/*
 * patch/strategic: the map half of a strategic merge patch, as apimachinery 1.26's
 * strategicpatch.StrategicMergeMapPatch applies it for kube-apiserver (mergeMap with
 * parallel lists merged and unmatched nulls ignored): the $patch, $retainKeys and
 * $deleteFromPrimitiveList directives, members merged by their schema's patch strategy,
 * and the schema lookups that stand for the Go struct tags. Lists are strategic_list.c.
 *
 * apimachinery's errors are kept word for word, with the status kube-apiserver gives each
 * (patch.h). Where Go iterates a map (in random order) kapi takes the patch's members in
 * document order.
 */
#include "codec/go.h"
#include "patch/patch_int.h"

#include <stdlib.h>
#include <string.h>

#define DIRECTIVE "$patch"
#define RETAIN_KEYS "$retainKeys"
#define DELETE_PREFIX "$deleteFromPrimitiveList"
#define ORDER_PREFIX "$setElementOrder"

/* ---- apimachinery's errors ---- */

kapi_error *kapi_patch__no_merge_key(const json_t *m, const char *key)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_go_put_fmt(&b, m, 'v');
    kapi_error *err = kapi_error_new(KAPI_STATUS_UNKNOWN,
                                     "map: %s does not contain declared merge key: %s", b.ptr, key);
    kapi_buf_dispose(&b);
    return err;
}

kapi_error *kapi_patch__bad_arg_type(const char *expected, const json_t *actual)
{
    /* reflect.TypeOf(actual) with %s: a nil Type prints as %!s(<nil>) */
    bool nil = !actual || json_is_null(actual);
    return kapi_error_new(KAPI_STATUS_UNKNOWN, "expected a %s, but received a %s", expected,
                          nil ? "%!s(<nil>)" : kapi_go_type_name(actual));
}

kapi_error *kapi_patch__bad_patch_type(const json_t *directive, const json_t *m)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "unknown patch type: ");
    kapi_go_put_fmt(&b, directive, 's');
    kapi_buf_puts(&b, " in map: ");
    kapi_go_put_fmt(&b, m, 'v');
    kapi_error *err = kapi_error_new(KAPI_STATUS_UNKNOWN, "%s", b.ptr);
    kapi_buf_dispose(&b);
    return err;
}

kapi_error *kapi_patch__directive_list(const char **out, const char *key, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(key, prefix, n) == 0 && key[n] == '/') {
        *out = key + n + 1;
        return NULL;
    }
    return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "invalid patch format of %s",
                          strcmp(prefix, DELETE_PREFIX) == 0 ? "primitive list"
                                                             : "setElementOrder list");
}

/* ---- the schema as strategicpatch's LookupPatchMeta ---- */

/* The schema a node stands for: an allOf of one schema, with nothing else to describe the
 * value (how OpenAPI v3 puts extensions beside a $ref), is that schema. */
static const kapi_schema *resolve(const kapi_schema *s)
{
    while (s && !s->props && !s->items && !s->additional && s->all_of && s->all_of[0] &&
           !s->all_of[1])
        s = s->all_of[0];
    return s;
}

/* The schema of member key of the object s describes: its property, else the value of a
 * map, else none. */
static const kapi_schema *member_schema(const kapi_schema *s, const char *key)
{
    s = resolve(s);
    for (size_t i = 0; s && i < s->nprops; i++)
        if (strcmp(s->props[i].name, key) == 0)
            return s->props[i].schema;
    return s ? s->additional : NULL;
}

/* Go's reflect.Kind of the value s describes, as strategicpatch names a type in messages:
 * the first row of the node's type whose format is the node's, or any. */
static const char *go_kind(const kapi_schema *s)
{
    static const struct {
        unsigned type;
        const char *format, *kind;
    } kinds[] = {
        {KAPI_SCHEMA_STRING, NULL, "string"},  {KAPI_SCHEMA_INTEGER, "int32", "int32"},
        {KAPI_SCHEMA_INTEGER, NULL, "int64"},  {KAPI_SCHEMA_NUMBER, "float", "float32"},
        {KAPI_SCHEMA_NUMBER, NULL, "float64"}, {KAPI_SCHEMA_BOOLEAN, NULL, "bool"},
        {KAPI_SCHEMA_ARRAY, NULL, "slice"},    {KAPI_SCHEMA_OBJECT, NULL, "struct"},
    };
    s = resolve(s);
    if (!s)
        return "interface";
    if (s->props || s->int_or_string)
        return "struct";
    if (s->additional)
        return "map";
    for (size_t i = 0; i < KAPI_ARRAY_LEN(kinds); i++)
        if (s->types == kinds[i].type &&
            (!kinds[i].format || (s->format && strcmp(s->format, kinds[i].format) == 0)))
            return kinds[i].kind;
    return "interface";
}

/* Whether the n bytes at p are word. */
static bool part_is(const char *p, size_t n, const char *word)
{
    return strlen(word) == n && strncmp(p, word, n) == 0;
}

/* "unexpected patch strategy: [a b c]": the strategies as a Go []string prints. */
static kapi_error *bad_strategy(const char *strategy)
{
    char *list = kapi_xstrdup(strategy);
    for (char *c = strchr(list, ','); c; c = strchr(c, ','))
        *c = ' ';
    kapi_error *err = kapi_error_new(KAPI_STATUS_UNKNOWN, "unexpected patch strategy: [%s]", list);
    free(list);
    return err;
}

/* extractRetainKeysPatchStrategy: the comma-separated strategies, "retainKeys" dropped
 * (at most one other may stand beside it). Anything but "merge" and "replace" merges maps
 * and replaces lists, as no strategy does, so it reads as "". */
static kapi_error *split_strategy(const char **out, const char *strategy)
{
    static const char *const known[] = {"merge", "replace"};
    const char *s = strategy ? strategy : "", *comma = strchr(s, ','), *other = s;
    size_t n = comma ? (size_t)(comma - s) : strlen(s);
    *out = "";
    if (comma && (strchr(comma + 1, ',') ||
                  (!part_is(s, n, "retainKeys") && strcmp(comma + 1, "retainKeys") != 0)))
        return bad_strategy(s);
    if (comma && part_is(s, n, "retainKeys")) {
        other = comma + 1;
        n = strlen(other);
    } else if (part_is(s, n, "retainKeys")) {
        n = 0;
    }
    for (size_t i = 0; i < KAPI_ARRAY_LEN(known); i++)
        if (part_is(other, n, known[i]))
            *out = known[i];
    return NULL;
}

kapi_error *kapi_patch__lookup(kapi_patch__meta *out, const kapi_schema *s, const char *key,
                               bool list)
{
    const kapi_schema *field = member_schema(s, key), *v = resolve(field);
    out->schema = list && v && v->items ? resolve(v->items) : v;
    out->merge_key = field && field->patch_merge_key ? field->patch_merge_key : "";
    out->kind = go_kind(out->schema);
    return split_strategy(&out->strategy, field ? field->patch_strategy : NULL);
}

/* ---- maps ---- */

/* discardNullValuesFromPatch: a value the patch adds whole loses its null members, also in
 * its lists' objects. */
static void discard_nulls(json_t *v)
{
    const char *key;
    json_t *c;
    void *tmp;
    size_t i;
    if (json_is_array(v)) {
        json_array_foreach(v, i, c) discard_nulls(c);
        return;
    }
    if (!json_is_object(v))
        return;
    json_object_foreach_safe(v, tmp, key, c)
    {
        if (json_is_null(c))
            json_object_del(v, key);
        else
            discard_nulls(c);
    }
}

/* handleDirectiveInMergeMap: "$patch": "replace" makes the patch the map; "delete" empties
 * it. */
static kapi_error *map_directive(json_t **out, const json_t *directive, json_t *patch)
{
    const char *d = json_is_string(directive) ? json_string_value(directive) : "";
    if (strcmp(d, "replace") == 0) {
        json_object_del(patch, DIRECTIVE);
        *out = json_incref(patch);
        return NULL;
    }
    if (strcmp(d, "delete") == 0) {
        *out = json_object();
        return NULL;
    }
    return kapi_patch__bad_patch_type(directive, patch);
}

/* Whether keys (a $retainKeys list) names key. */
static bool retained(const json_t *keys, const char *key)
{
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k)
    {
        if (json_is_string(k) && strcmp(json_string_value(k), key) == 0)
            return true;
    }
    return false;
}

/* applyRetainKeysDirective: every member the patch sets must be retained; the members of
 * orig that are not are cleared. */
static kapi_error *apply_retain_keys(json_t *orig, json_t *patch, const json_t *keys)
{
    const char *key;
    json_t *v;
    void *tmp;
    if (!json_is_array(keys))
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "invalid patch format of retainKeys");
    json_object_foreach(patch, key, v)
    {
        bool directive = strncmp(key, DELETE_PREFIX, strlen(DELETE_PREFIX)) == 0 ||
                         strncmp(key, ORDER_PREFIX, strlen(ORDER_PREFIX)) == 0;
        if (!json_is_null(v) && !directive && !retained(keys, key))
            return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "invalid patch format of retainKeys");
    }
    json_object_foreach_safe(orig, tmp, key, v)
    {
        if (!retained(keys, key))
            json_object_del(orig, key);
    }
    return NULL;
}

static kapi_error *retain_keys(json_t *orig, json_t *patch)
{
    json_t *keys = json_object_get(patch, RETAIN_KEYS);
    if (!keys)
        return NULL;
    json_incref(keys);
    json_object_del(patch, RETAIN_KEYS);
    kapi_error *err = apply_retain_keys(orig, patch, keys);
    json_decref(keys);
    return err;
}

/* A map member both sides have: merged unless its strategy is "replace". */
static kapi_error *merge_member_map(json_t *orig, const char *k, json_t *ov, json_t *pv,
                                    const kapi_schema *s)
{
    kapi_patch__meta m;
    json_t *res;
    kapi_error *err;
    if ((err = kapi_patch__lookup(&m, s, k, false)) != NULL)
        return err;
    if (strcmp(m.strategy, "replace") == 0) {
        json_object_set_nocheck(orig, k, pv);
        return NULL;
    }
    if ((err = kapi_patch__merge_map(&res, ov, pv, m.schema)) == NULL)
        json_object_set_new_nocheck(orig, k, res);
    return err;
}

/* A list member both sides have. */
static kapi_error *merge_member_list(json_t *orig, const char *k, json_t *ov, json_t *pv,
                                     const kapi_schema *s, bool delete_list)
{
    kapi_patch__meta m;
    json_t *res;
    kapi_error *err;
    if ((err = kapi_patch__lookup(&m, s, k, true)) != NULL)
        return err;
    if ((err = kapi_patch__merge_list(&res, ov, pv, &m, delete_list)) == NULL)
        json_object_set_new_nocheck(orig, k, res);
    return err;
}

/* One member of the patch into orig. A $deleteFromPrimitiveList/<list> member acts on
 * <list>, and only where orig has that list. */
static kapi_error *merge_member(json_t *orig, const char *key, json_t *pv, const kapi_schema *s)
{
    const char *k = key;
    kapi_error *err;
    bool delete_list = strncmp(key, DELETE_PREFIX, strlen(DELETE_PREFIX)) == 0;
    if (delete_list && (err = kapi_patch__directive_list(&k, key, DELETE_PREFIX)) != NULL)
        return err;
    k = *k ? k : key;
    json_t *ov = json_object_get(orig, k);
    if (json_is_null(pv)) {
        json_object_del(orig, k);
        return NULL;
    }
    if (!ov || kapi_patch__gotype_of(ov) != kapi_patch__gotype_of(pv)) {
        if (delete_list)
            return NULL;
        discard_nulls(pv);
        json_object_set_nocheck(orig, k, pv);
        return NULL;
    }
    if (json_is_object(ov))
        return merge_member_map(orig, k, ov, pv, s);
    if (json_is_array(ov))
        return merge_member_list(orig, k, ov, pv, s, delete_list);
    json_object_set_nocheck(orig, k, pv);
    return NULL;
}

kapi_error *kapi_patch__merge_map(json_t **out, json_t *orig, json_t *patch, const kapi_schema *s)
{
    const char *key;
    json_t *pv, *directive = json_object_get(patch, DIRECTIVE);
    kapi_error *err;
    if (directive)
        return map_directive(out, directive, patch);
    if ((err = retain_keys(orig, patch)) != NULL ||
        (err = kapi_patch__element_orders(orig, patch, s)) != NULL)
        return err;
    json_object_foreach(patch, key, pv)
    {
        if ((err = merge_member(orig, key, pv, s)) != NULL)
            return err;
    }
    *out = json_incref(orig);
    return NULL;
}

kapi_error *kapi_patch_strategic(json_t **doc, const json_t *patch, const kapi_schema *s)
{
    json_t *res = NULL;
    if (!patch || json_is_null(patch))
        return NULL;
    if (!json_is_object(patch))
        return kapi_patch__type_error("", patch, "map[string]interface {}");
    if (!json_is_object(*doc))
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "invalid JSON document");
    json_t *p = kapi_json_copy(patch); /* the merge changes the patch too */
    kapi_error *err = kapi_patch__merge_map(&res, *doc, p, s);
    json_decref(p);
    if (!err) {
        json_decref(*doc);
        *doc = res;
    }
    return err;
}
