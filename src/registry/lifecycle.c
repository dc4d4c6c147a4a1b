/*
 * registry/lifecycle: what every type's writes share before and after the type's own
 * hooks: the namespace lifecycle admission (kube-apiserver's NamespaceLifecycle plugin)
 * and when a deleted object may go.
 */
#include "codec/go.h"
#include "codec/json.h"
#include "metrics/metrics.h"
#include "registry/registry_int.h"

/* The namespace lifecycle of a create in ns: the namespace must exist and must not be
 * terminating. Decided on the parsed namespace (small): its bytes may hold the same text
 * elsewhere, e.g. in a managedFields entry's fieldsV1. */
static kapi_error *namespace_open(const kapi_type *t, const kapi_hook_ctx *c, kapi_str ns,
                                  const json_t *obj)
{
    const kapi_type *nst = kapi_registry_namespaces(c->registry);
    json_t *nsobj = c->get(c, nst, KAPI_STR(""), ns);
    kapi_buf q;
    kapi_error *err = NULL;
    if (!nsobj) {
        kapi_buf_init(&q);
        kapi_go_quote(&q, ns.ptr ? ns.ptr : "", ns.len);
        err = kapi_error_new(KAPI_STATUS_NOT_FOUND, "%s %.*s not found",
                             kapi_type_resource_name(c->arena, nst), (int)q.len, q.ptr);
        kapi_buf_dispose(&q);
        kapi_error_details(err, ns.ptr, nst->group, nst->plural);
        return err;
    }
    const char *phase = kapi_json_path_str(nsobj, "status.phase");
    bool terminating = phase && strcmp(phase, "Terminating") == 0;
    json_decref(nsobj);
    if (!terminating)
        return NULL;
    const char *name = kapi_json_path_str(obj, "metadata.name");
    name = name ? name : "";
    err = kapi_error_new(KAPI_STATUS_FORBIDDEN,
                         "%s \"%s\" is forbidden: unable to create new content in namespace %s "
                         "because it is being terminated",
                         kapi_type_resource_name(c->arena, t), name, ns.ptr);
    kapi_error_details(err, name, t->group, t->plural);
    kapi_error_add_cause(err, "NamespaceTerminating", "metadata.namespace",
                         "namespace %s is being terminated", ns.ptr);
    return err;
}

/* kube-apiserver's admission step latency: kapi's one step is mutating ("admit"), the
 * namespace lifecycle (kube's NamespaceLifecycle plugin) and the type's own hook. */
static kapi_metric admission_step = KAPI_METRIC_HISTOGRAM_DEF(
    "apiserver_admission_step_admission_duration_seconds",
    "Admission sub-step latency histogram in seconds, broken out for each operation and API "
    "resource and step type (validate or admit).",
    kapi_metrics_admission_buckets, "type", "operation", "rejected", NULL);
static const char *const admit_ops[] = {
    [KAPI_ADMIT_CREATE] = "CREATE", [KAPI_ADMIT_DELETE] = "DELETE"};

static kapi_error *admit(const kapi_type *t, const kapi_hook_ctx *c, kapi_admit_op op, kapi_str ns,
                         const json_t *obj)
{
    kapi_error *err;
    if (op == KAPI_ADMIT_CREATE && t->namespaced && t->namespace_lifecycle &&
        (err = namespace_open(t, c, ns, obj)) != NULL)
        return err;
    return t->strategy->admit ? t->strategy->admit(t, c, op, obj) : NULL;
}

kapi_error *kapi_type_admit(const kapi_type *t, const kapi_hook_ctx *c, kapi_admit_op op,
                            kapi_str ns, const json_t *obj)
{
    int64_t start = kapi_time_mono_ns();
    kapi_error *err = admit(t, c, op, ns, obj);
    kapi_metrics_observe(&admission_step,
                         (const char *[]){"admit", admit_ops[op], err ? "true" : "false"},
                         (double)(kapi_time_mono_ns() - start) / 1e9);
    return err;
}

bool kapi_type_deletion_done(const kapi_type *t, const json_t *obj)
{
    const json_t *meta = json_object_get(obj, "metadata");
    if (!json_object_get(meta, "deletionTimestamp") ||
        json_array_size(json_object_get(meta, "finalizers")) > 0)
        return false;
    return !t->strategy->finalizing || !t->strategy->finalizing(t, obj);
}
