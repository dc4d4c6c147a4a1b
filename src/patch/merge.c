/*
 * patch/merge: RFC 7386 JSON merge patch as github.com/evanphx/json-patch v4.12.0's
 * MergePatch applies it for kube-apiserver 1.26. Where the RFC and the library part: a
 * null or scalar patch is an error, not the new document; nulls are dropped from values
 * the patch adds whole (also inside lists of objects), but not from a list or a scalar
 * that replaces an object.
 */
#include "patch/patch_int.h"

static void prune_nulls(json_t *v);

/* pruneDocNulls: drops an object's null members, recursively. */
static void prune_object(json_t *obj)
{
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(obj, tmp, key, v)
    {
        if (json_is_null(v))
            json_object_del(obj, key);
        else
            prune_nulls(v);
    }
}

/* pruneNulls: objects lose their null members; a list keeps its nulls, its objects lose
 * theirs. */
static void prune_nulls(json_t *v)
{
    size_t i;
    json_t *item;
    if (json_is_object(v))
        prune_object(v);
    else if (json_is_array(v))
        json_array_foreach(v, i, item) prune_nulls(item);
}

static void merge_objects(json_t *doc, json_t *patch);

/* merge: the value a member becomes when both the document and the patch have it. */
static json_t *merge_value(json_t *cur, json_t *patch)
{
    if (!json_is_object(cur)) {
        prune_nulls(patch);
        return patch;
    }
    if (!json_is_object(patch))
        return patch;
    merge_objects(cur, patch);
    return cur;
}

/* mergeDocs: each member of patch into doc; a null deletes. */
static void merge_objects(json_t *doc, json_t *patch)
{
    const char *key;
    json_t *v, *cur;
    json_object_foreach(patch, key, v)
    {
        cur = json_object_get(doc, key);
        if (json_is_null(v)) {
            json_object_del(doc, key);
            continue;
        }
        if (!cur || json_is_null(cur))
            prune_nulls(v);
        json_object_set_nocheck(doc, key, !cur || json_is_null(cur) ? v : merge_value(cur, v));
    }
}

kapi_error *kapi_patch_merge(json_t **doc, const json_t *patch)
{
    if (json_is_null(*doc))
        return kapi_error_new(KAPI_STATUS_UNKNOWN, "Invalid JSON Document");
    if (!json_is_object(patch) && !json_is_array(patch))
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "Invalid JSON Patch");
    json_t *p = kapi_json_copy(patch);
    if (!json_is_object(*doc) || json_is_array(p)) {
        prune_nulls(p);
        json_decref(*doc);
        *doc = p;
        return NULL;
    }
    merge_objects(*doc, p);
    json_decref(p);
    return NULL;
}
