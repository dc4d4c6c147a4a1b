/*
 * etcd: a client of etcd's v3 gRPC API (etcd 3.4 and later), the transport of the etcd
 * store backend (issue 17). Keys and values are raw bytes; nothing here knows Kubernetes.
 *
 * What it speaks: gRPC over HTTP/2 (nghttp2 as a client), h2c with prior knowledge for
 * http:// endpoints, TLS with ALPN "h2" for https:// ones (a CA file, and a client
 * certificate and key when etcd asks for one). The RPCs are KV/Range, KV/Txn, KV/Compact,
 * Maintenance/Status and Watch/Watch; their messages are encoded and decoded by hand
 * (msg.c, with codec/protobuf.h's wire helpers), field numbers from etcd 3.4's rpc.proto
 * and kv.proto.
 *
 * Threads. A client owns one thread (its I/O thread), which owns the socket, the TLS
 * session and the nghttp2 session; nothing else touches them. Any number of threads call
 * the client at once: each call is one HTTP/2 stream on the one connection, so concurrent
 * calls (the backend's group commit runs a batch of writes as concurrent Txns) share it.
 * A call blocks its thread until the answer, or an error, is there: the caller encodes
 * its request and decodes the answer on its own thread; the I/O thread only frames and
 * moves bytes. A watch is read by one consumer thread at a time.
 *
 * Deadlines. Every call takes a deadline, a kapi_time_mono_ns() instant (0: now plus the
 * client's call_timeout_ms). It bounds the whole call: waiting for a connection, sending,
 * etcd's work (sent as grpc-timeout) and the answer. At the deadline the call ends with
 * UNAVAILABLE if it was never sent, UNKNOWN if it was (its stream is reset).
 *
 * Bounds. A request message over max_send_bytes (default 2 MiB: etcd's default
 * --max-request-bytes of 1.5 MiB plus the 512 KiB gRPC slack etcd adds) is refused
 * before it is sent (TOO_LARGE). An answer message over max_recv_bytes (default 64 MiB)
 * ends its call with TOO_LARGE (a write may have been applied). A watch buffers at most
 * watch_queue_bytes (default 16 MiB) of messages its consumer has not taken; past that
 * the client stops granting that stream HTTP/2 flow-control window, and etcd holds the
 * events (it keeps an unread watcher as a slow one and catches it up later).
 *
 * Endpoints and failover. servers is a comma list of URLs; the client connects to the
 * first, and on a connection error (refused, reset, closed, TLS failure, no answer to a
 * keepalive PING within keepalive_ms) moves to the next, round and round, pausing 50 ms
 * doubling to 1 s between rounds in which none could be reached. A GOAWAY from etcd, or
 * an answer saying this member cannot serve ("no leader", "server stopped", "not
 * capable", "unhealthy cluster"), makes the client finish the calls on the connection,
 * then close it and move on. Calls not yet sent when a connection ends wait for the
 * next one (up to their deadline); calls sent on it end with UNKNOWN; watches on it end
 * with BROKEN. The client never repeats a call that may have been applied, and never
 * re-creates a watch by itself: the consumer re-creates it from
 * kapi_etcd_watch_revision() + 1, which is exactly once delivery without a relist.
 *
 * Ownership (DESIGN.md's words). Requests are borrowed for the call. A response comes
 * through **out and is the caller's (kapi_etcd_response_free,
 * kapi_etcd_watch_response_free); its kapi_str slices point into bytes it owns and live
 * as long as it. Errors through **err (when err is not NULL) are the caller's.
 */
#ifndef KAPI_ETCD_H
#define KAPI_ETCD_H

#include "base/status.h"

/* What a call came to: name, the status of the kapi_error it makes, and what it means
 * for the caller. OK is 0 and makes no error. */
#define KAPI_ETCD_RC_MAP(XX)                                                                       \
    /* Not applied: no endpoint took the call before its deadline, or etcd refused it              \
     * before doing it ("too many requests"); safe to retry. */                                    \
    XX(UNAVAILABLE, SERVICE_UNAVAILABLE, "unavailable")                                            \
    /* The answer was lost: the deadline passed or the connection broke after the call             \
     * was sent, or etcd gave up on it (gRPC Unavailable, DeadlineExceeded, Canceled,              \
     * Unknown: "request timed out", "leader changed"). A write may or may not have been           \
     * applied: read to learn which. A read can simply be retried. */                              \
    XX(UNKNOWN, TIMEOUT, "unknown outcome")                                                        \
    /* The revision asked for has been compacted (a Range, Compact or Watch). */                   \
    XX(COMPACTED, GONE, "compacted")                                                               \
    /* The revision asked for is newer than etcd's (a Range or Compact). */                        \
    XX(FUTURE_REV, TIMEOUT, "future revision")                                                     \
    /* A request over max_send_bytes or over etcd's own bound (not applied), or an answer          \
     * over max_recv_bytes (a write may have been applied). */                                     \
    XX(TOO_LARGE, REQUEST_ENTITY_TOO_LARGE, "too large")                                           \
    /* etcd refused the call with another gRPC status (invalid argument, permission denied,        \
     * database space exceeded, ...): not applied, and retrying will not help. */                  \
    XX(REFUSED, INTERNAL_ERROR, "refused")                                                         \
    /* The answer is not one this client can read (an HTTP status other than 200, no               \
     * grpc-status, a malformed message): a write may have been applied. */                        \
    XX(PROTOCOL, INTERNAL_ERROR, "protocol error")                                                 \
    /* Watches: the stream ended (its connection broke, etcd ended it, or the client was           \
     * freed); re-create the watch from kapi_etcd_watch_revision() + 1. */                         \
    XX(BROKEN, SERVICE_UNAVAILABLE, "watch broken")                                                \
    /* Watches: etcd canceled the watch for a reason other than compaction (the message            \
     * says which). */                                                                             \
    XX(CANCELED, INTERNAL_ERROR, "watch canceled")                                                 \
    /* Watches: nothing arrived before the deadline; the watch goes on. Makes no error. */         \
    XX(WAIT, TIMEOUT, "nothing yet")

typedef enum kapi_etcd_rc {
    KAPI_ETCD_OK = 0,
#define XX(name, status, text) KAPI_ETCD_##name,
    KAPI_ETCD_RC_MAP(XX)
#undef XX
} kapi_etcd_rc;

/* A short name of rc ("compacted"); static. */
const char *kapi_etcd_rc_name(kapi_etcd_rc rc);

/* ---- the client ---- */

typedef struct kapi_etcd_client kapi_etcd_client;

typedef struct kapi_etcd_options {
    /* Comma list of endpoint URLs, http://host:port or https://host:port (port 2379 when
     * left out; IPv6 as [addr]:port). Required. */
    const char *servers;
    /* TLS, for https:// endpoints: the CA file that verifies etcd's certificate (NULL:
     * the system's), and a client certificate chain and its key (both or neither). The
     * certificate must name the endpoint's host or address. */
    const char *ca_file, *cert_file, *key_file;
    int call_timeout_ms;      /* the deadline of a call given 0; 0: 10 s */
    int connect_timeout_ms;   /* one connection attempt, TCP and TLS; 0: 2 s */
    int keepalive_ms;         /* PING after this long without a frame while streams are open;
                                 the connection is dropped when the PING is not answered in
                                 as long again. 0: 10 s (etcd refuses pings closer than 5 s) */
    size_t max_send_bytes;    /* 0: 2 MiB */
    size_t max_recv_bytes;    /* 0: 64 MiB */
    size_t watch_queue_bytes; /* 0: 16 MiB */
} kapi_etcd_options;

/* A new client for opts (copied), its I/O thread started; it connects on first use.
 * Fails (BAD_REQUEST) on a malformed endpoint list or TLS files that do not load. */
kapi_error *kapi_etcd_client_new(kapi_etcd_client **out, const kapi_etcd_options *opts);
/* Stops the I/O thread and frees the client. No call may be running and every watch
 * must have been freed first. */
void kapi_etcd_client_free(kapi_etcd_client *c);
/* The URL of the endpoint the client is connected to or trying now; borrowed, valid
 * while the client lives (for logs and tests). */
const char *kapi_etcd_client_endpoint(kapi_etcd_client *c);

/* ---- keys, values and operations ---- */

/* A key's state, as etcd's mvccpb.KeyValue. */
typedef struct kapi_etcd_kv {
    kapi_str key;
    kapi_str value;          /* empty with keys_only */
    int64_t create_revision; /* the revision that created the key (live since then) */
    int64_t mod_revision;    /* the revision of its last change */
    int64_t version;         /* changes since its creation, 1 at creation */
    int64_t lease;
} kapi_etcd_kv;

typedef enum kapi_etcd_op_type {
    KAPI_ETCD_RANGE = 1,
    KAPI_ETCD_PUT = 2,
    KAPI_ETCD_DELETE = 3,
} kapi_etcd_op_type;

/* One operation: a Range (kapi_etcd_range, or in a Txn), a Put or a DeleteRange (in a
 * Txn). The members a type does not name are ignored. */
typedef struct kapi_etcd_op {
    kapi_etcd_op_type type;
    kapi_str key;
    /* RANGE, DELETE: the keys [key, range_end); empty: key alone; "\0" (one NUL byte):
     * every key >= key. kapi_etcd_prefix_end makes the end of a prefix. */
    kapi_str range_end;
    kapi_str value;    /* PUT */
    bool prev_kv;      /* PUT, DELETE: answer the state before the change */
    int64_t limit;     /* RANGE: at most this many keys (0: no limit) */
    int64_t revision;  /* RANGE: read at this revision (0: the latest) */
    bool serializable; /* RANGE: answer from the member's own state, without a quorum
                          read (faster; may be stale on a follower) */
    bool keys_only;    /* RANGE: no values */
    bool count_only;   /* RANGE: only the count */
} kapi_etcd_op;

/* What a Txn compares, and how (etcd's Compare.CompareTarget and CompareResult). */
typedef enum kapi_etcd_target {
    KAPI_ETCD_VERSION = 0,
    KAPI_ETCD_CREATE = 1, /* create_revision: 0 when the key is absent */
    KAPI_ETCD_MOD = 2,    /* mod_revision: 0 when the key is absent */
    KAPI_ETCD_VALUE = 3,
} kapi_etcd_target;

typedef enum kapi_etcd_cmp {
    KAPI_ETCD_EQUAL = 0,
    KAPI_ETCD_GREATER = 1,
    KAPI_ETCD_LESS = 2,
    KAPI_ETCD_NOT_EQUAL = 3,
} kapi_etcd_cmp;

/* "target(key) result number" (or value, for KAPI_ETCD_VALUE). */
typedef struct kapi_etcd_compare {
    kapi_str key;
    kapi_etcd_target target;
    kapi_etcd_cmp result;
    int64_t number; /* VERSION, CREATE, MOD */
    kapi_str value; /* VALUE */
} kapi_etcd_compare;

/* If every compare holds, the success ops, else the failure ops; atomically, at one new
 * revision when any op writes. etcd refuses two writes to one key in one Txn. */
typedef struct kapi_etcd_txn_req {
    const kapi_etcd_compare *compare;
    size_t ncompare;
    const kapi_etcd_op *success;
    size_t nsuccess;
    const kapi_etcd_op *failure;
    size_t nfailure;
} kapi_etcd_txn_req;

/* What one op answered. */
typedef struct kapi_etcd_op_result {
    kapi_etcd_op_type type;
    /* RANGE: the keys read, in key order; PUT: the state before (one kv, or none when the
     * key was absent or prev_kv was not asked); DELETE: the deleted keys' last states
     * (with prev_kv). */
    kapi_etcd_kv *kvs;
    size_t nkvs;
    int64_t count; /* RANGE: the keys in the range, whatever the limit; DELETE: deleted */
    bool more;     /* RANGE: the limit left keys out */
} kapi_etcd_op_result;

/* The answer of a Range or a Txn. */
typedef struct kapi_etcd_response {
    /* etcd's revision when it answered (header.revision): a Txn that wrote, its
     * revision; a Range at the latest revision, the revision it read at. */
    int64_t revision;
    bool succeeded; /* Txn: the compares held and the success ops ran */
    /* Range: one; Txn: one per op of the branch that ran, in order. */
    kapi_etcd_op_result *ops;
    size_t nops;
    kapi_arena arena; /* owned: ops and their kvs */
    char *bytes;      /* owned: the message bytes the slices point into */
} kapi_etcd_response;

void kapi_etcd_response_free(kapi_etcd_response *r);

/* Appends to out the range end of every key starting with prefix (the prefix with its
 * last byte below 0xff incremented and what follows dropped; "\0", every key, when
 * there is none). */
void kapi_etcd_prefix_end(kapi_buf *out, kapi_str prefix);

/* ---- unary calls: each returns KAPI_ETCD_OK or an rc of the map, and on an error sets
 * *err (when err is not NULL) to one with the rc's status and what happened ---- */

/* KV/Range (range->type is not looked at). *out on OK. A read at the latest
 * revision without serializable is linearizable: its revision is at least that of any
 * write acknowledged before it started, which makes a count_only Range of one key the
 * cheap way to learn etcd's current revision for a consistent read. */
kapi_etcd_rc kapi_etcd_range(kapi_etcd_client *c, const kapi_etcd_op *range, int64_t deadline,
                             kapi_etcd_response **out, kapi_error **err);
/* KV/Txn. *out on OK, also when the compares failed (then succeeded is false and ops
 * are the failure branch's). */
kapi_etcd_rc kapi_etcd_txn(kapi_etcd_client *c, const kapi_etcd_txn_req *txn, int64_t deadline,
                           kapi_etcd_response **out, kapi_error **err);
/* KV/Compact: forgets the revisions before revision (a Range below it is COMPACTED);
 * physical waits until the space is reclaimed. COMPACTED when revision is at or below
 * the compacted one, FUTURE_REV when it is past the current one. */
kapi_etcd_rc kapi_etcd_compact(kapi_etcd_client *c, int64_t revision, bool physical,
                               int64_t deadline, kapi_error **err);

/* A member's Maintenance/Status: which member answered and what it knows. Not
 * linearizable (a follower answers from its own state): for health and logs; the
 * current revision for a consistent read comes from kapi_etcd_range. */
typedef struct kapi_etcd_status {
    int64_t revision; /* the member's revision */
    uint64_t member_id, leader, raft_term, raft_index;
    int64_t db_size;
    bool is_learner;
    char version[32]; /* "3.4.23" */
} kapi_etcd_status;

kapi_etcd_rc kapi_etcd_status_get(kapi_etcd_client *c, int64_t deadline, kapi_etcd_status *out,
                                  kapi_error **err);

/* ---- watches ----
 *
 * A watch is one Watch/Watch stream carrying one WatchCreateRequest (and the progress
 * requests). Its consumer pulls what etcd sends with kapi_etcd_watch_next. The watch
 * ends at its first error rc (COMPACTED, CANCELED, BROKEN, UNAVAILABLE when no endpoint
 * could be reached in call_timeout_ms, TOO_LARGE, PROTOCOL), which every later
 * kapi_etcd_watch_next returns again; the consumer frees it and, if it wants the
 * changes still, makes a new one from kapi_etcd_watch_revision() + 1. The stream asks
 * etcd to end it when its member loses the leader (gRPC metadata "hasleader"), so a
 * watch on a partitioned member ends with BROKEN instead of going silent. */

typedef struct kapi_etcd_watch kapi_etcd_watch;

typedef struct kapi_etcd_watch_options {
    kapi_str key;
    kapi_str range_end; /* as kapi_etcd_op's */
    /* Changes from this revision on (0: those after etcd's current revision). A revision
     * etcd has compacted ends the watch with COMPACTED. */
    int64_t start_revision;
    bool prev_kv; /* events carry the state before the change */
    /* etcd sends a progress notification every --experimental-watch-progress-notify-
     * interval (10 minutes by default) while the watch is caught up. */
    bool progress_notify;
} kapi_etcd_watch_options;

typedef enum kapi_etcd_event_type {
    KAPI_ETCD_EVENT_PUT = 0,
    KAPI_ETCD_EVENT_DELETE = 1,
} kapi_etcd_event_type;

typedef struct kapi_etcd_event {
    kapi_etcd_event_type type;
    /* PUT: the new state; DELETE: the key, with mod_revision the deletion's revision and
     * the other members zero. */
    kapi_etcd_kv kv;
    kapi_etcd_kv prev_kv; /* with prev_kv and has_prev: the state before */
    bool has_prev;
} kapi_etcd_event;

/* One message of a watch. */
typedef struct kapi_etcd_watch_response {
    int64_t revision; /* header.revision */
    /* The first message of every watch: etcd has registered it; revision is etcd's
     * revision then (changes after start_revision up to it may still be coming). */
    bool created;
    /* Changes in revision order (the changes of one revision are never split between two
     * messages). None, and not created: a progress notification, every change up to
     * revision has been delivered. */
    kapi_etcd_event *events;
    size_t nevents;
    kapi_arena arena; /* owned: events */
    char *bytes;      /* owned: the message bytes the slices point into */
} kapi_etcd_watch_response;

void kapi_etcd_watch_response_free(kapi_etcd_watch_response *r);

/* A new watch (the caller's) on c: the create request is sent when the client has a
 * connection. Never fails here; what goes wrong comes out of kapi_etcd_watch_next. */
kapi_etcd_watch *kapi_etcd_watch_new(kapi_etcd_client *c, const kapi_etcd_watch_options *o);
/* The watch's next message, waiting until deadline (a kapi_time_mono_ns() instant;
 * INT64_MAX: no deadline). OK with *out set; WAIT when nothing came in time; an error rc
 * (above) when the watch has ended: then the messages received before the end have all
 * been returned. */
kapi_etcd_rc kapi_etcd_watch_next(kapi_etcd_watch *w, int64_t deadline,
                                  kapi_etcd_watch_response **out, kapi_error **err);
/* Asks etcd for a progress notification (WatchProgressRequest); it comes through
 * kapi_etcd_watch_next. etcd 3.4 before 3.4.25 (and 3.5 before 3.5.8) answers with its
 * current revision even while this watch is still catching up, so its revision is an
 * upper bound only once the watch has caught up; the periodic notifications of
 * progress_notify are sent only then, on every version. Thread-safe. */
void kapi_etcd_watch_progress(kapi_etcd_watch *w);
/* The revision up to which every change has been returned by kapi_etcd_watch_next: the
 * last event's revision, a progress notification's, or before any, start_revision - 1
 * (with start_revision 0: the created message's revision). */
int64_t kapi_etcd_watch_revision(const kapi_etcd_watch *w);
/* After COMPACTED: etcd's compacted revision (the watch can restart at it at the
 * earliest, after a fresh read). 0 otherwise. */
int64_t kapi_etcd_watch_compact_revision(const kapi_etcd_watch *w);
/* Cancels the watch (its stream is reset) and frees it; messages not taken are dropped. */
void kapi_etcd_watch_free(kapi_etcd_watch *w);

#endif
