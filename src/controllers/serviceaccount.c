/*
 * controllers/serviceaccount: kube-controller-manager's serviceaccounts controller, a
 * client of the api. Every Active namespace has a ServiceAccount named "default": a pass
 * lists the namespaces and creates the account in each Active one that lacks it (a new
 * namespace, or an account someone deleted). An account created meanwhile, or a namespace
 * turned Terminating meanwhile, is no failure, as in kube. The controller watches both
 * namespaces and ServiceAccounts, so a deleted account is back within a pass; a create
 * that failed otherwise is tried again after RETRY_MS.
 */
#include "controllers/controllers.h"

#include <string.h>

#include "codec/json.h"

#define RETRY_MS 1000
#define RESYNC_MS 30000
#define ACCOUNT "default"

/* True when err is one the controller lets be: the account exists, or its namespace is
 * being terminated (the namespace lifecycle's cause). */
static bool harmless(const kapi_error *err)
{
    if (err->status == KAPI_STATUS_ALREADY_EXISTS)
        return true;
    for (size_t i = 0; i < err->ncauses; i++)
        if (strcmp(err->causes[i].reason, "NamespaceTerminating") == 0)
            return true;
    return false;
}

/* Makes sure ns has the default account; false when that failed (try again). */
static bool ensure(kapi_api *api, const kapi_type *sat, kapi_str ns)
{
    json_t *sa = NULL;
    kapi_error *err = kapi_api_get(api, sat, ns, KAPI_STR(ACCOUNT), &sa);
    json_decref(sa);
    if (!err)
        return true;
    bool missing = err->status == KAPI_STATUS_NOT_FOUND;
    kapi_error_free(err);
    if (!missing)
        return false;
    json_t *obj = json_pack("{s:s,s:s,s:{s:s,s:s%}}", "apiVersion", "v1", "kind", "ServiceAccount",
                            "metadata", "name", ACCOUNT, "namespace", ns.ptr, ns.len);
    err = kapi_api_create(api, &kapi_controllers_user, sat, ns, obj, NULL);
    bool ok = !err || harmless(err);
    kapi_error_free(err);
    return ok;
}

static bool pass(kapi_controller *c)
{
    kapi_api *api = kapi_controllers__api(c);
    const kapi_registry *reg = kapi_api_registry(api);
    const kapi_type *sat = kapi_registry_serviceaccounts(reg);
    json_t *items = NULL, *ns;
    size_t i;
    bool waiting = false;
    kapi_error *err = kapi_api_list(api, kapi_registry_namespaces(reg), KAPI_STR(""), &items, NULL);
    if (err) {
        kapi_error_free(err);
        return true;
    }
    json_array_foreach(items, i, ns)
    {
        const char *phase = kapi_json_path_str(ns, "status.phase");
        if (kapi_controllers__stopping(c) || !phase || strcmp(phase, "Active") != 0)
            continue;
        waiting |= !ensure(api, sat, kapi_controllers__str(ns, "metadata.name"));
    }
    json_decref(items);
    return waiting;
}

kapi_controller *kapi_serviceaccount_controller_start(kapi_api *api)
{
    const kapi_registry *reg = kapi_api_registry(api);
    const kapi_type *watched[] = {kapi_registry_namespaces(reg), kapi_registry_serviceaccounts(reg),
                                  NULL};
    return kapi_controllers__start(api, "serviceaccount", watched, RETRY_MS, RESYNC_MS, pass);
}
