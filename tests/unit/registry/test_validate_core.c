/* Unit tests for the Namespace and ServiceAccount validation (registry/validate_core.c). */
#include "validate_cases.h"

#define NS_BASE                                                                                    \
    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"ns\",\"uid\":\"u1\"}}"
#define NS "Namespace \"ns\" is invalid: "

static const vcase create_cases[] = {
    {"valid", "{}", NULL, 0},
    {"valid qualified finalizer", "{\"spec\":{\"finalizers\":[\"example.com/x\"]}}", NULL, 0},
    {"name upper", "{\"metadata\":{\"name\":\"Golden_A\"}}",
     "Namespace \"Golden_A\" is invalid: metadata.name: Invalid value: \"Golden_A\": " LABEL_MSG,
     1},
    {"name with a NUL: the whole name is judged and shown",
     "{\"metadata\":{\"name\":\"a\\u0000b\"}}",
     "Namespace \"a\\x00b\" is invalid: metadata.name: Invalid value: \"a\\x00b\": " LABEL_MSG, 1},
    {"name dots", "{\"metadata\":{\"name\":\"a.b\"}}",
     "Namespace \"a.b\" is invalid: metadata.name: Invalid value: \"a.b\": " LABEL_MSG, 1},
    {"generateName", "{\"metadata\":{\"generateName\":\"Bad-\"}}",
     NS "metadata.generateName: Invalid value: \"Bad-\": " LABEL_MSG, 1},
    {"spec finalizer", "{\"spec\":{\"finalizers\":[\"foo\"]}}",
     NS "spec.finalizers: Invalid value: \"foo\": name is neither a standard finalizer name nor "
        "is it fully qualified",
     1},
    {"spec finalizer not qualified", "{\"spec\":{\"finalizers\":[\"a/b/c\"]}}",
     NS "spec.finalizers: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric "
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and "
        "'/' (e.g. 'example.com/MyName')",
     1},
    {"metadata finalizer", "{\"metadata\":{\"finalizers\":[\"foo\"]}}",
     NS "metadata.finalizers[0]: Invalid value: \"foo\": name is neither a standard finalizer "
        "name nor is it fully qualified",
     1},
    {"labels", "{\"metadata\":{\"labels\":{\"team\":\"bad value!\",\"a/b/c\":\"x\"}}}",
     NS "[metadata.labels: Invalid value: \"a/b/c\": a qualified name must consist of "
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and "
        "'/' (e.g. 'example.com/MyName'), metadata.labels: Invalid value: \"bad "
        "value!\": " LABEL_VALUE_MSG "]",
     2},
};

TEST(validate_namespace_create)
{
    vcase_run("", "v1", "namespaces", NS_BASE, NULL, create_cases, KAPI_ARRAY_LEN(create_cases));
}

static const vcase update_cases[] = {
    {"valid", "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}", NULL, 0},
    {"spec finalizers are kept from the stored object", "{\"spec\":{\"finalizers\":[\"foo\"]}}",
     NULL, 0},
    {"uid", "{\"metadata\":{\"uid\":\"u2\"}}",
     NS "metadata.uid: Invalid value: \"u2\": field is immutable", 2},
    {"finalizer", "{\"metadata\":{\"finalizers\":[\"foo\"]}}",
     NS "metadata.finalizers[0]: Invalid value: \"foo\": name is neither a standard finalizer "
        "name nor is it fully qualified",
     1},
};

TEST(validate_namespace_update)
{
    vcase_run("", "v1", "namespaces", NS_BASE, NS_BASE, update_cases, KAPI_ARRAY_LEN(update_cases));
}

/* A write to a namespace's status or finalize subresource, as the pipeline validates it. */
static char *subresource_message(const kapi_registry *reg, const char *sub, const char *obj_json)
{
    const kapi_type *t =
        kapi_registry_lookup(reg, KAPI_STR(""), KAPI_STR("v1"), KAPI_STR("namespaces"));
    json_t *obj = vcase_parse(sub, obj_json), *old = vcase_parse(sub, NS_BASE);
    kapi_error *err = kapi_type_validate_subresource(t, sub, obj, old);
    char *msg = err ? kapi_xstrdup(err->message) : NULL;
    kapi_error_free(err);
    json_decref(obj);
    json_decref(old);
    return msg;
}

TEST(validate_namespace_subresources)
{
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    char *m = subresource_message(reg, "status",
                                  "{\"metadata\":{\"name\":\"ns\",\"uid\":\"u1\"},\"status\":{"
                                  "\"phase\":\"Active\"}}");
    CHECK(m == NULL);
    m = subresource_message(reg, "status",
                            "{\"metadata\":{\"name\":\"ns\",\"uid\":\"u1\"},\"status\":{\"phase\":"
                            "\"Terminating\"}}");
    CHECK_STR_EQ(m, NS "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if "
                       "`deletionTimestamp` is empty");
    free(m);
    m = subresource_message(reg, "finalize",
                            "{\"metadata\":{\"name\":\"ns\",\"uid\":\"u1\"},\"spec\":{"
                            "\"finalizers\":[\"kubernetes\",\"foo\"]}}");
    CHECK_STR_EQ(m, NS "spec.finalizers[1]: Invalid value: \"foo\": name is neither a standard "
                       "finalizer name nor is it fully qualified");
    free(m);
    kapi_registry_free(reg);
}

#define SA_BASE                                                                                    \
    "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":\"robot\","         \
    "\"namespace\":\"default\",\"uid\":\"u1\"}}"
#define SA "ServiceAccount \"robot\" is invalid: "
#define FINALIZER_MSG "name is neither a standard finalizer name nor is it fully qualified"

static const vcase sa_create_cases[] = {
    {"valid", "{}", NULL, 0},
    {"a subdomain name", "{\"metadata\":{\"name\":\"ci.robot\"}}", NULL, 0},
    {"secrets keep only their names", "{\"secrets\":[{\"name\":\"s\",\"kind\":\"Secret\"}]}", NULL,
     0},
    {"name", "{\"metadata\":{\"name\":\"Bad_Name\"}}",
     "ServiceAccount \"Bad_Name\" is invalid: metadata.name: Invalid value: "
     "\"Bad_Name\": " SUBDOMAIN_MSG,
     1},
    {"generateName and finalizer",
     "{\"metadata\":{\"generateName\":\"Bad-\",\"finalizers\":[\"foo\"]}}",
     SA "[metadata.generateName: Invalid value: \"Bad-\": " SUBDOMAIN_MSG
        ", metadata.finalizers[0]: Invalid value: \"foo\": " FINALIZER_MSG "]",
     2},
    {"no namespace", "{\"metadata\":{\"namespace\":null}}", SA "metadata.namespace: Required value",
     1},
};

TEST(validate_serviceaccount_create)
{
    vcase_run("", "v1", "serviceaccounts", SA_BASE, NULL, sa_create_cases,
              KAPI_ARRAY_LEN(sa_create_cases));
}

/* kube checks the metadata of an update three times over (the generic update checks, then
 * ValidateServiceAccountUpdate's update and create checks): one message, six causes. */
static const vcase sa_update_cases[] = {
    {"valid", "{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"automountServiceAccountToken\":false}",
     NULL, 0},
    {"label and finalizer", "{\"metadata\":{\"labels\":{\"a b\":\"c\"},\"finalizers\":[\"foo\"]}}",
     SA "[metadata.labels: Invalid value: \"a b\": " QNAME_PART_MSG
        ", metadata.finalizers[0]: Invalid value: \"foo\": " FINALIZER_MSG "]",
     6},
    {"uid", "{\"metadata\":{\"uid\":\"u2\"}}",
     SA "metadata.uid: Invalid value: \"u2\": field is immutable", 2},
};

TEST(validate_serviceaccount_update)
{
    vcase_run("", "v1", "serviceaccounts", SA_BASE, SA_BASE, sa_update_cases,
              KAPI_ARRAY_LEN(sa_update_cases));
}
