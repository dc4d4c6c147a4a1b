/*
 * schema/field: field errors worded as Kubernetes' field.Error words them, the common
 * value rules (DNS names, qualified names, label values, ...), ObjectMeta validation and
 * the 422 Invalid answer they add up to (apimachinery's errors.NewInvalid).
 *
 * A validation appends causes to one kapi_error (status.h) as it goes, in the order
 * Kubernetes' Go validation produces them; kapi_field_finish_invalid then turns them into
 * the Status: message `<Kind>.<group> "<name>" is invalid: <field>: <msg>` (one distinct
 * message) or `... is invalid: [<a>, <b>]` (several; repeated texts are shown once, as
 * Go's aggregate does, while details.causes keeps every cause).
 *
 * Each cause message is Go's Error.ErrorBody(): "Required value[: detail]",
 * "Invalid value: <value>[: detail]", "Unsupported value: <value>: supported values: ...",
 * "Forbidden: detail", "Too long: must have at most N bytes", "Too many: N: must have at
 * most M items", "Duplicate value: <value>", "Not found: <value>". Values are rendered as
 * Go renders them: strings with %q quoting, integers bare, booleans true/false, and
 * structures with %#v (kapi_gofmt, below).
 *
 * Paths are plain strings ("spec.jobTemplate.spec.template.spec.containers[0].name");
 * kapi_path_* builds them in an arena, so a validator passes the parent down and asks for
 * children as Go's field.Path does. Nothing here keeps a reference to its arguments.
 */
#ifndef KAPI_FIELD_H
#define KAPI_FIELD_H

#include <jansson.h>

#include "base/status.h"
#include "codec/go.h"
#include "codec/json.h"

/* The cause types (metav1.CauseType), as details.causes[].reason spells them. */
#define KAPI_FIELD_REQUIRED "FieldValueRequired"
#define KAPI_FIELD_INVALID "FieldValueInvalid"
#define KAPI_FIELD_NOT_SUPPORTED "FieldValueNotSupported"
#define KAPI_FIELD_FORBIDDEN "FieldValueForbidden"
#define KAPI_FIELD_TOO_LONG "FieldValueTooLong"
#define KAPI_FIELD_TOO_MANY "FieldValueTooMany"
#define KAPI_FIELD_DUPLICATE "FieldValueDuplicate"
#define KAPI_FIELD_NOT_FOUND "FieldValueNotFound"

/* ---- paths ---- */

/* parent + "." + name ("name" alone when parent is NULL or ""), in the arena. */
const char *kapi_path_child(kapi_arena *a, const char *parent, const char *name);
/* parent + "[i]". */
const char *kapi_path_index(kapi_arena *a, const char *parent, size_t i);
/* parent + "[key]" (Go's Path.Key: the key as is, unquoted). */
const char *kapi_path_key(kapi_arena *a, const char *parent, const char *key);

/* ---- values, rendered as Go's fmt renders them ---- */

/* Go's %q of a string is kapi_go_quote (codec/json.h); a JSON value as a field
 * error shows it is kapi_go_value (codec/go.h). */

/*
 * Go's %#v of a Kubernetes struct, driven by a description of the Go type: what a
 * message shows for field.Invalid(path, someStruct, ...), e.g.
 *     v1.LabelSelector{MatchLabels:map[string]string{"a":"b"},
 *                      MatchExpressions:[]v1.LabelSelectorRequirement(nil)}
 * Each Go field reads the JSON member json of the object. Pointers to scalars and
 * structures print their address in Go; kapi prints a fixed one (0xc000000000) when the
 * member is present, as no client can rely on the real one.
 */
typedef enum kapi_gokind {
    KAPI_GO_STRING,     /* string (or a named string type) */
    KAPI_GO_STRINGS,    /* []string */
    KAPI_GO_STRING_MAP, /* map[string]string */
    KAPI_GO_STRUCT,     /* a struct value (sub) */
    KAPI_GO_STRUCTS,    /* []sub */
    KAPI_GO_PTR,        /* *sub, or *<scalar> when sub is NULL (name gives the type) */
    KAPI_GO_INT64,      /* int64 */
    KAPI_GO_TIME,       /* metav1.Time: its GoString, time.Date(...) in UTC */
    KAPI_GO_TIME_PTR,   /* *metav1.Time: the same, <nil> when absent */
} kapi_gokind;

typedef struct kapi_gotype kapi_gotype;
typedef struct kapi_gofield {
    const char *go;   /* Go field name: "MatchLabels" */
    const char *json; /* JSON member: "matchLabels" */
    kapi_gokind kind;
    const kapi_gotype *sub; /* element type of STRUCT, STRUCTS, PTR */
    const char *ptr_type;   /* PTR to a scalar: "string", "bool", "int32" */
} kapi_gofield;

struct kapi_gotype {
    const char *name; /* "v1.LabelSelector" */
    const kapi_gofield *fields;
    size_t nfields;
};

/* Appends Go's %#v of the JSON object v read as type t. */
void kapi_gofmt(kapi_buf *b, const kapi_gotype *t, const json_t *v);
/* Appends Go's %#v of a []t (nil when v is absent or null). */
void kapi_gofmt_slice(kapi_buf *b, const kapi_gotype *t, const json_t *v);
/* Appends Go's %#v of a []string / map[string]string (nil when absent or null). */
void kapi_gofmt_strings(kapi_buf *b, const json_t *v);
void kapi_gofmt_string_map(kapi_buf *b, const json_t *v);
/* Appends Go's time.Time.String() of an RFC 3339 time ("2006-01-02 15:04:05.999 +0000
 * UTC"); NULL or an unparsable time gives the zero time. */
void kapi_gofmt_time(kapi_buf *b, const char *rfc3339);
/* Reads s as Go's time.Parse(time.RFC3339, s) does (fractional seconds accepted): *secs
 * since the epoch (Go's zero time is -62135596800) and *nsec; false when it does not
 * parse. */
bool kapi_gotime_parse(const char *s, int64_t *secs, int32_t *nsec);

/* The Go types whose %#v the built-in validations print. */
extern const kapi_gotype kapi_go_label_selector;   /* v1.LabelSelector */
extern const kapi_gotype kapi_go_object_reference; /* core.ObjectReference */
extern const kapi_gotype kapi_go_owner_reference;  /* v1.OwnerReference */
extern const kapi_gotype kapi_go_object_meta;      /* v1.ObjectMeta */

/* ---- field errors: each appends one cause to err ---- */

/* "Required value" or "Required value: detail" (detail NULL or "" leaves it out). */
void kapi_field_required(kapi_error *err, const char *path, const char *detail);
/* "Forbidden: detail". */
void kapi_field_forbidden(kapi_error *err, const char *path, const char *detail);
/* "Invalid value: <value>: <detail>" for a string, an integer, a JSON value, or a value
 * the caller has already rendered (Go %#v); the detail is printf-formatted. */
void kapi_field_invalid_str(kapi_error *err, const char *path, const char *value, const char *fmt,
                            ...) KAPI_PRINTF(4, 5);
void kapi_field_invalid_int(kapi_error *err, const char *path, long long value, const char *fmt,
                            ...) KAPI_PRINTF(4, 5);
void kapi_field_invalid_json(kapi_error *err, const char *path, const json_t *value,
                             const char *fmt, ...) KAPI_PRINTF(4, 5);
void kapi_field_invalid_raw(kapi_error *err, const char *path, const char *rendered,
                            const char *fmt, ...) KAPI_PRINTF(4, 5);
/* "Invalid value: <detail>": field.Invalid with field.OmitValueType{} (no value shown). */
void kapi_field_invalid_omit(kapi_error *err, const char *path, const char *detail);
/* One "Invalid value" per message of msgs (the output of a kapi_is_* rule). */
void kapi_field_invalid_each(kapi_error *err, const char *path, const char *value,
                             const char *const *msgs, size_t n);
/* "Unsupported value: <value>: supported values: "a", "b"" (valid is NULL-terminated;
 * empty leaves the detail out). The _raw form takes a rendered value. */
void kapi_field_not_supported(kapi_error *err, const char *path, const char *value,
                              const char *const *valid);
void kapi_field_not_supported_raw(kapi_error *err, const char *path, const char *rendered,
                                  const char *const *valid);
/* "Duplicate value: "x"", and its integer form. */
void kapi_field_duplicate(kapi_error *err, const char *path, const char *value);
void kapi_field_duplicate_int(kapi_error *err, const char *path, long long value);
/* "Not found: "x"" ([: detail]). */
void kapi_field_not_found(kapi_error *err, const char *path, const char *value, const char *detail);
/* field.TooLong, as 1.26 words it: "Too long: must have at most <max> bytes" (the value
 * is never shown). */
void kapi_field_too_long(kapi_error *err, const char *path, long long max);
/* field.TooMany: "Too many: <actual>: must have at most <max> items" (actual < 0 leaves
 * the value out, max < 0 says "has too many items"). */
void kapi_field_too_many(kapi_error *err, const char *path, long long actual, long long max);

/* Appends Go's ErrorList.ToAggregate().Error() of the causes in err: "<field>: <msg>"
 * when one distinct text remains, "[<a>, <b>]" when several (repeats shown once);
 * nothing when there are none. For the messages that quote a field error list as is. */
void kapi_field_aggregate(kapi_buf *b, const kapi_error *err);

/* Turns the causes gathered in err into the 422 Invalid answer for the object kind.group
 * named name (group "" for the core group; name may be NULL): the message (Go's %q of
 * the name, causes deduplicated as Go's aggregate does) and details {name, group, kind}.
 * With no causes the message ends at "is invalid". Returns err. */
kapi_error *kapi_field_finish_invalid(kapi_error *err, const char *kind, const char *group,
                                      const char *name);
/* The same for a name taken by its length (a JSON name may hold a NUL). */
kapi_error *kapi_field_finish_invalid_n(kapi_error *err, const char *kind, const char *group,
                                        kapi_str name);

/* ---- value rules: each writes its messages (static strings) to out, returns how many;
 * 0 means valid. out must have room for KAPI_MSGS_MAX. ---- */
#define KAPI_MSGS_MAX 6

size_t kapi_is_dns1123_label(const char *v, const char **out);
size_t kapi_is_dns1123_subdomain(const char *v, const char **out);
size_t kapi_is_dns1035_label(const char *v, const char **out);
/* A qualified name (label keys, finalizers, annotation keys after lowercasing):
 * an optional DNS-subdomain prefix and "/", then a name part of at most 63. */
size_t kapi_is_qualified_name(const char *v, const char **out);
size_t kapi_is_label_value(const char *v, const char **out);
size_t kapi_is_env_var_name(const char *v, const char **out);
size_t kapi_is_config_map_key(const char *v, const char **out);
size_t kapi_is_port_name(const char *v, const char **out);
/* "must be between 1 and 65535, inclusive" when port is outside. */
size_t kapi_is_port_num(long long port, const char **out);

/* A name rule (apimachinery's ValidateNameFunc): prefix is true for generateName, whose
 * last character may be a dash. ctx is the rule's own (NULL for the ones below). */
typedef size_t (*kapi_name_fn)(void *ctx, const char *name, bool prefix, const char **out);
size_t kapi_name_dns_label(void *ctx, const char *name, bool prefix, const char **out);
size_t kapi_name_dns_subdomain(void *ctx, const char *name, bool prefix, const char **out);
size_t kapi_name_dns1035_label(void *ctx, const char *name, bool prefix, const char **out);
/* path.ValidatePathSegmentName: not "." or "..", no "/" or "%". */
size_t kapi_name_path_segment(void *ctx, const char *name, bool prefix, const char **out);

/* ---- ObjectMeta (schema/meta.c) ---- */

/* How a type validates its metadata. */
typedef struct kapi_meta_rules {
    kapi_name_fn name_fn; /* the name rule */
    void *name_ctx;
    bool namespaced; /* requiresNamespace: namespace required, else forbidden */
    /* core's ValidateObjectMeta (built-in types of k8s.io/kubernetes): a finalizer without
     * a "/" must be a standard one (kubernetes, orphan, foregroundDeletion). */
    bool kube_finalizers;
} kapi_meta_rules;

/* ValidateObjectMeta on create: generateName, name, namespace, generation, labels,
 * annotations, ownerReferences, finalizers, managedFields. meta may be NULL. path is
 * "metadata" for an object. */
void kapi_meta_validate(kapi_error *err, kapi_arena *a, const json_t *meta, const char *path,
                        const kapi_meta_rules *rules);
/* ValidateObjectMetaUpdate: no new finalizers while deleting, generation not decremented,
 * name, namespace, uid, creationTimestamp, deletionTimestamp and
 * deletionGracePeriodSeconds immutable, then labels, annotations, ownerReferences and
 * managedFields as on create (and the kube finalizer rule when asked). The resourceVersion
 * rule is left to the caller (built-in types update unconditionally). */
void kapi_meta_validate_update(kapi_error *err, kapi_arena *a, const json_t *meta,
                               const json_t *old_meta, const char *path, bool kube_finalizers);
/* ValidateLabels (keys are qualified names, values label values), with every cause at
 * path; keys are visited in sorted order (Go's is random). */
void kapi_meta_validate_labels(kapi_error *err, const json_t *labels, const char *path);
/* ValidateAnnotations: keys (lowercased) are qualified names; 256 KiB in total. */
void kapi_meta_validate_annotations(kapi_error *err, const json_t *annotations, const char *path);
/* field.Invalid(path, new, "field is immutable") when the two JSON values differ
 * (absent and null are equal); value is rendered with kapi_go_value. */
bool kapi_meta_immutable(kapi_error *err, const char *path, const json_t *now,
                         const json_t *before);

#endif
