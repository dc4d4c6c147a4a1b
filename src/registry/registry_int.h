/*
 * registry internals shared by the files of src/registry: the validate hooks of the
 * strategies (validate_*.c), the pod template rules the batch types share, resource
 * quantities, and JSON accessors that read a member the way Go reads a decoded field
 * (missing, null or of another type gives the zero value).
 *
 * The validators take the kapi_error the causes go to and an arena for the paths; they
 * never keep either.
 */
#ifndef KAPI_REGISTRY_INT_H
#define KAPI_REGISTRY_INT_H

#include <string.h>

#include "registry/registry.h"
#include "schema/field.h"
#include "schema/quantity.h"

/* ---- Go's view of a JSON member ---- */

/* The string member key of o, "" when it is not a string. */
static inline const char *kapi_registry__str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* True when o has member key and it is not null (a set pointer in Go). */
static inline bool kapi_registry__has(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return v && !json_is_null(v);
}

/* The integer member key of o, 0 when it is not an integer. */
static inline long long kapi_registry__int(const json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

/* ---- registry.c ---- */

/* Fills t from a type file's contents (def, which t keeps); name names it in errors.
 * Custom resource types are made from a def built from their CRD. */
kapi_error *kapi_registry__load_type(kapi_type *t, const char *name, json_t *def);
/* Gives t its field-ownership facts (registry/fields.c): its merge type made in ts
 * (ObjectMeta as object_meta for a custom type), its reset sets in a, its zero value. */
void kapi_registry__type_fields(kapi_type *t, kapi_smd_types *ts, const kapi_smd_type *object_meta,
                                kapi_arena *a);
/* The merge type of ObjectMeta, which custom types share. */
const kapi_smd_type *kapi_registry__object_meta(const kapi_registry *r);
/* Frees what kapi_registry__load_type allocated (not t itself). */
void kapi_registry__type_dispose(kapi_type *t);

/* ---- cache.c: the custom type cache ---- */

typedef struct kapi_custom_cache kapi_custom_cache;
kapi_custom_cache *kapi_registry__cache_new(void);
/* Drops the cache's hold on every type. NULL is allowed. */
void kapi_registry__cache_free(kapi_custom_cache *c);
/* The cache of r (registry.c): the mutable part of a registry. */
kapi_custom_cache *kapi_registry__cache(const kapi_registry *r);

/* ---- custom.c: custom resources ---- */

/* The verbs of a custom resource and of its status and scale subresources, in
 * discovery's order (NULL-terminated). */
extern const char *const kapi_registry__custom_verbs[];
extern const char *const kapi_registry__custom_subresource_verbs[];
/* The name of crd's storage version (borrowed), or NULL when it has none. */
const char *kapi_registry__crd_storage_version(const json_t *crd);

extern const kapi_type_strategy kapi_registry__namespace_strategy; /* registry/namespace.c */
extern const kapi_type_strategy kapi_registry__crd_strategy;       /* registry/crd.c */
/* A CRD of one version, and a version of a CRD of several (its objects converted on the
 * way in and out: they may be stored in any of its versions). */
extern const kapi_type_strategy kapi_registry__custom_strategy;
extern const kapi_type_strategy kapi_registry__custom_converting_strategy;

/* ---- conversion.c: conversion webhooks ---- */

/* One call of a conversion webhook. */
typedef struct kapi_conversion_call {
    const char *gv;      /* the apiVersion wanted */
    const char *version; /* the ConversionReview's: "v1" or "v1beta1" */
    char uid[37];        /* the request's */
    size_t *sent;        /* the indexes of the objects sent */
    size_t nsent;
} kapi_conversion_call;

/* Converts those of objs[0..n) not of apiVersion gv to it through the conversion webhook
 * of t's CRD, in one ConversionReview; converted[i] tells which were. A converted object
 * is checked and carries the original's metadata with the webhook's labels and
 * annotations; the caller prunes and defaults it. NULL, or kube's 500 naming the webhook
 * (then no object is replaced). */
kapi_error *kapi_registry__webhook_convert(const kapi_type *t, const char *gv, json_t **objs,
                                           size_t n, bool *converted);
/* The reading of webhook answer a to call: replaces the objects sent (objs[call->sent[k]])
 * by the converted ones and sets converted[] for them; NULL, or the 500 (nothing
 * replaced). */
kapi_error *kapi_registry__conversion_answer(const kapi_conversion_call *call,
                                             const kapi_webhook_answer *a, json_t **objs,
                                             bool *converted);

/* ---- printers.c ---- */

/* Loads t->columns from def's "printerColumns" (t->builtin set): a built-in type's own
 * columns, or kube's default table when absent; a custom resource's CRD
 * additionalPrinterColumns after a Name column (an Age column when there are none). The
 * full list is written back into def; name names the type file in errors. */
kapi_error *kapi_registry__load_columns(kapi_type *t, const char *name, json_t *def);
/* Frees what kapi_registry__load_columns allocated. */
void kapi_registry__free_columns(kapi_type *t);

/* ---- validate.c ---- */

/* The metadata rules of a built-in type from its file's "nameRule" (label, subdomain,
 * dns1035, rbac; subdomain when absent), with core's finalizer rule when kube is set. */
void kapi_registry__meta_rules(const kapi_type *t, bool kube, kapi_meta_rules *out);
/* apimachinery's ObjectMeta rules for obj (old: an update's), the name by t's rule and no
 * core finalizer rule: all a type without its own validation checks. */
void kapi_registry__validate_meta(const kapi_type *t, const json_t *obj, const json_t *old,
                                  kapi_error *err);
/* The same with core's rules when kube is set (kapi_registry__meta_rules, and the update
 * checks as ValidateObjectMetaUpdate with them): the start of most built-in validators. */
void kapi_registry__validate_meta_as(const kapi_type *t, const json_t *obj, const json_t *old,
                                     bool kube, kapi_error *err);
/* field.Invalid(path, v, "must be greater than or equal to 0") when v < 0. */
void kapi_registry__nonnegative(kapi_error *err, const char *path, long long v);
/* Makes err, the 422 a validate hook adds its causes to, the error that refuses the
 * object outright instead (kube's BadRequest from a REST Create before it validates):
 * status and message, answered as they are. */
void kapi_registry__refuse(kapi_error *err, kapi_status status, const char *message);

/* ---- the validate hooks of the strategies ---- */

/* validate_pod.c: ValidateResourceQuantityValue of the quantity v (a JSON string or number)
 * of resource name at path; nothing when v is no quantity (the decoder refuses those). */
void kapi_registry__resource_quantity(kapi_error *err, const char *name, const json_t *v,
                                      const char *path);
/* validate_node.c: Node (core/v1), ValidateNode and ValidateNodeUpdate; a /status write
 * is checked by ValidateNodeUpdate alone. */
void kapi_registry__validate_node(const kapi_type *t, const json_t *obj, const json_t *old,
                                  kapi_error *err);
void kapi_registry__validate_node_status(const kapi_type *t, const char *sub, const json_t *obj,
                                         const json_t *old, kapi_error *err);
/* validate_batch.c: CronJob (batch/v1). */
void kapi_registry__validate_cronjob(const kapi_type *t, const json_t *obj, const json_t *old,
                                     kapi_error *err);
void kapi_registry__cronjob_warnings(const kapi_type *t, const json_t *obj, const json_t *old,
                                     void (*warn)(void *ctx, const char *text), void *ctx);
/* validate_batch.c: Job (batch/v1), ValidateJob and ValidateJobUpdate. */
void kapi_registry__validate_job(const kapi_type *t, const json_t *obj, const json_t *old,
                                 kapi_error *err);
/* ValidateJobUpdateStatus, a Job's /status write. */
void kapi_registry__validate_job_status(const kapi_type *t, const char *sub, const json_t *obj,
                                        const json_t *old, kapi_error *err);
/* validate_networking.c: ClusterCIDR (networking.k8s.io/v1alpha1). */
void kapi_registry__validate_clustercidr(const kapi_type *t, const json_t *obj, const json_t *old,
                                         kapi_error *err);
/* validate_rbac.c: Role and ClusterRole (rbac.authorization.k8s.io/v1), then
 * RoleBinding and ClusterRoleBinding; the type's scope picks the rules of each pair. */
void kapi_registry__validate_role(const kapi_type *t, const json_t *obj, const json_t *old,
                                  kapi_error *err);
void kapi_registry__validate_binding(const kapi_type *t, const json_t *obj, const json_t *old,
                                     kapi_error *err);
/* validate_coordination.c: Lease (coordination.k8s.io/v1). */
void kapi_registry__validate_lease(const kapi_type *t, const json_t *obj, const json_t *old,
                                   kapi_error *err);
/* validate_events.c: Event, core/v1 and events.k8s.io/v1 (each with its own rules). */
void kapi_registry__validate_event(const kapi_type *t, const json_t *obj, const json_t *old,
                                   kapi_error *err);
/* strategies.c: the member of an events.k8s.io/v1 Event ev that its core/v1 view holds as
 * core_name (borrowed), or NULL for an empty one (absent, null, "", 0), which that view
 * leaves out or holds at its zero value: a member read as Go reads a zero value reads
 * the same as in the view, which need not be made. */
const json_t *kapi_registry__event_member(const json_t *ev, const char *core_name);
/* validate_core.c: Namespace. */
void kapi_registry__validate_namespace(const kapi_type *t, const json_t *obj, const json_t *old,
                                       kapi_error *err);
/* validate_core.c: ServiceAccount. */
void kapi_registry__validate_serviceaccount(const kapi_type *t, const json_t *obj,
                                            const json_t *old, kapi_error *err);
/* validate_core.c: a Namespace's status and finalize writes (ValidateNamespaceStatusUpdate,
 * ValidateNamespaceFinalizeUpdate). */
void kapi_registry__validate_namespace_subresource(const kapi_type *t, const char *sub,
                                                   const json_t *obj, const json_t *old,
                                                   kapi_error *err);
/* validate_core.c: core's ValidateNodeSelector (terms, requirements on labels and on the
 * metadata.name field). */
void kapi_registry__validate_node_selector(kapi_error *err, kapi_arena *a, const json_t *ns,
                                           const char *path);
/* The Go type of a core.NodeSelector, for %#v in messages. */
extern const kapi_gotype kapi_registry__go_node_selector;

/* validate_apiextensions.c: CustomResourceDefinition (apiextensions.k8s.io/v1). */
void kapi_registry__validate_crd(const kapi_type *t, const json_t *obj, const json_t *old,
                                 kapi_error *err);

/* validate_authorization.c: the access reviews (authorization.k8s.io/v1), on create only:
 * SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview,
 * SelfSubjectRulesReview. */
void kapi_registry__validate_sar(const kapi_type *t, const json_t *obj, const json_t *old,
                                 kapi_error *err);
void kapi_registry__validate_self_sar(const kapi_type *t, const json_t *obj, const json_t *old,
                                      kapi_error *err);
void kapi_registry__validate_local_sar(const kapi_type *t, const json_t *obj, const json_t *old,
                                       kapi_error *err);
void kapi_registry__validate_self_srr(const kapi_type *t, const json_t *obj, const json_t *old,
                                      kapi_error *err);
/* validate_authentication.c: TokenReview (authentication.k8s.io/v1), on create only. */
void kapi_registry__validate_tokenreview(const kapi_type *t, const json_t *obj, const json_t *old,
                                         kapi_error *err);

/* validate_core.c: metav1validation.ValidateLabelSelector of sel at path (bad values
 * allowed: AllowInvalidLabelValueInSelector). */
void kapi_registry__validate_label_selector(kapi_error *err, kapi_arena *a, const json_t *sel,
                                            bool bad_values_allowed, const char *path);
/* True when metav1.LabelSelectorAsSelector refuses sel: exactly when the strict
 * ValidateLabelSelector finds something. */
bool kapi_registry__label_selector_refused(kapi_arena *a, const json_t *sel);
/* LabelSelectorHasInvalidLabelValue: a matchExpressions value is no label value. */
bool kapi_registry__label_selector_bad_values(const json_t *sel);

/* validate_pod.c: core's ValidatePodTemplateSpec of a pod template (metadata labels and
 * annotations, then the pod spec) at path, reading every defaulted field as its default
 * when absent (so the answer is the same before and after defaulting). */
void kapi_registry__validate_pod_template(kapi_error *err, kapi_arena *a, const json_t *tmpl,
                                          const char *path);

#endif
