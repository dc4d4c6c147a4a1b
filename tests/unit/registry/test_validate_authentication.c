/* Unit tests for the validation of TokenReview and SelfSubjectReview
 * (registry/validate_authentication.c): what kube-apiserver 1.26 answers to the same
 * bodies (SelfSubjectReview as 1.28 serves it at v1). */
#include "validate_cases.h"

/* kapi_type_validate's answer to body as a create of group/v1 plural: NULL when valid. */
static kapi_error *validate(const kapi_registry *reg, const char *group, const char *plural,
                            const char *body)
{
    const kapi_type *t =
        kapi_registry_lookup(reg, kapi_str_c(group), KAPI_STR("v1"), kapi_str_c(plural));
    if (!t)
        test_fail(__FILE__, __LINE__, "no type %s %s", group, plural);
    json_t *obj = vcase_parse(plural, body);
    kapi_type_prepare_create(t, obj);
    kapi_error *err = kapi_type_validate(t, obj, NULL);
    json_decref(obj);
    return err;
}

/* A TokenReview needs a token (400, before anything else); nothing else is checked, not
 * even its name. */
TEST(validate_tokenreview)
{
    static const struct {
        const char *body;
        bool refused;
    } cases[] = {
        {"{\"spec\":{\"token\":\"abc\"}}", false},
        {"{\"metadata\":{\"name\":\"x..Y\",\"labels\":{\"a\":\"b\"}},\"spec\":{\"token\":\"abc\","
         "\"audiences\":[\"x\"]}}",
         false},
        {"{\"spec\":{}}", true},
        {"{}", true},
        {"{\"metadata\":{\"name\":\"x..Y\"},\"spec\":{\"token\":\"\"}}", true},
    };
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        kapi_error *err = validate(reg, "authentication.k8s.io", "tokenreviews", cases[i].body);
        if (cases[i].refused) {
            CHECK(err && err->status == KAPI_STATUS_BAD_REQUEST && !err->has_details);
            CHECK_STR_EQ(err->message, "token is required for TokenReview in authentication");
        } else if (err) {
            test_fail(__FILE__, __LINE__, "case %zu: %s", i, err->message);
        }
        kapi_error_free(err);
    }
    kapi_registry_free(reg);
}

/* A SelfSubjectReview is never refused: kube reads nothing of the body. */
TEST(validate_selfsubjectreview)
{
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    kapi_error *err = validate(reg, "authentication.k8s.io", "selfsubjectreviews",
                               "{\"metadata\":{\"name\":\"x..Y\",\"generateName\":\"-\"},"
                               "\"status\":{\"userInfo\":{\"username\":\"me\"}}}");
    CHECK(err == NULL);
    kapi_registry_free(reg);
}
