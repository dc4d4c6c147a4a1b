/*
 * registry/validate_authorization: the access reviews of authorization.k8s.io/v1 as
 * Kubernetes 1.26's REST Create of each checks a body before asking the authorizer.
 *
 * SubjectAccessReview, SelfSubjectAccessReview and LocalSubjectAccessReview: exactly one
 * of spec.resourceAttributes and spec.nonResourceAttributes; a user or a group when the
 * review names its subject; metadata empty (a LocalSubjectAccessReview's but for its
 * namespace, which its resourceAttributes.namespace must repeat, and it may not ask about
 * a non-resource path). SelfSubjectRulesReview: a BadRequest without spec.namespace.
 *
 * The metadata is read as kube's create handler leaves it before the review sees it: the
 * fields it wipes (uid, selfLink, creationTimestamp, deletionTimestamp,
 * deletionGracePeriodSeconds) and a cluster-scoped review's namespace are zero, whatever
 * the body had; managedFields, which the field manager has filled, do not count. A
 * refused metadata is shown as Go's %#v of the v1.ObjectMeta, with two differences no
 * client can see through: a pointer's address is fixed, and a managedFields time has no
 * fraction of a second.
 */
#include "registry/registry_int.h"

static const kapi_gofield non_resource_fields[] = {
    {"Path", "path", KAPI_GO_STRING, NULL, NULL},
    {"Verb", "verb", KAPI_GO_STRING, NULL, NULL},
};
/* The internal type the reviews' messages print. */
static const kapi_gotype non_resource_attributes = {"authorization.NonResourceAttributes",
                                                    non_resource_fields,
                                                    KAPI_ARRAY_LEN(non_resource_fields)};

/* field.Invalid(path, nonResourceAttributes, detail): the struct shown with %#v. */
static void invalid_non_resource(kapi_error *err, const char *path, const json_t *nra,
                                 const char *detail)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_gofmt(&b, &non_resource_attributes, nra);
    kapi_field_invalid_raw(err, path, b.ptr, "%s", detail);
    kapi_buf_dispose(&b);
}

/* ValidateSubjectAccessReviewSpec (subject set) or ValidateSelfSubjectAccessReviewSpec. */
static void review_spec(kapi_error *err, const json_t *spec, bool subject)
{
    bool ra = kapi_registry__has(spec, "resourceAttributes");
    bool nra = kapi_registry__has(spec, "nonResourceAttributes");
    if (ra && nra)
        invalid_non_resource(err, "spec.nonResourceAttributes",
                             json_object_get(spec, "nonResourceAttributes"),
                             "cannot be specified in combination with resourceAttributes");
    if (!ra && !nra) /* the value shown is the nil nonResourceAttributes */
        kapi_field_invalid_json(err, "spec.resourceAttributes", NULL,
                                "exactly one of nonResourceAttributes or resourceAttributes "
                                "must be specified");
    if (subject && !*kapi_registry__str(spec, "user") &&
        json_array_size(json_object_get(spec, "groups")) == 0)
        kapi_field_invalid_str(err, "spec.user", kapi_registry__str(spec, "user"),
                               "at least one of user or group must be specified");
}

/* The review's ObjectMeta as its REST Create sees it (a new reference): what the create
 * handler wipes left out, and the namespace too when the review is cluster-scoped. */
static json_t *meta_seen(const kapi_type *t, const json_t *obj)
{
    static const char *const wiped[] = {"uid", "selfLink", "creationTimestamp", "deletionTimestamp",
                                        "deletionGracePeriodSeconds"};
    const json_t *meta = json_object_get(obj, "metadata");
    json_t *seen = json_is_object(meta) ? json_copy((json_t *)meta) : json_object();
    for (size_t i = 0; i < KAPI_ARRAY_LEN(wiped); i++)
        json_object_del(seen, wiped[i]);
    if (!t->namespaced)
        json_object_del(seen, "namespace");
    return seen;
}

/* field.Invalid(metadata, ObjectMeta, detail) unless the metadata is empty, managedFields
 * and (with except_namespace) the namespace aside. */
static void empty_meta(kapi_error *err, const kapi_type *t, const json_t *obj,
                       bool except_namespace, const char *detail)
{
    json_t *seen = meta_seen(t, obj);
    const char *key;
    json_t *v;
    bool empty = true;
    json_object_foreach(seen, key, v)
    {
        bool ignored = strcmp(key, "managedFields") == 0 ||
                       (except_namespace && strcmp(key, "namespace") == 0);
        empty = empty && (ignored || json_is_null(v) || kapi_schema_go_zero(v));
    }
    if (!empty) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_gofmt(&b, &kapi_go_object_meta, seen);
        kapi_field_invalid_raw(err, "metadata", b.ptr, "%s", detail);
        kapi_buf_dispose(&b);
    }
    json_decref(seen);
}

void kapi_registry__validate_sar(const kapi_type *t, const json_t *obj, const json_t *old,
                                 kapi_error *err)
{
    (void)old;
    review_spec(err, json_object_get(obj, "spec"), true);
    empty_meta(err, t, obj, false, "must be empty");
}

void kapi_registry__validate_self_sar(const kapi_type *t, const json_t *obj, const json_t *old,
                                      kapi_error *err)
{
    (void)old;
    review_spec(err, json_object_get(obj, "spec"), false);
    empty_meta(err, t, obj, false, "must be empty");
}

void kapi_registry__validate_local_sar(const kapi_type *t, const json_t *obj, const json_t *old,
                                       kapi_error *err)
{
    (void)old;
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *ra = json_object_get(spec, "resourceAttributes");
    const char *ns = kapi_registry__str(json_object_get(obj, "metadata"), "namespace");
    review_spec(err, spec, true);
    empty_meta(err, t, obj, true, "must be empty except for namespace");
    if (kapi_registry__has(spec, "resourceAttributes") &&
        strcmp(kapi_registry__str(ra, "namespace"), ns) != 0)
        kapi_field_invalid_str(err, "spec.resourceAttributes.namespace",
                               kapi_registry__str(ra, "namespace"),
                               "must match metadata.namespace");
    if (kapi_registry__has(spec, "nonResourceAttributes"))
        invalid_non_resource(err, "spec.nonResourceAttributes",
                             json_object_get(spec, "nonResourceAttributes"),
                             "disallowed on this kind of request");
}

void kapi_registry__validate_self_srr(const kapi_type *t, const json_t *obj, const json_t *old,
                                      kapi_error *err)
{
    (void)t;
    (void)old;
    if (!*kapi_registry__str(json_object_get(obj, "spec"), "namespace"))
        kapi_registry__refuse(err, KAPI_STATUS_BAD_REQUEST, "no namespace on request");
}
