/*
 * etcd: the backend on etcd 3.4+, shared by several kapi instances (docs/DESIGN.md, "The
 * store", and issue 17). The transport is src/etcd (gRPC over HTTP/2).
 *
 * Keys are the store's keys (the registry lays them out as kube-apiserver does) under the
 * prefix (--etcd-prefix, "/registry"), so "/registry/cronjobs/default/a" is what an
 * operator reads with etcdctl. Values are the object's JSON bytes with an empty
 * metadata.resourceVersion: etcd's revision is the resourceVersion, so it is written into
 * the bytes when they are read (stamped), never stored.
 *
 * Writes. Each write is its own etcd transaction, sent by the writer's own thread
 * (`concurrent`): etcd batches concurrent transactions into one fsync itself.
 *   CREATE  if create_revision(k) == 0 then put k
 *   UPDATE  if mod_revision(k) == expect (any: create_revision(k) > 0) then put k (prev_kv)
 *           else get k
 *   DELETE  the same, with delete k (prev_kv)
 * A failed compare is EXISTS, NOT_FOUND, or CONFLICT with the current state from the
 * else branch. The writer then waits (bounded) until this instance's watch has delivered
 * its revision, so that what it reads next here holds its write (durable before visible).
 *
 * The follower is one watch on the whole prefix, from the revision the cache was loaded
 * at, with progress notifications and without prev_kv: the cache holds every key's
 * last state, so a DELETE row carries only the key and etcd reads no previous value. It
 * runs on the backend's own thread and re-creates the watch from the last revision it
 * delivered when the stream breaks (another endpoint, another member), so every change
 * is delivered once, in order, without a relist. When etcd has compacted changes the
 * watch had still to deliver (it fell behind by a compaction interval), the state is
 * loaded anew and replaces the cache's (reset), as kube-apiserver's watch cache re-lists.
 *
 * Consistent reads (current_revision): a count_only Range of one key is linearizable, so
 * its revision is at least that of every write acknowledged before it; when the watch
 * does not deliver it soon (the last changes were outside the prefix), a write to the
 * sync key inside the prefix does: the watch delivers it after everything before it.
 *
 * Compaction is kube-apiserver's: every interval, the instance whose transaction on
 * version(compact_rev_key) wins compacts etcd to the revision it recorded an interval
 * before, so that instances (and kube-apiservers) sharing etcd compact once per interval.
 * The store's own history window is the watch hub's in memory (compact is a no-op here);
 * a list at a revision etcd has compacted is 410 Gone.
 */
#include "store/store_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fiber.h"
#include "etcd/etcd.h"
#include "log/log.h"

#define LOAD_PAGE 1000
#define WATCH_POLL_NS 200000000LL     /* how often the watcher looks at stop */
#define VISIBLE_WAIT_NS 10000000000LL /* a writer waits this long for its watch event */
#define RETRY_PAUSE_NS 100000000LL    /* between watch re-creations that fail at once */
#define SYNC_GRACE_NS 20000000LL      /* a consistent read's wait before it writes the sync key */
#define COMPACT_KEY "compact_rev_key" /* kube-apiserver's, outside any prefix */
#define DEFAULT_PREFIX "/registry"

/* A writer waiting for the watch to deliver rev, woken alone when it does (so that a
 * watch message does not wake every writer in flight). */
typedef struct waiter {
    int64_t rev;
    kapi_park park; /* a worker's fiber gives its thread back while it waits */
    struct waiter *next;
} waiter;

typedef struct etcd_backend {
    kapi_etcd_client *c;
    char *prefix; /* without a trailing '/' */
    size_t plen;
    /* "<prefix>/-kapi-sync": in the watched range, never a resource's key (no resource
     * or group starts with '-'), written only to move the watch (current_revision). */
    char *sync_key;
    char *range_start;  /* "<prefix>/": where the objects' range starts */
    kapi_buf range_end; /* and where it ends */
    int64_t compaction_interval_ns;

    kapi_store_follow_fn follow;
    kapi_store_reset_fn reset;
    void *follow_ctx;
    int64_t follow_after;
    pthread_t watcher, compactor;
    bool watching, compacting;

    pthread_mutex_t mu;
    pthread_cond_t stop_cv; /* stop, for the compactor */
    int64_t delivered;      /* every change up to it has been handed to the follower */
    struct waiter *waiters; /* threads waiting for delivered to reach their revision */
    kapi_etcd_watch *watch; /* the watcher's current one, for progress requests */
    bool stop;

    /* The follower's rows of one message, reused. */
    kapi_store_row *rows;
    size_t rows_cap;
} etcd_backend;

/* ---- values: the resourceVersion's place ---- */

static size_t skip_ws(kapi_str v, size_t i)
{
    while (i < v.len &&
           (v.ptr[i] == ' ' || v.ptr[i] == '\t' || v.ptr[i] == '\n' || v.ptr[i] == '\r'))
        i++;
    return i;
}

/* At the opening quote of a string: the index of its closing quote, or v.len. */
static size_t string_end(kapi_str v, size_t i)
{
    for (i++; i < v.len; i++) {
        if (v.ptr[i] == '\\')
            i++;
        else if (v.ptr[i] == '"')
            return i;
    }
    return v.len;
}

/* At the start of a value: the index just after it, or v.len when it is malformed. */
static size_t value_end(kapi_str v, size_t i)
{
    if (i >= v.len)
        return v.len;
    if (v.ptr[i] == '"')
        return string_end(v, i) + 1;
    if (v.ptr[i] != '{' && v.ptr[i] != '[') {
        while (i < v.len && v.ptr[i] != ',' && v.ptr[i] != '}' && v.ptr[i] != ']')
            i++;
        return i;
    }
    size_t depth = 0;
    for (; i < v.len; i++) {
        char ch = v.ptr[i];
        if (ch == '"')
            i = string_end(v, i);
        else if (ch == '{' || ch == '[')
            depth++;
        else if ((ch == '}' || ch == ']') && --depth == 0)
            return i + 1;
    }
    return v.len;
}

/* In the object starting at v[i], the value of member name: its start index, or v.len. */
static size_t member(kapi_str v, size_t i, const char *name)
{
    size_t nlen = strlen(name);
    i = skip_ws(v, i);
    if (i >= v.len || v.ptr[i] != '{')
        return v.len;
    for (i = skip_ws(v, i + 1); i < v.len && v.ptr[i] == '"';) {
        size_t end = string_end(v, i);
        bool hit = end - i - 1 == nlen && memcmp(v.ptr + i + 1, name, nlen) == 0;
        i = skip_ws(v, end + 1);
        if (i >= v.len || v.ptr[i] != ':')
            return v.len;
        i = skip_ws(v, i + 1);
        if (hit)
            return i;
        i = skip_ws(v, value_end(v, i));
        if (i < v.len && v.ptr[i] == ',')
            i = skip_ws(v, i + 1);
    }
    return v.len;
}

bool kapi_store__rv_place(kapi_str v, size_t *start, size_t *end)
{
    size_t meta = member(v, 0, "metadata");
    if (meta >= v.len)
        return false;
    size_t rv = member(v, meta, "resourceVersion");
    if (rv >= v.len || v.ptr[rv] != '"')
        return false;
    *start = rv + 1;
    *end = string_end(v, rv);
    return *end < v.len;
}

/* The object of a key's state: its bytes with rev written in (a new reference), or NULL
 * when they are not kapi's. */
static kapi_obj *stamp(kapi_str key, kapi_str value, int64_t rev, int64_t create_rev)
{
    size_t start, end;
    if (!kapi_store__rv_place(value, &start, &end)) {
        KAPI_LOG_WARNING("store: etcd: %.*s: not an object kapi stored; skipped", (int)key.len,
                         key.ptr);
        return NULL;
    }
    return kapi_store__obj_new(key, rev, create_rev, (kapi_str){value.ptr, start},
                               (kapi_str){value.ptr + end, value.len - end});
}

/* ---- keys ---- */

static void full_key(const etcd_backend *b, kapi_buf *out, kapi_str key)
{
    out->len = 0;
    kapi_buf_put(out, b->prefix, b->plen);
    kapi_buf_put(out, key.ptr, key.len);
}

/* The store's key of an etcd key under the prefix (empty when it is not under it, or is
 * the sync key). */
static kapi_str store_key(const etcd_backend *b, kapi_str key)
{
    if (key.len <= b->plen || memcmp(key.ptr, b->prefix, b->plen) != 0 || key.ptr[b->plen] != '/' ||
        kapi_str_eqc(key, b->sync_key))
        return KAPI_STR("");
    return (kapi_str){key.ptr + b->plen, key.len - b->plen};
}

/* The row of a key's state: its object o (borrowed), at revision rev. */
static kapi_store_row kv_row(const kapi_etcd_kv *kv, kapi_store_op op, int64_t rev, kapi_obj *o)
{
    return (kapi_store_row){
        .rev = rev,
        .create_rev = kv->create_revision,
        .op = op,
        .key = kapi_obj_key(o),
        .value = {o->data, o->len},
        .rv_off = o->rv_off,
        .obj = o,
    };
}

/* ---- open and close ---- */

static void backend_close(void *p)
{
    etcd_backend *b = p;
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    b->stop = true;
    for (waiter *w = b->waiters, *next; w; w = next) {
        next = w->next; /* w may be gone once posted */
        kapi_park_post(&w->park);
    }
    b->waiters = NULL;
    pthread_cond_broadcast(&b->stop_cv);
    pthread_mutex_unlock(&b->mu);
    if (b->watching)
        pthread_join(b->watcher, NULL);
    if (b->compacting)
        pthread_join(b->compactor, NULL);
    kapi_etcd_client_free(b->c);
    kapi_buf_dispose(&b->range_end);
    free(b->range_start);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->stop_cv);
    free(b->rows);
    free(b->sync_key);
    free(b->prefix);
    free(b);
}

/* etcd's current revision, by a linearizable count_only Range of one key. */
static kapi_etcd_rc head_revision(etcd_backend *b, int64_t *rev, kapi_error **err)
{
    kapi_etcd_op q = {.type = KAPI_ETCD_RANGE, .key = {b->prefix, b->plen}, .count_only = true};
    kapi_etcd_response *r = NULL;
    kapi_etcd_rc rc = kapi_etcd_range(b->c, &q, 0, &r, err);
    if (rc == KAPI_ETCD_OK)
        *rev = r->revision;
    kapi_etcd_response_free(r);
    return rc;
}

static void *compactor_main(void *arg);

static kapi_error *backend_open(void **out, const kapi_store_options *opts)
{
    const kapi_store_etcd_options *eo = &opts->etcd;
    etcd_backend *b = kapi_xcalloc(1, sizeof(*b));
    kapi_error *err = NULL;
    const char *prefix = eo->prefix && *eo->prefix ? eo->prefix : DEFAULT_PREFIX;
    b->plen = strlen(prefix);
    while (b->plen > 0 && prefix[b->plen - 1] == '/')
        b->plen--;
    b->prefix = kapi_xstrndup(prefix, b->plen);
    b->sync_key = kapi_xprintf("%s/-kapi-sync", b->prefix);
    kapi_buf_init(&b->range_end);
    b->range_start = kapi_xprintf("%s/", b->prefix);
    kapi_etcd_prefix_end(&b->range_end, kapi_str_c(b->range_start));
    b->compaction_interval_ns = eo->compaction_interval_s * 1000000000LL;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->stop_cv, NULL);
    kapi_etcd_options co = {
        .servers = eo->servers,
        .ca_file = eo->ca_file,
        .cert_file = eo->cert_file,
        .key_file = eo->key_file,
    };
    int64_t rev = 0;
    if ((err = kapi_etcd_client_new(&b->c, &co)) != NULL ||
        head_revision(b, &rev, &err) != KAPI_ETCD_OK) {
        kapi_error *wrapped = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "store: etcd %s: %s",
                                             eo->servers, err ? err->message : "unreachable");
        kapi_error_free(err);
        backend_close(b);
        *out = NULL;
        return wrapped;
    }
    if (b->compaction_interval_ns > 0)
        b->compacting = pthread_create(&b->compactor, NULL, compactor_main, b) == 0;
    if (b->compacting)
        pthread_setname_np(b->compactor, "kapi-compact");
    *out = b;
    return NULL;
}

/* ---- load: the state at one revision, by pages ---- */

/* Streams every key under the prefix at etcd's current revision, which *at gets. */
static kapi_error *load_state(etcd_backend *b, kapi_store_row_fn fn, void *ctx, int64_t *out)
{
    kapi_buf start;
    kapi_buf_init(&start);
    kapi_buf_puts(&start, b->range_start);
    int64_t at = 0;
    kapi_error *err = NULL;
    for (bool more = true; more && !err;) {
        kapi_etcd_op q = {
            .type = KAPI_ETCD_RANGE,
            .key = {start.ptr, start.len},
            .range_end = {b->range_end.ptr, b->range_end.len},
            .limit = LOAD_PAGE,
            .revision = at,
        };
        kapi_etcd_response *r = NULL;
        if (kapi_etcd_range(b->c, &q, 0, &r, &err) != KAPI_ETCD_OK)
            break;
        at = at ? at : r->revision;
        const kapi_etcd_op_result *res = &r->ops[0];
        for (size_t i = 0; i < res->nkvs; i++) {
            const kapi_etcd_kv *kv = &res->kvs[i];
            kapi_str key = store_key(b, kv->key);
            kapi_obj *o =
                key.len ? stamp(key, kv->value, kv->mod_revision, kv->create_revision) : NULL;
            if (o) {
                kapi_store_row row = kv_row(kv, KAPI_STORE_UPDATE, kv->mod_revision, o);
                fn(ctx, &row);
                kapi_obj_unref(o);
            }
        }
        more = res->more && res->nkvs > 0;
        if (more) {
            const kapi_etcd_kv *last = &res->kvs[res->nkvs - 1];
            start.len = 0;
            kapi_buf_put(&start, last->key.ptr, last->key.len);
            kapi_buf_putc(&start, '\0');
        }
        kapi_etcd_response_free(r);
    }
    kapi_buf_dispose(&start);
    *out = at;
    return err;
}

static kapi_error *backend_load(void *p, kapi_store_row_fn fn, void *ctx, int64_t *base_rev,
                                int64_t *compacted_rev)
{
    kapi_error *err = load_state(p, fn, ctx, base_rev);
    if (err) {
        kapi_error *wrapped =
            kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "store: etcd: load: %s", err->message);
        kapi_error_free(err);
        return wrapped;
    }
    *compacted_rev = 0; /* etcd says which revisions it has compacted when asked */
    return NULL;
}

static void delivered_up_to(etcd_backend *b, int64_t rev);

/* The rows of a reload, kept for the reset: references to their objects. */
typedef struct reload {
    kapi_store_row *rows;
    size_t n, cap;
} reload;

static int keep_row(void *ctx, const kapi_store_row *row)
{
    reload *r = ctx;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 256;
        r->rows = kapi_xrealloc(r->rows, r->cap * sizeof(*r->rows));
    }
    r->rows[r->n] = *row;
    r->rows[r->n].obj = kapi_obj_ref(row->obj);
    r->n++;
    return 0;
}

/* The watch could not deliver the changes after *last (etcd compacted them): the state
 * is loaded anew and replaces the cache's (kube-apiserver's watch cache re-lists too).
 * Returns false when etcd could not be read: the watcher tries again. */
static bool reload_state(etcd_backend *b, int64_t *last)
{
    reload r = {0};
    int64_t at = 0;
    kapi_error *err = load_state(b, keep_row, &r, &at);
    if (!err) {
        KAPI_LOG_WARNING("store: etcd: the watch fell behind etcd's compaction (after revision "
                         "%lld); the state at %lld replaces the cache, and watches end with 410",
                         (long long)*last, (long long)at);
        b->reset(b->follow_ctx, r.rows, r.n, at);
        *last = at;
        delivered_up_to(b, at);
    } else {
        KAPI_LOG_ERROR("store: etcd: reload after compaction: %s", err->message);
        kapi_error_free(err);
    }
    for (size_t i = 0; i < r.n; i++)
        kapi_obj_unref(r.rows[i].obj);
    free(r.rows);
    return !err;
}

/* ---- the follower: one watch on the prefix ---- */

/* Hands a watch message's events to the follower; the revision they bring it to. */
static int64_t deliver_events(etcd_backend *b, const kapi_etcd_watch_response *m)
{
    if (m->nevents > b->rows_cap) {
        b->rows_cap = m->nevents;
        b->rows = kapi_xrealloc(b->rows, b->rows_cap * sizeof(*b->rows));
    }
    size_t n = 0;
    int64_t upto = m->nevents ? m->events[m->nevents - 1].kv.mod_revision : m->revision;
    for (size_t i = 0; i < m->nevents; i++) {
        const kapi_etcd_event *e = &m->events[i];
        kapi_str key = store_key(b, e->kv.key);
        if (!key.len)
            continue;
        if (e->type == KAPI_ETCD_EVENT_DELETE) { /* the cache holds the last state */
            b->rows[n++] =
                (kapi_store_row){.rev = e->kv.mod_revision, .op = KAPI_STORE_DELETE, .key = key};
            continue;
        }
        kapi_store_op op = e->kv.version == 1 ? KAPI_STORE_CREATE : KAPI_STORE_UPDATE;
        kapi_obj *o = stamp(key, e->kv.value, e->kv.mod_revision, e->kv.create_revision);
        if (o)
            b->rows[n++] = kv_row(&e->kv, op, e->kv.mod_revision, o);
    }
    b->follow(b->follow_ctx, b->rows, n, upto);
    for (size_t i = 0; i < n; i++)
        if (b->rows[i].obj)
            kapi_obj_unref(b->rows[i].obj);
    return upto;
}

/* Under mu: wakes (and unlists) the waiters whose revision has been delivered. */
static void wake_waiters(etcd_backend *b)
{
    for (waiter **at = &b->waiters; *at;) {
        waiter *w = *at;
        if (w->rev <= b->delivered) {
            *at = w->next;
            kapi_park_post(&w->park);
        } else {
            at = &w->next;
        }
    }
}

/* Every change up to rev has reached the cache: the writers waiting for it go on. */
static void delivered_up_to(etcd_backend *b, int64_t rev)
{
    pthread_mutex_lock(&b->mu);
    if (rev > b->delivered)
        b->delivered = rev;
    wake_waiters(b);
    pthread_mutex_unlock(&b->mu);
}

static bool stopping(etcd_backend *b)
{
    pthread_mutex_lock(&b->mu);
    bool stop = b->stop;
    pthread_mutex_unlock(&b->mu);
    return stop;
}

static void set_watch(etcd_backend *b, kapi_etcd_watch *w)
{
    pthread_mutex_lock(&b->mu);
    b->watch = w;
    pthread_mutex_unlock(&b->mu);
}

static void *watcher_main(void *arg)
{
    etcd_backend *b = arg;
    int64_t last = b->follow_after;
    while (!stopping(b)) {
        kapi_etcd_watch_options wo = {
            .key = kapi_str_c(b->range_start),
            .range_end = {b->range_end.ptr, b->range_end.len},
            .start_revision = last + 1,
            .progress_notify = true,
        };
        kapi_etcd_watch *w = kapi_etcd_watch_new(b->c, &wo);
        set_watch(b, w);
        kapi_etcd_rc rc;
        int64_t began = kapi_time_mono_ns();
        for (;;) {
            kapi_etcd_watch_response *m = NULL;
            kapi_error *err = NULL;
            rc = kapi_etcd_watch_next(w, kapi_time_mono_ns() + WATCH_POLL_NS, &m, &err);
            if (rc == KAPI_ETCD_WAIT) {
                if (stopping(b))
                    break;
                continue;
            }
            if (rc != KAPI_ETCD_OK) {
                if (rc == KAPI_ETCD_COMPACTED) {
                    kapi_error_free(err);
                    reload_state(b, &last);
                    break;
                }
                KAPI_LOG_WARNING("store: etcd: watch from %lld: %s; again", (long long)(last + 1),
                                 err ? err->message : kapi_etcd_rc_name(rc));
                kapi_error_free(err);
                break;
            }
            if (!m->created) {
                int64_t upto = deliver_events(b, m);
                if (upto > last)
                    last = upto;
                delivered_up_to(b, last);
            }
            kapi_etcd_watch_response_free(m);
        }
        set_watch(b, NULL);
        kapi_etcd_watch_free(w);
        if (rc != KAPI_ETCD_WAIT && kapi_time_mono_ns() - began < RETRY_PAUSE_NS) {
            struct timespec ts = {0, RETRY_PAUSE_NS};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static int backend_follow(void *p, int64_t after, kapi_store_follow_fn fn,
                          kapi_store_reset_fn reset, void *ctx)
{
    etcd_backend *b = p;
    b->follow = fn;
    b->reset = reset;
    b->follow_ctx = ctx;
    b->follow_after = after;
    b->delivered = after;
    if (pthread_create(&b->watcher, NULL, watcher_main, b) != 0)
        return -1;
    pthread_setname_np(b->watcher, "kapi-etcd-watch");
    b->watching = true;
    return 0;
}

/* Waits up to ns for the watch to deliver rev; whether it has. */
static bool delivered_within(etcd_backend *b, int64_t rev, int64_t ns)
{
    waiter w = {.rev = rev};
    pthread_mutex_lock(&b->mu);
    if (b->delivered >= rev || b->stop) {
        bool done = b->delivered >= rev;
        pthread_mutex_unlock(&b->mu);
        return done;
    }
    kapi_park_init(&w.park);
    w.next = b->waiters;
    b->waiters = &w;
    pthread_mutex_unlock(&b->mu);
    if (kapi_park_wait_until(&w.park, kapi_time_mono_ns() + ns)) {
        /* posted: unlisted by the watcher, which had delivered rev */
        kapi_park_dispose(&w.park);
        return true;
    }
    pthread_mutex_lock(&b->mu);
    for (waiter **at = &b->waiters; *at; at = &(*at)->next) {
        if (*at == &w) { /* timed out: still listed */
            *at = w.next;
            break;
        }
    }
    bool done = b->delivered >= rev;
    pthread_mutex_unlock(&b->mu);
    kapi_park_dispose(&w.park);
    return done;
}

/* The revision a consistent read waits for: etcd's current one, or, when the watch does
 * not bring the cache there soon (the last writes were outside the prefix: the
 * compactor's key, another user of etcd), that of a write to the sync key, which the
 * watch delivers after everything before it. (etcd's progress request would say the
 * same without a write, but etcd before 3.4.25 answers it wrongly while a watch catches
 * up, which would let a read miss a write.) */
static int backend_current_revision(void *p, int64_t *rev)
{
    etcd_backend *b = p;
    kapi_error *err = NULL;
    if (head_revision(b, rev, &err) != KAPI_ETCD_OK) {
        KAPI_LOG_ERROR("store: etcd: current revision: %s", err ? err->message : "?");
        kapi_error_free(err);
        return -1;
    }
    if (delivered_within(b, *rev, SYNC_GRACE_NS))
        return 0;
    kapi_etcd_op put = {.type = KAPI_ETCD_PUT, .key = kapi_str_c(b->sync_key)};
    kapi_etcd_txn_req txn = {.success = &put, .nsuccess = 1};
    kapi_etcd_response *r = NULL;
    int rc = -1;
    if (kapi_etcd_txn(b->c, &txn, 0, &r, &err) == KAPI_ETCD_OK) {
        *rev = r->revision;
        rc = 0;
    } else {
        KAPI_LOG_ERROR("store: etcd: %s: %s", b->sync_key, err ? err->message : "?");
    }
    kapi_error_free(err);
    kapi_etcd_response_free(r);
    return rc;
}

/* ---- writes ---- */

/* One write as one transaction; sets t's outcome. Returns -1 when etcd's answer is not
 * known (nothing set: the store answers IO). */
static int commit_one(etcd_backend *b, kapi_store_txn_write *t)
{
    const kapi_store_write *w = t->w;
    kapi_buf key;
    kapi_buf_init(&key);
    full_key(b, &key, w->key);
    kapi_str k = {key.ptr, key.len};
    kapi_etcd_compare cmp = {.key = k};
    if (w->op == KAPI_STORE_CREATE) {
        cmp.target = KAPI_ETCD_CREATE;
        cmp.result = KAPI_ETCD_EQUAL;
    } else if (w->expect_rev) {
        cmp.target = KAPI_ETCD_MOD;
        cmp.result = KAPI_ETCD_EQUAL;
        cmp.number = w->expect_rev;
    } else {
        cmp.target = KAPI_ETCD_CREATE;
        cmp.result = KAPI_ETCD_GREATER;
    }
    kapi_etcd_op then = {
        .type = w->op == KAPI_STORE_DELETE ? KAPI_ETCD_DELETE : KAPI_ETCD_PUT,
        .key = k,
        .value = w->value,
        .prev_kv = w->op != KAPI_STORE_CREATE,
    };
    kapi_etcd_op otherwise = {.type = KAPI_ETCD_RANGE, .key = k};
    kapi_etcd_txn_req txn = {
        .compare = &cmp,
        .ncompare = 1,
        .success = &then,
        .nsuccess = 1,
        .failure = &otherwise,
        .nfailure = w->op == KAPI_STORE_CREATE ? 0 : 1,
    };
    kapi_etcd_response *r = NULL;
    kapi_error *err = NULL;
    kapi_etcd_rc rc = kapi_etcd_txn(b->c, &txn, 0, &r, &err);
    kapi_buf_dispose(&key);
    if (rc != KAPI_ETCD_OK) {
        KAPI_LOG_ERROR("store: etcd: %.*s: %s", (int)w->key.len, w->key.ptr,
                       err ? err->message : kapi_etcd_rc_name(rc));
        kapi_error_free(err);
        return -1;
    }
    const kapi_etcd_op_result *res = r->nops ? &r->ops[0] : NULL;
    const kapi_etcd_kv *kv = res && res->nkvs ? &res->kvs[0] : NULL;
    int out = 0;
    if (!r->succeeded) {
        if (w->op == KAPI_STORE_CREATE) {
            t->rc = KAPI_STORE_EXISTS;
        } else if (!kv) {
            t->rc = KAPI_STORE_NOT_FOUND;
        } else {
            t->rc = KAPI_STORE_CONFLICT;
            t->current = stamp(w->key, kv->value, kv->mod_revision, kv->create_revision);
        }
    } else {
        int64_t rev = r->revision;
        if (w->op == KAPI_STORE_DELETE)
            t->obj = kv ? stamp(w->key, kv->value, rev, kv->create_revision) : NULL;
        else
            t->obj = kapi_store__obj_new(
                w->key, rev, kv ? kv->create_revision : rev, (kapi_str){w->value.ptr, w->rv_off},
                (kapi_str){w->value.ptr + w->rv_off, w->value.len - w->rv_off});
        t->rc = t->obj ? KAPI_STORE_OK : KAPI_STORE_IO;
        out = t->obj ? 0 : -1;
        delivered_within(b, rev, VISIBLE_WAIT_NS);
    }
    kapi_etcd_response_free(r);
    return out;
}

static int backend_commit(void *p, kapi_store_txn_write *t, size_t n)
{
    etcd_backend *b = p;
    for (size_t i = 0; i < n; i++) {
        t[i].rc = KAPI_STORE_IO;
        t[i].obj = t[i].current = NULL;
        if (commit_one(b, &t[i]) != 0)
            return -1;
    }
    return 0;
}

/* ---- lists at a past revision ---- */

static kapi_store_rc backend_read_history(void *p, const kapi_store_list_opts *q,
                                          kapi_store_row_fn fn, void *ctx, size_t *remaining)
{
    etcd_backend *b = p;
    kapi_buf start, prefix_buf, end;
    kapi_buf_init(&start);
    kapi_buf_init(&prefix_buf);
    kapi_buf_init(&end);
    full_key(b, &prefix_buf, q->prefix);
    kapi_str prefix = {prefix_buf.ptr, prefix_buf.len};
    kapi_etcd_prefix_end(&end, prefix);
    if (q->start_after.len) {
        full_key(b, &start, q->start_after);
        kapi_buf_putc(&start, '\0');
    } else {
        kapi_buf_put(&start, prefix.ptr, prefix.len);
    }
    kapi_etcd_op r = {
        .type = KAPI_ETCD_RANGE,
        .key = {start.ptr, start.len},
        .range_end = {end.ptr, end.len},
        .limit = (int64_t)q->limit,
        .revision = q->rev,
    };
    kapi_etcd_response *resp = NULL;
    kapi_error *err = NULL;
    kapi_etcd_rc rc = kapi_etcd_range(b->c, &r, 0, &resp, &err);
    kapi_store_rc out = KAPI_STORE_OK;
    if (rc == KAPI_ETCD_OK) {
        const kapi_etcd_op_result *res = &resp->ops[0];
        for (size_t i = 0; i < res->nkvs; i++) {
            const kapi_etcd_kv *kv = &res->kvs[i];
            kapi_obj *o =
                stamp(store_key(b, kv->key), kv->value, kv->mod_revision, kv->create_revision);
            if (!o)
                continue;
            kapi_store_row row = kv_row(kv, KAPI_STORE_UPDATE, kv->mod_revision, o);
            fn(ctx, &row);
            kapi_obj_unref(o);
        }
        *remaining =
            res->count > (int64_t)res->nkvs ? (size_t)(res->count - (int64_t)res->nkvs) : 0;
    } else {
        out = rc == KAPI_ETCD_COMPACTED    ? KAPI_STORE_GONE
              : rc == KAPI_ETCD_FUTURE_REV ? KAPI_STORE_TOO_NEW
                                           : KAPI_STORE_IO;
        if (out == KAPI_STORE_IO)
            KAPI_LOG_ERROR("store: etcd: list at %lld: %s", (long long)q->rev,
                           err ? err->message : kapi_etcd_rc_name(rc));
    }
    kapi_error_free(err);
    kapi_etcd_response_free(resp);
    kapi_buf_dispose(&start);
    kapi_buf_dispose(&prefix_buf);
    kapi_buf_dispose(&end);
    return out;
}

/* ---- what instances share ---- */

/* Under "<prefix>-kapi/": beside the prefix, outside the range the follower watches. */
static int backend_share(void *p, const char *name, kapi_str mine, kapi_buf *theirs)
{
    etcd_backend *b = p;
    char *key = kapi_xprintf("%s-kapi/%s", b->prefix, name);
    kapi_str k = kapi_str_c(key);
    kapi_etcd_compare cmp = {.key = k, .target = KAPI_ETCD_CREATE, .result = KAPI_ETCD_EQUAL};
    kapi_etcd_op put = {.type = KAPI_ETCD_PUT, .key = k, .value = mine};
    kapi_etcd_op get = {.type = KAPI_ETCD_RANGE, .key = k};
    kapi_etcd_txn_req txn = {&cmp, 1, &put, 1, &get, 1};
    kapi_etcd_response *r = NULL;
    kapi_error *err = NULL;
    int rc = -1;
    if (kapi_etcd_txn(b->c, &txn, 0, &r, &err) == KAPI_ETCD_OK) {
        const kapi_etcd_op_result *res = r->nops ? &r->ops[0] : NULL;
        if (r->succeeded)
            kapi_buf_put(theirs, mine.ptr, mine.len);
        else if (res && res->nkvs)
            kapi_buf_put(theirs, res->kvs[0].value.ptr, res->kvs[0].value.len);
        rc = r->succeeded || (res && res->nkvs) ? 0 : -1;
    } else {
        KAPI_LOG_ERROR("store: etcd: %s: %s", key, err ? err->message : "?");
    }
    kapi_error_free(err);
    kapi_etcd_response_free(r);
    free(key);
    return rc;
}

/* ---- compaction, as kube-apiserver's compactor ---- */

/* One round: when this instance's transaction on the key's version wins, compacts to the
 * revision recorded a round before and records the current one. *version and *rev carry
 * the key's version and the revision to compact to next round. */
static void compact_round(etcd_backend *b, int64_t *version, int64_t *rev)
{
    kapi_str key = KAPI_STR(COMPACT_KEY);
    kapi_etcd_compare cmp = {.key = key, .target = KAPI_ETCD_VERSION, .number = *version};
    char now[24];
    kapi_etcd_response *r = NULL;
    int64_t head = 0;
    if (head_revision(b, &head, NULL) != KAPI_ETCD_OK)
        return;
    snprintf(now, sizeof(now), "%lld", (long long)head);
    kapi_etcd_op put = {.type = KAPI_ETCD_PUT, .key = key, .value = kapi_str_c(now)};
    kapi_etcd_op get = {.type = KAPI_ETCD_RANGE, .key = key};
    kapi_etcd_txn_req txn = {&cmp, 1, &put, 1, &get, 1};
    if (kapi_etcd_txn(b->c, &txn, 0, &r, NULL) != KAPI_ETCD_OK)
        return;
    if (!r->succeeded) {
        /* Another instance compacted this round: follow its count. */
        const kapi_etcd_op_result *res = r->nops ? &r->ops[0] : NULL;
        *version = res && res->nkvs ? res->kvs[0].version : 0;
        *rev = head;
    } else {
        kapi_error *err = NULL;
        if (*rev > 0) {
            kapi_etcd_rc rc = kapi_etcd_compact(b->c, *rev, false, 0, &err);
            if (rc != KAPI_ETCD_OK && rc != KAPI_ETCD_COMPACTED)
                KAPI_LOG_ERROR("store: etcd: compact to %lld: %s", (long long)*rev,
                               err ? err->message : kapi_etcd_rc_name(rc));
            kapi_error_free(err);
        }
        *version = *version + 1;
        *rev = head;
    }
    kapi_etcd_response_free(r);
}

static void *compactor_main(void *arg)
{
    etcd_backend *b = arg;
    int64_t version = 0, rev = 0;
    for (;;) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + b->compaction_interval_ns;
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
        pthread_mutex_lock(&b->mu);
        while (!b->stop && pthread_cond_timedwait(&b->stop_cv, &b->mu, &ts) != ETIMEDOUT)
            ;
        bool stop = b->stop;
        pthread_mutex_unlock(&b->mu);
        if (stop)
            return NULL;
        compact_round(b, &version, &rev);
    }
}

/* The store's history window is the watch hub's; etcd's history is its compactor's. */
static int backend_compact(void *p, int64_t rev)
{
    (void)p;
    (void)rev;
    return 0;
}

static int backend_save_mark(void *p, int64_t rev, int64_t unix_ns)
{
    (void)p;
    (void)rev;
    (void)unix_ns;
    return 0;
}

static int backend_load_marks(void *p, kapi_store_mark_fn fn, void *ctx)
{
    (void)p;
    (void)fn;
    (void)ctx;
    return 0;
}

const kapi_store_backend_ops kapi_store__etcd_ops = {
    .name = "etcd",
    .concurrent = true,
    .open = backend_open,
    .load = backend_load,
    .commit = backend_commit,
    .follow = backend_follow,
    .current_revision = backend_current_revision,
    .share = backend_share,
    .read_history = backend_read_history,
    .compact = backend_compact,
    .save_mark = backend_save_mark,
    .load_marks = backend_load_marks,
    .close = backend_close,
};
