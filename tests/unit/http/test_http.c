/* Unit tests for src/http over plain HTTP: requests, keep-alive, pipelining, bodies,
 * limits, streams, malformed input and shutdown. */
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "base/fiber.h"
#include "harness.h"
#include "test.h"

static atomic_int on_close_calls;
static atomic_int stream_write_failed;
static atomic_int hold_started;
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static bool hold_closed;

static void respond_text(kapi_http_request *req, int status, char *text)
{
    kapi_http_header h[] = {{"Content-Type", "text/plain"}};
    kapi_http_chunk body = kapi_http_chunk_take(text, strlen(text));
    kapi_http_respond(req, status, h, 1, &body, 1);
}

/* "/echo": what the handler saw, then the body. */
static void echo(kapi_http_request *req)
{
    const char *foo = kapi_http_header_get(req, "X-FOO");
    if (memmem(req->query.ptr, req->query.len, "sleep", 5))
        usleep(100 * 1000); /* a pipelined successor must still come second */
    respond_text(req, 200,
                 kapi_xprintf("%s %.*s ? %.*s len=%zu tl=%d foo=%s\n%s", req->method,
                              KAPI_STR_FMT(req->path), KAPI_STR_FMT(req->query), req->body_len,
                              req->body_too_large, foo ? foo : "-", req->body));
}

static void hello(kapi_http_request *req)
{
    kapi_http_header h[] = {{"Content-Type", "text/plain"}, {"X-Test", "1"}};
    kapi_http_chunk body[] = {{"hel", 3, NULL, NULL}, kapi_http_chunk_copy("lo", 2)};
    kapi_http_respond(req, 200, h, 2, body, 2);
}

static void stream_abc(kapi_http_request *req)
{
    kapi_http_header h[] = {{"Content-Type", "application/json"}};
    kapi_http_stream *s = kapi_http_stream_start(req, 200, h, 1, 1 << 20);
    CHECK(kapi_http_stream_write(s, kapi_http_chunk_copy("a", 1)));
    CHECK(kapi_http_stream_write(s, kapi_http_chunk_copy("bb", 2)));
    usleep(10 * 1000);
    CHECK(kapi_http_stream_write(s, (kapi_http_chunk){"ccc", 3, NULL, NULL}));
    kapi_http_stream_end(s);
}

static void hold_on_close(void *ctx)
{
    (void)ctx;
    on_close_calls++;
    pthread_mutex_lock(&hold_mu);
    hold_closed = true;
    pthread_cond_broadcast(&hold_cv);
    pthread_mutex_unlock(&hold_mu);
}

/* "/hold": a watch-like stream that ticks until the client or the server goes away. */
static void hold(kapi_http_request *req)
{
    kapi_http_stream *s = kapi_http_stream_start(req, 200, NULL, 0, 1 << 20);
    kapi_http_stream_on_close(s, hold_on_close, NULL);
    hold_started = 1;
    pthread_mutex_lock(&hold_mu);
    while (!hold_closed) {
        struct timespec ts;
        pthread_mutex_unlock(&hold_mu);
        if (!kapi_http_stream_write(s, kapi_http_chunk_copy("tick\n", 5)))
            stream_write_failed++;
        pthread_mutex_lock(&hold_mu);
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&hold_cv, &hold_mu, &ts);
    }
    pthread_mutex_unlock(&hold_mu);
    kapi_http_stream_end(s);
}

/* "/slowhold": the client may be gone before the stream starts. */
static void slow_hold(kapi_http_request *req)
{
    usleep(100 * 1000);
    hold(req);
}

/* "/limit": a stream whose first chunk is over its byte limit. */
static void limit(kapi_http_request *req)
{
    kapi_http_stream *s = kapi_http_stream_start(req, 200, NULL, 0, 10);
    if (!kapi_http_stream_write(s, kapi_http_chunk_copy("0123456789abcdef", 16)))
        stream_write_failed++;
    kapi_http_stream_end(s);
}

/* "/produce": 32 MiB in 64 KiB chunks, made only as the client takes them (at most
 * 256 KiB queued, a client that takes nothing for 1 s is dropped). */
#define PRODUCE_CHUNK (64u << 10)
#define PRODUCE_CHUNKS 512
#define PRODUCE_LOW (256u << 10)
static char produce_bytes[PRODUCE_CHUNK];
static atomic_size_t produce_max_queued;
static atomic_int produce_result; /* 1: all written, -1: dropped */

static void produce(kapi_http_request *req)
{
    kapi_http_stream *s = kapi_http_stream_start(req, 200, NULL, 0, SIZE_MAX);
    memset(produce_bytes, 'p', sizeof(produce_bytes));
    int result = 1;
    for (int i = 0; i < PRODUCE_CHUNKS && result > 0; i++) {
        if (!kapi_http_stream_wait(s, PRODUCE_LOW, 1000)) {
            result = -1;
            break;
        }
        kapi_http_stream_write(s, (kapi_http_chunk){produce_bytes, PRODUCE_CHUNK, NULL, NULL});
        size_t q = kapi_http_stream_queued(s);
        if (q > produce_max_queued)
            produce_max_queued = q;
    }
    produce_result = result;
    kapi_http_stream_end(s);
}

/* "/endclose": a stream ended for a client that stopped reading: the connection closes
 * after the end. */
static void end_close(kapi_http_request *req)
{
    kapi_http_stream *s = kapi_http_stream_start(req, 200, NULL, 0, 1 << 20);
    kapi_http_stream_write(s, (kapi_http_chunk){"last", 4, NULL, NULL});
    kapi_http_stream_end_close(s);
}

/* "/park": parks on a kapi_park that a thread of its own posts (after "?slow", 50 ms
 * later), as a write waits for its commit; answers whether it ran on a fiber. */
typedef struct parked {
    kapi_park park;
    struct parked *next;
} parked;
static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cv = PTHREAD_COND_INITIALIZER;
static parked *park_list;
static bool park_slow;

static void *poster(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&park_mu);
    for (;;) {
        while (!park_list)
            pthread_cond_wait(&park_cv, &park_mu);
        parked *p = park_list;
        park_list = p->next;
        bool slow = park_slow;
        pthread_mutex_unlock(&park_mu);
        if (slow)
            usleep(50 * 1000);
        kapi_park_post(&p->park);
        pthread_mutex_lock(&park_mu);
    }
    return NULL;
}

static void start_poster(void)
{
    pthread_t t;
    pthread_create(&t, NULL, poster, NULL);
    pthread_detach(t);
}

/* "/park?held": parks until "/block" posts it. */
static parked *held_list;

static void park(kapi_http_request *req)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, start_poster);
    parked p;
    kapi_park_init(&p.park);
    pthread_mutex_lock(&park_mu);
    if (memmem(req->query.ptr, req->query.len, "held", 4)) {
        p.next = held_list;
        held_list = &p;
    } else {
        park_slow = memmem(req->query.ptr, req->query.len, "slow", 4) != NULL;
        p.next = park_list;
        park_list = &p;
        pthread_cond_signal(&park_cv);
    }
    pthread_mutex_unlock(&park_mu);
    kapi_park_wait(&p.park);
    kapi_park_dispose(&p.park);
    char text[64];
    snprintf(text, sizeof(text), "parked %.*s fiber=%d\n", (int)req->query.len, req->query.ptr,
             kapi_fiber_current());
    respond_text(req, 200, kapi_xstrdup(text));
}

/* "/block": posts the held parks, then holds its worker for 300 ms (a webhook's call, a
 * slow client's stream), then answers. */
static void block(kapi_http_request *req)
{
    pthread_mutex_lock(&park_mu);
    parked *p = held_list;
    held_list = NULL;
    pthread_mutex_unlock(&park_mu);
    while (p) {
        parked *next = p->next; /* p may be gone once posted */
        kapi_park_post(&p->park);
        p = next;
    }
    usleep(300 * 1000);
    respond_text(req, 200, kapi_xstrdup("blocked\n"));
}

static void handler(kapi_http_request *req, void *ctx)
{
    static const struct {
        const char *path;
        void (*fn)(kapi_http_request *req);
    } routes[] = {{"/echo", echo},       {"/hello", hello},        {"/stream", stream_abc},
                  {"/hold", hold},       {"/limit", limit},        {"/slowhold", slow_hold},
                  {"/produce", produce}, {"/endclose", end_close}, {"/park", park},
                  {"/block", block}};
    (void)ctx;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(routes); i++) {
        if (kapi_str_eqc(req->path, routes[i].path)) {
            routes[i].fn(req);
            return;
        }
    }
    respond_text(req, 404, kapi_xstrdup("not found\n"));
}

static void start(http_fixture *f)
{
    kapi_http_config cfg = fixture_config(handler);
    fixture_start(f, &cfg);
}

TEST(http_get_simple)
{
    http_fixture f;
    http_client c;
    http_resp r;
    start(&f);
    client_connect(&c, f.port);
    client_sends(&c, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_INT_EQ(r.status, 200);
    CHECK(strncmp(r.head.ptr, "HTTP/1.1 200 OK\r\n", 17) == 0);
    CHECK_STR_EQ(r.body.ptr, "hello");
    CHECK_STR_EQ(resp_header(&r, "content-length"), "5");
    CHECK_STR_EQ(resp_header(&r, "x-test"), "1");
    CHECK(resp_header(&r, "connection") == NULL);
    resp_dispose(&r);
    client_sends(&c, "GET /nope HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK(strncmp(r.head.ptr, "HTTP/1.1 404 Not Found\r\n", 24) == 0);
    resp_dispose(&r);
    client_close(&c);
    fixture_stop(&f);
}

TEST(http_keep_alive_and_request_fields)
{
    http_fixture f;
    http_client c;
    http_resp r;
    start(&f);
    client_connect(&c, f.port);
    client_sends(&c, "GET /echo?a=%2F&b HTTP/1.1\r\nHost: x\r\nX-Foo: bar\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "GET /echo ? a=%2F&b len=0 tl=0 foo=bar\n");
    resp_dispose(&r);
    client_sends(&c, "DELETE /echo HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "DELETE /echo ?  len=0 tl=0 foo=-\n");
    resp_dispose(&r);
    client_sends(&c, "GET http://example.com/echo?z=1 HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "GET /echo ? z=1 len=0 tl=0 foo=-\n");
    resp_dispose(&r);
    client_close(&c);
    fixture_stop(&f);
}

TEST(http_head_has_no_body)
{
    http_fixture f;
    http_client c;
    const char *second;
    start(&f);
    client_connect(&c, f.port);
    client_sends(&c, "HEAD /hello HTTP/1.1\r\n\r\nGET /hello HTTP/1.1\r\n\r\n");
    CHECK(client_read_until(&c, "\r\n\r\nhello"));
    CHECK(strstr(c.carry.ptr, "Content-Length: 5\r\n") != NULL);
    second = strstr(c.carry.ptr + 1, "HTTP/1.1 200 OK");
    CHECK(second != NULL && strstr(c.carry.ptr, "hello") == strrchr(c.carry.ptr, 'h'));
    CHECK(strncmp(second - 4, "\r\n\r\n", 4) == 0);
    client_close(&c);
    fixture_stop(&f);
}

TEST(http_10_closes)
{
    http_fixture f;
    http_client c;
    http_resp r;
    start(&f);
    client_connect(&c, f.port);
    client_sends(&c, "GET /hello HTTP/1.0\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(resp_header(&r, "connection"), "close");
    CHECK(client_read_eof(&c));
    resp_dispose(&r);
    client_close(&c);
    client_connect(&c, f.port);
    client_sends(&c, "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(resp_header(&r, "connection"), "keep-alive");
    resp_dispose(&r);
    client_sends(&c, "GET /hello HTTP/1.0\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "hello");
    resp_dispose(&r);
    client_close(&c);
    fixture_stop(&f);
}

TEST(http_pipelining_in_order)
{
    http_fixture f;
    http_client c;
    http_resp r;
    start(&f);
    client_connect(&c, f.port);
    client_sends(&c, "GET /echo?first&sleep HTTP/1.1\r\n\r\n"
                     "POST /echo?second HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz"
                     "GET /hello HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "GET /echo ? first&sleep len=0 tl=0 foo=-\n");
    resp_dispose(&r);
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "POST /echo ? second len=3 tl=0 foo=-\nxyz");
    resp_dispose(&r);
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "hello");
    resp_dispose(&r);
    client_close(&c);
    fixture_stop(&f);
}

TEST(http_post_bodies)
{
    http_fixture f;
    http_client c;
    http_resp r;
    start(&f);
    client_connect(&c, f.port);
    client_sends(&c, "POST /echo HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello ");
    usleep(20 * 1000); /* the body arrives in two reads */
    client_sends(&c, "world");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "POST /echo ?  len=11 tl=0 foo=-\nhello world");
    resp_dispose(&r);
    client_sends(&c, "PUT /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "PUT /echo ?  len=11 tl=0 foo=-\nhello world");
    resp_dispose(&r);
    client_sends(&c, "POST /echo HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_INT_EQ(r.status, 100);
    resp_dispose(&r);
    client_sends(&c, "ok");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "POST /echo ?  len=2 tl=0 foo=-\nok");
    resp_dispose(&r);
    client_close(&c);
    fixture_stop(&f);
}

TEST(http_body_too_large)
{
    http_fixture f;
    http_client c;
    http_resp r;
    char *big = kapi_xmalloc(100000);
    memset(big, 'x', 100000);
    start(&f);
    /* Content-Length over max_body: answered without reading the body, then closed. */
    client_connect(&c, f.port);
    client_sends(&c, "POST /echo HTTP/1.1\r\nContent-Length: 100000\r\n\r\n");
    client_send(&c, big, 100000);
    CHECK(client_read_response(&c, &r));
    CHECK_INT_EQ(r.status, 200);
    CHECK_STR_EQ(r.body.ptr, "POST /echo ?  len=0 tl=1 foo=-\n");
    CHECK_STR_EQ(resp_header(&r, "connection"), "close");
    CHECK(client_read_eof(&c));
    resp_dispose(&r);
    client_close(&c);
    /* Chunked: found out while reading. */
    client_connect(&c, f.port);
    client_sends(&c, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n");
    client_send(&c, big, 1000);
    client_sends(&c, "\r\n3e8\r\n");
    client_send(&c, big, 1000);
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "POST /echo ?  len=0 tl=1 foo=-\n");
    CHECK(client_read_eof(&c));
    resp_dispose(&r);
    client_close(&c);
    free(big);
    fixture_stop(&f);
}

TEST(http_stream_chunks_then_keep_alive)
{
    http_fixture f;
    http_client c;
    http_resp r;
    start(&f);
    client_connect(&c, f.port);
    client_sends(&c, "GET /stream HTTP/1.1\r\n\r\nGET /hello HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_INT_EQ(r.status, 200);
    CHECK_STR_EQ(resp_header(&r, "transfer-encoding"), "chunked");
    CHECK(resp_header(&r, "content-length") == NULL);
    CHECK_STR_EQ(r.body.ptr, "abbccc");
    resp_dispose(&r);
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "hello");
    resp_dispose(&r);
    client_close(&c);
    fixture_stop(&f);
}

static void wait_for(atomic_int *v, int want)
{
    for (int i = 0; i < 500 && *v != want; i++)
        usleep(10 * 1000);
    CHECK_INT_EQ(*v, want);
}

TEST(http_stream_client_disconnect_runs_on_close)
{
    http_fixture f;
    http_client c;
    start(&f);
    client_connect(&c, f.port);
    client_sends(&c, "GET /hold HTTP/1.1\r\n\r\n");
    CHECK(client_read_until(&c, "tick\n"));
    client_close(&c);
    wait_for(&on_close_calls, 1);
    fixture_stop(&f);
    CHECK_INT_EQ(on_close_calls, 1);
}

TEST(http_client_gone_while_handling)
{
    http_fixture f;
    http_client c;
    http_resp r;
    start(&f);
    client_connect(&c, f.port);
    client_sends(&c, "GET /echo?sleep HTTP/1.1\r\n\r\n");
    client_close(&c);
    client_connect(&c, f.port);
    client_sends(&c, "GET /slowhold HTTP/1.1\r\n\r\n");
    client_close(&c);
    wait_for(&on_close_calls, 1);
    client_connect(&c, f.port);
    client_sends(&c, "GET /hello HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "hello");
    resp_dispose(&r);
    client_close(&c);
    usleep(150 * 1000); /* the /echo answer meets its dead conn */
    fixture_stop(&f);
    CHECK_INT_EQ(on_close_calls, 1);
}

TEST(http_stream_over_limit_drops_client)
{
    http_fixture f;
    http_client c;
    start(&f);
    client_connect(&c, f.port);
    client_sends(&c, "GET /limit HTTP/1.1\r\n\r\n");
    CHECK(client_read_eof(&c));
    CHECK_INT_EQ(stream_write_failed, 1);
    CHECK(strstr(c.carry.ptr, "0123456789") == NULL);
    client_close(&c);
    fixture_stop(&f);
}

TEST(http_shutdown_with_open_stream)
{
    http_fixture f;
    http_client c, idle;
    start(&f);
    client_connect(&idle, f.port);
    client_connect(&c, f.port);
    client_sends(&c, "GET /hold HTTP/1.1\r\n\r\n");
    wait_for(&hold_started, 1);
    fixture_stop(&f);
    CHECK_INT_EQ(on_close_calls, 1);
    CHECK(client_read_eof(&c));
    CHECK(strstr(c.carry.ptr, "tick\n") != NULL);
    CHECK(c.carry.len >= 5 && strcmp(c.carry.ptr + c.carry.len - 5, "0\r\n\r\n") == 0);
    CHECK(client_read_eof(&idle));
    client_close(&c);
    client_close(&idle);
}

TEST(http_shutdown_waits_for_in_flight)
{
    http_fixture f;
    http_client c;
    http_resp r;
    start(&f);
    client_connect(&c, f.port);
    client_sends(&c, "GET /echo?sleep HTTP/1.1\r\n\r\n");
    usleep(30 * 1000);
    fixture_stop(&f);
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "GET /echo ? sleep len=0 tl=0 foo=-\n");
    CHECK_STR_EQ(resp_header(&r, "connection"), "close");
    resp_dispose(&r);
    client_close(&c);
}

static void expect_error(int port, const char *req, size_t len, int status)
{
    http_client c;
    http_resp r;
    client_connect(&c, port);
    client_send(&c, req, len);
    CHECK(client_read_response(&c, &r));
    CHECK_INT_EQ(r.status, status);
    CHECK(client_read_eof(&c));
    resp_dispose(&r);
    client_close(&c);
}

TEST(http_malformed_requests)
{
    http_fixture f;
    static const char *const bad[] = {
        "GARBAGE\r\n\r\n",
        "GET / HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
        "GET / HTTP/1.1\r\nBad Header\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
    };
    size_t n = 2u << 20;
    char *huge = kapi_xmalloc(n);
    start(&f);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(bad); i++)
        expect_error(f.port, bad[i], strlen(bad[i]), 400);
    /* Over 1 MiB of headers. */
    memcpy(huge, "GET / HTTP/1.1\r\nX-Big: ", 23);
    memset(huge + 23, 'a', n - 23);
    expect_error(f.port, huge, n, 431);
    /* Arbitrary bytes never crash the server. */
    srand(42);
    for (int round = 0; round < 50; round++) {
        http_client c;
        char junk[512];
        for (size_t i = 0; i < sizeof(junk); i++)
            junk[i] = (char)(rand() & 0xff);
        client_connect(&c, f.port);
        client_sends(&c, "POST /echo HTTP/1.1\r\n");
        client_send(&c, junk, sizeof(junk));
        client_read_eof(&c);
        client_close(&c);
    }
    expect_error(f.port, "GARBAGE\r\n\r\n", 11, 400);
    free(huge);
    fixture_stop(&f);
}

/* A client's 50 requests one after the other, to /echo or to /park. */
typedef struct client_run {
    http_fixture *f;
    bool park;
} client_run;

static void *client_thread(void *arg)
{
    client_run *run = arg;
    http_client c;
    http_resp r;
    client_connect(&c, run->f->port);
    for (int i = 0; i < 50; i++) {
        char req[128], want[128];
        if (run->park) {
            snprintf(req, sizeof(req), "GET /park?i=%d HTTP/1.1\r\n\r\n", i);
            snprintf(want, sizeof(want), "parked i=%d fiber=1\n", i);
        } else {
            snprintf(req, sizeof(req), "POST /echo?i=%d HTTP/1.1\r\nContent-Length: 1\r\n\r\n%d", i,
                     i % 10);
            snprintf(want, sizeof(want), "POST /echo ? i=%d len=1 tl=0 foo=-\n%d", i, i % 10);
        }
        client_sends(&c, req);
        CHECK(client_read_response(&c, &r));
        CHECK_STR_EQ(r.body.ptr, want);
        resp_dispose(&r);
    }
    client_close(&c);
    return NULL;
}

/* n clients at once against a fresh server. */
static void run_clients(int n, bool park)
{
    http_fixture f;
    pthread_t t[16];
    client_run run = {&f, park};
    start(&f);
    for (int i = 0; i < n; i++)
        CHECK(pthread_create(&t[i], NULL, client_thread, &run) == 0);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    fixture_stop(&f);
}

TEST(http_concurrent_clients)
{
    run_clients(8, false);
}

/* Handlers that park, more of them at once than there are workers, all come back. */
TEST(http_parked_handlers_come_back)
{
    run_clients(16, true);
}

/* A handler parks; its worker then takes a request that holds it for 300 ms, and the
 * post comes while it does (query "held": at once, as the long job begins; "slow": 50 ms
 * in). The parked handler answers on another worker long before the long job ends. */
static void parked_behind_a_long_job(const char *query)
{
    http_fixture f;
    http_client a, b;
    http_resp r;
    char req[64], want[64];
    start(&f);
    client_connect(&a, f.port);
    client_connect(&b, f.port);
    snprintf(req, sizeof(req), "GET /park?%s HTTP/1.1\r\n\r\n", query);
    snprintf(want, sizeof(want), "parked %s fiber=1\n", query);
    client_sends(&a, req);
    usleep(20 * 1000); /* parked: its worker is the idle one woken next */
    int64_t t0 = kapi_time_mono_ns();
    client_sends(&b, "GET /block HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&a, &r));
    CHECK_STR_EQ(r.body.ptr, want);
    CHECK((kapi_time_mono_ns() - t0) / 1000000 < 200);
    resp_dispose(&r);
    CHECK(client_read_response(&b, &r));
    CHECK_STR_EQ(r.body.ptr, "blocked\n");
    resp_dispose(&r);
    client_close(&a);
    client_close(&b);
    fixture_stop(&f);
}

TEST(http_parked_handler_does_not_wait_out_a_long_job)
{
    parked_behind_a_long_job("held");
    parked_behind_a_long_job("slow");
}

/* A shutdown waits for a parked handler to come back and answer. */
TEST(http_shutdown_waits_for_a_parked_handler)
{
    http_fixture f;
    http_client c;
    http_resp r;
    start(&f);
    client_connect(&c, f.port);
    client_sends(&c, "GET /park?slow HTTP/1.1\r\n\r\n");
    usleep(10 * 1000);
    fixture_stop(&f);
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "parked slow fiber=1\n");
    resp_dispose(&r);
    client_close(&c);
}

TEST(http_helpers)
{
    kapi_http_header h[] = {{"content-type", "a"}, {"x-b", "b"}};
    kapi_http_request req = {.headers = h, .nheaders = 2};
    kapi_http_chunk c = kapi_http_chunk_copy("abc", 3);
    CHECK_STR_EQ(kapi_http_header_get(&req, "Content-Type"), "a");
    CHECK_STR_EQ(kapi_http_header_get(&req, "X-B"), "b");
    CHECK(kapi_http_header_get(&req, "x-c") == NULL);
    CHECK(c.len == 3 && memcmp(c.ptr, "abc", 3) == 0 && c.release);
    c.release(c.owner);
    c = kapi_http_chunk_take(kapi_xstrdup("xy"), 2);
    c.release(c.owner);
}

TEST(http_stream_producer_waits_for_the_client)
{
    http_fixture f;
    http_client c;
    http_resp r;
    start(&f);
    client_connect(&c, f.port);
    client_sends(&c, "GET /produce HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_INT_EQ(r.body.len, (size_t)PRODUCE_CHUNKS * PRODUCE_CHUNK);
    CHECK(r.body.ptr[0] == 'p' && r.body.ptr[r.body.len - 1] == 'p');
    CHECK_INT_EQ(produce_result, 1);
    CHECK(produce_max_queued <= PRODUCE_LOW + PRODUCE_CHUNK);
    resp_dispose(&r);
    client_close(&c);
    fixture_stop(&f);
}

TEST(http_stream_producer_drops_a_client_that_stops_reading)
{
    http_fixture f;
    http_client c;
    start(&f);
    client_connect(&c, f.port);
    client_sends(&c, "GET /produce HTTP/1.1\r\n\r\n");
    for (int i = 0; i < 500 && produce_result == 0; i++)
        usleep(10 * 1000);
    CHECK_INT_EQ(produce_result, -1); /* the worker is free again */
    CHECK(produce_max_queued <= PRODUCE_LOW + PRODUCE_CHUNK);
    CHECK(client_read_eof(&c)); /* what was sent, then the connection ends */
    CHECK(c.carry.len < (size_t)PRODUCE_CHUNKS * PRODUCE_CHUNK);
    client_close(&c);
    fixture_stop(&f);
}

TEST(http_stream_end_close_closes_after_the_end)
{
    http_fixture f;
    http_client c;
    http_resp r;
    start(&f);
    client_connect(&c, f.port);
    client_sends(&c, "GET /endclose HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "last");
    CHECK(client_read_eof(&c));
    resp_dispose(&r);
    client_close(&c);
    fixture_stop(&f);
}
