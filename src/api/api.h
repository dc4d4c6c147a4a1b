/*
 * api: the request pipeline. One entry point, kapi_api_handle, runs on a worker thread
 * for every HTTP request and reads top to bottom:
 *
 *   request info → authenticate → route (health, version, discovery, OpenAPI, resources)
 *   → negotiate → decode → write → encode
 *
 * Every write, a request's or kapi's own (the client API below), goes through one
 * function, kapi_api__write (write.c), whose stages are:
 *
 *   admit          kapi_type_admit: the namespace lifecycle, the type's admit hook
 *   metadata       rest.c (create, update), delete.c (delete): uid, timestamps,
 *                  generation, deletion's two phases, the type's before_delete hook
 *   default        registry: kapi_type_prepare_* and the type's prepare_* hooks
 *   validate       registry: kapi_type_validate, kapi_type_validate_subresource
 *   store          write.c: kapi_api__store_write (the storage view, compare-and-swap)
 *
 * and around it, for a request: reqinfo.c (request info), negotiate.c (the answer's
 * form), decode.c and objects.c (the body), respond.c and transform.c (the answer).
 *
 * Every failure is a kapi_error made where it is found and rendered once, at the end, as
 * a metav1.Status (DESIGN.md invariant 5). Everything a request allocates lives in its
 * arena (invariant 6).
 */
#ifndef KAPI_API_H
#define KAPI_API_H

#include "auth/auth.h"
#include "http/http.h"
#include "registry/registry.h"
#include "store/store.h"

typedef struct kapi_api kapi_api;

/* The largest request body the api reads (kube-apiserver's MaxRequestBodyBytes, 3 MiB):
 * main gives it to the http layer as max_body, which flags a longer body instead of
 * reading it, and kapi_api_handle answers that 413 naming this limit. */
#define KAPI_API_MAX_BODY ((size_t)3 << 20)

/* The authorizers of --authorization-mode (system:masters is always allowed first). */
typedef enum kapi_authz_mode {
    KAPI_AUTHZ_ALWAYS_ALLOW,
    KAPI_AUTHZ_ALWAYS_DENY,
    KAPI_AUTHZ_RBAC,
} kapi_authz_mode;
#define KAPI_AUTHZ_MAX_MODES 3

/* The audit log (api/audit.c): audit.k8s.io/v1 Event lines at the Metadata level, one per
 * answered request, written by a thread of its own from a bounded buffer (a request waits
 * only while the buffer is full). */
typedef struct kapi_audit kapi_audit;

typedef struct kapi_api_config {
    kapi_store *store;
    const kapi_registry *registry;
    const kapi_auth *auth;
    unsigned request_timeout_ms; /* --request-timeout: the longest a request may take */
    /* --authorization-mode, in order; none: RBAC */
    kapi_authz_mode authz_modes[KAPI_AUTHZ_MAX_MODES];
    size_t nauthz_modes;
    bool anonymous;    /* --anonymous-auth: a request without credentials is system:anonymous */
    kapi_audit *audit; /* --audit-log-path: where each request's audit Event goes; or NULL */
} kapi_api_config;

typedef struct kapi_audit_config {
    const char *path;        /* --audit-log-path: appended to; "-": stdout */
    const char *policy_file; /* --audit-policy-file: the requests logged; NULL: every one */
    /* --audit-log-maxsize (in bytes here; 0: never): a file that would grow past it is
     * renamed <name>-<UTC time>.<ext> (lumberjack's name) and a new one started; of those,
     * --audit-log-maxbackup are kept (0: all). Not for stdout. */
    int64_t max_bytes;
    int max_backups;
} kapi_audit_config;
/* Opens the log and starts the writer. */
kapi_error *kapi_audit_new(kapi_audit **out, const kapi_audit_config *cfg);
/* Writes what is buffered, stops the writer, closes the file. NULL is a no-op. */
void kapi_audit_free(kapi_audit *a);

kapi_api *kapi_api_new(const kapi_api_config *cfg);
void kapi_api_free(kapi_api *api);

/* The http handler (kapi_http_handler); ctx is the kapi_api. */
void kapi_api_handle(kapi_http_request *req, void *ctx);

/* The http classifier (kapi_http_classify); ctx is the kapi_api. As kube-apiserver's
 * filters: a watch is long-running; get, list (and any GET or HEAD) are READ, every other
 * verb MUTATE, with the request timeout, or the timeout parameter when it is shorter. */
kapi_http_admission kapi_api_classify(const kapi_http_request *req, void *ctx);
/* The http layer's refused (kapi_http_config): a request answered busy (429) before the
 * handler saw it is counted as kube-apiserver counts a request its max-in-flight filter
 * drops (apiserver_request_total and apiserver_request_terminations_total) and logged at
 * -v=2; not audited, since it is refused before it is authenticated. One answered 504 at
 * its deadline counts in apiserver_request_terminations_total, as kube's timeout filter
 * counts it (its handler counts its own answer). A custom resource's request is counted
 * without its group, version and resource; other answers are not counted here. */
void kapi_api_refused(const kapi_http_request *req, int status, void *ctx);

/* The answers the http layer writes itself: past the in-flight limits a 429
 * TooManyRequests Status with Retry-After: 1, with kube-apiserver's message; past a
 * deadline kube-apiserver's timeout filter's 504 (its exact bytes). */
extern const kapi_http_answer kapi_api_busy_answer;
extern const kapi_http_answer kapi_api_timeout_answer;

/* ---- the api as a client ----
 *
 * kapi's own writers (the controllers, the namespaces made at start) use the api as a
 * client would, through these: each runs the same pipeline as a request's verb (admit,
 * server metadata and defaults, validate, store), as user, and may be called from any
 * thread. Objects are JSON in the type's served view; *out (when not NULL) gets a new
 * reference. Names are taken by length (a name may hold a NUL). */

/* The options of a delete (metav1.DeleteOptions). */
typedef struct kapi_delete_opts {
    bool dry_run;
    const char *propagation;      /* propagationPolicy; NULL when absent */
    const char *pre_uid, *pre_rv; /* preconditions; NULL when absent */
    bool has_orphan, orphan;      /* the deprecated orphanDependents */
    int64_t grace;                /* gracePeriodSeconds; -1 when absent */
} kapi_delete_opts;

/* kube-apiserver's loopback identity (system:apiserver, in system:masters): the writes
 * kapi makes for itself at start. */
extern const kapi_user kapi_api_loopback_user;

/* The object of t at ns/name; the 404 when there is none. */
kapi_error *kapi_api_get(kapi_api *api, const kapi_type *t, kapi_str ns, kapi_str name,
                         json_t **out);
/* Every object of t in ns ("": all namespaces), as a JSON array; *rev gets the revision
 * the list was read at (may be NULL). */
kapi_error *kapi_api_list(kapi_api *api, const kapi_type *t, kapi_str ns, json_t **out,
                          int64_t *rev);
/* Calls fn with each object of t in ns ("": all namespaces) as stored (its bytes in the
 * storage version, borrowed for the call), nothing parsed or converted; *rev (may be NULL)
 * gets the revision the list was read at. For a caller that reads a few members of every
 * object (kapi_json_pick) without holding them all parsed at once. */
kapi_error *kapi_api_list_stored(kapi_api *api, const kapi_type *t, kapi_str ns,
                                 void (*fn)(void *ctx, const kapi_obj *o), void *ctx, int64_t *rev);
/* The names of at most limit objects of t in ns (0: no limit), in key order, after the
 * object named after (empty: from the first); *names is an array in the arena a, its
 * names too. Nothing is parsed: a caller that needs only names reads a namespace of any
 * size in pages of bounded memory. */
kapi_error *kapi_api_list_names(kapi_api *api, const kapi_type *t, kapi_str ns, kapi_str after,
                                size_t limit, kapi_arena *a, kapi_str **names, size_t *n);
/* Creates obj (taken; decoded as a body is: defaults, Go types) in ns. */
kapi_error *kapi_api_create(kapi_api *api, const kapi_user *user, const kapi_type *t, kapi_str ns,
                            json_t *obj, json_t **out);
/* Updates the object obj names (taken), at the revision its metadata.resourceVersion
 * names ("" or none: unconditionally), through subresource sub ("" for the main
 * resource, "status", "finalize"). An update that leaves a deleted object with nothing
 * holding it removes it: *out is then its last state. */
kapi_error *kapi_api_update(kapi_api *api, const kapi_user *user, const kapi_type *t,
                            const char *sub, json_t *obj, json_t **out);
/* Deletes the object of t at ns/name as DeleteOptions d say; *removed (may be NULL)
 * tells whether it went or waits for finalizers, *out is its state either way. */
kapi_error *kapi_api_delete(kapi_api *api, const kapi_user *user, const kapi_type *t, kapi_str ns,
                            kapi_str name, const kapi_delete_opts *d, json_t **out, bool *removed);
/* Watches the objects of t in ns ("": all namespaces) from after revision from, as
 * kapi_store_watch_start does (fn's contract is kapi_store_watch_fn's: quick, on the
 * store's thread, never calling back into the store's watch functions). */
kapi_store_rc kapi_api_watch_start(kapi_api *api, const kapi_type *t, kapi_str ns, int64_t from,
                                   kapi_store_watch_fn fn, void *ctx, kapi_store_watch **out);
void kapi_api_watch_stop(kapi_api *api, kapi_store_watch *w);

/* The registry the api serves (borrowed). */
const kapi_registry *kapi_api_registry(const kapi_api *api);

/* Sets the address /api reports (host:port), once the port is bound; before serving. */
void kapi_api_set_server_address(kapi_api *api, const char *address);

/* Stops serving new requests with success: /readyz answers 503 from now on. */
void kapi_api_set_shutting_down(kapi_api *api);

#endif
