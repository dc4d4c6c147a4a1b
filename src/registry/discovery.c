/*
 * registry/discovery: what discovery lists (registry.h, "what is served, for discovery"):
 * the named groups of the built-in types and of the stored CRDs, each group's versions in
 * preference order, and the APIResource facts of the CRDs serving one group version, read
 * from the CRDs' spec here so that the api formats typed facts and reads no CRD field.
 * The two are asked apart: every request for a custom resource asks whether its group
 * version is served, and only a resource list needs the facts (a storageVersionHash is a
 * SHA-256).
 *
 * A version is listed when the CRD serves it (spec.versions[].served), whatever its
 * conditions, as kube-apiserver's discovery lists a CRD once it is stored.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "codec/json.h"
#include "registry/registry_int.h"

/* The version entries of crd that are served and named, none before it is Established
 * (kube's discovery controller); a new array of borrowed entries. */
static json_t *served_versions(const json_t *crd)
{
    json_t *out = json_array();
    if (!kapi_crd_condition(crd, "Established"))
        return out;
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

/* What a CRD being deleted still serves. */
static const char *const terminating_verbs[] = {
    "delete", "deletecollection", "get", "list", "watch", NULL};

/* The discovery facts of ver, a served version of crd: the names it has accepted (those
 * of its spec may be held by another CRD). */
static void fill_resource(kapi_arena *a, kapi_crd_resource *res, const json_t *crd,
                          const json_t *ver)
{
    const json_t *names = kapi_json_path(crd, "status.acceptedNames");
    res->group = kapi_arena_strdup(a, kapi_json_path_str(crd, "spec.group") ?: "");
    res->version = kapi_arena_strdup(a, kapi_json_path_str(ver, "name"));
    res->plural = kapi_arena_strdup(a, kapi_json_path_str(names, "plural") ?: "");
    res->kind = kapi_arena_strdup(a, kapi_json_path_str(names, "kind") ?: "");
    res->singular = kapi_arena_strdup(a, kapi_json_path_str(names, "singular") ?: "");
    res->namespaced = strcmp(kapi_json_path_str(crd, "spec.scope") ?: "", "Namespaced") == 0;
    res->verbs =
        kapi_crd_condition(crd, "Terminating") ? terminating_verbs : kapi_registry__custom_verbs;
    res->short_names = strings_of(a, json_object_get(names, "shortNames"));
    res->categories = strings_of(a, json_object_get(names, "categories"));
    char *hash =
        kapi_registry_storage_hash(res->group, kapi_registry__crd_storage_version(crd) ?: "",
                                   kapi_json_path_str(crd, "spec.names.kind") ?: "");
    res->storage_version_hash = kapi_arena_strdup(a, hash);
    free(hash);
    fill_subresources(a, res, ver);
}

void kapi_registry_crd_resources(const json_t *crds, const char *group, const char *version,
                                 kapi_crd_resources *out)
{
    size_t idx;
    json_t *crd;
    memset(out, 0, sizeof(*out));
    kapi_arena_init(&out->arena);
    kapi_crd_resource *items =
        kapi_arena_alloc(&out->arena, (json_array_size(crds) + 1) * sizeof(*items));
    json_array_foreach(crds, idx, crd)
    {
        if (strcmp(kapi_json_path_str(crd, "spec.group") ?: "", group) != 0)
            continue;
        json_t *served = served_versions(crd);
        for (size_t j = 0; j < json_array_size(served); j++) {
            const json_t *ver = json_array_get(served, j);
            if (strcmp(kapi_json_path_str(ver, "name"), version) == 0)
                fill_resource(&out->arena, &items[out->n++], crd, ver);
        }
        json_decref(served);
    }
    out->items = items;
}

void kapi_crd_resources_dispose(kapi_crd_resources *l)
{
    kapi_arena_dispose(&l->arena);
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

/* The served versions of the stored CRDs, read once: (group, version) pairs in the
 * CRDs' order, and the group each CRD names (NULL when none). */
typedef struct crd_facts {
    const char **groups; /* one per CRD */
    const char **pair_group, **pair_version;
    size_t npairs;
} crd_facts;

static void read_crds(kapi_arena *a, const json_t *crds, crd_facts *f)
{
    size_t max = 0, idx;
    json_t *crd;
    json_array_foreach(crds, idx, crd)
    {
        max += json_array_size(kapi_json_path(crd, "spec.versions"));
    }
    f->groups = kapi_arena_alloc(a, (json_array_size(crds) + 1) * sizeof(*f->groups));
    f->pair_group = kapi_arena_alloc(a, (max + 1) * sizeof(*f->pair_group));
    f->pair_version = kapi_arena_alloc(a, (max + 1) * sizeof(*f->pair_version));
    f->npairs = 0;
    json_array_foreach(crds, idx, crd)
    {
        const char *g = kapi_json_path_str(crd, "spec.group");
        json_t *served = served_versions(crd);
        f->groups[idx] = g && json_array_size(served) ? kapi_arena_strdup(a, g) : NULL;
        for (size_t j = 0; j < json_array_size(served); j++) {
            f->pair_group[f->npairs] = f->groups[idx] ?: "";
            f->pair_version[f->npairs++] =
                kapi_arena_strdup(a, kapi_json_path_str(json_array_get(served, j), "name"));
        }
        json_decref(served);
    }
}

/* The served versions of group g, built-in and from the CRDs, in preference order. */
static void fill_versions(const kapi_registry *r, kapi_arena *a, const crd_facts *f,
                          kapi_served_group *g)
{
    const char **vs = kapi_arena_alloc(a, (kapi_registry_count(r) + f->npairs + 1) * sizeof(*vs));
    size_t n = 0;
    for (size_t i = 0; i < kapi_registry_count(r); i++) {
        const kapi_type *t = kapi_registry_at(r, i);
        if (strcmp(t->group, g->name) == 0 && !has_string(vs, n, t->version))
            vs[n++] = t->version;
    }
    for (size_t i = 0; i < f->npairs; i++)
        if (strcmp(f->pair_group[i], g->name) == 0 && !has_string(vs, n, f->pair_version[i]))
            vs[n++] = f->pair_version[i];
    qsort(vs, n, sizeof(*vs), version_order);
    g->versions = vs;
    g->nversions = n;
}

/* The named groups into names: the built-in ones in registry order, then each CRD's new
 * one; returns how many. */
static size_t group_names(const kapi_registry *r, size_t ncrds, const crd_facts *f,
                          const char **names)
{
    size_t n = 0;
    for (size_t i = 0; i < kapi_registry_count(r); i++) {
        const char *g = kapi_registry_at(r, i)->group;
        if (*g && (n == 0 || strcmp(names[n - 1], g) != 0))
            names[n++] = g;
    }
    for (size_t i = 0; i < ncrds; i++) {
        const char *g = f->groups[i];
        if (g && !kapi_registry_has_group(r, kapi_str_c(g)) && !has_string(names, n, g))
            names[n++] = g;
    }
    return n;
}

void kapi_registry_served(const kapi_registry *r, const json_t *crds, kapi_served *out)
{
    crd_facts f;
    memset(out, 0, sizeof(*out));
    kapi_arena_init(&out->arena);
    read_crds(&out->arena, crds, &f);
    size_t ncrds = json_array_size(crds);
    const char **names =
        kapi_arena_alloc(&out->arena, (kapi_registry_count(r) + ncrds + 1) * sizeof(*names));
    size_t n = group_names(r, ncrds, &f, names);
    kapi_served_group *groups = kapi_arena_alloc(&out->arena, (n + 1) * sizeof(*groups));
    for (size_t i = 0; i < n; i++) {
        kapi_served_group *g = &groups[out->ngroups];
        g->name = names[i];
        fill_versions(r, &out->arena, &f, g);
        if (g->nversions) /* a CRD's group with no served version is not listed */
            out->ngroups++;
    }
    out->groups = groups;
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
