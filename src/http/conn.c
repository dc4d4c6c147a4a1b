/*
 * conn: one accepted connection on the loop thread: reading (into TLS or straight into
 * the parser), writing, and closing, either gracefully (write what is queued, shut the
 * write side, linger for the peer's EOF so that it reads our last answer instead of a
 * reset) or at once. One timer holds the deadline of what the conn waits for (http.h:
 * the limits): the next request, its headers, its body, its answer; a deadline is set
 * when that phase starts and never moved by the bytes that arrive, so a client that
 * trickles gains no time.
 *
 * Writing: answers are queued as references to their bytes (the conn's output queue,
 * then the attached stream's chunks, framed by the protocol as they are pulled) and taken
 * a batch at a time: the next batch is copied (TLS: encrypted) only when the socket has
 * taken the last one. A client that stops reading therefore costs one batch and the
 * references, whatever is queued. The conn knows no protocol: it hands input to its
 * proto and writes the bytes, framing included, that the proto queued.
 *
 * A loopback conn (tests) has no socket: what a socket would be given is appended to a
 * buffer at once, as if the peer read everything; the rest is the same code.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "http/http_int.h"

/* One uv_write of heap bytes: a batch from the queue, or TLS records written raw. */
typedef struct write_req {
    uv_write_t req;
    kapi_conn *conn;
    char *data;
    bool batch; /* the conn's one batch in flight */
} write_req;

/* What one flush writes at most to a socket that takes everything at once, before it
 * lets the loop serve other connections. */
#define FLUSH_BUDGET (1u << 20)

/* The plaintext of one TLS record: pieces are gathered into full records. */
#define STAGE_BYTES 16384

/* A batch being filled: plaintext staged into records, then sealed into data. */
typedef struct batch {
    kapi_conn *conn;
    kapi_buf *data; /* the server's out_buf */
    size_t staged;
    bool ok;
    char stage[STAGE_BYTES];
} batch;

static void on_read(uv_stream_t *h, ssize_t nread, const uv_buf_t *buf);

static void on_deadline(uv_timer_t *t)
{
    kapi_conn *c = t->data;
    uint64_t now = kapi_http__conn_now(c);
    if (c->finishing || c->closing || c->deadline == 0)
        return;
    if (c->deadline > now) { /* moved later since the timer was set */
        c->timer_due = c->deadline;
        uv_timer_start(&c->timer, on_deadline, c->deadline - now, 0);
        return;
    }
    c->deadline = 0;
    c->proto->timeout(c);
}

uint64_t kapi_http__conn_now(const kapi_conn *c)
{
    return uv_now(c->srv->loop);
}

/* A deadline moves with every phase of every request, nearly always later: the timer is
 * restarted only to fire earlier than it would; firing early, it waits for the rest. */
void kapi_http__conn_arm(kapi_conn *c, uint64_t at)
{
    uint64_t now = kapi_http__conn_now(c);
    if (c->finishing || c->closing)
        return; /* the timer is the linger timer now */
    c->deadline = at;
    if (at == 0 || (uv_is_active((uv_handle_t *)&c->timer) && c->timer_due <= at))
        return;
    c->timer_due = at;
    uv_timer_start(&c->timer, on_deadline, at > now ? at - now : 0, 0);
}

bool kapi_http__conn_handling(const kapi_conn *c)
{
    for (const kapi_http_exchange *ex = c->exchanges; ex; ex = ex->cnext)
        if (ex->phase == KAPI_HTTP__HANDLING)
            return true;
    return false;
}

static void conn_free(kapi_conn *c)
{
    kapi_http_server *srv = c->srv;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    srv->nconns--;
    while (c->exchanges) {
        kapi_http__pool_release(&srv->pool, c->exchanges); /* a streamed answer cut off */
        kapi_http__exchange_free(c->exchanges);
    }
    c->proto->dispose(c);
    if (c->ssl) {
        SSL_free(c->ssl); /* frees its BIO */
        kapi_buf_dispose(&c->tls_raw);
    }
    kapi_buf_dispose(&c->in);
    free(c->out);
    free(c);
    kapi_http__maybe_finish(srv);
}

static void on_handle_closed(uv_handle_t *h)
{
    kapi_conn *c = h->data;
    if (--c->open_handles > 0)
        return;
    if (kapi_http__conn_handling(c))
        c->dead = true; /* the handler still has a request: free on its answer */
    else
        conn_free(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    kapi_conn *c = h->data;
    (void)suggested;
    *buf = uv_buf_init(c->srv->read_buf, sizeof(c->srv->read_buf));
}

static void start_reading(kapi_conn *c)
{
    if (c->reading || c->closing || c->peer_eof || c->loopback)
        return;
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
        c->reading = true;
}

static void stop_reading(kapi_conn *c)
{
    if (!c->reading)
        return;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
}

static void format_remote_addr(kapi_conn *c)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET6) {
            uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof(ip));
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        } else {
            uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof(ip));
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        }
    }
    snprintf(c->remote_addr, sizeof(c->remote_addr), strchr(ip, ':') ? "[%s]:%d" : "%s:%d", ip,
             port);
}

/* A conn of srv speaking HTTP/1.1 (until ALPN says otherwise), linked into srv's list;
 * with a socket unless loopback. */
static kapi_conn *conn_new(kapi_http_server *srv, kapi_buf *loopback)
{
    kapi_conn *c = kapi_xcalloc(1, sizeof(*c));
    c->srv = srv;
    c->loopback = loopback;
    kapi_buf_init(&c->in);
    if (!loopback)
        uv_tcp_init(srv->loop, &c->tcp);
    uv_timer_init(srv->loop, &c->timer);
    c->tcp.data = c->timer.data = c->shutdown_req.data = c;
    c->open_handles = loopback ? 1 : 2;
    c->next = srv->conns;
    if (c->next)
        c->next->prev = c;
    srv->conns = c;
    srv->nconns++;
    c->proto = &kapi_http__h1;
    c->proto->init(c);
    return c;
}

/* Go's ReadHeaderTimeout starts at once for a new connection (TLS handshake included). */
static void conn_start(kapi_conn *c)
{
    kapi_http__conn_arm(c, kapi_http__conn_now(c) + c->srv->cfg.header_timeout_ms);
    start_reading(c);
}

void kapi_http__conn_set_proto(kapi_conn *c, const kapi_http_proto_ops *proto)
{
    c->proto->dispose(c);
    c->proto = proto;
    proto->init(c);
    kapi_http__conn_flush(c); /* what the proto says first (h2: its SETTINGS) */
}

void kapi_http__conn_accept(kapi_http_server *srv)
{
    kapi_conn *c = conn_new(srv, NULL);
    if (uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)&c->tcp) < 0) {
        kapi_http__conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    format_remote_addr(c);
    if (srv->ssl_ctx)
        kapi_http__tls_conn_init(c, srv->ssl_ctx);
    conn_start(c);
}

kapi_conn *kapi_http__conn_loopback(kapi_http_server *srv, kapi_buf *out)
{
    kapi_conn *c = conn_new(srv, out);
    snprintf(c->remote_addr, sizeof(c->remote_addr), "loopback");
    conn_start(c);
    return c;
}

/* Hands data to the proto while it wants input; returns bytes consumed. */
static size_t parse_from(kapi_conn *c, const char *data, size_t len)
{
    size_t done = 0;
    while (done < len && !c->discard && c->proto->can_read(c))
        done += c->proto->input(c, data + done, len - done);
    return done;
}

size_t kapi_http__conn_unsent(kapi_conn *c)
{
    if (c->loopback)
        return c->out_bytes;
    return c->out_bytes + uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
}

static bool ready_to_parse(kapi_conn *c)
{
    return !c->discard && c->proto->can_read(c) &&
           kapi_http__conn_unsent(c) <= KAPI_HTTP__WRITE_HIGH;
}

void kapi_http__conn_input(kapi_conn *c, const char *data, size_t len)
{
    size_t n = 0;
    if (c->discard)
        return;
    if (c->in.len == 0 && ready_to_parse(c))
        n = parse_from(c, data, len);
    if (n < len && !c->discard)
        kapi_buf_put(&c->in, data + n, len - n);
    if (c->in.len > 0 && ready_to_parse(c))
        kapi_http__conn_resume(c);
    if (c->in.len > KAPI_HTTP__INBUF_HIGH)
        stop_reading(c);
}

void kapi_http__conn_resume(kapi_conn *c)
{
    size_t n;
    if (c->closing || c->finishing || !ready_to_parse(c))
        return;
    if ((n = parse_from(c, c->in.ptr, c->in.len)) > 0) {
        memmove(c->in.ptr, c->in.ptr + n, c->in.len - n);
        c->in.len -= n;
        c->in.ptr[c->in.len] = '\0';
    }
    if (c->discard)
        return;
    if (c->peer_eof && c->proto->can_read(c))
        kapi_http__conn_finish(c); /* nothing under way, and nothing more will come */
    else if (c->in.len <= KAPI_HTTP__INBUF_HIGH)
        start_reading(c);
}

void kapi_http__conn_request_done(kapi_http_exchange *ex, bool close_after)
{
    kapi_conn *c = ex->conn;
    kapi_http__pool_release(&c->srv->pool, ex);
    kapi_http__exchange_free(ex);
    if (c->dead) {
        if (!kapi_http__conn_handling(c))
            conn_free(c);
        return;
    }
    c->proto->next(c, close_after);
}

void kapi_http__conn_eof(kapi_conn *c)
{
    stop_reading(c);
    c->peer_eof = true;
    if (c->finishing)
        kapi_http__conn_close(c); /* lingering done */
    else
        c->proto->eof(c);
}

static void on_read(uv_stream_t *h, ssize_t nread, const uv_buf_t *buf)
{
    kapi_conn *c = h->data;
    if (nread == UV_EOF) {
        kapi_http__conn_eof(c);
    } else if (nread < 0) {
        kapi_http__conn_close(c);
    } else if (nread > 0 && c->discard) {
        c->unread = true;
    } else if (nread > 0) {
        if (c->ssl)
            kapi_http__tls_input(c, buf->base, (size_t)nread);
        else
            kapi_http__conn_input(c, buf->base, (size_t)nread);
    }
}

/* ---- the output queue ---- */

void kapi_http__conn_queue_static(kapi_conn *c, const char *p, size_t n)
{
    kapi_http__conn_queue(c, (kapi_http_out){.chunk = {p, n, NULL, NULL}});
}

void kapi_http__conn_queue(kapi_conn *c, kapi_http_out piece)
{
    if (c->closing) {
        if (piece.chunk.release)
            piece.chunk.release(piece.chunk.owner);
        return;
    }
    if (c->out_n == c->out_cap) {
        if (c->out_head > 0) { /* reuse the room of what was taken */
            memmove(c->out, c->out + c->out_head, (c->out_n - c->out_head) * sizeof(*c->out));
            c->out_n -= c->out_head;
            c->out_head = 0;
        }
        if (c->out_n == c->out_cap) {
            c->out_cap = c->out_cap ? 2 * c->out_cap : 16;
            c->out = kapi_xrealloc(c->out, c->out_cap * sizeof(*c->out));
        }
    }
    c->out[c->out_n++] = piece;
    c->out_bytes += piece.chunk.len;
}

/* Releases the first piece of the queue; an emptied queue gives back a big array. */
static void out_pop(kapi_conn *c)
{
    kapi_http_out *o = &c->out[c->out_head++];
    if (o->chunk.release)
        o->chunk.release(o->chunk.owner);
    if (c->out_head < c->out_n)
        return;
    c->out_head = c->out_n = 0;
    if (c->out_cap > 64) {
        free(c->out);
        c->out = NULL;
        c->out_cap = 0;
    }
}

/* Drops everything queued (the conn is closing). */
static void out_drop(kapi_conn *c)
{
    while (c->out_head < c->out_n)
        out_pop(c);
    c->out_bytes = 0;
}

static void seal(batch *b)
{
    if (b->staged == 0)
        return;
    if (b->conn->ssl)
        b->ok = kapi_http__tls_encrypt(b->conn, b->stage, b->staged, b->data) && b->ok;
    else
        kapi_buf_put(b->data, b->stage, b->staged);
    b->staged = 0;
}

static void emit(batch *b, const char *p, size_t n)
{
    while (n > 0) {
        size_t k = n < STAGE_BYTES - b->staged ? n : STAGE_BYTES - b->staged;
        memcpy(b->stage + b->staged, p, k);
        b->staged += k;
        p += k;
        n -= k;
        if (b->staged == STAGE_BYTES)
            seal(b);
    }
}

/* The first piece not yet taken, asking the proto for more (a batch's worth: the next
 * pieces of a streamed answer, frames) when the queue is empty; NULL when there is
 * nothing to write. */
static kapi_http_out *next_piece(kapi_conn *c)
{
    if (c->out_head == c->out_n)
        c->proto->produce(c);
    return c->out_head < c->out_n ? &c->out[c->out_head] : NULL;
}

/* Takes up to KAPI_HTTP__OUT_BATCH bytes of pieces into b, releasing those taken whole. */
static void fill(kapi_conn *c, batch *b)
{
    size_t budget = KAPI_HTTP__OUT_BATCH;
    kapi_http_out *o;
    while (budget > 0 && (o = next_piece(c)) != NULL) {
        if (o->off == 0)
            emit(b, o->pre, o->npre);
        size_t k = o->chunk.len - o->off < budget ? o->chunk.len - o->off : budget;
        emit(b, o->chunk.ptr + o->off, k);
        o->off += k;
        budget -= k;
        c->out_bytes -= k;
        if (o->off < o->chunk.len)
            break;
        emit(b, o->post, o->npost);
        out_pop(c);
    }
    seal(b);
}

static void shut_write_side(kapi_conn *c);

static void on_write(uv_write_t *req, int status)
{
    write_req *w = req->data;
    kapi_conn *c = w->conn;
    bool was_batch = w->batch;
    free(w->data);
    free(w);
    if (status < 0) {
        kapi_http__conn_close(c);
        return;
    }
    if (was_batch) {
        c->writing = false;
        kapi_http__conn_flush(c);
    }
    kapi_http__conn_resume(c); /* parsing may wait for the write queue to drain */
}

static void submit(kapi_conn *c, char *data, size_t len, bool is_batch)
{
    write_req *w = kapi_xcalloc(1, sizeof(*w));
    uv_buf_t b = uv_buf_init(data, len);
    w->conn = c;
    w->data = data;
    w->batch = is_batch;
    w->req.data = w;
    c->writing = c->writing || is_batch;
    if (c->closing || uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_write) < 0) {
        free(data);
        free(w);
        kapi_http__conn_close(c);
    }
}

/* Hands a copy of the rest of a batch to libuv: written as the socket drains; the next
 * batch is taken when it has been. */
static void submit_rest(kapi_conn *c, const char *rest, size_t len)
{
    char *data = kapi_xmalloc(len);
    memcpy(data, rest, len);
    submit(c, data, len, true);
}

/* A loopback's peer takes everything at once. */
static int loopback_write(kapi_conn *c, const uv_buf_t *b)
{
    kapi_buf_put(c->loopback, b->base, b->len);
    return (int)b->len;
}

static void flush_batches(kapi_conn *c)
{
    batch b;
    size_t written = 0;
    b.conn = c;
    b.data = &c->srv->out_buf;
    b.staged = 0;
    b.ok = true;
    for (;;) {
        kapi_buf_clear(b.data);
        fill(c, &b);
        if (!b.ok) {
            kapi_http__conn_close(c);
            return;
        }
        if (b.data->len == 0)
            break;
        /* A socket that takes a batch at once is given the next one, up to FLUSH_BUDGET;
         * the rest of a batch it does not take waits with libuv (one batch per conn). */
        uv_buf_t ub = uv_buf_init(b.data->ptr, b.data->len);
        int k = c->loopback              ? loopback_write(c, &ub)
                : written < FLUSH_BUDGET ? uv_try_write((uv_stream_t *)&c->tcp, &ub, 1)
                                         : UV_EAGAIN;
        if (k == (int)b.data->len) {
            written += b.data->len;
            continue;
        }
        if (k < 0 && k != UV_EAGAIN) {
            kapi_http__conn_close(c);
            return;
        }
        k = k > 0 ? k : 0;
        submit_rest(c, b.data->ptr + k, b.data->len - (size_t)k);
        return;
    }
    if (c->shut_pending && c->out_head == c->out_n)
        shut_write_side(c);
}

/* A flush asked for while one runs (by the proto's producing, which may end streams and
 * finish the conn) is the running one's to do: the batch buffer is the server's one. */
void kapi_http__conn_flush(kapi_conn *c)
{
    if (c->writing || c->closing || c->flushing)
        return;
    c->flushing = true;
    flush_batches(c);
    c->flushing = false;
}

void kapi_http__conn_send_raw(kapi_conn *c, char *data, size_t len)
{
    submit(c, data, len, false);
}

static void on_linger_timeout(uv_timer_t *t)
{
    kapi_http__conn_close(t->data);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    kapi_conn *c = req->data;
    if (c->closing)
        return;
    if (status < 0 || c->peer_eof || (!c->unread && c->in.len == 0)) {
        kapi_http__conn_close(c); /* nothing of the peer's left unread: no RST to fear */
        return;
    }
    /* Keep reading (and dropping) until the peer closes, so it gets our answer, not RST. */
    uv_timer_start(&c->timer, on_linger_timeout, KAPI_HTTP__LINGER_MS, 0);
    start_reading(c);
}

/* Everything queued has been taken: close_notify after it, then the TCP shutdown. */
static void shut_write_side(kapi_conn *c)
{
    c->shut_pending = false;
    if (c->ssl)
        kapi_http__tls_close_notify(c);
    if (c->loopback) /* its peer has read everything */
        kapi_http__conn_close(c);
    else if (!c->closing && uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
        kapi_http__conn_close(c);
}

void kapi_http__conn_finish(kapi_conn *c)
{
    if (c->finishing || c->closing)
        return;
    c->finishing = true;
    c->discard = true;
    uv_timer_stop(&c->timer);
    if (c->srv->shutting_down) /* a slow reader must not hold the shutdown up */
        uv_timer_start(&c->timer, on_linger_timeout, KAPI_HTTP__LINGER_MS, 0);
    else if (kapi_http__conn_unsent(c) > 0) /* nor one that stopped reading, the conn */
        uv_timer_start(&c->timer, on_linger_timeout, KAPI_HTTP__DRAIN_MS, 0);
    c->shut_pending = true;
    kapi_http__conn_flush(c); /* shuts the write side once the queue is empty */
}

void kapi_http__conn_close_idle(kapi_conn *c)
{
    if (c->in.len == 0 && kapi_http__conn_unsent(c) == 0)
        kapi_http__conn_close(c);
    else
        kapi_http__conn_finish(c);
}

void kapi_http__conn_close(kapi_conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    c->discard = true;
    c->reading = false;
    for (kapi_http_exchange *ex = c->exchanges; ex; ex = ex->cnext)
        if (ex->stream)
            kapi_http__stream_detach(ex, false);
    out_drop(c);
    uv_timer_stop(&c->timer);
    if (!c->loopback)
        uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}
