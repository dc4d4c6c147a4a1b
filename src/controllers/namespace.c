/*
 * controllers/namespace: the namespace lifecycle (reference section 3; kube-controller-
 * manager's namespace controller), a client of the api.
 *
 * A pass lists the namespaces; for each one being deleted it deletes, type by type
 * (built-in ones, then the custom resources of every namespaced CRD), every object in it
 * (an object with finalizers waits for them and keeps the namespace). Once nothing is
 * left it finalizes the namespace (the "kubernetes" entry of spec.finalizers goes, by a
 * write to /finalize), which removes it unless metadata.finalizers still hold it; a
 * delete then removes one they held. The controller watches the namespaces; while one is
 * being deleted a pass follows every RETRY_MS, so a deleted namespace is gone within a
 * second of its last object.
 */
#include "controllers/controllers.h"

#include <string.h>

#include "codec/json.h"

#define RETRY_MS 200
#define RESYNC_MS 30000
#define EMPTY_PAGE 500 /* names read at a time while a namespace is emptied */

static const kapi_delete_opts background = {.propagation = "Background", .grace = -1};

static const kapi_type *namespace_type(kapi_api *api)
{
    return kapi_registry_namespaces(kapi_api_registry(api));
}

/* True when t is the first namespaced type stored under its storage resource (two
 * served types may share one: core and events.k8s.io Events). */
static bool first_of_storage(const kapi_registry *reg, size_t i)
{
    const kapi_type *t = kapi_registry_at(reg, i);
    if (!t->namespaced || !t->persisted) /* a review (LocalSubjectAccessReview) is never stored */
        return false;
    for (size_t j = 0; j < i; j++) {
        const kapi_type *u = kapi_registry_at(reg, j);
        if (strcmp(u->storage_group, t->storage_group) == 0 &&
            strcmp(u->storage_resource, t->storage_resource) == 0)
            return false;
    }
    return true;
}

/* Deletes the objects of t in ns whose names are names[0..n); false while some remain. */
static bool delete_names(kapi_controller *c, const kapi_type *t, kapi_str ns, const kapi_str *names,
                         size_t n)
{
    kapi_api *api = kapi_controllers__api(c);
    bool empty = true;
    for (size_t i = 0; i < n; i++) {
        bool removed = false;
        if (kapi_controllers__stopping(c))
            return false;
        kapi_error *err = kapi_api_delete(api, &kapi_controllers_user, t, ns, names[i], &background,
                                          NULL, &removed);
        if ((err && err->status != KAPI_STATUS_NOT_FOUND) || (!err && !removed))
            empty = false;
        kapi_error_free(err);
    }
    return empty;
}

/* Deletes every object of t in ns, a page of names at a time (a namespace of any size
 * is emptied in bounded memory); false while some remain. */
static bool empty_type(kapi_controller *c, const kapi_type *t, kapi_str ns)
{
    kapi_api *api = kapi_controllers__api(c);
    bool empty = true, more = true;
    kapi_buf after; /* the last name of the page before */
    kapi_buf_init(&after);
    while (more && !kapi_controllers__stopping(c)) {
        kapi_arena a;
        kapi_str *names;
        size_t n;
        kapi_arena_init(&a);
        kapi_error *err = kapi_api_list_names(api, t, ns, (kapi_str){after.ptr, after.len},
                                              EMPTY_PAGE, &a, &names, &n);
        if (err) {
            empty = more = false;
            kapi_error_free(err);
        } else {
            empty &= delete_names(c, t, ns, names, n);
            more = n == EMPTY_PAGE;
            if (n) {
                kapi_buf_clear(&after);
                kapi_buf_put(&after, names[n - 1].ptr, names[n - 1].len);
            }
        }
        kapi_arena_dispose(&a);
    }
    kapi_buf_dispose(&after);
    return empty && !kapi_controllers__stopping(c);
}

/* Deletes the custom resources in ns of every namespaced CRD; false while some remain. */
static bool empty_custom(kapi_controller *c, kapi_str ns)
{
    kapi_api *api = kapi_controllers__api(c);
    const kapi_type *crdt = kapi_registry_crds(kapi_api_registry(api));
    json_t *crds = NULL, *crd;
    size_t i;
    kapi_error *err = kapi_api_list(api, crdt, KAPI_STR(""), &crds, NULL);
    bool empty = !err;
    kapi_error_free(err);
    json_array_foreach(crds, i, crd)
    {
        const kapi_type *t = NULL;
        const char *scope = kapi_json_path_str(crd, "spec.scope");
        if (!scope || strcmp(scope, "Namespaced") != 0)
            continue;
        err = kapi_controllers__storage_type(api, crd, &t);
        if (t)
            empty &= empty_type(c, t, ns);
        kapi_type_unref(t);
        kapi_error_free(err);
    }
    json_decref(crds);
    return empty;
}

/* Removes "kubernetes" from spec.finalizers of ns (taken) by a write to /finalize. */
static void finalize(kapi_api *api, const kapi_type *nst, json_t *ns)
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
    if (found)
        kapi_error_free(kapi_api_update(api, &kapi_controllers_user, nst, "finalize", ns, NULL));
    else
        json_decref(ns);
}

/* Empties and removes the namespace ns (being deleted). */
static void clean_namespace(kapi_controller *c, const kapi_type *nst, json_t *ns)
{
    kapi_api *api = kapi_controllers__api(c);
    const kapi_registry *reg = kapi_api_registry(api);
    kapi_str name = kapi_controllers__str(ns, "metadata.name");
    bool empty = true;
    for (size_t i = 0; empty && i < kapi_registry_count(reg); i++)
        if (first_of_storage(reg, i))
            empty &= empty_type(c, kapi_registry_at(reg, i), name);
    if (!empty || !empty_custom(c, name) || kapi_controllers__stopping(c))
        return;
    finalize(api, nst, json_incref(ns));
    static const kapi_delete_opts plain = {.grace = -1};
    kapi_error_free(
        kapi_api_delete(api, &kapi_controllers_user, nst, KAPI_STR(""), name, &plain, NULL, NULL));
}

/* Acts on each namespace as its parsed object says (never on a search of its bytes,
 * which a label or an annotation could hold). */
static bool pass(kapi_controller *c)
{
    kapi_api *api = kapi_controllers__api(c);
    const kapi_type *nst = namespace_type(api);
    json_t *items = NULL, *ns;
    size_t i;
    bool waiting = false;
    kapi_error *err = kapi_api_list(api, nst, KAPI_STR(""), &items, NULL);
    kapi_error_free(err);
    json_array_foreach(items, i, ns)
    {
        if (!kapi_json_path(ns, "metadata.deletionTimestamp") || kapi_controllers__stopping(c))
            continue;
        clean_namespace(c, nst, ns);
        waiting = true;
    }
    json_decref(items);
    return waiting;
}

kapi_controller *kapi_namespace_controller_start(kapi_api *api)
{
    const kapi_type *watched[] = {namespace_type(api), NULL};
    return kapi_controllers__start(api, "namespace", watched, RETRY_MS, RESYNC_MS, pass);
}

kapi_error *kapi_namespace_ensure(kapi_api *api, const char *name)
{
    json_t *obj = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                            "metadata", "name", name);
    kapi_error *err =
        kapi_api_create(api, &kapi_api_loopback_user, namespace_type(api), KAPI_STR(""), obj, NULL);
    if (err && err->status == KAPI_STATUS_ALREADY_EXISTS) {
        kapi_error_free(err);
        err = NULL;
    }
    return err;
}
