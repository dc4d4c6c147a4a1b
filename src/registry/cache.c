/*
 * registry/cache: the custom types built so far, one per CRD name and version, each from
 * one revision of its CRD in the store (registry.h, "the custom type cache"). A mutex
 * guards the map; a type leaves the cache only when a newer revision replaces it, and
 * the cache's hold is then dropped, so a type in use lives until its last holder
 * releases it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/map.h"
#include "codec/json.h"
#include "registry/registry_int.h"

/* One cached type: its key (the CRD's name and the version) and what it was built from. */
typedef struct cache_entry {
    char *name, *version;
    int64_t rev; /* the CRD's revision the type was built from */
    kapi_custom_state state;
    const kapi_type *type; /* the cache's hold */
} cache_entry;

struct kapi_custom_cache {
    pthread_mutex_t mu;
    kapi_map *entries; /* cache_entry -> the same cache_entry */
};

static uint64_t entry_hash(const void *key, uint64_t seed)
{
    const cache_entry *e = key;
    return kapi_map_hash_bytes(e->version, strlen(e->version),
                               kapi_map_hash_bytes(e->name, strlen(e->name), seed));
}

static bool entry_equal(const void *a, const void *b)
{
    const cache_entry *x = a, *y = b;
    return strcmp(x->name, y->name) == 0 && strcmp(x->version, y->version) == 0;
}

static void entry_free(void *p)
{
    cache_entry *e = p;
    free(e->name);
    free(e->version);
    kapi_type_unref(e->type);
    free(e);
}

static const kapi_map_type entry_map = {entry_hash, entry_equal, entry_free, NULL};

kapi_custom_cache *kapi_registry__cache_new(void)
{
    kapi_custom_cache *c = kapi_xcalloc(1, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    c->entries = kapi_map_new(&entry_map);
    return c;
}

void kapi_registry__cache_free(kapi_custom_cache *c)
{
    if (!c)
        return;
    kapi_map_free(c->entries);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* True if crd is Established and serves version under plural. */
static bool crd_serves(const json_t *crd, const char *plural, const char *version)
{
    const char *p = kapi_json_path_str(crd, "spec.names.plural");
    if (!p || strcmp(p, plural) != 0 || !kapi_crd_condition(crd, "Established"))
        return false;
    size_t i;
    json_t *v;
    json_array_foreach(kapi_json_path(crd, "spec.versions"), i, v)
    {
        const char *n = kapi_json_path_str(v, "name");
        if (n && strcmp(n, version) == 0)
            return json_is_true(json_object_get(v, "served"));
    }
    return false;
}

const kapi_type *kapi_registry_custom_cached(const kapi_registry *r, const char *crd_name,
                                             const char *version, int64_t rev,
                                             kapi_custom_state *state)
{
    kapi_custom_cache *c = kapi_registry__cache(r);
    cache_entry probe = {(char *)crd_name, (char *)version, 0, {false, false}, NULL};
    const kapi_type *t = NULL;
    pthread_mutex_lock(&c->mu);
    const cache_entry *e = kapi_map_get(c->entries, &probe);
    if (e && e->rev == rev) {
        t = kapi_type_ref(e->type);
        *state = e->state;
    }
    pthread_mutex_unlock(&c->mu);
    return t;
}

/* Keeps t (built from revision rev) as the cached type of name and version unless the
 * cache holds one built from a newer revision. */
static void cache_put(kapi_custom_cache *c, const char *name, const char *version, int64_t rev,
                      const kapi_type *t, const kapi_custom_state *state)
{
    cache_entry probe = {(char *)name, (char *)version, 0, {false, false}, NULL};
    pthread_mutex_lock(&c->mu);
    cache_entry *e = kapi_map_get(c->entries, &probe);
    if (!e) {
        e = kapi_xcalloc(1, sizeof(*e));
        e->name = kapi_xstrdup(name);
        e->version = kapi_xstrdup(version);
        kapi_map_put(c->entries, e, e);
    }
    if (e->rev <= rev) {
        kapi_type_unref(e->type);
        e->type = kapi_type_ref(t);
        e->rev = rev;
        e->state = *state;
    }
    pthread_mutex_unlock(&c->mu);
}

kapi_error *kapi_registry_custom_build(const kapi_registry *r, const json_t *crd, int64_t rev,
                                       const char *version, const kapi_type **out,
                                       kapi_custom_state *state)
{
    const char *name = kapi_json_path_str(crd, "metadata.name");
    *out = NULL;
    if (!name)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                              "customresourcedefinition without a name");
    kapi_error *err = kapi_custom_type_new(r, crd, version, out);
    if (err)
        return err;
    state->served = crd_serves(crd, (*out)->plural, version);
    state->terminating = kapi_crd_condition(crd, "Terminating");
    cache_put(kapi_registry__cache(r), name, version, rev, *out, state);
    return NULL;
}

kapi_error *kapi_registry_custom_storage_type(const kapi_registry *r, const json_t *crd,
                                              int64_t rev, const kapi_type **out)
{
    const char *name = kapi_json_path_str(crd, "metadata.name");
    const char *version = kapi_registry__crd_storage_version(crd);
    kapi_custom_state state;
    *out = NULL;
    if (!name || !version)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                              "customresourcedefinition without a name or a storage version");
    if ((*out = kapi_registry_custom_cached(r, name, version, rev, &state)) != NULL)
        return NULL;
    return kapi_registry_custom_build(r, crd, rev, version, out, &state);
}

kapi_error *kapi_registry_custom_serving(const kapi_registry *r, const json_t *crd, int64_t rev,
                                         const char *plural, const char *version,
                                         const kapi_type **out, kapi_custom_state *state)
{
    *out = NULL;
    if (!crd_serves(crd, plural, version))
        return NULL;
    return kapi_registry_custom_build(r, crd, rev, version, out, state);
}
