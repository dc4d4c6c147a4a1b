/*
 * http_int: the internals shared by the files of src/http (not for other modules).
 *
 * Files, one responsibility each:
 *   server.c   listen, accept, the loop-thread message queue, shutdown
 *   conn.c     one connection: reads, writes, graceful and hard close
 *   tls.c      OpenSSL context and per-connection memory-BIO TLS
 *   parse.c    HTTP/1.1 request parsing into kapi_http_req, dispatch to the pool
 *   pool.c     the worker threads that run the handler
 *   respond.c  complete responses, chunks, reason phrases, header lookup
 *   stream.c   chunked streaming responses
 *
 * Threads: everything named here runs on the loop thread except the pool workers, the
 * message queue (kapi_http__post, any thread) and the stream fields guarded by its mutex.
 *
 * Lifetimes: a kapi_conn lives until its handles are closed and no request of it is with
 * the handler (state HANDLING keeps it alive, as "dead", until the answer arrives). The
 * server lives until every conn is freed and every worker has exited. A stream is
 * refcounted: one reference for the producer (dropped by kapi_http_stream_end), one for
 * the conn while attached, one per queued message or write that names it.
 */
#ifndef KAPI_HTTP_INT_H
#define KAPI_HTTP_INT_H

#include <http_parser.h>
#include <openssl/ssl.h>
#include <pthread.h>

#include "http/http.h"

/* Limits that protect the server from its clients (documented in http.h's terms). */
/* Request line + headers, raw bytes: Go's DefaultMaxHeaderBytes plus the 4096 bytes of
 * slack its server allows; over it: 431. */
#define KAPI_HTTP__MAX_HEADER_BYTES ((1u << 20) + 4096)
#define KAPI_HTTP__INBUF_HIGH (1u << 20) /* unparsed input held before reads pause */
#define KAPI_HTTP__WRITE_HIGH (1u << 20) /* unwritten output before parsing pauses */
#define KAPI_HTTP__LINGER_MS 2000        /* after a closing answer: wait this long for the peer */
#define KAPI_HTTP__READ_BUF (64u * 1024)
/* The most plaintext a conn takes from its queue into one write (TLS records are made
 * from it as the socket drains, never ahead): what a client that stops reading holds. */
#define KAPI_HTTP__OUT_BATCH (64u * 1024)
/* A conn closing with output its client does not take is closed after this long. */
#define KAPI_HTTP__DRAIN_MS 30000

typedef struct kapi_conn kapi_conn;
typedef struct kapi_http_req kapi_http_req;

/* A request being parsed, then handled; its memory is one arena (DESIGN.md invariant 6). */
struct kapi_http_req {
    kapi_http_request pub; /* first: the handler's pointer is this struct's */
    kapi_arena arena;
    kapi_conn *conn;
    kapi_buf url, field, value, body;
    kapi_http_header *headers;
    size_t nheaders, headers_cap;
    bool in_value;
    bool close_after;    /* the connection closes after this request's answer */
    bool keep_alive_10;  /* HTTP/1.0 with keep-alive: say so in the answer */
    kapi_http_req *next; /* pool queue */
};

/* The worker pool: a mutex+condvar queue of requests, and the admission counts. */
typedef struct kapi_http_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    kapi_http_req *head, *tail;
    unsigned queued;      /* requests in the queue (mu) */
    unsigned inflight[2]; /* slots held per counted class (loop thread only) */
    pthread_t *threads;
    int nthreads; /* started */
    int alive;    /* not yet exited */
    bool stop;
    bool notify; /* exiting workers wake the loop through srv->async */
    kapi_http_server *srv;
} kapi_http_pool;

/* Starts n (at least 1) workers running srv's handler. */
kapi_error *kapi_http__pool_init(kapi_http_pool *p, kapi_http_server *srv, int n);
/* Loop thread: admits a complete request of c (its class in c->cls) and queues it for the
 * handler; false, and nothing queued, if its class or the queue is full. */
bool kapi_http__pool_admit(kapi_http_pool *p, kapi_conn *c, kapi_http_req *req);
/* Loop thread: gives back the slot c's request holds, if any. */
void kapi_http__pool_release(kapi_http_pool *p, kapi_conn *c);
/* Workers finish what is queued, then exit, each waking the loop if notify. */
void kapi_http__pool_stop(kapi_http_pool *p, bool notify);
/* True once stopped and every worker has exited (they can be joined at once). */
bool kapi_http__pool_exited(kapi_http_pool *p);
/* Stops (if needed) and joins the workers. */
void kapi_http__pool_dispose(kapi_http_pool *p);
/* True on a worker thread of srv. */
bool kapi_http__on_worker(const kapi_http_server *srv);

/* Messages from any thread to the loop thread. */
typedef enum kapi_http_msg_kind {
    KAPI_HTTP__MSG_RESPONSE,     /* conn, req, head, chunks */
    KAPI_HTTP__MSG_STREAM_START, /* conn, req, head, stream */
    KAPI_HTTP__MSG_STREAM_FLUSH, /* stream: write its pending chunks */
    KAPI_HTTP__MSG_STREAM_END,   /* stream: the producer ended it */
    KAPI_HTTP__MSG_STREAM_ABORT, /* stream: over its byte limit, drop the client */
    KAPI_HTTP__MSG_STREAM_NOTIFY /* stream: run on_close registered after closing */
} kapi_http_msg_kind;

typedef struct kapi_http_msg {
    kapi_http_msg_kind kind;
    struct kapi_http_msg *next;
    kapi_http_req *req;
    kapi_buf head; /* status line and headers, without the final CRLF */
    int status;
    kapi_http_chunk *chunks;
    size_t nchunks;
    size_t body_len;
    kapi_http_stream *stream; /* holds a reference */
} kapi_http_msg;

/* A piece of output (a conn's queue, a stream's pending chunks): bytes not yet taken into
 * a write, released once taken. The pieces of a streamed answer are framed as HTTP/1.1
 * chunks: the first piece of a chunk carries the chunk's size (frame), its last ends it. */
typedef struct kapi_http_out {
    kapi_http_chunk chunk;
    size_t off;     /* bytes already taken */
    size_t frame;   /* >0: the size line of an HTTP chunk of frame bytes goes first */
    bool frame_end; /* the CRLF that ends an HTTP chunk goes after */
} kapi_http_out;

typedef enum kapi_conn_state {
    KAPI_CONN_READING,  /* parsing requests */
    KAPI_CONN_HANDLING, /* a request is with the handler */
    KAPI_CONN_STREAMING /* a streamed answer is open */
} kapi_conn_state;

/* The protocol the connection speaks (ALPN could pick h2 here later). */
typedef enum kapi_conn_proto { KAPI_CONN_HTTP1 } kapi_conn_proto;

struct kapi_conn {
    uv_tcp_t tcp;
    uv_timer_t timer; /* the current deadline (kapi_http__conn_arm), linger while finishing */
    uv_shutdown_t shutdown_req;
    kapi_http_server *srv;
    kapi_conn *prev, *next;
    char remote_addr[64];
    kapi_conn_proto proto;
    SSL *ssl; /* NULL for plain HTTP */
    BIO *rbio, *wbio;
    http_parser parser;
    kapi_http_req *req; /* being parsed */
    kapi_buf in;        /* plaintext not yet parsed */
    kapi_conn_state state;
    int error_status;  /* set by a parser callback: the status of the error answer */
    bool dispatch_now; /* a callback paused the parser to hand the request over */
    bool discard;      /* ignore further input (a closing answer is coming) */
    bool unread;       /* input was dropped: linger before closing so the peer gets no RST */
    bool reading;
    bool peer_eof;
    bool finishing; /* graceful close under way */
    bool closing;   /* handles being closed */
    bool dead;      /* closed while HANDLING: freed when the answer arrives */
    int open_handles;
    kapi_http_stream *stream;
    /* The request being read or handled (admission, see http.h). */
    kapi_http_class cls;
    uint64_t deadline;  /* loop time (ms) its answer is due; 0: none */
    bool counted;       /* holds a max_inflight slot of cls */
    bool answered;      /* the http layer answered it (timeout): the handler's answer is dropped */
    kapi_http_out *out; /* the output queue: out[out_head .. out_n) */
    size_t out_head, out_n, out_cap;
    size_t out_bytes;  /* bytes in the queue not yet taken */
    bool writing;      /* a batch from the queue is being written (one at a time) */
    bool shut_pending; /* finishing: shut the write side once the queue is empty */
};

struct kapi_http_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_async_t async;
    kapi_http_config cfg;
    SSL_CTX *ssl_ctx;
    kapi_http_pool pool;
    int port;
    char read_buf[KAPI_HTTP__READ_BUF]; /* libuv reads land here (one loop thread) */
    pthread_mutex_t mu;                 /* guards the message queue */
    kapi_http_msg *head, *tail;
    kapi_conn *conns;
    size_t nconns;
    bool shutting_down, listener_closed, async_closing;
    void (*done)(void *ctx);
    void *done_ctx;
};

/* server.c */
/* Any thread: queues m for the loop thread and wakes it. */
void kapi_http__post(kapi_http_server *srv, kapi_http_msg *m);
/* Loop thread: a conn was freed or a worker exited; finishes shutdown when all are gone. */
void kapi_http__maybe_finish(kapi_http_server *srv);

/* conn.c */
/* Accepts one connection from the listener and starts reading it. */
void kapi_http__conn_accept(kapi_http_server *srv);
/* Queues bufs for writing and starts writing; the chunks (an owned array) and owned are
 * released once their bytes are taken or dropped. */
void kapi_http__conn_write(kapi_conn *c, const uv_buf_t *bufs, size_t nbufs,
                           kapi_http_chunk *chunks, size_t nchunks, char *owned);
/* Queues one piece (off 0); its chunk is released once taken or dropped. */
void kapi_http__conn_queue(kapi_conn *c, kapi_http_out piece);
/* Writes from the queue, then from the attached stream, one batch at a time: the next
 * batch is taken (and encrypted) only when the last one has been written. */
void kapi_http__conn_flush(kapi_conn *c);
/* Output not yet written: queued bytes plus libuv's write queue. */
size_t kapi_http__conn_unsent(kapi_conn *c);
/* Writes bytes already encoded (TLS records); data is heap memory, freed after. */
void kapi_http__conn_send_raw(kapi_conn *c, char *data, size_t len);
/* Plaintext input from the socket or TLS. */
void kapi_http__conn_input(kapi_conn *c, const char *data, size_t len);
/* The peer closed its side (TCP FIN or TLS close_notify). */
void kapi_http__conn_eof(kapi_conn *c);
/* Writes what is queued, shuts the write side down, waits briefly for the peer, closes. */
void kapi_http__conn_finish(kapi_conn *c);
/* Closes at once; pending writes are dropped. */
void kapi_http__conn_close(kapi_conn *c);
/* The current request is answered: serve the next one or close. */
void kapi_http__conn_request_done(kapi_conn *c, bool close_after);
/* Loop thread: the conn's deadline timer fires at loop time at (ms; 0 stops it). What it
 * does depends on the phase: waiting for a request or its headers, it closes; waiting for
 * a body or the handler, it writes cfg.timeout and closes; streaming, it cuts off. */
void kapi_http__conn_arm(kapi_conn *c, uint64_t at);
/* The loop's current time in ms (the clock of kapi_http__conn_arm). */
uint64_t kapi_http__conn_now(const kapi_conn *c);
/* Parses buffered input if the conn is ready for another request. */
void kapi_http__conn_resume(kapi_conn *c);
/* Writes Go's plain-text answer to a request it cannot read (400, 431, 501) and closes. */
void kapi_http__conn_error(kapi_conn *c, int status);

/* tls.c */
/* The server context: cert/key, TLS 1.2+, ALPN, optional client CA (requested only). */
kapi_error *kapi_http__tls_ctx_new(SSL_CTX **out, const kapi_http_config *cfg);
/* Gives c its SSL object over two memory BIOs, in accept state. */
void kapi_http__tls_conn_init(kapi_conn *c, SSL_CTX *ctx);
/* Ciphertext from the socket: handshake, decrypt, feed kapi_http__conn_input. */
void kapi_http__tls_input(kapi_conn *c, const char *data, size_t len);
/* Encrypts p[0..n) (n at most one record's plaintext) and appends the ciphertext to out;
 * false when the connection is broken. */
bool kapi_http__tls_encrypt(kapi_conn *c, const char *p, size_t n, kapi_buf *out);
/* Queues a close_notify alert. */
void kapi_http__tls_close_notify(kapi_conn *c);
/* The verified client certificate, or NULL. */
void *kapi_http__tls_peer_cert(kapi_conn *c);

/* parse.c */
/* Readies c's parser for requests. */
void kapi_http__parse_init(kapi_conn *c);
/* Parses as much of data as one request needs; returns the bytes consumed. */
size_t kapi_http__parse(kapi_conn *c, const char *data, size_t len);
/* Frees a request and its arena (NULL is fine). */
void kapi_http__req_free(kapi_http_req *req);

/* respond.c */
/* A message carrying the status line and the handler's headers (the reserved and unsafe
 * ones dropped). */
kapi_http_msg *kapi_http__msg_new(kapi_http_msg_kind kind, kapi_http_req *req, int status,
                                  const kapi_http_header *headers, size_t nheaders);
/* The standard reason phrase of an HTTP status ("Unknown" if none). */
const char *kapi_http__reason(int status);
/* Frees a message with whatever it still owns (request, chunks, stream reference). */
void kapi_http__msg_free(kapi_http_msg *m);
/* Runs every chunk's release and frees the (heap) array. */
void kapi_http__chunks_release(kapi_http_chunk *chunks, size_t n);
/* Loop thread: writes a complete response to its conn (or drops it if the conn is gone). */
void kapi_http__on_response(kapi_http_msg *m);
/* Writes a response head: the worker-built part, Connection, and the blank line. */
void kapi_http__write_head(kapi_conn *c, kapi_buf *head, const char *connection,
                           kapi_http_chunk *chunks, size_t nchunks);
/* The Connection header value an answer to req needs (NULL: none). */
const char *kapi_http__connection(const kapi_http_req *req, bool close_after);

/* stream.c */
/* Loop thread: handles (and frees) a START, FLUSH, END, ABORT or NOTIFY message. */
void kapi_http__on_stream_msg(kapi_http_msg *m);
/* The conn is going away (graceful: write the terminating chunk first); runs on_close. */
void kapi_http__stream_detach(kapi_conn *c, bool graceful);
/* Drops a reference; the last one frees the stream and any chunks still pending. */
void kapi_http__stream_unref(kapi_http_stream *s);
/* Loop thread: takes the next pieces the producer queued, at most max of them and about
 * max_bytes, into out; returns how many. Their bytes stop counting as queued, which may
 * let a waiting producer go on. */
size_t kapi_http__stream_pull(kapi_http_stream *s, kapi_http_out *out, size_t max,
                              size_t max_bytes);

#endif
