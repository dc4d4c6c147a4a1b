/*
 * api/openapi: /openapi/v2 (one Swagger 2.0 document) and /openapi/v3 (an index and one
 * OpenAPI 3.0 document per group-version), generated from the registry and the CRDs. The
 * built-in part is built once, by the first request for a document (built-in types do not
 * change while kapi runs; a start that made them would spend 2 ms and keep 1.4 MB that
 * most uses never ask for); what the CRDs add is made on demand, when the stored CRDs have
 * changed since the last request, each CRD's part only when it changed.
 *
 * The definitions are the type model's own (src/schema/defs), published without kapi's
 * private facts; a group-version document carries the ones its types reach.
 *
 * Each operation carries x-kubernetes-action and x-kubernetes-group-version-kind and
 * lists its query parameters: kubectl reads the PATCH operation's fieldValidation
 * parameter to decide that the server validates fields itself.
 */
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"

#define META "io.k8s.apimachinery.pkg.apis.meta.v1."

typedef struct doc {
    char *path; /* "apis/batch/v1" */
    char *bytes;
    size_t len;
    char hash[65];
} doc;

/* Document bytes shared by the requests that send them (the last reference frees them). */
typedef struct blob {
    atomic_int refs;
    size_t len;
    char bytes[];
} blob;

/* What one served version of an Established CRD adds: its Swagger paths and definitions
 * and its OpenAPI 3 paths and schemas, as encoded members (no braces; "" for none). */
typedef struct version_frag {
    char *group, *version;
    char *v2_paths, *v2_defs;
    char *v3_paths, *v3_schemas;
} version_frag;

/* A CRD's fragments, made again only when the CRD changes. */
typedef struct crd_frag {
    char *key;
    int64_t rev;
    version_frag *v;
    size_t n;
} crd_frag;

/* The OpenAPI 3 document of a group-version the CRDs serve: spliced again from the
 * fragments for each request, so that only its hash is kept. */
typedef struct gv_doc {
    char *path; /* "apis/example.com/v1" */
    char *group, *version;
    char hash[65];
} gv_doc;

struct kapi_openapi {
    const kapi_registry *reg;
    /* The built-in documents, made by the first request for any document (none may be
     * asked for, and a start need not spend the time nor keep the bytes), then fixed;
     * ready says they are made. */
    atomic_bool ready;
    char *v2_paths, *v2_defs; /* /openapi/v2's paths and definitions objects, encoded */
    char *crd_closure;        /* the built-in schemas a CRD's OpenAPI 3 document refers to, encoded
                               * members */
    char *index;
    size_t index_len;
    doc *docs;
    size_t ndocs;
    /* What the CRDs add, under mu: made again when the stored CRDs differ from those
     * seen (fingerprint of their keys and revisions), each CRD's part only when it
     * changed. With no Established CRD the built-in documents are served as they are. */
    pthread_mutex_t mu;
    bool built;
    uint64_t fingerprint;
    crd_frag *frags;
    size_t nfrags;
    blob *v2_pb;     /* /openapi/v2 in protobuf, made on first demand (again after a change) */
    blob *crd_index; /* NULL while no CRD adds anything */
    gv_doc *crd_docs;
    size_t ncrd_docs;
};

/* The definition name of a type: io.k8s.api.<group's first label or core>.<v>.<Kind>. */
static char *def_name(const kapi_type *t)
{
    if (t->openapi_name)
        return kapi_xstrdup(t->openapi_name);
    size_t n = *t->group ? strcspn(t->group, ".") : 4;
    return kapi_xprintf("io.k8s.api.%.*s.%s.%s", (int)n, *t->group ? t->group : "core", t->version,
                        t->kind);
}

static json_t *ref(bool v3, const char *name)
{
    return json_pack("{s:s+}", "$ref", v3 ? "#/components/schemas/" : "#/definitions/", name);
}

typedef struct param {
    const char *name, *in, *type, *what;
} param;

static const param p_pretty = {"pretty", "query", "string", "If 'true', the output is indented."};
static const param p_name = {"name", "path", "string", "The name of the object."};
static const param p_namespace = {"namespace", "path", "string", "The namespace of the object."};
static const param p_write[] = {
    {"dryRun", "query", "string", "When 'All', every stage runs but nothing is stored."},
    {"fieldManager", "query", "string", "The name of the actor making the change."},
    {"fieldValidation", "query", "string",
     "How unknown or duplicate fields are treated: Ignore, Warn (default) or Strict."},
};
static const param p_force = {"force", "query", "boolean",
                              "Take over fields owned by other managers (apply requests)."};
static const param p_list[] = {
    {"allowWatchBookmarks", "query", "boolean", "Ask for BOOKMARK events in a watch."},
    {"continue", "query", "string", "The token of the next page of a chunked list."},
    {"fieldSelector", "query", "string", "Only objects whose fields match."},
    {"labelSelector", "query", "string", "Only objects whose labels match."},
    {"limit", "query", "integer", "At most this many items per page."},
    {"resourceVersion", "query", "string", "Which version of the data is wanted."},
    {"resourceVersionMatch", "query", "string", "How resourceVersion is matched."},
    {"timeoutSeconds", "query", "integer", "How long a list or watch may take."},
    {"watch", "query", "boolean", "Stream changes instead of listing."},
};
static const param p_delete[] = {
    {"dryRun", "query", "string", "When 'All', every stage runs but nothing is stored."},
    {"gracePeriodSeconds", "query", "integer", "Seconds before the object is deleted."},
    {"propagationPolicy", "query", "string",
     "Whether and how dependents are deleted: Orphan, Background or Foreground."},
};

static json_t *param_json(bool v3, const param *p)
{
    json_t *j = json_pack("{s:s,s:s,s:s}", "name", p->name, "in", p->in, "description", p->what);
    json_t *type = json_pack("{s:s,s:b}", "type", p->type, "uniqueItems", 1);
    if (strcmp(p->in, "path") == 0)
        json_object_set_new_nocheck(j, "required", json_true());
    if (v3)
        json_object_set_new_nocheck(j, "schema", type);
    else {
        json_object_update(j, type);
        json_decref(type);
    }
    return j;
}

static void add_params(json_t *arr, bool v3, const param *ps, size_t n)
{
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, param_json(v3, &ps[i]));
}

static json_t *media_content(const char *const *types, json_t *schema)
{
    json_t *c = json_object();
    for (size_t i = 0; types[i]; i++)
        json_object_set_new_nocheck(c, types[i], json_pack("{s:O}", "schema", schema));
    json_decref(schema);
    return c;
}

/* One operation of a path. */
static json_t *operation(bool v3, const kapi_type *t, const char *action, const char *what,
                         const char *body_def, const char *resp_def, int code)
{
    static const char *const json_types[] = {"application/json", "application/yaml",
                                             "application/vnd.kubernetes.protobuf", NULL};
    static const char *const patch_types[] = {
        "application/json-patch+json", "application/merge-patch+json",
        "application/strategic-merge-patch+json", "application/apply-patch+yaml", NULL};
    bool patch = strcmp(action, "patch") == 0;
    json_t *op = json_pack("{s:s,s:s+}", "description", what, "operationId", action, t->kind);
    json_t *params = json_array();
    if (strcmp(action, "list") == 0 || strcmp(action, "deletecollection") == 0)
        add_params(params, v3, p_list, KAPI_ARRAY_LEN(p_list));
    if (strcmp(action, "post") == 0 || strcmp(action, "put") == 0 || patch)
        add_params(params, v3, p_write, KAPI_ARRAY_LEN(p_write));
    if (patch)
        add_params(params, v3, &p_force, 1);
    if (strcmp(action, "delete") == 0 || strcmp(action, "deletecollection") == 0)
        add_params(params, v3, p_delete, KAPI_ARRAY_LEN(p_delete));
    json_t *body_schema = ref(v3, body_def ? body_def : META "Patch");
    if (body_def || patch) {
        if (v3)
            json_object_set_new_nocheck(
                op, "requestBody",
                json_pack("{s:o,s:b}", "content",
                          media_content(patch ? patch_types : json_types, body_schema), "required",
                          1));
        else
            json_array_append_new(params, json_pack("{s:s,s:s,s:b,s:o}", "name", "body", "in",
                                                    "body", "required", 1, "schema", body_schema));
    } else {
        json_decref(body_schema);
    }
    json_object_set_new_nocheck(op, "parameters", params);
    char codestr[8];
    snprintf(codestr, sizeof(codestr), "%d", code);
    json_t *resp = json_pack("{s:s}", "description", code == 201 ? "Created" : "OK");
    if (v3)
        json_object_set_new_nocheck(resp, "content", media_content(json_types, ref(v3, resp_def)));
    else
        json_object_set_new_nocheck(resp, "schema", ref(v3, resp_def));
    json_object_set_new_nocheck(
        op, "responses",
        json_pack("{s:o,s:{s:s}}", codestr, resp, "401", "description", "Unauthorized"));
    json_object_set_new_nocheck(op, "x-kubernetes-action",
                                json_string(strcmp(action, "put") == 0    ? "put"
                                            : strcmp(action, "post") == 0 ? "post"
                                                                          : action));
    json_object_set_new_nocheck(
        op, "x-kubernetes-group-version-kind",
        json_pack("{s:s,s:s,s:s}", "group", t->group, "kind", t->kind, "version", t->version));
    return op;
}

static json_t *path_item(bool v3, bool namespaced, bool named)
{
    json_t *params = json_array();
    if (named)
        json_array_append_new(params, param_json(v3, &p_name));
    if (namespaced)
        json_array_append_new(params, param_json(v3, &p_namespace));
    json_array_append_new(params, param_json(v3, &p_pretty));
    return json_pack("{s:o}", "parameters", params);
}

static void add_paths(json_t *paths, bool v3, const kapi_type *t)
{
    char *def = def_name(t), *list_def = kapi_xprintf("%sList", def);
    char *base = *t->group ? kapi_xprintf("/apis/%s/%s", t->group, t->version)
                           : kapi_xprintf("/api/%s", t->version);
    char *coll = t->namespaced ? kapi_xprintf("%s/namespaces/{namespace}/%s", base, t->plural)
                               : kapi_xprintf("%s/%s", base, t->plural);
    char *item = kapi_xprintf("%s/{name}", coll);
    json_t *c = path_item(v3, t->namespaced, false), *it = path_item(v3, t->namespaced, true);
    if (!t->persisted) { /* a review: created and answered, nothing else */
        json_object_set_new_nocheck(c, "post",
                                    operation(v3, t, "post", "Create an object.", def, def, 201));
        json_object_set_new_nocheck(paths, coll, c);
        json_decref(it);
        goto done;
    }
    json_object_set_new_nocheck(c, "get",
                                operation(v3, t, "list", "List objects.", NULL, list_def, 200));
    json_object_set_new_nocheck(c, "post",
                                operation(v3, t, "post", "Create an object.", def, def, 201));
    if (kapi_verbs_has(t->verbs, "deletecollection"))
        json_object_set_new_nocheck(
            c, "delete",
            operation(v3, t, "deletecollection", "Delete a collection.", NULL, META "Status", 200));
    json_object_set_new_nocheck(it, "get",
                                operation(v3, t, "get", "Read an object.", NULL, def, 200));
    json_object_set_new_nocheck(it, "put",
                                operation(v3, t, "put", "Replace an object.", def, def, 200));
    json_object_set_new_nocheck(it, "patch",
                                operation(v3, t, "patch", "Patch an object.", NULL, def, 200));
    json_object_set_new_nocheck(
        it, "delete", operation(v3, t, "delete", "Delete an object.", NULL, META "Status", 200));
    json_object_set_new_nocheck(paths, coll, c);
    json_object_set_new_nocheck(paths, item, it);
    for (size_t s = 0; s < t->nsubresources; s++) {
        const kapi_subresource *sub = &t->subresources[s];
        json_t *sp = path_item(v3, t->namespaced, true);
        if (sub->kind && kapi_verbs_has(sub->verbs, "create")) {
            /* a subresource of its own kind, created (a TokenRequest) */
            char *kdef = def_name(sub->kind);
            json_object_set_new_nocheck(
                sp, "post",
                operation(v3, sub->kind, "post", "Create a subresource.", kdef, kdef, 201));
            free(kdef);
        }
        /* a custom resource's scale is an autoscaling/v1 Scale */
        const char *sdef = strcmp(sub->name, "scale") == 0 && !sub->kind && !t->schema
                               ? "io.k8s.api.autoscaling.v1.Scale"
                               : def;
        if (kapi_verbs_has(sub->verbs, "get"))
            json_object_set_new_nocheck(
                sp, "get", operation(v3, t, "get", "Read an object.", NULL, sdef, 200));
        if (kapi_verbs_has(sub->verbs, "update"))
            json_object_set_new_nocheck(
                sp, "put", operation(v3, t, "put", "Replace a subresource.", sdef, sdef, 200));
        if (kapi_verbs_has(sub->verbs, "patch"))
            json_object_set_new_nocheck(
                sp, "patch", operation(v3, t, "patch", "Patch a subresource.", NULL, sdef, 200));
        char *p = kapi_xprintf("%s/%s", item, sub->name);
        json_object_set_new_nocheck(paths, p, sp);
        free(p);
    }
    if (t->namespaced && t->all_namespaces) {
        char *all = kapi_xprintf("%s/%s", base, t->plural);
        json_t *a = path_item(v3, false, false);
        json_object_set_new_nocheck(
            a, "get",
            operation(v3, t, "list", "List objects in every namespace.", NULL, list_def, 200));
        json_object_set_new_nocheck(paths, all, a);
        free(all);
    }
done:
    free(def);
    free(list_def);
    free(base);
    free(coll);
    free(item);
}

/* A definition as published: kapi's own facts left out; in OpenAPI 3 a $ref moves to
 * #/components/schemas/ and, when it has siblings, into allOf as Kubernetes writes it. */
static json_t *publish(const json_t *v, bool v3)
{
    if (json_is_array(v)) {
        json_t *out = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) json_array_append_new(out, publish(x, v3));
        return out;
    }
    if (!json_is_object(v))
        return kapi_json_copy(v);
    json_t *out = json_object();
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)v, key, x)
    {
        if (strncmp(key, "x-kapi-", 7) == 0)
            continue;
        if (strcmp(key, "$ref") == 0 && json_is_string(x)) {
            const char *name = strrchr(json_string_value(x), '/');
            name = name ? name + 1 : json_string_value(x);
            json_t *r = ref(v3, name);
            if (v3 && json_object_size(v) > 1) {
                json_object_set_new_nocheck(out, "allOf", json_pack("[o]", r));
            } else {
                json_object_set_nocheck(out, "$ref", json_object_get(r, "$ref"));
                json_decref(r);
            }
            continue;
        }
        json_object_set_new_nocheck(out, key, publish(x, v3));
    }
    return out;
}

/* The definitions every document needs besides the types' own. */
static const char *const common_defs[] = {
    META "Status",
    META "DeleteOptions",
    META "Patch",
    META "WatchEvent",
};

/* Adds name and every definition it reaches to defs (published). */
static void add_closure(json_t *defs, const json_t *all, const char *name, bool v3);

static void add_refs(json_t *defs, const json_t *all, const json_t *v, bool v3)
{
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) add_refs(defs, all, x, v3);
        return;
    }
    if (!json_is_object(v))
        return;
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)v, key, x)
    {
        if (strcmp(key, "$ref") == 0 && json_is_string(x)) {
            const char *name = strrchr(json_string_value(x), '/');
            add_closure(defs, all, name ? name + 1 : json_string_value(x), v3);
        } else {
            add_refs(defs, all, x, v3);
        }
    }
}

static void add_closure(json_t *defs, const json_t *all, const char *name, bool v3)
{
    const json_t *d = json_object_get(all, name);
    if (!d || json_object_get(defs, name))
        return;
    json_object_set_new_nocheck(defs, name, publish(d, v3));
    add_refs(defs, all, d, v3);
}

/* The definitions of the types of one group-version (or of all, with group NULL). */
static json_t *definitions(const kapi_registry *reg, const char *group, const char *version,
                           bool v3)
{
    const json_t *all = kapi_schema_set_definitions(kapi_registry_schemas(reg));
    json_t *defs = json_object();
    if (!group) {
        const char *name;
        json_t *d;
        json_object_foreach((json_t *)all, name, d)
            json_object_set_new_nocheck(defs, name, publish(d, v3));
    }
    for (size_t i = 0; i < KAPI_ARRAY_LEN(common_defs); i++)
        add_closure(defs, all, common_defs[i], v3);
    for (size_t i = 0; group && i < kapi_registry_count(reg); i++) {
        const kapi_type *t = kapi_registry_at(reg, i);
        if (strcmp(t->group, group) != 0 || strcmp(t->version, version) != 0)
            continue;
        char *def = def_name(t), *list_def = kapi_xprintf("%sList", def);
        add_closure(defs, all, def, v3);
        add_closure(defs, all, list_def, v3);
        free(def);
        free(list_def);
        for (size_t s = 0; s < t->nsubresources; s++) {
            if (!t->subresources[s].kind)
                continue;
            def = def_name(t->subresources[s].kind);
            add_closure(defs, all, def, v3);
            free(def);
        }
    }
    return defs;
}

static char *encode_doc(json_t *d, size_t *len)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_json_encode(&b, d);
    json_decref(d);
    return kapi_buf_detach(&b, len);
}

static void hash_hex(const char *p, size_t n, char out[65])
{
    unsigned char md[32];
    EVP_Digest(p, n, md, NULL, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02X", md[i]);
}

static json_t *info(void)
{
    return json_pack("{s:s,s:s}", "title", "Kubernetes", "version", "v1.26.0+kapi");
}

static void build_v3_doc(doc *d, const kapi_registry *reg, const char *group, const char *version)
{
    json_t *paths = json_object(), *schemas = definitions(reg, group, version, true);
    for (size_t i = 0; i < kapi_registry_count(reg); i++) {
        const kapi_type *t = kapi_registry_at(reg, i);
        if (strcmp(t->group, group) == 0 && strcmp(t->version, version) == 0)
            add_paths(paths, true, t);
    }
    json_t *j = json_pack("{s:s,s:o,s:o,s:{s:o}}", "openapi", "3.0.0", "info", info(), "paths",
                          paths, "components", "schemas", schemas);
    d->path = *group ? kapi_xprintf("apis/%s/%s", group, version) : kapi_xprintf("api/%s", version);
    d->bytes = encode_doc(j, &d->len);
    hash_hex(d->bytes, d->len, d->hash);
}

/* ---- custom resources ----
 *
 * Each served version of an Established CRD is published as apiextensions-apiserver's
 * OpenAPI builder publishes it: paths as for a built-in type, the definition
 * <reversed group>.<version>.<Kind> (com.example.v1.Widget) made from the version's
 * structural schema with apiVersion, kind and metadata (ObjectMeta) added, and
 * <...>.<ListKind>. A schema that is not structural publishes as a bare object; in
 * Swagger 2.0 one that preserves unknown fields at its root does too, and the keywords
 * kubectl's v2 validation cannot read are left out (ToStructuralOpenAPIV2). */

static blob *blob_new(const char *p, size_t n)
{
    blob *b = kapi_xmalloc(sizeof(*b) + n + 1);
    atomic_init(&b->refs, 1);
    b->len = n;
    memcpy(b->bytes, p, n);
    b->bytes[n] = '\0';
    return b;
}

static void blob_unref(void *p)
{
    blob *b = p;
    if (b && atomic_fetch_sub(&b->refs, 1) == 1)
        free(b);
}

static blob *blob_ref(blob *b)
{
    if (b)
        atomic_fetch_add(&b->refs, 1);
    return b;
}

/* The members of an encoded JSON object, without its braces. */
static char *members(json_t *obj)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_json_encode(&b, obj);
    json_decref(obj);
    size_t n = b.len >= 2 ? b.len - 2 : 0;
    char *out = kapi_xmalloc(n + 1);
    memcpy(out, b.ptr + 1, n);
    out[n] = '\0';
    kapi_buf_dispose(&b);
    return out;
}

/* The keywords a structural schema carries into OpenAPI (Structural.ToKubeOpenAPI). */
static const char *const structural_keys[] = {"type",
                                              "description",
                                              "title",
                                              "format",
                                              "default",
                                              "nullable",
                                              "properties",
                                              "items",
                                              "additionalProperties",
                                              "required",
                                              "enum",
                                              "maximum",
                                              "exclusiveMaximum",
                                              "minimum",
                                              "exclusiveMinimum",
                                              "maxLength",
                                              "minLength",
                                              "pattern",
                                              "maxItems",
                                              "minItems",
                                              "uniqueItems",
                                              "multipleOf",
                                              "maxProperties",
                                              "minProperties",
                                              "allOf",
                                              "anyOf",
                                              "oneOf",
                                              "not",
                                              "x-kubernetes-preserve-unknown-fields",
                                              "x-kubernetes-embedded-resource",
                                              "x-kubernetes-int-or-string",
                                              "x-kubernetes-list-map-keys",
                                              "x-kubernetes-list-type",
                                              "x-kubernetes-map-type",
                                              "x-kubernetes-validations",
                                              NULL};

static bool structural_key(const char *k)
{
    for (size_t i = 0; structural_keys[i]; i++)
        if (strcmp(k, structural_keys[i]) == 0)
            return true;
    return false;
}

/* apiVersion, kind and metadata of an object at the root or embedded, described in kapi's
 * words for them (those of a built-in definition). */
static void add_type_meta(json_t *s, const json_t *all, bool list)
{
    const json_t *status = kapi_json_path(json_object_get(all, META "Status"), "properties");
    const json_t *own = kapi_json_path(json_object_get(all, list ? "io.k8s.api.batch.v1.CronJobList"
                                                                 : "io.k8s.api.batch.v1.CronJob"),
                                       "properties");
    json_t *props = json_object_get(s, "properties");
    if (!json_is_object(props)) {
        props = json_object();
        json_object_set_new_nocheck(s, "properties", props);
    }
    json_object_set_new_nocheck(props, "apiVersion",
                                publish(json_object_get(status, "apiVersion"), false));
    json_object_set_new_nocheck(props, "kind", publish(json_object_get(status, "kind"), false));
    json_t *meta =
        json_pack("{s:s+}", "$ref", "#/definitions/" META, list ? "ListMeta" : "ObjectMeta");
    const json_t *desc = kapi_json_path(json_object_get(own, "metadata"), "description");
    if (json_is_string(desc))
        json_object_set_nocheck(meta, "description", (json_t *)desc);
    json_object_set_new_nocheck(props, "metadata", meta);
}

/* An embedded resource's apiVersion, kind (both required) and metadata
 * (addEmbeddedProperties). */
static void embedded_meta(json_t *s, const json_t *all)
{
    if (!json_is_true(json_object_get(s, "x-kubernetes-embedded-resource")))
        return;
    add_type_meta(s, all, false);
    json_t *req = json_object_get(s, "required");
    if (!json_is_array(req)) {
        req = json_array();
        json_object_set_new_nocheck(s, "required", req);
    }
    static const char *const needed[] = {"kind", "apiVersion"};
    for (size_t i = 0; i < 2; i++) {
        bool has = false;
        for (size_t j = 0; j < json_array_size(req) && !has; j++)
            has = strcmp(json_string_value(json_array_get(req, j)) ?: "", needed[i]) == 0;
        if (!has)
            json_array_append_new(req, json_string(needed[i]));
    }
}

/* A copy of a structural schema as OpenAPI publishes it: unknown keywords left out,
 * int-or-string unfolded (anyOf integer, string), embedded resources given their
 * apiVersion, kind and metadata, and for Swagger 2.0 (v2) what kubectl cannot read
 * taken away. */
static json_t *publish_schema(const json_t *s, const json_t *all, bool v2)
{
    if (!json_is_object(s))
        return json_object();
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v)
    {
        if (!structural_key(k) || json_is_null(v))
            continue;
        if (strcmp(k, "properties") == 0 && json_is_object(v)) {
            json_t *props = json_object();
            const char *pk;
            json_t *pv;
            json_object_foreach(v, pk, pv)
                json_object_set_new_nocheck(props, pk, publish_schema(pv, all, v2));
            json_object_set_new_nocheck(out, k, props);
        } else if ((strcmp(k, "items") == 0 || strcmp(k, "additionalProperties") == 0 ||
                    strcmp(k, "not") == 0) &&
                   json_is_object(v)) {
            json_object_set_new_nocheck(out, k, publish_schema(v, all, v2));
        } else if ((strcmp(k, "allOf") == 0 || strcmp(k, "anyOf") == 0 ||
                    strcmp(k, "oneOf") == 0) &&
                   json_is_array(v)) {
            json_t *l = json_array();
            for (size_t i = 0; i < json_array_size(v); i++)
                json_array_append_new(l, publish_schema(json_array_get(v, i), all, v2));
            json_object_set_new_nocheck(out, k, l);
        } else {
            json_object_set_new_nocheck(out, k,
                                        json_deep_copy(v)); /* not shared: the v2 form edits it */
        }
    }
    if (json_is_true(json_object_get(out, "x-kubernetes-int-or-string"))) { /* Unfold */
        json_t *any = json_object_get(out, "anyOf"), *all_of = json_object_get(out, "allOf");
        bool pattern =
            json_array_size(any) == 2 &&
            strcmp(kapi_json_path_str(json_array_get(any, 0), "type") ?: "", "integer") == 0;
        bool first = json_array_size(all_of) >= 1 &&
                     json_array_size(json_object_get(json_array_get(all_of, 0), "anyOf")) == 2;
        if (!pattern && !first) {
            json_t *pair = json_pack("[{s:s},{s:s}]", "type", "integer", "type", "string");
            if (!any)
                json_object_set_new_nocheck(out, "anyOf", pair);
            else {
                if (!json_is_array(all_of)) {
                    all_of = json_array();
                    json_object_set_new_nocheck(out, "allOf", all_of);
                }
                json_array_insert_new(all_of, 0, json_pack("{s:o}", "anyOf", pair));
            }
        }
    }
    if (!v2) {
        embedded_meta(out, all);
        return out;
    }
    /* ToStructuralOpenAPIV2 */
    json_object_del(out, "allOf");
    json_object_del(out, "oneOf");
    json_object_del(out, "anyOf");
    json_object_del(out, "not");
    bool preserve = json_is_true(json_object_get(out, "x-kubernetes-preserve-unknown-fields"));
    if (json_is_true(json_object_get(out, "nullable"))) {
        json_object_del(out, "type");
        json_object_del(out, "nullable");
        json_object_del(out, "items");
        json_object_del(out, "properties");
    }
    if (preserve) {
        json_object_del(out, "items");
        json_object_del(out, "properties");
    }
    const char *type = kapi_json_path_str(out, "type") ?: "";
    if ((strcmp(type, "array") == 0 && !json_object_get(out, "items")) ||
        (preserve && strcmp(type, "object") == 0))
        json_object_del(out, "type");
    json_t *req = json_object_get(out, "required");
    if (json_is_true(kapi_json_path(json_object_get(out, "additionalProperties"), "nullable")))
        json_object_del(out, "required");
    else if (json_is_array(req)) {
        for (size_t i = json_array_size(req); i-- > 0;) {
            const char *f = json_string_value(json_array_get(req, i));
            if (f && json_is_true(kapi_json_path(
                         json_object_get(json_object_get(s, "properties"), f), "nullable")))
                json_array_remove(req, i);
        }
        if (!json_array_size(req)) /* Go's filtered nil slice: left out */
            json_object_del(out, "required");
    }
    if (!preserve) /* kubectl's v2 validation would refuse the unknown fields */
        embedded_meta(out, all);
    return out;
}

static json_t *gvk(const char *group, const char *version, const char *kind)
{
    return json_pack("[{s:s,s:s,s:s}]", "group", group, "kind", kind, "version", version);
}

/* The definition of a CRD version's objects (v2: for Swagger 2.0). */
static json_t *crd_definition(const json_t *crd, const json_t *ver, const json_t *all, bool v2)
{
    const json_t *schema = kapi_json_path(ver, "schema.openAPIV3Schema");
    const char *group = kapi_json_path_str(crd, "spec.group") ?: "";
    const char *version = kapi_json_path_str(ver, "name") ?: "";
    const char *kind = kapi_json_path_str(crd, "spec.names.kind") ?: "";
    kapi_schema_crd_rules rules = kapi_schema_crd_rules_for(NULL);
    kapi_error *e = kapi_error_new(KAPI_STATUS_INVALID, "types");
    bool usable = json_is_object(schema) && kapi_schema_crd_structural(schema);
    if (usable) { /* SchemaHasInvalidTypes: only a type of OpenAPI's six */
        kapi_schema_crd_check(schema, "", &rules, e);
        for (size_t i = 0; i < e->ncauses && usable; i++)
            usable = strcmp(e->causes[i].reason, "FieldValueNotSupported") != 0 ||
                     !strstr(e->causes[i].field ? e->causes[i].field : "", "type");
    }
    kapi_error_free(e);
    bool preserve = json_is_true(json_object_get(schema, "x-kubernetes-preserve-unknown-fields")) ||
                    json_is_true(kapi_json_path(crd, "spec.preserveUnknownFields"));
    json_t *def;
    if (!usable || (v2 && preserve)) {
        def = json_pack("{s:s}", "type", "object");
    } else {
        def = publish_schema(schema, all, v2);
        add_type_meta(def, all, false);
    }
    json_object_set_new_nocheck(def, "x-kubernetes-group-version-kind", gvk(group, version, kind));
    return def;
}

static json_t *crd_list_definition(const json_t *crd, const char *version, const char *def,
                                   const json_t *all)
{
    const char *group = kapi_json_path_str(crd, "spec.group") ?: "";
    const char *kind = kapi_json_path_str(crd, "spec.names.kind") ?: "";
    const char *list = kapi_json_path_str(crd, "spec.names.listKind") ?: "";
    const char *plural = kapi_json_path_str(crd, "spec.names.plural") ?: "";
    char *what = kapi_xprintf("%s is a list of %s.", list, kind);
    char *items = kapi_xprintf("The %s of the list.", plural);
    json_t *l = json_pack("{s:s,s:[s],s:{s:{s:s,s:{s:s+},s:s}}}", "description", what, "required",
                          "items", "properties", "items", "type", "array", "items", "$ref",
                          "#/definitions/", def, "description", items);
    free(what);
    free(items);
    add_type_meta(l, all, true);
    json_object_set_new_nocheck(l, "x-kubernetes-group-version-kind", gvk(group, version, list));
    return l;
}

/* The reversed group: example.com -> com.example. */
static char *reversed(const char *group)
{
    kapi_buf b;
    kapi_buf_init(&b);
    const char *end = group + strlen(group);
    while (end > group) {
        const char *dot = end;
        while (dot > group && dot[-1] != '.')
            dot--;
        kapi_buf_printf(&b, "%s%.*s", b.len ? "." : "", (int)(end - dot), dot);
        end = dot > group ? dot - 1 : group;
    }
    return kapi_buf_detach(&b, NULL);
}

static const char *const crd_verbs[] = {"delete", "deletecollection", "get",   "list", "patch",
                                        "create", "update",           "watch", NULL};
static const char *const crd_sub_verbs[] = {"get", "patch", "update", NULL};

/* The fragments of one served version of crd. */
static void version_fragment(version_frag *f, const json_t *crd, const json_t *ver,
                             const json_t *all)
{
    const char *group = kapi_json_path_str(crd, "spec.group") ?: "";
    const char *version = kapi_json_path_str(ver, "name") ?: "";
    char *rg = reversed(group);
    char *def =
        kapi_xprintf("%s.%s.%s", rg, version, kapi_json_path_str(crd, "spec.names.kind") ?: "");
    char *list =
        kapi_xprintf("%s.%s.%s", rg, version, kapi_json_path_str(crd, "spec.names.listKind") ?: "");
    kapi_subresource subs[2];
    size_t nsubs = 0;
    if (kapi_json_path(ver, "subresources.status"))
        subs[nsubs++] = (kapi_subresource){.name = "status", .verbs = crd_sub_verbs};
    if (kapi_json_path(ver, "subresources.scale"))
        subs[nsubs++] = (kapi_subresource){.name = "scale", .verbs = crd_sub_verbs};
    kapi_type t = {
        .group = group,
        .version = version,
        .kind = kapi_json_path_str(crd, "spec.names.kind") ?: "",
        .list_kind = kapi_json_path_str(crd, "spec.names.listKind") ?: "",
        .plural = kapi_json_path_str(crd, "spec.names.plural") ?: "",
        .namespaced = strcmp(kapi_json_path_str(crd, "spec.scope") ?: "", "Namespaced") == 0,
        .all_namespaces = true,
        .verbs = crd_verbs,
        .subresources = subs,
        .nsubresources = nsubs,
        .persisted = true,
        .openapi_name = def,
    };
    f->group = kapi_xstrdup(group);
    f->version = kapi_xstrdup(version);
    json_t *paths = json_object();
    add_paths(paths, false, &t);
    f->v2_paths = members(paths);
    paths = json_object();
    add_paths(paths, true, &t);
    f->v3_paths = members(paths);
    json_t *d2 = json_object();
    json_object_set_new_nocheck(d2, def, crd_definition(crd, ver, all, true));
    json_object_set_new_nocheck(d2, list, crd_list_definition(crd, version, def, all));
    f->v2_defs = members(d2);
    json_t *d3 = crd_definition(crd, ver, all, false),
           *l3 = crd_list_definition(crd, version, def, all);
    json_t *schemas = json_object();
    json_object_set_new_nocheck(schemas, def, publish(d3, true));
    json_object_set_new_nocheck(schemas, list, publish(l3, true));
    f->v3_schemas = members(schemas);
    json_decref(d3);
    json_decref(l3);
    free(rg);
    free(def);
    free(list);
}

static void frag_dispose(crd_frag *f)
{
    for (size_t i = 0; i < f->n; i++) {
        free(f->v[i].group);
        free(f->v[i].version);
        free(f->v[i].v2_paths);
        free(f->v[i].v2_defs);
        free(f->v[i].v3_paths);
        free(f->v[i].v3_schemas);
    }
    free(f->v);
    free(f->key);
}

static void crd_fragment(crd_frag *f, const kapi_obj *o, const json_t *all)
{
    json_t *crd = kapi_api__parse_stored(o);
    const json_t *versions = kapi_json_path(crd, "spec.versions");
    f->key = kapi_xstrndup(o->key, o->key_len);
    f->rev = o->rev;
    f->v = kapi_xcalloc(json_array_size(versions) + 1, sizeof(*f->v));
    f->n = 0;
    if (kapi_crd_condition(crd, "Established"))
        for (size_t i = 0; i < json_array_size(versions); i++) {
            const json_t *ver = json_array_get(versions, i);
            if (json_is_true(json_object_get(ver, "served")) && kapi_json_path_str(ver, "name"))
                version_fragment(&f->v[f->n++], crd, ver, all);
        }
    json_decref(crd);
}

static void docs_free(gv_doc *docs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(docs[i].path);
        free(docs[i].group);
        free(docs[i].version);
    }
    free(docs);
}

/* Releases what the CRDs added (mu held or the openapi being freed). */
static void crd_parts_free(kapi_openapi *o)
{
    for (size_t i = 0; i < o->nfrags; i++)
        frag_dispose(&o->frags[i]);
    o->nfrags = 0;
    blob_unref(o->v2_pb);
    blob_unref(o->crd_index);
    o->v2_pb = o->crd_index = NULL;
    docs_free(o->crd_docs, o->ncrd_docs);
    o->crd_docs = NULL;
    o->ncrd_docs = 0;
}

/* Appends ",<m>" (or "<m>" first) unless m is empty. */
static void put_member(kapi_buf *b, bool *first, const char *m)
{
    if (!*m)
        return;
    if (!*first)
        kapi_buf_putc(b, ',');
    kapi_buf_puts(b, m);
    *first = false;
}

/* Appends one part of every version fragment (the member string at offset part of a
 * version_frag), only those of group/version when group is set. */
static void put_parts(kapi_buf *b, bool *first, const kapi_openapi *o, size_t part,
                      const char *group, const char *version)
{
    for (size_t i = 0; i < o->nfrags; i++)
        for (size_t j = 0; j < o->frags[i].n; j++) {
            const version_frag *f = &o->frags[i].v[j];
            if (!group || (strcmp(f->group, group) == 0 && strcmp(f->version, version) == 0))
                put_member(b, first, *(char *const *)((const char *)f + part));
        }
}

/* An encoded built-in object ("{...}") with the fragments' part appended to its members. */
static void put_merged(kapi_buf *b, const kapi_openapi *o, const char *obj, size_t part)
{
    size_t len = strlen(obj);
    bool first = len <= 2;
    kapi_buf_put(b, obj, len - 1);
    put_parts(b, &first, o, part, NULL, NULL);
    kapi_buf_putc(b, '}');
}

/* A document's start: {"<version key>":"<version>","info":{...} */
static void put_head(kapi_buf *b, const char *key, const char *version)
{
    kapi_buf_printf(b, "{\"%s\":\"%s\",\"info\":", key, version);
    json_t *inf = info();
    kapi_json_encode(b, inf);
    json_decref(inf);
}

/* The OpenAPI 3 document of group/version, spliced from the fragments serving it and the
 * built-in schemas they refer to (mu held). */
static blob *crd_gv_splice(const kapi_openapi *o, const char *group, const char *version)
{
    kapi_buf b;
    bool first = true;
    kapi_buf_init(&b);
    put_head(&b, "openapi", "3.0.0");
    kapi_buf_puts(&b, ",\"paths\":{");
    put_parts(&b, &first, o, offsetof(version_frag, v3_paths), group, version);
    kapi_buf_puts(&b, "},\"components\":{\"schemas\":{");
    first = true;
    put_member(&b, &first, o->crd_closure);
    put_parts(&b, &first, o, offsetof(version_frag, v3_schemas), group, version);
    kapi_buf_puts(&b, "}}}");
    blob *out = blob_new(b.ptr, b.len);
    kapi_buf_dispose(&b);
    return out;
}

/* Names the document of group/version and takes its hash. */
static void crd_gv_doc(kapi_openapi *o, gv_doc *d, const char *group, const char *version)
{
    blob *b = crd_gv_splice(o, group, version);
    d->path = kapi_xprintf("apis/%s/%s", group, version);
    d->group = kapi_xstrdup(group);
    d->version = kapi_xstrdup(version);
    hash_hex(b->bytes, b->len, d->hash);
    blob_unref(b);
}

/* Whether path ("apis/<g>/<v>") is among the n dirty ones. */
static bool is_dirty(char *const *dirty, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(dirty[i], path) == 0)
            return true;
    return false;
}

/* /openapi/v2, spliced from the encoded built-in paths and definitions and the CRDs'
 * fragments (mu held). Made for each request rather than kept: it is a few hundred KB
 * more than the pieces it is made of. */
static blob *v2_splice(const kapi_openapi *o)
{
    kapi_buf b;
    kapi_buf_init(&b);
    put_head(&b, "swagger", "2.0");
    kapi_buf_puts(&b, ",\"paths\":");
    put_merged(&b, o, o->v2_paths, offsetof(version_frag, v2_paths));
    kapi_buf_puts(&b, ",\"definitions\":");
    put_merged(&b, o, o->v2_defs, offsetof(version_frag, v2_defs));
    kapi_buf_putc(&b, '}');
    blob *out = blob_new(b.ptr, b.len);
    kapi_buf_dispose(&b);
    return out;
}

/* Makes the documents again from the fragments (mu held): a group-version's OpenAPI 3
 * document is taken from old unless a CRD serving it changed (dirty). */
static void crd_assemble(kapi_openapi *o, gv_doc *old, size_t nold, char *const *dirty,
                         size_t ndirty)
{
    size_t nv = 0;
    for (size_t i = 0; i < o->nfrags; i++)
        nv += o->frags[i].n;
    if (!nv)
        return;
    o->crd_docs = kapi_xcalloc(nv, sizeof(*o->crd_docs));
    json_t *index = json_loadb(o->index, o->index_len, 0, NULL);
    json_t *ipaths = json_object_get(index, "paths");
    for (size_t i = 0; i < o->nfrags; i++)
        for (size_t j = 0; j < o->frags[i].n; j++) {
            const version_frag *f = &o->frags[i].v[j];
            char *path = kapi_xprintf("apis/%s/%s", f->group, f->version);
            bool done = json_object_get(ipaths, path) != NULL;
            free(path);
            if (done)
                continue;
            gv_doc *d = &o->crd_docs[o->ncrd_docs++];
            char *want = kapi_xprintf("apis/%s/%s", f->group, f->version);
            gv_doc *reuse = NULL;
            for (size_t k = 0; k < nold && !reuse && !is_dirty(dirty, ndirty, want); k++)
                if (old[k].path && strcmp(old[k].path, want) == 0)
                    reuse = &old[k];
            free(want);
            if (reuse) {
                *d = *reuse;
                memset(reuse, 0, sizeof(*reuse));
            } else {
                crd_gv_doc(o, d, f->group, f->version);
            }
            json_object_set_new_nocheck(ipaths, d->path,
                                        json_pack("{s:s+++}", "serverRelativeURL", "/openapi/v3/",
                                                  d->path, "?hash=", d->hash));
        }
    size_t len;
    char *bytes = encode_doc(index, &len);
    o->crd_index = blob_new(bytes, len);
    free(bytes);
}

/* Adds the group-versions f serves to the dirty ones. */
static void mark_dirty(char ***dirty, size_t *n, const crd_frag *f)
{
    for (size_t i = 0; i < f->n; i++) {
        char *path = kapi_xprintf("apis/%s/%s", f->v[i].group, f->v[i].version);
        if (is_dirty(*dirty, *n, path)) {
            free(path);
            continue;
        }
        *dirty = kapi_xrealloc(*dirty, (*n + 1) * sizeof(**dirty));
        (*dirty)[(*n)++] = path;
    }
}

/* A 64-bit FNV-1a of the bytes, folded into h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ULL;
    return h;
}

/* Brings the CRDs' part up to date with the stored CRDs. */
static void crd_refresh(kapi_openapi *o, kapi_req *r)
{
    kapi_store_list_result l;
    kapi_store_list_opts q = {
        .prefix = kapi_type_key(&r->arena, kapi_registry_crds(o->reg), KAPI_STR(""), KAPI_STR(""))};
    if (kapi_store_list(r->api->store, &q, &l) != KAPI_STORE_OK)
        return;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < l.n; i++) {
        h = fnv(h, l.items[i]->key, l.items[i]->key_len + 1);
        h = fnv(h, &l.items[i]->rev, sizeof(l.items[i]->rev));
    }
    pthread_mutex_lock(&o->mu);
    if (o->built && h == o->fingerprint) {
        pthread_mutex_unlock(&o->mu);
        kapi_store_list_dispose(&l);
        return;
    }
    const json_t *all = kapi_schema_set_definitions(kapi_registry_schemas(o->reg));
    crd_frag *frags = kapi_xcalloc(l.n + 1, sizeof(*frags));
    char **dirty = NULL;
    size_t ndirty = 0;
    for (size_t i = 0; i < l.n; i++) {
        const kapi_obj *it = l.items[i];
        crd_frag *kept = NULL;
        for (size_t j = 0; j < o->nfrags && !kept; j++)
            if (o->frags[j].key && o->frags[j].rev == it->rev &&
                strlen(o->frags[j].key) == it->key_len &&
                memcmp(o->frags[j].key, it->key, it->key_len) == 0)
                kept = &o->frags[j];
        if (kept) {
            frags[i] = *kept;
            memset(kept, 0, sizeof(*kept));
        } else {
            crd_fragment(&frags[i], it, all);
            mark_dirty(&dirty, &ndirty, &frags[i]);
        }
    }
    for (size_t j = 0; j < o->nfrags; j++) /* changed or gone */
        mark_dirty(&dirty, &ndirty, &o->frags[j]);
    gv_doc *old = o->crd_docs;
    size_t nold = o->ncrd_docs;
    o->crd_docs = NULL;
    o->ncrd_docs = 0;
    crd_parts_free(o);
    free(o->frags);
    o->frags = frags;
    o->nfrags = l.n;
    crd_assemble(o, old, nold, dirty, ndirty);
    docs_free(old, nold);
    for (size_t i = 0; i < ndirty; i++)
        free(dirty[i]);
    free(dirty);
    o->fingerprint = h;
    o->built = true;
    pthread_mutex_unlock(&o->mu);
    kapi_store_list_dispose(&l);
}

/* Makes the built-in documents (under mu). */
static void build(kapi_openapi *o)
{
    const kapi_registry *reg = o->reg;
    json_t *paths = json_object(), *defs = definitions(reg, NULL, NULL, false);
    json_t *index = json_object();
    o->docs = kapi_xcalloc(kapi_registry_count(reg) + 1, sizeof(*o->docs));
    for (size_t i = 0; i < kapi_registry_count(reg); i++) {
        const kapi_type *t = kapi_registry_at(reg, i);
        add_paths(paths, false, t);
        bool seen = false;
        for (size_t j = 0; j < i; j++) {
            const kapi_type *u = kapi_registry_at(reg, j);
            seen = seen || (strcmp(u->group, t->group) == 0 && strcmp(u->version, t->version) == 0);
        }
        if (seen)
            continue;
        doc *d = &o->docs[o->ndocs++];
        build_v3_doc(d, reg, t->group, t->version);
        json_object_set_new_nocheck(
            index, d->path,
            json_pack("{s:s+++}", "serverRelativeURL", "/openapi/v3/", d->path, "?hash=", d->hash));
    }
    kapi_buf enc;
    kapi_buf_init(&enc);
    kapi_json_encode(&enc, paths);
    o->v2_paths = kapi_buf_detach(&enc, NULL);
    kapi_buf_init(&enc);
    kapi_json_encode(&enc, defs);
    o->v2_defs = kapi_buf_detach(&enc, NULL);
    const json_t *all = kapi_schema_set_definitions(kapi_registry_schemas(reg));
    json_t *closure = json_object();
    static const char *const crd_refs[] = {"io.k8s.api.autoscaling.v1.Scale", META "ObjectMeta",
                                           META "ListMeta"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(common_defs); i++)
        add_closure(closure, all, common_defs[i], true);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(crd_refs); i++)
        add_closure(closure, all, crd_refs[i], true);
    o->crd_closure = members(closure);
    json_decref(paths);
    json_decref(defs);
    o->index = encode_doc(json_pack("{s:o}", "paths", index), &o->index_len);
}

/* The built-in documents, made once by whichever request comes first. */
static void ensure_built(kapi_openapi *o)
{
    if (atomic_load_explicit(&o->ready, memory_order_acquire))
        return;
    pthread_mutex_lock(&o->mu);
    if (!atomic_load_explicit(&o->ready, memory_order_relaxed)) {
        build(o);
        atomic_store_explicit(&o->ready, true, memory_order_release);
    }
    pthread_mutex_unlock(&o->mu);
}

kapi_openapi *kapi_api__openapi_new(const kapi_registry *reg)
{
    kapi_openapi *o = kapi_xcalloc(1, sizeof(*o));
    o->reg = reg;
    atomic_init(&o->ready, false);
    pthread_mutex_init(&o->mu, NULL);
    return o;
}

void kapi_api__openapi_free(kapi_openapi *o)
{
    if (!o)
        return;
    crd_parts_free(o);
    free(o->frags);
    free(o->v2_paths);
    free(o->v2_defs);
    free(o->crd_closure);
    pthread_mutex_destroy(&o->mu);
    for (size_t i = 0; i < o->ndocs; i++) {
        free(o->docs[i].path);
        free(o->docs[i].bytes);
    }
    free(o->docs);
    free(o->index);
    free(o);
}

static void respond_static(kapi_req *r, const char *type, const char *p, size_t n)
{
    kapi_http_chunk c = {p, n, NULL, NULL};
    kapi_api__send(r, 200, type, &c, 1);
}

/* Sends b (a reference taken): the answer holds it until it is written. */
static void respond_blob(kapi_req *r, const char *type, blob *b)
{
    kapi_http_chunk c = {b->bytes, b->len, blob_unref, b};
    kapi_api__send(r, 200, type, &c, 1);
}

/* client-go asks for the protobuf form of /openapi/v2 by this media type (either
 * spelling), possibly among others. */
static bool wants_v2_protobuf(kapi_req *r)
{
    const char *accept = kapi_http_header_get(r->http, "accept");
    return accept &&
           (strstr(accept, "application/com.github.proto-openapi.spec.v2@v1.0+protobuf") ||
            strstr(accept, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"));
}

/* /openapi/v2 in protobuf (mu held), made on first demand and kept until the CRDs change. */
static blob *v2_pb(kapi_openapi *o)
{
    if (!o->v2_pb) {
        blob *doc2 = v2_splice(o);
        json_t *v2 = json_loadb(doc2->bytes, doc2->len, 0, NULL);
        blob_unref(doc2);
        size_t len = 0;
        char *pb = v2 ? kapi_api__openapi_v2_proto(v2, &len) : NULL;
        json_decref(v2);
        o->v2_pb = blob_new(pb ? pb : "", len);
        free(pb);
    }
    return blob_ref(o->v2_pb);
}

void kapi_api__serve_openapi(kapi_req *r)
{
    kapi_openapi *o = r->api->openapi;
    if (strcmp(r->http->method, "GET") != 0 && strcmp(r->http->method, "HEAD") != 0) {
        kapi_api__respond_error(r, kapi_api__err_method_not_allowed());
        return;
    }
    ensure_built(o);
    crd_refresh(o, r);
    blob *b = NULL;
    const char *type = "application/json";
    pthread_mutex_lock(&o->mu);
    if (strcmp(r->path, "/openapi/v2") == 0) {
        /* Not the media type asked for: its '@' is no token character, so Go's
         * mime.ParseMediaType (client-go) refuses it; kube-apiserver 1.26 lets Go sniff
         * the bytes, which names them application/octet-stream. */
        bool pb = wants_v2_protobuf(r);
        if (pb)
            type = "application/octet-stream";
        b = pb ? v2_pb(o) : v2_splice(o);
        pthread_mutex_unlock(&o->mu);
        respond_blob(r, type, b);
        return;
    }
    if (strcmp(r->path, "/openapi/v3") == 0 || strcmp(r->path, "/openapi/v3/") == 0) {
        b = blob_ref(o->crd_index);
        pthread_mutex_unlock(&o->mu);
        if (b)
            respond_blob(r, type, b);
        else
            respond_static(r, type, o->index, o->index_len);
        return;
    }
    if (strncmp(r->path, "/openapi/v3/", 12) == 0)
        for (size_t i = 0; i < o->ncrd_docs && !b; i++)
            if (strcmp(r->path + 12, o->crd_docs[i].path) == 0)
                b = crd_gv_splice(o, o->crd_docs[i].group, o->crd_docs[i].version);
    pthread_mutex_unlock(&o->mu);
    if (b) {
        respond_blob(r, type, b);
        return;
    }
    if (strncmp(r->path, "/openapi/v3/", 12) == 0) {
        for (size_t i = 0; i < o->ndocs; i++)
            if (strcmp(r->path + 12, o->docs[i].path) == 0) {
                respond_static(r, type, o->docs[i].bytes, o->docs[i].len);
                return;
            }
    }
    kapi_api__respond_not_found_page(r);
}
