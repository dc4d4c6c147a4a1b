/* Unit tests for the Event validation (registry/validate_events.c) in both served views:
 * core/v1 (legacy rules only) and events.k8s.io/v1 (strict rules, core field names). */
#include "validate_cases.h"

#define X10 "xxxxxxxxxx"
#define X100 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10
/* 129 characters, over the 128 of reasons, actions and reporting instances, and 1025,
 * over the 1024 of a note. */
#define KAPI_TEST_129 X100 X10 X10 "xxxxxxxxx"
#define KAPI_NOTE_1025 X100 X100 X100 X100 X100 X100 X100 X100 X100 X100 X10 X10 "xxxxx"

#define EV_BASE                                                                                    \
    "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"ev\",\"namespace\":"       \
    "\"ns1\"},\"involvedObject\":{\"kind\":\"CronJob\",\"namespace\":\"ns1\",\"name\":\"x\"},"     \
    "\"reason\":\"Scheduled\",\"message\":\"m\",\"type\":\"Normal\"}"
#define EV "Event \"ev\" is invalid: "

static const vcase core_cases[] = {
    {"valid", "{}", NULL, 0},
    {"valid odd type and long reason",
     "{\"type\":\"Info\",\"reason\":\"" KAPI_TEST_129 "\",\"metadata\":{\"name\":\"Odd_Name\"}}",
     NULL, 0},
    {"namespace mismatch", "{\"involvedObject\":{\"namespace\":\"ns2\"}}",
     EV "involvedObject.namespace: Invalid value: \"ns2\": does not match event.namespace", 1},
    {"no involved object", "{\"involvedObject\":null}",
     EV "involvedObject.namespace: Invalid value: \"\": does not match event.namespace", 1},
    {"eventTime set",
     "{\"eventTime\":\"2024-01-02T03:04:05.000000Z\",\"reportingComponent\":\"Bad Name\","
     "\"reportingInstance\":\"" KAPI_TEST_129 "\"}",
     EV "[reportingComponent: Invalid value: \"Bad Name\": " QNAME_PART_MSG ", "
        "reportingInstance: Invalid value: \"\": can have at most 128 characters, action: "
        "Required value]",
     3},
    {"a NUL is allowed in a path segment (1.26 checks no more)",
     "{\"metadata\":{\"name\":\"victim\\u0000x\"}}", NULL, 0},
    {"name checked by the generic pass only", "{\"metadata\":{\"name\":\"a/b\"}}",
     "Event \"a/b\" is invalid: metadata.name: Invalid value: \"a/b\": may not contain '/'", 1},
};

TEST(validate_event_core)
{
    vcase_run("", "v1", "events", EV_BASE, NULL, core_cases, KAPI_ARRAY_LEN(core_cases));
}

#define EVE_BASE                                                                                   \
    "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"ev\","       \
    "\"namespace\":\"ns1\"},\"eventTime\":\"2024-01-02T03:04:05.123456Z\","                        \
    "\"reportingController\":\"example.com/ctl\",\"reportingInstance\":\"i-1\",\"action\":"        \
    "\"Act\",\"reason\":\"Why\",\"note\":\"n\",\"type\":\"Normal\",\"regarding\":{\"kind\":"       \
    "\"CronJob\",\"namespace\":\"ns1\",\"name\":\"x\"}}"

static const vcase v1_cases[] = {
    {"valid", "{}", NULL, 0},
    {"valid series",
     "{\"series\":{\"count\":2,\"lastObservedTime\":\"2024-01-02T03:04:06.000000Z\"}}", NULL, 0},
    {"reporting controller", "{\"reportingController\":null}",
     EV "[reportingController: Required value, reportingController: Invalid value: \"\": name "
        "part must be non-empty, reportingController: Invalid value: \"\": " QNAME_PART_MSG "]",
     3},
    {"type", "{\"type\":\"Info\"}", EV "type: Invalid value: \"\": has invalid value: Info", 1},
    {"note length", "{\"note\":\"" KAPI_NOTE_1025 "\"}",
     EV "message: Invalid value: \"\": can have at most 1024 characters", 1},
    {"series", "{\"series\":{\"count\":1}}",
     EV "[series.count: Invalid value: \"\": should be at least 2, series.lastObservedTime: "
        "Required value]",
     2},
    {"deprecated fields",
     "{\"deprecatedCount\":3,\"deprecatedSource\":{\"host\":\"h\"},\"deprecatedLastTimestamp\":"
     "\"2024-01-01T00:00:00Z\"}",
     EV "[lastTimestamp: Invalid value: \"\": needs to be unset, count: Invalid value: \"\": "
        "needs to be unset, source: Invalid value: \"\": needs to be unset]",
     3},
    {"name with a NUL", "{\"metadata\":{\"name\":\"victim\\u0000x\"}}",
     "Event \"victim\\x00x\" is invalid: metadata.name: Invalid value: "
     "\"victim\\x00x\": " SUBDOMAIN_MSG,
     1},
    {"metadata", "{\"metadata\":{\"name\":\"Bad_Name\",\"labels\":{\"k\":\"bad value\"}}}",
     "Event \"Bad_Name\" is invalid: [metadata.name: Invalid value: \"Bad_Name\": " SUBDOMAIN_MSG
     ", metadata.labels: Invalid value: \"bad value\": " LABEL_VALUE_MSG "]",
     2},
    {"everything missing",
     "{\"eventTime\":null,\"reportingController\":null,\"reportingInstance\":null,\"action\":"
     "null,\"reason\":null,\"note\":null,\"type\":null,\"regarding\":null}",
     EV "[involvedObject.namespace: Invalid value: \"\": does not match event.namespace, "
        "eventTime: Required value, type: Invalid value: \"\": has invalid value: ]",
     3},
};

TEST(validate_event_v1)
{
    vcase_run("events.k8s.io", "v1", "events", EVE_BASE, NULL, v1_cases, KAPI_ARRAY_LEN(v1_cases));
}

static const vcase v1_update_cases[] = {
    {"unchanged", "{}", NULL, 0},
    {"immutable fields",
     "{\"regarding\":{\"name\":\"y\"},\"reason\":\"Other\",\"note\":\"changed\",\"related\":{"
     "\"kind\":\"Pod\",\"name\":\"p\"},\"eventTime\":\"2024-01-02T03:04:05.5Z\"}",
     EV "[involvedObject: Invalid value: core.ObjectReference{Kind:\"CronJob\", "
        "Namespace:\"ns1\", Name:\"y\", UID:\"\", APIVersion:\"\", ResourceVersion:\"\", "
        "FieldPath:\"\"}: field is immutable, reason: Invalid value: \"Other\": field is "
        "immutable, message: Invalid value: \"changed\": field is immutable, eventTime: Invalid "
        "value: 2024-01-02 03:04:05.5 +0000 UTC: field is immutable, related: Invalid value: "
        "core.ObjectReference{Kind:\"Pod\", Namespace:\"\", Name:\"p\", UID:\"\", "
        "APIVersion:\"\", ResourceVersion:\"\", FieldPath:\"\"}: field is immutable]",
     6},
};

TEST(validate_event_v1_update)
{
    vcase_run("events.k8s.io", "v1", "events", EVE_BASE, EVE_BASE, v1_update_cases,
              KAPI_ARRAY_LEN(v1_update_cases));
}
