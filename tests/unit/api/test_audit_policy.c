/* Unit tests for src/api/audit_policy.c: an audit Policy's checks, and the level its
 * first matching rule gives a request, as kube-apiserver's policy checker matches. */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "test.h"

static const char *const alice_groups[] = {"dev", "system:authenticated", NULL};
static const kapi_user alice = {"alice", "", alice_groups};
static const char *const node_groups[] = {"system:nodes", "system:authenticated", NULL};
static const kapi_user node = {"system:node:n1", "", node_groups};

static kapi_audit_policy *policy(const char *text)
{
    kapi_audit_policy *p;
    kapi_error *err = kapi_api__audit_policy_parse(text, strlen(text), &p);
    if (err)
        test_fail(__FILE__, __LINE__, "%s", err->message);
    return p;
}

static kapi_reqinfo resource(const char *group, const char *res, const char *sub, const char *ns,
                             const char *name)
{
    return (kapi_reqinfo){.is_resource = true,
                          .group = group,
                          .version = "v1",
                          .resource = res,
                          .subresource = sub,
                          .ns = kapi_str_c(ns),
                          .name = kapi_str_c(name)};
}

static const kapi_reqinfo url = {.group = "", .resource = "", .subresource = ""};

#define LEVEL(p, u, verb, in, path)                                                                \
    kapi_api__audit_policy_level(p, u, verb, in, path, "ResponseComplete")

/* Checks in kube's words: a level, the lists, resources and non-resource URLs apart. */
TEST(audit_policy_invalid)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"kind: Policy\napiVersion: v1\n", "policy: not an audit.k8s.io/v1 Policy"},
        {"kind: Policy\napiVersion: audit.k8s.io/v1\nrules:\n- level: Everything\n",
         "rules.level: Unsupported value: supported values: \"None\", \"Metadata\", "
         "\"Request\", \"RequestResponse\""},
        {"kind: Policy\napiVersion: audit.k8s.io/v1\nrules:\n- level: None\n  users: alice\n",
         "users: must be a list of strings"},
        {"kind: Policy\napiVersion: audit.k8s.io/v1\nrules:\n- level: None\n  omitStages: "
         "[Later]\n",
         "rules.omitStages: Unsupported value"},
        {"kind: Policy\napiVersion: audit.k8s.io/v1\nrules:\n- level: None\n"
         "  namespaces: [a]\n  nonResourceURLs: [/x]\n",
         "rules.nonResourceURLs: rules cannot apply to both regular resources and non-resource "
         "URLs"},
        {"kind: Policy\napiVersion: audit.k8s.io/v1\nrules:\n- level: None\n  resources: [pods]\n",
         "rules.resources: must be a list of GroupResources"},
        {"kind: Policy\napiVersion: audit.k8s.io/v1\nrules: x\n",
         "rules: must be a list of PolicyRules"},
        {"a: [", NULL},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        kapi_audit_policy *p = (kapi_audit_policy *)1;
        kapi_error *err = kapi_api__audit_policy_parse(cases[i].text, strlen(cases[i].text), &p);
        CHECK(err != NULL);
        CHECK(p == NULL);
        if (err && cases[i].want)
            CHECK_STR_EQ(err->message, cases[i].want);
        kapi_error_free(err);
    }
}

/* The first matching rule decides; users, groups, verbs, namespaces; no match is None. */
TEST(audit_policy_subjects)
{
    kapi_audit_policy *p = policy("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n"
                                  "- level: None\n  userGroups: [system:nodes]\n"
                                  "- level: None\n  users: [alice]\n  verbs: [get, list, watch]\n"
                                  "- level: Request\n  namespaces: [kube-system]\n"
                                  "- level: Metadata\n  verbs: [delete]\n");
    kapi_reqinfo cj = resource("batch", "cronjobs", "", "default", "cj");
    kapi_reqinfo sys = resource("", "serviceaccounts", "", "kube-system", "x");
    CHECK(LEVEL(p, &node, "delete", &cj, "") == NULL);
    CHECK(LEVEL(p, &alice, "get", &cj, "") == NULL);
    CHECK_STR_EQ(LEVEL(p, &alice, "delete", &cj, ""), "Metadata");
    CHECK_STR_EQ(LEVEL(p, &alice, "create", &sys, ""), "Request");
    CHECK(LEVEL(p, &alice, "create", &cj, "") == NULL);
    kapi_api__audit_policy_free(p);
}

/* Resources: the group, "*", "res/sub", "*"-and-subresource, "res" with every subresource,
 * resourceNames; a resource rule never matches a non-resource URL. */
TEST(audit_policy_resources)
{
    kapi_audit_policy *p = policy("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n"
                                  "- level: RequestResponse\n  resources:\n"
                                  "  - group: batch\n    resources: [cronjobs/status]\n"
                                  "- level: Request\n  resources:\n  - resources: ['*/token']\n"
                                  "- level: None\n  resources:\n"
                                  "  - group: ''\n    resources: [serviceaccounts]\n"
                                  "    resourceNames: [quiet]\n"
                                  "- level: Metadata\n  resources:\n  - group: batch\n"
                                  "    resources: ['jobs/*']\n"
                                  "- level: Metadata\n  resources:\n  - group: ''\n");
    kapi_reqinfo status = resource("batch", "cronjobs", "status", "d", "cj");
    kapi_reqinfo cj = resource("batch", "cronjobs", "", "d", "cj");
    kapi_reqinfo token = resource("", "serviceaccounts", "token", "d", "quiet");
    kapi_reqinfo quiet = resource("", "serviceaccounts", "", "d", "quiet");
    kapi_reqinfo loud = resource("", "serviceaccounts", "", "d", "loud");
    kapi_reqinfo job = resource("batch", "jobs", "", "d", "j");
    kapi_reqinfo job_status = resource("batch", "jobs", "status", "d", "j");
    CHECK_STR_EQ(LEVEL(p, &alice, "update", &status, ""), "RequestResponse");
    CHECK(LEVEL(p, &alice, "update", &cj, "") == NULL);
    CHECK_STR_EQ(LEVEL(p, &alice, "create", &token, ""), "Request");
    CHECK(LEVEL(p, &alice, "get", &quiet, "") == NULL);
    CHECK_STR_EQ(LEVEL(p, &alice, "get", &loud, ""), "Metadata");
    CHECK_STR_EQ(LEVEL(p, &alice, "get", &job, ""), "Metadata");
    CHECK_STR_EQ(LEVEL(p, &alice, "get", &job_status, ""), "Metadata");
    CHECK(LEVEL(p, &alice, "get", &url, "/api") == NULL);
    kapi_api__audit_policy_free(p);
}

/* nonResourceURLs: exact or a prefix ending in "*", never a resource; omitStages with
 * ResponseComplete (the stage kapi writes), in the policy or the rule, logs nothing. */
TEST(audit_policy_urls_and_stages)
{
    kapi_audit_policy *p =
        policy("{\"apiVersion\":\"audit.k8s.io/v1\",\"kind\":\"Policy\","
               "\"rules\":[{\"level\":\"None\",\"nonResourceURLs\":"
               "[\"/healthz*\",\"/version\"]},{\"level\":\"Metadata\","
               "\"omitStages\":[\"ResponseComplete\"],\"users\":[\"bob\"]},"
               "{\"level\":\"Metadata\",\"omitStages\":[\"RequestReceived\"]}]}");
    kapi_reqinfo cj = resource("batch", "cronjobs", "", "d", "cj");
    CHECK(LEVEL(p, &alice, "get", &url, "/healthz") == NULL);
    CHECK(LEVEL(p, &alice, "get", &url, "/healthz/ping") == NULL);
    CHECK(LEVEL(p, &alice, "get", &url, "/version") == NULL);
    CHECK_STR_EQ(LEVEL(p, &alice, "get", &url, "/version/x"), "Metadata");
    CHECK_STR_EQ(LEVEL(p, &alice, "get", &cj, "/apis/batch/v1/namespaces/d/cronjobs/cj"),
                 "Metadata");
    CHECK(kapi_api__audit_policy_level(p, &alice, "get", &cj, "", "RequestReceived") == NULL);
    static const char *const none[] = {NULL};
    const kapi_user bob = {"bob", "", none};
    CHECK(LEVEL(p, &bob, "get", &cj, "") == NULL);
    kapi_api__audit_policy_free(p);
    p = policy("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [ResponseComplete]\n"
               "rules:\n- level: Metadata\n");
    CHECK(LEVEL(p, &alice, "get", &cj, "") == NULL);
    kapi_api__audit_policy_free(p);
    p = policy("apiVersion: audit.k8s.io/v1\nkind: Policy\n");
    CHECK(LEVEL(p, &alice, "get", &cj, "") == NULL);
    kapi_api__audit_policy_free(p);
}
