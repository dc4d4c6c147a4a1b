/* registry: loads the embedded type files into kapi_types and looks them up. */
#include "registry/registry.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "base/map.h"
#include "codec/go.h"
#include "codec/json.h"
#include "registry/registry_int.h"

extern const struct {
    const char *name;
    const unsigned char *data;
    size_t len;
} kapi_embedded_files[];

struct kapi_registry {
    kapi_type *types;
    size_t ntypes;
    kapi_type *kinds; /* the subresource kinds */
    size_t nkinds;
    kapi_schema_set *schemas;
    kapi_arena protobuf; /* the protobuf message tables */
    /* The messages of the meta kinds (kapi_registry_pb_message). */
    const kapi_pb_message *pb_status, *pb_pom, *pb_pom_list, *pb_scale, *pb_delete_options;
    kapi_smd_types *smd; /* the built-in types' merge types */
    kapi_arena fields;   /* their reset sets */
    const kapi_smd_type *object_meta;
    /* Every served group/version/plural -> its type; and, with the plural empty, every
     * served group/version, with the version empty too every group -> its first type. */
    kapi_map *served;
    kapi_custom_cache *custom; /* the custom types (cache.c): thread-safe, mutable */
    const kapi_type *namespaces, *crds, *serviceaccounts;
    kapi_webhook *webhooks; /* the client conversion webhooks are called with */
};

kapi_custom_cache *kapi_registry__cache(const kapi_registry *r)
{
    return r->custom;
}

/* A key of the served map; the strings are the types'. */
typedef struct served_key {
    kapi_str group, version, plural;
} served_key;

static uint64_t served_hash(const void *key, uint64_t seed)
{
    const served_key *k = key;
    uint64_t h = kapi_map_hash_bytes(k->group.ptr, k->group.len, seed);
    h = kapi_map_hash_bytes(k->version.ptr, k->version.len, h);
    return kapi_map_hash_bytes(k->plural.ptr, k->plural.len, h);
}

static bool served_equal(const void *a, const void *b)
{
    const served_key *x = a, *y = b;
    return kapi_str_eq(x->group, y->group) && kapi_str_eq(x->version, y->version) &&
           kapi_str_eq(x->plural, y->plural);
}

static const kapi_map_type served_map = {served_hash, served_equal, free, NULL};

/* Puts group/version/plural -> t unless the key is there already. */
static void served_put(kapi_map *m, const kapi_type *t, kapi_str version, kapi_str plural)
{
    served_key k = {kapi_str_c(t->group), version, plural};
    if (kapi_map_has(m, &k))
        return;
    served_key *stored = kapi_xmalloc(sizeof(*stored));
    *stored = k;
    kapi_map_put(m, stored, (void *)t);
}

/* Fills r->served from the sorted types. */
static void index_served(kapi_registry *r)
{
    r->served = kapi_map_new(&served_map);
    for (size_t i = 0; i < r->ntypes; i++) {
        const kapi_type *t = &r->types[i];
        served_put(r->served, t, kapi_str_c(t->version), kapi_str_c(t->plural));
        served_put(r->served, t, kapi_str_c(t->version), KAPI_STR(""));
        served_put(r->served, t, KAPI_STR(""), KAPI_STR(""));
    }
}

/* A NULL-terminated vector of the strings of a JSON array (borrowed from def). */
static const char *const *string_vector(const json_t *arr)
{
    size_t n = json_array_size(arr);
    const char **v = kapi_xcalloc(n + 1, sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = json_string_value(json_array_get(arr, i));
    return v;
}

char *kapi_registry_storage_hash(const char *group, const char *version, const char *kind)
{
    char *gvk = kapi_xprintf("%s/%s/%s", group, version, kind);
    unsigned char md[32];
    unsigned char out[16];
    EVP_Digest(gvk, strlen(gvk), md, NULL, EVP_sha256(), NULL);
    EVP_EncodeBlock(out, md, 8);
    free(gvk);
    return kapi_xstrdup((char *)out);
}

/* kube-apiserver's resource prefix in etcd: the type file's "prefix" when it has one, else
 * the resource for a built-in type and group/resource for a custom one. */
static char *storage_prefix(const kapi_type *t, const char *given)
{
    if (given)
        return kapi_xstrdup(given);
    if (t->builtin || !*t->storage_group)
        return kapi_xstrdup(t->storage_resource);
    return kapi_xprintf("%s/%s", t->storage_group, t->storage_resource);
}

/* A Kubernetes-like version name: v<major>[(alpha|beta)<minor>]. */
static bool kube_version(const char *v, long *major, int *stage, long *minor)
{
    char *end;
    if (v[0] != 'v' || !isdigit((unsigned char)v[1]))
        return false;
    *major = strtol(v + 1, &end, 10);
    *minor = 0;
    *stage = 3;
    if (!*end)
        return true;
    if (strncmp(end, "beta", 4) == 0)
        *stage = 2, end += 4;
    else if (strncmp(end, "alpha", 5) == 0)
        *stage = 1, end += 5;
    else
        return false;
    if (!isdigit((unsigned char)*end))
        return false;
    *minor = strtol(end, &end, 10);
    return *end == '\0';
}

int kapi_version_cmp(const char *x, const char *y)
{
    long xm, xn, ym, yn;
    int xs, ys;
    bool kx = kube_version(x, &xm, &xs, &xn), ky = kube_version(y, &ym, &ys, &yn);
    if (kx != ky)
        return kx ? -1 : 1;
    if (!kx)
        return strcmp(x, y);
    if (xs != ys)
        return ys - xs;
    if (xm != ym)
        return ym > xm ? 1 : -1;
    return yn > xn ? 1 : yn < xn ? -1 : 0;
}

/* The field selector facts of a type file: "fieldLabels" (label -> stored path) and
 * "fieldLabelError" ("default" or "notSupported"). */
static kapi_error *load_field_labels(kapi_type *t, const char *name, const json_t *def)
{
    const char *how = kapi_json_path_str(def, "fieldLabelError");
    const char *label;
    json_t *path;
    static const char *const hows[] = {[KAPI_FIELD_LABEL_DEFAULT] = "default",
                                       [KAPI_FIELD_LABEL_NOT_SUPPORTED] = "notSupported",
                                       [KAPI_FIELD_LABEL_NOT_SUPPORTED_FOR_KIND] =
                                           "notSupportedForKind"};
    size_t which = 0;
    while (how && which < KAPI_ARRAY_LEN(hows) && strcmp(how, hows[which]) != 0)
        which++;
    bool ok = how && which < KAPI_ARRAY_LEN(hows);
    t->field_labels = json_object_get(def, "fieldLabels");
    ok = ok && json_is_object(t->field_labels);
    json_object_foreach((json_t *)t->field_labels, label, path)
    {
        ok = ok && json_is_string(path);
    }
    if (!ok)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                              "type file %s: bad \"fieldLabels\" or \"fieldLabelError\"", name);
    t->field_label_error = (kapi_field_label_error)which;
    return NULL;
}

/* The type file's "nameRule" into t->name_rule; false when it names no rule. */
static bool load_name_rule(kapi_type *t, const json_t *def)
{
    static const char *const rules[] = {
        [KAPI_NAME_RULE_SUBDOMAIN] = "subdomain",
        [KAPI_NAME_RULE_LABEL] = "label",
        [KAPI_NAME_RULE_DNS1035] = "dns1035",
        [KAPI_NAME_RULE_RBAC] = "rbac",
    };
    const char *rule = kapi_json_path_str(def, "nameRule");
    t->name_rule = KAPI_NAME_RULE_SUBDOMAIN;
    for (size_t i = 0; rule && i < KAPI_ARRAY_LEN(rules); i++)
        if (strcmp(rule, rules[i]) == 0) {
            t->name_rule = (kapi_name_rule)i;
            return true;
        }
    return rule == NULL;
}

/* t->gc_policy from the type file's "gcPolicy"; false when it names no policy. */
static bool load_gc_policy(kapi_type *t, const json_t *def)
{
    static const char *const policies[] = {
        [KAPI_GC_ORPHAN] = "Orphan", [KAPI_GC_UNSUPPORTED] = "Unsupported"};
    const char *policy = kapi_json_path_str(def, "gcPolicy");
    t->gc_policy = KAPI_GC_DELETE_DEPENDENTS;
    t->gc_policy_warning = kapi_json_path_str(def, "gcPolicyWarning");
    for (size_t i = 1; policy && i < KAPI_ARRAY_LEN(policies); i++)
        if (strcmp(policy, policies[i]) == 0) {
            t->gc_policy = (kapi_gc_policy)i;
            return true;
        }
    return policy == NULL;
}

kapi_error *kapi_registry__load_type(kapi_type *t, const char *name, json_t *def)
{
    const char *fields[] = {"version", "kind", "plural", "strategy"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(fields); i++)
        if (!json_is_string(json_object_get(def, fields[i])))
            return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "type file %s: no \"%s\"", name,
                                  fields[i]);
    t->def = def;
    t->group = kapi_json_path_str(def, "group");
    t->group = t->group ? t->group : "";
    t->version = kapi_json_path_str(def, "version");
    t->group_version =
        *t->group ? kapi_xprintf("%s/%s", t->group, t->version) : kapi_xstrdup(t->version);
    t->kind = kapi_json_path_str(def, "kind");
    t->list_kind = kapi_xprintf("%sList", t->kind);
    t->plural = kapi_json_path_str(def, "plural");
    t->namespaced = json_is_true(json_object_get(def, "namespaced"));
    t->generation = json_is_true(json_object_get(def, "generation"));
    t->all_namespaces = json_is_true(json_object_get(def, "allNamespaces"));
    t->conditional_update = json_is_false(json_object_get(def, "unconditionalUpdate"));
    t->create_on_update = json_is_true(json_object_get(def, "createOnUpdate"));
    t->create_keeps_status = json_is_true(json_object_get(def, "createKeepsStatus"));
    t->persisted = !json_is_false(json_object_get(def, "persisted"));
    t->namespace_lifecycle = !json_is_false(json_object_get(def, "namespaceLifecycle"));
    t->max_name_length = (long long)json_integer_value(json_object_get(def, "maxNameLength"));
    t->group_priority = (int)json_integer_value(json_object_get(def, "groupPriority"));
    t->openapi_name = kapi_json_path_str(def, "openapiName");
    if (!load_name_rule(t, def))
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "type file %s: unknown \"nameRule\"",
                              name);
    if (!load_gc_policy(t, def))
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "type file %s: unknown \"gcPolicy\"",
                              name);
    t->short_names = string_vector(json_object_get(def, "shortNames"));
    t->categories = string_vector(json_object_get(def, "categories"));
    t->verbs = string_vector(json_object_get(def, "verbs"));
    /* A subresource is its verbs, or {"verbs": [...], "kind": "<group/version/Kind>"}
     * (its kind is found once every type file is read: kapi_registry_new). */
    json_t *subs = json_object_get(def, "subresources");
    kapi_subresource *sv = kapi_xcalloc(json_object_size(subs) + 1, sizeof(*sv));
    const char *key;
    json_t *val;
    json_object_foreach(subs, key, val)
    {
        sv[t->nsubresources].name = key;
        sv[t->nsubresources].verbs =
            string_vector(json_is_array(val) ? val : json_object_get(val, "verbs"));
        t->nsubresources++;
    }
    t->subresources = sv;
    json_t *storage = json_object_get(def, "storage");
    bool stored = t->persisted && !json_is_true(json_object_get(def, "subresourceKind"));
    t->storage_group = t->persisted ? kapi_json_path_str(storage, "group") : t->group;
    t->storage_resource = t->persisted ? kapi_json_path_str(storage, "resource") : t->plural;
    if ((stored && (!t->storage_group || !t->storage_resource)) || (!t->persisted && storage))
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "type file %s: bad \"storage\"", name);
    t->storage_group = t->storage_group ? t->storage_group : "";
    t->storage_resource = t->storage_resource ? t->storage_resource : "";
    if (t->persisted)
        t->storage_version_hash = kapi_registry_storage_hash(
            t->storage_group, kapi_json_path_str(storage, "version") ?: "",
            kapi_json_path_str(storage, "kind") ?: "");
    t->go_type = kapi_json_path_str(def, "goType");
    t->builtin = t->go_type != NULL;
    t->storage_prefix = storage_prefix(t, kapi_json_path_str(storage, "prefix"));
    t->go_type = t->builtin ? t->go_type : "unstructured.Unstructured";
    const char *media = kapi_json_path_str(storage, "mediaType");
    t->protobuf_storage = t->builtin && (!media || strcmp(media, "application/json") != 0);
    t->strategy = kapi_registry__strategy(kapi_json_path_str(def, "strategy"));
    if (!t->strategy)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "type file %s: unknown strategy", name);
    t->is_namespace = t->strategy == &kapi_registry__namespace_strategy;
    kapi_error *err = load_field_labels(t, name, def);
    return err ? err : kapi_registry__load_columns(t, name, def);
}

void kapi_registry__type_dispose(kapi_type *t)
{
    for (size_t s = 0; s < t->nsubresources; s++)
        free((void *)t->subresources[s].verbs);
    free((void *)t->subresources);
    free((void *)t->group_version);
    free((void *)t->list_kind);
    free((void *)t->short_names);
    free((void *)t->categories);
    free((void *)t->verbs);
    free((void *)t->storage_version_hash);
    free((void *)t->storage_prefix);
    kapi_registry__free_columns(t);
    json_decref(t->zero);
    json_decref(t->def);
}

static int type_order(const void *a, const void *b)
{
    const kapi_type *x = a, *y = b;
    if (x->group_priority != y->group_priority)
        return x->group_priority < y->group_priority ? -1 : 1;
    int c = strcmp(x->group, y->group);
    if (c)
        return c;
    c = strcmp(x->version, y->version);
    return c ? c : strcmp(x->plural, y->plural);
}

/* The protobuf message of the definition def, one kapi writes besides the types'. */
static kapi_error *meta_message(kapi_registry *r, const char *def, const kapi_pb_message **out)
{
    const kapi_schema *s = kapi_schema_set_get(r->schemas, def);
    if (!s)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "no definition of %s", def);
    return kapi_schema_protobuf(s, &r->protobuf, out);
}

/* The type or subresource kind at index i of both lists. */
static kapi_type *type_or_kind(kapi_registry *r, size_t i)
{
    return i < r->ntypes ? &r->types[i] : &r->kinds[i - r->ntypes];
}

/* Compiles the definitions and gives each type (and subresource kind) its own, its
 * protobuf message and its List's. */
static kapi_error *attach_schemas(kapi_registry *r)
{
    kapi_error *err = kapi_schema_set_compile(r->schemas);
    if (err)
        return err;
    bool have_defs = json_object_size(kapi_schema_set_definitions(r->schemas)) > 0;
    for (size_t i = 0; i < r->ntypes + r->nkinds && have_defs && !err; i++) {
        kapi_type *t = type_or_kind(r, i);
        const char *name = t->openapi_name;
        t->schema = name ? kapi_schema_set_get(r->schemas, name) : NULL;
        if (!t->schema)
            return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "type %s/%s: no definition %s",
                                  t->group_version, t->plural, name ? name : "(none)");
        err = kapi_schema_protobuf(t->schema, &r->protobuf, &t->protobuf);
        char *list = kapi_xprintf("%sList", name);
        const kapi_schema *ls = kapi_schema_set_get(r->schemas, list);
        free(list);
        if (!err && ls)
            err = kapi_schema_protobuf(ls, &r->protobuf, &t->protobuf_list);
        kapi_registry__type_fields(t, r->smd, NULL, &r->fields);
    }
    if (have_defs && !err)
        err = meta_message(r, "io.k8s.apimachinery.pkg.apis.meta.v1.Status", &r->pb_status);
    if (have_defs && !err)
        err = meta_message(r, "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata",
                           &r->pb_pom);
    if (have_defs && !err)
        err = meta_message(r, "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList",
                           &r->pb_pom_list);
    if (have_defs && !err)
        err = meta_message(r, "io.k8s.api.autoscaling.v1.Scale", &r->pb_scale);
    if (have_defs && !err)
        err = meta_message(r, "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
                           &r->pb_delete_options);
    const kapi_schema *meta =
        kapi_schema_set_get(r->schemas, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    if (have_defs && !err && !meta)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "no definition of ObjectMeta");
    r->object_meta = meta ? kapi_smd_type_of(r->smd, meta) : NULL;
    return err;
}

const kapi_pb_message *kapi_registry_pb_message(const kapi_registry *r, const char *api_version,
                                                const char *kind)
{
    bool meta = strcmp(api_version, "meta.k8s.io/v1") == 0 ||
                strcmp(api_version, "meta.k8s.io/v1beta1") == 0;
    if (strcmp(api_version, "v1") == 0 && strcmp(kind, "Status") == 0)
        return r->pb_status;
    if (meta && strcmp(kind, "PartialObjectMetadata") == 0)
        return r->pb_pom;
    if (meta && strcmp(kind, "PartialObjectMetadataList") == 0)
        return r->pb_pom_list;
    if (strcmp(api_version, "autoscaling/v1") == 0 && strcmp(kind, "Scale") == 0)
        return r->pb_scale;
    if (strcmp(kind, "DeleteOptions") == 0) /* registered in every group version */
        return r->pb_delete_options;
    const kapi_type *sk = kapi_registry_subresource_kind(r, api_version, kind);
    if (sk)
        return sk->protobuf;
    size_t n = strlen(kind);
    bool list = n > 4 && strcmp(kind + n - 4, "List") == 0;
    for (size_t i = 0; i < r->ntypes; i++) {
        const kapi_type *t = &r->types[i];
        if (strcmp(t->group_version, api_version) != 0)
            continue;
        if (strcmp(t->kind, kind) == 0)
            return t->protobuf;
        if (list && strlen(t->kind) == n - 4 && strncmp(t->kind, kind, n - 4) == 0)
            return t->protobuf_list;
    }
    return NULL;
}

/* Moves the subresource kinds out of r->types into r->kinds. */
static void set_kinds_apart(kapi_registry *r)
{
    size_t n = 0;
    r->kinds = kapi_xcalloc(r->ntypes + 1, sizeof(*r->kinds));
    for (size_t i = 0; i < r->ntypes; i++) {
        if (json_is_true(json_object_get(r->types[i].def, "subresourceKind")))
            r->kinds[r->nkinds++] = r->types[i];
        else
            r->types[n++] = r->types[i];
    }
    r->ntypes = n;
}

/* Points each subresource that names a kind ("group/version/Kind") at that subresource
 * kind; a name that is none is an error. */
static kapi_error *link_subresource_kinds(kapi_registry *r)
{
    for (size_t i = 0; i < r->ntypes; i++) {
        kapi_type *t = &r->types[i];
        const json_t *subs = json_object_get(t->def, "subresources");
        for (size_t s = 0; s < t->nsubresources; s++) {
            kapi_subresource *sub = (kapi_subresource *)&t->subresources[s];
            const char *ref = kapi_json_path_str(json_object_get(subs, sub->name), "kind");
            const char *slash = ref ? strrchr(ref, '/') : NULL;
            if (!ref)
                continue;
            char *gv = slash ? kapi_xstrndup(ref, (size_t)(slash - ref)) : NULL;
            sub->kind = gv ? kapi_registry_subresource_kind(r, gv, slash + 1) : NULL;
            free(gv);
            if (!sub->kind)
                return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                                      "type %s/%s: subresource %s: no subresource kind %s",
                                      t->group_version, t->plural, sub->name, ref);
        }
    }
    return NULL;
}

kapi_error *kapi_registry_new(kapi_registry **out)
{
    kapi_registry *r = kapi_xcalloc(1, sizeof(*r));
    kapi_error *err = NULL;
    size_t n = 0;
    while (kapi_embedded_files[n].name)
        n++;
    r->types = kapi_xcalloc(n ? n : 1, sizeof(*r->types));
    kapi_arena_init(&r->protobuf);
    kapi_arena_init(&r->fields);
    r->smd = kapi_smd_types_new();
    r->schemas = kapi_schema_set_new();
    r->custom = kapi_registry__cache_new();
    r->webhooks = kapi_webhook_new();
    kapi_registry__defaulters(r->schemas);
    for (size_t i = 0; i < n; i++) {
        char *perr = NULL;
        json_t *def = kapi_json_parse((const char *)kapi_embedded_files[i].data,
                                      kapi_embedded_files[i].len, &perr);
        if (!json_is_object(def)) {
            err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "type file %s: %s",
                                 kapi_embedded_files[i].name, perr ? perr : "not an object");
            free(perr);
            json_decref(def);
            goto done;
        }
        if (strstr(kapi_embedded_files[i].name, ".defs.json")) {
            err = kapi_schema_set_add(r->schemas, def);
            json_decref(def);
            if (err)
                goto done;
            continue;
        }
        if ((err = kapi_registry__load_type(&r->types[r->ntypes++], kapi_embedded_files[i].name,
                                            def)) != NULL)
            goto done;
    }
    set_kinds_apart(r);
    if ((err = link_subresource_kinds(r)) != NULL)
        goto done;
    qsort(r->types, r->ntypes, sizeof(*r->types), type_order);
    index_served(r);
    r->namespaces = kapi_registry_lookup(r, KAPI_STR(""), KAPI_STR("v1"), KAPI_STR("namespaces"));
    r->crds = kapi_registry_lookup(r, KAPI_STR("apiextensions.k8s.io"), KAPI_STR("v1"),
                                   KAPI_STR("customresourcedefinitions"));
    r->serviceaccounts =
        kapi_registry_lookup(r, KAPI_STR(""), KAPI_STR("v1"), KAPI_STR("serviceaccounts"));
    if (!r->namespaces || !r->crds || !r->serviceaccounts)
        err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                             "no type file for namespaces, CRDs or serviceaccounts");
    else
        err = attach_schemas(r);
done:
    if (err) {
        kapi_registry_free(r);
        r = NULL;
    }
    *out = r;
    return err;
}

void kapi_registry_free(kapi_registry *r)
{
    if (!r)
        return;
    kapi_registry__cache_free(r->custom);
    for (size_t i = 0; i < r->ntypes; i++)
        kapi_registry__type_dispose(&r->types[i]);
    for (size_t i = 0; i < r->nkinds; i++)
        kapi_registry__type_dispose(&r->kinds[i]);
    free(r->types);
    free(r->kinds);
    kapi_map_free(r->served);
    kapi_arena_dispose(&r->protobuf);
    kapi_arena_dispose(&r->fields);
    kapi_smd_types_free(r->smd);
    kapi_schema_set_free(r->schemas);
    kapi_webhook_free(r->webhooks);
    free(r);
}

kapi_webhook *kapi_registry_webhooks(const kapi_registry *r)
{
    return r->webhooks;
}

const kapi_smd_type *kapi_registry__object_meta(const kapi_registry *r)
{
    return r->object_meta;
}

const kapi_schema_set *kapi_registry_schemas(const kapi_registry *r)
{
    return r->schemas;
}

const kapi_type *kapi_registry_lookup(const kapi_registry *r, kapi_str group, kapi_str version,
                                      kapi_str plural)
{
    served_key k = {group, version, plural};
    return plural.len && version.len ? kapi_map_get(r->served, &k) : NULL;
}

bool kapi_registry_has_group(const kapi_registry *r, kapi_str group)
{
    served_key k = {group, KAPI_STR(""), KAPI_STR("")};
    return kapi_map_has(r->served, &k);
}

bool kapi_registry_has_group_version(const kapi_registry *r, kapi_str group, kapi_str version)
{
    served_key k = {group, version, KAPI_STR("")};
    return version.len && kapi_map_has(r->served, &k);
}

size_t kapi_registry_count(const kapi_registry *r)
{
    return r->ntypes;
}

const kapi_type *kapi_registry_at(const kapi_registry *r, size_t i)
{
    return i < r->ntypes ? &r->types[i] : NULL;
}

/* Appends s to the key being built at *at. */
static char *key_put(char *at, kapi_str s)
{
    if (s.len)
        memcpy(at, s.ptr, s.len);
    return at + s.len;
}

kapi_str kapi_type_key(kapi_arena *a, const kapi_type *t, kapi_str ns, kapi_str name)
{
    kapi_str prefix = kapi_str_c(t->storage_prefix);
    bool with_ns = t->namespaced && ns.len > 0;
    size_t n = 2 + prefix.len + (with_ns ? ns.len + 1 : 0) + name.len;
    char *key = kapi_arena_alloc(a, n + 1), *at = key;
    *at++ = '/';
    at = key_put(at, prefix);
    *at++ = '/';
    if (with_ns) {
        at = key_put(at, ns);
        *at++ = '/';
    }
    at = key_put(at, name);
    *at = '\0';
    return (kapi_str){key, n};
}

bool kapi_type_key_parse(const kapi_type *t, kapi_str key, kapi_str *ns, kapi_str *name)
{
    kapi_str prefix = kapi_str_c(t->storage_prefix);
    kapi_str n = KAPI_STR(""), rest = key;
    bool ok = rest.len > prefix.len + 1 && rest.ptr[0] == '/' &&
              memcmp(rest.ptr + 1, prefix.ptr, prefix.len) == 0 && rest.ptr[prefix.len + 1] == '/';
    if (ok) {
        rest.ptr += prefix.len + 2;
        rest.len -= prefix.len + 2;
    }
    ok = ok && (!t->namespaced || kapi_str_cut(&rest, '/', &n));
    if (ns)
        *ns = ok ? n : KAPI_STR("");
    if (name)
        *name = ok ? rest : KAPI_STR("");
    return ok;
}

kapi_store_rekey *kapi_registry_rekeys(const kapi_registry *r, kapi_arena *a, size_t *n)
{
    size_t count = kapi_registry_count(r), k = 0;
    kapi_store_rekey *out = kapi_arena_alloc(a, (count ? count : 1) * sizeof(*out));
    for (size_t i = 0; i < count; i++) {
        const kapi_type *t = kapi_registry_at(r, i);
        if (!t->persisted)
            continue;
        char *from = kapi_arena_printf(a, "/%s/%s/", t->storage_group, t->storage_resource);
        char *to = kapi_arena_printf(a, "/%s/", t->storage_prefix);
        bool seen = strcmp(from, to) == 0;
        for (size_t j = 0; j < k && !seen; j++)
            seen = kapi_str_eqc(out[j].from, from);
        if (!seen)
            out[k++] = (kapi_store_rekey){kapi_str_c(from), kapi_str_c(to)};
    }
    *n = k;
    return out;
}

const kapi_type *kapi_registry_namespaces(const kapi_registry *r)
{
    return r->namespaces;
}

const kapi_type *kapi_registry_crds(const kapi_registry *r)
{
    return r->crds;
}

const kapi_type *kapi_registry_serviceaccounts(const kapi_registry *r)
{
    return r->serviceaccounts;
}

const kapi_type *kapi_registry_subresource_kind(const kapi_registry *r, const char *group_version,
                                                const char *kind)
{
    for (size_t i = 0; i < r->nkinds; i++)
        if (strcmp(r->kinds[i].group_version, group_version) == 0 &&
            strcmp(r->kinds[i].kind, kind) == 0)
            return &r->kinds[i];
    return NULL;
}

const char *kapi_crd_name(kapi_arena *a, const char *group, const char *plural)
{
    return kapi_arena_printf(a, "%s.%s", plural, group);
}

const char *kapi_type_resource_name(kapi_arena *a, const kapi_type *t)
{
    if (!*t->group)
        return t->plural;
    return kapi_arena_printf(a, "%s.%s", t->plural, t->group);
}

const kapi_subresource *kapi_type_subresource(const kapi_type *t, kapi_str name)
{
    for (size_t i = 0; i < t->nsubresources; i++)
        if (kapi_str_eqc(name, t->subresources[i].name))
            return &t->subresources[i];
    return NULL;
}

bool kapi_verbs_has(const char *const *verbs, const char *verb)
{
    for (; verbs && *verbs; verbs++)
        if (strcmp(*verbs, verb) == 0)
            return true;
    return false;
}

kapi_error *kapi_type_field_label(const char **out, const kapi_type *t, const char *label)
{
    kapi_buf b;
    *out = json_string_value(json_object_get(t->field_labels, label));
    if (*out)
        return NULL;
    if (t->field_label_error == KAPI_FIELD_LABEL_NOT_SUPPORTED)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "field label not supported: %s", label);
    kapi_buf_init(&b);
    kapi_go_quote(&b, label, strlen(label));
    kapi_error *err =
        t->field_label_error == KAPI_FIELD_LABEL_NOT_SUPPORTED_FOR_KIND
            ? kapi_error_new(KAPI_STATUS_BAD_REQUEST, "field label %s not supported for %s", b.ptr,
                             t->kind)
            : kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                             "%s is not a known field selector: only \"metadata.name\", "
                             "\"metadata.namespace\"",
                             b.ptr);
    kapi_buf_dispose(&b);
    return err;
}

kapi_error *kapi_type_field_selector(const kapi_type *t, kapi_fieldsel *s)
{
    const char *path;
    kapi_error *err;
    for (size_t i = 0; i < s->n; i++) {
        if ((err = kapi_type_field_label(&path, t, s->reqs[i].field)) != NULL)
            return err;
        free(s->reqs[i].field);
        s->reqs[i].field = kapi_xstrdup(path);
    }
    return NULL;
}
