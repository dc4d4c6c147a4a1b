/*
 * registry/validate_batch: CronJob and Job validation as Kubernetes 1.26 does it
 * (pkg/apis/batch/validation), in its order.
 *
 * CronJob (ValidateCronJobCreate, ValidateCronJobUpdate and the job template rules):
 *   metadata (core rules, subdomain names), spec.schedule (robfig/cron's parser and its
 *   messages), startingDeadlineSeconds, timeZone (when set or changed), concurrencyPolicy,
 *   the job template (job spec counts, completion mode, pod failure policy, the pod
 *   template, restartPolicy OnFailure or Never, no selector), the history limits, and on
 *   create the name's 52-character limit (the controller appends 11 characters).
 *
 * A schedule with a TZ= or CRON_TZ= prefix is valid in 1.26 (the parser reads it); 1.26
 * only warns, "CRON_TZ or TZ used in spec.spec.schedule is not officially supported, see
 * https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details".
 * Combined with spec.timeZone it is an error.
 *
 * Job (ValidateJob, ValidateJobUpdate, ValidateJobUpdateStatus): metadata, the generated
 * selector (controller-uid and job-name on the template, a selector that picks them), the
 * job spec as a template's plus a selector that is required, valid and matches the
 * template's labels, the job-tracking annotation, and for an Indexed Job a last pod
 * hostname that is a DNS label. An update runs all of that, then ValidateJobUpdate, which
 * checks the spec again (so a cause of the new spec shows twice, once in the message) and
 * holds completions, selector, template, completionMode and podFailurePolicy immutable;
 * a suspended Job that never started may change its template's node selector,
 * tolerations, node affinity, labels and annotations (JobMutableNodeSchedulingDirectives,
 * on in 1.26). A status write checks the counts and uncountedTerminatedPods.
 *
 * One difference is known: kube shows an immutable template's value as Go's %#v of the
 * internal core.PodTemplateSpec; kapi shows the template's JSON as %#v of the decoded
 * value (map[string]interface {}{...}), since the whole internal pod type tree has no
 * description here. The path and "field is immutable" are kube's.
 */
#include <stdlib.h>
#include <strings.h>

#include "base/tz.h"
#include "codec/go.h"
#include "registry/cron.h"
#include "registry/registry_int.h"
#include "select/select.h"

typedef struct bctx {
    kapi_error *err;
    kapi_arena *a;
} bctx;

static const char *P(bctx *c, const char *parent, const char *name)
{
    return kapi_path_child(c->a, parent, name);
}

/* ValidateNonnegativeField of an optional member. */
static void nonneg_member(bctx *c, const json_t *o, const char *key, const char *path)
{
    long long v = kapi_registry__int(o, key);
    if (v < 0) /* the path is built for a cause only */
        kapi_registry__nonnegative(c->err, P(c, path, key), v);
}

/* Go's %#v of a []int32. */
static char *int32s(const json_t *v)
{
    kapi_buf b;
    kapi_buf_init(&b);
    if (!json_is_array(v)) {
        kapi_buf_puts(&b, "[]int32(nil)");
    } else {
        kapi_buf_puts(&b, "[]int32{");
        for (size_t i = 0; i < json_array_size(v); i++)
            kapi_buf_printf(&b, "%s%lld", i ? ", " : "",
                            (long long)json_integer_value(json_array_get(v, i)));
        kapi_buf_putc(&b, '}');
    }
    return kapi_buf_detach(&b, NULL);
}

/* A Required value listing the valid values as Go's %q of a []string does. */
static void required_values(bctx *c, const char *path, const char *const *valid)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "valid values: [");
    for (size_t i = 0; valid[i]; i++) {
        kapi_buf_puts(&b, i ? " " : "");
        kapi_go_quote(&b, valid[i], strlen(valid[i]));
    }
    kapi_buf_putc(&b, ']');
    kapi_field_required(c->err, path, b.ptr);
    kapi_buf_dispose(&b);
}

/* One of valid; "" is Required with the list. */
static void enum_listed(bctx *c, const char *path, const char *v, const char *const *valid)
{
    if (!*v)
        required_values(c, path, valid);
    else if (!kapi_cstr_in(v, valid))
        kapi_field_not_supported(c->err, path, v, valid);
}

static void on_exit_codes(bctx *c, const json_t *oec, const json_t *names, const char *path)
{
    static const char *const ops[] = {"In", "NotIn", NULL};
    const char *op = kapi_registry__str(oec, "operator");
    const json_t *values = json_object_get(oec, "values");
    const char *vpath = P(c, path, "values");
    enum_listed(c, P(c, path, "operator"), op, ops);
    if (kapi_registry__has(oec, "containerName") &&
        !json_object_get(names, kapi_registry__str(oec, "containerName")))
        kapi_field_invalid_str(c->err, P(c, path, "containerName"),
                               kapi_registry__str(oec, "containerName"),
                               "must be one of the container or initContainer names in the pod "
                               "template");
    size_t n = json_array_size(values);
    char *rendered = int32s(values);
    if (n == 0)
        kapi_field_invalid_raw(c->err, vpath, rendered, "at least one value is required");
    else if (n > 255)
        kapi_field_too_many(c->err, vpath, (long long)n, 255);
    bool ordered = true;
    for (size_t j = 0; j < n; j++) {
        long long v = (long long)json_integer_value(json_array_get(values, j));
        const char *at = kapi_path_index(c->a, vpath, j);
        if (strcmp(op, "In") == 0 && v == 0)
            kapi_field_invalid_int(c->err, at, v, "must not be 0 for the In operator");
        bool dup = false;
        for (size_t k = 0; k < j && !dup; k++)
            dup = json_integer_value(json_array_get(values, k)) == v;
        if (dup)
            kapi_field_duplicate_int(c->err, at, v);
        if (j > 0 && json_integer_value(json_array_get(values, j - 1)) > v)
            ordered = false;
    }
    if (!ordered)
        kapi_field_invalid_raw(c->err, vpath, rendered, "must be ordered");
    free(rendered);
}

static void on_pod_conditions(bctx *c, const json_t *conds, const char *path)
{
    static const char *const statuses[] = {"False", "True", "Unknown", NULL};
    const char *msgs[KAPI_MSGS_MAX];
    if (json_array_size(conds) > 20)
        kapi_field_too_many(c->err, path, (long long)json_array_size(conds), 20);
    for (size_t j = 0; j < json_array_size(conds); j++) {
        const json_t *pat = json_array_get(conds, j);
        const char *at = kapi_path_index(c->a, path, j), *type = kapi_registry__str(pat, "type");
        size_t n = kapi_is_qualified_name(type, msgs);
        kapi_field_invalid_each(c->err, P(c, at, "type"), type, msgs, n);
        enum_listed(c, P(c, at, "status"), kapi_registry__str(pat, "status"), statuses);
    }
}

/* validatePodFailurePolicy (the 1.26 actions: Count, FailJob, Ignore). */
static void pod_failure_policy(bctx *c, const json_t *spec, const char *path)
{
    static const char *const actions[] = {"Count", "FailJob", "Ignore", NULL};
    const json_t *rules = json_object_get(json_object_get(spec, "podFailurePolicy"), "rules");
    const json_t *pod = json_object_get(json_object_get(spec, "template"), "spec");
    const char *rpath = P(c, path, "rules");
    json_t *names = json_object();
    static const char *const lists[] = {"containers", "initContainers"};
    for (size_t l = 0; l < KAPI_ARRAY_LEN(lists); l++) {
        const json_t *ctrs = json_object_get(pod, lists[l]);
        for (size_t i = 0; i < json_array_size(ctrs); i++)
            json_object_set_new_nocheck(names, kapi_registry__str(json_array_get(ctrs, i), "name"),
                                        json_true());
    }
    if (json_array_size(rules) > 20)
        kapi_field_too_many(c->err, rpath, (long long)json_array_size(rules), 20);
    for (size_t i = 0; i < json_array_size(rules); i++) {
        const json_t *rule = json_array_get(rules, i);
        const char *at = kapi_path_index(c->a, rpath, i);
        bool codes = kapi_registry__has(rule, "onExitCodes");
        bool conds = json_array_size(json_object_get(rule, "onPodConditions")) > 0;
        enum_listed(c, P(c, at, "action"), kapi_registry__str(rule, "action"), actions);
        if (codes)
            on_exit_codes(c, json_object_get(rule, "onExitCodes"), names, P(c, at, "onExitCodes"));
        if (conds)
            on_pod_conditions(c, json_object_get(rule, "onPodConditions"),
                              P(c, at, "onPodConditions"));
        if (codes && conds)
            kapi_field_invalid_omit(c->err, at,
                                    "specifying both OnExitCodes and OnPodConditions "
                                    "is not supported");
        if (!codes && !conds)
            kapi_field_invalid_omit(c->err, at,
                                    "specifying one of OnExitCodes and OnPodConditions is "
                                    "required");
    }
    json_decref(names);
}

/* validateJobSpec of a job template. */
static void job_spec(bctx *c, const json_t *spec, const char *path)
{
    static const char *const modes[] = {"NonIndexed", "Indexed", NULL};
    static const char *const keys[] = {"parallelism", "completions", "activeDeadlineSeconds",
                                       "backoffLimit", "ttlSecondsAfterFinished"};
    static const char *const job_restart[] = {"OnFailure", "Never", NULL};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(keys); i++)
        nonneg_member(c, spec, keys[i], path);
    if (kapi_registry__has(spec, "completionMode")) {
        const char *mode = kapi_registry__str(spec, "completionMode");
        if (!kapi_cstr_in(mode, modes))
            kapi_field_not_supported(c->err, P(c, path, "completionMode"), mode, modes);
        if (strcmp(mode, "Indexed") == 0 && !kapi_registry__has(spec, "completions"))
            kapi_field_required(c->err, P(c, path, "completions"),
                                "when completion mode is Indexed");
        if (strcmp(mode, "Indexed") == 0 && kapi_registry__int(spec, "parallelism") > 100000)
            kapi_field_invalid_int(c->err, P(c, path, "parallelism"),
                                   kapi_registry__int(spec, "parallelism"),
                                   "must be less than or equal to 100000 when completion mode "
                                   "is Indexed");
    }
    bool pfp = kapi_registry__has(spec, "podFailurePolicy");
    if (pfp)
        pod_failure_policy(c, spec, P(c, path, "podFailurePolicy"));
    const char *tpath = P(c, path, "template");
    const json_t *tmpl = json_object_get(spec, "template");
    kapi_registry__validate_pod_template(c->err, c->a, tmpl, tpath);
    const char *restart = kapi_registry__str(json_object_get(tmpl, "spec"), "restartPolicy");
    if (kapi_cstr_in(restart, job_restart) && (!pfp || strcmp(restart, "Never") == 0))
        return; /* valid: no path to build */
    const char *rp = P(c, P(c, tpath, "spec"), "restartPolicy");
    if (!*restart || strcmp(restart, "Always") == 0)
        kapi_field_required(c->err, rp, "valid values: \"OnFailure\", \"Never\"");
    else if (!kapi_cstr_in(restart, job_restart))
        kapi_field_not_supported(c->err, rp, restart, job_restart);
    else if (pfp && strcmp(restart, "Never") != 0)
        kapi_field_invalid_str(c->err, rp, restart,
                               "only \"Never\" is supported when podFailurePolicy is specified");
}

/* ValidateJobTemplateSpec */
static void job_template(bctx *c, const json_t *tmpl, const char *path)
{
    static const char *const manual[] = {"nil", "false", NULL};
    const json_t *spec = json_object_get(tmpl, "spec");
    const char *spath = P(c, path, "spec");
    job_spec(c, spec, spath);
    if (kapi_registry__has(spec, "selector")) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_gofmt(&b, &kapi_go_label_selector, json_object_get(spec, "selector"));
        kapi_field_invalid_raw(c->err, P(c, spath, "selector"), b.ptr,
                               "`selector` will be auto-generated");
        kapi_buf_dispose(&b);
    }
    if (json_is_true(json_object_get(spec, "manualSelector")))
        kapi_field_not_supported_raw(c->err, P(c, spath, "manualSelector"), "true", manual);
}

/* validateTimeZone */
static void time_zone(bctx *c, const json_t *spec, const char *path)
{
    if (!kapi_registry__has(spec, "timeZone"))
        return;
    const char *tz = kapi_registry__str(spec, "timeZone");
    if (!*tz) {
        kapi_field_invalid_str(c->err, path, tz, "timeZone must be nil or non-empty string");
        return;
    }
    if (strcasecmp(tz, "Local") == 0)
        kapi_field_invalid_str(c->err, path, tz,
                               "timeZone must be an explicit time zone as defined in "
                               "https://www.iana.org/time-zones");
    const kapi_tz *zone;
    char *why = kapi_tz_load(&zone, tz, strlen(tz));
    if (why)
        kapi_field_invalid_str(c->err, path, tz, "%s", why);
    free(why);
}

/* True when the two specs' timeZone pointers are equal (both unset, or the same name). */
static bool same_time_zone(const json_t *spec, const json_t *old)
{
    bool has = kapi_registry__has(spec, "timeZone"), had = kapi_registry__has(old, "timeZone");
    return has == had &&
           strcmp(kapi_registry__str(spec, "timeZone"), kapi_registry__str(old, "timeZone")) == 0;
}

/* validateCronJobSpec; old is the stored spec on update, NULL on create. */
static void cronjob_spec(bctx *c, const json_t *spec, const json_t *old, const char *path)
{
    static const char *const policies[] = {"Allow", "Forbid", "Replace", NULL};
    const char *schedule = kapi_registry__str(spec, "schedule");
    const char *sp = P(c, path, "schedule");
    if (!*schedule) {
        kapi_field_required(c->err, sp, "");
    } else {
        kapi_cron *cron = NULL;
        kapi_error *perr = kapi_cron_parse(&cron, schedule, KAPI_CRON_STANDARD);
        if (perr)
            kapi_field_invalid_str(c->err, sp, schedule, "%s", perr->message);
        kapi_error_free(perr);
        kapi_cron_free(cron);
        if (strstr(schedule, "TZ") && kapi_registry__has(spec, "timeZone"))
            kapi_field_invalid_str(c->err, sp, schedule,
                                   "cannot use both timeZone field and TZ or CRON_TZ in schedule");
    }
    nonneg_member(c, spec, "startingDeadlineSeconds", path);
    if (!old || !same_time_zone(spec, old))
        time_zone(c, spec, P(c, path, "timeZone"));
    const char *policy = kapi_registry__str(spec, "concurrencyPolicy");
    if (*policy && !kapi_cstr_in(policy, policies)) /* "" is defaulted to Allow */
        kapi_field_not_supported(c->err, P(c, path, "concurrencyPolicy"), policy, policies);
    job_template(c, json_object_get(spec, "jobTemplate"), P(c, path, "jobTemplate"));
    nonneg_member(c, spec, "successfulJobsHistoryLimit", path);
    nonneg_member(c, spec, "failedJobsHistoryLimit", path);
}

void kapi_registry__validate_cronjob(const kapi_type *t, const json_t *obj, const json_t *old,
                                     kapi_error *err)
{
    kapi_arena a;
    bctx c = {err, &a};
    const json_t *meta = json_object_get(obj, "metadata");
    const json_t *spec = json_object_get(obj, "spec");
    kapi_arena_init(&a);
    kapi_registry__validate_meta_as(t, obj, old, true, err);
    if (old) {
        cronjob_spec(&c, spec, json_object_get(old, "spec"), "spec");
    } else {
        cronjob_spec(&c, spec, NULL, "spec");
        const char *name = kapi_registry__str(meta, "name");
        long long max = t->max_name_length;
        if (max > 0 && (long long)strlen(name) > max)
            kapi_field_invalid_str(err, "metadata.name", name,
                                   "must be no more than %lld characters", max);
    }
    kapi_arena_dispose(&a);
}

void kapi_registry__cronjob_warnings(const kapi_type *t, const json_t *obj, const json_t *old,
                                     void (*warn)(void *ctx, const char *text), void *ctx)
{
    (void)t;
    const char *msgs[KAPI_MSGS_MAX];
    kapi_buf b;
    kapi_buf_init(&b);
    const char *name = kapi_registry__str(json_object_get(obj, "metadata"), "name");
    size_t n = old ? 0 : kapi_is_dns1123_label(name, msgs);
    if (n) {
        kapi_buf_puts(&b, "metadata.name: this is used in Pod names and hostnames, which can "
                          "result in surprising behavior; a DNS label is recommended: [");
        for (size_t i = 0; i < n; i++)
            kapi_buf_printf(&b, "%s%s", i ? " " : "", msgs[i]);
        kapi_buf_putc(&b, ']');
        warn(ctx, b.ptr);
    }
    if (strstr(kapi_registry__str(json_object_get(obj, "spec"), "schedule"), "TZ"))
        warn(ctx, "CRON_TZ or TZ used in spec.spec.schedule is not officially supported, see "
                  "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for "
                  "more details");
    kapi_buf_dispose(&b);
}

/* ---- Job ---- */

#define JOB_TRACKING "batch.kubernetes.io/job-tracking"

static const kapi_gofield exit_codes_fields[] = {
    {"ContainerName", "containerName", KAPI_GO_PTR, NULL, "string"},
    {"Operator", "operator", KAPI_GO_STRING, NULL, NULL},
};
static const kapi_gotype go_exit_codes = {"batch.PodFailurePolicyOnExitCodesRequirement",
                                          exit_codes_fields, KAPI_ARRAY_LEN(exit_codes_fields)};
static const kapi_gofield pattern_fields[] = {
    {"Type", "type", KAPI_GO_STRING, NULL, NULL},
    {"Status", "status", KAPI_GO_STRING, NULL, NULL},
};
static const kapi_gotype go_pattern = {"batch.PodFailurePolicyOnPodConditionsPattern",
                                       pattern_fields, KAPI_ARRAY_LEN(pattern_fields)};
static const kapi_gofield rule_fields[] = {
    {"Action", "action", KAPI_GO_STRING, NULL, NULL},
    {"OnExitCodes", "onExitCodes", KAPI_GO_PTR, &go_exit_codes, NULL},
    {"OnPodConditions", "onPodConditions", KAPI_GO_STRUCTS, &go_pattern, NULL},
};
static const kapi_gotype go_rule = {"batch.PodFailurePolicyRule", rule_fields,
                                    KAPI_ARRAY_LEN(rule_fields)};
static const kapi_gofield policy_fields[] = {
    {"Rules", "rules", KAPI_GO_STRUCTS, &go_rule, NULL},
};
static const kapi_gotype go_pod_failure_policy = {"batch.PodFailurePolicy", policy_fields,
                                                  KAPI_ARRAY_LEN(policy_fields)};

/* field.Invalid(path, value, ...) of a pointer to a struct: the struct's %#v, or "null"
 * (quoted, as Go's ErrorBody writes a nil pointer) when absent. */
static void invalid_struct_ptr(bctx *c, const char *path, const kapi_gotype *t, const json_t *v,
                               const char *detail)
{
    kapi_buf b;
    kapi_buf_init(&b);
    if (json_is_object(v))
        kapi_gofmt(&b, t, v);
    else
        kapi_buf_puts(&b, "\"null\"");
    kapi_field_invalid_raw(c->err, path, b.ptr, "%s", detail);
    kapi_buf_dispose(&b);
}

/* ValidateHasLabel of the template's metadata: a missing label is Required with the
 * value it should have; a wrong one shows the whole label map. */
static void has_label(bctx *c, const json_t *labels, const char *key, const char *want)
{
    const char *path = kapi_path_key(c->a, "spec.template.metadata.labels", key);
    const char *got = json_string_value(json_object_get(labels, key));
    if (!got) {
        kapi_field_required(c->err, path, want);
    } else if (strcmp(got, want) != 0) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_gofmt_string_map(&b, labels);
        kapi_field_invalid_raw(c->err, path, b.ptr, "must be '%s'", want);
        kapi_buf_dispose(&b);
    }
}

/* ValidateGeneratedSelector: a selector kube generated still picks this Job's pods. */
static void generated_selector(bctx *c, const json_t *job)
{
    const json_t *meta = json_object_get(job, "metadata");
    const json_t *spec = json_object_get(job, "spec");
    const json_t *sel = json_object_get(spec, "selector");
    if (json_is_true(json_object_get(spec, "manualSelector")) || !json_is_object(sel))
        return;
    const char *uid = kapi_registry__str(meta, "uid"), *name = kapi_registry__str(meta, "name");
    if (!*uid)
        kapi_field_required(c->err, "metadata.uid", "");
    const json_t *labels = kapi_json_path(spec, "template.metadata.labels");
    has_label(c, labels, "controller-uid", uid);
    has_label(c, labels, "job-name", name);
    json_t *expected = json_pack("{s:s, s:s}", "controller-uid", uid, "job-name", name);
    if (!kapi_registry__label_selector_refused(c->a, sel) &&
        !kapi_labelsel_json_matches(sel, expected)) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_gofmt(&b, &kapi_go_label_selector, sel);
        kapi_field_invalid_raw(c->err, "spec.selector", b.ptr, "`selector` not auto-generated");
        kapi_buf_dispose(&b);
    }
    json_decref(expected);
}

/* ValidateJobSpec: the template's job spec rules, then the selector. */
static void job_spec_with_selector(bctx *c, const json_t *spec, bool bad_selector_values)
{
    const json_t *sel = json_object_get(spec, "selector");
    const json_t *labels = kapi_json_path(spec, "template.metadata.labels");
    job_spec(c, spec, "spec");
    if (!json_is_object(sel))
        kapi_field_required(c->err, "spec.selector", "");
    else
        kapi_registry__validate_label_selector(c->err, c->a, sel, bad_selector_values,
                                               "spec.selector");
    if (!kapi_registry__label_selector_refused(c->a, sel) &&
        !kapi_labelsel_json_matches(sel, labels)) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_gofmt_string_map(&b, labels);
        kapi_field_invalid_raw(c->err, "spec.template.metadata.labels", b.ptr,
                               "`selector` does not match template `labels`");
        kapi_buf_dispose(&b);
    }
}

/* ValidateJob; tracking_allowed is AllowTrackingAnnotation (always on create, on update
 * when the stored Job has the annotation). */
static void job(bctx *c, const kapi_type *t, const json_t *obj, bool tracking_allowed,
                bool bad_selector_values)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const json_t *spec = json_object_get(obj, "spec");
    kapi_meta_rules rules;
    kapi_registry__meta_rules(t, true, &rules);
    kapi_meta_validate(c->err, c->a, meta, "metadata", &rules);
    generated_selector(c, obj);
    job_spec_with_selector(c, spec, bad_selector_values);
    if (!tracking_allowed && json_object_get(json_object_get(meta, "annotations"), JOB_TRACKING))
        kapi_field_forbidden(c->err, "metadata.annotations[" JOB_TRACKING "]",
                             "cannot add this annotation");
    long long completions = kapi_registry__int(spec, "completions");
    if (strcmp(kapi_registry__str(spec, "completionMode"), "Indexed") == 0 && completions > 0) {
        const char *msgs[KAPI_MSGS_MAX];
        const char *name = kapi_registry__str(meta, "name");
        char *host = kapi_arena_printf(c->a, "%s-%lld", name, completions - 1);
        if (kapi_is_dns1123_label(host, msgs) > 0)
            kapi_field_invalid_str(c->err, "metadata.name", name,
                                   "will not able to create pod with invalid DNS label: %s", host);
    }
}

/* A copy of member key of from set in to (or removed from to when from has none). */
static void take_member(json_t *to, const json_t *from, const char *key)
{
    const json_t *v = json_object_get(from, key);
    if (v)
        json_object_set_new_nocheck(to, key, json_deep_copy(v));
    else
        json_object_del(to, key);
}

/* The old template as validatePodTemplateUpdate compares it: with the new one's node
 * selector, tolerations, node affinity, labels and annotations when the stored Job is
 * suspended and never started (AllowMutableSchedulingDirectives). A new reference. */
static json_t *comparable_old_template(const json_t *tmpl, const json_t *old_job)
{
    json_t *old = json_deep_copy(kapi_json_path(old_job, "spec.template"));
    if (!json_is_true(kapi_json_path(old_job, "spec.suspend")) ||
        kapi_json_path(old_job, "status.startTime") || !json_is_object(old))
        return old;
    const json_t *pod = json_object_get(tmpl, "spec");
    json_t *old_pod = kapi_json_object_ensure(old, "spec");
    const json_t *aff = json_object_get(pod, "affinity");
    json_t *old_aff = json_object_get(old_pod, "affinity");
    if (!json_is_object(aff) && json_is_object(old_aff)) {
        json_object_del(old_aff, "nodeAffinity");
        if (json_object_size(old_aff) == 0)
            json_object_del(old_pod, "affinity");
    } else if (json_is_object(aff)) {
        take_member(kapi_json_object_ensure(old_pod, "affinity"), aff, "nodeAffinity");
    }
    take_member(old_pod, pod, "nodeSelector");
    take_member(old_pod, pod, "tolerations");
    json_t *old_meta = kapi_json_object_ensure(old, "metadata");
    take_member(old_meta, json_object_get(tmpl, "metadata"), "annotations");
    take_member(old_meta, json_object_get(tmpl, "metadata"), "labels");
    return old;
}

/* Equal as Go's Semantic.DeepEqual compares two pointers: absent and null are nil. */
static bool same_pointer(const json_t *x, const json_t *y)
{
    bool x_nil = !x || json_is_null(x), y_nil = !y || json_is_null(y);
    return (x_nil && y_nil) || (!x_nil && !y_nil && json_equal((json_t *)x, (json_t *)y));
}

/* ValidateJobSpecUpdate's immutable fields. */
static void job_spec_immutable(bctx *c, const json_t *spec, const json_t *old_job)
{
    const json_t *old = json_object_get(old_job, "spec");
    const json_t *completions = json_object_get(spec, "completions");
    if (!same_pointer(completions, json_object_get(old, "completions")))
        kapi_field_invalid_json(c->err, "spec.completions", completions, "field is immutable");
    const json_t *sel = json_object_get(spec, "selector");
    if (!same_pointer(sel, json_object_get(old, "selector")))
        invalid_struct_ptr(c, "spec.selector", &kapi_go_label_selector, sel, "field is immutable");
    json_t *old_tmpl = comparable_old_template(json_object_get(spec, "template"), old_job);
    kapi_meta_immutable(c->err, "spec.template", json_object_get(spec, "template"), old_tmpl);
    json_decref(old_tmpl);
    const json_t *mode = json_object_get(spec, "completionMode");
    if (!same_pointer(mode, json_object_get(old, "completionMode")))
        kapi_field_invalid_json(c->err, "spec.completionMode", mode, "field is immutable");
    const json_t *pfp = json_object_get(spec, "podFailurePolicy");
    if (!same_pointer(pfp, json_object_get(old, "podFailurePolicy")))
        invalid_struct_ptr(c, "spec.podFailurePolicy", &go_pod_failure_policy, pfp,
                           "field is immutable");
}

void kapi_registry__validate_job(const kapi_type *t, const json_t *obj, const json_t *old,
                                 kapi_error *err)
{
    kapi_arena a;
    bctx c = {err, &a};
    kapi_arena_init(&a);
    const json_t *old_annotations = kapi_json_path(old, "metadata.annotations");
    bool tracking = !old || json_object_get(old_annotations, JOB_TRACKING) != NULL;
    bool bad_values =
        old && kapi_registry__label_selector_bad_values(kapi_json_path(old, "spec.selector"));
    job(&c, t, obj, tracking, bad_values);
    if (old) {
        kapi_meta_validate_update(err, &a, json_object_get(obj, "metadata"),
                                  json_object_get(old, "metadata"), "metadata", true);
        job_spec_with_selector(&c, json_object_get(obj, "spec"), bad_values);
        job_spec_immutable(&c, json_object_get(obj, "spec"), old);
    }
    kapi_arena_dispose(&a);
}

/* The UIDs of one uncountedTerminatedPods list: none empty, none seen before in either. */
static void uncounted(bctx *c, const json_t *uids, const char *path, json_t *seen)
{
    for (size_t i = 0; i < json_array_size(uids); i++) {
        const char *uid = json_string_value(json_array_get(uids, i)) ?: "";
        const char *at = kapi_path_index(c->a, path, i);
        if (!*uid)
            kapi_field_invalid_str(c->err, at, uid, "must not be empty");
        else if (json_object_get(seen, uid))
            kapi_field_duplicate(c->err, at, uid);
        else
            json_object_set_new(seen, uid, json_true());
    }
}

void kapi_registry__validate_job_status(const kapi_type *t, const char *sub, const json_t *obj,
                                        const json_t *old, kapi_error *err)
{
    static const char *const counts[] = {"active", "succeeded", "failed"};
    kapi_arena a;
    bctx c = {err, &a};
    (void)t, (void)sub;
    kapi_arena_init(&a);
    const json_t *status = json_object_get(obj, "status");
    kapi_meta_validate_update(err, &a, json_object_get(obj, "metadata"),
                              json_object_get(old, "metadata"), "metadata", true);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(counts); i++)
        kapi_registry__nonnegative(err, P(&c, "status", counts[i]),
                                   kapi_registry__int(status, counts[i]));
    nonneg_member(&c, status, "ready", "status");
    const json_t *utp = json_object_get(status, "uncountedTerminatedPods");
    if (json_is_object(utp)) {
        json_t *seen = json_object();
        uncounted(&c, json_object_get(utp, "succeeded"), "status.uncountedTerminatedPods.succeeded",
                  seen);
        uncounted(&c, json_object_get(utp, "failed"), "status.uncountedTerminatedPods.failed",
                  seen);
        json_decref(seen);
    }
    kapi_arena_dispose(&a);
}
