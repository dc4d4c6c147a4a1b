/*
 * fuzz_audit_policy: --audit-policy-file (api/audit_policy.c): a Policy in YAML or JSON,
 * checked; one that passes is asked the level of a few requests (resources with and
 * without a subresource, a cluster-scoped one, non-resource URLs) for users with and
 * without groups, which must answer without reading a member the checks did not vouch for.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const groups[] = {"system:nodes", "system:authenticated", NULL};
    static const char *const none[] = {NULL};
    static const kapi_user users[] = {{"alice", "u", groups}, {"", NULL, none}, {NULL, NULL, NULL}};
    static const char *const verbs[] = {"get", "delete", "watch"};
    static const char *const paths[] = {"/healthz", "/version", "/", ""};
    const kapi_reqinfo infos[] = {
        {.is_resource = true,
         .group = "batch",
         .version = "v1",
         .resource = "cronjobs",
         .subresource = "status",
         .ns = KAPI_STR("default"),
         .name = KAPI_STR("cj")},
        {.is_resource = true,
         .group = "",
         .version = "v1",
         .resource = "namespaces",
         .subresource = "",
         .ns = KAPI_STR(""),
         .name = KAPI_STR("")},
        {.is_resource = true,
         .group = "",
         .version = "v1",
         .resource = "serviceaccounts",
         .subresource = "token",
         .ns = {"k\0s", 3},
         .name = KAPI_STR("default")},
        {.group = "", .resource = "", .subresource = "", .ns = KAPI_STR(""), .name = KAPI_STR("")},
    };
    if (size > FUZZ_MAX_INPUT)
        return 0;
    kapi_audit_policy *p = NULL;
    kapi_error *err = kapi_api__audit_policy_parse((const char *)data, size, &p);
    kapi_error_free(err);
    if (!p)
        return 0;
    for (size_t u = 0; u < KAPI_ARRAY_LEN(users); u++)
        for (size_t i = 0; i < KAPI_ARRAY_LEN(infos); i++)
            kapi_api__audit_policy_level(p, &users[u], verbs[(u + i) % KAPI_ARRAY_LEN(verbs)],
                                         &infos[i], paths[i],
                                         i % 2 ? "RequestReceived" : "ResponseComplete");
    kapi_api__audit_policy_free(p);
    return 0;
}
