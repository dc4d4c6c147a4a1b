/*
 * http: the HTTPS (and, for tests, plain HTTP) server. Knows nothing of Kubernetes.
 *
 * Threads (DESIGN.md invariant 7): sockets, TLS and HTTP/1.1 and HTTP/2 framing run on
 * the libuv loop thread. Each complete request is handed to a worker pool, where the handler runs
 * and may block. The handler answers through kapi_http_respond (one complete response)
 * or kapi_http_stream_start (a chunked response it keeps open, e.g. a watch); both may be
 * called from any thread and hand the bytes back to the loop thread to write.
 *
 * Ownership: the kapi_http_request belongs to the http layer; the handler may read it
 * until it has called kapi_http_respond or kapi_http_stream_start, and not after. Body
 * chunks passed to the response stay the caller's until their release callback runs
 * (on the loop thread, once written or dropped), so shared, refcounted object bytes are
 * written without a copy.
 *
 * An HTTP/1.1 connection serves its requests in order (keep-alive; a pipelined request
 * waits for the answer before it). Over TLS a client that offers "h2" in ALPN speaks
 * HTTP/2: its requests are streams of one connection, served at once and answered in
 * any order, each under the rules below on its own (at most http2_max_streams at a
 * time; a streamed answer waits for its stream's flow-control window, so a watcher that
 * does not read is dropped alone). A request body over max_body is not read into memory:
 * the handler gets the request with body_too_large set and an empty body, answers it,
 * and the connection (HTTP/2: the stream) is closed after the answer.
 *
 * Limits that protect the server from its clients (Go's net/http server as kube-apiserver
 * configures it):
 *   - the request line and headers: at most 1 MiB + 4 KiB of bytes (Go's
 *     DefaultMaxHeaderBytes plus its slack), any number of headers; past it 431;
 *   - a Transfer-Encoding other than one "chunked" (HTTP/1.1): 501, as Go answers;
 *   - a new connection sends its first request's first byte, and every request its
 *     request line and headers from its first byte, within header_timeout_ms (kube's
 *     ReadHeaderTimeout, 32 s); a kept-alive connection may wait idle_timeout_ms (90 s)
 *     for its next request; past either the connection is closed without an answer;
 *   - the body must have arrived by the request's deadline (below; a long-running
 *     request's by request_timeout_ms after its headers): past it the timeout answer is
 *     written and the connection closed.
 *
 * Admission (kube-apiserver's max-in-flight and request-deadline filters, in HTTP terms):
 * cfg.classify runs on the loop thread for each request once its headers are parsed and
 * gives its class and deadline. A READ or MUTATE request holds one of its class's
 * max_inflight slots from the moment it is complete (queued for a worker) until its
 * answer has been written or, for a streamed answer, the stream has ended or the
 * connection closed; a complete request that finds its class full, or the worker queue
 * at max_queued, is answered cfg.busy at once (the handler never sees it). If a counted
 * request's deadline passes before the handler has answered, cfg.timeout is written, the
 * connection (HTTP/2: the stream) closes after it, and the handler's own answer, whenever it comes,
 * is dropped (the request stays valid for the handler until then, and keeps its slot); a streamed
 * answer still open at the deadline is cut off by closing the connection (HTTP/2:
 * resetting its stream). LONG_RUNNING
 * requests (watches) hold no slot and have no deadline.
 */
#ifndef KAPI_HTTP_H
#define KAPI_HTTP_H

#include <uv.h>

#include "base/status.h"

typedef struct kapi_http_server kapi_http_server;
typedef struct kapi_http_stream kapi_http_stream;

/* A header: names of request headers are lower-cased by the http layer. */
typedef struct kapi_http_header {
    const char *name;
    const char *value;
} kapi_http_header;

typedef struct kapi_http_request {
    const char *method; /* "GET", "POST", ... */
    kapi_str path;      /* raw (still percent-encoded) path, before any '?' */
    kapi_str query;     /* raw query string after '?', without it; empty if none */
    const kapi_http_header *headers;
    size_t nheaders;
    const char *body; /* NUL-terminated for convenience; body_len excludes the NUL */
    size_t body_len;
    bool body_too_large;
    const char *remote_addr;        /* "127.0.0.1:54321" */
    void *peer_certificate;         /* X509 * verified against the client CA, or NULL; borrowed */
    bool peer_certificate_rejected; /* a client certificate came and did not verify */
} kapi_http_request;

/* The value of a request header (case-insensitive name), or NULL. */
const char *kapi_http_header_get(const kapi_http_request *req, const char *name);

/* A piece of a response body. ptr stays valid until release(owner) is called; release
 * may be NULL for bytes that outlive the server (string literals). */
typedef struct kapi_http_chunk {
    const char *ptr;
    size_t len;
    void (*release)(void *owner);
    void *owner;
} kapi_http_chunk;

/* A chunk that owns a heap copy of n bytes (freed after writing). */
kapi_http_chunk kapi_http_chunk_copy(const void *p, size_t n);
/* A chunk that takes ownership of heap memory p (freed with free() after writing). */
kapi_http_chunk kapi_http_chunk_take(char *p, size_t n);

/* Runs on a worker thread; must end with exactly one kapi_http_respond or
 * kapi_http_stream_start for req. */
typedef void (*kapi_http_handler)(kapi_http_request *req, void *ctx);

/* Answers req with a complete response (Content-Length set by the http layer; headers
 * must not contain Content-Length, Transfer-Encoding or Connection). Ownership of
 * every chunk passes to the http layer. req must not be touched afterwards. */
void kapi_http_respond(kapi_http_request *req, int status, const kapi_http_header *headers,
                       size_t nheaders, const kapi_http_chunk *body, size_t nchunks);

/* Starts a chunked response that stays open; the stream may queue at most max_queued
 * bytes not yet taken by the connection, past which it is ended. The connection takes
 * queued chunks as its socket drains (one bounded batch ahead of it),
 * so what a client has not read stays as the producer's chunks, never as copies. req
 * must not be touched afterwards. */
kapi_http_stream *kapi_http_stream_start(kapi_http_request *req, int status,
                                         const kapi_http_header *headers, size_t nheaders,
                                         size_t max_queued);
/* Queues one chunk (any thread). Returns false, and releases the chunk, if the stream is
 * closed (client gone, server shutting down) or would exceed its byte limit; after a
 * false the caller should kapi_http_stream_end it. */
bool kapi_http_stream_write(kapi_http_stream *s, kapi_http_chunk chunk);
/* Queues the n chunks as one HTTP chunk, with kapi_http_stream_write's rules (the chunks
 * are released on failure). The pieces of one event or one part of an answer go out as
 * one chunk of the response. */
bool kapi_http_stream_writev(kapi_http_stream *s, const kapi_http_chunk *c, size_t n);
/* The bytes queued on s and not yet taken by the connection (any thread). */
size_t kapi_http_stream_queued(kapi_http_stream *s);
/* Back-pressure for a producer (worker thread): waits until at most low bytes are queued.
 * False when the stream is closed, or when the client has not taken enough within
 * timeout_ms: the stream is then closed and the client dropped, so that a client that
 * stops reading cannot hold a worker. After a false the caller ends the stream. */
bool kapi_http_stream_wait(kapi_http_stream *s, size_t low, int64_t timeout_ms);
/* Registers cb(ctx), called once from the loop thread when the client goes away or the
 * server shuts down, so that the producer can stop. Set it right after starting. */
void kapi_http_stream_on_close(kapi_http_stream *s, void (*cb)(void *ctx), void *ctx);
/* Ends the response (the terminating zero-length chunk) and gives up the handle. Every
 * stream is ended exactly once by its producer, closed or not. */
void kapi_http_stream_end(kapi_http_stream *s);
/* Ends the response for a client that stopped reading: after the HTTP chunk being
 * written (the chunks not yet begun are dropped: a watcher resumes from the last event it
 * read), then closes the connection once the end is written (or after a drain deadline). */
void kapi_http_stream_end_close(kapi_http_stream *s);

/* What cfg.classify says of a request. */
typedef enum kapi_http_class {
    KAPI_HTTP_READ,         /* counted against max_inflight[KAPI_HTTP_READ] */
    KAPI_HTTP_MUTATE,       /* counted against max_inflight[KAPI_HTTP_MUTATE] */
    KAPI_HTTP_LONG_RUNNING, /* not counted, no deadline */
} kapi_http_class;

typedef struct kapi_http_admission {
    kapi_http_class cls;
    unsigned timeout_ms; /* the deadline, from the arrival of the headers (not LONG_RUNNING) */
} kapi_http_admission;

/* Loop thread, once req's headers are parsed (no body yet); must be quick and not block.
 * ctx is the handler's. */
typedef kapi_http_admission (*kapi_http_classify)(const kapi_http_request *req, void *ctx);

/* An answer the http layer writes itself (cfg.busy, cfg.timeout): constant bytes that
 * outlive the server. */
typedef struct kapi_http_answer {
    int status;
    const kapi_http_header *headers;
    size_t nheaders;
    const char *body;
} kapi_http_answer;

/* Defaults of the limits and deadlines (a 0 in the config takes them). */
#define KAPI_HTTP_MAX_QUEUED 4096
#define KAPI_HTTP_HEADER_TIMEOUT_MS 32000
#define KAPI_HTTP_IDLE_TIMEOUT_MS 90000
#define KAPI_HTTP_REQUEST_TIMEOUT_MS 60000
#define KAPI_HTTP_HTTP2_MAX_STREAMS 1000

typedef struct kapi_http_config {
    const char *bind_address; /* "127.0.0.1" */
    int port;                 /* 0 picks a free port: see kapi_http_server_port */
    const char *cert_file;    /* PEM; NULL with key_file NULL serves plain HTTP */
    const char *key_file;
    const char *client_ca_file; /* optional: verify client certificates against it */
    size_t max_body;            /* bytes; larger bodies set body_too_large */
    int workers;                /* worker threads */
    kapi_http_handler handler;
    void *handler_ctx;
    /* Admission (see the top of this file). classify NULL: every request is READ with no
     * deadline. max_inflight[cls] 0: no limit for cls. */
    kapi_http_classify classify;
    unsigned max_inflight[2];
    unsigned max_queued;         /* complete requests waiting for a worker, of any class */
    unsigned header_timeout_ms;  /* request line and headers, from their first byte */
    unsigned idle_timeout_ms;    /* between requests of a kept-alive connection */
    unsigned request_timeout_ms; /* the body of a long-running request */
    unsigned http2_max_streams;  /* concurrent streams of one HTTP/2 connection; 0: 1000 */
    kapi_http_answer busy;       /* status 0: a plain-text 429 */
    /* Told (on the loop thread, with handler_ctx) of a request the layer answers itself,
     * before that answer is written: busy (429), past its deadline (504, while the handler
     * may still run it), too large: the handler's counting and log. NULL: none. */
    void (*refused)(const kapi_http_request *req, int status, void *ctx);
    kapi_http_answer timeout; /* status 0: a plain-text 504 */
} kapi_http_config;

/* Binds and starts listening on loop (the loop is run by the caller). */
kapi_error *kapi_http_server_new(kapi_http_server **out, uv_loop_t *loop,
                                 const kapi_http_config *cfg);
/* The port actually bound. */
int kapi_http_server_port(const kapi_http_server *srv);
/* Loop thread: reads the certificate and key files again (SIGHUP). Handshakes from now on
 * present the new pair; open connections keep theirs. On failure (an error naming the
 * file) the server keeps the pair it had. */
kapi_error *kapi_http_server_reload_tls(kapi_http_server *srv);
/* Loop thread: stops accepting, lets in-flight requests finish, closes open streams
 * (their on_close callbacks run), closes idle connections, then calls done(ctx) once
 * every connection and worker is gone. */
void kapi_http_server_shutdown(kapi_http_server *srv, void (*done)(void *ctx), void *ctx);
/* After shutdown's done callback. */
void kapi_http_server_free(kapi_http_server *srv);

#endif
