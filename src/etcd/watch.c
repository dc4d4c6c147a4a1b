/*
 * etcd/watch: a watch as its consumer sees it. The I/O thread (client.c) frames what the
 * stream receives into messages and queues them on the watch; the consumer takes them
 * here, decodes them on its own thread, and learns from them how the watch stands.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etcd/etcd_int.h"

kapi_etcd_watch *kapi_etcd_watch_new(kapi_etcd_client *c, const kapi_etcd_watch_options *o)
{
    kapi_etcd_watch *w = kapi_xcalloc(1, sizeof(*w));
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &attr);
    pthread_condattr_destroy(&attr);
    w->c = c;
    w->refs = 2;
    w->link.prev = w->link.next = &w->link;
    kapi_buf_init(&w->create);
    kapi_etcd__watch_create_req(&w->create, o);
    w->open_by = kapi_time_mono_ns() + kapi_etcd__call_timeout_ns(c);
    w->start_revision = o->start_revision;
    w->revision = o->start_revision > 0 ? o->start_revision - 1 : 0;
    kapi_etcd__watch_add(c, w);
    return w;
}

void kapi_etcd__watch_destroy(kapi_etcd_watch *w)
{
    while (w->head) {
        kapi_etcd__msg *m = w->head;
        w->head = m->next;
        free(m);
    }
    kapi_buf_dispose(&w->create);
    free(w->end_why);
    free(w->done_why);
    pthread_cond_destroy(&w->cv);
    free(w);
}

void kapi_etcd_watch_free(kapi_etcd_watch *w)
{
    if (!w)
        return;
    pthread_mutex_t *mu = kapi_etcd__mu(w->c);
    pthread_mutex_lock(mu);
    w->freed = true;
    kapi_etcd__kick(w->c);
    bool last = kapi_etcd__watch_release(w);
    pthread_mutex_unlock(mu);
    if (last)
        kapi_etcd__watch_destroy(w);
}

void kapi_etcd_watch_progress(kapi_etcd_watch *w)
{
    pthread_mutex_t *mu = kapi_etcd__mu(w->c);
    pthread_mutex_lock(mu);
    w->progress++;
    kapi_etcd__kick(w->c);
    pthread_mutex_unlock(mu);
}

int64_t kapi_etcd_watch_revision(const kapi_etcd_watch *w)
{
    return w->revision;
}

int64_t kapi_etcd_watch_compact_revision(const kapi_etcd_watch *w)
{
    return w->compact_revision;
}

void kapi_etcd_watch_response_free(kapi_etcd_watch_response *r)
{
    if (!r)
        return;
    kapi_arena_dispose(&r->arena);
    free(r->bytes);
    free(r);
}

/* Waits (c->mu held) until deadline for a message or the stream's end. */
static void wait_for(kapi_etcd_watch *w, pthread_mutex_t *mu, int64_t deadline)
{
    struct timespec ts = {(time_t)(deadline / 1000000000), (long)(deadline % 1000000000)};
    while (!w->head && w->end == KAPI_ETCD_OK) {
        if (deadline == INT64_MAX)
            pthread_cond_wait(&w->cv, mu);
        else if (kapi_time_mono_ns() >= deadline)
            return;
        else
            pthread_cond_timedwait(&w->cv, mu, &ts);
    }
}

/* The next message, or NULL (then w->done says whether the watch has ended). */
static kapi_etcd__msg *take(kapi_etcd_watch *w, int64_t deadline)
{
    pthread_mutex_t *mu = kapi_etcd__mu(w->c);
    pthread_mutex_lock(mu);
    wait_for(w, mu, deadline);
    kapi_etcd__msg *m = w->head;
    if (m) {
        w->head = m->next;
        w->tail = w->head ? w->tail : NULL;
        w->queued -= m->len;
        if (w->stalled && w->queued <= kapi_etcd__watch_queue_bytes(w->c))
            kapi_etcd__kick(w->c);
    } else if (w->end != KAPI_ETCD_OK) {
        w->done = w->end;
        w->done_why = kapi_xstrdup(w->end_why ? w->end_why : kapi_etcd_rc_name(w->end));
    }
    pthread_mutex_unlock(mu);
    return m;
}

/* The watch has ended with rc: every later call says so. why is taken. */
static void end(kapi_etcd_watch *w, kapi_etcd_rc rc, char *why)
{
    w->done = rc;
    w->done_why = why;
}

/* A decoded message: how the watch stands after it. False when it ended the watch. */
static bool apply(kapi_etcd_watch *w, const kapi_etcd_watch_response *r,
                  const kapi_etcd__watch_meta *meta)
{
    if (meta->compact_revision > 0) {
        w->compact_revision = meta->compact_revision;
        end(w, KAPI_ETCD_COMPACTED,
            kapi_xprintf("the watch's start revision %lld is compacted (compacted revision %lld)",
                         (long long)w->revision + 1, (long long)meta->compact_revision));
        return false;
    }
    if (meta->canceled) {
        end(w, KAPI_ETCD_CANCELED,
            kapi_xprintf("etcd canceled the watch: %.*s", KAPI_STR_FMT(meta->cancel_reason)));
        return false;
    }
    if (r->nevents > 0)
        w->revision = r->events[r->nevents - 1].kv.mod_revision;
    else if (r->created && w->start_revision == 0)
        w->revision = r->revision;
    else if (!r->created && r->revision > w->revision)
        w->revision = r->revision;
    return true;
}

kapi_etcd_rc kapi_etcd_watch_next(kapi_etcd_watch *w, int64_t deadline,
                                  kapi_etcd_watch_response **out, kapi_error **err)
{
    kapi_etcd__watch_meta meta;
    *out = NULL;
    kapi_etcd__msg *m = w->done == KAPI_ETCD_OK ? take(w, deadline) : NULL;
    if (!m && w->done == KAPI_ETCD_OK)
        return KAPI_ETCD_WAIT;
    if (m) {
        kapi_etcd_watch_response *r = kapi_xcalloc(1, sizeof(*r));
        kapi_arena_init(&r->arena);
        r->bytes = (char *)m; /* the message's own allocation, its bytes after its header */
        if (!kapi_etcd__watch_resp(r, &meta, m->bytes, m->len))
            end(w, KAPI_ETCD_PROTOCOL, kapi_xstrdup("a malformed WatchResponse"));
        else if (apply(w, r, &meta))
            *out = r;
        if (*out)
            return KAPI_ETCD_OK;
        kapi_etcd_watch_response_free(r);
    }
    kapi_etcd__error(err, w->done, kapi_etcd_client_endpoint(w->c), "%s", w->done_why);
    return w->done;
}
