/*
 * api/discovery: /version, /api, /apis, the group documents and the APIResourceLists.
 * The registry says what is served: the built-in types (kapi_registry_at), and, from the
 * CRDs in the store, which this file lists and hands over, the named groups with their
 * versions in preference order (kapi_registry_served) and the resources of one group
 * version (kapi_registry_crd_resources). A CRD's group and versions are discoverable as
 * soon as it is stored. This file reads no CRD field: it formats the registry's answers.
 *
 * /api and /apis also answer in the aggregated form (apidiscovery.k8s.io v2 and v2beta1,
 * as=APIGroupDiscoveryList) when the Accept header asks for it first, as kubectl 1.32
 * does: every group version with its resources in one document, so that a client needs
 * one round trip where the old documents need one per group version.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "base/version.h"

/* kube's version.Info; the build fields are this binary's (base/version.h), the
 * compiler and platform those it was built with and for. */
void kapi_api__serve_version(kapi_req *r)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_printf(&b,
                    "{\n  \"major\": \"" KAPI_KUBE_MAJOR "\",\n  \"minor\": \"" KAPI_KUBE_MINOR
                    "\",\n  \"gitVersion\": \"" KAPI_KUBE_VERSION "+kapi\",\n"
                    "  \"gitCommit\": \"%s\",\n  \"gitTreeState\": \"%s\",\n"
                    "  \"buildDate\": \"%s\",\n  \"goVersion\": \"none\",\n"
                    "  \"compiler\": \"%s\",\n  \"platform\": \"%s\"\n}",
                    kapi_git_commit, kapi_git_tree_state, kapi_build_date, KAPI_COMPILER,
                    KAPI_PLATFORM);
    kapi_api__respond_json(r, 200, &b);
}

void kapi_api__serve_api_versions(kapi_req *r)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],"
                      "\"serverAddressByClientCIDRs\":[{\"clientCIDR\":\"0.0.0.0/0\","
                      "\"serverAddress\":");
    kapi_json_put_string(&b, r->api->server_address, strlen(r->api->server_address));
    kapi_buf_puts(&b, "}]}\n");
    kapi_api__respond_json(r, 200, &b);
}

/* The CRDs in the store, parsed, in the store's order; the caller decrefs. */
static json_t *stored_crds(kapi_req *r)
{
    kapi_store_list_result l;
    json_t *crds = json_array();
    kapi_store_list_opts opts = {.prefix =
                                     kapi_type_key(&r->arena, kapi_registry_crds(r->api->registry),
                                                   KAPI_STR(""), KAPI_STR(""))};
    if (kapi_store_list(r->api->store, &opts, &l) != KAPI_STORE_OK)
        return crds;
    for (size_t i = 0; i < l.n; i++)
        json_array_append_new(crds, kapi_api__parse_stored(l.items[i]));
    kapi_store_list_dispose(&l);
    return crds;
}

/* What is served: the registry's answer for the CRDs in the store. Dispose with
 * kapi_served_dispose. */
static void served(kapi_req *r, kapi_served *out)
{
    json_t *crds = stored_crds(r);
    kapi_registry_served(r->api->registry, crds, out);
    json_decref(crds);
}

bool kapi_api__group_served(kapi_req *r, const char *group)
{
    kapi_served s;
    if (kapi_registry_has_group(r->api->registry, kapi_str_c(group)))
        return true;
    served(r, &s);
    bool found = kapi_served_find(&s, group) != NULL;
    kapi_served_dispose(&s);
    return found;
}

bool kapi_api__group_version_served(kapi_req *r, const char *group, const char *version)
{
    kapi_served s;
    if (kapi_registry_has_group_version(r->api->registry, kapi_str_c(group), kapi_str_c(version)))
        return true;
    served(r, &s);
    const kapi_served_group *g = kapi_served_find(&s, group);
    bool found = false;
    for (size_t i = 0; g && i < g->nversions; i++)
        found = found || strcmp(g->versions[i], version) == 0;
    kapi_served_dispose(&s);
    return found;
}

/* The members of an APIGroup: name, versions, preferredVersion. */
static void put_group_members(kapi_buf *b, const kapi_served_group *g)
{
    kapi_buf_puts(b, "\"name\":");
    kapi_json_put_string(b, g->name, strlen(g->name));
    kapi_buf_puts(b, ",\"versions\":[");
    for (size_t i = 0; i < g->nversions; i++)
        kapi_buf_printf(b, "%s{\"groupVersion\":\"%s/%s\",\"version\":\"%s\"}", i ? "," : "",
                        g->name, g->versions[i], g->versions[i]);
    kapi_buf_printf(b, "],\"preferredVersion\":{\"groupVersion\":\"%s/%s\",\"version\":\"%s\"}",
                    g->name, g->versions[0], g->versions[0]);
}

void kapi_api__serve_group_list(kapi_req *r)
{
    kapi_served s;
    kapi_buf b;
    served(r, &s);
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[");
    for (size_t i = 0; i < s.ngroups; i++) {
        kapi_buf_puts(&b, i ? ",{" : "{");
        put_group_members(&b, &s.groups[i]);
        kapi_buf_putc(&b, '}');
    }
    kapi_buf_puts(&b, "]}\n");
    kapi_served_dispose(&s);
    kapi_api__respond_json(r, 200, &b);
}

/* The group's document; a group no longer served (its last CRD deleted since the request
 * was routed) is the mux's 404, as it would have been a moment earlier. */
void kapi_api__serve_group(kapi_req *r, const char *group)
{
    kapi_served s;
    kapi_buf b;
    served(r, &s);
    const kapi_served_group *g = kapi_served_find(&s, group);
    if (!g) {
        kapi_served_dispose(&s);
        kapi_api__respond_not_found_page(r);
        return;
    }
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",");
    put_group_members(&b, g);
    kapi_buf_puts(&b, "}\n");
    kapi_served_dispose(&s);
    kapi_api__respond_json(r, 200, &b);
}

static void put_strings(kapi_buf *b, const char *key, const char *const *v)
{
    if (!v || !*v)
        return;
    kapi_buf_printf(b, ",\"%s\":[", key);
    for (size_t i = 0; v[i]; i++) {
        if (i)
            kapi_buf_putc(b, ',');
        kapi_json_put_string(b, v[i], strlen(v[i]));
    }
    kapi_buf_putc(b, ']');
}

/* One APIResource entry. group and version are NULL unless the entry's kind is another
 * group's (a scale subresource's Scale); hash is NULL for subresources. */
static void put_resource(kapi_buf *b, bool *first, const char *name, const char *singular,
                         bool namespaced, const char *group, const char *version, const char *kind,
                         const char *const *verbs, const char *const *short_names,
                         const char *const *categories, const char *hash)
{
    kapi_buf_puts(b, *first ? "{\"name\":" : ",{\"name\":");
    *first = false;
    kapi_json_put_string(b, name, strlen(name));
    kapi_buf_puts(b, ",\"singularName\":");
    kapi_json_put_string(b, singular, strlen(singular));
    kapi_buf_printf(b, ",\"namespaced\":%s", namespaced ? "true" : "false");
    if (group)
        kapi_buf_printf(b, ",\"group\":\"%s\",\"version\":\"%s\"", group, version);
    kapi_buf_puts(b, ",\"kind\":");
    kapi_json_put_string(b, kind, strlen(kind));
    put_strings(b, "verbs", verbs);
    put_strings(b, "shortNames", short_names);
    put_strings(b, "categories", categories);
    if (hash)
        kapi_buf_printf(b, ",\"storageVersionHash\":\"%s\"", hash);
    kapi_buf_putc(b, '}');
}

static void put_builtin_resources(kapi_req *r, kapi_buf *b, bool *first, const char *group,
                                  const char *version)
{
    const kapi_registry *reg = r->api->registry;
    for (size_t i = 0; i < kapi_registry_count(reg); i++) {
        const kapi_type *t = kapi_registry_at(reg, i);
        if (strcmp(t->group, group) != 0 || strcmp(t->version, version) != 0)
            continue;
        put_resource(b, first, t->plural, "", t->namespaced, NULL, NULL, t->kind, t->verbs,
                     t->short_names, t->categories, t->storage_version_hash);
        for (size_t s = 0; s < t->nsubresources; s++) {
            const kapi_subresource *sub = &t->subresources[s];
            const kapi_type *k = sub->kind;
            char *name = kapi_xprintf("%s/%s", t->plural, sub->name);
            put_resource(b, first, name, "", t->namespaced, k ? k->group : NULL,
                         k ? k->version : NULL, k ? k->kind : t->kind, sub->verbs, NULL, NULL,
                         NULL);
            free(name);
        }
    }
}

static void put_crd_resource(kapi_buf *b, bool *first, const kapi_crd_resource *res)
{
    put_resource(b, first, res->plural, res->singular, res->namespaced, NULL, NULL, res->kind,
                 res->verbs, res->short_names, res->categories, res->storage_version_hash);
    for (size_t i = 0; i < res->nsubresources; i++) {
        const kapi_discovery_sub *sub = &res->subresources[i];
        char *name = kapi_xprintf("%s/%s", res->plural, sub->name);
        put_resource(b, first, name, "", res->namespaced, sub->group, sub->version,
                     sub->kind ?: res->kind, sub->verbs, NULL, NULL, NULL);
        free(name);
    }
}

void kapi_api__serve_resource_list(kapi_req *r, const char *group, const char *version)
{
    kapi_buf b;
    bool first = true;
    kapi_buf_init(&b);
    if (*group)
        kapi_buf_printf(&b,
                        "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\","
                        "\"groupVersion\":\"%s/%s\",\"resources\":[",
                        group, version);
    else
        kapi_buf_printf(&b,
                        "{\"kind\":\"APIResourceList\",\"groupVersion\":\"%s\","
                        "\"resources\":[",
                        version);
    put_builtin_resources(r, &b, &first, group, version);
    kapi_crd_resources l;
    json_t *crds = stored_crds(r);
    kapi_registry_crd_resources(crds, group, version, &l);
    json_decref(crds);
    for (size_t i = 0; i < l.n; i++)
        put_crd_resource(&b, &first, &l.items[i]);
    kapi_crd_resources_dispose(&l);
    kapi_buf_puts(&b, "]}\n");
    kapi_api__respond_json(r, 200, &b);
}

/* ---- aggregated discovery ---- */

/* A GroupVersionKind, every member written. */
static void put_gvk(kapi_buf *b, const char *group, const char *version, const char *kind)
{
    kapi_buf_puts(b, "{\"group\":");
    kapi_json_put_string(b, group, strlen(group));
    kapi_buf_puts(b, ",\"version\":");
    kapi_json_put_string(b, version, strlen(version));
    kapi_buf_puts(b, ",\"kind\":");
    kapi_json_put_string(b, kind, strlen(kind));
    kapi_buf_putc(b, '}');
}

/* The head of an APIResourceDiscovery, up to its verbs, shortNames and categories. */
static void put_agg_head(kapi_buf *b, bool *first, const char *plural, const char *group,
                         const char *version, const char *kind, bool namespaced,
                         const char *singular)
{
    kapi_buf_puts(b, *first ? "{\"resource\":" : ",{\"resource\":");
    *first = false;
    kapi_json_put_string(b, plural, strlen(plural));
    kapi_buf_puts(b, ",\"responseKind\":");
    put_gvk(b, group, version, kind);
    kapi_buf_printf(
        b, ",\"scope\":\"%s\",\"singularResource\":", namespaced ? "Namespaced" : "Cluster");
    kapi_json_put_string(b, singular, strlen(singular));
}

/* An APISubresourceDiscovery. */
static void put_agg_sub(kapi_buf *b, bool first, const char *name, const char *group,
                        const char *version, const char *kind, const char *const *verbs)
{
    kapi_buf_puts(b, first ? "{\"subresource\":" : ",{\"subresource\":");
    kapi_json_put_string(b, name, strlen(name));
    kapi_buf_puts(b, ",\"responseKind\":");
    put_gvk(b, group, version, kind);
    put_strings(b, "verbs", verbs);
    kapi_buf_putc(b, '}');
}

/* The resources of one group version: the built-in types', then the CRDs'. */
static void put_agg_resources(kapi_buf *b, const kapi_registry *reg, const json_t *crds,
                              const char *group, const char *version)
{
    bool first = true;
    for (size_t i = 0; i < kapi_registry_count(reg); i++) {
        const kapi_type *t = kapi_registry_at(reg, i);
        if (strcmp(t->group, group) != 0 || strcmp(t->version, version) != 0)
            continue;
        char *singular = kapi_xstrdup(t->kind);
        for (char *c = singular; *c; c++)
            *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
        put_agg_head(b, &first, t->plural, group, version, t->kind, t->namespaced, singular);
        free(singular);
        put_strings(b, "verbs", t->verbs);
        put_strings(b, "shortNames", t->short_names);
        put_strings(b, "categories", t->categories);
        if (t->nsubresources)
            kapi_buf_puts(b, ",\"subresources\":[");
        for (size_t s = 0; s < t->nsubresources; s++) {
            const kapi_subresource *sub = &t->subresources[s];
            const kapi_type *k = sub->kind ? sub->kind : t;
            put_agg_sub(b, s == 0, sub->name, k->group, k->version, k->kind, sub->verbs);
        }
        kapi_buf_puts(b, t->nsubresources ? "]}" : "}");
    }
    kapi_crd_resources l;
    kapi_registry_crd_resources(crds, group, version, &l);
    for (size_t i = 0; i < l.n; i++) {
        const kapi_crd_resource *res = &l.items[i];
        put_agg_head(b, &first, res->plural, group, version, res->kind, res->namespaced,
                     res->singular);
        put_strings(b, "verbs", res->verbs);
        put_strings(b, "shortNames", res->short_names);
        put_strings(b, "categories", res->categories);
        if (res->nsubresources)
            kapi_buf_puts(b, ",\"subresources\":[");
        for (size_t s = 0; s < res->nsubresources; s++) {
            const kapi_discovery_sub *sub = &res->subresources[s];
            put_agg_sub(b, s == 0, sub->name, sub->group ? sub->group : group,
                        sub->version ? sub->version : version, sub->kind ? sub->kind : res->kind,
                        sub->verbs);
        }
        kapi_buf_puts(b, res->nsubresources ? "]}" : "}");
    }
    kapi_crd_resources_dispose(&l);
}

/* An APIGroupDiscovery: the group's name (none for the core group) and its versions in
 * preference order, each with its resources. */
static void put_agg_group(kapi_buf *b, bool first, const kapi_registry *reg, const json_t *crds,
                          const char *group, const char *const *versions, size_t nversions)
{
    kapi_buf_puts(b, first ? "{\"metadata\":{" : ",{\"metadata\":{");
    if (*group) {
        kapi_buf_puts(b, "\"name\":");
        kapi_json_put_string(b, group, strlen(group));
        kapi_buf_putc(b, ',');
    }
    kapi_buf_puts(b, "\"creationTimestamp\":null},\"versions\":[");
    for (size_t i = 0; i < nversions; i++) {
        kapi_buf_printf(b, "%s{\"version\":", i ? "," : "");
        kapi_json_put_string(b, versions[i], strlen(versions[i]));
        kapi_buf_puts(b, ",\"resources\":[");
        put_agg_resources(b, reg, crds, group, versions[i]);
        kapi_buf_puts(b, "],\"freshness\":\"Current\"}");
    }
    kapi_buf_puts(b, "]}");
}

void kapi_api__serve_aggregated(kapi_req *r, bool core, int form)
{
    static const char *const core_versions[] = {"v1"};
    const char *av = form == 2 ? "v2" : "v2beta1";
    const kapi_registry *reg = r->api->registry;
    json_t *crds = stored_crds(r);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_printf(&b,
                    "{\"kind\":\"APIGroupDiscoveryList\",\"apiVersion\":\"apidiscovery.k8s.io/%s\","
                    "\"metadata\":{},\"items\":[",
                    av);
    if (core) {
        put_agg_group(&b, true, reg, crds, "", core_versions, 1);
    } else {
        kapi_served s;
        kapi_registry_served(reg, crds, &s);
        for (size_t i = 0; i < s.ngroups; i++)
            put_agg_group(&b, i == 0, reg, crds, s.groups[i].name, s.groups[i].versions,
                          s.groups[i].nversions);
        kapi_served_dispose(&s);
    }
    kapi_buf_puts(&b, "]}\n");
    json_decref(crds);
    size_t len;
    char *p = kapi_buf_detach(&b, &len);
    kapi_http_chunk c = kapi_http_chunk_take(p, len);
    char *type =
        kapi_xprintf("application/json;g=apidiscovery.k8s.io;v=%s;as=APIGroupDiscoveryList", av);
    kapi_api__send(r, 200, kapi_arena_strdup(&r->arena, type), &c, 1);
    free(type);
}
