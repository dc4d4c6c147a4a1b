/*
 * select: the labelSelector and fieldSelector of a list or watch, parsed and applied as
 * kube-apiserver 1.26 does (apimachinery's labels.Parse and Requirement.Matches,
 * fields.ParseSelector and its terms).
 *
 * Label selectors: `key`, `!key`, `key=v`, `key==v`, `key!=v`, `key in (a,b)`,
 * `key notin (a,b)`, `key>5`, `key<5`, requirements joined by commas (AND), blanks
 * (space, tab, CR, LF) between tokens; a value may be empty (`a=`, `a in ()`); keys are
 * qualified names and values label values. `!=` and `notin` match an object without the
 * key; `>` and `<` compare base-10 int64s and never match a value that is not one.
 *
 * Field selectors: comma-separated `field=value`, `field==value`, `field!=value`; in a
 * value, `\,` `\=` `\\` stand for the character and any other `\` is an error. The field
 * name is taken as written: whether a type supports it is the registry's question
 * (kapi_type_field_label), which also says where the stored object keeps it.
 *
 * Every parse error is the 400 BadRequest kube-apiserver answers a list with, its message
 * the parser's error text unchanged. An empty (or NULL) text selects everything. The label
 * key and value rules and the wording of their field errors are schema/field's.
 *
 * A parsed selector is the caller's (free it with its _free) and immutable: any thread may
 * match with it. Nothing keeps a reference to the text parsed.
 */
#ifndef KAPI_SELECT_H
#define KAPI_SELECT_H

#include <jansson.h>

#include "base/status.h"

/* ---- label selectors ---- */

typedef struct kapi_labelsel kapi_labelsel;

/* Parses text (labels.Parse); on error *out is NULL and the 400 is returned. */
kapi_error *kapi_labelsel_parse(kapi_labelsel **out, const char *text);
/* True when s has no requirement (it matches everything). */
bool kapi_labelsel_empty(const kapi_labelsel *s);
/* True when the labels (an object's metadata.labels: a JSON object of strings, or NULL
 * for none) satisfy every requirement of s. */
bool kapi_labelsel_matches(const kapi_labelsel *s, const json_t *labels);
/* True when labels satisfy a metav1.LabelSelector given as JSON (LabelSelectorAsSelector):
 * every matchLabels entry and every matchExpressions requirement (In, NotIn, Exists,
 * DoesNotExist) holds; an empty selector matches everything, one that is not an object
 * (absent, null) nothing, a requirement without a known operator nothing. */
bool kapi_labelsel_json_matches(const json_t *selector, const json_t *labels);
void kapi_labelsel_free(kapi_labelsel *s);

/* ---- field selectors ---- */

typedef enum kapi_field_op {
    KAPI_FIELD_EQ, /* "=" or "==" */
    KAPI_FIELD_NE, /* "!=" */
} kapi_field_op;

/* One term: the field as written (the caller may replace it, see the header comment),
 * and the value unescaped. Both are heap strings owned by the selector. */
typedef struct kapi_field_req {
    char *field;
    kapi_field_op op;
    char *value;
} kapi_field_req;

/* The terms in the order Go keeps them: sorted by their text as written. */
typedef struct kapi_fieldsel {
    kapi_field_req *reqs;
    size_t n;
} kapi_fieldsel;

/* Parses text (fields.ParseSelector); on error *out is NULL and the 400 is returned. */
kapi_error *kapi_fieldsel_parse(kapi_fieldsel **out, const char *text);
/* True when every term holds for the object whose fields value(ctx, field) gives (NULL
 * reads as ""). A selector with no terms matches everything. */
bool kapi_fieldsel_matches(const kapi_fieldsel *s,
                           const char *(*value)(void *ctx, const char *field), void *ctx);
void kapi_fieldsel_free(kapi_fieldsel *s);

/* Room kapi_fieldsel_value needs to write a number. */
#define KAPI_FIELD_VALUE_SCRATCH 24

/* The value a field selector compares at path in a stored object: path is a dotted member
 * path ("involvedObject.name"), or alternatives "a|b" of which the first non-empty value
 * counts (core Events' "source": source.component, else reportingComponent); an
 * alternative "=text" is text itself (a Job's "status.succeeded|=0": Go's zero). A string is
 * itself, an integer its decimal form and a boolean true/false (Go's strconv, as the field
 * sets of Kubernetes' registries write them); anything else, or nothing, is "". Returns a
 * string borrowed from obj, from scratch or static. */
const char *kapi_fieldsel_value(const json_t *obj, const char *path,
                                char scratch[KAPI_FIELD_VALUE_SCRATCH]);

#endif
