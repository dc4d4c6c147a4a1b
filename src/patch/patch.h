/*
 * patch: the three PATCH body formats of kube-apiserver 1.26, applied to JSON documents.
 *
 *   application/json-patch+json             RFC 6902, as github.com/evanphx/json-patch v4.12.0
 *                                           applies it (kapi_patch_json)
 *   application/merge-patch+json            RFC 7386, as that library's MergePatch
 *                                           (kapi_patch_merge)
 *   application/strategic-merge-patch+json  apimachinery 1.26's StrategicMergeMapPatch, led
 *                                           by a kapi_schema's x-kubernetes-patch-strategy
 *                                           and -merge-key (kapi_patch_strategic)
 *
 * Server-side apply (application/apply-patch+yaml) is not here. A PATCH handler does, in
 * kube-apiserver's order:
 *
 *   1. kapi_patch_parse: the body's JSON, with the 400s kube-apiserver gives a body it
 *      cannot decode (worded after the Go type it decodes into, which depends on
 *      fieldValidation);
 *   2. kapi_patch_json / _merge / _strategic on the stored object's JSON (the object as
 *      the client would read it: its version, kind and metadata included). The document
 *      is the caller's own: it is changed in place (or replaced through *doc), and after
 *      an error it is some valid JSON value of no use; the patch is only read;
 *   3. decodes the result as it decodes an update body. kube-apiserver words a result it
 *      cannot decode as a 422 naming "patch": ` "" is invalid: patch: Invalid value:
 *      "<the result as JSON>": <decode error>`; and, for fieldValidation=Strict, unknown
 *      fields of a strategic merge patch as `patch: Invalid value: "<the patch as Go %v,
 *      kapi_go_put_fmt>": strict decoding error: unknown field "spec.x"`.
 *
 * The handler also answers what is not here: 415 for another Content-Type, and 415 for a
 * strategic merge patch of a custom resource ("the body of the request was in an unknown
 * format - accepted media types include: application/json-patch+json,
 * application/merge-patch+json, application/apply-patch+yaml"); the strict-decoding
 * warnings or errors of unknown and repeated fields in the patch body (kube-apiserver
 * prefixes a JSON patch's with "json patch ").
 *
 * Ownership: *doc is the caller's reference. On success it is released and replaced by the
 * result (a new reference); on failure *doc is left as it was and the error is returned: a
 * patch applies whole or not at all. patch is borrowed and never changed.
 *
 * Errors are kube-apiserver's answers, ready for the Status body (status.h):
 *   - 400 BadRequest with the library's own words for a patch it cannot read;
 *   - a JSON patch operation that fails: 422 Invalid, message "the server rejected our
 *     request due to an error in our request" and empty details, as kube-apiserver wraps
 *     every evanphx error (NewGenericServerResponse); the library's reason is not shown;
 *   - a strategic merge patch: 400 for the malformed directives apimachinery names
 *     (mergepatch.ErrBadPatchFormatFor*), the same generic 422 for lists of lists, and
 *     otherwise its message as a 500 with no reason (KAPI_STATUS_UNKNOWN), as kube-apiserver
 *     passes an unclassified error through: "unknown patch type: bogus in map:
 *     map[$patch:bogus]", "map: map[value:b] does not contain declared merge key: name".
 *
 * Limits: a JSON patch has at most 10000 operations (413, as kube-apiserver) and its copy
 * operations copy at most 3 MiB in all (kube-apiserver's JSONPatchMaxCopyBytes); a
 * document it produces nests at most KAPI_PATCH_MAX_DEPTH levels (deeper: a failed
 * operation), so that no result is deeper than a body kapi parses. Merge and strategic
 * patches never nest deeper than their inputs.
 */
#ifndef KAPI_PATCH_H
#define KAPI_PATCH_H

#include <jansson.h>

#include "base/status.h"
#include "schema/schema.h"

/* The deepest nesting a JSON patch may produce: the parser's own limit (jansson's
 * JSON_PARSER_MAX_DEPTH), which every request body is held to. */
#define KAPI_PATCH_MAX_DEPTH 2048

/* The patch body formats, by Content-Type. */
typedef enum kapi_patch_type {
    KAPI_PATCH_JSON,      /* application/json-patch+json */
    KAPI_PATCH_MERGE,     /* application/merge-patch+json */
    KAPI_PATCH_STRATEGIC, /* application/strategic-merge-patch+json */
    KAPI_PATCH_APPLY,     /* application/apply-patch+yaml: server-side apply (src/smd) */
} kapi_patch_type;

/* Parses a PATCH body of the given type into *out (a new reference) as kube-apiserver
 * decodes it before applying it. strict is true for fieldValidation Warn (the default) and
 * Strict, under which kube-apiserver decodes a JSON patch into its operation struct and a
 * merge patch into a map first. Failures are 400s worded as Go's encoding/json:
 *   JSON patch, strict:  "error decoding patch: json: cannot unmarshal object into Go value
 *                        of type []handlers.jsonPatchOp" (and the syntax errors, prefixed)
 *   JSON patch, not:     the syntax errors as they are (the shape is kapi_patch_json's)
 *   merge patch, strict: "error decoding patch: " + the syntax or map type error
 *   merge patch, not:    "Invalid JSON Patch" for a syntax error
 *   strategic:           the syntax error, or "json: cannot unmarshal array into Go value
 *                        of type map[string]interface {}", as they are. */
kapi_error *kapi_patch_parse(json_t **out, kapi_patch_type type, const char *body, size_t n,
                             bool strict);

/* Applies an RFC 6902 patch (an array of operations, or null for none) to *doc, an object
 * or an array, as evanphx/json-patch v4.12.0 does, including where it departs from the
 * RFC: the first token of a path is skipped, not checked to be empty ("a/b" is "/b");
 * array indices are read by strconv.Atoi ("01", "+1") and may be negative (counted from
 * the end); replacing a missing object member adds it; copying a missing member, or adding
 * without a value, writes null; a test of a missing or null member passes against
 * "value": null; replacing the root ("") with anything but an object or an array does
 * nothing; values compare as JSON values (evanphx compares the texts of numbers and
 * strings, so "1.0" and "1.00" differ there). A patch that is not an array (400 "json:
 * cannot unmarshal object into Go value of type jsonpatch.Patch"), an operation that is not
 * an object (400, "... jsonpatch.Operation"), more than 10000 operations (413) and a failed
 * operation (422) are errors; see the header comment. */
kapi_error *kapi_patch_json(json_t **doc, const json_t *patch);

/* Applies an RFC 7386 merge patch to *doc as evanphx/json-patch's MergePatch does: nulls
 * delete members; a patch that is an object replaces a document that is not (its nulls
 * dropped, also inside lists of objects); a patch that is an array becomes the document
 * (nulls inside its objects dropped); a patch that is null or a scalar is 400 "Invalid
 * JSON Patch", a document that is null 500 "Invalid JSON Document". */
kapi_error *kapi_patch_merge(json_t **doc, const json_t *patch);

/* Applies a strategic merge patch (an object, or null for none) to *doc, an object, as
 * apimachinery 1.26's StrategicMergeMapPatch does for a built-in type, led by s (the
 * object's definition, or NULL for none):
 *   - a list whose field has x-kubernetes-patch-strategy "merge" merges with the patch's:
 *     items with an x-kubernetes-patch-merge-key by that key (recursively), primitives as
 *     a set; any other list, and any list of a field s does not describe, is replaced;
 *   - a map merges recursively unless its field's strategy is "replace"; null deletes;
 *   - directives: "$patch": "replace" | "delete" in a map, "$patch": "replace" | "delete"
 *     items in a merging list, "$retainKeys", "$setElementOrder/<list>",
 *     "$deleteFromPrimitiveList/<list>"; the order of a merged list is the
 *     $setElementOrder's, then the patch's, then the document's;
 *   - as in 1.26 (later releases changed both): a patch value taken whole keeps the
 *     directives inside it, and $deleteFromPrimitiveList of a list that does not merge
 *     replaces the list with the items to delete.
 * Where apimachinery looks a field up in the Go struct and fails ("unable to find api
 * field", or a map of structs: "merging an object in json but data type is not struct"),
 * kapi merges the field as plain JSON instead; a stored built-in object has no field its
 * schema lacks, so only maps of objects differ, and no built-in type patches one.
 * allOf with one schema (how OpenAPI v3 puts extensions beside a $ref) is read as that
 * schema. Errors: see the header comment. */
kapi_error *kapi_patch_strategic(json_t **doc, const json_t *patch, const kapi_schema *s);

#endif
