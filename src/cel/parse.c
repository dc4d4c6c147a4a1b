/*
 * cel/parse: CEL.g4's parser rules by recursive descent, building the tree as cel-go
 * v0.12's visitor builds it (node ids in its order, balanced && and || chains), with its
 * macros expanded (macro.go), its literal and identifier checks and its limits.
 *
 * A syntax error ends the parse at the first one: ANTLR would recover and report more,
 * worded by its error strategy; kapi words the first as that strategy does in the common
 * cases ("mismatched input 'x' expecting ...", "extraneous input 'x' expecting ...",
 * "missing ')' at '<EOF>'"). The errors cel-go's visitor raises (reserved identifiers,
 * bad literals, macro arguments) do not end the parse; all of them are reported.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cel/cel_int.h"

typedef struct parser {
    kapi_cel_ast *ast;
    const char *src;
    size_t len;
    cel_token *toks; /* the whole input, lexed first, ending with EOF */
    size_t ntoks, at;
    int depth;
    bool stop; /* a syntax error: nothing more is parsed */
    int mute;  /* inside what cel-go's visitor never visits: its errors are not reported */
    kapi_cel_issue *issues; /* heap, moved to the tree's arena at the end */
    size_t nissues;
} parser;

/* What a primary may start with, as ANTLR lists it. */
static const char primary_set[] = "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', "
                                  "NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}";

/* ---- errors ---- */

static void add_issue(parser *p, size_t offset, bool located, const char *msg)
{
    if (p->nissues >= 100)
        return;
    p->issues = kapi_xrealloc(p->issues, (p->nissues + 1) * sizeof(*p->issues));
    kapi_cel_issue *is = &p->issues[p->nissues++];
    is->message = kapi_arena_strdup(&p->ast->arena, msg);
    if (!located) {
        is->line = -1;
        is->column = -1;
        return;
    }
    kapi_cel__locate(p->src, p->len, offset, &is->line, &is->column);
}

void kapi_cel__locate(const char *src, size_t len, size_t offset, int *line, int *column)
{
    int l = 1, col = 0;
    for (size_t i = 0; i < offset && i < len; i++) {
        unsigned char c = (unsigned char)src[i];
        if (c == '\n')
            l++, col = 0;
        else if ((c & 0xC0) != 0x80)
            col++;
    }
    *line = l;
    *column = col;
}

static void vreport(parser *p, size_t offset, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    add_issue(p, offset, true, msg);
}

/* An error of the parse (ANTLR's): always reported. */
static void syntax(parser *p, size_t offset, const char *fmt, ...) KAPI_PRINTF(3, 4);
static void syntax(parser *p, size_t offset, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(p, offset, fmt, ap);
    va_end(ap);
}

/* An error of cel-go's visitor: reported where the visitor goes. */
static void report(parser *p, size_t offset, const char *fmt, ...) KAPI_PRINTF(3, 4);
static void report(parser *p, size_t offset, const char *fmt, ...)
{
    va_list ap;
    if (p->mute)
        return;
    va_start(ap, fmt);
    vreport(p, offset, fmt, ap);
    va_end(ap);
}

static void lex_report(void *ctx, size_t offset, const char *message)
{
    syntax(ctx, offset, "Syntax error: %s", message);
}

/* ---- tokens ---- */

static const cel_token *tok(const parser *p)
{
    return &p->toks[p->at];
}

static cel_tok peek(const parser *p, size_t k)
{
    size_t i = p->at + k;
    return i < p->ntoks ? p->toks[i].type : TOK_EOF;
}

static void advance(parser *p)
{
    if (p->at + 1 < p->ntoks)
        p->at++;
}

/* A token as ANTLR names it in a message: its text in quotes, or <EOF>. */
static void tok_text(const parser *p, const cel_token *t, char *out, size_t n)
{
    if (t->type == TOK_EOF)
        snprintf(out, n, "'<EOF>'");
    else
        snprintf(out, n, "'%.*s'", (int)(t->len > 200 ? 200 : t->len), p->src + t->start);
}

/* The syntax error at the current token, where expecting was wanted. */
static void syntax_error(parser *p, const char *expecting)
{
    char t[256];
    tok_text(p, tok(p), t, sizeof(t));
    syntax(p, tok(p)->start, "Syntax error: mismatched input %s expecting %s", t, expecting);
    p->stop = true;
}

/* Takes a token of type want; else the error ANTLR's recoverInline gives: the current
 * token is extraneous when the one after it is wanted, a closing token is missing when
 * what follows could follow it. */
static bool expect(parser *p, cel_tok want)
{
    if (p->stop)
        return false;
    if (tok(p)->type == want) {
        advance(p);
        return true;
    }
    char t[256];
    tok_text(p, tok(p), t, sizeof(t));
    const char *w = kapi_cel__tok_name(want);
    if (peek(p, 1) == want)
        syntax(p, tok(p)->start, "Syntax error: extraneous input %s expecting %s", t, w);
    else if ((want == TOK_RPAREN || want == TOK_RBRACK || want == TOK_RBRACE) &&
             (tok(p)->type == TOK_EOF || tok(p)->type == TOK_RPAREN || tok(p)->type == TOK_RBRACK ||
              tok(p)->type == TOK_RBRACE))
        syntax(p, tok(p)->start, "Syntax error: missing %s at %s", w, t);
    else
        syntax(p, tok(p)->start, "Syntax error: mismatched input %s expecting %s", t, w);
    p->stop = true;
    return false;
}

/* ---- nodes ---- */

static int64_t next_id(parser *p)
{
    return p->ast->next_id++;
}

static kapi_cel_expr *node_id(parser *p, kapi_cel_kind kind, size_t offset, int64_t id)
{
    kapi_cel_expr *e = kapi_arena_alloc(&p->ast->arena, sizeof(*e));
    memset(e, 0, sizeof(*e));
    e->id = id;
    e->kind = kind;
    e->offset = offset;
    return e;
}

static kapi_cel_expr *node(parser *p, kapi_cel_kind kind, size_t offset)
{
    return node_id(p, kind, offset, next_id(p));
}

static const char *text(parser *p, const cel_token *t)
{
    return kapi_arena_strndup(&p->ast->arena, p->src + t->start, t->len);
}

static kapi_cel_expr **args_copy(parser *p, kapi_cel_expr *const *args, size_t n)
{
    kapi_cel_expr **v = kapi_arena_alloc(&p->ast->arena, (n ? n : 1) * sizeof(*v));
    if (n)
        memcpy(v, args, n * sizeof(*v));
    return v;
}

static kapi_cel_expr *call_id(parser *p, int64_t id, size_t offset, const char *fn,
                              kapi_cel_expr *target, kapi_cel_expr *const *args, size_t n)
{
    kapi_cel_expr *e = node_id(p, KAPI_CEL_CALL, offset, id);
    e->u.call.function = fn;
    e->u.call.fn = (int)kapi_cel__function(fn);
    e->u.call.target = target;
    e->u.call.args = args_copy(p, args, n);
    e->u.call.nargs = n;
    return e;
}

static kapi_cel_expr *call(parser *p, size_t offset, const char *fn, kapi_cel_expr *const *args,
                           size_t n)
{
    return call_id(p, next_id(p), offset, fn, NULL, args, n);
}

static kapi_cel_expr *ident(parser *p, size_t offset, const char *name)
{
    kapi_cel_expr *e = node(p, KAPI_CEL_IDENT, offset);
    e->u.ident = name;
    return e;
}

/* A placeholder for what an error left unparsed. */
static kapi_cel_expr *error_node(parser *p, size_t offset)
{
    return node_id(p, KAPI_CEL_NULL, offset, 0);
}

/* ---- macros (cel-go's macro.go) ---- */

#define ACCU "__result__"

static kapi_cel_expr *fold(parser *p, size_t at, const char *var, kapi_cel_expr *range,
                           kapi_cel_expr *init, kapi_cel_expr *cond, kapi_cel_expr *step,
                           kapi_cel_expr *result)
{
    kapi_cel_expr *e = node(p, KAPI_CEL_COMPREHENSION, at);
    e->u.comp.iter_var = var;
    e->u.comp.iter_range = range;
    e->u.comp.accu_var = ACCU;
    e->u.comp.accu_init = init;
    e->u.comp.loop_condition = cond;
    e->u.comp.loop_step = step;
    e->u.comp.result = result;
    return e;
}

static kapi_cel_expr *lit_bool(parser *p, size_t at, bool b)
{
    kapi_cel_expr *e = node(p, KAPI_CEL_BOOL, at);
    e->u.b = b;
    return e;
}

static kapi_cel_expr *lit_int(parser *p, size_t at, int64_t i)
{
    kapi_cel_expr *e = node(p, KAPI_CEL_INT, at);
    e->u.i = i;
    return e;
}

static kapi_cel_expr *list_of(parser *p, size_t at, kapi_cel_expr *elem)
{
    kapi_cel_expr *e = node(p, KAPI_CEL_LIST, at);
    e->u.list.elems = args_copy(p, &elem, elem ? 1 : 0);
    e->u.list.n = elem ? 1 : 0;
    return e;
}

/* all, exists, exists_one: the quantifiers over target. */
static kapi_cel_expr *quantifier(parser *p, size_t at, const char *fn, kapi_cel_expr *target,
                                 kapi_cel_expr **args)
{
    if (args[0]->kind != KAPI_CEL_IDENT) {
        report(p, args[0]->offset, "argument must be a simple name");
        return error_node(p, at);
    }
    const char *v = args[0]->u.ident;
    kapi_cel_expr *init, *cond, *step, *result;
    if (strcmp(fn, "all") == 0) {
        init = lit_bool(p, at, true);
        kapi_cel_expr *a = ident(p, at, ACCU);
        cond = call(p, at, "@not_strictly_false", &a, 1);
        kapi_cel_expr *s[2] = {ident(p, at, ACCU), args[1]};
        step = call(p, at, "_&&_", s, 2);
        result = ident(p, at, ACCU);
    } else if (strcmp(fn, "exists") == 0) {
        init = lit_bool(p, at, false);
        kapi_cel_expr *a = ident(p, at, ACCU);
        kapi_cel_expr *n = call(p, at, "!_", &a, 1);
        cond = call(p, at, "@not_strictly_false", &n, 1);
        kapi_cel_expr *s[2] = {ident(p, at, ACCU), args[1]};
        step = call(p, at, "_||_", s, 2);
        result = ident(p, at, ACCU);
    } else { /* exists_one */
        kapi_cel_expr *zero = lit_int(p, at, 0), *one = lit_int(p, at, 1);
        init = zero;
        cond = lit_bool(p, at, true);
        kapi_cel_expr *add[2] = {ident(p, at, ACCU), one};
        kapi_cel_expr *plus = call(p, at, "_+_", add, 2);
        kapi_cel_expr *c[3] = {args[1], plus, ident(p, at, ACCU)};
        step = call(p, at, "_?_:_", c, 3);
        kapi_cel_expr *eq[2] = {ident(p, at, ACCU), one};
        result = call(p, at, "_==_", eq, 2);
    }
    return fold(p, at, v, target, init, cond, step, result);
}

/* map(v, f), map(v, p, f) and filter(v, p). */
static kapi_cel_expr *map_filter(parser *p, size_t at, bool filter, kapi_cel_expr *target,
                                 kapi_cel_expr **args, size_t n)
{
    if (args[0]->kind != KAPI_CEL_IDENT) {
        report(p, at, "argument is not an identifier");
        return error_node(p, at);
    }
    kapi_cel_expr *pred = filter || n == 3 ? args[1] : NULL;
    kapi_cel_expr *fn = filter ? args[0] : args[n - 1];
    kapi_cel_expr *accu = ident(p, at, ACCU);
    kapi_cel_expr *init = list_of(p, at, NULL);
    kapi_cel_expr *cond = lit_bool(p, at, true);
    kapi_cel_expr *add[2] = {accu, list_of(p, at, fn)};
    kapi_cel_expr *step = call(p, at, "_+_", add, 2);
    if (pred) {
        kapi_cel_expr *c[3] = {pred, step, accu};
        step = call(p, at, "_?_:_", c, 3);
    }
    return fold(p, at, args[0]->u.ident, target, init, cond, step, accu);
}

/* The macro call fn(args) on target (NULL: a global call) expands to, or NULL when it is
 * no macro. at is where the call is (its id's location). */
static kapi_cel_expr *expand(parser *p, size_t at, const char *fn, kapi_cel_expr *target,
                             kapi_cel_expr **args, size_t n)
{
    if (!target) {
        if (strcmp(fn, "has") != 0 || n != 1)
            return NULL;
        if (args[0]->kind != KAPI_CEL_SELECT) {
            report(p, at, "invalid argument to has() macro");
            return error_node(p, at);
        }
        kapi_cel_expr *e = node(p, KAPI_CEL_SELECT, at);
        e->u.select.operand = args[0]->u.select.operand;
        e->u.select.field = args[0]->u.select.field;
        e->u.select.test_only = true;
        return e;
    }
    if (n == 2 &&
        (strcmp(fn, "all") == 0 || strcmp(fn, "exists") == 0 || strcmp(fn, "exists_one") == 0))
        return quantifier(p, at, fn, target, args);
    if (strcmp(fn, "map") == 0 && (n == 2 || n == 3))
        return map_filter(p, at, false, target, args, n);
    if (strcmp(fn, "filter") == 0 && n == 2)
        return map_filter(p, at, true, target, args, n);
    return NULL;
}

static kapi_cel_expr *call_or_macro(parser *p, int64_t id, size_t at, const char *fn,
                                    kapi_cel_expr *target, kapi_cel_expr **args, size_t n)
{
    kapi_cel_expr *m = expand(p, at, fn, target, args, n);
    return m ? m : call_id(p, id, at, fn, target, args, n);
}

/* ---- the rules ---- */

/* One level deeper in the tree: false, with cel-go's error, past its limit (which also
 * bounds the recursion of every walk of the tree). The caller gives the level back. */
static bool deeper(parser *p)
{
    if (p->depth + 1 < KAPI_CEL_MAX_DEPTH) {
        p->depth++;
        return true;
    }
    if (!p->stop)
        add_issue(p, 0, false,
                  kapi_arena_printf(&p->ast->arena, "expression recursion limit exceeded: %d",
                                    KAPI_CEL_MAX_DEPTH));
    p->stop = true;
    return false;
}

static kapi_cel_expr *expr(parser *p);

/* An operand list of a growing size, for calls, lists and balanced chains. */
typedef struct vec {
    kapi_cel_expr **v;
    size_t n, cap;
} vec;

static void vec_push(vec *v, kapi_cel_expr *e)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 8;
        v->v = kapi_xrealloc(v->v, v->cap * sizeof(*v->v));
    }
    v->v[v->n++] = e;
}

/* exprList, up to the closing token (not taken); a trailing comma only where allowed. */
static void expr_list(parser *p, vec *out, cel_tok close, bool trailing_comma)
{
    if (tok(p)->type == close)
        return;
    for (;;) {
        vec_push(out, expr(p));
        if (p->stop || tok(p)->type != TOK_COMMA)
            return;
        if (trailing_comma && peek(p, 1) == close) {
            advance(p);
            return;
        }
        advance(p);
    }
}

/* The balanced tree of terms joined by ops (cel-go's balancer). */
static kapi_cel_expr *balanced(parser *p, const char *fn, kapi_cel_expr **terms, const int64_t *ids,
                               const size_t *offs, size_t lo, size_t hi)
{
    size_t mid = (lo + hi + 1) / 2;
    kapi_cel_expr *args[2];
    args[0] = mid == lo ? terms[mid] : balanced(p, fn, terms, ids, offs, lo, mid - 1);
    args[1] = mid == hi ? terms[mid + 1] : balanced(p, fn, terms, ids, offs, mid + 1, hi);
    return call_id(p, ids[mid], offs[mid], fn, NULL, args, 2);
}

typedef kapi_cel_expr *(*rule_fn)(parser *p);

/* conditionalOr / conditionalAnd: term (op term)*, balanced. */
static kapi_cel_expr *chain(parser *p, cel_tok op, const char *fn, rule_fn term)
{
    kapi_cel_expr *first = term(p);
    if (p->stop || tok(p)->type != op)
        return first;
    vec terms = {0};
    int64_t *ids = NULL;
    size_t *offs = NULL, nops = 0;
    vec_push(&terms, first);
    while (!p->stop && tok(p)->type == op) {
        size_t off = tok(p)->start;
        advance(p);
        vec_push(&terms, term(p));
        ids = kapi_xrealloc(ids, (nops + 1) * sizeof(*ids));
        offs = kapi_xrealloc(offs, (nops + 1) * sizeof(*offs));
        ids[nops] = next_id(p); /* after the term, as cel-go takes it */
        offs[nops++] = off;
    }
    kapi_cel_expr *e = balanced(p, fn, terms.v, ids, offs, 0, nops - 1);
    free(terms.v);
    free(ids);
    free(offs);
    return e;
}

static kapi_cel_expr *member(parser *p);

/* unary: member | '!'+ member | '-'+ member */
static kapi_cel_expr *unary(parser *p)
{
    cel_tok t = tok(p)->type;
    if ((t != TOK_NOT && t != TOK_MINUS) ||
        (t == TOK_MINUS && (peek(p, 1) == TOK_INT || peek(p, 1) == TOK_FLOAT)))
        return member(p); /* a '-' before a number is the literal's sign */
    size_t off = tok(p)->start, n = 0;
    while (tok(p)->type == t) {
        advance(p);
        n++;
    }
    if (n % 2 == 0)
        return member(p);
    int64_t id = next_id(p);
    kapi_cel_expr *m = member(p);
    return call_or_macro(p, id, off, t == TOK_NOT ? "!_" : "-_", NULL, &m, 1);
}

/* The left-associative binary levels, loosest first (relation and calc in CEL.g4, calc's
 * products binding tighter than its sums), and their operators. */
enum { LEVEL_RELATION, LEVEL_SUM, LEVEL_PRODUCT, LEVEL_UNARY };

static const char *level_op(int level, cel_tok t)
{
    switch (t) {
    case TOK_LT:
        return level == LEVEL_RELATION ? "_<_" : NULL;
    case TOK_LE:
        return level == LEVEL_RELATION ? "_<=_" : NULL;
    case TOK_GE:
        return level == LEVEL_RELATION ? "_>=_" : NULL;
    case TOK_GT:
        return level == LEVEL_RELATION ? "_>_" : NULL;
    case TOK_EQ:
        return level == LEVEL_RELATION ? "_==_" : NULL;
    case TOK_NE:
        return level == LEVEL_RELATION ? "_!=_" : NULL;
    case TOK_IN:
        return level == LEVEL_RELATION ? "@in" : NULL;
    case TOK_PLUS:
        return level == LEVEL_SUM ? "_+_" : NULL;
    case TOK_MINUS:
        return level == LEVEL_SUM ? "_-_" : NULL;
    case TOK_STAR:
        return level == LEVEL_PRODUCT ? "_*_" : NULL;
    case TOK_SLASH:
        return level == LEVEL_PRODUCT ? "_/_" : NULL;
    case TOK_PERCENT:
        return level == LEVEL_PRODUCT ? "_%_" : NULL;
    default:
        return NULL;
    }
}

static kapi_cel_expr *binary(parser *p, int level)
{
    if (level == LEVEL_UNARY)
        return unary(p);
    kapi_cel_expr *lhs = binary(p, level + 1);
    const char *fn;
    int links = 0; /* each makes the tree deeper on the left */
    while (!p->stop && (fn = level_op(level, tok(p)->type)) != NULL && deeper(p)) {
        links++;
        size_t off = tok(p)->start;
        advance(p);
        int64_t id = next_id(p);
        kapi_cel_expr *args[2] = {lhs, binary(p, level + 1)};
        lhs = call_or_macro(p, id, off, fn, NULL, args, 2);
    }
    p->depth -= links;
    return lhs;
}

static kapi_cel_expr *relation(parser *p)
{
    return binary(p, LEVEL_RELATION);
}

static kapi_cel_expr *and_expr(parser *p)
{
    return chain(p, TOK_AND, "_&&_", relation);
}

static kapi_cel_expr *or_expr(parser *p)
{
    return chain(p, TOK_OR, "_||_", and_expr);
}

static kapi_cel_expr *expr(parser *p)
{
    if (p->stop)
        return error_node(p, tok(p)->start);
    if (!deeper(p))
        return error_node(p, tok(p)->start);
    kapi_cel_expr *e = or_expr(p);
    if (!p->stop && tok(p)->type == TOK_QUEST) {
        size_t off = tok(p)->start;
        advance(p);
        int64_t id = next_id(p);
        kapi_cel_expr *args[3] = {e, or_expr(p), NULL};
        expect(p, TOK_COLON);
        args[2] = expr(p);
        e = call_or_macro(p, id, off, "_?_:_", NULL, args, 3);
    }
    p->depth--;
    return e;
}

/* Go's strconv.ParseInt / ParseUint of text in base (no sign, no prefix), with neg. */
static bool parse_int(const char *text, size_t n, int base, bool neg, int64_t *out)
{
    uint64_t v = 0, limit = neg ? (uint64_t)1 << 63 : ((uint64_t)1 << 63) - 1;
    for (size_t i = 0; i < n; i++) {
        int d = text[i] <= '9' ? text[i] - '0' : (text[i] | 32) - 'a' + 10;
        if (v > (limit - (uint64_t)d) / (uint64_t)base)
            return false;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static bool parse_uint(const char *text, size_t n, int base, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t d = (uint64_t)(text[i] <= '9' ? text[i] - '0' : (text[i] | 32) - 'a' + 10);
        if (v > (UINT64_MAX - d) / (uint64_t)base)
            return false;
        v = v * (uint64_t)base + d;
    }
    *out = v;
    return true;
}

/* A literal at the current token (after any sign, whose offset is at). */
static kapi_cel_expr *literal(parser *p, size_t at, bool neg)
{
    const cel_token *t = tok(p);
    const char *s = p->src + t->start;
    kapi_cel_expr *e = NULL;
    switch (t->type) {
    case TOK_INT: {
        bool hex = t->len > 2 && s[1] == 'x';
        int64_t v;
        e = node(p, KAPI_CEL_INT, at);
        if (!parse_int(s + (hex ? 2 : 0), t->len - (hex ? 2 : 0), hex ? 16 : 10, neg, &v))
            report(p, at, "invalid int literal");
        else
            e->u.i = v;
        break;
    }
    case TOK_UINT: {
        bool hex = t->len > 3 && s[1] == 'x';
        uint64_t v;
        e = node(p, KAPI_CEL_UINT, at);
        if (!parse_uint(s + (hex ? 2 : 0), t->len - 1 - (hex ? 2 : 0), hex ? 16 : 10, &v))
            report(p, at, "invalid uint literal");
        else
            e->u.u = v;
        break;
    }
    case TOK_FLOAT: {
        char *txt = kapi_xprintf("%s%.*s", neg ? "-" : "", (int)t->len, s);
        errno = 0;
        double d = strtod(txt, NULL);
        free(txt);
        e = node(p, KAPI_CEL_DOUBLE, at);
        if (errno == ERANGE && isinf(d)) /* Go's ParseFloat: out of range */
            report(p, at, "invalid double literal");
        else
            e->u.d = d;
        break;
    }
    case TOK_STRING:
    case TOK_BYTES: {
        bool bytes = t->type == TOK_BYTES;
        kapi_buf b;
        kapi_buf_init(&b);
        e = node(p, bytes ? KAPI_CEL_BYTES : KAPI_CEL_STRING, at);
        const char *why = kapi_cel__unquote(s, t->len, bytes, &b);
        if (why)
            report(p, at, "%s", why);
        e->u.s.ptr = kapi_arena_strndup(&p->ast->arena, b.ptr, b.len);
        e->u.s.len = b.len;
        kapi_buf_dispose(&b);
        break;
    }
    case TOK_TRUE:
    case TOK_FALSE:
        e = node(p, KAPI_CEL_BOOL, at);
        e->u.b = t->type == TOK_TRUE;
        break;
    case TOK_NULL:
        e = node(p, KAPI_CEL_NULL, at);
        break;
    default:
        syntax_error(p, primary_set);
        return error_node(p, t->start);
    }
    advance(p);
    return e;
}

static const char *const reserved[] = {
    "as",     "break",  "const", "continue", "else",  "false",   "for",       "function",
    "if",     "import", "in",    "let",      "loop",  "package", "namespace", "null",
    "return", "true",   "var",   "void",     "while", NULL};

/* '{' entries '}' of a map (message NULL) or of a message: for each, its ':' id first. */
static kapi_cel_expr *entries(parser *p, kapi_cel_expr *e, bool message)
{
    kapi_cel_entry *v = NULL;
    size_t n = 0;
    while (!p->stop && tok(p)->type != TOK_RBRACE) {
        kapi_cel_entry en = {0};
        if (message) {
            if (tok(p)->type != TOK_IDENT) {
                syntax_error(p, "IDENTIFIER");
                break;
            }
            en.field = text(p, tok(p));
            advance(p);
            if (!expect(p, TOK_COLON))
                break;
            en.id = next_id(p);
        } else { /* cel-go takes the ':' id before it visits the key */
            en.id = next_id(p);
            en.key = expr(p);
            if (!expect(p, TOK_COLON))
                break;
        }
        en.value = expr(p);
        v = kapi_xrealloc(v, (n + 1) * sizeof(*v));
        v[n++] = en;
        if (p->stop || tok(p)->type != TOK_COMMA)
            break;
        advance(p); /* a trailing comma is allowed */
    }
    expect(p, TOK_RBRACE);
    e->u.map.entries = kapi_arena_alloc(&p->ast->arena, (n ? n : 1) * sizeof(*v));
    if (n)
        memcpy(e->u.map.entries, v, n * sizeof(*v));
    e->u.map.n = n;
    free(v);
    return e;
}

static kapi_cel_expr *primary(parser *p)
{
    const cel_token *t = tok(p);
    size_t start = t->start;
    switch (t->type) {
    case TOK_DOT:
    case TOK_IDENT: {
        bool dot = t->type == TOK_DOT;
        if (dot) {
            advance(p);
            if (tok(p)->type != TOK_IDENT) {
                syntax_error(p, "IDENTIFIER");
                return error_node(p, start);
            }
        }
        const cel_token *id = tok(p);
        const char *name = text(p, id);
        advance(p);
        if (kapi_cstr_in(name, reserved)) {
            report(p, start, "reserved identifier: %s", name);
            if (tok(p)->type == TOK_LPAREN) { /* its arguments are parsed, never visited */
                advance(p);
                vec args = {0};
                p->mute++;
                expr_list(p, &args, TOK_RPAREN, false);
                p->mute--;
                free(args.v);
                expect(p, TOK_RPAREN);
            }
            return error_node(p, start);
        }
        if (dot)
            name = kapi_arena_printf(&p->ast->arena, ".%s", name);
        if (tok(p)->type != TOK_LPAREN)
            return ident(p, id->start, name);
        size_t open = tok(p)->start;
        advance(p);
        int64_t cid = next_id(p);
        vec args = {0};
        expr_list(p, &args, TOK_RPAREN, false);
        expect(p, TOK_RPAREN);
        kapi_cel_expr *e = call_or_macro(p, cid, open, name, NULL, args.v, args.n);
        free(args.v);
        return e;
    }
    case TOK_LPAREN: {
        advance(p);
        kapi_cel_expr *e = expr(p);
        expect(p, TOK_RPAREN);
        return e;
    }
    case TOK_LBRACK: {
        kapi_cel_expr *e = node(p, KAPI_CEL_LIST, start);
        advance(p);
        vec elems = {0};
        expr_list(p, &elems, TOK_RBRACK, true);
        expect(p, TOK_RBRACK);
        e->u.list.elems = args_copy(p, elems.v, elems.n);
        e->u.list.n = elems.n;
        free(elems.v);
        return e;
    }
    case TOK_LBRACE: {
        kapi_cel_expr *e = node(p, KAPI_CEL_MAP, start);
        advance(p);
        return entries(p, e, false);
    }
    case TOK_MINUS:
        if (peek(p, 1) == TOK_INT || peek(p, 1) == TOK_FLOAT) {
            advance(p);
            return literal(p, start, true);
        }
        syntax_error(p, primary_set);
        return error_node(p, start);
    default:
        return literal(p, start, false);
    }
}

/* The qualified name a message's type expression spells (a.b.C), or NULL. */
static const char *qualified_name(parser *p, const kapi_cel_expr *e)
{
    if (e->kind == KAPI_CEL_IDENT)
        return e->u.ident;
    if (e->kind == KAPI_CEL_SELECT && !e->u.select.test_only) {
        const char *prefix = qualified_name(p, e->u.select.operand);
        return prefix ? kapi_arena_printf(&p->ast->arena, "%s.%s", prefix, e->u.select.field)
                      : NULL;
    }
    return NULL;
}

static kapi_cel_expr *member(parser *p)
{
    kapi_cel_expr *e = primary(p);
    int links = 0; /* each select, call or index makes the tree deeper */
    while (!p->stop &&
           (tok(p)->type == TOK_DOT || tok(p)->type == TOK_LBRACK || tok(p)->type == TOK_LBRACE) &&
           deeper(p)) {
        links++;
        const cel_token *t = tok(p);
        size_t at = t->start;
        if (t->type == TOK_DOT) {
            advance(p);
            if (tok(p)->type != TOK_IDENT) {
                syntax_error(p, "IDENTIFIER");
                break;
            }
            const char *field = text(p, tok(p));
            advance(p);
            if (tok(p)->type == TOK_LPAREN) {
                size_t open = tok(p)->start;
                advance(p);
                int64_t id = next_id(p);
                vec args = {0};
                expr_list(p, &args, TOK_RPAREN, false);
                expect(p, TOK_RPAREN);
                e = call_or_macro(p, id, open, field, e, args.v, args.n);
                free(args.v);
            } else {
                kapi_cel_expr *s = node(p, KAPI_CEL_SELECT, at);
                s->u.select.operand = e;
                s->u.select.field = field;
                e = s;
            }
        } else if (t->type == TOK_LBRACK) {
            advance(p);
            int64_t id = next_id(p);
            kapi_cel_expr *args[2] = {e, expr(p)};
            expect(p, TOK_RBRACK);
            e = call_or_macro(p, id, at, "_[_]", NULL, args, 2);
        } else { /* '{': a message */
            advance(p);
            int64_t id = next_id(p);
            const char *name = qualified_name(p, e);
            if (!name)
                report(p, e->offset, "expected a qualified name");
            kapi_cel_expr *m = node_id(p, KAPI_CEL_STRUCT, at, id);
            m->u.map.message = name ? name : "";
            e = entries(p, m, true);
        }
    }
    p->depth -= links;
    return e;
}

/* ---- entry ---- */

void kapi_cel__add_issues(kapi_cel_ast *a, const kapi_cel_issue *issues, size_t n)
{
    size_t total = a->nissues + n;
    kapi_cel_issue *all = kapi_arena_alloc(&a->arena, (total ? total : 1) * sizeof(*all));
    if (a->nissues)
        memcpy(all, a->issues, a->nissues * sizeof(*all));
    if (n)
        memcpy(all + a->nissues, issues, n * sizeof(*all));
    for (size_t i = 1; i < total; i++) /* stable insertion sort: few errors */
        for (size_t j = i; j > 0; j--) {
            kapi_cel_issue *x = &all[j - 1], *y = &all[j];
            if (x->line < y->line || (x->line == y->line && x->column <= y->column))
                break;
            kapi_cel_issue t = *x;
            *x = *y;
            *y = t;
        }
    a->issues = all;
    a->nissues = total;
}

/* Moves the errors into the tree. */
static void finish(parser *p)
{
    kapi_cel__add_issues(p->ast, p->issues, p->nissues);
    free(p->issues);
}

kapi_cel_ast *kapi_cel_parse(const char *src, size_t len)
{
    kapi_cel_ast *ast = kapi_xcalloc(1, sizeof(*ast));
    kapi_arena_init(&ast->arena);
    ast->next_id = 1;
    ast->source = kapi_arena_strndup(&ast->arena, src, len);
    ast->source_len = len;
    parser p = {.ast = ast, .src = src, .len = len};
    size_t points = 0;
    for (size_t i = 0; i < len; i++)
        points += ((unsigned char)src[i] & 0xC0) != 0x80;
    if (points > KAPI_CEL_MAX_SOURCE) {
        char msg[128];
        snprintf(msg, sizeof(msg), "expression code point size exceeds limit: size: %zu, limit %u",
                 points, KAPI_CEL_MAX_SOURCE);
        add_issue(&p, 0, false, msg);
        finish(&p);
        return ast;
    }
    cel_lexer lx = {.src = src, .len = len, .report = lex_report, .ctx = &p};
    size_t cap = 16;
    p.toks = kapi_xmalloc(cap * sizeof(*p.toks));
    for (;;) {
        if (p.ntoks == cap)
            p.toks = kapi_xrealloc(p.toks, (cap *= 2) * sizeof(*p.toks));
        p.toks[p.ntoks] = kapi_cel__next(&lx);
        if (p.toks[p.ntoks++].type == TOK_EOF)
            break;
    }
    kapi_cel_expr *root = expr(&p);
    if (!p.stop && tok(&p)->type != TOK_EOF) {
        char t[256];
        tok_text(&p, tok(&p), t, sizeof(t));
        syntax(&p, tok(&p)->start, "Syntax error: %s input %s expecting <EOF>",
               peek(&p, 1) == TOK_EOF ? "extraneous" : "mismatched", t);
    }
    free(p.toks);
    finish(&p);
    ast->root = ast->nissues ? NULL : root;
    if (ast->root)
        kapi_cel__plan(ast);
    return ast;
}

void kapi_cel_ast_free(kapi_cel_ast *ast)
{
    if (!ast)
        return;
    kapi_arena_dispose(&ast->arena);
    free(ast);
}
