/*
 * Unit tests for the ClusterCIDR allocator (controllers/clustercidr.c): node selector
 * matching (terms ORed, requirements ANDed, every operator, matchFields on the name,
 * the count that orders matching ClusterCIDRs), and allocation as a client of the api
 * test server: the matching range, dual-stack, the state rebuilt by a new controller,
 * the finalizer held while a Node has blocks.
 */
#include <string.h>
#include <time.h>

#include "api/api_env.h"
#include "codec/json.h"
#include "test.h"

static json_t *parse(const char *s)
{
    json_t *v = kapi_json_parse(s, strlen(s), NULL);
    CHECK(v != NULL);
    return v;
}

static int match(const char *sel, const char *node)
{
    json_t *s = sel ? parse(sel) : NULL, *n = parse(node);
    int m = kapi_controllers__node_selector_match(s, n);
    json_decref(s);
    json_decref(n);
    return m;
}

#define NODE "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"zone\":\"a\",\"cpus\":\"8\"}}}"
#define TERMS(...) "{\"nodeSelectorTerms\":[" __VA_ARGS__ "]}"
#define EXPR(key, op, values)                                                                      \
    "{\"key\":\"" key "\",\"operator\":\"" op "\",\"values\":[" values "]}"

TEST(clustercidr_selector_match)
{
    CHECK_INT_EQ(match(NULL, NODE), 0);
    CHECK_INT_EQ(match(TERMS(), NODE), 0);
    CHECK_INT_EQ(match(TERMS("{}"), NODE), -1); /* an empty term matches nothing */
    CHECK_INT_EQ(
        match(TERMS("{\"matchExpressions\":[" EXPR("zone", "In", "\"a\",\"b\"") "]}"), NODE), 1);
    CHECK_INT_EQ(match(TERMS("{\"matchExpressions\":[" EXPR("zone", "In", "\"a\"") "," EXPR(
                           "cpus", "Gt", "\"4\"") "," EXPR("gpu", "DoesNotExist", "") "]}"),
                       NODE),
                 3);
    /* ANDed within a term */
    CHECK_INT_EQ(match(TERMS("{\"matchExpressions\":[" EXPR("zone", "In", "\"a\"") "," EXPR(
                           "cpus", "Lt", "\"4\"") "]}"),
                       NODE),
                 -1);
    /* ORed across terms: the most specific matching term counts */
    CHECK_INT_EQ(
        match(TERMS("{\"matchExpressions\":[" EXPR(
                  "zone", "NotIn",
                  "\"a\"") "]},"
                           "{\"matchExpressions\":[" EXPR(
                               "zone", "Exists",
                               "") "]},"
                                   "{\"matchExpressions\":[" EXPR("zone", "In", "\"a\"") "," EXPR(
                                       "gpu", "NotIn", "\"x\"") "]}"),
              NODE),
        2);
    CHECK_INT_EQ(match(TERMS("{\"matchExpressions\":[" EXPR("cpus", "Gt", "\"x\"") "]}"), NODE),
                 -1);
    CHECK_INT_EQ(
        match(TERMS("{\"matchFields\":[" EXPR("metadata.name", "In", "\"n1\"") "]}"), NODE), 1);
    CHECK_INT_EQ(
        match(TERMS("{\"matchFields\":[" EXPR("metadata.name", "NotIn", "\"n1\"") "]}"), NODE), -1);
}

static const kapi_type *type_of(api_env *e, const char *group, const char *version,
                                const char *plural)
{
    return kapi_registry_lookup(e->reg, kapi_str_c(group), kapi_str_c(version), kapi_str_c(plural));
}

static void create(api_env *e, const kapi_type *t, const char *json)
{
    kapi_error *err =
        kapi_api_create(e->api, &kapi_api_loopback_user, t, KAPI_STR(""), parse(json), NULL);
    if (err)
        test_fail(__FILE__, __LINE__, "create: %s", err->message);
}

/* The Pod CIDRs of Node name joined by spaces, once it has them (up to 5 s), or "". */
static const char *cidrs_of(api_env *e, const char *name)
{
    static char out[128];
    struct timespec ms10 = {0, 10 * 1000000};
    const kapi_type *nodes = type_of(e, "", "v1", "nodes");
    out[0] = '\0';
    for (int i = 0; i < 500 && !out[0]; i++, nanosleep(&ms10, NULL)) {
        json_t *node = NULL;
        kapi_error_free(kapi_api_get(e->api, nodes, KAPI_STR(""), kapi_str_c(name), &node));
        const json_t *list = kapi_json_path(node, "spec.podCIDRs");
        for (size_t k = 0; k < json_array_size(list); k++)
            snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", k ? " " : "",
                     json_string_value(json_array_get(list, k)));
        json_decref(node);
    }
    return out;
}

#define CIDR(name, sel, spec)                                                                      \
    "{\"apiVersion\":\"networking.k8s.io/v1alpha1\",\"kind\":\"ClusterCIDR\",\"metadata\":{"       \
    "\"name\":\"" name "\"},\"spec\":{" spec sel "}}"
#define ZONE_A                                                                                     \
    ",\"nodeSelector\":" TERMS("{\"matchExpressions\":[" EXPR("zone", "In", "\"a\"") "]}")
#define NODE_IN(name, zone)                                                                        \
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"" name "\",\"labels\":{"    \
    "\"zone\":\"" zone "\"}}}"

TEST(clustercidr_allocates_and_rebuilds)
{
    api_env e = {0};
    api_env_start(&e);
    const kapi_type *cc = type_of(&e, "networking.k8s.io", "v1alpha1", "clustercidrs");
    const kapi_type *nodes = type_of(&e, "", "v1", "nodes");
    create(&e, cc,
           CIDR("a", ZONE_A,
                "\"perNodeHostBits\":8,\"ipv4\":\"10.1.0.0/16\",\"ipv6\":\"fd00::/112\""));
    create(&e, cc, CIDR("rest", "", "\"perNodeHostBits\":4,\"ipv4\":\"10.2.0.0/24\""));
    create(&e, nodes, NODE_IN("a1", "a"));
    create(&e, nodes, NODE_IN("b1", "b"));
    kapi_controller *c = kapi_clustercidr_controller_start(e.api, NULL);
    CHECK_STR_EQ(cidrs_of(&e, "a1"), "10.1.0.0/24 fd00::/120");
    CHECK_STR_EQ(cidrs_of(&e, "b1"), "10.2.0.0/28");
    kapi_controller_stop(c);
    /* a new controller finds the blocks taken */
    create(&e, nodes, NODE_IN("a2", "a"));
    c = kapi_clustercidr_controller_start(e.api, NULL);
    CHECK_STR_EQ(cidrs_of(&e, "a2"), "10.1.1.0/24 fd00::100/120");
    /* "a" keeps its finalizer while its Nodes have blocks */
    static const kapi_delete_opts plain = {.grace = -1};
    bool removed = true;
    CHECK(kapi_api_delete(e.api, &kapi_api_loopback_user, cc, KAPI_STR(""), KAPI_STR("a"), &plain,
                          NULL, &removed) == NULL);
    CHECK(!removed);
    CHECK(kapi_api_delete(e.api, &kapi_api_loopback_user, nodes, KAPI_STR(""), KAPI_STR("a1"),
                          &plain, NULL, NULL) == NULL);
    CHECK(kapi_api_delete(e.api, &kapi_api_loopback_user, nodes, KAPI_STR(""), KAPI_STR("a2"),
                          &plain, NULL, NULL) == NULL);
    bool gone = false;
    struct timespec ms10 = {0, 10 * 1000000};
    for (int i = 0; i < 500 && !gone; i++, nanosleep(&ms10, NULL)) {
        json_t *obj = NULL;
        kapi_error *err = kapi_api_get(e.api, cc, KAPI_STR(""), KAPI_STR("a"), &obj);
        gone = err && err->status == KAPI_STATUS_NOT_FOUND;
        kapi_error_free(err);
        json_decref(obj);
    }
    CHECK(gone);
    kapi_controller_stop(c);
    api_env_stop(&e);
}

/* The spec of --cluster-cidr's default ClusterCIDR, or the error, as text. */
static char *spec_of(const char *cidrs, int mask, int mask4, int mask6)
{
    json_t *spec = NULL;
    char *why = kapi_clustercidr_default_spec(cidrs, mask, mask4, mask6, &spec);
    if (why)
        return why;
    char *text = spec ? json_dumps(spec, JSON_SORT_KEYS | JSON_COMPACT) : kapi_xstrdup("none");
    json_decref(spec);
    return text;
}

#define SPEC_IS(want, ...)                                                                         \
    do {                                                                                           \
        char *got = spec_of(__VA_ARGS__);                                                          \
        CHECK_STR_EQ(got, want);                                                                   \
        free(got);                                                                                 \
    } while (0)

/* kube-controller-manager's flags as its createDefaultClusterCIDR turns them into a spec,
 * and its refusals. */
TEST(clustercidr_default_spec)
{
    SPEC_IS("none", "", 0, 0, 0);
    SPEC_IS("{\"ipv4\":\"10.244.0.0/16\",\"perNodeHostBits\":8}", "10.244.0.0/16", 0, 0, 0);
    SPEC_IS("{\"ipv4\":\"10.244.0.0/16\",\"perNodeHostBits\":6}", "10.244.1.2/16", 26, 0, 0);
    SPEC_IS("{\"ipv4\":\"10.244.0.0/16\",\"perNodeHostBits\":4}", "10.244.0.0/16", 0, 30, 0);
    SPEC_IS("{\"ipv6\":\"fd00::/48\",\"perNodeHostBits\":64}", "fd00::/48", 0, 0, 0);
    SPEC_IS("{\"ipv4\":\"10.244.0.0/16\",\"ipv6\":\"fd00::/48\",\"perNodeHostBits\":8}",
            "10.244.0.0/16,fd00::/48", 0, 0, 0);
    SPEC_IS("{\"ipv4\":\"10.244.0.0/16\",\"ipv6\":\"fd00::/48\",\"perNodeHostBits\":16}",
            "fd00::/48,10.244.0.0/16", 0, 2, 112);
    SPEC_IS("failed to parse cidr value:\"10.0.0.0/33\" with error:invalid CIDR address: "
            "10.0.0.0/33",
            "10.0.0.0/33", 0, 0, 0);
    SPEC_IS("len of ClusterCIDRs==2 and they are not configured as dual stack (at least one from "
            "each IPFamily",
            "10.0.0.0/16,10.1.0.0/16", 0, 0, 0);
    SPEC_IS("length of clusterCIDRs is:3 more than max allowed of 2",
            "10.0.0.0/16,fd00::/48,10.1.0.0/16", 0, 0, 0);
    SPEC_IS("len of ClusterCIDRs==3 and they are not configured as dual stack (at least one from "
            "each IPFamily",
            "10.0.0.0/16,10.2.0.0/16,10.1.0.0/16", 0, 0, 0);
    SPEC_IS("usage of --node-cidr-mask-size is not allowed with dual-stack clusters",
            "10.0.0.0/16,fd00::/48", 24, 0, 0);
    SPEC_IS("usage of --node-cidr-mask-size-ipv6 is not allowed for a single-stack IPv4 cluster",
            "10.0.0.0/16", 0, 0, 64);
    SPEC_IS("usage of --node-cidr-mask-size-ipv4 is not allowed for a single-stack IPv6 cluster",
            "fd00::/48", 0, 24, 0);
}

/* The allocator makes the default ClusterCIDR at its start, with the finalizer, and
 * gives Nodes blocks from it; one of that name already there is left as it is. */
TEST(clustercidr_default_made_at_start)
{
    api_env e = {0};
    api_env_start(&e);
    const kapi_type *cc = type_of(&e, "networking.k8s.io", "v1alpha1", "clustercidrs");
    const kapi_type *nodes = type_of(&e, "", "v1", "nodes");
    json_t *spec = NULL;
    CHECK(kapi_clustercidr_default_spec("10.9.0.0/16", 0, 0, 0, &spec) == NULL);
    create(&e, nodes, NODE_IN("d1", "z"));
    kapi_controller *c = kapi_clustercidr_controller_start(e.api, spec);
    CHECK_STR_EQ(cidrs_of(&e, "d1"), "10.9.0.0/24");
    json_t *obj = NULL;
    CHECK(kapi_api_get(e.api, cc, KAPI_STR(""), KAPI_STR("default-cluster-cidr"), &obj) == NULL);
    CHECK_STR_EQ(json_string_value(json_array_get(kapi_json_path(obj, "metadata.finalizers"), 0)),
                 "networking.k8s.io/cluster-cidr-finalizer");
    json_decref(obj);
    kapi_controller_stop(c);
    json_decref(spec);
    /* another spec later: the one there stays */
    CHECK(kapi_clustercidr_default_spec("10.8.0.0/16", 0, 0, 0, &spec) == NULL);
    create(&e, nodes, NODE_IN("d2", "z"));
    c = kapi_clustercidr_controller_start(e.api, spec);
    CHECK_STR_EQ(cidrs_of(&e, "d2"), "10.9.1.0/24");
    kapi_controller_stop(c);
    json_decref(spec);
    api_env_stop(&e);
}
