/* Unit tests for api/negotiate: the handler's choice of an answer's form from an Accept
 * header, as kube-apiserver 1.26 makes it (goautoneg's parsing and order, the parameters a
 * resource endpoint allows, kapi's JSON, YAML and protobuf). The cases are for a custom
 * resource (no protobuf) unless they say pb: a built-in type's endpoint. */
#include "api/api_int.h"
#include "test.h"

#define NO false, 0, 0, false
#define JSON true, KAPI_FORMAT_JSON, KAPI_TARGET_OBJECT, false
#define YAML true, KAPI_FORMAT_YAML, KAPI_TARGET_OBJECT, false
#define PB true, KAPI_FORMAT_PROTOBUF, KAPI_TARGET_OBJECT, false

static const struct {
    const char *accept;
    bool convert;
    bool pb;
    bool ok;
    kapi_format format;
    kapi_target target;
    bool v1beta1;
} cases[] = {
    {"application/json", true, false, JSON},
    {"application/yaml", true, false, YAML},
    {"*/*", true, false, JSON},
    {"*", true, false, JSON},
    {"application/*", true, false, JSON},
    {" application/json ; q=1 ", true, false, JSON},
    {"text/foo", true, false, NO},
    {"Application/JSON", true, false, NO},
    {"application/json/x", true, false, NO},
    {"text/foo, application/json", true, false, JSON},
    /* protobuf is passed over for a custom resource: a fallback gets JSON */
    {"application/vnd.kubernetes.protobuf", true, false, NO},
    {"application/vnd.kubernetes.protobuf, application/json", true, false, JSON},
    {"application/vnd.kubernetes.protobuf", true, true, PB},
    {"application/vnd.kubernetes.protobuf, application/json", true, true, PB},
    {"application/json;q=0.9, application/vnd.kubernetes.protobuf;q=0.5", true, true, JSON},
    /* q orders the ranges; goautoneg puts a concrete type before * / * whatever the q */
    {"application/json;q=0.5, application/yaml", true, false, YAML},
    {"application/yaml;q=0.5, application/json;q=0.9", true, false, JSON},
    {"*/*;q=0.9, application/yaml;q=0.8", true, false, YAML},
    {"application/json;q=x, application/yaml;q=0.1", true, false, YAML},
    /* conversions */
    {"application/json;as=Table;g=meta.k8s.io;v=v1", true, false, true, KAPI_FORMAT_JSON,
     KAPI_TARGET_TABLE, false},
    {"application/json;as=Table;g=meta.k8s.io;v=v1", false, false, NO},
    {"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
     "g=meta.k8s.io,application/json",
     true, false, true, KAPI_FORMAT_JSON, KAPI_TARGET_TABLE, false},
    {"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", false, false, JSON},
    {"application/yaml;as=Table;g=meta.k8s.io;v=v1beta1", true, false, true, KAPI_FORMAT_YAML,
     KAPI_TARGET_TABLE, true},
    {"application/json;as=Table;g=meta.k8s.io;v=v2", true, false, NO},
    {"application/json;as=Table;g=meta.k8s.io;v=v2, application/json", true, false, JSON},
    {"application/json;as=Table", true, false, NO},
    {"application/json;g=meta.k8s.io;v=v1", true, false, NO},
    {"application/json;as=Bogus;g=meta.k8s.io;v=v1", true, false, NO},
    {"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", true, false, true,
     KAPI_FORMAT_JSON, KAPI_TARGET_POM, false},
    {"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1", true, false, true,
     KAPI_FORMAT_JSON, KAPI_TARGET_POM_LIST, true},
    {"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", true, false,
     NO},
    {"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", true, true,
     true, KAPI_FORMAT_PROTOBUF, KAPI_TARGET_POM, false},
    /* a Table has no protobuf form */
    {"application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1", true, true, NO},
    {"application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1, application/json", true,
     true, JSON},
    /* stream and sv */
    {"application/json;stream=watch", true, false, JSON},
    {"application/json;stream=other", true, false, NO},
    {"application/yaml;stream=watch", true, false, NO},
    {"application/json;sv=v1", true, false, JSON},
    {"application/json;sv=v2, application/yaml", true, false, YAML},
    {"application/json;pretty=1;charset=utf-8", true, false, JSON},
};

TEST(api_negotiate_choose_media)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        kapi_media m;
        unsigned convert = cases[i].convert ? KAPI_CONVERT_METADATA | KAPI_CONVERT_TABLE : 0;
        bool ok = kapi_api__choose_media(cases[i].accept, convert, cases[i].pb, &m);
        if (ok != cases[i].ok)
            test_fail(__FILE__, __LINE__, "%s: chosen %d, want %d", cases[i].accept, ok,
                      cases[i].ok);
        if (!ok)
            continue;
        if (m.format != cases[i].format || m.target != cases[i].target ||
            m.v1beta1 != cases[i].v1beta1)
            test_fail(__FILE__, __LINE__, "%s: format %d target %d v1beta1 %d", cases[i].accept,
                      m.format, m.target, m.v1beta1);
    }
}

/* The form of /api and /apis: the first range in goautoneg's order that is JSON, with
 * as=APIGroupDiscoveryList of apidiscovery.k8s.io v2 or v2beta1, or without as=. */
TEST(api_negotiate_discovery_form)
{
    static const struct {
        const char *accept;
        int form;
    } forms[] = {
        {"", 0},
        {"application/json", 0},
        {"*/*", 0},
        {"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
         "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
         "application/json",
         2},
        {"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", 1},
        {"application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json",
         0},
        {"application/json;g=apidiscovery.k8s.io;v=v2;as=Table,"
         "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
         1},
        {"application/json;q=0.9,application/json;g=apidiscovery.k8s.io;v=v2;"
         "as=APIGroupDiscoveryList",
         2},
        {"application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
         "application/json",
         0},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(forms); i++)
        if (kapi_api__discovery_form(forms[i].accept) != forms[i].form)
            test_fail(__FILE__, __LINE__, "%s: form %d, want %d", forms[i].accept,
                      kapi_api__discovery_form(forms[i].accept), forms[i].form);
}
