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

/* ---- Job: the cases were checked against kube-apiserver 1.26 (uids put in by hand) ---- */

#define JOB_BASE                                                                                   \
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\","                  \
    "\"namespace\":\"default\",\"uid\":\"u1\",\"creationTimestamp\":\"2024-01-01T00:00:00Z\"},"    \
    "\"spec\":{\"parallelism\":1,\"completions\":1,\"backoffLimit\":6,\"completionMode\":"         \
    "\"NonIndexed\",\"suspend\":false,\"template\":{\"spec\":{\"restartPolicy\":\"Never\","        \
    "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}}"
#define JOB "Job.batch \"j\" is invalid: "
#define JOB_RP "spec.template.spec.restartPolicy"
#define GEN_LABELS "map[string]string{\"controller-uid\":\"u1\", \"job-name\":\"j\"}"
#define MANUAL_TEMPLATE                                                                            \
    "\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"restartPolicy\":\"Never\"," \
    "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}"

static const vcase job_create_cases[] = {
    {"valid", "{}", NULL, 0},
    {"manual selector matching the template",
     "{\"spec\":{\"manualSelector\":true,\"selector\":{\"matchLabels\":{\"a\":\"b\"}}"
     "," MANUAL_TEMPLATE "}}",
     NULL, 0},
    {"manual selector not matching",
     "{\"spec\":{\"manualSelector\":true,\"selector\":{\"matchLabels\":{\"a\":\"c\"}}"
     "," MANUAL_TEMPLATE "}}",
     JOB "spec.template.metadata.labels: Invalid value: map[string]string{\"a\":\"b\"}: "
         "`selector` does not match template `labels`",
     1},
    {"manual selector missing", "{\"spec\":{\"manualSelector\":true," MANUAL_TEMPLATE "}}",
     JOB "[spec.selector: Required value, spec.template.metadata.labels: Invalid value: "
         "map[string]string{\"a\":\"b\"}: `selector` does not match template `labels`]",
     2},
    {"manual selector refused",
     "{\"spec\":{\"manualSelector\":true,\"selector\":{\"matchExpressions\":[{\"key\":\"a\","
     "\"operator\":\"In\"}]}," MANUAL_TEMPLATE "}}",
     JOB "spec.selector.matchExpressions[0].values: Required value: must be specified when "
         "`operator` is 'In' or 'NotIn'",
     1},
    {"generated selector changed",
     "{\"spec\":{\"selector\":{\"matchLabels\":{\"controller-uid\":\"x\"}}}}",
     JOB "[spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"
         "\"controller-uid\":\"x\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: "
         "`selector` not auto-generated, spec.template.metadata.labels: Invalid value: " GEN_LABELS
         ": `selector` does not match template `labels`]",
     2},
    {"template label conflict",
     "{\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"job-name\":\"other\"}}}}}",
     JOB "spec.template.metadata.labels[job-name]: Invalid value: map[string]string{"
         "\"controller-uid\":\"u1\", \"job-name\":\"other\"}: must be 'j'",
     1},
    {"negative counts and no restart policy",
     "{\"spec\":{\"parallelism\":-1,\"completions\":-2,\"activeDeadlineSeconds\":-4,"
     "\"backoffLimit\":-1,\"template\":{\"spec\":{\"restartPolicy\":null}}}}",
     JOB "[spec.parallelism: Invalid value: -1: must be greater than or equal to 0, "
         "spec.completions: Invalid value: -2: must be greater than or equal to 0, "
         "spec.activeDeadlineSeconds: Invalid value: -4: must be greater than or equal to 0, "
         "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0, " JOB_RP
         ": Required value: valid values: \"OnFailure\", \"Never\"]",
     5},
    {"pod failure policy needs Never",
     "{\"spec\":{\"podFailurePolicy\":{\"rules\":[{\"action\":\"Ignore\",\"onPodConditions\":"
     "[{\"type\":\"DisruptionTarget\",\"status\":\"True\"}]}]},\"template\":{\"spec\":{"
     "\"restartPolicy\":\"OnFailure\"}}}}",
     JOB JOB_RP ": Invalid value: \"OnFailure\": only \"Never\" is supported when "
                "podFailurePolicy is specified",
     1},
    {"indexed pod hostname",
     "{\"metadata\":{\"name\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"},"
     "\"spec\":{\"completionMode\":\"Indexed\",\"completions\":100}}",
     "Job.batch \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" is invalid: "
     "metadata.name: Invalid value: "
     "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": "
     "will not able to create pod with invalid DNS label: "
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-99",
     1},
};

TEST(validate_job_create)
{
    vcase_run("batch", "v1", "jobs", JOB_BASE, NULL, job_create_cases,
              KAPI_ARRAY_LEN(job_create_cases));
}

/* The stored Job of the update cases: created, suspended, never started, tracked. */
#define JOB_OLD                                                                                    \
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\","                  \
    "\"namespace\":\"default\",\"uid\":\"u1\",\"creationTimestamp\":\"2024-01-01T00:00:00Z\","     \
    "\"annotations\":{\"batch.kubernetes.io/job-tracking\":\"\"}},"                                \
    "\"spec\":{\"parallelism\":1,\"completions\":1,\"backoffLimit\":6,\"completionMode\":"         \
    "\"NonIndexed\",\"suspend\":true,\"selector\":{\"matchLabels\":{\"controller-uid\":\"u1\"}},"  \
    "\"template\":{\"metadata\":{\"labels\":{\"controller-uid\":\"u1\",\"job-name\":\"j\"}},"      \
    "\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":"             \
    "\"busybox\"}]}}},\"status\":{}}"
#define JOB_UPDATE_BASE JOB_OLD

static const vcase job_update_cases[] = {
    {"unchanged", "{}", NULL, 0},
    {"parallelism may change", "{\"spec\":{\"parallelism\":5,\"suspend\":false}}", NULL, 0},
    {"the tracking annotation is kept",
     "{\"metadata\":{\"annotations\":{\"batch.kubernetes.io/job-tracking\":null}}}", NULL, 0},
    {"a cause of the spec shows twice", "{\"spec\":{\"backoffLimit\":-1}}",
     JOB "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0", 2},
    {"immutable fields (the selector patch merges into the generated one)",
     "{\"spec\":{\"completions\":5,\"completionMode\":\"Indexed\",\"selector\":{\"matchLabels\":"
     "{\"x\":\"y\"}},\"podFailurePolicy\":{\"rules\":[{\"action\":\"FailJob\",\"onExitCodes\":"
     "{\"operator\":\"In\",\"values\":[1]}}]}}}",
     JOB "[spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"
         "\"controller-uid\":\"u1\", \"x\":\"y\"}, "
         "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` not "
         "auto-generated, spec.template.metadata.labels: Invalid value: " GEN_LABELS
         ": `selector` does not match template `labels`, spec.completions: Invalid value: 5: "
         "field is immutable, spec.selector: Invalid value: v1.LabelSelector{MatchLabels:"
         "map[string]string{\"controller-uid\":\"u1\", \"x\":\"y\"}, "
         "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: "
         "field is immutable, spec.completionMode: Invalid value: \"Indexed\": field is "
         "immutable, spec.podFailurePolicy: Invalid value: batch.PodFailurePolicy{Rules:"
         "[]batch.PodFailurePolicyRule{batch.PodFailurePolicyRule{Action:\"FailJob\", "
         "OnExitCodes:(*batch.PodFailurePolicyOnExitCodesRequirement)(0xc000000000), "
         "OnPodConditions:[]batch.PodFailurePolicyOnPodConditionsPattern(nil)}}}: field is "
         "immutable]",
     7},
    {"a suspended Job that never started may move its pods",
     "{\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"extra\":\"1\"}},\"spec\":{"
     "\"nodeSelector\":{\"disk\":\"ssd\"},\"tolerations\":[{\"key\":\"k\",\"operator\":"
     "\"Exists\"}],\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuring"
     "Execution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":"
     "\"Exists\"}]}]}}}}}}}",
     NULL, 0},
    {"uid", "{\"metadata\":{\"uid\":\"u2\"}}",
     JOB "[metadata.uid: Invalid value: \"u2\": field is immutable, "
         "spec.template.metadata.labels[controller-uid]: Invalid value: " GEN_LABELS
         ": must be 'u2', spec.selector: Invalid value: v1.LabelSelector{MatchLabels:"
         "map[string]string{\"controller-uid\":\"u1\"}, MatchExpressions:"
         "[]v1.LabelSelectorRequirement(nil)}: `selector` not auto-generated]",
     4},
};

TEST(validate_job_update)
{
    vcase_run("batch", "v1", "jobs", JOB_UPDATE_BASE, JOB_OLD, job_update_cases,
              KAPI_ARRAY_LEN(job_update_cases));
}

/* A Job's template is immutable once it started (or while it is not suspended), and the
 * tracking annotation cannot be added by an update. */
static const vcase job_started_cases[] = {
    {"a started Job keeps its node selector",
     "{\"spec\":{\"template\":{\"spec\":{\"nodeSelector\":{\"disk\":\"hdd\"}}}}}", NULL, 1},
    {"tracking annotation added",
     "{\"metadata\":{\"annotations\":{\"batch.kubernetes.io/job-tracking\":\"\"}}}",
     JOB "metadata.annotations[batch.kubernetes.io/job-tracking]: Forbidden: cannot add this "
         "annotation",
     1},
};

TEST(validate_job_update_started)
{
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    const kapi_type *t =
        kapi_registry_lookup(reg, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("jobs"));
    CHECK(t != NULL);
    json_t *old = vcase_parse("old", JOB_OLD);
    json_object_set_new(json_object_get(old, "status"), "startTime",
                        json_string("2024-01-01T00:00:00Z"));
    json_object_del(json_object_get(old, "metadata"), "annotations");
    for (size_t i = 0; i < KAPI_ARRAY_LEN(job_started_cases); i++) {
        json_t *patch = vcase_parse(job_started_cases[i].name, job_started_cases[i].patch);
        json_t *obj = vcase_merge(json_deep_copy(old), patch);
        kapi_type_prepare_update(t, obj, old);
        kapi_error *err = kapi_type_validate(t, obj, old);
        CHECK(err != NULL);
        CHECK_INT_EQ(err->ncauses, job_started_cases[i].ncauses);
        if (job_started_cases[i].want)
            CHECK_STR_EQ(err->message, job_started_cases[i].want);
        else
            CHECK(strstr(err->message, JOB "spec.template: Invalid value: ") == err->message &&
                  strstr(err->message, ": field is immutable") != NULL);
        kapi_error_free(err);
        json_decref(patch);
        json_decref(obj);
    }
    json_decref(old);
    kapi_registry_free(reg);
}

/* ValidateJobUpdateStatus: counts not negative, uncounted pod UIDs set and distinct. */
TEST(validate_job_status)
{
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    const kapi_type *t =
        kapi_registry_lookup(reg, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("jobs"));
    json_t *old = vcase_parse("old", JOB_OLD);
    json_t *bad = vcase_parse("status", "{\"spec\":{\"parallelism\":9},\"status\":{"
                                        "\"succeeded\":-1,\"active\":-2,\"ready\":-3,"
                                        "\"uncountedTerminatedPods\":{\"succeeded\":[\"a\","
                                        "\"\",\"a\"],\"failed\":[\"a\"]}}}");
    json_t *complete = vcase_parse("complete", "{\"status\":{\"succeeded\":1,"
                                               "\"completionTime\":\"2024-01-01T00:01:00Z\","
                                               "\"conditions\":[{\"type\":\"Complete\","
                                               "\"status\":\"True\"}]}}");
    json_t *obj = vcase_merge(json_deep_copy(old), bad);
    kapi_type_prepare_subresource(t, "status", obj, old);
    CHECK_INT_EQ(json_integer_value(json_object_get(json_object_get(obj, "spec"), "parallelism")),
                 1);
    kapi_error *err = kapi_type_validate_subresource(t, "status", obj, old);
    CHECK(err != NULL);
    CHECK_STR_EQ(err->message,
                 JOB "[status.active: Invalid value: -2: must be greater than or equal to 0, "
                     "status.succeeded: Invalid value: -1: must be greater than or equal to 0, "
                     "status.ready: Invalid value: -3: must be greater than or equal to 0, "
                     "status.uncountedTerminatedPods.succeeded[1]: Invalid value: \"\": must "
                     "not be empty, status.uncountedTerminatedPods.succeeded[2]: Duplicate "
                     "value: \"a\", status.uncountedTerminatedPods.failed[0]: Duplicate value: "
                     "\"a\"]");
    kapi_error_free(err);
    json_decref(obj);
    obj = vcase_merge(json_deep_copy(old), complete);
    kapi_type_prepare_subresource(t, "status", obj, old);
    CHECK(kapi_type_validate_subresource(t, "status", obj, old) == NULL);
    json_decref(obj);
    json_decref(bad);
    json_decref(complete);
    json_decref(old);
    kapi_registry_free(reg);
}
