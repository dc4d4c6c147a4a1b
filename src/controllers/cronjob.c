/*
 * controllers/cronjob: kube-controller-manager 1.26's cronjob controller (v2,
 * pkg/controller/cronjob), a client of the api. For each CronJob it reconciles status.active
 * with the Jobs it controls, then, at the most recent schedule time not yet run (robfig/cron's
 * Next in spec.timeZone, registry/cron.h), creates the Job "<cronjob>-<minutes since the
 * epoch>" from spec.jobTemplate, as concurrencyPolicy, startingDeadlineSeconds and suspend
 * allow; it deletes the oldest finished Jobs beyond the history limits and writes status
 * through /status. It records what it does as core/v1 Events from the component
 * "cronjob-controller", with kube's reasons and messages (kube's EventRecorder writes
 * core/v1; events.k8s.io/v1 serves the same Events).
 *
 * kube queues each CronJob by itself: after a change to it or to one of its Jobs, and again
 * just after its next schedule time. A pass here goes through every CronJob but syncs only
 * those whose object or Jobs changed since their last sync, or whose requeue time has come
 * (a memo per CronJob), and asks the runner to wake it at the earliest requeue time: the
 * controller sleeps until a schedule time, and repeats an event only where kube does.
 *
 * Time is the controllers' clock (kapi_controllers_now_ms: the test hook moves it); event
 * timestamps are the system's, as the API server stamps objects.
 */
#include "controllers/controllers.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/go.h"
#include "codec/json.h"
#include "registry/cron.h"

#define RETRY_MS 1000
#define RESYNC_MS 60000
#define REQUEUE_DELTA_MS 100 /* kube's nextScheduleDelta: just after the schedule time */
#define TOO_MANY_MISSED 100
#define NONE INT64_MAX /* no requeue time */

static const kapi_delete_opts background = {.propagation = "Background", .grace = -1};

/* The types the controller reads and writes. */
typedef struct types {
    const kapi_type *cronjobs, *jobs, *events;
} types;

/* One CronJob's sync (kube's syncCronJob and sync). */
typedef struct run {
    kapi_api *api;
    const types *ty;
    json_t *cj;       /* the CronJob, its status edited */
    const json_t *js; /* the Jobs it controls (an array) */
    int64_t now;      /* the controllers' clock, seconds */
    bool update;      /* status changed: write it */
    int64_t requeue;  /* ms on the controllers' clock, or NONE */
} run;

static kapi_str str(const json_t *obj, const char *path)
{
    return kapi_controllers__str(obj, path);
}

static bool str_eq(kapi_str a, kapi_str b)
{
    return a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0;
}

/* A metav1.Time member as Unix seconds; false when absent or unreadable. */
static bool time_at(const json_t *obj, const char *path, int64_t *out)
{
    const char *s = kapi_json_path_str(obj, path);
    kapi_go_time t;
    char *why = s ? kapi_go_parse_time(s, false, &t) : NULL;
    if (!s || why) {
        free(why);
        return false;
    }
    *out = t.secs;
    return true;
}

static json_t *time_json(int64_t secs)
{
    char buf[32];
    return json_string(kapi_time_rfc3339(buf, secs));
}

/* ---- events (client-go's EventRecorder, core/v1) ---- */

/* Records an event about the CronJob: "<name>.<hex nanoseconds>", as the recorder names
 * it, its involvedObject the CronJob's reference. */
static void record(run *s, const char *type, const char *reason, const char *fmt, ...)
    KAPI_PRINTF(4, 5);
static void record(run *s, const char *type, const char *reason, const char *fmt, ...)
{
    va_list ap;
    char *message;
    va_start(ap, fmt);
    if (vasprintf(&message, fmt, ap) < 0)
        abort();
    va_end(ap);
    int64_t ns = kapi_time_now_ns();
    char stamp[32];
    kapi_time_rfc3339(stamp, ns / 1000000000);
    kapi_str name = str(s->cj, "metadata.name"), nsp = str(s->cj, "metadata.namespace");
    char *ev_name = kapi_xprintf("%.*s.%" PRIx64, KAPI_STR_FMT(name), (uint64_t)ns);
    json_t *ev = json_pack(
        "{s:s,s:s,s:{s:s,s:s%},s:{s:s,s:s%,s:s%,s:O,s:s,s:O},s:s,s:s,s:{s:s},s:s,s:s,s:i,s:s}",
        "apiVersion", "v1", "kind", "Event", "metadata", "name", ev_name, "namespace", nsp.ptr,
        nsp.len, "involvedObject", "kind", "CronJob", "namespace", nsp.ptr, nsp.len, "name",
        name.ptr, name.len, "uid", kapi_json_path(s->cj, "metadata.uid"), "apiVersion", "batch/v1",
        "resourceVersion", kapi_json_path(s->cj, "metadata.resourceVersion"), "reason", reason,
        "message", message, "source", "component", "cronjob-controller", "firstTimestamp", stamp,
        "lastTimestamp", stamp, "count", 1, "type", type);
    kapi_error_free(kapi_api_create(s->api, &kapi_controllers_user, s->ty->events, nsp, ev, NULL));
    free(ev_name);
    free(message);
}

/* ---- Jobs and status.active ---- */

/* A finished Job's condition type ("Complete" or "Failed", status True), else NULL. */
static const char *finished(const json_t *job)
{
    const json_t *conds = kapi_json_path(job, "status.conditions"), *c;
    size_t i;
    json_array_foreach(conds, i, c)
    {
        const char *type = kapi_json_path_str(c, "type"), *status = kapi_json_path_str(c, "status");
        if (type && status && strcmp(status, "True") == 0 &&
            (strcmp(type, "Complete") == 0 || strcmp(type, "Failed") == 0))
            return type;
    }
    return NULL;
}

static json_t *active(json_t *cj)
{
    json_t *a = kapi_json_path(cj, "status.active");
    return json_is_array(a) ? a : NULL;
}

/* The index in status.active of the reference with member key equal to v, or -1. */
static long active_find(json_t *cj, const char *key, kapi_str v)
{
    json_t *a = active(cj), *ref;
    size_t i;
    json_array_foreach(a, i, ref)
    {
        if (str_eq(str(ref, key), v))
            return (long)i;
    }
    return -1;
}

static void active_remove(json_t *cj, kapi_str uid)
{
    long i = active_find(cj, "uid", uid);
    if (i >= 0)
        json_array_remove(active(cj), (size_t)i);
}

/* The ObjectReference of a Job (ref.GetReference), for status.active. */
static json_t *job_ref(const json_t *job)
{
    return json_pack("{s:s,s:O,s:O,s:O,s:s,s:O}", "kind", "Job", "namespace",
                     kapi_json_path(job, "metadata.namespace"), "name",
                     kapi_json_path(job, "metadata.name"), "uid",
                     kapi_json_path(job, "metadata.uid"), "apiVersion", "batch/v1",
                     "resourceVersion", kapi_json_path(job, "metadata.resourceVersion"));
}

/* Deletes a Job (propagation Background) and its active reference (kube's deleteJob);
 * false when the delete failed. */
static bool delete_job(run *s, const json_t *job)
{
    kapi_str name = str(job, "metadata.name");
    kapi_error *err =
        kapi_api_delete(s->api, &kapi_controllers_user, s->ty->jobs, str(job, "metadata.namespace"),
                        name, &background, NULL, NULL);
    if (err) {
        record(s, "Warning", "FailedDelete", "Deleted job: %s", err->message);
        kapi_error_free(err);
        return false;
    }
    active_remove(s->cj, str(job, "metadata.uid"));
    record(s, "Normal", "SuccessfulDelete", "Deleted job %.*s", KAPI_STR_FMT(name));
    return true;
}

/* The Job for scheduled (getJobFromTemplate2): the template's labels, annotations and spec,
 * the CronJob as its controller. */
static json_t *job_from_template(const json_t *cj, const char *name)
{
    const json_t *tmpl = kapi_json_path(cj, "spec.jobTemplate");
    const json_t *tmeta = kapi_json_path(tmpl, "metadata"), *spec = kapi_json_path(tmpl, "spec");
    json_t *meta =
        json_pack("{s:s,s:O,s:[{s:s,s:s,s:O,s:O,s:b,s:b}]}", "name", name, "namespace",
                  kapi_json_path(cj, "metadata.namespace"), "ownerReferences", "apiVersion",
                  "batch/v1", "kind", "CronJob", "name", kapi_json_path(cj, "metadata.name"), "uid",
                  kapi_json_path(cj, "metadata.uid"), "controller", 1, "blockOwnerDeletion", 1);
    const char *copied[] = {"labels", "annotations"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(copied); i++) {
        json_t *v = kapi_json_path(tmeta, copied[i]);
        if (json_object_size(v)) /* kube copies into a map, left out when empty */
            json_object_set_new(meta, copied[i], kapi_json_copy(v));
    }
    return json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "batch/v1", "kind", "Job", "metadata", meta,
                     "spec", spec ? kapi_json_copy(spec) : json_object());
}

/* ---- schedule times (utils.go) ---- */

/* getMostRecentScheduleTime: the latest schedule time in (earliest, now] into *out, and
 * how many there are into *missed (0: none, *out unset). 1.26 counts them with the
 * interval between the first two, as kube does. False for a schedule whose first two
 * times are less than a second apart (never: February 30th). */
static bool most_recent(const kapi_cron *sched, int64_t earliest, int64_t now, int64_t *out,
                        int64_t *missed)
{
    const kapi_tz *utc = kapi_tz_utc();
    int64_t t1 = kapi_cron_next(sched, utc, earliest), t2 = kapi_cron_next(sched, utc, t1);
    *missed = 0;
    if (now < t1)
        return true;
    *missed = 1;
    *out = t1;
    if (now < t2)
        return true;
    int64_t between = t2 - t1;
    if (between < 1)
        return false;
    *missed = (now - t1) / between + 1;
    *out = t1 + (*missed - 1) * between;
    return true;
}

/* The time the CronJob's schedule was last run, else its creation. */
static int64_t earliest_time(const json_t *cj)
{
    int64_t t = 0;
    if (!time_at(cj, "status.lastScheduleTime", &t))
        time_at(cj, "metadata.creationTimestamp", &t);
    return t;
}

/* nextScheduledTimeDuration: just after the schedule time that follows the most recent
 * one, as a requeue time (controllers' clock, ms). */
static int64_t requeue_at(const run *s, const kapi_cron *sched)
{
    int64_t earliest = earliest_time(s->cj), recent = earliest, missed;
    if (!most_recent(sched, earliest, s->now, &recent, &missed))
        recent = s->now;
    else if (missed == 0)
        recent = earliest;
    return kapi_cron_next(sched, kapi_tz_utc(), recent) * 1000 + REQUEUE_DELTA_MS;
}

/* getNextScheduleTime: the schedule time to run now into *out (false: none), from the last
 * one run (or the creation), no earlier than startingDeadlineSeconds ago; an event when more
 * than 100 were missed. *invalid is set for a schedule most_recent refuses. */
static bool next_schedule_time(run *s, const kapi_cron *sched, int64_t *out, bool *invalid)
{
    int64_t earliest = earliest_time(s->cj), missed;
    const json_t *deadline = kapi_json_path(s->cj, "spec.startingDeadlineSeconds");
    if (json_is_integer(deadline) && s->now - json_integer_value(deadline) > earliest)
        earliest = s->now - json_integer_value(deadline);
    *invalid = false;
    if (earliest > s->now)
        return false;
    *invalid = !most_recent(sched, earliest, s->now, out, &missed);
    if (missed > TOO_MANY_MISSED)
        record(s, "Warning", "TooManyMissedTimes",
               "too many missed start times: %" PRId64
               ". Set or decrease .spec.startingDeadlineSeconds or check clock skew",
               missed);
    return !*invalid && missed > 0;
}

/* ---- one CronJob (cronjob_controllerv2.go) ---- */

/* A finished Job not in status.active: its completionTime, when later, is
 * lastSuccessfulTime (a Failed Job's too, as in kube). */
static void note_completion(run *s, const json_t *job)
{
    json_t *status = kapi_json_object_ensure(s->cj, "status");
    json_t *completion = kapi_json_path(job, "status.completionTime");
    int64_t last, done;
    if (!json_object_get(status, "lastSuccessfulTime")) {
        if (completion)
            json_object_set(status, "lastSuccessfulTime", completion);
        s->update = true;
    }
    if (time_at(job, "status.completionTime", &done) &&
        time_at(s->cj, "status.lastSuccessfulTime", &last) && done > last) {
        json_object_set(status, "lastSuccessfulTime", completion);
        s->update = true;
    }
}

/* True when jobs holds a Job of uid. */
static bool has_job(const json_t *jobs, kapi_str uid)
{
    const json_t *job;
    size_t i;
    json_array_foreach(jobs, i, job)
    {
        if (str_eq(str(job, "metadata.uid"), uid))
            return true;
    }
    return false;
}

/* Drops from status.active the Jobs that are gone (read again, not taken from the list);
 * false when one could not be read. */
static bool drop_missing(run *s)
{
    json_t *refs = active(s->cj) ? kapi_json_copy(active(s->cj)) : json_array(), *ref;
    size_t i;
    bool ok = true;
    json_array_foreach(refs, i, ref)
    {
        json_t *job = NULL;
        if (!ok || has_job(s->js, str(ref, "uid")))
            continue;
        kapi_error *err =
            kapi_api_get(s->api, s->ty->jobs, str(ref, "namespace"), str(ref, "name"), &job);
        json_decref(job);
        if (err && err->status == KAPI_STATUS_NOT_FOUND) {
            record(s, "Normal", "MissingJob", "Active job went missing: %s",
                   kapi_json_path_str(ref, "name"));
            active_remove(s->cj, str(ref, "uid"));
            s->update = true;
        } else if (err) {
            ok = false;
        }
        kapi_error_free(err);
    }
    json_decref(refs);
    return ok;
}

/* Reconciles status.active with the Jobs (kube's first two loops): a finished Job leaves
 * it, one that went missing too, and the latest completion of a Job not listed becomes
 * lastSuccessfulTime. False when the state could not be read (try again). */
static bool reconcile_active(run *s)
{
    const json_t *job;
    size_t i;
    json_array_foreach(s->js, i, job)
    {
        kapi_str uid = str(job, "metadata.uid"), name = str(job, "metadata.name");
        bool found = active_find(s->cj, "uid", uid) >= 0;
        const char *status = finished(job);
        if (!found && !status) {
            json_t *fresh = NULL;
            kapi_error *err =
                kapi_api_get(s->api, s->ty->cronjobs, str(s->cj, "metadata.namespace"),
                             str(s->cj, "metadata.name"), &fresh);
            if (err) {
                kapi_error_free(err);
                return false;
            }
            if (active_find(fresh, "uid", uid) >= 0) {
                json_decref(s->cj);
                s->cj = fresh;
                continue;
            }
            json_decref(fresh);
            record(s, "Warning", "UnexpectedJob",
                   "Saw a job that the controller did not create or forgot: %.*s",
                   KAPI_STR_FMT(name));
        } else if (found && status) {
            active_remove(s->cj, uid);
            record(s, "Normal", "SawCompletedJob", "Saw completed job: %.*s, status: %s",
                   KAPI_STR_FMT(name), status);
            s->update = true;
        } else if (status) {
            note_completion(s, job);
        }
    }
    return drop_missing(s);
}

/* The schedule to run (formatSchedule, cron.ParseStandard), spec.timeZone as a TZ= prefix;
 * NULL, with the event kube records, when it does not load or parse. */
static kapi_cron *schedule_of(run *s)
{
    const char *spec = kapi_json_path_str(s->cj, "spec.schedule");
    const char *zone = kapi_json_path_str(s->cj, "spec.timeZone");
    const kapi_tz *tz;
    kapi_cron *sched = NULL;
    char *why = zone ? kapi_tz_load(&tz, zone, strlen(zone)) : NULL, *full;
    if (why) {
        kapi_buf q;
        kapi_buf_init(&q);
        kapi_go_quote(&q, zone, strlen(zone));
        record(s, "Warning", "UnknownTimeZone", "invalid timeZone: %s: %s", q.ptr, why);
        kapi_buf_dispose(&q);
        free(why);
        return NULL;
    }
    if (!spec)
        spec = "";
    if (strstr(spec, "TZ"))
        record(s, "Warning", "UnsupportedSchedule",
               "CRON_TZ or TZ used in schedule \"%s\" is not officially supported, see "
               "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more "
               "details",
               spec);
    full = zone && !strstr(spec, "TZ") ? kapi_xprintf("TZ=%s %s", zone, spec) : kapi_xstrdup(spec);
    kapi_error *err = kapi_cron_parse(&sched, full, KAPI_CRON_STANDARD);
    if (err)
        record(s, "Warning", "UnparseableSchedule", "unparseable schedule: \"%s\" : %s", spec,
               err->message);
    kapi_error_free(err);
    free(full);
    return sched;
}

/* True when the Job of scheduled must wait (kube's checks after getNextScheduleTime):
 * past startingDeadlineSeconds, already run, or Forbid with a Job active. */
static bool skip_run(run *s, int64_t scheduled, const char *job_name)
{
    const json_t *deadline = kapi_json_path(s->cj, "spec.startingDeadlineSeconds");
    const char *policy = kapi_json_path_str(s->cj, "spec.concurrencyPolicy");
    int64_t last;
    if (json_is_integer(deadline) && scheduled + json_integer_value(deadline) < s->now) {
        char when[64];
        kapi_civil c;
        static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
        static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                             "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
        kapi_tz_civil(&c, scheduled, 0); /* time.RFC1123Z in UTC */
        snprintf(when, sizeof(when), "%s, %02d %s %04" PRId64 " %02d:%02d:%02d +0000", days[c.wday],
                 c.day, months[c.month - 1], c.year, c.hour, c.minute, c.second);
        record(s, "Warning", "MissSchedule", "Missed scheduled time to start a job: %s", when);
        return true;
    }
    if (active_find(s->cj, "name", kapi_str_c(job_name)) >= 0 ||
        (time_at(s->cj, "status.lastScheduleTime", &last) && last == scheduled))
        return true;
    if (policy && strcmp(policy, "Forbid") == 0 && json_array_size(active(s->cj)) > 0) {
        record(s, "Normal", "JobAlreadyActive",
               "Not starting job because prior execution is running and concurrency policy is "
               "Forbid");
        return true;
    }
    return false;
}

/* Replace: deletes the active Jobs before the next starts; false when one could not be
 * read or deleted. */
static bool replace_active(run *s)
{
    json_t *refs = active(s->cj) ? kapi_json_copy(active(s->cj)) : json_array(), *ref;
    size_t i;
    bool ok = true;
    json_array_foreach(refs, i, ref)
    {
        json_t *job = NULL;
        kapi_error *err =
            ok ? kapi_api_get(s->api, s->ty->jobs, str(ref, "namespace"), str(ref, "name"), &job)
               : NULL;
        if (err) {
            record(s, "Warning", "FailedGet", "Get job: %s", err->message);
            ok = false;
        } else if (job) {
            ok = delete_job(s, job);
            s->update = true;
        }
        kapi_error_free(err);
        json_decref(job);
    }
    json_decref(refs);
    return ok;
}

/* Creates the Job of scheduled and lists it in status.active; false on a failure kube
 * retries (the Job exists already, or the create failed). */
static bool run_job(run *s, int64_t scheduled, const char *name)
{
    json_t *job = NULL;
    kapi_error *err =
        kapi_api_create(s->api, &kapi_controllers_user, s->ty->jobs,
                        str(s->cj, "metadata.namespace"), job_from_template(s->cj, name), &job);
    bool terminating = false;
    for (size_t i = 0; err && i < err->ncauses; i++)
        terminating |= strcmp(err->causes[i].reason, "NamespaceTerminating") == 0;
    if (err && !terminating && err->status != KAPI_STATUS_ALREADY_EXISTS)
        record(s, "Warning", "FailedCreate", "Error creating job: %s", err->message);
    if (err) {
        kapi_error_free(err);
        return terminating;
    }
    record(s, "Normal", "SuccessfulCreate", "Created job %s", name);
    json_t *status = kapi_json_object_ensure(s->cj, "status");
    if (!active(s->cj))
        json_object_set_new(status, "active", json_array());
    json_array_append_new(active(s->cj), job_ref(job));
    json_object_set_new(status, "lastScheduleTime", time_json(scheduled));
    s->update = true;
    json_decref(job);
    return true;
}

/* kube's syncCronJob after the reconciliation: runs the schedule time due, if any, and
 * sets the requeue time; false on a failure to retry. */
static bool run_schedule(run *s)
{
    const json_t *suspend = kapi_json_path(s->cj, "spec.suspend");
    kapi_cron *sched;
    int64_t scheduled;
    bool invalid, ok = true;
    if (kapi_json_path(s->cj, "metadata.deletionTimestamp") || json_is_true(suspend) ||
        !(sched = schedule_of(s)))
        return true;
    if (!next_schedule_time(s, sched, &scheduled, &invalid)) {
        if (invalid)
            record(s, "Warning", "InvalidSchedule", "invalid schedule: %s : %s",
                   kapi_json_path_str(s->cj, "spec.schedule"),
                   "time difference between two schedules less than 1 second");
        else
            s->requeue = requeue_at(s, sched);
        kapi_cron_free(sched);
        return true;
    }
    kapi_str cj_name = str(s->cj, "metadata.name");
    char *name = kapi_xprintf("%.*s-%" PRId64, KAPI_STR_FMT(cj_name), scheduled / 60);
    const char *policy = kapi_json_path_str(s->cj, "spec.concurrencyPolicy");
    if (!skip_run(s, scheduled, name)) {
        ok = !(policy && strcmp(policy, "Replace") == 0) || replace_active(s);
        ok = ok && run_job(s, scheduled, name);
    }
    if (ok)
        s->requeue = requeue_at(s, sched);
    free(name);
    kapi_cron_free(sched);
    return ok;
}

/* The finished Jobs of one kind ("Complete" or "Failed"), oldest first: by status.startTime
 * (none last), then by name (byJobStartTimeStar). */
static int by_start_time(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
    int64_t tx, ty;
    bool hx = time_at(x, "status.startTime", &tx), hy = time_at(y, "status.startTime", &ty);
    if (hx != hy)
        return hx ? -1 : 1;
    if (hx && tx != ty)
        return tx < ty ? -1 : 1;
    kapi_str nx = str(x, "metadata.name"), ny = str(y, "metadata.name");
    int c = memcmp(nx.ptr, ny.ptr, nx.len < ny.len ? nx.len : ny.len);
    return c ? c : (nx.len > ny.len) - (nx.len < ny.len);
}

/* removeOldestJobs: deletes the oldest finished Jobs of kind beyond limit (a member of
 * spec; none: no limit). */
static void remove_oldest(run *s, const char *kind, const char *limit_member)
{
    const json_t *limit = kapi_json_path(kapi_json_path(s->cj, "spec"), limit_member), *job;
    size_t i, n = 0;
    if (!json_is_integer(limit))
        return;
    const json_t **done = kapi_xcalloc(json_array_size(s->js) + 1, sizeof(*done));
    json_array_foreach(s->js, i, job)
    {
        const char *status = finished(job);
        if (status && strcmp(status, kind) == 0)
            done[n++] = job;
    }
    qsort(done, n, sizeof(*done), by_start_time);
    for (i = 0; (json_int_t)i + json_integer_value(limit) < (json_int_t)n; i++)
        s->update |= delete_job(s, done[i]);
    free(done);
}

/* kube's sync for one CronJob and its Jobs; false on a failure to retry. */
static bool sync_cronjob(run *s)
{
    bool ok = reconcile_active(s) && run_schedule(s);
    if (ok) {
        remove_oldest(s, "Complete", "successfulJobsHistoryLimit");
        remove_oldest(s, "Failed", "failedJobsHistoryLimit");
    }
    if (s->update) {
        kapi_error *err = kapi_api_update(s->api, &kapi_controllers_user, s->ty->cronjobs, "status",
                                          json_incref(s->cj), NULL);
        ok &= !err;
        kapi_error_free(err);
    }
    return ok;
}

/* ---- the pass ---- */

/* The controller's memo (see the top): "<namespace>/<name>" -> [resourceVersion, the Jobs'
 * signature, requeue time]. */
typedef struct state {
    types ty;
    json_t *memo;
} state;

/* The Jobs by the CronJob that controls them: "<namespace>/<name>" of their controller
 * reference (by name, as kube's getJobsToBeReconciled) -> array. */
static json_t *jobs_by_owner(const json_t *jobs)
{
    json_t *owned = json_object(), *job, *ref;
    size_t i, k;
    json_array_foreach(jobs, i, job)
    {
        json_array_foreach(kapi_json_path(job, "metadata.ownerReferences"), k, ref)
        {
            if (!json_is_true(json_object_get(ref, "controller")))
                continue;
            char *key = kapi_xprintf("%s/%s", kapi_json_path_str(job, "metadata.namespace"),
                                     kapi_json_path_str(ref, "name"));
            json_t *list = json_object_get(owned, key);
            if (!list)
                json_object_set_new(owned, key, list = json_array());
            json_array_append(list, job);
            free(key);
            break;
        }
    }
    return owned;
}

/* What the memo compares: the CronJob's resourceVersion and its Jobs' uids and versions. */
static json_t *memo_key(const json_t *cj, const json_t *jobs)
{
    kapi_buf sig;
    const json_t *job;
    size_t i;
    kapi_buf_init(&sig);
    json_array_foreach(jobs, i, job)
    {
        kapi_buf_printf(&sig, "%s/%s;", kapi_json_path_str(job, "metadata.uid"),
                        kapi_json_path_str(job, "metadata.resourceVersion"));
    }
    json_t *key =
        json_pack("[O,s%]", kapi_json_path(cj, "metadata.resourceVersion"), sig.ptr, sig.len);
    kapi_buf_dispose(&sig);
    return key;
}

/* Syncs one CronJob unless its memo says nothing changed and its time has not come; its
 * memo goes into next. False when the sync failed (try again soon). */
static bool visit(kapi_controller *c, state *st, json_t *cj, const json_t *jobs, json_t *next)
{
    char *name = kapi_xprintf("%s/%s", kapi_json_path_str(cj, "metadata.namespace"),
                              kapi_json_path_str(cj, "metadata.name"));
    json_t *key = memo_key(cj, jobs), *m = json_object_get(st->memo, name);
    int64_t now_ms = kapi_controllers_now_ms();
    run s = {.api = kapi_controllers__api(c),
             .ty = &st->ty,
             .cj = json_incref(cj),
             .js = jobs,
             .now = now_ms / 1000,
             .requeue = NONE};
    bool ok = true;
    if (m && json_equal(json_array_get(m, 0), json_array_get(key, 0)) &&
        json_equal(json_array_get(m, 1), json_array_get(key, 1)) &&
        now_ms < json_integer_value(json_array_get(m, 2))) {
        s.requeue = json_integer_value(json_array_get(m, 2));
    } else {
        json_decref(s.cj);
        s.cj = kapi_json_copy(cj);
        ok = sync_cronjob(&s);
    }
    if (ok) {
        json_array_append_new(key, json_integer(s.requeue));
        json_object_set(next, name, key);
    }
    if (s.requeue != NONE)
        kapi_controllers__wake_at(c, s.requeue);
    json_decref(key);
    json_decref(s.cj);
    free(name);
    return ok;
}

static bool pass(kapi_controller *c)
{
    kapi_api *api = kapi_controllers__api(c);
    state *st = kapi_controllers__ctx(c);
    json_t *cronjobs = NULL, *jobs = NULL, *cj;
    size_t i;
    bool waiting = false;
    kapi_error *err = kapi_api_list(api, st->ty.cronjobs, KAPI_STR(""), &cronjobs, NULL);
    if (!err)
        err = kapi_api_list(api, st->ty.jobs, KAPI_STR(""), &jobs, NULL);
    if (err) {
        kapi_error_free(err);
        json_decref(cronjobs);
        return true;
    }
    json_t *owned = jobs_by_owner(jobs), *next = json_object(), *none = json_array();
    json_array_foreach(cronjobs, i, cj)
    {
        if (kapi_controllers__stopping(c))
            break;
        char *key = kapi_xprintf("%s/%s", kapi_json_path_str(cj, "metadata.namespace"),
                                 kapi_json_path_str(cj, "metadata.name"));
        const json_t *mine = json_object_get(owned, key);
        waiting |= !visit(c, st, cj, mine ? mine : none, next);
        free(key);
    }
    json_decref(st->memo);
    st->memo = next;
    json_decref(none);
    json_decref(owned);
    json_decref(jobs);
    json_decref(cronjobs);
    return waiting;
}

static void state_free(void *data)
{
    state *st = data;
    json_decref(st->memo);
    free(st);
}

kapi_controller *kapi_cronjob_controller_start(kapi_api *api)
{
    const kapi_registry *reg = kapi_api_registry(api);
    state *st = kapi_xcalloc(1, sizeof(*st));
    st->ty.cronjobs =
        kapi_registry_lookup(reg, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("cronjobs"));
    st->ty.jobs = kapi_registry_lookup(reg, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("jobs"));
    st->ty.events = kapi_registry_lookup(reg, KAPI_STR(""), KAPI_STR("v1"), KAPI_STR("events"));
    st->memo = json_object();
    const kapi_type *watched[] = {st->ty.cronjobs, st->ty.jobs, NULL};
    return kapi_controllers__start_with(api, "cronjob", watched, RETRY_MS, RESYNC_MS, pass, st,
                                        state_free);
}
