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
 * just after its next schedule time. So does this controller: its own watches of CronJobs
 * and Jobs only queue the changed objects (on the store's thread, nothing parsed); its
 * pass turns them into CronJob keys ("<namespace>/<name>": a Job's is its controller's,
 * from an index of Jobs by controller kept from the watch), adds those whose requeue time
 * has come (a heap), and syncs only these, each read live: the CronJob by a get, its Jobs
 * by gets of the names the index holds. A failed sync is tried again at the next pass; the
 * runner is asked to wake the controller at the earliest requeue time. The first pass, and
 * the pass after a watch lost changes (RESET), list everything once.
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

#include "base/map.h"
#include "codec/go.h"
#include "codec/json.h"
#include "codec/json_pick.h"
#include "registry/cron.h"

#define RETRY_MS 1000
#define RESYNC_MS 60000
#define REQUEUE_DELTA_MS 100 /* kube's nextScheduleDelta: just after the schedule time */
#define TOO_MANY_MISSED 100
#define NONE INT64_MAX /* no requeue time */

static const kapi_delete_opts background = {.propagation = "Background", .grace = -1};

/* The types the controller reads and writes. */
typedef struct types {
    const kapi_type *cronjobs, *jobs;
} types;

/* One CronJob's sync (kube's syncCronJob and sync). */
typedef struct run {
    kapi_api *api;
    const types *ty;
    json_t *cj;       /* the CronJob, its status edited */
    const json_t *js; /* the Jobs it controls (an array) */
    int64_t now;      /* the controllers' clock, seconds */
    bool update;      /* status changed: write it */
    bool acted;       /* wrote or recorded something */
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

/* Records an event about the CronJob. */
static void record(run *s, const char *type, const char *reason, const char *fmt, ...)
    KAPI_PRINTF(4, 5);
static void record(run *s, const char *type, const char *reason, const char *fmt, ...)
{
    va_list ap;
    char *message;
    s->acted = true;
    va_start(ap, fmt);
    if (vasprintf(&message, fmt, ap) < 0)
        abort();
    va_end(ap);
    kapi_controllers__event(s->api, s->cj, "batch/v1", "CronJob", "cronjob-controller", type,
                            reason, message);
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
    s->acted = true;
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
        s->acted = true;
        kapi_error *err = kapi_api_update(s->api, &kapi_controllers_user, s->ty->cronjobs, "status",
                                          json_incref(s->cj), NULL);
        ok &= !err;
        kapi_error_free(err);
    }
    return ok;
}

/* ---- the queue ---- */

/* A requeue time of the CronJob key; stale once due holds another time for key. */
typedef struct timer {
    int64_t at;
    char *key;
} timer;

/* The controller's state, the thread's. */
typedef struct state {
    types ty;
    kapi_api *api;
    kapi_controller *c;
    kapi_store_watch *cronjob_watch, *job_watch; /* the CronJobs' NULL until both started */
    bool stale;         /* a watch lost changes (RESET): everything is listed again */
    kapi_map *owner_of; /* Job "<namespace>/<name>" -> its controller's "<namespace>/<name>" */
    kapi_map *owned;    /* CronJob "<namespace>/<name>" -> the set of its Jobs' names */
    kapi_map *queued;   /* the CronJob keys to sync at the next pass */
    kapi_map *due;      /* CronJob key -> its requeue time (int64_t, controllers' clock ms) */
    kapi_map *prints;   /* CronJob key -> its print (from its changes) */
    timer *heap;        /* the requeue times, earliest first (a binary heap) */
    size_t nheap, capheap;
} state;

static uint64_t key_hash(const void *key, uint64_t seed)
{
    return kapi_map_hash_bytes(key, strlen(key), seed);
}

static bool key_equal(const void *a, const void *b)
{
    return strcmp(a, b) == 0;
}

static void set_free(void *set)
{
    kapi_map_free(set);
}

static const kapi_map_type set_map = {key_hash, key_equal, free, NULL};
static const kapi_map_type str_map = {key_hash, key_equal, free, free};
static const kapi_map_type owned_map = {key_hash, key_equal, free, set_free};

/* What a CronJob's sync reads of it, hashed: the text of its spec, its status, and its
 * metadata's uid, creationTimestamp and deletionTimestamp. A sync that read a CronJob and
 * did nothing (no write, no event) does nothing again for the same print while its Jobs
 * and the clock say the same, and those queue it by themselves; so a change that leaves
 * the print as it was (a label, an annotation, a manager's entry) is not synced. kube's
 * controller syncs it, from its informer's cache; here a sync reads the CronJob and its
 * Jobs from the store, which cost more than the write that changed them. */
typedef struct print {
    uint64_t latest;  /* the print of the newest change applied */
    uint64_t quiet;   /* latest as it was when a sync last did nothing */
    bool quiet_valid; /* quiet holds one: the last sync did nothing */
} print;

static const kapi_map_type print_map = {key_hash, key_equal, free, free};

/* The print of a CronJob's stored bytes; false when they cannot be scanned. */
static bool print_of(const kapi_obj *o, uint64_t *out)
{
    static const char *const top[] = {"metadata", "spec", "status", NULL};
    static const char *const meta[] = {"uid", "creationTimestamp", "deletionTimestamp", NULL};
    kapi_str texts[6]; /* metadata's whole text is not hashed: only its members after */
    if (!kapi_json_member_texts(o->data, o->len, top, texts) || !texts[0].ptr ||
        !kapi_json_member_texts(texts[0].ptr, texts[0].len, meta, texts + 3))
        return false;
    uint64_t h = 0;
    for (size_t i = 1; i < KAPI_ARRAY_LEN(texts); i++)
        h = kapi_map_hash_bytes(texts[i].ptr, texts[i].len, h + texts[i].len + i + 1);
    *out = h;
    return true;
}

/* Notes a change of the CronJob key; true when its print is the one a sync last did
 * nothing for. */
static bool unchanged(state *st, const char *key, const kapi_controller_change *ch)
{
    uint64_t h;
    print *p = kapi_map_get(st->prints, key);
    if (ch->what != KAPI_STORE_EVENT_PUT || !print_of(ch->obj, &h)) {
        kapi_map_remove(st->prints, key);
        return false;
    }
    if (!p)
        kapi_map_put(st->prints, kapi_xstrdup(key), p = kapi_xcalloc(1, sizeof(*p)));
    p->latest = h;
    return p->quiet_valid && p->quiet == h;
}

/* Adds key (copied) to the set. */
static void set_add(kapi_map *set, const char *key)
{
    if (!kapi_map_has(set, key))
        kapi_map_put(set, kapi_xstrdup(key), NULL);
}

static char *key_of(kapi_str ns, kapi_str name)
{
    return kapi_xprintf("%.*s/%.*s", KAPI_STR_FMT(ns), KAPI_STR_FMT(name));
}

/* The name in a Job's controller reference (its first owner reference with controller
 * true; kube's getJobsToBeReconciled goes by that name), or NULL; borrowed from job. */
static const char *controller_of(const json_t *job)
{
    const json_t *ref;
    size_t i;
    json_array_foreach(kapi_json_path(job, "metadata.ownerReferences"), i, ref)
    {
        if (json_is_true(json_object_get(ref, "controller")))
            return kapi_json_path_str(ref, "name") ? kapi_json_path_str(ref, "name") : "";
    }
    return NULL;
}

/* ---- requeue times (a binary heap with stale entries, checked against due) ---- */

static bool earlier(const timer *a, const timer *b)
{
    return a->at < b->at;
}

static void heap_push(state *st, int64_t at, const char *key)
{
    if (st->nheap == st->capheap) {
        st->capheap = st->capheap ? st->capheap * 2 : 64;
        st->heap = kapi_xrealloc(st->heap, st->capheap * sizeof(*st->heap));
    }
    size_t i = st->nheap++;
    st->heap[i] = (timer){at, kapi_xstrdup(key)};
    for (; i > 0 && earlier(&st->heap[i], &st->heap[(i - 1) / 2]); i = (i - 1) / 2) {
        timer t = st->heap[i];
        st->heap[i] = st->heap[(i - 1) / 2];
        st->heap[(i - 1) / 2] = t;
    }
}

static void sift_down(state *st, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < st->nheap && earlier(&st->heap[l], &st->heap[m]))
            m = l;
        if (l + 1 < st->nheap && earlier(&st->heap[l + 1], &st->heap[m]))
            m = l + 1;
        if (m == i)
            return;
        timer t = st->heap[i];
        st->heap[i] = st->heap[m];
        st->heap[m] = t;
        i = m;
    }
}

/* Removes the earliest entry; its key is the caller's. */
static timer heap_pop(state *st)
{
    timer top = st->heap[0];
    st->heap[0] = st->heap[--st->nheap];
    sift_down(st, 0);
    return top;
}

/* True when t is the key's requeue time (not a stale entry). */
static bool current(const state *st, const timer *t)
{
    const int64_t *at = kapi_map_get(st->due, t->key);
    return at && *at == t->at;
}

/* Rebuilds the heap from due once stale entries outnumber the others. */
static void heap_compact(state *st)
{
    if (st->nheap <= 2 * kapi_map_count(st->due) + 64)
        return;
    size_t n = 0;
    for (size_t i = 0; i < st->nheap; i++)
        if (current(st, &st->heap[i]))
            st->heap[n++] = st->heap[i];
        else
            free(st->heap[i].key);
    st->nheap = n;
    for (size_t i = n / 2; i-- > 0;)
        sift_down(st, i);
}

/* Sets the requeue time of key (NONE: none). */
static void set_due(state *st, const char *key, int64_t at)
{
    int64_t *old = kapi_map_get(st->due, key);
    if (at == NONE) {
        kapi_map_remove(st->due, key);
    } else if (!old || *old != at) {
        int64_t *v = kapi_xcalloc(1, sizeof(*v));
        *v = at;
        kapi_map_put(st->due, kapi_xstrdup(key), v);
        heap_push(st, at, key);
    }
    heap_compact(st);
}

/* Queues the CronJobs whose requeue time is at or before now; returns the earliest
 * requeue time left, or NONE. */
static int64_t take_due(state *st, int64_t now)
{
    while (st->nheap) {
        if (!current(st, &st->heap[0])) {
            free(heap_pop(st).key);
        } else if (st->heap[0].at <= now) {
            timer t = heap_pop(st);
            set_add(st->queued, t.key);
            kapi_map_remove(st->due, t.key);
            free(t.key);
        } else {
            return st->heap[0].at;
        }
    }
    return NONE;
}

/* ---- the Jobs by controller, from the watch ---- */

/* Files the Job key (in ns) under the CronJob named owner (NULL: none), queueing the
 * CronJob it was filed under and the one it is filed under now. */
static void file_job(state *st, kapi_str ns, kapi_str name, const char *owner)
{
    char *job = key_of(ns, name), *jname = kapi_xprintf("%.*s", KAPI_STR_FMT(name));
    const char *was = kapi_map_get(st->owner_of, job);
    char *now = owner ? key_of(ns, kapi_str_c(owner)) : NULL;
    if (was && (!now || strcmp(was, now) != 0)) {
        kapi_map *set = kapi_map_get(st->owned, was);
        kapi_map_remove(set, jname);
        set_add(st->queued, was);
        if (kapi_map_count(set) == 0)
            kapi_map_remove(st->owned, was);
        kapi_map_remove(st->owner_of, job);
    }
    if (now) {
        kapi_map *set = kapi_map_get(st->owned, now);
        if (!set)
            kapi_map_put(st->owned, kapi_xstrdup(now), set = kapi_map_new(&set_map));
        set_add(set, jname);
        set_add(st->queued, now);
        kapi_map_put(st->owner_of, kapi_xstrdup(job), now);
    }
    free(jname);
    free(job);
}

/* Lists the Jobs into a fresh index and every CronJob into the queue, each from the
 * revision read into *jobs_rev and *cronjobs_rev (either may be NULL); false when a list
 * failed. The changes applied after, older or newer than the lists, leave the index as
 * the store is: each object's last change is its state. */
static bool relist(state *st, int64_t *jobs_rev, int64_t *cronjobs_rev)
{
    json_t *jobs = NULL, *cronjobs = NULL, *obj;
    size_t i;
    kapi_error *err = kapi_api_list(st->api, st->ty.jobs, KAPI_STR(""), &jobs, jobs_rev);
    if (!err)
        err = kapi_api_list(st->api, st->ty.cronjobs, KAPI_STR(""), &cronjobs, cronjobs_rev);
    if (err) {
        kapi_error_free(err);
        json_decref(jobs);
        return false;
    }
    kapi_map_free(st->owner_of);
    kapi_map_free(st->owned);
    kapi_map_free(st->prints);
    st->owner_of = kapi_map_new(&str_map);
    st->owned = kapi_map_new(&owned_map);
    st->prints = kapi_map_new(&print_map);
    json_array_foreach(jobs, i, obj)
    {
        const char *owner = controller_of(obj);
        if (owner)
            file_job(st, str(obj, "metadata.namespace"), str(obj, "metadata.name"), owner);
    }
    json_array_foreach(cronjobs, i, obj)
    {
        char *key = key_of(str(obj, "metadata.namespace"), str(obj, "metadata.name"));
        set_add(st->queued, key);
        free(key);
    }
    json_decref(jobs);
    json_decref(cronjobs);
    return true;
}

/* ---- the watches ---- */

/* A watch's callback, on the store's thread: the change is queued, nothing parsed. */
static bool cronjob_watched(void *ctx, const kapi_store_event *ev)
{
    state *st = ctx;
    kapi_controllers__queue(st->c, st->ty.cronjobs, ev);
    return true;
}

static bool job_watched(void *ctx, const kapi_store_event *ev)
{
    state *st = ctx;
    kapi_controllers__queue(st->c, st->ty.jobs, ev);
    return true;
}

static void stop_watches(state *st)
{
    if (st->cronjob_watch)
        kapi_api_watch_stop(st->api, st->cronjob_watch);
    if (st->job_watch)
        kapi_api_watch_stop(st->api, st->job_watch);
    st->cronjob_watch = st->job_watch = NULL;
}

/* The first pass: every CronJob queued, the Jobs indexed, both watched from the
 * revisions listed; when that fails nothing is watched (tried again at the next pass). */
static void start_watches(state *st)
{
    int64_t jobs_rev, cronjobs_rev;
    st->stale = !relist(st, &jobs_rev, &cronjobs_rev);
    if (st->stale ||
        kapi_api_watch_start(st->api, st->ty.jobs, KAPI_STR(""), jobs_rev, job_watched, st,
                             &st->job_watch) != KAPI_STORE_OK ||
        kapi_api_watch_start(st->api, st->ty.cronjobs, KAPI_STR(""), cronjobs_rev, cronjob_watched,
                             st, &st->cronjob_watch) != KAPI_STORE_OK)
        stop_watches(st);
}

/* A change of a Job: filed under its controller (its stored bytes parsed here, on the
 * controller's thread), or taken out of the index when deleted. */
static void job_changed(state *st, const kapi_controller_change *ch)
{
    kapi_str ns, name;
    if (!kapi_type_key_parse(st->ty.jobs, kapi_obj_key(ch->obj), &ns, &name))
        return;
    json_t *job = ch->what == KAPI_STORE_EVENT_PUT
                      ? kapi_json_parse(ch->obj->data, ch->obj->len, NULL)
                      : NULL;
    file_job(st, ns, name, job ? controller_of(job) : NULL);
    json_decref(job);
}

/* Applies the queued changes: the CronJobs they concern are queued, the Job index kept.
 * After a RESET or lost changes everything is listed again. */
static void apply_changes(state *st)
{
    size_t n;
    bool lost;
    kapi_controller_change *changes = kapi_controllers__take(st->c, &n, &lost);
    st->stale |= lost;
    for (size_t i = 0; i < n; i++) {
        kapi_controller_change *ch = &changes[i];
        kapi_str ns, name;
        if (ch->what == KAPI_STORE_EVENT_RESET) {
            st->stale = true;
        } else if (ch->type == st->ty.jobs) {
            job_changed(st, ch);
        } else if (kapi_type_key_parse(st->ty.cronjobs, kapi_obj_key(ch->obj), &ns, &name)) {
            char *key = key_of(ns, name);
            if (!unchanged(st, key, ch))
                set_add(st->queued, key);
            free(key);
        }
    }
    kapi_controllers__changes_free(changes, n);
    if (st->stale)
        st->stale = !relist(st, NULL, NULL);
}

/* ---- the pass ---- */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The Jobs the CronJob ns/name controls, read now, in name order (a list's); false when
 * one could not be read. */
static bool read_jobs(state *st, const char *key, kapi_str ns, kapi_str name, json_t **out)
{
    kapi_map *set = kapi_map_get(st->owned, key);
    size_t n = 0;
    const char **names = kapi_xcalloc((set ? kapi_map_count(set) : 0) + 1, sizeof(*names));
    kapi_map_iter it = {0};
    void *jname;
    while (set && kapi_map_next(set, &it, &jname, NULL))
        names[n++] = jname;
    qsort(names, n, sizeof(*names), by_name);
    bool ok = true;
    *out = json_array();
    for (size_t i = 0; ok && i < n; i++) {
        json_t *job = NULL;
        kapi_error *err = kapi_api_get(st->api, st->ty.jobs, ns, kapi_str_c(names[i]), &job);
        const char *owner = controller_of(job);
        if (owner && strlen(owner) == name.len && memcmp(owner, name.ptr, name.len) == 0)
            json_array_append(*out, job);
        ok = !err || err->status == KAPI_STATUS_NOT_FOUND;
        kapi_error_free(err);
        json_decref(job);
    }
    free(names);
    return ok;
}

/* Syncs the CronJob key ("<namespace>/<name>") and sets its requeue time; one gone is
 * forgotten. False when the sync failed (try again soon). */
static bool sync_key(state *st, const char *key)
{
    kapi_api *api = st->api;
    const char *slash = strchr(key, '/');
    kapi_str ns = {key, (size_t)(slash - key)}, name = kapi_str_c(slash + 1);
    json_t *cj = NULL, *jobs = NULL;
    kapi_error *err = kapi_api_get(api, st->ty.cronjobs, ns, name, &cj);
    bool ok = !err || err->status == KAPI_STATUS_NOT_FOUND;
    kapi_error_free(err);
    print *p = kapi_map_get(st->prints, key);
    if (p)
        p->quiet_valid = false;
    if (!cj) {
        if (ok)
            set_due(st, key, NONE);
        return ok;
    }
    if (read_jobs(st, key, ns, name, &jobs)) {
        int64_t now_ms = kapi_controllers_now_ms();
        run s = {
            .api = api, .ty = &st->ty, .cj = cj, .js = jobs, .now = now_ms / 1000, .requeue = NONE};
        ok = sync_cronjob(&s);
        cj = s.cj;
        if (ok)
            set_due(st, key, s.requeue);
        if (p && ok && !s.acted)
            *p = (print){p->latest, p->latest, true};
    } else {
        ok = false;
    }
    json_decref(jobs);
    json_decref(cj);
    return ok;
}

/* Syncs the CronJobs queued (by a change of theirs or of their Jobs, or a failed sync)
 * and those whose requeue time has come, then asks to be woken at the next one. */
static bool pass(kapi_controller *c)
{
    state *st = kapi_controllers__ctx(c);
    st->c = c;
    if (!st->cronjob_watch)
        start_watches(st);
    apply_changes(st);
    take_due(st, kapi_controllers_now_ms());
    kapi_map *work = st->queued;
    st->queued = kapi_map_new(&set_map);
    kapi_map_iter it = {0};
    void *key;
    while (kapi_map_next(work, &it, &key, NULL))
        if (kapi_controllers__stopping(c) || !sync_key(st, key))
            set_add(st->queued, key);
    kapi_map_free(work);
    int64_t next = take_due(st, INT64_MIN); /* takes nothing: the earliest left */
    if (next != NONE)
        kapi_controllers__wake_at(c, next);
    return !st->cronjob_watch || st->stale || kapi_map_count(st->queued) > 0;
}

static void state_free(void *ctx)
{
    state *st = ctx;
    stop_watches(st);
    for (size_t i = 0; i < st->nheap; i++)
        free(st->heap[i].key);
    free(st->heap);
    kapi_map_free(st->owner_of);
    kapi_map_free(st->owned);
    kapi_map_free(st->queued);
    kapi_map_free(st->due);
    kapi_map_free(st->prints);
    free(st);
}

kapi_controller *kapi_cronjob_controller_start(kapi_api *api)
{
    const kapi_registry *reg = kapi_api_registry(api);
    state *st = kapi_xcalloc(1, sizeof(*st));
    st->api = api;
    st->ty.cronjobs =
        kapi_registry_lookup(reg, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("cronjobs"));
    st->ty.jobs = kapi_registry_lookup(reg, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("jobs"));
    st->owner_of = kapi_map_new(&str_map);
    st->owned = kapi_map_new(&owned_map);
    st->queued = kapi_map_new(&set_map);
    st->due = kapi_map_new(&str_map);
    st->prints = kapi_map_new(&print_map);
    const kapi_type *none[] = {NULL};
    return kapi_controllers__start_with(api, "cronjob", none, RETRY_MS, RESYNC_MS, pass, st,
                                        state_free);
}
