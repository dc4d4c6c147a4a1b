/*
 * controllers/crd: naming and establishing CustomResourceDefinitions (kube-apiserver's
 * apiextensions naming and establishing controllers), and their deletion (its finalizer
 * controller), a client of the api.
 *
 * A CRD that is not yet Established gets its spec.names as status.acceptedNames and the
 * NamesAccepted and Established conditions, True, by a /status write. Name conflicts
 * between CRDs are not checked yet: a CRD's names are accepted as they are.
 *
 * A deleted CRD (its cleanup finalizer set by the delete) has its custom resources
 * deleted, each waiting for its own finalizers; once none is left the finalizer goes (a
 * /status write, as the apiextensions finalizer controller's UpdateStatus), and with it
 * the CRD. The controller watches the CRDs; while one waits for its custom resources a
 * pass follows every RETRY_MS.
 *
 * These controllers are kube-apiserver's own, so their writes are its loopback client's
 * (kapi_api_loopback_user, recorded in managedFields as "kube-apiserver"), not
 * kube-controller-manager's.
 */
#include <string.h>

#include "codec/json.h"
#include "controllers/controllers.h"

#define RETRY_MS 100
#define RESYNC_MS 30000

static const kapi_type *crd_type(kapi_api *api)
{
    return kapi_registry_crds(kapi_api_registry(api));
}

/* Gives crd (taken; not Established, not being deleted) its names and conditions. */
static void establish(kapi_api *api, const kapi_type *t, json_t *crd)
{
    char buf[32];
    const char *now = kapi_time_rfc3339(buf, kapi_time_now_ns() / 1000000000);
    json_t *status = kapi_json_object_ensure(crd, "status");
    json_t *names = kapi_json_copy(kapi_json_path(crd, "spec.names"));
    json_object_set_new_nocheck(status, "acceptedNames", names ? names : json_object());
    kapi_crd_set_condition(crd, "NamesAccepted", "NoConflicts", "no conflicts found", now);
    kapi_crd_set_condition(crd, "Established", "InitialNamesAccepted",
                           "the initial names have been accepted", now);
    kapi_error_free(kapi_api_update(api, &kapi_api_loopback_user, t, "status", crd, NULL));
}

/* Deletes the custom resources of crd; true when none is left. */
static bool delete_instances(kapi_controller *c, const json_t *crd)
{
    static const kapi_delete_opts background = {.propagation = "Background", .grace = -1};
    kapi_api *api = kapi_controllers__api(c);
    const kapi_type *t = NULL;
    json_t *items = NULL, *item;
    size_t i;
    kapi_error *err = kapi_controllers__storage_type(api, crd, &t);
    if (err) {
        kapi_error_free(err);
        return true; /* a CRD that never served has no instances */
    }
    err = kapi_api_list(api, t, KAPI_STR(""), &items, NULL);
    bool empty = !err && json_array_size(items) == 0;
    kapi_error_free(err);
    json_array_foreach(items, i, item)
    {
        if (kapi_controllers__stopping(c))
            break;
        kapi_error_free(kapi_api_delete(
            api, &kapi_api_loopback_user, t, kapi_controllers__str(item, "metadata.namespace"),
            kapi_controllers__str(item, "metadata.name"), &background, NULL, NULL));
    }
    json_decref(items);
    kapi_type_unref(t);
    return empty;
}

/* crd (taken; being deleted): its custom resources go, then its cleanup finalizer. */
static void clean_up(kapi_controller *c, const kapi_type *t, json_t *crd)
{
    json_t *fins = kapi_json_path(crd, "metadata.finalizers");
    size_t at = json_array_size(fins);
    for (size_t i = 0; i < json_array_size(fins); i++)
        if (strcmp(json_string_value(json_array_get(fins, i)) ?: "", KAPI_CRD_CLEANUP) == 0)
            at = i;
    if (at < json_array_size(fins) && delete_instances(c, crd)) {
        json_array_remove(fins, at);
        kapi_error_free(kapi_api_update(kapi_controllers__api(c), &kapi_api_loopback_user, t,
                                        "status", json_incref(crd), NULL));
    }
    json_decref(crd);
}

/* Acts on each CRD as its parsed object says (never on a search of its bytes, which a
 * label or an annotation could hold). */
static bool pass(kapi_controller *c)
{
    kapi_api *api = kapi_controllers__api(c);
    const kapi_type *t = crd_type(api);
    json_t *items = NULL, *crd;
    size_t i;
    bool waiting = false;
    kapi_error_free(kapi_api_list(api, t, KAPI_STR(""), &items, NULL));
    json_array_foreach(items, i, crd)
    {
        if (kapi_controllers__stopping(c))
            break;
        if (kapi_json_path(crd, "metadata.deletionTimestamp")) {
            clean_up(c, t, json_incref(crd));
            waiting = true;
        } else if (!kapi_crd_condition(crd, "Established")) {
            establish(api, t, json_incref(crd));
        }
    }
    json_decref(items);
    return waiting;
}

kapi_controller *kapi_crd_controller_start(kapi_api *api)
{
    const kapi_type *watched[] = {crd_type(api), NULL};
    return kapi_controllers__start(api, "crd", watched, RETRY_MS, RESYNC_MS, pass);
}
