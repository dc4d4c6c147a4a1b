/*
 * client: HTTPS/1.1 keep-alive connections on one libuv loop.
 *
 * Each connection owns a TCP handle, an SSL object over two memory BIOs (network bytes in
 * through the read BIO, TLS records out of the write BIO into uv_write) and an
 * http-parser for the answers, which undoes chunked encoding. One request is outstanding
 * per connection at a time. Reads are taken into one static buffer (the loop is single
 * threaded), and the monotonic time of each read is what its answers' latencies end at.
 */
#include "bench.h"

#include <http_parser.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define READ_BUF (64u * 1024)

struct kapi_bench_client {
    uv_loop_t loop;
    SSL_CTX *ctx;
    struct sockaddr_storage addr;
    const kapi_bench_target *target;
    char *head; /* the headers every request carries after its request line */
    uv_timer_t timer;
    bool timed_out;
};

enum conn_state { CONNECTING, HANDSHAKE, READY, CLOSED };

struct kapi_bench_conn {
    uv_tcp_t tcp;
    uv_connect_t connect;
    kapi_bench_client *client;
    const kapi_bench_conn_cb *cb;
    void *data;
    enum conn_state state;
    SSL *ssl;
    BIO *rbio, *wbio;
    http_parser parser;
    bool keep_body, busy;
    const char *accept; /* the Accept header of its requests; NULL: application/json */
    int status;
    kapi_buf body;      /* the answer's body, when kept */
    size_t body_bytes;  /* its length, kept or not */
    size_t index;       /* the batch's number for the request outstanding */
    uint64_t sent, now; /* when the request went out; when the bytes at hand were read */
};

typedef struct write_req {
    uv_write_t req;
    char bytes[];
} write_req;

static char read_buf[READ_BUF], plain_buf[READ_BUF];

static void conn_fail(kapi_bench_conn *c, const char *why);

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
    kapi_buf h;
    kapi_buf_init(&h);
    kapi_buf_printf(&h, "Host: %s%s%s:%s\r\nUser-Agent: kapi-bench\r\n",
                    strchr(t->host, ':') ? "[" : "", t->host, strchr(t->host, ':') ? "]" : "",
                    t->port);
    if (t->token)
        kapi_buf_printf(&h, "Authorization: Bearer %s\r\n", t->token);
    cl->head = kapi_buf_detach(&h, NULL);
    uv_loop_init(&cl->loop);
    uv_timer_init(&cl->loop, &cl->timer);
    cl->timer.data = cl;
    *out = cl;
    return 0;
}

static void walk_close(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (h->type == UV_TCP)
        kapi_bench_conn_close(h->data);
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

/* ---- TLS ---- */

static void on_written(uv_write_t *req, int status)
{
    (void)status; /* a failed write shows up as a failed read */
    free(req);
}

/* Writes whatever TLS records OpenSSL has produced. */
static void flush_tls(kapi_bench_conn *c)
{
    size_t n;
    while ((n = BIO_ctrl_pending(c->wbio)) > 0) {
        write_req *w = kapi_xmalloc(sizeof(*w) + n);
        int got = BIO_read(c->wbio, w->bytes, (int)n);
        uv_buf_t buf = uv_buf_init(w->bytes, got > 0 ? (unsigned)got : 0);
        if (got <= 0 || uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, on_written) != 0) {
            free(w);
            conn_fail(c, "write failed");
            return;
        }
    }
}

static bool handshake(kapi_bench_conn *c)
{
    int rc = SSL_do_handshake(c->ssl);
    flush_tls(c);
    if (rc == 1) {
        c->state = READY;
        if (c->cb->ready)
            c->cb->ready(c);
        return true;
    }
    int e = SSL_get_error(c->ssl, rc);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
        char msg[256] = "TLS handshake failed";
        unsigned long code = ERR_get_error();
        if (code)
            ERR_error_string_n(code, msg, sizeof(msg));
        ERR_clear_error();
        conn_fail(c, msg);
    }
    return false;
}

/* ---- HTTP answers ---- */

static int on_message_begin(http_parser *p)
{
    kapi_bench_conn *c = p->data;
    c->status = 0;
    c->body_bytes = 0;
    kapi_buf_clear(&c->body);
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    kapi_bench_conn *c = p->data;
    c->status = (int)p->status_code;
    if (c->cb->headers)
        c->cb->headers(c, c->status);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    kapi_bench_conn *c = p->data;
    c->body_bytes += n;
    if (c->cb->chunk)
        c->cb->chunk(c, at, n, c->now);
    else if (c->keep_body || c->status < 200 || c->status > 299) /* errors are worth reading */
        kapi_buf_put(&c->body, at, n);
    return 0;
}

static int on_message_complete(http_parser *p)
{
    kapi_bench_conn *c = p->data;
    c->busy = false;
    if (c->cb->done)
        c->cb->done(c, c->status, (kapi_str){c->body.ptr, c->body.len}, c->now - c->sent);
    return 0;
}

static const http_parser_settings parser_settings = {
    .on_message_begin = on_message_begin,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* Feeds the plaintext OpenSSL has to the parser. */
static void read_plain(kapi_bench_conn *c)
{
    int n = 0;
    while (c->state == READY && (n = SSL_read(c->ssl, plain_buf, sizeof(plain_buf))) > 0) {
        size_t used = http_parser_execute(&c->parser, &parser_settings, plain_buf, (size_t)n);
        if (c->parser.http_errno != HPE_OK || used != (size_t)n) {
            conn_fail(c, http_errno_description(HTTP_PARSER_ERRNO(&c->parser)));
            return;
        }
    }
    if (c->state != READY)
        return;
    int e = SSL_get_error(c->ssl, n);
    if (e == SSL_ERROR_ZERO_RETURN)
        conn_fail(c, "closed by the server");
    else if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
        conn_fail(c, "TLS error");
    else
        flush_tls(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    *buf = uv_buf_init(read_buf, sizeof(read_buf));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    kapi_bench_conn *c = s->data;
    if (n < 0) {
        conn_fail(c, n == UV_EOF ? "closed by the server" : uv_strerror((int)n));
        return;
    }
    if (n == 0 || c->state == CLOSED)
        return;
    c->now = uv_hrtime();
    BIO_write(c->rbio, buf->base, (int)n);
    if (c->state == HANDSHAKE && !handshake(c))
        return;
    read_plain(c);
}

/* ---- connections ---- */

static void on_connect(uv_connect_t *req, int status)
{
    kapi_bench_conn *c = req->data;
    if (c->state == CLOSED)
        return;
    if (status < 0) {
        conn_fail(c, uv_strerror(status));
        return;
    }
    c->state = HANDSHAKE;
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    handshake(c);
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

kapi_bench_conn *kapi_bench_conn_new(kapi_bench_client *cl, const kapi_bench_conn_cb *cb,
                                     void *data)
{
    kapi_bench_conn *c = kapi_xcalloc(1, sizeof(*c));
    c->client = cl;
    c->cb = cb;
    c->data = data;
    kapi_buf_init(&c->body);
    c->ssl = SSL_new(cl->ctx);
    c->rbio = BIO_new(BIO_s_mem());
    c->wbio = BIO_new(BIO_s_mem());
    SSL_set_bio(c->ssl, c->rbio, c->wbio);
    SSL_set_connect_state(c->ssl);
    if (!cl->target->insecure)
        set_peer_name(c->ssl, cl->target->host);
    http_parser_init(&c->parser, HTTP_RESPONSE);
    c->parser.data = c;
    uv_tcp_init(&cl->loop, &c->tcp);
    c->tcp.data = c;
    c->connect.data = c;
    int rc = uv_tcp_connect(&c->connect, &c->tcp, (struct sockaddr *)&cl->addr, on_connect);
    if (rc == 0)
        uv_tcp_nodelay(&c->tcp, 1);
    else
        on_connect(&c->connect, rc);
    return c;
}

static void on_closed(uv_handle_t *h)
{
    kapi_bench_conn *c = h->data;
    SSL_free(c->ssl);
    kapi_buf_dispose(&c->body);
    free(c);
}

void kapi_bench_conn_close(kapi_bench_conn *c)
{
    if (uv_is_closing((uv_handle_t *)&c->tcp))
        return;
    c->state = CLOSED;
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void conn_fail(kapi_bench_conn *c, const char *why)
{
    if (c->state == CLOSED)
        return;
    c->state = CLOSED;
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (c->cb->failed)
        c->cb->failed(c, why);
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
    return c->state == READY;
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
    kapi_buf req;
    if (c->state != READY)
        return; /* it failed: its user heard of it through cb->failed */
    kapi_buf_init(&req);
    kapi_buf_printf(&req, "%s %s%s HTTP/1.1\r\n%sAccept: %s\r\n", method, c->client->target->prefix,
                    path, c->client->head, c->accept ? c->accept : "application/json");
    if (body)
        kapi_buf_printf(&req, "Content-Type: %s\r\nContent-Length: %zu\r\n", content_type,
                        body_len);
    kapi_buf_puts(&req, "\r\n");
    if (body)
        kapi_buf_put(&req, body, body_len);
    c->busy = true;
    c->sent = uv_hrtime();
    SSL_write(c->ssl, req.ptr, (int)req.len);
    kapi_buf_dispose(&req);
    flush_tls(c);
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

int kapi_bench_conns_open(kapi_bench_client *cl, kapi_bench_conn **out, size_t n,
                          const kapi_bench_conn_cb *cb, void *data)
{
    static const kapi_bench_conn_cb open_cb = {.ready = opened, .failed = open_failed};
    opening o = {.n = n, .user = cb};
    kapi_buf_init(&o.why);
    for (size_t i = 0; i < n; i++)
        out[i] = kapi_bench_conn_new(cl, &open_cb, &o);
    opening_check(&o);
    bool done = kapi_bench_client_run_until(cl, &o.all, 60000);
    int rc = done && o.failed == 0 ? 0 : -1;
    if (rc < 0)
        fprintf(stderr, "kapi-bench: %zu of %zu connections failed: %s\n", n - o.ready, n,
                o.why.len ? o.why.ptr : "timed out");
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
    if (c->state == READY && !kapi_bench_client_run_until(c->client, &s.finished, 120000))
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
    if (kapi_bench_client_run_until(cl, &s.finished, 60000) && c->state == READY)
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
    if (n == 0 || kapi_bench_conns_open(cl, conns, n, &cb, b) < 0)
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
