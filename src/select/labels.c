/* select/labels: label selectors as k8s.io/apimachinery 1.26 (pkg/labels/selector.go)
 * reads and applies them: the text is cut into tokens first, then a recursive descent
 * over the tokens builds the requirements with Go's error texts, each requirement is
 * checked as NewRequirement checks it, and Requirement.Matches decides a match.
 *
 * NewRequirement also refuses operator and value-count combinations that the parser
 * cannot produce (an empty `in` set, two values for `=`, ...); only the checks a parsed
 * text can fail are made here: the int64 of `>` and `<`, and the label value rules.
 * A metav1.LabelSelector given as JSON is matched here too (kapi_labelsel_json_matches). */
#include "select/select.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec/json.h"
#include "schema/field.h"

typedef enum tok {
    T_END,
    T_IDENT,
    T_IN,
    T_NOTIN,
    T_NOT,
    T_EQ,
    T_DEQ,
    T_NE,
    T_GT,
    T_LT,
    T_OPEN,
    T_CLOSE,
    T_COMMA,
} tok;

typedef struct token {
    tok t;
    kapi_str lit; /* the token's text; empty for T_END */
} token;

/* The symbols, each before any of its prefixes: Go's lexer takes the longest. */
static const struct {
    const char *text;
    tok t;
} symbols[] = {
    {"==", T_DEQ}, {"!=", T_NE},  {"=", T_EQ},    {"!", T_NOT},   {">", T_GT},
    {"<", T_LT},   {"(", T_OPEN}, {")", T_CLOSE}, {",", T_COMMA},
};

/* The words the lexer makes operators; where a key or a value stands the parser reads
 * them as identifiers (`in in (notin)`). */
static const struct {
    const char *text;
    tok t;
} keywords[] = {{"in", T_IN}, {"notin", T_NOTIN}};

/* How a requirement compares. "=" and "==" match as "in" with one value, "!=" as
 * "notin": Requirement.Matches treats them alike. */
typedef enum op { OP_IN, OP_NOTIN, OP_EXISTS, OP_NOT_EXISTS, OP_GT, OP_LT } op;

/* The binary operators: the token, how it compares, and whether a set "(a,b)" follows
 * (else one value). */
static const struct {
    tok t;
    op op;
    bool set;
} operators[] = {
    {T_IN, OP_IN, true},     {T_NOTIN, OP_NOTIN, true}, {T_EQ, OP_IN, false}, {T_DEQ, OP_IN, false},
    {T_NE, OP_NOTIN, false}, {T_GT, OP_GT, false},      {T_LT, OP_LT, false},
};

typedef struct req {
    char *key;
    op op;
    char **values; /* sorted, distinct (Go's sets.String.List()) */
    size_t nvalues;
} req;

struct kapi_labelsel {
    req *reqs;
    size_t n;
};

typedef struct parser {
    token *v; /* every token of the text, T_END last */
    size_t n, pos;
    kapi_buf why; /* the error text */
    kapi_labelsel *sel;
} parser;

/* ---- lexer ---- */

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_symbol(char c)
{
    return c != '\0' && strchr("=!(),><", c) != NULL;
}

static tok word_kind(kapi_str w)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(keywords); i++)
        if (kapi_str_eqc(w, keywords[i].text))
            return keywords[i].t;
    return T_IDENT;
}

/* The token at s (blanks skipped). */
static token lex(const char *s)
{
    while (is_blank(*s))
        s++;
    token k = {T_END, {s, 0}};
    if (*s == '\0')
        return k;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(symbols) && is_symbol(*s); i++) {
        size_t n = strlen(symbols[i].text);
        if (strncmp(s, symbols[i].text, n) == 0)
            return (token){symbols[i].t, {s, n}};
    }
    while (s[k.lit.len] && !is_symbol(s[k.lit.len]) && !is_blank(s[k.lit.len]))
        k.lit.len++;
    k.t = word_kind(k.lit);
    return k;
}

static void scan(parser *p, const char *text)
{
    size_t cap = 8;
    p->v = kapi_xmalloc(cap * sizeof(*p->v));
    for (;;) {
        token k = lex(text);
        if (p->n == cap)
            p->v = kapi_xrealloc(p->v, (cap *= 2) * sizeof(*p->v));
        p->v[p->n++] = k;
        if (k.t == T_END)
            return;
        text = k.lit.ptr + k.lit.len;
    }
}

/* ---- parser ---- */

/* Records the parser's error text; returns false. */
static bool KAPI_PRINTF(2, 3) fail(parser *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kapi_buf_vprintf(&p->why, fmt, ap);
    va_end(ap);
    return false;
}

/* The kind of the next token; where a value may stand, "in" and "notin" are
 * identifiers. */
static tok peek(const parser *p, bool value, kapi_str *lit)
{
    tok t = p->v[p->pos].t;
    if (lit)
        *lit = p->v[p->pos].lit;
    return value && (t == T_IN || t == T_NOTIN) ? T_IDENT : t;
}

/* peek, then moves on (never past T_END). */
static tok take(parser *p, bool value, kapi_str *lit)
{
    tok t = peek(p, value, lit);
    if (p->pos + 1 < p->n)
        p->pos++;
    return t;
}

static void add_value(req *r, kapi_str v)
{
    r->values = kapi_xrealloc(r->values, (r->nvalues + 1) * sizeof(*r->values));
    r->values[r->nvalues++] = kapi_xstrndup(v.ptr, v.len);
}

static void req_dispose(req *r)
{
    for (size_t i = 0; i < r->nvalues; i++)
        free(r->values[i]);
    free(r->values);
    free(r->key);
}

/* Adds field.Invalid(path, v, <msgs joined by "; ">) to e when there are msgs. */
static void invalid_joined(kapi_error *e, const char *path, const char *v, const char **msgs,
                           size_t n)
{
    kapi_buf b;
    if (n == 0)
        return;
    kapi_buf_init(&b);
    for (size_t i = 0; i < n; i++)
        kapi_buf_printf(&b, "%s%s", i ? "; " : "", msgs[i]);
    kapi_field_invalid_str(e, path, v, "%s", b.ptr);
    kapi_buf_dispose(&b);
}

/* Moves the causes gathered in e to the error text as Go's aggregate renders them;
 * true when there were none. Frees e. */
static bool settle(parser *p, kapi_error *e)
{
    bool ok = e->ncauses == 0;
    kapi_field_aggregate(&p->why, e);
    kapi_error_free(e);
    return ok;
}

/* strconv.ParseInt(s, 10, 64): an optional sign, then decimal digits, in range. */
static bool parse_int64(const char *s, long long *out)
{
    const char *d = s + (*s == '+' || *s == '-');
    char *end;
    if (*d == '\0' || strspn(d, "0123456789") != strlen(d))
        return false;
    errno = 0;
    *out = strtoll(s, &end, 10);
    return errno != ERANGE;
}

/* validateLabelKey as the parser calls it: with no path, which Go prints as "<nil>". */
static bool check_key(parser *p, const char *key)
{
    kapi_error *e = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%s", "");
    const char *msgs[KAPI_MSGS_MAX];
    invalid_joined(e, "<nil>", key, msgs, kapi_is_qualified_name(key, msgs));
    return settle(p, e);
}

/* NewRequirement's value checks: for > and < each value an int64 (at values[i]), then
 * every value a label value (at values[i][key]). */
static bool check_values(parser *p, const req *r)
{
    kapi_error *e = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%s", "");
    const char *msgs[KAPI_MSGS_MAX];
    long long n;
    for (size_t i = 0; i < r->nvalues && (r->op == OP_GT || r->op == OP_LT); i++) {
        if (parse_int64(r->values[i], &n))
            continue;
        char *path = kapi_xprintf("values[%zu]", i);
        kapi_field_invalid_str(e, path, r->values[i],
                               "for 'Gt', 'Lt' operators, the value must be an integer");
        free(path);
    }
    for (size_t i = 0; i < r->nvalues; i++) {
        char *path = kapi_xprintf("values[%zu][%s]", i, r->key);
        invalid_joined(e, path, r->values[i], msgs, kapi_is_label_value(r->values[i], msgs));
        free(path);
    }
    return settle(p, e);
}

/* parseKeyAndInferOperator: [!]KEY; *unary when no operator follows. */
static bool parse_key(parser *p, req *r, bool *unary)
{
    kapi_str lit;
    tok t = take(p, true, &lit);
    bool not = t == T_NOT;
    if (not )
        t = take(p, true, &lit);
    if (t != T_IDENT)
        return fail(p, "found '%.*s', expected: identifier", KAPI_STR_FMT(lit));
    r->key = kapi_xstrndup(lit.ptr, lit.len);
    if (!check_key(p, r->key))
        return false;
    t = peek(p, true, NULL);
    *unary = not || t == T_END || t == T_COMMA;
    r->op = not ? OP_NOT_EXISTS : OP_EXISTS;
    return true;
}

/* parseOperator: the index in operators[] of the next token. */
static bool parse_operator(parser *p, size_t *out)
{
    kapi_str lit;
    tok t = take(p, false, &lit);
    for (*out = 0; *out < KAPI_ARRAY_LEN(operators); (*out)++)
        if (operators[*out].t == t)
            return true;
    return fail(p, "found '%.*s', expected: in, notin, =, ==, !=, gt, lt", KAPI_STR_FMT(lit));
}

/* parseIdentifiersList: values and commas up to ")", which is left for the caller; an
 * empty item (a leading, doubled or trailing comma) is the value "". */
static bool parse_list(parser *p, req *r)
{
    kapi_str lit;
    for (;;) {
        tok t = take(p, true, &lit);
        if (t != T_IDENT && t != T_COMMA)
            return fail(p, "found '%.*s', expected: ',', or identifier", KAPI_STR_FMT(lit));
        if (t == T_IDENT) {
            add_value(r, lit);
            t = peek(p, true, &lit);
            if (t == T_CLOSE)
                return true;
            if (t != T_COMMA)
                return fail(p, "found '%.*s', expected: ',' or ')'", KAPI_STR_FMT(lit));
            continue;
        }
        if (r->nvalues == 0)
            add_value(r, KAPI_STR(""));
        t = peek(p, true, NULL);
        if (t == T_CLOSE || t == T_COMMA)
            add_value(r, KAPI_STR(""));
        if (t == T_CLOSE)
            return true;
        if (t == T_COMMA)
            take(p, true, NULL);
    }
}

/* parseValues: "(" list ")"; "()" is the one value "". */
static bool parse_set(parser *p, req *r)
{
    kapi_str lit;
    if (take(p, true, &lit) != T_OPEN)
        return fail(p, "found '%.*s' expected: '('", KAPI_STR_FMT(lit));
    tok t = peek(p, true, &lit);
    if (t == T_CLOSE) {
        take(p, true, NULL);
        add_value(r, KAPI_STR(""));
        return true;
    }
    if (t != T_IDENT && t != T_COMMA)
        return fail(p, "found '%.*s', expected: ',', ')' or identifier", KAPI_STR_FMT(lit));
    if (!parse_list(p, r))
        return false;
    take(p, true, NULL); /* the ")" parse_list stopped at */
    return true;
}

/* parseExactValue: one value, "" when the requirement ends here. */
static bool parse_exact(parser *p, req *r)
{
    kapi_str lit;
    tok t = peek(p, true, NULL);
    if (t == T_END || t == T_COMMA) {
        add_value(r, KAPI_STR(""));
        return true;
    }
    if (take(p, true, &lit) != T_IDENT)
        return fail(p, "found '%.*s', expected: identifier", KAPI_STR_FMT(lit));
    add_value(r, lit);
    return true;
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts the values and drops repeats, as a Go sets.String gives them. */
static void settle_values(req *r)
{
    size_t n = 0;
    qsort(r->values, r->nvalues, sizeof(*r->values), cmp_cstr);
    for (size_t i = 0; i < r->nvalues; i++) {
        if (n > 0 && strcmp(r->values[n - 1], r->values[i]) == 0)
            free(r->values[i]);
        else
            r->values[n++] = r->values[i];
    }
    r->nvalues = n;
}

/* The operator and its values, after a key that has one. */
static bool parse_binary(parser *p, req *r)
{
    size_t o;
    if (!parse_operator(p, &o))
        return false;
    r->op = operators[o].op;
    if (!(operators[o].set ? parse_set(p, r) : parse_exact(p, r)))
        return false;
    settle_values(r);
    return true;
}

/* parseRequirement: key, operator and values, checked; appended to the selector. */
static bool parse_requirement(parser *p)
{
    req r = {0};
    bool unary = false;
    if (!parse_key(p, &r, &unary) || !(unary || parse_binary(p, &r)) || !check_values(p, &r)) {
        req_dispose(&r);
        return false;
    }
    kapi_labelsel *s = p->sel;
    s->reqs = kapi_xrealloc(s->reqs, (s->n + 1) * sizeof(*s->reqs));
    s->reqs[s->n++] = r;
    return true;
}

/* parse: requirements separated by commas, up to the end. */
static bool parse(parser *p)
{
    kapi_str lit;
    for (;;) {
        tok t = peek(p, true, &lit);
        if (t == T_END)
            return true;
        if (t != T_IDENT && t != T_NOT)
            return fail(p, "found '%.*s', expected: !, identifier, or 'end of string'",
                        KAPI_STR_FMT(lit));
        kapi_buf_puts(&p->why, "unable to parse requirement: ");
        if (!parse_requirement(p))
            return false;
        kapi_buf_clear(&p->why);
        t = take(p, true, &lit);
        if (t == T_END)
            return true;
        if (t != T_COMMA)
            return fail(p, "found '%.*s', expected: ',' or 'end of string'", KAPI_STR_FMT(lit));
        t = peek(p, true, &lit);
        if (t != T_IDENT && t != T_NOT)
            return fail(p, "found '%.*s', expected: identifier after ','", KAPI_STR_FMT(lit));
    }
}

kapi_error *kapi_labelsel_parse(kapi_labelsel **out, const char *text)
{
    parser p = {0};
    kapi_error *err = NULL;
    kapi_buf_init(&p.why);
    p.sel = kapi_xcalloc(1, sizeof(*p.sel));
    scan(&p, text ? text : "");
    if (!parse(&p)) {
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%s", p.why.ptr);
        kapi_labelsel_free(p.sel);
        p.sel = NULL;
    }
    free(p.v);
    kapi_buf_dispose(&p.why);
    *out = p.sel;
    return err;
}

/* ---- matching ---- */

static bool has_value(const req *r, const char *v)
{
    for (size_t i = 0; i < r->nvalues; i++)
        if (strcmp(r->values[i], v) == 0)
            return true;
    return false;
}

/* > and <: both sides int64s (a label value that is not one never matches). */
static bool compare(const req *r, const char *v)
{
    long long have, want;
    if (!parse_int64(v, &have) || !parse_int64(r->values[0], &want))
        return false;
    return r->op == OP_GT ? have > want : have < want;
}

/* Requirement.Matches; v is the label's value, NULL when the key is absent. */
static bool req_matches(const req *r, const char *v)
{
    switch (r->op) {
    case OP_IN:
        return v && has_value(r, v);
    case OP_NOTIN:
        return !v || !has_value(r, v);
    case OP_EXISTS:
        return v != NULL;
    case OP_NOT_EXISTS:
        return v == NULL;
    case OP_GT:
    case OP_LT:
        return v && compare(r, v);
    }
    return false;
}

bool kapi_labelsel_empty(const kapi_labelsel *s)
{
    return s->n == 0;
}

bool kapi_labelsel_matches(const kapi_labelsel *s, const json_t *labels)
{
    for (size_t i = 0; i < s->n; i++) {
        const json_t *v = json_object_get(labels, s->reqs[i].key);
        const char *text = v ? json_string_value(v) : NULL;
        if (!req_matches(&s->reqs[i], v && !text ? "" : text))
            return false;
    }
    return true;
}

void kapi_labelsel_free(kapi_labelsel *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        req_dispose(&s->reqs[i]);
    free(s->reqs);
    free(s);
}

bool kapi_labelsel_json_matches(const json_t *sel, const json_t *labels)
{
    const char *k;
    json_t *v, *e;
    size_t i;
    if (!json_is_object(sel))
        return false;
    json_object_foreach((json_t *)json_object_get(sel, "matchLabels"), k, v)
    {
        const json_t *have = json_object_get(labels, k);
        if (!json_is_string(have) || !json_equal((json_t *)have, v))
            return false;
    }
    json_array_foreach(json_object_get(sel, "matchExpressions"), i, e)
    {
        const char *oper = json_string_value(json_object_get(e, "operator"));
        const char *key = json_string_value(json_object_get(e, "key"));
        const json_t *have = key ? json_object_get(labels, key) : NULL;
        bool in = kapi_json_array_has_string(json_object_get(e, "values"), json_string_value(have));
        bool holds = !oper                               ? false
                     : strcmp(oper, "In") == 0           ? in
                     : strcmp(oper, "NotIn") == 0        ? !in
                     : strcmp(oper, "Exists") == 0       ? have != NULL
                     : strcmp(oper, "DoesNotExist") == 0 ? have == NULL
                                                         : false;
        if (!holds)
            return false;
    }
    return true;
}
