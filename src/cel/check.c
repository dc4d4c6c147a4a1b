/*
 * cel/check: the type checker, as cel-go v0.12's checker package checks an expression in
 * the environment Kubernetes 1.26 gives CRD validation rules: the standard declarations
 * (cross-type numeric comparisons left out, as cel-go leaves them out unless asked),
 * homogeneous aggregate literals, and the strings, lists, regex and url libraries.
 *
 * Types unify as cel-go's do: overloads with type parameters are instantiated with fresh
 * variables (_var0, _var1, ...), a mapping from variables to types is tried on a copy and
 * kept only when a whole overload matches, the first matching overload gives the result
 * type (dyn when a later one gives another), and at the end every node's type has its
 * variables substituted (dyn where unbound).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cel/cel_int.h"

typedef kapi_cel_typ typ;

/* ---- the types everyone shares ---- */

#define PRIM(k)                                                                                    \
    {                                                                                              \
        .kind = (k)                                                                                \
    }
static const typ t_dyn = PRIM(KAPI_CEL_TY_DYN), t_error = PRIM(KAPI_CEL_TY_ERROR),
                 t_null = PRIM(KAPI_CEL_TY_NULL), t_bool = PRIM(KAPI_CEL_TY_BOOL),
                 t_int = PRIM(KAPI_CEL_TY_INT), t_uint = PRIM(KAPI_CEL_TY_UINT),
                 t_double = PRIM(KAPI_CEL_TY_DOUBLE), t_string = PRIM(KAPI_CEL_TY_STRING),
                 t_bytes = PRIM(KAPI_CEL_TY_BYTES), t_duration = PRIM(KAPI_CEL_TY_DURATION),
                 t_timestamp = PRIM(KAPI_CEL_TY_TIMESTAMP), t_type = PRIM(KAPI_CEL_TY_TYPE);
#undef PRIM

const kapi_cel_typ *kapi_cel_type_of(kapi_cel_tkind kind)
{
    static const typ *const prims[] = {
        [KAPI_CEL_TY_DYN] = &t_dyn,
        [KAPI_CEL_TY_ERROR] = &t_error,
        [KAPI_CEL_TY_NULL] = &t_null,
        [KAPI_CEL_TY_BOOL] = &t_bool,
        [KAPI_CEL_TY_INT] = &t_int,
        [KAPI_CEL_TY_UINT] = &t_uint,
        [KAPI_CEL_TY_DOUBLE] = &t_double,
        [KAPI_CEL_TY_STRING] = &t_string,
        [KAPI_CEL_TY_BYTES] = &t_bytes,
        [KAPI_CEL_TY_DURATION] = &t_duration,
        [KAPI_CEL_TY_TIMESTAMP] = &t_timestamp,
        [KAPI_CEL_TY_TYPE] = &t_type,
    };
    return (size_t)kind < KAPI_ARRAY_LEN(prims) ? prims[kind] : NULL;
}

static const typ *mk(kapi_arena *a, kapi_cel_tkind kind, const typ *elem, const typ *key,
                     const char *name)
{
    typ *t = kapi_arena_alloc(a, sizeof(*t));
    memset(t, 0, sizeof(*t));
    t->kind = kind;
    t->elem = elem;
    t->key = key;
    t->name = name;
    return t;
}

const kapi_cel_typ *kapi_cel_type_list(kapi_arena *a, const kapi_cel_typ *elem)
{
    return mk(a, KAPI_CEL_TY_LIST, elem, NULL, NULL);
}

const kapi_cel_typ *kapi_cel_type_map(kapi_arena *a, const kapi_cel_typ *key,
                                      const kapi_cel_typ *value)
{
    return mk(a, KAPI_CEL_TY_MAP, value, key, NULL);
}

/* ---- formatting (FormatCheckedType) ---- */

void kapi_cel_type_format(kapi_buf *b, const kapi_cel_typ *t)
{
    static const char *const names[] = {
        [KAPI_CEL_TY_DYN] = "dyn",
        [KAPI_CEL_TY_ERROR] = "!error!",
        [KAPI_CEL_TY_NULL] = "null",
        [KAPI_CEL_TY_BOOL] = "bool",
        [KAPI_CEL_TY_INT] = "int",
        [KAPI_CEL_TY_UINT] = "uint",
        [KAPI_CEL_TY_DOUBLE] = "double",
        [KAPI_CEL_TY_STRING] = "string",
        [KAPI_CEL_TY_BYTES] = "bytes",
        [KAPI_CEL_TY_DURATION] = "duration",
        [KAPI_CEL_TY_TIMESTAMP] = "timestamp",
    };
    switch (t->kind) {
    case KAPI_CEL_TY_LIST:
        kapi_buf_puts(b, "list(");
        kapi_cel_type_format(b, t->elem);
        kapi_buf_putc(b, ')');
        return;
    case KAPI_CEL_TY_MAP:
        kapi_buf_puts(b, "map(");
        kapi_cel_type_format(b, t->key);
        kapi_buf_puts(b, ", ");
        kapi_cel_type_format(b, t->elem);
        kapi_buf_putc(b, ')');
        return;
    case KAPI_CEL_TY_TYPE:
        if (!t->elem) {
            kapi_buf_puts(b, "type");
            return;
        }
        kapi_buf_puts(b, "type(");
        kapi_cel_type_format(b, t->elem);
        kapi_buf_putc(b, ')');
        return;
    case KAPI_CEL_TY_OBJECT:
    case KAPI_CEL_TY_PARAM:
        kapi_buf_puts(b, t->name);
        return;
    default:
        kapi_buf_puts(b, names[t->kind]);
    }
}

static const char *fmt_type(kapi_arena *a, const typ *t)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_cel_type_format(&b, t);
    char *s = kapi_arena_strdup(a, b.ptr);
    kapi_buf_dispose(&b);
    return s;
}

/* proto.Equal of two types */
static bool same(const typ *x, const typ *y)
{
    if (x == y)
        return true;
    if (!x || !y || x->kind != y->kind)
        return false;
    switch (x->kind) {
    case KAPI_CEL_TY_LIST:
        return same(x->elem, y->elem);
    case KAPI_CEL_TY_MAP:
        return same(x->key, y->key) && same(x->elem, y->elem);
    case KAPI_CEL_TY_TYPE:
        return same(x->elem, y->elem);
    case KAPI_CEL_TY_OBJECT:
    case KAPI_CEL_TY_PARAM:
        return strcmp(x->name, y->name) == 0;
    default:
        return true;
    }
}

/* ---- the substitution mapping ---- */

typedef struct mapping {
    const char **from; /* type parameters' names */
    const typ **to;
    size_t n, cap;
} mapping;

static const typ *find(const mapping *m, const typ *t)
{
    if (t->kind != KAPI_CEL_TY_PARAM)
        return NULL;
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->from[i], t->name) == 0)
            return m->to[i];
    return NULL;
}

static void add(mapping *m, const typ *from, const typ *to)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->from[i], from->name) == 0) {
            m->to[i] = to;
            return;
        }
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 8;
        m->from = kapi_xrealloc(m->from, m->cap * sizeof(*m->from));
        m->to = kapi_xrealloc(m->to, m->cap * sizeof(*m->to));
    }
    m->from[m->n] = from->name;
    m->to[m->n++] = to;
}

static void copy_mapping(mapping *dst, const mapping *src)
{
    dst->n = 0;
    for (size_t i = 0; i < src->n; i++) {
        typ p = {.kind = KAPI_CEL_TY_PARAM, .name = src->from[i]};
        add(dst, &p, src->to[i]);
    }
}

static void free_mapping(mapping *m)
{
    free(m->from);
    free(m->to);
}

/* ---- assignability (cel-go's checker/types.go) ---- */

static bool is_dyn_or_error(const typ *t)
{
    return t->kind == KAPI_CEL_TY_DYN || t->kind == KAPI_CEL_TY_ERROR;
}

static bool less_specific(const typ *t1, const typ *t2)
{
    if (t1->kind == KAPI_CEL_TY_DYN || t1->kind == KAPI_CEL_TY_PARAM)
        return true;
    if (t2->kind == KAPI_CEL_TY_DYN || t2->kind == KAPI_CEL_TY_PARAM)
        return false;
    if (t1->kind != t2->kind)
        return false;
    switch (t1->kind) {
    case KAPI_CEL_TY_LIST:
        return less_specific(t1->elem, t2->elem);
    case KAPI_CEL_TY_MAP:
        return less_specific(t1->key, t2->key) && less_specific(t1->elem, t2->elem);
    case KAPI_CEL_TY_TYPE:
        return true;
    default:
        return same(t1, t2);
    }
}

static const typ *most_general(const typ *t1, const typ *t2)
{
    return less_specific(t1, t2) ? t1 : t2;
}

static bool not_referenced_in(const mapping *m, const typ *t, const typ *within)
{
    if (same(t, within))
        return false;
    switch (within->kind) {
    case KAPI_CEL_TY_PARAM: {
        const typ *sub = find(m, within);
        return !sub || not_referenced_in(m, t, sub);
    }
    case KAPI_CEL_TY_LIST:
        return not_referenced_in(m, t, within->elem);
    case KAPI_CEL_TY_MAP:
        return not_referenced_in(m, t, within->key) && not_referenced_in(m, t, within->elem);
    default:
        return true;
    }
}

static bool assignable(mapping *m, const typ *t1, const typ *t2);

/* Whether t2 (or what it stands for) may stand for t1; *has_sub when t2 stands for
 * something already. */
static bool valid_substitution(mapping *m, const typ *t1, const typ *t2, bool *has_sub)
{
    *has_sub = false;
    if (t1->kind == t2->kind && same(t1, t2)) {
        *has_sub = true;
        return true;
    }
    const typ *sub = find(m, t2);
    if (sub) {
        *has_sub = true;
        if (t1->kind == sub->kind && same(t1, sub))
            return true;
        if (assignable(m, t1, sub)) {
            const typ *g = most_general(t1, sub);
            if (not_referenced_in(m, t2, g))
                add(m, t2, g);
            return true;
        }
        return false;
    }
    if (not_referenced_in(m, t2, t1)) {
        add(m, t2, t1);
        return true;
    }
    return false;
}

static bool assignable(mapping *m, const typ *t1, const typ *t2)
{
    bool has_sub;
    if (t2->kind == KAPI_CEL_TY_PARAM) {
        if (valid_substitution(m, t1, t2, &has_sub))
            return true;
        if (has_sub)
            return false;
    }
    if (t1->kind == KAPI_CEL_TY_PARAM)
        return valid_substitution(m, t2, t1, &has_sub);
    if (is_dyn_or_error(t1) || is_dyn_or_error(t2))
        return true;
    if (t1->kind == KAPI_CEL_TY_NULL)
        return t2->kind == KAPI_CEL_TY_NULL || t2->kind == KAPI_CEL_TY_OBJECT ||
               t2->kind == KAPI_CEL_TY_DURATION || t2->kind == KAPI_CEL_TY_TIMESTAMP;
    if (t1->kind != t2->kind)
        return false;
    switch (t1->kind) {
    case KAPI_CEL_TY_LIST:
        return assignable(m, t1->elem, t2->elem);
    case KAPI_CEL_TY_MAP:
        return assignable(m, t1->key, t2->key) && assignable(m, t1->elem, t2->elem);
    case KAPI_CEL_TY_OBJECT:
        return strcmp(t1->name, t2->name) == 0;
    default:
        return true; /* the same primitive, well-known type or type */
    }
}

/* isAssignable on a copy of the mapping, kept when it holds. */
static bool try_assign(mapping *m, const typ *const *l1, const typ *const *l2, size_t n)
{
    mapping c = {0};
    copy_mapping(&c, m);
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++)
        ok = assignable(&c, l1[i], l2[i]);
    if (ok) {
        free_mapping(m);
        *m = c;
    } else {
        free_mapping(&c);
    }
    return ok;
}

static const typ *substitute(kapi_arena *a, const mapping *m, const typ *t, bool to_dyn)
{
    const typ *sub = find(m, t);
    if (sub)
        return substitute(a, m, sub, to_dyn);
    switch (t->kind) {
    case KAPI_CEL_TY_PARAM:
        return to_dyn ? &t_dyn : t;
    case KAPI_CEL_TY_LIST: {
        const typ *e = substitute(a, m, t->elem, to_dyn);
        return e == t->elem ? t : kapi_cel_type_list(a, e);
    }
    case KAPI_CEL_TY_MAP: {
        const typ *k = substitute(a, m, t->key, to_dyn), *v = substitute(a, m, t->elem, to_dyn);
        return k == t->key && v == t->elem ? t : kapi_cel_type_map(a, k, v);
    }
    case KAPI_CEL_TY_TYPE:
        if (!t->elem)
            return t;
        return mk(a, KAPI_CEL_TY_TYPE, substitute(a, m, t->elem, to_dyn), NULL, NULL);
    default:
        return t;
    }
}

/* ---- the declarations ---- */

/* One overload: its function, whether it is called on a receiver (the first parameter),
 * and its signature "param,param>result" in type syntax: int uint double bool string
 * bytes null dyn duration timestamp, A and B type parameters, list(T), map(K,V),
 * type(T), and a message name (kubernetes.URL). */
typedef struct overload_decl {
    const char *function;
    bool member;
    const char *signature;
} overload_decl;

static const overload_decl declarations[] = {
    {"_?_:_", false, "bool,A,A>A"},
    {"_&&_", false, "bool,bool>bool"},
    {"_||_", false, "bool,bool>bool"},
    {"!_", false, "bool>bool"},
    {"@not_strictly_false", false, "bool>bool"},
    {"_==_", false, "A,A>bool"},
    {"_!=_", false, "A,A>bool"},
    {"_-_", false, "int,int>int"},
    {"_-_", false, "uint,uint>uint"},
    {"_-_", false, "double,double>double"},
    {"_-_", false, "timestamp,timestamp>duration"},
    {"_-_", false, "timestamp,duration>timestamp"},
    {"_-_", false, "duration,duration>duration"},
    {"_*_", false, "int,int>int"},
    {"_*_", false, "uint,uint>uint"},
    {"_*_", false, "double,double>double"},
    {"_/_", false, "int,int>int"},
    {"_/_", false, "uint,uint>uint"},
    {"_/_", false, "double,double>double"},
    {"_%_", false, "int,int>int"},
    {"_%_", false, "uint,uint>uint"},
    {"_+_", false, "int,int>int"},
    {"_+_", false, "uint,uint>uint"},
    {"_+_", false, "double,double>double"},
    {"_+_", false, "string,string>string"},
    {"_+_", false, "bytes,bytes>bytes"},
    {"_+_", false, "list(A),list(A)>list(A)"},
    {"_+_", false, "timestamp,duration>timestamp"},
    {"_+_", false, "duration,timestamp>timestamp"},
    {"_+_", false, "duration,duration>duration"},
    {"-_", false, "int>int"},
    {"-_", false, "double>double"},
    {"_[_]", false, "list(A),int>A"},
    {"_[_]", false, "map(A,B),A>B"},
    {"size", true, "string>int"},
    {"size", true, "bytes>int"},
    {"size", true, "list(A)>int"},
    {"size", true, "map(A,B)>int"},
    {"size", false, "string>int"},
    {"size", false, "bytes>int"},
    {"size", false, "list(A)>int"},
    {"size", false, "map(A,B)>int"},
    {"@in", false, "A,list(A)>bool"},
    {"@in", false, "A,map(A,B)>bool"},
    {"in", false, "A,list(A)>bool"},
    {"in", false, "A,map(A,B)>bool"},
    {"type", false, "A>type(A)"},
    {"int", false, "int>int"},
    {"int", false, "uint>int"},
    {"int", false, "double>int"},
    {"int", false, "string>int"},
    {"int", false, "timestamp>int"},
    {"int", false, "duration>int"},
    {"uint", false, "uint>uint"},
    {"uint", false, "int>uint"},
    {"uint", false, "double>uint"},
    {"uint", false, "string>uint"},
    {"double", false, "double>double"},
    {"double", false, "int>double"},
    {"double", false, "uint>double"},
    {"double", false, "string>double"},
    {"bool", false, "bool>bool"},
    {"bool", false, "string>bool"},
    {"string", false, "string>string"},
    {"string", false, "bool>string"},
    {"string", false, "int>string"},
    {"string", false, "uint>string"},
    {"string", false, "double>string"},
    {"string", false, "bytes>string"},
    {"string", false, "timestamp>string"},
    {"string", false, "duration>string"},
    {"bytes", false, "bytes>bytes"},
    {"bytes", false, "string>bytes"},
    {"timestamp", false, "timestamp>timestamp"},
    {"timestamp", false, "string>timestamp"},
    {"timestamp", false, "int>timestamp"},
    {"duration", false, "duration>duration"},
    {"duration", false, "string>duration"},
    {"duration", false, "int>duration"},
    {"dyn", false, "A>dyn"},
    {"contains", true, "string,string>bool"},
    {"endsWith", true, "string,string>bool"},
    {"matches", true, "string,string>bool"},
    {"startsWith", true, "string,string>bool"},
    {"getFullYear", true, "timestamp>int"},
    {"getFullYear", true, "timestamp,string>int"},
    {"getMonth", true, "timestamp>int"},
    {"getMonth", true, "timestamp,string>int"},
    {"getDayOfYear", true, "timestamp>int"},
    {"getDayOfYear", true, "timestamp,string>int"},
    {"getDayOfMonth", true, "timestamp>int"},
    {"getDayOfMonth", true, "timestamp,string>int"},
    {"getDate", true, "timestamp>int"},
    {"getDate", true, "timestamp,string>int"},
    {"getDayOfWeek", true, "timestamp>int"},
    {"getDayOfWeek", true, "timestamp,string>int"},
    {"getHours", true, "timestamp>int"},
    {"getHours", true, "timestamp,string>int"},
    {"getHours", true, "duration>int"},
    {"getMinutes", true, "timestamp>int"},
    {"getMinutes", true, "timestamp,string>int"},
    {"getMinutes", true, "duration>int"},
    {"getSeconds", true, "timestamp>int"},
    {"getSeconds", true, "timestamp,string>int"},
    {"getSeconds", true, "duration>int"},
    {"getMilliseconds", true, "timestamp>int"},
    {"getMilliseconds", true, "timestamp,string>int"},
    {"getMilliseconds", true, "duration>int"},
    {"_<_", false, "bool,bool>bool"},
    {"_<_", false, "int,int>bool"},
    {"_<_", false, "uint,uint>bool"},
    {"_<_", false, "double,double>bool"},
    {"_<_", false, "string,string>bool"},
    {"_<_", false, "bytes,bytes>bool"},
    {"_<_", false, "timestamp,timestamp>bool"},
    {"_<_", false, "duration,duration>bool"},
    {"_<=_", false, "bool,bool>bool"},
    {"_<=_", false, "int,int>bool"},
    {"_<=_", false, "uint,uint>bool"},
    {"_<=_", false, "double,double>bool"},
    {"_<=_", false, "string,string>bool"},
    {"_<=_", false, "bytes,bytes>bool"},
    {"_<=_", false, "timestamp,timestamp>bool"},
    {"_<=_", false, "duration,duration>bool"},
    {"_>_", false, "bool,bool>bool"},
    {"_>_", false, "int,int>bool"},
    {"_>_", false, "uint,uint>bool"},
    {"_>_", false, "double,double>bool"},
    {"_>_", false, "string,string>bool"},
    {"_>_", false, "bytes,bytes>bool"},
    {"_>_", false, "timestamp,timestamp>bool"},
    {"_>_", false, "duration,duration>bool"},
    {"_>=_", false, "bool,bool>bool"},
    {"_>=_", false, "int,int>bool"},
    {"_>=_", false, "uint,uint>bool"},
    {"_>=_", false, "double,double>bool"},
    {"_>=_", false, "string,string>bool"},
    {"_>=_", false, "bytes,bytes>bool"},
    {"_>=_", false, "timestamp,timestamp>bool"},
    {"_>=_", false, "duration,duration>bool"},
    /* Kubernetes' url library */
    {"url", false, "string>kubernetes.URL"},
    {"getScheme", true, "kubernetes.URL>string"},
    {"getHost", true, "kubernetes.URL>string"},
    {"getHostname", true, "kubernetes.URL>string"},
    {"getPort", true, "kubernetes.URL>string"},
    {"getEscapedPath", true, "kubernetes.URL>string"},
    {"getQuery", true, "kubernetes.URL>map(string,list(string))"},
    {"isURL", false, "string>bool"},
    /* Kubernetes' regex library */
    {"find", true, "string,string>string"},
    {"findAll", true, "string,string>list(string)"},
    {"findAll", true, "string,string,int>list(string)"},
    /* Kubernetes' lists library: isSorted, min and max over the comparable types, sum over
     * the summable ones */
    {"isSorted", true, "list(int)>bool"},
    {"isSorted", true, "list(uint)>bool"},
    {"isSorted", true, "list(double)>bool"},
    {"isSorted", true, "list(bool)>bool"},
    {"isSorted", true, "list(duration)>bool"},
    {"isSorted", true, "list(timestamp)>bool"},
    {"isSorted", true, "list(string)>bool"},
    {"isSorted", true, "list(bytes)>bool"},
    {"sum", true, "list(int)>int"},
    {"sum", true, "list(uint)>uint"},
    {"sum", true, "list(double)>double"},
    {"sum", true, "list(duration)>duration"},
    {"max", true, "list(int)>int"},
    {"max", true, "list(uint)>uint"},
    {"max", true, "list(double)>double"},
    {"max", true, "list(bool)>bool"},
    {"max", true, "list(duration)>duration"},
    {"max", true, "list(timestamp)>timestamp"},
    {"max", true, "list(string)>string"},
    {"max", true, "list(bytes)>bytes"},
    {"min", true, "list(int)>int"},
    {"min", true, "list(uint)>uint"},
    {"min", true, "list(double)>double"},
    {"min", true, "list(bool)>bool"},
    {"min", true, "list(duration)>duration"},
    {"min", true, "list(timestamp)>timestamp"},
    {"min", true, "list(string)>string"},
    {"min", true, "list(bytes)>bytes"},
    {"indexOf", true, "list(A),A>int"},
    {"lastIndexOf", true, "list(A),A>int"},
    /* cel-go's strings extension */
    {"charAt", true, "string,int>string"},
    {"indexOf", true, "string,string>int"},
    {"indexOf", true, "string,string,int>int"},
    {"lastIndexOf", true, "string,string>int"},
    {"lastIndexOf", true, "string,string,int>int"},
    {"lowerAscii", true, "string>string"},
    {"replace", true, "string,string,string>string"},
    {"replace", true, "string,string,string,int>string"},
    {"split", true, "string,string>list(string)"},
    {"split", true, "string,string,int>list(string)"},
    {"substring", true, "string,int>string"},
    {"substring", true, "string,int,int>string"},
    {"trim", true, "string>string"},
    {"upperAscii", true, "string>string"},
    {"join", true, "list(string)>string"},
    {"join", true, "list(string),string>string"},
};

#define MAX_PARAMS 5

/* A declaration's signature, parsed once. */
typedef struct overload {
    const overload_decl *decl;
    const typ *params[MAX_PARAMS];
    size_t nparams;
    const typ *result;
    bool generic; /* has type parameters */
} overload;

static overload overloads[KAPI_ARRAY_LEN(declarations)];
static kapi_arena decl_arena;

static const typ *parse_type(const char **s, bool *generic)
{
    static const struct {
        const char *name;
        const typ *t;
    } simple[] = {{"int", &t_int},           {"uint", &t_uint},
                  {"double", &t_double},     {"bool", &t_bool},
                  {"string", &t_string},     {"bytes", &t_bytes},
                  {"null", &t_null},         {"dyn", &t_dyn},
                  {"duration", &t_duration}, {"timestamp", &t_timestamp}};
    size_t n = strcspn(*s, ",>()");
    const char *word = *s;
    *s += n;
    if (n == 1 && (word[0] == 'A' || word[0] == 'B')) {
        *generic = true;
        return mk(&decl_arena, KAPI_CEL_TY_PARAM, NULL, NULL, word[0] == 'A' ? "A" : "B");
    }
    if (**s == '(') {
        (*s)++;
        const typ *p1 = parse_type(s, generic), *p2 = NULL;
        if (**s == ',') {
            (*s)++;
            p2 = parse_type(s, generic);
        }
        (*s)++; /* ')' */
        if (strncmp(word, "list", n) == 0)
            return kapi_cel_type_list(&decl_arena, p1);
        if (strncmp(word, "map", n) == 0)
            return kapi_cel_type_map(&decl_arena, p1, p2);
        return mk(&decl_arena, KAPI_CEL_TY_TYPE, p1, NULL, NULL);
    }
    for (size_t i = 0; i < KAPI_ARRAY_LEN(simple); i++)
        if (strlen(simple[i].name) == n && strncmp(simple[i].name, word, n) == 0)
            return simple[i].t;
    return mk(&decl_arena, KAPI_CEL_TY_OBJECT, NULL, NULL,
              kapi_arena_strndup(&decl_arena, word, n));
}

static void load_declarations(void)
{
    kapi_arena_init(&decl_arena);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(declarations); i++) {
        overload *o = &overloads[i];
        const char *s = declarations[i].signature;
        o->decl = &declarations[i];
        while (*s != '>') {
            o->params[o->nparams++] = parse_type(&s, &o->generic);
            if (*s == ',')
                s++;
        }
        s++;
        o->result = parse_type(&s, &o->generic);
    }
}

static bool function_declared(const char *name)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(declarations); i++)
        if (strcmp(declarations[i].function, name) == 0)
            return true;
    return false;
}

/* ---- the checker ---- */

typedef struct scope_var {
    const char *name;
    const typ *type;
} scope_var;

typedef struct checker {
    kapi_cel_ast *ast;
    kapi_arena *a;
    const kapi_cel_var *vars;
    size_t nvars;
    bool *used; /* per declared variable: referenced */
    mapping m;
    int fresh; /* the next _varN */
    scope_var *scope;
    size_t nscope, scope_cap;
    const typ **types;       /* by node id */
    const char ***overloads; /* by node id: a call's matching overloads' signatures */
    kapi_cel_issue *issues;
    size_t nissues;
} checker;

static void error_at(checker *c, size_t offset, const char *fmt, ...) KAPI_PRINTF(3, 4);
static void error_at(checker *c, size_t offset, const char *fmt, ...)
{
    if (c->nissues >= 100)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    c->issues = kapi_xrealloc(c->issues, (c->nissues + 1) * sizeof(*c->issues));
    kapi_cel_issue *is = &c->issues[c->nissues++];
    is->message = kapi_arena_strdup(c->a, msg);
    kapi_cel__locate(c->ast->source, c->ast->source_len, offset, &is->line, &is->column);
}

static const typ *type_of(const checker *c, const kapi_cel_expr *e)
{
    return c->types[e->id];
}

static void set_type(checker *c, const kapi_cel_expr *e, const typ *t)
{
    c->types[e->id] = t;
}

static const typ *fresh_var(checker *c)
{
    return mk(c->a, KAPI_CEL_TY_PARAM, NULL, NULL, kapi_arena_printf(c->a, "_var%d", c->fresh++));
}

static void push_scope(checker *c, const char *name, const typ *t)
{
    if (c->nscope == c->scope_cap) {
        c->scope_cap = c->scope_cap ? 2 * c->scope_cap : 8;
        c->scope = kapi_xrealloc(c->scope, c->scope_cap * sizeof(*c->scope));
    }
    c->scope[c->nscope++] = (scope_var){name, t};
}

static const typ *prim_named(const char *name)
{
    static const struct {
        const char *name;
        const typ *t;
    } prims[] = {{"int", &t_int},        {"uint", &t_uint},   {"bool", &t_bool},
                 {"double", &t_double},  {"bytes", &t_bytes}, {"string", &t_string},
                 {"null_type", &t_null}, {"type", &t_type}};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(prims); i++)
        if (strcmp(prims[i].name, name) == 0)
            return prims[i].t;
    return NULL;
}

/* An identifier's type: a comprehension's variable, a declared variable, or a type's name
 * (int, list, type, ...). NULL when undeclared. */
static const typ *lookup(checker *c, const char *name)
{
    for (size_t i = c->nscope; i-- > 0;)
        if (strcmp(c->scope[i].name, name) == 0)
            return c->scope[i].type;
    for (size_t i = 0; i < c->nvars; i++)
        if (strcmp(c->vars[i].name, name) == 0) {
            if (c->used)
                c->used[i] = true;
            return c->vars[i].type;
        }
    const typ *of = prim_named(name);
    if (strcmp(name, "list") == 0)
        of = kapi_cel_type_list(c->a, mk(c->a, KAPI_CEL_TY_PARAM, NULL, NULL, "A"));
    else if (strcmp(name, "map") == 0)
        of = kapi_cel_type_map(c->a, mk(c->a, KAPI_CEL_TY_PARAM, NULL, NULL, "A"),
                               mk(c->a, KAPI_CEL_TY_PARAM, NULL, NULL, "B"));
    return of ? mk(c->a, KAPI_CEL_TY_TYPE, of, NULL, NULL) : NULL;
}

static void check(checker *c, const kapi_cel_expr *e);

static void mismatch(checker *c, size_t offset, const typ *want, const typ *got)
{
    error_at(c, offset, "expected type '%s' but found '%s'", fmt_type(c->a, want),
             fmt_type(c->a, got));
}

static bool assign1(checker *c, const typ *t1, const typ *t2)
{
    return try_assign(&c->m, &t1, &t2, 1);
}

static void assert_type(checker *c, const kapi_cel_expr *e, const typ *t)
{
    if (!assign1(c, t, type_of(c, e)))
        mismatch(c, e->offset, t, type_of(c, e));
}

/* The type of a homogeneous literal's elements so far (prev, NULL before the first) with
 * one more (cur, at offset). */
static const typ *join(checker *c, size_t offset, const typ *prev, const typ *cur)
{
    if (!prev)
        return cur;
    if (assign1(c, prev, cur))
        return most_general(prev, cur);
    mismatch(c, offset, prev, cur);
    return &t_error;
}

static const kapi_cel_field *field_named(const typ *t, const char *name)
{
    for (size_t i = 0; i < t->nfields; i++)
        if (strcmp(t->fields[i].name, name) == 0)
            return &t->fields[i];
    return NULL;
}

static void check_select(checker *c, const kapi_cel_expr *e)
{
    check(c, e->u.select.operand);
    const typ *t = substitute(c->a, &c->m, type_of(c, e->u.select.operand), false);
    const typ *r = &t_error;
    switch (t->kind) {
    case KAPI_CEL_TY_MAP:
        r = t->elem;
        break;
    case KAPI_CEL_TY_OBJECT: {
        const kapi_cel_field *f = field_named(t, e->u.select.field);
        if (f)
            r = f->type;
        else
            error_at(c, e->offset, "undefined field '%s'", e->u.select.field);
        break;
    }
    case KAPI_CEL_TY_PARAM:
        assign1(c, &t_dyn, t);
        r = &t_dyn;
        break;
    default:
        if (is_dyn_or_error(t))
            r = &t_dyn;
        else
            error_at(c, e->offset, "type '%s' does not support field selection", fmt_type(c->a, t));
    }
    if (e->u.select.test_only)
        r = &t_bool;
    set_type(c, e, substitute(c->a, &c->m, r, false));
}

/* formatFunction(nil, args, member): "(int, string)" or "string.(int)" */
static const char *signature(checker *c, const typ *const *args, size_t n, bool member)
{
    kapi_buf b;
    kapi_buf_init(&b);
    size_t i = 0;
    if (member && n > 0) {
        kapi_cel_type_format(&b, args[i++]);
        kapi_buf_putc(&b, '.');
    }
    kapi_buf_putc(&b, '(');
    for (size_t first = i; i < n; i++) {
        if (i > first)
            kapi_buf_puts(&b, ", ");
        kapi_cel_type_format(&b, args[i]);
    }
    kapi_buf_putc(&b, ')');
    char *s = kapi_arena_strdup(c->a, b.ptr);
    kapi_buf_dispose(&b);
    return s;
}

/* Resolves a call of fn on args (the receiver first when member) to its overloads: the
 * result type, or an error. The overloads that match are kept for the node, as cel-go's
 * reference map keeps their ids: cost estimation and tracking go by them. */
static void resolve(checker *c, const kapi_cel_expr *e, const char *fn, const typ *const *args,
                    size_t n, bool member)
{
    const typ *result = NULL;
    const char *matched[KAPI_ARRAY_LEN(overloads)];
    size_t nmatched = 0;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(overloads); i++) {
        const overload *o = &overloads[i];
        if (strcmp(o->decl->function, fn) != 0 || o->decl->member != member || o->nparams != n)
            continue;
        const typ *params[MAX_PARAMS], *res = o->result;
        memcpy(params, o->params, n * sizeof(*params));
        if (o->generic) {
            mapping inst = {0};
            typ pa = {.kind = KAPI_CEL_TY_PARAM, .name = "A"}, pb = pa;
            pb.name = "B";
            add(&inst, &pa, fresh_var(c));
            add(&inst, &pb, fresh_var(c));
            for (size_t k = 0; k < n; k++)
                params[k] = substitute(c->a, &inst, params[k], false);
            res = substitute(c->a, &inst, res, false);
            free_mapping(&inst);
        }
        if (!try_assign(&c->m, args, params, n))
            continue;
        res = substitute(c->a, &c->m, res, false);
        matched[nmatched++] = o->decl->signature;
        if (!result)
            result = res;
        else if (result->kind != KAPI_CEL_TY_DYN && !same(res, result))
            result = &t_dyn;
    }
    if (!result) {
        error_at(c, e->offset, "found no matching overload for '%s' applied to '%s'", fn,
                 signature(c, args, n, member));
        result = &t_error;
    }
    const char **kept = kapi_arena_alloc(c->a, (nmatched + 1) * sizeof(*kept));
    memcpy(kept, matched, nmatched * sizeof(*kept));
    kept[nmatched] = NULL;
    c->overloads[e->id] = kept;
    set_type(c, e, result);
}

static void check_call(checker *c, const kapi_cel_expr *e)
{
    const char *fn = e->u.call.function;
    const kapi_cel_expr *target = e->u.call.target;
    size_t n = e->u.call.nargs + (target != NULL);
    if (n > MAX_PARAMS)
        n = MAX_PARAMS + 1; /* no overload has as many: it does not match */
    const typ **args = kapi_arena_alloc(c->a, (e->u.call.nargs + 1) * sizeof(*args));
    for (size_t i = 0; i < e->u.call.nargs; i++)
        check(c, e->u.call.args[i]);
    if (target)
        check(c, target);
    if (!function_declared(fn)) {
        error_at(c, e->offset, "undeclared reference to '%s' (in container '')", fn);
        set_type(c, e, &t_error);
        return;
    }
    size_t k = 0;
    if (target)
        args[k++] = type_of(c, target);
    for (size_t i = 0; i < e->u.call.nargs; i++)
        args[k++] = type_of(c, e->u.call.args[i]);
    resolve(c, e, fn, args, k, target != NULL);
}

static void check_list(checker *c, const kapi_cel_expr *e)
{
    const typ *elem = NULL;
    for (size_t i = 0; i < e->u.list.n; i++) {
        check(c, e->u.list.elems[i]);
        elem = join(c, e->u.list.elems[i]->offset, elem, type_of(c, e->u.list.elems[i]));
    }
    set_type(c, e, kapi_cel_type_list(c->a, elem ? elem : fresh_var(c)));
}

static void check_map(checker *c, const kapi_cel_expr *e)
{
    const typ *key = NULL, *value = NULL;
    for (size_t i = 0; i < e->u.map.n; i++) {
        const kapi_cel_entry *en = &e->u.map.entries[i];
        check(c, en->key);
        key = join(c, en->key->offset, key, type_of(c, en->key));
        check(c, en->value);
        value = join(c, en->value->offset, value, type_of(c, en->value));
    }
    if (!key) {
        key = fresh_var(c);
        value = fresh_var(c);
    }
    set_type(c, e, kapi_cel_type_map(c->a, key, value));
}

static void check_comprehension(checker *c, const kapi_cel_expr *e)
{
    check(c, e->u.comp.iter_range);
    check(c, e->u.comp.accu_init);
    const typ *accu = type_of(c, e->u.comp.accu_init);
    const typ *range = substitute(c->a, &c->m, type_of(c, e->u.comp.iter_range), false);
    const typ *var;
    switch (range->kind) {
    case KAPI_CEL_TY_LIST:
        var = range->elem;
        break;
    case KAPI_CEL_TY_MAP:
        var = range->key;
        break;
    case KAPI_CEL_TY_DYN:
    case KAPI_CEL_TY_ERROR:
    case KAPI_CEL_TY_PARAM:
        assign1(c, &t_dyn, range);
        var = &t_dyn;
        break;
    default:
        error_at(c, e->u.comp.iter_range->offset,
                 "expression of type '%s' cannot be range of a comprehension (must be list, "
                 "map, or dynamic)",
                 fmt_type(c->a, range));
        var = &t_error;
    }
    push_scope(c, e->u.comp.accu_var, accu);
    push_scope(c, e->u.comp.iter_var, var);
    check(c, e->u.comp.loop_condition);
    assert_type(c, e->u.comp.loop_condition, &t_bool);
    check(c, e->u.comp.loop_step);
    assert_type(c, e->u.comp.loop_step, accu);
    c->nscope--;
    check(c, e->u.comp.result);
    c->nscope--;
    set_type(c, e, substitute(c->a, &c->m, type_of(c, e->u.comp.result), false));
}

static void check(checker *c, const kapi_cel_expr *e)
{
    static const typ *const literal[] = {
        [KAPI_CEL_NULL] = &t_null,   [KAPI_CEL_BOOL] = &t_bool,     [KAPI_CEL_INT] = &t_int,
        [KAPI_CEL_UINT] = &t_uint,   [KAPI_CEL_DOUBLE] = &t_double, [KAPI_CEL_STRING] = &t_string,
        [KAPI_CEL_BYTES] = &t_bytes,
    };
    switch (e->kind) {
    case KAPI_CEL_IDENT: {
        const typ *t = lookup(c, e->u.ident);
        if (!t) {
            error_at(c, e->offset, "undeclared reference to '%s' (in container '')", e->u.ident);
            t = &t_error;
        }
        set_type(c, e, t);
        return;
    }
    case KAPI_CEL_SELECT:
        check_select(c, e);
        return;
    case KAPI_CEL_CALL:
        check_call(c, e);
        return;
    case KAPI_CEL_LIST:
        check_list(c, e);
        return;
    case KAPI_CEL_MAP:
        check_map(c, e);
        return;
    case KAPI_CEL_STRUCT:
        for (size_t i = 0; i < e->u.map.n; i++)
            check(c, e->u.map.entries[i].value);
        error_at(c, e->offset, "undeclared reference to '%s' (in container '')", e->u.map.message);
        set_type(c, e, &t_error);
        return;
    case KAPI_CEL_COMPREHENSION:
        check_comprehension(c, e);
        return;
    default:
        set_type(c, e, literal[e->kind]);
    }
}

const kapi_cel_typ *kapi_cel_check(kapi_cel_ast *ast, const kapi_cel_var *vars, size_t nvars,
                                   bool *used)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, load_declarations);
    if (!ast->root)
        return NULL;
    checker c = {.ast = ast, .a = &ast->arena, .vars = vars, .nvars = nvars, .used = used};
    c.types = kapi_arena_alloc(c.a, (size_t)ast->next_id * sizeof(*c.types));
    memset(c.types, 0, (size_t)ast->next_id * sizeof(*c.types));
    c.overloads = kapi_arena_alloc(c.a, (size_t)ast->next_id * sizeof(*c.overloads));
    memset(c.overloads, 0, (size_t)ast->next_id * sizeof(*c.overloads));
    check(&c, ast->root);
    for (int64_t id = 0; id < ast->next_id; id++)
        if (c.types[id])
            c.types[id] = substitute(c.a, &c.m, c.types[id], true);
    const typ *result = c.types[ast->root->id];
    free_mapping(&c.m);
    free(c.scope);
    ast->types = c.types;
    ast->overloads = (const char *const *const *)c.overloads;
    kapi_cel__plan(ast);
    if (c.nissues) {
        kapi_cel__add_issues(ast, c.issues, c.nissues);
        result = NULL;
    }
    free(c.issues);
    return result;
}
