/*
 * cel/cost: what an expression costs, in cel-go v0.12's units with the costs Kubernetes
 * 1.26 gives its libraries (k8s.io/apiserver/pkg/cel/library/cost.go):
 *
 *   - the static estimate of a checked tree (cel-go's checker/cost.go): a range, min and
 *     max, over every value the variables may hold, whose sizes come from max_elements;
 *   - the pieces eval.c counts the actual cost with (cel-go's interpreter/runtimecost.go):
 *     what a call costs given its arguments, and how cel-go's planner folds the tree
 *     (constant lists, maps and conversions cost nothing, `in` a constant list of
 *     primitives is a set lookup, calls with a constant regex are compiled ahead).
 *
 * A call's cost follows its overload as the checker resolved it (ast->overloads): cel-go
 * keys its costs by overload id, and a call the checker left with several overloads has
 * none at run time. All arithmetic saturates at UINT64_MAX, as cel-go's does.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cel/cel_int.h"

typedef kapi_cel_cost cost;
typedef kapi_cel_value value;

/* The size of a string, bytes, list or map: cel-go's SizeEstimate. */
typedef struct size_est {
    uint64_t min, max;
} size_est;

/* common/cost.go */
#define STRING_TRAVERSAL_FACTOR 0.1
#define REGEX_LENGTH_FACTOR 0.25
#define STRUCT_CREATE_COST 40

uint64_t kapi_cel__cost_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t mul(uint64_t a, uint64_t b)
{
    return a && b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* x times a cost factor, rounded up (multiplyByCostFactor). Where Go's conversion of a
 * float past 2^64 is undefined, this saturates. */
static uint64_t by_factor(uint64_t x, double f)
{
    double xf = (double)x;
    if (xf > 0 && f > 0 && xf > (double)UINT64_MAX / f)
        return UINT64_MAX;
    double r = ceil(xf * f);
    return r >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)r;
}

/* ---- the overloads whose costs differ ---- */

typedef enum cost_class {
    COST_FIXED,       /* O(1): 1 */
    COST_PREFIX,      /* startsWith, endsWith and the string <-> bytes conversions */
    COST_IN_LIST,     /* the list's size */
    COST_COMPARE,     /* ==, != and the orderings of strings and bytes: the smaller size */
    COST_CONCAT,      /* + of strings or bytes: both sizes */
    COST_ADD_LIST,    /* + of lists: 1, the estimate keeps the size */
    COST_MATCHES,     /* string length times pattern length */
    COST_CONTAINS,    /* string length times substring length */
    COST_LOGIC,       /* && and ||: their operands only */
    COST_CONDITIONAL, /* ?: its condition and one branch */
    COST_INDEX_LIST,  /* _[_] of a list: 1, and a size path to the items */
    COST_INDEX_MAP,   /* _[_] of a map: 1, and a size path to the values */
    /* Kubernetes' library functions, whose costs go by name whatever the overload */
    COST_TRAVERSAL, /* isSorted, sum, max, min, indexOf, lastIndexOf */
    COST_SCAN,      /* url, lowerAscii, upperAscii, substring, trim: one pass */
    COST_REBUILD,   /* replace, split: a pass and the result */
    COST_JOIN,
    COST_FIND, /* find, findAll */
} cost_class;

static const struct {
    cel_fn fn;
    const char *signature;
    cost_class c;
} classes[] = {
    {FN_STARTS_WITH, "string,string>bool", COST_PREFIX},
    {FN_ENDS_WITH, "string,string>bool", COST_PREFIX},
    {FN_BYTES, "string>bytes", COST_PREFIX},
    {FN_STRING, "bytes>string", COST_PREFIX},
    {FN_IN, "A,list(A)>bool", COST_IN_LIST},
    {FN_IN_DEPRECATED, "A,list(A)>bool", COST_IN_LIST},
    {FN_EQ, "A,A>bool", COST_COMPARE},
    {FN_NE, "A,A>bool", COST_COMPARE},
    {FN_LT, "string,string>bool", COST_COMPARE},
    {FN_LT, "bytes,bytes>bool", COST_COMPARE},
    {FN_LE, "string,string>bool", COST_COMPARE},
    {FN_LE, "bytes,bytes>bool", COST_COMPARE},
    {FN_GT, "string,string>bool", COST_COMPARE},
    {FN_GT, "bytes,bytes>bool", COST_COMPARE},
    {FN_GE, "string,string>bool", COST_COMPARE},
    {FN_GE, "bytes,bytes>bool", COST_COMPARE},
    {FN_ADD, "string,string>string", COST_CONCAT},
    {FN_ADD, "bytes,bytes>bytes", COST_CONCAT},
    {FN_ADD, "list(A),list(A)>list(A)", COST_ADD_LIST},
    {FN_MATCHES, "string,string>bool", COST_MATCHES},
    {FN_CONTAINS, "string,string>bool", COST_CONTAINS},
    {FN_AND, "bool,bool>bool", COST_LOGIC},
    {FN_OR, "bool,bool>bool", COST_LOGIC},
    {FN_CONDITIONAL, "bool,A,A>A", COST_CONDITIONAL},
    {FN_INDEX, "list(A),int>A", COST_INDEX_LIST},
    {FN_INDEX, "map(A,B),A>B", COST_INDEX_MAP},
};

static cost_class class_of(cel_fn fn, const char *signature)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(classes); i++)
        if (classes[i].fn == fn && strcmp(classes[i].signature, signature) == 0)
            return classes[i].c;
    return COST_FIXED;
}

/* The class of a Kubernetes library function (COST_TRAVERSAL to COST_FIND), else
 * COST_FIXED. */
static cost_class k8s_function(cel_fn fn)
{
    static const cost_class k8s[FN_COUNT] = {
        [FN_IS_SORTED] = COST_TRAVERSAL,
        [FN_SUM] = COST_TRAVERSAL,
        [FN_MAX] = COST_TRAVERSAL,
        [FN_MIN] = COST_TRAVERSAL,
        [FN_INDEX_OF] = COST_TRAVERSAL,
        [FN_LAST_INDEX_OF] = COST_TRAVERSAL,
        [FN_URL] = COST_SCAN,
        [FN_LOWER_ASCII] = COST_SCAN,
        [FN_UPPER_ASCII] = COST_SCAN,
        [FN_SUBSTRING] = COST_SCAN,
        [FN_TRIM] = COST_SCAN,
        [FN_REPLACE] = COST_REBUILD,
        [FN_SPLIT] = COST_REBUILD,
        [FN_JOIN] = COST_JOIN,
        [FN_FIND] = COST_FIND,
        [FN_FIND_ALL] = COST_FIND,
    };
    return k8s[fn];
}

/* ---- the static estimate (checker/cost.go) ---- */

static const cost select_cost = {1, 1};

static cost add(cost a, cost b)
{
    return (cost){kapi_cel__cost_add(a.min, b.min), kapi_cel__cost_add(a.max, b.max)};
}

static cost multiply(cost a, cost b)
{
    return (cost){mul(a.min, b.min), mul(a.max, b.max)};
}

static cost union_of(cost a, cost b)
{
    return (cost){a.min < b.min ? a.min : b.min, a.max > b.max ? a.max : b.max};
}

static cost size_cost(size_est s, double f)
{
    return (cost){by_factor(s.min, f), by_factor(s.max, f)};
}

static size_est size_add(size_est a, size_est b)
{
    return (size_est){kapi_cel__cost_add(a.min, b.min), kapi_cel__cost_add(a.max, b.max)};
}

/* An iteration variable in scope, and the range it goes over. */
typedef struct iter_scope {
    const char *name;
    const kapi_cel_expr *range;
} iter_scope;

typedef struct coster {
    const kapi_cel_ast *ast;
    bool *path;          /* by id: cel-go gives the node a field path, so asks its size */
    size_est *computed;  /* by id: the size a call's result is known to have */
    bool *has_computed;  /* by id */
    iter_scope *scopes;  /* innermost last */
    size_t nscopes, cap; /* bounded by the tree's depth */
} coster;

/* A node as the size estimators see it: its type, whether it has a path, and the node
 * itself for what the expression shows of its size (NULL for a list's items). */
typedef struct ast_node {
    const kapi_cel_typ *type;
    bool path;
    const kapi_cel_expr *e;
} ast_node;

static ast_node node_of(const coster *c, const kapi_cel_expr *e)
{
    return (ast_node){c->ast->types[e->id], c->path[e->id], e};
}

/* ComputedSize: a call's result size, a literal's size, else nothing. */
static bool computed_size(const coster *c, const ast_node *n, size_est *out)
{
    const kapi_cel_expr *e = n->e;
    if (!e)
        return false;
    if (c->has_computed[e->id]) {
        *out = c->computed[e->id];
        return true;
    }
    uint64_t v;
    switch (e->kind) {
    case KAPI_CEL_STRING:
    case KAPI_CEL_BYTES:
        v = e->u.s.len;
        break;
    case KAPI_CEL_NULL:
    case KAPI_CEL_BOOL:
    case KAPI_CEL_INT:
    case KAPI_CEL_UINT:
    case KAPI_CEL_DOUBLE:
        v = 1;
        break;
    case KAPI_CEL_LIST:
        v = e->u.list.n;
        break;
    case KAPI_CEL_MAP:
        v = e->u.map.n;
        break;
    default:
        return false;
    }
    *out = (size_est){v, v};
    return true;
}

/* Kubernetes' size estimator: what the schema allows a node with a path to hold, its
 * type's max_elements, 0 included (Kubernetes declares a map's keys and scalars so). */
static bool declared_size(const ast_node *n, size_est *out)
{
    if (!n->path || !n->type)
        return false;
    *out = (size_est){0, n->type->max_elements};
    return true;
}

/* The library estimator's sizeEstimate: computed, declared, else anything. */
static size_est k8s_size(const coster *c, const ast_node *n)
{
    size_est s;
    if (computed_size(c, n, &s) || declared_size(n, &s))
        return s;
    return (size_est){0, UINT64_MAX};
}

static bool is_scalar(const kapi_cel_typ *t)
{
    switch (t ? t->kind : KAPI_CEL_TY_DYN) {
    case KAPI_CEL_TY_BOOL:
    case KAPI_CEL_TY_INT:
    case KAPI_CEL_TY_UINT:
    case KAPI_CEL_TY_DOUBLE:
    case KAPI_CEL_TY_DURATION:
    case KAPI_CEL_TY_TIMESTAMP:
        return true;
    default:
        return false;
    }
}

/* cel-go's sizeEstimate: as the library's, and a scalar has size 1. */
static size_est size_of(const coster *c, const ast_node *n)
{
    size_est s;
    if (computed_size(c, n, &s) || declared_size(n, &s))
        return s;
    if (is_scalar(n->type))
        return (size_est){1, 1};
    return (size_est){0, UINT64_MAX};
}

/* listElementNode: a list's items, with a path when the list has one. */
static bool list_items(const ast_node *list, ast_node *out)
{
    if (!list->type || list->type->kind != KAPI_CEL_TY_LIST)
        return false;
    *out = (ast_node){list->type->elem, list->path, NULL};
    return true;
}

static bool is_string_or_bytes(const kapi_cel_typ *t)
{
    return t && (t->kind == KAPI_CEL_TY_STRING || t->kind == KAPI_CEL_TY_BYTES);
}

/* Kubernetes' EstimateCallCost; false when it has no estimate for fn. */
static bool k8s_estimate(const coster *c, cel_fn fn, const ast_node *target, const ast_node *args,
                         size_t nargs, cost *out)
{
    ast_node items;
    switch (k8s_function(fn)) {
    case COST_TRAVERSAL: {
        if (!target)
            return false;
        if (!list_items(target, &items)) { /* a string's indexOf */
            *out = size_cost(k8s_size(c, target), STRING_TRAVERSAL_FACTOR);
            return true;
        }
        cost el = {1, 1};
        if (is_string_or_bytes(items.type))
            el = add(el, size_cost(k8s_size(c, &items), STRING_TRAVERSAL_FACTOR));
        size_est n = k8s_size(c, target);
        *out = multiply((cost){n.min, n.max}, el);
        return true;
    }
    case COST_SCAN:
        if (fn == FN_URL) {
            if (nargs != 1)
                return false;
            *out = size_cost(k8s_size(c, &args[0]), STRING_TRAVERSAL_FACTOR);
            return true;
        }
        if (!target)
            return false;
        *out = size_cost(k8s_size(c, target), STRING_TRAVERSAL_FACTOR);
        return true;
    case COST_REBUILD:
        if (!target || (fn == FN_REPLACE && nargs < 2))
            return false;
        *out = size_cost(k8s_size(c, target), 2 * STRING_TRAVERSAL_FACTOR);
        return true;
    case COST_JOIN: {
        if (!target)
            return false;
        size_est list = k8s_size(c, target), sz = {0, 0};
        if (list_items(target, &items)) {
            size_est el = k8s_size(c, &items);
            sz = (size_est){mul(list.min, el.min), mul(list.max, el.max)};
        }
        if (nargs > 0) {
            size_est sep = k8s_size(c, &args[0]);
            size_est n = {list.min ? list.min - 1 : 0, list.max ? list.max - 1 : 0};
            sz = size_add(sz, (size_est){mul(sep.min, n.min), mul(sep.max, n.max)});
        }
        *out = size_cost(sz, STRING_TRAVERSAL_FACTOR);
        return true;
    }
    case COST_FIND: {
        if (!target || nargs < 1)
            return false;
        cost str =
            size_cost(size_add(k8s_size(c, target), (size_est){1, 1}), STRING_TRAVERSAL_FACTOR);
        *out = multiply(str, size_cost(k8s_size(c, &args[0]), REGEX_LENGTH_FACTOR));
        return true;
    }
    default:
        return false;
    }
}

/* What one overload of a call costs (functionCost), its arguments' costs included; a
 * result size when the overload knows it. */
static cost function_cost(const coster *c, cel_fn fn, const char *signature, const ast_node *target,
                          const ast_node *args, const cost *arg_costs, size_t nargs,
                          size_est *result, bool *has_result)
{
    cost sum = {0, 0};
    for (size_t i = 0; i < nargs; i++)
        sum = add(sum, arg_costs[i]);
    cost est;
    if (k8s_estimate(c, fn, target, args, nargs, &est))
        return add(est, sum);
    switch (class_of(fn, signature)) {
    case COST_PREFIX:
        if (nargs == 1)
            return add(size_cost(size_of(c, &args[0]), STRING_TRAVERSAL_FACTOR), sum);
        break;
    case COST_IN_LIST:
        if (nargs == 2)
            return add(size_cost(size_of(c, &args[1]), 1), sum);
        break;
    case COST_MATCHES:
        if (target && nargs == 1) {
            cost str =
                size_cost(size_add(size_of(c, target), (size_est){1, 1}), STRING_TRAVERSAL_FACTOR);
            cost re = size_cost(size_of(c, &args[0]), REGEX_LENGTH_FACTOR);
            return add(multiply(str, re), sum);
        }
        break;
    case COST_CONTAINS:
        if (target && nargs == 1) {
            cost str = size_cost(size_of(c, target), STRING_TRAVERSAL_FACTOR);
            cost sub = size_cost(size_of(c, &args[0]), STRING_TRAVERSAL_FACTOR);
            return add(multiply(str, sub), sum);
        }
        break;
    case COST_LOGIC:
        return (cost){arg_costs[0].min, add(arg_costs[0], arg_costs[1]).max};
    case COST_CONDITIONAL: {
        size_est t = size_of(c, &args[1]), f = size_of(c, &args[2]);
        *result = (size_est){t.min < f.min ? t.min : f.min, t.max > f.max ? t.max : f.max};
        *has_result = true;
        return add(arg_costs[0], union_of(arg_costs[1], arg_costs[2]));
    }
    case COST_CONCAT:
    case COST_ADD_LIST:
        if (nargs == 2) {
            *result = size_add(size_of(c, &args[0]), size_of(c, &args[1]));
            *has_result = true;
            if (class_of(fn, signature) == COST_ADD_LIST)
                return add((cost){1, 1}, sum);
            return add(size_cost(*result, STRING_TRAVERSAL_FACTOR), sum);
        }
        break;
    case COST_COMPARE: {
        size_est l = size_of(c, &args[0]), r = size_of(c, &args[1]);
        uint64_t smallest = l.max < r.max ? l.max : r.max;
        return add(size_cost((size_est){smallest > 0, smallest}, STRING_TRAVERSAL_FACTOR), sum);
    }
    default:
        break;
    }
    return add((cost){1, 1}, sum);
}

static cost estimate(coster *c, const kapi_cel_expr *e);

static const iter_scope *iter_var(const coster *c, const char *name)
{
    for (size_t i = c->nscopes; i-- > 0;)
        if (strcmp(c->scopes[i].name, name) == 0)
            return &c->scopes[i];
    return NULL;
}

static cost estimate_ident(coster *c, const kapi_cel_expr *e)
{
    const iter_scope *s = iter_var(c, e->u.ident);
    if (s) { /* its range's path and @items or @keys, when the range is a list or a map */
        const kapi_cel_typ *t = c->ast->types[s->range->id];
        c->path[e->id] = t && (t->kind == KAPI_CEL_TY_LIST || t->kind == KAPI_CEL_TY_MAP);
    } else { /* the accumulator's path is left out */
        c->path[e->id] = strcmp(e->u.ident, "__result__") != 0;
    }
    return select_cost;
}

static cost estimate_select(coster *c, const kapi_cel_expr *e)
{
    if (e->u.select.test_only)
        return (cost){0, 0};
    cost sum = estimate(c, e->u.select.operand);
    const kapi_cel_typ *t = c->ast->types[e->u.select.operand->id];
    if (t && (t->kind == KAPI_CEL_TY_MAP || t->kind == KAPI_CEL_TY_OBJECT ||
              t->kind == KAPI_CEL_TY_PARAM))
        sum = add(sum, select_cost);
    c->path[e->id] = true;
    return sum;
}

static cost estimate_call(coster *c, const kapi_cel_expr *e)
{
    size_t n = e->u.call.nargs;
    ast_node args[8];
    cost arg_costs[8];
    if (n > KAPI_ARRAY_LEN(args)) /* no overload takes as many: the checker refused it */
        return (cost){0, 0};
    for (size_t i = 0; i < n; i++) {
        arg_costs[i] = estimate(c, e->u.call.args[i]);
        args[i] = node_of(c, e->u.call.args[i]);
    }
    const char *const *overloads = c->ast->overloads[e->id];
    if (!overloads || !overloads[0])
        return (cost){0, 0};
    cost sum = {0, 0};
    ast_node target;
    if (e->u.call.target) {
        sum = estimate(c, e->u.call.target);
        target = node_of(c, e->u.call.target);
    }
    cost fn = {UINT64_MAX, 0};
    size_est result = {0, 0};
    bool has_result = false;
    for (size_t i = 0; overloads[i]; i++) {
        size_est r;
        bool has_r = false;
        cost oc = function_cost(c, e->u.call.fn, overloads[i], e->u.call.target ? &target : NULL,
                                args, arg_costs, n, &r, &has_r);
        fn = union_of(fn, oc);
        if (has_r) {
            result = has_result ? (size_est){r.min < result.min ? r.min : result.min,
                                             r.max > result.max ? r.max : result.max}
                                : r;
            has_result = true;
        }
        cost_class k = class_of(e->u.call.fn, overloads[i]);
        if ((k == COST_INDEX_LIST || k == COST_INDEX_MAP) && n > 0)
            c->path[e->id] = true;
    }
    if (has_result) {
        c->computed[e->id] = result;
        c->has_computed[e->id] = true;
    }
    return add(sum, fn);
}

static cost estimate_comprehension(coster *c, const kapi_cel_expr *e)
{
    cost sum = add(estimate(c, e->u.comp.iter_range), estimate(c, e->u.comp.accu_init));
    if (c->nscopes == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 8;
        c->scopes = kapi_xrealloc(c->scopes, c->cap * sizeof(*c->scopes));
    }
    c->scopes[c->nscopes++] = (iter_scope){e->u.comp.iter_var, e->u.comp.iter_range};
    cost loop = estimate(c, e->u.comp.loop_condition);
    cost step = estimate(c, e->u.comp.loop_step);
    c->nscopes--;
    sum = add(sum, estimate(c, e->u.comp.result));
    ast_node range = node_of(c, e->u.comp.iter_range);
    size_est n = size_of(c, &range);
    return add(sum, multiply((cost){n.min, n.max}, add(step, loop)));
}

static cost estimate(coster *c, const kapi_cel_expr *e)
{
    cost sum = {0, 0};
    switch (e->kind) {
    case KAPI_CEL_IDENT:
        return estimate_ident(c, e);
    case KAPI_CEL_SELECT:
        return estimate_select(c, e);
    case KAPI_CEL_CALL:
        return estimate_call(c, e);
    case KAPI_CEL_LIST:
        for (size_t i = 0; i < e->u.list.n; i++)
            sum = add(sum, estimate(c, e->u.list.elems[i]));
        return add(sum, (cost){KAPI_CEL_LIST_CREATE_COST, KAPI_CEL_LIST_CREATE_COST});
    case KAPI_CEL_MAP:
    case KAPI_CEL_STRUCT:
        for (size_t i = 0; i < e->u.map.n; i++) {
            if (e->u.map.entries[i].key)
                sum = add(sum, estimate(c, e->u.map.entries[i].key));
            sum = add(sum, estimate(c, e->u.map.entries[i].value));
        }
        if (e->kind == KAPI_CEL_STRUCT)
            return add(sum, (cost){STRUCT_CREATE_COST, STRUCT_CREATE_COST});
        return add(sum, (cost){KAPI_CEL_MAP_CREATE_COST, KAPI_CEL_MAP_CREATE_COST});
    case KAPI_CEL_COMPREHENSION:
        return estimate_comprehension(c, e);
    default: /* literals */
        return sum;
    }
}

kapi_cel_cost kapi_cel_estimate_cost(const kapi_cel_ast *ast)
{
    if (!ast->root || !ast->types || !ast->overloads)
        return (cost){0, 0};
    kapi_arena a;
    kapi_arena_init(&a);
    size_t n = (size_t)ast->next_id;
    coster c = {.ast = ast};
    c.path = kapi_arena_alloc(&a, n * sizeof(*c.path));
    c.computed = kapi_arena_alloc(&a, n * sizeof(*c.computed));
    c.has_computed = kapi_arena_alloc(&a, n * sizeof(*c.has_computed));
    memset(c.path, 0, n * sizeof(*c.path));
    memset(c.has_computed, 0, n * sizeof(*c.has_computed));
    cost r = estimate(&c, ast->root);
    free(c.scopes);
    kapi_arena_dispose(&a);
    return r;
}

/* ---- the actual cost (interpreter/runtimecost.go) ---- */

/* actualSize: a string's code points, bytes', a list's items, a map's entries, else 1. */
static uint64_t actual_size(const value *v)
{
    size_t n = 0;
    switch (v->t) {
    case KAPI_CEL_T_STRING:
        for (size_t i = 0; i < v->u.s.len; i++)
            n += ((unsigned char)v->u.s.ptr[i] & 0xC0) != 0x80;
        return n;
    case KAPI_CEL_T_BYTES:
        return v->u.s.len;
    case KAPI_CEL_T_LIST:
        return v->u.list.n;
    case KAPI_CEL_T_MAP:
        return v->u.map.n;
    default:
        return 1;
    }
}

/* The library's traversalCost: a tenth of every string's bytes (rounded down), 1 for
 * every other leaf. */
static uint64_t traversal_cost(const value *v)
{
    uint64_t c = 0;
    switch (v->t) {
    case KAPI_CEL_T_STRING:
    case KAPI_CEL_T_BYTES:
        return (uint64_t)((double)v->u.s.len * STRING_TRAVERSAL_FACTOR);
    case KAPI_CEL_T_LIST:
        for (size_t i = 0; i < v->u.list.n; i++)
            c = kapi_cel__cost_add(c, traversal_cost(&v->u.list.v[i]));
        return c;
    case KAPI_CEL_T_MAP:
        for (size_t i = 0; i < v->u.map.n; i++)
            c = kapi_cel__cost_add(c, kapi_cel__cost_add(traversal_cost(&v->u.map.keys[i]),
                                                         traversal_cost(&v->u.map.values[i])));
        return c;
    default:
        return 1;
    }
}

/* Kubernetes' CallCost of a call of class k; false when it has none. */
static bool k8s_call_cost(cost_class k, const value *args, size_t n, const value *result,
                          uint64_t *out)
{
    if (k == COST_TRAVERSAL) {
        *out = n > 0 ? traversal_cost(&args[0]) : 0;
        return true;
    }
    if (n == 0)
        return false;
    switch (k) {
    case COST_SCAN:
        *out = by_factor(actual_size(&args[0]), STRING_TRAVERSAL_FACTOR);
        return true;
    case COST_REBUILD: /* (size * 2) * 0.1, in that order, as Go computes it */
        *out = (uint64_t)ceil((double)actual_size(&args[0]) * 2 * STRING_TRAVERSAL_FACTOR);
        return true;
    case COST_JOIN:
        *out = (uint64_t)ceil((double)actual_size(result) * 2 * STRING_TRAVERSAL_FACTOR);
        return true;
    case COST_FIND:
        if (n < 2)
            return false;
        *out = mul((uint64_t)ceil((1.0 + (double)actual_size(&args[0])) * STRING_TRAVERSAL_FACTOR),
                   by_factor(actual_size(&args[1]), REGEX_LENGTH_FACTOR));
        return true;
    default:
        return false;
    }
}

/* The class of a call of fn that the checker resolved to overload (NULL: none or several)
 * as cel-go's cost tracker counts it: Kubernetes' by name, else by the overload, == and !=
 * as comparisons without one. */
static cost_class call_class(cel_fn fn, const char *overload)
{
    cost_class k = k8s_function(fn);
    if (k != COST_FIXED)
        return k;
    if (overload)
        return class_of(fn, overload);
    return fn == FN_EQ || fn == FN_NE ? COST_COMPARE : COST_FIXED;
}

uint64_t kapi_cel__call_cost(uint8_t kind, const value *args, size_t n, const value *result)
{
    uint64_t c;
    cost_class k = (cost_class)kind;
    if (k8s_call_cost(k, args, n, result, &c))
        return c;
    switch (k) {
    case COST_PREFIX:
        return by_factor(actual_size(&args[0]), STRING_TRAVERSAL_FACTOR);
    case COST_IN_LIST:
        return actual_size(&args[1]);
    case COST_COMPARE: {
        uint64_t l = actual_size(&args[0]), r = actual_size(&args[1]);
        return by_factor(l < r ? l : r, STRING_TRAVERSAL_FACTOR);
    }
    case COST_CONCAT:
        return by_factor(kapi_cel__cost_add(actual_size(&args[0]), actual_size(&args[1])),
                         STRING_TRAVERSAL_FACTOR);
    case COST_MATCHES:
        return mul((uint64_t)ceil((1.0 + (double)actual_size(&args[0])) * STRING_TRAVERSAL_FACTOR),
                   by_factor(actual_size(&args[1]), REGEX_LENGTH_FACTOR));
    case COST_CONTAINS:
        return mul(by_factor(actual_size(&args[0]), STRING_TRAVERSAL_FACTOR),
                   by_factor(actual_size(&args[1]), STRING_TRAVERSAL_FACTOR));
    default:
        return 1;
    }
}

/* ---- cel-go's plan of the tree ---- */

/* The conversions cel-go folds when their argument is a constant. */
static const bool conversions[FN_COUNT] = {
    [FN_BOOL] = true, [FN_BYTES] = true, [FN_DOUBLE] = true, [FN_DURATION] = true,
    [FN_DYN] = true,  [FN_INT] = true,   [FN_STRING] = true, [FN_TIMESTAMP] = true,
    [FN_TYPE] = true, [FN_UINT] = true,
};

static bool primitive_literal(const kapi_cel_expr *e)
{
    return e->kind == KAPI_CEL_BOOL || e->kind == KAPI_CEL_BYTES || e->kind == KAPI_CEL_DOUBLE ||
           e->kind == KAPI_CEL_INT || e->kind == KAPI_CEL_STRING || e->kind == KAPI_CEL_UINT;
}

/* The one overload the checker resolved a call to, or NULL. */
const char *kapi_cel__overload(const kapi_cel_ast *ast, const kapi_cel_expr *e)
{
    if (!ast || !ast->overloads || !ast->overloads[e->id])
        return NULL;
    const char *const *o = ast->overloads[e->id];
    return o[0] && !o[1] ? o[0] : NULL;
}

static uint8_t plan_call(const kapi_cel_ast *ast, const kapi_cel_node_plan *plan,
                         const kapi_cel_expr *e)
{
    cel_fn fn = e->u.call.fn;
    size_t n = e->u.call.nargs;
    kapi_cel_expr *const *args = e->u.call.args;
    if (!e->u.call.target && n == 1 && conversions[fn] &&
        plan[args[0]->id].how == KAPI_CEL_PLAN_CONST)
        return KAPI_CEL_PLAN_CONST;
    const char *o = kapi_cel__overload(ast, e);
    if (o && class_of(fn, o) == COST_IN_LIST && n == 2 && args[1]->kind == KAPI_CEL_LIST &&
        plan[args[1]->id].how == KAPI_CEL_PLAN_CONST) {
        if (args[1]->u.list.n == 0)
            return KAPI_CEL_PLAN_EMPTY_SET;
        for (size_t i = 0; i < args[1]->u.list.n; i++)
            if (!primitive_literal(args[1]->u.list.elems[i]))
                return KAPI_CEL_PLAN_CALL;
        return KAPI_CEL_PLAN_SET;
    }
    bool regex = fn == FN_MATCHES || fn == FN_FIND || fn == FN_FIND_ALL;
    if (e->u.call.target && regex && n >= 1 && args[0]->kind == KAPI_CEL_STRING)
        return KAPI_CEL_PLAN_VARARGS;
    return n + (e->u.call.target != NULL) >= 3 ? KAPI_CEL_PLAN_VARARGS : KAPI_CEL_PLAN_CALL;
}

static bool all_const(const kapi_cel_node_plan *plan, kapi_cel_expr *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (plan[v[i]->id].how != KAPI_CEL_PLAN_CONST)
            return false;
    return true;
}

static void plan_node(const kapi_cel_ast *ast, kapi_cel_node_plan *plan, const kapi_cel_expr *e)
{
    uint8_t p = KAPI_CEL_PLAN_CALL;
    switch (e->kind) {
    case KAPI_CEL_IDENT: /* a type's name, once checked */
        if (ast->types && ast->types[e->id] && ast->types[e->id]->kind == KAPI_CEL_TY_TYPE)
            p = KAPI_CEL_PLAN_CONST;
        break;
    case KAPI_CEL_SELECT:
        plan_node(ast, plan, e->u.select.operand);
        break;
    case KAPI_CEL_CALL:
        if (e->u.call.target)
            plan_node(ast, plan, e->u.call.target);
        for (size_t i = 0; i < e->u.call.nargs; i++)
            plan_node(ast, plan, e->u.call.args[i]);
        p = plan_call(ast, plan, e);
        plan[e->id].cost = (uint8_t)call_class(e->u.call.fn, kapi_cel__overload(ast, e));
        break;
    case KAPI_CEL_LIST:
        for (size_t i = 0; i < e->u.list.n; i++)
            plan_node(ast, plan, e->u.list.elems[i]);
        if (all_const(plan, e->u.list.elems, e->u.list.n))
            p = KAPI_CEL_PLAN_CONST;
        break;
    case KAPI_CEL_MAP: {
        bool folds = true;
        for (size_t i = 0; i < e->u.map.n; i++) {
            const kapi_cel_entry *en = &e->u.map.entries[i];
            plan_node(ast, plan, en->key);
            plan_node(ast, plan, en->value);
            folds = folds && plan[en->key->id].how == KAPI_CEL_PLAN_CONST &&
                    plan[en->value->id].how == KAPI_CEL_PLAN_CONST;
        }
        if (folds)
            p = KAPI_CEL_PLAN_CONST;
        break;
    }
    case KAPI_CEL_STRUCT: /* a message: Kubernetes declares none, evaluation fails */
        break;
    case KAPI_CEL_COMPREHENSION:
        plan_node(ast, plan, e->u.comp.iter_range);
        plan_node(ast, plan, e->u.comp.accu_init);
        plan_node(ast, plan, e->u.comp.loop_condition);
        plan_node(ast, plan, e->u.comp.loop_step);
        plan_node(ast, plan, e->u.comp.result);
        break;
    default: /* literals */
        p = KAPI_CEL_PLAN_CONST;
    }
    plan[e->id].how = p;
}

void kapi_cel__plan(kapi_cel_ast *ast)
{
    size_t n = (size_t)ast->next_id;
    kapi_cel_node_plan *plan = kapi_arena_alloc(&ast->arena, n * sizeof(*plan));
    memset(plan, 0, n * sizeof(*plan)); /* KAPI_CEL_PLAN_CALL, COST_FIXED */
    if (ast->root)
        plan_node(ast, plan, ast->root);
    ast->plan = plan;
}
