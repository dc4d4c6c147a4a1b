/*
 * fuzz_http2: the bytes an HTTP/2 client sends after its connection preface, read by the
 * http layer's HTTP/2 protocol (src/http/h2.c over nghttp2) on a connection without a
 * socket: frames, header blocks, bodies, resets, window updates, GOAWAY, in any order and
 * cut anywhere. The handler answers each request (a complete answer, or a short stream
 * for "/s" paths), so that answers, flow control and stream ends run too. Then the
 * client goes away and everything must be freed.
 *
 * Input: the first byte gives the size of the pieces the rest is fed in (1 to 256
 * bytes), then the frames.
 */
#include "fuzz.h"
#include "http/http_int.h"

static void handler(kapi_http_request *req, void *ctx)
{
    (void)ctx;
    if (req->path.len > 1 && req->path.ptr[1] == 's') {
        kapi_http_stream *s = kapi_http_stream_start(req, 200, NULL, 0, 4096);
        for (int i = 0; i < 3; i++)
            kapi_http_stream_write(s, kapi_http_chunk_copy("{\"event\":1}\n", 12));
        kapi_http_stream_end(s);
        return;
    }
    static const kapi_http_header h[] = {{"Content-Type", "text/plain"}};
    char *text = kapi_xprintf("%s %zu", req->method, req->body_len);
    kapi_http_respond(req, 200, h, 1, &(kapi_http_chunk){text, strlen(text), free, text}, 1);
}

static uv_loop_t loop;
static kapi_http_server *srv;

static void setup(void)
{
    kapi_http_config cfg = {.max_body = 1024, .workers = 2, .handler = handler};
    kapi_error *err;
    uv_loop_init(&loop);
    if ((err = kapi_http__server_new_loopback(&srv, &loop, &cfg)) != NULL)
        fuzz_setup_failed("loopback server", err);
}

/* Whether answers are still due from the workers. */
static bool waiting(kapi_conn *c)
{
    bool msgs;
    pthread_mutex_lock(&srv->mu);
    msgs = srv->head != NULL;
    pthread_mutex_unlock(&srv->mu);
    return msgs || (srv->nconns > 0 && kapi_http__conn_handling(c));
}

/* Runs the loop until the workers' answers are written (bounded). */
static void settle(kapi_conn *c)
{
    for (int i = 0; i < 100000 && waiting(c); i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        if (i > 100)
            usleep(10);
    }
    uv_run(&loop, UV_RUN_NOWAIT);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    kapi_buf out;
    kapi_conn *c;
    size_t piece;
    if (size < 1 || size > FUZZ_MAX_INPUT)
        return 0;
    if (!srv)
        setup();
    piece = (size_t)data[0] + 1;
    kapi_buf_init(&out);
    c = kapi_http__conn_loopback(srv, &out);
    kapi_http__conn_set_proto(c, &kapi_http__h2);
    kapi_http__conn_input(c, preface, sizeof(preface) - 1);
    for (size_t off = 1; off < size && srv->nconns > 0 && !c->closing; off += piece) {
        size_t n = size - off < piece ? size - off : piece;
        kapi_http__conn_input(c, (const char *)data + off, n);
        settle(c);
    }
    if (srv->nconns > 0)
        kapi_http__conn_close(c); /* the client goes: a handler's answer may still come */
    for (int i = 0; i < 100000 && srv->nconns > 0; i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        if (i > 100)
            usleep(10);
    }
    if (srv->nconns > 0)
        abort(); /* the conn was never freed */
    kapi_buf_dispose(&out);
    return 0;
}
