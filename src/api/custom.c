/*
 * api/custom: the custom resource types served now. A request for a resource no
 * built-in type serves looks for the CustomResourceDefinition named <plural>.<group> in
 * the store; once it is Established, each served version is a kapi_type built from it
 * (registry/custom.c) and kept until the CRD changes. A request holds its type until it
 * is answered, a watch until it ends, so a CRD update never frees a type in use.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"

#define CRD_PREFIX "/apiextensions.k8s.io/customresourcedefinitions/"

/* What a revision of a CRD says of one of its versions. */
typedef struct custom_state {
    bool served;      /* Established, and the version is served (else only the controllers
                       * use the type: a storage version need not be served) */
    bool terminating; /* the CRD has the Terminating condition */
} custom_state;

typedef struct custom_entry {
    char *name, *version; /* the CRD's name and the served version */
    int64_t rev;          /* the CRD's revision the type was built from */
    custom_state state;
    const kapi_type *type;
} custom_entry;

struct kapi_custom_types {
    pthread_mutex_t mu;
    custom_entry *v;
    size_t n, cap;
};

kapi_custom_types *kapi_api__custom_types_new(void)
{
    kapi_custom_types *c = kapi_xcalloc(1, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

void kapi_api__custom_types_free(kapi_custom_types *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].name);
        free(c->v[i].version);
        kapi_type_release(c->v[i].type);
    }
    free(c->v);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* True if the CRD serves version under plural. */
static bool serves(const json_t *crd, const char *plural, const char *version)
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

static custom_entry *find_entry(kapi_custom_types *c, const char *name, const char *version)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->v[i].name, name) == 0 && strcmp(c->v[i].version, version) == 0)
            return &c->v[i];
    return NULL;
}

/* The cached type of the CRD stored as o at version, held for the caller; NULL when the
 * cache has none for this revision of the CRD. */
static const kapi_type *cached(kapi_custom_types *c, const char *name, const char *version,
                               int64_t rev, custom_state *state)
{
    const kapi_type *t = NULL;
    pthread_mutex_lock(&c->mu);
    custom_entry *e = find_entry(c, name, version);
    if (e && e->rev == rev) {
        t = kapi_type_hold(e->type);
        *state = e->state;
    }
    pthread_mutex_unlock(&c->mu);
    return t;
}

/* Builds the type of crd (stored as o) at version and caches it in place of an older
 * one; held for the caller. */
static kapi_error *build(kapi_api *api, const char *name, const char *version, int64_t rev,
                         const json_t *crd, const kapi_type **out, custom_state *state)
{
    kapi_custom_types *c = api->custom_types;
    const kapi_type *t;
    kapi_error *err = kapi_custom_type_new(api->registry, crd, version, &t);
    if (err)
        return err;
    state->served = serves(crd, t->plural, version);
    state->terminating = kapi_crd_condition(crd, "Terminating");
    pthread_mutex_lock(&c->mu);
    custom_entry *e = find_entry(c, name, version);
    if (!e) {
        if (c->n == c->cap) {
            c->cap = c->cap ? 2 * c->cap : 8;
            c->v = kapi_xrealloc(c->v, c->cap * sizeof(*c->v));
        }
        e = &c->v[c->n++];
        *e = (custom_entry){kapi_xstrdup(name), kapi_xstrdup(version), 0, {false, false}, NULL};
    }
    if (e->rev <= rev) {
        kapi_type_release(e->type);
        e->type = kapi_type_hold(t);
        e->rev = rev;
        e->state = *state;
    }
    pthread_mutex_unlock(&c->mu);
    *out = t;
    return NULL;
}

kapi_error *kapi_api_custom_storage_type(kapi_api *api, const json_t *crd, const kapi_type **out)
{
    const char *name = kapi_json_path_str(crd, "metadata.name");
    const char *rv = kapi_json_path_str(crd, "metadata.resourceVersion");
    int64_t rev = rv ? strtoll(rv, NULL, 10) : 0;
    const char *version = kapi_custom_storage_version(crd);
    custom_state state;
    *out = NULL;
    if (!name || !version)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                              "customresourcedefinition without a name or a storage version");
    if ((*out = cached(api->custom_types, name, version, rev, &state)) != NULL)
        return NULL;
    return build(api, name, version, rev, crd, out, &state);
}

kapi_error *kapi_api__custom_type(kapi_req *r, const kapi_type **out)
{
    const kapi_reqinfo *in = &r->info;
    kapi_obj *o = NULL;
    kapi_error *err = NULL;
    custom_state state = {false, false};
    *out = NULL;
    if (!*in->group || !*in->resource)
        return NULL;
    char *name = kapi_arena_printf(&r->arena, "%s.%s", in->resource, in->group);
    char *key = kapi_arena_printf(&r->arena, CRD_PREFIX "%s", name);
    if (kapi_store_get(r->api->store, kapi_str_c(key), &o) != KAPI_STORE_OK)
        return NULL;
    const kapi_type *t = cached(r->api->custom_types, name, in->version, o->rev, &state);
    if (!t) {
        json_t *crd = kapi_api__parse_stored(o);
        if (serves(crd, in->resource, in->version))
            err = build(r->api, name, in->version, o->rev, crd, &t, &state);
        json_decref(crd);
    }
    kapi_obj_unref(o);
    if (t && !state.served) { /* built for the controllers */
        kapi_type_release(t);
        t = NULL;
    }
    if (t && state.terminating && strcmp(in->verb, "create") == 0) {
        kapi_type_release(t);
        t = NULL;
        err = kapi_error_new(KAPI_STATUS_METHOD_NOT_ALLOWED,
                             "create not allowed while custom resource definition is "
                             "terminating");
        kapi_error_details(err, NULL, in->group, in->resource);
    }
    *out = t;
    return err;
}
