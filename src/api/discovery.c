/*
 * api/discovery: /version, /api, /apis, the group documents and the APIResourceLists,
 * from the registry's built-in types and from the CustomResourceDefinitions in the store
 * (a CRD's group and versions are discoverable as soon as it is stored).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"

#ifndef KAPI_GIT_COMMIT
#define KAPI_GIT_COMMIT "unknown"
#endif

void kapi_api__serve_version(kapi_req *r)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "{\n  \"major\": \"1\",\n  \"minor\": \"26\",\n"
                      "  \"gitVersion\": \"v1.26.0+kapi\",\n"
                      "  \"gitCommit\": \"" KAPI_GIT_COMMIT "\",\n"
                      "  \"gitTreeState\": \"clean\",\n"
                      "  \"buildDate\": \"" __DATE__ " " __TIME__ "\",\n"
                      "  \"goVersion\": \"none\",\n"
                      "  \"compiler\": \"gcc\",\n"
                      "  \"platform\": \"linux/amd64\"\n}");
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

/* The CRDs in the store, parsed; the caller decrefs. */
static json_t *stored_crds(kapi_req *r)
{
    kapi_store_list_result l;
    json_t *out = json_array();
    kapi_store_list_opts opts = {.prefix =
                                     kapi_type_key(&r->arena, kapi_registry_crds(r->api->registry),
                                                   KAPI_STR(""), KAPI_STR(""))};
    if (kapi_store_list(r->api->store, &opts, &l) != KAPI_STORE_OK)
        return out;
    for (size_t i = 0; i < l.n; i++)
        json_array_append_new(out, kapi_json_parse(l.items[i]->data, l.items[i]->len, NULL));
    kapi_store_list_dispose(&l);
    return out;
}

static int version_order(const void *a, const void *b)
{
    return kapi_version_cmp(json_string_value(*(json_t *const *)a),
                            json_string_value(*(json_t *const *)b));
}

/* The served entries of a CRD's spec.versions when the CRD is in group (else empty); a
 * new array of borrowed entries. */
static json_t *crd_served(const json_t *crd, const char *group)
{
    json_t *out = json_array();
    if (strcmp(kapi_json_path_str(crd, "spec.group") ?: "", group) != 0)
        return out;
    json_t *versions = kapi_json_path(crd, "spec.versions");
    for (size_t j = 0; j < json_array_size(versions); j++) {
        json_t *v = json_array_get(versions, j);
        if (json_is_true(json_object_get(v, "served")) && kapi_json_path_str(v, "name"))
            json_array_append(out, v);
    }
    return out;
}

/* The served versions of group in preference order, built-in or from CRDs. */
static json_t *group_versions(kapi_req *r, const char *group, json_t *crds)
{
    json_t *vs = json_array();
    const kapi_registry *reg = r->api->registry;
    for (size_t i = 0; i < kapi_registry_count(reg); i++) {
        const kapi_type *t = kapi_registry_at(reg, i);
        if (strcmp(t->group, group) != 0)
            continue;
        bool seen = false;
        for (size_t j = 0; j < json_array_size(vs); j++)
            seen = seen || strcmp(json_string_value(json_array_get(vs, j)), t->version) == 0;
        if (!seen)
            json_array_append_new(vs, json_string(t->version));
    }
    size_t idx;
    json_t *crd;
    json_array_foreach(crds, idx, crd)
    {
        json_t *served = crd_served(crd, group);
        for (size_t j = 0; j < json_array_size(served); j++) {
            const char *name = kapi_json_path_str(json_array_get(served, j), "name");
            bool seen = false;
            for (size_t k = 0; k < json_array_size(vs); k++)
                seen = seen || strcmp(json_string_value(json_array_get(vs, k)), name) == 0;
            if (!seen)
                json_array_append_new(vs, json_string(name));
        }
        json_decref(served);
    }
    size_t n = json_array_size(vs);
    json_t **items = kapi_xcalloc(n ? n : 1, sizeof(*items));
    for (size_t i = 0; i < n; i++)
        items[i] = json_incref(json_array_get(vs, i));
    qsort(items, n, sizeof(*items), version_order);
    json_array_clear(vs);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(vs, items[i]);
    free(items);
    return vs;
}

bool kapi_api__group_served(kapi_req *r, const char *group)
{
    if (kapi_registry_has_group(r->api->registry, kapi_str_c(group)))
        return true;
    json_t *crds = stored_crds(r);
    json_t *vs = group_versions(r, group, crds);
    bool served = json_array_size(vs) > 0;
    json_decref(vs);
    json_decref(crds);
    return served;
}

bool kapi_api__group_version_served(kapi_req *r, const char *group, const char *version)
{
    if (kapi_registry_has_group_version(r->api->registry, kapi_str_c(group), kapi_str_c(version)))
        return true;
    json_t *crds = stored_crds(r);
    json_t *vs = group_versions(r, group, crds);
    bool served = false;
    for (size_t i = 0; i < json_array_size(vs); i++)
        served = served || strcmp(json_string_value(json_array_get(vs, i)), version) == 0;
    json_decref(vs);
    json_decref(crds);
    return served;
}

/* The members of an APIGroup: name, versions, preferredVersion. */
static void put_group_members(kapi_buf *b, const char *group, json_t *vs)
{
    kapi_buf_puts(b, "\"name\":");
    kapi_json_put_string(b, group, strlen(group));
    kapi_buf_puts(b, ",\"versions\":[");
    for (size_t i = 0; i < json_array_size(vs); i++)
        kapi_buf_printf(b, "%s{\"groupVersion\":\"%s/%s\",\"version\":\"%s\"}", i ? "," : "", group,
                        json_string_value(json_array_get(vs, i)),
                        json_string_value(json_array_get(vs, i)));
    const char *pref = json_string_value(json_array_get(vs, 0));
    kapi_buf_printf(b, "],\"preferredVersion\":{\"groupVersion\":\"%s/%s\",\"version\":\"%s\"}",
                    group, pref, pref);
}

/* Every named group: built-in ones in registry order, then the CRDs' in name order. */
static json_t *group_names(kapi_req *r, json_t *crds)
{
    json_t *names = json_array();
    const kapi_registry *reg = r->api->registry;
    for (size_t i = 0; i < kapi_registry_count(reg); i++) {
        const char *g = kapi_registry_at(reg, i)->group;
        size_t n = json_array_size(names);
        if (*g && (n == 0 || strcmp(json_string_value(json_array_get(names, n - 1)), g) != 0))
            json_array_append_new(names, json_string(g));
    }
    size_t idx;
    json_t *crd;
    json_array_foreach(crds, idx, crd)
    {
        const char *g = kapi_json_path_str(crd, "spec.group");
        bool seen = !g || kapi_registry_has_group(reg, kapi_str_c(g));
        for (size_t i = 0; !seen && i < json_array_size(names); i++)
            seen = strcmp(json_string_value(json_array_get(names, i)), g) == 0;
        if (!seen)
            json_array_append_new(names, json_string(g));
    }
    return names;
}

void kapi_api__serve_group_list(kapi_req *r)
{
    json_t *crds = stored_crds(r);
    json_t *names = group_names(r, crds);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[");
    size_t written = 0;
    for (size_t i = 0; i < json_array_size(names); i++) {
        const char *g = json_string_value(json_array_get(names, i));
        json_t *vs = group_versions(r, g, crds);
        if (json_array_size(vs)) {
            kapi_buf_puts(&b, written++ ? ",{" : "{");
            put_group_members(&b, g, vs);
            kapi_buf_putc(&b, '}');
        }
        json_decref(vs);
    }
    kapi_buf_puts(&b, "]}\n");
    json_decref(names);
    json_decref(crds);
    kapi_api__respond_json(r, 200, &b);
}

void kapi_api__serve_group(kapi_req *r, const char *group)
{
    json_t *crds = stored_crds(r);
    json_t *vs = group_versions(r, group, crds);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",");
    put_group_members(&b, group, vs);
    kapi_buf_puts(&b, "}\n");
    json_decref(vs);
    json_decref(crds);
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

/* One APIResource entry. hash is NULL for subresources. */
static void put_resource(kapi_buf *b, bool *first, const char *name, const char *singular,
                         bool namespaced, const char *kind, const char *const *verbs,
                         const char *const *short_names, const char *const *categories,
                         const char *hash)
{
    kapi_buf_puts(b, *first ? "{\"name\":" : ",{\"name\":");
    *first = false;
    kapi_json_put_string(b, name, strlen(name));
    kapi_buf_puts(b, ",\"singularName\":");
    kapi_json_put_string(b, singular, strlen(singular));
    kapi_buf_printf(b, ",\"namespaced\":%s,\"kind\":", namespaced ? "true" : "false");
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
        put_resource(b, first, t->plural, "", t->namespaced, t->kind, t->verbs, t->short_names,
                     t->categories, t->storage_version_hash);
        for (size_t s = 0; s < t->nsubresources; s++) {
            char *name = kapi_xprintf("%s/%s", t->plural, t->subresources[s].name);
            put_resource(b, first, name, "", t->namespaced, t->kind, t->subresources[s].verbs, NULL,
                         NULL, NULL);
            free(name);
        }
    }
}

/* A NULL-terminated vector of a JSON array's strings (borrowed). */
static const char **strings_of(const json_t *arr)
{
    size_t n = json_array_size(arr);
    const char **v = kapi_xcalloc(n + 1, sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = json_string_value(json_array_get(arr, i)) ?: "";
    return v;
}

static void put_crd_resources(kapi_buf *b, bool *first, const json_t *crd, const json_t *ver)
{
    static const char *const verbs[] = {"delete", "deletecollection", "get",   "list", "patch",
                                        "create", "update",           "watch", NULL};
    static const char *const sub_verbs[] = {"get", "patch", "update", NULL};
    const json_t *names = kapi_json_path(crd, "spec.names");
    const char *plural = kapi_json_path_str(names, "plural") ?: "";
    const char *kind = kapi_json_path_str(names, "kind") ?: "";
    const char *group = kapi_json_path_str(crd, "spec.group") ?: "";
    bool namespaced = strcmp(kapi_json_path_str(crd, "spec.scope") ?: "", "Namespaced") == 0;
    const char **short_names = strings_of(json_object_get(names, "shortNames"));
    const char **categories = strings_of(json_object_get(names, "categories"));
    char *hash = kapi_registry_storage_hash(group, kapi_custom_storage_version(crd) ?: "", kind);
    const char *singular = kapi_json_path_str(names, "singular");
    char *lower = kapi_xstrdup(singular && *singular ? singular : kind);
    for (char *c = lower; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    put_resource(b, first, plural, lower, namespaced, kind, verbs, short_names, categories, hash);
    char *sub = kapi_xprintf("%s/status", plural);
    if (kapi_json_path(ver, "subresources.status"))
        put_resource(b, first, sub, "", namespaced, kind, sub_verbs, NULL, NULL, NULL);
    free(sub);
    if (kapi_json_path(ver, "subresources.scale")) {
        sub = kapi_xprintf("%s/scale", plural);
        kapi_buf_puts(b, ",{\"name\":");
        kapi_json_put_string(b, sub, strlen(sub));
        kapi_buf_printf(b,
                        ",\"singularName\":\"\",\"namespaced\":%s,\"group\":\"autoscaling\","
                        "\"version\":\"v1\",\"kind\":\"Scale\"",
                        namespaced ? "true" : "false");
        put_strings(b, "verbs", sub_verbs);
        kapi_buf_putc(b, '}');
        free(sub);
    }
    free(lower);
    free(hash);
    free(short_names);
    free(categories);
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
    json_t *crds = stored_crds(r);
    size_t idx;
    json_t *crd;
    json_array_foreach(crds, idx, crd)
    {
        json_t *served = crd_served(crd, group);
        for (size_t j = 0; j < json_array_size(served); j++) {
            json_t *v = json_array_get(served, j);
            if (strcmp(kapi_json_path_str(v, "name"), version) == 0)
                put_crd_resources(&b, &first, crd, v);
        }
        json_decref(served);
    }
    json_decref(crds);
    kapi_buf_puts(&b, "]}\n");
    kapi_api__respond_json(r, 200, &b);
}
