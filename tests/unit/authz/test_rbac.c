/* Unit tests for src/authz's RBAC: rule matching as kube's evaluation helpers match,
 * decisions through cluster-wide and namespaced bindings (users, groups, service
 * accounts), system:masters, the reason a missing role gives, and the Forbidden message. */
#include "authz/authz.h"
#include "test.h"

static const char *const dev_groups[] = {"devs", "system:authenticated", NULL};
static const char *const masters[] = {"system:masters", "system:authenticated", NULL};
static const char *const sa_groups[] = {"system:serviceaccounts", "system:serviceaccounts:team",
                                        "system:authenticated", NULL};
static const kapi_user alice = {"alice", "", dev_groups};
static const kapi_user bob = {"bob", "", NULL};
static const kapi_user admin = {"root", "", masters};
static const kapi_user robot = {"system:serviceaccount:team:robot", "", sa_groups};

static kapi_authz_attrs req(const kapi_user *u, const char *verb, const char *group,
                            const char *resource, const char *sub, const char *ns, const char *name)
{
    return (kapi_authz_attrs){.user = u,
                              .verb = verb,
                              .resource = true,
                              .group = group,
                              .resource_name = resource,
                              .subresource = sub,
                              .ns = kapi_str_c(ns),
                              .name = kapi_str_c(name)};
}

static bool rule_allows(const char *const *verbs, const char *const *groups,
                        const char *const *resources, const char *const *names, kapi_authz_attrs a)
{
    kapi_rbac_rule r = {verbs, groups, resources, names, NULL};
    return kapi_rbac_rule_allows(&r, &a);
}

#define L(...) ((const char *const[]){__VA_ARGS__, NULL})

TEST(rbac_rule_matching)
{
    kapi_authz_attrs get = req(&alice, "get", "batch", "cronjobs", "", "x", "a");
    kapi_authz_attrs status = req(&alice, "get", "batch", "cronjobs", "status", "x", "a");
    kapi_authz_attrs list = req(&alice, "list", "batch", "cronjobs", "", "x", "");
    CHECK(rule_allows(L("get"), L("batch"), L("cronjobs"), NULL, get));
    CHECK(rule_allows(L("*"), L("*"), L("*"), NULL, get));
    CHECK(!rule_allows(L("list"), L("batch"), L("cronjobs"), NULL, get));
    CHECK(!rule_allows(L("get"), L(""), L("cronjobs"), NULL, get));
    CHECK(!rule_allows(L("get"), L("batch"), L("jobs"), NULL, get));
    /* subresources: only by their own name or by "*" with it, not by the resource alone */
    CHECK(!rule_allows(L("get"), L("batch"), L("cronjobs"), NULL, status));
    CHECK(rule_allows(L("get"), L("batch"), L("cronjobs/status"), NULL, status));
    CHECK(rule_allows(L("get"), L("batch"), L("*/status"), NULL, status));
    CHECK(!rule_allows(L("get"), L("batch"), L("*/scale"), NULL, status));
    CHECK(!rule_allows(L("get"), L("batch"), L("cronjobs/status"), NULL, get));
    CHECK(rule_allows(L("get"), L("batch"), L("*"), NULL, status));
    /* resourceNames: the named objects only, never a list */
    CHECK(rule_allows(L("get"), L("batch"), L("cronjobs"), L("a", "b"), get));
    CHECK(!rule_allows(L("get"), L("batch"), L("cronjobs"), L("b"), get));
    CHECK(!rule_allows(L("list"), L("batch"), L("cronjobs"), L("a"), list));
    /* non-resource URLs: exact, "*", or a prefix ending in "*" */
    kapi_rbac_rule urls = {L("get"), NULL, NULL, NULL, L("/healthz", "/apis/*", "/x**")};
    kapi_authz_attrs path = {.user = &alice, .verb = "get", .path = "/healthz"};
    CHECK(kapi_rbac_rule_allows(&urls, &path));
    path.path = "/apis/batch/v1";
    CHECK(kapi_rbac_rule_allows(&urls, &path));
    path.path = "/apis";
    CHECK(!kapi_rbac_rule_allows(&urls, &path));
    path.path = "/xyz";
    CHECK(kapi_rbac_rule_allows(&urls, &path));
    path.path = "/version";
    CHECK(!kapi_rbac_rule_allows(&urls, &path));
    path.verb = "post";
    path.path = "/healthz";
    CHECK(!kapi_rbac_rule_allows(&urls, &path));
    /* a resource rule never allows a path */
    kapi_rbac_rule all = {L("*"), L("*"), L("*"), NULL, NULL};
    CHECK(!kapi_rbac_rule_allows(&all, &path));
}

static void add(kapi_rbac_policy *p, const char *json)
{
    json_t *obj = json_loads(json, 0, NULL);
    CHECK(obj != NULL);
    kapi_rbac_policy_add(p, obj);
    json_decref(obj);
}

static kapi_rbac_policy *policy(void)
{
    kapi_rbac_policy *p = kapi_rbac_policy_new();
    add(p, "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"cj-reader\"},\"rules\":[{"
           "\"verbs\":[\"get\",\"list\",\"watch\"],\"apiGroups\":[\"batch\"],"
           "\"resources\":[\"cronjobs\"]}]}");
    add(p, "{\"kind\":\"Role\",\"metadata\":{\"name\":\"writer\",\"namespace\":\"team\"},"
           "\"rules\":[{\"verbs\":[\"create\"],\"apiGroups\":[\"batch\"],"
           "\"resources\":[\"cronjobs\"]}]}");
    /* alice may read CronJobs in team through a RoleBinding to a ClusterRole */
    add(p, "{\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"r\",\"namespace\":\"team\"},"
           "\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\","
           "\"name\":\"cj-reader\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]}");
    /* the group devs may create in team */
    add(p, "{\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"w\",\"namespace\":\"team\"},"
           "\"roleRef\":{\"kind\":\"Role\",\"name\":\"writer\"},"
           "\"subjects\":[{\"kind\":\"Group\",\"name\":\"devs\"}]}");
    /* the service account team/robot (namespace defaulted) reads everywhere */
    add(p, "{\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"sa\",\"namespace\":\"team\"},"
           "\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"cj-reader\"},"
           "\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"robot\"}]}");
    add(p, "{\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"c\"},"
           "\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"cj-reader\"},"
           "\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"robot\",\"namespace\":\"team\"},"
           "{\"kind\":\"User\",\"name\":\"robot\"}]}");
    return p;
}

static bool allows(const kapi_rbac_policy *p, kapi_authz_attrs a)
{
    kapi_buf reason;
    kapi_buf_init(&reason);
    bool ok = kapi_rbac_allows(p, &a, &reason, true);
    CHECK(ok == (reason.len > 0)); /* allowed says by what; nothing is missing here */
    kapi_buf_dispose(&reason);
    return ok;
}

static void check_reason(const kapi_rbac_policy *p, kapi_authz_attrs a, const char *want)
{
    kapi_buf reason;
    kapi_buf_init(&reason);
    CHECK(kapi_rbac_allows(p, &a, &reason, true));
    CHECK_STR_EQ(reason.ptr, want);
    kapi_buf_dispose(&reason);
}

TEST(rbac_bindings_decide)
{
    kapi_rbac_policy *p = policy();
    CHECK(allows(p, req(&alice, "list", "batch", "cronjobs", "", "team", "")));
    CHECK(allows(p, req(&alice, "get", "batch", "cronjobs", "", "team", "x")));
    CHECK(!allows(p, req(&alice, "list", "batch", "cronjobs", "", "other", "")));
    CHECK(!allows(p, req(&alice, "list", "batch", "cronjobs", "", "", ""))); /* all namespaces */
    CHECK(allows(p, req(&alice, "create", "batch", "cronjobs", "", "team", ""))); /* by group */
    CHECK(!allows(p, req(&alice, "delete", "batch", "cronjobs", "", "team", "x")));
    CHECK(!allows(p, req(&bob, "get", "batch", "cronjobs", "", "team", "x")));
    CHECK(allows(p, req(&robot, "list", "batch", "cronjobs", "", "elsewhere", "")));
    CHECK(allows(p, req(&robot, "list", "batch", "cronjobs", "", "", "")));
    CHECK(!allows(p, req(&robot, "create", "batch", "cronjobs", "", "team", "")));
    /* the User "robot" is not the service account, nor is it alice */
    kapi_user plain_robot = {"robot", "", NULL};
    CHECK(allows(p, req(&plain_robot, "list", "batch", "cronjobs", "", "", "")));
    /* system:masters is not RBAC's to allow (the api asks it first) */
    CHECK(!allows(p, req(&admin, "delete", "", "namespaces", "", "", "kube-system")));
    kapi_authz_attrs path = {.user = &alice, .verb = "post", .path = "/anything"};
    CHECK(!allows(p, path));
    check_reason(p, req(&alice, "list", "batch", "cronjobs", "", "team", ""),
                 "RBAC: allowed by RoleBinding \"r/team\" of ClusterRole \"cj-reader\" to User "
                 "\"alice\"");
    check_reason(p, req(&alice, "create", "batch", "cronjobs", "", "team", ""),
                 "RBAC: allowed by RoleBinding \"w/team\" of Role \"writer\" to Group \"devs\"");
    check_reason(p, req(&robot, "list", "batch", "cronjobs", "", "", ""),
                 "RBAC: allowed by ClusterRoleBinding \"c\" of ClusterRole \"cj-reader\" to "
                 "ServiceAccount \"robot/team\"");
    kapi_rbac_policy_free(p);
}

TEST(rbac_missing_role_reason)
{
    kapi_rbac_policy *p = kapi_rbac_policy_new();
    kapi_buf reason;
    kapi_authz_attrs a = req(&alice, "get", "", "namespaces", "", "", "x");
    add(p, "{\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"a\"},"
           "\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"gone\"},"
           "\"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"},"
           "{\"kind\":\"Group\",\"name\":\"devs\"}]}");
    kapi_buf_init(&reason);
    CHECK(!kapi_rbac_allows(p, &a, &reason, true));
    CHECK_STR_EQ(reason.ptr, "RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found");
    add(p, "{\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\"},"
           "\"roleRef\":{\"kind\":\"Role\",\"name\":\"nope\"},"
           "\"subjects\":[{\"kind\":\"Group\",\"name\":\"devs\"}]}");
    a.ns = KAPI_STR("ns");
    kapi_buf_clear(&reason);
    CHECK(!kapi_rbac_allows(p, &a, &reason, true));
    CHECK_STR_EQ(reason.ptr, "RBAC: [clusterrole.rbac.authorization.k8s.io \"gone\" not found, "
                             "role.rbac.authorization.k8s.io \"nope\" not found]");
    kapi_buf_dispose(&reason);
    kapi_rbac_policy_free(p);
}

static void check_message(kapi_authz_attrs a, const char *reason, const char *want)
{
    char *m = kapi_authz_forbidden_message(&a, reason);
    CHECK_STR_EQ(m, want);
    free(m);
}

TEST(rbac_forbidden_messages)
{
    kapi_user nobody = {"golden-nobody", "", NULL};
    check_message(req(&nobody, "list", "batch", "cronjobs", "", "golden-a", ""), "",
                  "cronjobs.batch is forbidden: User \"golden-nobody\" cannot list resource "
                  "\"cronjobs\" in API group \"batch\" in the namespace \"golden-a\"");
    check_message(req(&alice, "get", "", "namespaces", "", "", "kube-system"), NULL,
                  "namespaces \"kube-system\" is forbidden: User \"alice\" cannot get resource "
                  "\"namespaces\" in API group \"\" at the cluster scope");
    check_message(req(&alice, "update", "batch", "cronjobs", "status", "a", "x"), "RBAC: y",
                  "cronjobs.batch \"x\" is forbidden: User \"alice\" cannot update resource "
                  "\"cronjobs/status\" in API group \"batch\" in the namespace \"a\": RBAC: y");
    kapi_user odd = {"<a&b>", "", NULL};
    kapi_authz_attrs path = {.user = &odd, .verb = "get", .path = "/metrics"};
    check_message(path, NULL, "forbidden: User \"&lt;a&amp;b&gt;\" cannot get path \"/metrics\"");
}

typedef struct pieces {
    kapi_buf text;
} pieces;

static void note_piece(void *ctx, const kapi_rbac_rule *p)
{
    pieces *ps = ctx;
    kapi_buf_printf(&ps->text, "[%s %s %s %s %s]", p->verbs ? p->verbs[0] : "-",
                    p->groups ? p->groups[0] : "-", p->resources ? p->resources[0] : "-",
                    p->names ? p->names[0] : "-", p->urls ? p->urls[0] : "-");
}

TEST(rbac_covers)
{
    kapi_rbac_rule owner[] = {
        {L("get", "list"), L("batch"), L("cronjobs", "*/status"), NULL, NULL},
        {L("update"), L(""), L("namespaces"), L("a"), NULL},
        {L("get"), NULL, NULL, NULL, L("/healthz", "/apis/*")},
    };
    kapi_rbac_rule fine = {L("get"), L("batch"), L("cronjobs", "cronjobs/status"), NULL, NULL};
    kapi_rbac_rule named = {L("update"), L(""), L("namespaces"), L("a"), NULL};
    kapi_rbac_rule urls = {L("get"), NULL, NULL, NULL, L("/healthz", "/apis/batch")};
    kapi_rbac_rule more = {L("get", "delete"), L("batch", "apps"), L("cronjobs"), NULL,
                           L("/metrics")};
    kapi_rbac_rule all_names = {L("update"), L(""), L("namespaces"), NULL, NULL};
    pieces ps;
    CHECK(kapi_rbac_covers(owner, 3, &fine, NULL, NULL));
    CHECK(kapi_rbac_covers(owner, 3, &named, NULL, NULL));
    CHECK(kapi_rbac_covers(owner, 3, &urls, NULL, NULL));
    /* a rule on every name is not covered by one on some names */
    CHECK(!kapi_rbac_covers(owner, 3, &all_names, NULL, NULL));
    kapi_buf_init(&ps.text);
    CHECK(!kapi_rbac_covers(owner, 3, &more, note_piece, &ps));
    CHECK_STR_EQ(ps.text.ptr, "[delete batch cronjobs - -][get apps cronjobs - -]"
                              "[delete apps cronjobs - -][get - - - /metrics]"
                              "[delete - - - /metrics]");
    kapi_buf_dispose(&ps.text);
}
