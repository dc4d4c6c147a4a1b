/*
 * patch internals shared by the files of src/patch: Go's value semantics that
 * apimachinery's code relies on (interface equality, reflect types, fmt), its error
 * messages, the schema lookups of a strategic merge patch and Go's stable sort.
 */
#ifndef KAPI_PATCH_INT_H
#define KAPI_PATCH_INT_H

#include "codec/go.h"
#include "codec/json.h"
#include "patch/patch.h"

/* ---- Go's view of decoded JSON (decode.c) ---- */

/* The dynamic Go type of a decoded value: kube-apiserver decodes patches into
 * map[string]interface{}, []interface{}, string, int64, float64, bool and nil. true and
 * false are one type. */
typedef enum kapi_patch__gotype {
    KAPI_PATCH_GO_MAP,
    KAPI_PATCH_GO_SLICE,
    KAPI_PATCH_GO_STRING,
    KAPI_PATCH_GO_INT64,
    KAPI_PATCH_GO_FLOAT64,
    KAPI_PATCH_GO_BOOL,
    KAPI_PATCH_GO_NIL,
} kapi_patch__gotype;

kapi_patch__gotype kapi_patch__gotype_of(const json_t *v);
/* A 400 with Go's UnmarshalTypeError for v decoded into type:
 * "<prefix>json: cannot unmarshal array into Go value of type jsonpatch.Patch". */
kapi_error *kapi_patch__type_error(const char *prefix, const json_t *v, const char *type);
/* Go's == on two interface values holding scalars: same type and value; null equals
 * null. Maps and slices (a run-time panic in Go) are never equal. */
bool kapi_patch__go_eq(const json_t *a, const json_t *b);
/* kube-apiserver's 422 for an error it wraps without showing: "the server rejected our
 * request due to an error in our request", empty details. */
kapi_error *kapi_patch__rejected(void);

/* ---- JSON patch (json_patch.c) ---- */

/* Applies the operations (an array of objects or nulls) to *root, an object or an array,
 * in place; on failure writes evanphx/json-patch's message into why ("add operation does
 * not apply: doc is missing path: \"/a/b\": missing value") and returns false, *root then
 * half-patched. */
bool kapi_patch__json_apply(json_t **root, const json_t *ops, kapi_buf *why);

/* ---- strategic merge patch (strategic.c, strategic_list.c) ---- */

/* What strategicpatch's LookupPatchMeta gives for a field. */
typedef struct kapi_patch__meta {
    const kapi_schema *schema; /* the value's (a list's: its items'), NULL when unknown */
    const char *strategy;      /* "merge", "replace" or "" ("retainKeys" taken out) */
    const char *merge_key;     /* "" when none */
    const char *kind;          /* Go's reflect.Kind of the value: "struct", "string", ... */
} kapi_patch__meta;

/* Looks up field key of the map or struct s describes; for a list, the schema given is
 * its items'. An unknown field has no schema and no strategy. */
kapi_error *kapi_patch__lookup(kapi_patch__meta *out, const kapi_schema *s, const char *key,
                               bool list);
/* extractKey: the list a directive member names ("$setElementOrder/containers" gives
 * "containers"); a 400 when key is not prefix + "/" + name. */
kapi_error *kapi_patch__directive_list(const char **out, const char *key, const char *prefix);
/* mergeMap: merges patch into orig (both objects, both changed) and returns the result
 * (orig, patch, or a new map) in *out as a new reference. */
kapi_error *kapi_patch__merge_map(json_t **out, json_t *orig, json_t *patch, const kapi_schema *s);
/* mergeSliceHandler: merges list patch into list orig as m says (replaced unless the
 * strategy is "merge"); delete_list for a $deleteFromPrimitiveList. *out: new reference. */
kapi_error *kapi_patch__merge_list(json_t **out, json_t *orig, json_t *patch,
                                   const kapi_patch__meta *m, bool delete_list);
/* mergePatchIntoOriginal: the $setElementOrder/<list> directives of patch, each merged
 * with its list and ordered into orig; the directives and those lists leave patch. */
kapi_error *kapi_patch__element_orders(json_t *orig, json_t *patch, const kapi_schema *s);

/* apimachinery's mergepatch errors, as the 500s kube-apiserver passes them through. */
kapi_error *kapi_patch__no_merge_key(const json_t *m, const char *key);
kapi_error *kapi_patch__bad_arg_type(const char *expected, const json_t *actual);
kapi_error *kapi_patch__bad_patch_type(const json_t *directive, const json_t *m);

/* ---- Go's sort.SliceStable (gosort.c) ---- */

/* Sorts n elements with exactly the comparisons and swaps Go 1.19's sort.SliceStable makes
 * (insertion-sorted blocks of 20, then SymMerge), so that a less function which is not a
 * strict order, as strategicpatch's is, orders the items as kube-apiserver does. */
void kapi_patch__sort_stable(size_t n, bool (*less)(void *ctx, size_t i, size_t j),
                             void (*swap)(void *ctx, size_t i, size_t j), void *ctx);

#endif
