/*
 * exchange: one request and its answer on a connection, whatever the protocol. The
 * protocol makes it and fills in its request; from here on the steps are the same for
 * every protocol: once the headers are in, the request is classified (its deadline starts
 * then, as kube-apiserver's does when its handler chain starts); once it is complete it
 * is admitted to the pool or answered busy (http.h); and the layer's own answer at a
 * deadline is written through the protocol like any other.
 */
#include <string.h>

#include "http/http_int.h"

kapi_http_exchange *kapi_http__exchange_new(kapi_conn *c, const kapi_http_proto_ops *proto)
{
    kapi_http_exchange *ex = kapi_xcalloc(1, sizeof(*ex));
    kapi_arena_init(&ex->arena);
    kapi_buf_init(&ex->body);
    ex->conn = c;
    ex->proto = proto;
    ex->phase = KAPI_HTTP__READING;
    ex->cnext = c->exchanges;
    if (ex->cnext)
        ex->cnext->cprev = ex;
    c->exchanges = ex;
    return ex;
}

void kapi_http__exchange_free(kapi_http_exchange *ex)
{
    if (!ex)
        return;
    ex->proto->forget(ex);
    if (ex->cprev)
        ex->cprev->cnext = ex->cnext;
    else
        ex->conn->exchanges = ex->cnext;
    if (ex->cnext)
        ex->cnext->cprev = ex->cprev;
    kapi_arena_dispose(&ex->arena);
    kapi_buf_dispose(&ex->body);
    free(ex);
}

void kapi_http__exchange_add_header(kapi_http_exchange *ex, const char *name, size_t name_len,
                                    const char *value, size_t value_len, bool lower)
{
    kapi_http_header *h;
    if (ex->nheaders == ex->headers_cap) { /* the array lives in the arena too */
        kapi_http_header *grown;
        ex->headers_cap = ex->headers_cap ? 2 * ex->headers_cap : 16;
        grown = kapi_arena_alloc(&ex->arena, ex->headers_cap * sizeof(*ex->headers));
        if (ex->nheaders)
            memcpy(grown, ex->headers, ex->nheaders * sizeof(*ex->headers));
        ex->headers = grown;
    }
    /* One allocation for both: the arena's memory is zeroed, so each ends with its NUL. */
    char *p = kapi_arena_alloc(&ex->arena, name_len + value_len + 2);
    memcpy(p, name, name_len);
    for (size_t i = 0; lower && i < name_len; i++)
        if ((unsigned char)(p[i] - 'A') < 26)
            p[i] = (char)(p[i] | 0x20);
    memcpy(p + name_len + 1, value, value_len);
    h = &ex->headers[ex->nheaders++];
    h->name = p;
    h->value = p + name_len + 1;
}

void kapi_http__exchange_headers(kapi_http_exchange *ex)
{
    kapi_conn *c = ex->conn;
    const kapi_http_config *cfg = &c->srv->cfg;
    kapi_http_admission a = {KAPI_HTTP_READ, 0};
    uint64_t now = kapi_http__conn_now(c);
    ex->pub.headers = ex->headers;
    ex->pub.nheaders = ex->nheaders;
    ex->pub.remote_addr = c->remote_addr; /* the conn outlives its exchanges */
    ex->pub.peer_certificate = kapi_http__tls_peer_cert(c);
    ex->pub.peer_certificate_rejected = kapi_http__tls_peer_cert_rejected(c);
    if (cfg->classify)
        a = cfg->classify(&ex->pub, cfg->handler_ctx);
    ex->cls = a.cls;
    ex->deadline = a.cls != KAPI_HTTP_LONG_RUNNING && a.timeout_ms ? now + a.timeout_ms : 0;
    kapi_http__exchange_arm(ex, ex->deadline ? ex->deadline : now + cfg->request_timeout_ms);
}

void kapi_http__exchange_arm(kapi_http_exchange *ex, uint64_t at)
{
    ex->proto->arm(ex, at);
}

/* Answers cfg.busy through the handler's own path (posted to the loop, written in turn). */
static void answer_busy(kapi_http_exchange *ex)
{
    const kapi_http_answer *a = &ex->conn->srv->cfg.busy;
    kapi_http_chunk body = {a->body, strlen(a->body), NULL, NULL};
    kapi_http_respond(&ex->pub, a->status, a->headers, a->nheaders, &body, 1);
}

void kapi_http__exchange_dispatch(kapi_http_exchange *ex)
{
    kapi_conn *c = ex->conn;
    ex->pub.body = ex->body.ptr;
    ex->pub.body_len = ex->body.len;
    ex->phase = KAPI_HTTP__HANDLING;
    kapi_http__exchange_arm(ex, ex->deadline);
    if (!kapi_http__pool_admit(&c->srv->pool, ex)) {
        const kapi_http_config *cfg = &c->srv->cfg;
        if (cfg->refused)
            cfg->refused(&ex->pub, cfg->busy.status, cfg->handler_ctx);
        answer_busy(ex);
    }
}

void kapi_http__exchange_answer(kapi_http_exchange *ex, const kapi_http_answer *a)
{
    kapi_conn *c = ex->conn;
    const kapi_http_config *cfg = &c->srv->cfg;
    if (cfg->refused && ex->pub.method)
        cfg->refused(&ex->pub, a->status, cfg->handler_ctx);
    kapi_http_chunk *body = kapi_xmalloc(sizeof(*body));
    kapi_buf head;
    kapi_buf_init(&head);
    ex->proto->encode_head(&head, a->status, a->headers, a->nheaders);
    ex->answered = ex->phase == KAPI_HTTP__HANDLING;
    if (ex->phase == KAPI_HTTP__READING)
        c->unread = true; /* the body, cut short: linger so the peer reads the answer */
    ex->close_after = true;
    *body = (kapi_http_chunk){a->body, strlen(a->body), NULL, NULL};
    kapi_http__write_answer(ex, a->status, &head, body->len, body, 1);
    ex->proto->answered(ex);
    kapi_http__conn_flush(c);
}
