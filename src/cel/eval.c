/*
 * cel/eval: a tree evaluated by walking it, as cel-go's interpreter evaluates an
 * unchecked expression: errors are values that && and || absorb when the other side
 * decides (false && error is false, in either order), arithmetic on ints and uints fails
 * on overflow, division and modulus by zero fail, and a function given arguments of kinds
 * it has no overload for fails with "no such overload". Comprehensions (the expanded
 * macros) loop while their condition is not false.
 *
 * The functions: the operators, size, contains, startsWith, endsWith, matches (RE2), the
 * conversions int, uint, double, string, bytes, bool, dyn and type, durations and
 * timestamps (time.c), the strings library of strings.c, Kubernetes' lists and regex
 * libraries of library.c and its url library of url.c.
 *
 * The walk counts the actual cost as cel-go's cost tracker observes its program: a
 * variable and each field or index applied to it cost 1 (an attribute: its base, then its
 * qualifiers), a call what cost.c says once its arguments are evaluated, a list or map
 * literal its base cost, constants (folded as cel-go's planner folds them, kapi_cel__plan)
 * nothing; && || ?: and comprehensions only what they evaluate.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/regex.h"
#include "cel/cel_int.h"
#include "codec/go.h"

typedef struct scope {
    const char *name;
    kapi_cel_value v;
    const struct scope *up;
} scope;

typedef struct ev {
    kapi_arena *a;
    const kapi_cel_activation *act;
    const scope *vars;
    const kapi_cel_node_plan *plan; /* the tree's, by node id; NULL: none, nothing counted */
    uint64_t cost, limit;           /* the actual cost so far; the most allowed, 0: no limit */
    int quiet;                      /* inside a constant, or without a plan: nothing is counted */
    bool over;                      /* the cost passed the limit: evaluation unwinds */
} ev;

typedef kapi_cel_value value;

static value no_overload(ev *x)
{
    return kapi_cel__error(x->a, "no such overload");
}

static value boolean(bool b)
{
    return (value){.t = KAPI_CEL_T_BOOL, .u.b = b};
}

static value integer(int64_t i)
{
    return (value){.t = KAPI_CEL_T_INT, .u.i = i};
}

static value uinteger(uint64_t u)
{
    return (value){.t = KAPI_CEL_T_UINT, .u.u = u};
}

static value dbl(double d)
{
    return (value){.t = KAPI_CEL_T_DOUBLE, .u.d = d};
}

static value type_value(const char *name)
{
    return (value){.t = KAPI_CEL_T_TYPE, .u.type = name};
}

static value eval(ev *x, const kapi_cel_expr *e);

/* ---- cost ---- */

static void charge(ev *x, uint64_t n)
{
    if (x->quiet)
        return;
    x->cost = kapi_cel__cost_add(x->cost, n);
    if (x->limit && x->cost > x->limit)
        x->over = true;
}

static int plan_of(const ev *x, const kapi_cel_expr *e)
{
    return x->plan ? x->plan[e->id].how : KAPI_CEL_PLAN_CALL;
}

/* Whether cel-go plans e as an attribute: a variable, a field select, an index or a ?:,
 * which qualifiers extend rather than wrap. */
static bool is_attribute(const ev *x, const kapi_cel_expr *e)
{
    switch (e->kind) {
    case KAPI_CEL_IDENT:
        return plan_of(x, e) != KAPI_CEL_PLAN_CONST;
    case KAPI_CEL_SELECT:
        return !e->u.select.test_only;
    case KAPI_CEL_CALL:
        return e->u.call.fn == FN_INDEX || e->u.call.fn == FN_CONDITIONAL;
    default:
        return false;
    }
}

static value attribute(ev *x, const kapi_cel_expr *e, bool base);

/* ---- names ---- */

static const char *const function_names[FN_COUNT] = {
#define XX(id, name) [FN_##id] = name,
    KAPI_CEL_FUNCTIONS(XX)
#undef XX
};

cel_fn kapi_cel__function(const char *name)
{
    for (size_t i = 1; i < FN_COUNT; i++)
        if (strcmp(function_names[i], name) == 0)
            return (cel_fn)i;
    return FN_OTHER;
}

/* The names of types, which are values: type(1) == int, google.protobuf.Timestamp ==
 * type(timestamp(0)). */
static const kapi_str type_idents[] = {
    KAPI_STR("int"),
    KAPI_STR("uint"),
    KAPI_STR("double"),
    KAPI_STR("bool"),
    KAPI_STR("string"),
    KAPI_STR("bytes"),
    KAPI_STR("list"),
    KAPI_STR("map"),
    KAPI_STR("null_type"),
    KAPI_STR("type"),
    KAPI_STR("google.protobuf.Duration"),
    KAPI_STR("google.protobuf.Timestamp"),
};

/* The variable called name (NUL-terminated too), else the type called name (as cel-go
 * resolves a name: the activation first); false when it is neither. */
static bool resolve(ev *x, kapi_str name, value *out)
{
    if (x->act && x->act->lookup && x->act->lookup(x->act->ctx, name.ptr, out))
        return true;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(type_idents); i++) {
        if (kapi_str_eq(type_idents[i], name)) {
            *out = type_value(type_idents[i].ptr);
            return true;
        }
    }
    return false;
}

static value ident(ev *x, const char *name)
{
    if (name[0] == '.')
        name++;
    for (const scope *s = x->vars; s; s = s->up)
        if (strcmp(s->name, name) == 0)
            return s->v;
    value v;
    if (resolve(x, kapi_str_c(name), &v))
        return v;
    return kapi_cel__error(x->a, "no such attribute: %s", name);
}

static bool local(const ev *x, const char *name)
{
    for (const scope *s = x->vars; s; s = s->up)
        if (strcmp(s->name, name) == 0)
            return true;
    return false;
}

static value field_of(ev *x, value m, const char *field, bool test_only)
{
    if (m.t == KAPI_CEL_T_ERROR)
        return m;
    if (m.t != KAPI_CEL_T_MAP)
        return kapi_cel__error(x->a, "type '%s' does not support field selection",
                               kapi_cel_type_name(&m));
    value key = {.t = KAPI_CEL_T_STRING, .u.s = {field, strlen(field)}};
    const value *v = kapi_cel__map_find(&m, &key);
    if (test_only)
        return boolean(v != NULL);
    return v ? *v : kapi_cel__error(x->a, "no such key: %s", field);
}

/* The object a select or an index qualifies: an attribute's, whose root pays the base
 * cost, or any other expression's, wrapped in a relative attribute whose base costs 1. */
static value qualified(ev *x, const kapi_cel_expr *operand, bool base)
{
    if (is_attribute(x, operand))
        return attribute(x, operand, base);
    value v = eval(x, operand);
    charge(x, base);
    return v;
}

/* A field applied to an attribute's value: 1, unless the value failed already. */
static value qualify(ev *x, value m, const char *field)
{
    if (m.t == KAPI_CEL_T_ERROR)
        return m;
    charge(x, 1);
    return field_of(x, m, field, false);
}

/* The root identifier of a chain of plain selects (a.b.c: a), its name's length and the
 * whole name's, dots included; NULL when the chain is anything else. */
static const kapi_cel_expr *chain_root(const kapi_cel_expr *e, size_t *root_len, size_t *len)
{
    size_t n = 0;
    for (; e->kind == KAPI_CEL_SELECT; e = e->u.select.operand) {
        if (e->u.select.test_only)
            return NULL;
        n += 1 + strlen(e->u.select.field);
    }
    if (e->kind != KAPI_CEL_IDENT)
        return NULL;
    *root_len = strlen(e->u.ident + (e->u.ident[0] == '.'));
    *len = *root_len + n;
    return e;
}

/* Select e of a chain from an identifier, name its qualified name (len bytes, cut from a
 * longer one): the variable or type of name, else the field selected from its operand's
 * value, found the same way down to the root identifier. The base cost is counted where
 * a name resolves, before the fields selected from it. */
static value select_prefix(ev *x, const kapi_cel_expr *e, char *name, size_t len, bool base)
{
    value v;
    name[len] = 0;
    if (resolve(x, (kapi_str){name, len}, &v)) {
        charge(x, base);
        return v;
    }
    const kapi_cel_expr *operand = e->u.select.operand;
    if (operand->kind == KAPI_CEL_SELECT) {
        v = select_prefix(x, operand, name, len - 1 - strlen(e->u.select.field), base);
    } else { /* no dotted prefix is a variable: the root identifier */
        charge(x, base);
        v = ident(x, operand->u.ident);
    }
    return qualify(x, v, e->u.select.field);
}

/* A select. A qualified name (a.b.c) is the variable or type of its longest dotted prefix
 * (a.b.c, then a.b, then a), with the rest selected from it, unless its root is a
 * comprehension's variable; the name is spelled once, in the arena, and each shorter
 * prefix cut from it. */
static value select_field(ev *x, const kapi_cel_expr *e, bool base)
{
    size_t root_len, len;
    const kapi_cel_expr *root = chain_root(e, &root_len, &len);
    const char *root_name = root ? root->u.ident + (root->u.ident[0] == '.') : NULL;
    if (!root || local(x, root_name))
        return qualify(x, qualified(x, e->u.select.operand, base), e->u.select.field);
    char *name = kapi_arena_alloc(x->a, len + 1);
    memcpy(name, root_name, root_len);
    size_t end = len;
    for (const kapi_cel_expr *c = e; c != root; c = c->u.select.operand) {
        size_t n = strlen(c->u.select.field);
        end -= n;
        memcpy(name + end, c->u.select.field, n);
        name[--end] = '.';
    }
    return select_prefix(x, e, name, len, base);
}

/* ---- arithmetic ---- */

/* Whether map-list items p and q have the same keys (absent ones alike). */
static bool same_keys(const char *const *keys, const value *p, const value *q)
{
    for (; *keys; keys++) {
        value k = {.t = KAPI_CEL_T_STRING, .u.s = kapi_str_c(*keys)};
        const value *u = p->t == KAPI_CEL_T_MAP ? kapi_cel__map_find(p, &k) : NULL;
        const value *w = q->t == KAPI_CEL_T_MAP ? kapi_cel__map_find(q, &k) : NULL;
        if (!u || !w ? u != w : !kapi_cel_equal(u, w))
            return false;
    }
    return true;
}

/* a + b where a is a list-type set or map list, as Kubernetes' unstructured lists add:
 * a set gains b's items it does not hold yet; an item of b replaces a's item of the same
 * keys, or is appended. The result is of a's kind. */
static value merge(ev *x, const value *a, const value *b)
{
    size_t na = a->u.list.n, n = na;
    value *v = kapi_arena_alloc(x->a, (na + b->u.list.n + 1) * sizeof(*v));
    if (na)
        memcpy(v, a->u.list.v, na * sizeof(*v));
    const char *const *keys = a->u.list.keys;
    for (size_t i = 0; i < b->u.list.n; i++) {
        const value *e = &b->u.list.v[i];
        size_t j = 0, upto = keys ? na : n; /* a map list matches a's items only */
        while (j < upto && !(keys ? same_keys(keys, &v[j], e) : kapi_cel_equal(&v[j], e)))
            j++;
        if (j == upto)
            v[n++] = *e;
        else if (keys)
            v[j] = *e;
    }
    return (value){.t = KAPI_CEL_T_LIST,
                   .u.list = {.v = v, .n = n, .unordered = true, .keys = keys}};
}

static value add(ev *x, const value *a, const value *b)
{
    if (a->t != b->t)
        return no_overload(x);
    switch (a->t) {
    case KAPI_CEL_T_INT: {
        int64_t r;
        if (__builtin_add_overflow(a->u.i, b->u.i, &r))
            return kapi_cel__error(x->a, "integer overflow");
        return integer(r);
    }
    case KAPI_CEL_T_UINT: {
        uint64_t r;
        if (__builtin_add_overflow(a->u.u, b->u.u, &r))
            return kapi_cel__error(x->a, "unsigned integer overflow");
        return uinteger(r);
    }
    case KAPI_CEL_T_DOUBLE:
        return dbl(a->u.d + b->u.d);
    case KAPI_CEL_T_STRING:
    case KAPI_CEL_T_BYTES: {
        char *p = kapi_arena_alloc(x->a, a->u.s.len + b->u.s.len + 1);
        memcpy(p, a->u.s.ptr, a->u.s.len);
        memcpy(p + a->u.s.len, b->u.s.ptr, b->u.s.len);
        p[a->u.s.len + b->u.s.len] = 0;
        return (value){.t = a->t, .u.s = {p, a->u.s.len + b->u.s.len}};
    }
    case KAPI_CEL_T_LIST: {
        if (a->u.list.unordered)
            return merge(x, a, b);
        size_t n = a->u.list.n + b->u.list.n;
        value *v = kapi_arena_alloc(x->a, (n ? n : 1) * sizeof(*v));
        if (a->u.list.n)
            memcpy(v, a->u.list.v, a->u.list.n * sizeof(*v));
        if (b->u.list.n)
            memcpy(v + a->u.list.n, b->u.list.v, b->u.list.n * sizeof(*v));
        return (value){.t = KAPI_CEL_T_LIST, .u.list = {.v = v, .n = n}};
    }
    default:
        return no_overload(x);
    }
}

/* op (- * / %) on the bits of two ints (is_signed) or two uints into *r; NULL, or why it
 * fails. */
static const char *int_op(cel_fn op, bool is_signed, uint64_t p, uint64_t q, uint64_t *r)
{
    if ((op == FN_DIV || op == FN_MOD) && q == 0)
        return op == FN_DIV ? "division by zero" : "modulus by zero";
    bool over = false;
    if (is_signed) {
        int64_t a = (int64_t)p, b = (int64_t)q, v = 0;
        if (op == FN_SUB)
            over = __builtin_sub_overflow(a, b, &v);
        else if (op == FN_MUL)
            over = __builtin_mul_overflow(a, b, &v);
        else if (!(over = a == INT64_MIN && b == -1))
            v = op == FN_DIV ? a / b : a % b;
        *r = (uint64_t)v;
        return over ? "integer overflow" : NULL;
    }
    if (op == FN_SUB)
        over = __builtin_sub_overflow(p, q, r);
    else if (op == FN_MUL)
        over = __builtin_mul_overflow(p, q, r);
    else
        *r = op == FN_DIV ? p / q : p % q;
    return over ? "unsigned integer overflow" : NULL;
}

/* op (+ - * / %) on two numbers of a kind, strings, bytes or lists (+). */
static value arith(ev *x, cel_fn op, const value *a, const value *b)
{
    if (op == FN_ADD)
        return add(x, a, b);
    if (a->t != b->t)
        return no_overload(x);
    if (a->t == KAPI_CEL_T_INT || a->t == KAPI_CEL_T_UINT) {
        bool is_signed = a->t == KAPI_CEL_T_INT;
        uint64_t r;
        const char *why = int_op(op, is_signed, is_signed ? (uint64_t)a->u.i : a->u.u,
                                 is_signed ? (uint64_t)b->u.i : b->u.u, &r);
        if (why)
            return kapi_cel__error(x->a, "%s", why);
        return is_signed ? integer((int64_t)r) : uinteger(r);
    }
    if (a->t == KAPI_CEL_T_DOUBLE && op != FN_MOD)
        return dbl(op == FN_SUB   ? a->u.d - b->u.d
                   : op == FN_MUL ? a->u.d * b->u.d
                                  : a->u.d / b->u.d);
    return no_overload(x);
}

/* ---- lists, maps, strings ---- */

/* The index of a list given as an int, a uint or an integral double; false if none. */
static bool list_index(const value *i, int64_t *out)
{
    if (i->t == KAPI_CEL_T_INT) {
        *out = i->u.i;
    } else if (i->t == KAPI_CEL_T_UINT) {
        *out = i->u.u > INT64_MAX ? -1 : (int64_t)i->u.u;
    } else if (i->t == KAPI_CEL_T_DOUBLE && i->u.d == trunc(i->u.d) && fabs(i->u.d) < 9.2e18) {
        *out = (int64_t)i->u.d;
    } else {
        return false;
    }
    return true;
}

static value index_of(ev *x, const value *c, const value *i)
{
    if (c->t == KAPI_CEL_T_LIST) {
        int64_t k;
        if (!list_index(i, &k))
            return no_overload(x);
        if (k < 0 || (uint64_t)k >= c->u.list.n)
            return kapi_cel__error(x->a, "index out of range: %" PRId64, k);
        return c->u.list.v[k];
    }
    if (c->t == KAPI_CEL_T_MAP) {
        if (i->t == KAPI_CEL_T_LIST || i->t == KAPI_CEL_T_MAP || i->t == KAPI_CEL_T_NULL)
            return no_overload(x);
        const value *v = kapi_cel__map_find(c, i);
        if (v)
            return *v;
        kapi_buf b;
        kapi_buf_init(&b);
        if (i->t == KAPI_CEL_T_STRING)
            kapi_buf_put(&b, i->u.s.ptr, i->u.s.len);
        else if (i->t == KAPI_CEL_T_INT)
            kapi_buf_printf(&b, "%" PRId64, i->u.i);
        else if (i->t == KAPI_CEL_T_UINT)
            kapi_buf_printf(&b, "%" PRIu64, i->u.u);
        else if (i->t == KAPI_CEL_T_BOOL)
            kapi_buf_puts(&b, i->u.b ? "true" : "false");
        else if (i->t == KAPI_CEL_T_DOUBLE) {
            char f[40];
            kapi_go_format_float(f, i->u.d, 64);
            kapi_buf_puts(&b, f);
        }
        value r = kapi_cel__error(x->a, "no such key: %s", b.ptr);
        kapi_buf_dispose(&b);
        return r;
    }
    return no_overload(x);
}

static value in(ev *x, const value *e, const value *c)
{
    if (c->t == KAPI_CEL_T_LIST) {
        for (size_t i = 0; i < c->u.list.n; i++)
            if (kapi_cel_equal(e, &c->u.list.v[i]))
                return boolean(true);
        return boolean(false);
    }
    if (c->t == KAPI_CEL_T_MAP)
        return boolean(kapi_cel__map_find(c, e) != NULL);
    return no_overload(x);
}

static size_t code_points(kapi_str s)
{
    size_t n = 0;
    for (size_t i = 0; i < s.len; i++)
        n += ((unsigned char)s.ptr[i] & 0xC0) != 0x80;
    return n;
}

static value size_of(ev *x, const value *v)
{
    switch (v->t) {
    case KAPI_CEL_T_STRING:
        return integer((int64_t)code_points(v->u.s));
    case KAPI_CEL_T_BYTES:
        return integer((int64_t)v->u.s.len);
    case KAPI_CEL_T_LIST:
        return integer((int64_t)v->u.list.n);
    case KAPI_CEL_T_MAP:
        return integer((int64_t)v->u.map.n);
    default:
        return no_overload(x);
    }
}

static bool has_prefix(kapi_str s, kapi_str p)
{
    return s.len >= p.len && memcmp(s.ptr, p.ptr, p.len) == 0;
}

/* contains, startsWith, endsWith and matches of string s and p. */
static value string_test(ev *x, cel_fn fn, const value *s, const value *p)
{
    if (s->t != KAPI_CEL_T_STRING || p->t != KAPI_CEL_T_STRING)
        return no_overload(x);
    kapi_str a = s->u.s, b = p->u.s;
    if (fn == FN_STARTS_WITH)
        return boolean(has_prefix(a, b));
    if (fn == FN_ENDS_WITH)
        return boolean(a.len >= b.len && memcmp(a.ptr + a.len - b.len, b.ptr, b.len) == 0);
    if (fn == FN_CONTAINS)
        return boolean(b.len == 0 || memmem(a.ptr, a.len, b.ptr, b.len) != NULL);
    kapi_regex *re = NULL; /* matches */
    char *why = kapi_regex_new(b.ptr, b.len, &re);
    if (why) {
        value r = kapi_cel__error(x->a, "%s", why);
        free(why);
        return r;
    }
    bool m = kapi_regex_match(re, a.ptr, a.len);
    kapi_regex_free(re);
    return boolean(m);
}

/* ---- conversions ---- */

/* Go's strconv.ParseInt(s, 10, 64) / ParseUint. */
static bool parse_decimal(kapi_str s, bool is_signed, int64_t *i, uint64_t *u)
{
    size_t k = 0;
    bool neg = false;
    if (is_signed && s.len && (s.ptr[0] == '+' || s.ptr[0] == '-'))
        neg = s.ptr[k++] == '-';
    if (k == s.len)
        return false;
    uint64_t v = 0, limit = !is_signed ? UINT64_MAX : neg ? (uint64_t)INT64_MAX + 1 : INT64_MAX;
    for (; k < s.len; k++) {
        if (s.ptr[k] < '0' || s.ptr[k] > '9')
            return false;
        uint64_t d = (uint64_t)(s.ptr[k] - '0');
        if (v > (limit - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (is_signed)
        *i = neg ? (int64_t)(0 - v) : (int64_t)v;
    else
        *u = v;
    return true;
}

static value to_int(ev *x, const value *v)
{
    switch (v->t) {
    case KAPI_CEL_T_INT:
        return *v;
    case KAPI_CEL_T_UINT:
        return v->u.u > INT64_MAX ? kapi_cel__error(x->a, "integer overflow")
                                  : integer((int64_t)v->u.u);
    case KAPI_CEL_T_DOUBLE:
        if (!(v->u.d > -9223372036854775808.0 && v->u.d < 9223372036854775808.0))
            return kapi_cel__error(x->a, "integer overflow");
        return integer((int64_t)v->u.d);
    case KAPI_CEL_T_STRING: {
        int64_t i;
        return parse_decimal(v->u.s, true, &i, NULL)
                   ? integer(i)
                   : kapi_cel__error(x->a, "cannot convert string to int");
    }
    default:
        return no_overload(x);
    }
}

static value to_uint(ev *x, const value *v)
{
    switch (v->t) {
    case KAPI_CEL_T_UINT:
        return *v;
    case KAPI_CEL_T_INT:
        return v->u.i < 0 ? kapi_cel__error(x->a, "unsigned integer overflow")
                          : uinteger((uint64_t)v->u.i);
    case KAPI_CEL_T_DOUBLE:
        if (!(v->u.d > -1.0 && v->u.d < 18446744073709551616.0))
            return kapi_cel__error(x->a, "unsigned integer overflow");
        return uinteger((uint64_t)v->u.d);
    case KAPI_CEL_T_STRING: {
        uint64_t u;
        return parse_decimal(v->u.s, false, NULL, &u)
                   ? uinteger(u)
                   : kapi_cel__error(x->a, "cannot convert string to uint");
    }
    default:
        return no_overload(x);
    }
}

static value to_double(ev *x, const value *v)
{
    switch (v->t) {
    case KAPI_CEL_T_DOUBLE:
        return *v;
    case KAPI_CEL_T_INT:
        return dbl((double)v->u.i);
    case KAPI_CEL_T_UINT:
        return dbl((double)v->u.u);
    case KAPI_CEL_T_STRING: {
        /* Go's ParseFloat: no space, no hex or nan(...) forms, no overflow to infinity */
        char *end;
        errno = 0;
        double d = strtod(v->u.s.ptr, &end);
        if (v->u.s.len == 0 || end != v->u.s.ptr + v->u.s.len ||
            strpbrk(v->u.s.ptr, "xX( \t\n\v\f\r") || (errno == ERANGE && isinf(d)))
            return kapi_cel__error(x->a, "cannot convert string to double");
        return dbl(d);
    }
    default:
        return no_overload(x);
    }
}

static value to_string(ev *x, const value *v)
{
    char buf[40];
    switch (v->t) {
    case KAPI_CEL_T_STRING:
        return *v;
    case KAPI_CEL_T_INT:
        snprintf(buf, sizeof(buf), "%" PRId64, v->u.i);
        break;
    case KAPI_CEL_T_UINT:
        snprintf(buf, sizeof(buf), "%" PRIu64, v->u.u);
        break;
    case KAPI_CEL_T_DOUBLE:
        kapi_go_format_float(buf, v->u.d, 64);
        break;
    case KAPI_CEL_T_BOOL:
        snprintf(buf, sizeof(buf), "%s", v->u.b ? "true" : "false");
        break;
    case KAPI_CEL_T_BYTES:
        if (!kapi_go_valid_utf8(v->u.s.ptr, v->u.s.len))
            return kapi_cel__error(x->a, "invalid UTF-8 in bytes, cannot convert to string");
        return kapi_cel__string(x->a, KAPI_CEL_T_STRING, v->u.s.ptr, v->u.s.len);
    default:
        return no_overload(x);
    }
    return kapi_cel__string(x->a, KAPI_CEL_T_STRING, buf, strlen(buf));
}

static value to_bool(ev *x, const value *v)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True", NULL};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False", NULL};
    if (v->t == KAPI_CEL_T_BOOL)
        return *v;
    if (v->t != KAPI_CEL_T_STRING)
        return no_overload(x);
    if (strlen(v->u.s.ptr) != v->u.s.len) /* a NUL inside */
        return kapi_cel__error(x->a, "cannot convert string to bool");
    if (kapi_cstr_in(v->u.s.ptr, yes))
        return boolean(true);
    if (kapi_cstr_in(v->u.s.ptr, no))
        return boolean(false);
    return kapi_cel__error(x->a, "cannot convert string to bool");
}

/* ---- calls ---- */

/* &&, ||: false (true) decides whatever the other side is, error or not. */
static value logic(ev *x, const kapi_cel_expr *e, bool is_and)
{
    value l = eval(x, e->u.call.args[0]);
    if (l.t == KAPI_CEL_T_BOOL && l.u.b != is_and)
        return l;
    value r = eval(x, e->u.call.args[1]);
    if (r.t == KAPI_CEL_T_BOOL && r.u.b != is_and)
        return r;
    if (l.t == KAPI_CEL_T_BOOL && r.t == KAPI_CEL_T_BOOL)
        return boolean(is_and);
    if (l.t == KAPI_CEL_T_ERROR)
        return l;
    if (r.t == KAPI_CEL_T_ERROR)
        return r;
    return no_overload(x);
}

/* ?: as cel-go's conditional attribute: the condition, then the branch taken, which an
 * attribute resolves without its base cost. */
static value conditional(ev *x, const kapi_cel_expr *e)
{
    value c = eval(x, e->u.call.args[0]);
    if (c.t == KAPI_CEL_T_ERROR)
        return c;
    if (c.t != KAPI_CEL_T_BOOL)
        return no_overload(x);
    const kapi_cel_expr *b = e->u.call.args[c.u.b ? 1 : 2];
    return is_attribute(x, b) ? attribute(x, b, false) : eval(x, b);
}

/* c[i]: a qualifier of c's attribute costing 1 over the index's own evaluation (an
 * attribute index resolves without its base cost); the index is not evaluated when c
 * fails. */
static value index_attribute(ev *x, const kapi_cel_expr *e, bool base)
{
    value c = qualified(x, e->u.call.args[0], base);
    if (c.t == KAPI_CEL_T_ERROR)
        return c;
    const kapi_cel_expr *i = e->u.call.args[1];
    value k = is_attribute(x, i) ? attribute(x, i, false) : eval(x, i);
    charge(x, 1);
    if (k.t == KAPI_CEL_T_ERROR)
        return k;
    return index_of(x, &c, &k);
}

/* An attribute's value; base: whether its base cost is counted (not for a ?: branch, nor
 * an index). */
static value attribute(ev *x, const kapi_cel_expr *e, bool base)
{
    if (e->kind == KAPI_CEL_IDENT) {
        charge(x, base);
        return ident(x, e->u.ident);
    }
    if (e->kind == KAPI_CEL_SELECT)
        return select_field(x, e, base);
    if (e->u.call.fn == FN_CONDITIONAL)
        return conditional(x, e);
    return index_attribute(x, e, base);
}

/* ---- the functions, by id ---- */

static value negation(ev *x, const value *a)
{
    return a->t == KAPI_CEL_T_BOOL ? boolean(!a->u.b) : no_overload(x);
}

static value minus(ev *x, const value *a)
{
    if (a->t == KAPI_CEL_T_INT)
        return a->u.i == INT64_MIN ? kapi_cel__error(x->a, "integer overflow") : integer(-a->u.i);
    return a->t == KAPI_CEL_T_DOUBLE ? dbl(-a->u.d) : no_overload(x);
}

static value to_bytes(ev *x, const value *a)
{
    if (a->t == KAPI_CEL_T_BYTES)
        return *a;
    return a->t == KAPI_CEL_T_STRING
               ? kapi_cel__string(x->a, KAPI_CEL_T_BYTES, a->u.s.ptr, a->u.s.len)
               : no_overload(x);
}

static value to_dyn(ev *x, const value *a)
{
    (void)x;
    return *a;
}

static value type_of(ev *x, const value *a)
{
    (void)x;
    return type_value(kapi_cel_type_name(a));
}

static value equality(ev *x, cel_fn fn, const value *a, const value *b)
{
    (void)x;
    return boolean(kapi_cel_equal(a, b) == (fn == FN_EQ));
}

/* < <= > >=: numbers of any kinds that do not compare (NaN) are false, other values that
 * do not have no overload. */
static value relation(ev *x, cel_fn fn, const value *a, const value *b)
{
    int c = kapi_cel__cmp(a, b);
    if (c == 2)
        return kapi_cel__is_number(a) && kapi_cel__is_number(b) ? boolean(false) : no_overload(x);
    return boolean(fn == FN_LT ? c < 0 : fn == FN_LE ? c <= 0 : fn == FN_GT ? c > 0 : c >= 0);
}

static value membership(ev *x, cel_fn fn, const value *a, const value *b)
{
    (void)fn;
    return in(x, a, b);
}

/* The functions of one argument and of two, none of them also a library's. */
static value (*const unary[FN_COUNT])(ev *x, const value *a) = {
    [FN_NOT] = negation,   [FN_NEG] = minus,        [FN_SIZE] = size_of,     [FN_INT] = to_int,
    [FN_UINT] = to_uint,   [FN_DOUBLE] = to_double, [FN_STRING] = to_string, [FN_BOOL] = to_bool,
    [FN_BYTES] = to_bytes, [FN_DYN] = to_dyn,       [FN_TYPE] = type_of,
};

static value (*const binary[FN_COUNT])(ev *x, cel_fn fn, const value *a, const value *b) = {
    [FN_EQ] = equality,
    [FN_NE] = equality,
    [FN_LT] = relation,
    [FN_LE] = relation,
    [FN_GT] = relation,
    [FN_GE] = relation,
    [FN_ADD] = arith,
    [FN_SUB] = arith,
    [FN_MUL] = arith,
    [FN_DIV] = arith,
    [FN_MOD] = arith,
    [FN_IN] = membership,
    [FN_CONTAINS] = string_test,
    [FN_STARTS_WITH] = string_test,
    [FN_ENDS_WITH] = string_test,
    [FN_MATCHES] = string_test,
};

/* fn on evaluated arguments, none an error: durations and timestamps first, then the
 * operators and standard functions, then the libraries. */
static value apply(ev *x, cel_fn fn, const value *args, size_t n)
{
    value out;
    if (kapi_cel__time(x->a, fn, args, n, &out))
        return out;
    if (n == 2 && binary[fn])
        return binary[fn](x, fn, &args[0], &args[1]);
    if (n == 1 && unary[fn])
        return unary[fn](x, &args[0]);
    if (kapi_cel__strings(x->a, fn, args, n, &out) || kapi_cel__library(x->a, fn, args, n, &out) ||
        kapi_cel__url(x->a, fn, args, n, &out))
        return out;
    return no_overload(x);
}

/* A call: its receiver and arguments evaluated (errors first), then its cost counted. */
static value call(ev *x, const kapi_cel_expr *e)
{
    cel_fn fn = e->u.call.fn;
    if (fn == FN_AND || fn == FN_OR)
        return logic(x, e, fn == FN_AND);
    int plan = plan_of(x, e);
    size_t n = e->u.call.nargs + (e->u.call.target != NULL);
    value args[4] = {{.t = KAPI_CEL_T_NULL}};
    if (plan == KAPI_CEL_PLAN_EMPTY_SET)
        return boolean(false);
    if (n > 4)
        return no_overload(x);
    for (size_t k = 0; k < n; k++) {
        const kapi_cel_expr *arg = !e->u.call.target ? e->u.call.args[k]
                                   : k == 0          ? e->u.call.target
                                                     : e->u.call.args[k - 1];
        args[k] = eval(x, arg);
        if (args[k].t == KAPI_CEL_T_ERROR && plan == KAPI_CEL_PLAN_VARARGS)
            return args[k];
    }
    if (plan == KAPI_CEL_PLAN_SET)
        return args[0].t == KAPI_CEL_T_ERROR ? boolean(false) : in(x, &args[0], &args[1]);
    value out = {.t = KAPI_CEL_T_NULL};
    bool failed = false;
    for (size_t i = 0; i < n && !failed; i++)
        if ((failed = args[i].t == KAPI_CEL_T_ERROR))
            out = args[i];
    if (fn == FN_NOT_STRICTLY_FALSE)
        out = boolean(args[0].t != KAPI_CEL_T_BOOL || args[0].u.b);
    else if (!failed)
        out = apply(x, fn, args, n);
    if (!x->quiet)
        charge(x, kapi_cel__call_cost(x->plan[e->id].cost, args, n, &out));
    return out;
}

/* ---- the rest ---- */

static value comprehension(ev *x, const kapi_cel_expr *e)
{
    value range = eval(x, e->u.comp.iter_range);
    if (range.t == KAPI_CEL_T_ERROR)
        return range;
    if (range.t != KAPI_CEL_T_LIST && range.t != KAPI_CEL_T_MAP)
        return no_overload(x);
    const value *items = range.t == KAPI_CEL_T_LIST ? range.u.list.v : range.u.map.keys;
    size_t n = range.t == KAPI_CEL_T_LIST ? range.u.list.n : range.u.map.n;
    const scope *outer = x->vars;
    scope accu = {e->u.comp.accu_var, eval(x, e->u.comp.accu_init), outer};
    for (size_t i = 0; i < n && !x->over; i++) {
        scope it = {e->u.comp.iter_var, items[i], &accu};
        x->vars = &it;
        value c = eval(x, e->u.comp.loop_condition);
        if (c.t == KAPI_CEL_T_BOOL && !c.u.b)
            break;
        accu.v = eval(x, e->u.comp.loop_step);
    }
    x->vars = &accu;
    value r = eval(x, e->u.comp.result);
    x->vars = outer;
    return r;
}

static value create_list(ev *x, const kapi_cel_expr *e)
{
    size_t n = e->u.list.n;
    value *v = kapi_arena_alloc(x->a, (n ? n : 1) * sizeof(*v));
    value r = {.t = KAPI_CEL_T_LIST, .u.list = {.v = v, .n = n}};
    for (size_t i = 0; i < n && r.t != KAPI_CEL_T_ERROR; i++)
        if ((v[i] = eval(x, e->u.list.elems[i])).t == KAPI_CEL_T_ERROR)
            r = v[i];
    charge(x, KAPI_CEL_LIST_CREATE_COST); /* whatever the elements gave */
    return r;
}

static value create_map(ev *x, const kapi_cel_expr *e)
{
    size_t n = e->u.map.n;
    value *keys = kapi_arena_alloc(x->a, (n ? n : 1) * sizeof(*keys));
    value *values = kapi_arena_alloc(x->a, (n ? n : 1) * sizeof(*values));
    value m = {.t = KAPI_CEL_T_MAP, .u.map = {keys, values, 0}};
    for (size_t i = 0; i < n; i++) {
        value k = eval(x, e->u.map.entries[i].key);
        if (k.t == KAPI_CEL_T_ERROR)
            return k;
        if (k.t != KAPI_CEL_T_BOOL && k.t != KAPI_CEL_T_INT && k.t != KAPI_CEL_T_UINT &&
            k.t != KAPI_CEL_T_STRING)
            return kapi_cel__error(x->a, "unsupported key type");
        if (kapi_cel__map_find(&m, &k))
            return kapi_cel__error(x->a, "repeated key");
        value v = eval(x, e->u.map.entries[i].value);
        if (v.t == KAPI_CEL_T_ERROR)
            return v;
        keys[m.u.map.n] = k;
        values[m.u.map.n++] = v;
    }
    return m;
}

static value node(ev *x, const kapi_cel_expr *e)
{
    switch (e->kind) {
    case KAPI_CEL_NULL:
        return (value){.t = KAPI_CEL_T_NULL};
    case KAPI_CEL_BOOL:
        return boolean(e->u.b);
    case KAPI_CEL_INT:
        return integer(e->u.i);
    case KAPI_CEL_UINT:
        return uinteger(e->u.u);
    case KAPI_CEL_DOUBLE:
        return dbl(e->u.d);
    case KAPI_CEL_STRING:
        return (value){.t = KAPI_CEL_T_STRING, .u.s = e->u.s};
    case KAPI_CEL_BYTES:
        return (value){.t = KAPI_CEL_T_BYTES, .u.s = e->u.s};
    case KAPI_CEL_IDENT: /* a type's name: the other identifiers are attributes */
        return ident(x, e->u.ident);
    case KAPI_CEL_SELECT: /* has(): the other selects are attributes */
        return field_of(x, eval(x, e->u.select.operand), e->u.select.field, true);
    case KAPI_CEL_CALL:
        return call(x, e);
    case KAPI_CEL_LIST:
        return create_list(x, e);
    case KAPI_CEL_MAP: {
        value m = create_map(x, e);
        charge(x, KAPI_CEL_MAP_CREATE_COST); /* whatever the entries gave */
        return m;
    }
    case KAPI_CEL_STRUCT:
        return kapi_cel__error(x->a, "unknown type: %s", e->u.map.message);
    case KAPI_CEL_COMPREHENSION:
        return comprehension(x, e);
    }
    return no_overload(x);
}

/* e's value: an attribute's with its base cost, a constant's counting nothing. Once past
 * the limit every evaluation returns at once. */
static value eval(ev *x, const kapi_cel_expr *e)
{
    if (x->over)
        return (value){.t = KAPI_CEL_T_ERROR, .u.error = KAPI_CEL_COST_LIMIT_EXCEEDED};
    if (is_attribute(x, e))
        return attribute(x, e, true);
    bool folded = plan_of(x, e) == KAPI_CEL_PLAN_CONST;
    x->quiet += folded;
    value v = node(x, e);
    x->quiet -= folded;
    return v;
}

kapi_cel_value kapi_cel_eval(const kapi_cel_expr *e, const kapi_cel_activation *act, kapi_arena *a)
{
    ev x = {.a = a, .act = act, .quiet = 1};
    return eval(&x, e);
}

kapi_cel_value kapi_cel_eval_limited(const kapi_cel_ast *ast, const kapi_cel_activation *act,
                                     kapi_arena *a, uint64_t limit, uint64_t *cost)
{
    if (cost)
        *cost = 0;
    if (!ast->root)
        return kapi_cel__error(a, "no expression: the source did not parse");
    ev x = {.a = a, .act = act, .plan = ast->plan, .limit = limit};
    value v = eval(&x, ast->root);
    if (cost)
        *cost = x.cost;
    if (x.over)
        return (value){.t = KAPI_CEL_T_ERROR, .u.error = KAPI_CEL_COST_LIMIT_EXCEEDED};
    return v;
}
