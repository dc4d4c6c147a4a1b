/* The store over etcd (src/store/etcd.c) against a real etcd: two stores sharing it are
 * two kapi instances. What one writes the other reads after a sync, lists, watches;
 * writes are decided by etcd (EXISTS, NOT_FOUND, CONFLICT with the current state); the
 * bytes in etcd are the object without its resourceVersion, at the prefixed key; lists at
 * a past revision read etcd's history, and a compacted one is GONE. */
#include "../etcd/etcd_fixture.h"
#include "holder.h"
#include "store/store_int.h"
#include "test.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static kapi_store *open_etcd(const etcd_fixture *f)
{
    kapi_store_options o = {.etcd = {.servers = f->servers, .prefix = "/t"}};
    kapi_store *st = NULL;
    kapi_error *err = kapi_store_open(&st, &o);
    if (err)
        test_fail(__FILE__, __LINE__, "open: %s", err->message);
    return st;
}

static kapi_store_rc sync_st(kapi_store *st, int64_t timeout_ms)
{
    int64_t behind;
    return kapi_store_sync(st, timeout_ms, &behind);
}

/* An object as the api stores it: metadata.resourceVersion empty, the gap at rv_off. */
typedef struct obj {
    char buf[512];
    kapi_store_write w;
} obj;

static kapi_store_write *mk(obj *d, kapi_store_op op, const char *key, const char *v,
                            int64_t expect)
{
    snprintf(d->buf, sizeof(d->buf),
             "{\"kind\":\"T\",\"metadata\":{\"annotations\":{\"resourceVersion\":\"no\\\"}\"},"
             "\"name\":\"x\",\"resourceVersion\":\"\"},\"v\":\"%s\"}",
             v ? v : "");
    const char *gap = strstr(d->buf, "\"name\":\"x\",\"resourceVersion\":\"");
    d->w = (kapi_store_write){
        .op = op,
        .key = kapi_str_c(key),
        .expect_rev = expect,
        .value = kapi_str_c(d->buf),
        .rv_off = (size_t)(gap - d->buf) + strlen("\"name\":\"x\",\"resourceVersion\":\""),
    };
    return &d->w;
}

static kapi_store_rc put(kapi_store *st, kapi_store_op op, const char *key, const char *v,
                         int64_t expect, int64_t *rev, char **current)
{
    obj d;
    kapi_store_rc rc = kapi_store_commit(st, mk(&d, op, key, v, expect));
    if (rev)
        *rev = d.w.result ? d.w.result->rev : 0;
    if (current)
        *current = d.w.current ? kapi_xstrdup(d.w.current->data) : NULL;
    kapi_obj_unref(d.w.result);
    kapi_obj_unref(d.w.current);
    return rc;
}

/* The v of the object at key and its stamped resourceVersion, "v@rv", or "-". */
static char *show(kapi_store *st, const char *key)
{
    kapi_obj *o = NULL;
    if (kapi_store_get(st, kapi_str_c(key), &o) != KAPI_STORE_OK)
        return kapi_xstrdup("-");
    char v[64] = "", rv[32] = "";
    const char *p = strstr(o->data, "\"v\":\"");
    sscanf(p + 5, "%63[^\"]", v);
    p = strstr(o->data, "\"name\":\"x\",\"resourceVersion\":\"");
    sscanf(p + strlen("\"name\":\"x\",\"resourceVersion\":\""), "%31[^\"]", rv);
    CHECK_INT_EQ(strtoll(rv, NULL, 10), o->rev);
    char *out = kapi_xprintf("%s@%s", v, rv);
    kapi_obj_unref(o);
    return out;
}

#define CHECK_SHOW(st, key, want)                                                                  \
    do {                                                                                           \
        char *got_ = show(st, key);                                                                \
        CHECK_STR_EQ(got_, want);                                                                  \
        free(got_);                                                                                \
    } while (0)

TEST(store_etcd_two_instances)
{
    etcd_fixture f = {.n = 1};
    etcd_fixture_start(&f);
    kapi_store *a = open_etcd(&f), *b = open_etcd(&f);
    int64_t r1, r2, r3;
    CHECK_INT_EQ(put(a, KAPI_STORE_CREATE, "/ns/a", "1", 0, &r1, NULL), KAPI_STORE_OK);
    CHECK_INT_EQ(put(b, KAPI_STORE_CREATE, "/ns/a", "dup", 0, NULL, NULL), KAPI_STORE_EXISTS);
    /* What a wrote, b reads after a sync, stamped with etcd's revision. */
    CHECK_INT_EQ(sync_st(b, 3000), KAPI_STORE_OK);
    char *want = kapi_xprintf("1@%" PRId64, r1);
    CHECK_SHOW(b, "/ns/a", want);
    free(want);
    /* The bytes in etcd: the prefixed key, no resourceVersion. */
    kapi_etcd_client *c = etcd_fixture_client(&f, f.servers);
    char *raw = etcd_get(c, "/t/ns/a", 0);
    CHECK(raw && strstr(raw, "\"name\":\"x\",\"resourceVersion\":\"\"}") != NULL);
    free(raw);
    /* Compare-and-swap on the revision, decided by etcd, from either instance. */
    CHECK_INT_EQ(put(b, KAPI_STORE_UPDATE, "/ns/a", "2", r1, &r2, NULL), KAPI_STORE_OK);
    char *cur = NULL;
    CHECK_INT_EQ(put(a, KAPI_STORE_UPDATE, "/ns/a", "3", r1, NULL, &cur), KAPI_STORE_CONFLICT);
    CHECK(cur && strstr(cur, "\"v\":\"2\"") != NULL);
    free(cur);
    CHECK_INT_EQ(put(a, KAPI_STORE_UPDATE, "/ns/zz", "3", 0, NULL, NULL), KAPI_STORE_NOT_FOUND);
    /* The last write outside the prefix: a consistent read still gets there (the sync
     * key), and the sync key is nobody's object. */
    int64_t outside = etcd_put(c, "/elsewhere", "x");
    CHECK_INT_EQ(sync_st(b, 3000), KAPI_STORE_OK);
    CHECK(kapi_store_revision(b) > outside);
    kapi_store_list_opts all = {.prefix = KAPI_STR("/")};
    kapi_store_list_result everything;
    CHECK_INT_EQ(kapi_store_list(b, &all, &everything), KAPI_STORE_OK);
    CHECK_INT_EQ(everything.n, 1);
    kapi_store_list_dispose(&everything);
    CHECK_INT_EQ(put(a, KAPI_STORE_CREATE, "/ns/b", "b", 0, &r3, NULL), KAPI_STORE_OK);
    /* A read right after the write, on the writer's instance, holds it. */
    want = kapi_xprintf("2@%" PRId64, r2);
    CHECK_SHOW(b, "/ns/a", want);
    free(want);
    CHECK_INT_EQ(sync_st(b, 3000), KAPI_STORE_OK);
    kapi_store_list_opts q = {.prefix = KAPI_STR("/ns/")};
    kapi_store_list_result l;
    CHECK_INT_EQ(kapi_store_list(b, &q, &l), KAPI_STORE_OK);
    CHECK_INT_EQ(l.n, 2);
    kapi_store_list_dispose(&l);
    /* A list at a past revision is etcd's history: a's first state, one key. */
    q.rev = r1;
    CHECK_INT_EQ(kapi_store_list(b, &q, &l), KAPI_STORE_OK);
    CHECK_INT_EQ(l.n, 1);
    CHECK(l.n == 1 && strstr(l.items[0]->data, "\"v\":\"1\"") != NULL && l.items[0]->rev == r1);
    kapi_store_list_dispose(&l);
    /* Paged: one item and the count of the rest. */
    q.rev = r3;
    q.limit = 1;
    CHECK_INT_EQ(kapi_store_list(b, &q, &l), KAPI_STORE_OK);
    CHECK(l.n == 1 && l.remaining == 1);
    kapi_store_list_dispose(&l);
    /* Deleted on b: gone on a, and the delete's object is the last state at its revision. */
    obj d;
    kapi_store_write *w = mk(&d, KAPI_STORE_DELETE, "/ns/a", NULL, 0);
    CHECK_INT_EQ(kapi_store_commit(b, w), KAPI_STORE_OK);
    CHECK(w->result && strstr(w->result->data, "\"v\":\"2\"") && w->result->rev > r3);
    kapi_obj_unref(w->result);
    CHECK_INT_EQ(sync_st(a, 3000), KAPI_STORE_OK);
    CHECK_SHOW(a, "/ns/a", "-");
    /* etcd compacted past r1: a list there is GONE. */
    CHECK_INT_EQ(kapi_etcd_compact(c, r3, true, 0, NULL), KAPI_ETCD_OK);
    q.rev = r1;
    q.limit = 0;
    CHECK_INT_EQ(kapi_store_list(a, &q, &l), KAPI_STORE_GONE);
    kapi_etcd_client_free(c);
    kapi_store_free(a);
    kapi_store_free(b);
    etcd_fixture_stop(&f);
}

/* A watch on one instance sees every change made on the other, in order, once. */
typedef struct seen {
    pthread_mutex_t mu;
    kapi_buf log;
    int n;
} seen;

static bool on_event(void *ctx, const kapi_store_event *ev)
{
    seen *s = ctx;
    if (ev->type == KAPI_STORE_EVENT_PROGRESS)
        return true;
    pthread_mutex_lock(&s->mu);
    /* A deletion carries the last state, stamped with its own revision ("!" if not). */
    char rv[32];
    snprintf(rv, sizeof(rv), "\"resourceVersion\":\"%lld\"", (long long)ev->rev);
    bool whole = ev->obj->rev == ev->rev && strstr(ev->obj->data, rv) &&
                 strstr(ev->obj->data, "\"v\":\"v\"");
    kapi_buf_printf(&s->log, "%c%s%s;", ev->type == KAPI_STORE_EVENT_DELETE ? 'D' : 'P',
                    ev->obj->key, whole ? "" : "!");
    s->n++;
    pthread_mutex_unlock(&s->mu);
    return true;
}

TEST(store_etcd_watch_across)
{
    etcd_fixture f = {.n = 1};
    etcd_fixture_start(&f);
    kapi_store *a = open_etcd(&f), *b = open_etcd(&f);
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    kapi_buf_init(&s.log);
    kapi_store_watch *w = NULL;
    int64_t oldest;
    CHECK_INT_EQ(kapi_store_watch_start(b, KAPI_STR("/w/"), kapi_store_revision(b), on_event, &s,
                                        &w, &oldest),
                 KAPI_STORE_OK);
    for (int i = 0; i < 20; i++) {
        char key[32];
        snprintf(key, sizeof(key), "/w/k%02d", i);
        CHECK_INT_EQ(put(a, KAPI_STORE_CREATE, key, "v", 0, NULL, NULL), KAPI_STORE_OK);
    }
    CHECK_INT_EQ(put(a, KAPI_STORE_DELETE, "/w/k03", NULL, 0, NULL, NULL), KAPI_STORE_OK);
    CHECK_INT_EQ(sync_st(b, 3000), KAPI_STORE_OK);
    /* b's cache has the revision; its hub hands the changes to the watch just after */
    for (int tries = 0; tries < 300; tries++) {
        pthread_mutex_lock(&s.mu);
        int n = s.n;
        pthread_mutex_unlock(&s.mu);
        if (n >= 21)
            break;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&s.mu);
    CHECK_INT_EQ(s.n, 21);
    CHECK(strncmp(s.log.ptr, "P/w/k00;P/w/k01;", 16) == 0);
    CHECK(strstr(s.log.ptr, "P/w/k19;D/w/k03;") != NULL);
    pthread_mutex_unlock(&s.mu);
    kapi_store_watch_stop(b, w);
    kapi_buf_dispose(&s.log);
    kapi_store_free(a);
    kapi_store_free(b);
    etcd_fixture_stop(&f);
}

/* Concurrent writers on two instances, each incrementing by compare-and-swap with a retry
 * on CONFLICT (kube's GuaranteedUpdate): no update is lost. */
typedef struct incr {
    kapi_store *st;
    int times;
} incr;

static void *incr_main(void *arg)
{
    incr *in = arg;
    for (int i = 0; i < in->times;) {
        kapi_obj *o = NULL;
        if (kapi_store_get(in->st, KAPI_STR("/c/n"), &o) != KAPI_STORE_OK)
            continue;
        int v = atoi(strstr(o->data, "\"v\":\"") + 5);
        int64_t rev = o->rev;
        kapi_obj_unref(o);
        char next[16];
        snprintf(next, sizeof(next), "%d", v + 1);
        obj d;
        kapi_store_write *w = mk(&d, KAPI_STORE_UPDATE, "/c/n", next, rev);
        kapi_store_rc rc = kapi_store_commit(in->st, w);
        kapi_obj_unref(w->result);
        kapi_obj_unref(w->current);
        if (rc == KAPI_STORE_OK)
            i++;
        else if (rc == KAPI_STORE_CONFLICT)
            sync_st(in->st, 3000);
        else
            CHECK_INT_EQ(rc, KAPI_STORE_CONFLICT);
    }
    return NULL;
}

TEST(store_etcd_no_lost_update)
{
    etcd_fixture f = {.n = 1};
    etcd_fixture_start(&f);
    kapi_store *a = open_etcd(&f), *b = open_etcd(&f);
    CHECK_INT_EQ(put(a, KAPI_STORE_CREATE, "/c/n", "0", 0, NULL, NULL), KAPI_STORE_OK);
    CHECK_INT_EQ(sync_st(b, 3000), KAPI_STORE_OK);
    pthread_t t[4];
    incr in[4];
    for (int i = 0; i < 4; i++) {
        in[i] = (incr){i % 2 ? b : a, 25};
        pthread_create(&t[i], NULL, incr_main, &in[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK_INT_EQ(sync_st(a, 3000), KAPI_STORE_OK);
    kapi_obj *o = NULL;
    CHECK_INT_EQ(kapi_store_get(a, KAPI_STR("/c/n"), &o), KAPI_STORE_OK);
    CHECK(o && strstr(o->data, "\"v\":\"100\"") != NULL);
    kapi_obj_unref(o);
    kapi_store_free(a);
    kapi_store_free(b);
    etcd_fixture_stop(&f);
}

/* Consistent reads from many threads at once share probes, and each sees every write
 * acknowledged (on the other instance) before it started. */
typedef struct reader {
    kapi_store *st;
    _Atomic int64_t *acked;
    int bad;
} reader;

static void *reader_main(void *arg)
{
    reader *rd = arg;
    for (int i = 0; i < 40; i++) {
        int64_t before = atomic_load(rd->acked);
        if (sync_st(rd->st, 3000) != KAPI_STORE_OK || kapi_store_revision(rd->st) < before)
            rd->bad++;
    }
    return NULL;
}

TEST(store_etcd_concurrent_consistent_reads)
{
    etcd_fixture f = {.n = 1};
    etcd_fixture_start(&f);
    kapi_store *a = open_etcd(&f), *b = open_etcd(&f);
    _Atomic int64_t acked = 0;
    reader rd[12];
    pthread_t t[12];
    for (int i = 0; i < 12; i++) {
        rd[i] = (reader){.st = b, .acked = &acked};
        pthread_create(&t[i], NULL, reader_main, &rd[i]);
    }
    for (int i = 0; i < 60; i++) {
        char key[32];
        int64_t rev = 0;
        snprintf(key, sizeof(key), "/r/k%02d", i);
        CHECK_INT_EQ(put(a, KAPI_STORE_CREATE, key, "v", 0, &rev, NULL), KAPI_STORE_OK);
        atomic_store(&acked, rev);
    }
    for (int i = 0; i < 12; i++) {
        pthread_join(t[i], NULL);
        CHECK_INT_EQ(rd[i].bad, 0);
    }
    kapi_store_free(a);
    kapi_store_free(b);
    etcd_fixture_stop(&f);
}

/* An instance whose watch falls behind etcd's compaction (its member was down meanwhile)
 * reloads the state, and its watches are told (RESET: the api ends them with 410). */
typedef struct resets {
    pthread_mutex_t mu;
    int resets, others;
} resets;

static bool count_reset(void *ctx, const kapi_store_event *ev)
{
    resets *r = ctx;
    pthread_mutex_lock(&r->mu);
    if (ev->type == KAPI_STORE_EVENT_RESET)
        r->resets++;
    else if (ev->type != KAPI_STORE_EVENT_PROGRESS)
        r->others++;
    pthread_mutex_unlock(&r->mu);
    return true;
}

static bool has(kapi_store *st, const char *key)
{
    kapi_obj *o = NULL;
    bool found = kapi_store_get(st, kapi_str_c(key), &o) == KAPI_STORE_OK;
    kapi_obj_unref(o);
    return found;
}

TEST(store_etcd_reload_after_compaction)
{
    etcd_fixture f = {.n = 3};
    etcd_fixture_start(&f);
    kapi_store *a = NULL, *b = NULL;
    kapi_store_options oa = {.etcd = {.servers = f.m[1].url, .prefix = "/t"}};
    kapi_store_options ob = {.etcd = {.servers = f.m[0].url, .prefix = "/t"}};
    CHECK(kapi_store_open(&a, &oa) == NULL);
    CHECK(kapi_store_open(&b, &ob) == NULL);
    resets r = {.mu = PTHREAD_MUTEX_INITIALIZER};
    kapi_store_watch *w = NULL;
    int64_t oldest, r1 = 0;
    CHECK_INT_EQ(put(a, KAPI_STORE_CREATE, "/x/1", "v", 0, &r1, NULL), KAPI_STORE_OK);
    CHECK_INT_EQ(sync_st(b, 3000), KAPI_STORE_OK);
    CHECK(has(b, "/x/1"));
    CHECK_INT_EQ(kapi_store_watch_start(b, KAPI_STR("/x/"), kapi_store_revision(b), count_reset, &r,
                                        &w, &oldest),
                 KAPI_STORE_OK);
    /* b's only member goes down; meanwhile the others change and compact. */
    etcd_fixture_kill(&f, 0);
    /* (Until the two left have elected a leader, if it was m0, reads fail.) */
    for (int i = 0; i < 100 && sync_st(a, 3000) != KAPI_STORE_OK; i++) {
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    CHECK_INT_EQ(put(a, KAPI_STORE_CREATE, "/x/2", "v", 0, NULL, NULL), KAPI_STORE_OK);
    int64_t last = 0;
    CHECK_INT_EQ(put(a, KAPI_STORE_DELETE, "/x/1", NULL, 0, &last, NULL), KAPI_STORE_OK);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.m[1].url);
    CHECK_INT_EQ(kapi_etcd_compact(c, last, true, 0, NULL), KAPI_ETCD_OK);
    kapi_etcd_client_free(c);
    etcd_fixture_restart(&f, 0);
    bool reloaded = false;
    for (int i = 0; i < 200 && !reloaded; i++) {
        reloaded = has(b, "/x/2") && !has(b, "/x/1");
        if (!reloaded) {
            struct timespec ts = {0, 50000000};
            nanosleep(&ts, NULL);
        }
    }
    CHECK(reloaded);
    pthread_mutex_lock(&r.mu);
    CHECK_INT_EQ(r.resets, 1);
    pthread_mutex_unlock(&r.mu);
    kapi_store_watch *old = NULL;
    CHECK_INT_EQ(kapi_store_watch_start(b, KAPI_STR("/x/"), r1, count_reset, &r, &old, &oldest),
                 KAPI_STORE_GONE);
    /* And b goes on following. */
    CHECK_INT_EQ(put(a, KAPI_STORE_CREATE, "/x/3", "v", 0, NULL, NULL), KAPI_STORE_OK);
    CHECK_INT_EQ(sync_st(b, 5000), KAPI_STORE_OK);
    CHECK(has(b, "/x/3"));
    kapi_store_watch_stop(b, w);
    kapi_store_free(a);
    kapi_store_free(b);
    etcd_fixture_stop(&f);
}

/* A consistent read whose cache lags behind etcd reads etcd at the revision sync learnt:
 * it holds every acknowledged write, as kube-apiserver's fallback does. */
TEST(store_etcd_lagging_cache_reads_etcd)
{
    etcd_fixture f = {.n = 1};
    etcd_fixture_start(&f);
    holder h = HOLDER_INIT;
    kapi_store_options ob = {
        .etcd = {.servers = f.servers, .prefix = "/t"},
        .observer = holder_observe,
        .observer_ctx = &h,
    };
    kapi_store *a = open_etcd(&f), *b = NULL;
    CHECK(kapi_store_open(&b, &ob) == NULL);
    int64_t r1, r2, behind = 0;
    holder_set(&h, true);
    CHECK_INT_EQ(put(a, KAPI_STORE_CREATE, "/ns/1", "one", 0, &r1, NULL), KAPI_STORE_OK);
    holder_wait_held(&h);
    /* b's follower is held at r1; a writes on. */
    CHECK_INT_EQ(put(a, KAPI_STORE_CREATE, "/ns/2", "two", 0, &r2, NULL), KAPI_STORE_OK);
    CHECK_INT_EQ(kapi_store_sync(b, 100, &behind), KAPI_STORE_TOO_NEW);
    CHECK(behind >= r2);
    CHECK(kapi_store_revision(b) < r2);
    kapi_store_list_opts q = {.prefix = KAPI_STR("/ns/"), .rev = behind};
    kapi_store_list_result l;
    CHECK_INT_EQ(kapi_store_list(b, &q, &l), KAPI_STORE_OK);
    CHECK_INT_EQ(l.n, 2);
    CHECK_INT_EQ(l.rev, behind);
    CHECK(l.n == 2 && l.items[1]->rev == r2 && strstr(l.items[1]->data, "\"v\":\"two\"") != NULL);
    kapi_store_list_dispose(&l);
    /* Past etcd's own revision: too new, from etcd too. */
    q.rev = behind + 1000;
    CHECK_INT_EQ(kapi_store_list(b, &q, &l), KAPI_STORE_TOO_NEW);
    kapi_store_list_dispose(&l);
    holder_set(&h, false);
    CHECK_INT_EQ(kapi_store_sync(b, 3000, &behind), KAPI_STORE_OK);
    CHECK_INT_EQ(behind, 0);
    CHECK(has(b, "/ns/2"));
    kapi_store_free(a);
    kapi_store_free(b);
    etcd_fixture_stop(&f);
}
