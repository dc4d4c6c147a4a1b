/*
 * etcd_int: what the files of src/etcd share and nobody else includes (tests and the fuzz
 * target may).
 *
 * - msg.c: etcd's messages, encoded and decoded by hand. A request is appended to a
 *   buffer as one gRPC message (the 5-byte prefix, then the protobuf bytes); a response
 *   is decoded from the protobuf bytes of one message, its slices pointing into those
 *   bytes and its arrays in the response's arena. Decoders never read outside the bytes
 *   they are given and refuse malformed input (false).
 * - client.c: the I/O thread, the connection (TCP, TLS, nghttp2) and unary calls.
 * - watch.c: watches, their streams and their queues.
 */
#ifndef KAPI_ETCD_INT_H
#define KAPI_ETCD_INT_H

#include "etcd/etcd.h"

/* gRPC's message prefix: a compressed flag byte and a 4-byte big-endian length. */
#define KAPI_ETCD__PREFIX 5

/* ---- requests (msg.c) ---- */

/* Each appends one gRPC message to out (prefix included). */
void kapi_etcd__range_req(kapi_buf *out, const kapi_etcd_op *range);
void kapi_etcd__txn_req(kapi_buf *out, const kapi_etcd_txn_req *txn);
void kapi_etcd__compact_req(kapi_buf *out, int64_t revision, bool physical);
void kapi_etcd__status_req(kapi_buf *out);
void kapi_etcd__watch_create_req(kapi_buf *out, const kapi_etcd_watch_options *o);
void kapi_etcd__watch_progress_req(kapi_buf *out);

/* ---- responses (msg.c) ---- */

/* RangeResponse into r (one op, its revision); TxnResponse (succeeded, an op per
 * ResponseOp); a message with a ResponseHeader at field 1 (CompactionResponse): its
 * revision; StatusResponse. r's arena holds what they allocate; the slices point into
 * p[0..n), which must live as long as r. */
bool kapi_etcd__range_resp(kapi_etcd_response *r, const char *p, size_t n);
bool kapi_etcd__txn_resp(kapi_etcd_response *r, const char *p, size_t n);
bool kapi_etcd__header_resp(int64_t *revision, const char *p, size_t n);
bool kapi_etcd__status_resp(kapi_etcd_status *s, const char *p, size_t n);

/* What a WatchResponse says besides its events. */
typedef struct kapi_etcd__watch_meta {
    int64_t watch_id;
    int64_t compact_revision;
    bool canceled;
    kapi_str cancel_reason;
} kapi_etcd__watch_meta;

/* WatchResponse into r (revision, created, events) and *meta; as the others. */
bool kapi_etcd__watch_resp(kapi_etcd_watch_response *r, kapi_etcd__watch_meta *meta, const char *p,
                           size_t n);

/* ---- calls (client.c) ---- */

/* One unary call on c: path ("/etcdserverpb.KV/Range"), the framed request (taken: *req
 * is left empty), deadline as the public calls take it. On OK, *body (heap, the caller's)
 * holds the answer's one gRPC message at *body + KAPI_ETCD__PREFIX, *len bytes long. */
kapi_etcd_rc kapi_etcd__call(kapi_etcd_client *c, const char *path, kapi_buf *req, int64_t deadline,
                             char **body, size_t *len, kapi_error **err);
/* Sets *err (when not NULL) to a new error of rc's status: "etcd <endpoint>: <what>". */
void kapi_etcd__error(kapi_error **err, kapi_etcd_rc rc, const char *endpoint, const char *fmt, ...)
    KAPI_PRINTF(4, 5);

/* ---- the client's insides (client.c, watch.c) ---- */

#include <pthread.h>

/* A link of an intrusive circular list; a list is a link of its own (empty: it points
 * at itself). */
typedef struct kapi_etcd__link {
    struct kapi_etcd__link *prev, *next;
} kapi_etcd__link;

/* One gRPC message a watch received and its consumer has not taken (heap). */
typedef struct kapi_etcd__msg {
    struct kapi_etcd__msg *next;
    size_t len;
    char bytes[];
} kapi_etcd__msg;

typedef struct kapi_etcd__strm kapi_etcd__strm;

struct kapi_etcd_watch {
    kapi_etcd_client *c;
    kapi_etcd__link link; /* in c->watches while the I/O thread holds it */
    pthread_cond_t cv;    /* the consumer waits on it (with c->mu) */
    /* The I/O thread's. */
    kapi_etcd__strm *s; /* its stream, NULL while it has none */
    kapi_buf create;    /* its framed WatchCreateRequest */
    int64_t open_by;    /* without a stream by then, it ends with UNAVAILABLE */
    /* Under c->mu. */
    int refs;                    /* the consumer's and the I/O thread's */
    kapi_etcd__msg *head, *tail; /* received, not taken, oldest first */
    size_t queued;               /* their bytes */
    bool stalled;                /* flow-control window is held back until queued shrinks */
    bool freed;                  /* the consumer let go */
    int progress;                /* progress requests to send */
    kapi_etcd_rc end;            /* how the stream ended, once it has; after the queue */
    char *end_why;               /* heap */
    /* The consumer's. */
    kapi_etcd_rc done; /* the rc every kapi_etcd_watch_next returns once it ended */
    char *done_why;    /* heap */
    int64_t revision, compact_revision;
    int64_t start_revision;
};

/* Marks that the I/O thread has work and wakes it if it sleeps; the caller holds c->mu. */
void kapi_etcd__kick(kapi_etcd_client *c);
/* c's mutex, which guards what the members above say. */
pthread_mutex_t *kapi_etcd__mu(kapi_etcd_client *c);
/* Hands w (refs 2) to the I/O thread, which opens its stream. */
void kapi_etcd__watch_add(kapi_etcd_client *c, kapi_etcd_watch *w);
/* Drops one reference (the caller holds c->mu); true when it was the last: then the
 * caller frees w with kapi_etcd__watch_destroy, after unlocking. */
bool kapi_etcd__watch_release(kapi_etcd_watch *w);
void kapi_etcd__watch_destroy(kapi_etcd_watch *w);
/* The client's size bound on a watch's untaken messages, and its call timeout. */
size_t kapi_etcd__watch_queue_bytes(const kapi_etcd_client *c);
int64_t kapi_etcd__call_timeout_ns(const kapi_etcd_client *c);

#endif
