/*
 * cel: the Common Expression Language (cel-spec), as Kubernetes 1.26 uses it through
 * cel-go v0.12 (CRD x-kubernetes-validations). Built like a small compiler, one stage per
 * file:
 *
 *   lex.c     source text -> tokens (the CEL.g4 lexer rules)
 *   parse.c   tokens -> the syntax tree, macros expanded (cel-go's parser and macros)
 *   value.c   values: equality, ordering, the conformance suite's and JSON's forms
 *   eval.c    the tree evaluated over variables: operators, macros' comprehensions and
 *             the standard functions of the core types
 *   strings.c the strings library Kubernetes gives CEL (charAt, indexOf, split, ...)
 *   library.c Kubernetes' own lists and regex libraries (isSorted, sum, find, ...)
 *   time.c    durations and timestamps (zones from base/tz)
 *   url.c     Kubernetes' url library (url, isURL, getHost, getQuery, ...): Go's net/url
 *
 *   check.c   the type checker: declared variables and functions, cel-go's unification
 *   cost.c    cost: the static estimate of a checked tree, and the costs evaluation counts
 *             to stop past a limit (kapi_cel_eval_limited)
 *
 * An expression from outside is evaluated with kapi_cel_eval_limited: a short one can loop
 * for long.
 *
 * ---- the syntax tree ----
 *
 * A parse gives a tree of kapi_cel_expr, as cel-go's parser gives a google.api.expr
 * Expr: every node has an id (1, 2, ... in the order cel-go gives them) and the byte
 * offset of the token it starts at. Operators are calls of their internal names:
 *
 *   a + b      _+_(a, b)         (also _-_ _*_ _/_ _%_ _==_ _!=_ _<_ _<=_ _>_ _>=_)
 *   a in b     @in(a, b)          a[b]     _[_](a, b)
 *   a && b     _&&_(a, b)         a || b   _||_(a, b)       a ? b : c   _?_:_(a, b, c)
 *   !a         !_(a)              -a       -_(a)
 *
 * A chain of one operator (a && b && c) is one balanced tree, as cel-go builds it. The
 * macros become what cel-go expands them to: has(a.f) is a test-only select; all,
 * exists, exists_one, map (two and three arguments) and filter are comprehensions over
 * the accumulator "__result__" (the loop condition of all and exists calls
 * @not_strictly_false).
 *
 * Literals: an int, uint or double literal is its value (a '-' directly before a number
 * belongs to it, so -9223372036854775808 is an int); a string or bytes literal is
 * unescaped (raw and triple-quoted forms too).
 *
 * ---- errors ----
 *
 * A source that does not parse gives its errors, each with its line and column, and the
 * whole text in cel-go's format:
 *
 *   ERROR: <input>:1:3: reserved identifier: while
 *    | a.while
 *    | ..^
 *
 * The limits: a source of at most KAPI_CEL_MAX_SOURCE code points, a tree at most
 * KAPI_CEL_MAX_DEPTH deep (cel-go's maxRecursionDepth: nesting, and chains of selects,
 * calls, indexes and operators), every token bounded by the source.
 *
 * Thread-safe: a parse touches nothing shared; its tree is the caller's.
 */
#ifndef KAPI_CEL_H
#define KAPI_CEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/base.h"
#include "codec/go.h"

#define KAPI_CEL_MAX_SOURCE 100000u
#define KAPI_CEL_MAX_DEPTH 250

typedef enum kapi_cel_kind {
    KAPI_CEL_NULL,   /* literal null */
    KAPI_CEL_BOOL,   /* literal */
    KAPI_CEL_INT,    /* literal */
    KAPI_CEL_UINT,   /* literal */
    KAPI_CEL_DOUBLE, /* literal */
    KAPI_CEL_STRING, /* literal */
    KAPI_CEL_BYTES,  /* literal */
    KAPI_CEL_IDENT,
    KAPI_CEL_SELECT,
    KAPI_CEL_CALL,
    KAPI_CEL_LIST,
    KAPI_CEL_MAP,    /* {k: v, ...} */
    KAPI_CEL_STRUCT, /* Name{field: v, ...} */
    KAPI_CEL_COMPREHENSION,
} kapi_cel_kind;

typedef struct kapi_cel_expr kapi_cel_expr;

/* An entry of a map ({key: value}) or of a message ({field: value}). */
typedef struct kapi_cel_entry {
    int64_t id;
    const char *field;  /* a message's field name; NULL in a map */
    kapi_cel_expr *key; /* a map's key; NULL in a message */
    kapi_cel_expr *value;
} kapi_cel_entry;

struct kapi_cel_expr {
    int64_t id;
    kapi_cel_kind kind;
    size_t offset; /* of the node's first token in the source */
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double d;
        kapi_str s;        /* a string (valid UTF-8) or bytes literal; NUL-terminated too */
        const char *ident; /* an identifier (".x" with its leading dot) */
        struct {
            kapi_cel_expr *operand;
            const char *field;
            bool test_only; /* has(operand.field) */
        } select;
        struct {
            const char *function;
            int fn;                /* its id in cel_int.h's table, which the parse sets */
            kapi_cel_expr *target; /* a receiver call's receiver, else NULL */
            kapi_cel_expr **args;
            size_t nargs;
        } call;
        struct {
            kapi_cel_expr **elems;
            size_t n;
        } list;
        struct {
            const char *message; /* KAPI_CEL_STRUCT: the message's name */
            kapi_cel_entry *entries;
            size_t n;
        } map;
        struct {
            const char *iter_var, *accu_var;
            kapi_cel_expr *iter_range, *accu_init, *loop_condition, *loop_step, *result;
        } comp;
    } u;
};

/* One error of a parse: where (1-based line, 0-based column in code points, as cel-go
 * counts them) and what. */
typedef struct kapi_cel_issue {
    int line, column;
    const char *message;
} kapi_cel_issue;

/* A parsed source: the tree (NULL when there are errors), or its errors. */
typedef struct kapi_cel_ast {
    kapi_arena arena; /* everything below lives in it */
    kapi_cel_expr *root;
    kapi_cel_issue *issues;
    size_t nissues;
    int64_t next_id;    /* the ids given, 1 to next_id - 1 */
    const char *source; /* a copy of the source, NUL-terminated */
    size_t source_len;
    const struct kapi_cel_typ **types; /* after kapi_cel_check: each node's type, by id */
    /* after kapi_cel_check: each call's matching overloads, by id, as their signatures in
     * check.c's declarations ("string,string>bool"), NULL-terminated */
    const char *const *const *overloads;
    /* how evaluation runs each node, by id (cel_int.h): planned by the parse, again by
     * kapi_cel_check */
    const struct kapi_cel_node_plan *plan;
} kapi_cel_ast;

/* Parses src (len bytes, UTF-8), macros expanded. Returns a tree the caller frees with
 * kapi_cel_ast_free; its root is NULL when the source has errors (then nissues > 0). */
kapi_cel_ast *kapi_cel_parse(const char *src, size_t len);
void kapi_cel_ast_free(kapi_cel_ast *ast);

/* Appends the errors of ast in cel-go's format (above), one after the other separated by
 * newlines, each with the source line it is on and a caret under its column. */
void kapi_cel_issues_text(kapi_buf *b, const kapi_cel_ast *ast, const char *src, size_t len);

/* ---- types and the checker (check.c) ----
 *
 * A type as cel-go's checker has it. The primitives are shared constants
 * (kapi_cel_type_of); lists, maps and objects are made in an arena. An object type is
 * what Kubernetes declares for a schema's object: a name and its fields. max_elements is
 * what cost estimation takes as the size of a value of the type, as Kubernetes declares
 * it from a schema: the most bytes of a string, items of a list, entries of a map, bytes of
 * a duration's or timestamp's JSON form; 0 is a size too (Kubernetes gives a map's keys
 * and the scalars 0), so a type of any size says UINT64_MAX. */

typedef enum kapi_cel_tkind {
    KAPI_CEL_TY_DYN,
    KAPI_CEL_TY_ERROR,
    KAPI_CEL_TY_NULL,
    KAPI_CEL_TY_BOOL,
    KAPI_CEL_TY_INT,
    KAPI_CEL_TY_UINT,
    KAPI_CEL_TY_DOUBLE,
    KAPI_CEL_TY_STRING,
    KAPI_CEL_TY_BYTES,
    KAPI_CEL_TY_DURATION,
    KAPI_CEL_TY_TIMESTAMP,
    KAPI_CEL_TY_TYPE,   /* the type of a type: elem is the type, or NULL for "type" */
    KAPI_CEL_TY_LIST,   /* elem */
    KAPI_CEL_TY_MAP,    /* key, elem (the values) */
    KAPI_CEL_TY_OBJECT, /* name, fields */
    KAPI_CEL_TY_PARAM,  /* a type parameter, name */
} kapi_cel_tkind;

typedef struct kapi_cel_typ kapi_cel_typ;

/* An object's field: its name as CEL sees it (escaped) and its type. */
typedef struct kapi_cel_field {
    const char *name;
    const kapi_cel_typ *type;
} kapi_cel_field;

struct kapi_cel_typ {
    kapi_cel_tkind kind;
    const kapi_cel_typ *elem, *key;
    const char *name;
    const kapi_cel_field *fields;
    size_t nfields;
    uint64_t max_elements;
    int64_t min_size; /* the fewest bytes a value takes in JSON (Kubernetes' cardinality) */
};

/* A declared variable: its name and type. */
typedef struct kapi_cel_var {
    const char *name;
    const kapi_cel_typ *type;
} kapi_cel_var;

/* The shared type of a primitive kind (DYN to TYPE), NULL for the others. */
const kapi_cel_typ *kapi_cel_type_of(kapi_cel_tkind kind);
/* list(elem) and map(key, value), made in arena a. */
const kapi_cel_typ *kapi_cel_type_list(kapi_arena *a, const kapi_cel_typ *elem);
const kapi_cel_typ *kapi_cel_type_map(kapi_arena *a, const kapi_cel_typ *key,
                                      const kapi_cel_typ *value);
/* Appends t as cel-go formats it: "int", "list(string)", "map(string, dyn)", an object's
 * name. */
void kapi_cel_type_format(kapi_buf *b, const kapi_cel_typ *t);

/* Type-checks a parsed tree against the variables vars (n of them) and the functions of
 * Kubernetes 1.26's CEL environment. Returns the expression's type, or NULL when it does
 * not check: its errors are then added to ast->issues in cel-go's words ("undefined field
 * 'x'", "found no matching overload for '_+_' applied to '(int, string)'", ...). On
 * success ast->types holds every node's type. used, when not NULL, has one flag per
 * variable, set when the expression refers to it. */
const kapi_cel_typ *kapi_cel_check(kapi_cel_ast *ast, const kapi_cel_var *vars, size_t n,
                                   bool *used);

/* ---- values ----
 *
 * A value lives in the arena of the evaluation that made it (or of whoever built it):
 * it is a small struct copied freely, whose strings, lists and maps point into that
 * arena. An error is a value too (CEL's errors as values): it carries its message, and
 * the operators that absorb errors (&&, ||, the ?: branch not taken) drop it. */

typedef enum kapi_cel_type {
    KAPI_CEL_T_NULL,
    KAPI_CEL_T_BOOL,
    KAPI_CEL_T_INT,
    KAPI_CEL_T_UINT,
    KAPI_CEL_T_DOUBLE,
    KAPI_CEL_T_STRING, /* valid UTF-8 */
    KAPI_CEL_T_BYTES,
    KAPI_CEL_T_LIST,
    KAPI_CEL_T_MAP, /* keys bool, int, uint or string, no two equal */
    KAPI_CEL_T_TYPE,
    KAPI_CEL_T_DURATION, /* google.protobuf.Duration, as cel-go v0.12's: nanoseconds in i */
    KAPI_CEL_T_URL,      /* kubernetes.URL, Go's url.URL as url.Parse leaves it, in url */
    /* google.protobuf.Timestamp, as cel-go v0.12's: a Go time.Time from 0001-01-01 to
     * 9999-12-31 UTC, in the fixed zone it was written with (timestamp('...+01:00') keeps
     * +01:00 for string() and the getters; others are in UTC) */
    KAPI_CEL_T_TIMESTAMP,
    KAPI_CEL_T_ERROR,
} kapi_cel_type;

typedef struct kapi_cel_value kapi_cel_value;
typedef struct kapi_cel_url kapi_cel_url; /* the parts of a URL (cel_int.h) */
struct kapi_cel_value {
    kapi_cel_type t;
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double d;
        kapi_str s; /* string, bytes */
        struct {
            const kapi_cel_value *v;
            size_t n;
            /* a list-type set or map list: == ignores the order, and + merges as
             * Kubernetes merges them (a set keeps one of equal items, a map list's item
             * replaces the one of its keys) */
            bool unordered;
            const char *const *keys; /* a map list: its items' key fields, NULL-terminated */
        } list;
        struct {
            const kapi_cel_value *keys, *values;
            size_t n;
        } map;
        kapi_go_time ts;         /* a timestamp */
        const char *type;        /* a type's name: "int", "list", "null_type", "type", ... */
        const char *error;       /* the error's message */
        const kapi_cel_url *url; /* in the arena, like a list's elements */
    } u;
};

/* CEL's ==: numbers by value whatever their types, lists and maps element by element,
 * URLs by their text (Go's URL.String()), values of different kinds unequal. */
bool kapi_cel_equal(const kapi_cel_value *a, const kapi_cel_value *b);
/* The name of v's type ("int", "map", ...). */
const char *kapi_cel_type_name(const kapi_cel_value *v);
/* The value of a JSON document (objects are maps with string keys, integers ints, other
 * numbers doubles), made in arena a. */
kapi_cel_value kapi_cel_from_json(kapi_arena *a, const json_t *v);

/* ---- evaluation ---- */

/* The variables an expression sees: lookup finds name's value (true), or not (false). */
typedef struct kapi_cel_activation {
    bool (*lookup)(void *ctx, const char *name, kapi_cel_value *out);
    void *ctx;
} kapi_cel_activation;

/* Evaluates e over the variables of act, its values made in arena a. The result may be
 * an error value (KAPI_CEL_T_ERROR), with cel-go's message ("no such overload", "division
 * by zero", "no such key: x", ...). */
kapi_cel_value kapi_cel_eval(const kapi_cel_expr *e, const kapi_cel_activation *act, kapi_arena *a);

/* The message of the error an evaluation past its cost limit gives, as cel-go's. */
#define KAPI_CEL_COST_LIMIT_EXCEEDED "operation cancelled: actual cost limit exceeded"

/* Evaluates ast's expression (it must have parsed) as kapi_cel_eval does, counting its
 * actual cost as cel-go v0.12's cost tracker counts it in Kubernetes 1.26 (its library
 * costs included); *cost (when not NULL) gets it. Once the cost passes limit (0: none)
 * evaluation stops, inside comprehensions too, and the result is an error with the message
 * KAPI_CEL_COST_LIMIT_EXCEEDED. A checked ast counts as Kubernetes' programs do (calls by
 * the overloads the checker resolved); an unchecked one as cel-go's parse-only programs. */
kapi_cel_value kapi_cel_eval_limited(const kapi_cel_ast *ast, const kapi_cel_activation *act,
                                     kapi_arena *a, uint64_t limit, uint64_t *cost);

/* ---- cost (cost.c) ----
 *
 * Costs are cel-go's units (one is roughly a variable's lookup), saturating at UINT64_MAX.
 * The estimate is what Kubernetes holds against its limits when a rule is written: a range
 * over every value the variables may hold, the sizes of strings, lists and maps taken from
 * the max_elements of the types the checker gave the variables, fields and items. */

/* The least and the most an expression may cost. */
typedef struct kapi_cel_cost {
    uint64_t min, max;
} kapi_cel_cost;

/* The estimated cost of ast's expression, as cel-go's checker.Cost with Kubernetes'
 * CostEstimator gives it; ast must have checked (kapi_cel_check), else {0, 0}. */
kapi_cel_cost kapi_cel_estimate_cost(const kapi_cel_ast *ast);

/* Appends a compact text of the tree, for tests and debugging: calls as f(a, b), a
 * receiver call as t.f(a), selects as a.f (a test-only one as a.f~test-only~), lists,
 * maps and messages in brackets and braces, literals as CEL writes them (strings
 * quoted, uints with u, bytes as b"..."), comprehensions as
 * __comprehension__(iter_var, range, accu_var, init, condition, step, result). */
void kapi_cel_debug(kapi_buf *b, const kapi_cel_expr *e);

#endif
