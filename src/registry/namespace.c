/*
 * registry/namespace: the strategy of core/v1 Namespaces (kube-apiserver's namespace
 * storage and its NamespaceLifecycle admission for namespaces themselves).
 *
 * A new namespace is Active with the "kubernetes" finalizer in spec.finalizers. Its first
 * delete marks it Terminating; the namespace controller empties it and removes
 * "kubernetes" with a write to /finalize, and the namespace goes once spec.finalizers and
 * metadata.finalizers are both empty.
 */
#include "codec/json.h"
#include "registry/registry_int.h"

/* namespace: phase Active, the "kubernetes" finalizer, the metadata.name label. */
static void namespace_label(json_t *obj)
{
    json_t *meta = kapi_json_object_ensure(obj, "metadata");
    const char *name = kapi_json_path_str(meta, "name");
    json_t *labels = kapi_json_object_ensure(meta, "labels");
    json_object_set_new_nocheck(labels, "kubernetes.io/metadata.name",
                                json_string(name ? name : ""));
}

static void namespace_create(const kapi_type *t, json_t *obj)
{
    (void)t;
    namespace_label(obj);
    json_t *spec = kapi_json_object_ensure(obj, "spec");
    json_t *fin = json_object_get(spec, "finalizers");
    if (!json_is_array(fin)) {
        fin = json_array();
        json_object_set_new_nocheck(spec, "finalizers", fin);
    }
    bool has = false;
    for (size_t i = 0; i < json_array_size(fin); i++)
        has = has || strcmp(json_string_value(json_array_get(fin, i)) ?: "", "kubernetes") == 0;
    if (!has)
        json_array_append_new(fin, json_string_nocheck("kubernetes"));
    json_object_set_new_nocheck(obj, "status", json_pack("{s:s}", "phase", "Active"));
}

static void namespace_update(const kapi_type *t, json_t *obj, const json_t *old)
{
    (void)t;
    namespace_label(obj);
    json_t *spec = kapi_json_object_ensure(obj, "spec");
    json_t *fin = kapi_json_path(old, "spec.finalizers");
    if (fin)
        json_object_set_nocheck(spec, "finalizers", fin);
    else
        json_object_del(spec, "finalizers");
}

/* A status write keeps the spec (done by the pipeline), a finalize write the status; the
 * metadata of both comes from the body, with the metadata.name label (Canonicalize). */
static void namespace_subresource(const kapi_type *t, const char *sub, json_t *obj,
                                  const json_t *old)
{
    (void)t;
    namespace_label(obj);
    if (strcmp(sub, "finalize") != 0)
        return;
    json_t *st = json_object_get(old, "status");
    json_object_del(obj, "status");
    if (st)
        json_object_set_nocheck(obj, "status", st);
}

/* A namespace is held while spec.finalizers has an entry (kube's namespace storage's
 * ShouldDeleteDuringUpdate). */
static bool namespace_finalizing(const kapi_type *t, const json_t *obj)
{
    (void)t;
    return json_array_size(kapi_json_path(obj, "spec.finalizers")) > 0;
}

/* Namespaces kube-apiserver itself needs; they cannot be deleted. */
static kapi_error *namespace_admit(const kapi_type *t, const kapi_hook_ctx *c, kapi_admit_op op,
                                   const json_t *obj)
{
    static const char *const immortal[] = {"default", "kube-system", "kube-public", NULL};
    const char *name = kapi_json_path_str(obj, "metadata.name");
    if (op != KAPI_ADMIT_DELETE || !name || !kapi_cstr_in(name, immortal))
        return NULL;
    kapi_error *err = kapi_error_new(KAPI_STATUS_FORBIDDEN,
                                     "%s \"%s\" is forbidden: this namespace may not be deleted",
                                     kapi_type_resource_name(c->arena, t), name);
    kapi_error_details(err, name, t->group, t->plural);
    return err;
}

/* The namespace's own first phase: Terminating, until the namespace controller has
 * emptied it and removed "kubernetes" from spec.finalizers; a delete meanwhile answers
 * the namespace as it is. */
static kapi_delete_step namespace_before_delete(const kapi_type *t, const kapi_hook_ctx *c,
                                                json_t *obj)
{
    json_t *meta = kapi_json_object_ensure(obj, "metadata");
    (void)t;
    if (json_object_get(meta, "deletionTimestamp"))
        return namespace_finalizing(t, obj) ? KAPI_DELETE_WAIT : KAPI_DELETE_GENERIC;
    c->propagate(c, meta);
    json_object_set_new_nocheck(meta, "deletionTimestamp", json_string(c->now));
    json_object_set_new_nocheck(kapi_json_object_ensure(obj, "status"), "phase",
                                json_string_nocheck("Terminating"));
    return KAPI_DELETE_MARKED;
}

const kapi_type_strategy kapi_registry__namespace_strategy = {
    .name = "namespace",
    .prepare_create = namespace_create,
    .prepare_update = namespace_update,
    .prepare_subresource = namespace_subresource,
    .validate = kapi_registry__validate_namespace,
    .validate_subresource = kapi_registry__validate_namespace_subresource,
    .admit = namespace_admit,
    .before_delete = namespace_before_delete,
    .finalizing = namespace_finalizing,
};
