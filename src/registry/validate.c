/*
 * registry/validate: the validation step of a write, as kube-apiserver's rest.BeforeCreate
 * and rest.BeforeUpdate run it around a type's own Validate / ValidateUpdate.
 *
 * Create: the type's validation; only when it finds nothing, the generic metadata checks
 * with the path-segment name rule (they catch what a type does not check itself, e.g. the
 * name of a core/v1 Event). A type that is not persisted (the reviews) has only its own
 * validation, as kube's REST Create of such a type has no rest.BeforeCreate. Update: the generic
 * metadata and metadata-update checks first, then the type's, in one list (so a rule both make,
 * like "no new finalizers", shows in two causes and once in the message, as Kubernetes shows it).
 */
#include <stdlib.h>

#include "registry/registry_int.h"

/* ValidateRBACName: a path segment; a generateName is held to the rule of a whole name
 * (so "." is refused there too). */
static size_t rbac_name(void *ctx, const char *name, bool prefix, const char **out)
{
    (void)prefix;
    return kapi_name_path_segment(ctx, name, false, out);
}

void kapi_registry__meta_rules(const kapi_type *t, bool kube, kapi_meta_rules *out)
{
    static const kapi_name_fn rules[] = {
        [KAPI_NAME_RULE_SUBDOMAIN] = kapi_name_dns_subdomain,
        [KAPI_NAME_RULE_LABEL] = kapi_name_dns_label,
        [KAPI_NAME_RULE_DNS1035] = kapi_name_dns1035_label,
        [KAPI_NAME_RULE_RBAC] = rbac_name,
    };
    *out = (kapi_meta_rules){rules[t->name_rule], NULL, t->namespaced, kube};
}

void kapi_registry__nonnegative(kapi_error *err, const char *path, long long v)
{
    if (v < 0)
        kapi_field_invalid_int(err, path, v, "must be greater than or equal to 0");
}

void kapi_registry__validate_meta_as(const kapi_type *t, const json_t *obj, const json_t *old,
                                     bool kube, kapi_error *err)
{
    kapi_arena a;
    kapi_arena_init(&a);
    const json_t *meta = json_object_get(obj, "metadata");
    if (old) {
        kapi_meta_validate_update(err, &a, meta, json_object_get(old, "metadata"), "metadata",
                                  kube);
    } else {
        kapi_meta_rules rules;
        kapi_registry__meta_rules(t, kube, &rules);
        kapi_meta_validate(err, &a, meta, "metadata", &rules);
    }
    kapi_arena_dispose(&a);
}

void kapi_registry__validate_meta(const kapi_type *t, const json_t *obj, const json_t *old,
                                  kapi_error *err)
{
    kapi_registry__validate_meta_as(t, obj, old, false, err);
}

static void type_validate(const kapi_type *t, const json_t *obj, const json_t *old, kapi_error *err)
{
    if (t->strategy->validate)
        t->strategy->validate(t, obj, old, err);
    else if (t->persisted)
        kapi_registry__validate_meta(t, obj, old, err);
}

/* rest.validateCommonFields: the metadata checks of every update, whatever the type. */
static void common_update(const kapi_type *t, const json_t *obj, const json_t *old, kapi_error *err,
                          kapi_arena *a)
{
    const json_t *meta = json_object_get(obj, "metadata");
    kapi_meta_rules common = {kapi_name_path_segment, NULL, t->namespaced, false};
    kapi_meta_validate(err, a, meta, "metadata", &common);
    kapi_meta_validate_update(err, a, meta, json_object_get(old, "metadata"), "metadata", false);
}

void kapi_registry__refuse(kapi_error *err, kapi_status status, const char *message)
{
    free(err->message);
    err->message = kapi_xstrdup(message);
    err->status = status;
}

/* The 422 for the causes found, or NULL when there are none; a hook's refusal as it is.
 * The causes gather in an error on the stack (most writes have none), which moves to the
 * heap only to be answered. Kubernetes names the kind of the stored (internal) object:
 * events.k8s.io Events answer as core Events; a custom resource's, the kind its body
 * names; a type that is not persisted, none and no name (kapi_type_validate). */
static kapi_error *finish(const kapi_type *t, const json_t *obj, const kapi_error *found)
{
    if (found->status == KAPI_STATUS_INVALID && found->ncauses == 0) {
        free(found->causes);
        return NULL;
    }
    kapi_error *err = kapi_xmalloc(sizeof(*err));
    *err = *found;
    if (err->status != KAPI_STATUS_INVALID)
        return err;
    if (!t->persisted)
        return kapi_field_finish_invalid_n(err, "", t->storage_group, KAPI_STR(""));
    const char *kind = t->custom ? kapi_registry__str(obj, "kind") : t->kind;
    const json_t *name = json_object_get(json_object_get(obj, "metadata"), "name");
    return kapi_field_finish_invalid_n(
        err, kind, t->storage_group,
        (kapi_str){json_string_value(name) ? json_string_value(name) : "",
                   json_string_length(name)});
}

kapi_error *kapi_type_validate(const kapi_type *t, const json_t *obj, const json_t *old)
{
    kapi_error found = {.status = KAPI_STATUS_INVALID}, *err = &found;
    kapi_arena a;
    kapi_meta_rules common = {kapi_name_path_segment, NULL, t->namespaced, false};
    kapi_arena_init(&a);
    if (old) {
        common_update(t, obj, old, err, &a);
        type_validate(t, obj, old, err);
    } else {
        type_validate(t, obj, NULL, err);
        if (err->ncauses == 0 && err->status == KAPI_STATUS_INVALID && t->persisted)
            kapi_meta_validate(err, &a, json_object_get(obj, "metadata"), "metadata", &common);
    }
    kapi_arena_dispose(&a);
    return finish(t, obj, &found);
}

kapi_error *kapi_type_validate_subresource(const kapi_type *t, const char *sub, const json_t *obj,
                                           const json_t *old)
{
    kapi_error found = {.status = KAPI_STATUS_INVALID}, *err = &found;
    kapi_arena a;
    kapi_arena_init(&a);
    common_update(t, obj, old, err, &a);
    if (t->strategy->validate_subresource)
        t->strategy->validate_subresource(t, sub, obj, old, err);
    kapi_arena_dispose(&a);
    return finish(t, obj, &found);
}
