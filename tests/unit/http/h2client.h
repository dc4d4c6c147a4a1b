/*
 * h2client: a small blocking HTTP/2 client for the tests of src/http, nghttp2's client
 * session over the harness's TLS client (ALPN "h2"). Requests are opened at once and
 * answered in any order; the test pumps the connection until the answers it waits for
 * are in. A stream can be held (its window never reopened) to play a reader that stops.
 */
#ifndef KAPI_TEST_HTTP_H2CLIENT_H
#define KAPI_TEST_HTTP_H2CLIENT_H

#include <nghttp2/nghttp2.h>

#include "harness.h"

#define H2C_MAX_STREAMS 256

typedef struct h2c_stream {
    int32_t id;
    int status;
    kapi_buf head; /* "name: value\n" for each response header */
    kapi_buf body;
    bool done;  /* END_STREAM received */
    bool reset; /* closed by RST_STREAM (reset_code) */
    uint32_t reset_code;
    bool hold; /* received DATA is not acknowledged: its window closes */
    const char *req_body;
    size_t req_len, req_off;
} h2c_stream;

typedef struct h2_client {
    http_client c;
    nghttp2_session *session;
    h2c_stream streams[H2C_MAX_STREAMS];
    int n;
    bool goaway;
    uint32_t goaway_code;
    uint32_t max_streams; /* the server's SETTINGS_MAX_CONCURRENT_STREAMS */
    bool eof;
} h2_client;

/* Connects with TLS, checks that the server chose h2, exchanges SETTINGS. */
void h2c_connect(h2_client *h, int port);
/* Opens a stream: method, path, extra headers (name, value pairs, NULL-ended) and a
 * body (NULL: none). Returns its index in streams. */
int h2c_request(h2_client *h, const char *method, const char *path, const char *const *headers,
                const char *body, size_t body_len);
/* Sends what the session has queued and reads once (waiting up to 5 s); false on EOF. */
bool h2c_pump(h2_client *h);
/* Pumps until stream i is done or reset; false if the connection ended first. */
bool h2c_wait(h2_client *h, int i);
void h2c_close(h2_client *h);

#endif
