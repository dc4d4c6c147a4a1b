/*
 * registry: every resource type kapi serves, as one kapi_type (DESIGN.md invariant 1).
 *
 * Built-in types are data: src/registry/types/<group>.<plural>.json, embedded at build
 * time. Each file gives the facts of one served group/version/resource (kind, plural,
 * scope, short names, categories, verbs, subresources, where it is stored, the field
 * labels its fieldSelector accepts) and the name of its strategy, the small table of hooks
 * with the code special to the type (namespace defaults, the events.k8s.io view of core
 * Events, ...).
 *
 * Two served types may share one stored resource (core/v1 and events.k8s.io/v1 Events):
 * objects are stored in the storage view, and a type with a `view` hook converts.
 *
 * The registry is immutable after kapi_registry_new; any thread may read it.
 */
#ifndef KAPI_REGISTRY_H
#define KAPI_REGISTRY_H

#include <jansson.h>

#include "base/status.h"
#include "schema/schema.h"
#include "select/select.h"

typedef struct kapi_type kapi_type;

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
    /* Converts between this type's view and the stored one; NULL when they are equal.
     * Both take a reference-counted object and return a new reference. */
    json_t *(*to_storage)(const kapi_type *t, json_t *obj);
    json_t *(*from_storage)(const kapi_type *t, json_t *stored);
    /* Kubernetes' Validate / ValidateUpdate of the type: appends to err the causes of obj
     * (served view, after defaulting and prepare_*), old NULL on create, else the stored
     * object in the served view; metadata included where Kubernetes checks it. Without
     * the hook a type's metadata is checked by its nameRule. */
    void (*validate)(const kapi_type *t, const json_t *obj, const json_t *old, kapi_error *err);
    /* The same for a write to subresource sub ("status", "finalize"): obj is the object
     * as it would be stored, old the stored one. */
    void (*validate_subresource)(const kapi_type *t, const char *sub, const json_t *obj,
                                 const json_t *old, kapi_error *err);
    /* Kubernetes' WarningsOnCreate / WarningsOnUpdate: calls warn(ctx, text) for each
     * warning a valid obj earns (old NULL on create). */
    void (*warnings)(const kapi_type *t, const json_t *obj, const json_t *old,
                     void (*warn)(void *ctx, const char *text), void *ctx);
} kapi_type_strategy;

/* A subresource of a type: "status", "finalize", ... */
typedef struct kapi_subresource {
    const char *name;
    const char *const *verbs; /* NULL-terminated */
} kapi_subresource;

struct kapi_type {
    const char *group;         /* "" for the core group */
    const char *version;       /* "v1" */
    const char *group_version; /* "batch/v1", or "v1" for the core group */
    const char *kind, *list_kind;
    const char *plural;
    bool namespaced;
    bool generation;                /* metadata.generation is kept (types with a spec) */
    bool all_namespaces;            /* served across namespaces at the cluster path */
    const char *const *short_names; /* NULL-terminated */
    const char *const *categories;  /* NULL-terminated */
    const char *const *verbs;       /* NULL-terminated, discovery order */
    const kapi_subresource *subresources;
    size_t nsubresources;
    /* Where objects are stored: key prefix "/<storage_group>/<storage_resource>/". */
    const char *storage_group, *storage_resource;
    /* Discovery's storageVersionHash: the storage group/version/kind, hashed. */
    const char *storage_version_hash;
    const kapi_type_strategy *strategy;
    const char *protobuf_message; /* the object's protobuf message, or NULL */
    const kapi_schema *schema;    /* the object's definition (its "openapiName") */
    /* fieldSelector: each public field label and the stored path it reads (the syntax of
     * kapi_field_selector_value), the type file's "fieldLabels"; borrowed from def. */
    const json_t *field_labels;
    /* An unsupported label gets runtime.DefaultMetaV1FieldSelectorConversion's message
     * (the type file's "fieldLabelError": "default") rather than the "field label not
     * supported: <label>" of the conversion funcs ("notSupported"). */
    bool field_label_default_error;
    json_t *def; /* the parsed type file, for what only some consumers read */
};

typedef struct kapi_registry kapi_registry;

/* Loads the embedded built-in types. */
kapi_error *kapi_registry_new(kapi_registry **out);
void kapi_registry_free(kapi_registry *r);

/* The definitions of every built-in type (src/schema/defs), compiled. Borrowed. */
const kapi_schema_set *kapi_registry_schemas(const kapi_registry *r);

/* The protobuf message tables of every type (codec/protobuf.h), merged: the
 * *.proto.json files and each type file's "protobuf" member. Borrowed. */
const json_t *kapi_registry_proto(const kapi_registry *r);

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

/* The store key of an object, or the prefix of a collection: "/<g>/<res>/<ns>/<name>".
 * namespace may be empty (all namespaces, or a cluster-scoped type); name may be empty
 * (a collection prefix, which then ends with '/'). */
char *kapi_type_key(kapi_arena *a, const kapi_type *t, kapi_str ns, kapi_str name);
/* "cronjobs.batch" (or "namespaces" for the core group): how messages name a resource. */
const char *kapi_type_resource_name(kapi_arena *a, const kapi_type *t);
/* The subresource named name, or NULL. */
const kapi_subresource *kapi_type_subresource(const kapi_type *t, kapi_str name);
/* True if verbs (NULL-terminated) contains verb. */
bool kapi_verbs_has(const char *const *verbs, const char *verb);

/* Discovery's storageVersionHash of a storage group/version/kind: base64 of the first 8
 * bytes of SHA-256("group/version/Kind"); heap string. */
char *kapi_registry_storage_hash(const char *group, const char *version, const char *kind);

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
 * the type's. Returns NULL, or the 422 Invalid error with every cause. */
kapi_error *kapi_type_validate(const kapi_type *t, const json_t *obj, const json_t *old);
/* Validates a write to subresource sub as rest.BeforeUpdate does with the subresource's
 * strategy: the generic metadata and update checks, then the type's subresource rules. */
kapi_error *kapi_type_validate_subresource(const kapi_type *t, const char *sub, const json_t *obj,
                                           const json_t *old);

/* The stored path the fieldSelector label of t reads, into *out (borrowed from t); or the
 * 400 BadRequest kube-apiserver gives a label the type does not support. */
kapi_error *kapi_type_field_label(const char **out, const kapi_type *t, const char *label);
/* Rewrites each term's field to the stored path it reads, in the terms' order, as the
 * list handler's Transform with the type's field label conversion does; returns the 400
 * of the first unsupported label (s is then partly rewritten). */
kapi_error *kapi_type_field_selector(const kapi_type *t, kapi_field_selector *s);

/* Strategies by name, for the type files (registry/strategies.c). */
const kapi_type_strategy *kapi_registry__strategy(const char *name);
/* Registers the C defaulters the definitions name (registry/defaulters.c). */
void kapi_registry__defaulters(kapi_schema_set *s);

#endif
