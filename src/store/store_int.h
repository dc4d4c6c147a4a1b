/*
 * store_int: what the files of src/store share and nobody else includes (tests may).
 *
 * - Objects (obj.c): building a kapi_obj with its revision stamped into its bytes.
 * - The index (index.c): key -> latest kapi_obj, in byte order, an AVL tree whose nodes
 *   count their subtrees so that "how many keys remain under this prefix" is O(log n).
 *   The index does no locking; store.c guards it with its rwlock.
 * - The backend plug-in point (kapi_store_backend_ops): commit(batch) and follow(from).
 *   The backend decides each write and gives it its revision; the cache in store.c (the
 *   index, group commit, the watch hub, the history window) applies the changes follow()
 *   delivers and nothing else. sqlite.c is the embedded backend.
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
/* An object made from a row of a backend (its bytes are stamped already): the row's own
 * object, referenced, when it carries one; else a copy. */
typedef struct kapi_store_row kapi_store_row;
kapi_obj *kapi_store__obj_load(const kapi_store_row *row);

/* Where metadata.resourceVersion's digits go in an object's JSON bytes as etcd holds them
 * (etcd.c): [*start, *end) is the string's content (empty as kapi stores it), keys compared
 * as written. False when the bytes are not an object with one (not written by kapi). */
bool kapi_store__rv_place(kapi_str v, size_t *start, size_t *end);

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
/* The store reloaded its state at rev (kapi_store_reset_fn): forgets every kept change and
 * tells every watch (KAPI_STORE_EVENT_RESET); watches from before rev are GONE after. */
void kapi_store__hub_reset(kapi_store__hub *h, int64_t rev);
void kapi_store__hub_unwatch(kapi_store__hub *h, kapi_store_watch *w);

/* ---- backends ----
 *
 * A backend is the durable truth; the cache (store.c: the index, the watch hub, the
 * revision, the history window) is a copy of it fed only by what the backend says was
 * committed. The backend decides every write (create-if-absent, compare-and-swap on the
 * object's revision, delete with a precondition) against its own state and gives it its
 * revision; the cache never assigns a revision or judges a conflict. */

/* One committed change, or one key's state in a load. DELETE rows carry the last state
 * stamped with the deletion revision, so that a watch can send it. */
struct kapi_store_row {
    int64_t rev;
    int64_t create_rev;
    kapi_store_op op;
    kapi_str key;
    kapi_str value; /* the stamped bytes: rev's digits at rv_off */
    uint32_t rv_off;
    /* When not NULL, the object already made of this row (borrowed for the call): the
     * cache takes a reference instead of copying the bytes. */
    kapi_obj *obj;
};

/* A consumer of streamed rows; the slices are valid for the call only. Returns 0 to go on. */
typedef int (*kapi_store_row_fn)(void *ctx, const kapi_store_row *row);

/* The follower of a backend: rows[0..n) are committed changes in revision order, valid
 * for the call only, and every change up to revision rev (at least the last row's) has
 * now been delivered: n may be 0 when the backend's revision moved without a change the
 * cache keeps (etcd's progress). The rows of one call are applied together (a reader sees
 * all of them or none). */
typedef void (*kapi_store_follow_fn)(void *ctx, const kapi_store_row *rows, size_t n, int64_t rev);

/* The follower's other half: the backend lost changes it had still to deliver (etcd
 * compacted them before its watch got them): rows[0..n) (any order, valid for the call)
 * are the whole state at rev, to replace the cache's. */
typedef void (*kapi_store_reset_fn)(void *ctx, const kapi_store_row *rows, size_t n, int64_t rev);

/* A saved (revision, wall-clock time) mark, for load_marks. */
typedef void (*kapi_store_mark_fn)(void *ctx, int64_t rev, int64_t unix_ns);

/* One write of a backend commit: what to write, and what became of it. */
typedef struct kapi_store_txn_write {
    const kapi_store_write *w; /* op, key, expect_rev, the bytes with their rv_off gap */
    kapi_store_rc rc;          /* OUT: OK, EXISTS, NOT_FOUND, CONFLICT or IO */
    /* OUT, on OK: the object as committed, stamped with its revision (for DELETE, the last
     * state stamped with the deletion's revision); a reference the caller owns, to the
     * object the follower's row lends. */
    kapi_obj *obj;
    /* OUT, on CONFLICT: the state that refused the write; a reference the caller owns. */
    kapi_obj *current;
} kapi_store_txn_write;

/* The backend contract. Threads: open, load_marks, load, follow and close are called by
 * the opening and closing thread with nothing else running; commit (unless concurrent),
 * compact and save_mark by one thread at a time (the committer, or a test compacting);
 * read_history and current_revision by any number of threads at once, also while commits
 * run. The backend owns its state; what it hands over through an OUT pointer is the
 * caller's, what it hands to a callback is borrowed for the call.
 *
 * Two kinds of backend. SQLite is the only writer of its data: it commits a batch as one
 * transaction and follows its own commits. etcd is shared by several kapi instances:
 * it is `concurrent` (every writer calls commit with its own write, which is its own
 * transaction, and etcd does the group commit), and its follower is a watch, fed on the
 * backend's own thread with every instance's changes. */
typedef struct kapi_store_backend_ops {
    const char *name;
    /* commit is called by every writer at once with one write each, not by the store's
     * committer with batches. */
    bool concurrent;
    /* Opens or creates the durable store at opts->path. */
    kapi_error *(*open)(void **out, const kapi_store_options *opts);
    /* A consistent state to start the cache from: streams each key live at revision
     * *base_rev (any order) and reports that revision and the compacted revision (reads
     * of older revisions are gone). follow(*base_rev) continues from there. */
    kapi_error *(*load)(void *b, kapi_store_row_fn fn, void *ctx, int64_t *base_rev,
                        int64_t *compacted_rev);
    /* Commits writes[0..n) in one durable transaction: all of them that pass, or none.
     * Each write is decided in order against the backend's own state, the batch's earlier
     * writes included: CREATE fails with EXISTS when the key is live; UPDATE and DELETE
     * with NOT_FOUND when it is not, and with CONFLICT when expect_rev is not 0 and not
     * the key's revision. The writes that pass take increasing revisions after the last
     * committed one, in batch order (consecutive ones, for a backend that is not
     * concurrent). Before commit returns 0, the transaction is durable and its rows have
     * been handed to the follower. Returns -1 when the transaction failed: nothing of it
     * happened, no revision was used and no OUT member is set. A concurrent backend's
     * write whose outcome it could not learn (etcd's answer lost) is IO: it may have
     * happened, and the follower says whether. */
    int (*commit)(void *b, kapi_store_txn_write *writes, size_t n);
    /* Makes fn the follower: it gets every change committed after revision `after`, in
     * revision order, each once: those committed already, then each commit's (once
     * durable, all of one transaction in one call). SQLite calls fn on the calling thread
     * before follow returns and then on the committing thread; etcd on its watch thread,
     * from the moment follow is called; when etcd has compacted changes its watch had
     * still to deliver, it loads the state anew and hands it to reset instead. Returns 0,
     * or -1 when the changes after `after` cannot be read (nothing is followed then). */
    int (*follow)(void *b, int64_t after, kapi_store_follow_fn fn, kapi_store_reset_fn reset,
                  void *ctx);
    /* Optional (NULL: the cache is always current, as with SQLite, its one writer): the
     * backend's current revision, as a linearizable read learns it, for a consistent read
     * to wait for the follower to reach. Returns 0, or -1 when it cannot be learnt. */
    int (*current_revision)(void *b, int64_t *rev);
    /* Optional (NULL: nothing is shared, theirs is mine): the bytes every instance on the
     * backend shares under name, outside the store's keys: mine when this is the first
     * offer, else the first one. Returns 0 with *theirs set, or -1. */
    int (*share)(void *b, const char *name, kapi_str mine, kapi_buf *theirs);
    /* A list at a past revision (q->rev): streams, in key order, the state at q->rev of
     * the live keys under q->prefix after q->start_after (empty: from the start), at most
     * q->limit rows (0: no limit), and counts the live keys after them into *remaining.
     * Returns KAPI_STORE_OK, KAPI_STORE_GONE when q->rev is older than the compacted
     * revision, or KAPI_STORE_IO. */
    kapi_store_rc (*read_history)(void *b, const kapi_store_list_opts *q, kapi_store_row_fn fn,
                                  void *ctx, size_t *remaining);
    /* Forgets the history at or before rev: the state at any revision >= rev stays
     * readable, older ones are gone; records rev as the compacted revision (a rev at or
     * below it is a no-op). Returns 0 or -1. */
    int (*compact)(void *b, int64_t rev);
    /* Records durably that the store was at revision rev at wall-clock time unix_ns, so
     * that the history window is measured from the real time of each change across
     * restarts; compact drops the marks at or before its revision. Returns 0 or -1. */
    int (*save_mark)(void *b, int64_t rev, int64_t unix_ns);
    /* Streams the saved marks in revision order. Returns 0 or -1. */
    int (*load_marks)(void *b, kapi_store_mark_fn fn, void *ctx);
    void (*close)(void *b);
} kapi_store_backend_ops;

extern const kapi_store_backend_ops kapi_store__sqlite_ops;
extern const kapi_store_backend_ops kapi_store__etcd_ops;

/* ---- internals for tests and tools ---- */

typedef struct kapi_store_stats {
    int64_t writes;       /* writes committed (KAPI_STORE_OK) */
    int64_t transactions; /* backend commits */
    int64_t compacted;    /* the compacted revision */
} kapi_store_stats;

void kapi_store__stats(kapi_store *st, kapi_store_stats *out);
/* Compacts the history up to rev now (clamped to the current revision), whatever the
 * window. Returns 0 or -1. */
int kapi_store__compact(kapi_store *st, int64_t rev);
/* Opens a store over a given backend (kapi_store_open uses the sqlite one). */
kapi_error *kapi_store__open_with(kapi_store **out, const kapi_store_options *opts,
                                  const kapi_store_backend_ops *ops);

/* The name of the SQLite VFS the write connection opens with (gather.c): the default one,
 * with consecutive writes to the database and its WAL joined into one until SQLite syncs,
 * reads or otherwise looks at the file. NULL when it could not be registered (SQLite then
 * uses its default). It needs synchronous=FULL. */
const char *kapi_store__gather_vfs(void);

#endif
