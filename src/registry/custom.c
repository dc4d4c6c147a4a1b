/*
 * registry/custom: custom resources. Each served version of a CustomResourceDefinition
 * becomes a kapi_type like any built-in one (DESIGN.md invariant 1): its type file is
 * made from the CRD and loaded by the same code, its schema is the version's structural
 * schema, and its strategy does what apiextensions-apiserver's custom resource strategy
 * does in Kubernetes 1.26:
 *
 *   - decode: metadata is read as ObjectMeta, the rest pruned and defaulted by the
 *     schema (wrong types are left to validation);
 *   - a /status write keeps the stored metadata too (the type model's status rules do
 *     the rest: registry/prepare.c);
 *   - validate: kind and apiVersion, metadata, the scale paths, then the schema (with
 *     the uniqueness of list-type set and map items);
 *   - objects are written in the storage version and read in any version: an object
 *     of another version is converted, by rewriting apiVersion (the "None" strategy) or
 *     by the CRD's conversion webhook (registry/conversion.c), then pruned and defaulted
 *     by the schema of the version it goes to. An object already of that version is left
 *     as it is. A CRD of one version has nothing to convert (custom_strategy).
 */
#include <stdlib.h>
#include <string.h>

#include "codec/go.h"
#include "codec/json.h"
#include "registry/registry_int.h"

typedef struct custom_type {
    kapi_type type;
    kapi_custom custom;
} custom_type;

const char *const kapi_registry__custom_verbs[] = {
    "delete", "deletecollection", "get", "list", "patch", "create", "update", "watch", NULL};
const char *const kapi_registry__custom_subresource_verbs[] = {"get", "patch", "update", NULL};

/* A JSON array of the strings of v (NULL-terminated). */
static json_t *string_array(const char *const *v)
{
    json_t *a = json_array();
    for (size_t i = 0; v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static const json_t *find_version(const json_t *crd, const char *name)
{
    const json_t *versions = kapi_json_path(crd, "spec.versions");
    for (size_t i = 0; i < json_array_size(versions); i++) {
        const json_t *v = json_array_get(versions, i);
        const char *n = kapi_json_path_str(v, "name");
        if (n && strcmp(n, name) == 0)
            return v;
    }
    return NULL;
}

const char *kapi_registry__crd_storage_version(const json_t *crd)
{
    const json_t *versions = kapi_json_path(crd, "spec.versions");
    for (size_t i = 0; i < json_array_size(versions); i++) {
        const json_t *v = json_array_get(versions, i);
        if (json_is_true(json_object_get(v, "storage")))
            return kapi_json_path_str(v, "name");
    }
    return NULL;
}

/* The type file of one version of a CRD. */
static json_t *type_def(const json_t *crd, const json_t *ver, const char *storage)
{
    const json_t *names = kapi_json_path(crd, "spec.names");
    const char *group = kapi_json_path_str(crd, "spec.group") ?: "";
    const char *version = kapi_json_path_str(ver, "name");
    const char *kind = kapi_json_path_str(names, "kind") ?: "";
    const char *plural = kapi_json_path_str(names, "plural") ?: "";
    bool namespaced = strcmp(kapi_json_path_str(crd, "spec.scope") ?: "", "Namespaced") == 0;
    json_t *subs = json_object();
    if (kapi_json_path(ver, "subresources.status"))
        json_object_set_new_nocheck(subs, "status",
                                    string_array(kapi_registry__custom_subresource_verbs));
    if (kapi_json_path(ver, "subresources.scale"))
        json_object_set_new_nocheck(subs, "scale",
                                    string_array(kapi_registry__custom_subresource_verbs));
    json_t *def = json_pack(
        "{s:s,s:s,s:s,s:s,s:b,s:b,s:b,s:b,s:o,s:{s:s,s:s,s:s,s:s},s:s,s:{s:s,s:s},s:s,s:s}",
        "group", group, "version", version, "kind", kind, "plural", plural, "namespaced",
        namespaced, "allNamespaces", 1, "generation", 1, "unconditionalUpdate", 0, "verbs",
        string_array(kapi_registry__custom_verbs), "storage", "group", group, "resource", plural,
        "version", storage, "kind", kind, "strategy",
        json_array_size(kapi_json_path(crd, "spec.versions")) > 1 ? "customConverting" : "custom",
        "fieldLabels", "metadata.name", "metadata.name", "metadata.namespace", "metadata.namespace",
        "fieldLabelError", "notSupported", "nameRule", "subdomain");
    json_object_set_new_nocheck(def, "subresources", subs);
    json_t *arr = json_object_get(names, "shortNames");
    json_object_set_new_nocheck(def, "shortNames",
                                json_is_array(arr) ? kapi_json_copy(arr) : json_array());
    arr = json_object_get(names, "categories");
    json_object_set_new_nocheck(def, "categories",
                                json_is_array(arr) ? kapi_json_copy(arr) : json_array());
    arr = json_object_get(ver, "additionalPrinterColumns");
    if (json_is_array(arr))
        json_object_set_new_nocheck(def, "printerColumns", kapi_json_copy(arr));
    return def;
}

/* apiextensions' default deprecation warning: the version is deprecated, and the
 * preferred served version that is not, among those ranked above it, is named. */
static char *deprecation_warning(const json_t *crd, const json_t *ver)
{
    if (!json_is_true(json_object_get(ver, "deprecated")))
        return NULL;
    const char *given = kapi_json_path_str(ver, "deprecationWarning");
    if (given)
        return kapi_xstrdup(given);
    const char *group = kapi_json_path_str(crd, "spec.group") ?: "";
    const char *kind = kapi_json_path_str(crd, "spec.names.kind") ?: "";
    const char *name = kapi_json_path_str(ver, "name");
    const char *best = NULL;
    const json_t *versions = kapi_json_path(crd, "spec.versions");
    for (size_t i = 0; i < json_array_size(versions); i++) {
        const json_t *v = json_array_get(versions, i);
        const char *n = kapi_json_path_str(v, "name");
        if (!n || !json_is_true(json_object_get(v, "served")) ||
            json_is_true(json_object_get(v, "deprecated")) || kapi_version_cmp(n, name) >= 0)
            continue;
        if (!best || kapi_version_cmp(n, best) < 0)
            best = n;
    }
    if (!best)
        return kapi_xprintf("%s/%s %s is deprecated", group, name, kind);
    return kapi_xprintf("%s/%s %s is deprecated; use %s/%s %s", group, name, kind, group, best,
                        kind);
}

static kapi_error *compile_version(const json_t *ver, kapi_schema_root **out)
{
    const json_t *src = kapi_json_path(ver, "schema.openAPIV3Schema");
    *out = NULL;
    return src ? kapi_schema_compile(src, out) : NULL;
}

static void custom_free(custom_type *c)
{
    kapi_registry__type_dispose(&c->type);
    json_decref(c->custom.crd);
    free(c->custom.warning);
    kapi_schema_root_free(c->custom.schema);
    kapi_schema_root_free(c->custom.storage_schema);
    kapi_smd_types_free(c->custom.smd_types);
    kapi_arena_dispose(&c->custom.fields);
    free(c);
}

kapi_error *kapi_custom_type_new(const kapi_registry *r, const json_t *crd, const char *version,
                                 const kapi_type **out)
{
    const json_t *ver = find_version(crd, version);
    const char *storage = kapi_registry__crd_storage_version(crd);
    const char *crd_name = kapi_json_path_str(crd, "metadata.name") ?: "";
    kapi_error *err;
    *out = NULL;
    if (!ver || !storage)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                              "customresourcedefinition %s: no version %s or no storage version",
                              crd_name, version);
    custom_type *c = kapi_xcalloc(1, sizeof(*c));
    kapi_custom *cu = &c->custom;
    cu->crd = kapi_json_copy(crd);
    cu->refs = 1;
    cu->smd_types = kapi_smd_types_new();
    kapi_arena_init(&cu->fields);
    /* The strings of the type are borrowed from the copy kept with it. */
    ver = find_version(cu->crd, version);
    storage = kapi_registry__crd_storage_version(cu->crd);
    cu->storage_version = storage;
    if (strcmp(kapi_json_path_str(cu->crd, "spec.conversion.strategy") ?: "", "Webhook") == 0)
        cu->webhook = kapi_json_path(cu->crd, "spec.conversion.webhook");
    cu->webhooks = kapi_registry_webhooks(r);
    cu->warning = deprecation_warning(cu->crd, ver);
    cu->scale_spec = kapi_json_path_str(ver, "subresources.scale.specReplicasPath");
    cu->scale_status = kapi_json_path_str(ver, "subresources.scale.statusReplicasPath");
    cu->scale_selector = kapi_json_path_str(ver, "subresources.scale.labelSelectorPath");
    cu->meta = kapi_schema_set_get(kapi_registry_schemas(r),
                                   "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    c->type.custom = cu;
    if ((err = kapi_registry__load_type(&c->type, crd_name, type_def(cu->crd, ver, storage))) ||
        (err = compile_version(ver, &cu->schema)) != NULL ||
        (strcmp(version, storage) != 0 &&
         (err = compile_version(find_version(cu->crd, storage), &cu->storage_schema)) != NULL)) {
        custom_free(c);
        return err;
    }
    const char *list_kind = kapi_json_path_str(cu->crd, "spec.names.listKind");
    if (list_kind && *list_kind) {
        free((void *)c->type.list_kind);
        c->type.list_kind = kapi_xstrdup(list_kind);
    }
    c->type.schema = cu->schema ? kapi_schema_root_node(cu->schema) : NULL;
    kapi_registry__type_fields(&c->type, cu->smd_types, kapi_registry__object_meta(r), &cu->fields);
    *out = &c->type;
    return NULL;
}

const kapi_type *kapi_type_ref(const kapi_type *t)
{
    if (t && t->custom)
        __atomic_add_fetch(&t->custom->refs, 1, __ATOMIC_RELAXED);
    return t;
}

void kapi_type_unref(const kapi_type *t)
{
    if (!t || !t->custom || __atomic_sub_fetch(&t->custom->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    custom_free((custom_type *)t);
}

/* ---- decoding and conversion ---- */

/* Walks obj by schema s (NULL: nothing to prune) with apiVersion, kind and metadata set
 * aside, so that the schema sees only the fields it describes; the metadata of embedded
 * resources is walked by ObjectMeta's schema (t's). */
static kapi_error *walk_content(const kapi_type *t, const kapi_schema *s, json_t *obj,
                                kapi_schema_walk *w)
{
    static const char *const kept[] = {"apiVersion", "kind", "metadata"};
    json_t *saved[KAPI_ARRAY_LEN(kept)];
    kapi_error *err = NULL;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(kept); i++) {
        saved[i] = json_incref(json_object_get(obj, kept[i]));
        json_object_del(obj, kept[i]);
    }
    bool go = w->go_types;
    const kapi_schema *embedded = w->embedded_meta;
    w->go_types = false;
    w->embedded_meta = t->custom->meta;
    if (s)
        err = kapi_schema_decode(s, obj, w);
    w->go_types = go;
    w->embedded_meta = embedded;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(kept); i++)
        if (saved[i])
            json_object_set_new_nocheck(obj, kept[i], saved[i]);
    return err;
}

/* The object's metadata first, then its content: the order kube reports their unknown
 * fields in. */
/* Whether obj says it is of t's group and kind: kube's decoder prunes and defaults only
 * such an object (one of another kind is refused by validation, which sees it as sent). */
static bool own_kind(const kapi_type *t, const json_t *obj)
{
    const char *av = kapi_registry__str(obj, "apiVersion"), *slash = strchr(av, '/');
    size_t glen = slash ? (size_t)(slash - av) : 0;
    return strcmp(kapi_registry__str(obj, "kind"), t->kind) == 0 && strlen(t->group) == glen &&
           strncmp(av, t->group, glen) == 0;
}

static kapi_error *custom_decode(const kapi_type *t, json_t *obj, kapi_schema_walk *w)
{
    const kapi_custom *c = t->custom;
    json_t *meta = json_object_get(obj, "metadata");
    kapi_error *err = NULL;
    if (json_is_object(meta) && c->meta) {
        size_t first = w->nunknown;
        bool go = w->go_types;
        const kapi_schema *embedded = w->embedded_meta;
        w->go_types = true;
        w->embedded_meta = NULL;
        err = kapi_schema_decode(c->meta, meta, w);
        w->go_types = go;
        w->embedded_meta = embedded;
        for (size_t i = first; i < w->nunknown; i++)
            w->unknown[i] = kapi_arena_printf(w->arena, "metadata.%s", w->unknown[i]);
    }
    if (err || !own_kind(t, obj))
        return err;
    return walk_content(t, t->schema, obj, w);
}

void kapi_custom_prune_as(const kapi_type *t, const char *version, json_t *obj, kapi_schema_walk *w)
{
    const json_t *ver = find_version(t->custom->crd, version);
    const json_t *src = kapi_json_path(ver, "schema.openAPIV3Schema");
    kapi_schema_root *root = NULL;
    kapi_error *err = NULL;
    /* made for this request: a walk-only schema, whose patterns are not compiled */
    if (ver) {
        err = src ? kapi_schema_compile_walk(src, &root) : NULL;
    } else { /* a version the CRD does not have describes no field */
        json_t *none = json_pack("{s:s,s:{s:{}}}", "type", "object", "properties", "apiVersion");
        err = kapi_schema_compile_walk(none, &root);
        json_decref(none);
    }
    if (!err && root) {
        bool defaults = w->defaults;
        w->defaults = false;
        kapi_error_free(walk_content(t, kapi_schema_root_node(root), obj, w));
        w->defaults = defaults;
    }
    kapi_error_free(err);
    kapi_schema_root_free(root);
}

/* Converts those of objs[0..n) not of version to it, each then pruned and defaulted by
 * schema s. */
static kapi_error *convert(const kapi_type *t, json_t **objs, size_t n, const char *version,
                           const kapi_schema *s)
{
    char *gv = kapi_xprintf("%s/%s", t->group, version);
    bool *converted = kapi_xcalloc(n ? n : 1, sizeof(*converted));
    kapi_error *err = NULL;
    if (t->custom->webhook) {
        err = kapi_registry__webhook_convert(t, gv, objs, n, converted);
    } else {
        for (size_t i = 0; i < n; i++) {
            if (strcmp(kapi_json_path_str(objs[i], "apiVersion") ?: "", gv) == 0)
                continue;
            json_t *out = kapi_json_copy(objs[i]);
            json_decref(objs[i]);
            json_object_set_new_nocheck(out, "apiVersion", json_string(gv));
            objs[i] = out;
            converted[i] = true;
        }
    }
    kapi_arena a;
    kapi_arena_init(&a);
    for (size_t i = 0; i < n && !err; i++) {
        if (!converted[i])
            continue;
        kapi_schema_walk w = {.arena = &a, .defaults = true};
        kapi_error_free(walk_content(t, s, objs[i], &w));
    }
    kapi_arena_dispose(&a);
    free(converted);
    free(gv);
    return err;
}

static kapi_error *custom_to_storage(const kapi_type *t, json_t **objs, size_t n)
{
    const kapi_custom *c = t->custom;
    const kapi_schema *s = strcmp(t->version, c->storage_version) == 0 ? t->schema
                           : c->storage_schema ? kapi_schema_root_node(c->storage_schema)
                                               : NULL;
    return convert(t, objs, n, c->storage_version, s);
}

static kapi_error *custom_from_storage(const kapi_type *t, json_t **objs, size_t n)
{
    return convert(t, objs, n, t->version, t->schema);
}

/* ---- status writes ---- */

/* A /status write changes status alone: 1.26's status strategy copies the stored object,
 * metadata included, and sets only the body's status and the managedFields the write's
 * field manager made. */
static void custom_status_write(const kapi_type *t, const char *sub, json_t *obj, const json_t *old)
{
    (void)t;
    if (strcmp(sub, "status") != 0)
        return;
    json_t *meta = kapi_json_copy(json_object_get(old, "metadata"));
    json_t *managed = json_object_get(json_object_get(obj, "metadata"), "managedFields");
    if (managed)
        json_object_set_nocheck(meta, "managedFields", managed);
    else
        json_object_del(meta, "managedFields");
    json_object_set_new_nocheck(obj, "metadata", meta);
}

/* ---- validation ---- */

/* The accessor error of unstructured's Nested* helpers: the value at path (n bytes) is
 * not of Go type want. */
static void accessor_error(kapi_buf *msg, const char *path, size_t n, const json_t *v,
                           const char *want)
{
    kapi_buf_printf(msg, ".%.*s accessor error: ", (int)n, path);
    kapi_go_put_fmt(msg, v, 'v');
    kapi_buf_printf(msg, " is of the type %s, expected %s", kapi_go_type_name(v), want);
}

/* unstructured.NestedInt64 / NestedString on a ".a.b" path: true with the value (*out
 * NULL when absent), or false with the accessor error in msg. */
static bool nested(const json_t *obj, const char *path, bool integer, json_t **out, kapi_buf *msg)
{
    const char *start = path[0] == '.' ? path + 1 : path, *p = start;
    const json_t *cur = obj;
    *out = NULL;
    for (;;) {
        size_t n = strcspn(p, ".");
        if (!(cur = json_object_getn(cur, p, n)))
            return true;
        p += n;
        if (!*p)
            break;
        if (!json_is_object(cur)) {
            accessor_error(msg, start, (size_t)(p - start), cur, "map[string]interface{}");
            return false;
        }
        p++;
    }
    if (integer ? !json_is_integer(cur) : !json_is_string(cur)) {
        accessor_error(msg, start, strlen(start), cur, integer ? "int64" : "string");
        return false;
    }
    *out = (json_t *)cur;
    return true;
}

/* ValidateScaleSpec / ValidateScaleStatus: the replicas at path a non-negative int32. */
static void check_replicas(kapi_error *err, const json_t *obj, const char *path)
{
    json_t *v;
    kapi_buf msg;
    kapi_buf_init(&msg);
    if (!nested(obj, path, true, &v, &msg)) {
        kapi_field_invalid_int(err, path, 0, "%s", msg.ptr);
    } else if (v && json_integer_value(v) < 0) {
        kapi_field_invalid_int(err, path, json_integer_value(v),
                               "should be a non-negative integer");
    } else if (v && json_integer_value(v) > 2147483647) {
        kapi_field_invalid_int(err, path, json_integer_value(v),
                               "should be less than or equal to 2147483647");
    }
    kapi_buf_dispose(&msg);
}

static void check_scale_status(kapi_error *err, const kapi_custom *c, const json_t *obj)
{
    if (c->scale_status)
        check_replicas(err, obj, c->scale_status);
    if (!c->scale_selector)
        return;
    json_t *v;
    kapi_buf msg;
    kapi_buf_init(&msg);
    if (!nested(obj, c->scale_selector, false, &v, &msg))
        kapi_field_invalid_str(err, c->scale_selector, "", "%s", msg.ptr);
    kapi_buf_dispose(&msg);
}

/* customResourceValidator.ValidateTypeMeta: false when kind or apiVersion is wrong. */
static bool check_type_meta(const kapi_type *t, const json_t *obj, kapi_error *err)
{
    const char *kind = kapi_registry__str(obj, "kind");
    const char *av = kapi_registry__str(obj, "apiVersion");
    size_t before = err->ncauses;
    if (strcmp(kind, t->kind) != 0)
        kapi_field_invalid_str(err, "kind", kind, "must be %s", t->kind);
    if (strcmp(av, t->group_version) != 0)
        kapi_field_invalid_str(err, "apiVersion", av, "must be %s", t->group_version);
    return err->ncauses == before;
}

static void check_content(const kapi_type *t, const json_t *obj, kapi_error *err, bool spec)
{
    const kapi_custom *c = t->custom;
    if (spec && c->scale_spec)
        check_replicas(err, obj, c->scale_spec);
    check_scale_status(err, c, obj);
    if (t->schema)
        kapi_schema_validate(t->schema, obj, "", err);
}

/* hasBlockingErr: a cause that stops the x-kubernetes-validations rules (a required,
 * too long, too many or mistyped value), which kube then replaces by one saying so. */
static bool blocking(const kapi_error *err)
{
    static const char *const reasons[] = {KAPI_FIELD_REQUIRED, KAPI_FIELD_TOO_LONG,
                                          KAPI_FIELD_TOO_MANY, "FieldValueTypeInvalid", NULL};
    for (size_t i = 0; i < err->ncauses; i++)
        if (kapi_cstr_in(err->causes[i].reason, reasons))
            return true;
    return false;
}

/* The CRD's x-kubernetes-validations over obj (old: what it replaces, NULL on create). */
static void check_rules(const kapi_type *t, const json_t *obj, const json_t *old, kapi_error *err)
{
    if (!t->schema)
        return;
    if (blocking(err))
        kapi_field_invalid_str(err, "<nil>", "null",
                               "some validation rules were not checked because the object was "
                               "invalid; correct the existing errors to complete validation");
    else
        kapi_schema_rules_validate(t->schema, obj, old, err);
}

static void custom_validate(const kapi_type *t, const json_t *obj, const json_t *old,
                            kapi_error *err)
{
    if (check_type_meta(t, obj, err)) {
        kapi_registry__validate_meta(t, obj, old, err);
        check_content(t, obj, err, true);
    }
    if (t->schema)
        kapi_schema_validate_embedded(t->schema, obj, "", err);
    check_rules(t, obj, old, err);
}

static void custom_validate_status(const kapi_type *t, const char *sub, const json_t *obj,
                                   const json_t *old, kapi_error *err)
{
    kapi_arena a;
    (void)sub;
    if (!check_type_meta(t, obj, err))
        return;
    kapi_arena_init(&a);
    kapi_meta_validate_update(err, &a, json_object_get(obj, "metadata"),
                              json_object_get(old, "metadata"), "metadata", false);
    kapi_arena_dispose(&a);
    check_content(t, obj, err, false);
    check_rules(t, obj, old, err);
}

const kapi_type_strategy kapi_registry__custom_strategy = {
    .name = "custom",
    .prepare_subresource = custom_status_write,
    .validate = custom_validate,
    .validate_subresource = custom_validate_status,
    .decode = custom_decode,
};

const kapi_type_strategy kapi_registry__custom_converting_strategy = {
    .name = "customConverting",
    .prepare_subresource = custom_status_write,
    .to_storage = custom_to_storage,
    .from_storage = custom_from_storage,
    .validate = custom_validate,
    .validate_subresource = custom_validate_status,
    .decode = custom_decode,
};
