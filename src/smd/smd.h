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

#endif
