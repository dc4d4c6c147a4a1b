/* server: listening socket, accept, the message queue into the loop thread, shutdown. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/http_int.h"

/* Makes a listening socket for addr:port with plain POSIX calls, so that a failure leaves
 * no libuv handle behind to close. */
static kapi_error *listen_socket(int *out, const char *addr, int port)
{
    struct sockaddr_storage ss;
    int fd = -1, one = 1, err;
    memset(&ss, 0, sizeof(ss));
    if (strchr(addr, ':'))
        err = uv_ip6_addr(addr, port, (struct sockaddr_in6 *)&ss);
    else
        err = uv_ip4_addr(addr, port, (struct sockaddr_in *)&ss);
    if (err)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "bad bind address %s", addr);
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto fail;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, sizeof(ss)) < 0 || listen(fd, 511) < 0)
        goto fail;
    *out = fd;
    return NULL;
fail:
    err = errno;
    if (fd >= 0)
        close(fd);
    return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "listen on %s:%d: %s", addr, port,
                          strerror(err));
}

static int bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return -1;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* Takes every queued message out, in order. */
static kapi_http_msg *take_messages(kapi_http_server *srv)
{
    kapi_http_msg *m;
    pthread_mutex_lock(&srv->mu);
    m = srv->head;
    srv->head = srv->tail = NULL;
    pthread_mutex_unlock(&srv->mu);
    return m;
}

static void drain_messages(kapi_http_server *srv)
{
    kapi_http_msg *m, *next;
    for (m = take_messages(srv); m; m = next) {
        next = m->next;
        if (m->kind == KAPI_HTTP__MSG_RESPONSE)
            kapi_http__on_response(m);
        else
            kapi_http__on_stream_msg(m);
    }
}

static void on_async(uv_async_t *h)
{
    kapi_http_server *srv = h->data;
    drain_messages(srv);
    if (srv->shutting_down)
        kapi_http__maybe_finish(srv);
}

static void on_connection(uv_stream_t *listener, int status)
{
    kapi_http_server *srv = listener->data;
    if (status < 0 || srv->shutting_down)
        return;
    kapi_http__conn_accept(srv);
}

/* The http layer's own answers when the config gives none. */
static const kapi_http_header plain_text[] = {{"Content-Type", "text/plain; charset=utf-8"}};
static const kapi_http_answer default_busy = {429, plain_text, 1, "Too Many Requests\n"};
static const kapi_http_answer default_timeout = {504, plain_text, 1, "Gateway Timeout\n"};

/* Fills in the defaults of the limits and deadlines (http.h). */
static void apply_defaults(kapi_http_config *cfg)
{
    if (!cfg->max_queued)
        cfg->max_queued = KAPI_HTTP_MAX_QUEUED;
    if (!cfg->header_timeout_ms)
        cfg->header_timeout_ms = KAPI_HTTP_HEADER_TIMEOUT_MS;
    if (!cfg->idle_timeout_ms)
        cfg->idle_timeout_ms = KAPI_HTTP_IDLE_TIMEOUT_MS;
    if (!cfg->request_timeout_ms)
        cfg->request_timeout_ms = KAPI_HTTP_REQUEST_TIMEOUT_MS;
    if (!cfg->busy.status)
        cfg->busy = default_busy;
    if (!cfg->timeout.status)
        cfg->timeout = default_timeout;
}

static void on_async_closed(uv_handle_t *h)
{
    kapi_http_server *srv = h->data;
    if (srv->done)
        srv->done(srv->done_ctx);
}

static void on_listener_closed(uv_handle_t *h)
{
    kapi_http_server *srv = h->data;
    srv->listener_closed = true;
    kapi_http__maybe_finish(srv);
}

/* A server on loop; listening unless loopback (then it accepts nothing, and its
 * listener counts as closed). */
static kapi_error *server_new(kapi_http_server **out, uv_loop_t *loop, const kapi_http_config *cfg,
                              bool loopback)
{
    kapi_http_server *srv = kapi_xcalloc(1, sizeof(*srv));
    kapi_error *err = NULL;
    int fd = -1;
    srv->loop = loop;
    srv->cfg = *cfg;
    apply_defaults(&srv->cfg);
    pthread_mutex_init(&srv->mu, NULL);
    kapi_buf_init(&srv->out_buf);
    kapi_buf_grow(&srv->out_buf, KAPI_HTTP__OUT_BATCH + 4096); /* framing, record overhead */
    kapi_http__h1_setup();
    if (cfg->cert_file && (err = kapi_http__tls_ctx_new(&srv->ssl_ctx, cfg)) != NULL)
        goto done;
    if (!loopback && (err = listen_socket(&fd, cfg->bind_address ? cfg->bind_address : "127.0.0.1",
                                          cfg->port)) != NULL)
        goto done;
    srv->port = loopback ? 0 : bound_port(fd);
    if ((err = kapi_http__pool_init(&srv->pool, srv, cfg->workers)) != NULL)
        goto done;
    if (uv_async_init(loop, &srv->async, on_async) < 0) {
        err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "uv_async_init failed");
        goto done;
    }
    srv->async.data = srv;
    srv->listener_closed = loopback;
    if (!loopback) {
        uv_tcp_init(loop, &srv->listener);
        srv->listener.data = srv;
        uv_tcp_open(&srv->listener, fd);
        uv_listen((uv_stream_t *)&srv->listener, 511, on_connection);
        fd = -1;
    }
done:
    if (cfg->cert_file) {
        srv->cert_file = kapi_xstrdup(cfg->cert_file);
        srv->key_file = cfg->key_file ? kapi_xstrdup(cfg->key_file) : NULL;
        srv->client_ca_file = cfg->client_ca_file ? kapi_xstrdup(cfg->client_ca_file) : NULL;
    }
    srv->cfg.bind_address = srv->cfg.cert_file = srv->cfg.key_file = NULL;
    srv->cfg.client_ca_file = NULL;
    if (err) {
        if (fd >= 0)
            close(fd);
        kapi_http_server_free(srv);
        srv = NULL;
    }
    *out = srv;
    return err;
}

kapi_error *kapi_http_server_new(kapi_http_server **out, uv_loop_t *loop,
                                 const kapi_http_config *cfg)
{
    return server_new(out, loop, cfg, false);
}

kapi_error *kapi_http__server_new_loopback(kapi_http_server **out, uv_loop_t *loop,
                                           const kapi_http_config *cfg)
{
    return server_new(out, loop, cfg, true);
}

/* Each connection's SSL holds a reference to the context it was made from, so the old
 * context lives on in the connections made before. */
kapi_error *kapi_http_server_reload_tls(kapi_http_server *srv)
{
    SSL_CTX *ctx;
    kapi_error *err;
    if (!srv->ssl_ctx)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "the server does not serve TLS");
    kapi_http_config files = {.cert_file = srv->cert_file,
                              .key_file = srv->key_file,
                              .client_ca_file = srv->client_ca_file};
    if ((err = kapi_http__tls_ctx_new(&ctx, &files)) != NULL)
        return err;
    SSL_CTX_free(srv->ssl_ctx);
    srv->ssl_ctx = ctx;
    return NULL;
}

int kapi_http_server_port(const kapi_http_server *srv)
{
    return srv->port;
}

void kapi_http__post(kapi_http_server *srv, kapi_http_msg *m)
{
    m->next = NULL;
    pthread_mutex_lock(&srv->mu);
    if (srv->tail)
        srv->tail->next = m;
    else
        srv->head = m;
    srv->tail = m;
    pthread_mutex_unlock(&srv->mu);
    uv_async_send(&srv->async);
}

void kapi_http_server_shutdown(kapi_http_server *srv, void (*done)(void *ctx), void *ctx)
{
    kapi_conn *c, *next;
    if (srv->shutting_down)
        return;
    srv->shutting_down = true;
    srv->done = done;
    srv->done_ctx = ctx;
    if (!srv->listener_closed)
        uv_close((uv_handle_t *)&srv->listener, on_listener_closed);
    kapi_http__pool_stop(&srv->pool, true);
    for (c = srv->conns; c; c = next) {
        next = c->next;
        c->proto->shutdown(c);
    }
}

void kapi_http__maybe_finish(kapi_http_server *srv)
{
    if (!srv->shutting_down || !srv->listener_closed || srv->nconns > 0 || srv->async_closing)
        return;
    if (!kapi_http__pool_exited(&srv->pool))
        return;
    kapi_http__pool_dispose(&srv->pool);
    /* Late stream messages (a producer that wrote just before its stream closed). */
    drain_messages(srv);
    srv->async_closing = true;
    uv_close((uv_handle_t *)&srv->async, on_async_closed);
}

void kapi_http_server_free(kapi_http_server *srv)
{
    kapi_http_msg *m, *next;
    if (!srv)
        return;
    kapi_http__pool_dispose(&srv->pool);
    for (m = srv->head; m; m = next) {
        next = m->next;
        kapi_http__msg_free(m);
    }
    if (srv->ssl_ctx)
        SSL_CTX_free(srv->ssl_ctx);
    free(srv->cert_file);
    free(srv->key_file);
    free(srv->client_ca_file);
    kapi_buf_dispose(&srv->out_buf);
    pthread_mutex_destroy(&srv->mu);
    free(srv);
}
