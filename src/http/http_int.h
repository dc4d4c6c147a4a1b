/*
 * http_int: the internals shared by the files of src/http (not for other modules).
 *
 * Files, one responsibility each:
 *   server.c    listen, accept, the loop-thread message queue, shutdown
 *   conn.c      one connection: reads, the output queue, writes, graceful and hard close
 *   tls.c       OpenSSL context and per-connection TLS over the conn's buffers
 *   exchange.c  one request and its answer: admission, dispatch, the layer's own answers
 *   h1.c        HTTP/1.1 (kapi_http__h1): parsing, heads, body framing, keep-alive
 *   h2.c        HTTP/2 (kapi_http__h2, nghttp2): streams, flow control, GOAWAY
 *   pool.c      the worker threads that run the handler
 *   respond.c   complete responses, chunks, reason phrases, header lookup
 *   stream.c    streamed responses
 *
 * Connection and exchange: a kapi_conn is a transport (TCP, maybe TLS, or a loopback in
 * tests) with an output queue; a kapi_http_exchange is one request and its answer on it.
 * The conn's protocol (kapi_http_proto_ops) turns input into exchanges and frames their
 * answers into the conn's queue; respond.c and stream.c speak only to the ops. A conn
 * holds a list of its exchanges: HTTP/1.1 has at most one, HTTP/2 one per open stream.
 *
 * Threads: everything named here runs on the loop thread except the pool workers, the
 * message queue (kapi_http__post, any thread), the stream fields guarded by its mutex and
 * kapi_http_proto_ops.encode_head (any thread).
 *
 * Lifetimes: a kapi_conn lives until its handles are closed and no exchange of it is with
 * the handler (phase HANDLING keeps it alive, as "dead", until the answers arrive). An
 * exchange belongs to its conn, which frees it once its answer is done (or with the
 * conn); messages only name it. A protocol's per-exchange state (an HTTP/2 stream) may
 * outlive its exchange (the answer's bytes wait for the peer's flow-control window) or
 * end before it (the peer reset the stream while the handler runs: the answer is
 * dropped). The server lives until every conn is freed and every
 * worker has exited. A stream is refcounted: one reference for the producer (dropped by
 * kapi_http_stream_end), one for the exchange while attached, one per queued message or
 * write that names it.
 */
#ifndef KAPI_HTTP_INT_H
#define KAPI_HTTP_INT_H

#include <openssl/ssl.h>
#include <pthread.h>
#include <semaphore.h>

#include "base/fiber.h"
#include "http/http.h"
#include "metrics/metrics.h"

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
typedef struct kapi_http_exchange kapi_http_exchange;
typedef struct kapi_http_proto_ops kapi_http_proto_ops;
typedef struct kapi_http_pool kapi_http_pool;

/* Where an exchange is. */
typedef enum kapi_http_phase {
    KAPI_HTTP__READING,   /* its request is being read */
    KAPI_HTTP__HANDLING,  /* the request is with the handler */
    KAPI_HTTP__STREAMING, /* a streamed answer is open */
    KAPI_HTTP__DONE       /* answered or cut off; freed with its conn (h2: its stream) */
} kapi_http_phase;

/* One request and its answer on a conn. The request's memory is one arena (DESIGN.md
 * invariant 6); the handler's pointer is &pub. */
struct kapi_http_exchange {
    kapi_http_request pub; /* first */
    kapi_arena arena;
    kapi_conn *conn;
    const kapi_http_proto_ops *proto;
    kapi_http_phase phase;
    kapi_buf body;
    kapi_http_header *headers; /* in the arena */
    size_t nheaders, headers_cap;
    bool close_after;     /* the connection closes after this answer */
    unsigned proto_flags; /* the protocol's own (h1: an HTTP/1.0 keep-alive) */
    /* Admission (see http.h). */
    kapi_http_class cls;
    uint64_t deadline;        /* loop time (ms) its answer is due; 0: none */
    bool counted;             /* holds a max_inflight slot of cls */
    bool answered;            /* the layer answered it (timeout) or the peer reset its stream (h2):
                               * the handler's answer is dropped */
    kapi_http_stream *stream; /* the streamed answer while attached (holds a reference) */
    kapi_http_exchange *next; /* pool queue */
    kapi_http_exchange *cprev, *cnext; /* the conn's list */
    uint64_t due;         /* h2: loop time (ms) of the deadline of its current phase; 0: none */
    void *proto_exchange; /* the proto's state of it (h2: its stream), NULL if none */
};

/* A piece of output (a conn's queue, a stream's pending chunks): bytes not yet taken into
 * a write, released once taken. In a stream's queue, the pieces one
 * kapi_http_stream_writev queued make a part (part on the first, part_end on the last);
 * the protocol frames a part as one unit (h1: one HTTP chunk) when it moves the pieces to
 * the conn's queue, where a piece carries its framing bytes instead: pre before the
 * chunk's first byte, post after its last. */
typedef struct kapi_http_out {
    kapi_http_chunk chunk;
    size_t off; /* bytes already taken */
    union {
        struct {           /* in a stream's queue */
            size_t part;   /* >0: the first piece of a part of this many bytes */
            bool part_end; /* the last piece of a part */
        };
        struct { /* in a conn's queue */
            char pre[20];
            uint8_t npre;
            uint8_t npost;
            char post[2];
        };
    };
} kapi_http_out;

/* How a connection speaks: what turns its input into exchanges and frames their answers
 * into its output queue. Loop thread, except encode_head. Every exchange an input starts
 * is handed to kapi_http__exchange_headers, then kapi_http__exchange_dispatch; its answer
 * is written as write_head, write_body any number of times, end (a streamed one), or
 * reset; write_* only queue (the caller flushes). */
struct kapi_http_proto_ops {
    const char *name;           /* its ALPN name */
    void (*init)(kapi_conn *c); /* readies c (c->proto_state) */
    void (*dispose)(kapi_conn *c);
    /* Whether input is wanted now (h1: not while an answer is due: pipelined requests
     * wait unparsed). */
    bool (*can_read)(kapi_conn *c);
    /* Parses plaintext input; returns the bytes consumed (all of it on an error, which the
     * proto answers itself and finishes the conn after). */
    size_t (*input)(kapi_conn *c, const char *data, size_t len);
    /* The conn's queue is empty: queue the next output there, about a batch of it (h1:
     * the streamed answer's next pieces; h2: frames). Runs inside a flush: it must not
     * flush, finish or close. */
    void (*produce)(kapi_conn *c);
    /* The conn's deadline (kapi_http__conn_arm) has passed. */
    void (*timeout)(kapi_conn *c);
    /* The peer closed its side. */
    void (*eof)(kapi_conn *c);
    /* The server is shutting down: end open streams, close when idle. */
    void (*shutdown)(kapi_conn *c);
    /* An exchange's answer is done and it was freed (close_after: its answer asked for the
     * connection to close): wait for the next one, or finish. */
    void (*next)(kapi_conn *c, bool close_after);
    /* ex is being freed: drop the proto's references to it. */
    void (*forget)(kapi_http_exchange *ex);
    /* The deadline of ex's current phase is at (0: none). */
    void (*arm)(kapi_http_exchange *ex, uint64_t at);
    /* The layer answered ex itself (kapi_http__exchange_answer): no more of its request
     * is read (h1: the connection finishes). */
    void (*answered)(kapi_http_exchange *ex);
    /* Any thread: encodes a status and the headers kapi_http__header_allowed accepts into
     * head, for write_head. */
    void (*encode_head)(kapi_buf *head, int status, const kapi_http_header *h, size_t n);
    /* Queues the head encoded in head (taken); body_len is the length of the whole body,
     * or KAPI_HTTP__STREAMED. */
    void (*write_head)(kapi_http_exchange *ex, int status, kapi_buf *head, size_t body_len);
    /* Queues pieces of the body (a stream's, with their parts) framed in the conn's queue
     * (h2: in the stream's, framed as its window allows); pieces[] is rewritten in place,
     * the chunks pass to the queue. A piece of no bytes releases its chunk once what was
     * queued before it is taken. */
    void (*write_body)(kapi_http_exchange *ex, kapi_http_out *pieces, size_t n);
    /* Queues the end of a streamed body. */
    void (*end)(kapi_http_exchange *ex);
    /* Abandons ex's answer under way (h1: the connection closes; h2: the stream is
     * reset and ex freed). */
    void (*reset)(kapi_http_exchange *ex);
    /* ex's stream has pieces to take: write them as the conn allows. */
    void (*wake)(kapi_http_exchange *ex);
};

#define KAPI_HTTP__STREAMED SIZE_MAX

/* HTTP/1.1 (h1.c) and HTTP/2 (h2.c). */
extern const kapi_http_proto_ops kapi_http__h1;
extern const kapi_http_proto_ops kapi_http__h2;

/* One worker thread of the pool. */
typedef struct kapi_http_worker {
    kapi_http_pool *pool;
    pthread_t thread;
    sem_t sem;                          /* posted once for each time it is taken off idle */
    struct kapi_http_worker *next_idle; /* the idle stack (pool mu) */
    bool idle;                          /* on the idle stack (pool mu) */
    int64_t busy_since;                 /* when its job began (monotonic ns); 0: none (pool mu) */
    /* Resumed fibers it began (their memory is its heap's), to run before other jobs. */
    kapi_fiber *mine, **mine_tail; /* pool mu */
    /* Its thread: being started (reserved), running (started), or never started (pool mu). */
    enum { KAPI_HTTP__RESERVED, KAPI_HTTP__STARTED, KAPI_HTTP__FAILED } state;
} kapi_http_worker;

/* The worker pool: a queue of exchanges and one of resumed fibers under one mutex, a
 * stack of idle workers each sleeping on its own semaphore (the loop wakes one only when
 * none is on its way to the queue; a woken worker wakes the next for what it leaves
 * queued), and the admission counts. */
struct kapi_http_pool {
    pthread_mutex_t mu;
    kapi_http_exchange *head, *tail;
    unsigned queued; /* exchanges in the queue (mu) */
    /* Resumed fibers whose own worker was busy too long, for any worker (mu). */
    kapi_fiber *resumed, **resumed_tail;
    unsigned fibers;        /* handlers begun and not yet returned (mu) */
    unsigned watching;      /* idle workers asleep for STEAL_NS only, to look again (mu) */
    kapi_http_worker *idle; /* idle workers, the last one idle on top (mu) */
    unsigned waking;        /* workers taken off idle that have not yet looked at the queue (mu) */
    unsigned inflight[2];   /* slots held per counted class (loop thread only) */
    /* The in-flight gauge's series of each counted class, once found (loop thread only). */
    kapi_metric_series *inflight_series[2];
    kapi_http_worker *workers; /* owned, size of them; the first nthreads reserved */
    int size;                  /* the most workers it starts */
    int nthreads;              /* reserved (started, being started, or failed to start) */
    int alive;                 /* not yet exited */
    bool stop;
    bool notify; /* exiting workers wake the loop through srv->async */
    kapi_http_server *srv;
};

/* A pool of up to n (at least 1) workers running srv's handler: a few start now, the
 * others when work finds no idle worker. */
kapi_error *kapi_http__pool_init(kapi_http_pool *p, kapi_http_server *srv, int n);
/* Loop thread: admits a complete exchange (its class in ex->cls) and queues it for the
 * handler; false, and nothing queued, if its class or the queue is full. */
bool kapi_http__pool_admit(kapi_http_pool *p, kapi_http_exchange *ex);
/* Loop thread: gives back the slot ex holds, if any. */
void kapi_http__pool_release(kapi_http_pool *p, kapi_http_exchange *ex);
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
    KAPI_HTTP__MSG_RESPONSE,     /* ex, head, chunks */
    KAPI_HTTP__MSG_STREAM_START, /* ex, head, stream */
    KAPI_HTTP__MSG_STREAM_FLUSH, /* stream: write its pending chunks */
    KAPI_HTTP__MSG_STREAM_END,   /* stream: the producer ended it */
    KAPI_HTTP__MSG_STREAM_ABORT, /* stream: over its byte limit, drop the client */
    KAPI_HTTP__MSG_STREAM_NOTIFY /* stream: run on_close registered after closing */
} kapi_http_msg_kind;

typedef struct kapi_http_msg {
    kapi_http_msg_kind kind;
    struct kapi_http_msg *next;
    kapi_http_exchange *ex; /* named, not owned (its conn owns it) */
    kapi_buf head;          /* the status and headers, encoded by ex->proto */
    int status;
    kapi_http_chunk *chunks;
    size_t nchunks;
    size_t body_len;
    kapi_http_stream *stream; /* holds a reference */
} kapi_http_msg;

struct kapi_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;   /* the current deadline (kapi_http__conn_arm), linger while finishing */
    uint64_t deadline;  /* loop time (ms) the current deadline falls; 0: none */
    uint64_t timer_due; /* loop time the deadline timer was last set to fire */
    uv_shutdown_t shutdown_req;
    kapi_http_server *srv;
    kapi_conn *prev, *next;
    char remote_addr[64];
    const kapi_http_proto_ops *proto; /* what it speaks: h1, or what ALPN chose */
    void *proto_state;                /* the proto's, per connection */
    kapi_buf *loopback;               /* tests: output lands here; no socket */
    SSL *ssl;                         /* NULL for plain HTTP */
    const char *tls_in;               /* ciphertext OpenSSL has yet to read (tls.c) */
    size_t tls_in_len;
    kapi_buf *tls_out; /* where OpenSSL's records go: the batch being filled, or tls_raw */
    kapi_buf tls_raw;  /* records made outside a batch (handshake, alerts), not yet sent */
    kapi_http_exchange *exchanges; /* its exchanges, newest first */
    bool alpn_done;                /* TLS: the proto ALPN chose is in place */
    kapi_buf in;                   /* plaintext not yet parsed */
    bool discard;                  /* ignore further input (a closing answer is coming) */
    bool unread; /* input was dropped: linger before closing so the peer gets no RST */
    bool reading;
    bool peer_eof;
    bool finishing; /* graceful close under way */
    bool closing;   /* handles being closed */
    bool dead;      /* closed while HANDLING: freed when the answer arrives */
    int open_handles;
    kapi_http_out *out; /* the output queue: out[out_head .. out_n) */
    size_t out_head, out_n, out_cap;
    size_t out_bytes;  /* bytes in the queue not yet taken */
    bool writing;      /* a batch from the queue is being written (one at a time) */
    bool flushing;     /* in kapi_http__conn_flush */
    bool shut_pending; /* finishing: shut the write side once the queue is empty */
};

struct kapi_http_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_async_t async;
    kapi_http_config cfg;
    SSL_CTX *ssl_ctx;
    /* Copies of cfg's TLS file names (cfg's are borrowed only for the call), read again
     * by kapi_http_server_reload_tls. */
    char *cert_file, *key_file, *client_ca_file;
    kapi_http_pool pool;
    int port;
    char read_buf[KAPI_HTTP__READ_BUF]; /* libuv reads land here (one loop thread) */
    /* The batch a flush fills, reused by every flush (one loop thread; a flush runs no
     * other flush): what the socket does not take at once is copied out. */
    kapi_buf out_buf;
    pthread_mutex_t mu; /* guards the message queue */
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
/* A server that accepts nothing: its conns are made by kapi_http__conn_loopback (tests
 * drive exchanges through it without a socket). */
kapi_error *kapi_http__server_new_loopback(kapi_http_server **out, uv_loop_t *loop,
                                           const kapi_http_config *cfg);

/* conn.c */
/* Accepts one connection from the listener and starts reading it. */
void kapi_http__conn_accept(kapi_http_server *srv);
/* A conn of srv (plain HTTP/1.1) with no socket: its input is given with
 * kapi_http__conn_input and kapi_http__conn_eof, and its output, as a socket would take
 * it, is appended to *out, which must outlive the conn. Closing frees it as usual. */
kapi_conn *kapi_http__conn_loopback(kapi_http_server *srv, kapi_buf *out);
/* Queues one piece (off 0); its chunk is released once taken or dropped. */
void kapi_http__conn_queue(kapi_conn *c, kapi_http_out piece);
/* Queues bytes that outlive the server. */
void kapi_http__conn_queue_static(kapi_conn *c, const char *p, size_t n);
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
/* ex's answer is written (or dropped): frees it (and its slot), then the proto waits for
 * the next one or finishes the conn (close_after: the answer asked for that). */
void kapi_http__conn_request_done(kapi_http_exchange *ex, bool close_after);
/* Loop thread: the conn's deadline timer fires at loop time at (ms; 0 stops it) and runs
 * the proto's timeout. h1: waiting for a request or its headers, it closes; waiting for a
 * body or the handler, it writes cfg.timeout and closes; streaming, it cuts off. */
void kapi_http__conn_arm(kapi_conn *c, uint64_t at);
/* The loop's current time in ms (the clock of kapi_http__conn_arm). */
uint64_t kapi_http__conn_now(const kapi_conn *c);
/* Parses buffered input if the conn is ready for another request. */
void kapi_http__conn_resume(kapi_conn *c);
/* Speaks proto from now on (ALPN chose it, or a test): the old proto's state goes. */
void kapi_http__conn_set_proto(kapi_conn *c, const kapi_http_proto_ops *proto);
/* Whether an exchange of c is with the handler. */
bool kapi_http__conn_handling(const kapi_conn *c);
/* Closes a conn that has nothing under way at once, or gracefully if an answer is still
 * being written or input is unread (so the client gets the answer and no reset). */
void kapi_http__conn_close_idle(kapi_conn *c);

/* exchange.c */
/* A new exchange of c speaking proto, being read, first in c's list. */
kapi_http_exchange *kapi_http__exchange_new(kapi_conn *c, const kapi_http_proto_ops *proto);
/* Unlinks an exchange from its conn and its proto and frees it with its arena (NULL is
 * fine); its stream must be detached. */
void kapi_http__exchange_free(kapi_http_exchange *ex);
/* Appends a request header (copied into the arena; lower: its name lower-cased, which
 * takes ASCII letters only, as a token's are). */
void kapi_http__exchange_add_header(kapi_http_exchange *ex, const char *name, size_t name_len,
                                    const char *value, size_t value_len, bool lower);
/* The proto has read ex's method, target and headers: fills the rest of pub and asks the
 * classifier what ex is; its deadline (or, for a long-running request, the deadline of
 * its body) starts now. */
void kapi_http__exchange_headers(kapi_http_exchange *ex);
/* ex's request is complete (or its body found too large): hands it to the pool, or
 * answers cfg.busy. */
void kapi_http__exchange_dispatch(kapi_http_exchange *ex);
/* Writes a constant answer of the layer's own (cfg.timeout) for ex and finishes its conn:
 * the rest of the body is never read, and the handler's answer, if it has the request, is
 * dropped when it comes. */
void kapi_http__exchange_answer(kapi_http_exchange *ex, const kapi_http_answer *a);

/* tls.c */
/* The server context: cert/key, TLS 1.2+, ALPN, optional client CA (requested only). */
kapi_error *kapi_http__tls_ctx_new(SSL_CTX **out, const kapi_http_config *cfg);
/* Gives c its SSL object, in accept state, over a BIO that reads c->tls_in and writes
 * c->tls_out (or c->tls_raw). */
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
/* Whether the client sent a certificate that did not verify. */
bool kapi_http__tls_peer_cert_rejected(kapi_conn *c);

/* ex's deadline for its current phase (the proto keeps it). */
void kapi_http__exchange_arm(kapi_http_exchange *ex, uint64_t at);

/* h1.c */
/* The HTTP/1.1 limit on the request line and headers (server.c sets it once). */
void kapi_http__h1_setup(void);

/* respond.c */
/* A message for ex carrying its status and the handler's headers, encoded by ex->proto. */
kapi_http_msg *kapi_http__msg_new(kapi_http_msg_kind kind, kapi_http_exchange *ex, int status,
                                  const kapi_http_header *headers, size_t nheaders);
/* The standard reason phrase of an HTTP status ("Unknown" if none). */
const char *kapi_http__reason(int status);
/* Whether a handler's header is written: not one the layer writes itself (Content-Length,
 * Transfer-Encoding, Connection), nor one that would split the response (CR, LF). */
bool kapi_http__header_allowed(const kapi_http_header *h);
/* Frees a message with whatever it still owns (chunks, stream reference). */
void kapi_http__msg_free(kapi_http_msg *m);
/* Runs every chunk's release and frees the (heap) array. */
void kapi_http__chunks_release(kapi_http_chunk *chunks, size_t n);
/* Loop thread: writes a complete response to its conn (or drops it if the conn is gone). */
void kapi_http__on_response(kapi_http_msg *m);
/* Loop thread: queues a complete answer for ex through its proto: head (saying body_len),
 * then the body's chunks; the chunks and their heap array (NULL if none) pass to the conn's
 * queue, which releases them all once the last byte is taken. */
void kapi_http__write_answer(kapi_http_exchange *ex, int status, kapi_buf *head, size_t body_len,
                             kapi_http_chunk *body, size_t nchunks);

/* stream.c */
/* Loop thread: handles (and frees) a START, FLUSH, END, ABORT or NOTIFY message. */
void kapi_http__on_stream_msg(kapi_http_msg *m);
/* ex's conn is going away (graceful: write the end of the answer first); runs on_close. */
void kapi_http__stream_detach(kapi_http_exchange *ex, bool graceful);
/* Drops a reference; the last one frees the stream and any chunks still pending. */
void kapi_http__stream_unref(kapi_http_stream *s);
/* Loop thread: takes the next pieces the producer queued, at most max of them and about
 * max_bytes, into out; returns how many. Their bytes stop counting as queued, which may
 * let a waiting producer go on. */
size_t kapi_http__stream_pull(kapi_http_stream *s, kapi_http_out *out, size_t max,
                              size_t max_bytes);

#endif
