/*
 * store: the cache over a backend (store_int.h) — the index of the latest state, the watch
 * hub, group commit, the history window. See store.h for the contract.
 *
 * The cache decides nothing about a write. It is fed by the backend's follow stream: at
 * open, load gives a state and its revision and follow replays every change after it (the
 * history window goes back into the hub); afterwards follow hands over each commit's
 * changes. apply_rows applies them in revision order, each once (a row at or below the
 * cache's revision is skipped), to the index and the revision under the write lock, then
 * publishes them to the watch hub and the observer.
 *
 * Group commit: kapi_store_commit queues its write and sleeps. One committer thread takes
 * everything queued as a batch and hands it to the backend's commit, which decides each
 * write, gives those that pass their revisions, makes them durable in one transaction (one
 * fsync for the batch) and, before it returns, hands their rows to the follower; then the
 * committer gives each writer the backend's outcome and wakes it.
 *
 * Locks: `lock` (rwlock) guards the index and `rev` together; readers hold it briefly to
 * take references. Only the follower changes the index (the opening thread while load and
 * follow catch up, then the committer), so it reads it without the lock. `qlock` guards
 * the queue and the writers' wake-ups; `backend_lock` serialises the backend's write side
 * (commits, compactions, marks).
 *
 * History window: the committer notes (time, revision) marks; once a mark is older than
 * the window, the history up to its revision is compacted. A mark at a new revision is
 * also saved in the backend with its wall-clock time, and at open the saved marks come
 * back aged by the time that has passed: history that left the window while kapi was
 * down is compacted before it is loaded, and the rest leaves the window when it would
 * have, however often kapi restarts.
 */
#include "base/fiber.h"
#include "metrics/metrics.h"
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
#define SYNC_SPACING_NS 500000LL

/* A queued write, on the writer's stack until the committer is done with it: the
 * committer fills in the outcome, then posts done, after which it does not touch it. */
typedef struct pending {
    kapi_store_write *w;
    struct pending *next;
    kapi_park done; /* a worker's fiber gives its thread back while it waits */
    kapi_store_rc rc;
} pending;

/* A reader waiting for a probe: the probe's answer (-1: failed) in rev, or lead set: it
 * probes for those queued after it. */
typedef struct sync_waiter {
    kapi_park park;
    int64_t rev;
    bool lead;
    struct sync_waiter *next;
} sync_waiter;

/* A change applied to the index, to be published: references the follower owns. */
typedef struct applied {
    kapi_store_event_type type;
    kapi_obj *obj, *prev;
} applied;

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
    _Atomic int64_t rev; /* the last revision applied from the backend's follow stream */
    _Atomic int64_t compacted;
    atomic_bool failing; /* the backend's last commit failed */

    pthread_mutex_t backend_lock;

    kapi_store__hub hub;
    pthread_mutex_t rev_lock; /* with rev_cond: waiting for a revision */
    pthread_cond_t rev_cond;

    /* Consistent reads (sync, probe_revision): one probe of the backend's revision at a
     * time, and the readers that arrived while it ran, for the next. */
    pthread_mutex_t sync_lock;
    bool sync_probing;
    int64_t sync_last_ns; /* when the last probe started */
    bool sync_crowded;    /* it answered readers that had queued, not only its own */
    struct sync_waiter *sync_head, **sync_tail;

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
    kapi_store_txn_write *txn;

    /* The follower's own: the changes of one follow call, and the revision of the last
     * change applied (rev may be past it: a backend's progress moves rev alone). */
    applied *applied;
    size_t applied_cap;
    int64_t row_rev;

    _Atomic int64_t nwrites;
    _Atomic int64_t ntransactions;
};

/* ---- following the backend ---- */

/* Applies one change to the index; lock held. A DELETE row without a value (etcd's
 * watch, which kapi does not ask for previous values) deletes the cached state, stamped
 * with the deletion's revision; a.obj is NULL when the key was not cached. */
static applied apply_row(kapi_store *st, const kapi_store_row *row)
{
    kapi_obj *prev = kapi_store__index_get(&st->index, row->key);
    bool bare = row->op == KAPI_STORE_DELETE && !row->obj && !row->value.len;
    applied a = {
        .type = row->op == KAPI_STORE_DELETE ? KAPI_STORE_EVENT_DELETE : KAPI_STORE_EVENT_PUT,
        .obj = !bare  ? kapi_store__obj_load(row)
               : prev ? kapi_obj_restamp(prev, row->rev)
                      : NULL,
        .prev = prev ? kapi_obj_ref(prev) : NULL,
    };
    if (!a.obj)
        return a;
    if (row->op == KAPI_STORE_DELETE)
        kapi_store__index_remove(&st->index, row->key);
    else
        kapi_store__index_put(&st->index, kapi_obj_ref(a.obj));
    return a;
}

/* Wakes the readers waiting for the store to reach a revision (kapi_store_wait_revision). */
static void wake_revision_waiters(kapi_store *st)
{
    pthread_mutex_lock(&st->rev_lock);
    pthread_cond_broadcast(&st->rev_cond);
    pthread_mutex_unlock(&st->rev_lock);
}

/* Wakes those waiting for a revision, then hands the applied changes to the watch hub and
 * the observer (when the store is open), in revision order, and drops the follower's
 * references. */
static void publish(kapi_store *st, size_t n, kapi_store_observer observer)
{
    wake_revision_waiters(st);
    for (size_t i = 0; i < n; i++) {
        applied *a = &st->applied[i];
        kapi_store_event ev = {.type = a->type, .rev = a->obj->rev, .obj = a->obj, .prev = a->prev};
        kapi_store__hub_publish(&st->hub, &ev);
        if (observer)
            observer(st->observer_ctx, &ev);
        kapi_obj_unref(a->obj);
        kapi_obj_unref(a->prev);
    }
}

/* The follower (kapi_store_follow_fn): rows in revision order; one already applied (at or
 * below the cache's revision) is skipped, so that each change is applied once. The
 * observer is read under the lock the open sets it under, since etcd's follower runs on
 * its own thread while the store opens. */
static void apply_rows(void *ctx, const kapi_store_row *rows, size_t n, int64_t upto)
{
    kapi_store *st = ctx;
    size_t k = 0;
    if (n > st->applied_cap) {
        st->applied_cap = n;
        st->applied = kapi_xrealloc(st->applied, n * sizeof(*st->applied));
    }
    pthread_rwlock_wrlock(&st->lock);
    int64_t rev = atomic_load(&st->rev);
    for (size_t i = 0; i < n; i++) {
        if (rows[i].rev <= st->row_rev)
            continue;
        st->applied[k] = apply_row(st, &rows[i]);
        k += st->applied[k].obj != NULL;
        st->row_rev = rows[i].rev;
    }
    if (st->row_rev > rev)
        rev = st->row_rev;
    if (upto > rev)
        rev = upto;
    atomic_store(&st->rev, rev);
    kapi_store_observer observer = st->observer;
    pthread_rwlock_unlock(&st->lock);
    publish(st, k, observer);
}

/* The reset (kapi_store_reset_fn): the backend's state at rev replaces the index whole;
 * the hub forgets its history and tells every watch. Readers see the old state or the
 * new one. */
static void reset_cache(void *ctx, const kapi_store_row *rows, size_t n, int64_t rev)
{
    kapi_store *st = ctx;
    kapi_store__index fresh, old;
    kapi_store__index_init(&fresh);
    for (size_t i = 0; i < n; i++)
        kapi_store__index_put(&fresh, kapi_store__obj_load(&rows[i]));
    pthread_rwlock_wrlock(&st->lock);
    old = st->index;
    st->index = fresh;
    st->row_rev = rev;
    if (rev > atomic_load(&st->rev))
        atomic_store(&st->rev, rev);
    pthread_rwlock_unlock(&st->lock);
    kapi_store__index_dispose(&old);
    wake_revision_waiters(st);
    kapi_store__hub_reset(&st->hub, rev);
}

/* ---- committing a batch ---- */

/* Hands the backend's outcomes over and wakes the writers, each by its own park
 * (no lock for them to contend on as they wake); a pending is not touched after. failed:
 * the backend's transaction failed, so every write did. */
static void deliver(kapi_store *st, size_t n, bool failed)
{
    int64_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        pending *p = st->batch[i];
        const kapi_store_txn_write *t = &st->txn[i];
        p->rc = failed ? KAPI_STORE_IO : t->rc;
        p->w->result = t->obj;
        p->w->current = t->current;
        ok += p->rc == KAPI_STORE_OK;
        kapi_park_post(&p->done);
    }
    atomic_fetch_add(&st->nwrites, ok);
}

/* The backend's latency, under kube's name for its etcd client's: operation is the
 * backend call (commit, compact, read_history, current_revision), type the backend. */
static kapi_metric backend_latency =
    KAPI_METRIC_HISTOGRAM_DEF("etcd_request_duration_seconds",
                              "Etcd request latency in seconds for each operation and object type.",
                              kapi_metrics_latency_buckets, "operation", "type", NULL);

static void observe(const kapi_store *st, const char *op, int64_t start_ns)
{
    kapi_metrics_observe(&backend_latency, (const char *[]){op, st->ops->name},
                         (double)(kapi_time_mono_ns() - start_ns) / 1e9);
}

static void run_batch(kapi_store *st, size_t n)
{
    for (size_t i = 0; i < n; i++)
        st->txn[i] = (kapi_store_txn_write){.w = st->batch[i]->w};
    pthread_mutex_lock(&st->backend_lock);
    int64_t t0 = kapi_time_mono_ns();
    int rc = st->ops->commit(st->backend, st->txn, n);
    observe(st, "commit", t0);
    pthread_mutex_unlock(&st->backend_lock);
    atomic_fetch_add(&st->ntransactions, 1);
    atomic_store(&st->failing, rc != 0);
    deliver(st, n, rc != 0);
}

/* ---- the history window ---- */

static void compact_to(kapi_store *st, int64_t rev)
{
    pthread_mutex_lock(&st->backend_lock);
    int64_t t0 = kapi_time_mono_ns();
    if (rev > atomic_load(&st->compacted) && st->ops->compact(st->backend, rev) == 0)
        atomic_store(&st->compacted, rev);
    observe(st, "compact", t0);
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
static kapi_error *recover_marks(kapi_store *st)
{
    recovered_marks m = {st, kapi_time_mono_ns(), kapi_time_now_ns(), 0};
    if (st->ops->load_marks(st->backend, recover_mark, &m) != 0)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "store: cannot read the history marks");
    if (m.expired > 0 && st->ops->compact(st->backend, m.expired) != 0)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                              "store: cannot compact the history to revision %lld",
                              (long long)m.expired);
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

/* Fills the cache: the backend's state at its base revision, then every change after it
 * through follow, which stays the cache's feed afterwards. The changes replayed go into the
 * watch hub with their previous states, as they did when they were committed, so that the
 * history window outlives a restart; the observer sees only the changes after the open. */
static kapi_error *fill_cache(kapi_store *st, const kapi_store_options *opts)
{
    int64_t base = 0, compacted = 0;
    kapi_error *err = st->ops->load(st->backend, load_row, st, &base, &compacted);
    if (err)
        return err;
    atomic_store(&st->rev, base);
    st->row_rev = base;
    atomic_store(&st->compacted, compacted);
    st->compact_target = compacted;
    st->hub.floor = st->hub.published = base;
    st->observer_ctx = opts->observer_ctx;
    if (st->ops->follow(st->backend, base, apply_rows, reset_cache, st) != 0)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                              "store: cannot recover the history after revision %lld",
                              (long long)base);
    pthread_rwlock_wrlock(&st->lock);
    st->observer = opts->observer;
    pthread_rwlock_unlock(&st->lock);
    return NULL;
}

static void store_free_parts(kapi_store *st)
{
    /* First the backend: etcd's follower runs on its own thread, into the index and
     * the hub, until the backend is closed. */
    if (st->backend)
        st->ops->close(st->backend);
    kapi_store__index_dispose(&st->index);
    kapi_store__hub_dispose(&st->hub);
    pthread_mutex_destroy(&st->rev_lock);
    pthread_cond_destroy(&st->rev_cond);
    pthread_rwlock_destroy(&st->lock);
    pthread_mutex_destroy(&st->backend_lock);
    pthread_mutex_destroy(&st->qlock);
    pthread_cond_destroy(&st->qcond);
    pthread_mutex_destroy(&st->sync_lock);
    free(st->batch);
    free(st->txn);
    free(st->applied);
    free(st);
}

static kapi_store *store_alloc(const kapi_store_options *opts, const kapi_store_backend_ops *ops)
{
    kapi_store *st = kapi_xcalloc(1, sizeof(*st));
    int64_t seconds = opts->history_seconds > 0 ? opts->history_seconds : DEFAULT_HISTORY_SECONDS;
    st->ops = ops;
    st->history_ns = seconds * 1000000000LL;
    st->mark_interval_ns = st->history_ns / 32;
    if (st->mark_interval_ns < MIN_MARK_INTERVAL_NS)
        st->mark_interval_ns = MIN_MARK_INTERVAL_NS;
    pthread_rwlock_init(&st->lock, NULL);
    pthread_mutex_init(&st->backend_lock, NULL);
    pthread_mutex_init(&st->qlock, NULL);
    pthread_cond_init(&st->qcond, NULL);
    pthread_mutex_init(&st->sync_lock, NULL);
    st->sync_tail = &st->sync_head;
    pthread_mutex_init(&st->rev_lock, NULL);
    pthread_cond_init(&st->rev_cond, NULL);
    kapi_store__hub_init(&st->hub, 0);
    st->qtail = &st->qhead;
    kapi_store__index_init(&st->index);
    st->batch = kapi_xmalloc(MAX_BATCH * sizeof(*st->batch));
    st->txn = kapi_xmalloc(MAX_BATCH * sizeof(*st->txn));
    return st;
}

kapi_error *kapi_store__open_with(kapi_store **out, const kapi_store_options *opts,
                                  const kapi_store_backend_ops *ops)
{
    kapi_error *err = NULL;
    kapi_store *st = store_alloc(opts, ops);
    if ((err = ops->open(&st->backend, opts)) != NULL)
        goto done;
    if ((err = recover_marks(st)) != NULL)
        goto done;
    if ((err = fill_cache(st, opts)) != NULL)
        goto done;
    add_mark(st, kapi_time_mono_ns());
    if (pthread_create(&st->committer, NULL, committer_main, st) != 0)
        err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "store: cannot start the committer");
    else
        pthread_setname_np(st->committer, "kapi-commit");
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
    if (!opts->etcd.servers && (!opts->path || !*opts->path)) {
        *out = NULL;
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "store: no path given");
    }
    return kapi_store__open_with(
        out, opts, opts->etcd.servers ? &kapi_store__etcd_ops : &kapi_store__sqlite_ops);
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

/* A concurrent backend's write: committed on the writer's own thread. */
static kapi_store_rc commit_now(kapi_store *st, kapi_store_write *w)
{
    kapi_store_txn_write t = {.w = w};
    int64_t t0 = kapi_time_mono_ns();
    int rc = st->ops->commit(st->backend, &t, 1);
    observe(st, "commit", t0);
    atomic_fetch_add(&st->ntransactions, 1);
    atomic_store(&st->failing, rc != 0 || t.rc == KAPI_STORE_IO);
    if (rc != 0)
        return KAPI_STORE_IO;
    w->result = t.obj;
    w->current = t.current;
    atomic_fetch_add(&st->nwrites, t.rc == KAPI_STORE_OK);
    return t.rc;
}

kapi_store_rc kapi_store_commit(kapi_store *st, kapi_store_write *w)
{
    pending p = {.w = w, .rc = KAPI_STORE_IO};
    w->result = w->current = NULL;
    if (st->ops->concurrent)
        return commit_now(st, w);
    pthread_mutex_lock(&st->qlock);
    if (st->closing) {
        pthread_mutex_unlock(&st->qlock);
        return p.rc;
    }
    kapi_park_init(&p.done);
    *st->qtail = &p;
    st->qtail = &p.next;
    pthread_cond_signal(&st->qcond);
    pthread_mutex_unlock(&st->qlock);
    kapi_park_wait(&p.done);
    kapi_park_dispose(&p.done);
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

/* The backend's revision from a probe started after the call, shared by every reader
 * waiting when it starts. One probe runs at a time; readers arriving meanwhile queue, and
 * when it ends the first of them is woken to probe for all of them (each reader is woken
 * once, by its own park: no herd on a shared condition). */
static int64_t probe_revision(kapi_store *st)
{
    sync_waiter me = {.rev = -1};
    sync_waiter *batch = NULL;
    pthread_mutex_lock(&st->sync_lock);
    if (st->sync_probing) {
        kapi_park_init(&me.park);
        *st->sync_tail = &me;
        st->sync_tail = &me.next;
        pthread_mutex_unlock(&st->sync_lock);
        kapi_park_wait(&me.park);
        kapi_park_dispose(&me.park);
        if (!me.lead)
            return me.rev;
        pthread_mutex_lock(&st->sync_lock);
    }
    /* This reader probes, for itself and for those queued now. While readers come in
     * together (the last probe answered some that had queued), not sooner than
     * SYNC_SPACING_NS after the last probe started, so that more of them share it: fewer
     * probes, each a linearizable read of etcd. A lone reader never waits. */
    st->sync_probing = true;
    int64_t wait = st->sync_crowded ? st->sync_last_ns + SYNC_SPACING_NS - kapi_time_mono_ns() : 0;
    if (wait > 0) {
        pthread_mutex_unlock(&st->sync_lock);
        kapi_fiber_sleep_until(kapi_time_mono_ns() + wait);
        pthread_mutex_lock(&st->sync_lock);
    }
    st->sync_last_ns = kapi_time_mono_ns();
    batch = st->sync_head;
    st->sync_crowded = batch != NULL;
    st->sync_head = NULL;
    st->sync_tail = &st->sync_head;
    pthread_mutex_unlock(&st->sync_lock);
    int64_t rev = -1, t0 = kapi_time_mono_ns();
    if (st->ops->current_revision(st->backend, &rev) != 0)
        rev = -1;
    observe(st, "current_revision", t0);
    pthread_mutex_lock(&st->sync_lock);
    for (sync_waiter *w = batch, *next; w; w = next) {
        next = w->next; /* w may be gone once posted */
        w->rev = rev;
        kapi_park_post(&w->park);
    }
    sync_waiter *lead = st->sync_head;
    if (lead) {
        st->sync_head = lead->next;
        if (!st->sync_head)
            st->sync_tail = &st->sync_head;
        lead->lead = true;
        kapi_park_post(&lead->park);
    } else {
        st->sync_probing = false;
    }
    pthread_mutex_unlock(&st->sync_lock);
    return rev;
}

kapi_store_rc kapi_store_sync(kapi_store *st, int64_t timeout_ms, int64_t *behind)
{
    *behind = 0;
    if (!st->ops->current_revision)
        return KAPI_STORE_OK;
    int64_t rev = probe_revision(st);
    if (rev < 0)
        return KAPI_STORE_IO;
    if (kapi_store_wait_revision(st, rev, timeout_ms))
        return KAPI_STORE_OK;
    *behind = rev;
    return KAPI_STORE_TOO_NEW;
}

kapi_error *kapi_store_share(kapi_store *st, const char *name, kapi_str mine, kapi_buf *theirs)
{
    theirs->len = 0;
    if (!st->ops->share) {
        kapi_buf_put(theirs, mine.ptr, mine.len);
        return NULL;
    }
    if (st->ops->share(st->backend, name, mine, theirs) != 0)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "store: cannot share %s", name);
    return NULL;
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
    if (opts->rev > kapi_store_revision(st) && !st->ops->current_revision)
        return KAPI_STORE_TOO_NEW; /* a shared backend may be ahead of the cache: it answers */
    if (opts->rev < atomic_load(&st->compacted))
        return KAPI_STORE_GONE;
    history h = {.out = out};
    int64_t t0 = kapi_time_mono_ns();
    kapi_store_rc rc = st->ops->read_history(st->backend, opts, history_row, &h, &out->remaining);
    observe(st, "read_history", t0);
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
