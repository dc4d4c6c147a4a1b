/*
 * codec/json: JSON in and out, the way kube-apiserver writes it.
 *
 * Parsing builds jansson values (object member order is kept). A reader of kapi's own
 * (json_parse.c) builds exactly the tree jansson's json_loadb would, several times faster,
 * and gives up on any text it is not certain of: a syntax error, UTF-8 jansson refuses, a
 * NUL in a key, a number out of range, nesting past jansson's depth. Such a text goes to
 * json_loadb, so what is refused, and in which words, is jansson's reading either way.
 * Encoding is kapi's own so that bytes match Go's encoding/json: compact, HTML characters escaped
 * as \u003c \u003e \u0026, U+2028/U+2029 escaped, floats in Go's shortest form. The encoder can
 * report where the digits of the top-level metadata.resourceVersion go, which is how the store
 * stamps revisions into stored bytes (store.h).
 *
 * Values returned as json_t * are new references the caller owns (json_decref).
 *
 * Duplicate keys: jansson keeps the last value of a repeated key and says nothing, as Go
 * does; kube-apiserver reports each repeat (a warning by default, an error with
 * fieldValidation=Strict). kapi_json_duplicates finds them in the raw bytes of a body that
 * already parsed, in one pass, and words them as sigs.k8s.io/json does;
 * kapi_json_parse_dups parses a body and scans it only when the parse saw a key repeat,
 * which almost no body does. The YAML codec reports its duplicates into the same
 * kapi_dups list (yaml.h).
 */
#ifndef KAPI_CODEC_JSON_H
#define KAPI_CODEC_JSON_H

#include <jansson.h>

#include "base/status.h"

/* Makes jansson allocate through mimalloc. A request builds and drops thousands of small
 * jansson values, and glibc's malloc and free were a fifth of a create's instructions;
 * mimalloc's thread-local free lists take about a third of that. Only jansson's values go
 * there: stored objects stay in glibc's heap, which packs them more tightly. Call once,
 * first in main, before any value exists (a value must be freed by the allocator that
 * made it). Under AddressSanitizer it does nothing, so that ASan sees every allocation. */
void kapi_json_setup(void);

/* A NULL-terminated list of strings (NULL: none) as a JSON array (a new reference). */
json_t *kapi_json_strings(const char *const *v);

/* Parses one JSON document of any type. On a syntax error returns NULL and writes a
 * message worded like Go's encoding/json ("unexpected end of JSON input", "invalid
 * character 'x' looking for beginning of value") into err_out (heap, caller frees). */
json_t *kapi_json_parse(const char *p, size_t n, char **err_out);

/* Appends the compact Go-style encoding of v. */
void kapi_json_encode(kapi_buf *b, const json_t *v);
/* Appends an object, leaving the value of metadata.resourceVersion as an empty string
 * and storing in *rv_off the offset (in b) between its quotes; the object must have
 * metadata.resourceVersion (any string value). */
void kapi_json_encode_stamped(kapi_buf *b, const json_t *obj, size_t *rv_off);
/* Appends s (n bytes) as a JSON string literal, quotes included. */
void kapi_json_put_string(kapi_buf *b, const char *s, size_t n);
/* x in decimal as a JSON string ("42"), as metadata.resourceVersion holds a revision (a new
 * reference); json_sprintf's "%lld" costs several times more. */
json_t *kapi_json_decimal(json_int_t x);

/* The member at a dotted path ("metadata.name") if it exists, else NULL; borrowed. */
json_t *kapi_json_path(const json_t *v, const char *path);
/* The string at a dotted path, or NULL when absent or not a string; borrowed. */
const char *kapi_json_path_str(const json_t *v, const char *path);
/* The object at key in obj, created (empty) if absent or not an object; borrowed. */
json_t *kapi_json_object_ensure(json_t *obj, const char *key);
/* True when arr (a JSON array, or anything else: false) holds the string s (NULL: false). */
bool kapi_json_array_has_string(const json_t *arr, const char *s);
/* A deep copy of v (a new reference; NULL for NULL). jansson 2.14's json_deep_copy
 * checks every object and array for a loop with a printf of its address and a hash
 * table, which costs more than the copy; kapi's values are trees, so this one does not. */
json_t *kapi_json_copy(const json_t *v);
/* json_equal(a, b), answered without looking each member of an object up by its key
 * while the two objects have their members in the same order (an object and its update). */
bool kapi_json_equal(const json_t *a, const json_t *b);
/* A member of a JSON object: its key by length (a key may hold a NUL), its value
 * borrowed from the object. */
typedef struct kapi_json_member {
    const char *key;
    size_t len;
    json_t *value;
} kapi_json_member;

/* The members of obj in byte order of their keys, as Go's fmt and encoding/json visit a
 * map (gofmt.c): a heap array of *n, the caller's (free). */
kapi_json_member *kapi_json_sorted_members(const json_t *obj, size_t *n);
/* Makes each of keys[0..n) in obj what it is in from: the same value (a new reference),
 * or absent when from has none (from may be NULL). */
void kapi_json_keep(json_t *obj, const json_t *from, const char *const *keys, size_t n);

/* One repeated key, in kube-apiserver's words. */
typedef struct kapi_dup {
    char *message; /* `duplicate field "spec.schedule"`, `line 7: key "a" already set in map` */
    char *path;    /* JSON: the field path ("spec.containers[0].name"); YAML: NULL */
    size_t offset; /* JSON: byte offset of the repeated key's opening quote; YAML: 0 */
    int line;      /* YAML: the 1-based line of the repeated key's value; JSON: 0 */
} kapi_dup;

/* The repeated keys of one body, in document order; the list owns its strings. */
typedef struct kapi_dups {
    kapi_dup *v;
    size_t n, cap;
} kapi_dups;

void kapi_dups_init(kapi_dups *d);
void kapi_dups_dispose(kapi_dups *d);

/* Most entries one body reports (sigs.k8s.io/json keeps at most 100 strict errors). */
#define KAPI_JSON_MAX_DUPS 100

/* Scans p[0..n), a JSON text that kapi_json_parse accepted, and appends to dups each key
 * that repeats one of the same object, compared after unescaping ("a" and "\u0061" are one
 * key), as sigs.k8s.io/json's strict decoding reports them into an untyped map:
 *
 *   - the path joins the keys from the root with "." and writes array positions as [i]:
 *     spec.template.spec.containers[0].name, [2].a (a top-level array); keys are written
 *     as they are, dots and all, and the message quotes the path: duplicate field "a.b";
 *   - a key is reported when it repeats, before anything inside its second value; a key
 *     repeated three times is reported once (equal messages are kept once), and at most
 *     KAPI_JSON_MAX_DUPS entries are kept.
 *
 * For a typed (built-in) kind Go checks only the fields the type knows: a repeated unknown
 * field is reported as unknown, once, and nothing inside an unknown field is reported; the
 * caller drops those entries. Returns how many entries were appended. Malformed input ends
 * the scan early; it never reads past p + n. */
size_t kapi_json_duplicates(const char *p, size_t n, kapi_dups *dups);

/* kapi_json_parse, and when it returns a value and dups is not NULL, what
 * kapi_json_duplicates appends to dups for the same text. */
json_t *kapi_json_parse_dups(const char *p, size_t n, char **err_out, kapi_dups *dups);

/* For each of paths (written as kapi_json_duplicates writes them: "spec.containers[0].x"),
 * the byte offset of its key's first occurrence in the JSON p[0..n), or (size_t)-1 when
 * it is not there: where field validation's unknown fields stand among the repeats. */
void kapi_json_key_offsets(const char *p, size_t n, const char *const *paths, size_t npaths,
                           size_t *offsets);

#endif
