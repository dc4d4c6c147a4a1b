/*
 * store/expire: keys that expire a fixed time after their last write, as kube-apiserver
 * gives each Event write an etcd lease of --event-ttl. A store watch puts every write
 * (key, revision, deadline) on a min-heap by deadline and records it as the key's latest
 * write; one thread sleeps until the first deadline and deletes the key if that entry is
 * still its latest write and the key still holds that revision. An entry a later write
 * or a delete made stale is skipped; the heap is rebuilt from the latest writes when
 * stale entries outnumber them, so it holds at most about two entries a live key, however
 * often the keys are written. Keys already there at start (or when the watch lost
 * changes) get the whole time from then, since the store keeps no write time.
 */
#include "store/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/map.h"
#include "log/log.h"

typedef struct entry {
    int64_t deadline_ms; /* CLOCK_MONOTONIC */
    int64_t rev;
    kapi_str key; /* heap */
} entry;

/* A key's latest write: the map's key is a kapi_str (with its bytes) it owns. */
typedef struct latest {
    kapi_str key;
    int64_t rev, deadline_ms;
} latest;

struct kapi_store_expirer {
    kapi_store *st;
    kapi_str prefix; /* owned */
    int64_t ttl_ms;
    kapi_store_watch *watch;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    entry *heap;
    size_t n, cap;
    kapi_map *latest; /* kapi_str * (the latest's key) -> latest */
    bool stopping;
    bool lost;      /* the watch lost changes: the keys are listed again */
    size_t expired; /* keys deleted so far */
};

static uint64_t key_hash(const void *k, uint64_t seed)
{
    const kapi_str *s = k;
    return kapi_map_hash_bytes(s->ptr, s->len, seed);
}

static bool key_equal(const void *a, const void *b)
{
    const kapi_str *x = a, *y = b;
    return x->len == y->len && memcmp(x->ptr, y->ptr, x->len) == 0;
}

static void latest_free(void *v)
{
    latest *l = v;
    free((char *)l->key.ptr);
    free(l);
}

static const kapi_map_type latest_map = {key_hash, key_equal, NULL, latest_free};

static kapi_str key_dup(kapi_str key)
{
    char *k = kapi_xmalloc(key.len + 1);
    memcpy(k, key.ptr, key.len);
    k[key.len] = 0;
    return (kapi_str){k, key.len};
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the heap (held under mu) ---- */

static void swap(entry *a, entry *b)
{
    entry t = *a;
    *a = *b;
    *b = t;
}

static void heap_push(kapi_store_expirer *x, kapi_str key, int64_t rev, int64_t deadline)
{
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 64;
        x->heap = kapi_xrealloc(x->heap, x->cap * sizeof(*x->heap));
    }
    size_t i = x->n++;
    x->heap[i] = (entry){deadline, rev, key_dup(key)};
    while (i > 0 && x->heap[(i - 1) / 2].deadline_ms > x->heap[i].deadline_ms) {
        swap(&x->heap[i], &x->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
}

static void heap_clear(kapi_store_expirer *x)
{
    for (size_t i = 0; i < x->n; i++)
        free((char *)x->heap[i].key.ptr);
    x->n = 0;
}

/* The heap again from the latest writes alone, once stale entries outnumber them. */
static void compact(kapi_store_expirer *x)
{
    if (x->n <= 2 * kapi_map_count(x->latest) + 64)
        return;
    heap_clear(x);
    kapi_map_iter it = {0};
    void *v;
    while (kapi_map_next(x->latest, &it, NULL, &v)) {
        const latest *l = v;
        heap_push(x, l->key, l->rev, l->deadline_ms);
    }
}

/* A write of key at rev: its deadline is ttl from now. */
static void push(kapi_store_expirer *x, kapi_str key, int64_t rev)
{
    int64_t deadline = now_ms() + x->ttl_ms;
    latest *l = kapi_map_get(x->latest, &key);
    if (!l) {
        l = kapi_xcalloc(1, sizeof(*l));
        l->key = key_dup(key);
        kapi_map_put(x->latest, &l->key, l);
    }
    l->rev = rev;
    l->deadline_ms = deadline;
    heap_push(x, key, rev, deadline);
    compact(x);
}

static entry pop(kapi_store_expirer *x)
{
    entry top = x->heap[0];
    x->heap[0] = x->heap[--x->n];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < x->n && x->heap[l].deadline_ms < x->heap[m].deadline_ms)
            m = l;
        if (r < x->n && x->heap[r].deadline_ms < x->heap[m].deadline_ms)
            m = r;
        if (m == i)
            break;
        swap(&x->heap[i], &x->heap[m]);
        i = m;
    }
    return top;
}

/* ---- the watch and the reaper ---- */

/* The watch's callback (on the store's thread): a write starts its key's time again, a
 * delete ends it; after lost changes, the reaper lists the keys again. The reaper is woken
 * only when it has to act sooner than it sleeps for: a write whose deadline comes first (with
 * one ttl, only the first into an empty heap) or lost changes; a wake-up per write would cost
 * the store's thread a context switch per Event. */
static bool written(void *ctx, const kapi_store_event *ev)
{
    kapi_store_expirer *x = ctx;
    if (ev->type == KAPI_STORE_EVENT_PROGRESS)
        return true;
    pthread_mutex_lock(&x->mu);
    bool wake = false;
    if (ev->type == KAPI_STORE_EVENT_PUT) {
        int64_t first = x->n ? x->heap[0].deadline_ms : INT64_MAX;
        push(x, kapi_obj_key(ev->obj), ev->obj->rev);
        wake = x->n && x->heap[0].deadline_ms < first;
    } else if (ev->type == KAPI_STORE_EVENT_DELETE) {
        kapi_map_remove(x->latest, &(kapi_str){ev->obj->key, ev->obj->key_len});
    } else {
        x->lost = wake = true;
    }
    if (wake)
        pthread_cond_signal(&x->cond);
    pthread_mutex_unlock(&x->mu);
    return true;
}

/* Every key under the prefix, with the whole ttl from now; the list's revision, or 0. */
static int64_t list_all(kapi_store_expirer *x)
{
    kapi_store_list_opts lo = {.prefix = x->prefix};
    kapi_store_list_result l = {0};
    int64_t rev = 0;
    if (kapi_store_list(x->st, &lo, &l) == KAPI_STORE_OK) {
        pthread_mutex_lock(&x->mu);
        for (size_t i = 0; i < l.n; i++)
            push(x, kapi_obj_key(l.items[i]), l.items[i]->rev);
        pthread_mutex_unlock(&x->mu);
        rev = l.rev;
    }
    kapi_store_list_dispose(&l);
    return rev;
}

/* True when e is its key's latest write. */
static bool current(kapi_store_expirer *x, const entry *e)
{
    const latest *l = kapi_map_get(x->latest, &e->key);
    return l && l->rev == e->rev;
}

/* Deletes e's key if it still holds e's revision; whether it did. */
static bool expire(kapi_store_expirer *x, const entry *e)
{
    kapi_obj *cur = NULL;
    if (kapi_store_get(x->st, e->key, &cur) != KAPI_STORE_OK)
        return false;
    bool same = cur->rev == e->rev;
    kapi_obj_unref(cur);
    if (!same)
        return false;
    kapi_store_write w = {.op = KAPI_STORE_DELETE, .key = e->key, .expect_rev = e->rev};
    bool done = kapi_store_commit(x->st, &w) == KAPI_STORE_OK;
    kapi_obj_unref(w.result);
    kapi_obj_unref(w.current);
    return done;
}

static void *reaper(void *arg)
{
    kapi_store_expirer *x = arg;
    pthread_mutex_lock(&x->mu);
    while (!x->stopping) {
        if (x->lost) {
            x->lost = false;
            pthread_mutex_unlock(&x->mu);
            list_all(x);
            pthread_mutex_lock(&x->mu);
            continue;
        }
        if (x->n == 0) {
            pthread_cond_wait(&x->cond, &x->mu);
            continue;
        }
        int64_t wait = x->heap[0].deadline_ms - now_ms();
        if (wait > 0) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            int64_t ns = ts.tv_nsec + (wait % 1000) * 1000000;
            ts.tv_sec += (time_t)(wait / 1000 + ns / 1000000000);
            ts.tv_nsec = (long)(ns % 1000000000);
            pthread_cond_timedwait(&x->cond, &x->mu, &ts);
            continue;
        }
        entry e = pop(x);
        if (!current(x, &e)) {
            free((char *)e.key.ptr);
            continue;
        }
        pthread_mutex_unlock(&x->mu);
        bool done = expire(x, &e);
        pthread_mutex_lock(&x->mu);
        if (done && current(x, &e))
            kapi_map_remove(x->latest, &e.key);
        free((char *)e.key.ptr);
        x->expired += done;
    }
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

kapi_store_expirer *kapi_store_expire_start(kapi_store *st, kapi_str prefix, int64_t ttl_ms)
{
    kapi_store_expirer *x = kapi_xcalloc(1, sizeof(*x));
    x->st = st;
    x->ttl_ms = ttl_ms;
    pthread_mutex_init(&x->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&x->cond, &ca);
    pthread_condattr_destroy(&ca);
    x->prefix = key_dup(prefix);
    x->latest = kapi_map_new(&latest_map);
    int64_t from = list_all(x), oldest;
    if (kapi_store_watch_start(st, prefix, from, written, x, &x->watch, &oldest) != KAPI_STORE_OK)
        KAPI_LOG_WARNING("expiry of %.*s: no watch; only what exists now expires", (int)prefix.len,
                         prefix.ptr);
    pthread_create(&x->thread, NULL, reaper, x);
    pthread_setname_np(x->thread, "kapi-expire");
    return x;
}

size_t kapi_store_expire_pending(kapi_store_expirer *x)
{
    pthread_mutex_lock(&x->mu);
    size_t n = x->n;
    pthread_mutex_unlock(&x->mu);
    return n;
}

size_t kapi_store_expired(kapi_store_expirer *x)
{
    pthread_mutex_lock(&x->mu);
    size_t n = x->expired;
    pthread_mutex_unlock(&x->mu);
    return n;
}

void kapi_store_expire_stop(kapi_store_expirer *x)
{
    if (!x)
        return;
    if (x->watch)
        kapi_store_watch_stop(x->st, x->watch);
    pthread_mutex_lock(&x->mu);
    x->stopping = true;
    pthread_cond_signal(&x->cond);
    pthread_mutex_unlock(&x->mu);
    pthread_join(x->thread, NULL);
    heap_clear(x);
    free(x->heap);
    kapi_map_free(x->latest);
    free((char *)x->prefix.ptr);
    pthread_cond_destroy(&x->cond);
    pthread_mutex_destroy(&x->mu);
    free(x);
}
