/*
 * client: HTTPS connections on one libuv loop, speaking HTTP/1.1 or HTTP/2.
 *
 * A link is one TLS connection: a TCP handle and an SSL object over two memory BIOs
 * (network bytes in through the read BIO, TLS records out of the write BIO into uv_write),
 * as src/http does on the server side. What reads the plaintext is the protocol's, through
 * a small table of callbacks (link_ops):
 *
 * - HTTP/1.1: a conn owns its link, and an http-parser reads its answers (undoing chunked
 *   encoding). One request is outstanding per connection at a time.
 * - HTTP/2: a session is a link that offered only "h2" by ALPN with an nghttp2 client
 *   session over it; its conns are slots, each with one request (a stream) outstanding at a
 *   time. Frames that nghttp2 queues while it reads are written once the read is through,
 *   in one TLS write, so that the answers of one read and the requests they set off share
 *   records.
 *
 * Reads are taken into one static buffer (the loop is single threaded), and the monotonic
 * time of each read is what its answers' latencies end at.
 */
#include "bench.h"

#include <http_parser.h>
#include <netdb.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define READ_BUF (64u * 1024)
/* HTTP/2 receive windows so large that no answer waits for a WINDOW_UPDATE: nothing is
 * buffered here, every DATA frame goes straight to the conn's callbacks. */
#define H2_STREAM_WINDOW (1 << 24)
#define H2_CONN_WINDOW (1 << 30)

struct kapi_bench_client {
    uv_loop_t loop;
    SSL_CTX *ctx;
    struct sockaddr_storage addr;
    const kapi_bench_target *target;
    char *authority; /* host:port, for Host and :authority */
    char *auth;      /* "Bearer <token>", or NULL */
    char *head;      /* the headers every HTTP/1.1 request carries after its request line */
    nghttp2_session_callbacks *h2_cb;
    uv_timer_t timer;
    bool timed_out;
    bool h2_warned; /* said once that a server allows fewer streams than asked for */
};

enum link_state { CONNECTING, HANDSHAKE, READY, CLOSED };

typedef struct link_ops link_ops;

/* One TLS connection; the first member of what owns it (an h1_conn or an h2_session), so
 * that a link's address is its owner's. */
typedef struct tls_link {
    uv_tcp_t tcp;
    uv_connect_t connect;
    kapi_bench_client *client;
    const link_ops *ops;
    enum link_state state;
    SSL *ssl;
    BIO *rbio, *wbio;
    uint64_t now; /* when the bytes at hand were read */
} tls_link;

/* What a link tells the protocol over it. */
struct link_ops {
    void (*ready)(tls_link *l);                          /* TLS is up */
    bool (*plain)(tls_link *l, const char *p, size_t n); /* plaintext; false: l is done */
    void (*failed)(tls_link *l, const char *why);        /* l died; its owner still closes it */
    void (*closed)(tls_link *l);                         /* l's handle is closed: free the owner */
};

typedef struct h2_session h2_session;

struct kapi_bench_conn {
    kapi_bench_client *client;
    tls_link *tls;  /* its own link (HTTP/1.1) or its session's */
    h2_session *h2; /* the session it is a slot of; NULL for HTTP/1.1 */
    const kapi_bench_conn_cb *cb;
    void *data;
    bool failed, keep_body, busy;
    const char *accept; /* the Accept header of its requests; NULL: application/json */
    int status;
    kapi_buf body;     /* the answer's body, when kept */
    size_t body_bytes; /* its length, kept or not */
    size_t index;      /* the batch's number for the request outstanding */
    uint64_t sent;     /* when the request went out */
    /* HTTP/2 slots only. */
    int32_t stream;               /* the request outstanding; 0: none */
    bool ended;                   /* its answer ended (END_STREAM came) */
    kapi_buf out;                 /* its body, until nghttp2 has taken it */
    size_t out_at;                /* how much of out nghttp2 has taken */
    kapi_bench_conn *prev, *next; /* the session's slots */
};

/* An HTTP/1.1 conn and its link. */
typedef struct h1_conn {
    tls_link tls;
    kapi_bench_conn conn;
    http_parser parser;
} h1_conn;

/* An HTTP/2 connection and its slots. It lives while any slot does. */
struct h2_session {
    tls_link tls;
    nghttp2_session *ng;
    kapi_bench_conn *slots;
    size_t nslots;
    bool inside;  /* in nghttp2's recv or send: what is queued meanwhile goes out after it */
    kapi_buf out; /* the frames of one flush */
};

typedef struct write_req {
    uv_write_t req;
    char bytes[];
} write_req;

static char read_buf[READ_BUF], plain_buf[READ_BUF];

static void link_fail(tls_link *l, const char *why);
static void h2_callbacks(nghttp2_session_callbacks **out);

/* ---- the client ---- */

static int resolve(kapi_bench_client *cl, const kapi_bench_target *t, kapi_buf *err)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(t->host, t->port, &hints, &res);
    if (rc != 0) {
        kapi_buf_printf(err, "%s:%s: %s", t->host, t->port, gai_strerror(rc));
        return -1;
    }
    memcpy(&cl->addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

static int add_pem_certs(X509_STORE *store, const kapi_buf *pem)
{
    BIO *bio = BIO_new_mem_buf(pem->ptr, (int)pem->len);
    X509 *x;
    int n = 0;
    while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        n += X509_STORE_add_cert(store, x) == 1;
        X509_free(x);
    }
    ERR_clear_error();
    BIO_free(bio);
    return n;
}

static int use_client_cert(SSL_CTX *ctx, const kapi_bench_target *t)
{
    BIO *cb = BIO_new_mem_buf(t->cert_pem.ptr, (int)t->cert_pem.len);
    BIO *kb = BIO_new_mem_buf(t->key_pem.ptr, (int)t->key_pem.len);
    X509 *cert = PEM_read_bio_X509(cb, NULL, NULL, NULL);
    EVP_PKEY *key = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
    int ok = cert && key && SSL_CTX_use_certificate(ctx, cert) == 1 &&
             SSL_CTX_use_PrivateKey(ctx, key) == 1;
    X509_free(cert);
    EVP_PKEY_free(key);
    BIO_free(cb);
    BIO_free(kb);
    return ok ? 0 : -1;
}

/* The TLS context; ALPN offers http/1.1, which HTTP/2 links replace with h2. */
static int tls_ctx(kapi_bench_client *cl, const kapi_bench_target *t, kapi_buf *err)
{
    static const unsigned char alpn[] = "\x08http/1.1";
    cl->ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(cl->ctx, TLS1_2_VERSION);
    SSL_CTX_set_alpn_protos(cl->ctx, alpn, sizeof(alpn) - 1);
    SSL_CTX_set_mode(cl->ctx, SSL_MODE_RELEASE_BUFFERS);
    if (t->insecure) {
        SSL_CTX_set_verify(cl->ctx, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_CTX_set_verify(cl->ctx, SSL_VERIFY_PEER, NULL);
        if (t->ca_pem.len == 0)
            SSL_CTX_set_default_verify_paths(cl->ctx);
        else if (add_pem_certs(SSL_CTX_get_cert_store(cl->ctx), &t->ca_pem) == 0) {
            kapi_buf_puts(err, "no certificate in the certificate authority data");
            return -1;
        }
    }
    if (t->cert_pem.len > 0 && use_client_cert(cl->ctx, t) < 0) {
        kapi_buf_puts(err, "the client certificate or key does not load");
        return -1;
    }
    return 0;
}

int kapi_bench_client_new(kapi_bench_client **out, const kapi_bench_target *t, kapi_buf *err)
{
    kapi_bench_client *cl = kapi_xcalloc(1, sizeof(*cl));
    cl->target = t;
    if (resolve(cl, t, err) < 0 || tls_ctx(cl, t, err) < 0) {
        SSL_CTX_free(cl->ctx);
        free(cl);
        return -1;
    }
    bool v6 = strchr(t->host, ':') != NULL;
    kapi_buf h;
    kapi_buf_init(&h);
    cl->authority = kapi_xprintf("%s%s%s:%s", v6 ? "[" : "", t->host, v6 ? "]" : "", t->port);
    cl->auth = t->token ? kapi_xprintf("Bearer %s", t->token) : NULL;
    kapi_buf_printf(&h, "Host: %s\r\nUser-Agent: kapi-bench\r\n", cl->authority);
    if (cl->auth)
        kapi_buf_printf(&h, "Authorization: %s\r\n", cl->auth);
    cl->head = kapi_buf_detach(&h, NULL);
    h2_callbacks(&cl->h2_cb);
    uv_loop_init(&cl->loop);
    uv_timer_init(&cl->loop, &cl->timer);
    cl->timer.data = cl;
    *out = cl;
    return 0;
}

static void link_close(tls_link *l);

static void walk_close(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (h->type == UV_TCP)
        link_close(h->data);
    else if (!uv_is_closing(h))
        uv_close(h, NULL);
}

void kapi_bench_client_free(kapi_bench_client *cl)
{
    if (!cl)
        return;
    uv_walk(&cl->loop, walk_close, NULL);
    uv_run(&cl->loop, UV_RUN_DEFAULT);
    uv_loop_close(&cl->loop);
    SSL_CTX_free(cl->ctx);
    nghttp2_session_callbacks_del(cl->h2_cb);
    free(cl->authority);
    free(cl->auth);
    free(cl->head);
    free(cl);
}

static void on_timeout(uv_timer_t *t)
{
    kapi_bench_client *cl = t->data;
    cl->timed_out = true;
}

bool kapi_bench_client_run_until(kapi_bench_client *cl, const bool *flag, uint64_t timeout_ms)
{
    cl->timed_out = false;
    uv_update_time(&cl->loop);
    uv_timer_start(&cl->timer, on_timeout, timeout_ms, 0);
    while (!*flag && !cl->timed_out)
        uv_run(&cl->loop, UV_RUN_ONCE);
    uv_timer_stop(&cl->timer);
    return *flag;
}

void kapi_bench_client_sleep(kapi_bench_client *cl, uint64_t ms)
{
    static const bool never = false;
    kapi_bench_client_run_until(cl, &never, ms);
}

struct uv_loop_s *kapi_bench_client_loop(kapi_bench_client *cl)
{
    return &cl->loop;
}

/* ---- links: TLS over TCP ---- */

static void on_written(uv_write_t *req, int status)
{
    (void)status; /* a failed write shows up as a failed read */
    free(req);
}

/* Writes whatever TLS records OpenSSL has produced. */
static void flush_tls(tls_link *l)
{
    size_t n;
    while ((n = BIO_ctrl_pending(l->wbio)) > 0) {
        write_req *w = kapi_xmalloc(sizeof(*w) + n);
        int got = BIO_read(l->wbio, w->bytes, (int)n);
        uv_buf_t buf = uv_buf_init(w->bytes, got > 0 ? (unsigned)got : 0);
        if (got <= 0 || uv_write(&w->req, (uv_stream_t *)&l->tcp, &buf, 1, on_written) != 0) {
            free(w);
            link_fail(l, "write failed");
            return;
        }
    }
}

static bool handshake(tls_link *l)
{
    int rc = SSL_do_handshake(l->ssl);
    flush_tls(l);
    if (rc == 1) {
        l->state = READY;
        l->ops->ready(l);
        return true;
    }
    int e = SSL_get_error(l->ssl, rc);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
        char msg[256] = "TLS handshake failed";
        unsigned long code = ERR_get_error();
        if (code)
            ERR_error_string_n(code, msg, sizeof(msg));
        ERR_clear_error();
        link_fail(l, msg);
    }
    return false;
}

/* Hands the plaintext OpenSSL has to the protocol. */
static void read_plain(tls_link *l)
{
    int n = 0;
    while (l->state == READY && (n = SSL_read(l->ssl, plain_buf, sizeof(plain_buf))) > 0) {
        if (!l->ops->plain(l, plain_buf, (size_t)n))
            return;
    }
    if (l->state != READY)
        return;
    int e = SSL_get_error(l->ssl, n);
    if (e == SSL_ERROR_ZERO_RETURN)
        link_fail(l, "closed by the server");
    else if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
        link_fail(l, "TLS error");
    else
        flush_tls(l);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    *buf = uv_buf_init(read_buf, sizeof(read_buf));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    tls_link *l = s->data;
    if (n < 0) {
        link_fail(l, n == UV_EOF ? "closed by the server" : uv_strerror((int)n));
        return;
    }
    if (n == 0 || l->state == CLOSED)
        return;
    l->now = uv_hrtime();
    BIO_write(l->rbio, buf->base, (int)n);
    if (l->state == HANDSHAKE && !handshake(l))
        return;
    read_plain(l);
}

static void on_connect(uv_connect_t *req, int status)
{
    tls_link *l = req->data;
    if (l->state == CLOSED)
        return;
    if (status < 0) {
        link_fail(l, uv_strerror(status));
        return;
    }
    l->state = HANDSHAKE;
    uv_read_start((uv_stream_t *)&l->tcp, on_alloc, on_read);
    handshake(l);
}

/* The server name to check: an address is matched as one, a name also goes in SNI. */
static void set_peer_name(SSL *ssl, const char *host)
{
    unsigned char bin[16];
    bool ip = inet_pton(AF_INET, host, bin) == 1 || inet_pton(AF_INET6, host, bin) == 1;
    if (ip) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host);
    } else {
        SSL_set_tlsext_host_name(ssl, host);
        SSL_set1_host(ssl, host);
    }
}

/* Sets up l for ops; link_connect starts it. */
static void link_init(tls_link *l, kapi_bench_client *cl, const link_ops *ops)
{
    l->client = cl;
    l->ops = ops;
    l->ssl = SSL_new(cl->ctx);
    l->rbio = BIO_new(BIO_s_mem());
    l->wbio = BIO_new(BIO_s_mem());
    SSL_set_bio(l->ssl, l->rbio, l->wbio);
    SSL_set_connect_state(l->ssl);
    if (!cl->target->insecure)
        set_peer_name(l->ssl, cl->target->host);
    uv_tcp_init(&cl->loop, &l->tcp);
    l->tcp.data = l;
    l->connect.data = l;
}

/* Connects; ops->ready or ops->failed follows (failed at once when the connect cannot
 * start). */
static void link_connect(tls_link *l)
{
    int rc = uv_tcp_connect(&l->connect, &l->tcp, (struct sockaddr *)&l->client->addr, on_connect);
    if (rc == 0)
        uv_tcp_nodelay(&l->tcp, 1);
    else
        on_connect(&l->connect, rc);
}

static void on_closed(uv_handle_t *h)
{
    tls_link *l = h->data;
    SSL_free(l->ssl);
    l->ops->closed(l);
}

/* Closes l (live or failed); its owner is freed when the loop lets go of it. */
static void link_close(tls_link *l)
{
    if (uv_is_closing((uv_handle_t *)&l->tcp))
        return;
    l->state = CLOSED;
    uv_close((uv_handle_t *)&l->tcp, on_closed);
}

static void link_fail(tls_link *l, const char *why)
{
    if (l->state == CLOSED)
        return;
    l->state = CLOSED;
    uv_read_stop((uv_stream_t *)&l->tcp);
    l->ops->failed(l, why);
}

/* ---- answers, as either protocol delivers them ---- */

static void conn_init(kapi_bench_conn *c, tls_link *l, const kapi_bench_conn_cb *cb, void *data)
{
    c->client = l->client;
    c->tls = l;
    c->cb = cb;
    c->data = data;
    kapi_buf_init(&c->body);
}

/* The conn is dead; it stays its user's to close. */
static void conn_fail(kapi_bench_conn *c, const char *why)
{
    if (c->failed)
        return;
    c->failed = true;
    if (c->cb->failed)
        c->cb->failed(c, why);
}

static void answer_begin(kapi_bench_conn *c)
{
    c->status = 0;
    c->body_bytes = 0;
    kapi_buf_clear(&c->body);
}

static void answer_headers(kapi_bench_conn *c)
{
    if (c->cb->headers)
        c->cb->headers(c, c->status);
}

static void answer_body(kapi_bench_conn *c, const char *p, size_t n)
{
    c->body_bytes += n;
    if (c->cb->chunk)
        c->cb->chunk(c, p, n, c->tls->now);
    else if (c->keep_body || c->status < 200 || c->status > 299) /* errors are worth reading */
        kapi_buf_put(&c->body, p, n);
}

static void answer_done(kapi_bench_conn *c)
{
    c->busy = false;
    if (c->cb->done)
        c->cb->done(c, c->status, (kapi_str){c->body.ptr, c->body.len}, c->tls->now - c->sent);
}

/* ---- HTTP/1.1 ---- */

static int on_message_begin(http_parser *p)
{
    answer_begin(p->data);
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    kapi_bench_conn *c = p->data;
    c->status = (int)p->status_code;
    answer_headers(c);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    answer_body(p->data, at, n);
    return 0;
}

static int on_message_complete(http_parser *p)
{
    answer_done(p->data);
    return 0;
}

static const http_parser_settings parser_settings = {
    .on_message_begin = on_message_begin,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

static void h1_ready(tls_link *l)
{
    kapi_bench_conn *c = &((h1_conn *)l)->conn;
    if (c->cb->ready)
        c->cb->ready(c);
}

static bool h1_plain(tls_link *l, const char *p, size_t n)
{
    http_parser *parser = &((h1_conn *)l)->parser;
    size_t used = http_parser_execute(parser, &parser_settings, p, n);
    if (parser->http_errno != HPE_OK || used != n) {
        link_fail(l, http_errno_description(HTTP_PARSER_ERRNO(parser)));
        return false;
    }
    return true;
}

static void h1_failed(tls_link *l, const char *why)
{
    conn_fail(&((h1_conn *)l)->conn, why);
}

static void h1_closed(tls_link *l)
{
    h1_conn *h = (h1_conn *)l;
    kapi_buf_dispose(&h->conn.body);
    free(h);
}

static const link_ops h1_ops = {h1_ready, h1_plain, h1_failed, h1_closed};

kapi_bench_conn *kapi_bench_conn_new(kapi_bench_client *cl, const kapi_bench_conn_cb *cb,
                                     void *data)
{
    h1_conn *h = kapi_xcalloc(1, sizeof(*h));
    link_init(&h->tls, cl, &h1_ops);
    conn_init(&h->conn, &h->tls, cb, data);
    http_parser_init(&h->parser, HTTP_RESPONSE);
    h->parser.data = &h->conn;
    link_connect(&h->tls);
    return &h->conn;
}

static void h1_send(kapi_bench_conn *c, const char *method, const char *path,
                    const char *content_type, const char *body, size_t body_len)
{
    kapi_buf req;
    kapi_buf_init(&req);
    kapi_buf_printf(&req, "%s %s%s HTTP/1.1\r\n%sAccept: %s\r\n", method, c->client->target->prefix,
                    path, c->client->head, c->accept ? c->accept : "application/json");
    if (body)
        kapi_buf_printf(&req, "Content-Type: %s\r\nContent-Length: %zu\r\n", content_type,
                        body_len);
    kapi_buf_puts(&req, "\r\n");
    if (body)
        kapi_buf_put(&req, body, body_len);
    c->sent = uv_hrtime();
    SSL_write(c->tls->ssl, req.ptr, (int)req.len);
    kapi_buf_dispose(&req);
    flush_tls(c->tls);
}

/* ---- HTTP/2 ---- */

/* Writes what nghttp2 has queued, in one TLS write; false when s is not (or no longer) up.
 * Inside nghttp2's own recv or send it does nothing: they flush when they are through. */
static bool h2_flush(h2_session *s)
{
    const uint8_t *p;
    ssize_t n;
    if (s->tls.state != READY)
        return false;
    if (s->inside)
        return true;
    kapi_buf_clear(&s->out);
    s->inside = true;
    while ((n = nghttp2_session_mem_send(s->ng, &p)) > 0)
        kapi_buf_put(&s->out, p, (size_t)n);
    s->inside = false;
    if (n < 0) {
        link_fail(&s->tls, nghttp2_strerror((int)n));
        return false;
    }
    if (s->out.len > 0 && s->tls.state == READY) {
        SSL_write(s->tls.ssl, s->out.ptr, (int)s->out.len);
        flush_tls(&s->tls);
    }
    return s->tls.state == READY;
}

/* The live slot a stream belongs to, or NULL (the slot was closed or has failed). */
static kapi_bench_conn *stream_slot(nghttp2_session *ng, int32_t stream)
{
    kapi_bench_conn *c = nghttp2_session_get_stream_user_data(ng, stream);
    return c && !c->failed ? c : NULL;
}

/* A session with more slots than the server lets streams be open at once: the rest wait in
 * nghttp2 (and watches among them never start). Said once per client. */
static void check_streams(h2_session *s)
{
    uint32_t max =
        nghttp2_session_get_remote_settings(s->ng, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
    if (s->nslots <= max || s->tls.client->h2_warned)
        return;
    s->tls.client->h2_warned = true;
    fprintf(stderr,
            "kapi-bench: the server allows %u streams per HTTP/2 connection, fewer than the "
            "%zu asked for: the others wait\n",
            max, s->nslots);
}

static int h2_on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                        size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                        void *user)
{
    kapi_bench_conn *c = stream_slot(ng, f->hd.stream_id);
    (void)valuelen;
    (void)flags;
    (void)user;
    if (c && namelen == 7 && memcmp(name, ":status", 7) == 0)
        c->status = (int)strtol((const char *)value, NULL, 10); /* nghttp2 NUL-terminates it */
    return 0;
}

static int h2_on_frame(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
    h2_session *s = user;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        char why[96];
        snprintf(why, sizeof(why), "the server sent GOAWAY (%s)",
                 nghttp2_http2_strerror(f->goaway.error_code));
        link_fail(&s->tls, why);
        return NGHTTP2_ERR_CALLBACK_FAILURE; /* read no further */
    }
    if (f->hd.type == NGHTTP2_SETTINGS && !(f->hd.flags & NGHTTP2_FLAG_ACK))
        check_streams(s);
    kapi_bench_conn *c = stream_slot(ng, f->hd.stream_id);
    if (!c)
        return 0;
    if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) &&
        (f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        c->ended = true;
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_RESPONSE)
        answer_headers(c);
    return 0;
}

static int h2_on_data(nghttp2_session *ng, uint8_t flags, int32_t stream, const uint8_t *p,
                      size_t n, void *user)
{
    kapi_bench_conn *c = stream_slot(ng, stream);
    (void)flags;
    (void)user;
    if (c)
        answer_body(c, (const char *)p, n);
    return 0;
}

/* A stream is over: its answer is complete, or the slot fails. */
static int h2_on_close(nghttp2_session *ng, int32_t stream, uint32_t code, void *user)
{
    kapi_bench_conn *c = stream_slot(ng, stream);
    (void)user;
    if (!c)
        return 0;
    c->stream = 0;
    if (code == NGHTTP2_NO_ERROR && c->ended) {
        answer_done(c);
    } else {
        char why[96];
        snprintf(why, sizeof(why), "stream closed before its answer ended (%s)",
                 nghttp2_http2_strerror(code));
        conn_fail(c, why);
    }
    return 0;
}

/* Request bodies: from the slot's copy, as nghttp2 asks (a closed slot's stream is reset). */
static ssize_t h2_read_body(nghttp2_session *ng, int32_t stream, uint8_t *buf, size_t len,
                            uint32_t *flags, nghttp2_data_source *source, void *user)
{
    kapi_bench_conn *c = stream_slot(ng, stream);
    (void)source;
    (void)user;
    if (!c)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    size_t n = c->out.len - c->out_at < len ? c->out.len - c->out_at : len;
    memcpy(buf, c->out.ptr + c->out_at, n);
    c->out_at += n;
    if (c->out_at == c->out.len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static void h2_callbacks(nghttp2_session_callbacks **out)
{
    if (nghttp2_session_callbacks_new(out) != 0)
        abort(); /* out of memory */
    nghttp2_session_callbacks_set_on_header_callback(*out, h2_on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(*out, h2_on_frame);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(*out, h2_on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(*out, h2_on_close);
}

/* TLS is up: the server must have chosen h2; then our SETTINGS, and the slots are ready. */
static void h2_ready(tls_link *l)
{
    static const nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW},
    };
    h2_session *s = (h2_session *)l;
    const unsigned char *proto = NULL;
    unsigned len = 0;
    SSL_get0_alpn_selected(l->ssl, &proto, &len);
    if (len != 2 || memcmp(proto, "h2", 2) != 0) {
        char why[128];
        snprintf(why, sizeof(why), "the server did not select h2 by ALPN (it selected %.*s)",
                 len ? (int)len : 4, len ? (const char *)proto : "none");
        link_fail(l, why);
        return;
    }
    nghttp2_submit_settings(s->ng, NGHTTP2_FLAG_NONE, settings, KAPI_ARRAY_LEN(settings));
    nghttp2_session_set_local_window_size(s->ng, NGHTTP2_FLAG_NONE, 0, H2_CONN_WINDOW);
    if (!h2_flush(s))
        return;
    for (kapi_bench_conn *c = s->slots, *next; c; c = next) {
        next = c->next;
        if (c->cb->ready)
            c->cb->ready(c);
    }
}

static bool h2_plain(tls_link *l, const char *p, size_t n)
{
    h2_session *s = (h2_session *)l;
    s->inside = true;
    ssize_t rc = nghttp2_session_mem_recv(s->ng, (const uint8_t *)p, n);
    s->inside = false;
    if (rc < 0) {
        link_fail(l, nghttp2_strerror((int)rc));
        return false;
    }
    if (!h2_flush(s))
        return false;
    if (!nghttp2_session_want_read(s->ng) && !nghttp2_session_want_write(s->ng)) {
        link_fail(l, "the HTTP/2 session ended");
        return false;
    }
    return true;
}

static void h2_failed(tls_link *l, const char *why)
{
    h2_session *s = (h2_session *)l;
    for (kapi_bench_conn *c = s->slots, *next; c; c = next) {
        next = c->next;
        conn_fail(c, why);
    }
}

static void slot_free(kapi_bench_conn *c)
{
    kapi_buf_dispose(&c->body);
    kapi_buf_dispose(&c->out);
    free(c);
}

/* Frees the slots left (only kapi_bench_client_free closes a session that has any). */
static void h2_closed(tls_link *l)
{
    h2_session *s = (h2_session *)l;
    while (s->slots) {
        kapi_bench_conn *c = s->slots;
        s->slots = c->next;
        slot_free(c);
    }
    nghttp2_session_del(s->ng);
    kapi_buf_dispose(&s->out);
    free(s);
}

static const link_ops h2_ops = {h2_ready, h2_plain, h2_failed, h2_closed};

/* A session that offers only h2 by ALPN; not connecting yet, so that slots can join first. */
static h2_session *h2_new(kapi_bench_client *cl)
{
    static const unsigned char alpn[] = "\x02h2";
    h2_session *s = kapi_xcalloc(1, sizeof(*s));
    if (nghttp2_session_client_new(&s->ng, cl->h2_cb, s) != 0)
        abort(); /* out of memory */
    kapi_buf_init(&s->out);
    link_init(&s->tls, cl, &h2_ops);
    SSL_set_alpn_protos(s->tls.ssl, alpn, sizeof(alpn) - 1);
    return s;
}

static kapi_bench_conn *slot_new(h2_session *s, const kapi_bench_conn_cb *cb, void *data)
{
    kapi_bench_conn *c = kapi_xcalloc(1, sizeof(*c));
    conn_init(c, &s->tls, cb, data);
    c->h2 = s;
    kapi_buf_init(&c->out);
    c->next = s->slots;
    if (s->slots)
        s->slots->prev = c;
    s->slots = c;
    s->nslots++;
    return c;
}

/* Cancels the slot's request, if any, and frees it; the last slot closes the session. */
static void slot_close(kapi_bench_conn *c)
{
    h2_session *s = c->h2;
    if (c->stream) {
        nghttp2_session_set_stream_user_data(s->ng, c->stream, NULL);
        nghttp2_submit_rst_stream(s->ng, NGHTTP2_FLAG_NONE, c->stream, NGHTTP2_CANCEL);
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        s->slots = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nslots--;
    slot_free(c);
    if (!s->slots)
        link_close(&s->tls);
    else
        h2_flush(s);
}

static nghttp2_nv header(const char *name, const char *value)
{
    return (nghttp2_nv){(uint8_t *)name, (uint8_t *)value, strlen(name), strlen(value),
                        NGHTTP2_NV_FLAG_NONE};
}

/* A new stream for the request; nghttp2 copies the headers, the slot keeps the body. */
static void h2_send(kapi_bench_conn *c, const char *method, const char *path,
                    const char *content_type, const char *body, size_t body_len)
{
    kapi_bench_client *cl = c->client;
    nghttp2_data_provider source = {.read_callback = h2_read_body};
    nghttp2_nv nv[9];
    size_t n = 0;
    char length[24];
    char *full = kapi_xprintf("%s%s", cl->target->prefix, path);
    nv[n++] = header(":method", method);
    nv[n++] = header(":scheme", "https");
    nv[n++] = header(":authority", cl->authority);
    nv[n++] = header(":path", full);
    nv[n++] = header("user-agent", "kapi-bench");
    nv[n++] = header("accept", c->accept ? c->accept : "application/json");
    if (cl->auth)
        nv[n++] = header("authorization", cl->auth);
    kapi_buf_clear(&c->out);
    c->out_at = 0;
    if (body) {
        snprintf(length, sizeof(length), "%zu", body_len);
        nv[n++] = header("content-type", content_type);
        nv[n++] = header("content-length", length);
        kapi_buf_put(&c->out, body, body_len);
    }
    answer_begin(c);
    c->ended = false;
    c->sent = uv_hrtime();
    int32_t id = nghttp2_submit_request(c->h2->ng, NULL, nv, n, body ? &source : NULL, c);
    free(full);
    if (id < 0) {
        conn_fail(c, nghttp2_strerror(id));
        return;
    }
    c->stream = id;
    h2_flush(c->h2);
}

/* ---- conns ---- */

void kapi_bench_conn_close(kapi_bench_conn *c)
{
    if (c->h2)
        slot_close(c);
    else
        link_close(c->tls);
}

void *kapi_bench_conn_data(const kapi_bench_conn *c)
{
    return c->data;
}

void kapi_bench_conn_set_data(kapi_bench_conn *c, void *data)
{
    c->data = data;
}

bool kapi_bench_conn_is_ready(const kapi_bench_conn *c)
{
    return c->tls->state == READY && !c->failed;
}

void kapi_bench_conn_keep_body(kapi_bench_conn *c, bool keep)
{
    c->keep_body = keep;
}

void kapi_bench_conn_accept(kapi_bench_conn *c, const char *accept)
{
    c->accept = accept;
}

void kapi_bench_conn_send(kapi_bench_conn *c, const char *method, const char *path,
                          const char *content_type, const char *body, size_t body_len)
{
    if (!kapi_bench_conn_is_ready(c))
        return; /* it failed: its user heard of it through cb->failed */
    c->busy = true;
    if (c->h2)
        h2_send(c, method, path, content_type, body, body_len);
    else
        h1_send(c, method, path, content_type, body, body_len);
}

/* ---- opening many ---- */

typedef struct opening {
    size_t ready, failed;
    bool all;
    size_t n;
    const kapi_bench_conn_cb *user;
    kapi_buf why;
} opening;

static void opening_check(opening *o)
{
    o->all = o->ready + o->failed == o->n;
}

static void opened(kapi_bench_conn *c)
{
    opening *o = c->data;
    o->ready++;
    opening_check(o);
}

static void open_failed(kapi_bench_conn *c, const char *why)
{
    opening *o = c->data;
    if (o->why.len == 0)
        kapi_buf_puts(&o->why, why);
    o->failed++;
    opening_check(o);
}

/* n slots spread over `links` new sessions (at most n), each slot on session i % links. */
static void h2_open(kapi_bench_client *cl, kapi_bench_conn **out, size_t n, size_t links,
                    const kapi_bench_conn_cb *cb, void *data)
{
    links = links < n ? links : n;
    h2_session **s = kapi_xcalloc(links ? links : 1, sizeof(*s));
    for (size_t k = 0; k < links; k++)
        s[k] = h2_new(cl);
    for (size_t i = 0; i < n; i++)
        out[i] = slot_new(s[i % links], cb, data);
    for (size_t k = 0; k < links; k++)
        link_connect(&s[k]->tls);
    free(s);
}

/* Opens n conns, HTTP/1.1 when links is 0, else HTTP/2 over that many links, and waits. */
static int open_conns(kapi_bench_client *cl, kapi_bench_conn **out, size_t n, size_t links,
                      const kapi_bench_conn_cb *cb, void *data)
{
    static const kapi_bench_conn_cb open_cb = {.ready = opened, .failed = open_failed};
    opening o = {.n = n, .user = cb};
    kapi_buf_init(&o.why);
    if (links > 0)
        h2_open(cl, out, n, links, &open_cb, &o);
    for (size_t i = 0; links == 0 && i < n; i++)
        out[i] = kapi_bench_conn_new(cl, &open_cb, &o);
    opening_check(&o);
    bool done = kapi_bench_client_run_until(cl, &o.all, 60000);
    int rc = done && o.failed == 0 ? 0 : -1;
    if (rc < 0)
        fprintf(stderr, "kapi-bench: %zu of %zu %s failed: %s\n", n - o.ready, n,
                links ? "HTTP/2 streams" : "connections", o.why.len ? o.why.ptr : "timed out");
    for (size_t i = 0; i < n; i++) {
        if (rc < 0) {
            kapi_bench_conn_close(out[i]);
            out[i] = NULL;
        } else {
            out[i]->cb = cb;
            out[i]->data = data;
        }
    }
    kapi_buf_dispose(&o.why);
    return rc;
}

int kapi_bench_conns_open(kapi_bench_client *cl, kapi_bench_conn **out, size_t n,
                          const kapi_bench_conn_cb *cb, void *data)
{
    return open_conns(cl, out, n, 0, cb, data);
}

int kapi_bench_conns_open_h2(kapi_bench_client *cl, kapi_bench_conn **out, size_t n, size_t links,
                             const kapi_bench_conn_cb *cb, void *data)
{
    return open_conns(cl, out, n, links ? links : 1, cb, data);
}

/* ---- one request, waited for ---- */

typedef struct single {
    bool finished;
    int status;
    kapi_buf *answer;
    uint64_t latency;
    const char *what;
} single;

static void single_ready(kapi_bench_conn *c)
{
    single *s = c->data;
    s->finished = true;
}

static void single_done(kapi_bench_conn *c, int status, kapi_str body, uint64_t latency)
{
    single *s = c->data;
    s->status = status;
    s->latency = latency;
    if (s->answer)
        kapi_buf_put(s->answer, body.ptr, body.len);
    s->finished = true;
}

static void single_failed(kapi_bench_conn *c, const char *why)
{
    single *s = c->data;
    fprintf(stderr, "kapi-bench: %s: %s\n", s->what, why);
    s->finished = true;
}

static const kapi_bench_conn_cb single_cb = {
    .ready = single_ready, .done = single_done, .failed = single_failed};

int kapi_bench_conn_roundtrip(kapi_bench_conn *c, const char *method, const char *path,
                              const char *content_type, const char *body, kapi_buf *answer,
                              uint64_t *latency)
{
    const kapi_bench_conn_cb *cb = c->cb;
    void *data = c->data;
    bool keep = c->keep_body;
    single s = {.status = -1, .answer = answer, .what = path};
    c->cb = &single_cb;
    c->data = &s;
    c->keep_body = answer != NULL;
    kapi_bench_conn_send(c, method, path, content_type, body, body ? strlen(body) : 0);
    if (kapi_bench_conn_is_ready(c) && !kapi_bench_client_run_until(c->client, &s.finished, 120000))
        fprintf(stderr, "kapi-bench: %s %s: no answer in 120 s\n", method, path);
    c->cb = cb;
    c->data = data;
    c->keep_body = keep;
    if (latency)
        *latency = s.latency;
    return s.status;
}

int kapi_bench_request(kapi_bench_client *cl, const char *method, const char *path,
                       const char *content_type, const char *body, kapi_buf *answer)
{
    single s = {.what = path};
    int status = -1;
    kapi_bench_conn *c = kapi_bench_conn_new(cl, &single_cb, &s);
    if (kapi_bench_client_run_until(cl, &s.finished, 60000) && kapi_bench_conn_is_ready(c))
        status = kapi_bench_conn_roundtrip(c, method, path, content_type, body, answer, NULL);
    kapi_bench_conn_close(c);
    return status;
}

/* ---- the closed-loop batch ---- */

void kapi_bench_batch_init(kapi_bench_batch *b)
{
    *b = (kapi_bench_batch){0};
    kapi_bench_samples_init(&b->latency);
    kapi_buf_init(&b->first_error);
}

void kapi_bench_batch_dispose(kapi_bench_batch *b)
{
    kapi_bench_samples_dispose(&b->latency);
    kapi_buf_dispose(&b->first_error);
}

static void batch_next(kapi_bench_batch *b, kapi_bench_conn *c)
{
    if (b->next_ >= b->total)
        return;
    c->index = b->next_++;
    b->send(b, c, c->index);
}

static void batch_finish_one(kapi_bench_batch *b)
{
    if (++b->finished_ == b->total)
        b->done_ = true;
}

static void batch_done(kapi_bench_conn *c, int status, kapi_str body, uint64_t latency)
{
    kapi_bench_batch *b = c->data;
    kapi_bench_samples_add(&b->latency, latency);
    b->body_bytes += c->body_bytes;
    if (status >= 200 && status < 300) {
        b->ok++;
    } else if (b->errors++ == 0) {
        b->first_error_status = status;
        kapi_buf_put(&b->first_error, body.ptr, body.len);
    }
    if (b->answer)
        b->answer(b, c->index, status, body);
    batch_finish_one(b);
    batch_next(b, c);
}

static void batch_failed(kapi_bench_conn *c, const char *why)
{
    kapi_bench_batch *b = c->data;
    if (b->errors++ == 0)
        kapi_buf_puts(&b->first_error, why);
    if (c->busy)
        batch_finish_one(b);
    if (--b->open_ == 0)
        b->done_ = true; /* every connection is gone: nothing more can finish */
}

int kapi_bench_batch_run(kapi_bench_client *cl, kapi_bench_batch *b)
{
    static const kapi_bench_conn_cb cb = {.done = batch_done, .failed = batch_failed};
    size_t n = b->conns < b->total ? b->conns : b->total;
    kapi_bench_conn **conns = kapi_xcalloc(n ? n : 1, sizeof(*conns));
    int rc = -1;
    b->tls_conns = b->h2_streams ? (n + b->h2_streams - 1) / b->h2_streams : n;
    if (n == 0 || open_conns(cl, conns, n, b->h2_streams ? b->tls_conns : 0, &cb, b) < 0)
        goto done;
    b->open_ = n;
    uint64_t t0 = uv_hrtime();
    for (size_t i = 0; i < n; i++) {
        kapi_bench_conn_keep_body(conns[i], b->keep_body);
        batch_next(b, conns[i]);
    }
    bool finished = kapi_bench_client_run_until(cl, &b->done_, 600000);
    b->seconds = (double)(uv_hrtime() - t0) / 1e9;
    rc = finished ? 0 : -1;
    for (size_t i = 0; i < n; i++)
        kapi_bench_conn_close(conns[i]);
    kapi_bench_client_sleep(cl, 0); /* let the closes complete */
done:
    free(conns);
    return rc;
}
