/* Unit tests for the Node validation (registry/validate_node.c): ValidateNode on create
 * and, on update, ValidateNode then ValidateNodeUpdate, with 1.26's messages and order
 * (the annotation cases as the reference kube-apiserver answered them);
 * and the Node's defaulting (registry/defaulters.c). */
#include <stdio.h>
#include <stdlib.h>

#include "codec/json.h"
#include "validate_cases.h"

#define NODE_BASE "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"}}"
#define NODE_OLD                                                                                   \
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"uid\":\"u1\","       \
    "\"resourceVersion\":\"5\",\"creationTimestamp\":\"2024-01-01T00:00:00Z\"},\"spec\":{"         \
    "\"podCIDR\":\"10.0.0.0/24\",\"podCIDRs\":[\"10.0.0.0/24\"],\"providerID\":\"p://1\"}}"
#define NODE "Node \"n1\" is invalid: "
#define CIDR_ONCE "Forbidden: node updates may not change podCIDR except from \"\" to valid"

static const vcase create_cases[] = {
    {"valid", "{}", NULL, 0},
    {"valid dual-stack", "{\"spec\":{\"podCIDRs\":[\"10.0.0.0/24\",\"fd00::/120\"]}}", NULL, 0},
    {"bad name", "{\"metadata\":{\"name\":\"N_1\"}}",
     "Node \"N_1\" is invalid: metadata.name: Invalid value: \"N_1\": " SUBDOMAIN_MSG, 1},
    {"bad CIDR", "{\"spec\":{\"podCIDRs\":[\"10.0.0.0/33\"]}}",
     NODE "spec.podCIDRs[0]: Invalid value: []string{\"10.0.0.0/33\"}: must be valid CIDR", 1},
    {"two of one family", "{\"spec\":{\"podCIDRs\":[\"10.0.0.0/24\",\"10.0.0.0/24\"]}}",
     NODE "[spec.podCIDRs: Invalid value: []string{\"10.0.0.0/24\", \"10.0.0.0/24\"}: may "
          "specify no more than one CIDR for each IP family, spec.podCIDRs[1]: Duplicate value: "
          "\"10.0.0.0/24\"]",
     2},
    {"taints",
     "{\"spec\":{\"taints\":[{\"key\":\"a\",\"effect\":\"NoSchedule\"},{\"key\":\"a\","
     "\"effect\":\"NoSchedule\"},{\"key\":\"b/c/d\",\"value\":\"-x\",\"effect\":\"\"},"
     "{\"key\":\"e\",\"effect\":\"Never\"}]}}",
     NODE "[metadata.taints[1]: Duplicate value: core.Taint{Key:\"a\", Value:\"\", "
          "Effect:\"NoSchedule\", TimeAdded:<nil>}: taints must be unique by key and effect "
          "pair, metadata.taints[2].key: Invalid value: \"b/c/d\": a qualified name must consist "
          "of alphanumeric characters, '-', '_' or '.', and must start and end with an "
          "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
          "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
          "subdomain prefix and '/' (e.g. 'example.com/MyName'), metadata.taints[2].value: "
          "Invalid value: \"-x\": " LABEL_VALUE_MSG ", metadata.taints[2].effect: Required "
          "value, metadata.taints[3].effect: Unsupported value: \"Never\": supported values: "
          "\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"]",
     5},
    {"taints annotation: not JSON",
     "{\"metadata\": {\"annotations\": {\"scheduler.alpha.kubernetes.io/taints\": "
     "\"[{\\\"key\\\":\"}}}",
     NODE "metadata.annotations: Invalid value: \"scheduler.alpha.kubernetes.io/taints\": "
          "unexpected end of JSON input",
     1},
    {"taints annotation: a field of another type",
     "{\"metadata\": {\"annotations\": {\"scheduler.alpha.kubernetes.io/taints\": "
     "\"[{\\\"key\\\":1,\\\"effect\\\":\\\"NoSchedule\\\"},{\\\"value\\\":true}]\"}}}",
     NODE "metadata.annotations: Invalid value: \"scheduler.alpha.kubernetes.io/taints\": json: "
          "cannot unmarshal number into Go struct field Taint.Key of type string",
     1},
    {"taints annotation: a time that does not parse",
     "{\"metadata\": {\"annotations\": {\"scheduler.alpha.kubernetes.io/taints\": "
     "\"[{\\\"key\\\":\\\"a\\\",\\\"effect\\\":\\\"NoSchedule\\\",\\\"timeAdded\\\":"
     "\\\"yesterday\\\"}]\"}}}",
     NODE
     "metadata.annotations: Invalid value: \"scheduler.alpha.kubernetes.io/taints\": parsing time "
     "\"yesterday\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"yesterday\" as \"2006\"",
     1},
    {"taints annotation: names in any case, then validated",
     "{\"metadata\": {\"annotations\": {\"scheduler.alpha.kubernetes.io/taints\": "
     "\"[{\\\"KEY\\\":\\\"a\\\",\\\"Effect\\\":\\\"Bad\\\"},null]\"}}}",
     NODE "[metadata.annotations.scheduler.alpha.kubernetes.io/taints[0].effect: Unsupported "
          "value: \"Bad\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\", "
          "metadata.annotations.scheduler.alpha.kubernetes.io/taints[1].key: Invalid value: \"\": "
          "name part must be non-empty, "
          "metadata.annotations.scheduler.alpha.kubernetes.io/taints[1].key: Invalid value: \"\": "
          "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
          "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
          "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), "
          "metadata.annotations.scheduler.alpha.kubernetes.io/taints[1].effect: Required value]",
     4},
    {"preferAvoidPods annotation: a nested field of another type",
     "{\"metadata\": {\"annotations\": {\"scheduler.alpha.kubernetes.io/preferAvoidPods\": "
     "\"{\\\"preferAvoidPods\\\":[{\\\"podSignature\\\":{\\\"podController\\\":{\\\"controller\\\":"
     "\\\"yes\\\"}}}]}\"}}}",
     NODE "metadata.annotations.AvoidPods: Invalid value: "
          "\"scheduler.alpha.kubernetes.io/preferAvoidPods\": json: cannot unmarshal string into "
          "Go struct field OwnerReference.preferAvoidPods.podSignature.podController.controller of "
          "type bool",
     1},
    {"preferAvoidPods annotation: entries",
     "{\"metadata\": {\"annotations\": {\"scheduler.alpha.kubernetes.io/preferAvoidPods\": "
     "\"{\\\"preferAvoidPods\\\":[{\\\"podSignature\\\":{}},{\\\"podSignature\\\":{"
     "\\\"podController\\\":{\\\"kind\\\":\\\"X\\\",\\\"controller\\\":false}}},{"
     "\\\"podSignature\\\":{\\\"podController\\\":{\\\"controller\\\":true}}}]}\"}}}",
     NODE "[metadata.annotations.scheduler.alpha.kubernetes.io/preferAvoidPods[0].PodSignature: "
          "Required value, "
          "metadata.annotations.scheduler.alpha.kubernetes.io/"
          "preferAvoidPods[1].PodSignature.PodController.Controller: Invalid value: false: must "
          "point to a controller]",
     2},
};

TEST(validate_node_create)
{
    vcase_run("", "v1", "nodes", NODE_BASE, NULL, create_cases, KAPI_ARRAY_LEN(create_cases));
}

static const vcase update_cases[] = {
    {"labels change", "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}", NULL, 0},
    {"podCIDRs change", "{\"spec\":{\"podCIDR\":null,\"podCIDRs\":[\"10.0.1.0/24\"]}}",
     NODE "spec.podCIDRs: " CIDR_ONCE, 1},
    {"podCIDRs added", "{\"spec\":{\"podCIDRs\":[\"10.0.0.0/24\",\"fd00::/120\"]}}",
     NODE "spec.podCIDRs: " CIDR_ONCE, 1},
    {"providerID change", "{\"spec\":{\"providerID\":\"p://2\"}}",
     NODE "spec.providerID: Forbidden: node updates may not change providerID except from \"\" "
          "to valid",
     1},
    {"externalID change", "{\"spec\":{\"externalID\":\"x\"}}",
     NODE "spec.externalID: Forbidden: may not be updated", 1},
};

TEST(validate_node_update)
{
    vcase_run("", "v1", "nodes", NODE_OLD, NODE_OLD, update_cases, KAPI_ARRAY_LEN(update_cases));
}

/* An update from no Pod CIDRs to some is the allocator's write, and allowed. */
static const vcase assign_cases[] = {
    {"assign", "{\"spec\":{\"podCIDR\":\"10.0.0.0/24\",\"podCIDRs\":[\"10.0.0.0/24\"]}}", NULL, 0},
};

TEST(validate_node_assign)
{
    vcase_run("", "v1", "nodes", NODE_BASE, NODE_BASE, assign_cases, KAPI_ARRAY_LEN(assign_cases));
}

/* ValidateNodeResources on create, in name order; on update it runs in ValidateNode and
 * again in ValidateNodeUpdate, as 1.26 does. */
static const vcase resource_cases[] = {
    {"capacity and allocatable",
     "{\"status\":{\"capacity\":{\"pods\":\"1500m\",\"cpu\":\"-1\",\"example.com/gpu\":\"0.5\","
     "\"memory\":\"1Gi\"},\"allocatable\":{\"pods\":\"-2\"}}}",
     NODE "[status.capacity.cpu: Invalid value: \"-1\": must be greater than or equal to 0, "
          "status.capacity.example.com/gpu: Invalid value: resource.Quantity{i:resource."
          "int64Amount{value:5, scale:-1}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"\", "
          "Format:\"DecimalSI\"}: must be an integer, status.capacity.pods: Invalid value: "
          "resource.Quantity{i:resource.int64Amount{value:1500, scale:-3}, d:resource."
          "infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1500m\", Format:\"DecimalSI\"}: must be an "
          "integer, status.allocatable.pods: Invalid value: \"-2\": must be greater than or "
          "equal to 0]",
     4},
};

TEST(validate_node_resources)
{
    vcase_run("", "v1", "nodes", NODE_BASE, NULL, resource_cases, KAPI_ARRAY_LEN(resource_cases));
}

/* The defaulting and conversion a Node's body goes through: podCIDR wins over a podCIDRs
 * that disagrees or is missing, podCIDR is then podCIDRs[0]; allocatable defaults to
 * capacity. */
static const char *defaulted(kapi_registry *reg, const char *spec_status)
{
    static char out[512];
    kapi_arena a;
    kapi_arena_init(&a);
    const kapi_type *t = kapi_registry_lookup(reg, KAPI_STR(""), KAPI_STR("v1"), KAPI_STR("nodes"));
    char *body = kapi_xprintf("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":"
                              "\"n\"},%s}",
                              spec_status);
    json_t *obj = kapi_json_parse(body, strlen(body), NULL);
    kapi_schema_walk w = {.arena = &a, .go_types = true, .defaults = true, .reorder = true};
    CHECK(kapi_schema_decode(t->schema, obj, &w) == NULL);
    json_object_del(obj, "metadata");
    json_object_del(obj, "apiVersion");
    json_object_del(obj, "kind");
    json_object_del(json_object_get(obj, "status"), "daemonEndpoints");
    json_object_del(json_object_get(obj, "status"), "nodeInfo");
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_json_encode(&b, obj);
    snprintf(out, sizeof(out), "%s", b.ptr);
    kapi_buf_dispose(&b);
    json_decref(obj);
    free(body);
    kapi_arena_dispose(&a);
    return out;
}

TEST(node_defaults)
{
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    CHECK_STR_EQ(defaulted(reg, "\"spec\":{\"podCIDR\":\"10.0.0.0/24\"}"),
                 "{\"spec\":{\"podCIDR\":\"10.0.0.0/24\",\"podCIDRs\":[\"10.0.0.0/24\"]},"
                 "\"status\":{}}");
    CHECK_STR_EQ(defaulted(reg, "\"spec\":{\"podCIDRs\":[\"10.0.0.0/24\",\"fd00::/120\"]}"),
                 "{\"spec\":{\"podCIDR\":\"10.0.0.0/24\",\"podCIDRs\":[\"10.0.0.0/24\","
                 "\"fd00::/120\"]},\"status\":{}}");
    CHECK_STR_EQ(defaulted(reg, "\"spec\":{\"podCIDR\":\"10.1.0.0/24\",\"podCIDRs\":["
                                "\"10.0.0.0/24\",\"fd00::/120\"]}"),
                 "{\"spec\":{\"podCIDR\":\"10.1.0.0/24\",\"podCIDRs\":[\"10.1.0.0/24\"]},"
                 "\"status\":{}}");
    CHECK_STR_EQ(defaulted(reg, "\"status\":{\"capacity\":{\"cpu\":\"2\"}}"),
                 "{\"spec\":{},\"status\":{\"capacity\":{\"cpu\":\"2\"},\"allocatable\":{\"cpu\":"
                 "\"2\"}}}");
    kapi_registry_free(reg);
}
