/*
 * api/watch: the watch verb (reference 4.5, 6.1).
 *
 * A watch is a chunked 200 whose body is one {"type":..,"object":..} document per line,
 * or, in protobuf, one frame per event (codec/protobuf.h). The worker that takes the
 * request writes the start (synthetic ADDED events for the state at the latest revision
 * when no exact resourceVersion is given), then hands the watch to the store's hub and
 * returns; from then on the committer delivers each change (on_change), already durable.
 * A JSON event of the object itself is the stored bytes between a fixed prefix and
 * suffix: the bytes are shared by reference with the store and every other watcher. Any
 * other event — a converted view (events.k8s.io), a Table row, PartialObjectMetadata,
 * protobuf — is made once per change and form and shared by the watchers of that form
 * (view_cache). A Table watch sends its column definitions with its first event only, as
 * kube-apiserver does; a PartialObjectMetadataList watch sends no events (kube's cannot
 * make a list of one object either).
 *
 * A streaming list (sendInitialEvents=true, resourceVersionMatch=NotOlderThan, KEP-3157 as
 * Kubernetes 1.32 serves it) is such a start followed, with allowWatchBookmarks, by a
 * BOOKMARK annotated k8s.io/initial-events-end: "true" at the state's revision, so that an
 * informer builds its cache from the events without one large list.
 *
 * One reaper thread per api owns the watches' ends: a watch ends when its client goes,
 * when its timeout passes, when its client stops taking events, or at shutdown. Only the
 * reaper ends and frees a watch, so the hub, the http layer and the reaper never race over
 * it. With allowWatchBookmarks the reaper also sends the bookmarks when kube-apiserver's
 * cacher would (cacheWatcher.nextBookmarkTime): a minute apart, and 2 s before the
 * timeout; none in a watch's last 2 s, none as it ends.
 *
 * A watch of a custom resource converted by a webhook (kapi_type_converts_remotely) does
 * not make its events on the committer, which a slow webhook would hold up for every
 * writer: its events wait in the api's conversion queue, in order, and one converter
 * thread makes and queues them. A watcher more than PENDING_LIMIT events behind there is
 * too slow, as below. A conversion that fails ends the stream without an ERROR event,
 * as kube-apiserver's watch encoder does.
 *
 * A watcher's queue is the http stream's: references to the shared event bytes, taken by
 * the connection only as its socket drains. The history a watch resumes from is queued
 * whole, however long, as the cacher sends a watcher its initial events before any limit
 * applies. After it, a watcher whose queue stays over WATCH_FULL for WATCH_STALL_NS, or
 * grows WATCH_QUEUE_LIMIT past that history, is ended as kube-apiserver's cacher
 * ends a watcher that does not keep up ("Forcing watcher close due to unresponsiveness"):
 * its stream ends after the event being written, without an ERROR event, the events not
 * yet begun are dropped (as the cacher drops a terminated watcher's buffer), and the
 * connection closes once the end is written; the client watches again from the last
 * resourceVersion it saw.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_int.h"
#include "codec/protobuf.h"
#include "log/log.h"
#include "metrics/metrics.h"

#define NS_PER_S 1000000000LL
/* A watcher's queue (bytes queued on its stream, not yet taken by the connection): past
 * WATCH_FULL it is full; full for WATCH_STALL_NS, or past WATCH_QUEUE_LIMIT, it ends. */
#define WATCH_QUEUE_LIMIT (512u << 10)
#define WATCH_FULL (128u << 10)
#define WATCH_STALL_NS (5 * NS_PER_S)
#define BOOKMARK_INTERVAL_NS (60 * NS_PER_S)
#define BOOKMARK_BEFORE_END_NS (2 * NS_PER_S)
/* A watch's next_bookmark_ns when no bookmark is due any more. */
#define NO_BOOKMARK INT64_MAX
/* Without timeoutSeconds: between these (kube-apiserver's --min-request-timeout and
 * twice it). */
#define MIN_TIMEOUT_S 1800
#define REAPER_TICK_NS (NS_PER_S / 4)
/* Free heap memory past which the reaper hands it back to the system (at most once a
 * second): the watchers' connections and queues, and big answers, are freed in the middle
 * of glibc's heaps, which return nothing by themselves. */
#define TRIM_SLACK (16u << 20)
#define TRIM_INTERVAL_NS NS_PER_S
/* The most events a watch of a remotely converted type may have waiting for conversion. */
#define PENDING_LIMIT 4096

struct kapi_watch {
    kapi_api *api;
    const kapi_type *type;
    const char *scope;          /* its metrics' scope label: "resource", "namespace" or "cluster" */
    kapi_metric_series *events; /* apiserver_watch_events_total of its kind */
    kapi_http_stream *stream;
    kapi_store_watch *sw;
    kapi_filter *filter;
    bool bookmarks;
    kapi_media media;  /* the events' form (negotiate.c) */
    char include[16];  /* a Table's includeObject */
    bool columns_sent; /* a Table watch has sent its column definitions */
    /* Queued bytes past which the watcher is too slow: none while the history it asked
     * for is replayed (a client resuming from an old resourceVersion gets all of it, as
     * kube's cacher sends it), then WATCH_QUEUE_LIMIT beyond what the replay queued. The
     * committer reads it, so it is atomic. */
    atomic_size_t limit;
    int64_t deadline_ns; /* monotonic */
    int64_t next_bookmark_ns;
    int64_t full_since_ns; /* the reaper's: when the queue was first seen full, or 0 */
    atomic_bool done;      /* the client left, or the watcher fell behind */
    atomic_bool stalled;   /* ended for not taking its events */
    bool remote;           /* its type converts remotely: events go through the queue */
    size_t npending;       /* its events in the conversion queue (under qmu) */
    size_t nconverted;     /* its events the converter has made (under qmu) */
    kapi_watch *next;
};

/* A change waiting in the conversion queue for its watch. */
typedef struct pending_event {
    struct pending_event *next;
    kapi_watch *w;
    kapi_store_event ev; /* obj and prev are references */
} pending_event;

/* An event in a form other than the stored bytes: made once and shared by the watchers
 * of that form, like stored bytes. */
typedef struct view_event {
    atomic_int refs;
    size_t len;
    char data[];
} view_event;

/* What an event's bytes are made from: one change (key, revision, event type; a revision
 * is one change of one key, and its only DELETED bytes are either the deleted state or,
 * for a watcher the change took out of its selectors, the previous state restamped) and
 * the form of the watch. */
typedef struct event_key {
    const kapi_type *type; /* a reference */
    kapi_watch_type wt;
    int64_t rev;
    char *key;
    kapi_media media;
    char include[16];
    bool columns;
} event_key;

/* The last events made, a few forms' worth. The hub hands a change to every watcher before
 * the next one, so the watchers of one form find it here. */
#define VIEW_SLOTS 8
typedef struct view_cache {
    pthread_mutex_t mu;
    struct {
        event_key k;
        view_event *ev;
    } slot[VIEW_SLOTS];
    unsigned next;
} view_cache;

struct kapi_watch_reaper {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    kapi_watch *watches;
    bool stopping;
    pthread_t reaper;
    view_cache views;
    /* The watches a sweep found due a bookmark: the reaper asks the hub for them after it
     * lets go of mu (the hub calls back, and a callback may take mu). Reaper's own. */
    kapi_watch **due;
    size_t ndue, due_cap;
    /* The conversion queue and its thread, started with the first watch that needs it;
     * under qmu, which the committer takes under the hub's lock (so never the other way
     * round). converting is the watch whose event the thread is making. */
    pthread_mutex_t qmu;
    pending_event *head, **tail;
    pthread_cond_t pending, idle;
    bool converter_started, qstopping;
    pthread_t converter;
    const kapi_watch *converting;
};

/* ---- writing events ---- */

static const char *const prefixes[] = {
    [KAPI_WATCH_ADDED] = "{\"type\":\"ADDED\",\"object\":",
    [KAPI_WATCH_MODIFIED] = "{\"type\":\"MODIFIED\",\"object\":",
    [KAPI_WATCH_DELETED] = "{\"type\":\"DELETED\",\"object\":",
};
static const char suffix[] = "}\n";

static const char *const type_names[] = {
    [KAPI_WATCH_ADDED] = "ADDED",
    [KAPI_WATCH_MODIFIED] = "MODIFIED",
    [KAPI_WATCH_DELETED] = "DELETED",
};

static void view_event_unref(void *p)
{
    view_event *e = p;
    if (atomic_fetch_sub(&e->refs, 1) == 1)
        free(e);
}

static void event_key_dispose(event_key *k)
{
    if (k->type)
        kapi_type_unref(k->type);
    free(k->key);
    memset(k, 0, sizeof(*k));
}

static void view_cache_dispose(view_cache *vc)
{
    for (size_t i = 0; i < VIEW_SLOTS; i++) {
        event_key_dispose(&vc->slot[i].k);
        if (vc->slot[i].ev)
            view_event_unref(vc->slot[i].ev);
    }
    pthread_mutex_destroy(&vc->mu);
}

/* Events of w are the stored bytes themselves. */
static bool plain(const kapi_watch *w)
{
    return w->media.format == KAPI_FORMAT_JSON && w->media.target == KAPI_TARGET_OBJECT &&
           !w->type->strategy->from_storage;
}

/* The event of type name for obj (the served view, with kind and apiVersion; taken) in
 * w's form, with the Table's column definitions when columns is set. */
static view_event *make_event(const kapi_watch *w, const char *name, json_t *obj, bool columns)
{
    json_t *v = kapi_api__watch_object(w->type, &w->media, w->include, obj, columns);
    json_decref(obj);
    kapi_buf b;
    kapi_buf_init(&b);
    if (w->media.format == KAPI_FORMAT_PROTOBUF) {
        kapi_buf pb;
        kapi_buf_init(&pb);
        kapi_api__protobuf_of(w->api->registry, v, &pb);
        kapi_pb_watch_frame(&b, name, pb.ptr, pb.len);
        kapi_buf_dispose(&pb);
    } else {
        kapi_buf_printf(&b, "{\"type\":\"%s\",\"object\":", name);
        kapi_json_encode(&b, v);
        kapi_buf_puts(&b, suffix);
    }
    json_decref(v);
    view_event *e = kapi_xmalloc(sizeof(*e) + b.len);
    atomic_init(&e->refs, 1);
    e->len = b.len;
    memcpy(e->data, b.ptr, b.len);
    kapi_buf_dispose(&b);
    return e;
}

static bool same_key(const event_key *a, const event_key *b)
{
    return a->type == b->type && a->wt == b->wt && a->rev == b->rev && a->columns == b->columns &&
           a->media.format == b->media.format && a->media.target == b->media.target &&
           a->media.v1beta1 == b->media.v1beta1 && strcmp(a->include, b->include) == 0 && a->key &&
           strcmp(a->key, b->key) == 0;
}

/* The cached event of key k (a reference), or NULL. Lock held. */
static view_event *cached_locked(view_cache *vc, const event_key *k)
{
    for (size_t i = 0; i < VIEW_SLOTS; i++)
        if (vc->slot[i].ev && same_key(&vc->slot[i].k, k)) {
            atomic_fetch_add(&vc->slot[i].ev->refs, 1);
            return vc->slot[i].ev;
        }
    return NULL;
}

/* The event for o in w's form, from the cache or made and cached (a reference); NULL
 * when o's conversion failed. It is made outside the lock: a conversion may call a
 * webhook. */
static view_event *shared_event(kapi_watch *w, kapi_watch_type type, const kapi_obj *o,
                                bool columns)
{
    view_cache *vc = &w->api->watches->views;
    const kapi_type *t = w->type;
    event_key k = {.type = t,
                   .wt = type,
                   .rev = o->rev,
                   .key = (char *)o->key,
                   .media = w->media,
                   .columns = columns};
    memcpy(k.include, w->include, sizeof(k.include));
    pthread_mutex_lock(&vc->mu);
    view_event *e = cached_locked(vc, &k);
    pthread_mutex_unlock(&vc->mu);
    if (e)
        return e;
    json_t *v = kapi_json_parse(o->data, o->len, NULL);
    kapi_error *err = kapi_type_from_storage(t, &v, 1);
    if (err) {
        kapi_error_free(err);
        json_decref(v);
        return NULL;
    }
    view_event *made = make_event(w, type_names[type], v, columns);
    pthread_mutex_lock(&vc->mu);
    if ((e = cached_locked(vc, &k)) == NULL) { /* else another thread made it meanwhile */
        size_t i = vc->next++ % VIEW_SLOTS;
        event_key_dispose(&vc->slot[i].k);
        if (vc->slot[i].ev)
            view_event_unref(vc->slot[i].ev);
        vc->slot[i].k = k;
        vc->slot[i].k.type = kapi_type_ref(t);
        vc->slot[i].k.key = kapi_xstrdup(o->key);
        vc->slot[i].ev = made;
        atomic_fetch_add(&made->refs, 1);
        e = made;
        made = NULL;
    }
    pthread_mutex_unlock(&vc->mu);
    if (made)
        view_event_unref(made);
    return e;
}

/* Queues e on w's stream unless that makes the watcher too slow. */
static bool queue_event(kapi_watch *w, view_event *e)
{
    kapi_metrics_series_add(w->events, 1);
    if (kapi_http_stream_queued(w->stream) + e->len > atomic_load(&w->limit)) {
        view_event_unref(e);
        atomic_store(&w->stalled, true);
        return false;
    }
    kapi_http_chunk c = {e->data, e->len, view_event_unref, e};
    return kapi_http_stream_write(w->stream, c);
}

/* Writes one event for o (the stored bytes, in the storage view) in the watch's form. */
static bool write_event(kapi_watch *w, kapi_watch_type type, kapi_obj *o)
{
    if (w->media.target == KAPI_TARGET_POM_LIST) {
        kapi_obj_unref(o);
        return true;
    }
    if (!plain(w) &&
        !(w->media.format == KAPI_FORMAT_JSON && w->media.target == KAPI_TARGET_OBJECT &&
          kapi_type_serves_stored(w->type, o->data, o->len))) {
        bool columns = w->media.target == KAPI_TARGET_TABLE && !w->columns_sent;
        w->columns_sent = true;
        view_event *e = shared_event(w, type, o, columns);
        kapi_obj_unref(o);
        return e && queue_event(w, e);
    }
    size_t len = o->len + strlen(prefixes[type]) + sizeof(suffix);
    if (kapi_http_stream_queued(w->stream) + len > atomic_load(&w->limit)) {
        kapi_obj_unref(o);
        atomic_store(&w->stalled, true);
        return false;
    }
    kapi_http_chunk c[3] = {
        {prefixes[type], strlen(prefixes[type]), NULL, NULL},
        {o->data, o->len, kapi_api__release_obj, o},
        {suffix, sizeof(suffix) - 1, NULL, NULL},
    };
    kapi_metrics_series_add(w->events, 1);
    return kapi_http_stream_writev(w->stream, c, 3);
}

/* The annotation of the bookmark that ends a streaming list's initial events. */
#define INITIAL_EVENTS_END "k8s.io/initial-events-end"

/* A bookmark at rev; end: the one that ends a streaming list's initial events. */
static bool write_bookmark(kapi_watch *w, int64_t rev, bool end)
{
    const kapi_type *t = w->type;
    char rv[24];
    snprintf(rv, sizeof(rv), "%lld", (long long)rev);
    if (w->media.target == KAPI_TARGET_POM_LIST)
        return true;
    if (!plain(w)) {
        /* An empty object of the type at rev, in the watch's form, as kube makes it. */
        json_t *obj =
            json_pack("{s:s,s:s,s:{s:s,s:n}}", "kind", t->kind, "apiVersion", t->group_version,
                      "metadata", "resourceVersion", rv, "creationTimestamp");
        if (end)
            json_object_set_new_nocheck(json_object_get(obj, "metadata"), "annotations",
                                        json_pack("{s:s}", INITIAL_EVENTS_END, "true"));
        bool columns = w->media.target == KAPI_TARGET_TABLE && !w->columns_sent;
        w->columns_sent = true;
        return queue_event(w, make_event(w, "BOOKMARK", obj, columns));
    }
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_printf(&b,
                    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"%s\",\"apiVersion\":\"%s\","
                    "\"metadata\":{\"resourceVersion\":\"%s\"%s}}}\n",
                    t->kind, t->group_version, rv,
                    end ? ",\"annotations\":{\"" INITIAL_EVENTS_END "\":\"true\"}" : "");
    size_t n;
    char *p = kapi_buf_detach(&b, &n);
    kapi_http_chunk c = kapi_http_chunk_take(p, n);
    return kapi_http_stream_write(w->stream, c);
}

/* Writes an ERROR event with err's Status, in the watch's format. */
static void write_error(kapi_watch *w, const kapi_error *err)
{
    kapi_buf b, status;
    kapi_buf_init(&b);
    kapi_buf_init(&status);
    kapi_api__status_json(&status, err);
    if (w->media.format == KAPI_FORMAT_PROTOBUF &&
        kapi_api__to_protobuf(w->api->registry, &status)) {
        kapi_pb_watch_frame(&b, "ERROR", status.ptr, status.len);
    } else {
        status.len--; /* the Status's newline */
        kapi_buf_puts(&b, "{\"type\":\"ERROR\",\"object\":");
        kapi_buf_put(&b, status.ptr, status.len);
        kapi_buf_puts(&b, suffix);
    }
    kapi_buf_dispose(&status);
    size_t n;
    char *p = kapi_buf_detach(&b, &n);
    kapi_http_stream_write(w->stream, kapi_http_chunk_take(p, n));
}

/* ---- the hub's callback ---- */

static bool passes(const kapi_watch *w, const kapi_obj *o)
{
    return o && (!w->filter || kapi_api__filter_match(w->filter, o));
}

/* Writes what change ev means to w: its event, a bookmark, or the end. */
static bool deliver(kapi_watch *w, const kapi_store_event *ev)
{
    if (atomic_load(&w->done))
        return false;
    bool ok = true;
    if (ev->type == KAPI_STORE_EVENT_RESET) {
        /* The store lost changes and reloaded: the client re-lists, as after a 410. */
        kapi_error *err = kapi_error_new(KAPI_STATUS_EXPIRED,
                                         "too old resource version: the store was reloaded "
                                         "at %lld",
                                         (long long)ev->rev);
        write_error(w, err);
        kapi_error_free(err);
        ok = false;
    } else if (ev->type == KAPI_STORE_EVENT_PROGRESS) {
        ok = !w->bookmarks || write_bookmark(w, ev->rev, false);
    } else if (ev->type == KAPI_STORE_EVENT_DELETE) {
        if (passes(w, ev->prev))
            ok = write_event(w, KAPI_WATCH_DELETED, kapi_obj_ref((kapi_obj *)ev->obj));
    } else {
        bool now = passes(w, ev->obj), before = passes(w, ev->prev);
        if (now)
            ok = write_event(w, before ? KAPI_WATCH_MODIFIED : KAPI_WATCH_ADDED,
                             kapi_obj_ref((kapi_obj *)ev->obj));
        else if (before)
            ok = write_event(w, KAPI_WATCH_DELETED, kapi_obj_restamp(ev->prev, ev->rev));
    }
    if (!ok) {
        atomic_store(&w->done, true);
        kapi_api__watch_wake(w->api);
    }
    return ok;
}

static void *converter_main(void *arg);

/* Puts ev in the conversion queue for w; false when w is too far behind (the history a
 * watch resumes from is queued whole, as for every watch). */
static bool enqueue(kapi_watch *w, const kapi_store_event *ev)
{
    kapi_watch_reaper *h = w->api->watches;
    pthread_mutex_lock(&h->qmu);
    bool ok = w->npending < PENDING_LIMIT || atomic_load(&w->limit) == SIZE_MAX;
    if (ok) {
        pending_event *p = kapi_xcalloc(1, sizeof(*p));
        p->w = w;
        p->ev = *ev;
        p->ev.obj = ev->obj ? kapi_obj_ref((kapi_obj *)ev->obj) : NULL;
        p->ev.prev = ev->prev ? kapi_obj_ref((kapi_obj *)ev->prev) : NULL;
        *h->tail = p;
        h->tail = &p->next;
        w->npending++;
        if (!h->converter_started) {
            if (pthread_create(&h->converter, NULL, converter_main, w->api) != 0) {
                KAPI_LOG_ERROR("cannot start the watch converter");
                abort();
            }
            pthread_setname_np(h->converter, "kapi-convert");
            h->converter_started = true;
        }
        pthread_cond_signal(&h->pending);
    }
    pthread_mutex_unlock(&h->qmu);
    if (!ok) {
        atomic_store(&w->stalled, true);
        atomic_store(&w->done, true);
        kapi_api__watch_wake(w->api);
    }
    return ok;
}

static void pending_free(pending_event *p)
{
    kapi_obj_unref((kapi_obj *)p->ev.obj);
    kapi_obj_unref((kapi_obj *)p->ev.prev);
    free(p);
}

/* The converter thread: makes the queued events, one at a time, in order. */
static void *converter_main(void *arg)
{
    kapi_api *api = arg;
    kapi_watch_reaper *h = api->watches;
    pthread_mutex_lock(&h->qmu);
    for (;;) {
        while (!h->head && !h->qstopping)
            pthread_cond_wait(&h->pending, &h->qmu);
        if (h->qstopping)
            break;
        pending_event *p = h->head;
        if (!(h->head = p->next))
            h->tail = &h->head;
        h->converting = p->w;
        pthread_mutex_unlock(&h->qmu);
        deliver(p->w, &p->ev);
        pthread_mutex_lock(&h->qmu);
        p->w->npending--;
        p->w->nconverted++;
        h->converting = NULL;
        pthread_cond_broadcast(&h->idle);
        pending_free(p);
    }
    pthread_mutex_unlock(&h->qmu);
    return NULL;
}

/* Waits until the converter has made the events w has queued so far (a resumed watch's
 * history), or w ended. */
static void wait_converted(kapi_watch *w)
{
    kapi_watch_reaper *h = w->api->watches;
    pthread_mutex_lock(&h->qmu);
    size_t target = w->nconverted + w->npending;
    while (w->nconverted < target)
        pthread_cond_wait(&h->idle, &h->qmu);
    pthread_mutex_unlock(&h->qmu);
}

/* Takes w's events out of the conversion queue, once the converter is not at one. */
static void drop_pending(kapi_watch *w)
{
    kapi_watch_reaper *h = w->api->watches;
    pending_event *dropped = NULL;
    pthread_mutex_lock(&h->qmu);
    while (h->converting == w)
        pthread_cond_wait(&h->idle, &h->qmu);
    for (pending_event **pp = &h->head; *pp;) {
        pending_event *p = *pp;
        if (p->w != w) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        p->next = dropped;
        dropped = p;
    }
    h->tail = &h->head;
    while (*h->tail)
        h->tail = &(*h->tail)->next;
    pthread_mutex_unlock(&h->qmu);
    while (dropped) {
        pending_event *p = dropped;
        dropped = p->next;
        pending_free(p);
    }
}

static bool on_change(void *ctx, const kapi_store_event *ev)
{
    kapi_watch *w = ctx;
    if (atomic_load(&w->done))
        return false;
    return w->remote ? enqueue(w, ev) : deliver(w, ev);
}

/* ---- the reaper ---- */

static void on_client_gone(void *ctx)
{
    kapi_watch *w = ctx;
    atomic_store(&w->done, true);
    kapi_api__watch_wake(w->api);
}

void kapi_api__watch_wake(kapi_api *api)
{
    kapi_watch_reaper *h = api->watches;
    pthread_mutex_lock(&h->mu);
    pthread_cond_signal(&h->cond);
    pthread_mutex_unlock(&h->mu);
}

static void finish(kapi_watch *w)
{
    if (w->sw)
        kapi_store_watch_stop(w->api->store, w->sw);
    if (w->remote)
        drop_pending(w);
    if (atomic_load(&w->stalled))
        kapi_http_stream_end_close(w->stream);
    else
        kapi_http_stream_end(w->stream);
    kapi_api__filter_free(w->filter);
    kapi_api__metrics_watch(w->type, w->scope, -1);
    kapi_type_unref(w->type);
    free(w);
}

/* When the bookmark after now is due: a minute on, or 2 s before the deadline when that is
 * sooner; NO_BOOKMARK when that moment is not after now (the last 2 s of a watch have
 * none, and a bookmark sent 2 s before the end is the last). */
static int64_t next_bookmark(const kapi_watch *w, int64_t now)
{
    int64_t t = now + BOOKMARK_INTERVAL_NS;
    int64_t before_end = w->deadline_ns - BOOKMARK_BEFORE_END_NS;
    if (before_end < t)
        t = before_end;
    return t > now ? t : NO_BOOKMARK;
}

/* True when w's queue has stayed full for WATCH_STALL_NS (the reaper looks every tick). */
static bool stays_full(kapi_watch *w, int64_t now)
{
    if (kapi_http_stream_queued(w->stream) < WATCH_FULL) {
        w->full_since_ns = 0;
        return false;
    }
    if (!w->full_since_ns)
        w->full_since_ns = now;
    return now - w->full_since_ns >= WATCH_STALL_NS;
}

/* One pass over the watches: takes out those that end (into *ended) and notes those
 * due a bookmark (h->due). Lock held. */
static void sweep_locked(kapi_watch_reaper *h, int64_t now, kapi_watch **ended)
{
    kapi_watch **pp = &h->watches;
    while (*pp) {
        kapi_watch *w = *pp;
        if (!atomic_load(&w->done) && stays_full(w, now)) {
            atomic_store(&w->stalled, true);
            atomic_store(&w->done, true);
        }
        if (h->stopping || atomic_load(&w->done) || now >= w->deadline_ns) {
            *pp = w->next;
            w->next = *ended;
            *ended = w;
            continue;
        }
        if (w->bookmarks && now >= w->next_bookmark_ns) {
            w->next_bookmark_ns = next_bookmark(w, now);
            if (h->ndue == h->due_cap) {
                h->due_cap = h->due_cap ? 2 * h->due_cap : 16;
                h->due = kapi_xrealloc(h->due, h->due_cap * sizeof(*h->due));
            }
            h->due[h->ndue++] = w;
        }
        pp = &w->next;
    }
}

/* Returns free heap memory to the system when there is much of it. */
static void return_memory(int64_t now, int64_t *last)
{
    if (now - *last < TRIM_INTERVAL_NS)
        return;
    *last = now;
    struct mallinfo2 mi = mallinfo2();
    if (mi.fordblks > TRIM_SLACK)
        malloc_trim(0);
}

static void *reaper_main(void *arg)
{
    kapi_api *api = arg;
    kapi_watch_reaper *h = api->watches;
    int64_t last_trim = 0;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        kapi_watch *ended = NULL;
        int64_t now = kapi_time_mono_ns();
        sweep_locked(h, now, &ended);
        bool stopping = h->stopping;
        pthread_mutex_unlock(&h->mu);
        /* only the reaper frees a watch: those due are alive until it finishes them */
        for (size_t i = 0; i < h->ndue; i++)
            kapi_store_watch_progress(api->store, h->due[i]->sw);
        h->ndue = 0;
        while (ended) {
            kapi_watch *w = ended;
            ended = w->next;
            finish(w);
        }
        if (stopping)
            return NULL;
        return_memory(now, &last_trim);
        pthread_mutex_lock(&h->mu);
        if (h->stopping)
            continue;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + REAPER_TICK_NS;
        ts.tv_sec += (time_t)(ns / NS_PER_S);
        ts.tv_nsec = (long)(ns % NS_PER_S);
        pthread_cond_timedwait(&h->cond, &h->mu, &ts);
    }
}

kapi_watch_reaper *kapi_api__watch_reaper_new(kapi_api *api)
{
    kapi_watch_reaper *h = kapi_xcalloc(1, sizeof(*h));
    pthread_mutex_init(&h->mu, NULL);
    pthread_mutex_init(&h->qmu, NULL);
    pthread_mutex_init(&h->views.mu, NULL);
    pthread_cond_init(&h->cond, NULL);
    pthread_cond_init(&h->pending, NULL);
    pthread_cond_init(&h->idle, NULL);
    h->tail = &h->head;
    api->watches = h;
    if (pthread_create(&h->reaper, NULL, reaper_main, api) != 0) {
        KAPI_LOG_ERROR("cannot start the watch reaper");
        abort();
    }
    pthread_setname_np(h->reaper, "kapi-reaper");
    return h;
}

void kapi_api__watch_reaper_free(kapi_api *api)
{
    kapi_watch_reaper *h = api->watches;
    pthread_mutex_lock(&h->mu);
    h->stopping = true;
    pthread_cond_signal(&h->cond);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->reaper, NULL); /* it finishes every watch */
    pthread_mutex_lock(&h->qmu);
    h->qstopping = true;
    pthread_cond_signal(&h->pending);
    bool converter = h->converter_started;
    pthread_mutex_unlock(&h->qmu);
    if (converter)
        pthread_join(h->converter, NULL);
    while (h->head) {
        pending_event *p = h->head;
        h->head = p->next;
        pending_free(p);
    }
    pthread_cond_destroy(&h->pending);
    pthread_cond_destroy(&h->idle);
    pthread_cond_destroy(&h->cond);
    pthread_mutex_destroy(&h->qmu);
    pthread_mutex_destroy(&h->mu);
    free(h->due);
    view_cache_dispose(&h->views);
    free(h);
}

/* ---- starting a watch ---- */

/* A random timeout in [MIN_TIMEOUT_S, 2 * MIN_TIMEOUT_S), as kube-apiserver picks one. */
static int64_t default_timeout_s(void)
{
    uint32_t x;
    kapi_random_bytes(&x, sizeof(x));
    return MIN_TIMEOUT_S + (int64_t)(x % MIN_TIMEOUT_S);
}

/* Writes the synthetic ADDED events of the initial state, waiting for the client to take
 * them as it goes (a big state is never queued whole); false when the watch must end. */
static bool write_initial(kapi_watch *w, const kapi_store_list_result *initial)
{
    for (size_t i = 0; i < initial->n; i++) {
        if (!passes(w, initial->items[i]))
            continue;
        if (kapi_http_stream_queued(w->stream) > WATCH_FULL &&
            !kapi_http_stream_wait(w->stream, WATCH_FULL / 2, WATCH_STALL_NS / 1000000))
            return false;
        if (!write_event(w, KAPI_WATCH_ADDED, kapi_obj_ref(initial->items[i])))
            return false;
    }
    return true;
}

/* The Content-Type of a watch in r's negotiated form. */
static const char *stream_type(const kapi_req *r)
{
    return r->media.format == KAPI_FORMAT_PROTOBUF ? KAPI_PROTOBUF_MEDIA_TYPE ";stream=watch"
                                                   : "application/json";
}

void kapi_api__serve_watch(kapi_req *r)
{
    const char *include = "";
    kapi_list_opts o;
    kapi_filter *f = NULL;
    kapi_store_list_result initial = {0};
    int64_t from = 0, oldest = 0;
    kapi_str prefix = kapi_type_key(&r->arena, r->type, r->info.ns, KAPI_STR(""));
    kapi_error *err = kapi_api__list_options(r, &o);
    if (!err && r->media.target == KAPI_TARGET_TABLE)
        err = kapi_api__include_object(r, &include);
    if (!err)
        err = kapi_api__filter_new(r, r->info.name, &f);
    if (!err)
        err = kapi_api__parse_rv(o.rv, &from);
    if (!err && o.send_initial >= 0) {
        /* A streaming list (NotOlderThan): the state at a revision at least from, or from
         * there on without it. */
        if (from > 0)
            err = kapi_api__wait_for_revision(r->api, from);
        if (!o.send_initial && from == 0)
            from = kapi_store_revision(r->api->store);
        else if (o.send_initial)
            from = 0;
    }
    if (!err && o.timeout < 0) {
        /* kube-apiserver's watch timer is already past: the stream ends at once */
        kapi_api__filter_free(f);
        kapi_http_stream_end(kapi_api__start_stream(r, stream_type(r), 0));
        return;
    }
    if (!err && from == 0) {
        kapi_store_list_opts q = {.prefix = prefix};
        if (kapi_store_list(r->api->store, &q, &initial) != KAPI_STORE_OK)
            err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "storage error while listing %s",
                                 r->type->plural);
        from = initial.rev;
    }
    if (err) {
        kapi_api__filter_free(f);
        kapi_store_list_dispose(&initial);
        kapi_api__respond_error(r, err);
        return;
    }
    kapi_watch *w = kapi_xcalloc(1, sizeof(*w));
    w->api = r->api;
    w->type = kapi_type_ref(r->type);
    w->scope = r->info.name.len ? "resource" : r->info.ns.len ? "namespace" : "cluster";
    w->events = kapi_api__metrics_watch(w->type, w->scope, 1);
    w->filter = f;
    w->bookmarks = o.bookmarks;
    w->media = r->media;
    snprintf(w->include, sizeof(w->include), "%s", include);
    atomic_init(&w->limit, SIZE_MAX);
    int64_t now = kapi_time_mono_ns();
    w->deadline_ns = now + (o.timeout > 0 ? o.timeout : default_timeout_s()) * NS_PER_S;
    w->next_bookmark_ns = next_bookmark(w, now);
    atomic_init(&w->done, false);
    atomic_init(&w->stalled, false);
    w->remote = kapi_type_converts_remotely(r->type);
    w->stream = kapi_api__start_stream(r, stream_type(r), SIZE_MAX);
    kapi_http_stream_on_close(w->stream, on_client_gone, w);
    bool ok = write_initial(w, &initial);
    if (ok && o.send_initial == 1 && w->bookmarks)
        ok = write_bookmark(w, from, true);
    kapi_store_list_dispose(&initial);
    if (ok && kapi_store_watch_start(r->api->store, prefix, from, on_change, w, &w->sw, &oldest) ==
                  KAPI_STORE_GONE) {
        err = kapi_error_new(KAPI_STATUS_EXPIRED, "too old resource version: %lld (%lld)",
                             (long long)from, (long long)oldest);
        write_error(w, err);
        kapi_error_free(err);
        ok = false;
    }
    /* The history is queued (made first, when it waits for conversion): from now on a
     * watcher that stops reading is too slow. */
    if (w->remote)
        wait_converted(w);
    atomic_store(&w->limit, kapi_http_stream_queued(w->stream) + WATCH_QUEUE_LIMIT);
    if (!ok)
        atomic_store(&w->done, true);
    kapi_watch_reaper *h = r->api->watches;
    pthread_mutex_lock(&h->mu);
    w->next = h->watches;
    h->watches = w;
    pthread_cond_signal(&h->cond);
    pthread_mutex_unlock(&h->mu);
}
