/*
 * fuzz_schema: a CRD version's openAPIV3Schema checked as a CRD's is (kapi_schema_crd_check,
 * with every rule and with those a stored schema relaxes), compiled (kapi_schema_compile),
 * then used as a custom resource's schema is: an object pruned and defaulted by the decode
 * walk and validated against it (its embedded resources too), the causes rendered as the
 * 422 a client reads.
 *
 * Input: the schema's JSON, a NUL byte, and the object's JSON (without a NUL, the object
 * is {"spec":{}}).
 */
#include "fuzz.h"
#include "schema/field.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT)
        return 0;
    const char *p = (const char *)data, *nul = memchr(p, '\0', size);
    json_t *src = kapi_json_parse(p, nul ? (size_t)(nul - p) : size, NULL);
    json_t *obj = nul ? kapi_json_parse(nul + 1, size - (size_t)(nul + 1 - p), NULL)
                      : json_pack("{s:{}}", "spec");
    if (src) {
        json_t *stored = json_pack("[O]", src);
        kapi_schema_crd_rules rules[2] = {kapi_schema_crd_rules_for(NULL),
                                          kapi_schema_crd_rules_for(stored)};
        for (int i = 0; i < 2; i++) {
            kapi_error *crd = kapi_error_new(KAPI_STATUS_INVALID, "%s", "");
            kapi_schema_crd_check(src, "spec.versions[0].schema.openAPIV3Schema", &rules[i], crd);
            fuzz_status(kapi_field_finish_invalid(crd, "CustomResourceDefinition",
                                                  "apiextensions.k8s.io", "w.example.com"));
        }
        json_decref(stored);
    }
    kapi_schema_root *root = NULL;
    kapi_error *err = src ? kapi_schema_compile(src, &root) : NULL;
    if (root && obj) {
        kapi_arena a;
        kapi_arena_init(&a);
        kapi_schema_walk w = {.arena = &a, .defaults = true, .reorder = true};
        fuzz_status(kapi_schema_decode(kapi_schema_root_node(root), obj, &w));
        kapi_error *inv = kapi_error_new(KAPI_STATUS_INVALID, "%s", "");
        kapi_schema_validate(kapi_schema_root_node(root), obj, "", inv);
        kapi_schema_validate_embedded(kapi_schema_root_node(root), obj, "", inv);
        fuzz_status(inv->ncauses ? kapi_field_finish_invalid(inv, "Widget", "example.com", "w")
                                 : inv);
        kapi_arena_dispose(&a);
    }
    kapi_schema_root_free(root);
    fuzz_status(err);
    json_decref(obj);
    json_decref(src);
    return 0;
}
