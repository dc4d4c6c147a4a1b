/* Unit tests for api/negotiate: the handler's choice of an answer's form from an Accept
 * header, as kube-apiserver 1.26 makes it (goautoneg's parsing and order, the parameters a
 * resource endpoint allows, kapi's JSON and YAML). */
#include "api/api_int.h"
#include "test.h"

#define NO false, 0, 0, false
#define JSON true, KAPI_FORMAT_JSON, KAPI_TARGET_OBJECT, false
#define YAML true, KAPI_FORMAT_YAML, KAPI_TARGET_OBJECT, false

static const struct {
    const char *accept;
    bool convert;
    bool ok;
    kapi_format format;
    kapi_target target;
    bool v1beta1;
} cases[] = {
    {"application/json", true, JSON},
    {"application/yaml", true, YAML},
    {"*/*", true, JSON},
    {"*", true, JSON},
    {"application/*", true, JSON},
    {" application/json ; q=1 ", true, JSON},
    {"text/foo", true, NO},
    {"Application/JSON", true, NO},
    {"application/json/x", true, NO},
    {"text/foo, application/json", true, JSON},
    /* protobuf is passed over: a fallback gets JSON */
    {"application/vnd.kubernetes.protobuf", true, NO},
    {"application/vnd.kubernetes.protobuf, application/json", true, JSON},
    /* q orders the ranges; goautoneg puts a concrete type before * / * whatever the q */
    {"application/json;q=0.5, application/yaml", true, YAML},
    {"application/yaml;q=0.5, application/json;q=0.9", true, JSON},
    {"*/*;q=0.9, application/yaml;q=0.8", true, YAML},
    {"application/json;q=x, application/yaml;q=0.1", true, YAML},
    /* conversions */
    {"application/json;as=Table;g=meta.k8s.io;v=v1", true, true, KAPI_FORMAT_JSON,
     KAPI_TARGET_TABLE, false},
    {"application/json;as=Table;g=meta.k8s.io;v=v1", false, NO},
    {"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
     "g=meta.k8s.io,application/json",
     true, true, KAPI_FORMAT_JSON, KAPI_TARGET_TABLE, false},
    {"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", false, JSON},
    {"application/yaml;as=Table;g=meta.k8s.io;v=v1beta1", true, true, KAPI_FORMAT_YAML,
     KAPI_TARGET_TABLE, true},
    {"application/json;as=Table;g=meta.k8s.io;v=v2", true, NO},
    {"application/json;as=Table;g=meta.k8s.io;v=v2, application/json", true, JSON},
    {"application/json;as=Table", true, NO},
    {"application/json;g=meta.k8s.io;v=v1", true, NO},
    {"application/json;as=Bogus;g=meta.k8s.io;v=v1", true, NO},
    {"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", true, true, KAPI_FORMAT_JSON,
     KAPI_TARGET_POM, false},
    {"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1", true, true,
     KAPI_FORMAT_JSON, KAPI_TARGET_POM_LIST, true},
    {"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", true, NO},
    /* stream and sv */
    {"application/json;stream=watch", true, JSON},
    {"application/json;stream=other", true, NO},
    {"application/yaml;stream=watch", true, NO},
    {"application/json;sv=v1", true, JSON},
    {"application/json;sv=v2, application/yaml", true, YAML},
    {"application/json;pretty=1;charset=utf-8", true, JSON},
};

TEST(api_negotiate_choose_media)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        kapi_media m;
        bool ok = kapi_api__choose_media(cases[i].accept, cases[i].convert, &m);
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
