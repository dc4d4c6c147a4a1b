/* Unit tests for src/http's limits: header size and count, transfer codings, the header,
 * idle and body deadlines, request deadlines with the late answer dropped, and admission
 * (max in flight per class, counted while queued; the queue bound). Deadlines are set to a
 * few hundred milliseconds so that the tests are quick. */
#include <stdatomic.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "test.h"

static atomic_int blocked;   /* handlers waiting in "/block" */
static atomic_int handled;   /* answers given by handlers */
static atomic_int release_n; /* "/block" handlers let go so far */

static void respond_text(kapi_http_request *req, int status, const char *text)
{
    kapi_http_chunk body = kapi_http_chunk_copy(text, strlen(text));
    kapi_http_respond(req, status, NULL, 0, &body, 1);
    handled++;
}

/* "/block": waits until the test lets it go (release), then answers. */
static void block(kapi_http_request *req)
{
    int ticket = ++blocked;
    while (release_n < ticket)
        usleep(2 * 1000);
    respond_text(req, 200, "unblocked");
}

/* "/slow": answers after 400 ms, past a 150 ms deadline. */
static void slow(kapi_http_request *req)
{
    usleep(400 * 1000);
    respond_text(req, 200, "late");
}

/* "/slowstream": starts a stream, then writes a chunk after 400 ms. */
static void slow_stream(kapi_http_request *req)
{
    kapi_http_stream *s = kapi_http_stream_start(req, 200, NULL, 0, 1 << 20);
    kapi_http_stream_write(s, kapi_http_chunk_copy("first\n", 6));
    usleep(400 * 1000);
    kapi_http_stream_write(s, kapi_http_chunk_copy("second\n", 7));
    kapi_http_stream_end(s);
    handled++;
}

/* "/watch": a long-running stream that ends after 300 ms. */
static void watch(kapi_http_request *req)
{
    kapi_http_stream *s = kapi_http_stream_start(req, 200, NULL, 0, 1 << 20);
    kapi_http_stream_write(s, kapi_http_chunk_copy("event\n", 6));
    usleep(300 * 1000);
    kapi_http_stream_end(s);
}

static void handler(kapi_http_request *req, void *ctx)
{
    char text[64];
    (void)ctx;
    if (kapi_str_eqc(req->path, "/block"))
        block(req);
    else if (kapi_str_eqc(req->path, "/slow"))
        slow(req);
    else if (kapi_str_eqc(req->path, "/slowstream"))
        slow_stream(req);
    else if (kapi_str_eqc(req->path, "/watch"))
        watch(req);
    else if (kapi_str_eqc(req->path, "/status1"))
        respond_text(req, 1, "a handler's bug");
    else {
        snprintf(text, sizeof(text), "ok %zu headers, body %zu", req->nheaders, req->body_len);
        respond_text(req, 200, text);
    }
}

/* The test's classifier: "/watch" is long-running, POST mutates, "/slow*" must answer
 * within 150 ms. */
static kapi_http_admission classify(const kapi_http_request *req, void *ctx)
{
    kapi_http_admission a = {KAPI_HTTP_READ, 0};
    (void)ctx;
    if (kapi_str_eqc(req->path, "/watch"))
        a.cls = KAPI_HTTP_LONG_RUNNING;
    else if (strcmp(req->method, "POST") == 0)
        a.cls = KAPI_HTTP_MUTATE;
    if (kapi_str_has_prefix(req->path, "/slow"))
        a.timeout_ms = 150;
    return a;
}

static const kapi_http_header retry_after[] = {{"Retry-After", "1"}};

static kapi_http_config limits_config(void)
{
    kapi_http_config cfg = fixture_config(handler);
    cfg.classify = classify;
    cfg.header_timeout_ms = 300;
    cfg.idle_timeout_ms = 300;
    cfg.request_timeout_ms = 300;
    cfg.busy = (kapi_http_answer){429, retry_after, 1, "busy\n"};
    cfg.timeout = (kapi_http_answer){504, NULL, 0, "{\"reason\":\"Timeout\"}\n"};
    return cfg;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void wait_for(atomic_int *v, int want)
{
    for (int i = 0; i < 500 && *v != want; i++)
        usleep(10 * 1000);
    CHECK_INT_EQ(*v, want);
}

/* Go accepts any number of headers within its byte limit: 5,000 are answered. */
TEST(http_many_headers_are_answered)
{
    http_fixture f;
    http_client c;
    http_resp r;
    kapi_http_config cfg = limits_config();
    kapi_buf req;
    kapi_buf_init(&req);
    kapi_buf_puts(&req, "GET /n HTTP/1.1\r\n");
    for (int i = 0; i < 5000; i++)
        kapi_buf_printf(&req, "X-H%d: v\r\n", i);
    kapi_buf_puts(&req, "\r\n");
    fixture_start(&f, &cfg);
    client_connect(&c, f.port);
    client_send(&c, req.ptr, req.len);
    CHECK(client_read_response(&c, &r));
    CHECK(strncmp(r.head.ptr, "HTTP/1.1 200 OK\r\n", 17) == 0);
    CHECK_STR_EQ(r.body.ptr, "ok 5000 headers, body 0");
    resp_dispose(&r);
    client_close(&c);
    kapi_buf_dispose(&req);
    fixture_stop(&f);
}

/* Every status line is valid: a status that is not three digits is a handler's bug, sent
 * as 500 (more than 1,024 headers once gave "HTTP/1.1 1 Unknown"). */
TEST(http_status_line_always_valid)
{
    http_fixture f;
    http_client c;
    http_resp r;
    kapi_http_config cfg = limits_config();
    fixture_start(&f, &cfg);
    client_connect(&c, f.port);
    client_sends(&c, "GET /status1 HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK(strncmp(r.head.ptr, "HTTP/1.1 500 Internal Server Error\r\n", 36) == 0);
    resp_dispose(&r);
    client_close(&c);
    fixture_stop(&f);
}

/* Past 1 MiB + 4 KiB of request line and headers: Go's exact 431, however many headers. */
TEST(http_header_bytes_limit_is_gos)
{
    http_fixture f;
    http_client c;
    kapi_http_config cfg = limits_config();
    kapi_buf req;
    kapi_buf_init(&req);
    kapi_buf_puts(&req, "GET /n HTTP/1.1\r\n");
    while (req.len < (1u << 20) + 8192)
        kapi_buf_puts(&req, "X: 0123456789\r\n");
    kapi_buf_puts(&req, "\r\n");
    fixture_start(&f, &cfg);
    client_connect(&c, f.port);
    client_send(&c, req.ptr, req.len);
    CHECK(client_read_eof(&c));
    CHECK_STR_EQ(c.carry.ptr, "HTTP/1.1 431 Request Header Fields Too Large\r\n"
                              "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
                              "\r\n431 Request Header Fields Too Large");
    client_close(&c);
    kapi_buf_dispose(&req);
    fixture_stop(&f);
}

/* Go understands one Transfer-Encoding, "chunked", and answers anything else 501. */
TEST(http_unsupported_transfer_encoding_501)
{
    static const char *const bad[] = {
        "POST /n HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        "POST /n HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST /n HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n",
    };
    http_fixture f;
    http_client c;
    http_resp r;
    kapi_http_config cfg = limits_config();
    fixture_start(&f, &cfg);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(bad); i++) {
        client_connect(&c, f.port);
        client_sends(&c, bad[i]);
        CHECK(client_read_eof(&c));
        CHECK_STR_EQ(c.carry.ptr, "HTTP/1.1 501 Not Implemented\r\n"
                                  "Content-Type: text/plain; charset=utf-8\r\n"
                                  "Connection: close\r\n\r\nUnsupported transfer encoding");
        client_close(&c);
    }
    client_connect(&c, f.port);
    client_sends(&c,
                 "POST /n HTTP/1.1\r\nTransfer-Encoding: Chunked \r\n\r\n3\r\nabc\r\n0\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "ok 1 headers, body 3");
    resp_dispose(&r);
    client_close(&c);
    fixture_stop(&f);
}

/* Headers sent a line at a time, each well within the old idle timeout: the connection is
 * closed, without an answer, header_timeout after the first byte. */
TEST(http_slow_headers_closed_at_deadline)
{
    http_fixture f;
    http_client c;
    kapi_http_config cfg = limits_config();
    double t0, took;
    bool closed = false;
    fixture_start(&f, &cfg);
    client_connect(&c, f.port);
    t0 = now_s();
    client_sends(&c, "GET /n HTTP/1.1\r\n");
    for (int i = 0; i < 20 && !closed; i++) {
        char line[32];
        usleep(50 * 1000);
        snprintf(line, sizeof(line), "X-Line-%d: 1\r\n", i);
        client_sends(&c, line);
        closed = recv(c.fd, line, sizeof(line), MSG_DONTWAIT) == 0;
    }
    CHECK(closed || client_read_eof(&c));
    took = now_s() - t0;
    CHECK(took >= 0.25 && took < 0.8);
    CHECK_INT_EQ(c.carry.len, 0);
    client_close(&c);
    fixture_stop(&f);
}

/* A new connection that sends nothing, and a kept-alive one after its answer, are closed
 * after their deadlines. */
TEST(http_idle_connections_closed)
{
    http_fixture f;
    http_client c;
    http_resp r;
    kapi_http_config cfg = limits_config();
    double t0;
    fixture_start(&f, &cfg);
    client_connect(&c, f.port);
    t0 = now_s();
    CHECK(client_read_eof(&c));
    CHECK(now_s() - t0 >= 0.25 && now_s() - t0 < 0.8);
    client_close(&c);
    client_connect(&c, f.port);
    client_sends(&c, "GET /n HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    resp_dispose(&r);
    t0 = now_s();
    CHECK(client_read_eof(&c));
    CHECK(now_s() - t0 >= 0.25 && now_s() - t0 < 0.8);
    client_close(&c);
    fixture_stop(&f);
}

/* A body trickled a byte at a time: at the deadline the timeout answer, then close. */
TEST(http_slow_body_times_out)
{
    http_fixture f;
    http_client c;
    http_resp r;
    kapi_http_config cfg = limits_config();
    double t0;
    fixture_start(&f, &cfg);
    client_connect(&c, f.port);
    t0 = now_s();
    client_sends(&c, "POST /n HTTP/1.1\r\nContent-Length: 100\r\n\r\n");
    for (int i = 0; i < 6; i++) {
        usleep(60 * 1000);
        client_sends(&c, "x");
    }
    CHECK(client_read_response(&c, &r));
    CHECK_INT_EQ(r.status, 504);
    CHECK(now_s() - t0 >= 0.25 && now_s() - t0 < 0.8);
    CHECK_STR_EQ(r.body.ptr, "{\"reason\":\"Timeout\"}\n");
    CHECK_STR_EQ(resp_header(&r, "connection"), "close");
    CHECK(client_read_eof(&c));
    resp_dispose(&r);
    client_close(&c);
    CHECK_INT_EQ(handled, 0);
    fixture_stop(&f);
}

/* The handler is late: the timeout answer at the deadline, the handler's answer dropped
 * when it comes (the request stays valid for it), and the server serves on. */
TEST(http_request_deadline_answers_timeout)
{
    http_fixture f;
    http_client c;
    http_resp r;
    kapi_http_config cfg = limits_config();
    double t0;
    fixture_start(&f, &cfg);
    client_connect(&c, f.port);
    t0 = now_s();
    client_sends(&c, "GET /slow HTTP/1.1\r\n\r\nGET /n HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK(now_s() - t0 >= 0.12 && now_s() - t0 < 0.35);
    CHECK(strncmp(r.head.ptr, "HTTP/1.1 504 Gateway Timeout\r\n", 30) == 0);
    CHECK_STR_EQ(r.body.ptr, "{\"reason\":\"Timeout\"}\n");
    CHECK_STR_EQ(resp_header(&r, "connection"), "close");
    CHECK(client_read_eof(&c));
    CHECK(strstr(c.carry.ptr, "late") == NULL);
    resp_dispose(&r);
    client_close(&c);
    wait_for(&handled, 1);
    usleep(50 * 1000); /* the late answer reaches the loop and is dropped */
    client_connect(&c, f.port);
    client_sends(&c, "GET /n HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_INT_EQ(r.status, 200);
    resp_dispose(&r);
    client_close(&c);
    fixture_stop(&f);
}

/* A streamed answer still open at its deadline is cut off; a long-running one is not. */
TEST(http_request_deadline_cuts_stream)
{
    http_fixture f;
    http_client c;
    http_resp r;
    kapi_http_config cfg = limits_config();
    fixture_start(&f, &cfg);
    client_connect(&c, f.port);
    client_sends(&c, "GET /slowstream HTTP/1.1\r\n\r\n");
    CHECK(client_read_eof(&c));
    CHECK(strstr(c.carry.ptr, "first") != NULL && strstr(c.carry.ptr, "second") == NULL);
    client_close(&c);
    client_connect(&c, f.port);
    client_sends(&c, "GET /watch HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "event\n");
    resp_dispose(&r);
    client_close(&c);
    wait_for(&handled, 1);
    fixture_stop(&f);
}

/* Sends a request on a new connection (the caller reads the answer later). */
static void send_on(http_client *c, int port, const char *req)
{
    client_connect(c, port);
    client_sends(c, req);
}

static void expect_status(http_client *c, int status)
{
    http_resp r;
    CHECK(client_read_response(c, &r));
    CHECK_INT_EQ(r.status, status);
    if (status == 429) {
        CHECK_STR_EQ(resp_header(&r, "retry-after"), "1");
        CHECK_STR_EQ(r.body.ptr, "busy\n");
    }
    resp_dispose(&r);
}

/* Each class has its own limit, a request waiting for a worker counts, and long-running
 * requests are not counted; slots come back when the answers are written. */
TEST(http_max_inflight_per_class)
{
    http_fixture f;
    http_client rd[3], wr[2], lr, after;
    kapi_http_config cfg = limits_config();
    cfg.workers = 2;
    cfg.max_inflight[KAPI_HTTP_READ] = 2;
    cfg.max_inflight[KAPI_HTTP_MUTATE] = 1;
    fixture_start(&f, &cfg);
    send_on(&wr[0], f.port, "POST /block HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    wait_for(&blocked, 1);
    send_on(&rd[0], f.port, "GET /block HTTP/1.1\r\n\r\n");
    wait_for(&blocked, 2);
    /* Both workers are busy: this one waits in the queue, and counts. */
    send_on(&rd[1], f.port, "GET /block HTTP/1.1\r\n\r\n");
    usleep(50 * 1000);
    send_on(&rd[2], f.port, "GET /block HTTP/1.1\r\n\r\n");
    expect_status(&rd[2], 429);
    send_on(&wr[1], f.port, "POST /block HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    expect_status(&wr[1], 429);
    /* The busy answer keeps the connection: the next request on it is admitted later. */
    release_n = 3;
    expect_status(&wr[0], 200);
    expect_status(&rd[0], 200);
    expect_status(&rd[1], 200);
    client_sends(&rd[2], "GET /n HTTP/1.1\r\n\r\n");
    expect_status(&rd[2], 200);
    send_on(&lr, f.port, "GET /watch HTTP/1.1\r\n\r\n");
    expect_status(&lr, 200);
    send_on(&after, f.port, "GET /n HTTP/1.1\r\n\r\n");
    expect_status(&after, 200);
    for (int i = 0; i < 3; i++)
        client_close(&rd[i]);
    client_close(&wr[0]);
    client_close(&wr[1]);
    client_close(&lr);
    client_close(&after);
    fixture_stop(&f);
}

/* Long-running requests hold no slot, even past the limit of their would-be class. */
TEST(http_long_running_not_counted)
{
    http_fixture f;
    http_client w[3], c;
    kapi_http_config cfg = limits_config();
    cfg.max_inflight[KAPI_HTTP_READ] = 1;
    fixture_start(&f, &cfg);
    for (int i = 0; i < 3; i++) {
        send_on(&w[i], f.port, "GET /watch HTTP/1.1\r\n\r\n");
        CHECK(client_read_until(&w[i], "event"));
    }
    send_on(&c, f.port, "GET /n HTTP/1.1\r\n\r\n");
    expect_status(&c, 200);
    for (int i = 0; i < 3; i++)
        client_close(&w[i]);
    client_close(&c);
    fixture_stop(&f);
}

/* The queue of requests waiting for a worker is bounded too, whatever their class. */
TEST(http_queue_bounded)
{
    http_fixture f;
    http_client a, b, c;
    kapi_http_config cfg = limits_config();
    cfg.workers = 1;
    cfg.max_queued = 1;
    fixture_start(&f, &cfg);
    send_on(&a, f.port, "GET /block HTTP/1.1\r\n\r\n");
    wait_for(&blocked, 1);
    send_on(&b, f.port, "GET /watch HTTP/1.1\r\n\r\n");
    usleep(50 * 1000);
    send_on(&c, f.port, "GET /n HTTP/1.1\r\n\r\n");
    expect_status(&c, 429);
    release_n = 1;
    expect_status(&a, 200);
    expect_status(&b, 200);
    client_close(&a);
    client_close(&b);
    client_close(&c);
    fixture_stop(&f);
}

/* Requests that arrive together each get a worker while the others are still busy: the
 * loop wakes one idle worker, and each woken worker wakes the next for what it leaves in
 * the queue. */
TEST(http_queued_requests_reach_every_worker)
{
    enum { N = 8 };
    http_fixture f;
    http_client c[N];
    kapi_http_config cfg = limits_config();
    cfg.workers = N;
    fixture_start(&f, &cfg);
    for (int i = 0; i < N; i++)
        client_connect(&c[i], f.port);
    for (int i = 0; i < N; i++)
        client_sends(&c[i], "GET /block HTTP/1.1\r\n\r\n");
    wait_for(&blocked, N);
    release_n = N;
    for (int i = 0; i < N; i++) {
        expect_status(&c[i], 200);
        client_close(&c[i]);
    }
    fixture_stop(&f);
}
