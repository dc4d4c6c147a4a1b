/*
 * registry: every resource type kapi serves, as one kapi_type (DESIGN.md invariant 1).
 *
 * Built-in types are data: src/registry/types/<group>.<plural>.json, embedded at build
 * time. Each file gives the facts of one served group/version/resource (kind, plural,
 * scope, short names, categories, verbs, subresources, where it is stored, the field
 * labels its fieldSelector accepts, its Table columns) and the name of its strategy, the
 * small table of hooks with the code special to the type (namespace defaults, the
 * events.k8s.io view of core Events, ...).
 *
 * Two served types may share one stored resource (core/v1 and events.k8s.io/v1 Events):
 * objects are stored in the storage view, and a type with a `view` hook converts.
 *
 * The registry owns every kapi_type, built-in and custom, and the layout of store keys
 * (kapi_type_key, kapi_type_key_parse): no other module builds or parses a key. It alone
 * reads a stored CRD's fields: the api hands it the CRDs, for a request's type (the
 * custom type cache) and for discovery (kapi_registry_served).
 *
 * Threads: the built-in part is immutable after kapi_registry_new, and any thread may
 * read it. The custom part (the custom type cache, below) changes as CRDs change: its
 * functions may be called from any thread (a mutex inside guards it), and every type it
 * gives out is a reference for the caller, who drops it (kapi_type_unref) when done; a
 * custom type is freed when its last reference is dropped, never while in use.
 */
#ifndef KAPI_REGISTRY_H
#define KAPI_REGISTRY_H

#include <jansson.h>

#include "base/status.h"
#include "schema/schema.h"
#include "select/select.h"
#include "smd/smd.h"
#include "store/store.h"
#include "webhook/webhook.h"

typedef struct kapi_type kapi_type;
typedef struct kapi_custom kapi_custom;
typedef struct kapi_registry kapi_registry;

/* What a hook may ask of the write that calls it: the pipeline builds one per write and
 * lends it for the call (nothing in it outlives the write). The hooks reach the store
 * only through get, so the registry needs none of the api's internals. */
typedef struct kapi_hook_ctx kapi_hook_ctx;
struct kapi_hook_ctx {
    const kapi_registry *registry;
    kapi_arena *arena; /* the write's arena: what a hook allocates for its answer */
    const char *now;   /* the write's time, "2024-01-02T03:04:05Z" */
    /* The stored object of type t at ns/name (storage view, a new reference), or NULL when
     * there is none. Read only: the parse may be shared with other writes. */
    json_t *(*get)(const kapi_hook_ctx *c, const kapi_type *t, kapi_str ns, kapi_str name);
    /* Delete hooks only: applies the delete's propagation policy to the finalizers of meta
     * (deletionFinalizersForGarbageCollection); true when they changed. */
    bool (*propagate)(const kapi_hook_ctx *c, json_t *meta);
    void *pipeline; /* the caller's own, for get and propagate */
};

/* The writes admission sees. */
typedef enum kapi_admit_op {
    KAPI_ADMIT_CREATE,
    KAPI_ADMIT_DELETE,
} kapi_admit_op;

/* What a type's before_delete hook decided. */
typedef enum kapi_delete_step {
    KAPI_DELETE_GENERIC, /* the generic delete goes on: policy, finalizers, removal */
    KAPI_DELETE_WAIT,    /* the object stays as it is: answered, nothing written */
    KAPI_DELETE_MARKED,  /* the hook marked the object as being deleted: stored, answered */
} kapi_delete_step;

/* What a delete without a propagation policy does to the object's dependents (the type
 * file's "gcPolicy"; kube's DefaultGarbageCollectionPolicy of the type's strategy). */
typedef enum kapi_gc_policy {
    KAPI_GC_DELETE_DEPENDENTS, /* absent: the garbage collector deletes them (Background) */
    KAPI_GC_ORPHAN,            /* "Orphan": they are orphaned (batch/v1 Jobs) */
    KAPI_GC_UNSUPPORTED,       /* "Unsupported": no policy applies (Events never own) */
} kapi_gc_policy;

/* The rule a type's metadata.name follows (the type file's "nameRule"). */
typedef enum kapi_name_rule {
    KAPI_NAME_RULE_SUBDOMAIN, /* "subdomain" (the default): a DNS-1123 subdomain */
    KAPI_NAME_RULE_LABEL,     /* "label": a DNS-1123 label */
    KAPI_NAME_RULE_DNS1035,   /* "dns1035": a DNS-1035 label */
    KAPI_NAME_RULE_RBAC,      /* "rbac": a path segment, generateName held to it too */
} kapi_name_rule;

/* The message of a fieldSelector label a type does not support: the conversion function
 * kube registers for the kind, or the default one when it registers none. */
typedef enum kapi_field_label_error {
    /* "default": runtime.DefaultMetaV1FieldSelectorConversion's "\"x\" is not a known
     * field selector: only ..." */
    KAPI_FIELD_LABEL_DEFAULT,
    /* "notSupported": the core conversion funcs' "field label not supported: x" */
    KAPI_FIELD_LABEL_NOT_SUPPORTED,
    /* "notSupportedForKind": "field label \"x\" not supported for <Kind>" (batch Jobs) */
    KAPI_FIELD_LABEL_NOT_SUPPORTED_FOR_KIND,
} kapi_field_label_error;

/* Code special to a type. Every hook is optional. obj is the whole object in the
 * type's own (served) view, kind and apiVersion included. */
typedef struct kapi_type_strategy {
    const char *name;
    /* Sets the fields the server fills on create (after metadata is set, and after a
     * type with a status subresource has dropped the body's status). */
    void (*prepare_create)(const kapi_type *t, json_t *obj);
    /* Carries over what an update may not change (old is the stored object), beyond the
     * status a type with a status subresource keeps. */
    void (*prepare_update)(const kapi_type *t, json_t *obj, const json_t *old);
    /* The same for a write to subresource sub ("status", "finalize"). For "status" the
     * pipeline has already kept every member of old but metadata and status; the hook
     * keeps what else the type's status strategy keeps (metadata). A subresource other
     * than status changes only what this hook lets it change. */
    void (*prepare_subresource)(const kapi_type *t, const char *sub, json_t *obj,
                                const json_t *old);
    /* Convert objs[0..n) in place between this type's view and the stored one; NULL
     * when the views are equal. Each element is a reference the hook may replace with
     * the converted object. They answer NULL, or the error of a conversion that failed (a
     * custom resource's conversion webhook): then each element is still a reference, some
     * perhaps converted, and the caller answers the error. Called through
     * kapi_type_to_storage / kapi_type_from_storage. */
    kapi_error *(*to_storage)(const kapi_type *t, json_t **objs, size_t n);
    kapi_error *(*from_storage)(const kapi_type *t, json_t **objs, size_t n);
    /* Appends to b the JSON of stored in this type's view, byte for byte what
     * from_storage and kapi_json_encode make of it, without building the view; NULL:
     * kapi_type_encode_from_storage converts, then encodes. */
    void (*encode_from_storage)(const kapi_type *t, kapi_buf *b, const json_t *stored);
    /* Kubernetes' Validate / ValidateUpdate of the type: appends to err the causes of obj
     * (served view, after defaulting and prepare_*), old NULL on create, else the stored
     * object in the served view; metadata included where Kubernetes checks it. Without
     * the hook a type's metadata is checked by its nameRule. A type whose REST refuses a
     * body outright (kube's BadRequest of a TokenReview without a token) makes err that
     * error instead (kapi_registry__refuse), and it is answered as it is. */
    void (*validate)(const kapi_type *t, const json_t *obj, const json_t *old, kapi_error *err);
    /* The same for a write to subresource sub ("status", "finalize"): obj is the object
     * as it would be stored, old the stored one. */
    void (*validate_subresource)(const kapi_type *t, const char *sub, const json_t *obj,
                                 const json_t *old, kapi_error *err);
    /* Decodes a body of the type when its schema alone does not (custom resources:
     * metadata as ObjectMeta, the rest pruned and defaulted by the CRD's schema); as
     * kapi_schema_decode. */
    kapi_error *(*decode)(const kapi_type *t, json_t *obj, kapi_schema_walk *w);
    /* Kubernetes' WarningsOnCreate / WarningsOnUpdate: calls warn(ctx, text) for each
     * warning a valid obj earns (old NULL on create). */
    void (*warnings)(const kapi_type *t, const json_t *obj, const json_t *old,
                     void (*warn)(void *ctx, const char *text), void *ctx);
    /* Admission of the type's own (kube's admission plugins for it): op on obj (served
     * view; a create's after the server's metadata and before defaulting, a delete's the
     * stored object). NULL lets the write go on, else the error refuses it. Called by
     * kapi_type_admit, after the admission every type gets. */
    kapi_error *(*admit)(const kapi_type *t, const kapi_hook_ctx *c, kapi_admit_op op,
                         const json_t *obj);
    /* The type's own delete (its REST Delete), before the generic one: obj is the stored
     * object (served view), which the hook may change. It answers whether the generic
     * delete goes on, the object waits as it is, or the hook marked it for deletion
     * (deletionTimestamp set): then the pipeline stores obj and answers it. */
    kapi_delete_step (*before_delete)(const kapi_type *t, const kapi_hook_ctx *c, json_t *obj);
    /* True while the type's own finalization still holds obj (being deleted, no
     * metadata.finalizers left): an update that leaves it so does not remove it (kube's
     * ShouldDeleteDuringUpdate of the type). */
    bool (*finalizing)(const kapi_type *t, const json_t *obj);
} kapi_type_strategy;

/* The code of a computed Table cell (registry/printers.c, by the name a column's "cell"
 * gives): value is what the column's jsonPath finds (NULL when nothing, or when the
 * column has no path), obj the whole object in the storage view, now_ns the wall clock.
 * Returns a new reference: a string, number, boolean or null. */
typedef json_t *(*kapi_cell_fn)(const json_t *value, const json_t *obj, int64_t now_ns);

/* One step of a column's JSONPath (registry/printers.c). */
typedef struct kapi_jsonpath_step kapi_jsonpath_step;

/* A Table column (metav1.TableColumnDefinition) and how its cells are made: an element of
 * the type file's "printerColumns", which has the members of a CRD's
 * additionalPrinterColumns (name, type, format, description, priority, jsonPath) and
 * kapi's own "cell". A column without "cell" follows the CRD rules: the value at jsonPath,
 * formatted by type (string, integer, number, boolean, date); one with "cell" is a
 * built-in printer's computed cell. */
typedef struct kapi_column {
    const char *name, *type, *format, *description; /* borrowed from the type's def */
    int priority;                                   /* 0 shown by default, 1 wide */
    const char *json_path;                          /* ".spec.schedule", or NULL */
    const kapi_jsonpath_step *steps;                /* json_path, parsed */
    size_t nsteps;
    kapi_cell_fn cell; /* NULL: the CRD rules */
} kapi_column;

/* A subresource of a type: "status", "finalize", ... */
typedef struct kapi_subresource {
    const char *name;
    const char *const *verbs; /* NULL-terminated */
    /* The kind its requests and answers are, when not the resource's own (a
     * ServiceAccount's token subresource takes and answers a TokenRequest): a subresource
     * kind of the registry (kapi_registry_subresource_kind); NULL otherwise. */
    const kapi_type *kind;
    /* The fields a write through it resets, which nobody owns (smd.h): the type file's
     * "resetFields" entry of its name. */
    const kapi_smd_set *reset;
} kapi_subresource;

struct kapi_type {
    const char *group;         /* "" for the core group */
    const char *version;       /* "v1" */
    const char *group_version; /* "batch/v1", or "v1" for the core group */
    const char *kind, *list_kind;
    const char *plural;
    bool namespaced;
    bool generation; /* metadata.generation is kept (types with a spec) */
    /* The objects are the namespaces: the namespace part of an item's path is its name
     * (/api/v1/namespaces/<name>), not a namespace it is in. */
    bool is_namespace;
    bool all_namespaces;            /* served across namespaces at the cluster path */
    const char *const *short_names; /* NULL-terminated */
    const char *const *categories;  /* NULL-terminated */
    const char *const *verbs;       /* NULL-terminated, discovery order */
    const kapi_subresource *subresources;
    size_t nsubresources;
    /* Where objects are stored (the key layout: kapi_type_key): the storage group and
     * resource, and kube-apiserver's prefix of their keys ("cronjobs",
     * "apiextensions.k8s.io/customresourcedefinitions", "example.com/widgets"). */
    const char *storage_group, *storage_resource, *storage_prefix;
    /* kube-apiserver stores the objects in protobuf, so what it answers has been through a
     * protobuf round trip (kapi_schema_protobuf_nulls): every built-in type but those
     * whose type file's "storage" has "mediaType": "application/json" (CRDs). */
    bool protobuf_storage;
    /* Discovery's storageVersionHash: the storage group/version/kind, hashed. */
    const char *storage_version_hash;
    const kapi_type_strategy *strategy;
    const kapi_schema *schema; /* the object's definition (its "openapiName") */
    /* The object's protobuf message, derived from schema for every built-in type; NULL
     * for custom types, which have no protobuf form. */
    const kapi_pb_message *protobuf;
    const kapi_pb_message *protobuf_list; /* its List's ("<openapiName>List"), or NULL */
    /* fieldSelector: each public field label and the stored path it reads (the syntax of
     * kapi_fieldsel_value), the type file's "fieldLabels"; borrowed from def. */
    const json_t *field_labels;
    /* The message an unsupported label gets (the type file's "fieldLabelError"). */
    kapi_field_label_error field_label_error;
    /* An update must name the resourceVersion it replaces (the type file's
     * "unconditionalUpdate": false; CRDs and custom resources). */
    bool conditional_update;
    /* The Table columns, from "printerColumns": a built-in type's own list (without one,
     * kube's default table, Name and Created At, and default_table is set; an empty one,
     * no Table at all: kube answers a Table request for the type 406, its REST having no
     * table convertor); for a custom resource, its CRD version's
     * additionalPrinterColumns, after Name (Name and Age when it has none), as
     * apiextensions serves them. */
    const kapi_column *columns;
    size_t ncolumns;
    bool default_table;
    /* Kubernetes' internal Go type, as messages name it ("batch.CronJob"): the type
     * file's "goType"; "unstructured.Unstructured" (a custom resource) without one.
     * builtin says whether the file had one: a built-in type is routed as kube-apiserver's
     * compiled-in types are (go-restful), a custom resource as its CRD handler. */
    const char *go_type;
    bool builtin;
    /* Facts of the type file read by the pipeline, typed when the type is built. */
    kapi_name_rule name_rule;
    long long max_name_length; /* "maxNameLength": a name's limit beyond its rule; 0 none */
    bool create_on_update;     /* "createOnUpdate": an update of a missing object creates it */
    bool create_keeps_status;  /* "createKeepsStatus": a create may set status (Nodes) */
    /* "persisted" (true when absent): objects are stored. False for the types kube-apiserver
     * answers a create of with what it makes of the body, keeping nothing (the access and
     * token reviews): such a type has no "storage" (its keys and messages name its own
     * group and resource, and discovery shows no storageVersionHash), and its validation
     * is its REST Create's alone (kapi_type_validate). */
    bool persisted;
    /* "namespaceLifecycle" (true when absent): a namespaced create needs its namespace to
     * exist and not be terminating (kapi_type_admit). False for LocalSubjectAccessReviews,
     * which kube admits in any namespace so that they cannot tell which namespaces exist. */
    bool namespace_lifecycle;
    kapi_gc_policy gc_policy; /* "gcPolicy": the deletion propagation of a plain delete */
    /* "gcPolicyWarning": the warning a delete without a policy gets when that orphans
     * (kube's Job REST: child pods are preserved), or NULL; borrowed from def */
    const char *gc_policy_warning;
    int group_priority;       /* "groupPriority": the group's place in discovery */
    const char *openapi_name; /* "openapiName": the object's definition, or NULL */
    /* The parsed type file (owned): the strings above are borrowed from it. Read only
     * while the type is built. */
    json_t *def;
    kapi_custom *custom; /* a custom resource's own facts; NULL for built-in types */
    /* Field ownership (registry/fields.c): the object's merge type, the fields a write
     * of the main resource resets (the type file's "resetFields" entry ""), and the
     * type's zero value, Go's new object of the kind as JSON, which a create is compared
     * with (owned). */
    const kapi_smd_type *smd;
    const kapi_smd_set *reset;
    json_t *zero;
};

/* Loads the embedded built-in types. */
kapi_error *kapi_registry_new(kapi_registry **out);
void kapi_registry_free(kapi_registry *r);

/* The client the registry's types call webhooks with (borrowed; its resolve entries are
 * set before serving). */
kapi_webhook *kapi_registry_webhooks(const kapi_registry *r);

/* The definitions of every built-in type (src/schema/defs), compiled. Borrowed. */
const kapi_schema_set *kapi_registry_schemas(const kapi_registry *r);

/* The type served at group/version/plural, or NULL. */
const kapi_type *kapi_registry_lookup(const kapi_registry *r, kapi_str group, kapi_str version,
                                      kapi_str plural);
/* True if any type is served in group (at any version); "" is the core group. */
bool kapi_registry_has_group(const kapi_registry *r, kapi_str group);
/* True if group/version is served. */
bool kapi_registry_has_group_version(const kapi_registry *r, kapi_str group, kapi_str version);

/* All types, in discovery order (groups in the order of the type files' "groupOrder",
 * then by version preference, then by resource name). */
size_t kapi_registry_count(const kapi_registry *r);
const kapi_type *kapi_registry_at(const kapi_registry *r, size_t i);

/* ---- store keys: their layout is known here and nowhere else ----
 *
 * A key is "/<storage prefix>/[<namespace>/]<name>", kube-apiserver's layout under its
 * etcd prefix: "/cronjobs/default/a", "/namespaces/kube-system",
 * "/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com",
 * "/example.com/widgets/default/w". A collection's prefix is the same up to and with the
 * '/' before the name. Keys are slices by length: a name may hold a NUL byte. */

/* The store key of an object of t, or the prefix of a collection, in the arena, by
 * length: the namespace and the name are copied whole, whatever bytes they hold (a NUL
 * included; a NUL also follows the key). namespace may be empty (all namespaces, or a
 * cluster-scoped type); name may be empty (a collection prefix). */
kapi_str kapi_type_key(kapi_arena *a, const kapi_type *t, kapi_str ns, kapi_str name);
/* Splits key, the key of an object of t, into its namespace (empty for a cluster-scoped
 * type) and name, slices of key (either pointer may be NULL). False, with both empty,
 * when key is not under t's prefix. */
bool kapi_type_key_parse(const kapi_type *t, kapi_str key, kapi_str *ns, kapi_str *name);
/* The moves from the layout before this one ("/<storage group>/<storage resource>/...")
 * for the stored built-in types whose prefix changed, in the arena, for
 * kapi_store_options.rekeys; *n gets how many. */
kapi_store_rekey *kapi_registry_rekeys(const kapi_registry *r, kapi_arena *a, size_t *n);

/* The built-in types the server itself reads and writes: core/v1 Namespaces,
 * apiextensions.k8s.io/v1 CustomResourceDefinitions and core/v1 ServiceAccounts (a loaded
 * registry has them all). */
const kapi_type *kapi_registry_namespaces(const kapi_registry *r);
const kapi_type *kapi_registry_crds(const kapi_registry *r);
const kapi_type *kapi_registry_serviceaccounts(const kapi_registry *r);

/* A subresource kind: a kind that is only ever the body and answer of a subresource
 * (authentication.k8s.io/v1 TokenRequest), built from a type file with "subresourceKind":
 * true. It has a type's schema, protobuf message, merge type and zero value, but it is
 * neither served nor stored, nor counted among the types above. NULL when there is none
 * of that group/version and kind. */
const kapi_type *kapi_registry_subresource_kind(const kapi_registry *r, const char *group_version,
                                                const char *kind);

/* The protobuf message of objects of apiVersion and kind that kapi reads or writes in
 * protobuf: a built-in type's objects and lists, v1 Status, meta.k8s.io/v1 and v1beta1
 * PartialObjectMetadata(List), autoscaling/v1 Scale, DeleteOptions of any group version;
 * NULL for anything else. */
const kapi_pb_message *kapi_registry_pb_message(const kapi_registry *r, const char *api_version,
                                                const char *kind);
/* The name of the CRD that would define resource plural in group ("<plural>.<group>",
 * the name apiextensions requires), in the arena. */
const char *kapi_crd_name(kapi_arena *a, const char *group, const char *plural);
/* "cronjobs.batch" (or "namespaces" for the core group): how messages name a resource. */
const char *kapi_type_resource_name(kapi_arena *a, const kapi_type *t);
/* The subresource named name, or NULL. */
const kapi_subresource *kapi_type_subresource(const kapi_type *t, kapi_str name);
/* True if verbs (NULL-terminated) contains verb. */
bool kapi_verbs_has(const char *const *verbs, const char *verb);

/* Kubernetes' version priority (reference 9.4): negative when version x comes before y.
 * GA > beta > alpha, then by major and minor number, descending; names that are not
 * Kubernetes-like come after, by name. */
int kapi_version_cmp(const char *x, const char *y);

/* Discovery's storageVersionHash of a storage group/version/kind: base64 of the first 8
 * bytes of SHA-256("group/version/Kind"); heap string. */
char *kapi_registry_storage_hash(const char *group, const char *version, const char *kind);

/* *obj (a reference, replaced) converted from t's view to the stored one, or objs[0..n)
 * from the stored view to t's: as the strategy's hooks, nothing when t has none. NULL, or
 * the error of a conversion that failed. */
kapi_error *kapi_type_to_storage(const kapi_type *t, json_t **obj);
kapi_error *kapi_type_from_storage(const kapi_type *t, json_t **objs, size_t n);
/* Appends to b the JSON of stored (a reference, taken) in t's view: as
 * kapi_type_from_storage then kapi_json_encode. NULL, or the error of a conversion that
 * failed (b then holds part of an answer). */
kapi_error *kapi_type_encode_from_storage(const kapi_type *t, kapi_buf *b, json_t *stored);
/* True when stored bytes (len) are already t's view: t converts nothing, or they are a
 * custom resource stored in t's own version (its stored JSON, members sorted, starts with
 * that apiVersion), which a conversion leaves as it is. */
bool kapi_type_serves_stored(const kapi_type *t, const char *data, size_t len);
/* True when t's conversion calls out (a conversion webhook): it may fail and take time,
 * so callers convert many objects in one call and off threads that must not wait. */
bool kapi_type_converts_remotely(const kapi_type *t);

/* Prepares obj (served view) for create, as PrepareForCreate: a type with a status
 * subresource drops the body's status, then the type's prepare_create runs. */
void kapi_type_prepare_create(const kapi_type *t, json_t *obj);
/* Prepares obj for an update of the main resource from old, as PrepareForUpdate: a type
 * with a status subresource keeps old's status (none when old has none), then the
 * type's prepare_update runs. */
void kapi_type_prepare_update(const kapi_type *t, json_t *obj, const json_t *old);
/* Prepares obj for a write to subresource sub from old: for "status", obj keeps only its
 * metadata and status and takes every other member from old; then the type's
 * prepare_subresource runs. Generation and the server's metadata are the caller's. */
void kapi_type_prepare_subresource(const kapi_type *t, const char *sub, json_t *obj,
                                   const json_t *old);

/* Validates obj before it is stored, as kube-apiserver's rest.BeforeCreate (old NULL)
 * and rest.BeforeUpdate do: on create the type's validation, then, only if it passed,
 * the generic metadata checks; on update the generic metadata and update checks, then
 * the type's. Returns NULL, or the 422 Invalid error with every cause. A type that is
 * not persisted has no rest.BeforeCreate: only its own hook runs, if it has one, and
 * its 422 names no kind and no object, as the reviews' REST Create words it (the kind
 * of the decoded internal object, which has none, and no name). A hook's refusal
 * (kapi_registry__refuse) is returned as the hook made it. */
kapi_error *kapi_type_validate(const kapi_type *t, const json_t *obj, const json_t *old);
/* Validates a write to subresource sub as rest.BeforeUpdate does with the subresource's
 * strategy: the generic metadata and update checks, then the type's subresource rules. */
kapi_error *kapi_type_validate_subresource(const kapi_type *t, const char *sub, const json_t *obj,
                                           const json_t *old);

/* Admits op on obj (served view) of type t in namespace ns, as kube-apiserver's admission
 * does: the namespace lifecycle every namespaced type gets (a create needs its
 * namespace, one not being terminated), then the type's admit hook. NULL, or the error
 * that refuses the write. */
kapi_error *kapi_type_admit(const kapi_type *t, const kapi_hook_ctx *c, kapi_admit_op op,
                            kapi_str ns, const json_t *obj);
/* True when obj is being deleted and nothing holds it any more (no metadata.finalizers,
 * and the type's finalizing hook, if any, says so): an update that leaves it so removes
 * it. */
bool kapi_type_deletion_done(const kapi_type *t, const json_t *obj);

/* ---- CustomResourceDefinitions (registry/crd.c) ---- */

/* The finalizer a deleted CRD keeps until its custom resources are gone. */
#define KAPI_CRD_CLEANUP "customresourcecleanup.apiextensions.k8s.io"
/* Sets the CRD's condition type to status ("True", "False") with reason and message; the
 * transition time (now) changes only when the status does. */
void kapi_crd_set_condition(json_t *crd, const char *type, const char *status, const char *reason,
                            const char *message, const char *now);
/* Removes the CRD's condition type. */
void kapi_crd_remove_condition(json_t *crd, const char *type);
/* The status of the CRD's condition type ("True", "False", "Unknown"), "" when absent. */
const char *kapi_crd_condition_status(const json_t *crd, const char *type);

/* The stored path the fieldSelector label of t reads, into *out (borrowed from t); or the
 * 400 BadRequest kube-apiserver gives a label the type does not support. */
kapi_error *kapi_type_field_label(const char **out, const kapi_type *t, const char *label);
/* Rewrites each term's field to the stored path it reads, in the terms' order, as the
 * list handler's Transform with the type's field label conversion does; returns the 400
 * of the first unsupported label (s is then partly rewritten). */
kapi_error *kapi_type_field_selector(const kapi_type *t, kapi_fieldsel *s);

/* ---- custom resources (registry/custom.c) ---- */

/* What a custom resource type has beyond a kapi_type, from its CRD. Immutable once
 * built, except its reference count. */
struct kapi_custom {
    json_t *crd;                 /* the CustomResourceDefinition (owned) */
    const char *storage_version; /* the version objects are stored in */
    /* spec.conversion.webhook when the strategy is Webhook (borrowed from crd), else NULL:
     * objects are converted by calling it, through the registry's client */
    const json_t *webhook;
    kapi_webhook *webhooks;
    char *warning; /* the version's deprecation warning, or NULL */
    /* The scale subresource's paths (".spec.replicas"); NULL when it has none. */
    const char *scale_spec, *scale_status, *scale_selector;
    kapi_schema_root *schema;         /* this version's structural schema, or NULL */
    kapi_schema_root *storage_schema; /* the storage version's, when it is another */
    const kapi_schema *meta;          /* ObjectMeta, from the built-in definitions */
    kapi_smd_types *smd_types;        /* the merge types of this version's schema */
    kapi_arena fields;                /* the reset sets */
    int refs;                         /* kapi_type_ref / kapi_type_unref */
};

/* The type that serves version of crd (a stored CustomResourceDefinition, parsed): names,
 * scope, subresources and printer columns from the CRD, its structural schema compiled,
 * stored under /<group>/<plural>/ in the CRD's storage version. The new type has one
 * hold; *out is NULL (and an error returned) when the version is not in the CRD or a
 * schema does not compile. */
kapi_error *kapi_custom_type_new(const kapi_registry *r, const json_t *crd, const char *version,
                                 const kapi_type **out);
/* Takes and drops a reference to a type: a custom type is freed when its last reference is dropped.
 * Built-in types live as long as the registry and ignore both. */
const kapi_type *kapi_type_ref(const kapi_type *t);
void kapi_type_unref(const kapi_type *t);
/* ---- the custom type cache (registry/cache.c) ----
 *
 * The custom types built so far, one per CRD name and version, each built from one
 * revision of the CRD in the store; a type built from a newer revision replaces it. The
 * api and the controllers share it. Thread-safe; the types returned are references for the
 * caller. */

/* What the revision of a CRD a cached type was built from says of its version. */
typedef struct kapi_custom_state {
    bool served;      /* Established, and the version is served (else only the controllers
                       * use the type: a storage version need not be served) */
    bool terminating; /* the CRD has the Terminating condition */
} kapi_custom_state;

/* The cached type of version of the CRD named crd_name, if it was built from revision rev
 * of the CRD, a reference for the caller, with *state; else NULL. */
const kapi_type *kapi_registry_custom_cached(const kapi_registry *r, const char *crd_name,
                                             const char *version, int64_t rev,
                                             kapi_custom_state *state);
/* Builds the type of version of crd (a stored CRD, parsed, at revision rev), a reference for the
 * caller, with *state, and caches it unless the cache has one from a newer revision. */
kapi_error *kapi_registry_custom_build(const kapi_registry *r, const json_t *crd, int64_t rev,
                                       const char *version, const kapi_type **out,
                                       kapi_custom_state *state);
/* The type of crd's storage version (what the controllers read and delete with), cached
 * or built as above, a reference for the caller. */
kapi_error *kapi_registry_custom_storage_type(const kapi_registry *r, const json_t *crd,
                                              int64_t rev, const kapi_type **out);
/* The type a request for plural at version names, when crd (a stored CRD, parsed, at
 * revision rev) serves it there (its plural, Established, the version served): cached or
 * built as above, a reference for the caller, with *state. *out is NULL when crd does
 * not serve it (or when the type does not build: then the error). */
kapi_error *kapi_registry_custom_serving(const kapi_registry *r, const json_t *crd, int64_t rev,
                                         const char *plural, const char *version,
                                         const kapi_type **out, kapi_custom_state *state);
/* True if crd has the condition named type with status True. */
bool kapi_crd_condition(const json_t *crd, const char *type);

/* ---- what is served, for discovery (registry/discovery.c) ----
 *
 * The groups, versions and resources discovery lists: the built-in types' and those of
 * the CRDs in the store. A CRD's served versions are listed as soon as it is stored. The
 * api lists the stored CRDs and hands them over; the registry reads them (no other
 * module reads a CRD's fields), and kapi_registry_served and kapi_registry_crd_resources
 * answer with typed facts that discovery only formats. They read only the built-in types
 * and their arguments: any thread may call them, and each answer is the caller's alone. */

/* A subresource as discovery lists it. */
typedef struct kapi_discovery_sub {
    const char *name; /* "status", "scale" */
    /* The subresource's own kind when it is not the resource's (autoscaling/v1 Scale),
     * else all three NULL. */
    const char *group, *version, *kind;
    const char *const *verbs; /* NULL-terminated */
} kapi_discovery_sub;

/* One served version of a CRD: the facts of its APIResource entry and its subresources'. */
typedef struct kapi_crd_resource {
    const char *group, *version;
    const char *plural, *kind;
    const char *singular; /* lower case; the kind's when the CRD names none */
    bool namespaced;
    const char *const *verbs;       /* NULL-terminated, discovery order */
    const char *const *short_names; /* NULL-terminated */
    const char *const *categories;  /* NULL-terminated */
    const char *storage_version_hash;
    const kapi_discovery_sub *subresources;
    size_t nsubresources;
} kapi_crd_resource;

/* A named group and its served versions, built-in and from CRDs, in preference order
 * (kapi_version_cmp). */
typedef struct kapi_served_group {
    const char *name;
    const char *const *versions;
    size_t nversions; /* at least 1 */
} kapi_served_group;

/* The named groups served, built-in and from CRDs. Everything in it is owned by its
 * arena. */
typedef struct kapi_served {
    /* The built-in groups in registry order, then the CRDs' other groups in the order of
     * the first CRD naming each (only those with a served version). */
    const kapi_served_group *groups;
    size_t ngroups;
    kapi_arena arena;
} kapi_served;

/* Fills *out from the built-in types and crds (a JSON array of the stored CRDs, parsed,
 * in the store's order; borrowed for the call only). Dispose with kapi_served_dispose. */
void kapi_registry_served(const kapi_registry *r, const json_t *crds, kapi_served *out);
void kapi_served_dispose(kapi_served *s);
/* The named group of s called name, or NULL. */
const kapi_served_group *kapi_served_find(const kapi_served *s, const char *name);

/* The resources the CRDs serve at one group version. Everything in it is owned by its
 * arena. */
typedef struct kapi_crd_resources {
    const kapi_crd_resource *items; /* in the CRDs' order */
    size_t n;
    kapi_arena arena;
} kapi_crd_resources;

/* Fills *out with the facts of each CRD in crds (the stored CRDs, as for
 * kapi_registry_served) that serves version in group. Dispose with
 * kapi_crd_resources_dispose. */
void kapi_registry_crd_resources(const json_t *crds, const char *group, const char *version,
                                 kapi_crd_resources *out);
void kapi_crd_resources_dispose(kapi_crd_resources *l);

/* Prunes obj as version of the CRD behind t would (the unknown fields go to w->unknown):
 * how a body naming another version of the type is read before it is refused. */
void kapi_custom_prune_as(const kapi_type *t, const char *version, json_t *obj,
                          kapi_schema_walk *w);
/* The cells of obj's Table row, one per column of t: a JSON array (new reference). obj
 * is in the storage view (kube's printers read the internal version, which kapi's
 * storage view is); now_ns is the wall clock that ages are counted to. */
json_t *kapi_type_table_cells(const kapi_type *t, const json_t *obj, int64_t now_ns);

/* kube's duration.HumanDuration ("2m5s", "3h10m", "2y30d") and ShortHumanDuration ("2m",
 * "3h", "2y") of d_ns nanoseconds; "<invalid>" below -1 s. out holds at least 32 bytes. */
void kapi_human_duration(char *out, int64_t d_ns);
void kapi_short_human_duration(char *out, int64_t d_ns);

/* Strategies by name, for the type files (registry/strategies.c). */
const kapi_type_strategy *kapi_registry__strategy(const char *name);
/* Registers the C defaulters the definitions name (registry/defaulters.c). */
void kapi_registry__defaulters(kapi_schema_set *s);

#endif
