/*
 * harness: a kapi_http server on 127.0.0.1 (port 0) running its own uv loop in a thread,
 * and a small blocking HTTP/1.1 client (plain socket or OpenSSL) to talk to it.
 */
#ifndef KAPI_TEST_HTTP_HARNESS_H
#define KAPI_TEST_HTTP_HARNESS_H

#include <openssl/ssl.h>
#include <pthread.h>

#include "http/http.h"

typedef struct http_fixture {
    uv_loop_t loop;
    uv_async_t stop;
    kapi_http_server *srv;
    pthread_t thread;
    int port;
    int done_calls;
} http_fixture;

/* A default config: plain HTTP, port 0, 4 workers, max_body 1024, handler h. */
kapi_http_config fixture_config(kapi_http_handler h);
/* Starts the server and its loop thread (fails the test on error). */
void fixture_start(http_fixture *f, const kapi_http_config *cfg);
/* Shuts the server down from its loop, joins the thread, frees everything. */
void fixture_stop(http_fixture *f);

typedef struct http_client {
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
    kapi_buf carry; /* received, not yet consumed */
} http_client;

typedef struct http_resp {
    int status;
    kapi_buf head; /* status line and headers */
    kapi_buf body; /* de-chunked */
} http_resp;

void client_connect(http_client *c, int port);
/* TLS offering HTTP/1.1 only: connects and handshakes; cert/key may be NULL (no client
 * certificate). */
void client_connect_tls(http_client *c, int port, const char *cert, const char *key);
/* The same, offering the ALPN protocols alpn (wire format). */
void client_connect_alpn(http_client *c, int port, const char *cert, const char *key,
                         const unsigned char *alpn, unsigned alpn_len);
void client_send(http_client *c, const char *s, size_t n);
void client_sends(http_client *c, const char *s);
void client_close(http_client *c);
/* Reads one response; false on EOF or error before it was complete. */
bool client_read_response(http_client *c, http_resp *r);
/* Reads until needle has been received (it stays in carry); false on EOF first. */
bool client_read_until(http_client *c, const char *needle);
/* Reads up to EOF; true if EOF (not a timeout) ended it. */
bool client_read_eof(http_client *c);
void resp_dispose(http_resp *r);
/* The value of a response header, in thread-local storage (case-insensitive name), or NULL. */
const char *resp_header(const http_resp *r, const char *name);

/* Writes a throwaway self-signed (CA:TRUE) EC certificate and key into dir. */
void make_cert(const char *dir, const char *cn, char *cert_out, char *key_out);

#endif
