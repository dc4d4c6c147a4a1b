/* The etcd client under concurrency and failure: 64 threads of Txns on one connection
 * with no lost update, a first endpoint that refuses, a member killed and restarted (calls
 * and watches report it, then go on), a member of three killed under write load (no
 * acknowledged write lost, the watch resumes without a gap), a member that stops
 * answering (deadlines, keepalive), and TLS with client certificates. */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "etcd_fixture.h"
#include "test.h"

#define MS 1000000LL

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * MS};
    nanosleep(&ts, NULL);
}

/* ---- 64 threads at once ---- */

#define THREADS 64
#define CREATES 10
#define INCREMENTS 5

typedef struct worker {
    kapi_etcd_client *c;
    int id;
    int64_t revs[CREATES + INCREMENTS];
    int nrevs;
    int failed;
} worker;

/* counter += 1 by compare-and-swap on its mod_revision, retried on a lost race with the
 * state the failure branch read. */
static void increment(worker *wk)
{
    kapi_etcd_op get = {.type = KAPI_ETCD_RANGE, .key = KAPI_STR("/counter")};
    long value = 0;
    int64_t mod = 0;
    for (int tries = 0; tries < 1000; tries++) {
        char next[32];
        snprintf(next, sizeof(next), "%ld", value + 1);
        kapi_etcd_compare at = {
            .key = KAPI_STR("/counter"), .target = KAPI_ETCD_MOD, .number = mod};
        kapi_etcd_op put = {
            .type = KAPI_ETCD_PUT, .key = KAPI_STR("/counter"), .value = kapi_str_c(next)};
        kapi_etcd_txn_req txn = {.compare = &at,
                                 .ncompare = 1,
                                 .success = &put,
                                 .nsuccess = 1,
                                 .failure = &get,
                                 .nfailure = 1};
        kapi_etcd_response *r;
        if (kapi_etcd_txn(wk->c, &txn, 0, &r, NULL) != KAPI_ETCD_OK) {
            wk->failed++;
            return;
        }
        if (r->succeeded) {
            wk->revs[wk->nrevs++] = r->revision;
            kapi_etcd_response_free(r);
            return;
        }
        const kapi_etcd_op_result *cur = &r->ops[0];
        mod = cur->nkvs ? cur->kvs[0].mod_revision : 0;
        char digits[32] = "0";
        if (cur->nkvs)
            snprintf(digits, sizeof(digits), "%.*s", KAPI_STR_FMT(cur->kvs[0].value));
        value = strtol(digits, NULL, 10);
        kapi_etcd_response_free(r);
    }
    wk->failed++;
}

static void *work(void *arg)
{
    worker *wk = arg;
    for (int i = 0; i < CREATES; i++) {
        char key[32];
        snprintf(key, sizeof(key), "/t/%02d/%02d", wk->id, i);
        kapi_etcd_compare absent = {.key = kapi_str_c(key), .target = KAPI_ETCD_CREATE};
        kapi_etcd_op put = {.type = KAPI_ETCD_PUT, .key = kapi_str_c(key), .value = KAPI_STR("v")};
        kapi_etcd_txn_req txn = {.compare = &absent, .ncompare = 1, .success = &put, .nsuccess = 1};
        kapi_etcd_response *r;
        if (kapi_etcd_txn(wk->c, &txn, 0, &r, NULL) != KAPI_ETCD_OK || !r->succeeded)
            wk->failed++;
        else
            wk->revs[wk->nrevs++] = r->revision;
        kapi_etcd_response_free(r);
        if (i < INCREMENTS)
            increment(wk);
    }
    return NULL;
}

static int cmp_rev(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

TEST(etcd_concurrent_txns)
{
    etcd_fixture f = {0};
    etcd_fixture_start(&f);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.servers);
    static worker wk[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        wk[i] = (worker){.c = c, .id = i};
        pthread_create(&th[i], NULL, work, &wk[i]);
    }
    int64_t all[THREADS * (CREATES + INCREMENTS)];
    size_t n = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK_INT_EQ(wk[i].failed, 0);
        memcpy(all + n, wk[i].revs, wk[i].nrevs * sizeof(int64_t));
        n += wk[i].nrevs;
    }
    CHECK_INT_EQ(n, THREADS * (CREATES + INCREMENTS));
    /* every write its own revision; no increment lost */
    qsort(all, n, sizeof(all[0]), cmp_rev);
    for (size_t i = 1; i < n; i++)
        CHECK(all[i] > all[i - 1]);
    char *v = etcd_get(c, "/counter", 0);
    CHECK_INT_EQ(atoi(v), THREADS * INCREMENTS);
    free(v);
    kapi_etcd_op count = {.type = KAPI_ETCD_RANGE,
                          .key = KAPI_STR("/t/"),
                          .range_end = KAPI_STR("/t0"),
                          .count_only = true};
    kapi_etcd_response *r;
    CHECK_INT_EQ(kapi_etcd_range(c, &count, 0, &r, NULL), KAPI_ETCD_OK);
    CHECK_INT_EQ(r->ops[0].count, THREADS * CREATES);
    kapi_etcd_response_free(r);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

/* ---- endpoints ---- */

TEST(etcd_failover_refused_first)
{
    etcd_fixture f = {0};
    etcd_fixture_start(&f);
    char servers[256];
    snprintf(servers, sizeof(servers), "http://127.0.0.1:%d,%s", etcd_fixture_free_port(),
             f.m[0].url);
    kapi_etcd_client *c = etcd_fixture_client(&f, servers);
    int64_t t0 = kapi_time_mono_ns();
    etcd_put(c, "/k", "v");
    CHECK(kapi_time_mono_ns() - t0 < 1000 * MS); /* a refusal moves on at once */
    CHECK_STR_EQ(kapi_etcd_client_endpoint(c), f.m[0].url);
    kapi_etcd_client_free(c);

    /* no endpoint at all: UNAVAILABLE at the deadline, saying why */
    snprintf(servers, sizeof(servers), "http://127.0.0.1:%d", etcd_fixture_free_port());
    c = etcd_fixture_client(&f, servers);
    kapi_etcd_op get = {.type = KAPI_ETCD_RANGE, .key = KAPI_STR("/k")};
    kapi_etcd_response *r;
    kapi_error *err = NULL;
    CHECK_INT_EQ(kapi_etcd_range(c, &get, kapi_time_mono_ns() + 300 * MS, &r, &err),
                 KAPI_ETCD_UNAVAILABLE);
    CHECK_INT_EQ(err->status, KAPI_STATUS_SERVICE_UNAVAILABLE);
    CHECK(strstr(err->message, "Connection refused") != NULL);
    kapi_error_free(err);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

typedef struct pending_put {
    kapi_etcd_client *c;
    kapi_etcd_rc rc;
} pending_put;

static void *put_later(void *arg)
{
    pending_put *p = arg;
    kapi_etcd_op put = {
        .type = KAPI_ETCD_PUT, .key = KAPI_STR("/r/while-down"), .value = KAPI_STR("w")};
    kapi_etcd_txn_req txn = {.success = &put, .nsuccess = 1};
    kapi_etcd_response *r = NULL;
    p->rc = kapi_etcd_txn(p->c, &txn, kapi_time_mono_ns() + 10000 * MS, &r, NULL);
    kapi_etcd_response_free(r);
    return NULL;
}

/* A member killed: the watch reports BROKEN with the last revision it delivered, calls
 * wait for a connection; restarted, the waiting call goes through and a watch made from
 * revision + 1 continues without a gap. */
TEST(etcd_failover_restart)
{
    etcd_fixture f = {0};
    etcd_fixture_start(&f);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.servers);
    kapi_etcd_watch_options o = {.key = KAPI_STR("/r/"), .range_end = KAPI_STR("/r0")};
    kapi_etcd_watch *w = kapi_etcd_watch_new(c, &o);
    kapi_etcd_watch_response *r;
    kapi_error *err = NULL;
    int64_t rev = etcd_put(c, "/r/1", "a");
    while (kapi_etcd_watch_revision(w) < rev) {
        CHECK_INT_EQ(kapi_etcd_watch_next(w, kapi_time_mono_ns() + 3000 * MS, &r, NULL),
                     KAPI_ETCD_OK);
        kapi_etcd_watch_response_free(r);
    }

    etcd_fixture_kill(&f, 0);
    CHECK_INT_EQ(kapi_etcd_watch_next(w, kapi_time_mono_ns() + 3000 * MS, &r, &err),
                 KAPI_ETCD_BROKEN);
    CHECK(strstr(err->message, "connection lost") != NULL);
    kapi_error_free(err);
    CHECK_INT_EQ(kapi_etcd_watch_revision(w), rev);
    kapi_etcd_watch_free(w);

    /* a call while it is down: never sent, so UNAVAILABLE at its deadline */
    kapi_etcd_op get = {.type = KAPI_ETCD_RANGE, .key = KAPI_STR("/r/1")};
    kapi_etcd_response *gr;
    CHECK_INT_EQ(kapi_etcd_range(c, &get, kapi_time_mono_ns() + 200 * MS, &gr, NULL),
                 KAPI_ETCD_UNAVAILABLE);
    /* one with a long deadline waits for the member to come back */
    pending_put p = {.c = c};
    pthread_t th;
    pthread_create(&th, NULL, put_later, &p);
    sleep_ms(200);
    etcd_fixture_restart(&f, 0);
    pthread_join(th, NULL);
    CHECK_INT_EQ(p.rc, KAPI_ETCD_OK);

    int64_t after = etcd_put(c, "/r/2", "b");
    o.start_revision = rev + 1;
    w = kapi_etcd_watch_new(c, &o);
    int seen = 0;
    while (kapi_etcd_watch_revision(w) < after) {
        CHECK_INT_EQ(kapi_etcd_watch_next(w, kapi_time_mono_ns() + 3000 * MS, &r, NULL),
                     KAPI_ETCD_OK);
        for (size_t i = 0; i < r->nevents; i++, seen++)
            CHECK_INT_EQ(r->events[i].kv.mod_revision, rev + 1 + seen);
        kapi_etcd_watch_response_free(r);
    }
    CHECK_INT_EQ(seen, 2); /* the put made while down, then /r/2 */
    kapi_etcd_watch_free(w);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

/* ---- a member of three killed under load ---- */

#define WRITERS 4

typedef struct writer {
    kapi_etcd_client *c;
    int id;
    bool *stop; /* read and written atomically */
    int acked, unknown, retried;
    bool lost;
} writer;

/* create-if-absent, retried until it is known to have happened: UNAVAILABLE is retried
 * as is; UNKNOWN is resolved by the failure branch of the retry (the key exists with our
 * value: it was applied). */
static bool create_surely(writer *wr, const char *key)
{
    kapi_etcd_compare absent = {.key = kapi_str_c(key), .target = KAPI_ETCD_CREATE};
    kapi_etcd_op put = {.type = KAPI_ETCD_PUT, .key = kapi_str_c(key), .value = kapi_str_c(key)};
    kapi_etcd_op get = {.type = KAPI_ETCD_RANGE, .key = kapi_str_c(key)};
    kapi_etcd_txn_req txn = {.compare = &absent,
                             .ncompare = 1,
                             .success = &put,
                             .nsuccess = 1,
                             .failure = &get,
                             .nfailure = 1};
    for (int64_t until = kapi_time_mono_ns() + 10000 * MS; kapi_time_mono_ns() < until;) {
        kapi_etcd_response *r;
        kapi_etcd_rc rc = kapi_etcd_txn(wr->c, &txn, kapi_time_mono_ns() + 1000 * MS, &r, NULL);
        wr->unknown += rc == KAPI_ETCD_UNKNOWN;
        wr->retried += rc != KAPI_ETCD_OK;
        if (rc != KAPI_ETCD_OK)
            continue;
        bool ok = r->succeeded || (r->ops[0].nkvs && kapi_str_eqc(r->ops[0].kvs[0].value, key));
        kapi_etcd_response_free(r);
        return ok;
    }
    return false;
}

static void *write_loop(void *arg)
{
    writer *wr = arg;
    for (int i = 0; !__atomic_load_n(wr->stop, __ATOMIC_ACQUIRE); i++) {
        char key[32];
        snprintf(key, sizeof(key), "/l/%d/%05d", wr->id, i);
        if (!create_surely(wr, key)) {
            wr->lost = true;
            return NULL;
        }
        wr->acked++;
    }
    return NULL;
}

/* Reads the watch until it has reached rev, re-creating it from revision + 1 whenever it
 * breaks; counts the events, which must come with strictly increasing revisions. */
static int follow(kapi_etcd_client *c, kapi_etcd_watch **w, int64_t rev, int64_t *last, int *breaks)
{
    int events = 0;
    while (kapi_etcd_watch_revision(*w) < rev) {
        kapi_etcd_watch_response *r;
        kapi_etcd_rc rc = kapi_etcd_watch_next(*w, kapi_time_mono_ns() + 5000 * MS, &r, NULL);
        if (rc == KAPI_ETCD_BROKEN || rc == KAPI_ETCD_UNAVAILABLE) {
            kapi_etcd_watch_options o = {.key = KAPI_STR("/l/"),
                                         .range_end = KAPI_STR("/l0"),
                                         .start_revision = kapi_etcd_watch_revision(*w) + 1};
            kapi_etcd_watch_free(*w);
            *w = kapi_etcd_watch_new(c, &o);
            (*breaks)++;
            continue;
        }
        CHECK_INT_EQ(rc, KAPI_ETCD_OK);
        for (size_t i = 0; i < r->nevents; i++, events++) {
            CHECK(r->events[i].kv.mod_revision > *last);
            *last = r->events[i].kv.mod_revision;
        }
        kapi_etcd_watch_response_free(r);
    }
    return events;
}

TEST(etcd_failover_cluster_kill)
{
    etcd_fixture f = {.n = 3, .extra = {"--heartbeat-interval", "10", "--election-timeout", "100"}};
    etcd_fixture_start(&f);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.servers);
    kapi_etcd_watch_options o = {
        .key = KAPI_STR("/l/"), .range_end = KAPI_STR("/l0"), .start_revision = 1};
    kapi_etcd_watch *w = kapi_etcd_watch_new(c, &o);
    bool stop = false;
    writer wr[WRITERS];
    pthread_t th[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        wr[i] = (writer){.c = c, .id = i, .stop = &stop};
        pthread_create(&th[i], NULL, write_loop, &wr[i]);
    }
    sleep_ms(300);
    const char *before = kapi_etcd_client_endpoint(c);
    int victim = 0;
    while (strcmp(f.m[victim].url, before) != 0)
        victim++;
    etcd_fixture_kill(&f, victim);
    sleep_ms(600);
    __atomic_store_n(&stop, true, __ATOMIC_RELEASE);
    int acked = 0, unknown = 0, retried = 0;
    for (int i = 0; i < WRITERS; i++) {
        pthread_join(th[i], NULL);
        CHECK(!wr[i].lost);
        acked += wr[i].acked;
        unknown += wr[i].unknown;
        retried += wr[i].retried;
    }
    CHECK(strcmp(kapi_etcd_client_endpoint(c), before) != 0);
    CHECK(acked > 20);

    /* every acknowledged write is there, read through a survivor */
    kapi_etcd_op count = {.type = KAPI_ETCD_RANGE,
                          .key = KAPI_STR("/l/"),
                          .range_end = KAPI_STR("/l0"),
                          .count_only = true};
    kapi_etcd_response *r;
    CHECK_INT_EQ(kapi_etcd_range(c, &count, 0, &r, NULL), KAPI_ETCD_OK);
    CHECK_INT_EQ(r->ops[0].count, acked);
    int64_t rev = r->revision;
    kapi_etcd_response_free(r);

    /* and the watch, re-created from where it broke, saw each exactly once */
    int64_t last = 0;
    int breaks = 0;
    CHECK_INT_EQ(follow(c, &w, rev, &last, &breaks), acked);
    printf("  %d writes acknowledged, %d calls retried (%d of unknown outcome), %d watch "
           "re-creations\n",
           acked, retried, unknown, breaks);
    kapi_etcd_watch_free(w);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

/* ---- a member that stops answering ---- */

TEST(etcd_deadline_and_keepalive)
{
    /* etcd ends a connection whose PINGs come closer than --grpc-keepalive-min-time (5 s
     * by default) with GOAWAY "too_many_pings" */
    etcd_fixture f = {.extra = {"--grpc-keepalive-min-time", "100ms"}};
    etcd_fixture_start(&f);
    kapi_etcd_options o = {.servers = f.servers, .keepalive_ms = 200, .call_timeout_ms = 3000};
    kapi_etcd_client *c;
    CHECK(kapi_etcd_client_new(&c, &o) == NULL);
    etcd_put(c, "/k", "v");
    kapi_etcd_watch_options wo = {.key = KAPI_STR("/k")};
    kapi_etcd_watch *w = kapi_etcd_watch_new(c, &wo);
    kapi_etcd_watch_response *wr;
    CHECK_INT_EQ(kapi_etcd_watch_next(w, kapi_time_mono_ns() + 3000 * MS, &wr, NULL), KAPI_ETCD_OK);
    kapi_etcd_watch_response_free(wr);

    /* a member that answers the PINGs keeps the idle watch */
    CHECK_INT_EQ(kapi_etcd_watch_next(w, kapi_time_mono_ns() + 1500 * MS, &wr, NULL),
                 KAPI_ETCD_WAIT);

    int status;
    kill(f.m[0].pid, SIGSTOP);
    waitpid(f.m[0].pid, &status, WUNTRACED); /* stopped, every thread of it */
    /* sent, never answered: UNKNOWN at the deadline, a 504 */
    kapi_etcd_op get = {.type = KAPI_ETCD_RANGE, .key = KAPI_STR("/k")};
    kapi_etcd_response *r;
    kapi_error *err = NULL;
    int64_t t0 = kapi_time_mono_ns();
    CHECK_INT_EQ(kapi_etcd_range(c, &get, t0 + 150 * MS, &r, &err), KAPI_ETCD_UNKNOWN);
    CHECK(kapi_time_mono_ns() - t0 < 1000 * MS);
    CHECK_INT_EQ(err->status, KAPI_STATUS_TIMEOUT);
    kapi_error_free(err);
    err = NULL;
    /* the unanswered keepalive PING drops the connection: the watch breaks */
    CHECK_INT_EQ(kapi_etcd_watch_next(w, kapi_time_mono_ns() + 3000 * MS, &wr, &err),
                 KAPI_ETCD_BROKEN);
    CHECK(strstr(err->message, "keepalive") != NULL);
    kapi_error_free(err);
    kapi_etcd_watch_free(w);

    kill(f.m[0].pid, SIGCONT);
    char *v = etcd_get(c, "/k", 0);
    CHECK_STR_EQ(v, "v");
    free(v);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

/* ---- TLS ---- */

TEST(etcd_tls_client_certificates)
{
    etcd_fixture f = {.tls = true};
    etcd_fixture_start(&f);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.servers);
    int64_t rev = etcd_put(c, "/tls", "secret");
    char *v = etcd_get(c, "/tls", rev);
    CHECK_STR_EQ(v, "secret");
    free(v);
    kapi_etcd_watch_options wo = {.key = KAPI_STR("/tls"), .start_revision = rev};
    kapi_etcd_watch *w = kapi_etcd_watch_new(c, &wo);
    kapi_etcd_watch_response *wr;
    do {
        CHECK_INT_EQ(kapi_etcd_watch_next(w, kapi_time_mono_ns() + 3000 * MS, &wr, NULL),
                     KAPI_ETCD_OK);
        kapi_etcd_watch_response_free(wr);
    } while (kapi_etcd_watch_revision(w) < rev);
    kapi_etcd_watch_free(w);
    kapi_etcd_client_free(c);

    /* etcd's certificate does not verify against another CA */
    char ca[400];
    snprintf(ca, sizeof(ca), "%s/other-ca.crt", f.tls_dir);
    kapi_etcd_options o = {.servers = f.servers, .ca_file = ca};
    CHECK(kapi_etcd_client_new(&c, &o) == NULL);
    kapi_etcd_op get = {.type = KAPI_ETCD_RANGE, .key = KAPI_STR("/tls")};
    kapi_etcd_response *r;
    kapi_error *err = NULL;
    CHECK_INT_EQ(kapi_etcd_range(c, &get, kapi_time_mono_ns() + 500 * MS, &r, &err),
                 KAPI_ETCD_UNAVAILABLE);
    CHECK(strstr(err->message, "certificate") != NULL);
    kapi_error_free(err);
    kapi_etcd_client_free(c);

    /* without a client certificate etcd refuses the connection */
    snprintf(ca, sizeof(ca), "%s/ca.crt", f.tls_dir);
    CHECK(kapi_etcd_client_new(&c, &o) == NULL);
    CHECK(kapi_etcd_range(c, &get, kapi_time_mono_ns() + 500 * MS, &r, NULL) != KAPI_ETCD_OK);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

/* A member that loses its quorum ends the watches that asked for a leader ("hasleader"):
 * the watch reports BROKEN rather than going silent, and the client leaves the member. */
TEST(etcd_watch_no_leader)
{
    /* a short election timeout: etcd ends such watches after a few of them without leader */
    etcd_fixture f = {.n = 3, .extra = {"--heartbeat-interval", "10", "--election-timeout", "100"}};
    etcd_fixture_start(&f);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.m[0].url);
    kapi_etcd_watch_options o = {.key = KAPI_STR("/n")};
    kapi_etcd_watch *w = kapi_etcd_watch_new(c, &o);
    kapi_etcd_watch_response *r;
    kapi_error *err = NULL;
    CHECK_INT_EQ(kapi_etcd_watch_next(w, kapi_time_mono_ns() + 3000 * MS, &r, NULL), KAPI_ETCD_OK);
    kapi_etcd_watch_response_free(r);
    etcd_fixture_kill(&f, 1);
    etcd_fixture_kill(&f, 2);
    CHECK_INT_EQ(kapi_etcd_watch_next(w, kapi_time_mono_ns() + 5000 * MS, &r, &err),
                 KAPI_ETCD_BROKEN);
    CHECK(strstr(err->message, "no leader") != NULL);
    kapi_error_free(err);
    kapi_etcd_watch_free(w);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}
