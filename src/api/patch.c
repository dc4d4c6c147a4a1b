/*
 * api/patch: the patch verb (reference 4.2): a JSON, merge or strategic merge patch
 * (src/patch) applied to the stored object as the client reads it, the result decoded
 * like an update body and written as an update.
 *
 * A patch that does not carry metadata.resourceVersion is applied again to the newer
 * object when another write got in between (no spurious 409), as kube-apiserver's
 * GuaranteedUpdate does.
 *
 * Server-side apply (application/apply-patch+yaml) merges the body, a partial object in
 * YAML or JSON, into the stored one by the type's schema and its managers' field sets
 * (api/managed.c, src/smd), creating the object when there is none; the result is
 * defaulted and written as any update is.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api_int.h"
#include "codec/go.h"
#include "codec/yaml.h"
#include "patch/patch.h"

#define APPLY_MEDIA_TYPE "application/apply-patch+yaml"

/* The patch type a Content-Type names; false for any other. */
static bool patch_type(const char *ct, kapi_patch_type *out)
{
    static const struct {
        const char *media;
        kapi_patch_type type;
    } types[] = {
        {"application/json-patch+json", KAPI_PATCH_JSON},
        {"application/merge-patch+json", KAPI_PATCH_MERGE},
        {"application/strategic-merge-patch+json", KAPI_PATCH_STRATEGIC},
        {APPLY_MEDIA_TYPE, KAPI_PATCH_APPLY},
    };
    if (!ct)
        return false;
    size_t n = strcspn(ct, ";");
    while (n > 0 && ct[n - 1] == ' ')
        n--;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(types); i++)
        if (strlen(types[i].media) == n && strncasecmp(ct, types[i].media, n) == 0) {
            *out = types[i].type;
            return true;
        }
    return false;
}

kapi_error *kapi_api__patch_type(kapi_req *r, kapi_patch_type *out)
{
    if (patch_type(kapi_http_header_get(r->http, "content-type"), out))
        return NULL;
    kapi_error *err =
        kapi_error_new(KAPI_STATUS_UNSUPPORTED_MEDIA_TYPE, "415: Unsupported Media Type");
    err->has_details = true;
    return err;
}

kapi_error *kapi_api__current(kapi_req *r, json_t **out, int64_t *rev)
{
    const kapi_type *t = r->type;
    kapi_obj *o = NULL;
    kapi_str key = kapi_type_key(&r->arena, t, r->info.ns, r->info.name);
    *out = NULL;
    if (kapi_store_get(r->api->store, key, &o) != KAPI_STORE_OK)
        return kapi_api__err_not_found(&r->arena, t, r->info.name);
    json_t *v = kapi_api__parse_stored(o);
    if (rev)
        *rev = o->rev;
    kapi_obj_unref(o);
    kapi_error *err = kapi_type_from_storage(t, &v, 1);
    if (err)
        json_decref(v);
    else
        *out = v;
    return err;
}

static kapi_error *apply(kapi_patch_type type, json_t **doc, const json_t *patch,
                         const kapi_schema *s)
{
    switch (type) {
    case KAPI_PATCH_JSON:
        return kapi_patch_json(doc, patch);
    case KAPI_PATCH_MERGE:
        return kapi_patch_merge(doc, patch);
    default:
        return kapi_patch_strategic(doc, patch, s);
    }
}

/* What a patch was applied to, to apply it again (kapi_api_remake). */
typedef struct patched {
    kapi_patch_type type;
    const json_t *live, *patch;
    const kapi_schema *schema;
} patched;

static json_t *patch_again(void *ctx)
{
    const patched *p = ctx;
    json_t *doc = kapi_json_copy(p->live);
    kapi_error *err = apply(p->type, &doc, p->patch, p->schema);
    if (err) {
        kapi_error_free(err);
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* Whether the patch sets metadata.resourceVersion (then a conflict is the client's). */
static bool patch_sets_rv(kapi_patch_type type, const json_t *patch)
{
    if (type != KAPI_PATCH_JSON)
        return kapi_json_path_str(patch, "metadata.resourceVersion") != NULL;
    size_t i;
    json_t *op;
    json_array_foreach(patch, i, op)
    {
        const char *path = kapi_json_path_str(op, "path");
        if (path && strcmp(path, "/metadata/resourceVersion") == 0)
            return true;
    }
    return false;
}

/* ---- server-side apply ---- */

kapi_error *kapi_api__decode_apply(kapi_req *r, json_t **out, kapi_dups *dups)
{
    json_t *v = NULL;
    kapi_error *err = kapi_yaml_parse(r->http->body, r->http->body_len, &v, dups);
    *out = NULL;
    if (err) {
        kapi_error *why = err;
        err =
            kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                           "error decoding YAML: error converting YAML to JSON: %s", why->message);
        kapi_error_free(why);
        return err;
    }
    if (!json_is_object(v) && !json_is_null(v)) {
        err = kapi_error_new(
            KAPI_STATUS_BAD_REQUEST,
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: "
            "json: cannot unmarshal %s into Go value of type map[string]interface {}",
            kapi_go_json_kind(v));
        json_decref(v);
        return err;
    }
    *out = json_is_object(v) ? v : json_object();
    if (!json_is_object(v))
        json_decref(v);
    return NULL;
}

/* The name an apply that creates gives its object: the URL's, which the body must
 * carry. */
static kapi_error *apply_name(kapi_req *r, const json_t *obj)
{
    kapi_str name = kapi_api__name_of(json_object_get(obj, "metadata"));
    if (!name.len)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "the name of the object (%s based on URL) was undeterminable: name "
                              "must be provided",
                              kapi_api__shown(&r->arena, r->info.name));
    if (!kapi_str_eq(name, r->info.name))
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "the name of the object (%s) does not match the name on the URL (%s)",
                              kapi_api__shown(&r->arena, name),
                              kapi_api__shown(&r->arena, r->info.name));
    return NULL;
}

/* fieldValidation for the body's repeated keys, after the apply: Strict refuses them,
 * Warn warns of each. */
static kapi_error *apply_dups(kapi_req *r, const kapi_write_opts *o, const kapi_dups *dups)
{
    if (!dups->n || o->fv == KAPI_FV_IGNORE)
        return NULL;
    if (o->fv == KAPI_FV_WARN) {
        for (size_t i = 0; i < dups->n; i++)
            kapi_api__warn(r, "%s", dups->v[i].message);
        return NULL;
    }
    kapi_buf msg;
    kapi_buf_init(&msg);
    kapi_yaml_strict_message(&msg, dups);
    kapi_error *err =
        kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                       "error strict decoding YAML: error converting YAML to JSON: %s", msg.ptr);
    kapi_buf_dispose(&msg);
    return err;
}

/* What an apply merged, to merge it again (kapi_api_remake). */
typedef struct applied_from {
    kapi_write *w;
    const json_t *live, *config;
    bool force;
} applied_from;

static json_t *apply_again(void *ctx)
{
    const applied_from *a = ctx;
    json_t *out = NULL;
    kapi_error_free(kapi_api__apply(a->w, a->live, a->config, a->force, &out));
    return out;
}

/* One try of an apply: the stored object (if any) merged with config and written. */
static kapi_error *apply_once(kapi_req *r, kapi_write *w, const kapi_write_opts *o,
                              const json_t *config, const kapi_dups *dups)
{
    json_t *live = NULL, *applied = NULL;
    int64_t rev = 0;
    kapi_error *err = kapi_api__current(r, &live, &rev);
    if (err && err->status == KAPI_STATUS_NOT_FOUND) {
        kapi_error_free(err);
        err = NULL;
    }
    kapi_write_opts decode = *o;
    decode.fv = KAPI_FV_IGNORE; /* the body's own fields were checked by its schema */
    if (!err)
        err = kapi_api__apply(w, live, config, o->force, &applied);
    if (!err)
        err = apply_dups(r, o, dups);
    if (!err && !live)
        err = apply_name(r, applied);
    if (!err) {
        applied_from again = {w, live, config, o->force};
        err = kapi_api__decode_patched(r, &decode, applied, NULL, apply_again, &again, &w->obj);
        applied = NULL; /* taken */
    }
    if (!err) {
        w->verb = live ? KAPI_WRITE_UPDATE : KAPI_WRITE_CREATE;
        w->managed = true;
        w->old = live;
        w->old_rev = rev;
        err = kapi_api__write(w);
    }
    json_decref(live);
    json_decref(applied);
    return err;
}

static void serve_apply(kapi_req *r)
{
    kapi_write_opts opts;
    kapi_write w;
    kapi_dups dups;
    json_t *config = NULL;
    kapi_dups_init(&dups);
    kapi_error *err = kapi_api__write_options(r, "PatchOptions", true, &opts);
    if (!err)
        err = kapi_api__decode_apply(r, &config, &dups);
    bool retry = !err && !kapi_json_path_str(config, "metadata.resourceVersion");
    while (!err) {
        kapi_api__write_init(&w, r, KAPI_WRITE_UPDATE);
        w.manager = opts.manager;
        w.dry_run = opts.dry_run;
        err = apply_once(r, &w, &opts, config, &dups);
        if (!err || !retry || err->status != KAPI_STATUS_CONFLICT || !err->has_details ||
            err->ncauses)
            break;
        kapi_error_free(err);
        err = NULL;
        kapi_api__before_retry(r->api);
    }
    json_decref(config);
    kapi_dups_dispose(&dups);
    kapi_api__respond_written(r, &w, err);
}

void kapi_api__serve_patch(kapi_req *r)
{
    kapi_write_opts opts;
    kapi_patch_type type;
    json_t *patch = NULL;
    kapi_write w;
    kapi_api__write_init(&w, r, KAPI_WRITE_UPDATE);
    kapi_error *err = kapi_api__patch_type(r, &type);
    if (err) {
        kapi_api__respond_error(r, err);
        return;
    }
    if (type == KAPI_PATCH_APPLY) {
        serve_apply(r);
        return;
    }
    /* A custom resource has no patch strategy to merge by. */
    if (type == KAPI_PATCH_STRATEGIC && r->type->custom) {
        kapi_api__respond_error(r, kapi_error_new(KAPI_STATUS_UNSUPPORTED_MEDIA_TYPE,
                                                  "the body of the request was in an unknown "
                                                  "format - accepted media types include: "
                                                  "application/json-patch+json, "
                                                  "application/merge-patch+json, "
                                                  "application/apply-patch+yaml"));
        return;
    }
    err = kapi_api__write_options(r, "PatchOptions", false, &opts);
    if (!err)
        err = kapi_patch_parse(&patch, type, r->http->body, r->http->body_len,
                               opts.fv != KAPI_FV_IGNORE);
    bool retry = !err && !patch_sets_rv(type, patch);
    while (!err) {
        json_t *live = NULL, *doc = NULL;
        int64_t rev;
        err = kapi_api__current(r, &live, &rev);
        if (!err) {
            doc = kapi_json_copy(live);
            err = apply(type, &doc, patch, r->type->schema);
        }
        if (!err) {
            patched again = {type, live, patch, r->type->schema};
            const json_t *smp = type == KAPI_PATCH_STRATEGIC ? patch : NULL;
            err = kapi_api__decode_patched(r, &opts, doc, smp, patch_again, &again, &w.obj);
            doc = NULL; /* taken */
        }
        if (!err) {
            w.dry_run = opts.dry_run;
            w.manager = opts.manager;
            w.old = live; /* the update stage need not read it again */
            w.old_rev = rev;
            err = kapi_api__write(&w);
        }
        json_decref(doc);
        json_decref(live);
        if (!err || !retry || err->status != KAPI_STATUS_CONFLICT)
            break;
        kapi_error_free(err);
        err = NULL;
        kapi_api__before_retry(r->api);
    }
    json_decref(patch);
    kapi_api__respond_written(r, &w, err);
}
