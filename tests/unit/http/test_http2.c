/* Unit tests for src/http over HTTP/2: ALPN, requests and answers on many streams of one
 * connection, flow control (a stalled stream is reset alone), the per-stream deadline,
 * the header and body limits, the stream limit, a peer's reset while the handler runs,
 * idle GOAWAY and GOAWAY at shutdown. */
#include <stdatomic.h>
#include <unistd.h>

#include "h2client.h"
#include "test.h"

#define BIG_LEN (600 * 1024)

static atomic_int closed_calls; /* "/ticks" and "/flood" streams told their client left */
static atomic_int floods_ended; /* "/flood" producers stopped by a failed write */
static atomic_int handled;

static void on_closed(void *ctx)
{
    (void)ctx;
    closed_calls++;
}

static void respond_text(kapi_http_request *req, int status, const char *text)
{
    static const kapi_http_header h[] = {{"Content-Type", "text/plain"}, {"X-Test", "yes"}};
    kapi_http_chunk body = kapi_http_chunk_copy(text, strlen(text));
    kapi_http_respond(req, status, h, 2, &body, 1);
    handled++;
}

/* "/echo": the method, target, host, body and whether it was too large. */
static void echo(kapi_http_request *req)
{
    char *text =
        kapi_xprintf("%s %.*s?%.*s host=%s body=%s large=%d", req->method, (int)req->path.len,
                     req->path.ptr, (int)req->query.len, req->query.ptr,
                     kapi_http_header_get(req, "host"), req->body, req->body_too_large);
    respond_text(req, 200, text);
    free(text);
}

/* "/big": BIG_LEN bytes in two chunks, more than one window. */
static void big(kapi_http_request *req)
{
    char *p = kapi_xmalloc(BIG_LEN);
    kapi_http_chunk body[2];
    for (size_t i = 0; i < BIG_LEN; i++)
        p[i] = (char)('a' + i % 26);
    body[0] = kapi_http_chunk_take(p, BIG_LEN / 2);
    body[1] = (kapi_http_chunk){p + BIG_LEN / 2, BIG_LEN / 2, NULL, NULL};
    kapi_http_respond(req, 200, NULL, 0, body, 2);
}

/* "/ticks": a watch that ticks until its client or the server goes. */
static void ticks(kapi_http_request *req)
{
    kapi_http_stream *s = kapi_http_stream_start(req, 200, NULL, 0, 1 << 20);
    kapi_http_stream_on_close(s, on_closed, NULL);
    while (kapi_http_stream_write(s, kapi_http_chunk_copy("tick\n", 5)))
        usleep(10 * 1000);
    kapi_http_stream_end(s);
}

/* "/flood": writes 4 KiB events as fast as it can, with a 64 KiB bound, until a write
 * fails. */
static void flood(kapi_http_request *req)
{
    kapi_http_stream *s = kapi_http_stream_start(req, 200, NULL, 0, 64 * 1024);
    char event[4096];
    memset(event, 'e', sizeof(event));
    kapi_http_stream_on_close(s, on_closed, NULL);
    while (kapi_http_stream_write(s, kapi_http_chunk_copy(event, sizeof(event))))
        usleep(100);
    floods_ended++;
    kapi_http_stream_end(s);
}

static void handler(kapi_http_request *req, void *ctx)
{
    (void)ctx;
    if (kapi_str_eqc(req->path, "/big"))
        big(req);
    else if (kapi_str_eqc(req->path, "/ticks"))
        ticks(req);
    else if (kapi_str_eqc(req->path, "/flood"))
        flood(req);
    else if (kapi_str_eqc(req->path, "/slow")) {
        usleep(400 * 1000);
        respond_text(req, 200, "late");
    } else
        echo(req);
}

/* "/ticks" and "/flood" are long-running; "/slow" must answer within 150 ms. */
static kapi_http_admission classify(const kapi_http_request *req, void *ctx)
{
    kapi_http_admission a = {KAPI_HTTP_READ, 0};
    (void)ctx;
    if (kapi_str_eqc(req->path, "/ticks") || kapi_str_eqc(req->path, "/flood"))
        a.cls = KAPI_HTTP_LONG_RUNNING;
    if (kapi_str_eqc(req->path, "/slow"))
        a.timeout_ms = 150;
    return a;
}

typedef struct h2_setup {
    http_fixture f;
    char crt[512], key[512];
} h2_setup;

static void start(h2_setup *t, unsigned max_streams, unsigned idle_ms)
{
    kapi_http_config cfg = fixture_config(handler);
    make_cert(test_tmpdir(), "server", t->crt, t->key);
    cfg.cert_file = t->crt;
    cfg.key_file = t->key;
    cfg.classify = classify;
    cfg.workers = 110; /* a "/ticks" handler holds its worker */
    cfg.http2_max_streams = max_streams;
    cfg.idle_timeout_ms = idle_ms;
    cfg.timeout = (kapi_http_answer){504, NULL, 0, "timeout\n"};
    closed_calls = floods_ended = handled = 0;
    fixture_start(&t->f, &cfg);
}

static void wait_for(atomic_int *v, int want)
{
    for (int i = 0; i < 500 && *v < want; i++)
        usleep(10 * 1000);
    CHECK_INT_EQ(*v, want);
}

TEST(http2_alpn_and_round_trip)
{
    h2_setup t;
    h2_client h;
    http_client c;
    const unsigned char *proto;
    unsigned proto_len;
    static const char *const hdrs[] = {"x-extra", "1", NULL};
    start(&t, 0, 0);
    client_connect_tls(&c, t.f.port, NULL, NULL); /* a client without h2 gets HTTP/1.1 */
    SSL_get0_alpn_selected(c.ssl, &proto, &proto_len);
    CHECK(proto_len == 8 && memcmp(proto, "http/1.1", 8) == 0);
    client_close(&c);
    h2c_connect(&h, t.f.port);
    CHECK_INT_EQ(h.max_streams, KAPI_HTTP_HTTP2_MAX_STREAMS);
    int get = h2c_request(&h, "GET", "/echo?a=1", hdrs, NULL, 0);
    int post = h2c_request(&h, "POST", "/echo", NULL, "hello", 5);
    CHECK(h2c_wait(&h, get) && h2c_wait(&h, post));
    CHECK_INT_EQ(h.streams[get].status, 200);
    CHECK_STR_EQ(h.streams[get].body.ptr, "GET /echo?a=1 host=127.0.0.1 body= large=0");
    CHECK(strstr(h.streams[get].head.ptr, "content-type: text/plain\n") != NULL);
    CHECK(strstr(h.streams[get].head.ptr, "x-test: yes\n") != NULL);
    CHECK(strstr(h.streams[get].head.ptr, "content-length: 42\n") != NULL);
    CHECK_STR_EQ(h.streams[post].body.ptr, "POST /echo? host=127.0.0.1 body=hello large=0");
    h2c_close(&h);
    fixture_stop(&t.f);
}

/* Many streams at once, each answered in full; a large answer goes through the windows. */
TEST(http2_concurrent_streams)
{
    h2_setup t;
    h2_client h;
    int ids[100], bigs[3];
    start(&t, 0, 0);
    h2c_connect(&h, t.f.port);
    for (int i = 0; i < 100; i++)
        ids[i] = h2c_request(&h, "GET", "/ticks", NULL, NULL, 0);
    for (int i = 0; i < 3; i++)
        bigs[i] = h2c_request(&h, "GET", "/big", NULL, NULL, 0);
    for (int i = 0; i < 3; i++) {
        CHECK(h2c_wait(&h, bigs[i]));
        CHECK_INT_EQ(h.streams[bigs[i]].body.len, BIG_LEN);
        CHECK(h.streams[bigs[i]].body.ptr[BIG_LEN - 1] == (char)('a' + (BIG_LEN - 1) % 26));
    }
    for (int round = 0; round < 200; round++) {
        int ticking = 0;
        for (int i = 0; i < 100; i++)
            ticking += strstr(h.streams[ids[i]].body.ptr ? h.streams[ids[i]].body.ptr : "",
                              "tick\ntick\n") != NULL;
        if (ticking == 100)
            break;
        CHECK(h2c_pump(&h));
    }
    for (int i = 0; i < 100; i++) {
        CHECK_INT_EQ(h.streams[ids[i]].status, 200);
        CHECK(h.streams[ids[i]].body.len >= 10);
    }
    h2c_close(&h); /* the client goes: every watch is told */
    wait_for(&closed_calls, 100);
    fixture_stop(&t.f);
}

/* A stream whose reader stops is reset once its producer passes its bound; the other
 * streams of the connection go on. */
TEST(http2_stalled_stream_reset_alone)
{
    h2_setup t;
    h2_client h;
    start(&t, 0, 0);
    h2c_connect(&h, t.f.port);
    int stalled = h2c_request(&h, "GET", "/flood", NULL, NULL, 0);
    h.streams[stalled].hold = true;
    int ticks_i = h2c_request(&h, "GET", "/ticks", NULL, NULL, 0);
    CHECK(h2c_wait(&h, stalled));
    CHECK(h.streams[stalled].reset);
    CHECK_INT_EQ(h.streams[stalled].reset_code, NGHTTP2_CANCEL);
    CHECK(h.streams[stalled].body.len <= 256 * 1024); /* one window, no more */
    wait_for(&floods_ended, 1);
    size_t before = h.streams[ticks_i].body.len;
    while (h.streams[ticks_i].body.len < before + 20)
        CHECK(h2c_pump(&h));
    int after = h2c_request(&h, "GET", "/echo", NULL, NULL, 0);
    CHECK(h2c_wait(&h, after));
    CHECK_INT_EQ(h.streams[after].status, 200);
    h2c_close(&h);
    fixture_stop(&t.f);
}

/* The deadline is per stream: the late one gets the timeout answer, the conn goes on. */
TEST(http2_deadline_per_stream)
{
    h2_setup t;
    h2_client h;
    start(&t, 0, 0);
    h2c_connect(&h, t.f.port);
    int slow = h2c_request(&h, "GET", "/slow", NULL, NULL, 0);
    int ticks_i = h2c_request(&h, "GET", "/ticks", NULL, NULL, 0);
    CHECK(h2c_wait(&h, slow));
    CHECK_INT_EQ(h.streams[slow].status, 504);
    CHECK_STR_EQ(h.streams[slow].body.ptr, "timeout\n");
    wait_for(&handled, 1); /* the late answer came and was dropped */
    int next = h2c_request(&h, "GET", "/echo", NULL, NULL, 0);
    CHECK(h2c_wait(&h, next));
    CHECK_INT_EQ(h.streams[next].status, 200);
    CHECK(!h.streams[ticks_i].done && !h.goaway);
    h2c_close(&h);
    fixture_stop(&t.f);
}

/* A body over max_body reaches the handler marked too large; a header list over the
 * limit (counted decompressed: one indexed field repeated) is answered 431; the conn goes
 * on after both. A header block in more frames than nghttp2 allows ends the conn with
 * GOAWAY. */
TEST(http2_body_and_header_limits)
{
    h2_setup t;
    h2_client h;
    char *body = kapi_xmalloc(4096), *value = kapi_xmalloc(60001);
    const char *hdrs[801] = {NULL};
    start(&t, 0, 0);
    memset(body, 'b', 4096);
    memset(value, 'v', 60000);
    value[60000] = '\0';
    h2c_connect(&h, t.f.port);
    int large = h2c_request(&h, "POST", "/echo", NULL, body, 4096);
    CHECK(h2c_wait(&h, large));
    CHECK_STR_EQ(h.streams[large].body.ptr, "POST /echo? host=127.0.0.1 body= large=1");
    hdrs[0] = "x-a", hdrs[1] = value, hdrs[2] = "x-b", hdrs[3] = value + 10000;
    int fine = h2c_request(&h, "GET", "/echo", hdrs, NULL, 0); /* 110 kB: under the limit */
    CHECK(h2c_wait(&h, fine));
    CHECK_INT_EQ(h.streams[fine].status, 200);
    for (int i = 0; i < 800; i += 2) /* 400 x 3 kB, the same field: 1.2 MB */
        hdrs[i] = "x-many", hdrs[i + 1] = value + 57000;
    int huge = h2c_request(&h, "GET", "/echo", hdrs, NULL, 0);
    CHECK(h2c_wait(&h, huge));
    CHECK_INT_EQ(h.streams[huge].status, 431);
    int after = h2c_request(&h, "GET", "/echo", NULL, NULL, 0);
    CHECK(h2c_wait(&h, after));
    CHECK_INT_EQ(h.streams[after].status, 200);
    for (int i = 0; i < 8; i += 2) /* 4 x 60 kB: a block of some 15 frames */
        hdrs[i] = "x-big", hdrs[i + 1] = value;
    hdrs[8] = NULL;
    int flood = h2c_request(&h, "GET", "/echo", hdrs, NULL, 0);
    CHECK(!h2c_wait(&h, flood));
    CHECK(h.goaway);
    CHECK_INT_EQ(h.goaway_code, NGHTTP2_PROTOCOL_ERROR);
    h2c_close(&h);
    free(body);
    free(value);
    fixture_stop(&t.f);
}

/* The stream limit is advertised and kept (a stream reset by the peer makes room); a
 * peer's reset while the handler runs drops the answer; the conn goes on. */
TEST(http2_stream_limit_and_peer_reset)
{
    h2_setup t;
    h2_client h;
    int ids[3];
    start(&t, 3, 0);
    h2c_connect(&h, t.f.port);
    CHECK_INT_EQ(h.max_streams, 3);
    for (int i = 0; i < 3; i++)
        ids[i] = h2c_request(&h, "GET", "/ticks", NULL, NULL, 0);
    for (int i = 0; i < 3; i++)
        while (h.streams[ids[i]].body.len == 0)
            CHECK(h2c_pump(&h));
    int waiting = h2c_request(&h, "GET", "/slow", NULL, NULL, 0); /* the fourth: queued */
    for (int i = 0; i < 3; i++)
        CHECK(h2c_pump(&h));
    CHECK_INT_EQ(handled, 0);
    nghttp2_submit_rst_stream(h.session, NGHTTP2_FLAG_NONE, h.streams[ids[0]].id, NGHTTP2_CANCEL);
    nghttp2_session_send(h.session);
    wait_for(&closed_calls, 1);
    for (int i = 0; i < 3; i++) /* the fourth goes out now, and reaches "/slow" */
        CHECK(h2c_pump(&h));
    nghttp2_submit_rst_stream(h.session, NGHTTP2_FLAG_NONE, h.streams[waiting].id, NGHTTP2_CANCEL);
    nghttp2_session_send(h.session);
    wait_for(&handled, 1); /* the handler answered a stream that is gone: dropped */
    int after = h2c_request(&h, "GET", "/echo", NULL, NULL, 0);
    CHECK(h2c_wait(&h, after));
    CHECK_INT_EQ(h.streams[after].status, 200);
    CHECK(!h.streams[waiting].done);
    h2c_close(&h);
    fixture_stop(&t.f);
}

/* A conn without streams for the idle timeout gets GOAWAY and is closed. */
TEST(http2_idle_goaway)
{
    h2_setup t;
    h2_client h;
    start(&t, 0, 200);
    h2c_connect(&h, t.f.port);
    int one = h2c_request(&h, "GET", "/echo", NULL, NULL, 0);
    CHECK(h2c_wait(&h, one));
    while (h2c_pump(&h))
        ;
    CHECK(h.goaway);
    CHECK_INT_EQ(h.goaway_code, NGHTTP2_NO_ERROR);
    h2c_close(&h);
    fixture_stop(&t.f);
}

/* Shutdown: GOAWAY, open watches end cleanly (END_STREAM after their last event, their
 * producers told), then the conn closes. */
TEST(http2_shutdown_goaway)
{
    h2_setup t;
    h2_client h;
    start(&t, 0, 0);
    h2c_connect(&h, t.f.port);
    int a = h2c_request(&h, "GET", "/ticks", NULL, NULL, 0);
    int b = h2c_request(&h, "GET", "/ticks", NULL, NULL, 0);
    while (h.streams[a].body.len == 0 || h.streams[b].body.len == 0)
        CHECK(h2c_pump(&h));
    fixture_stop(&t.f);
    CHECK_INT_EQ(closed_calls, 2);
    while (h2c_pump(&h))
        ;
    CHECK(h.goaway);
    CHECK(h.streams[a].done && h.streams[b].done);
    CHECK(!h.streams[a].reset && !h.streams[b].reset);
    h2c_close(&h);
}
