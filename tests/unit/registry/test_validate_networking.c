/* Unit tests for the ClusterCIDR validation (registry/validate_networking.c) and the node
 * selector rules it uses (registry/validate_core.c). */
#include "validate_cases.h"

#define CC_BASE                                                                                    \
    "{\"apiVersion\":\"networking.k8s.io/v1alpha1\",\"kind\":\"ClusterCIDR\",\"metadata\":{"       \
    "\"name\":\"cc\",\"uid\":\"u1\"},\"spec\":{\"perNodeHostBits\":8,\"ipv4\":\"10.0.0.0/16\"}}"
#define CC "ClusterCIDR.networking.k8s.io \"cc\" is invalid: "
#define NS "spec.nodeSelector.nodeSelectorTerms"

static const vcase create_cases[] = {
    {"valid", "{}", NULL, 0},
    {"valid dual stack", "{\"spec\":{\"ipv6\":\"fd00::/48\"}}", NULL, 0},
    {"valid host bits set and leading zeros", "{\"spec\":{\"ipv4\":\"010.100.1.5/16\"}}", NULL, 0},
    {"valid selector",
     "{\"spec\":{\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"a\","
     "\"operator\":\"Exists\"}],\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
     "\"values\":[\"n1\"]}]}]}}}",
     NULL, 0},
    {"name with a NUL", "{\"metadata\":{\"name\":\"cc\\u0000x\"}}",
     "ClusterCIDR.networking.k8s.io \"cc\\x00x\" is invalid: metadata.name: Invalid value: "
     "\"cc\\x00x\": " LABEL_MSG,
     1},
    {"name is a label", "{\"metadata\":{\"name\":\"cc.dots\"}}",
     "ClusterCIDR.networking.k8s.io \"cc.dots\" is invalid: metadata.name: Invalid value: "
     "\"cc.dots\": " LABEL_MSG,
     1},
    {"no cidr", "{\"spec\":{\"ipv4\":null}}",
     CC "spec: Required value: one or both of `ipv4` and `ipv6` must be specified", 1},
    {"host bits low", "{\"spec\":{\"perNodeHostBits\":3}}",
     CC "spec.perNodeHostBits: Invalid value: 3: must be greater than or equal to 4", 1},
    {"host bits high", "{\"spec\":{\"perNodeHostBits\":20}}",
     CC "spec.perNodeHostBits: Invalid value: 20: must be less than or equal to 16", 1},
    {"host bits low for both families", "{\"spec\":{\"perNodeHostBits\":2,\"ipv6\":\"fd00::/64\"}}",
     CC "spec.perNodeHostBits: Invalid value: 2: must be greater than or equal to 4", 2},
    {"bad prefix", "{\"spec\":{\"ipv4\":\"10.100.0.0/33\"}}",
     CC "spec.IPv4: Invalid value: \"10.100.0.0/33\": must be a valid CIDR: 10.100.0.0/33", 1},
    {"not a cidr", "{\"spec\":{\"ipv4\":\"10.0.0.256/8\",\"ipv6\":\"fd00::\"}}",
     CC "[spec.IPv4: Invalid value: \"10.0.0.256/8\": must be a valid CIDR: 10.0.0.256/8, "
        "spec.IPv6: Invalid value: \"fd00::\": must be a valid CIDR: fd00::]",
     2},
    {"v6 in ipv4", "{\"spec\":{\"ipv4\":\"fd00::/64\"}}",
     CC "[spec.IPv4: Invalid value: \"fd00::/64\": must be a valid IPv4 CIDR, "
        "spec.perNodeHostBits: Invalid value: 8: must be less than or equal to -32]",
     2},
    {"v4 in ipv6", "{\"spec\":{\"ipv4\":null,\"ipv6\":\"10.0.0.0/8\"}}",
     CC "spec.IPv6: Invalid value: \"10.0.0.0/8\": must be a valid IPv6 CIDR", 1},
    {"selector without terms", "{\"spec\":{\"nodeSelector\":{\"nodeSelectorTerms\":[]}}}",
     CC NS ": Required value: must have at least one node selector term", 1},
    {"selector requirements",
     "{\"spec\":{\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"a\","
     "\"operator\":\"Bogus\",\"values\":[\"x\"]},{\"key\":\"-a\",\"operator\":\"In\"},{\"key\":"
     "\"a\",\"operator\":\"Gt\",\"values\":[\"1\",\"2\"]}],\"matchFields\":[{\"key\":\"spec.x\","
     "\"operator\":\"Exists\"}]}]}}}",
     CC "[" NS "[0].matchExpressions[0].operator: Invalid value: \"Bogus\": not a valid selector "
        "operator, " NS "[0].matchExpressions[1].values: Required value: must be specified when "
        "`operator` is 'In' or 'NotIn', " NS
        "[0].matchExpressions[1].key: Invalid value: \"-a\": " QNAME_PART_MSG ", " NS
        "[0].matchExpressions[2].values: Required value: must be specified single value "
        "when `operator` is 'Lt' or 'Gt', " NS "[0].matchFields[0].operator: Invalid value: "
        "\"Exists\": not a valid selector operator, " NS "[0].matchFields[0].key: Invalid value: "
        "\"spec.x\": not a valid field selector key]",
     6},
};

TEST(validate_clustercidr_create)
{
    vcase_run("networking.k8s.io", "v1alpha1", "clustercidrs", CC_BASE, NULL, create_cases,
              KAPI_ARRAY_LEN(create_cases));
}

#define CC_OLD                                                                                     \
    "{\"apiVersion\":\"networking.k8s.io/v1alpha1\",\"kind\":\"ClusterCIDR\",\"metadata\":{"       \
    "\"name\":\"cc\",\"uid\":\"u1\"},\"spec\":{\"perNodeHostBits\":8,\"ipv4\":\"10.0.0.0/16\","    \
    "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":" \
    "\"In\",\"values\":[\"x\"]}]}]}}}"

static const vcase update_cases[] = {
    {"unchanged",
     "{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"nodeSelector\":{\"nodeSelectorTerms\":[{"
     "\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[\"x\"]}]}]}}}",
     NULL, 0},
    {"spec immutable",
     "{\"spec\":{\"perNodeHostBits\":6,\"ipv4\":\"10.200.0.0/16\",\"ipv6\":"
     "\"fd00::/48\"}}",
     CC "[spec.nodeSelector: Invalid value: \"null\": field is immutable, spec.perNodeHostBits: "
        "Invalid value: 6: field is immutable, spec.ipv4: Invalid value: \"10.200.0.0/16\": field "
        "is immutable, spec.ipv6: Invalid value: \"fd00::/48\": field is immutable]",
     4},
    {"selector immutable",
     "{\"spec\":{\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"b\","
     "\"operator\":\"Exists\"}]}]}}}",
     CC "spec.nodeSelector: Invalid value: core.NodeSelector{NodeSelectorTerms:[]core."
        "NodeSelectorTerm{core.NodeSelectorTerm{MatchExpressions:[]core.NodeSelectorRequirement{"
        "core.NodeSelectorRequirement{Key:\"b\", Operator:\"Exists\", Values:[]string(nil)}}, "
        "MatchFields:[]core.NodeSelectorRequirement(nil)}}}: field is immutable",
     1},
};

TEST(validate_clustercidr_update)
{
    vcase_run("networking.k8s.io", "v1alpha1", "clustercidrs", CC_BASE, CC_OLD, update_cases,
              KAPI_ARRAY_LEN(update_cases));
}
