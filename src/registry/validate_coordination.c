/*
 * registry/validate_coordination: Lease (coordination.k8s.io/v1) as Kubernetes 1.26
 * validates it (pkg/apis/coordination/validation): apimachinery's ObjectMeta rules with a
 * DNS-subdomain name (no core finalizer rule), then, on create and update alike,
 * leaseDurationSeconds greater than 0 and leaseTransitions not negative when set.
 */
#include "registry/registry_int.h"

/* ValidateLeaseSpec: a field left unset (null) is not checked. */
static void lease_spec(kapi_error *err, const json_t *spec)
{
    if (kapi_registry__has(spec, "leaseDurationSeconds") &&
        kapi_registry__int(spec, "leaseDurationSeconds") <= 0)
        kapi_field_invalid_int(err, "spec.leaseDurationSeconds",
                               kapi_registry__int(spec, "leaseDurationSeconds"),
                               "must be greater than 0");
    if (kapi_registry__has(spec, "leaseTransitions"))
        kapi_registry__nonnegative(err, "spec.leaseTransitions",
                                   kapi_registry__int(spec, "leaseTransitions"));
}

void kapi_registry__validate_lease(const kapi_type *t, const json_t *obj, const json_t *old,
                                   kapi_error *err)
{
    kapi_registry__validate_meta(t, obj, old, err);
    lease_spec(err, json_object_get(obj, "spec"));
}
