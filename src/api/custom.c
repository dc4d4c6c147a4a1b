/*
 * api/custom: the api's use of the custom resource types the registry builds from the
 * CRDs in the store (registry.h, "the custom type cache"): the type a request for a
 * resource no built-in type serves names, once its CRD is Established, and the 405 a
 * create gets while the CRD is terminating. A request keeps a reference to its type until it is
 * answered, a watch until it ends, so a CRD update never frees a type in use.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"

kapi_error *kapi_api__custom_type(kapi_req *r, const kapi_type **out)
{
    const kapi_reqinfo *in = &r->info;
    kapi_obj *o = NULL;
    kapi_error *err = NULL;
    kapi_custom_state state = {false, false};
    *out = NULL;
    if (!*in->group || !*in->resource)
        return NULL;
    const char *name = kapi_crd_name(&r->arena, in->group, in->resource);
    kapi_str key = kapi_type_key(&r->arena, kapi_registry_crds(r->api->registry), KAPI_STR(""),
                                 kapi_str_c(name));
    if (kapi_store_get(r->api->store, key, &o) != KAPI_STORE_OK)
        return NULL;
    const kapi_type *t =
        kapi_registry_custom_cached(r->api->registry, name, in->version, o->rev, &state);
    if (!t) {
        json_t *crd = kapi_api__parse_stored(o);
        err = kapi_registry_custom_serving(r->api->registry, crd, o->rev, in->resource, in->version,
                                           &t, &state);
        json_decref(crd);
    }
    kapi_obj_unref(o);
    if (t && !state.served) { /* built for the controllers */
        kapi_type_unref(t);
        t = NULL;
    }
    if (t && state.terminating && strcmp(in->verb, "create") == 0) {
        kapi_type_unref(t);
        t = NULL;
        err = kapi_error_new(KAPI_STATUS_METHOD_NOT_ALLOWED,
                             "create not allowed while custom resource definition is "
                             "terminating");
        kapi_error_details(err, NULL, in->group, in->resource);
    }
    *out = t;
    return err;
}
