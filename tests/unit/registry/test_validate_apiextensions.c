/* Unit tests for the CustomResourceDefinition object's own rules
 * (registry/validate_apiextensions.c): 1.26's rules and cause order under the public v1
 * paths (what 1.26 hoists is reported per version, no spec.version, the webhook's own
 * fields), with lists and versions shown as JSON instead of 1.26's Go %#v. */
#include "validate_cases.h"

#define SCHEMA "{\"openAPIV3Schema\":{\"type\":\"object\"}}"
#define CRD_BASE                                                                                   \
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","           \
    "\"metadata\":{\"name\":\"gizmos.example.com\",\"uid\":\"u1\"},\"spec\":{\"group\":"           \
    "\"example.com\",\"scope\":\"Namespaced\",\"names\":{\"plural\":\"gizmos\",\"kind\":"          \
    "\"Gizmo\"},\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"                  \
    "\"schema\":" SCHEMA "}]}}"
#define CRD "CustomResourceDefinition.apiextensions.k8s.io \"gizmos.example.com\" is invalid: "
#define VERSION(name, storage, extra)                                                              \
    "{\"name\":\"" name "\",\"served\":true,\"storage\":" storage extra "}"
#define WEBHOOK(cc, reviews)                                                                       \
    "{\"spec\":{\"conversion\":{\"strategy\":\"Webhook\",\"webhook\":{\"clientConfig\":" cc        \
    ",\"conversionReviewVersions\":" reviews "}}}}"

static const vcase create_cases[] = {
    {"valid", "{}", NULL, 0},
    {"valid per-version schemas and protected group approved",
     "{\"metadata\":{\"name\":\"gizmos.x.k8s.io\",\"annotations\":{\"api-approved.kubernetes.io\":"
     "\"https://github.com/kubernetes/enhancements/pull/1111\"}},\"spec\":{\"group\":\"x.k8s.io\","
     "\"versions\":[" VERSION("v1", "true", ",\"schema\":" SCHEMA) "," VERSION(
         "v2", "false",
         ",\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"description\":"
         "\"d\"}}") "]}}",
     NULL, 0},
    {"valid webhook",
     WEBHOOK("{\"service\":{\"name\":\"s\",\"namespace\":\"n\",\"path\":\"/c\"}}", "[\"v1\"]"),
     NULL, 0},
    {"name with a NUL after the right one",
     "{\"metadata\":{\"name\":\"gizmos.example.com\\u0000x\"}}",
     "CustomResourceDefinition.apiextensions.k8s.io \"gizmos.example.com\\x00x\" is invalid: "
     "[metadata.name: Invalid value: \"gizmos.example.com\\x00x\": " SUBDOMAIN_MSG ", "
     "metadata.name: Invalid value: \"gizmos.example.com\\x00x\": must be "
     "spec.names.plural+\".\"+spec.group]",
     2},
    {"name", "{\"metadata\":{\"name\":\"wrong.example.com\"}}",
     "CustomResourceDefinition.apiextensions.k8s.io \"wrong.example.com\" is invalid: "
     "metadata.name: Invalid value: \"wrong.example.com\": must be "
     "spec.names.plural+\".\"+spec.group",
     1},
    {"group without a dot",
     "{\"metadata\":{\"name\":\"gizmos.nodot\"},\"spec\":{\"group\":"
     "\"nodot\"}}",
     "CustomResourceDefinition.apiextensions.k8s.io \"gizmos.nodot\" is invalid: spec.group: "
     "Invalid value: \"nodot\": should be a domain with at least one dot",
     1},
    {"protected group",
     "{\"metadata\":{\"name\":\"gizmos.x.k8s.io\"},\"spec\":{\"group\":"
     "\"x.k8s.io\"}}",
     "CustomResourceDefinition.apiextensions.k8s.io \"gizmos.x.k8s.io\" is invalid: "
     "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must "
     "have approval annotation \"api-approved.kubernetes.io\", see "
     "https://github.com/kubernetes/enhancements/pull/1111",
     1},
    {"protected group bypassed",
     "{\"metadata\":{\"name\":\"gizmos.kubernetes.io\",\"annotations\":{"
     "\"api-approved.kubernetes.io\":\"unapproved, testing\"}},\"spec\":{\"group\":"
     "\"kubernetes.io\"}}",
     NULL, 0},
    {"schemas required",
     "{\"spec\":{\"versions\":[" VERSION("v1", "true", "") "," VERSION("v1", "true", "") "]}}",
     CRD "[spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required, "
         "spec.versions[1].schema.openAPIV3Schema: Required value: schemas are required, "
         "spec.versions: Invalid value: [\"v1\",\"v1\"]: must contain unique version names, "
         "spec.versions: Invalid value: [\"v1\",\"v1\"]: must have exactly one version marked "
         "as storage version]",
     4},
    {"version name",
     "{\"spec\":{\"versions\":[" VERSION("V1", "true", ",\"deprecationWarning\":\"x\"") "]}}",
     CRD "[spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required, "
         "spec.versions[0].name: Invalid value: \"V1\": " DNS1035_MSG ", "
         "spec.versions[0].deprecationWarning: Invalid value: \"x\": can only be set for "
         "deprecated versions]",
     3},
    {"no versions", "{\"spec\":{\"versions\":[]}}",
     CRD "[spec.versions: Invalid value: []: must have exactly one version marked as storage "
         "version, status.storedVersions: Invalid value: []: must have at least one stored "
         "version]",
     2},
    {"no spec", "{\"spec\":null}",
     CRD "[metadata.name: Invalid value: \"gizmos.example.com\": must be "
         "spec.names.plural+\".\"+spec.group, spec.group: Required value, spec.scope: Required "
         "value, spec.versions: Invalid value: null: must have exactly one version marked as "
         "storage version, spec.names.plural: Required value, spec.names.singular: Required "
         "value, spec.names.kind: Required value, spec.names.listKind: Required value, "
         "status.storedVersions: Invalid value: []: must have at least one stored version]",
     9},
    {"two storage versions",
     "{\"spec\":{\"versions\":[" VERSION("v1", "true", ",\"schema\":" SCHEMA) "," VERSION(
         "v2", "true", ",\"schema\":" SCHEMA) "]}}",
     CRD "[spec.versions: Invalid value: [\"v1\",\"v2\"]: must have exactly one version marked "
         "as storage version, status.storedVersions: Invalid value: \"v2\": must have the "
         "storage version v2]",
     2},
    {"identical columns reported per version, where 1.26 checks them",
     "{\"spec\":{\"versions\":[" VERSION(
         "v1", "true",
         ",\"schema\":" SCHEMA ",\"additionalPrinterColumns\":[{\"name\":\"A\",\"type\":"
         "\"string\",\"jsonPath\":\"a\"}]") "," VERSION("V2", "false",
                                                        ",\"schema\":" SCHEMA
                                                        ",\"additionalPrinterColumns\":[{"
                                                        "\"name\":\"A\",\"type\":"
                                                        "\"string\",\"jsonPath\":\"a\"}]") "]}}",
     CRD "[spec.versions[1].name: Invalid value: \"V2\": " DNS1035_MSG ", "
         "spec.versions[0].additionalPrinterColumns[0].jsonPath: Invalid value: \"a\": must be "
         "a simple json path starting with ., "
         "spec.versions[1].additionalPrinterColumns[0].jsonPath: Invalid value: \"a\": must be "
         "a simple json path starting with .]",
     3},
    {"names",
     "{\"spec\":{\"names\":{\"kind\":\"Bad Kind\",\"listKind\":\"Bad Kind\",\"shortNames\":[\"ok\","
     "\"No\"],\"categories\":[\"all\",\"x_y\"]}}}",
     CRD
     "[spec.names.singular: Invalid value: \"bad kind\": " DNS1035_MSG
     ", spec.names.kind: Invalid value: \"Bad Kind\": may have mixed case, but should otherwise "
     "match: " DNS1035_MSG ", spec.names.listKind: Invalid value: \"Bad Kind\": may have "
     "mixed case, but should otherwise match: " DNS1035_MSG ", spec.names.shortNames[1]: "
     "Invalid value: \"No\": " DNS1035_MSG ", spec.names.listKind: Invalid value: \"Bad "
     "Kind\": kind and listKind may not be the same, spec.names.categories[1]: Invalid value: "
     "\"x_y\": " DNS1035_MSG "]",
     6},
    {"hoisted columns and subresources",
     "{\"spec\":{\"versions\":[" VERSION(
         "v1", "true",
         ",\"schema\":{\"openAPIV3Schema\":{\"type\":\"array\"}},\"subresources\":{\"status\":{},"
         "\"scale\":{\"specReplicasPath\":\".status.r\",\"statusReplicasPath\":\"\"}},"
         "\"additionalPrinterColumns\":[{\"name\":\"A\",\"type\":\"\",\"jsonPath\":\"\"}]") "]}}",
     CRD "[spec.versions[0].schema.openAPIV3Schema.type: Invalid value: \"array\": only "
         "\"object\" is allowed as the type at the root of the schema if the status subresource "
         "is enabled, spec.versions[0].schema.openAPIV3Schema.items: Required value: must be "
         "specified, spec.versions[0].schema.openAPIV3Schema.type: Invalid value: \"array\": "
         "must be object at the root, spec.versions[0].subresources.scale.specReplicasPath: "
         "Invalid value: \".status.r\": should be a json path under .spec, "
         "spec.versions[0].subresources.scale.statusReplicasPath: Required value, "
         "spec.versions[0].additionalPrinterColumns[0].type: Required value: must be one of "
         "boolean,date,integer,number,string, "
         "spec.versions[0].additionalPrinterColumns[0].jsonPath: Required value]",
     7},
    {"per-version columns",
     "{\"spec\":{\"versions\":[" VERSION(
         "v1", "true",
         ",\"schema\":" SCHEMA ",\"additionalPrinterColumns\":[{\"name\":\"A\",\"type\":\"string\","
         "\"format\":\"f\",\"jsonPath\":\"spec.a\"}]") "," VERSION("v2", "false",
                                                                   ",\"schema\":" SCHEMA) "]}}",
     CRD "[spec.versions[0].additionalPrinterColumns[0].format: Invalid value: \"f\": must be one "
         "of byte,date,date-time,double,float,int32,int64,password, "
         "spec.versions[0].additionalPrinterColumns[0].jsonPath: Invalid value: \"spec.a\": must "
         "be a simple json path starting with .]",
     2},
    {"webhook url", WEBHOOK("{\"url\":\"http://user@x/a?b#c\"}", "[\"v2\"]"),
     CRD
     "[spec.conversion.webhook.clientConfig.url: Invalid value: \"http\": 'https' is the only "
     "allowed URL scheme; desired format: https://host[/path], "
     "spec.conversion.webhook.clientConfig.url: Invalid value: \"user\": user information is "
     "not permitted in the URL, spec.conversion.webhook.clientConfig.url: Invalid value: \"c\": "
     "fragments are not permitted in the URL, spec.conversion.webhook.clientConfig.url: "
     "Invalid value: \"b\": query parameters are not permitted in the URL, "
     "spec.conversion.webhook.conversionReviewVersions: Invalid value: [\"v2\"]: must include "
     "at least one of v1, v1beta1]",
     5},
    {"webhook url does not parse", WEBHOOK("{\"url\":\"https://x:port/\"}", "[\"v1\"]"),
     CRD "spec.conversion.webhook.clientConfig.url: Required value: url must be a valid URL: parse "
         "\"https://x:port/\": invalid port \":port\" after host; desired format: "
         "https://host[/path]",
     1},
    {"webhook service",
     WEBHOOK("{\"service\":{\"namespace\":\"n\",\"name\":\"\",\"port\":0,\"path\":\"x//y\"}}",
             "[\"v1\",\"v1\"]"),
     CRD "[spec.conversion.webhook.clientConfig.service.name: Required value: service name is "
         "required, spec.conversion.webhook.clientConfig.service.port: Invalid value: 0: port is "
         "not valid: must be between 1 and 65535, inclusive, "
         "spec.conversion.webhook.clientConfig.service.path: Invalid value: \"x//y\": must start "
         "with a '/', spec.conversion.webhook.clientConfig.service.path: Invalid value: \"x//y\": "
         "segment[0] may not be empty, spec.conversion.webhook.clientConfig.service.path: Invalid "
         "value: \"x//y\": segment[1] may not be empty, "
         "spec.conversion.webhook.conversionReviewVersions[1]: Invalid value: \"v1\": duplicate "
         "version]",
     6},
    {"webhook without client config", "{\"spec\":{\"conversion\":{\"strategy\":\"Webhook\"}}}",
     CRD "[spec.conversion.webhook.clientConfig: Required value: required when strategy is set to "
         "Webhook, spec.conversion.webhook.conversionReviewVersions: Required value]",
     2},
    {"webhook fields without the strategy",
     "{\"spec\":{\"conversion\":{\"strategy\":\"None\",\"webhook\":{\"clientConfig\":{},"
     "\"conversionReviewVersions\":[\"v1\"]}}}}",
     CRD "[spec.conversion.webhook.clientConfig: Forbidden: should not be set when strategy is not "
         "set to Webhook, spec.conversion.webhook.conversionReviewVersions: Forbidden: should not "
         "be set "
         "when strategy is not set to Webhook]",
     2},
    {"preserve unknown fields",
     "{\"spec\":{\"preserveUnknownFields\":true,\"conversion\":{\"strategy\":\"Webhook\","
     "\"webhook\":{\"clientConfig\":{\"url\":\"https://x\"},\"conversionReviewVersions\":[\"v1\"]"
     "}}}}",
     CRD "[spec.conversion.strategy: Invalid value: \"Webhook\": must be None if "
         "spec.preserveUnknownFields is true, spec.preserveUnknownFields: Invalid value: true: "
         "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
         "spec.versions[*].schema instead]",
     2},
    {"patterns Go refuses, causes sorted as ValidateStructural sorts them",
     "{\"spec\":{\"versions\":[" VERSION(
         "v1", "true",
         ",\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":{"
         "\"type\":\"object\",\"properties\":{\"b\":{\"type\":\"string\",\"pattern\":"
         "\"a**\"},\"a\":{\"type\":\"string\",\"pattern\":\"[\"},\"ok\":{\"type\":"
         "\"string\",\"pattern\":\"^[a-z]+$\"}},\"anyOf\":[{\"properties\":{\"b\":{"
         "\"pattern\":\"(x\"}}}]},\"list\":{\"type\":\"array\",\"items\":{\"type\":"
         "\"string\",\"pattern\":\"x{1001}\"}}}}}") "]}}",
     CRD "[spec.versions[0].schema.openAPIV3Schema.properties[list].items.pattern: Invalid value: "
         "\"x{1001}\": must be a valid regular expression, but isn't: error parsing regexp: "
         "invalid repeat count: `{1001}`, "
         "spec.versions[0].schema.openAPIV3Schema.properties[spec].anyOf[0].properties[b].pattern: "
         "Invalid value: \"(x\": must be a valid regular expression, but isn't: error parsing "
         "regexp: missing closing ): `(x`, "
         "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[a].pattern: Invalid "
         "value: \"[\": must be a valid regular expression, but isn't: error parsing regexp: "
         "missing closing ]: `[`, "
         "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[b].pattern: Invalid "
         "value: \"a**\": must be a valid regular expression, but isn't: error parsing regexp: "
         "invalid nested repetition operator: `**`]",
     4},
};

TEST(validate_crd_create)
{
    vcase_run("apiextensions.k8s.io", "v1", "customresourcedefinitions", CRD_BASE, NULL,
              create_cases, KAPI_ARRAY_LEN(create_cases));
}

/* An established CRD: its scope and kind can no longer change. */
#define CRD_OLD                                                                                    \
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","           \
    "\"metadata\":{\"name\":\"gizmos.example.com\",\"uid\":\"u1\"},\"spec\":{\"group\":"           \
    "\"example.com\",\"scope\":\"Namespaced\",\"names\":{\"plural\":\"gizmos\",\"kind\":"          \
    "\"Gizmo\"},\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"                  \
    "\"schema\":" SCHEMA                                                                           \
    "}]},\"status\":{\"conditions\":[{\"type\":\"Established\",\"status\":\"True\"}],"             \
    "\"storedVersions\":[\"v1\"]}}"

static const vcase update_cases[] = {
    {"valid", "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}", NULL, 0},
    {"immutable",
     "{\"spec\":{\"scope\":\"Cluster\",\"group\":\"other.com\",\"names\":{\"plural\":\"widgets\"}}"
     "}",
     CRD "[spec.scope: Invalid value: \"Cluster\": field is immutable, spec.group: Invalid value: "
         "\"other.com\": field is immutable, spec.names.plural: Invalid value: \"widgets\": field "
         "is immutable]",
     3},
    /* the new storage version joins storedVersions (PrepareForUpdate); v1 may not go */
    {"stored version removed",
     "{\"spec\":{\"versions\":[" VERSION("v2", "true", ",\"schema\":" SCHEMA) "]}}",
     CRD "status.storedVersions[0]: Invalid value: \"v1\": must appear in spec.versions", 1},
};

TEST(validate_crd_update)
{
    vcase_run("apiextensions.k8s.io", "v1", "customresourcedefinitions", CRD_BASE, CRD_OLD,
              update_cases, KAPI_ARRAY_LEN(update_cases));
}
