/*
 * registry/discovery: what discovery lists (registry.h, "what is served, for discovery"):
 * the named groups of the built-in types and of the stored CRDs, each group's versions in
 * preference order, and the APIResource facts of every served version of every CRD, read
 * from the CRDs' spec here so that the api formats typed facts and reads no CRD field.
 *
 * A version is listed when the CRD serves it (spec.versions[].served), whatever its
 * conditions, as kube-apiserver's discovery lists a CRD once it is stored.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "codec/json.h"
#include "registry/registry_int.h"

/* The version entries of crd that are served and named; a new array of borrowed entries. */
static json_t *served_versions(const json_t *crd)
{
    json_t *out = json_array();
    const json_t *versions = kapi_json_path(crd, "spec.versions");
    for (size_t i = 0; i < json_array_size(versions); i++) {
        json_t *v = json_array_get(versions, i);
        if (json_is_true(json_object_get(v, "served")) && kapi_json_path_str(v, "name"))
            json_array_append(out, v);
    }
    return out;
}

/* A NULL-terminated vector of a JSON array's strings (a non-string is ""), in the arena. */
static const char *const *strings_of(kapi_arena *a, const json_t *arr)
{
    size_t n = json_array_size(arr);
    const char **v = kapi_arena_alloc(a, (n + 1) * sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = kapi_arena_strdup(a, json_string_value(json_array_get(arr, i)) ?: "");
    v[n] = NULL;
    return v;
}

/* The subresources ver (a CRD's version entry) enables, in discovery's order. */
static void fill_subresources(kapi_arena *a, kapi_crd_resource *res, const json_t *ver)
{
    kapi_discovery_sub *subs = kapi_arena_alloc(a, 2 * sizeof(*subs));
    size_t n = 0;
    if (kapi_json_path(ver, "subresources.status"))
        subs[n++] = (kapi_discovery_sub){"status", NULL, NULL, NULL,
                                         kapi_registry__custom_subresource_verbs};
    if (kapi_json_path(ver, "subresources.scale"))
        subs[n++] = (kapi_discovery_sub){"scale", "autoscaling", "v1", "Scale",
                                         kapi_registry__custom_subresource_verbs};
    res->subresources = subs;
    res->nsubresources = n;
}

/* The discovery facts of ver, a served version of crd. */
static void fill_resource(kapi_arena *a, kapi_crd_resource *res, const json_t *crd,
                          const json_t *ver)
{
    const json_t *names = kapi_json_path(crd, "spec.names");
    res->group = kapi_arena_strdup(a, kapi_json_path_str(crd, "spec.group") ?: "");
    res->version = kapi_arena_strdup(a, kapi_json_path_str(ver, "name"));
    res->plural = kapi_arena_strdup(a, kapi_json_path_str(names, "plural") ?: "");
    res->kind = kapi_arena_strdup(a, kapi_json_path_str(names, "kind") ?: "");
    const char *singular = kapi_json_path_str(names, "singular");
    char *lower = kapi_arena_strdup(a, singular && *singular ? singular : res->kind);
    for (char *c = lower; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    res->singular = lower;
    res->namespaced = strcmp(kapi_json_path_str(crd, "spec.scope") ?: "", "Namespaced") == 0;
    res->verbs = kapi_registry__custom_verbs;
    res->short_names = strings_of(a, json_object_get(names, "shortNames"));
    res->categories = strings_of(a, json_object_get(names, "categories"));
    char *hash =
        kapi_registry_storage_hash(res->group, kapi_registry__crd_storage_version(crd) ?: "", res->kind);
    res->storage_version_hash = kapi_arena_strdup(a, hash);
    free(hash);
    fill_subresources(a, res, ver);
}

/* Every served version of every CRD, in order, into out->resources. */
static void fill_resources(kapi_served *out, const json_t *crds)
{
    size_t n = 0, idx;
    json_t *crd;
    json_t **served = kapi_arena_alloc(&out->arena, (json_array_size(crds) + 1) * sizeof(*served));
    json_array_foreach(crds, idx, crd)
    {
        served[idx] = served_versions(crd);
        n += json_array_size(served[idx]);
    }
    kapi_crd_resource *res = kapi_arena_alloc(&out->arena, (n + 1) * sizeof(*res));
    n = 0;
    json_array_foreach(crds, idx, crd)
    {
        for (size_t j = 0; j < json_array_size(served[idx]); j++)
            fill_resource(&out->arena, &res[n++], crd, json_array_get(served[idx], j));
        json_decref(served[idx]);
    }
    out->resources = res;
    out->nresources = n;
}

static bool has_string(const char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

static int version_order(const void *a, const void *b)
{
    return kapi_version_cmp(*(const char *const *)a, *(const char *const *)b);
}

/* The served versions of group g, built-in and from CRDs, in preference order. */
static void fill_versions(const kapi_registry *r, kapi_served *out, kapi_served_group *g)
{
    size_t max = kapi_registry_count(r) + out->nresources;
    const char **vs = kapi_arena_alloc(&out->arena, (max + 1) * sizeof(*vs));
    size_t n = 0;
    for (size_t i = 0; i < kapi_registry_count(r); i++) {
        const kapi_type *t = kapi_registry_at(r, i);
        if (strcmp(t->group, g->name) == 0 && !has_string(vs, n, t->version))
            vs[n++] = t->version;
    }
    for (size_t i = 0; i < out->nresources; i++) {
        const kapi_crd_resource *res = &out->resources[i];
        if (strcmp(res->group, g->name) == 0 && !has_string(vs, n, res->version))
            vs[n++] = res->version;
    }
    qsort(vs, n, sizeof(*vs), version_order);
    g->versions = vs;
    g->nversions = n;
}

/* The named groups: built-in ones in registry order, then each CRD's new group. */
static void fill_groups(const kapi_registry *r, kapi_served *out, const json_t *crds)
{
    size_t max = kapi_registry_count(r) + json_array_size(crds);
    const char **names = kapi_arena_alloc(&out->arena, (max + 1) * sizeof(*names));
    size_t n = 0, idx;
    for (size_t i = 0; i < kapi_registry_count(r); i++) {
        const char *g = kapi_registry_at(r, i)->group;
        if (*g && (n == 0 || strcmp(names[n - 1], g) != 0))
            names[n++] = g;
    }
    json_t *crd;
    json_array_foreach(crds, idx, crd)
    {
        const char *g = kapi_json_path_str(crd, "spec.group");
        if (g && !kapi_registry_has_group(r, kapi_str_c(g)) && !has_string(names, n, g))
            names[n++] = kapi_arena_strdup(&out->arena, g);
    }
    kapi_served_group *groups = kapi_arena_alloc(&out->arena, (n + 1) * sizeof(*groups));
    out->ngroups = 0;
    for (size_t i = 0; i < n; i++) {
        kapi_served_group *g = &groups[out->ngroups];
        g->name = names[i];
        fill_versions(r, out, g);
        if (g->nversions)
            out->ngroups++;
    }
    out->groups = groups;
}

void kapi_registry_served(const kapi_registry *r, const json_t *crds, kapi_served *out)
{
    memset(out, 0, sizeof(*out));
    kapi_arena_init(&out->arena);
    fill_resources(out, crds);
    fill_groups(r, out, crds);
}

void kapi_served_dispose(kapi_served *s)
{
    kapi_arena_dispose(&s->arena);
}

const kapi_served_group *kapi_served_find(const kapi_served *s, const char *name)
{
    for (size_t i = 0; i < s->ngroups; i++)
        if (strcmp(s->groups[i].name, name) == 0)
            return &s->groups[i];
    return NULL;
}
