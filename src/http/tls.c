/*
 * tls: OpenSSL over a BIO of our own on the conn's buffers. SSL_read takes ciphertext
 * straight from the bytes libuv read and hands the plaintext to the parser; the records
 * OpenSSL writes go straight into the batch conn.c is filling (encrypted answers) or, when
 * made outside one (handshake records, alerts), out with uv_write. Plain HTTP skips this
 * file and nothing else changes. ALPN offers "h2" before "http/1.1", as Go does; once the
 * handshake is done the conn speaks what was chosen (no ALPN: HTTP/1.1).
 */
#include <openssl/err.h>
#include <openssl/x509.h>
#include <string.h>

#include "http/http_int.h"

#define TLS_PLAIN_BUF (16u * 1024)

static kapi_error *ssl_error(const char *what, const char *file)
{
    char msg[256] = "unknown error";
    unsigned long e = ERR_get_error();
    if (e)
        ERR_error_string_n(e, msg, sizeof(msg));
    ERR_clear_error();
    return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "%s %s: %s", what, file ? file : "", msg);
}

/* ALPN: the protocols we speak, in wire format, the preferred first. */
static const unsigned char alpn_protos[] = "\x02h2\x08http/1.1";

static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    if (SSL_select_next_proto((unsigned char **)out, outlen, alpn_protos, sizeof(alpn_protos) - 1,
                              in, inlen) == OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_OK;
    return SSL_TLSEXT_ERR_NOACK; /* no common protocol: go on without ALPN */
}

/* Client certificates are requested, not required; a bad one does not fail the handshake
 * (the request is then simply not authenticated by certificate), as kube-apiserver does.
 * The real verdict is read with SSL_get_verify_result. */
static int accept_any_cert(int preverify_ok, X509_STORE_CTX *x)
{
    (void)preverify_ok;
    (void)x;
    return 1;
}

static kapi_error *load_client_ca(SSL_CTX *ctx, const char *ca_file)
{
    STACK_OF(X509_NAME) * names;
    static const unsigned char sid_ctx[] = "kapi";
    if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1)
        return ssl_error("load client CA", ca_file);
    if ((names = SSL_load_client_CA_file(ca_file)) != NULL)
        SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, accept_any_cert);
    SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof(sid_ctx) - 1);
    return NULL;
}

/* TLS 1.2 suites: forward-secret AEADs only, AES-GCM before ChaCha20-Poly1305 as Go
 * orders them (no CBC, no RSA key exchange). TLS 1.3's: the three Go offers, in Go's
 * order; OpenSSL's own puts AES-256 first, where kube-apiserver agrees on AES-128 (and
 * AES-128 costs the two ends less per byte). */
static const char tls12_ciphers[] = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                                    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                                    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
static const char tls13_suites[] =
    "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384";

kapi_error *kapi_http__tls_ctx_new(SSL_CTX **out, const kapi_http_config *cfg)
{
    kapi_error *err = NULL;
    const char *key = cfg->key_file ? cfg->key_file : cfg->cert_file;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx)
        return ssl_error("SSL_CTX_new", NULL);
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* Like Go: our order, except that a client that puts ChaCha20 first (no AES hardware)
     * gets it. */
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                                 SSL_OP_PRIORITIZE_CHACHA);
    if (SSL_CTX_set_cipher_list(ctx, tls12_ciphers) != 1 ||
        SSL_CTX_set_ciphersuites(ctx, tls13_suites) != 1) {
        err = ssl_error("set cipher list", NULL);
        goto done;
    }
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    if (SSL_CTX_use_certificate_chain_file(ctx, cfg->cert_file) != 1) {
        err = ssl_error("load certificate", cfg->cert_file);
        goto done;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        err = ssl_error("load private key", key);
        goto done;
    }
    if (cfg->client_ca_file && (err = load_client_ca(ctx, cfg->client_ca_file)) != NULL)
        goto done;
    SSL_CTX_set_alpn_select_cb(ctx, select_alpn, NULL);
done:
    if (err) {
        SSL_CTX_free(ctx);
        ctx = NULL;
    }
    *out = ctx;
    return err;
}

/* The conn's transport, as OpenSSL's BIO: it reads ciphertext straight from the bytes
 * libuv read (c->tls_in) and writes its records straight into the batch being filled
 * (c->tls_out) or, outside a batch (handshake, alerts), into c->tls_raw: no memory BIO
 * and no copies into and out of one. */
static int conn_bio_read(BIO *b, char *p, int n)
{
    kapi_conn *c = BIO_get_data(b);
    size_t k = c->tls_in_len < (size_t)n ? c->tls_in_len : (size_t)n;
    BIO_clear_retry_flags(b);
    if (k == 0) {
        BIO_set_retry_read(b); /* more will come: SSL_ERROR_WANT_READ */
        return -1;
    }
    memcpy(p, c->tls_in, k);
    c->tls_in += k;
    c->tls_in_len -= k;
    return (int)k;
}

static int conn_bio_write(BIO *b, const char *p, int n)
{
    kapi_conn *c = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    kapi_buf_put(c->tls_out ? c->tls_out : &c->tls_raw, p, (size_t)n);
    return n;
}

static long conn_bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0; /* written already; nothing else applies */
}

static int conn_bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static BIO_METHOD *conn_bio_method;
static pthread_once_t conn_bio_once = PTHREAD_ONCE_INIT;

/* Made once for the process and never freed. */
static void conn_bio_method_new(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "kapi conn");
    if (!m || !BIO_meth_set_read(m, conn_bio_read) || !BIO_meth_set_write(m, conn_bio_write) ||
        !BIO_meth_set_ctrl(m, conn_bio_ctrl) || !BIO_meth_set_create(m, conn_bio_create))
        abort(); /* allocation failure */
    conn_bio_method = m;
}

void kapi_http__tls_conn_init(kapi_conn *c, SSL_CTX *ctx)
{
    BIO *bio;
    pthread_once(&conn_bio_once, conn_bio_method_new);
    c->ssl = SSL_new(ctx);
    bio = BIO_new(conn_bio_method);
    if (!c->ssl || !bio)
        abort(); /* allocation failure */
    BIO_set_data(bio, c);
    SSL_set_bio(c->ssl, bio, bio); /* takes it both ways: SSL_free frees it */
    SSL_set_accept_state(c->ssl);
    kapi_buf_init(&c->tls_raw);
}

/* Sends the records made outside a batch (handshake, alerts). */
static void flush(kapi_conn *c)
{
    char *p;
    size_t n;
    if (c->tls_raw.len == 0)
        return;
    p = kapi_buf_detach(&c->tls_raw, &n);
    if (c->closing) {
        free(p);
        return;
    }
    kapi_http__conn_send_raw(c, p, n);
}

/* SSL_get_error needs this thread's error queue empty before the call it explains. Every
 * failure here empties it after, so it is nearly always empty already, and looking is
 * much cheaper than emptying it. */
static void clear_errors(void)
{
    if (ERR_peek_error() != 0)
        ERR_clear_error();
}

/* Handles a non-data result of SSL_read: the peer's close_notify is an EOF, a protocol
 * error ends the connection (after the alert, if any, is flushed). */
static void read_failed(kapi_conn *c, int rc)
{
    int e = SSL_get_error(c->ssl, rc);
    ERR_clear_error();
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return;
    flush(c);
    if (e == SSL_ERROR_ZERO_RETURN)
        kapi_http__conn_eof(c);
    else
        kapi_http__conn_finish(c);
}

/* Once the handshake is done: the protocol ALPN chose. */
static void take_alpn(kapi_conn *c)
{
    const unsigned char *p;
    unsigned n;
    if (c->alpn_done || c->finishing || c->closing || !SSL_is_init_finished(c->ssl))
        return;
    c->alpn_done = true;
    SSL_get0_alpn_selected(c->ssl, &p, &n);
    if (n == 2 && memcmp(p, "h2", 2) == 0)
        kapi_http__conn_set_proto(c, &kapi_http__h2);
}

void kapi_http__tls_input(kapi_conn *c, const char *data, size_t len)
{
    char plain[TLS_PLAIN_BUF];
    int rc;
    c->tls_in = data;
    c->tls_in_len = len;
    while (!c->discard) {
        clear_errors();
        rc = SSL_read(c->ssl, plain, sizeof(plain));
        if (rc <= 0) {
            read_failed(c, rc); /* first: SSL_get_error explains the last call only */
            take_alpn(c);
            break;
        }
        take_alpn(c);
        kapi_http__conn_input(c, plain, (size_t)rc);
        if (c->tls_in_len == 0 && !SSL_has_pending(c->ssl))
            break; /* everything is read: another SSL_read would only want more */
    }
    c->tls_in_len = 0; /* what a discarding conn left unread is dropped */
    flush(c);
}

/* Encryption happens as the socket drains (conn.c takes one batch at a time from its
 * queue), one full record of gathered pieces at a time, straight into the batch, so that
 * a connection never holds more ciphertext than one batch: not a private encrypted copy
 * of everything queued for a client that does not read. Records made earlier outside a
 * batch and not yet sent go first: records must leave in the order they were made. */
bool kapi_http__tls_encrypt(kapi_conn *c, const char *p, size_t n, kapi_buf *out)
{
    bool ok = true;
    if (c->tls_raw.len > 0) {
        kapi_buf_put(out, c->tls_raw.ptr, c->tls_raw.len);
        kapi_buf_clear(&c->tls_raw);
    }
    clear_errors();
    c->tls_out = out;
    if (n > 0 && SSL_write(c->ssl, p, (int)n) != (int)n) {
        ok = false; /* the connection is broken (the caller closes it) */
        ERR_clear_error();
    }
    c->tls_out = NULL;
    return ok;
}

void kapi_http__tls_close_notify(kapi_conn *c)
{
    ERR_clear_error();
    if (SSL_is_init_finished(c->ssl))
        SSL_shutdown(c->ssl);
    ERR_clear_error();
    flush(c);
}

bool kapi_http__tls_peer_cert_rejected(kapi_conn *c)
{
    return c->ssl && SSL_get0_peer_certificate(c->ssl) &&
           SSL_get_verify_result(c->ssl) != X509_V_OK;
}

void *kapi_http__tls_peer_cert(kapi_conn *c)
{
    if (!c->ssl || SSL_get_verify_result(c->ssl) != X509_V_OK)
        return NULL;
    return SSL_get0_peer_certificate(c->ssl);
}
