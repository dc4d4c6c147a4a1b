/*
 * watch: the watch hub (store.h, "watches").
 *
 * The store's follower (store.c) publishes every committed change here, after it is
 * durable and applied to the index.
 * The hub keeps the changes of the history window in a ring (oldest first), each with
 * references to the new and the previous state, and passes each change to the watches
 * whose prefix it falls under. A watch that starts from a past revision first gets the
 * kept changes after it, under the same lock, so that it sees no gap and no repeat.
 *
 * `floor` is the revision after which every change is either in the ring or not yet
 * published: a watch may start from floor or later. It starts at the compacted revision
 * of the log (store.c puts the changes after it back at open) and rises as the window
 * trims the ring.
 */
#include "store/store_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct kapi_store__change {
    kapi_store_event_type type;
    int64_t rev;
    kapi_obj *obj, *prev;
} change;

struct kapi_store_watch {
    kapi_store_watch *prev_w, *next_w;
    char *prefix;
    size_t prefix_len;
    int64_t from; /* changes at or before it are not delivered */
    kapi_store_watch_fn fn;
    void *ctx;
    bool stopped; /* fn returned false */
};

void kapi_store__hub_init(kapi_store__hub *h, int64_t rev)
{
    memset(h, 0, sizeof(*h));
    pthread_mutex_init(&h->mu, NULL);
    h->floor = h->published = rev;
}

static change *at(const kapi_store__hub *h, size_t i)
{
    return &h->ring[(h->head + i) % h->cap];
}

static void drop_oldest(kapi_store__hub *h)
{
    change *e = at(h, 0);
    h->floor = e->rev;
    kapi_obj_unref(e->obj);
    kapi_obj_unref(e->prev);
    h->head = (h->head + 1) % h->cap;
    h->n--;
}

void kapi_store__hub_dispose(kapi_store__hub *h)
{
    while (h->n)
        drop_oldest(h);
    free(h->ring);
    pthread_mutex_destroy(&h->mu);
}

static void push(kapi_store__hub *h, const kapi_store_event *ev)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 1024;
        change *ring = kapi_xmalloc(cap * sizeof(*ring));
        for (size_t i = 0; i < h->n; i++)
            ring[i] = *at(h, i);
        free(h->ring);
        h->ring = ring;
        h->cap = cap;
        h->head = 0;
    }
    *at(h, h->n++) = (change){
        .type = ev->type,
        .rev = ev->rev,
        .obj = kapi_obj_ref((kapi_obj *)ev->obj),
        .prev = ev->prev ? kapi_obj_ref((kapi_obj *)ev->prev) : NULL,
    };
}

/* Prefix matching by length: a NUL in a key or a prefix is a byte like any other. */
static bool under(const kapi_store_watch *w, const kapi_obj *o)
{
    return o->key_len >= w->prefix_len &&
           (w->prefix_len == 0 || memcmp(o->key, w->prefix, w->prefix_len) == 0);
}

/* Hands ev to w if it is w's; lock held. */
static void deliver(kapi_store_watch *w, const kapi_store_event *ev)
{
    if (w->stopped || ev->rev <= w->from || !under(w, ev->obj))
        return;
    if (!w->fn(w->ctx, ev))
        w->stopped = true;
}

void kapi_store__hub_publish(kapi_store__hub *h, const kapi_store_event *ev)
{
    pthread_mutex_lock(&h->mu);
    push(h, ev);
    h->published = ev->rev;
    for (kapi_store_watch *w = h->watches; w; w = w->next_w)
        deliver(w, ev);
    pthread_mutex_unlock(&h->mu);
}

void kapi_store__hub_trim(kapi_store__hub *h, int64_t rev)
{
    pthread_mutex_lock(&h->mu);
    while (h->n && at(h, 0)->rev <= rev)
        drop_oldest(h);
    if (h->floor < rev && rev <= h->published)
        h->floor = rev;
    pthread_mutex_unlock(&h->mu);
}

/* The first kept change after rev (h->n when none); lock held. */
static size_t first_after(const kapi_store__hub *h, int64_t rev)
{
    size_t lo = 0, hi = h->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (at(h, mid)->rev <= rev)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

kapi_store_rc kapi_store__hub_watch(kapi_store__hub *h, kapi_str prefix, int64_t from,
                                    kapi_store_watch_fn fn, void *ctx, kapi_store_watch **out,
                                    int64_t *oldest)
{
    *out = NULL;
    pthread_mutex_lock(&h->mu);
    if (from < h->floor) {
        *oldest = h->floor;
        pthread_mutex_unlock(&h->mu);
        return KAPI_STORE_GONE;
    }
    kapi_store_watch *w = kapi_xcalloc(1, sizeof(*w));
    w->prefix = kapi_xmalloc(prefix.len + 1);
    if (prefix.len)
        memcpy(w->prefix, prefix.ptr, prefix.len);
    w->prefix_len = prefix.len;
    w->from = from;
    w->fn = fn;
    w->ctx = ctx;
    for (size_t i = first_after(h, from); i < h->n && !w->stopped; i++) {
        const change *e = at(h, i);
        kapi_store_event ev = {.type = e->type, .rev = e->rev, .obj = e->obj, .prev = e->prev};
        deliver(w, &ev);
    }
    w->next_w = h->watches;
    if (h->watches)
        h->watches->prev_w = w;
    h->watches = w;
    pthread_mutex_unlock(&h->mu);
    *out = w;
    return KAPI_STORE_OK;
}

void kapi_store__hub_progress(kapi_store__hub *h, kapi_store_watch *w)
{
    pthread_mutex_lock(&h->mu);
    kapi_store_event ev = {
        .type = KAPI_STORE_EVENT_PROGRESS,
        .rev = h->published > w->from ? h->published : w->from,
    };
    if (!w->stopped && !w->fn(w->ctx, &ev))
        w->stopped = true;
    pthread_mutex_unlock(&h->mu);
}

void kapi_store__hub_reset(kapi_store__hub *h, int64_t rev)
{
    pthread_mutex_lock(&h->mu);
    while (h->n)
        drop_oldest(h);
    h->floor = h->published = rev;
    kapi_store_event ev = {.type = KAPI_STORE_EVENT_RESET, .rev = rev};
    for (kapi_store_watch *w = h->watches; w; w = w->next_w) {
        if (w->stopped)
            continue;
        if (!w->fn(w->ctx, &ev))
            w->stopped = true;
        if (w->from < rev)
            w->from = rev;
    }
    pthread_mutex_unlock(&h->mu);
}

void kapi_store__hub_unwatch(kapi_store__hub *h, kapi_store_watch *w)
{
    pthread_mutex_lock(&h->mu);
    if (w->prev_w)
        w->prev_w->next_w = w->next_w;
    else
        h->watches = w->next_w;
    if (w->next_w)
        w->next_w->prev_w = w->prev_w;
    pthread_mutex_unlock(&h->mu);
    free(w->prefix);
    free(w);
}
