/* Unit tests for the validation of Role, ClusterRole, RoleBinding and ClusterRoleBinding
 * (registry/validate_rbac.c) and the defaulting of their subjects and roleRefs
 * (registry/defaulters.c). The messages are those kube-apiserver 1.26 answered (most of
 * them recorded in tests/golden/rbac). */
#include "codec/json.h"
#include "validate_cases.h"

#define G "rbac.authorization.k8s.io"
#define AV "\"apiVersion\":\"" G "/v1\""
#define ROLE_BASE                                                                                  \
    "{" AV ",\"kind\":\"Role\",\"metadata\":{\"name\":\"r\",\"namespace\":\"ns\",\"uid\":\"u1\"}," \
    "\"rules\":[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]}"
#define ROLE "Role." G " \"r\" is invalid: "
#define VERBS_MSG "Required value: verbs must contain at least one value"
#define GROUPS_MSG "Required value: resource rules must supply at least one api group"
#define RESOURCES_MSG "Required value: resource rules must supply at least one resource"
#define NAMESPACED_MSG "namespaced rules cannot apply to non-resource URLs"
#define BOTH_MSG "rules cannot apply to both regular resources and non-resource URLs"

static const vcase role_cases[] = {
    {"valid", "{}", NULL, 0},
    {"valid without rules", "{\"rules\":null}", NULL, 0},
    {"valid name with a colon and capitals", "{\"metadata\":{\"name\":\"system:Reader\"}}", NULL,
     0},
    {"rule without verbs", "{\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]}",
     ROLE "rules[0].verbs: " VERBS_MSG, 1},
    {"empty rule", "{\"rules\":[{}]}",
     ROLE "[rules[0].verbs: " VERBS_MSG ", rules[0].apiGroups: " GROUPS_MSG
          ", rules[0].resources: " RESOURCES_MSG "]",
     3},
    {"non-resource URL in a namespaced rule",
     "{\"rules\":[{\"nonResourceURLs\":[\"/healthz\"],\"verbs\":[\"get\"]}]}",
     ROLE "rules[0].nonResourceURLs: Invalid value: []string{\"/healthz\"}: " NAMESPACED_MSG, 1},
    {"non-resource URLs with resources",
     "{\"rules\":[{\"nonResourceURLs\":[\"/healthz\",\"/version\"],\"resources\":[\"pods\"],"
     "\"verbs\":[\"get\"]}]}",
     ROLE "[rules[0].nonResourceURLs: Invalid value: []string{\"/healthz\", \"/version\"}: "
          "" NAMESPACED_MSG ", rules[0].nonResourceURLs: Invalid value: []string{\"/healthz\", "
          "\"/version\"}: " BOTH_MSG "]",
     2},
    {"name '..'", "{\"metadata\":{\"name\":\"..\"}}",
     "Role." G " \"..\" is invalid: metadata.name: Invalid value: \"..\": may not be '..'", 1},
    {"name with '/' and '%'", "{\"metadata\":{\"name\":\"a/b%\"}}",
     "Role." G " \"a/b%\" is invalid: [metadata.name: Invalid value: \"a/b%\": may not contain "
     "'/', metadata.name: Invalid value: \"a/b%\": may not contain '%']",
     2},
    {"generateName '.' is held to the name rule",
     "{\"metadata\":{\"name\":\".x1\",\"generateName\":\".\"}}",
     "Role." G " \".x1\" is invalid: metadata.generateName: Invalid value: \".\": may not be '.'",
     1},
    {"no namespace", "{\"metadata\":{\"namespace\":null}}",
     ROLE "metadata.namespace: Required value", 1},
    {"labels and rules",
     "{\"metadata\":{\"labels\":{\"-x\":\"y\"}},\"rules\":[{\"verbs\":[]},{\"verbs\":[\"get\"],"
     "\"nonResourceURLs\":[\"/x\"],\"apiGroups\":[\"\"]}]}",
     ROLE "[metadata.labels: Invalid value: \"-x\": " QNAME_PART_MSG ", rules[0].verbs: " VERBS_MSG
          ", rules[0].apiGroups: " GROUPS_MSG ", rules[0].resources: " RESOURCES_MSG
          ", rules[1].nonResourceURLs: Invalid value: []string{\"/x\"}: " NAMESPACED_MSG
          ", rules[1].nonResourceURLs: Invalid value: []string{\"/x\"}: " BOTH_MSG "]",
     6},
};

TEST(validate_role_create)
{
    vcase_run(G, "v1", "roles", ROLE_BASE, NULL, role_cases, KAPI_ARRAY_LEN(role_cases));
}

/* ValidateUpdate runs the create rules twice: each cause shows twice in the causes and
 * once in the message; the metadata rules run five times in all. */
static const vcase role_update_cases[] = {
    {"unchanged", "{}", NULL, 0},
    {"rules replaced",
     "{\"rules\":[{\"verbs\":[\"list\"],\"apiGroups\":[\"\"],\"resources\":"
     "[\"secrets\"]}]}",
     NULL, 0},
    {"rule without verbs", "{\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"]}]}",
     ROLE "rules[0].verbs: " VERBS_MSG, 2},
    {"labels and a rule",
     "{\"metadata\":{\"labels\":{\"-x\":\"y\"}},\"rules\":[{\"verbs\":[\"get\"]}]}",
     ROLE "[metadata.labels: Invalid value: \"-x\": " QNAME_PART_MSG ", rules[0].apiGroups: "
          "" GROUPS_MSG ", rules[0].resources: " RESOURCES_MSG "]",
     9},
};

TEST(validate_role_update)
{
    vcase_run(G, "v1", "roles", ROLE_BASE, ROLE_BASE, role_update_cases,
              KAPI_ARRAY_LEN(role_update_cases));
}

#define CR_BASE                                                                                    \
    "{" AV ",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"cr\",\"uid\":\"u1\"},\"rules\":[{"  \
    "\"nonResourceURLs\":[\"/healthz\",\"/metrics*\"],\"verbs\":[\"get\"]},{\"verbs\":[\"*\"],"    \
    "\"apiGroups\":[\"*\"],\"resources\":[\"*\"]}]}"
#define CR "ClusterRole." G " \"cr\" is invalid: "
#define SEL "aggregationRule.clusterRoleSelectors"
#define NO_SELECTOR_MSG                                                                            \
    SEL ": Required value: at least one clusterRoleSelector required if aggregationRule is "       \
        "non-nil"
#define REFUSED(i) SEL "[" #i "]: Invalid value: \"null\": invalid label selector."

static const vcase cluster_role_cases[] = {
    {"valid", "{}", NULL, 0},
    {"valid aggregation",
     "{\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":{\"a/b\":\"c\"}},{"
     "\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"x\"]},{\"key\":"
     "\"old\",\"operator\":\"DoesNotExist\"}]},{}]}}",
     NULL, 0},
    {"no selectors", "{\"aggregationRule\":{}}", CR NO_SELECTOR_MSG, 1},
    {"bad operator",
     "{\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchExpressions\":[{\"key\":\"a\","
     "\"operator\":\"Gt\",\"values\":[\"1\"]}]}]}}",
     CR "[" SEL "[0].matchExpressions[0].operator: Invalid value: \"Gt\": not a valid selector "
        "operator, " REFUSED(0) "]",
     2},
    {"values by operator",
     "{\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchExpressions\":[{\"key\":\"a\","
     "\"operator\":\"In\"}]},{\"matchExpressions\":[{\"key\":\"b\",\"operator\":\"Exists\","
     "\"values\":[\"x\"]}]},{\"matchExpressions\":[{\"key\":\"c\",\"operator\":\"NotIn\","
     "\"values\":[\"-bad-\"]}]}]}}",
     CR "[" SEL "[0].matchExpressions[0].values: Required value: must be specified when "
        "`operator` is 'In' or 'NotIn', " REFUSED(
            0) ", " SEL "[1].matchExpressions[0].values: "
               "Forbidden: may not be specified when `operator` is 'Exists' or "
               "'DoesNotExist', " REFUSED(
                   1) ", " SEL "[2].matchExpressions[0].values[0]: Invalid value: \"-bad-\": "
                      "" LABEL_VALUE_MSG ", " REFUSED(2) "]",
     6},
    {"bad key in matchExpressions",
     "{\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchExpressions\":[{\"key\":\"-k\","
     "\"operator\":\"Exists\"}]}]}}",
     CR "[" SEL "[0].matchExpressions[0].key: Invalid value: \"-k\": " QNAME_PART_MSG
        ", " REFUSED(0) "]",
     2},
    {"matchLabels",
     "{\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":{\"a/b/c\":\"ok\",\"k\":"
     "\"bad value\"}}]}}",
     CR "[" SEL "[0].matchLabels: Invalid value: \"a/b/c\": a qualified name must consist of "
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and "
        "'/' (e.g. 'example.com/MyName'), " SEL "[0].matchLabels: Invalid value: \"bad value\": "
        "" LABEL_VALUE_MSG ", " REFUSED(0) "]",
     3},
    {"non-resource URLs with apiGroups and resourceNames",
     "{\"rules\":[{\"nonResourceURLs\":[\"/x\"],\"apiGroups\":[\"\"],\"resourceNames\":[\"n\"],"
     "\"verbs\":[\"get\"]}]}",
     CR "rules[0].nonResourceURLs: Invalid value: []string{\"/x\"}: " BOTH_MSG, 1},
    {"resource rules",
     "{\"rules\":[{\"verbs\":[\"get\"]},{\"verbs\":[\"get\"],\"resources\":[\"pods\"]}]}",
     CR "[rules[0].apiGroups: " GROUPS_MSG ", rules[0].resources: " RESOURCES_MSG
        ", rules[1].apiGroups: " GROUPS_MSG "]",
     3},
};

TEST(validate_cluster_role_create)
{
    vcase_run(G, "v1", "clusterroles", CR_BASE, NULL, cluster_role_cases,
              KAPI_ARRAY_LEN(cluster_role_cases));
}

/* A stored ClusterRole whose selector has a label value later versions refuse: its
 * updates skip that check of values, but the selector still fails to convert. */
#define CR_OLD_BAD_VALUE                                                                           \
    "{" AV ",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"cr\",\"uid\":\"u1\"},"              \
    "\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchExpressions\":[{\"key\":\"c\","        \
    "\"operator\":\"In\",\"values\":[\"-bad-\"]}]}]}}"

static const vcase cluster_role_update_cases[] = {
    {"rules kept as given with an aggregationRule",
     "{\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":{\"a\":\"b\"}}]}}", NULL, 0},
    {"selectors emptied",
     "{\"aggregationRule\":{\"clusterRoleSelectors\":[]},\"rules\":[{"
     "\"verbs\":[\"get\"],\"resources\":[\"pods\"]}]}",
     CR "[rules[0].apiGroups: " GROUPS_MSG ", " NO_SELECTOR_MSG "]", 4},
};

static const vcase cluster_role_old_value_cases[] = {
    {"old bad value kept",
     "{\"rules\":null,\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchExpressions\":[{"
     "\"key\":\"c\",\"operator\":\"In\",\"values\":[\"-bad-\"]}]}]}}",
     CR REFUSED(0), 2},
    {"new bad value with an old one",
     "{\"rules\":null,\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchExpressions\":[{"
     "\"key\":\"-k\",\"operator\":\"In\",\"values\":[\"-bad-\"]}]}]}}",
     CR "[" SEL "[0].matchExpressions[0].key: Invalid value: \"-k\": " QNAME_PART_MSG
        ", " REFUSED(0) "]",
     4},
};

TEST(validate_cluster_role_update)
{
    vcase_run(G, "v1", "clusterroles", CR_BASE, CR_BASE, cluster_role_update_cases,
              KAPI_ARRAY_LEN(cluster_role_update_cases));
    vcase_run(G, "v1", "clusterroles", CR_BASE, CR_OLD_BAD_VALUE, cluster_role_old_value_cases,
              KAPI_ARRAY_LEN(cluster_role_old_value_cases));
}

/* Bindings as the decode walk leaves them: roleRef.apiGroup and the User and Group
 * subjects' apiGroup defaulted (see the defaulting test below). */
#define RB_BASE                                                                                    \
    "{" AV ",\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\",\"uid\":"  \
    "\"u1\"},\"subjects\":[{\"kind\":\"User\",\"apiGroup\":\"" G "\",\"name\":\"alice\"},{"        \
    "\"kind\":\"ServiceAccount\",\"name\":\"default\"}],\"roleRef\":{\"apiGroup\":\"" G "\","      \
    "\"kind\":\"Role\",\"name\":\"reader\"}}"
#define RB "RoleBinding." G " \"b\" is invalid: "
#define KINDS_MSG "supported values: \"ServiceAccount\", \"User\", \"Group\""
#define SUBDOMAIN_OF(v) "Invalid value: \"" v "\": " SUBDOMAIN_MSG

static const vcase binding_cases[] = {
    {"valid", "{}", NULL, 0},
    {"valid ClusterRole without subjects",
     "{\"subjects\":null,\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"view\"}}", NULL, 0},
    {"valid odd user and group names",
     "{\"subjects\":[{\"kind\":\"User\",\"apiGroup\":\"" G "\",\"name\":\"a b/c%\"},{\"kind\":"
     "\"Group\",\"apiGroup\":\"" G "\",\"name\":\"system:authenticated\"}]}",
     NULL, 0},
    {"no roleRef", "{\"roleRef\":{\"kind\":\"\",\"name\":\"\"}}",
     RB "[roleRef.kind: Unsupported value: \"\": supported values: \"Role\", \"ClusterRole\", "
        "roleRef.name: Required value]",
     2},
    {"roleRef of another group", "{\"roleRef\":{\"apiGroup\":\"example.com\"}}",
     RB "roleRef.apiGroup: Unsupported value: \"example.com\": supported values: \"" G "\"", 1},
    {"roleRef kind", "{\"roleRef\":{\"kind\":\"Thing\"}}",
     RB "roleRef.kind: Unsupported value: \"Thing\": supported values: \"Role\", \"ClusterRole\"",
     1},
    {"roleRef name", "{\"roleRef\":{\"name\":\"a/b%\"}}",
     RB "[roleRef.name: Invalid value: \"a/b%\": may not contain '/', roleRef.name: Invalid "
        "value: \"a/b%\": may not contain '%']",
     2},
    {"roleRef name '.'", "{\"roleRef\":{\"name\":\".\"}}",
     RB "roleRef.name: Invalid value: \".\": may not be '.'", 1},
    {"subject kind", "{\"subjects\":[{\"kind\":\"Robot\",\"name\":\"r2\"}]}",
     RB "subjects[0].kind: Unsupported value: \"Robot\": " KINDS_MSG, 1},
    {"subjects without names",
     "{\"subjects\":[{\"kind\":\"User\",\"apiGroup\":\"" G "\"},{\"kind\":\"ServiceAccount\"},{}]}",
     RB "[subjects[0].name: Required value, subjects[1].name: Required value, subjects[2].name: "
        "Required value, subjects[2].kind: Unsupported value: \"\": " KINDS_MSG "]",
     4},
    {"service account name", "{\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"Bad_Name\"}]}",
     RB "subjects[0].name: " SUBDOMAIN_OF("Bad_Name"), 1},
    {"service account of the RBAC group",
     "{\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"sa\",\"apiGroup\":\"" G "\"}]}",
     RB "subjects[0].apiGroup: Unsupported value: \"" G "\": supported values: \"\"", 1},
    {"user and group of other groups",
     "{\"subjects\":[{\"kind\":\"User\",\"name\":\"u\",\"apiGroup\":\"v1\"},{\"kind\":\"Group\","
     "\"name\":\"g\",\"apiGroup\":\"x\"}]}",
     RB "[subjects[0].apiGroup: Unsupported value: \"v1\": supported values: \"" G "\", "
        "subjects[1].apiGroup: Unsupported value: \"x\": supported values: \"" G "\"]",
     2},
};

TEST(validate_role_binding_create)
{
    vcase_run(G, "v1", "rolebindings", RB_BASE, NULL, binding_cases, KAPI_ARRAY_LEN(binding_cases));
}

#define CHANGED_REF(kind, name)                                                                    \
    "roleRef: Invalid value: rbac.RoleRef{APIGroup:\"" G "\", Kind:\"" kind "\", Name:\"" name     \
    "\"}: cannot change roleRef"

static const vcase binding_update_cases[] = {
    {"subjects replaced",
     "{\"subjects\":[{\"kind\":\"Group\",\"apiGroup\":\"" G "\",\"name\":"
     "\"viewers\"}]}",
     NULL, 0},
    {"roleRef name", "{\"roleRef\":{\"name\":\"other\"}}", RB CHANGED_REF("Role", "other"), 1},
    {"roleRef kind and a bad subject",
     "{\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"edit\"},\"subjects\":[{\"kind\":\"Nobody\","
     "\"name\":\"n\"}]}",
     RB "[subjects[0].kind: Unsupported value: \"Nobody\": " KINDS_MSG
        ", " CHANGED_REF("ClusterRole", "edit") "]",
     3},
};

TEST(validate_role_binding_update)
{
    vcase_run(G, "v1", "rolebindings", RB_BASE, RB_BASE, binding_update_cases,
              KAPI_ARRAY_LEN(binding_update_cases));
}

#define CRB_BASE                                                                                   \
    "{" AV ",\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"b\",\"uid\":\"u1\"},"        \
    "\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"builder\",\"namespace\":\"ci\"}],"      \
    "\"roleRef\":{\"apiGroup\":\"" G "\",\"kind\":\"ClusterRole\",\"name\":\"view\"}}"
#define CRB "ClusterRoleBinding." G " \"b\" is invalid: "

static const vcase cluster_binding_cases[] = {
    {"valid", "{}", NULL, 0},
    {"service account without a namespace",
     "{\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"sa\"}]}",
     CRB "subjects[0].namespace: Required value", 1},
    {"a Role", "{\"roleRef\":{\"kind\":\"Role\"}}",
     CRB "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"", 1},
    {"every roleRef and subject rule",
     "{\"metadata\":{\"name\":\"b%\"},\"roleRef\":{\"apiGroup\":\"x\",\"kind\":\"\",\"name\":"
     "\"..\"},\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"\",\"apiGroup\":\"y\"},{"
     "\"kind\":\"Group\",\"name\":\"\",\"apiGroup\":\"" G "\"}]}",
     "ClusterRoleBinding." G " \"b%\" is invalid: [metadata.name: Invalid value: \"b%\": may not "
     "contain '%', roleRef.apiGroup: Unsupported value: \"x\": supported values: \"" G "\", "
     "roleRef.kind: Unsupported value: \"\": supported values: \"ClusterRole\", roleRef.name: "
     "Invalid value: \"..\": may not be '..', subjects[0].name: Required value, "
     "subjects[0].apiGroup: Unsupported value: \"y\": supported values: \"\", "
     "subjects[0].namespace: Required value, subjects[1].name: Required value]",
     8},
};

TEST(validate_cluster_role_binding_create)
{
    vcase_run(G, "v1", "clusterrolebindings", CRB_BASE, NULL, cluster_binding_cases,
              KAPI_ARRAY_LEN(cluster_binding_cases));
}

static const vcase cluster_binding_update_cases[] = {
    {"subjects replaced",
     "{\"subjects\":[{\"kind\":\"User\",\"apiGroup\":\"" G "\",\"name\":"
     "\"u2\"}]}",
     NULL, 0},
    {"roleRef name", "{\"roleRef\":{\"name\":\"edit\"}}", CRB CHANGED_REF("ClusterRole", "edit"),
     1},
};

TEST(validate_cluster_role_binding_update)
{
    vcase_run(G, "v1", "clusterrolebindings", CRB_BASE, CRB_BASE, cluster_binding_update_cases,
              KAPI_ARRAY_LEN(cluster_binding_update_cases));
}

/* v1's SetDefaults_RoleBinding and SetDefaults_Subject through the decode walk: an empty or
 * absent roleRef.apiGroup is the RBAC group, as is a User's or a Group's apiGroup; a
 * ServiceAccount's stays empty, and a given group is kept. */
TEST(rbac_defaults)
{
    static const char body[] =
        "{" AV ",\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"b\"},\"subjects\":[{\"kind\":"
        "\"User\",\"name\":\"u\"},{\"kind\":\"Group\",\"name\":\"g\",\"apiGroup\":\"\"},{\"kind\":"
        "\"ServiceAccount\",\"name\":\"sa\"},{\"kind\":\"User\",\"name\":\"v\",\"apiGroup\":\"x\"},"
        "{\"kind\":\"Robot\",\"name\":\"r\"}],\"roleRef\":{\"apiGroup\":\"\",\"kind\":\"Role\","
        "\"name\":\"r\"}}";
    kapi_registry *reg;
    kapi_arena a;
    CHECK(kapi_registry_new(&reg) == NULL);
    kapi_arena_init(&a);
    const kapi_type *t =
        kapi_registry_lookup(reg, KAPI_STR(G), KAPI_STR("v1"), KAPI_STR("rolebindings"));
    json_t *obj = kapi_json_parse(body, sizeof(body) - 1, NULL);
    kapi_schema_walk w = {.arena = &a, .go_types = true, .defaults = true, .reorder = true};
    CHECK(kapi_schema_decode(t->schema, obj, &w) == NULL);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_json_encode(&b, json_object_get(obj, "subjects"));
    CHECK_STR_EQ(b.ptr, "[{\"kind\":\"User\",\"apiGroup\":\"" G "\",\"name\":\"u\"},{\"kind\":"
                        "\"Group\",\"apiGroup\":\"" G "\",\"name\":\"g\"},{\"kind\":"
                        "\"ServiceAccount\",\"name\":\"sa\"},{\"kind\":\"User\",\"apiGroup\":"
                        "\"x\",\"name\":\"v\"},{\"kind\":\"Robot\",\"name\":\"r\"}]");
    kapi_buf_clear(&b);
    kapi_json_encode(&b, json_object_get(obj, "roleRef"));
    CHECK_STR_EQ(b.ptr, "{\"apiGroup\":\"" G "\",\"kind\":\"Role\",\"name\":\"r\"}");
    json_object_del(obj, "roleRef");
    CHECK(kapi_schema_decode(t->schema, obj, &w) == NULL);
    kapi_buf_clear(&b);
    kapi_json_encode(&b, json_object_get(obj, "roleRef"));
    CHECK_STR_EQ(b.ptr, "{\"apiGroup\":\"" G "\",\"kind\":\"\",\"name\":\"\"}");
    kapi_buf_dispose(&b);
    json_decref(obj);
    kapi_arena_dispose(&a);
    kapi_registry_free(reg);
}
