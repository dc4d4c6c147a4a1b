/*
 * registry/crd: the strategy of apiextensions.k8s.io/v1 CustomResourceDefinitions
 * (apiextensions-apiserver's CRD storage), and the conditions the CRD controller and the
 * custom type cache read.
 *
 * A CRD's first delete marks it (deletionTimestamp, the cleanup finalizer, the
 * Terminating condition); the CRD controller removes its custom resources, then the
 * finalizer, and with it the CRD.
 */
#include "codec/json.h"
#include "registry/registry_int.h"

/* customresourcedefinition: status starts with no conditions and the storage version. */
static void crd_create(const kapi_type *t, json_t *obj)
{
    (void)t;
    json_t *stored = json_array();
    json_t *versions = kapi_json_path(obj, "spec.versions");
    for (size_t i = 0; i < json_array_size(versions); i++) {
        json_t *v = json_array_get(versions, i);
        if (json_is_true(json_object_get(v, "storage")) && json_object_get(v, "name")) {
            json_array_append(stored, json_object_get(v, "name"));
            break; /* the first storage version, as Kubernetes' PrepareForCreate */
        }
    }
    json_object_set_new_nocheck(obj, "status",
                                json_pack("{s:n,s:{s:s,s:s},s:o}", "conditions", "acceptedNames",
                                          "plural", "", "kind", "", "storedVersions", stored));
}

/* customresourcedefinition on update (status is already the stored one): a new storage
 * version joins status.storedVersions, as 1.26's PrepareForUpdate adds it. */
static void crd_update(const kapi_type *t, json_t *obj, const json_t *old)
{
    (void)t;
    (void)old;
    const char *storage = kapi_registry__crd_storage_version(obj);
    if (!storage)
        return;
    json_t *status = kapi_json_object_ensure(obj, "status");
    json_t *stored = json_object_get(status, "storedVersions");
    if (!json_is_array(stored)) {
        stored = json_array();
        json_object_set_new_nocheck(status, "storedVersions", stored);
    }
    size_t i;
    json_t *each;
    json_array_foreach(stored, i, each)
    {
        if (strcmp(json_string_value(each) ?: "", storage) == 0)
            return;
    }
    json_array_append_new(stored, json_string(storage));
}

/* A CRD's status write keeps its labels, annotations and owners too (1.26's
 * statusStrategy.PrepareForUpdate); finalizers may change. */
static void crd_subresource(const kapi_type *t, const char *sub, json_t *obj, const json_t *old)
{
    static const char *const kept[] = {"labels", "annotations", "ownerReferences"};
    (void)t;
    (void)sub;
    kapi_json_keep(kapi_json_object_ensure(obj, "metadata"), json_object_get(old, "metadata"), kept,
                   KAPI_ARRAY_LEN(kept));
}

/* A condition of crd by type, or NULL. */
static json_t *find_condition(const json_t *crd, const char *type)
{
    size_t i;
    json_t *each;
    json_array_foreach(kapi_json_path(crd, "status.conditions"), i, each)
    {
        const char *ct = kapi_json_path_str(each, "type");
        if (ct && strcmp(ct, type) == 0)
            return each;
    }
    return NULL;
}

const char *kapi_crd_condition_status(const json_t *crd, const char *type)
{
    const char *st = kapi_json_path_str(find_condition(crd, type), "status");
    return st ? st : "";
}

void kapi_crd_set_condition(json_t *crd, const char *type, const char *status, const char *reason,
                            const char *message, const char *now)
{
    json_t *conds = kapi_json_path(crd, "status.conditions");
    if (!json_is_array(conds)) {
        conds = json_array();
        json_object_set_new_nocheck(kapi_json_object_ensure(crd, "status"), "conditions", conds);
    }
    json_t *c = find_condition(crd, type);
    if (!c) {
        c = json_object();
        json_array_append_new(conds, c);
    }
    const char *st = kapi_json_path_str(c, "status");
    bool same = st && strcmp(st, status) == 0;
    json_t *when = json_incref(json_object_get(c, "lastTransitionTime"));
    json_object_clear(c);
    json_object_set_new_nocheck(c, "type", json_string(type));
    json_object_set_new_nocheck(c, "status", json_string(status));
    json_object_set_new_nocheck(c, "lastTransitionTime", same && when ? when : json_string(now));
    if (!(same && when))
        json_decref(when);
    json_object_set_new_nocheck(c, "reason", json_string(reason));
    json_object_set_new_nocheck(c, "message", json_string(message));
}

void kapi_crd_remove_condition(json_t *crd, const char *type)
{
    json_t *conds = kapi_json_path(crd, "status.conditions");
    for (size_t i = json_array_size(conds); i-- > 0;)
        if (strcmp(kapi_json_path_str(json_array_get(conds, i), "type") ?: "", type) == 0)
            json_array_remove(conds, i);
}

bool kapi_crd_condition(const json_t *crd, const char *type)
{
    return strcmp(kapi_crd_condition_status(crd, type), "True") == 0;
}

/* Apiextensions' REST Delete: the first delete marks the CRD, the CRD controller does the
 * rest. */
static kapi_delete_step crd_before_delete(const kapi_type *t, const kapi_hook_ctx *c, json_t *obj)
{
    json_t *meta = kapi_json_object_ensure(obj, "metadata");
    (void)t;
    if (json_object_get(meta, "deletionTimestamp"))
        return KAPI_DELETE_GENERIC;
    json_object_set_new_nocheck(meta, "deletionTimestamp", json_string(c->now));
    json_t *fins = json_object_get(meta, "finalizers");
    if (!json_is_array(fins)) {
        fins = json_array();
        json_object_set_new_nocheck(meta, "finalizers", fins);
    }
    bool has = false;
    for (size_t i = 0; i < json_array_size(fins); i++)
        has =
            has || strcmp(json_string_value(json_array_get(fins, i)) ?: "", KAPI_CRD_CLEANUP) == 0;
    if (!has)
        json_array_append_new(fins, json_string(KAPI_CRD_CLEANUP));
    kapi_crd_set_condition(obj, "Terminating", "True", "InstanceDeletionPending",
                           "CustomResourceDefinition marked for deletion; CustomResource "
                           "deletion will begin soon",
                           c->now);
    return KAPI_DELETE_MARKED;
}

const kapi_type_strategy kapi_registry__crd_strategy = {
    .name = "customresourcedefinition",
    .prepare_create = crd_create,
    .prepare_update = crd_update,
    .prepare_subresource = crd_subresource,
    .validate = kapi_registry__validate_crd,
    .before_delete = crd_before_delete,
};
