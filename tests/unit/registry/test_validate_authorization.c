/* Unit tests for the validation of the access reviews (registry/validate_authorization.c).
 * The messages are kube-apiserver 1.26's answers to the same bodies, but for what a
 * refused metadata shows of the managedFields entry kube's field manager adds: its time
 * to the second, and the FieldsV1 pointer's fixed address. */
#include "validate_cases.h"

#define BAD ".authorization.k8s.io \"\" is invalid: "
#define ONE_OF                                                                                     \
    "spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or "   \
    "resourceAttributes must be specified"
#define NO_SUBJECT "spec.user: Invalid value: \"\": at least one of user or group must be specified"
#define BOTH(path, verb)                                                                           \
    "spec.nonResourceAttributes: Invalid value: authorization.NonResourceAttributes{Path:" path    \
    ", Verb:" verb "}: cannot be specified in combination with resourceAttributes"

/* The managedFields entry of a create by Python-urllib, as the field manager adds it. */
#define MANAGED                                                                                    \
    "\"managedFields\":[{\"manager\":\"Python-urllib\",\"operation\":\"Update\",\"apiVersion\":"   \
    "\"authorization.k8s.io/v1\",\"time\":\"2026-11-26T03:19:19Z\",\"fieldsType\":\"FieldsV1\","   \
    "\"fieldsV1\":{\"f:spec\":{}}}]"
/* Go's %#v of a review's ObjectMeta: name to resourceVersion, generation, labels to
 * finalizers, as given; the rest zero (kube's create handler wipes them) but for MANAGED. */
#define META(head, gen, tail)                                                                      \
    "metadata: Invalid value: v1.ObjectMeta{" head ", Generation:" gen                             \
    ", CreationTimestamp:time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC), "                    \
    "DeletionTimestamp:<nil>, DeletionGracePeriodSeconds:(*int64)(nil), " tail                     \
    ", ManagedFields:[]v1.ManagedFieldsEntry{v1.ManagedFieldsEntry{Manager:\"Python-urllib\", "    \
    "Operation:\"Update\", APIVersion:\"authorization.k8s.io/v1\", Time:time.Date(2026, "          \
    "time.November, 26, 3, 19, 19, 0, time.UTC), FieldsType:\"FieldsV1\", "                        \
    "FieldsV1:(*v1.FieldsV1)(0xc000000000), Subresource:\"\"}}}: "
#define HEAD(name, ns)                                                                             \
    "Name:" name ", GenerateName:\"\", Namespace:" ns ", SelfLink:\"\", UID:\"\", "                \
    "ResourceVersion:\"\""
#define NO_TAIL                                                                                    \
    "Labels:map[string]string(nil), Annotations:map[string]string(nil), "                          \
    "OwnerReferences:[]v1.OwnerReference(nil), Finalizers:[]string(nil)"

#define SAR                                                                                        \
    "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\","                \
    "\"metadata\":{" MANAGED "},\"spec\":{\"user\":\"alice\",\"resourceAttributes\":{"             \
    "\"verb\":\"get\",\"resource\":\"pods\"}}}"

static const vcase sar_cases[] = {
    {"valid", "{}", NULL, 0},
    {"groups and a path",
     "{\"spec\":{\"user\":null,\"groups\":[\"g\"],\"resourceAttributes\":null,"
     "\"nonResourceAttributes\":{\"path\":\"/x\",\"verb\":\"get\"}}}",
     NULL, 0},
    {"empty attributes are attributes", "{\"spec\":{\"resourceAttributes\":{}}}", NULL, 0},
    {"what kube's create handler wipes, and empty lists and maps",
     "{\"metadata\":{\"uid\":\"x\",\"selfLink\":\"/s\",\"creationTimestamp\":"
     "\"2020-01-01T00:00:00Z\",\"deletionTimestamp\":\"2020-01-01T00:00:00Z\","
     "\"deletionGracePeriodSeconds\":3,\"namespace\":\"ns\",\"labels\":{},\"annotations\":{},"
     "\"finalizers\":[],\"ownerReferences\":[],\"generation\":0,\"name\":\"\"}}",
     NULL, 0},
    {"empty spec", "{\"spec\":{\"user\":null,\"resourceAttributes\":null}}",
     BAD "[" ONE_OF ", " NO_SUBJECT "]", 2},
    {"attributes null", "{\"spec\":{\"resourceAttributes\":null,\"nonResourceAttributes\":null}}",
     BAD ONE_OF, 1},
    {"no subject",
     "{\"spec\":{\"user\":\"\",\"groups\":[],\"uid\":\"u\",\"extra\":{\"a\":[\"b\"]}}}",
     BAD NO_SUBJECT, 1},
    {"both attributes", "{\"spec\":{\"nonResourceAttributes\":{\"path\":\"/x\\\"y\"}}}",
     BAD BOTH("\"/x\\\"y\"", "\"\""), 1},
    {"a name", "{\"metadata\":{\"name\":\"n\"}}",
     BAD META(HEAD("\"n\"", "\"\""), "0", NO_TAIL) "must be empty", 1},
    {"every field",
     "{\"metadata\":{\"generateName\":\"g-\",\"resourceVersion\":\"5\",\"generation\":2,"
     "\"labels\":{\"b\":\"2\",\"a\":\"1\"},\"annotations\":{\"k\":\"v\"},\"ownerReferences\":[{"
     "\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"p\",\"uid\":\"u1\",\"controller\":true}],"
     "\"finalizers\":[\"x/y\"]}}",
     BAD "metadata: Invalid value: v1.ObjectMeta{Name:\"\", GenerateName:\"g-\", Namespace:\"\", "
         "SelfLink:\"\", UID:\"\", ResourceVersion:\"5\", Generation:2, "
         "CreationTimestamp:time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC), "
         "DeletionTimestamp:<nil>, DeletionGracePeriodSeconds:(*int64)(nil), "
         "Labels:map[string]string{\"a\":\"1\", \"b\":\"2\"}, "
         "Annotations:map[string]string{\"k\":\"v\"}, "
         "OwnerReferences:[]v1.OwnerReference{v1.OwnerReference{APIVersion:\"v1\", Kind:\"Pod\", "
         "Name:\"p\", UID:\"u1\", Controller:(*bool)(0xc000000000), "
         "BlockOwnerDeletion:(*bool)(nil)}}, Finalizers:[]string{\"x/y\"}, "
         "ManagedFields:[]v1.ManagedFieldsEntry{v1.ManagedFieldsEntry{Manager:\"Python-urllib\", "
         "Operation:\"Update\", APIVersion:\"authorization.k8s.io/v1\", Time:time.Date(2026, "
         "time.November, 26, 3, 19, 19, 0, time.UTC), FieldsType:\"FieldsV1\", "
         "FieldsV1:(*v1.FieldsV1)(0xc000000000), Subresource:\"\"}}}: must be empty",
     1},
    {"spec and metadata",
     "{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"user\":null,\"nonResourceAttributes\":{"
     "\"verb\":\"get\"}}}",
     BAD "[" BOTH("\"\"", "\"get\"") ", " NO_SUBJECT ", " META(
         HEAD("\"\"", "\"\""), "0",
         "Labels:map[string]string{\"a\":\"b\"}, Annotations:map[string]string(nil), "
         "OwnerReferences:[]v1.OwnerReference(nil), Finalizers:[]string(nil)") "must be empty]",
     3},
};

TEST(validate_subjectaccessreview)
{
    vcase_run("authorization.k8s.io", "v1", "subjectaccessreviews", SAR, NULL, sar_cases,
              KAPI_ARRAY_LEN(sar_cases));
}

#define SSAR                                                                                       \
    "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SelfSubjectAccessReview\","            \
    "\"metadata\":{" MANAGED "},\"spec\":{\"resourceAttributes\":{\"verb\":\"get\","               \
    "\"resource\":\"pods\"}}}"

static const vcase ssar_cases[] = {
    {"valid", "{}", NULL, 0},
    {"a path",
     "{\"spec\":{\"resourceAttributes\":null,\"nonResourceAttributes\":{\"path\":\"/healthz\","
     "\"verb\":\"get\"}}}",
     NULL, 0},
    {"no attributes", "{\"spec\":{\"resourceAttributes\":null}}", BAD ONE_OF, 1},
    {"both attributes", "{\"spec\":{\"nonResourceAttributes\":{}}}", BAD BOTH("\"\"", "\"\""), 1},
    {"an annotation",
     "{\"metadata\":{\"annotations\":{\"a\":\"b\"}},\"spec\":{\"resourceAttributes\":null}}",
     BAD "[" ONE_OF ", " META(HEAD("\"\"", "\"\""), "0",
                              "Labels:map[string]string(nil), Annotations:map[string]string{"
                              "\"a\":\"b\"}, OwnerReferences:[]v1.OwnerReference(nil), "
                              "Finalizers:[]string(nil)") "must be empty]",
     2},
};

TEST(validate_selfsubjectaccessreview)
{
    vcase_run("authorization.k8s.io", "v1", "selfsubjectaccessreviews", SSAR, NULL, ssar_cases,
              KAPI_ARRAY_LEN(ssar_cases));
}

#define LSAR                                                                                       \
    "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"LocalSubjectAccessReview\","           \
    "\"metadata\":{\"namespace\":\"default\"," MANAGED "},\"spec\":{\"user\":\"alice\","           \
    "\"resourceAttributes\":{\"namespace\":\"default\",\"verb\":\"get\",\"resource\":\"pods\"}}}"
#define MATCH(ns)                                                                                  \
    "spec.resourceAttributes.namespace: Invalid value: " ns ": must match metadata.namespace"
#define DISALLOWED(path, verb)                                                                     \
    "spec.nonResourceAttributes: Invalid value: authorization.NonResourceAttributes{Path:" path    \
    ", Verb:" verb "}: disallowed on this kind of request"
#define EXCEPT_NS "must be empty except for namespace"
#define NAMED_N META(HEAD("\"n\"", "\"default\""), "0", NO_TAIL) EXCEPT_NS
#define FINALIZER_TAIL                                                                             \
    "Labels:map[string]string(nil), Annotations:map[string]string(nil), "                          \
    "OwnerReferences:[]v1.OwnerReference(nil), Finalizers:[]string{\"a\"}"

static const vcase lsar_cases[] = {
    {"valid", "{}", NULL, 0},
    {"no namespace asked", "{\"spec\":{\"resourceAttributes\":{\"namespace\":null}}}",
     BAD MATCH("\"\""), 1},
    {"another namespace", "{\"spec\":{\"resourceAttributes\":{\"namespace\":\"other\"}}}",
     BAD MATCH("\"other\""), 1},
    {"a path",
     "{\"spec\":{\"resourceAttributes\":null,\"nonResourceAttributes\":{\"path\":\"/p\","
     "\"verb\":\"get\"}}}",
     BAD DISALLOWED("\"/p\"", "\"get\""), 1},
    {"empty spec", "{\"spec\":{\"resourceAttributes\":null,\"user\":null}}",
     BAD "[" ONE_OF ", " NO_SUBJECT "]", 2},
    {"a name", "{\"metadata\":{\"name\":\"x\",\"finalizers\":[\"a\"]}}",
     BAD META(HEAD("\"x\"", "\"default\""), "0", FINALIZER_TAIL) EXCEPT_NS, 1},
    {"everything at once",
     "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"user\":\"u\",\"nonResourceAttributes\":{"
     "\"path\":\"/p\"},\"resourceAttributes\":{\"namespace\":\"x\"}}}",
     BAD "[" BOTH("\"/p\"", "\"\"") ", " NAMED_N
                                    ", " MATCH("\"x\"") ", " DISALLOWED("\"/p\"", "\"\"") "]",
     4},
};

TEST(validate_localsubjectaccessreview)
{
    vcase_run("authorization.k8s.io", "v1", "localsubjectaccessreviews", LSAR, NULL, lsar_cases,
              KAPI_ARRAY_LEN(lsar_cases));
}

/* The 422 of a review names its group only, as kube's does (no kind, no name). */
TEST(validate_review_details)
{
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    const kapi_type *t = kapi_registry_lookup(reg, KAPI_STR("authorization.k8s.io"), KAPI_STR("v1"),
                                              KAPI_STR("subjectaccessreviews"));
    json_t *obj = vcase_parse("details", "{\"metadata\":{\"name\":\"n\"},\"spec\":{}}");
    kapi_error *err = kapi_type_validate(t, obj, NULL);
    CHECK(err && err->status == KAPI_STATUS_INVALID && err->has_details);
    CHECK_STR_EQ(err->group, "authorization.k8s.io");
    CHECK(err->kind == NULL && err->name == NULL);
    CHECK_INT_EQ(err->ncauses, 3);
    kapi_error_free(err);
    json_decref(obj);
    kapi_registry_free(reg);
}

/* A SelfSubjectRulesReview is refused without a namespace (400, kube's "no namespace on
 * request") and is otherwise not checked, metadata included. */
TEST(validate_selfsubjectrulesreview)
{
    static const struct {
        const char *body;
        bool refused;
    } cases[] = {
        {"{\"spec\":{\"namespace\":\"default\"}}", false},
        {"{\"metadata\":{\"name\":\"x..Y\",\"labels\":{\"a\":\"b\"}},\"spec\":{\"namespace\":"
         "\"default\"}}",
         false},
        {"{\"spec\":{}}", true},
        {"{\"spec\":{\"namespace\":\"\"}}", true},
        {"{\"metadata\":{\"name\":\"x\"}}", true},
    };
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    const kapi_type *t = kapi_registry_lookup(reg, KAPI_STR("authorization.k8s.io"), KAPI_STR("v1"),
                                              KAPI_STR("selfsubjectrulesreviews"));
    CHECK(t != NULL);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        json_t *obj = vcase_parse("ssrr", cases[i].body);
        kapi_error *err = kapi_type_validate(t, obj, NULL);
        if (cases[i].refused) {
            CHECK(err && err->status == KAPI_STATUS_BAD_REQUEST && !err->has_details);
            CHECK_STR_EQ(err->message, "no namespace on request");
        } else if (err) {
            test_fail(__FILE__, __LINE__, "case %zu: %s", i, err->message);
        }
        kapi_error_free(err);
        json_decref(obj);
    }
    kapi_registry_free(reg);
}
