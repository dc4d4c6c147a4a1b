/*
 * store: the generic part of the MVCC store — revisions, group commit, the history window —
 * over a backend (store_int.h). See store.h for the contract.
 *
 * Group commit: kapi_store_commit queues its write and sleeps. One committer thread takes
 * everything queued as a batch, checks each write in order against the latest state (the
 * index, overlaid with the batch's earlier writes), gives the writes that pass consecutive
 * revisions, appends them to the backend in one transaction and only then applies them to
 * the index, tells the observer and wakes the writers. One fsync serves the whole batch.
 *
 * Locks: `lock` (rwlock) guards the index and `rev` together; readers hold it briefly to
 * take references. Only the committer changes the index, so it reads it without the lock.
 * `qlock` guards the queue and the writers' wake-ups; `backend_lock` serialises the
 * backend's write side (appends and compactions).
 *
 * History window: the committer notes (time, revision) marks; once a mark is older than
 * the window, the history up to its revision is compacted. A mark at a new revision is
 * also saved in the backend with its wall-clock time, and at open the saved marks come
 * back aged by the time that has passed: history that left the window while kapi was
 * down is compacted before it is loaded, and the rest leaves the window when it would
 * have, however often kapi restarts.
 */
#include "store/store_int.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_HISTORY_SECONDS 300
#define MAX_BATCH 1024
#define MAX_MARKS 64
#define IDLE_TICK_NS 1000000000LL
#define MIN_MARK_INTERVAL_NS 100000000LL
/* Compaction goes in steps of at most this many revisions, so that it never holds the
 * backend (and the writers) for long. */
#define COMPACT_STEP 20000

/* A queued write, on the writer's stack until the committer is done with it. */
typedef struct pending {
    kapi_store_write *w;
    struct pending *next;
    pthread_cond_t cond;
    bool done;
    kapi_store_rc rc;
    kapi_obj *prev; /* the state before (a reference), NULL when absent */
    kapi_obj *obj;  /* the new state (a reference); for DELETE the stamped last state */
} pending;

/* At time `ns` (monotonic) the store was at revision `rev`. */
typedef struct mark {
    int64_t ns;
    int64_t rev;
} mark;

struct kapi_store {
    const kapi_store_backend_ops *ops;
    void *backend;
    kapi_store_observer observer;
    void *observer_ctx;
    int64_t history_ns;

    pthread_rwlock_t lock;
    kapi_store__index index;
    _Atomic int64_t rev;
    _Atomic int64_t compacted;
    atomic_bool failing; /* the backend refused the last batch it was given */

    pthread_mutex_t backend_lock;

    kapi_store__hub hub;
    pthread_mutex_t rev_lock; /* with rev_cond: waiting for a revision */
    pthread_cond_t rev_cond;

    pthread_mutex_t qlock;
    pthread_cond_t qcond;
    pending *qhead, **qtail;
    bool closing;
    pthread_t committer;

    /* The committer's own. */
    mark marks[MAX_MARKS];
    size_t mark_head, nmarks;
    int64_t saved_mark_rev; /* the revision of the last mark saved in the backend */
    int64_t mark_interval_ns;
    int64_t compact_target; /* what has left the window: compacted step by step */
    pending **batch;
    kapi_store_row *rows;

    _Atomic int64_t nwrites;
    _Atomic int64_t ntransactions;
};

/* ---- checking a batch ---- */

static kapi_store_rc check_rc(pending *p, const kapi_obj *cur)
{
    kapi_store_write *w = p->w;
    if (w->op == KAPI_STORE_CREATE)
        return cur ? KAPI_STORE_EXISTS : KAPI_STORE_OK;
    if (!cur)
        return KAPI_STORE_NOT_FOUND;
    if (w->expect_rev != 0 && w->expect_rev != cur->rev)
        return KAPI_STORE_CONFLICT;
    return KAPI_STORE_OK;
}

/* The state of key as the i-th write of the batch sees it: the batch's last earlier write
 * to that key, else the index. Borrowed. */
static kapi_obj *batch_lookup(kapi_store *st, size_t i, kapi_str key)
{
    while (i-- > 0) {
        pending *q = st->batch[i];
        if (q->rc == KAPI_STORE_OK && kapi_str_eq(q->w->key, key))
            return q->w->op == KAPI_STORE_DELETE ? NULL : q->obj;
    }
    return kapi_store__index_get(&st->index, key);
}

static kapi_obj *stamp(const kapi_store_write *w, const kapi_obj *cur, int64_t rev)
{
    if (w->op == KAPI_STORE_DELETE) {
        kapi_str head = {cur->data, cur->rv_off};
        size_t tail_off = (size_t)cur->rv_off + cur->rv_len;
        kapi_str tail = {cur->data + tail_off, cur->len - tail_off};
        return kapi_store__obj_new(w->key, rev, cur->create_rev, head, tail);
    }
    assert(w->rv_off <= w->value.len);
    const char *v = w->value.ptr ? w->value.ptr : "";
    kapi_str head = {v, w->rv_off};
    kapi_str tail = {v + w->rv_off, w->value.len - w->rv_off};
    int64_t create_rev = w->op == KAPI_STORE_CREATE ? rev : cur->create_rev;
    return kapi_store__obj_new(w->key, rev, create_rev, head, tail);
}

/* Checks the i-th write; when it passes, gives it revision *next and its row. */
static bool check_write(kapi_store *st, size_t i, int64_t *next, kapi_store_row *row)
{
    pending *p = st->batch[i];
    kapi_store_write *w = p->w;
    kapi_obj *cur = batch_lookup(st, i, w->key);
    p->rc = check_rc(p, cur);
    if (p->rc == KAPI_STORE_CONFLICT)
        w->current = kapi_obj_ref(cur);
    if (p->rc != KAPI_STORE_OK)
        return false;
    p->prev = cur ? kapi_obj_ref(cur) : NULL;
    p->obj = stamp(w, cur, (*next)++);
    *row = (kapi_store_row){
        .rev = p->obj->rev,
        .create_rev = p->obj->create_rev,
        .op = w->op,
        .key = w->key,
        .value = {p->obj->data, p->obj->len},
        .rv_off = p->obj->rv_off,
    };
    return true;
}

/* ---- applying a batch ---- */

static void apply_batch(kapi_store *st, size_t n, int64_t last)
{
    pthread_rwlock_wrlock(&st->lock);
    for (size_t i = 0; i < n; i++) {
        pending *p = st->batch[i];
        if (p->rc != KAPI_STORE_OK)
            continue;
        if (p->w->op == KAPI_STORE_DELETE)
            kapi_store__index_remove(&st->index, p->w->key);
        else
            kapi_store__index_put(&st->index, kapi_obj_ref(p->obj));
    }
    atomic_store(&st->rev, last);
    pthread_rwlock_unlock(&st->lock);
}

static void notify(kapi_store *st, size_t n)
{
    pthread_mutex_lock(&st->rev_lock);
    pthread_cond_broadcast(&st->rev_cond);
    pthread_mutex_unlock(&st->rev_lock);
    for (size_t i = 0; i < n; i++) {
        pending *p = st->batch[i];
        if (p->rc != KAPI_STORE_OK)
            continue;
        kapi_store_event ev = {
            .type = p->w->op == KAPI_STORE_DELETE ? KAPI_STORE_EVENT_DELETE : KAPI_STORE_EVENT_PUT,
            .rev = p->obj->rev,
            .obj = p->obj,
            .prev = p->prev,
        };
        kapi_store__hub_publish(&st->hub, &ev);
        if (st->observer)
            st->observer(st->observer_ctx, &ev);
    }
}

/* The backend failed: nothing of the batch happened. */
static void fail_batch(kapi_store *st, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        pending *p = st->batch[i];
        p->rc = KAPI_STORE_IO;
        kapi_obj_unref(p->obj);
        kapi_obj_unref(p->w->current);
        p->obj = p->w->current = NULL;
    }
}

/* Hands the results over and wakes the writers; a pending is not touched after. */
static void deliver(kapi_store *st, size_t n)
{
    pthread_mutex_lock(&st->qlock);
    for (size_t i = 0; i < n; i++) {
        pending *p = st->batch[i];
        p->w->result = p->obj;
        kapi_obj_unref(p->prev);
        p->done = true;
        pthread_cond_signal(&p->cond);
    }
    pthread_mutex_unlock(&st->qlock);
}

static void run_batch(kapi_store *st, size_t n)
{
    int64_t next = atomic_load(&st->rev) + 1;
    size_t nrows = 0;
    for (size_t i = 0; i < n; i++) {
        if (check_write(st, i, &next, &st->rows[nrows]))
            nrows++;
    }
    if (nrows) {
        pthread_mutex_lock(&st->backend_lock);
        int rc = st->ops->append(st->backend, st->rows, nrows);
        pthread_mutex_unlock(&st->backend_lock);
        atomic_fetch_add(&st->ntransactions, 1);
        atomic_store(&st->failing, rc != 0);
        if (rc != 0) {
            fail_batch(st, n);
        } else {
            apply_batch(st, n, next - 1);
            notify(st, n);
            atomic_fetch_add(&st->nwrites, (int64_t)nrows);
        }
    }
    deliver(st, n);
}

/* ---- the history window ---- */

static void compact_to(kapi_store *st, int64_t rev)
{
    pthread_mutex_lock(&st->backend_lock);
    if (rev > atomic_load(&st->compacted) && st->ops->compact(st->backend, rev) == 0)
        atomic_store(&st->compacted, rev);
    pthread_mutex_unlock(&st->backend_lock);
}

static bool push_mark(kapi_store *st, int64_t now, int64_t rev)
{
    if (st->nmarks == MAX_MARKS)
        return false;
    if (st->nmarks) {
        const mark *last = &st->marks[(st->mark_head + st->nmarks - 1) % MAX_MARKS];
        if (now - last->ns < st->mark_interval_ns)
            return false;
    }
    st->marks[(st->mark_head + st->nmarks) % MAX_MARKS] = (mark){now, rev};
    st->nmarks++;
    return true;
}

/* Saves a mark at revision rev, now, unless one is saved at rev already (a later mark at
 * the same revision would never move the compaction). */
static void save_mark(kapi_store *st, int64_t rev)
{
    if (rev == st->saved_mark_rev)
        return;
    pthread_mutex_lock(&st->backend_lock);
    if (st->ops->save_mark(st->backend, rev, kapi_time_now_ns()) == 0)
        st->saved_mark_rev = rev;
    pthread_mutex_unlock(&st->backend_lock);
}

/* Notes a mark at the current revision, and saves it. */
static void add_mark(kapi_store *st, int64_t now)
{
    int64_t rev = atomic_load(&st->rev);
    if (push_mark(st, now, rev))
        save_mark(st, rev);
}

typedef struct recovered_marks {
    kapi_store *st;
    int64_t mono_now, unix_now;
    int64_t expired; /* the newest revision whose mark has left the window */
} recovered_marks;

static void recover_mark(void *ctx, int64_t rev, int64_t unix_ns)
{
    recovered_marks *m = ctx;
    int64_t age = m->unix_now > unix_ns ? m->unix_now - unix_ns : 0;
    m->st->saved_mark_rev = rev;
    if (age >= m->st->history_ns)
        m->expired = rev;
    else
        push_mark(m->st, m->mono_now - age, rev);
}

/* Brings back the saved marks and compacts what has left the window since they were
 * saved, before the history is loaded into memory. */
static kapi_error *recover_marks(kapi_store *st, int64_t *compacted)
{
    recovered_marks m = {st, kapi_time_mono_ns(), kapi_time_now_ns(), 0};
    if (st->ops->load_marks(st->backend, recover_mark, &m) != 0)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "store: cannot read the history marks");
    if (m.expired > *compacted) {
        if (st->ops->compact(st->backend, m.expired) != 0)
            return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                                  "store: cannot compact the history to revision %lld",
                                  (long long)m.expired);
        *compacted = m.expired;
    }
    st->compact_target = *compacted;
    return NULL;
}

/* Notes the time and compacts (one step) what has left the window. */
static void maintain(kapi_store *st)
{
    int64_t now = kapi_time_mono_ns();
    add_mark(st, now);
    while (st->nmarks && st->marks[st->mark_head].ns <= now - st->history_ns) {
        st->compact_target = st->marks[st->mark_head].rev;
        st->mark_head = (st->mark_head + 1) % MAX_MARKS;
        st->nmarks--;
    }
    kapi_store__hub_trim(&st->hub, st->compact_target);
    int64_t done = atomic_load(&st->compacted);
    if (st->compact_target > done) {
        int64_t step = st->compact_target - done;
        compact_to(st, done + (step < COMPACT_STEP ? step : COMPACT_STEP));
    }
}

/* ---- the committer ---- */

/* Takes up to MAX_BATCH queued writes into st->batch; waits a tick when there are none.
 * Returns how many, and sets *closing once the store is closing. */
static size_t take_batch(kapi_store *st, bool *closing)
{
    size_t n = 0;
    pthread_mutex_lock(&st->qlock);
    if (!st->qhead && !st->closing) {
        int64_t tick = st->mark_interval_ns < IDLE_TICK_NS ? st->mark_interval_ns : IDLE_TICK_NS;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + tick;
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
        pthread_cond_timedwait(&st->qcond, &st->qlock, &ts);
    }
    while (st->qhead && n < MAX_BATCH) {
        st->batch[n++] = st->qhead;
        st->qhead = st->qhead->next;
    }
    if (!st->qhead)
        st->qtail = &st->qhead;
    *closing = st->closing;
    pthread_mutex_unlock(&st->qlock);
    return n;
}

static void *committer_main(void *arg)
{
    kapi_store *st = arg;
    for (;;) {
        bool closing;
        size_t n = take_batch(st, &closing);
        if (n)
            run_batch(st, n);
        else if (closing)
            break;
        maintain(st);
    }
    /* The last writes' time, for the window after the next start. */
    save_mark(st, atomic_load(&st->rev));
    return NULL;
}

/* ---- opening and closing ---- */

static int load_row(void *ctx, const kapi_store_row *row)
{
    kapi_store *st = ctx;
    kapi_store__index_put(&st->index, kapi_store__obj_load(row));
    return 0;
}

/* ---- recovering the history ----
 *
 * The log holds every change after the compacted revision; at open they go back into the
 * watch hub, in revision order, each with its previous state, as the committer would have
 * published them. A change whose bytes are the key's latest state shares the object the
 * index has loaded (a restart with a full window costs references, not copies); other
 * bytes are read by revision. `last` maps each key changed again later in the window to its
 * state as the replay goes, so that a change's previous state is the replay's own object
 * (a key's latest state is never anyone's previous state, so it stays out of the map);
 * only the first change of a key in the window reads its previous state (from before the
 * window) from the log. */

typedef struct replay {
    kapi_store *st;
    kapi_store__index last; /* key -> its state at the change being replayed */
    kapi_obj *found;        /* what read_rev / read_before handed over */
} replay;

static int take_row(void *ctx, const kapi_store_row *row)
{
    replay *r = ctx;
    r->found = kapi_store__obj_load(row);
    return 0;
}

/* The object a change made: the index's when it is the key's latest state (*latest). */
static kapi_obj *change_obj(replay *r, const kapi_store_row *row, bool *latest)
{
    kapi_obj *cur = kapi_store__index_get(&r->st->index, row->key);
    *latest = cur && cur->rev == row->rev;
    if (*latest)
        return kapi_obj_ref(cur);
    r->found = NULL;
    r->st->ops->read_rev(r->st->backend, row->rev, take_row, r);
    return r->found;
}

/* The state before a change: NULL for a create. */
static kapi_obj *change_prev(replay *r, const kapi_store_row *row)
{
    if (row->op == KAPI_STORE_CREATE)
        return NULL;
    kapi_obj *p = kapi_store__index_get(&r->last, row->key);
    if (p)
        return kapi_obj_ref(p);
    r->found = NULL;
    r->st->ops->read_before(r->st->backend, row->key, row->rev, take_row, r);
    return r->found;
}

static int replay_row(void *ctx, const kapi_store_row *row)
{
    replay *r = ctx;
    bool latest;
    kapi_obj *obj = change_obj(r, row, &latest), *prev = change_prev(r, row);
    if (!obj || (row->op != KAPI_STORE_CREATE && !prev)) {
        kapi_obj_unref(obj);
        kapi_obj_unref(prev);
        return -1;
    }
    kapi_store_event ev = {
        .type = row->op == KAPI_STORE_DELETE ? KAPI_STORE_EVENT_DELETE : KAPI_STORE_EVENT_PUT,
        .rev = row->rev,
        .obj = obj,
        .prev = prev,
    };
    kapi_store__hub_publish(&r->st->hub, &ev);
    if (row->op == KAPI_STORE_DELETE || latest)
        kapi_store__index_remove(&r->last, row->key);
    else
        kapi_store__index_put(&r->last, kapi_obj_ref(obj));
    kapi_obj_unref(obj);
    kapi_obj_unref(prev);
    return 0;
}

/* Puts the changes after the compacted revision back into the hub. */
static kapi_error *load_history(kapi_store *st, int64_t compacted, int64_t last)
{
    replay r = {.st = st};
    kapi_store__index_init(&r.last);
    st->hub.floor = st->hub.published = compacted;
    int rc = st->ops->load_changes(st->backend, compacted, replay_row, &r);
    kapi_store__index_dispose(&r.last);
    if (rc != 0)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                              "store: cannot recover the history after revision %lld",
                              (long long)compacted);
    st->hub.published = last;
    return NULL;
}

static void store_free_parts(kapi_store *st)
{
    kapi_store__index_dispose(&st->index);
    kapi_store__hub_dispose(&st->hub);
    pthread_mutex_destroy(&st->rev_lock);
    pthread_cond_destroy(&st->rev_cond);
    if (st->backend)
        st->ops->close(st->backend);
    pthread_rwlock_destroy(&st->lock);
    pthread_mutex_destroy(&st->backend_lock);
    pthread_mutex_destroy(&st->qlock);
    pthread_cond_destroy(&st->qcond);
    free(st->batch);
    free(st->rows);
    free(st);
}

static kapi_store *store_alloc(const kapi_store_options *opts, const kapi_store_backend_ops *ops)
{
    kapi_store *st = kapi_xcalloc(1, sizeof(*st));
    int64_t seconds = opts->history_seconds > 0 ? opts->history_seconds : DEFAULT_HISTORY_SECONDS;
    st->ops = ops;
    st->observer = opts->observer;
    st->observer_ctx = opts->observer_ctx;
    st->history_ns = seconds * 1000000000LL;
    st->mark_interval_ns = st->history_ns / 32;
    if (st->mark_interval_ns < MIN_MARK_INTERVAL_NS)
        st->mark_interval_ns = MIN_MARK_INTERVAL_NS;
    pthread_rwlock_init(&st->lock, NULL);
    pthread_mutex_init(&st->backend_lock, NULL);
    pthread_mutex_init(&st->qlock, NULL);
    pthread_cond_init(&st->qcond, NULL);
    pthread_mutex_init(&st->rev_lock, NULL);
    pthread_cond_init(&st->rev_cond, NULL);
    kapi_store__hub_init(&st->hub, 0);
    st->qtail = &st->qhead;
    kapi_store__index_init(&st->index);
    st->batch = kapi_xmalloc(MAX_BATCH * sizeof(*st->batch));
    st->rows = kapi_xmalloc(MAX_BATCH * sizeof(*st->rows));
    return st;
}

kapi_error *kapi_store__open_with(kapi_store **out, const kapi_store_options *opts,
                                  const kapi_store_backend_ops *ops)
{
    kapi_error *err = NULL;
    kapi_store *st = store_alloc(opts, ops);
    int64_t last = 0, compacted = 0;
    if ((err = ops->open(&st->backend, opts)) != NULL)
        goto done;
    if ((err = ops->load(st->backend, load_row, st, &last, &compacted)) != NULL)
        goto done;
    atomic_store(&st->rev, last);
    if ((err = recover_marks(st, &compacted)) != NULL)
        goto done;
    atomic_store(&st->compacted, compacted);
    if ((err = load_history(st, compacted, last)) != NULL)
        goto done;
    add_mark(st, kapi_time_mono_ns());
    if (pthread_create(&st->committer, NULL, committer_main, st) != 0)
        err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "store: cannot start the committer");
done:
    if (err) {
        store_free_parts(st);
        st = NULL;
    }
    *out = st;
    return err;
}

kapi_error *kapi_store_open(kapi_store **out, const kapi_store_options *opts)
{
    if (!opts->path || !*opts->path) {
        *out = NULL;
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "store: no path given");
    }
    return kapi_store__open_with(out, opts, &kapi_store__sqlite_ops);
}

void kapi_store_free(kapi_store *st)
{
    if (!st)
        return;
    pthread_mutex_lock(&st->qlock);
    st->closing = true;
    pthread_cond_signal(&st->qcond);
    pthread_mutex_unlock(&st->qlock);
    pthread_join(st->committer, NULL);
    store_free_parts(st);
}

/* ---- writes ---- */

kapi_store_rc kapi_store_commit(kapi_store *st, kapi_store_write *w)
{
    pending p = {.w = w, .rc = KAPI_STORE_IO};
    w->result = w->current = NULL;
    pthread_cond_init(&p.cond, NULL);
    pthread_mutex_lock(&st->qlock);
    if (st->closing) {
        p.done = true;
    } else {
        *st->qtail = &p;
        st->qtail = &p.next;
        pthread_cond_signal(&st->qcond);
    }
    while (!p.done)
        pthread_cond_wait(&p.cond, &st->qlock);
    pthread_mutex_unlock(&st->qlock);
    pthread_cond_destroy(&p.cond);
    return p.rc;
}

/* ---- reads ---- */

int64_t kapi_store_revision(kapi_store *st)
{
    return atomic_load(&st->rev);
}

bool kapi_store_healthy(kapi_store *st)
{
    return !atomic_load(&st->failing);
}

kapi_store_rc kapi_store_get(kapi_store *st, kapi_str key, kapi_obj **out)
{
    pthread_rwlock_rdlock(&st->lock);
    kapi_obj *o = kapi_store__index_get(&st->index, key);
    *out = o ? kapi_obj_ref(o) : NULL;
    pthread_rwlock_unlock(&st->lock);
    return o ? KAPI_STORE_OK : KAPI_STORE_NOT_FOUND;
}

bool kapi_store_wait_revision(kapi_store *st, int64_t rev, int64_t timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ns = ts.tv_nsec + timeout_ms * 1000000LL;
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    pthread_mutex_lock(&st->rev_lock);
    int rc = 0;
    while (kapi_store_revision(st) < rev && rc == 0)
        rc = pthread_cond_timedwait(&st->rev_cond, &st->rev_lock, &ts);
    pthread_mutex_unlock(&st->rev_lock);
    return kapi_store_revision(st) >= rev;
}

kapi_store_rc kapi_store_watch_start(kapi_store *st, kapi_str prefix, int64_t from,
                                     kapi_store_watch_fn fn, void *ctx, kapi_store_watch **out,
                                     int64_t *oldest)
{
    return kapi_store__hub_watch(&st->hub, prefix, from, fn, ctx, out, oldest);
}

void kapi_store_watch_progress(kapi_store *st, kapi_store_watch *w)
{
    kapi_store__hub_progress(&st->hub, w);
}

void kapi_store_watch_stop(kapi_store *st, kapi_store_watch *w)
{
    kapi_store__hub_unwatch(&st->hub, w);
}

/* Collects a history read into a list. */
typedef struct history {
    kapi_store_list_result *out;
    size_t cap;
} history;

static int history_row(void *ctx, const kapi_store_row *row)
{
    history *h = ctx;
    kapi_store_list_result *l = h->out;
    if (l->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 64;
        l->items = kapi_xrealloc(l->items, h->cap * sizeof(*l->items));
    }
    l->items[l->n++] = kapi_store__obj_load(row);
    return 0;
}

static kapi_store_rc list_history(kapi_store *st, const kapi_store_list_opts *opts,
                                  kapi_store_list_result *out)
{
    if (opts->rev > kapi_store_revision(st))
        return KAPI_STORE_TOO_NEW;
    if (opts->rev < atomic_load(&st->compacted))
        return KAPI_STORE_GONE;
    history h = {.out = out};
    kapi_store_rc rc = st->ops->read_history(st->backend, opts, history_row, &h, &out->remaining);
    if (rc != KAPI_STORE_OK) {
        kapi_store_list_dispose(out);
        return rc;
    }
    out->rev = opts->rev;
    return KAPI_STORE_OK;
}

kapi_store_rc kapi_store_list(kapi_store *st, const kapi_store_list_opts *opts,
                              kapi_store_list_result *out)
{
    memset(out, 0, sizeof(*out));
    pthread_rwlock_rdlock(&st->lock);
    int64_t rev = atomic_load(&st->rev);
    bool latest = opts->rev == 0 || opts->rev == rev;
    if (latest) {
        kapi_store__index_list(&st->index, opts->prefix, opts->start_after, opts->limit, out);
        out->rev = rev;
    }
    pthread_rwlock_unlock(&st->lock);
    return latest ? KAPI_STORE_OK : list_history(st, opts, out);
}

void kapi_store_list_dispose(kapi_store_list_result *l)
{
    for (size_t i = 0; i < l->n; i++)
        kapi_obj_unref(l->items[i]);
    free(l->items);
    memset(l, 0, sizeof(*l));
}

/* ---- internals ---- */

void kapi_store__stats(kapi_store *st, kapi_store_stats *out)
{
    out->writes = atomic_load(&st->nwrites);
    out->transactions = atomic_load(&st->ntransactions);
    out->compacted = atomic_load(&st->compacted);
}

int kapi_store__compact(kapi_store *st, int64_t rev)
{
    int64_t cur = kapi_store_revision(st);
    if (rev > cur)
        rev = cur;
    compact_to(st, rev);
    return atomic_load(&st->compacted) >= rev ? 0 : -1;
}
