/*
 * controllers/namespace: the namespace lifecycle (reference section 3; kube-controller-
 * manager's namespace controller).
 *
 * Every pass lists the namespaces; for each one being deleted it deletes, type by type
 * (built-in ones, then the custom resources of every namespaced CRD), every object
 * stored under it (an object with finalizers waits for them and keeps the
 * namespace). Once nothing is left it finalizes the namespace (the "kubernetes" entry of
 * spec.finalizers goes) and deletes it, which removes it unless metadata.finalizers still
 * hold it. A pass runs every PASS_INTERVAL_MS, so a deleted namespace is gone within a
 * second of its last object.
 */
#include "controllers/controllers.h"

#include <string.h>

#include "api/api_int.h"

#define PASS_INTERVAL_MS 200

/* True when t is the first namespaced type stored under its storage resource (two
 * served types may share one: core and events.k8s.io Events). */
static bool first_of_storage(const kapi_registry *reg, size_t i)
{
    const kapi_type *t = kapi_registry_at(reg, i);
    if (!t->namespaced)
        return false;
    for (size_t j = 0; j < i; j++) {
        const kapi_type *u = kapi_registry_at(reg, j);
        if (strcmp(u->storage_group, t->storage_group) == 0 &&
            strcmp(u->storage_resource, t->storage_resource) == 0)
            return false;
    }
    return true;
}

/* Deletes every object of t in ns; false while some remain. */
static bool empty_type(kapi_api *api, kapi_arena *a, const kapi_type *t, const char *ns)
{
    static const kapi_delete_opts background = {.propagation = "Background", .grace = -1};
    kapi_store_list_result l;
    kapi_str prefix = kapi_type_key(a, t, kapi_str_c(ns), KAPI_STR(""));
    kapi_store_list_opts q = {.prefix = prefix};
    if (kapi_store_list(api->store, &q, &l) != KAPI_STORE_OK)
        return false;
    bool empty = true;
    for (size_t i = 0; i < l.n; i++) {
        kapi_str name; /* whole: a name may hold a NUL */
        kapi_type_key_parse(t, kapi_obj_key(l.items[i]), NULL, &name);
        json_t *out = NULL;
        bool removed = false;
        kapi_error *err =
            kapi_api__delete(api, a, t, kapi_str_c(ns), name, &background, &out, &removed);
        if ((err && err->status != KAPI_STATUS_NOT_FOUND) || (!err && !removed))
            empty = false;
        kapi_error_free(err);
        json_decref(out);
    }
    kapi_store_list_dispose(&l);
    return empty;
}

/* Removes "kubernetes" from spec.finalizers (the finalize write); true when it is gone. */
static bool finalize(kapi_api *api, kapi_arena *a, const kapi_type *nst, json_t *ns, int64_t rev)
{
    json_t *fins = kapi_json_path(ns, "spec.finalizers");
    bool found = false;
    for (size_t i = 0; i < json_array_size(fins); i++) {
        const char *f = json_string_value(json_array_get(fins, i));
        if (f && strcmp(f, "kubernetes") == 0) {
            json_array_remove(fins, i--);
            found = true;
        }
    }
    if (!found)
        return true;
    kapi_obj *o = NULL;
    kapi_error *err = kapi_api__store_write(api, a, nst, ns, KAPI_STORE_UPDATE, rev, &o, NULL);
    kapi_obj_unref(o);
    bool ok = !err;
    kapi_error_free(err);
    return ok;
}

/* Deletes the custom resources in ns of every namespaced CRD; false while some remain. */
static bool empty_custom(kapi_api *api, kapi_arena *a, const char *ns)
{
    kapi_store_list_result l;
    kapi_store_list_opts q = {
        .prefix = kapi_type_key(a, kapi_registry_crds(api->registry), KAPI_STR(""), KAPI_STR(""))};
    if (kapi_store_list(api->store, &q, &l) != KAPI_STORE_OK)
        return false;
    bool empty = true;
    for (size_t i = 0; i < l.n; i++) {
        json_t *crd = kapi_api__parse_stored(l.items[i]);
        const kapi_type *t = NULL;
        const char *scope = kapi_json_path_str(crd, "spec.scope");
        kapi_error *err =
            scope && strcmp(scope, "Namespaced") == 0
                ? kapi_registry_custom_storage_type(api->registry, crd, l.items[i]->rev, &t)
                : NULL;
        if (t)
            empty &= empty_type(api, a, t, ns);
        kapi_type_release(t);
        kapi_error_free(err);
        json_decref(crd);
    }
    kapi_store_list_dispose(&l);
    return empty;
}

static void clean_namespace(kapi_api *api, const kapi_type *nst, kapi_obj *o)
{
    kapi_arena a;
    kapi_arena_init(&a);
    json_t *ns = kapi_api__parse_stored(o);
    const char *name = kapi_json_path_str(ns, "metadata.name");
    const kapi_registry *reg = api->registry;
    /* decided on the parsed object: the bytes may hold the text in a label or annotation */
    bool empty = kapi_json_path(ns, "metadata.deletionTimestamp") != NULL;
    for (size_t i = 0; empty && i < kapi_registry_count(reg); i++)
        if (first_of_storage(reg, i))
            empty &= empty_type(api, &a, kapi_registry_at(reg, i), name);
    if (empty)
        empty = empty_custom(api, &a, name);
    if (empty && finalize(api, &a, nst, ns, o->rev)) {
        static const kapi_delete_opts plain = {.grace = -1};
        json_t *out = NULL;
        bool removed;
        kapi_error_free(
            kapi_api__delete(api, &a, nst, KAPI_STR(""), kapi_str_c(name), &plain, &out, &removed));
        json_decref(out);
    }
    json_decref(ns);
    kapi_arena_dispose(&a);
}

static void pass(kapi_api *api)
{
    const kapi_type *nst = kapi_registry_namespaces(api->registry);
    kapi_store_list_result l;
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_store_list_opts q = {.prefix = kapi_type_key(&a, nst, KAPI_STR(""), KAPI_STR(""))};
    if (kapi_store_list(api->store, &q, &l) == KAPI_STORE_OK) {
        for (size_t i = 0; i < l.n; i++)
            clean_namespace(api, nst, l.items[i]);
        kapi_store_list_dispose(&l);
    }
    kapi_arena_dispose(&a);
}

kapi_controller *kapi_namespace_controller_start(kapi_api *api)
{
    return kapi_controllers__start(api, "namespace", PASS_INTERVAL_MS, pass);
}
