/*
 * h1: HTTP/1.1 (kapi_http__h1), the framing of requests and answers on a connection.
 * Requests are parsed with http-parser: callbacks fill the conn's current exchange; when
 * it is complete (or its body is found too large) the parser is paused and the exchange
 * dispatched, so that pipelined requests wait in the conn's input buffer for their turn
 * (one exchange at a time, answered in order; keep-alive unless the request or the answer
 * says close). Header names are lower-cased; the request target is split into raw path
 * and query, not decoded. Answers: a status line and header lines; a complete body with
 * Content-Length, a streamed one chunked, each part of it (one kapi_http_stream_writev)
 * one HTTP chunk, ended by the zero-length chunk.
 */
#include <http_parser.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http/http_int.h"

/* The request target or a header's name or value being read, which the parser may hand
 * over in pieces: while it is one piece of the input being parsed it is borrowed from
 * there; a second piece, or the end of that input, copies it into buf. */
typedef struct h1_text {
    kapi_str s; /* the text so far: in the input being parsed, or buf's */
    kapi_buf buf;
} h1_text;

/* Per connection: the parser and the request line and header being read. */
typedef struct h1_state {
    http_parser parser;
    kapi_http_exchange *ex; /* the exchange being read or answered (one at a time) */
    h1_text url, field, value;
    bool in_value;
    /* The request's headers the parser's checks read, found as they are committed: */
    size_t transfer_encodings;     /* how many Transfer-Encoding headers */
    const char *transfer_encoding; /* the last one's value, or NULL */
    const char *expect;            /* the first Expect header's value, or NULL */
    bool dispatch_now;             /* a callback paused the parser to hand the request over */
    int error_status;              /* set by a callback: the status of the error answer */
} h1_state;

/* proto_flags */
#define H1_KEEP_ALIVE_10 1u /* HTTP/1.0 with keep-alive: say so in the answer */

static const char continue_100[] = "HTTP/1.1 100 Continue\r\n\r\n";

/* Empties b. (kapi_buf_clear writes the NUL even into base's shared empty buffer, a
 * race between threads; an empty buffer needs nothing.) */
static void buf_reset(kapi_buf *b)
{
    if (b->len > 0)
        kapi_buf_clear(b);
}

static h1_state *state_of(kapi_conn *c)
{
    return c->proto_state;
}

static void text_reset(h1_text *t)
{
    buf_reset(&t->buf);
    t->s = KAPI_STR("");
}

/* Adds a piece the parser handed over (valid while it parses the input it came in). */
static void text_add(h1_text *t, const char *at, size_t n)
{
    if (t->s.len == 0 && t->buf.len == 0) {
        t->s = (kapi_str){at, n};
        return;
    }
    if (t->buf.len == 0) /* borrowed so far */
        kapi_buf_put(&t->buf, t->s.ptr, t->s.len);
    kapi_buf_put(&t->buf, at, n);
    t->s = (kapi_str){t->buf.ptr, t->buf.len};
}

/* The input being parsed goes away: a borrowed text is copied. */
static void text_keep(h1_text *t)
{
    if (t->buf.len > 0 || t->s.len == 0)
        return;
    kapi_buf_put(&t->buf, t->s.ptr, t->s.len);
    t->s = (kapi_str){t->buf.ptr, t->buf.len};
}

/* The first byte of a request: its exchange begins, and its request line and headers
 * are due within the header timeout (the parser itself fails past
 * KAPI_HTTP__MAX_HEADER_BYTES of them). */
static int on_message_begin(http_parser *p)
{
    kapi_conn *c = p->data;
    h1_state *h = state_of(c);
    kapi_http__exchange_free(h->ex);
    h->ex = kapi_http__exchange_new(c, &kapi_http__h1);
    text_reset(&h->url);
    text_reset(&h->field);
    text_reset(&h->value);
    h->in_value = false;
    h->transfer_encodings = 0;
    h->transfer_encoding = h->expect = NULL;
    kapi_http__conn_arm(c, kapi_http__conn_now(c) + c->srv->cfg.header_timeout_ms);
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    kapi_conn *c = p->data;
    text_add(&state_of(c)->url, at, n);
    return 0;
}

/* Whether the lower-cased name of n bytes is lit (a string literal). */
#define NAME_IS(name, n, lit) ((n) == sizeof(lit) - 1 && memcmp(name, lit, sizeof(lit) - 1) == 0)

/* Moves the header being read (field, value) into the exchange, its name lower-cased,
 * noting the headers the parser's checks read. */
static void commit_header(kapi_conn *c)
{
    h1_state *h = state_of(c);
    kapi_http_exchange *ex = h->ex;
    const kapi_http_header *added;
    size_t n = h->field.s.len;
    kapi_http__exchange_add_header(ex, h->field.s.ptr, n, h->value.s.ptr, h->value.s.len, true);
    added = &ex->headers[ex->nheaders - 1];
    if (NAME_IS(added->name, n, "transfer-encoding")) {
        h->transfer_encodings++;
        h->transfer_encoding = added->value;
    } else if (!h->expect && NAME_IS(added->name, n, "expect")) {
        h->expect = added->value;
    }
    text_reset(&h->field);
    text_reset(&h->value);
    h->in_value = false;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
    kapi_conn *c = p->data;
    h1_state *h = state_of(c);
    if (h->in_value)
        commit_header(c);
    text_add(&h->field, at, n);
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
    kapi_conn *c = p->data;
    h1_state *h = state_of(c);
    h->in_value = true;
    text_add(&h->value, at, n);
    return 0;
}

/* Splits the raw request target into path and query (absolute-form too). */
static void split_target(kapi_http_exchange *ex, kapi_str target)
{
    kapi_http_request *req = &ex->pub;
    const char *url = kapi_arena_strndup(&ex->arena, target.ptr, target.len);
    kapi_str rest = {url, target.len}, path;
    struct http_parser_url u;
    req->query = KAPI_STR("");
    if (rest.len > 0 && rest.ptr[0] != '/' && rest.ptr[0] != '*') {
        http_parser_url_init(&u);
        if (http_parser_parse_url(url, rest.len, 0, &u) == 0) {
            if (u.field_set & (1 << UF_QUERY))
                req->query =
                    (kapi_str){url + u.field_data[UF_QUERY].off, u.field_data[UF_QUERY].len};
            if (!(u.field_set & (1 << UF_PATH))) {
                req->path = KAPI_STR("/");
                return;
            }
            rest = (kapi_str){url + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len};
        }
    }
    if (kapi_str_cut(&rest, '?', &path))
        req->query = rest;
    req->path = path;
}

/* Hands the exchange over once the parser has stopped (see input). */
static int dispatch_now(kapi_conn *c, http_parser *p)
{
    state_of(c)->dispatch_now = true;
    http_parser_pause(p, 1);
    return 0;
}

static void mark_too_large(kapi_conn *c)
{
    kapi_http_exchange *ex = state_of(c)->ex;
    ex->pub.body_too_large = true;
    ex->close_after = true;
    c->discard = true; /* the rest of the body is never read */
    c->unread = true;
    buf_reset(&ex->body);
}

static bool expects_continue(const h1_state *h, const http_parser *p)
{
    const char *expect = h->expect;
    bool has_body =
        (p->flags & F_CHUNKED) || (p->content_length > 0 && p->content_length != ULLONG_MAX);
    return expect && strcasecmp(expect, "100-continue") == 0 && has_body && p->http_minor >= 1;
}

/* Go's rule (net/http transfer.go): an HTTP/1.1 request may carry one Transfer-Encoding
 * header, and only "chunked"; any other coding, or a list of them, is not understood. */
static bool unsupported_transfer_encoding(const h1_state *h, const http_parser *p)
{
    const char *v = h->transfer_encoding;
    size_t len;
    if (p->http_major == 1 && p->http_minor == 0)
        return false; /* HTTP/1.0: Go ignores the header */
    if (h->transfer_encodings == 0)
        return false;
    len = strlen(v);
    while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t'))
        len--;
    return h->transfer_encodings > 1 || len != 7 || strncasecmp(v, "chunked", 7) != 0;
}

static int on_headers_complete(http_parser *p)
{
    kapi_conn *c = p->data;
    h1_state *h = state_of(c);
    kapi_http_exchange *ex = h->ex;
    if (h->field.s.len > 0)
        commit_header(c);
    if (unsupported_transfer_encoding(h, p)) {
        h->error_status = 501;
        return -1;
    }
    ex->pub.method = http_method_str(p->method);
    split_target(ex, h->url.s);
    text_reset(&h->url);
    kapi_http__exchange_headers(ex);
    if (!(p->flags & F_CHUNKED) && p->content_length != ULLONG_MAX &&
        p->content_length > c->srv->cfg.max_body) {
        mark_too_large(c);
        return dispatch_now(c, p);
    }
    if (expects_continue(h, p)) {
        kapi_http__conn_queue_static(c, continue_100, sizeof(continue_100) - 1);
        kapi_http__conn_flush(c);
    }
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    kapi_conn *c = p->data;
    kapi_http_exchange *ex = state_of(c)->ex;
    if (ex->body.len + n > c->srv->cfg.max_body) {
        mark_too_large(c);
        return dispatch_now(c, p);
    }
    kapi_buf_put(&ex->body, at, n);
    return 0;
}

static int on_message_complete(http_parser *p)
{
    kapi_conn *c = p->data;
    kapi_http_exchange *ex = state_of(c)->ex;
    ex->close_after = !http_should_keep_alive(p) || p->upgrade;
    if (!ex->close_after && p->http_major == 1 && p->http_minor == 0)
        ex->proto_flags |= H1_KEEP_ALIVE_10;
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

void kapi_http__h1_setup(void)
{
    /* The parser counts the raw bytes of the request line and headers (its default limit
     * is lower than Go's). */
    http_parser_set_max_header_size(KAPI_HTTP__MAX_HEADER_BYTES);
}

static void h1_init(kapi_conn *c)
{
    h1_state *h = kapi_xcalloc(1, sizeof(*h));
    http_parser_init(&h->parser, HTTP_REQUEST);
    h->parser.data = c;
    kapi_buf_init(&h->url.buf);
    kapi_buf_init(&h->field.buf);
    kapi_buf_init(&h->value.buf);
    h->url.s = h->field.s = h->value.s = KAPI_STR("");
    c->proto_state = h;
}

static void h1_dispose(kapi_conn *c)
{
    h1_state *h = state_of(c);
    if (!h)
        return;
    kapi_buf_dispose(&h->url.buf);
    kapi_buf_dispose(&h->field.buf);
    kapi_buf_dispose(&h->value.buf);
    free(h);
    c->proto_state = NULL;
}

/* One exchange at a time: the next request is read once the last one is answered. */
static bool h1_can_read(kapi_conn *c)
{
    kapi_http_exchange *ex = state_of(c)->ex;
    return !ex || ex->phase == KAPI_HTTP__READING;
}

/* The phase of the current exchange; between exchanges, reading. */
static kapi_http_phase phase(kapi_conn *c)
{
    kapi_http_exchange *ex = state_of(c)->ex;
    return ex ? ex->phase : KAPI_HTTP__READING;
}

/* Go's net/http answers to a request it cannot read (server.go, conn.serve): the body
 * ends where the connection does. */
static const struct {
    int status;
    const char *body;
} go_errors[] = {
    {400, "400 Bad Request"},
    {431, "431 Request Header Fields Too Large"},
    {501, "Unsupported transfer encoding"},
};

/* Writes Go's plain-text answer to a request it cannot read (400, 431, 501) and closes. */
static void answer_error(kapi_conn *c, int status)
{
    size_t k = 0; /* any other status is a 400 */
    char *msg;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(go_errors); i++)
        if (go_errors[i].status == status)
            k = i;
    msg = kapi_xprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                       "Connection: close\r\n\r\n%s",
                       go_errors[k].status, kapi_http__reason(go_errors[k].status),
                       go_errors[k].body);
    kapi_http__conn_queue(c, (kapi_http_out){.chunk = kapi_http_chunk_take(msg, strlen(msg))});
    kapi_http__conn_flush(c);
    kapi_http__conn_finish(c);
}

/* Parses as much of data as one request needs; returns the bytes consumed. */
static size_t h1_input(kapi_conn *c, const char *data, size_t len)
{
    h1_state *h = state_of(c);
    size_t n = http_parser_execute(&h->parser, &settings, data, len);
    enum http_errno e = HTTP_PARSER_ERRNO(&h->parser);
    text_keep(&h->url);
    text_keep(&h->field);
    text_keep(&h->value);
    if (e == HPE_PAUSED && h->dispatch_now) {
        http_parser_pause(&h->parser, 0);
        h->dispatch_now = false;
        kapi_http__exchange_dispatch(h->ex);
        return n;
    }
    if (e != HPE_OK || n == 0) { /* n == 0: the parser is stuck; never loop on it */
        c->discard = c->unread = true;
        answer_error(c, h->error_status ? h->error_status : e == HPE_HEADER_OVERFLOW ? 431 : 400);
        return len;
    }
    return n;
}

/* The most write_head adds to a head: the longest framing headers and the blank line. */
static const char framing_max[] = "Content-Length: 18446744073709551615\r\n"
                                  "Connection: keep-alive\r\n\r\n";

/* The head is made with room for its framing, so that write_head, on the loop thread,
 * never reallocates what a worker allocated. */
/* Writes n in decimal at out (room for 20 digits); returns the digits written. */
static size_t format_size(char *out, size_t n)
{
    char digits[20];
    size_t i = sizeof(digits);
    do {
        digits[--i] = (char)('0' + n % 10);
        n /= 10;
    } while (n > 0);
    memcpy(out, digits + i, sizeof(digits) - i);
    return sizeof(digits) - i;
}

/* Appends n in decimal. */
static void put_size(kapi_buf *b, size_t n)
{
    char digits[20];
    kapi_buf_put(b, digits, format_size(digits, n));
}

static void h1_encode_head(kapi_buf *head, int status, const kapi_http_header *h, size_t n)
{
    kapi_buf_puts(head, "HTTP/1.1 ");
    put_size(head, (size_t)status);
    kapi_buf_putc(head, ' ');
    kapi_buf_puts(head, kapi_http__reason(status));
    kapi_buf_puts(head, "\r\n");
    for (size_t i = 0; i < n; i++) {
        if (!kapi_http__header_allowed(&h[i]))
            continue;
        kapi_buf_puts(head, h[i].name);
        kapi_buf_puts(head, ": ");
        kapi_buf_puts(head, h[i].value);
        kapi_buf_puts(head, "\r\n");
    }
    kapi_buf_grow(head, sizeof(framing_max) - 1);
}

/* The Connection header line ex's answer needs ("": none). */
static const char *connection(const kapi_http_exchange *ex)
{
    if (ex->close_after)
        return "Connection: close\r\n";
    return ex->proto_flags & H1_KEEP_ALIVE_10 ? "Connection: keep-alive\r\n" : "";
}

/* Copies the string literal lit to framing + n and moves n past it. */
#define FRAMING_PUT(framing, n, lit)                                                               \
    (memcpy((framing) + (n), lit, sizeof(lit) - 1), (n) += sizeof(lit) - 1)

/* The framing headers: a streamed body is chunked; a complete one has its length, but
 * 1xx, 204 and 304 answers carry none. They are gathered first and appended at once. */
static void h1_write_head(kapi_http_exchange *ex, int status, kapi_buf *head, size_t body_len)
{
    const char *conn = connection(ex);
    char framing[sizeof(framing_max)], *p;
    size_t n = 0, len = strlen(conn);
    if (body_len == KAPI_HTTP__STREAMED) {
        FRAMING_PUT(framing, n, "Transfer-Encoding: chunked\r\n");
    } else if (status >= 200 && status != 204 && status != 304) {
        FRAMING_PUT(framing, n, "Content-Length: ");
        n += format_size(framing + n, body_len);
        FRAMING_PUT(framing, n, "\r\n");
    }
    memcpy(framing + n, conn, len);
    n += len;
    FRAMING_PUT(framing, n, "\r\n");
    kapi_buf_put(head, framing, n);
    p = kapi_buf_detach(head, &len);
    kapi_http__conn_queue(ex->conn, (kapi_http_out){.chunk = kapi_http_chunk_take(p, len)});
}

/* A part of a streamed body is one HTTP chunk: its size line before its first piece, a
 * CRLF after its last. */
static void h1_write_body(kapi_http_exchange *ex, kapi_http_out *pieces, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        kapi_http_out *o = &pieces[i];
        size_t part = o->part;
        bool end = o->part_end;
        o->npre = part ? (uint8_t)snprintf(o->pre, sizeof(o->pre), "%zx\r\n", part) : 0;
        o->npost = end ? 2 : 0;
        memcpy(o->post, "\r\n", 2);
        kapi_http__conn_queue(ex->conn, *o);
    }
}

static const char last_chunk[] = "0\r\n\r\n";

static void h1_end(kapi_http_exchange *ex)
{
    kapi_http__conn_queue_static(ex->conn, last_chunk, sizeof(last_chunk) - 1);
}

/* An answer under way cannot be taken back in HTTP/1.1: the connection closes. */
static void h1_reset(kapi_http_exchange *ex)
{
    kapi_http__conn_close(ex->conn);
}

/* The next pieces of the streamed answer, framed. */
static void h1_produce(kapi_conn *c)
{
    kapi_http_exchange *ex = state_of(c)->ex;
    kapi_http_out pieces[64];
    if (!ex || !ex->stream)
        return;
    size_t n =
        kapi_http__stream_pull(ex->stream, pieces, KAPI_ARRAY_LEN(pieces), KAPI_HTTP__OUT_BATCH);
    h1_write_body(ex, pieces, n);
}

/* Waiting for a request or its headers, the conn closes (Go answers nothing); waiting for
 * a body or the handler, the timeout answer is written; streaming, the answer is cut off. */
static void h1_timeout(kapi_conn *c)
{
    kapi_http_exchange *ex = state_of(c)->ex;
    kapi_http_phase ph = phase(c);
    if (ph == KAPI_HTTP__STREAMING)
        h1_reset(ex); /* an answer under way cannot be replaced */
    else if (ph == KAPI_HTTP__HANDLING || (ph == KAPI_HTTP__READING && ex && ex->pub.method))
        kapi_http__exchange_answer(ex, &c->srv->cfg.timeout);
    else
        kapi_http__conn_close(c);
}

static void h1_eof(kapi_conn *c)
{
    if (phase(c) == KAPI_HTTP__STREAMING)
        kapi_http__conn_close(c); /* a watcher went away */
    else if (phase(c) == KAPI_HTTP__READING)
        kapi_http__conn_resume(c); /* serves complete pipelined requests, then finishes */
    /* HANDLING: the answer is still written, then the conn finishes. */
}

static void h1_shutdown(kapi_conn *c)
{
    kapi_http_exchange *ex = state_of(c)->ex;
    if (phase(c) == KAPI_HTTP__STREAMING) {
        kapi_http__stream_detach(ex, true);
        kapi_http__conn_finish(c);
    } else if (phase(c) == KAPI_HTTP__READING && !c->finishing) {
        kapi_http__conn_close_idle(c);
    }
}

/* Keep-alive: the next request is due within the idle timeout. */
static void h1_next(kapi_conn *c, bool close_after)
{
    kapi_http__conn_arm(c, kapi_http__conn_now(c) + c->srv->cfg.idle_timeout_ms);
    if (close_after || c->srv->shutting_down)
        kapi_http__conn_finish(c);
    else
        kapi_http__conn_resume(c);
}

static void h1_forget(kapi_http_exchange *ex)
{
    h1_state *h = state_of(ex->conn);
    if (h && h->ex == ex)
        h->ex = NULL;
}

/* One exchange at a time: its deadline is the conn's. */
static void h1_arm(kapi_http_exchange *ex, uint64_t at)
{
    kapi_http__conn_arm(ex->conn, at);
}

static void h1_answered(kapi_http_exchange *ex)
{
    kapi_http__conn_finish(ex->conn);
}

static void h1_wake(kapi_http_exchange *ex)
{
    kapi_http__conn_flush(ex->conn);
}

const kapi_http_proto_ops kapi_http__h1 = {
    .name = "http/1.1",
    .init = h1_init,
    .dispose = h1_dispose,
    .can_read = h1_can_read,
    .input = h1_input,
    .produce = h1_produce,
    .timeout = h1_timeout,
    .eof = h1_eof,
    .shutdown = h1_shutdown,
    .next = h1_next,
    .forget = h1_forget,
    .arm = h1_arm,
    .answered = h1_answered,
    .encode_head = h1_encode_head,
    .write_head = h1_write_head,
    .write_body = h1_write_body,
    .end = h1_end,
    .reset = h1_reset,
    .wake = h1_wake,
};
