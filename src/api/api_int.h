/*
 * api internals shared by the files of src/api: the per-request context and the helpers
 * that answer a request. A kapi_req lives in its own arena, which is freed after the
 * answer has been handed to the http layer.
 */
#ifndef KAPI_API_INT_H
#define KAPI_API_INT_H

#include <stdatomic.h>

#include "api/api.h"
#include "authz/authz.h"
#include "codec/json.h"
#include "patch/patch.h"

typedef struct kapi_openapi kapi_openapi;
typedef struct kapi_watch_reaper kapi_watch_reaper;
typedef struct kapi_watch kapi_watch;
typedef struct kapi_filter kapi_filter;
typedef struct kapi_list_form kapi_list_form;

/* The room an object's encoding starts with (a write's stored bytes, its answer): most
 * objects fit, so the buffer is not grown five times from 64 bytes. */
#define KAPI_API_OBJECT_GUESS 2048

/* The last parses of the stored objects the type hooks read (write.c): a create's
 * namespace is read by every create in it. An entry holds its stored object, so an
 * object found by pointer is the one that was parsed. */
#define KAPI_API_HOOK_CACHE 16
typedef struct kapi_hook_cache {
    pthread_mutex_t mu;
    struct {
        kapi_obj *obj;
        json_t *parsed; /* storage view, shared: read only */
    } e[KAPI_API_HOOK_CACHE];
    size_t next;
} kapi_hook_cache;

/* The authorization stage (authorize.c). */
typedef struct kapi_authorizer kapi_authorizer;

struct kapi_api {
    kapi_store *store;
    kapi_hook_cache hook_cache;
    const kapi_registry *registry;
    const kapi_auth *auth;
    const char *server_address;
    kapi_openapi *openapi;      /* the documents, built from the registry at start */
    kapi_watch_reaper *watches; /* the open watches and their reaper */
    atomic_bool shutting_down;
    unsigned request_timeout_ms; /* --request-timeout */
    kapi_authorizer *authorizer;
    bool anonymous; /* --anonymous-auth */
    kapi_audit *audit;
};

typedef struct kapi_query_param {
    const char *key, *value; /* percent-decoded */
} kapi_query_param;

/* What the path and method say (reference 4.1), like kube-apiserver's RequestInfo. */
typedef struct kapi_reqinfo {
    bool is_resource;   /* under /api or /apis with a group and version */
    const char *prefix; /* "api" or "apis" */
    const char *group;  /* "" for the core group */
    const char *version;
    kapi_str ns;          /* empty when none; by length (a %00 in the path is a NUL in it) */
    const char *resource; /* plural; "" for a group-version document */
    kapi_str name;        /* empty when none; by length, as ns */
    const char *subresource;
    const char *verb; /* get list create update patch delete deletecollection watch */
    bool watch_path;  /* the deprecated /watch/ form: a watch whatever the query says */
    size_t nparts;    /* path parts after group/version (and namespace) */
} kapi_reqinfo;

/* The encoding of an answer. */
typedef enum kapi_format {
    KAPI_FORMAT_JSON,
    KAPI_FORMAT_YAML,
    KAPI_FORMAT_PROTOBUF, /* a built-in type's objects and lists, and Status errors */
} kapi_format;

/* What an answer's object is turned into (the as= parameter of the media type). */
typedef enum kapi_target {
    KAPI_TARGET_OBJECT,   /* the object itself */
    KAPI_TARGET_TABLE,    /* as=Table */
    KAPI_TARGET_POM,      /* as=PartialObjectMetadata */
    KAPI_TARGET_POM_LIST, /* as=PartialObjectMetadataList */
} kapi_target;

/* The form of an answer (reference 4.8), negotiated from the Accept header; all zero is
 * the object in JSON. */
typedef struct kapi_media {
    kapi_format format;
    kapi_target target;
    bool v1beta1; /* the target is of meta.k8s.io/v1beta1, else meta.k8s.io/v1 */
} kapi_media;

/* fieldValidation (reference 4.7): what to do with unknown and duplicate fields. */
typedef enum kapi_field_validation {
    KAPI_FV_WARN, /* the default: drop them, one Warning header each */
    KAPI_FV_IGNORE,
    KAPI_FV_STRICT, /* 400 naming all of them */
} kapi_field_validation;

/* The options of a write (CreateOptions, UpdateOptions, PatchOptions) from the query. */
typedef struct kapi_write_opts {
    bool dry_run;
    kapi_field_validation fv;
    /* The field manager: fieldManager, else the User-Agent's product (never NULL). */
    const char *manager;
    bool has_field_manager; /* fieldManager was given */
    bool has_force, force;  /* PatchOptions: force was given; its value */
} kapi_write_opts;

typedef struct kapi_req {
    kapi_arena arena;
    kapi_api *api;
    kapi_http_request *http;
    char *path; /* percent-decoded */
    kapi_query_param *query;
    size_t nquery;
    kapi_reqinfo info;
    kapi_user user;
    const kapi_type *type;    /* a reference until the request is answered */
    kapi_media media;         /* of the answer (negotiate.c) */
    kapi_format error_format; /* of an error answer: kube negotiates it without as= */
    /* Warning headers of the answer: the text of each, in the arena. */
    const char **warnings;
    size_t nwarnings, warnings_cap;
    /* What the metrics record (metrics.c): when the handler took the request, the status
     * of its answer (0 until answered), its verb as kube reports it (noted as it is
     * answered: the request's method and headers are the http layer's until then only),
     * the bytes of an answer sent whole, or that it was streamed. */
    int64_t start_ns;
    int status;
    const char *reported_verb;
    size_t resp_bytes;
    bool streamed;
    /* The request's record (api/audit.c): its audit ID (the Audit-ID header), when it came
     * (wall clock; start_ns is the monotonic time), who authenticated when user is an
     * impersonation, the authorization decision and its reason, and the error answered
     * (its Status). */
    char audit_id[37];
    int64_t received_ns;
    const kapi_user *authenticated; /* NULL: not impersonating */
    const char *decision, *reason;
    const kapi_error *failure;
    /* The written object's name (when the path has none), uid and resourceVersion, for
     * the audit Event's objectRef; in the arena, NULL when absent. */
    const char *object_name, *object_uid, *object_rv;
} kapi_req;

/* The options of a list or watch (metav1.ListOptions), from the query. */
typedef struct kapi_list_opts {
    bool watch;
    bool bookmarks;       /* allowWatchBookmarks */
    const char *rv;       /* resourceVersion; NULL when absent */
    const char *rv_match; /* resourceVersionMatch; "" when absent */
    int64_t limit;        /* 0: no limit */
    const char *cont;     /* continue; NULL when absent */
    int64_t timeout;      /* timeoutSeconds; 0 when absent */
    int send_initial;     /* sendInitialEvents (a watch list): -1 absent, else 0 or 1 */
} kapi_list_opts;

/* The verbs of a write. */
typedef enum kapi_write_verb {
    KAPI_WRITE_CREATE,
    KAPI_WRITE_UPDATE, /* of the main resource, or of w->subresource */
    KAPI_WRITE_DELETE,
} kapi_write_verb;

/* One write through the pipeline (kapi_api__write): what is written, by whom, and what
 * came of it. A request's write is made by kapi_api__write_init; kapi's own (the client
 * API of api.h) fill it themselves. */
typedef struct kapi_write {
    kapi_api *api;
    kapi_arena *arena; /* everything the write allocates that the answer needs */
    const kapi_user *user;
    const kapi_type *type;
    kapi_write_verb verb;
    kapi_str ns;                 /* the namespace of the path ("" when none) */
    kapi_str name;               /* update, delete: the name of the path */
    const char *subresource;     /* update: "" for the main resource, else "status", ... */
    json_t *obj;                 /* create, update: the object (served view); taken */
    bool dry_run;                /* create, update (a delete's is in del) */
    const kapi_delete_opts *del; /* delete: its options */
    kapi_req *req;               /* the request, whose answer gets the warnings; or NULL */
    const char *manager;         /* create, update: the field manager (api/managed.c) */
    bool managed;                /* obj's managedFields are set already (an apply's) */
    /* update: the stored object the write was made from (served view, borrowed) and its
     * revision; the update stage uses it rather than read it again while it is current. */
    const json_t *old;
    int64_t old_rev;
    /* The subresource managedFields record the write under when it is not subresource:
     * "scale" for a scale write, which updates the main resource. NULL otherwise. */
    const char *recorded_as;
    kapi_hook_ctx hooks; /* what the type's hooks are lent (set by kapi_api__write) */
    /* What came of it. */
    int status;       /* create, update: 201 when an object was created, else 200 */
    kapi_obj *stored; /* create, update: the stored object (a reference), or NULL */
    /* with stored, for a type whose view differs from the stored one: the stored object as
     * JSON (storage view, its resourceVersion set; a reference), which its answer is made
     * from without parsing the bytes again; else NULL */
    json_t *stored_json;
    json_t *unstored; /* or the object not stored (storage view): a dry run, or the last
                       * state of an object an update removed */
    json_t *deleted;  /* delete: the object as removed or as it now waits (served view) */
    bool removed;     /* delete: removed, not waiting for finalizers */
} kapi_write;

/* The type of a watch event. */
typedef enum kapi_watch_type {
    KAPI_WATCH_ADDED,
    KAPI_WATCH_MODIFIED,
    KAPI_WATCH_DELETED,
} kapi_watch_type;

/* reqinfo.c */
/* Decodes the path and query and fills r->info; a malformed escape is a 400. */
kapi_error *kapi_api__parse_request(kapi_req *r);
/* The value of query parameter key, or NULL. */
const char *kapi_api__query(const kapi_req *r, const char *key);
/* Query parameter key as metav1's url.Values conversions read it: a bool
 * (runtime.Convert_Slice_string_To_bool: absent, "0" and "false" in any case are false,
 * anything else true), or an int64 (strconv.ParseInt(v, 10, 64); absent leaves *out as
 * it is; a bad value is the 400 of strconv's error, as DecodeParameters answers). */
bool kapi_api__query_bool(const kapi_req *r, const char *key);
kapi_error *kapi_api__query_int(const kapi_req *r, const char *key, int64_t *out);

/* authorize.c */
/* The authorizer of the modes given (none: RBAC), watching the RBAC types. */
kapi_authorizer *kapi_api__authorizer_new(kapi_api *api, const kapi_authz_mode *modes, size_t n);
void kapi_api__authorizer_free(kapi_authorizer *z);
/* The attributes of r as user asks it (a non-resource request: its lower-cased method
 * and path; a namespace's own name is its namespace, as RequestInfo has it). */
void kapi_api__authz_attrs(kapi_req *r, const kapi_user *user, kapi_authz_attrs *a);
/* Whether system:masters or the modes allow a; reason gets the reason of the one that
 * allowed (only when why_allowed: it costs), or else the reasons they all gave, one per
 * line (kube's union). */
bool kapi_api__authorized(kapi_api *api, const kapi_authz_attrs *a, kapi_buf *reason,
                          bool why_allowed);
/* The rules the modes that resolve rules grant user in ns (kube's union RuleResolver:
 * AlwaysAllow everything, RBAC its bindings' rules); fn as kapi_rbac_visit's. */
void kapi_api__rules_for(kapi_api *api, const kapi_user *user, kapi_str ns,
                         bool (*fn)(void *ctx, const kapi_rbac_rule *rule, const char *err),
                         void *ctx);
/* kube's escalation check of a request's write of an RBAC object (its policy-based
 * storage): a Role or ClusterRole may grant only what the writer holds unless it may
 * "escalate"; a binding may name only a role whose rules the writer holds unless it may
 * "bind" it. old is the stored object of an update, NULL on create. NULL when allowed (or
 * not a request's write of an RBAC object). */
kapi_error *kapi_api__escalation_check(kapi_write *w, const json_t *obj, const json_t *old);
/* kube's 403 for a denied a: the Forbidden message, details group, kind and name. */
kapi_error *kapi_api__forbidden(const kapi_authz_attrs *a, const char *reason);
/* The authorization filter for r as r->user: NULL when allowed, else the 403. */
kapi_error *kapi_api__authorize(kapi_req *r);

/* review.c */
/* The answer to a create of a type that is never stored (an access review, a token
 * review, ...): obj (validated) with its status, or a new object (a new reference). */
json_t *kapi_api__review(kapi_write *w, json_t *obj);

/* impersonate.c */
/* The impersonation filter: true when r goes on (as the user its Impersonate-* headers
 * ask for, if any, in r->user); false when it has been answered (403, or kube's 500 for
 * groups, extras or a uid without a user). */
bool kapi_api__impersonate(kapi_req *r);

/* respond.c: each answers the request; the request must not be answered twice. */
void kapi_api__respond_error(kapi_req *r, kapi_error *err);           /* takes err */
void kapi_api__respond_json(kapi_req *r, int status, kapi_buf *body); /* takes body */
void kapi_api__respond_obj(kapi_req *r, int status, kapi_obj *obj);   /* takes the ref */
void kapi_api__respond_text(kapi_req *r, int status, const char *text);
/* A JSON answer made of chunks (ownership passes as for kapi_http_respond), in the form
 * the request negotiated (transformed when that is not the JSON object). */
void kapi_api__respond_chunks(kapi_req *r, int status, const kapi_http_chunk *c, size_t n);
/* Sends an answer as it is, with its Content-Type and the request's Warning headers. */
void kapi_api__send(kapi_req *r, int status, const char *content_type, const kapi_http_chunk *c,
                    size_t n);
/* The same with extra headers (no Content-Type, Warning or Audit-ID among them). */
void kapi_api__send_headers(kapi_req *r, int status, const char *content_type,
                            const kapi_http_header *extra, size_t nextra, const kapi_http_chunk *c,
                            size_t n);
/* The release of a chunk that holds a reference to a stored object (owner). */
void kapi_api__release_obj(void *owner);
/* Adds a Warning header (`299 - "<text>"`) to the answer. */
void kapi_api__warn(kapi_req *r, const char *fmt, ...) KAPI_PRINTF(2, 3);
/* The plain-text 404 of an unknown path. */
void kapi_api__respond_not_found_page(kapi_req *r);
/* Writes a metav1.Status for err (Failure) into b. */
void kapi_api__status_json(kapi_buf *b, const kapi_error *err);
/* The generic 404 ("the server could not find the requested resource") and 405. */
kapi_error *kapi_api__err_not_found_resource(void);
kapi_error *kapi_api__err_method_not_allowed(void);

/* Starts the request's chunked 200 of Content-Type type, with its Warning headers. */
kapi_http_stream *kapi_api__start_stream(kapi_req *r, const char *type, size_t max_queued);

/* audit_policy.c: --audit-policy-file, an audit.k8s.io/v1 Policy. */
typedef struct kapi_audit_policy kapi_audit_policy;
/* Reads and checks a Policy (YAML or JSON) into *out (the caller frees it), or a
 * BadRequest error naming the field. */
kapi_error *kapi_api__audit_policy_parse(const char *data, size_t len, kapi_audit_policy **out);
void kapi_api__audit_policy_free(kapi_audit_policy *p);
/* The level of the first rule matching a request (by who authenticated, the audit verb,
 * the request info and the decoded path) at a stage ("RequestReceived",
 * "ResponseComplete"), or NULL when it is not logged: no rule matches, the rule's level
 * is None, or the stage is omitted (by the policy or the rule). */
const char *kapi_api__audit_policy_level(const kapi_audit_policy *p, const kapi_user *u,
                                         const char *verb, const kapi_reqinfo *in, const char *path,
                                         const char *stage);

/* audit.c */
/* Stamps r when it comes: its audit ID (the client's Audit-ID header, else a new UUID) and
 * its times. */
void kapi_api__audit_start(kapi_req *r);
/* The RequestReceived Event, once the request is authenticated (before impersonation and
 * authorization, as kube's audit filter sits). */
void kapi_api__audit_received(kapi_req *r);
/* The httplog line of an answered request (-v=2; the caller checks the level). */
void kapi_api__log_request(kapi_req *r, int status);
/* The one place a request is seen answered, just before its answer goes: the request log
 * line (-v=2) and the audit Event. */
void kapi_api__answered(kapi_req *r, int status);
/* Notes what the audit Event's objectRef takes of a decoded request object (as kube's
 * LogRequestObject): its name when the path has none, its uid and resourceVersion. */
void kapi_api__audit_object(kapi_req *r, const json_t *obj);
/* Queues whole lines for the audit log's writer (waits while 4 MiB are pending). */
void kapi_api__audit_append(kapi_audit *a, const kapi_buf *lines);

/* health.c */
/* True when path is /healthz, /livez, /readyz or below one of them. */
bool kapi_api__health_endpoint(const char *path);
/* Answers a request for a health path (one kapi_api__health_endpoint accepts). */
void kapi_api__serve_health(kapi_req *r);

/* negotiate.c: the form of a resource's answers, from the Accept header. */
/* Picks r->media and r->error_format for a request on r->type (resolved), as
 * kube-apiserver's route and handler do; the 406 NotAcceptable when nothing acceptable. */
kapi_error *kapi_api__negotiate(kapi_req *r);
/* The handler's choice for Accept header accept (not empty): the first range, in
 * goautoneg's order, that matches JSON, YAML or (when protobuf is set) protobuf with
 * parameters the endpoint allows (as= only the conversions convert names); false when there is
 * none. */
bool kapi_api__choose_media(const char *accept, unsigned convert, bool protobuf, kapi_media *out);
/* The conversions of kapi_api__choose_media's convert. */
#define KAPI_CONVERT_METADATA 1u /* as=PartialObjectMetadata(List) */
#define KAPI_CONVERT_TABLE 2u    /* as=Table */
/* The form /api and /apis answer Accept header accept in: 2 the aggregated discovery of
 * apidiscovery.k8s.io/v2, 1 of v2beta1 (JSON, as=APIGroupDiscoveryList), 0 the old
 * APIVersions and APIGroupList documents (also when nothing else is acceptable). */
int kapi_api__discovery_form(const char *accept);

/* transform.c: the answer in the negotiated form. */
/* Replaces the JSON object in b (kapi's own, with kind and apiVersion) by its protobuf
 * form, enveloped; false (b unchanged) when kapi has no protobuf form for its kind. */
bool kapi_api__to_protobuf(const kapi_registry *reg, kapi_buf *b);
/* optionsForTransform: the includeObject of a Table ("", Metadata, Object or None), or
 * kube's 400. */
kapi_error *kapi_api__include_object(kapi_req *r, const char **out);
/* The protobuf answer of stored object o (its storage view, enveloped), made once per
 * stored revision and kept with o (kapi_obj_form); NULL when its kind has no protobuf form. */
const kapi_obj_form *kapi_api__protobuf_form(const kapi_registry *reg, kapi_obj *o);
/* Appends v (with kind and apiVersion) as protobuf to b, enveloped; false (b unchanged)
 * when kapi has no protobuf form for its kind. */
bool kapi_api__protobuf_of(const kapi_registry *reg, const json_t *v, kapi_buf *b);
/* The object of a watch event of type t in form m (its target): obj (the served view, with
 * kind and apiVersion) as a Table of its one row (includeObject include; the column
 * definitions when columns is set, else null, as kube sends them with a watch's first
 * event only), as its PartialObjectMetadata, or itself. A new reference. */
json_t *kapi_api__watch_object(const kapi_type *t, const kapi_media *m, const char *include,
                               json_t *obj, bool columns);
/* Answers with the JSON body c[0..n) (the chunks are released) turned into r->media's
 * form: YAML, Table or PartialObjectMetadata(List); a Status passes through. */
void kapi_api__respond_transformed(kapi_req *r, int status, const kapi_http_chunk *c, size_t n);
/* A list answer in r->media's form made item by item: list is the JSON list with no
 * items (taken); the 406 or 400 of a form a list cannot take. */
kapi_error *kapi_api__list_form_new(kapi_req *r, json_t *list, kapi_list_form **out);
void kapi_api__list_form_free(kapi_list_form *f);
/* The answer's Content-Type. */
const char *kapi_api__list_form_type(const kapi_list_form *f);
/* The whole answer of a list without items; of a buffered form, with the items given. */
void kapi_api__list_form_whole(kapi_list_form *f, kapi_buf *b);
/* True when the form keeps the items it is given (protobuf: the envelope's length comes
 * before them), so the answer is written whole, at the end, not split around them. */
bool kapi_api__list_form_buffered(const kapi_list_form *f);
/* The answer's bytes before its first item and after its last. */
void kapi_api__list_form_split(kapi_list_form *f, kapi_buf *head, kapi_buf *tail);
/* Appends the answer's element for item (the JSON list's item), first or not (to the
 * form itself when it is buffered). */
void kapi_api__list_form_item(kapi_list_form *f, const json_t *item, bool first, kapi_buf *b);

/* list.c */
/* Reads the ListOptions of the query: Go's errors for malformed numbers (400), the
 * 422 of ValidateListOptions. */
kapi_error *kapi_api__list_options(kapi_req *r, kapi_list_opts *o);
/* A resourceVersion as a revision (0 for NULL, "" and "0"); 400 when not a number. */
kapi_error *kapi_api__parse_rv(const char *rv, int64_t *out);
/* Reads a continue token as kube-apiserver's DecodeContinue does: *start gets the key to
 * continue after (in the arena, by length: a key may hold a NUL), *rev its revision; a
 * bad token is its 400. */
kapi_error *kapi_api__decode_continue(kapi_arena *a, const char *token, kapi_str *start,
                                      int64_t *rev);
/* Waits briefly for the store to reach rev; the 504 "Too large resource version" when it
 * does not. */
kapi_error *kapi_api__wait_for_revision(kapi_api *api, int64_t rev);
/* A read with no resourceVersion is consistent (kapi_store_sync): it sees every write
 * acknowledged before it, also by other kapi instances sharing etcd. *at gets 0 when the
 * cache has caught up, else the revision to read from etcd itself (kube-apiserver's
 * fallback when its cache lags); an error when etcd cannot tell its revision. */
kapi_error *kapi_api__consistent(kapi_api *api, int64_t *at);
/* Before a write lost to a race is tried again on the state read anew: on a store shared
 * with other instances, that state must hold the write that won (kapi_store_sync), or
 * the retry would lose again on the same state. */
void kapi_api__before_retry(kapi_api *api);
/* The list verb. */
void kapi_api__serve_list(kapi_req *r);
/* What a list's metadata says besides its revision: a continue token (NULL: none) and,
 * when has_remaining, remainingItemCount. */
typedef struct kapi_list_meta {
    int64_t rev;
    const char *continue_token;
    bool has_remaining;
    size_t remaining;
} kapi_list_meta;
/* Appends the JSON of a list of t before its first item (head) and after its last (tail,
 * with the closing newline), for every answer that is a list (list, deletecollection). A
 * typed list is kind, apiVersion, metadata, items (each without kind and apiVersion); an
 * unstructured one (custom resources) has its members sorted and always a continue. */
void kapi_api__list_envelope(kapi_buf *head, kapi_buf *tail, const kapi_type *t,
                             const kapi_list_meta *m);

/* filter.c: the labelSelector and fieldSelector of a list or watch. */
/* Parses both (400 for bad syntax or an unsupported field label); a name (not empty)
 * selects that one object, compared by length with the name its key holds. *out is NULL
 * when nothing is selected. */
kapi_error *kapi_api__filter_new(kapi_req *r, kapi_str name, kapi_filter **out);
/* True if the stored object passes the selectors (NULL f passes everything). */
bool kapi_api__filter_match(const kapi_filter *f, const kapi_obj *o);
void kapi_api__filter_free(kapi_filter *f);

/* write.c: the one write function. Every write (a request's create, update, patch,
 * delete, subresource write; kapi's own through the client API) comes here:
 *   admit (kapi_type_admit) → server metadata and defaults (prepare_*) → validate →
 *   store (kapi_api__store_write)
 * decode before it and encode after it are the caller's (a request's body and answer). */
/* The hook cache's lifetime (write.c). */
void kapi_api__hook_cache_init(kapi_hook_cache *c);
void kapi_api__hook_cache_dispose(kapi_hook_cache *c);
/* Runs w; NULL, or the error of the stage that refused it. Takes w->obj. */
kapi_error *kapi_api__write(kapi_write *w);
/* The stages of a create that stores nothing, a TokenRequest through its subresource (the
 * request's): obj (of the subresource's kind, decoded) gets its managedFields as manager's,
 * then the create is admitted as one of the request's type, at the request's namespace
 * and name. NULL, or the admission's refusal. */
kapi_error *kapi_api__create_unstored(kapi_req *r, const kapi_subresource *sub, const char *manager,
                                      json_t *obj);
/* Starts a write of the request's type at the request's path, as its user. */
void kapi_api__write_init(kapi_write *w, kapi_req *r, kapi_write_verb verb);
/* The store stage: encodes obj (served view; borrowed) in the storage view and
 * commits it as op, expecting revision expect_rev; *out gets the stored object. An
 * update whose bytes are those of cur (the object it replaces, or NULL) but for the
 * resourceVersion writes nothing and answers cur, as kube-apiserver's GuaranteedUpdate
 * skips a write that changes nothing. With json set, *json gets the object stored as
 * JSON (storage view, its resourceVersion set) when one was stored. With dry set
 * nothing is stored and *dry gets the
 * object that would have been (storage view). */
kapi_error *kapi_api__store_write(kapi_api *api, kapi_arena *a, const kapi_type *t, json_t *obj,
                                  kapi_store_op op, int64_t expect_rev, kapi_obj *cur,
                                  kapi_obj **out, json_t **json, json_t **dry);
/* The stages of the verbs (rest.c, delete.c); only kapi_api__write calls them. */
kapi_error *kapi_api__create_stage(kapi_write *w);
kapi_error *kapi_api__update_stage(kapi_write *w);
kapi_error *kapi_api__delete_stage(kapi_write *w);

/* delete.c */
/* Reads DeleteOptions from the body, or from the query when there is no body. */
kapi_error *kapi_api__delete_options(kapi_req *r, kapi_delete_opts *d);
/* Removes the object at key (at revision rev) whose update emptied its finalizers; *out
 * gets its last state (storage view) with the removal's revision. */
kapi_error *kapi_api__finish_deletion(kapi_api *api, kapi_arena *a, const kapi_type *t,
                                      kapi_str key, int64_t rev, bool dry, const json_t *obj,
                                      json_t **out);
void kapi_api__serve_delete(kapi_req *r);
void kapi_api__serve_deletecollection(kapi_req *r);

/* watch.c */
void kapi_api__serve_watch(kapi_req *r);
/* The watch reaper of api (started with the api, stopped with it). */
kapi_watch_reaper *kapi_api__watch_reaper_new(kapi_api *api);
void kapi_api__watch_reaper_free(kapi_api *api);
/* Wakes the reaper: a watch has ended. */
void kapi_api__watch_wake(kapi_api *api);

/* discovery.c */
/* True if group (or group/version) is served, by a built-in type or a stored CRD. */
bool kapi_api__group_served(kapi_req *r, const char *group);
bool kapi_api__group_version_served(kapi_req *r, const char *group, const char *version);
/* Answers /version, /api, /apis, /apis/<g>, and the group-version documents. */
void kapi_api__serve_version(kapi_req *r);

/* ---- metrics (metrics.c) ---- */

/* Notes what the metrics record of an answer as it is made (respond.c, which makes every
 * answer of the api): its status, and its verb as kube reports it, read now since the
 * request's method and headers are the http layer's once it is answered. */
void kapi_api__metrics_answer(kapi_req *r, int status);
/* Records a request that has been answered: apiserver_request_total, its latency and
 * (reads) its response size. Called once, where the handler ends. */
void kapi_api__metrics_request(const kapi_req *r);
/* Records a request the http layer answered itself (kapi_api_refused):
 * apiserver_request_terminations_total with its code, and for a 429
 * apiserver_request_total too, as kube's max-in-flight filter records what it drops. */
void kapi_api__metrics_refused(const kapi_req *r);
/* A watch of t registered (delta 1) or ended (-1), with its scope label; returns its
 * kind's series of apiserver_watch_events_total, which the watch counts its events in. */
struct kapi_metric_series *kapi_api__metrics_watch(const kapi_type *t, const char *scope,
                                                   int delta);
/* The api's collectors (storage objects, the process): registered by kapi_api_new,
 * removed by kapi_api_free. */
void kapi_api__metrics_init(kapi_api *api);
void kapi_api__metrics_dispose(kapi_api *api);
/* GET /metrics: the exposition, in the format Accept asks for. */
void kapi_api__serve_metrics(kapi_req *r);
void kapi_api__serve_api_versions(kapi_req *r);
void kapi_api__serve_group_list(kapi_req *r);
/* /api (core) or /apis as an APIGroupDiscoveryList of apidiscovery.k8s.io/v2 (form 2) or
 * v2beta1 (form 1): every group version served and its resources. */
void kapi_api__serve_aggregated(kapi_req *r, bool core, int form);
void kapi_api__serve_group(kapi_req *r, const char *group);
void kapi_api__serve_resource_list(kapi_req *r, const char *group, const char *version);

/* custom.c: custom resource types, from the CRDs in the store (the registry's cache). */
/* The type serving the request's group/version/resource from an Established CRD, a reference
 * (NULL when no CRD serves it); creates while the CRD terminates are a 405. */
kapi_error *kapi_api__custom_type(kapi_req *r, const kapi_type **out);

/* openapi.c: /openapi/v2 and /openapi/v3[/...], built from the registry at the first request. */
kapi_openapi *kapi_api__openapi_new(const kapi_registry *reg);
void kapi_api__openapi_free(kapi_openapi *o);
void kapi_api__serve_openapi(kapi_req *r);
/* openapi_pb.c: a Swagger 2.0 document as gnostic's openapi_v2.Document protobuf. */
char *kapi_api__openapi_v2_proto(const json_t *doc, size_t *len);

/* rest.c: the verbs on a resolved type, and what the other verbs share. */
void kapi_api__serve_resource(kapi_req *r);
/* The 404 of a named object; the Status of a failed store write. Names are taken by
 * their length and shown as Go's %q shows them. */
kapi_error *kapi_api__err_not_found(kapi_arena *a, const kapi_type *t, kapi_str name);
kapi_error *kapi_api__err_store(kapi_arena *a, kapi_store_rc rc, const kapi_type *t, kapi_str name);
/* Go's %q of s, in the arena. */
const char *kapi_api__quote(kapi_arena *a, kapi_str s);
/* s as a message shows it with %s, in the arena: its bytes, a NUL (which a C string
 * cannot carry) written as \x00. */
const char *kapi_api__shown(kapi_arena *a, kapi_str s);
/* The namespace rules of a write of t at namespace ns: the body's metadata (meta) may
 * leave it out (it is filled in) or repeat it; another is kube's 400. */
kapi_error *kapi_api__body_namespace(const kapi_type *t, kapi_str ns, json_t *meta);
/* metadata.name of meta by its length (a JSON name may hold \u0000); empty when none. */
kapi_str kapi_api__name_of(const json_t *meta);
/* Parses stored bytes (they were written by kapi, so they parse). */
json_t *kapi_api__parse_stored(const kapi_obj *o);
/* Answers with an object that was not stored (storage view; the function takes it), or
 * with a stored one (takes the reference), in the type's view. */
void kapi_api__respond_unstored(kapi_req *r, const kapi_type *t, int status, json_t *stored);
void kapi_api__respond_stored(kapi_req *r, const kapi_type *t, int status, kapi_obj *o);
/* Answers a create, update or patch with what came of write w: err, or the object stored
 * or (dry run) not stored. */
void kapi_api__respond_written(kapi_req *r, kapi_write *w, kapi_error *err);
/* decode.c: a write's options and its body, decoded against the type's schema. */
/* Reads fieldManager, dryRun and fieldValidation (and for "PatchOptions", force; apply
 * says whether the patch is an apply, which needs a fieldManager and alone may force);
 * options_kind ("CreateOptions", ...) names them in the 422 when a value is not
 * supported. */
kapi_error *kapi_api__write_options(kapi_req *r, const char *options_kind, bool apply,
                                    kapi_write_opts *o);
/* Decodes the body into an object of r->type: kind and apiVersion checked, unknown and
 * duplicate fields handled as o->fv says, Go type errors answered, zero values and
 * defaults filled in, members in Kubernetes' order. */
kapi_error *kapi_api__decode_object(kapi_req *r, const kapi_write_opts *o, json_t **out);
/* The same, into an object of t rather than of the request's type (a subresource's own
 * kind). */
kapi_error *kapi_api__decode_as(kapi_req *r, const kapi_type *t, const kapi_write_opts *o,
                                json_t **out);

/* Makes the result of a patch again (a new reference, or NULL). */
typedef json_t *(*kapi_api_remake)(void *ctx);

/* The result of a patch (doc, taken), decoded like an update body, in place, into *out.
 * A value of the wrong type, or an unknown field under fieldValidation=Strict, is
 * kube-apiserver's 422 naming "patch" with the patched object as JSON as it was before
 * decoding, or with Go's %v of the patch when smp (the strategic merge patch, borrowed)
 * is given. For that message the patched object is made again by remake(ctx): errors
 * are rare, and copying every patched object to keep it cost a tenth of a patch. */
kapi_error *kapi_api__decode_patched(kapi_req *r, const kapi_write_opts *o, json_t *doc,
                                     const json_t *smp, kapi_api_remake remake, void *ctx,
                                     json_t **out);

/* patch.c */
void kapi_api__serve_patch(kapi_req *r);
/* The stored object at the request's key as the client reads it (served view), and its
 * revision (rev may be NULL); the 404 when there is none. */
kapi_error *kapi_api__current(kapi_req *r, json_t **out, int64_t *rev);
/* An apply body as kube-apiserver reads it (sigs.k8s.io/yaml into a map): *out an object
 * (empty for an empty or null body), its repeated keys into dups; a 400 in the
 * converter's words otherwise. */
kapi_error *kapi_api__decode_apply(kapi_req *r, json_t **out, kapi_dups *dups);
/* The patch type the request's Content-Type names; the 415 of any other. */
kapi_error *kapi_api__patch_type(kapi_req *r, kapi_patch_type *out);

/* managed.c: metadata.managedFields on the write pipeline. */
/* The field manager kube-apiserver derives from a User-Agent: its product (what comes
 * before the first '/'), printable characters only, at most 128 bytes. */
const char *kapi_api__manager_from_user_agent(kapi_arena *a, const char *ua);
/* metav1's ValidateFieldManager: at most 128 bytes, printable characters only; appends
 * the causes to *err (made when NULL). */
void kapi_api__check_field_manager(kapi_error **err, const char *fm);
/* The managedFields of obj after live (NULL for a create) became obj by write w, as
 * kube-apiserver's field manager sets them; nothing when w->managed. */
void kapi_api__manage(kapi_write *w, const json_t *live, json_t *obj);
/* Server-side apply of config (the decoded body, borrowed) by w->manager onto live
 * (NULL: no such object yet): *out gets the object to write (a new reference, its
 * managedFields set, not defaulted yet), or the error (400, 409 conflicts, 500). */
kapi_error *kapi_api__apply(kapi_write *w, const json_t *live, const json_t *config, bool force,
                            json_t **out);

/* scale.c: get, update and patch of a custom resource's scale subresource. */
void kapi_api__serve_scale(kapi_req *r);

/* serviceaccounts.c: ServiceAccount tokens. */
/* The TokenRequest subresource (serviceaccounts/token): issues a token. */
void kapi_api__serve_token(kapi_req *r);
/* Answers /.well-known/openid-configuration and /openid/v1/jwks (and their paths with a
 * trailing '/'): true when path is one of them. */
bool kapi_api__serve_openid(kapi_req *r);
/* What authentication asks of the store about a ServiceAccount (auth.h, kapi_sa_lookup). */
bool kapi_api__sa_get(void *ctx, kapi_str ns, kapi_str name, kapi_arena *a, const char **uid,
                      int64_t *deleted);

/* objects.c: the generic rules of every object. */
/* Checks kind/apiVersion of a decoded body against t, filling them in when absent (a
 * custom resource's kind is left to validation). */
kapi_error *kapi_api__check_kind(const kapi_type *t, json_t *obj);
/* The 400 "the object provided is unrecognized (must be of type <Kind>): <what> (<the
 * body's first 30 bytes> ...)". */
kapi_error *kapi_api__unrecognized(const char *kind, const char *what, const char *body, size_t n);
/* Puts kind, apiVersion, metadata first and the members of metadata in Kubernetes'
 * order, labels and annotations sorted; a custom resource has every member sorted, as
 * Go writes an unstructured object. Returns a new reference. */
json_t *kapi_api__canonical(const kapi_type *t, const json_t *obj);
/* kapi_api__canonical of obj (a reference, taken): obj itself, its metadata put in order,
 * when no one else holds it and its members begin with kind, apiVersion and metadata (a
 * storage view its type's to_storage made), so that its other members are not copied. */
json_t *kapi_api__canonical_take(const kapi_type *t, json_t *obj);
/* Encodes obj for storage with the revision gap; returns the heap bytes. */
char *kapi_api__encode_stored(const json_t *obj, size_t *len, size_t *rv_off);
/* Decodes a request body (JSON, YAML, protobuf) into an object (a 400/415 error
 * otherwise; kind names what the body must be: the type's kind, "DeleteOptions"); the
 * repeated keys of a JSON or YAML body go into dups. */
kapi_error *kapi_api__decode_body(kapi_req *r, const char *kind, json_t **out, kapi_dups *dups);
/* "2024-01-02T03:04:05Z" for now, in the arena. */
const char *kapi_api__now(kapi_arena *a);

#endif
