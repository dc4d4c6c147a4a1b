/*
 * registry/validate_authentication: TokenReview (authentication.k8s.io/v1) as Kubernetes
 * 1.26's REST Create checks a body before asking the authenticators: a BadRequest when
 * spec.token is empty, and nothing else (its metadata is not looked at).
 * SelfSubjectReview has nothing to check.
 */
#include "registry/registry_int.h"

void kapi_registry__validate_tokenreview(const kapi_type *t, const json_t *obj, const json_t *old,
                                         kapi_error *err)
{
    (void)t;
    (void)old;
    if (!*kapi_registry__str(json_object_get(obj, "spec"), "token"))
        kapi_registry__refuse(err, KAPI_STATUS_BAD_REQUEST,
                              "token is required for TokenReview in authentication");
}
