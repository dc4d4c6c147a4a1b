/* harness: the test server fixture and HTTP client (see harness.h). */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test.h"

kapi_http_config fixture_config(kapi_http_handler h)
{
    return (kapi_http_config){
        .bind_address = "127.0.0.1",
        .port = 0,
        .max_body = 1024,
        .workers = 4,
        .handler = h,
    };
}

static void *loop_main(void *arg)
{
    http_fixture *f = arg;
    uv_run(&f->loop, UV_RUN_DEFAULT);
    return NULL;
}

static void on_done(void *ctx)
{
    http_fixture *f = ctx;
    f->done_calls++;
    uv_close((uv_handle_t *)&f->stop, NULL);
}

static void on_stop(uv_async_t *h)
{
    http_fixture *f = h->data;
    kapi_http_server_shutdown(f->srv, on_done, f);
}

void fixture_start(http_fixture *f, const kapi_http_config *cfg)
{
    kapi_error *err;
    memset(f, 0, sizeof(*f));
    CHECK(uv_loop_init(&f->loop) == 0);
    if ((err = kapi_http_server_new(&f->srv, &f->loop, cfg)) != NULL)
        test_fail(__FILE__, __LINE__, "server_new: %s", err->message);
    f->port = kapi_http_server_port(f->srv);
    CHECK(f->port > 0);
    uv_async_init(&f->loop, &f->stop, on_stop);
    f->stop.data = f;
    CHECK(pthread_create(&f->thread, NULL, loop_main, f) == 0);
}

void fixture_stop(http_fixture *f)
{
    uv_async_send(&f->stop);
    pthread_join(f->thread, NULL);
    CHECK_INT_EQ(f->done_calls, 1);
    kapi_http_server_free(f->srv);
    CHECK_INT_EQ(uv_loop_close(&f->loop), 0);
}

void client_connect(http_client *c, int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    struct timeval tv = {.tv_sec = 5};
    int one = 1;
    memset(c, 0, sizeof(*c));
    kapi_buf_init(&c->carry);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(c->fd >= 0);
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    CHECK(connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
}

void client_connect_tls(http_client *c, int port, const char *cert, const char *key)
{
    static const unsigned char http11[] = "\x08http/1.1";
    client_connect_alpn(c, port, cert, key, http11, sizeof(http11) - 1);
}

void client_connect_alpn(http_client *c, int port, const char *cert, const char *key,
                         const unsigned char *alpn, unsigned alpn_len)
{
    client_connect(c, port);
    c->ctx = SSL_CTX_new(TLS_client_method());
    CHECK(c->ctx != NULL);
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_NONE, NULL);
    if (cert) {
        CHECK(SSL_CTX_use_certificate_file(c->ctx, cert, SSL_FILETYPE_PEM) == 1);
        CHECK(SSL_CTX_use_PrivateKey_file(c->ctx, key, SSL_FILETYPE_PEM) == 1);
    }
    SSL_CTX_set_alpn_protos(c->ctx, alpn, alpn_len);
    c->ssl = SSL_new(c->ctx);
    SSL_set_fd(c->ssl, c->fd);
    if (SSL_connect(c->ssl) != 1) {
        ERR_print_errors_fp(stdout);
        test_fail(__FILE__, __LINE__, "SSL_connect failed");
    }
}

void client_send(http_client *c, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = c->ssl ? SSL_write(c->ssl, s, (int)n) : send(c->fd, s, n, MSG_NOSIGNAL);
        if (w <= 0)
            return; /* the server may have closed; the reader sees it */
        s += w;
        n -= (size_t)w;
    }
}

void client_sends(http_client *c, const char *s)
{
    client_send(c, s, strlen(s));
}

void client_close(http_client *c)
{
    if (c->ssl) {
        SSL_free(c->ssl);
        SSL_CTX_free(c->ctx);
    }
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->ssl = NULL;
    kapi_buf_dispose(&c->carry);
}

/* Reads more into carry; false on EOF, error or timeout. */
static bool read_more(http_client *c)
{
    char buf[16384];
    ssize_t n = c->ssl ? SSL_read(c->ssl, buf, sizeof(buf)) : recv(c->fd, buf, sizeof(buf), 0);
    if (n <= 0)
        return false;
    kapi_buf_put(&c->carry, buf, (size_t)n);
    return true;
}

static void consume(http_client *c, size_t n)
{
    memmove(c->carry.ptr, c->carry.ptr + n, c->carry.len - n);
    c->carry.len -= n;
    c->carry.ptr[c->carry.len] = '\0';
}

static bool need(http_client *c, size_t n)
{
    while (c->carry.len < n)
        if (!read_more(c))
            return false;
    return true;
}

static bool read_chunked(http_client *c, http_resp *r)
{
    for (;;) {
        char *eol;
        size_t size;
        while ((eol = strstr(c->carry.ptr, "\r\n")) == NULL)
            if (!read_more(c))
                return false;
        size = strtoul(c->carry.ptr, NULL, 16);
        consume(c, (size_t)(eol - c->carry.ptr) + 2);
        if (!need(c, size + 2))
            return false;
        kapi_buf_put(&r->body, c->carry.ptr, size);
        consume(c, size + 2);
        if (size == 0)
            return true;
    }
}

const char *resp_header(const http_resp *r, const char *name)
{
    static _Thread_local char value[1024];
    const char *line = strstr(r->head.ptr, "\r\n");
    size_t nlen = strlen(name);
    while (line && line[2] != '\r' && line[2] != '\0') {
        const char *h = line + 2, *end = strstr(h, "\r\n");
        if (strncasecmp(h, name, nlen) == 0 && h[nlen] == ':') {
            const char *v = h + nlen + 1;
            while (*v == ' ')
                v++;
            snprintf(value, sizeof(value), "%.*s", (int)(end - v), v);
            return value;
        }
        line = end;
    }
    return NULL;
}

bool client_read_response(http_client *c, http_resp *r)
{
    char *end;
    const char *v;
    kapi_buf_init(&r->head);
    kapi_buf_init(&r->body);
    while ((end = strstr(c->carry.ptr, "\r\n\r\n")) == NULL)
        if (!read_more(c))
            return false;
    kapi_buf_put(&r->head, c->carry.ptr, (size_t)(end - c->carry.ptr) + 4);
    consume(c, r->head.len);
    r->status = atoi(r->head.ptr + 9);
    if ((v = resp_header(r, "transfer-encoding")) != NULL && strcmp(v, "chunked") == 0)
        return read_chunked(c, r);
    if ((v = resp_header(r, "content-length")) != NULL) {
        size_t n = strtoul(v, NULL, 10);
        if (!need(c, n))
            return false;
        kapi_buf_put(&r->body, c->carry.ptr, n);
        consume(c, n);
        return true;
    }
    if (r->status < 200 || r->status == 204 || r->status == 304)
        return true;
    while (read_more(c))
        ;
    kapi_buf_put(&r->body, c->carry.ptr, c->carry.len);
    consume(c, c->carry.len);
    return true;
}

bool client_read_until(http_client *c, const char *needle)
{
    while (!strstr(c->carry.ptr, needle))
        if (!read_more(c))
            return false;
    return true;
}

bool client_read_eof(http_client *c)
{
    char buf[4096];
    for (;;) {
        ssize_t n = c->ssl ? SSL_read(c->ssl, buf, sizeof(buf)) : recv(c->fd, buf, sizeof(buf), 0);
        if (n == 0 || (c->ssl && n < 0 && SSL_get_error(c->ssl, (int)n) == SSL_ERROR_ZERO_RETURN))
            return true;
        if (n < 0)
            return errno == ECONNRESET;
        kapi_buf_put(&c->carry, buf, (size_t)n);
    }
}

void resp_dispose(http_resp *r)
{
    kapi_buf_dispose(&r->head);
    kapi_buf_dispose(&r->body);
}

static void add_ext(X509 *x, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509_EXTENSION *ext;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    CHECK(ext != NULL);
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
}

void make_cert(const char *dir, const char *cn, char *cert_out, char *key_out)
{
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_NAME *name;
    FILE *fp;
    CHECK(pkey && x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, pkey);
    name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, name);
    add_ext(x, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(x, NID_key_usage, "critical,digitalSignature,keyCertSign");
    add_ext(x, NID_subject_key_identifier, "hash");
    CHECK(X509_sign(x, pkey, EVP_sha256()) > 0);
    sprintf(cert_out, "%s/%s.crt", dir, cn);
    sprintf(key_out, "%s/%s.key", dir, cn);
    CHECK((fp = fopen(cert_out, "w")) != NULL);
    PEM_write_X509(fp, x);
    fclose(fp);
    CHECK((fp = fopen(key_out, "w")) != NULL);
    PEM_write_PrivateKey(fp, pkey, NULL, NULL, 0, NULL, NULL);
    fclose(fp);
    X509_free(x);
    EVP_PKEY_free(pkey);
}
