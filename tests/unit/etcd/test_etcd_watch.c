/* The etcd client's watches against a real single-member etcd: events in revision order
 * with prev_kv, a start revision in the past, progress notifications (periodic and asked
 * for), a compacted start revision, a consumer that falls behind (flow control), and
 * cancelling a watch while the client goes on. */
#include <string.h>

#include "etcd/etcd_int.h"
#include "etcd_fixture.h"
#include "test.h"

#define MS 1000000LL

/* The watch's next message within ms, or the test fails. */
static kapi_etcd_watch_response *next_within(kapi_etcd_watch *w, int ms)
{
    kapi_etcd_watch_response *r;
    kapi_error *err = NULL;
    kapi_etcd_rc rc = kapi_etcd_watch_next(w, kapi_time_mono_ns() + ms * MS, &r, &err);
    if (rc != KAPI_ETCD_OK)
        test_fail(__FILE__, __LINE__, "watch: %s: %s", kapi_etcd_rc_name(rc),
                  err ? err->message : "");
    return r;
}

/* The watch's next message that carries events. */
static kapi_etcd_watch_response *next_events(kapi_etcd_watch *w)
{
    for (;;) {
        kapi_etcd_watch_response *r = next_within(w, 3000);
        if (r->nevents)
            return r;
        kapi_etcd_watch_response_free(r);
    }
}

static void expect_created(kapi_etcd_watch *w)
{
    kapi_etcd_watch_response *r = next_within(w, 3000);
    CHECK(r->created);
    CHECK_INT_EQ(r->nevents, 0);
    kapi_etcd_watch_response_free(r);
}

static kapi_etcd_watch *watch_prefix(kapi_etcd_client *c, const char *prefix, int64_t start,
                                     kapi_buf *end)
{
    kapi_buf_init(end);
    kapi_etcd_prefix_end(end, kapi_str_c(prefix));
    kapi_etcd_watch_options o = {.key = kapi_str_c(prefix),
                                 .range_end = {end->ptr, end->len},
                                 .start_revision = start,
                                 .prev_kv = true,
                                 .progress_notify = true};
    return kapi_etcd_watch_new(c, &o);
}

static void check_event(const kapi_etcd_event *ev, kapi_etcd_event_type type, const char *key,
                        int64_t rev)
{
    CHECK_INT_EQ(ev->type, type);
    CHECK(kapi_str_eqc(ev->kv.key, key));
    CHECK_INT_EQ(ev->kv.mod_revision, rev);
}

static int64_t del(kapi_etcd_client *c, const char *key)
{
    kapi_etcd_op d = {.type = KAPI_ETCD_DELETE, .key = kapi_str_c(key)};
    kapi_etcd_txn_req txn = {.success = &d, .nsuccess = 1};
    kapi_etcd_response *r;
    CHECK_INT_EQ(kapi_etcd_txn(c, &txn, 0, &r, NULL), KAPI_ETCD_OK);
    int64_t rev = r->revision;
    kapi_etcd_response_free(r);
    return rev;
}

TEST(etcd_watch_events)
{
    etcd_fixture f = {0};
    etcd_fixture_start(&f);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.servers);
    kapi_buf end;
    int64_t r0 = etcd_put(c, "/w/a", "0");
    kapi_etcd_watch *w = watch_prefix(c, "/w/", 0, &end);
    expect_created(w);
    CHECK_INT_EQ(kapi_etcd_watch_revision(w), r0);

    int64_t r1 = etcd_put(c, "/w/a", "1");
    etcd_put(c, "/elsewhere", "x");
    int64_t r3 = etcd_put(c, "/w/b", "2");
    int64_t r4 = del(c, "/w/a");
    /* two keys in one Txn: one revision, one message */
    kapi_etcd_op puts[] = {
        {.type = KAPI_ETCD_PUT, .key = KAPI_STR("/w/c"), .value = KAPI_STR("c")},
        {.type = KAPI_ETCD_PUT, .key = KAPI_STR("/w/d"), .value = KAPI_STR("d")}};
    kapi_etcd_txn_req txn = {.success = puts, .nsuccess = 2};
    kapi_etcd_response *tr;
    CHECK_INT_EQ(kapi_etcd_txn(c, &txn, 0, &tr, NULL), KAPI_ETCD_OK);
    int64_t r5 = tr->revision;
    kapi_etcd_response_free(tr);

    /* every change under the prefix, in revision order, with the state before */
    kapi_etcd_event got[8];
    kapi_etcd_watch_response *rs[8];
    size_t n = 0, nr = 0;
    while (n < 5) {
        kapi_etcd_watch_response *r = next_events(w);
        for (size_t i = 0; i < r->nevents && n < 8; i++)
            got[n++] = r->events[i];
        rs[nr++] = r;
    }
    CHECK_INT_EQ(n, 5);
    check_event(&got[0], KAPI_ETCD_EVENT_PUT, "/w/a", r1);
    CHECK(kapi_str_eqc(got[0].kv.value, "1"));
    CHECK(got[0].has_prev && kapi_str_eqc(got[0].prev_kv.value, "0"));
    CHECK_INT_EQ(got[0].prev_kv.mod_revision, r0);
    check_event(&got[1], KAPI_ETCD_EVENT_PUT, "/w/b", r3);
    CHECK(!got[1].has_prev); /* created: nothing before */
    CHECK_INT_EQ(got[1].kv.version, 1);
    check_event(&got[2], KAPI_ETCD_EVENT_DELETE, "/w/a", r4);
    CHECK(got[2].has_prev && kapi_str_eqc(got[2].prev_kv.value, "1"));
    check_event(&got[3], KAPI_ETCD_EVENT_PUT, "/w/c", r5);
    check_event(&got[4], KAPI_ETCD_EVENT_PUT, "/w/d", r5);
    CHECK_INT_EQ(kapi_etcd_watch_revision(w), r5);
    for (size_t i = 0; i < nr; i++)
        kapi_etcd_watch_response_free(rs[i]);

    /* nothing more: WAIT, and the watch goes on */
    kapi_etcd_watch_response *r;
    CHECK_INT_EQ(kapi_etcd_watch_next(w, kapi_time_mono_ns() + 50 * MS, &r, NULL), KAPI_ETCD_WAIT);
    CHECK(r == NULL);
    int64_t r6 = etcd_put(c, "/w/e", "e");
    r = next_events(w);
    check_event(&r->events[0], KAPI_ETCD_EVENT_PUT, "/w/e", r6);
    kapi_etcd_watch_response_free(r);

    kapi_etcd_watch_free(w);
    kapi_buf_dispose(&end);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

/* From a past revision, the history after it comes first. */
TEST(etcd_watch_from_revision)
{
    etcd_fixture f = {0};
    etcd_fixture_start(&f);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.servers);
    kapi_buf end;
    int64_t r1 = etcd_put(c, "/h/x", "1");
    etcd_put(c, "/h/x", "2");
    int64_t r3 = etcd_put(c, "/h/y", "3");
    kapi_etcd_watch *w = watch_prefix(c, "/h/", r1 + 1, &end);
    CHECK_INT_EQ(kapi_etcd_watch_revision(w), r1);
    expect_created(w);
    CHECK_INT_EQ(kapi_etcd_watch_revision(w), r1); /* created says nothing of the history */
    kapi_etcd_watch_response *r = next_events(w);
    CHECK_INT_EQ(r->nevents, 2);
    check_event(&r->events[0], KAPI_ETCD_EVENT_PUT, "/h/x", r1 + 1);
    check_event(&r->events[1], KAPI_ETCD_EVENT_PUT, "/h/y", r3);
    CHECK(kapi_str_eqc(r->events[0].prev_kv.value, "1"));
    CHECK_INT_EQ(kapi_etcd_watch_revision(w), r3);
    kapi_etcd_watch_response_free(r);
    kapi_etcd_watch_free(w);
    kapi_buf_dispose(&end);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

/* Progress notifications: etcd's periodic ones (progress_notify, every 100 ms here) and
 * one asked for; each says every change up to its revision has been delivered. */
TEST(etcd_watch_progress)
{
    etcd_fixture f = {.extra = {"--experimental-watch-progress-notify-interval", "100ms"}};
    etcd_fixture_start(&f);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.servers);
    kapi_buf end;
    kapi_etcd_watch *w = watch_prefix(c, "/p/", 0, &end);
    expect_created(w);
    int64_t rev = etcd_put(c, "/other", "moves the revision, not the watch");
    kapi_etcd_watch_response *r = next_within(w, 3000);
    CHECK(!r->created);
    CHECK_INT_EQ(r->nevents, 0);
    CHECK_INT_EQ(r->revision, rev);
    CHECK_INT_EQ(kapi_etcd_watch_revision(w), rev);
    kapi_etcd_watch_response_free(r);
    kapi_etcd_watch_free(w);

    /* asked for, on a watch without periodic ones */
    kapi_etcd_watch_options o = {.key = KAPI_STR("/q")};
    w = kapi_etcd_watch_new(c, &o);
    expect_created(w);
    rev = etcd_put(c, "/other", "again");
    kapi_etcd_watch_progress(w);
    r = next_within(w, 3000);
    CHECK(!r->created && r->nevents == 0);
    CHECK_INT_EQ(r->revision, rev);
    kapi_etcd_watch_response_free(r);
    kapi_etcd_watch_free(w);

    kapi_buf_dispose(&end);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

/* A watch from a compacted revision ends with COMPACTED, a 410, and says the compacted
 * revision; every later call says the same. */
TEST(etcd_watch_compacted)
{
    etcd_fixture f = {0};
    etcd_fixture_start(&f);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.servers);
    kapi_buf end;
    int64_t r1 = etcd_put(c, "/c/k", "1");
    etcd_put(c, "/c/k", "2");
    int64_t r3 = etcd_put(c, "/c/k", "3");
    CHECK_INT_EQ(kapi_etcd_compact(c, r3, false, 0, NULL), KAPI_ETCD_OK);

    kapi_etcd_watch *w = watch_prefix(c, "/c/", r1, &end);
    kapi_etcd_watch_response *r = NULL;
    kapi_error *err = NULL;
    kapi_etcd_rc rc;
    while ((rc = kapi_etcd_watch_next(w, kapi_time_mono_ns() + 3000 * MS, &r, &err)) ==
           KAPI_ETCD_OK) {
        CHECK_INT_EQ(r->nevents, 0); /* only created comes before */
        kapi_etcd_watch_response_free(r);
    }
    CHECK_INT_EQ(rc, KAPI_ETCD_COMPACTED);
    CHECK_INT_EQ(err->status, KAPI_STATUS_GONE);
    CHECK_INT_EQ(kapi_etcd_watch_compact_revision(w), r3);
    kapi_error_free(err);
    CHECK_INT_EQ(kapi_etcd_watch_next(w, 0, &r, NULL), KAPI_ETCD_COMPACTED);
    kapi_etcd_watch_free(w);

    /* from the compacted revision on, the watch works */
    kapi_buf_dispose(&end);
    w = watch_prefix(c, "/c/", r3, &end);
    r = next_events(w);
    check_event(&r->events[0], KAPI_ETCD_EVENT_PUT, "/c/k", r3);
    kapi_etcd_watch_response_free(r);
    kapi_etcd_watch_free(w);

    kapi_buf_dispose(&end);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

#define SLOW_VALUE 6000
#define SLOW_PUTS 300

/* A consumer that does not read: the watch's queue stops growing past its bound plus
 * what one stream window lets etcd send, and once the consumer reads, every event comes,
 * in order; meanwhile the connection serves calls. */
TEST(etcd_watch_slow_consumer)
{
    etcd_fixture f = {0};
    etcd_fixture_start(&f);
    kapi_etcd_options o = {.servers = f.servers, .watch_queue_bytes = 64 * 1024};
    kapi_etcd_client *c;
    CHECK(kapi_etcd_client_new(&c, &o) == NULL);
    kapi_buf end;
    kapi_etcd_watch *w = watch_prefix(c, "/s/", 0, &end);
    expect_created(w);
    char *value = kapi_xcalloc(1, SLOW_VALUE + 1);
    memset(value, 'v', SLOW_VALUE);
    int64_t first = 0;
    for (int i = 0; i < SLOW_PUTS; i++) {
        char key[32];
        snprintf(key, sizeof(key), "/s/%04d", i);
        int64_t rev = etcd_put(c, key, value);
        first = first ? first : rev;
    }
    pthread_mutex_lock(kapi_etcd__mu(c));
    size_t queued = w->queued;
    pthread_mutex_unlock(kapi_etcd__mu(c));
    /* with prev_kv off for creates, each event is about SLOW_VALUE bytes */
    CHECK(queued < 64 * 1024 + (1 << 20) + 2 * SLOW_VALUE);
    CHECK(queued < (size_t)SLOW_PUTS * SLOW_VALUE);

    int64_t want = first;
    while (want < first + SLOW_PUTS) {
        kapi_etcd_watch_response *r = next_events(w);
        for (size_t i = 0; i < r->nevents; i++)
            CHECK_INT_EQ(r->events[i].kv.mod_revision, want++);
        kapi_etcd_watch_response_free(r);
    }
    free(value);
    kapi_etcd_watch_free(w);
    kapi_buf_dispose(&end);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

/* Freeing a watch resets its stream only: the client and its other watches go on. */
TEST(etcd_watch_free_while_streaming)
{
    etcd_fixture f = {0};
    etcd_fixture_start(&f);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.servers);
    kapi_buf e1, e2;
    kapi_etcd_watch *a = watch_prefix(c, "/f/", 0, &e1);
    kapi_etcd_watch *b = watch_prefix(c, "/f/", 0, &e2);
    expect_created(a);
    expect_created(b);
    etcd_put(c, "/f/1", "x");
    kapi_etcd_watch_free(a); /* with an event not taken */
    int64_t rev = etcd_put(c, "/f/2", "y");
    kapi_etcd_watch_response *r = next_events(b);
    if (r->nevents == 1) {
        kapi_etcd_watch_response_free(r);
        r = next_events(b);
    }
    check_event(&r->events[r->nevents - 1], KAPI_ETCD_EVENT_PUT, "/f/2", rev);
    kapi_etcd_watch_response_free(r);
    kapi_etcd_watch_free(b);
    char *v = etcd_get(c, "/f/1", 0);
    CHECK_STR_EQ(v, "x");
    free(v);
    kapi_buf_dispose(&e1);
    kapi_buf_dispose(&e2);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}
