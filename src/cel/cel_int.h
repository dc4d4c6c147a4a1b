/*
 * cel internals shared by the stages of src/cel.
 */
#ifndef KAPI_CEL_INT_H
#define KAPI_CEL_INT_H

#include "cel/cel.h"

typedef enum cel_tok {
    TOK_EOF,
    TOK_EQ,      /* == */
    TOK_NE,      /* != */
    TOK_IN,      /* in */
    TOK_LT,      /* < */
    TOK_LE,      /* <= */
    TOK_GE,      /* >= */
    TOK_GT,      /* > */
    TOK_AND,     /* && */
    TOK_OR,      /* || */
    TOK_LBRACK,  /* [ */
    TOK_RBRACK,  /* ] */
    TOK_LBRACE,  /* { */
    TOK_RBRACE,  /* } */
    TOK_LPAREN,  /* ( */
    TOK_RPAREN,  /* ) */
    TOK_DOT,     /* . */
    TOK_COMMA,   /* , */
    TOK_MINUS,   /* - */
    TOK_NOT,     /* ! */
    TOK_QUEST,   /* ? */
    TOK_COLON,   /* : */
    TOK_PLUS,    /* + */
    TOK_STAR,    /* * */
    TOK_SLASH,   /* / */
    TOK_PERCENT, /* % */
    TOK_TRUE,
    TOK_FALSE,
    TOK_NULL,
    TOK_INT,    /* NUM_INT: digits, or 0x and hex digits */
    TOK_UINT,   /* NUM_UINT: the same with u or U */
    TOK_FLOAT,  /* NUM_FLOAT */
    TOK_STRING, /* STRING, quotes and prefix included */
    TOK_BYTES,  /* BYTES: b or B, then a STRING */
    TOK_IDENT,  /* IDENTIFIER */
} cel_tok;

typedef struct cel_token {
    cel_tok type;
    size_t start, len; /* in the source */
} cel_token;

/* The lexer: tokens one at a time, whitespace and comments skipped. A character no rule
 * takes is reported (report(ctx, offset, message)) and skipped, as ANTLR's lexer does. */
typedef struct cel_lexer {
    const char *src;
    size_t len, pos;
    void (*report)(void *ctx, size_t offset, const char *message);
    void *ctx;
} cel_lexer;

cel_token kapi_cel__next(cel_lexer *lx);
/* The text a token type stands for in messages ("'=='", "<EOF>"). */
const char *kapi_cel__tok_name(cel_tok t);

/* The value of a STRING or BYTES token's text (prefix and quotes included), unescaped
 * as cel-go's unescape does, into out; NULL, or why it is not valid ("invalid escape
 * sequence"). A string's value must be valid UTF-8, a bytes value may hold any byte. */
const char *kapi_cel__unquote(const char *text, size_t len, bool bytes, kapi_buf *out);

/* The 1-based line and 0-based column (in code points) of byte offset in src, as cel-go
 * gives locations. */
void kapi_cel__locate(const char *src, size_t len, size_t offset, int *line, int *column);
/* Adds n errors to ast's (copied into its arena), keeping them in cel-go's order: by
 * line, then column. */
void kapi_cel__add_issues(kapi_cel_ast *ast, const kapi_cel_issue *issues, size_t n);

/* ---- functions ----
 *
 * The functions evaluation knows, each by its name: the parse interns a call's name
 * (u.call.fn, kapi_cel__function), so evaluation and its costs dispatch on the id, not the
 * name. A call of any other name is FN_OTHER, which no value has an overload of. */
#define KAPI_CEL_FUNCTIONS(XX)                                                                     \
    XX(AND, "_&&_")                                                                                \
    XX(OR, "_||_")                                                                                 \
    XX(CONDITIONAL, "_?_:_")                                                                       \
    XX(INDEX, "_[_]")                                                                              \
    XX(NOT_STRICTLY_FALSE, "@not_strictly_false")                                                  \
    XX(EQ, "_==_")                                                                                 \
    XX(NE, "_!=_")                                                                                 \
    XX(LT, "_<_")                                                                                  \
    XX(LE, "_<=_")                                                                                 \
    XX(GT, "_>_")                                                                                  \
    XX(GE, "_>=_")                                                                                 \
    XX(ADD, "_+_")                                                                                 \
    XX(SUB, "_-_")                                                                                 \
    XX(MUL, "_*_")                                                                                 \
    XX(DIV, "_/_")                                                                                 \
    XX(MOD, "_%_")                                                                                 \
    XX(IN, "@in")                                                                                  \
    XX(IN_DEPRECATED, "in")                                                                        \
    XX(NOT, "!_")                                                                                  \
    XX(NEG, "-_")                                                                                  \
    XX(SIZE, "size")                                                                               \
    XX(INT, "int")                                                                                 \
    XX(UINT, "uint")                                                                               \
    XX(DOUBLE, "double")                                                                           \
    XX(STRING, "string")                                                                           \
    XX(BOOL, "bool")                                                                               \
    XX(BYTES, "bytes")                                                                             \
    XX(DYN, "dyn")                                                                                 \
    XX(TYPE, "type")                                                                               \
    XX(CONTAINS, "contains")                                                                       \
    XX(STARTS_WITH, "startsWith")                                                                  \
    XX(ENDS_WITH, "endsWith")                                                                      \
    XX(MATCHES, "matches")                                                                         \
    XX(DURATION, "duration")                                                                       \
    XX(TIMESTAMP, "timestamp")                                                                     \
    XX(GET_FULL_YEAR, "getFullYear")                                                               \
    XX(GET_MONTH, "getMonth")                                                                      \
    XX(GET_DAY_OF_YEAR, "getDayOfYear")                                                            \
    XX(GET_DAY_OF_MONTH, "getDayOfMonth")                                                          \
    XX(GET_DATE, "getDate")                                                                        \
    XX(GET_DAY_OF_WEEK, "getDayOfWeek")                                                            \
    XX(GET_HOURS, "getHours")                                                                      \
    XX(GET_MINUTES, "getMinutes")                                                                  \
    XX(GET_SECONDS, "getSeconds")                                                                  \
    XX(GET_MILLISECONDS, "getMilliseconds")                                                        \
    XX(CHAR_AT, "charAt")                                                                          \
    XX(INDEX_OF, "indexOf")                                                                        \
    XX(LAST_INDEX_OF, "lastIndexOf")                                                               \
    XX(LOWER_ASCII, "lowerAscii")                                                                  \
    XX(UPPER_ASCII, "upperAscii")                                                                  \
    XX(REPLACE, "replace")                                                                         \
    XX(SPLIT, "split")                                                                             \
    XX(SUBSTRING, "substring")                                                                     \
    XX(TRIM, "trim")                                                                               \
    XX(JOIN, "join")                                                                               \
    XX(IS_SORTED, "isSorted")                                                                      \
    XX(SUM, "sum")                                                                                 \
    XX(MIN, "min")                                                                                 \
    XX(MAX, "max")                                                                                 \
    XX(FIND, "find")                                                                               \
    XX(FIND_ALL, "findAll")                                                                        \
    XX(URL, "url")                                                                                 \
    XX(IS_URL, "isURL")                                                                            \
    XX(GET_SCHEME, "getScheme")                                                                    \
    XX(GET_HOST, "getHost")                                                                        \
    XX(GET_HOSTNAME, "getHostname")                                                                \
    XX(GET_PORT, "getPort")                                                                        \
    XX(GET_ESCAPED_PATH, "getEscapedPath")                                                         \
    XX(GET_QUERY, "getQuery")

typedef enum cel_fn {
    FN_OTHER,
#define XX(id, name) FN_##id,
    KAPI_CEL_FUNCTIONS(XX)
#undef XX
        FN_COUNT,
} cel_fn;

/* The id of the function called name (FN_OTHER for a name evaluation does not know). */
cel_fn kapi_cel__function(const char *name);

/* ---- values (value.c) ---- */

bool kapi_cel__is_number(const kapi_cel_value *v);
/* a against b: -1, 0, 1, or 2 when they do not compare (NaN, different kinds). Numbers
 * of any kinds compare by value; strings and bytes by their bytes; bools false < true. */
int kapi_cel__cmp_numbers(const kapi_cel_value *a, const kapi_cel_value *b);
int kapi_cel__cmp(const kapi_cel_value *a, const kapi_cel_value *b);
/* A string or bytes value of t, a copy of p (n bytes) in arena a, NUL after it. */
kapi_cel_value kapi_cel__string(kapi_arena *a, kapi_cel_type t, const char *p, size_t n);
/* An error value whose message is formatted into arena a. */
kapi_cel_value kapi_cel__error(kapi_arena *a, const char *fmt, ...) KAPI_PRINTF(2, 3);
/* ---- the strings library (strings.c) ---- */

/* Calls fn of the strings library on args (receiver first) into *out, a value or an
 * error; false when fn with these kinds of arguments is not one of its overloads. */
bool kapi_cel__strings(kapi_arena *a, cel_fn fn, const kapi_cel_value *args, size_t n,
                       kapi_cel_value *out);

/* ---- durations (time.c) ---- */

/* The same for durations: duration(), their conversions, arithmetic and getters. */
bool kapi_cel__time(kapi_arena *a, cel_fn fn, const kapi_cel_value *args, size_t n,
                    kapi_cel_value *out);

/* ---- Kubernetes' libraries (library.c) ---- */

/* The same for the lists and regex libraries Kubernetes adds. */
bool kapi_cel__library(kapi_arena *a, cel_fn fn, const kapi_cel_value *args, size_t n,
                       kapi_cel_value *out);

/* ---- Kubernetes' url library (url.c) ---- */

/* A kubernetes.URL: the fields of Go's url.URL as url.Parse leaves them (decoded forms
 * and the raw forms Go keeps beside them), slices of the arena the value lives in; text
 * is its String(), which equality compares. */
struct kapi_cel_url {
    kapi_str scheme, opaque, username, password, host, path, raw_path, raw_query, fragment,
        raw_fragment;
    bool has_user, password_set, omit_host, force_query;
    kapi_str text;
};

/* The same for the url library: url(), isURL() and the getters of a URL. */
bool kapi_cel__url(kapi_arena *a, cel_fn fn, const kapi_cel_value *args, size_t n,
                   kapi_cel_value *out);

/* The value at key in map m (keys compared as ==), or NULL. */
const kapi_cel_value *kapi_cel__map_find(const kapi_cel_value *m, const kapi_cel_value *key);

/* ---- cost (cost.c) ---- */

/* What creating a list, a map costs before its elements' costs (cel-go's common/cost.go). */
#define KAPI_CEL_LIST_CREATE_COST 10
#define KAPI_CEL_MAP_CREATE_COST 30

/* a + b, UINT64_MAX where it overflows: costs saturate. */
uint64_t kapi_cel__cost_add(uint64_t a, uint64_t b);

/* What a call costs once evaluated, as cel-go's cost tracker counts it with Kubernetes'
 * library costs: kind is its node's plan's cost (from its function and the overload the
 * checker resolved it to), args (the receiver first) and result its values (errors too). */
uint64_t kapi_cel__call_cost(uint8_t kind, const kapi_cel_value *args, size_t n,
                             const kapi_cel_value *result);

/* The one overload the checker resolved call e of ast to; NULL when ast is NULL or not
 * checked, or the call has several. */
const char *kapi_cel__overload(const kapi_cel_ast *ast, const kapi_cel_expr *e);

/* How cel-go's planner, with the options Kubernetes gives it, makes a node, where that
 * changes what evaluating it costs or gives. */
enum {
    KAPI_CEL_PLAN_CALL,      /* as the tree says */
    KAPI_CEL_PLAN_CONST,     /* folded to a constant: costs nothing */
    KAPI_CEL_PLAN_SET,       /* x in a constant list of primitives: a lookup, false for an error */
    KAPI_CEL_PLAN_EMPTY_SET, /* x in []: false, x not evaluated */
    KAPI_CEL_PLAN_VARARGS,   /* a call that stops at its first argument that fails, uncharged */
};

/* How evaluation runs a node, decided once per tree. */
typedef struct kapi_cel_node_plan {
    uint8_t how;  /* KAPI_CEL_PLAN_* */
    uint8_t cost; /* a call's cost class, which kapi_cel__call_cost takes */
} kapi_cel_node_plan;

/* Plans every node of ast (ast->plan, in its arena) as its types and overloads stand: the
 * parse plans its tree, the checker again once it resolved the calls. */
void kapi_cel__plan(kapi_cel_ast *ast);

#endif
