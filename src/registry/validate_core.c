/*
 * registry/validate_core: core/v1 validation outside pods and events (Kubernetes 1.26
 * pkg/apis/core/validation): Namespace (ValidateNamespace, ValidateNamespaceUpdate and its
 * status and finalize writes), ServiceAccount and the NodeSelector rules other types
 * reuse.
 */
#include <string.h>

#include "registry/registry_int.h"

static const kapi_gofield requirement_fields[] = {
    {"Key", "key", KAPI_GO_STRING, NULL, NULL},
    {"Operator", "operator", KAPI_GO_STRING, NULL, NULL},
    {"Values", "values", KAPI_GO_STRINGS, NULL, NULL},
};
static const kapi_gotype requirement = {"core.NodeSelectorRequirement", requirement_fields,
                                        KAPI_ARRAY_LEN(requirement_fields)};
static const kapi_gofield term_fields[] = {
    {"MatchExpressions", "matchExpressions", KAPI_GO_STRUCTS, &requirement, NULL},
    {"MatchFields", "matchFields", KAPI_GO_STRUCTS, &requirement, NULL},
};
static const kapi_gotype term = {"core.NodeSelectorTerm", term_fields, KAPI_ARRAY_LEN(term_fields)};
static const kapi_gofield selector_fields[] = {
    {"NodeSelectorTerms", "nodeSelectorTerms", KAPI_GO_STRUCTS, &term, NULL},
};
const kapi_gotype kapi_registry__go_node_selector = {"core.NodeSelector", selector_fields,
                                                     KAPI_ARRAY_LEN(selector_fields)};

static void invalid_each(kapi_error *err, const char *path, const char *v,
                         size_t (*rule)(const char *, const char **))
{
    const char *msgs[KAPI_MSGS_MAX];
    size_t n = rule(v, msgs);
    kapi_field_invalid_each(err, path, v, msgs, n);
}

/* metav1validation.ValidateLabelSelectorRequirement; bad_values allowed leaves the values
 * unchecked (AllowInvalidLabelValueInSelector). */
static void selector_requirement(kapi_error *err, kapi_arena *a, const json_t *rq,
                                 bool bad_values_allowed, const char *path)
{
    static const char *const set_ops[] = {"In", "NotIn", NULL};
    static const char *const exist_ops[] = {"Exists", "DoesNotExist", NULL};
    const char *op = kapi_registry__str(rq, "operator");
    const json_t *values = json_object_get(rq, "values");
    const char *vpath = kapi_path_child(a, path, "values");
    if (kapi_cstr_in(op, set_ops)) {
        if (json_array_size(values) == 0)
            kapi_field_required(err, vpath, "must be specified when `operator` is 'In' or 'NotIn'");
    } else if (kapi_cstr_in(op, exist_ops)) {
        if (json_array_size(values) > 0)
            kapi_field_forbidden(err, vpath,
                                 "may not be specified when `operator` is 'Exists' or "
                                 "'DoesNotExist'");
    } else {
        kapi_field_invalid_str(err, kapi_path_child(a, path, "operator"), op,
                               "not a valid selector operator");
    }
    invalid_each(err, kapi_path_child(a, path, "key"), kapi_registry__str(rq, "key"),
                 kapi_is_qualified_name);
    for (size_t i = 0; !bad_values_allowed && i < json_array_size(values); i++)
        invalid_each(err, kapi_path_index(a, vpath, i),
                     json_string_value(json_array_get(values, i)) ?: "", kapi_is_label_value);
}

void kapi_registry__validate_label_selector(kapi_error *err, kapi_arena *a, const json_t *sel,
                                            bool bad_values_allowed, const char *path)
{
    const json_t *exprs = json_object_get(sel, "matchExpressions");
    const char *epath = kapi_path_child(a, path, "matchExpressions");
    kapi_meta_validate_labels(err, json_object_get(sel, "matchLabels"),
                              kapi_path_child(a, path, "matchLabels"));
    for (size_t i = 0; i < json_array_size(exprs); i++)
        selector_requirement(err, a, json_array_get(exprs, i), bad_values_allowed,
                             kapi_path_index(a, epath, i));
}

bool kapi_registry__label_selector_refused(kapi_arena *a, const json_t *sel)
{
    kapi_error *scratch = kapi_error_new(KAPI_STATUS_INVALID, "invalid");
    kapi_registry__validate_label_selector(scratch, a, sel, false, "");
    bool refused = scratch->ncauses > 0;
    kapi_error_free(scratch);
    return refused;
}

bool kapi_registry__label_selector_bad_values(const json_t *sel)
{
    const char *msgs[KAPI_MSGS_MAX];
    size_t i, j;
    json_t *e, *v;
    json_array_foreach(json_object_get(sel, "matchExpressions"), i, e)
    {
        json_array_foreach(json_object_get(e, "values"), j, v)
        {
            if (kapi_is_label_value(json_string_value(v) ?: "", msgs) > 0)
                return true;
        }
    }
    return false;
}

/* ValidateNodeSelectorRequirement (on node labels). */
static void label_requirement(kapi_error *err, kapi_arena *a, const json_t *rq, const char *path)
{
    const char *op = kapi_registry__str(rq, "operator");
    size_t nv = json_array_size(json_object_get(rq, "values"));
    const char *vpath = kapi_path_child(a, path, "values");
    if (strcmp(op, "In") == 0 || strcmp(op, "NotIn") == 0) {
        if (nv == 0)
            kapi_field_required(err, vpath, "must be specified when `operator` is 'In' or 'NotIn'");
    } else if (strcmp(op, "Exists") == 0 || strcmp(op, "DoesNotExist") == 0) {
        if (nv > 0)
            kapi_field_forbidden(err, vpath,
                                 "may not be specified when `operator` is 'Exists' or "
                                 "'DoesNotExist'");
    } else if (strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0) {
        if (nv != 1)
            kapi_field_required(err, vpath,
                                "must be specified single value when `operator` is 'Lt' or 'Gt'");
    } else {
        kapi_field_invalid_str(err, kapi_path_child(a, path, "operator"), op,
                               "not a valid selector operator");
    }
    invalid_each(err, kapi_path_child(a, path, "key"), kapi_registry__str(rq, "key"),
                 kapi_is_qualified_name);
}

/* ValidateNodeFieldSelectorRequirement (on node fields: only metadata.name). */
static void field_requirement(kapi_error *err, kapi_arena *a, const json_t *rq, const char *path)
{
    const char *op = kapi_registry__str(rq, "operator"), *key = kapi_registry__str(rq, "key");
    const json_t *values = json_object_get(rq, "values");
    const char *vpath = kapi_path_child(a, path, "values");
    if (strcmp(op, "In") == 0 || strcmp(op, "NotIn") == 0) {
        if (json_array_size(values) != 1)
            kapi_field_required(err, vpath,
                                "must be only one value when `operator` is 'In' or 'NotIn' for "
                                "node field selector");
    } else {
        kapi_field_invalid_str(err, kapi_path_child(a, path, "operator"), op,
                               "not a valid selector operator");
    }
    if (strcmp(key, "metadata.name") != 0) {
        kapi_field_invalid_str(err, kapi_path_child(a, path, "key"), key,
                               "not a valid field selector key");
        return;
    }
    for (size_t i = 0; i < json_array_size(values); i++) {
        const char *v = json_string_value(json_array_get(values, i));
        invalid_each(err, kapi_path_index(a, vpath, i), v ? v : "", kapi_is_dns1123_subdomain);
    }
}

void kapi_registry__validate_node_selector(kapi_error *err, kapi_arena *a, const json_t *ns,
                                           const char *path)
{
    const json_t *terms = json_object_get(ns, "nodeSelectorTerms");
    const char *tpath = kapi_path_child(a, path, "nodeSelectorTerms");
    if (json_array_size(terms) == 0) {
        kapi_field_required(err, tpath, "must have at least one node selector term");
        return;
    }
    for (size_t i = 0; i < json_array_size(terms); i++) {
        const json_t *t = json_array_get(terms, i);
        const char *at = kapi_path_index(a, tpath, i);
        const json_t *exprs = json_object_get(t, "matchExpressions");
        const json_t *fields = json_object_get(t, "matchFields");
        for (size_t j = 0; j < json_array_size(exprs); j++)
            label_requirement(err, a, json_array_get(exprs, j),
                              kapi_path_index(a, kapi_path_child(a, at, "matchExpressions"), j));
        for (size_t j = 0; j < json_array_size(fields); j++)
            field_requirement(err, a, json_array_get(fields, j),
                              kapi_path_index(a, kapi_path_child(a, at, "matchFields"), j));
    }
}

/* ValidateNamespace / ValidateNamespaceUpdate. spec.finalizers (the strategy keeps the
 * stored ones on update) are qualified or standard names, reported at spec.finalizers. */
void kapi_registry__validate_namespace(const kapi_type *t, const json_t *obj, const json_t *old,
                                       kapi_error *err)
{
    kapi_arena a;
    const json_t *meta = json_object_get(obj, "metadata");
    kapi_arena_init(&a);
    if (old) {
        kapi_meta_validate_update(err, &a, meta, json_object_get(old, "metadata"), "metadata",
                                  true);
        kapi_arena_dispose(&a);
        return;
    }
    kapi_meta_rules rules;
    kapi_registry__meta_rules(t, true, &rules);
    kapi_meta_validate(err, &a, meta, "metadata", &rules);
    const json_t *fins = json_object_get(json_object_get(obj, "spec"), "finalizers");
    for (size_t i = 0; i < json_array_size(fins); i++) {
        const char *f = json_string_value(json_array_get(fins, i));
        f = f ? f : "";
        invalid_each(err, "spec.finalizers", f, kapi_is_qualified_name);
        if (!strchr(f, '/') && strcmp(f, "kubernetes") != 0 && strcmp(f, "orphan") != 0 &&
            strcmp(f, "foregroundDeletion") != 0)
            kapi_field_invalid_str(err, "spec.finalizers", f,
                                   "name is neither a standard finalizer name nor is it fully "
                                   "qualified");
    }
    kapi_arena_dispose(&a);
}

/* A Namespace's status write: phase Active unless it is being deleted, then Terminating
 * ("status.Phase", as 1.26 spells it); a finalize write: each spec.finalizers[i] a
 * qualified or standard name. */
void kapi_registry__validate_namespace_subresource(const kapi_type *t, const char *sub,
                                                   const json_t *obj, const json_t *old,
                                                   kapi_error *err)
{
    kapi_arena a;
    const json_t *meta = json_object_get(obj, "metadata");
    (void)t;
    kapi_arena_init(&a);
    kapi_meta_validate_update(err, &a, meta, json_object_get(old, "metadata"), "metadata", true);
    if (strcmp(sub, "status") == 0) {
        const char *phase = kapi_registry__str(json_object_get(obj, "status"), "phase");
        if (!kapi_registry__has(meta, "deletionTimestamp") && strcmp(phase, "Active") != 0)
            kapi_field_invalid_str(err, "status.Phase", phase,
                                   "may only be 'Active' if `deletionTimestamp` is empty");
        else if (kapi_registry__has(meta, "deletionTimestamp") && strcmp(phase, "Terminating") != 0)
            kapi_field_invalid_str(err, "status.Phase", phase,
                                   "may only be 'Terminating' if `deletionTimestamp` is not "
                                   "empty");
    } else if (strcmp(sub, "finalize") == 0) {
        const json_t *fins = json_object_get(json_object_get(obj, "spec"), "finalizers");
        for (size_t i = 0; i < json_array_size(fins); i++) {
            const char *f = json_string_value(json_array_get(fins, i));
            const char *at = kapi_path_index(&a, "spec.finalizers", i);
            f = f ? f : "";
            invalid_each(err, at, f, kapi_is_qualified_name);
            if (!strchr(f, '/') && strcmp(f, "kubernetes") != 0 && strcmp(f, "orphan") != 0 &&
                strcmp(f, "foregroundDeletion") != 0)
                kapi_field_invalid_str(err, at, f,
                                       "name is neither a standard finalizer name nor is it fully "
                                       "qualified");
        }
    }
    kapi_arena_dispose(&a);
}

/* ValidateServiceAccount / ValidateServiceAccountUpdate: the metadata, by the subdomain
 * rule; an update checks what may not change first, then the metadata again (so a bad
 * label shows in the causes once more than the generic update checks show it). */
void kapi_registry__validate_serviceaccount(const kapi_type *t, const json_t *obj,
                                            const json_t *old, kapi_error *err)
{
    kapi_arena a;
    kapi_meta_rules rules;
    const json_t *meta = json_object_get(obj, "metadata");
    kapi_arena_init(&a);
    if (old)
        kapi_meta_validate_update(err, &a, meta, json_object_get(old, "metadata"), "metadata",
                                  true);
    kapi_registry__meta_rules(t, true, &rules);
    kapi_meta_validate(err, &a, meta, "metadata", &rules);
    kapi_arena_dispose(&a);
}
