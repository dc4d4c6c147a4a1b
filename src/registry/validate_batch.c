/*
 * registry/validate_batch: CronJob validation as Kubernetes 1.26 does it
 * (pkg/apis/batch/validation: ValidateCronJobCreate, ValidateCronJobUpdate and the job
 * template rules), in its order:
 *
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
 */
#include <stdlib.h>
#include <strings.h>

#include "base/tz.h"
#include "codec/go.h"
#include "registry/cron.h"
#include "registry/registry_int.h"

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
    if (kapi_registry__has(o, key))
        kapi_registry__nonnegative(c->err, P(c, path, key), kapi_registry__int(o, key));
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
    const char *rp = P(c, P(c, tpath, "spec"), "restartPolicy");
    const char *restart = kapi_registry__str(json_object_get(tmpl, "spec"), "restartPolicy");
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
    if (old) {
        kapi_meta_validate_update(err, &a, meta, json_object_get(old, "metadata"), "metadata",
                                  true);
        cronjob_spec(&c, spec, json_object_get(old, "spec"), "spec");
    } else {
        kapi_meta_rules rules;
        kapi_registry__meta_rules(t, true, &rules);
        kapi_meta_validate(err, &a, meta, "metadata", &rules);
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
