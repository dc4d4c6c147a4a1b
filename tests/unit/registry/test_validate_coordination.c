/* Unit tests for the Lease validation (registry/validate_coordination.c); each message was
 * checked against kube-apiserver 1.26. */
#include "validate_cases.h"

#define LEASE_BASE                                                                                 \
    "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":"        \
    "\"l\",\"namespace\":\"default\",\"uid\":\"u1\"},\"spec\":{\"holderIdentity\":\"a_1\","        \
    "\"leaseDurationSeconds\":15,\"acquireTime\":\"2024-01-02T03:04:05.000001Z\",\"renewTime\":"   \
    "\"2024-01-02T03:04:15.000001Z\",\"leaseTransitions\":0}}"
#define LEASE "Lease.coordination.k8s.io \"l\" is invalid: "
#define DURATION_0 "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"

static const vcase create_cases[] = {
    {"valid", "{}", NULL, 0},
    {"empty spec", "{\"spec\":null}", NULL, 0},
    {"released: no holder, one second",
     "{\"spec\":{\"holderIdentity\":\"\","
     "\"leaseDurationSeconds\":1}}",
     NULL, 0},
    {"a finalizer kube's core rule would refuse", "{\"metadata\":{\"finalizers\":[\"foo\"]}}", NULL,
     0},
    {"duration 0", "{\"spec\":{\"leaseDurationSeconds\":0}}", LEASE DURATION_0, 1},
    {"negative duration and transitions",
     "{\"spec\":{\"leaseDurationSeconds\":-5,\"leaseTransitions\":-1}}",
     LEASE "[spec.leaseDurationSeconds: Invalid value: -5: must be greater than 0, "
           "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0]",
     2},
    {"a subdomain name, then the spec",
     "{\"metadata\":{\"name\":\"Bad_Name\"},\"spec\":{\"leaseTransitions\":-1}}",
     "Lease.coordination.k8s.io \"Bad_Name\" is invalid: [metadata.name: Invalid value: "
     "\"Bad_Name\": " SUBDOMAIN_MSG
     ", spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0]",
     2},
    {"generateName",
     "{\"metadata\":{\"generateName\":\"Bad-\"},\"spec\":{\"leaseDurationSeconds\":0}}",
     LEASE "[metadata.generateName: Invalid value: \"Bad-\": " SUBDOMAIN_MSG ", " DURATION_0 "]",
     2},
    {"no namespace", "{\"metadata\":{\"namespace\":null}}",
     LEASE "metadata.namespace: Required value", 1},
};

TEST(validate_lease_create)
{
    vcase_run("coordination.k8s.io", "v1", "leases", LEASE_BASE, NULL, create_cases,
              KAPI_ARRAY_LEN(create_cases));
}

/* The generic update checks, then ValidateLeaseUpdate's (metadata once more, the spec): a
 * label is reported three times, in one message. */
static const vcase update_cases[] = {
    {"a new holder", "{\"spec\":{\"holderIdentity\":\"b_2\",\"leaseTransitions\":1}}", NULL, 0},
    {"released", "{\"spec\":{\"holderIdentity\":\"\",\"leaseDurationSeconds\":1}}", NULL, 0},
    {"duration 0", "{\"spec\":{\"leaseDurationSeconds\":0}}", LEASE DURATION_0, 1},
    {"label and spec",
     "{\"metadata\":{\"labels\":{\"a b\":\"c\"}},\"spec\":{\"leaseDurationSeconds\":0,"
     "\"leaseTransitions\":-2}}",
     LEASE "[metadata.labels: Invalid value: \"a b\": " QNAME_PART_MSG ", " DURATION_0
           ", spec.leaseTransitions: Invalid value: -2: must be greater than or equal to 0]",
     5},
};

TEST(validate_lease_update)
{
    vcase_run("coordination.k8s.io", "v1", "leases", LEASE_BASE, LEASE_BASE, update_cases,
              KAPI_ARRAY_LEN(update_cases));
}
