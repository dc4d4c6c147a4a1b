/*
 * h2: HTTP/2 (kapi_http__h2) with nghttp2, chosen by ALPN "h2" over TLS. nghttp2 keeps
 * the protocol's state (frames, HPACK, flow control, stream states, the limits on what a
 * peer may open or flood); this file maps its streams onto exchanges, as Go's http2
 * server configured by kube-apiserver does:
 *
 *   - a HEADERS frame opening a stream starts an exchange; its pseudo-headers give the
 *     method and the target (":authority" becomes "host"), the block's end classifies it
 *     (kapi_http__exchange_headers) and the end of the stream dispatches it;
 *   - a header list over KAPI_HTTP__MAX_HEADER_BYTES is answered 431, a body over
 *     max_body is handed over marked too large (the rest is read and dropped);
 *   - an answer is one HEADERS frame, then DATA frames made without a copy
 *     (NGHTTP2_DATA_FLAG_NO_COPY): the 9 frame-header bytes ride in front of references
 *     to the answer's own chunks in the conn's queue. A stream's pieces wait in the
 *     stream until the peer's flow-control window lets them go, so a watch whose client
 *     stops reading keeps its events in its kapi_http_stream, where the byte bound of a
 *     slow watcher applies to it alone: it is reset and the others go on;
 *   - each exchange has its own deadline (ex->due); the conn's timer fires at the
 *     earliest of them, or after idle_timeout_ms without a stream (then GOAWAY);
 *   - an exchange reset by the peer while the handler runs is marked answered (its answer
 *     is dropped when it comes); a stream whose answer is done before its request is read
 *     is reset with NO_ERROR; shutdown sends GOAWAY and lets open streams end.
 *
 * Settings as kube-apiserver's: at most cfg.http2_max_streams concurrent streams (its
 * flag --http2-max-streams-per-connection), 256 KiB stream windows and frames, a
 * connection window of 256 KiB per stream, a header list of 1 MiB plus Go's slack.
 */
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <string.h>

#include "http/http_int.h"

/* kube-apiserver's per-stream upload buffer and read frame size. */
#define H2_STREAM_WINDOW (256 * 1024)
/* The header list a client may send: Go's DefaultMaxHeaderBytes with 10 fields' overhead,
 * as its http2 server advertises. */
#define H2_MAX_HEADER_LIST ((1u << 20) + 10 * 32)

/* One stream: its exchange while that lives, and the answer's pieces not yet framed. */
typedef struct h2_stream {
    int32_t id;
    kapi_http_exchange *ex; /* NULL once the exchange is freed (the answer may still go) */
    kapi_http_out *body;    /* body[bhead .. bn) */
    size_t bhead, bn, bcap;
    size_t header_bytes; /* of the request's header list, as HTTP/2 counts them */
    bool eof;            /* the whole answer is queued */
    bool streamed;       /* a streamed answer: it ends only once its exchange is freed */
    bool deferred;       /* the data source waits for pieces (nghttp2_session_resume_data) */
    bool headers_in;     /* the request's header block has ended */
    bool request_in;     /* the request's END_STREAM arrived */
    struct h2_stream *prev, *next;
} h2_stream;

typedef struct h2_state {
    nghttp2_session *session;
    h2_stream *streams;
    size_t nstreams;
    uint64_t idle_since; /* loop time the conn last had no stream */
    bool goaway;         /* a GOAWAY was submitted: no new streams */
    bool in_recv;        /* in nghttp2_session_mem_recv: frames are made after it */
} h2_state;

static h2_state *state_of(kapi_conn *c)
{
    return c->proto_state;
}

static h2_stream *stream_of(kapi_http_exchange *ex)
{
    return ex->proto_exchange;
}

/* ---- deadlines ---- */

/* The conn's timer goes to the earliest deadline of its exchanges, or to the end of its
 * idle time when it has no stream. */
static void rearm(kapi_conn *c)
{
    h2_state *h = state_of(c);
    uint64_t at = 0;
    for (kapi_http_exchange *ex = c->exchanges; ex; ex = ex->cnext)
        if (ex->due && (at == 0 || ex->due < at))
            at = ex->due;
    if (h->nstreams == 0 && !h->goaway)
        at = h->idle_since + c->srv->cfg.idle_timeout_ms;
    kapi_http__conn_arm(c, at);
}

static void h2_arm(kapi_http_exchange *ex, uint64_t at)
{
    ex->due = at;
    rearm(ex->conn);
}

/* ---- the answer's pieces ---- */

static void release_piece(kapi_http_out *o)
{
    if (o->chunk.release)
        o->chunk.release(o->chunk.owner);
}

static void stream_free(h2_state *h, h2_stream *st)
{
    for (size_t i = st->bhead; i < st->bn; i++)
        release_piece(&st->body[i]);
    free(st->body);
    if (st->prev)
        st->prev->next = st->next;
    else
        h->streams = st->next;
    if (st->next)
        st->next->prev = st->prev;
    h->nstreams--;
    free(st);
}

static void body_push(h2_stream *st, kapi_http_chunk chunk)
{
    if (st->bn == st->bcap && st->bhead > 0) {
        memmove(st->body, st->body + st->bhead, (st->bn - st->bhead) * sizeof(*st->body));
        st->bn -= st->bhead;
        st->bhead = 0;
    }
    if (st->bn == st->bcap) {
        st->bcap = st->bcap ? 2 * st->bcap : 8;
        st->body = kapi_xrealloc(st->body, st->bcap * sizeof(*st->body));
    }
    st->body[st->bn++] = (kapi_http_out){.chunk = chunk};
}

/* Bytes ready to frame, counted up to limit. */
static size_t body_ready(const h2_stream *st, size_t limit)
{
    size_t n = 0;
    for (size_t i = st->bhead; i < st->bn && n < limit; i++)
        n += st->body[i].chunk.len - st->body[i].off;
    return n < limit ? n : limit;
}

/* Pulls the streamed answer's next pieces when the stream has none ready. */
static void pull_stream(h2_stream *st)
{
    kapi_http_out pieces[64];
    if (st->bhead < st->bn || !st->ex || !st->ex->stream)
        return;
    size_t n = kapi_http__stream_pull(st->ex->stream, pieces, KAPI_ARRAY_LEN(pieces),
                                      KAPI_HTTP__OUT_BATCH);
    for (size_t i = 0; i < n; i++)
        body_push(st, pieces[i].chunk);
}

static void resume(kapi_conn *c, h2_stream *st)
{
    if (!st->deferred)
        return;
    st->deferred = false;
    nghttp2_session_resume_data(state_of(c)->session, st->id);
}

/* nghttp2 asks how much of the answer goes into the next DATA frame; the bytes are
 * queued by send_data without a copy. A streamed answer ends (END_STREAM) only once its
 * exchange is freed (h2_forget resumes it): the end of a stream closes it, which must not
 * happen while the code that ends the answer still holds the exchange. */
static ssize_t read_body(nghttp2_session *session, int32_t id, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *source, void *user)
{
    h2_stream *st = source->ptr;
    size_t n;
    (void)session, (void)id, (void)buf, (void)user;
    pull_stream(st);
    n = body_ready(st, length);
    bool can_end = st->eof && !(st->streamed && st->ex);
    *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    if (n == 0 && !can_end) {
        st->deferred = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    if (can_end && body_ready(st, length + 1) == n) /* everything left fits this frame */
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* Frames as large as the peer takes, up to kube's frame size. */
static ssize_t frame_length(nghttp2_session *session, uint8_t type, int32_t id,
                            int32_t session_window, int32_t stream_window, uint32_t max_frame,
                            void *user)
{
    (void)session, (void)type, (void)id, (void)session_window, (void)stream_window, (void)user;
    return max_frame < H2_STREAM_WINDOW ? (ssize_t)max_frame : H2_STREAM_WINDOW;
}

/* One DATA frame into the conn's queue: its header, then references to length bytes of
 * the stream's pieces (a piece taken whole keeps its release; pieces of no bytes after
 * them go too, to be released once what precedes them is written). */
static int send_data(nghttp2_session *session, nghttp2_frame *frame, const uint8_t *framehd,
                     size_t length, nghttp2_data_source *source, void *user)
{
    kapi_conn *c = user;
    h2_stream *st = source->ptr;
    kapi_http_out hd = {.chunk = {"", 0, NULL, NULL}};
    (void)session, (void)frame;
    memcpy(hd.pre, framehd, 9);
    hd.npre = 9;
    kapi_http__conn_queue(c, hd);
    while (st->bhead < st->bn) {
        kapi_http_out *o = &st->body[st->bhead];
        size_t left = o->chunk.len - o->off;
        if (left > 0 && length == 0)
            break; /* the next frame's */
        if (left > length) {
            kapi_http__conn_queue(
                c, (kapi_http_out){.chunk = {o->chunk.ptr + o->off, length, NULL, NULL}});
            o->off += length;
            break;
        }
        kapi_http__conn_queue(c, (kapi_http_out){.chunk = {o->chunk.ptr + o->off, left,
                                                           o->chunk.release, o->chunk.owner}});
        length -= left;
        st->bhead++;
    }
    if (st->bhead == st->bn)
        st->bhead = st->bn = 0;
    return c->out_bytes >= KAPI_HTTP__OUT_BATCH ? NGHTTP2_ERR_PAUSE : 0;
}

/* ---- the request ---- */

/* An exchange for a stream the peer opens. */
static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user)
{
    kapi_conn *c = user;
    h2_state *h = state_of(c);
    h2_stream *st;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    st = kapi_xcalloc(1, sizeof(*st));
    st->id = frame->hd.stream_id;
    st->ex = kapi_http__exchange_new(c, &kapi_http__h2);
    st->ex->proto_exchange = st;
    st->next = h->streams;
    if (st->next)
        st->next->prev = st;
    h->streams = st;
    h->nstreams++;
    nghttp2_session_set_stream_user_data(session, st->id, st);
    h2_arm(st->ex, kapi_http__conn_now(c) + c->srv->cfg.header_timeout_ms);
    return 0;
}

/* The request target: path, then the query after '?'. */
static void set_target(kapi_http_exchange *ex, const uint8_t *v, size_t n)
{
    kapi_str rest = {kapi_arena_strndup(&ex->arena, (const char *)v, n), n}, path;
    ex->pub.query = KAPI_STR("");
    if (kapi_str_cut(&rest, '?', &path))
        ex->pub.query = rest;
    ex->pub.path = path;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user)
{
    h2_stream *st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    kapi_http_exchange *ex = st ? st->ex : NULL;
    (void)flags, (void)user;
    if (!ex || ex->phase != KAPI_HTTP__READING || frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    st->header_bytes += namelen + valuelen + 32;
    if (st->header_bytes > KAPI_HTTP__MAX_HEADER_BYTES ||
        frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0; /* answered 431 once the block ends; trailers are not read */
    if (namelen > 0 && name[0] == ':') {
        if (namelen == 7 && memcmp(name, ":method", 7) == 0)
            ex->pub.method = kapi_arena_strndup(&ex->arena, (const char *)value, valuelen);
        else if (namelen == 5 && memcmp(name, ":path", 5) == 0)
            set_target(ex, value, valuelen);
        else if (namelen == 10 && memcmp(name, ":authority", 10) == 0)
            kapi_http__exchange_add_header(ex, "host", 4, (const char *)value, valuelen, false);
        return 0;
    }
    kapi_http__exchange_add_header(ex, (const char *)name, namelen, (const char *)value, valuelen,
                                   false);
    return 0;
}

/* Go's http2 answer to a header list over its limit. */
static const kapi_http_answer too_large = {
    431, (const kapi_http_header[]){{"Content-Type", "text/html; charset=utf-8"}}, 1,
    "<h1>HTTP Error 431</h1><p>Request Header Field(s) Too Large</p>"};

static void request_complete(kapi_http_exchange *ex)
{
    if (ex->phase == KAPI_HTTP__READING)
        kapi_http__exchange_dispatch(ex);
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user)
{
    h2_stream *st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    kapi_http_exchange *ex = st ? st->ex : NULL;
    bool end = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;
    (void)user;
    if (!ex || (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA))
        return 0;
    st->request_in = st->request_in || end;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
        st->headers_in = true;
        if (st->header_bytes > KAPI_HTTP__MAX_HEADER_BYTES) {
            kapi_http__exchange_answer(ex, &too_large);
            return 0;
        }
        kapi_http__exchange_headers(ex);
    }
    if (end)
        request_complete(ex);
    return 0;
}

static int on_data(nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *data,
                   size_t len, void *user)
{
    kapi_conn *c = user;
    h2_stream *st = nghttp2_session_get_stream_user_data(session, id);
    kapi_http_exchange *ex = st ? st->ex : NULL;
    (void)flags;
    if (!ex || ex->phase != KAPI_HTTP__READING)
        return 0; /* answered already: dropped */
    if (ex->body.len + len > c->srv->cfg.max_body) {
        ex->pub.body_too_large = true;
        kapi_buf_clear(&ex->body);
        kapi_http__exchange_dispatch(ex);
        return 0;
    }
    kapi_buf_put(&ex->body, (const char *)data, len);
    return 0;
}

/* An answer done before its request was read: the rest of the request is not wanted. */
static int on_frame_send(nghttp2_session *session, const nghttp2_frame *frame, void *user)
{
    h2_stream *st;
    (void)user;
    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM) ||
        (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA))
        return 0;
    st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (st && !st->request_in)
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_NO_ERROR);
    return 0;
}

/* The stream is gone (answered, reset by either side, or the conn is closing). */
static int on_stream_close(nghttp2_session *session, int32_t id, uint32_t error_code, void *user)
{
    kapi_conn *c = user;
    h2_state *h = state_of(c);
    h2_stream *st = nghttp2_session_get_stream_user_data(session, id);
    kapi_http_exchange *ex;
    (void)error_code;
    if (!st)
        return 0;
    nghttp2_session_set_stream_user_data(session, id, NULL);
    ex = st->ex;
    if (ex) {
        ex->proto_exchange = NULL;
        st->ex = NULL;
        if (ex->phase == KAPI_HTTP__HANDLING) {
            ex->answered = true; /* the handler's answer is dropped when it comes */
            ex->due = 0;
        } else {
            if (ex->stream)
                kapi_http__stream_detach(ex, false);
            kapi_http__conn_request_done(ex, false);
        }
    }
    stream_free(h, st);
    if (h->nstreams == 0)
        h->idle_since = kapi_http__conn_now(c);
    return 0;
}

/* ---- the conn ---- */

static void h2_init(kapi_conn *c)
{
    h2_state *h = kapi_xcalloc(1, sizeof(*h));
    nghttp2_session_callbacks *cb;
    nghttp2_option *opt;
    unsigned streams =
        c->srv->cfg.http2_max_streams ? c->srv->cfg.http2_max_streams : KAPI_HTTP_HTTP2_MAX_STREAMS;
    nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW},
        {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, H2_STREAM_WINDOW},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, H2_MAX_HEADER_LIST},
    };
    int64_t conn_window = (int64_t)H2_STREAM_WINDOW * streams;
    if (nghttp2_session_callbacks_new(&cb) != 0 || nghttp2_option_new(&opt) != 0)
        abort(); /* allocation failure */
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_session_callbacks_set_send_data_callback(cb, send_data);
    nghttp2_session_callbacks_set_data_source_read_length_callback(cb, frame_length);
    /* Go takes a header value with spaces around it ("Bearer " and the like) */
    nghttp2_option_set_no_rfc9113_leading_and_trailing_ws_validation(opt, 1);
    if (nghttp2_session_server_new2(&h->session, cb, c, opt) != 0)
        abort();
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(h->session, NGHTTP2_FLAG_NONE, settings, KAPI_ARRAY_LEN(settings));
    nghttp2_session_set_local_window_size(h->session, NGHTTP2_FLAG_NONE, 0,
                                          conn_window > INT32_MAX ? INT32_MAX
                                                                  : (int32_t)conn_window);
    h->idle_since = kapi_http__conn_now(c);
    c->proto_state = h;
    rearm(c);
}

static void h2_dispose(kapi_conn *c)
{
    h2_state *h = state_of(c);
    if (!h)
        return;
    nghttp2_session_del(h->session); /* calls no callback */
    while (h->streams)
        stream_free(h, h->streams);
    free(h);
    c->proto_state = NULL;
}

static bool h2_can_read(kapi_conn *c)
{
    (void)c;
    return true;
}

/* The session has nothing more to say or hear (GOAWAY both ways, or a fatal error). */
static bool session_over(h2_state *h)
{
    return !nghttp2_session_want_read(h->session) && !nghttp2_session_want_write(h->session);
}

/* Sends what is queued; once the session has nothing more to say or hear, the conn
 * finishes. Within nghttp2's callbacks the flush waits for the one running. */
static void settle(kapi_conn *c)
{
    h2_state *h = state_of(c);
    if (c->closing)
        return;
    kapi_http__conn_flush(c);
    if (!c->finishing && session_over(h))
        kapi_http__conn_finish(c);
    else
        rearm(c);
}

static size_t h2_input(kapi_conn *c, const char *data, size_t len)
{
    h2_state *h = state_of(c);
    ssize_t n;
    h->in_recv = true;
    n = nghttp2_session_mem_recv(h->session, (const uint8_t *)data, len);
    h->in_recv = false;
    if (n < 0) { /* a connection error (bad preface, a flood, a header block in too many
                  * frames): GOAWAY and close, as Go does */
        h->goaway = true;
        nghttp2_session_terminate_session(h->session, NGHTTP2_PROTOCOL_ERROR);
        kapi_http__conn_flush(c);
        c->unread = true;
        kapi_http__conn_finish(c);
        return len;
    }
    settle(c);
    return len;
}

/* Frames, until a batch is queued or nghttp2 has nothing more (a fatal error makes the
 * session want nothing more: settle finishes the conn). */
static void h2_produce(kapi_conn *c)
{
    h2_state *h = state_of(c);
    if (h->in_recv)
        return;
    while (c->out_bytes < KAPI_HTTP__OUT_BATCH) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(h->session, &data);
        if (n <= 0)
            break;
        kapi_http__conn_queue(c, (kapi_http_out){.chunk = kapi_http_chunk_copy(data, (size_t)n)});
    }
}

static void h2_reset(kapi_http_exchange *ex);

/* Past its deadline: an answer under way is reset, a request being read or handled gets
 * the timeout answer, a header block that never ended is refused. Each action may end
 * other streams, so the scan starts over after it. */
static void h2_timeout(kapi_conn *c)
{
    h2_state *h = state_of(c);
    uint64_t now = kapi_http__conn_now(c);
    for (;;) {
        kapi_http_exchange *ex = c->exchanges;
        while (ex && !(ex->due && ex->due <= now))
            ex = ex->cnext;
        if (!ex)
            break;
        ex->due = 0;
        h2_stream *st = stream_of(ex);
        if (ex->phase == KAPI_HTTP__STREAMING)
            h2_reset(ex);
        else if (ex->phase == KAPI_HTTP__HANDLING ||
                 (ex->phase == KAPI_HTTP__READING && st && st->headers_in))
            kapi_http__exchange_answer(ex, &c->srv->cfg.timeout);
        else if (st)
            nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
        if (c->closing)
            return;
    }
    if (!h->goaway && h->nstreams == 0 && now >= h->idle_since + c->srv->cfg.idle_timeout_ms) {
        h->goaway = true; /* idle: Go's IdleTimeout */
        nghttp2_submit_goaway(h->session, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(h->session), NGHTTP2_NO_ERROR,
                              NULL, 0);
    }
    settle(c);
}

/* The peer sends nothing more: what is under way is written, then the conn closes. */
static void h2_eof(kapi_conn *c)
{
    kapi_http__conn_finish(c);
}

/* GOAWAY: no new streams; open watches end (their producers are told), answers under
 * way are written, then the conn finishes. */
static void h2_shutdown(kapi_conn *c)
{
    h2_state *h = state_of(c);
    if (c->finishing || c->closing)
        return;
    if (!h->goaway) {
        h->goaway = true;
        nghttp2_submit_goaway(h->session, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(h->session), NGHTTP2_NO_ERROR,
                              NULL, 0);
    }
    for (;;) { /* each step may end other streams: look again from the start */
        kapi_http_exchange *ex = c->exchanges;
        while (ex && !ex->stream)
            ex = ex->cnext;
        if (!ex)
            break;
        kapi_http__stream_detach(ex, true);
        kapi_http__conn_request_done(ex, false); /* its end goes now */
    }
    settle(c);
}

static void h2_next(kapi_conn *c, bool close_after)
{
    (void)close_after; /* one stream's answer never closes the conn */
    settle(c);
}

static void h2_forget(kapi_http_exchange *ex)
{
    h2_stream *st = stream_of(ex);
    ex->proto_exchange = NULL;
    if (!st)
        return;
    st->ex = NULL;
    if (st->eof)
        resume(ex->conn, st); /* its end may go now */
}

static void h2_answered(kapi_http_exchange *ex)
{
    if (ex->phase == KAPI_HTTP__READING)
        ex->phase = KAPI_HTTP__DONE; /* the rest of its body is dropped */
    h2_arm(ex, 0);
}

/* The status, then name NUL value NUL for each header, names lower-cased as HTTP/2
 * requires. */
static void h2_encode_head(kapi_buf *head, int status, const kapi_http_header *h, size_t n)
{
    char code[4] = {(char)('0' + status / 100 % 10), (char)('0' + status / 10 % 10),
                    (char)('0' + status % 10), 0};
    kapi_buf_put(head, code, 4);
    for (size_t i = 0; i < n; i++) {
        if (!kapi_http__header_allowed(&h[i]))
            continue;
        size_t start = head->len, len = strlen(h[i].name);
        kapi_buf_put(head, h[i].name, len + 1);
        for (size_t k = start; k < start + len; k++)
            if (head->ptr[k] >= 'A' && head->ptr[k] <= 'Z')
                head->ptr[k] = (char)(head->ptr[k] - 'A' + 'a');
        kapi_buf_put(head, h[i].value, strlen(h[i].value) + 1);
    }
}

static nghttp2_nv make_nv(const char *name, size_t nlen, const char *value, size_t vlen)
{
    return (nghttp2_nv){(uint8_t *)name, (uint8_t *)value, nlen, vlen, NGHTTP2_NV_FLAG_NONE};
}

/* 1xx, 204 and 304 answers carry no body, nor does any answer to HEAD. */
static bool bodiless(const kapi_http_exchange *ex, int status)
{
    return status < 200 || status == 204 || status == 304 || strcmp(ex->pub.method, "HEAD") == 0;
}

/* One HEADERS frame, with content-length for a complete answer, and the data source
 * that frames its body. */
static void h2_write_head(kapi_http_exchange *ex, int status, kapi_buf *head, size_t body_len)
{
    h2_stream *st = stream_of(ex);
    kapi_conn *c = ex->conn;
    nghttp2_nv *nva;
    size_t n = 1, k = 4;
    char length[24];
    bool empty = body_len != KAPI_HTTP__STREAMED && (body_len == 0 || bodiless(ex, status));
    nghttp2_data_provider body = {.source.ptr = st, .read_callback = read_body};
    if (!st) {
        kapi_buf_dispose(head);
        return;
    }
    for (size_t i = 4; i < head->len; i++)
        n += head->ptr[i] == '\0';
    nva = kapi_xmalloc((n / 2 + 2) * sizeof(*nva));
    n = 0;
    nva[n++] = make_nv(":status", 7, head->ptr, 3);
    while (k < head->len) {
        const char *name = head->ptr + k, *value = name + strlen(name) + 1;
        nva[n++] = make_nv(name, strlen(name), value, strlen(value));
        k = (size_t)(value - head->ptr) + strlen(value) + 1;
    }
    if (body_len != KAPI_HTTP__STREAMED && status >= 200 && status != 204 && status != 304)
        nva[n++] = make_nv("content-length", 14, length,
                           (size_t)snprintf(length, sizeof(length), "%zu", body_len));
    st->eof = body_len != KAPI_HTTP__STREAMED;
    st->streamed = !st->eof;
    if (nghttp2_submit_response(state_of(c)->session, st->id, nva, n, empty ? NULL : &body) != 0)
        nghttp2_submit_rst_stream(state_of(c)->session, NGHTTP2_FLAG_NONE, st->id,
                                  NGHTTP2_INTERNAL_ERROR);
    free(nva);
    kapi_buf_dispose(head);
}

/* The pieces wait in the stream until its window lets them go. */
static void h2_write_body(kapi_http_exchange *ex, kapi_http_out *pieces, size_t n)
{
    h2_stream *st = stream_of(ex);
    for (size_t i = 0; i < n; i++) {
        if (!st)
            release_piece(&pieces[i]);
        else if (pieces[i].chunk.len > 0 || pieces[i].chunk.release)
            body_push(st, pieces[i].chunk);
    }
    if (st)
        resume(ex->conn, st);
}

static void h2_end(kapi_http_exchange *ex)
{
    h2_stream *st = stream_of(ex);
    if (!st)
        return;
    st->eof = true;
    resume(ex->conn, st);
}

/* The stream is reset (CANCEL) and the exchange is done; the conn goes on. */
static void h2_reset(kapi_http_exchange *ex)
{
    h2_stream *st = stream_of(ex);
    if (ex->stream)
        kapi_http__stream_detach(ex, false);
    if (st)
        nghttp2_submit_rst_stream(state_of(ex->conn)->session, NGHTTP2_FLAG_NONE, st->id,
                                  NGHTTP2_CANCEL);
    kapi_http__conn_request_done(ex, false);
}

static void h2_wake(kapi_http_exchange *ex)
{
    h2_stream *st = stream_of(ex);
    if (st)
        resume(ex->conn, st);
    settle(ex->conn);
}

const kapi_http_proto_ops kapi_http__h2 = {
    .name = "h2",
    .init = h2_init,
    .dispose = h2_dispose,
    .can_read = h2_can_read,
    .input = h2_input,
    .produce = h2_produce,
    .timeout = h2_timeout,
    .eof = h2_eof,
    .shutdown = h2_shutdown,
    .next = h2_next,
    .forget = h2_forget,
    .arm = h2_arm,
    .answered = h2_answered,
    .encode_head = h2_encode_head,
    .write_head = h2_write_head,
    .write_body = h2_write_body,
    .end = h2_end,
    .reset = h2_reset,
    .wake = h2_wake,
};
