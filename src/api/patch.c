/*
 * api/patch: the patch verb (reference 4.2): a JSON, merge or strategic merge patch
 * (src/patch) applied to the stored object as the client reads it, the result decoded
 * like an update body and written as an update.
 *
 * A patch that does not carry metadata.resourceVersion is applied again to the newer
 * object when another write got in between (no spurious 409), as kube-apiserver's
 * GuaranteedUpdate does.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api_int.h"
#include "patch/patch.h"

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

kapi_error *kapi_api__current(kapi_req *r, json_t **out)
{
    const kapi_type *t = r->type;
    kapi_obj *o = NULL;
    kapi_str key = kapi_type_key(&r->arena, t, r->info.ns, r->info.name);
    *out = NULL;
    if (kapi_store_get(r->api->store, key, &o) != KAPI_STORE_OK)
        return kapi_api__err_not_found(&r->arena, t, r->info.name);
    json_t *v = kapi_api__parse_stored(o);
    kapi_obj_unref(o);
    *out = t->strategy->from_storage ? t->strategy->from_storage(t, v) : v;
    return NULL;
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
    err = kapi_api__write_options(r, "PatchOptions", &opts);
    if (!err)
        err = kapi_patch_parse(&patch, type, r->http->body, r->http->body_len,
                               opts.fv != KAPI_FV_IGNORE);
    bool retry = !err && !patch_sets_rv(type, patch);
    while (!err) {
        json_t *doc = NULL;
        if ((err = kapi_api__current(r, &doc)) == NULL &&
            (err = apply(type, &doc, patch, r->type->schema)) == NULL &&
            (err = kapi_api__decode_patched(
                 r, &opts, doc, type == KAPI_PATCH_STRATEGIC ? patch : NULL, &w.obj)) == NULL) {
            w.dry_run = opts.dry_run;
            err = kapi_api__write(&w);
        }
        json_decref(doc);
        if (!err || !retry || err->status != KAPI_STATUS_CONFLICT)
            break;
        kapi_error_free(err);
        err = NULL;
    }
    json_decref(patch);
    if (err)
        kapi_api__respond_error(r, err);
    else if (w.unstored)
        kapi_api__respond_unstored(r, r->type, w.status, w.unstored);
    else
        kapi_api__respond_stored(r, r->type, w.status, w.stored);
}
