/*
 * controllers/runner: the thread of a controller. A store watch of the controller's type
 * marks it dirty (on the store's thread: only a flag and a signal; for a controller with
 * a filter, only the changes the filter lets through); the thread makes a
 * pass when it is dirty, after the retry interval while a pass left work waiting, at the
 * time a pass asked to be woken at when that comes sooner, or after the slow resync
 * interval. A controller that keeps its own watches queues their changes here
 * (kapi_controllers__queue), bounded, for its pass to take. After a pass the thread rests
 * until REST_MS after the pass began, unwoken by changes: under a stream of writes it makes
 * a pass per rest over every change since the last one, not a pass (and two context switches
 * on the store's thread and its own) per commit. The controllers' clock
 * (kapi_controllers_now_ms) is the system's plus the test hook's offset; moving it wakes every
 * running controller.
 */
#include "controllers/controllers.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "codec/json.h"
#include "log/log.h"

#define REST_MS 2

static const char *const controller_groups[] = {"system:authenticated", NULL};
const kapi_user kapi_controllers_user = {"system:kube-controller-manager", "", controller_groups};

/* What a watch's callback is given: its controller and type. */
typedef struct watched {
    kapi_controller *c;
    const kapi_type *t;
} watched;

struct kapi_controller {
    kapi_api *api;
    int retry_ms, resync_ms;
    kapi_controller_pass pass;
    void *ctx;                     /* the controller's own state (kapi_controllers__start_with) */
    void (*dispose)(void *ctx);    /* frees it once the thread has ended */
    kapi_controller_filter filter; /* NULL: every change calls for a pass */
    /* one per watched type; NULL when it could not start: the resync alone */
    kapi_store_watch *watches[KAPI_CONTROLLER_MAX_WATCHED];
    watched watched[KAPI_CONTROLLER_MAX_WATCHED];
    size_t nwatches;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool dirty;      /* a change arrived since the last pass began */
    bool resting;    /* in the rest after a pass: changes need not wake the thread */
    int64_t wake_at; /* the earliest wake-up the last pass asked for (clock ms) */
    atomic_bool stopping;
    kapi_controller_change *changes; /* queued by kapi_controllers__queue, guarded by mu */
    size_t nchanges, capchanges;
    bool lost;                    /* changes were dropped since the last take */
    struct kapi_controller *next; /* in the list of running controllers */
};

/* The clock's offset (the test hook), and the running controllers it wakes when moved. */
static _Atomic int64_t clock_offset_ms;
static pthread_mutex_t running_mu = PTHREAD_MUTEX_INITIALIZER;
static kapi_controller *running;

int64_t kapi_controllers_now_ms(void)
{
    return kapi_time_now_ns() / 1000000 + atomic_load(&clock_offset_ms);
}

/* Marks c dirty, with c->mu held; wakes the thread only when that is news to it. */
static void mark_dirty(kapi_controller *c)
{
    if (!c->dirty && !c->resting)
        pthread_cond_signal(&c->cond);
    c->dirty = true;
}

void kapi_controllers__wake(kapi_controller *c)
{
    pthread_mutex_lock(&c->mu);
    mark_dirty(c);
    pthread_mutex_unlock(&c->mu);
}

void kapi_controllers_set_clock_offset(int64_t ms)
{
    atomic_store(&clock_offset_ms, ms);
    pthread_mutex_lock(&running_mu);
    for (kapi_controller *c = running; c; c = c->next)
        kapi_controllers__wake(c);
    pthread_mutex_unlock(&running_mu);
}

/* The watch's callback, on the store's thread. */
static bool changed(void *ctx, const kapi_store_event *ev)
{
    const watched *w = ctx;
    if (!w->c->filter || w->c->filter(w->t, ev))
        kapi_controllers__wake(w->c);
    return true;
}

static struct timespec deadline_in(int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ns = ts.tv_nsec + ms * 1000000LL;
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    return ts;
}

/* Waits, with c->mu held, until c is dirty or stopping or ms have passed. */
static void wait_for_work(kapi_controller *c, int64_t ms)
{
    struct timespec ts = deadline_in(ms);
    while (!c->dirty && !atomic_load(&c->stopping))
        if (pthread_cond_timedwait(&c->cond, &c->mu, &ts) != 0)
            break;
}

/* Rests, with c->mu held, until REST_MS after began (monotonic ns) or stopping. */
static void rest(kapi_controller *c, int64_t began)
{
    int64_t ms = REST_MS - (kapi_time_mono_ns() - began) / 1000000;
    if (ms <= 0)
        return;
    struct timespec ts = deadline_in(ms);
    c->resting = true;
    while (!atomic_load(&c->stopping))
        if (pthread_cond_timedwait(&c->cond, &c->mu, &ts) != 0)
            break;
    c->resting = false;
}

static void *controller_main(void *arg)
{
    kapi_controller *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!atomic_load(&c->stopping)) {
        c->dirty = false;
        c->wake_at = INT64_MAX;
        pthread_mutex_unlock(&c->mu);
        int64_t began = kapi_time_mono_ns();
        bool waiting = c->pass(c);
        pthread_mutex_lock(&c->mu);
        rest(c, began);
        int64_t ms = waiting ? c->retry_ms : c->resync_ms;
        if (c->wake_at != INT64_MAX && c->wake_at - kapi_controllers_now_ms() < ms)
            ms = c->wake_at - kapi_controllers_now_ms();
        wait_for_work(c, ms > 0 ? ms : 0);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* Watches the objects of w's type from the revision now: the first pass, which runs
 * after, sees everything before. */
static kapi_store_watch *watch(kapi_controller *c, watched *w)
{
    json_t *items = NULL;
    int64_t rev = 0;
    kapi_store_watch *sw = NULL;
    kapi_error *err = kapi_api_list(c->api, w->t, KAPI_STR(""), &items, &rev);
    json_decref(items);
    if (err ||
        kapi_api_watch_start(c->api, w->t, KAPI_STR(""), rev, changed, w, &sw) != KAPI_STORE_OK)
        sw = NULL;
    kapi_error_free(err);
    return sw;
}

/* Every start: the controller's own state ctx (or NULL) and its change filter (or NULL). */
static kapi_controller *start(kapi_api *api, const char *name, const kapi_type *const *types,
                              int retry_ms, int resync_ms, kapi_controller_pass pass, void *ctx,
                              void (*dispose)(void *ctx), kapi_controller_filter filter)
{
    kapi_controller *c = kapi_xcalloc(1, sizeof(*c));
    c->api = api;
    c->ctx = ctx;
    c->dispose = dispose;
    c->filter = filter;
    c->retry_ms = retry_ms;
    c->resync_ms = resync_ms;
    c->pass = pass;
    atomic_init(&c->stopping, false);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cond, NULL);
    for (; *types && c->nwatches < KAPI_CONTROLLER_MAX_WATCHED; types++) {
        c->watched[c->nwatches] = (watched){c, *types};
        c->watches[c->nwatches] = watch(c, &c->watched[c->nwatches]);
        c->nwatches++;
    }
    if (pthread_create(&c->thread, NULL, controller_main, c) != 0) {
        KAPI_LOG_ERROR("cannot start the %s controller", name);
        abort();
    }
    char thread_name[16];
    snprintf(thread_name, sizeof(thread_name), "kapi-%s", name);
    pthread_setname_np(c->thread, thread_name);
    pthread_mutex_lock(&running_mu);
    c->next = running;
    running = c;
    pthread_mutex_unlock(&running_mu);
    return c;
}

kapi_controller *kapi_controllers__start(kapi_api *api, const char *name,
                                         const kapi_type *const *types, int retry_ms, int resync_ms,
                                         kapi_controller_pass pass)
{
    return start(api, name, types, retry_ms, resync_ms, pass, NULL, NULL, NULL);
}

kapi_controller *kapi_controllers__start_with(kapi_api *api, const char *name,
                                              const kapi_type *const *types, int retry_ms,
                                              int resync_ms, kapi_controller_pass pass, void *ctx,
                                              void (*dispose)(void *ctx))
{
    return start(api, name, types, retry_ms, resync_ms, pass, ctx, dispose, NULL);
}

kapi_controller *kapi_controllers__start_filtered(kapi_api *api, const char *name,
                                                  const kapi_type *const *types, int retry_ms,
                                                  int resync_ms, kapi_controller_pass pass,
                                                  kapi_controller_filter filter, void *ctx,
                                                  void (*dispose)(void *ctx))
{
    return start(api, name, types, retry_ms, resync_ms, pass, ctx, dispose, filter);
}

kapi_api *kapi_controllers__api(const kapi_controller *c)
{
    return c->api;
}

void *kapi_controllers__ctx(const kapi_controller *c)
{
    return c->ctx;
}

kapi_str kapi_controllers__str(const json_t *obj, const char *path)
{
    const json_t *v = kapi_json_path(obj, path);
    return json_is_string(v) ? (kapi_str){json_string_value(v), json_string_length(v)}
                             : KAPI_STR("");
}

kapi_error *kapi_controllers__storage_type(kapi_api *api, const json_t *crd, const kapi_type **out)
{
    const char *rv = kapi_json_path_str(crd, "metadata.resourceVersion");
    return kapi_registry_custom_storage_type(kapi_api_registry(api), crd,
                                             rv ? strtoll(rv, NULL, 10) : 0, out);
}

void kapi_controllers__queue(kapi_controller *c, const kapi_type *t, const kapi_store_event *ev)
{
    if (ev->type == KAPI_STORE_EVENT_PROGRESS)
        return;
    pthread_mutex_lock(&c->mu);
    if (c->nchanges == KAPI_CONTROLLER_MAX_QUEUED) {
        kapi_controllers__changes_free(c->changes, c->nchanges);
        c->changes = NULL;
        c->nchanges = c->capchanges = 0;
        c->lost = true;
    }
    if (c->nchanges == c->capchanges) {
        c->capchanges = c->capchanges ? c->capchanges * 2 : 64;
        c->changes = kapi_xrealloc(c->changes, c->capchanges * sizeof(*c->changes));
    }
    c->changes[c->nchanges++] = (kapi_controller_change){
        kapi_type_ref(t), ev->type, ev->obj ? kapi_obj_ref((kapi_obj *)ev->obj) : NULL};
    mark_dirty(c);
    pthread_mutex_unlock(&c->mu);
}

kapi_controller_change *kapi_controllers__take(kapi_controller *c, size_t *n, bool *lost)
{
    pthread_mutex_lock(&c->mu);
    kapi_controller_change *changes = c->changes;
    *n = c->nchanges;
    *lost = c->lost;
    c->changes = NULL;
    c->nchanges = c->capchanges = 0;
    c->lost = false;
    pthread_mutex_unlock(&c->mu);
    return changes;
}

void kapi_controllers__changes_free(kapi_controller_change *changes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        kapi_obj_unref(changes[i].obj);
        kapi_type_unref(changes[i].type);
    }
    free(changes);
}

void kapi_controllers__wake_at(kapi_controller *c, int64_t at_ms)
{
    pthread_mutex_lock(&c->mu);
    if (at_ms < c->wake_at)
        c->wake_at = at_ms;
    pthread_mutex_unlock(&c->mu);
}

void kapi_controllers__event(kapi_api *api, const json_t *obj, const char *api_version,
                             const char *kind, const char *component, const char *type,
                             const char *reason, const char *message)
{
    int64_t ns = kapi_time_now_ns();
    char stamp[32];
    kapi_time_rfc3339(stamp, ns / 1000000000);
    kapi_str name = kapi_controllers__str(obj, "metadata.name");
    kapi_str nsp = kapi_controllers__str(obj, "metadata.namespace");
    kapi_str in = nsp.len ? nsp : KAPI_STR("default");
    char *ev_name = kapi_xprintf("%.*s.%" PRIx64, KAPI_STR_FMT(name), (uint64_t)ns);
    json_t *ev =
        json_pack("{s:s,s:s,s:{s:s,s:s%},s:{s:s,s:s%,s:O,s:s,s:O},s:s,s:s,s:{s:s},s:s,s:s,s:i,s:s}",
                  "apiVersion", "v1", "kind", "Event", "metadata", "name", ev_name, "namespace",
                  in.ptr, in.len, "involvedObject", "kind", kind, "name", name.ptr, name.len, "uid",
                  kapi_json_path(obj, "metadata.uid"), "apiVersion", api_version, "resourceVersion",
                  kapi_json_path(obj, "metadata.resourceVersion"), "reason", reason, "message",
                  message, "source", "component", component, "firstTimestamp", stamp,
                  "lastTimestamp", stamp, "count", 1, "type", type);
    if (nsp.len)
        json_object_set_new_nocheck(json_object_get(ev, "involvedObject"), "namespace",
                                    json_stringn(nsp.ptr, nsp.len));
    const kapi_type *events = kapi_registry_lookup(kapi_api_registry(api), KAPI_STR(""),
                                                   KAPI_STR("v1"), KAPI_STR("events"));
    kapi_error_free(kapi_api_create(api, &kapi_controllers_user, events, in, ev, NULL));
    free(ev_name);
}

bool kapi_controllers__stopping(kapi_controller *c)
{
    return atomic_load(&c->stopping);
}

void kapi_controller_stop(kapi_controller *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&running_mu);
    kapi_controller **p = &running;
    while (*p != c)
        p = &(*p)->next;
    *p = c->next;
    pthread_mutex_unlock(&running_mu);
    for (size_t i = 0; i < c->nwatches; i++)
        if (c->watches[i])
            kapi_api_watch_stop(c->api, c->watches[i]);
    pthread_mutex_lock(&c->mu);
    atomic_store(&c->stopping, true);
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    if (c->dispose)
        c->dispose(c->ctx);
    kapi_controllers__changes_free(c->changes, c->nchanges);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
