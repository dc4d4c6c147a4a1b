/*
 * registry/validate_rbac: Role, ClusterRole, RoleBinding and ClusterRoleBinding
 * (rbac.authorization.k8s.io/v1) as Kubernetes 1.26 validates them (pkg/apis/rbac/validation
 * and the strategies of pkg/registry/rbac).
 *
 * A role's rules each need verbs, and apiGroups and resources unless they name
 * nonResourceURLs, which only a ClusterRole's rules may, and never beside resources. A
 * ClusterRole's aggregationRule needs selectors, each a valid label selector. A binding's
 * roleRef is in the RBAC group, names a Role or a ClusterRole (a ClusterRoleBinding only a
 * ClusterRole) by a path-segment name, and never changes; its subjects are Users and
 * Groups of the RBAC group or ServiceAccounts of the core group, named by DNS subdomains
 * and, in a ClusterRoleBinding, with their namespace.
 *
 * On update kube's ValidateUpdate runs the create rules, then ValidateXUpdate, which runs
 * them again: every cause of the new object shows twice (once in the message).
 */
#include "registry/registry_int.h"

#define RBAC_GROUP "rbac.authorization.k8s.io"

static const kapi_gofield role_ref_fields[] = {
    {"APIGroup", "apiGroup", KAPI_GO_STRING, NULL, NULL},
    {"Kind", "kind", KAPI_GO_STRING, NULL, NULL},
    {"Name", "name", KAPI_GO_STRING, NULL, NULL},
};
static const kapi_gotype role_ref_type = {"rbac.RoleRef", role_ref_fields,
                                          KAPI_ARRAY_LEN(role_ref_fields)};

static void invalid_each(kapi_error *err, const char *path, const char *v,
                         size_t (*rule)(const char *, const char **))
{
    const char *msgs[KAPI_MSGS_MAX];
    kapi_field_invalid_each(err, path, v, msgs, rule(v, msgs));
}

static bool nonempty(const json_t *o, const char *key)
{
    return json_array_size(json_object_get(o, key)) > 0;
}

/* ValidatePolicyRule; namespaced for a Role's rules. */
static void policy_rule(kapi_error *err, kapi_arena *a, const json_t *rule, bool namespaced,
                        const char *path)
{
    if (!nonempty(rule, "verbs"))
        kapi_field_required(err, kapi_path_child(a, path, "verbs"),
                            "verbs must contain at least one value");
    if (nonempty(rule, "nonResourceURLs")) {
        const char *at = kapi_path_child(a, path, "nonResourceURLs");
        kapi_buf urls;
        kapi_buf_init(&urls);
        kapi_gofmt_strings(&urls, json_object_get(rule, "nonResourceURLs"));
        if (namespaced)
            kapi_field_invalid_raw(err, at, urls.ptr,
                                   "namespaced rules cannot apply to non-resource URLs");
        if (nonempty(rule, "apiGroups") || nonempty(rule, "resources") ||
            nonempty(rule, "resourceNames"))
            kapi_field_invalid_raw(err, at, urls.ptr,
                                   "rules cannot apply to both regular resources and "
                                   "non-resource URLs");
        kapi_buf_dispose(&urls);
        return;
    }
    if (!nonempty(rule, "apiGroups"))
        kapi_field_required(err, kapi_path_child(a, path, "apiGroups"),
                            "resource rules must supply at least one api group");
    if (!nonempty(rule, "resources"))
        kapi_field_required(err, kapi_path_child(a, path, "resources"),
                            "resource rules must supply at least one resource");
}

/* The strategy's hasInvalidLabelValueInLabelSelector of a stored ClusterRole: an update
 * may keep label values that later versions stopped accepting. */
static bool has_refused_selector(kapi_arena *a, const json_t *role)
{
    const json_t *sels = kapi_json_path(role, "aggregationRule.clusterRoleSelectors");
    for (size_t i = 0; i < json_array_size(sels); i++)
        if (kapi_registry__label_selector_refused(a, json_array_get(sels, i)))
            return true;
    return false;
}

/* A ClusterRole's aggregationRule (a Role has none: its schema drops the member). */
static void aggregation_rule(kapi_error *err, kapi_arena *a, const json_t *rule,
                             bool bad_values_allowed)
{
    const json_t *sels = json_object_get(rule, "clusterRoleSelectors");
    const char *path = "aggregationRule.clusterRoleSelectors";
    if (json_array_size(sels) == 0)
        kapi_field_required(err, path,
                            "at least one clusterRoleSelector required if aggregationRule is "
                            "non-nil");
    for (size_t i = 0; i < json_array_size(sels); i++) {
        const json_t *sel = json_array_get(sels, i);
        const char *at = kapi_path_index(a, path, i);
        kapi_registry__validate_label_selector(err, a, sel, bad_values_allowed, at);
        /* kube reports the nil selector the failed conversion returned */
        if (kapi_registry__label_selector_refused(a, sel))
            kapi_field_invalid_str(err, at, "null", "invalid label selector.");
    }
}

/* ValidateObjectMeta with ValidateRBACName. */
static void rbac_meta(kapi_error *err, kapi_arena *a, const kapi_type *t, const json_t *obj)
{
    kapi_meta_rules rules;
    kapi_registry__meta_rules(t, true, &rules);
    kapi_meta_validate(err, a, json_object_get(obj, "metadata"), "metadata", &rules);
}

/* ValidateRole / ValidateClusterRole. */
static void role(kapi_error *err, kapi_arena *a, const kapi_type *t, const json_t *obj,
                 bool bad_values_allowed)
{
    const json_t *rules = json_object_get(obj, "rules");
    rbac_meta(err, a, t, obj);
    for (size_t i = 0; i < json_array_size(rules); i++)
        policy_rule(err, a, json_array_get(rules, i), t->namespaced,
                    kapi_path_index(a, "rules", i));
    if (kapi_registry__has(obj, "aggregationRule"))
        aggregation_rule(err, a, json_object_get(obj, "aggregationRule"), bad_values_allowed);
}

void kapi_registry__validate_role(const kapi_type *t, const json_t *obj, const json_t *old,
                                  kapi_error *err)
{
    kapi_arena a;
    kapi_arena_init(&a);
    bool allowed = old && has_refused_selector(&a, old);
    role(err, &a, t, obj, allowed);
    if (old) {
        role(err, &a, t, obj, allowed);
        kapi_meta_validate_update(err, &a, json_object_get(obj, "metadata"),
                                  json_object_get(old, "metadata"), "metadata", true);
    }
    kapi_arena_dispose(&a);
}

/* ValidateRoleBindingSubject; namespaced for a RoleBinding's subjects. */
static void subject(kapi_error *err, kapi_arena *a, const json_t *s, bool namespaced,
                    const char *path)
{
    static const char *const kinds[] = {"ServiceAccount", "User", "Group", NULL};
    static const char *const core[] = {"", NULL};
    static const char *const rbac[] = {RBAC_GROUP, NULL};
    const char *kind = kapi_registry__str(s, "kind"), *name = kapi_registry__str(s, "name");
    const char *group = kapi_registry__str(s, "apiGroup");
    const char *gpath = kapi_path_child(a, path, "apiGroup");
    if (!*name)
        kapi_field_required(err, kapi_path_child(a, path, "name"), "");
    if (strcmp(kind, "ServiceAccount") == 0) {
        if (*name)
            invalid_each(err, kapi_path_child(a, path, "name"), name, kapi_is_dns1123_subdomain);
        if (*group)
            kapi_field_not_supported(err, gpath, group, core);
        if (!namespaced && !*kapi_registry__str(s, "namespace"))
            kapi_field_required(err, kapi_path_child(a, path, "namespace"), "");
    } else if (strcmp(kind, "User") == 0 || strcmp(kind, "Group") == 0) {
        if (strcmp(group, RBAC_GROUP) != 0)
            kapi_field_not_supported(err, gpath, group, rbac);
    } else {
        kapi_field_not_supported(err, kapi_path_child(a, path, "kind"), kind, kinds);
    }
}

/* ValidateRoleBinding / ValidateClusterRoleBinding. */
static void binding(kapi_error *err, kapi_arena *a, const kapi_type *t, const json_t *obj)
{
    static const char *const rbac[] = {RBAC_GROUP, NULL};
    static const char *const any_role[] = {"Role", "ClusterRole", NULL};
    static const char *const cluster_role[] = {"ClusterRole", NULL};
    const char *const *kinds = t->namespaced ? any_role : cluster_role;
    const json_t *ref = json_object_get(obj, "roleRef");
    const json_t *subjects = json_object_get(obj, "subjects");
    const char *group = kapi_registry__str(ref, "apiGroup");
    const char *kind = kapi_registry__str(ref, "kind"), *name = kapi_registry__str(ref, "name");
    rbac_meta(err, a, t, obj);
    if (strcmp(group, RBAC_GROUP) != 0)
        kapi_field_not_supported(err, "roleRef.apiGroup", group, rbac);
    if (!kapi_cstr_in(kind, kinds))
        kapi_field_not_supported(err, "roleRef.kind", kind, kinds);
    if (!*name) {
        kapi_field_required(err, "roleRef.name", "");
    } else {
        const char *msgs[KAPI_MSGS_MAX];
        kapi_field_invalid_each(err, "roleRef.name", name, msgs,
                                kapi_name_path_segment(NULL, name, false, msgs));
    }
    for (size_t i = 0; i < json_array_size(subjects); i++)
        subject(err, a, json_array_get(subjects, i), t->namespaced,
                kapi_path_index(a, "subjects", i));
}

/* The roleRef check of ValidateRoleBindingUpdate: the three strings compared. */
static void role_ref_unchanged(kapi_error *err, const json_t *ref, const json_t *old_ref)
{
    static const char *const keys[] = {"apiGroup", "kind", "name"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(keys); i++) {
        if (strcmp(kapi_registry__str(ref, keys[i]), kapi_registry__str(old_ref, keys[i])) == 0)
            continue;
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_gofmt(&b, &role_ref_type, ref);
        kapi_field_invalid_raw(err, "roleRef", b.ptr, "cannot change roleRef");
        kapi_buf_dispose(&b);
        return;
    }
}

void kapi_registry__validate_binding(const kapi_type *t, const json_t *obj, const json_t *old,
                                     kapi_error *err)
{
    kapi_arena a;
    kapi_arena_init(&a);
    binding(err, &a, t, obj);
    if (old) {
        binding(err, &a, t, obj);
        kapi_meta_validate_update(err, &a, json_object_get(obj, "metadata"),
                                  json_object_get(old, "metadata"), "metadata", true);
        role_ref_unchanged(err, json_object_get(obj, "roleRef"), json_object_get(old, "roleRef"));
    }
    kapi_arena_dispose(&a);
}
