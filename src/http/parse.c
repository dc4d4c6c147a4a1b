/*
 * parse: HTTP/1.1 requests with http-parser. Callbacks fill the conn's current
 * kapi_http_req; when it is complete (or its body is found too large) the parser is
 * paused and the request goes to the worker pool, so that pipelined requests wait in the
 * conn's input buffer for their turn. Header names are lower-cased; the request target is
 * split into raw path and query, not decoded. Once the headers are in, the request is
 * classified (its deadline starts then, as kube-apiserver's does when its handler chain
 * starts) and, once complete, admitted to the pool or answered busy (http.h).
 */
#include <ctype.h>
#include <limits.h>
#include <strings.h>

#include "http/http_int.h"

static const char continue_100[] = "HTTP/1.1 100 Continue\r\n\r\n";

/* Empties b. (kapi_buf_clear writes the NUL even into base's shared empty buffer, a
 * race between threads; an empty buffer needs nothing.) */
static void buf_reset(kapi_buf *b)
{
    if (b->len > 0)
        kapi_buf_clear(b);
}

static kapi_http_req *req_new(kapi_conn *c)
{
    kapi_http_req *req = kapi_xcalloc(1, sizeof(*req));
    kapi_arena_init(&req->arena);
    kapi_buf_init(&req->url);
    kapi_buf_init(&req->field);
    kapi_buf_init(&req->value);
    kapi_buf_init(&req->body);
    req->conn = c;
    return req;
}

void kapi_http__req_free(kapi_http_req *req)
{
    if (!req)
        return;
    kapi_arena_dispose(&req->arena);
    kapi_buf_dispose(&req->url);
    kapi_buf_dispose(&req->field);
    kapi_buf_dispose(&req->value);
    kapi_buf_dispose(&req->body);
    free(req->headers);
    free(req);
}

/* The first byte of a request: its request line and headers are due within the header
 * timeout (the parser itself fails past KAPI_HTTP__MAX_HEADER_BYTES of them). */
static int on_message_begin(http_parser *p)
{
    kapi_conn *c = p->data;
    kapi_http__req_free(c->req);
    c->req = req_new(c);
    kapi_http__conn_arm(c, kapi_http__conn_now(c) + c->srv->cfg.header_timeout_ms);
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    kapi_conn *c = p->data;
    kapi_buf_put(&c->req->url, at, n);
    return 0;
}

/* Moves the header being read (field, value) into the arena. */
static void commit_header(kapi_conn *c)
{
    kapi_http_req *req = c->req;
    kapi_http_header *h;
    if (req->nheaders == req->headers_cap) {
        req->headers_cap = req->headers_cap ? 2 * req->headers_cap : 16;
        req->headers = kapi_xrealloc(req->headers, req->headers_cap * sizeof(*req->headers));
    }
    for (size_t i = 0; i < req->field.len; i++)
        req->field.ptr[i] = (char)tolower((unsigned char)req->field.ptr[i]);
    h = &req->headers[req->nheaders++];
    h->name = kapi_arena_strndup(&req->arena, req->field.ptr, req->field.len);
    h->value = kapi_arena_strndup(&req->arena, req->value.ptr, req->value.len);
    buf_reset(&req->field);
    buf_reset(&req->value);
    req->in_value = false;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
    kapi_conn *c = p->data;
    if (c->req->in_value)
        commit_header(c);
    kapi_buf_put(&c->req->field, at, n);
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
    kapi_conn *c = p->data;
    c->req->in_value = true;
    kapi_buf_put(&c->req->value, at, n);
    return 0;
}

/* Splits the raw request target into path and query (absolute-form too). */
static void split_target(kapi_http_req *req)
{
    const char *url = kapi_arena_strndup(&req->arena, req->url.ptr, req->url.len);
    kapi_str rest = {url, req->url.len}, path;
    struct http_parser_url u;
    req->pub.query = KAPI_STR("");
    if (rest.len > 0 && rest.ptr[0] != '/' && rest.ptr[0] != '*') {
        http_parser_url_init(&u);
        if (http_parser_parse_url(url, rest.len, 0, &u) == 0) {
            if (u.field_set & (1 << UF_QUERY))
                req->pub.query =
                    (kapi_str){url + u.field_data[UF_QUERY].off, u.field_data[UF_QUERY].len};
            if (!(u.field_set & (1 << UF_PATH))) {
                req->pub.path = KAPI_STR("/");
                return;
            }
            rest = (kapi_str){url + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len};
        }
    }
    if (kapi_str_cut(&rest, '?', &path))
        req->pub.query = rest;
    req->pub.path = path;
}

/* Hands the request to the pool once the parser has stopped (see kapi_http__parse). */
static int dispatch_now(kapi_conn *c, http_parser *p)
{
    c->dispatch_now = true;
    http_parser_pause(p, 1);
    return 0;
}

static void mark_too_large(kapi_conn *c)
{
    c->req->pub.body_too_large = true;
    c->req->close_after = true;
    c->discard = true; /* the rest of the body is never read */
    c->unread = true;
    buf_reset(&c->req->body);
}

static bool expects_continue(kapi_http_req *req, http_parser *p)
{
    const char *expect = kapi_http_header_get(&req->pub, "expect");
    bool has_body =
        (p->flags & F_CHUNKED) || (p->content_length > 0 && p->content_length != ULLONG_MAX);
    return expect && strcasecmp(expect, "100-continue") == 0 && has_body && p->http_minor >= 1;
}

/* Go's rule (net/http transfer.go): an HTTP/1.1 request may carry one Transfer-Encoding
 * header, and only "chunked"; any other coding, or a list of them, is not understood. */
static bool unsupported_transfer_encoding(const kapi_http_req *req, const http_parser *p)
{
    size_t n = 0, len = 0;
    const char *v = NULL;
    if (p->http_major == 1 && p->http_minor == 0)
        return false; /* HTTP/1.0: Go ignores the header */
    for (size_t i = 0; i < req->nheaders; i++) {
        if (strcmp(req->headers[i].name, "transfer-encoding") == 0) {
            v = req->headers[i].value;
            n++;
        }
    }
    if (n == 0)
        return false;
    len = strlen(v);
    while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t'))
        len--;
    return n > 1 || len != 7 || strncasecmp(v, "chunked", 7) != 0;
}

/* Asks the classifier what req is; its deadline (or, for a long-running request, the
 * deadline of its body) starts now. */
static void classify(kapi_conn *c, kapi_http_req *req)
{
    const kapi_http_config *cfg = &c->srv->cfg;
    kapi_http_admission a = {KAPI_HTTP_READ, 0};
    uint64_t now = kapi_http__conn_now(c);
    if (cfg->classify)
        a = cfg->classify(&req->pub, cfg->handler_ctx);
    c->cls = a.cls;
    c->deadline = a.cls != KAPI_HTTP_LONG_RUNNING && a.timeout_ms ? now + a.timeout_ms : 0;
    kapi_http__conn_arm(c, c->deadline ? c->deadline : now + cfg->request_timeout_ms);
}

static int on_headers_complete(http_parser *p)
{
    kapi_conn *c = p->data;
    kapi_http_req *req = c->req;
    if (req->field.len > 0)
        commit_header(c);
    if (unsupported_transfer_encoding(req, p)) {
        c->error_status = 501;
        return -1;
    }
    req->pub.method = http_method_str(p->method);
    req->pub.headers = req->headers;
    req->pub.nheaders = req->nheaders;
    req->pub.remote_addr = kapi_arena_strdup(&req->arena, c->remote_addr);
    req->pub.peer_certificate = kapi_http__tls_peer_cert(c);
    split_target(req);
    classify(c, req);
    if (!(p->flags & F_CHUNKED) && p->content_length != ULLONG_MAX &&
        p->content_length > c->srv->cfg.max_body) {
        mark_too_large(c);
        return dispatch_now(c, p);
    }
    if (expects_continue(req, p)) {
        uv_buf_t b = uv_buf_init((char *)continue_100, sizeof(continue_100) - 1);
        kapi_http__conn_write(c, &b, 1, NULL, 0, NULL);
    }
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    kapi_conn *c = p->data;
    if (c->req->body.len + n > c->srv->cfg.max_body) {
        mark_too_large(c);
        return dispatch_now(c, p);
    }
    kapi_buf_put(&c->req->body, at, n);
    return 0;
}

static int on_message_complete(http_parser *p)
{
    kapi_conn *c = p->data;
    c->req->close_after = !http_should_keep_alive(p) || p->upgrade;
    c->req->keep_alive_10 = !c->req->close_after && p->http_major == 1 && p->http_minor == 0;
    return dispatch_now(c, p);
}

static const http_parser_settings settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

void kapi_http__parse_init(kapi_conn *c)
{
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
}

/* Answers cfg.busy through the handler's own path (posted to the loop, written in turn). */
static void answer_busy(kapi_conn *c, kapi_http_req *req)
{
    const kapi_http_answer *a = &c->srv->cfg.busy;
    kapi_http_chunk body = {a->body, strlen(a->body), NULL, NULL};
    kapi_http_respond(&req->pub, a->status, a->headers, a->nheaders, &body, 1);
}

static void dispatch(kapi_conn *c)
{
    kapi_http_req *req = c->req;
    c->req = NULL;
    c->dispatch_now = false;
    req->pub.body = req->body.ptr;
    req->pub.body_len = req->body.len;
    c->state = KAPI_CONN_HANDLING;
    kapi_http__conn_arm(c, c->deadline);
    if (!kapi_http__pool_admit(&c->srv->pool, c, req))
        answer_busy(c, req);
}

size_t kapi_http__parse(kapi_conn *c, const char *data, size_t len)
{
    size_t n = http_parser_execute(&c->parser, &settings, data, len);
    enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
    if (e == HPE_PAUSED && c->dispatch_now) {
        http_parser_pause(&c->parser, 0);
        dispatch(c);
        return n;
    }
    if (e != HPE_OK || n == 0) { /* n == 0: the parser is stuck; never loop on it */
        c->discard = c->unread = true;
        kapi_http__conn_error(c, c->error_status            ? c->error_status
                                 : e == HPE_HEADER_OVERFLOW ? 431
                                                            : 400);
        return len;
    }
    return n;
}
