/*
 * smd: field ownership, as Kubernetes 1.26 computes it for metadata.managedFields and
 * server-side apply (sigs.k8s.io/structured-merge-diff v4, driven by kube-apiserver's
 * fieldmanager). Layers, each built on the ones above it:
 *
 *   values, path elements, paths, sets   set.c      field sets and their FieldsV1 form
 *   types                                type.c     what a schema says about merging
 *   typed walks                          typed.c    an object's field set, compare, merge,
 *                                                   remove, the apply body's type check
 *   the updater                          update.c   each manager's set through an update
 *                                                   or an apply; conflicts
 *
 * Memory: everything smd makes (sets, path elements, values, messages) lives in the
 * kapi_arena the caller passes, and is never freed alone. A path element's bytes must live
 * as long as the sets it goes into: the walks point field names at the type's own names
 * (which live as long as the type) or copy them into the arena, and copy values. JSON
 * objects passed in are borrowed for the call; JSON objects handed out are new
 * references. Sets are values: every operation returns a new set and leaves its
 * arguments as they were, except kapi_smd_set_insert, which builds one. A result shares
 * the child sets it keeps unchanged with its arguments (as Go's do), so a set is built
 * before it is given to an operation, and a result is never inserted into. Types are
 * immutable once built and may be read by any thread.
 *
 * Order: path elements compare as fieldpath.PathElement.Compare does (field names first,
 * then keys, then values, then indexes; names and strings bytewise, numbers by value), so
 * a set's members, its FieldsV1 bytes and its paths come out in Kubernetes' order.
 */
#ifndef KAPI_SMD_H
#define KAPI_SMD_H

#include <jansson.h>

#include "base/base.h"
#include "base/status.h"
#include "schema/schema.h"

/* ---- values (value.Value, as set elements and list keys carry them) ---- */

typedef enum kapi_smd_kind {
    KAPI_SMD_NULL,
    KAPI_SMD_BOOL,
    KAPI_SMD_INT,
    KAPI_SMD_FLOAT,
    KAPI_SMD_STRING,
    KAPI_SMD_LIST,
    KAPI_SMD_MAP,
} kapi_smd_kind;

typedef struct kapi_smd_value kapi_smd_value;
typedef struct kapi_smd_field kapi_smd_field;

/* A JSON value copied into an arena: strings by length, a map's fields sorted by name. */
struct kapi_smd_value {
    kapi_smd_kind kind;
    union {
        bool b;
        int64_t i;
        double f;
        kapi_str s;
        struct {
            const kapi_smd_value *items;
            size_t n;
        } list;
        struct {
            const kapi_smd_field *fields;
            size_t n;
        } map;
    } u;
};

/* A named value: a map's member, or one field of a list item's key. */
struct kapi_smd_field {
    kapi_str name;
    kapi_smd_value value;
};

/* v copied into a (NULL is null). */
kapi_smd_value kapi_smd_value_of(kapi_arena *a, const json_t *v);
/* value.Compare: numbers (by value; an int and a float compared as floats) before
 * strings (bytewise), booleans, lists (item by item), maps (field by field in name
 * order) and null. Returns <0, 0 or >0. */
int kapi_smd_value_cmp(const kapi_smd_value *x, const kapi_smd_value *y);
/* Appends v as JSON, as SMD's jsoniter stream writes it (HTML characters escaped, map
 * fields in name order, floats as json-iterator 1.1.12 writes them: strconv's shortest
 * form, in exponent form below 1e-6 and from 1e21 with two exponent digits, 1e-07). */
void kapi_smd_value_json(kapi_buf *b, const kapi_smd_value *v);

/* ---- path elements and paths ---- */

typedef enum kapi_smd_pe_kind {
    KAPI_SMD_PE_FIELD, /* a struct field or a map key: "f:<name>", ".name" */
    KAPI_SMD_PE_KEY,   /* a list map item by its key fields: "k:{...}", "[name=\"x\"]" */
    KAPI_SMD_PE_VALUE, /* a set item by its value: "v:<json>", "[=x]" */
    KAPI_SMD_PE_INDEX, /* an item of a list by position: "i:<n>", "[n]" */
} kapi_smd_pe_kind;

/* One step of a path (fieldpath.PathElement). */
typedef struct kapi_smd_pe {
    kapi_smd_pe_kind kind;
    kapi_str name;              /* FIELD */
    const kapi_smd_field *keys; /* KEY: sorted by name; at least one, but FieldsV1's
                                 * "k:{}" reads as none, as in Go */
    size_t nkeys;
    kapi_smd_value value; /* VALUE */
    int64_t index;        /* INDEX */
} kapi_smd_pe;

/* A path: n steps from the object's root (borrowed). */
typedef struct kapi_smd_path {
    const kapi_smd_pe *pe;
    size_t n;
} kapi_smd_path;

/* PathElement.Compare. */
int kapi_smd_pe_cmp(const kapi_smd_pe *x, const kapi_smd_pe *y);
/* Appends p as fieldpath.Path.String writes it, the form conflicts name fields in:
 * .spec.containers[name="main"].image, .metadata.finalizers[="x"], .items[3]. A map
 * value's fields come in name order (Go's come in its random map order). */
void kapi_smd_path_format(kapi_buf *b, kapi_smd_path p);
/* Appends pe's FieldsV1 key: f:<name> (the name raw), k:{"name":"main"}, v:"x", i:3. A
 * key field's name is written as json-iterator's WriteString does: no HTML escaping. */
void kapi_smd_pe_key(kapi_buf *b, const kapi_smd_pe *pe);

/* ---- sets (fieldpath.Set) ---- */

typedef struct kapi_smd_set kapi_smd_set;

/* A step that has paths below it, and the set of them. */
typedef struct kapi_smd_child {
    kapi_smd_pe pe;
    kapi_smd_set *set;
} kapi_smd_child;

/* A set of paths as a tree: the paths that end here (members) and the steps that lead
 * further (children), each sorted by kapi_smd_pe_cmp. A step may be both. Read the
 * members directly; change a set only with kapi_smd_set_insert. */
struct kapi_smd_set {
    kapi_smd_pe *members;
    size_t nmembers, members_cap;
    kapi_smd_child *children;
    size_t nchildren, children_cap;
};

/* A new empty set in a. */
kapi_smd_set *kapi_smd_set_new(kapi_arena *a);
/* Adds path p to s (the steps are copied; their bytes are borrowed, see above). */
void kapi_smd_set_insert(kapi_arena *a, kapi_smd_set *s, kapi_smd_path p);
/* The set of paths below pe in s, made empty when there is none: a step of building s, as
 * insert is (what is inserted into it is in s). */
kapi_smd_set *kapi_smd_set_descend(kapi_arena *a, kapi_smd_set *s, const kapi_smd_pe *pe);
/* Makes child the set of paths below pe in s, replacing any there: a step of building s,
 * as insert is (child is taken into s, not copied). */
void kapi_smd_set_graft(kapi_arena *a, kapi_smd_set *s, const kapi_smd_pe *pe, kapi_smd_set *child);
bool kapi_smd_set_empty(const kapi_smd_set *s);
bool kapi_smd_set_has(const kapi_smd_set *s, kapi_smd_path p);
bool kapi_smd_set_equal(const kapi_smd_set *x, const kapi_smd_set *y);
/* The paths below pe (the child set, or an empty set): Set.WithPrefix. */
const kapi_smd_set *kapi_smd_set_child(const kapi_smd_set *s, const kapi_smd_pe *pe);
kapi_smd_set *kapi_smd_set_union(kapi_arena *a, const kapi_smd_set *x, const kapi_smd_set *y);
kapi_smd_set *kapi_smd_set_intersection(kapi_arena *a, const kapi_smd_set *x,
                                        const kapi_smd_set *y);
/* The paths of x that are not in y (Set.Difference: a path of y removes only itself). */
kapi_smd_set *kapi_smd_set_difference(kapi_arena *a, const kapi_smd_set *x, const kapi_smd_set *y);
/* The paths of x that are neither in y nor below a path of y (Set.RecursiveDifference). */
kapi_smd_set *kapi_smd_set_recursive_difference(kapi_arena *a, const kapi_smd_set *x,
                                                const kapi_smd_set *y);
/* Calls fn with each path of s, in Set.Iterate's order (a node's members, then its
 * children's paths). The path is borrowed for the call. */
void kapi_smd_set_iterate(const kapi_smd_set *s, void (*fn)(kapi_smd_path p, void *ctx), void *ctx);

/* Appends s as FieldsV1 JSON, byte for byte as kube-apiserver serves it: Set.ToJSON's
 * bytes, with HTML characters and U+2028/U+2029 escaped as encoding/json escapes the raw
 * FieldsV1 it writes into an object (and a byte that is not UTF-8 as \ufffd). */
void kapi_smd_set_to_json(kapi_buf *b, const kapi_smd_set *s);
/* s as a FieldsV1 JSON object, its members in the order Set.ToJSON writes them (a new
 * reference). */
json_t *kapi_smd_set_to_jansson(const kapi_smd_set *s);
/* Reads a FieldsV1 object (Set.FromJSON): keys with an unknown prefix are skipped. A key
 * that does not parse is an error whose message says why (in a), and *out is NULL; NULL
 * and JSON null read as the empty set. The numbers in k: and v: keys read as floats, as
 * json-iterator reads them. Where jansson holds less than Go reads, the result differs:
 * of a key repeated in one object (of the FieldsV1 or of a k:) only the last counts, and
 * a k: field name with a NUL byte, or a lone surrogate (\ud800) in a k: or v: string, is
 * an error. */
bool kapi_smd_set_from_json(kapi_arena *a, const json_t *fields, kapi_smd_set **out,
                            const char **why);

/* ---- types (schema.Schema, as kube-openapi's schemaconv makes it from OpenAPI) ---- */

/* What a value may be, as bits: a type may allow more than one (a deduced type, whose
 * values are taken for what they are). */
enum {
    KAPI_SMD_ATOM_SCALAR = 1 << 0,
    KAPI_SMD_ATOM_LIST = 1 << 1,
    KAPI_SMD_ATOM_MAP = 1 << 2,
};

/* A scalar's type, for the apply body's check. */
typedef enum kapi_smd_scalar {
    KAPI_SMD_UNTYPED,
    KAPI_SMD_NUMERIC,
    KAPI_SMD_STRING_SCALAR,
    KAPI_SMD_BOOLEAN,
} kapi_smd_scalar;

typedef struct kapi_smd_type kapi_smd_type;

/* A declared field of a struct-like map. */
typedef struct kapi_smd_type_field {
    kapi_str name;
    const kapi_smd_type *type;
    const json_t *default_value; /* the schema's default, or NULL (list map key defaults) */
} kapi_smd_type_field;

/* How values of a schema merge and are owned. A list is atomic (owned whole) or
 * associative: a list map when it has keys (items owned by their key fields, "k:"), a
 * set without (items owned by value, "v:"). A map is atomic or granular (its members
 * owned one by one); its declared fields are struct fields, other members take
 * map_elem's type, or are not allowed when map_elem is NULL. */
struct kapi_smd_type {
    unsigned atoms;
    kapi_smd_scalar scalar;
    bool list_atomic;
    const char *const *keys; /* a list map's key field names, in declared order */
    size_t nkeys;
    const kapi_smd_type *list_elem;
    bool map_atomic;
    const kapi_smd_type_field *fields; /* sorted by name */
    size_t nfields;
    const kapi_smd_type *map_elem;
};

/* The types made from one set of schemas: built once, immutable, freed together. */
typedef struct kapi_smd_types kapi_smd_types;

kapi_smd_types *kapi_smd_types_new(void);
void kapi_smd_types_free(kapi_smd_types *ts);
/* The type of values of schema s, made in ts (a definition reached twice is made once,
 * so recursive definitions become cyclic types). The rules are schemaconv's on the
 * OpenAPI v2 form of s: x-kubernetes-list-type, -list-map-keys and -map-type first; else
 * an array whose patch strategy is merge is a list map keyed by its patch merge key (a
 * set without one) and any other array is atomic; an object with properties is a struct
 * (unknown members kept as deduced values when x-kubernetes-preserve-unknown-fields
 * holds here or on an inline ancestor), one without is a map of additionalProperties
 * (deduced without them); a node with no type and no properties, and int-or-string
 * without a type, are deduced; RawExtension is an atomic untyped value. */
const kapi_smd_type *kapi_smd_type_of(kapi_smd_types *ts, const kapi_schema *s);
/* The type of a custom resource of root schema s (a CRD version's openAPIV3Schema): its
 * properties, with apiVersion and kind strings and metadata of type object_meta, as
 * apiextensions' OpenAPI builder publishes it. */
const kapi_smd_type *kapi_smd_type_custom(kapi_smd_types *ts, const kapi_schema *s,
                                          const kapi_smd_type *object_meta);
/* The declared field name of a struct-like map type t, or NULL. */
const kapi_smd_type_field *kapi_smd_type_find(const kapi_smd_type *t, kapi_str name);

/* ---- typed walks (typed.TypedValue) ---- */

/* An error of a walk, as SMD's ValidationErrors print: "<path>: <message>", several
 * joined as "errors:\n  <one>\n  <two>". NULL when there was none. */
typedef const char *kapi_smd_errors;

/* Checks v against t as typed.AsTyped does before an apply (undeclared fields, scalar
 * types, list items without their keys, repeated keys); NULL when v conforms. */
kapi_smd_errors kapi_smd_validate(kapi_arena *a, const kapi_smd_type *t, const json_t *v);
/* The set of fields v sets (TypedValue.ToFieldSet): each scalar, atomic list or map,
 * empty map and null; each list item and its fields; no map or struct itself. */
kapi_smd_set *kapi_smd_to_set(kapi_arena *a, const kapi_smd_type *t, const json_t *v);

/* What changed from one value to another (typed.Comparison). */
typedef struct kapi_smd_comparison {
    kapi_smd_set *added, *modified, *removed;
} kapi_smd_comparison;

/* Compares lhs with rhs (TypedValue.Compare; NULL is an absent value). Returns NULL, or
 * the errors that stopped it (repeated list keys, ...). */
kapi_smd_errors kapi_smd_compare(kapi_arena *a, const kapi_smd_type *t, const json_t *lhs,
                                 const json_t *rhs, kapi_smd_comparison *out);
/* rhs merged onto lhs (TypedValue.Merge): rhs's leaves win, list maps and sets merge
 * item by item in SMD's order; *out a new reference (NULL when both are absent). */
kapi_smd_errors kapi_smd_merge(kapi_arena *a, const kapi_smd_type *t, const json_t *lhs,
                               const json_t *rhs, json_t **out);
/* v without the paths of s (TypedValue.RemoveItems): a new reference, NULL when nothing
 * is left. */
json_t *kapi_smd_remove(kapi_arena *a, const kapi_smd_type *t, const json_t *v,
                        const kapi_smd_set *s);
/* s with every child that names a declared field of its map made a member too
 * (Set.EnsureNamedFieldsAreMembers). */
kapi_smd_set *kapi_smd_set_with_named_fields(kapi_arena *a, const kapi_smd_type *t,
                                             const kapi_smd_set *s);

/* ---- the updater (merge.Updater) ---- */

/* One manager's fields (fieldpath.VersionedSet under its identifier). */
typedef struct kapi_smd_manager {
    const char *id;          /* its identifier, unique among the managers */
    const char *api_version; /* the version its set is expressed in */
    bool applied;            /* the set came from an apply */
    kapi_smd_set *set;
} kapi_smd_manager;

/* The managers of an object (fieldpath.ManagedFields), in no particular order; an
 * array in the arena. */
typedef struct kapi_smd_managers {
    kapi_smd_manager *m;
    size_t n, cap;
} kapi_smd_managers;

/* The manager id, or NULL (borrowed: a put or remove may move it). */
kapi_smd_manager *kapi_smd_managers_get(const kapi_smd_managers *ms, const char *id);
/* Sets the manager m->id to m (added, or replacing the one there). */
void kapi_smd_managers_put(kapi_arena *a, kapi_smd_managers *ms, const kapi_smd_manager *m);
void kapi_smd_managers_remove(kapi_smd_managers *ms, const char *id);

/* An object's type in one version, and the fields the write's strategy resets there
 * (IgnoredFields: owned by nobody; NULL for none). */
typedef struct kapi_smd_view {
    const kapi_smd_type *type;
    const kapi_smd_set *ignored;
} kapi_smd_view;

/* What the updater knows of the object: its view in the version of the write, and how to
 * see it in the others its managers use. */
typedef struct kapi_smd_updater {
    const char *version;
    kapi_smd_view view;
    /* obj (in version) as seen in version v: a new reference, with *view its view there;
     * NULL when v is no version of the object (managers in it are dropped, as SMD drops a
     * missing version's). NULL when the object has one version only. */
    json_t *(*convert)(void *ctx, const json_t *obj, const char *v, kapi_smd_view *view);
    void *ctx;
} kapi_smd_updater;

/* A field a manager owns that an apply would change. */
typedef struct kapi_smd_conflict {
    const char *manager;
    kapi_smd_path path;
} kapi_smd_conflict;

typedef struct kapi_smd_conflicts {
    kapi_smd_conflict *c;
    size_t n, cap;
} kapi_smd_conflicts;

/* Updater.Update: the managers after live (NULL: none) became obj by a write of manager,
 * who gains what changed, while the others lose it. Returns NULL, or what stopped it. */
kapi_smd_errors kapi_smd_update(kapi_arena *a, const kapi_smd_updater *u, const json_t *live,
                                const json_t *obj, kapi_smd_managers *ms, const char *manager);
/* Updater.Apply: config applied onto live by manager: *out gets the object (a new
 * reference; NULL when the apply changes nothing), the managers their new sets. Fields
 * another manager owns with another value are conflicts (and nothing changes) unless
 * force takes them. Returns NULL (see conflicts->n), or what stopped it. */
kapi_smd_errors kapi_smd_apply(kapi_arena *a, const kapi_smd_updater *u, const json_t *live,
                               const json_t *config, kapi_smd_managers *ms, const char *manager,
                               bool force, json_t **out, kapi_smd_conflicts *conflicts);
/* A set with its paths made to suit type t where t changed under it (schema's
 * ReconcileFieldSetWithSchema: a list or map that became atomic is owned whole). */
kapi_smd_set *kapi_smd_reconcile(kapi_arena *a, const kapi_smd_type *t, kapi_smd_set *s);

/* ---- the field manager (kube-apiserver's fieldmanager) ----
 *
 * metadata.managedFields as kube-apiserver keeps them around the updater: entries
 * decoded from and encoded into the object (sorted by operation, time, manager, version
 * and subresource), manager identifiers, update entries merged per manager and stamped
 * with the time they changed, apiVersion, kind and server-set metadata never owned, at
 * most ten update entries (older ones merged into "ancient-changes"), an object without
 * managedFields left untracked by updates, fields that existed before a first apply
 * owned by "before-first-apply", and kubectl's last-applied annotation kept in step with
 * `kubectl apply --server-side`. */

/* One resource's field manager: its updater (version and view), where writes come
 * through, and the object a create starts from. */
typedef struct kapi_smd_fm {
    kapi_smd_updater updater;
    const char *group_version; /* the resource's apiVersion ("batch/v1") */
    const char *kind;
    const char *subresource; /* "" for the main resource */
    /* The type's zero value (Go's new object of the kind, as JSON): what a create is
     * compared with. */
    const json_t *empty;
} kapi_smd_fm;

/* FieldManager.UpdateNoErrors: sets obj's metadata.managedFields as kube-apiserver does
 * after a create (live NULL), update or patch by manager at now (RFC 3339, seconds). The
 * managedFields obj carries decide where they start: an empty list clears them, a valid
 * list replaces live's, anything else keeps live's (a subresource write always keeps
 * live's). Never fails: where kube-apiserver would log an internal error, obj is left
 * without managedFields. */
void kapi_smd_fm_update(kapi_arena *a, const kapi_smd_fm *fm, const json_t *live, json_t *obj,
                        const char *manager, const char *now);
/* A custom resource's scale write as kube-apiserver 1.26 records it (ScaleHandler.ToParent
 * with no entries of its own, its Scale field manager finding no type for Scale): every
 * manager of live that owns path (the resource's replicas) loses it, and nobody gains
 * it; obj gets the result. */
void kapi_smd_fm_disown(kapi_arena *a, const json_t *live, json_t *obj, kapi_smd_path path);
/* FieldManager.Apply: config (the decoded apply body, borrowed) applied by manager onto
 * live (NULL when the object does not exist yet), force taking conflicting fields, at
 * now. *out gets the object to write with its managedFields (a new reference; live's
 * content when nothing else changed), not yet defaulted. Errors: 400 for a body of
 * another version or with managedFields, 409 Conflict with a FieldManagerConflict cause
 * per field, 500 with SMD's words for a body that does not fit the schema. */
kapi_error *kapi_smd_fm_apply(kapi_arena *a, const kapi_smd_fm *fm, const json_t *live,
                              const json_t *config, const char *manager, bool force,
                              const char *now, json_t **out);

#endif
