/*
 * store_int: what the files of src/store share and nobody else includes (tests may).
 *
 * - Objects (obj.c): building a kapi_obj with its revision stamped into its bytes.
 * - The index (index.c): key -> latest kapi_obj, in byte order, an AVL tree whose nodes
 *   count their subtrees so that "how many keys remain under this prefix" is O(log n).
 *   The index does no locking; store.c guards it with its rwlock.
 * - The backend plug-in point (kapi_store_backend_ops): the durable log of revisions.
 *   The generic part (index, group commit, revision checks, history window) lives in
 *   store.c; a backend only stores and reads rows. sqlite.c is the embedded backend.
 */
#ifndef KAPI_STORE_INT_H
#define KAPI_STORE_INT_H

#include <pthread.h>

#include "store/store.h"

/* ---- objects ---- */

/* A new object (one reference, the caller's) whose bytes are head + the decimal digits
 * of rev + tail; the digits land at rv_off == head.len. */
kapi_obj *kapi_store__obj_new(kapi_str key, int64_t rev, int64_t create_rev, kapi_str head,
                              kapi_str tail);
/* An object made from a row of the log (its bytes are stamped already). */
typedef struct kapi_store_row kapi_store_row;
kapi_obj *kapi_store__obj_load(const kapi_store_row *row);

/* ---- the in-memory index ---- */

typedef struct kapi_store__node kapi_store__node;

typedef struct kapi_store__index {
    kapi_store__node *root;
} kapi_store__index;

void kapi_store__index_init(kapi_store__index *ix);
/* Drops the index's reference to every object. */
void kapi_store__index_dispose(kapi_store__index *ix);
size_t kapi_store__index_count(const kapi_store__index *ix);
/* The object at key, borrowed (valid while the index holds it), or NULL. */
kapi_obj *kapi_store__index_get(const kapi_store__index *ix, kapi_str key);
/* Sets the object at its key, taking over the caller's reference; a replaced object is
 * unreferenced. */
void kapi_store__index_put(kapi_store__index *ix, kapi_obj *o);
/* Removes the key (unreferencing its object); no-op when absent. */
void kapi_store__index_remove(kapi_store__index *ix, kapi_str key);
/* Up to limit (0: all) objects under prefix with keys after start_after (empty: from the
 * start), referenced into out->items, in key order; sets out->n and out->remaining. */
void kapi_store__index_list(const kapi_store__index *ix, kapi_str prefix, kapi_str start_after,
                            size_t limit, kapi_store_list_result *out);

/* ---- the watch hub (watch.c) ---- */

typedef struct kapi_store__hub {
    pthread_mutex_t mu;
    struct kapi_store__change *ring; /* the kept changes, oldest at head */
    size_t cap, head, n;
    int64_t floor;     /* every change after it is kept or not yet published */
    int64_t published; /* the revision of the last change published */
    kapi_store_watch *watches;
} kapi_store__hub;

/* rev: the store's revision when it opened. */
void kapi_store__hub_init(kapi_store__hub *h, int64_t rev);
void kapi_store__hub_dispose(kapi_store__hub *h);
/* The committer: one committed change, in revision order. */
void kapi_store__hub_publish(kapi_store__hub *h, const kapi_store_event *ev);
/* Forgets the changes at or before rev (they have left the history window). */
void kapi_store__hub_trim(kapi_store__hub *h, int64_t rev);
kapi_store_rc kapi_store__hub_watch(kapi_store__hub *h, kapi_str prefix, int64_t from,
                                    kapi_store_watch_fn fn, void *ctx, kapi_store_watch **out,
                                    int64_t *oldest);
void kapi_store__hub_progress(kapi_store__hub *h, kapi_store_watch *w);
void kapi_store__hub_unwatch(kapi_store__hub *h, kapi_store_watch *w);

/* ---- backends ---- */

/* One row of the revision log. DELETE rows carry the last state stamped with the
 * deletion revision, so that a watch can replay them. */
struct kapi_store_row {
    int64_t rev;
    int64_t create_rev;
    kapi_store_op op;
    kapi_str key;
    kapi_str value; /* the stamped bytes */
    uint32_t rv_off;
};

/* A consumer of streamed rows; the slices are valid for the call only. Returns 0 to go on. */
typedef int (*kapi_store_row_fn)(void *ctx, const kapi_store_row *row);

/* The backend contract. A backend is used by one committer thread for writes (open, the
 * loads and reads of recovery, append, compact, close are never called concurrently) and by any
 * number of threads for read_history at the same time as writes. */
/* A saved (revision, wall-clock time) mark, for load_marks. */
typedef void (*kapi_store_mark_fn)(void *ctx, int64_t rev, int64_t unix_ns);

typedef struct kapi_store_backend_ops {
    const char *name;
    /* Opens or creates the durable store at opts->path. */
    kapi_error *(*open)(void **out, const kapi_store_options *opts);
    /* Recovery: streams the latest row of every live key (any order) and reports the
     * last committed revision and the compacted revision. */
    kapi_error *(*load)(void *b, kapi_store_row_fn fn, void *ctx, int64_t *last_rev,
                        int64_t *compacted_rev);
    /* Recovery of the history: streams every row after revision `after`, in revision
     * order, without its bytes (value is empty; read_rev reads them). Returns 0 or -1. */
    int (*load_changes)(void *b, int64_t after, kapi_store_row_fn fn, void *ctx);
    /* Hands fn the row at revision rev whole. Returns 0, or -1 when there is none. */
    int (*read_rev)(void *b, int64_t rev, kapi_store_row_fn fn, void *ctx);
    /* Hands fn the last row of key before revision rev. Returns 0, or -1 when none. */
    int (*read_before)(void *b, kapi_str key, int64_t rev, kapi_store_row_fn fn, void *ctx);
    /* Writes rows (consecutive revisions) durably in one transaction: all or none.
     * Returns 0, or -1 when nothing was written. */
    int (*append)(void *b, const kapi_store_row *rows, size_t n);
    /* A list at a past revision (q->rev): streams, in key order, the state at q->rev of
     * the live keys under q->prefix after q->start_after (empty: from the start), at most
     * q->limit rows (0: no limit), and counts the live keys after them into *remaining.
     * Returns KAPI_STORE_OK, KAPI_STORE_GONE when q->rev is older than the compacted
     * revision, or KAPI_STORE_IO. */
    kapi_store_rc (*read_history)(void *b, const kapi_store_list_opts *q, kapi_store_row_fn fn,
                                  void *ctx, size_t *remaining);
    /* Drops every row at or before rev that a later row at or before rev supersedes, and
     * every DELETE row at or before rev; records rev as the compacted revision, so that the
     * state at any revision >= rev stays readable. Returns 0 or -1. */
    int (*compact)(void *b, int64_t rev);
    /* Records durably that the store was at revision rev at wall-clock time unix_ns, so
     * that the history window is measured from the real time of each change across
     * restarts; compact drops the marks at or before its revision. Returns 0 or -1. */
    int (*save_mark)(void *b, int64_t rev, int64_t unix_ns);
    /* Recovery: streams the saved marks in revision order. Returns 0 or -1. */
    int (*load_marks)(void *b, kapi_store_mark_fn fn, void *ctx);
    void (*close)(void *b);
} kapi_store_backend_ops;

extern const kapi_store_backend_ops kapi_store__sqlite_ops;

/* ---- internals for tests and tools ---- */

typedef struct kapi_store_stats {
    int64_t writes;       /* writes committed (KAPI_STORE_OK) */
    int64_t transactions; /* backend append transactions */
    int64_t compacted;    /* the compacted revision */
} kapi_store_stats;

void kapi_store__stats(kapi_store *st, kapi_store_stats *out);
/* Compacts the history up to rev now (clamped to the current revision), whatever the
 * window. Returns 0 or -1. */
int kapi_store__compact(kapi_store *st, int64_t rev);
/* Opens a store over a given backend (kapi_store_open uses the sqlite one). */
kapi_error *kapi_store__open_with(kapi_store **out, const kapi_store_options *opts,
                                  const kapi_store_backend_ops *ops);

#endif
