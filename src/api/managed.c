/*
 * api/managed: metadata.managedFields on the write pipeline (smd.h, "the field
 * manager"). A write names its manager (a request's fieldManager, else its User-Agent's
 * product as kube-apiserver derives it; kapi's own writes the component they stand for);
 * the field manager of a write is its type's merge type and reset fields for the
 * subresource written, and sees the object in the other versions its managers used
 * through the types that serve them (the same stored resource at another group/version,
 * or another version of the same CRD).
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "codec/go.h"
#include "schema/field.h"

#define FIELD_MANAGER_MAX 128

const char *kapi_api__manager_from_user_agent(kapi_arena *a, const char *ua)
{
    kapi_buf b;
    kapi_buf_init(&b);
    size_t n = ua ? strcspn(ua, "/") : 0;
    for (size_t i = 0, w; i < n; i += w) {
        int32_t r = kapi_go_rune(ua + i, n - i, &w);
        if (r < 0) {
            r = 0xfffd; /* Go ranges over a bad byte as U+FFFD, which is printable */
            w = 1;
        }
        if (!kapi_go_is_print(r))
            continue;
        const char *bytes = r == 0xfffd && w == 1 ? "\xef\xbf\xbd" : ua + i;
        size_t len = r == 0xfffd && w == 1 ? 3 : w;
        if (b.len + len > FIELD_MANAGER_MAX)
            break;
        kapi_buf_put(&b, bytes, len);
    }
    const char *out = kapi_arena_strndup(a, b.ptr, b.len);
    kapi_buf_dispose(&b);
    return out;
}

void kapi_api__check_field_manager(kapi_error **err, const char *fm)
{
    size_t n = strlen(fm);
    if (n > FIELD_MANAGER_MAX) {
        if (!*err)
            *err = kapi_error_new(KAPI_STATUS_INVALID, "%s", "");
        kapi_field_too_long(*err, "fieldManager", FIELD_MANAGER_MAX);
    }
    for (size_t i = 0, w; i < n; i += w) {
        int32_t r = kapi_go_rune(fm + i, n - i, &w);
        if (r < 0 || kapi_go_is_print(r))
            continue; /* Go reads a bad byte as U+FFFD, which is printable */
        if (!*err)
            *err = kapi_error_new(KAPI_STATUS_INVALID, "%s", "");
        kapi_field_invalid_str(*err, "fieldManager", fm,
                               "invalid character U+%04X (at position %zu)",
                               r < 0 ? 0xfffdu : (unsigned)r, i);
    }
}

/* ---- other versions ---- */

/* The write's converter: the types it borrowed other versions' views from. */
typedef struct versions {
    kapi_write *w;
    const kapi_type *held[8];
    size_t nheld;
} versions;

/* The type that serves the object of w's type at group/version v, or NULL (a reference
 * when custom, kept in vs until the write's field manager is done). */
static const kapi_type *type_at(versions *vs, const char *v)
{
    const kapi_type *t = vs->w->type;
    if (t->custom) {
        const char *slash = strrchr(v, '/');
        const char *group = kapi_json_path_str(t->custom->crd, "spec.group") ?: "";
        if (!slash || strncmp(v, group, (size_t)(slash - v)) != 0 ||
            strlen(group) != (size_t)(slash - v) || vs->nheld == KAPI_ARRAY_LEN(vs->held))
            return NULL;
        const char *rv = kapi_json_path_str(t->custom->crd, "metadata.resourceVersion") ?: "0";
        const kapi_type *u = NULL;
        kapi_custom_state st;
        kapi_error *err = kapi_registry_custom_build(vs->w->api->registry, t->custom->crd,
                                                     strtoll(rv, NULL, 10), slash + 1, &u, &st);
        kapi_error_free(err);
        if (u)
            vs->held[vs->nheld++] = u;
        return u;
    }
    const kapi_registry *reg = vs->w->api->registry;
    for (size_t i = 0; i < kapi_registry_count(reg); i++) {
        const kapi_type *u = kapi_registry_at(reg, i);
        if (strcmp(u->group_version, v) == 0 && strcmp(u->storage_group, t->storage_group) == 0 &&
            strcmp(u->storage_resource, t->storage_resource) == 0)
            return u;
    }
    return NULL;
}

/* kapi_smd_updater.convert: obj from w's type's view into the view of the type serving
 * version v, through the stored form. */
static json_t *convert(void *ctx, const json_t *obj, const char *v, kapi_smd_view *view)
{
    versions *vs = ctx;
    const kapi_type *t = vs->w->type, *u = type_at(vs, v);
    if (!u)
        return NULL;
    json_t *out = kapi_json_copy(obj);
    kapi_error *err = kapi_type_to_storage(t, &out);
    if (!err)
        err = kapi_type_from_storage(u, &out, 1);
    if (err) { /* a webhook that failed: that version's fields are not converted */
        kapi_error_free(err);
        json_decref(out);
        return NULL;
    }
    const char *name = vs->w->recorded_as ? vs->w->recorded_as : vs->w->subresource;
    const kapi_subresource *sub = *name ? kapi_type_subresource(u, kapi_str_c(name)) : NULL;
    *view = (kapi_smd_view){u->smd, sub ? sub->reset : u->reset};
    return out;
}

/* The field manager of write w, with vs as the converter's state. */
static void field_manager(kapi_write *w, versions *vs, kapi_smd_fm *fm)
{
    const kapi_type *t = w->type;
    const char *name = w->recorded_as ? w->recorded_as : w->subresource;
    const kapi_subresource *sub = *name ? kapi_type_subresource(t, kapi_str_c(name)) : NULL;
    *vs = (versions){.w = w};
    *fm = (kapi_smd_fm){
        .updater = {.version = t->group_version,
                    .view = {t->smd, sub ? sub->reset : t->reset},
                    .convert = convert,
                    .ctx = vs},
        .group_version = t->group_version,
        .kind = t->kind,
        .subresource = name,
        .empty = t->zero,
    };
}

static void release(versions *vs)
{
    for (size_t i = 0; i < vs->nheld; i++)
        kapi_type_unref(vs->held[i]);
}

/* The replicas path of a custom resource's scale subresource (".spec.replicas") as
 * field path steps, in the arena. */
static kapi_smd_path scale_path(kapi_arena *a, const char *p)
{
    kapi_smd_pe *pe = kapi_arena_alloc(a, (strlen(p) + 1) * sizeof(*pe));
    size_t n = 0;
    while (*p) {
        p += *p == '.';
        size_t len = strcspn(p, ".");
        if (len)
            pe[n++] = (kapi_smd_pe){.kind = KAPI_SMD_PE_FIELD,
                                    .name = {kapi_arena_strndup(a, p, len), len}};
        p += len;
    }
    return (kapi_smd_path){pe, n};
}

void kapi_api__manage(kapi_write *w, const json_t *live, json_t *obj)
{
    kapi_smd_fm fm;
    versions vs;
    if (w->managed)
        return;
    if (w->recorded_as && strcmp(w->recorded_as, "scale") == 0 && w->type->custom) {
        json_object_del(kapi_json_object_ensure(obj, "metadata"), "managedFields");
        kapi_smd_fm_disown(w->arena, live, obj,
                           scale_path(w->arena, w->type->custom->scale_spec ?: ""));
        return;
    }
    field_manager(w, &vs, &fm);
    kapi_smd_fm_update(w->arena, &fm, live, obj, w->manager ? w->manager : "", w->hooks.now);
    release(&vs);
}

kapi_error *kapi_api__apply(kapi_write *w, const json_t *live, const json_t *config, bool force,
                            json_t **out)
{
    kapi_smd_fm fm;
    versions vs;
    field_manager(w, &vs, &fm);
    kapi_error *err = kapi_smd_fm_apply(w->arena, &fm, live, config, w->manager, force,
                                        kapi_api__now(w->arena), out);
    release(&vs);
    return err;
}
