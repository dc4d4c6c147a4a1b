/*
 * api/openapi: /openapi/v2 (one Swagger 2.0 document) and /openapi/v3 (an index and one
 * OpenAPI 3.0 document per group-version), generated from the registry. The documents
 * are built once, when the kapi_api is made; built-in types do not change while kapi runs.
 *
 * The definitions are the type model's own (src/schema/defs), published without kapi's
 * private facts; a group-version document carries the ones its types reach.
 *
 * Each operation carries x-kubernetes-action and x-kubernetes-group-version-kind and
 * lists its query parameters: kubectl reads the PATCH operation's fieldValidation
 * parameter to decide that the server validates fields itself.
 */
#include <openssl/evp.h>
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

struct kapi_openapi {
    char *v2, *v2_pb;
    size_t v2_len, v2_pb_len;
    char *index;
    size_t index_len;
    doc *docs;
    size_t ndocs;
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
        if (kapi_verbs_has(sub->verbs, "get"))
            json_object_set_new_nocheck(sp, "get",
                                        operation(v3, t, "get", "Read an object.", NULL, def, 200));
        if (kapi_verbs_has(sub->verbs, "update"))
            json_object_set_new_nocheck(
                sp, "put", operation(v3, t, "put", "Replace a subresource.", def, def, 200));
        if (kapi_verbs_has(sub->verbs, "patch"))
            json_object_set_new_nocheck(
                sp, "patch", operation(v3, t, "patch", "Patch a subresource.", NULL, def, 200));
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

kapi_openapi *kapi_api__openapi_new(const kapi_registry *reg)
{
    kapi_openapi *o = kapi_xcalloc(1, sizeof(*o));
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
    json_t *v2 = json_pack("{s:s,s:o,s:o,s:o}", "swagger", "2.0", "info", info(), "paths", paths,
                           "definitions", defs);
    o->v2_pb = kapi_api__openapi_v2_proto(v2, &o->v2_pb_len);
    o->v2 = encode_doc(v2, &o->v2_len);
    o->index = encode_doc(json_pack("{s:o}", "paths", index), &o->index_len);
    return o;
}

void kapi_api__openapi_free(kapi_openapi *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->ndocs; i++) {
        free(o->docs[i].path);
        free(o->docs[i].bytes);
    }
    free(o->docs);
    free(o->v2);
    free(o->v2_pb);
    free(o->index);
    free(o);
}

static void respond_static(kapi_req *r, const char *type, const char *p, size_t n)
{
    const kapi_http_header h[] = {{"Content-Type", type}};
    kapi_http_chunk c = {p, n, NULL, NULL};
    kapi_http_respond(r->http, 200, h, 1, &c, 1);
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

void kapi_api__serve_openapi(kapi_req *r)
{
    const kapi_openapi *o = r->api->openapi;
    if (strcmp(r->http->method, "GET") != 0 && strcmp(r->http->method, "HEAD") != 0) {
        kapi_api__respond_error(r, kapi_api__err_method_not_allowed());
        return;
    }
    if (strcmp(r->path, "/openapi/v2") == 0) {
        /* Not the media type asked for: its '@' is no token character, so Go's
         * mime.ParseMediaType (client-go) refuses it; kube-apiserver 1.26 lets Go sniff
         * the bytes, which names them application/octet-stream. */
        if (wants_v2_protobuf(r))
            respond_static(r, "application/octet-stream", o->v2_pb, o->v2_pb_len);
        else
            respond_static(r, "application/json", o->v2, o->v2_len);
        return;
    }
    if (strcmp(r->path, "/openapi/v3") == 0 || strcmp(r->path, "/openapi/v3/") == 0) {
        respond_static(r, "application/json", o->index, o->index_len);
        return;
    }
    if (strncmp(r->path, "/openapi/v3/", 12) == 0) {
        for (size_t i = 0; i < o->ndocs; i++)
            if (strcmp(r->path + 12, o->docs[i].path) == 0) {
                respond_static(r, "application/json", o->docs[i].bytes, o->docs[i].len);
                return;
            }
    }
    kapi_api__respond_not_found_page(r);
}
