/*
 * schema: structural schemas, the one description of every type (DESIGN.md invariant 1).
 *
 * A schema is compiled once from its JSON form (OpenAPI v2 / v3.0 Schema Object with the
 * x-kubernetes-* extensions) into a tree of kapi_schema nodes that every consumer reads:
 * the decode walk (unknown fields, Go type errors, Go zero values, defaults, member
 * order), value validation (custom resources), the OpenAPI documents, strategic merge
 * patch and protobuf.
 *
 * Built-in types are a kapi_schema_set: the definitions of the src/schema/defs files,
 * which refer to each other with {"$ref": "#/definitions/<name>"}. Custom resources
 * compile a standalone schema (no $ref) with kapi_schema_compile. Compiled schemas are
 * immutable; any thread may read them.
 *
 * The facts only kapi reads, kept out of published documents:
 *   x-kapi-protobuf            a property's protobuf field number
 *   x-kapi-protobuf-embed      a definition's properties that protobuf holds in a message
 *                              of their own (a Go struct embedded inline): {"field": N,
 *                              "message": its definition name, "properties": [...]}
 *   x-kapi-protobuf-wrap       an array protobuf holds in a message of its own, the
 *                              elements as its field 1 (a Go named slice type:
 *                              ExtraValue {items = 1})
 *   x-kapi-emit                the value Go's encoder writes for an absent property
 *                              (non-pointer structs, fields without omitempty)
 *   x-kapi-omitempty           a value field Go writes only when it is not zero ("", 0,
 *                              false, empty list or map), and defaulting takes zero as unset
 *   x-kapi-keep-empty          an omitempty list a decoded body keeps when empty: what
 *                              the write does with it tells [] from absent (managedFields)
 *   x-kapi-defaulter           a definition's conditional defaulting, done in C
 *   x-kapi-required-on-create  properties required of new objects only
 */
#ifndef KAPI_SCHEMA_H
#define KAPI_SCHEMA_H

#include <jansson.h>

#include "base/regex.h"
#include "base/status.h"
#include "codec/protobuf.h"

/* JSON types a node allows, as bits; 0 means any. */
enum {
    KAPI_SCHEMA_OBJECT = 1 << 0,
    KAPI_SCHEMA_ARRAY = 1 << 1,
    KAPI_SCHEMA_STRING = 1 << 2,
    KAPI_SCHEMA_INTEGER = 1 << 3,
    KAPI_SCHEMA_NUMBER = 1 << 4, /* integers are numbers too */
    KAPI_SCHEMA_BOOLEAN = 1 << 5,
    KAPI_SCHEMA_NULL = 1 << 6,
};

typedef struct kapi_schema kapi_schema;

/* One x-kubernetes-validations rule, compiled with its schema (rules.c). */
typedef struct kapi_schema_rule {
    const char *rule, *message; /* as written ("" when absent) */
    struct kapi_cel_ast *ast;   /* the checked program; NULL when blank or in error */
    const char *error;          /* why it does not compile ("compilation failed: ..."), or NULL */
    bool transition;            /* refers to oldSelf: evaluated on updates only */
    uint64_t max_cost;          /* the estimated cost of one evaluation */
} kapi_schema_rule;

/* A definition's conditional defaulting, done in C (e.g. a Container's imagePullPolicy
 * follows its image tag). obj is the object being defaulted: its members are walked
 * (quantities canonical) and its static defaults applied. */
typedef void (*kapi_schema_defaulter_fn)(json_t *obj);

/* One member of "properties", in declared order (Go struct order for built-ins). The
 * facts of the property itself live here, beside the schema of its value (which may be
 * a shared definition reached through $ref). */
typedef struct kapi_schema_prop {
    const char *name;
    const kapi_schema *schema;
    const char *description;
    json_t *default_value; /* NULL when none */
    json_t *emit;          /* x-kapi-emit, or NULL */
    int protobuf;          /* x-kapi-protobuf, 0 when none */
    bool omitempty;        /* x-kapi-omitempty: Go writes it only when not zero */
    bool keep_empty;       /* x-kapi-keep-empty: kept when zero by the decode walk */
} kapi_schema_prop;

/* An optional bound: set says whether the keyword was given. */
typedef struct kapi_schema_bound {
    bool set, exclusive;
    double value;
} kapi_schema_bound;

/* The Go types whose values are read by their own rules, not by their schema's type. */
typedef enum kapi_schema_go_value {
    KAPI_SCHEMA_GO_PLAIN = 0,
    KAPI_SCHEMA_GO_TIME,      /* meta/v1 Time: RFC 3339, seconds */
    KAPI_SCHEMA_GO_MICROTIME, /* meta/v1 MicroTime: RFC 3339, microseconds */
    KAPI_SCHEMA_GO_QUANTITY,  /* resource.Quantity: a string or a number, made canonical */
} kapi_schema_go_value;

struct kapi_schema {
    const char *def_name;          /* the definition this node is, or NULL for an inline node */
    kapi_schema_go_value go_value; /* from def_name */
    const char *go_name;           /* the Go type name messages use ("CronJobSpec"), or NULL */
    const json_t *src;             /* the JSON it was compiled from (owned by the set or root) */
    unsigned types;
    const char *format;
    const char *description;
    bool nullable;
    json_t *enum_values;   /* array, or NULL */
    json_t *default_value; /* NULL when none */

    /* objects */
    kapi_schema_prop *props;
    size_t nprops;
    const kapi_schema *additional; /* additionalProperties as a schema, or NULL */
    bool additional_false;         /* additionalProperties: false */
    const char *const *required;   /* NULL-terminated, or NULL */
    const char *const *required_on_create;
    int64_t min_props, max_props; /* -1 when unset */

    /* arrays */
    const kapi_schema *items;
    int64_t min_items, max_items;
    bool unique_items;

    /* strings */
    int64_t min_length, max_length;
    const char *pattern;
    kapi_regex *pattern_re; /* compiled pattern, or NULL */

    /* numbers */
    kapi_schema_bound minimum, maximum;
    double multiple_of; /* 0 when unset */

    /* combinators */
    const kapi_schema *const *all_of, *const *any_of, *const *one_of; /* NULL-terminated */
    const kapi_schema *not_schema;

    /* x-kubernetes-* */
    bool int_or_string, embedded_resource, preserve_unknown;
    const char *list_type;            /* atomic, set, map, or NULL */
    const char *const *list_map_keys; /* NULL-terminated, or NULL */
    const char *map_type;             /* atomic, granular, or NULL */
    const char *patch_strategy, *patch_merge_key;
    json_t *gvk; /* x-kubernetes-group-version-kind, or NULL */

    /* JSONSchemaPropsOrArray, -OrBool, -OrStringArray: a value that is an object (or,
     * for -OrArray, a list of objects) is decoded as this schema, JSONSchemaProps. */
    const kapi_schema *or_schema;

    /* x-kubernetes-validations (standalone schemas only): the node's CEL type, NULL when
     * CEL cannot see its values, and its rules */
    const struct kapi_cel_typ *cel_type;
    const kapi_schema_rule *rules;
    size_t nrules;
    bool rules_below; /* this node or one below it has rules */

    /* kapi facts */
    const char *defaulter; /* x-kapi-defaulter */
    kapi_schema_defaulter_fn defaulter_fn;
};

typedef struct kapi_schema_set kapi_schema_set;

kapi_schema_set *kapi_schema_set_new(void);
void kapi_schema_set_free(kapi_schema_set *s);
/* Adds definitions (name → schema; the set keeps a reference). Call before compile. */
kapi_error *kapi_schema_set_add(kapi_schema_set *s, json_t *definitions);
/* Registers the C defaulter named by x-kapi-defaulter. Call before compile. */
void kapi_schema_set_defaulter(kapi_schema_set *s, const char *name, kapi_schema_defaulter_fn fn);
/* Compiles every definition, resolving $ref; errors name the definition and path. */
kapi_error *kapi_schema_set_compile(kapi_schema_set *s);
/* The compiled definition name, or NULL. */
const kapi_schema *kapi_schema_set_get(const kapi_schema_set *s, const char *name);
/* All definitions (name and raw JSON), for the OpenAPI documents. Borrowed. */
const json_t *kapi_schema_set_definitions(const kapi_schema_set *s);

/* A standalone schema (a CRD version's openAPIV3Schema): no $ref. On error, *out is NULL
 * and the error names the path of the bad keyword. */
typedef struct kapi_schema_root kapi_schema_root;
kapi_error *kapi_schema_compile(const json_t *src, kapi_schema_root **out);
/* The same schema for the decode walk alone (pruning, defaults, unknown fields), cheap
 * enough to make for one request: its patterns are left out (neither kept nor compiled),
 * so it never validates a value. */
kapi_error *kapi_schema_compile_walk(const json_t *src, kapi_schema_root **out);
const kapi_schema *kapi_schema_root_node(const kapi_schema_root *r);
void kapi_schema_root_free(kapi_schema_root *r);

/* ---- protobuf (protobuf.c) ---- */

/* The protobuf message table of s, a compiled definition with properties, and of every
 * definition it reaches: field numbers from x-kapi-protobuf, kinds from the schemas
 * (strings, byte strings, booleans, int32/int64, doubles, maps of strings, lists,
 * metav1.Time, MicroTime and FieldsV1, other definitions). The tables live in arena a
 * and borrow their names from s's set: they live no longer than either. Not for a
 * standalone schema. A numbered property with no protobuf form, or a number used twice, is an
 * INTERNAL_ERROR naming it. */
kapi_error *kapi_schema_protobuf(const kapi_schema *s, kapi_arena *a, const kapi_pb_message **out);

/* ---- the decode walk ---- */

typedef struct kapi_schema_walk {
    kapi_arena *arena;
    /* Type mismatches are Go decoding errors (built-in types): the walk stops with a
     * 400 whose message is Go's ("json: cannot unmarshal string into Go struct field
     * CronJobSpec.spec.suspend of type bool"). Without it mismatches are left for
     * validation (custom resources). */
    bool go_types;
    /* Apply x-kapi-emit, default and the defaulters. */
    bool defaults;
    /* Rebuild objects with their members in schema order (Go struct order). */
    bool reorder;
    /* ObjectMeta's schema, for custom resources: an x-kubernetes-embedded-resource object
     * keeps its apiVersion and kind as they are and has its metadata walked by it, after
     * everything else; the paths the rest records are then sorted (kube's pruning sorts
     * them). NULL: built-in types. */
    const kapi_schema *embedded_meta;
    /* Out: paths of the fields the schema does not know, in document order
     * ("spec.bogus", "spec.containers[0].extra"); they are removed from the object. */
    const char **unknown;
    size_t nunknown, unknown_cap;
} kapi_schema_walk;

/* Walks obj (a whole object) against s. Returns NULL, or the decoding error of the
 * first type mismatch when go_types is set (its message lacks the "<Kind> in version
 * ... cannot be handled as ..." prefix, which the caller knows). */
kapi_error *kapi_schema_decode(const kapi_schema *s, json_t *obj, kapi_schema_walk *w);
/* Whether v is a Go zero value, which an omitempty field does not write: "", 0, false, and
 * an empty list or map (null is not: a field that is null was not zero, it was absent). */
bool kapi_schema_go_zero(const json_t *v);

/* What a protobuf round trip does to obj (a whole object, decoded by the walk above), as
 * kube-apiserver's storage in protobuf does to a built-in object before anyone reads it
 * back: an empty list or map in a field Go writes without omitempty (x-kapi-emit null)
 * has no bytes in protobuf, reads back as nil, and is written as null. */
void kapi_schema_protobuf_nulls(const kapi_schema *s, json_t *obj);

/* ---- value validation (custom resources; validate.c) ---- */

/* Validates v against s as kube-apiserver 1.26 validates a custom resource: kube-openapi's
 * checks of every keyword a structural schema may carry (formats as apiextensions keeps
 * them), then x-kubernetes-list-type set and map uniqueness. Appends the causes to err in
 * Kubernetes' order and words (FieldValueInvalid, FieldValueTypeInvalid,
 * FieldValueRequired, FieldValueNotSupported, FieldValueTooLong, FieldValueTooMany,
 * FieldValueDuplicate; "<nil>" fields for anyOf/oneOf/allOf/not); appends nothing when v is
 * valid. path names v ("" for a whole object); v may be NULL (null). */
void kapi_schema_validate(const kapi_schema *s, const json_t *v, const char *path, kapi_error *err);

/* objectmeta.Validate of a custom resource (meta.c): every x-kubernetes-embedded-resource
 * object in obj, found by schema s, has an apiVersion and a kind of the right form and
 * its metadata is valid ObjectMeta (the name a path segment). Appends the causes to err,
 * their paths under path ("" for an object's root). */
void kapi_schema_validate_embedded(const kapi_schema *s, const json_t *obj, const char *path,
                                   kapi_error *err);

/* ---- CRD schemas (structural.c) ---- */

/* Which of the rules apply: all of them to a new CRD; on an update, a rule the stored CRD
 * already broke is not enforced (kube-apiserver does not tighten validation on persisted
 * data). */
typedef struct kapi_schema_crd_rules {
    bool require_structural;      /* the schema must be structural; defaults checked */
    bool require_pruned_defaults; /* defaults must hold only fields their schema knows */
    bool require_atomic_set_type; /* items of a list-type set list are atomic */
    bool require_map_list_keys;   /* list-map keys required or defaulted, not nullable */
    bool require_valid_type;      /* type is one of OpenAPI v3's six */
} kapi_schema_crd_rules;

/* The rules for an update of a CRD whose stored schemas are the members of old_schemas (a
 * JSON array of openAPIV3Schema values; NULL for a create: every rule). */
kapi_schema_crd_rules kapi_schema_crd_rules_for(const json_t *old_schemas);
/* Appends to err the causes kube-apiserver 1.26 finds in a CRD version's openAPIV3Schema
 * schema, at path (".../openAPIV3Schema"): its structural-schema rules (sorted as Go sorts
 * them), then its defaults', then the OpenAPI keyword, list-type, map-type and
 * x-kubernetes-validations shape rules; see structural.c. */
void kapi_schema_crd_check(const json_t *schema, const char *path, const kapi_schema_crd_rules *r,
                           kapi_error *err);
/* Appends to err what kube finds wrong with the x-kubernetes-validations rules of root (a
 * CRD version's schema, compiled), at path (".../openAPIV3Schema"): rules that do not
 * compile or check, and costs past the limits per rule and per schema. The first
 * schema_causes causes of err are the schema's own errors: a node with one at or below it
 * has its rules left unchecked, as kube leaves them. */
void kapi_schema_rules_crd_check(const kapi_schema *root, const char *path, size_t schema_causes,
                                 kapi_error *err);
/* Evaluates the x-kubernetes-validations rules of schema s (a compiled CRD schema) over
 * the custom resource obj, old the object it replaces (NULL on create: transition rules
 * are skipped), within kube's cost budget, appending the failures to err as kube words
 * them ("spec: Invalid value: \"object\": <message>", "failed rule: <rule>", ...). */
void kapi_schema_rules_validate(const kapi_schema *s, const json_t *obj, const json_t *old,
                                kapi_error *err);

/* Whether pred holds for schema or a schema below it (properties, items, junctors,
 * additionalProperties, definitions, ...: kube's SchemaHas). */
bool kapi_schema_crd_has(const json_t *schema, bool (*pred)(const json_t *node));
/* Whether a schema is structural. */
bool kapi_schema_crd_structural(const json_t *schema);
/* Why schema is not structural, for the NonStructuralSchema condition of a CRD stored
 * before the rules: the structural conversion's error (static text; then nothing is
 * appended), or NULL with ValidateStructural's causes at path appended to err (sorted). */
const char *kapi_schema_crd_structural_causes(const json_t *schema, const char *path,
                                              kapi_error *err);

#endif
