/*
 * fuzz_patch: the three PATCH formats as the api runs them (patch/patch.h): the body
 * parsed as kube-apiserver decodes it, applied to a document, and the result decoded,
 * defaulted and validated as an update of the type (kapi_api__decode_patched).
 *
 * The first byte picks: bits 0-1 the patch format (3 is a strategic merge patch without
 * a schema), bit 2 strict decoding, bits 3-5 the type (fuzz_stored_type). The rest is
 * the document, a NUL byte, and the patch; without a NUL the document is {}.
 */
#include "fuzz.h"

/* The patched document again, for a decode error's message (kapi_api_remake). */
static json_t *doc_again(void *doc)
{
    return kapi_json_copy(doc);
}

static void decode_result(const kapi_type *t, const json_t *doc, const json_t *patch, bool smp)
{
    fuzz_req f;
    fuzz_req_init(&f, "PATCH", KAPI_STR("/"), KAPI_STR(""), NULL, NULL, NULL, 0);
    f.r.type = t;
    kapi_write_opts opts = {.dry_run = true, .fv = KAPI_FV_STRICT};
    json_t *obj = NULL;
    kapi_error *err = kapi_api__decode_patched(&f.r, &opts, kapi_json_copy(doc), smp ? patch : NULL,
                                               doc_again, (void *)doc, &obj);
    if (!err && json_is_object(doc)) {
        kapi_type_prepare_update(t, obj, doc);
        err = kapi_type_validate(t, obj, doc);
    }
    fuzz_status(err);
    json_decref(obj);
    fuzz_req_dispose(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FUZZ_MAX_INPUT)
        return 0;
    const kapi_type *t = fuzz_stored_type((data[0] >> 3) & 7);
    int format = data[0] & 3;
    kapi_patch_type type = format == 3 ? KAPI_PATCH_STRATEGIC : (kapi_patch_type)format;
    const char *p = (const char *)data + 1, *nul = memchr(p, '\0', size - 1);
    const char *body = nul ? nul + 1 : p;
    size_t body_len = nul ? size - 1 - (size_t)(body - p) : size - 1;
    json_t *doc = nul ? kapi_json_parse(p, (size_t)(nul - p), NULL) : json_object();
    json_t *patch = NULL;
    kapi_error *err = kapi_patch_parse(&patch, type, body, body_len, data[0] & 4);
    if (!err && doc) {
        if (type == KAPI_PATCH_JSON)
            err = kapi_patch_json(&doc, patch);
        else if (type == KAPI_PATCH_MERGE)
            err = kapi_patch_merge(&doc, patch);
        else
            err = kapi_patch_strategic(&doc, patch, format == 3 ? NULL : t->schema);
        if (!err)
            decode_result(t, doc, patch, type == KAPI_PATCH_STRATEGIC);
    }
    fuzz_status(err);
    json_decref(patch);
    json_decref(doc);
    return 0;
}
