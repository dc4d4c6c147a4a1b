/*
 * store: the MVCC object store (docs/DESIGN.md, "The store"): an in-memory cache (the
 * latest state, the watch hub, the history window) over a durable backend (SQLite) that
 * decides every write.
 *
 * Keys are opaque to the store: the registry lays them out (kapi_type_key) and a
 * collection is a key prefix. A key is a byte string with its length: it may hold any
 * byte, NUL included (a core/v1 Event name may), and is compared, prefixed and stored by
 * its length everywhere, so that two keys that differ only after a NUL are two keys.
 * Values are the objects' canonical JSON bytes, held in memory as immutable, refcounted
 * kapi_obj and served without re-encoding (invariant 2).
 *
 * Revisions (invariant 3): one global counter, the backend's; every committed write takes
 * the next value. The bytes of a stored object contain its own revision as the decimal
 * digits of metadata.resourceVersion at [rv_off, rv_off + rv_len): a writer hands the
 * store the bytes with an empty gap at rv_off, and the backend fills in the revision it
 * assigns. Whether a write may happen (the key absent for a create, present and at
 * expect_rev for an update or delete) is decided by the backend when it commits.
 *
 * Durable before visible (invariant 4): kapi_store_commit returns, and readers and the
 * observer see a write, only after it is durable in the backend; the store's reads are
 * served from the cache, which applies the backend's committed changes in revision order.
 * Concurrent writers are batched into one backend transaction (group commit).
 *
 * Threads: every function may be called from any thread. The store owns its state behind
 * its own lock; the observer runs on the thread that applies the backend's changes (for
 * SQLite, the committer), in revision order, before the writers of those changes wake.
 */
#ifndef KAPI_STORE_H
#define KAPI_STORE_H

#include <stdatomic.h>

#include "base/status.h"

/* Return codes of store operations (0 is success). */
typedef enum kapi_store_rc {
    KAPI_STORE_OK = 0,
    KAPI_STORE_NOT_FOUND = -1, /* no such key (get, update, delete) */
    KAPI_STORE_EXISTS = -2,    /* create of a key that is present */
    KAPI_STORE_CONFLICT = -3,  /* expect_rev does not match the current revision */
    KAPI_STORE_GONE = -4,      /* the revision asked for is older than the history kept */
    KAPI_STORE_TOO_NEW = -5,   /* the revision asked for is newer than the store has */
    KAPI_STORE_IO = -6,        /* the backend failed; the write did not happen */
} kapi_store_rc;

/* Bytes derived from an object's and kept with it (the api keeps its protobuf encoding
 * there): made once, by the first reader that needs them, and freed with the object. */
typedef struct kapi_obj_form {
    size_t len;
    char data[];
} kapi_obj_form;

/* A stored object: immutable after creation (its derived form is set at most once), shared
 * by reference. */
typedef struct kapi_obj {
    atomic_int refs;
    int64_t rev;        /* revision of the write that made these bytes */
    int64_t create_rev; /* revision at which the key was created */
    uint32_t rv_off;    /* metadata.resourceVersion digits at data[rv_off .. rv_off+rv_len) */
    uint32_t rv_len;
    size_t len;     /* JSON bytes in data, NUL-terminated after len */
    size_t key_len; /* bytes of the key (which may hold NUL bytes) */
    char *key;      /* the key, key_len bytes and a NUL after them, owned by the object */
    _Atomic(kapi_obj_form *) form; /* derived bytes, or NULL until a reader makes them */
    char data[];
} kapi_obj;

kapi_obj *kapi_obj_ref(kapi_obj *o);
void kapi_obj_unref(kapi_obj *o);
/* The key of an object, by its length. */
static inline kapi_str kapi_obj_key(const kapi_obj *o)
{
    return (kapi_str){o->key, o->key_len};
}
/* A new object (one reference, the caller's): o's key and bytes with revision rev written
 * into its resourceVersion; what a watcher is sent when o stops matching its selectors at
 * a later change. */
kapi_obj *kapi_obj_restamp(const kapi_obj *o, int64_t rev);
/* o's derived form, or NULL when no reader made it yet. */
const kapi_obj_form *kapi_obj_form_get(const kapi_obj *o);
/* Gives o the derived form f (heap, taken) unless a reader gave it one first, in which case
 * f is freed; returns the form o has. Any thread. */
const kapi_obj_form *kapi_obj_form_put(kapi_obj *o, kapi_obj_form *f);

typedef enum kapi_store_op {
    KAPI_STORE_CREATE,
    KAPI_STORE_UPDATE,
    KAPI_STORE_DELETE,
} kapi_store_op;

/* One write. The key is taken by its length (it may hold NUL bytes). */
typedef struct kapi_store_write {
    kapi_store_op op;
    kapi_str key;
    /* UPDATE and DELETE: the revision the object must have now; 0 accepts any. */
    int64_t expect_rev;
    /* CREATE and UPDATE: the new bytes, with the revision's digits to be inserted at
     * rv_off (the bytes hold nothing there). DELETE: unused; the deleted object is the
     * last stored bytes with the deletion's revision written into them. */
    kapi_str value;
    size_t rv_off;
    /* OUT: the object as committed (for DELETE, the last state stamped with the deletion
     * revision); the caller owns one reference. Set only on KAPI_STORE_OK. */
    kapi_obj *result;
    /* OUT: the current object when the write failed with CONFLICT (a reference the caller
     * owns), so that the caller can report or retry; else NULL. */
    kapi_obj *current;
} kapi_store_write;

/* A committed change, as the observer sees it. */
typedef enum kapi_store_event_type {
    KAPI_STORE_EVENT_PUT,      /* created or updated */
    KAPI_STORE_EVENT_DELETE,   /* obj is the last state, stamped with the deletion revision */
    KAPI_STORE_EVENT_PROGRESS, /* watches only: every change up to rev has been delivered;
                                * obj and prev are NULL */
    /* watches only: the store lost the changes before rev (etcd compacted revisions its
     * watch had not delivered yet) and reloaded its state at rev; a consumer that keeps
     * a copy re-reads it (the api ends its watches with 410 Expired, for their clients to
     * re-list); obj and prev are NULL */
    KAPI_STORE_EVENT_RESET,
} kapi_store_event_type;

typedef struct kapi_store_event {
    kapi_store_event_type type;
    int64_t rev;
    const kapi_obj *obj;  /* borrowed for the call; kapi_obj_ref it to keep it */
    const kapi_obj *prev; /* the state before this change, or NULL on create */
} kapi_store_event;

/* Runs on the committer, before the batch's writers wake, for each change committed after
 * the open: it must be quick, and must not call kapi_store_commit (that would wait for
 * itself); reads are fine. */
typedef void (*kapi_store_observer)(void *ctx, const kapi_store_event *ev);

/* A move of keys: each key that starts with `from` is renamed to start with `to`. */
typedef struct kapi_store_rekey {
    kapi_str from, to;
} kapi_store_rekey;

/* The etcd backend (kube-apiserver's --etcd-* flags). */
typedef struct kapi_store_etcd_options {
    const char *servers; /* comma list of endpoint URLs; NULL: SQLite at path */
    const char *prefix;  /* every key under it; NULL: "/registry" */
    const char *ca_file, *cert_file, *key_file;
    /* etcd is compacted to the revision of one interval ago, every interval, by one
     * instance of those sharing it (kube-apiserver's compactor); 0: never. */
    int64_t compaction_interval_s;
} kapi_store_etcd_options;

typedef struct kapi_store_options {
    const char *path;             /* SQLite database file */
    kapi_store_etcd_options etcd; /* etcd instead, when etcd.servers is set */
    int64_t history_seconds;      /* how long old revisions are kept (default 300) */
    kapi_store_observer observer; /* optional; sees every committed change */
    void *observer_ctx;
    /* The key prefixes of the layout before kube-apiserver's (kapi_registry_rekeys):
     * SQLite data written under it is moved once, at open, before it is read. */
    const kapi_store_rekey *rekeys;
    size_t nrekeys;
} kapi_store_options;

typedef struct kapi_store kapi_store;

/* Opens (creating if needed) and recovers the store: the state at the start of the
 * history window is loaded into memory and every change after it is applied again, so the
 * changes of the window go back into the watch hub and the revision continues from the
 * last committed write. */
kapi_error *kapi_store_open(kapi_store **out, const kapi_store_options *opts);
/* Waits for writes in flight, then closes. */
void kapi_store_free(kapi_store *st);

/* The revision of the last committed write (0 for an empty store). */
int64_t kapi_store_revision(kapi_store *st);

/* False while the backend's last commit failed (the health checks' "store"). */
bool kapi_store_healthy(kapi_store *st);

/* Commits one write; blocks until it is durable or has failed. */
kapi_store_rc kapi_store_commit(kapi_store *st, kapi_store_write *w);

/* Makes the next reads consistent: waits (up to timeout_ms) until the cache has every
 * change the backend had committed when sync was called, so that a read after it sees
 * every write acknowledged before, by any kapi instance on a shared backend. OK at once
 * with SQLite (the cache is its one writer's); TOO_NEW when the cache did not catch up in
 * time, with *behind the backend's revision it waited for: a list at that revision
 * (kapi_store_list) is then read from the backend itself; IO when the backend's revision
 * cannot be learnt. Concurrent callers share one look at the backend. */
kapi_store_rc kapi_store_sync(kapi_store *st, int64_t timeout_ms, int64_t *behind);

/* Bytes every kapi instance on a shared backend agrees on (their identity: kapi_auth's
 * share function): *theirs gets mine when this instance offers first, else the first
 * offer; with SQLite, mine. */
kapi_error *kapi_store_share(kapi_store *st, const char *name, kapi_str mine, kapi_buf *theirs);

/* The latest object at key: *out gets a reference the caller owns. */
kapi_store_rc kapi_store_get(kapi_store *st, kapi_str key, kapi_obj **out);

typedef struct kapi_store_list_opts {
    kapi_str prefix; /* keys starting with it, e.g. "/batch/cronjobs/" */
    /* 0: the latest state; else the state at that revision, which on a shared backend may
     * be one the cache has not reached yet (read from the backend; TOO_NEW past its own) */
    int64_t rev;
    kapi_str start_after; /* only keys after this one (pagination); empty: from the start */
    size_t limit;         /* at most this many items; 0: no limit */
} kapi_store_list_opts;

/* The result of a list. (The typedef cannot be named kapi_store_list: C gives the function
 * kapi_store_list and a typedef one namespace; the struct tag keeps the name.) */
typedef struct kapi_store_list {
    kapi_obj **items; /* references owned by the list, in key order */
    size_t n;
    int64_t rev;      /* the revision the list reflects */
    size_t remaining; /* keys under the prefix after the last item returned */
} kapi_store_list_result;

/* Waits until the store has reached revision rev or timeout_ms has passed; true when
 * it has. */
bool kapi_store_wait_revision(kapi_store *st, int64_t rev, int64_t timeout_ms);

/* Lists the objects under a prefix, in key order; out is filled on KAPI_STORE_OK and
 * empty otherwise (disposing it is always safe). */
kapi_store_rc kapi_store_list(kapi_store *st, const kapi_store_list_opts *opts,
                              kapi_store_list_result *out);
/* Drops the list's references and its array; l is left empty. */
void kapi_store_list_dispose(kapi_store_list_result *l);

/* ---- watches (the watch hub) ----
 *
 * The store keeps the committed changes of its history window in memory, in revision
 * order, with each object's previous state, and hands them to watches. A watch sees
 * every change under its prefix with a revision after its start, in revision order,
 * exactly once: first those already kept (on the thread that starts the watch), then
 * live ones (on the committer, after they are durable). The history outlives a restart:
 * kapi_store_open puts every change the log holds after the compacted revision back into
 * the hub, with its previous state, so a watch (like an Exact list or a continue token)
 * may start from any revision still inside the window, whether it was written before or
 * after the restart. (kube-apiserver's watch cache forgets them; kapi does better.) The
 * window is kept in real time across restarts: the store saves when it reached which
 * revision, so what left the window while it was closed is compacted at open, and the
 * rest leaves it history_seconds after it was written (to within the marks' spacing,
 * history_seconds / 32; changes after the last saved mark, e.g. before a kill -9, count
 * from the open). */
typedef struct kapi_store_watch kapi_store_watch;

/* Called with each change (and each progress note); the event and its objects are
 * borrowed for the call. Must be quick and must not call back into the watch functions
 * of the store. Returning false stops the watch: fn is not called again. */
typedef bool (*kapi_store_watch_fn)(void *ctx, const kapi_store_event *ev);

/* Starts a watch of the keys under prefix from after revision from (which may be ahead
 * of the store: changes up to it are skipped). KAPI_STORE_GONE when changes after from
 * are no longer kept; *oldest then gets the oldest revision a watch may start from. */
kapi_store_rc kapi_store_watch_start(kapi_store *st, kapi_str prefix, int64_t from,
                                     kapi_store_watch_fn fn, void *ctx, kapi_store_watch **out,
                                     int64_t *oldest);
/* Calls fn with a PROGRESS event: every change up to its revision has been delivered. */
void kapi_store_watch_progress(kapi_store *st, kapi_store_watch *w);
/* Ends the watch: once this returns, fn is not running and is never called again. */
void kapi_store_watch_stop(kapi_store *st, kapi_store_watch *w);

/* ---- expiry (expire.c) ----
 *
 * Keys under a prefix that go ttl after their last write, as kube-apiserver's Events do
 * with --event-ttl (an etcd lease per write): a store watch keeps their deadlines in a
 * heap and one thread deletes each key whose deadline passed, if it still holds the
 * revision that set it, as any deletion (watches see it). The heap holds at most about
 * two deadlines a live key. No scan of the keys after the start (or after the watch lost
 * changes), which gives the keys there then the whole ttl (the store keeps no write
 * time). */
typedef struct kapi_store_expirer kapi_store_expirer;

/* Starts expiring the keys under prefix ttl_ms after their last write. */
kapi_store_expirer *kapi_store_expire_start(kapi_store *st, kapi_str prefix, int64_t ttl_ms);
/* How many deadlines it holds (a key's latest and not yet dropped older ones). */
size_t kapi_store_expire_pending(kapi_store_expirer *x);
/* How many keys it has deleted so far. */
size_t kapi_store_expired(kapi_store_expirer *x);
/* Stops it and waits for its thread (NULL is a no-op); what has not expired stays. */
void kapi_store_expire_stop(kapi_store_expirer *x);

#endif
