/* Unit tests for the exchange and HTTP/1.1's framing (h1.c), driven without a socket
 * through a loopback conn: request bytes in, the exact response bytes out. */
#include <stdio.h>
#include <unistd.h>

#include "loopback.h"
#include "test.h"

/* "/hello": two chunks, the second pointing into the memory the first owns (a complete
 * answer's chunks are released together, after its last byte). */
static void hello(kapi_http_request *req)
{
    kapi_http_header h[] = {{"Content-Type", "text/plain"},
                            {"Content-Length", "99"},
                            {"X-Split", "a\r\nInjected: 1"},
                            {"X-Test", "1"}};
    char *p = kapi_xstrdup("hello");
    kapi_http_chunk body[] = {kapi_http_chunk_take(p, 3), {p + 3, 2, NULL, NULL}};
    kapi_http_respond(req, 200, h, 4, body, 2);
}

/* "/stream": parts of one and of several chunks, an empty chunk, then the end. */
static void stream(kapi_http_request *req)
{
    kapi_http_header h[] = {{"Content-Type", "application/json"}};
    kapi_http_stream *s = kapi_http_stream_start(req, 200, h, 1, 1 << 20);
    kapi_http_chunk two[] = {
        {"ab", 2, NULL, NULL}, {"", 0, NULL, NULL}, kapi_http_chunk_copy("cde", 3)};
    CHECK(kapi_http_stream_write(s, kapi_http_chunk_copy("x", 1)));
    CHECK(kapi_http_stream_writev(s, two, 3));
    CHECK(kapi_http_stream_write(s, (kapi_http_chunk){"0123456789abcdefg", 17, NULL, NULL}));
    kapi_http_stream_end(s);
}

/* "/flood": a stream that goes over its byte limit at once. */
static void flood(kapi_http_request *req)
{
    kapi_http_stream *s = kapi_http_stream_start(req, 200, NULL, 0, 4);
    CHECK(!kapi_http_stream_write(s, (kapi_http_chunk){"0123456789", 10, NULL, NULL}));
    kapi_http_stream_end(s);
}

/* "/slow": answers after the deadline the classifier gives it. */
static void slow(kapi_http_request *req)
{
    usleep(300 * 1000);
    kapi_http_respond(req, 200, NULL, 0, NULL, 0);
}

/* "/echo": the method, path, query, a header and the body. */
static void echo(kapi_http_request *req)
{
    const char *foo = kapi_http_header_get(req, "x-foo");
    char *s =
        kapi_xprintf("%s %.*s ? %.*s foo=%s tl=%d body=%s", req->method, KAPI_STR_FMT(req->path),
                     KAPI_STR_FMT(req->query), foo ? foo : "-", req->body_too_large, req->body);
    kapi_http_chunk c = kapi_http_chunk_take(s, strlen(s));
    kapi_http_respond(req, 200, NULL, 0, &c, 1);
}

static void route(kapi_http_request *req, void *ctx)
{
    (void)ctx;
    if (kapi_str_eqc(req->path, "/hello"))
        hello(req);
    else if (kapi_str_eqc(req->path, "/stream"))
        stream(req);
    else if (kapi_str_eqc(req->path, "/flood"))
        flood(req);
    else if (kapi_str_eqc(req->path, "/slow"))
        slow(req);
    else
        echo(req);
}

static kapi_http_admission classify(const kapi_http_request *req, void *ctx)
{
    (void)ctx;
    if (kapi_str_eqc(req->path, "/slow"))
        return (kapi_http_admission){KAPI_HTTP_READ, 50};
    return (kapi_http_admission){KAPI_HTTP_READ, 0};
}

/* The bytes of a 200 answer to "/echo"-like requests: body with its length, after extra
 * header lines. */
static const char *ok(const char *extra, const char *body)
{
    static _Thread_local char buf[4][256];
    static _Thread_local int next;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof(buf[0]), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n%s\r\n%s", strlen(body),
             extra, body);
    return b;
}

/* The head of "/hello"'s answer: the handler's Content-Length and the header that would
 * split the response are not written. */
#define HELLO_HEAD                                                                                 \
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Test: 1\r\nContent-Length: 5\r\n\r\n"

static kapi_http_config config(void)
{
    return (kapi_http_config){.max_body = 16, .workers = 2, .handler = route, .classify = classify};
}

TEST(http_exchange_complete_answer_bytes)
{
    loopback lb;
    kapi_http_config cfg = config();
    loopback_start(&lb, &cfg);
    loopback_send(&lb, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(loopback_wait_for(&lb, "hello", 1));
    CHECK_STR_EQ(lb.out.ptr, HELLO_HEAD "hello");
    loopback_stop(&lb);
}

/* A request that comes a byte at a time (its target, header names and values in pieces,
 * Expect and Transfer-Encoding among them) is read as if it came at once. */
TEST(http_exchange_request_in_pieces)
{
    static const char req[] = "POST /a/b?q=1 HTTP/1.1\r\nX-FOO: bar baz\r\n"
                              "EXPECT: 100-continue\r\nTransfer-ENCODING: chunked\r\n\r\n"
                              "2\r\nhi\r\n0\r\n\r\n";
    static const char continue_head[] = "HTTP/1.1 100 Continue\r\n\r\n";
    loopback lb;
    kapi_http_config cfg = config();
    loopback_start(&lb, &cfg);
    for (size_t i = 0; i < sizeof(req) - 1; i++)
        loopback_send(&lb, (char[]){req[i], '\0'});
    CHECK(loopback_wait_for(&lb, "body=", 1));
    CHECK(strncmp(lb.out.ptr, continue_head, strlen(continue_head)) == 0);
    CHECK_STR_EQ(lb.out.ptr + strlen(continue_head),
                 ok("", "POST /a/b ? q=1 foo=bar baz tl=0 body=hi"));
    loopback_stop(&lb);
}

TEST(http_exchange_head_has_length_but_no_body)
{
    loopback lb;
    kapi_http_config cfg = config();
    loopback_start(&lb, &cfg);
    loopback_send(&lb, "HEAD /hello HTTP/1.1\r\n\r\nGET /e HTTP/1.1\r\n\r\n");
    CHECK(loopback_wait_for(&lb, "HTTP/1.1", 2));
    CHECK(loopback_wait_for(&lb, "body=", 1));
    CHECK(strncmp(lb.out.ptr, HELLO_HEAD, strlen(HELLO_HEAD)) == 0);
    CHECK_STR_EQ(lb.out.ptr + strlen(HELLO_HEAD), ok("", "GET /e ?  foo=- tl=0 body="));
    loopback_stop(&lb);
}

TEST(http_exchange_pipelined_in_order_with_bodies)
{
    loopback lb;
    kapi_http_config cfg = config();
    loopback_start(&lb, &cfg);
    loopback_send(&lb, "POST /a?q=1 HTTP/1.1\r\nX-Foo: bar\r\nContent-Length: 2\r\n\r\nhi"
                       "POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                       "2\r\nab\r\n1\r\nc\r\n0\r\n\r\nGET /c HTTP/1.1\r\n");
    loopback_send(&lb, "\r\n");
    CHECK(loopback_wait_for(&lb, "HTTP/1.1 200", 3));
    CHECK(loopback_wait_for(&lb, "GET /c", 1));
    const char *a = ok("", "POST /a ? q=1 foo=bar tl=0 body=hi");
    const char *b = ok("", "POST /b ?  foo=- tl=0 body=abc");
    const char *c = ok("", "GET /c ?  foo=- tl=0 body=");
    CHECK_INT_EQ(lb.out.len, strlen(a) + strlen(b) + strlen(c));
    CHECK(memcmp(lb.out.ptr, a, strlen(a)) == 0);
    CHECK(memcmp(lb.out.ptr + strlen(a), b, strlen(b)) == 0);
    CHECK_STR_EQ(lb.out.ptr + strlen(a) + strlen(b), c);
    CHECK(lb.conn != NULL); /* kept alive */
    loopback_stop(&lb);
}

TEST(http_exchange_stream_is_chunked_by_parts)
{
    loopback lb;
    kapi_http_config cfg = config();
    loopback_start(&lb, &cfg);
    loopback_send(&lb, "GET /stream HTTP/1.1\r\n\r\n");
    CHECK(loopback_wait_for(&lb, "0\r\n\r\n", 1));
    CHECK_STR_EQ(lb.out.ptr, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n"
                             "1\r\nx\r\n5\r\nabcde\r\n11\r\n0123456789abcdefg\r\n0\r\n\r\n");
    loopback_send(&lb, "GET /hello HTTP/1.1\r\n\r\n"); /* the conn goes on */
    CHECK(loopback_wait_for(&lb, "hello", 1));
    loopback_stop(&lb);
}

TEST(http_exchange_http10_connection_header)
{
    loopback lb;
    kapi_http_config cfg = config();
    loopback_start(&lb, &cfg);
    loopback_send(&lb, "GET /k HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    CHECK(loopback_wait_for(&lb, "body=", 1));
    CHECK_STR_EQ(lb.out.ptr, ok("Connection: keep-alive\r\n", "GET /k ?  foo=- tl=0 body="));
    kapi_buf_clear(&lb.out);
    loopback_send(&lb, "GET /stream HTTP/1.0\r\n\r\n");
    CHECK(loopback_wait_closed(&lb));
    CHECK(strstr(lb.out.ptr, "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n1\r\nx\r\n"));
    CHECK(strstr(lb.out.ptr, "\r\n0\r\n\r\n"));
    loopback_stop(&lb);
}

TEST(http_exchange_body_too_large_closes_after_answer)
{
    loopback lb;
    kapi_http_config cfg = config();
    loopback_start(&lb, &cfg);
    loopback_send(&lb, "POST /big HTTP/1.1\r\nContent-Length: 17\r\n\r\n0123");
    CHECK(loopback_wait_closed(&lb));
    CHECK_STR_EQ(lb.out.ptr, ok("Connection: close\r\n", "POST /big ?  foo=- tl=1 body="));
    loopback_stop(&lb);
}

TEST(http_exchange_malformed_is_gos_400)
{
    loopback lb;
    kapi_http_config cfg = config();
    loopback_start(&lb, &cfg);
    loopback_send(&lb, "GET / HTTP/1.1\r\nBad Header\r\n\r\n");
    CHECK(loopback_wait_closed(&lb));
    CHECK_STR_EQ(lb.out.ptr, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; "
                             "charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request");
    loopback_stop(&lb);
}

TEST(http_exchange_deadline_answers_timeout_and_drops_the_late_answer)
{
    loopback lb;
    kapi_http_config cfg = config();
    loopback_start(&lb, &cfg);
    loopback_send(&lb, "GET /slow HTTP/1.1\r\n\r\n");
    CHECK(loopback_wait_closed(&lb)); /* freed only once the handler's answer came */
    CHECK_STR_EQ(lb.out.ptr, "HTTP/1.1 504 Gateway Timeout\r\nContent-Type: text/plain; "
                             "charset=utf-8\r\nContent-Length: 16\r\nConnection: close\r\n"
                             "\r\nGateway Timeout\n");
    loopback_stop(&lb);
}

TEST(http_exchange_peer_eof_after_pipelined_requests)
{
    loopback lb;
    kapi_http_config cfg = config();
    loopback_start(&lb, &cfg);
    loopback_send(&lb, "GET /1 HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\n");
    loopback_eof(&lb);
    CHECK(loopback_wait_closed(&lb)); /* both answered, then closed */
    CHECK(strstr(lb.out.ptr, "GET /1 ?"));
    CHECK(strstr(lb.out.ptr, "GET /2 ?"));
    loopback_stop(&lb);
}

TEST(http_exchange_stream_over_its_limit_is_reset)
{
    loopback lb;
    kapi_http_config cfg = config();
    loopback_start(&lb, &cfg);
    loopback_send(&lb, "GET /flood HTTP/1.1\r\n\r\n");
    CHECK(loopback_wait_closed(&lb)); /* HTTP/1.1 resets an answer by closing */
    CHECK(!strstr(lb.out.ptr, "0123456789"));
    CHECK(!strstr(lb.out.ptr, "0\r\n\r\n"));
    loopback_stop(&lb);
}
