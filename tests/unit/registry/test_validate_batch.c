/* Unit tests for the CronJob validation (registry/validate_batch.c) and the job template
 * rules: exact 1.26 messages, in 1.26's order, on create and on update. */
#include "validate_cases.h"

#define CJ_BASE                                                                                    \
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":\"cj\","             \
    "\"namespace\":\"default\",\"uid\":\"u1\",\"creationTimestamp\":\"2024-01-01T00:00:00Z\"},"    \
    "\"spec\":{\"schedule\":\"0 3 * * *\",\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"     \
    "\"restartPolicy\":\"OnFailure\",\"containers\":[{\"name\":\"main\",\"image\":"                \
    "\"busybox\"}]}}}}}}"
#define CJ "CronJob.batch \"cj\" is invalid: "
#define RP "spec.jobTemplate.spec.template.spec.restartPolicy"
#define JS "spec.jobTemplate.spec."

static const vcase create_cases[] = {
    {"valid", "{}", NULL, 0},
    {"valid descriptor", "{\"spec\":{\"schedule\":\"@hourly\"}}", NULL, 0},
    {"valid tz prefix", "{\"spec\":{\"schedule\":\"CRON_TZ=UTC 0 3 * * *\"}}", NULL, 0},
    {"valid zone", "{\"spec\":{\"timeZone\":\"Europe/Paris\"}}", NULL, 0},
    {"valid explicit defaults",
     "{\"spec\":{\"concurrencyPolicy\":\"\",\"successfulJobsHistoryLimit\":0}}", NULL, 0},
    {"schedule required", "{\"spec\":{\"schedule\":\"\"}}", CJ "spec.schedule: Required value", 1},
    {"schedule fields", "{\"spec\":{\"schedule\":\"bad\"}}",
     CJ "spec.schedule: Invalid value: \"bad\": expected exactly 5 fields, found 1: [bad]", 1},
    {"schedule range", "{\"spec\":{\"schedule\":\"61 * * * *\"}}",
     CJ "spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61",
     1},
    {"tz prefix and timeZone",
     "{\"spec\":{\"schedule\":\"TZ=UTC 0 3 * * *\",\"timeZone\":\"UTC\"}}",
     CJ "spec.schedule: Invalid value: \"TZ=UTC 0 3 * * *\": cannot use both timeZone field and "
        "TZ or CRON_TZ in schedule",
     1},
    {"time zone empty", "{\"spec\":{\"timeZone\":\"\"}}",
     CJ "spec.timeZone: Invalid value: \"\": timeZone must be nil or non-empty string", 1},
    {"time zone unknown", "{\"spec\":{\"timeZone\":\"Mars/Base\"}}",
     CJ "spec.timeZone: Invalid value: \"Mars/Base\": unknown time zone Mars/Base", 1},
    {"time zone Local", "{\"spec\":{\"timeZone\":\"Local\"}}",
     CJ "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as "
        "defined in https://www.iana.org/time-zones",
     1},
    {"time zone local", "{\"spec\":{\"timeZone\":\"local\"}}",
     CJ "[spec.timeZone: Invalid value: \"local\": timeZone must be an explicit time zone as "
        "defined in https://www.iana.org/time-zones, spec.timeZone: Invalid value: \"local\": "
        "unknown time zone local]",
     2},
    {"time zone path", "{\"spec\":{\"timeZone\":\"../zone\"}}",
     CJ "spec.timeZone: Invalid value: \"../zone\": time: invalid location name", 1},
    {"concurrency policy", "{\"spec\":{\"concurrencyPolicy\":\"Sometimes\"}}",
     CJ "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", "
        "\"Forbid\", \"Replace\"",
     1},
    {"negative counts",
     "{\"spec\":{\"startingDeadlineSeconds\":-5,\"failedJobsHistoryLimit\":-2,"
     "\"jobTemplate\":{\"spec\":{\"activeDeadlineSeconds\":-1,\"ttlSecondsAfterFinished\":-3}}}}",
     CJ "[spec.startingDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0, " JS
        "activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0, " JS
        "ttlSecondsAfterFinished: Invalid value: -3: must be greater than or equal to 0, "
        "spec.failedJobsHistoryLimit: Invalid value: -2: must be greater than or equal to 0]",
     4},
    {"name with a NUL", "{\"metadata\":{\"name\":\"cj\\u0000x\"}}",
     "CronJob.batch \"cj\\x00x\" is invalid: metadata.name: Invalid value: "
     "\"cj\\x00x\": " SUBDOMAIN_MSG,
     1},
    {"name not a subdomain", "{\"metadata\":{\"name\":\"Bad_Name\"}}",
     "CronJob.batch \"Bad_Name\" is invalid: metadata.name: Invalid value: "
     "\"Bad_Name\": " SUBDOMAIN_MSG,
     1},
    {"namespace required", "{\"metadata\":{\"namespace\":null}}",
     CJ "metadata.namespace: Required value", 1},
    {"finalizer not qualified", "{\"metadata\":{\"finalizers\":[\"ok.io/x\",\"foo\"]}}",
     CJ "metadata.finalizers[1]: Invalid value: \"foo\": name is neither a standard finalizer "
        "name nor is it fully qualified",
     1},
    {"standard finalizer", "{\"metadata\":{\"finalizers\":[\"orphan\"]}}", NULL, 0},
    {"selector",
     "{\"spec\":{\"jobTemplate\":{\"spec\":{\"selector\":{\"matchExpressions\":[{\"key\":\"a\","
     "\"operator\":\"In\",\"values\":[\"x\"]}]}}}}}",
     CJ JS "selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
           "MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:\"a\", "
           "Operator:\"In\", Values:[]string{\"x\"}}}}: `selector` will be auto-generated",
     1},
    {"manual selector", "{\"spec\":{\"jobTemplate\":{\"spec\":{\"manualSelector\":true}}}}",
     CJ JS "manualSelector: Unsupported value: true: supported values: \"nil\", \"false\"", 1},
    {"completion mode", "{\"spec\":{\"jobTemplate\":{\"spec\":{\"completionMode\":\"Bogus\"}}}}",
     CJ JS "completionMode: Unsupported value: \"Bogus\": supported values: \"NonIndexed\", "
           "\"Indexed\"",
     1},
    {"indexed without completions",
     "{\"spec\":{\"jobTemplate\":{\"spec\":{\"completionMode\":\"Indexed\",\"parallelism\":"
     "100001}}}}",
     CJ "[" JS "completions: Required value: when completion mode is Indexed, " JS
        "parallelism: Invalid value: 100001: must be less than or equal to 100000 when "
        "completion mode is Indexed]",
     2},
    {"restart policy absent",
     "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":null}}}}}}",
     CJ RP ": Required value: valid values: \"OnFailure\", \"Never\"", 1},
    {"restart policy unknown",
     "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":"
     "\"Sometimes\"}}}}}}",
     CJ "[" RP ": Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", "
        "\"Never\", " RP ": Unsupported value: \"Sometimes\": supported values: \"OnFailure\", "
        "\"Never\"]",
     2},
    {"pod failure policy",
     "{\"spec\":{\"jobTemplate\":{\"spec\":{\"podFailurePolicy\":{\"rules\":[{\"action\":"
     "\"Retry\",\"onExitCodes\":{\"operator\":\"In\",\"containerName\":\"x\",\"values\":[3,0,3]}},"
     "{\"action\":\"\"}]}}}}}",
     CJ "[" JS "podFailurePolicy.rules[0].action: Unsupported value: \"Retry\": supported values: "
        "\"Count\", \"FailJob\", \"Ignore\", " JS
        "podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: \"x\": must be one "
        "of the container or initContainer names in the pod template, " JS
        "podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the "
        "In operator, " JS
        "podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 3, " JS
        "podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{3, 0, 3}: must be "
        "ordered, " JS "podFailurePolicy.rules[1].action: Required value: valid values: "
        "[\"Count\" \"FailJob\" \"Ignore\"], " JS "podFailurePolicy.rules[1]: Invalid value: "
        "specifying one of OnExitCodes and OnPodConditions is required, " RP ": Invalid value: "
        "\"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified]",
     8},
    {"several at once",
     "{\"spec\":{\"schedule\":\"bad\",\"timeZone\":\"Nowhere/Land\",\"concurrencyPolicy\":\"X\","
     "\"jobTemplate\":{\"spec\":{\"backoffLimit\":-1,\"template\":{\"spec\":{\"restartPolicy\":"
     "\"Always\"}}}}}}",
     CJ "[spec.schedule: Invalid value: \"bad\": expected exactly 5 fields, found 1: [bad], "
        "spec.timeZone: Invalid value: \"Nowhere/Land\": unknown time zone Nowhere/Land, "
        "spec.concurrencyPolicy: Unsupported value: \"X\": supported values: \"Allow\", "
        "\"Forbid\", \"Replace\", " JS "backoffLimit: Invalid value: -1: must be greater than or "
        "equal to 0, " RP ": Required value: valid values: \"OnFailure\", \"Never\"]",
     5},
};

TEST(validate_cronjob_create)
{
    vcase_run("batch", "v1", "cronjobs", CJ_BASE, NULL, create_cases, KAPI_ARRAY_LEN(create_cases));
}

static const vcase long_name_cases[] = {
    {"name too long",
     "{\"metadata\":{\"name\":\"ccccccccccccccccccccccccccccccccccccccccccccccccccccc\"}}",
     "CronJob.batch \"ccccccccccccccccccccccccccccccccccccccccccccccccccccc\" is invalid: "
     "metadata.name: Invalid value: \"ccccccccccccccccccccccccccccccccccccccccccccccccccccc\": "
     "must be no more than 52 characters",
     1},
    {"name at the limit",
     "{\"metadata\":{\"name\":\"cccccccccccccccccccccccccccccccccccccccccccccccccccc\"}}", NULL, 0},
};

TEST(validate_cronjob_name_length)
{
    vcase_run("batch", "v1", "cronjobs", CJ_BASE, NULL, long_name_cases,
              KAPI_ARRAY_LEN(long_name_cases));
}

/* The stored object of the update cases: an old CronJob whose time zone is no longer
 * valid, which an update that keeps it may still carry. */
#define CJ_OLD                                                                                     \
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":\"cj\","             \
    "\"namespace\":\"default\",\"uid\":\"u1\",\"creationTimestamp\":\"2024-01-01T00:00:00Z\"},"    \
    "\"spec\":{\"schedule\":\"0 3 * * *\",\"timeZone\":\"Mars/Base\"}}"

static const vcase update_cases[] = {
    {"unchanged invalid zone", "{\"spec\":{\"timeZone\":\"Mars/Base\"}}", NULL, 0},
    {"changed invalid zone", "{\"spec\":{\"timeZone\":\"Mars/Colony\"}}",
     CJ "spec.timeZone: Invalid value: \"Mars/Colony\": unknown time zone Mars/Colony", 1},
    {"schedule", "{\"spec\":{\"schedule\":\"every day\",\"timeZone\":\"Mars/Base\"}}",
     CJ "spec.schedule: Invalid value: \"every day\": expected exactly 5 fields, found 2: [every "
        "day]",
     1},
    {"uid is immutable, reported by both passes",
     "{\"metadata\":{\"uid\":\"u2\"},\"spec\":{\"timeZone\":\"Mars/Base\"}}",
     CJ "metadata.uid: Invalid value: \"u2\": field is immutable", 2},
    {"generation", "{\"metadata\":{\"generation\":-1},\"spec\":{\"timeZone\":\"Mars/Base\"}}",
     CJ "[metadata.generation: Invalid value: -1: must be greater than or equal to 0, "
        "metadata.generation: Invalid value: -1: must not be decremented]",
     3},
};

TEST(validate_cronjob_update)
{
    vcase_run("batch", "v1", "cronjobs", CJ_BASE, CJ_OLD, update_cases,
              KAPI_ARRAY_LEN(update_cases));
}
