/* Unit tests for src/http over TLS: round trip, ALPN, client certificates, streams. */
#include <openssl/x509.h>
#include <stdatomic.h>
#include <unistd.h>

#include "harness.h"
#include "test.h"

#define BIG_LEN (200 * 1024)

/* "/cert": the verified client certificate's CN, "none", or "rejected" for one that came
 * and did not verify. */
static void cert(kapi_http_request *req)
{
    char cn[256] = "none";
    kapi_http_chunk body;
    if (req->peer_certificate_rejected)
        snprintf(cn, sizeof(cn), "rejected");
    if (req->peer_certificate)
        X509_NAME_get_text_by_NID(X509_get_subject_name(req->peer_certificate), NID_commonName, cn,
                                  sizeof(cn));
    body = kapi_http_chunk_take(kapi_xprintf("peer=%s body=%s", cn, req->body), 0);
    body.len = strlen(body.ptr);
    kapi_http_respond(req, 200, NULL, 0, &body, 1);
}

static void big(kapi_http_request *req)
{
    char *p = kapi_xmalloc(BIG_LEN);
    kapi_http_chunk body[2];
    for (size_t i = 0; i < BIG_LEN; i++)
        p[i] = (char)('a' + i % 26);
    body[0] = kapi_http_chunk_take(p, BIG_LEN / 2);
    body[1] = (kapi_http_chunk){p + BIG_LEN / 2, BIG_LEN / 2, NULL, NULL};
    kapi_http_respond(req, 200, NULL, 0, body, 2);
}

static void stream(kapi_http_request *req)
{
    kapi_http_stream *s = kapi_http_stream_start(req, 200, NULL, 0, 1 << 20);
    for (int i = 0; i < 3; i++)
        CHECK(kapi_http_stream_write(s, kapi_http_chunk_copy("{\"n\":1}\n", 8)));
    kapi_http_stream_end(s);
}

static atomic_int closed_calls;

static void on_closed(void *ctx)
{
    (void)ctx;
    closed_calls++;
}

/* "/hold": ticks until the server shuts down. */
static void hold(kapi_http_request *req)
{
    kapi_http_stream *s = kapi_http_stream_start(req, 200, NULL, 0, 1 << 20);
    kapi_http_stream_on_close(s, on_closed, NULL);
    while (closed_calls == 0 && kapi_http_stream_write(s, kapi_http_chunk_copy("tick\n", 5)))
        usleep(10 * 1000);
    kapi_http_stream_end(s);
}

static void handler(kapi_http_request *req, void *ctx)
{
    (void)ctx;
    if (kapi_str_eqc(req->path, "/hold"))
        hold(req);
    else if (kapi_str_eqc(req->path, "/big"))
        big(req);
    else if (kapi_str_eqc(req->path, "/stream"))
        stream(req);
    else
        cert(req);
}

typedef struct tls_setup {
    char server_crt[512], server_key[512];
    char client_crt[512], client_key[512];
    char other_crt[512], other_key[512];
} tls_setup;

static void start_tls(http_fixture *f, tls_setup *t, bool client_ca)
{
    kapi_http_config cfg = fixture_config(handler);
    make_cert(test_tmpdir(), "server", t->server_crt, t->server_key);
    make_cert(test_tmpdir(), "client", t->client_crt, t->client_key);
    make_cert(test_tmpdir(), "stranger", t->other_crt, t->other_key);
    cfg.cert_file = t->server_crt;
    cfg.key_file = t->server_key;
    cfg.client_ca_file = client_ca ? t->client_crt : NULL;
    fixture_start(f, &cfg);
}

TEST(http_tls_round_trip)
{
    http_fixture f;
    tls_setup t;
    http_client c;
    http_resp r;
    const unsigned char *proto;
    unsigned int proto_len;
    start_tls(&f, &t, false);
    client_connect_tls(&c, f.port, NULL, NULL);
    SSL_get0_alpn_selected(c.ssl, &proto, &proto_len);
    CHECK(proto_len == 8 && memcmp(proto, "http/1.1", 8) == 0);
    CHECK(SSL_version(c.ssl) >= TLS1_2_VERSION);
    client_sends(&c, "POST /cert HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "peer=none body=hi");
    resp_dispose(&r);
    client_sends(&c, "GET /big HTTP/1.1\r\n\r\nGET /stream HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_INT_EQ(r.body.len, BIG_LEN);
    CHECK(r.body.ptr[0] == 'a' && r.body.ptr[BIG_LEN - 1] == (char)('a' + (BIG_LEN - 1) % 26));
    resp_dispose(&r);
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "{\"n\":1}\n{\"n\":1}\n{\"n\":1}\n");
    resp_dispose(&r);
    client_close(&c);
    fixture_stop(&f);
}

TEST(http_tls_client_certificates)
{
    http_fixture f;
    tls_setup t;
    http_client c;
    http_resp r;
    start_tls(&f, &t, true);
    client_connect_tls(&c, f.port, t.client_crt, t.client_key);
    client_sends(&c, "GET /cert HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "peer=client body=");
    resp_dispose(&r);
    client_close(&c);
    /* No certificate: requested, not required. */
    client_connect_tls(&c, f.port, NULL, NULL);
    client_sends(&c, "GET /cert HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "peer=none body=");
    resp_dispose(&r);
    client_close(&c);
    /* A certificate the CA did not sign: the connection works, the request has no peer and
     * says one was rejected (the api answers it 401, as kube's x509 authenticator). */
    client_connect_tls(&c, f.port, t.other_crt, t.other_key);
    client_sends(&c, "GET /cert HTTP/1.1\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_STR_EQ(r.body.ptr, "peer=rejected body=");
    resp_dispose(&r);
    client_close(&c);
    fixture_stop(&f);
}

TEST(http_tls_bad_handshake_and_plain_text)
{
    http_fixture f;
    tls_setup t;
    http_client c;
    http_resp r;
    start_tls(&f, &t, false);
    client_connect(&c, f.port);
    client_sends(&c, "GET / HTTP/1.1\r\n\r\n");
    CHECK(client_read_eof(&c));
    client_close(&c);
    client_connect_tls(&c, f.port, NULL, NULL);
    client_sends(&c, "NOT HTTP\r\n\r\n");
    CHECK(client_read_response(&c, &r));
    CHECK_INT_EQ(r.status, 400);
    resp_dispose(&r);
    client_close(&c);
    fixture_stop(&f);
}

TEST(http_tls_shutdown_with_open_stream)
{
    http_fixture f;
    tls_setup t;
    http_client c;
    start_tls(&f, &t, false);
    client_connect_tls(&c, f.port, NULL, NULL);
    client_sends(&c, "GET /hold HTTP/1.1\r\n\r\n");
    CHECK(client_read_until(&c, "tick\n"));
    fixture_stop(&f);
    CHECK_INT_EQ(closed_calls, 1);
    CHECK(client_read_eof(&c)); /* close_notify after the last chunk */
    CHECK(c.carry.len >= 5 && strcmp(c.carry.ptr + c.carry.len - 5, "0\r\n\r\n") == 0);
    client_close(&c);
}

TEST(http_tls_config_errors)
{
    uv_loop_t loop;
    kapi_http_server *srv = (kapi_http_server *)1;
    kapi_http_config cfg = fixture_config(handler);
    kapi_error *err;
    char path[512];
    uv_loop_init(&loop);
    snprintf(path, sizeof(path), "%s/missing.pem", test_tmpdir());
    cfg.cert_file = cfg.key_file = path;
    err = kapi_http_server_new(&srv, &loop, &cfg);
    CHECK(err != NULL && srv == NULL);
    CHECK(strstr(err->message, "missing.pem") != NULL);
    kapi_error_free(err);
    cfg = fixture_config(handler);
    cfg.bind_address = "not-an-address";
    err = kapi_http_server_new(&srv, &loop, &cfg);
    CHECK(err != NULL && srv == NULL);
    kapi_error_free(err);
    CHECK_INT_EQ(uv_loop_close(&loop), 0);
}

/* A handshake in one TLS version (TLS1_2_VERSION or TLS1_3_VERSION) offering only the
 * suites listed (NULL: OpenSSL's default list); the suite agreed on, or NULL if refused. */
static const char *handshake(int port, int version, const char *suites)
{
    http_client c;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl;
    const char *agreed = NULL;
    client_connect(&c, port);
    SSL_CTX_set_min_proto_version(ctx, version);
    SSL_CTX_set_max_proto_version(ctx, version);
    if (suites && version == TLS1_3_VERSION)
        CHECK(SSL_CTX_set_ciphersuites(ctx, suites) == 1);
    else if (suites)
        CHECK(SSL_CTX_set_cipher_list(ctx, suites) == 1);
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, c.fd);
    if (SSL_connect(ssl) == 1)
        agreed = SSL_CIPHER_get_name(SSL_get_current_cipher(ssl));
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    client_close(&c);
    return agreed;
}

static const char *tls12_handshake(int port, const char *ciphers)
{
    return handshake(port, TLS1_2_VERSION, ciphers);
}

static const char *tls13_handshake(int port, const char *suites)
{
    return handshake(port, TLS1_3_VERSION, suites);
}

/* TLS 1.2 offers Go's suites, forward-secret AEADs: never CBC, never RSA key exchange. */
TEST(http_tls12_cipher_suites)
{
    http_fixture f;
    tls_setup t;
    start_tls(&f, &t, false);
    CHECK(tls12_handshake(f.port, "ECDHE-ECDSA-AES128-SHA") == NULL);
    CHECK(tls12_handshake(f.port, "ECDHE-ECDSA-AES256-SHA384") == NULL);
    CHECK(tls12_handshake(f.port, "AES128-GCM-SHA256") == NULL);
    CHECK_STR_EQ(tls12_handshake(f.port, "ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-GCM-SHA384"),
                 "ECDHE-ECDSA-AES256-GCM-SHA384");
    CHECK_STR_EQ(tls12_handshake(f.port, "ECDHE-ECDSA-CHACHA20-POLY1305"),
                 "ECDHE-ECDSA-CHACHA20-POLY1305");
    /* Both offered: AES-GCM first, as Go prefers it (our order, not the client's)... */
    CHECK_STR_EQ(
        tls12_handshake(f.port, "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256"),
        "ECDHE-ECDSA-AES128-GCM-SHA256");
    /* ...unless the client puts ChaCha20 first (no AES hardware). */
    CHECK_STR_EQ(
        tls12_handshake(f.port, "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256"),
        "ECDHE-ECDSA-CHACHA20-POLY1305");
    fixture_stop(&f);
}

/* TLS 1.3 agrees on what kube-apiserver (Go) agrees on: AES-128-GCM whatever the client's
 * order, ChaCha20 for a client that puts it first, AES-256 when it is all there is. */
TEST(http_tls13_cipher_suites)
{
    http_fixture f;
    tls_setup t;
    start_tls(&f, &t, false);
    CHECK_STR_EQ(tls13_handshake(f.port, NULL), "TLS_AES_128_GCM_SHA256");
    CHECK_STR_EQ(tls13_handshake(f.port, "TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256"),
                 "TLS_AES_128_GCM_SHA256");
    CHECK_STR_EQ(tls13_handshake(f.port, "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256"),
                 "TLS_CHACHA20_POLY1305_SHA256");
    CHECK_STR_EQ(tls13_handshake(f.port, "TLS_AES_256_GCM_SHA384"), "TLS_AES_256_GCM_SHA384");
    fixture_stop(&f);
}
