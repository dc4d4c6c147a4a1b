/*
 * fuzz_conn: what the connection targets (fuzz_h1, fuzz_http2) share: a loopback server
 * of the http layer, without a socket, whose handler answers each request (a complete
 * answer naming what it read, or a short stream for "/s" paths) so that answers, flow
 * control and stream ends run too; and a run that feeds one input to a new connection in
 * pieces, lets the workers' answers be written after each, then has the client go away
 * and checks that everything was freed.
 *
 * Input: the first byte gives the size of the pieces the rest is fed in (1 to 256 bytes).
 */
#ifndef KAPI_FUZZ_CONN_H
#define KAPI_FUZZ_CONN_H

#include "fuzz.h"
#include "http/http_int.h"

static void fuzz_conn_handler(kapi_http_request *req, void *ctx)
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
    size_t hl = 0;
    for (size_t i = 0; i < req->nheaders; i++)
        hl += strlen(req->headers[i].name) + strlen(req->headers[i].value);
    char *text =
        kapi_xprintf("%s %.*s %.*s %zu %zu", req->method, (int)req->path.len, req->path.ptr,
                     (int)req->query.len, req->query.ptr, req->body_len, hl);
    kapi_http_respond(req, 200, h, 1, &(kapi_http_chunk){text, strlen(text), free, text}, 1);
}

static uv_loop_t fuzz_conn_loop;
static kapi_http_server *fuzz_conn_srv;

/* Whether answers are still due from the workers. */
static bool fuzz_conn_waiting(kapi_conn *c)
{
    kapi_http_server *srv = fuzz_conn_srv;
    pthread_mutex_lock(&srv->mu);
    bool msgs = srv->head != NULL;
    pthread_mutex_unlock(&srv->mu);
    return msgs || (srv->nconns > 0 && kapi_http__conn_handling(c));
}

/* Runs the loop until the workers' answers are written, or any is bound to be (bounded). */
static void fuzz_conn_settle(kapi_conn *c)
{
    for (int i = 0; i < 100000 && fuzz_conn_waiting(c); i++) {
        uv_run(&fuzz_conn_loop, UV_RUN_NOWAIT);
        if (i > 100)
            usleep(10);
    }
    uv_run(&fuzz_conn_loop, UV_RUN_NOWAIT);
}

/* Feeds data (after its first byte) to a new connection speaking proto (NULL: HTTP/1.1,
 * as every connection starts), after the preface (may be empty). */
static int fuzz_conn_run(const uint8_t *data, size_t size, const kapi_http_proto_ops *proto,
                         const char *preface)
{
    if (size < 1 || size > FUZZ_MAX_INPUT)
        return 0;
    if (!fuzz_conn_srv) {
        kapi_http_config cfg = {.max_body = 1024, .workers = 2, .handler = fuzz_conn_handler};
        kapi_error *err;
        uv_loop_init(&fuzz_conn_loop);
        if ((err = kapi_http__server_new_loopback(&fuzz_conn_srv, &fuzz_conn_loop, &cfg)) != NULL)
            fuzz_setup_failed("loopback server", err);
    }
    kapi_http_server *srv = fuzz_conn_srv;
    size_t piece = (size_t)data[0] + 1;
    kapi_buf out;
    kapi_buf_init(&out);
    kapi_conn *c = kapi_http__conn_loopback(srv, &out);
    if (proto)
        kapi_http__conn_set_proto(c, proto);
    if (*preface)
        kapi_http__conn_input(c, preface, strlen(preface));
    for (size_t off = 1; off < size && srv->nconns > 0 && !c->closing; off += piece) {
        size_t n = size - off < piece ? size - off : piece;
        kapi_http__conn_input(c, (const char *)data + off, n);
        fuzz_conn_settle(c);
    }
    if (srv->nconns > 0)
        kapi_http__conn_close(c); /* the client goes: a handler's answer may still come */
    for (int i = 0; i < 100000 && srv->nconns > 0; i++) {
        uv_run(&fuzz_conn_loop, UV_RUN_NOWAIT);
        if (i > 100)
            usleep(10);
    }
    if (srv->nconns > 0)
        abort(); /* the conn was never freed */
    kapi_buf_dispose(&out);
    return 0;
}

#endif
