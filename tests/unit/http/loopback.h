/*
 * loopback: drives the http layer's exchanges without a socket, as h2o's tests drive its
 * handlers: a server that accepts nothing and one loopback conn on it (http_int.h); the
 * test feeds request bytes, runs the loop on its own thread (the handler still runs on
 * the real worker pool) and reads the bytes the conn wrote, exactly as a peer would.
 */
#ifndef KAPI_TEST_HTTP_LOOPBACK_H
#define KAPI_TEST_HTTP_LOOPBACK_H

#include "http/http_int.h"

typedef struct loopback {
    uv_loop_t loop;
    uv_timer_t tick; /* wakes the loop while a test waits */
    kapi_http_server *srv;
    kapi_conn *conn; /* NULL once it is freed */
    kapi_buf out;    /* everything the conn wrote */
    bool done;
} loopback;

/* Starts a loopback server with cfg (its port and TLS files are ignored) and one conn. */
void loopback_start(loopback *lb, const kapi_http_config *cfg);
/* Gives the conn request bytes (the conn must still be open). */
void loopback_send(loopback *lb, const char *bytes);
/* The peer closes its side. */
void loopback_eof(loopback *lb);
/* Runs the loop until out holds needle at least n times, or 5 s pass; true if it does. */
bool loopback_wait_for(loopback *lb, const char *needle, int n);
/* Runs the loop until the conn is freed, or 5 s pass; true if it was. */
bool loopback_wait_closed(loopback *lb);
/* Shuts the server down, runs the loop until it is done and frees everything. */
void loopback_stop(loopback *lb);

#endif
