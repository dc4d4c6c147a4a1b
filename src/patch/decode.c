/*
 * patch/decode: a PATCH body read as kube-apiserver 1.26 reads it (its 400s, worded after
 * the Go type each patch type is decoded into), and Go's view of decoded values that the
 * rest of the module shares.
 */
#include "patch/patch_int.h"

#include <stdlib.h>
#include <string.h>

kapi_patch__gotype kapi_patch__gotype_of(const json_t *v)
{
    static const kapi_patch__gotype by_json[] = {
        [JSON_OBJECT] = KAPI_PATCH_GO_MAP,    [JSON_ARRAY] = KAPI_PATCH_GO_SLICE,
        [JSON_STRING] = KAPI_PATCH_GO_STRING, [JSON_INTEGER] = KAPI_PATCH_GO_INT64,
        [JSON_REAL] = KAPI_PATCH_GO_FLOAT64,  [JSON_TRUE] = KAPI_PATCH_GO_BOOL,
        [JSON_FALSE] = KAPI_PATCH_GO_BOOL,    [JSON_NULL] = KAPI_PATCH_GO_NIL,
    };
    return v ? by_json[json_typeof(v)] : KAPI_PATCH_GO_NIL;
}

bool kapi_patch__go_eq(const json_t *a, const json_t *b)
{
    kapi_patch__gotype t = kapi_patch__gotype_of(a);
    if (t != kapi_patch__gotype_of(b) || t == KAPI_PATCH_GO_MAP || t == KAPI_PATCH_GO_SLICE)
        return false;
    return t == KAPI_PATCH_GO_NIL || json_equal((json_t *)a, (json_t *)b);
}

kapi_error *kapi_patch__rejected(void)
{
    kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID,
                                     "the server rejected our request due to an error in our "
                                     "request");
    err->has_details = true;
    return err;
}

kapi_error *kapi_patch__type_error(const char *prefix, const json_t *v, const char *type)
{
    return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                          "%sjson: cannot unmarshal %s into Go value of type %s", prefix,
                          kapi_go_json_kind(v), type);
}

/* Go's UnmarshalTypeError for a field of handlers.jsonPatchOp. */
static kapi_error *field_error(const json_t *v, const char *field)
{
    return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                          "error decoding patch: json: cannot unmarshal %s into Go struct field "
                          "jsonPatchOp.%s of type string",
                          kapi_go_json_kind(v), field);
}

/* The members of handlers.jsonPatchOp that are Go strings. */
static bool is_string_field(const char *key)
{
    return strcmp(key, "op") == 0 || strcmp(key, "path") == 0 || strcmp(key, "from") == 0;
}

/* One operation decoded into handlers.jsonPatchOp: op, path and from are strings. */
static kapi_error *check_op_typed(const json_t *op)
{
    const char *key;
    json_t *v;
    if (json_is_null(op))
        return NULL;
    if (!json_is_object(op))
        return kapi_patch__type_error("error decoding patch: ", op, "handlers.jsonPatchOp");
    json_object_foreach((json_t *)op, key, v)
    {
        if (is_string_field(key) && !json_is_string(v) && !json_is_null(v))
            return field_error(v, key);
    }
    return NULL;
}

/* The decoding kube-apiserver does first under fieldValidation Warn or Strict: a JSON patch
 * into []handlers.jsonPatchOp, the first type error reported. */
static kapi_error *check_ops_typed(const json_t *patch)
{
    kapi_error *err = NULL;
    size_t i;
    json_t *op;
    if (json_is_null(patch))
        return NULL;
    if (!json_is_array(patch))
        return kapi_patch__type_error("error decoding patch: ", patch, "[]handlers.jsonPatchOp");
    json_array_foreach(patch, i, op)
    {
        if ((err = check_op_typed(op)) != NULL)
            return err;
    }
    return NULL;
}

/* A merge or strategic patch decoded into map[string]interface{}: null is an empty map. */
static kapi_error *check_map(const json_t *patch, const char *prefix)
{
    if (json_is_object(patch) || json_is_null(patch))
        return NULL;
    return kapi_patch__type_error(prefix, patch, "map[string]interface {}");
}

/* The 400 for a body that is not JSON: kube-apiserver passes the decoder's syntax error on,
 * prefixed when it decoded strictly first, or (a merge patch) gives evanphx's own. */
static kapi_error *syntax_error(kapi_patch_type type, bool strict, const char *msg)
{
    if (strict && type != KAPI_PATCH_STRATEGIC)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "error decoding patch: %s", msg);
    if (type == KAPI_PATCH_MERGE)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "Invalid JSON Patch");
    return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%s", msg);
}

kapi_error *kapi_patch_parse(json_t **out, kapi_patch_type type, const char *body, size_t n,
                             bool strict)
{
    char *msg = NULL;
    kapi_error *err = NULL;
    json_t *v = kapi_json_parse(body, n, &msg);
    *out = NULL;
    if (!v) {
        err = syntax_error(type, strict, msg);
        free(msg);
        return err;
    }
    if (type == KAPI_PATCH_JSON && strict)
        err = check_ops_typed(v);
    else if (type == KAPI_PATCH_MERGE && strict)
        err = check_map(v, "error decoding patch: ");
    else if (type == KAPI_PATCH_STRATEGIC)
        err = check_map(v, "");
    if (err)
        json_decref(v);
    else
        *out = v;
    return err;
}
