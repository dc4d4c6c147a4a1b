/*
 * controllers/crd: naming and establishing CustomResourceDefinitions (kube-apiserver's
 * apiextensions naming and establishing controllers).
 *
 * A CRD that is not yet Established gets its spec.names as status.acceptedNames and the
 * NamesAccepted and Established conditions, True. Name conflicts between CRDs are not
 * checked yet: a CRD's names are accepted as they are.
 *
 * A deleted CRD (its cleanup finalizer set by the delete) has its custom resources
 * deleted, each waiting for its own finalizers, as the apiextensions finalizer controller
 * does; once none is left the finalizer goes, and with it the CRD.
 */
#include <string.h>

#include "api/api_int.h"
#include "controllers/controllers.h"

#define PASS_INTERVAL_MS 100

/* Gives crd (parsed from o, not Established, not being deleted) its names and
 * conditions. */
static void establish(kapi_api *api, const kapi_type *t, kapi_obj *o, json_t *crd)
{
    kapi_arena a;
    kapi_arena_init(&a);
    const char *now = kapi_api__now(&a);
    json_t *status = kapi_json_object_ensure(crd, "status");
    json_t *names = json_deep_copy(kapi_json_path(crd, "spec.names"));
    json_object_set_new(status, "acceptedNames", names ? names : json_object());
    kapi_api__crd_set_condition(crd, "NamesAccepted", "NoConflicts", "no conflicts found", now);
    kapi_api__crd_set_condition(crd, "Established", "InitialNamesAccepted",
                                "the initial names have been accepted", now);
    kapi_obj *out = NULL;
    kapi_error_free(kapi_api__store_write(api, &a, t, crd, KAPI_STORE_UPDATE, o->rev, &out, NULL));
    kapi_obj_unref(out);
    kapi_arena_dispose(&a);
}

/* Deletes the custom resources of crd; true when none is left. */
static bool delete_instances(kapi_api *api, kapi_arena *a, const kapi_obj *o, const json_t *crd)
{
    static const kapi_delete_opts background = {.propagation = "Background", .grace = -1};
    const kapi_type *t = NULL;
    kapi_error *err = kapi_registry_custom_storage_type(api->registry, crd, o->rev, &t);
    if (err) {
        kapi_error_free(err);
        return true; /* a CRD that never served has no instances */
    }
    kapi_store_list_result l;
    kapi_store_list_opts q = {.prefix = kapi_type_key(a, t, KAPI_STR(""), KAPI_STR(""))};
    bool empty = false;
    if (kapi_store_list(api->store, &q, &l) == KAPI_STORE_OK) {
        empty = l.n == 0;
        for (size_t i = 0; i < l.n; i++) {
            kapi_str ns, name; /* by length: a name may hold a NUL */
            kapi_type_key_parse(t, kapi_obj_key(l.items[i]), &ns, &name);
            json_t *out = NULL;
            bool removed;
            kapi_error_free(kapi_api__delete(api, a, t, ns, name, &background, &out, &removed));
            json_decref(out);
        }
        kapi_store_list_dispose(&l);
    }
    kapi_type_release(t);
    return empty;
}

/* crd (parsed from o) is being deleted: its custom resources go, then its cleanup
 * finalizer. */
static void clean_up(kapi_api *api, const kapi_type *t, kapi_obj *o, json_t *crd)
{
    json_t *fins = kapi_json_path(crd, "metadata.finalizers");
    size_t at = json_array_size(fins);
    for (size_t i = 0; i < json_array_size(fins); i++)
        if (strcmp(json_string_value(json_array_get(fins, i)) ?: "", KAPI_CRD_CLEANUP) == 0)
            at = i;
    kapi_arena a;
    kapi_arena_init(&a);
    if (at < json_array_size(fins) && delete_instances(api, &a, o, crd)) {
        json_array_remove(fins, at);
        json_t *gone = NULL;
        kapi_obj *out = NULL;
        kapi_error *err =
            kapi_api__deletion_done(crd)
                ? kapi_api__finish_deletion(api, &a, t, kapi_obj_key(o), o->rev, false, crd, &gone)
                : kapi_api__store_write(api, &a, t, crd, KAPI_STORE_UPDATE, o->rev, &out, NULL);
        kapi_error_free(err);
        kapi_obj_unref(out);
        json_decref(gone);
    }
    kapi_arena_dispose(&a);
}

/* Acts on one CRD as its parsed object says (never on a search of its bytes, which a
 * label or an annotation could hold). */
static void reconcile(kapi_api *api, const kapi_type *t, kapi_obj *o)
{
    json_t *crd = kapi_api__parse_stored(o);
    if (kapi_json_path(crd, "metadata.deletionTimestamp"))
        clean_up(api, t, o, crd);
    else if (!kapi_crd_condition(crd, "Established"))
        establish(api, t, o, crd);
    json_decref(crd);
}

static void pass(kapi_api *api)
{
    const kapi_type *t = kapi_registry_crds(api->registry);
    kapi_store_list_result l;
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_store_list_opts q = {.prefix = kapi_type_key(&a, t, KAPI_STR(""), KAPI_STR(""))};
    if (kapi_store_list(api->store, &q, &l) == KAPI_STORE_OK) {
        for (size_t i = 0; i < l.n; i++)
            reconcile(api, t, l.items[i]);
        kapi_store_list_dispose(&l);
    }
    kapi_arena_dispose(&a);
}

kapi_controller *kapi_crd_controller_start(kapi_api *api)
{
    return kapi_controllers__start(api, "crd", PASS_INTERVAL_MS, pass);
}
