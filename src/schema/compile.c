/*
 * schema/compile: JSON schemas into kapi_schema trees.
 *
 * A set's definitions are allocated first and filled afterwards, so that a $ref may
 * point at any definition, itself included (JSONSchemaProps is recursive). Every node
 * and string lives in the arena of its set or root; the JSON they came from is kept
 * alive by the same owner.
 */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "schema/schema.h"
#include "schema/schema_int.h"

typedef struct defaulter_entry {
    const char *name;
    kapi_schema_defaulter_fn fn;
} defaulter_entry;

struct kapi_schema_set {
    kapi_arena arena;
    json_t *defs; /* name → schema JSON, merged from every kapi_schema_set_add */
    /* Definitions by name, sorted after compile for bsearch. */
    kapi_schema **nodes;
    size_t nnodes;
    defaulter_entry *defaulters;
    size_t ndefaulters;
};

struct kapi_schema_root {
    kapi_arena arena;
    json_t *src;
    const kapi_schema *node;
};

typedef struct compiler {
    kapi_arena *arena;
    const kapi_schema_set *set; /* NULL for a standalone schema: $ref is an error */
    kapi_error *err;
} compiler;

static kapi_schema *node_of(compiler *c, const json_t *j, const char *path);

static kapi_error *compile_error(const char *path, const char *what)
{
    return kapi_error_new(KAPI_STATUS_INVALID, "%s: %s", *path ? path : "<root>", what);
}

static void fail(compiler *c, const char *path, const char *what)
{
    if (!c->err)
        c->err = compile_error(path, what);
}

static const char *child_path(compiler *c, const char *path, const char *key)
{
    return kapi_arena_printf(c->arena, "%s%s%s", path, *path ? "." : "", key);
}

static const char *dup_str(compiler *c, const json_t *v)
{
    const char *s = json_string_value(v);
    return s ? kapi_arena_strdup(c->arena, s) : NULL;
}

static const char *const *str_list(compiler *c, const json_t *arr, const char *path)
{
    if (!arr)
        return NULL;
    if (!json_is_array(arr)) {
        fail(c, path, "must be an array of strings");
        return NULL;
    }
    const char **out = kapi_arena_alloc(c->arena, (json_array_size(arr) + 1) * sizeof(*out));
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (!json_is_string(v)) {
            fail(c, path, "must be an array of strings");
            return NULL;
        }
        out[i] = kapi_arena_strdup(c->arena, json_string_value(v));
    }
    return out;
}

static unsigned type_bit(const char *t)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {
        {"object", KAPI_SCHEMA_OBJECT}, {"array", KAPI_SCHEMA_ARRAY},
        {"string", KAPI_SCHEMA_STRING}, {"integer", KAPI_SCHEMA_INTEGER},
        {"number", KAPI_SCHEMA_NUMBER}, {"boolean", KAPI_SCHEMA_BOOLEAN},
        {"null", KAPI_SCHEMA_NULL},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(names); i++)
        if (strcmp(t, names[i].name) == 0)
            return names[i].bit;
    return 0;
}

static void compile_types(compiler *c, kapi_schema *n, const json_t *t, const char *path)
{
    if (!t)
        return;
    if (json_is_string(t)) {
        n->types = type_bit(json_string_value(t));
        if (!n->types)
            fail(c, path, "unknown type");
        return;
    }
    size_t i;
    json_t *v;
    if (!json_is_array(t)) {
        fail(c, path, "type must be a string or an array of strings");
        return;
    }
    json_array_foreach(t, i, v)
    {
        unsigned b = json_is_string(v) ? type_bit(json_string_value(v)) : 0;
        if (!b) {
            fail(c, path, "unknown type");
            return;
        }
        n->types |= b;
    }
}

static int64_t int_kw(compiler *c, const json_t *j, const char *key, const char *path)
{
    json_t *v = json_object_get(j, key);
    if (!v)
        return -1;
    if (json_is_integer(v) && json_integer_value(v) >= 0)
        return json_integer_value(v);
    if (json_is_real(v) && json_real_value(v) >= 0 &&
        json_real_value(v) == floor(json_real_value(v)))
        return (int64_t)json_real_value(v);
    fail(c, child_path(c, path, key), "must be a non-negative integer");
    return -1;
}

static void bound(compiler *c, const json_t *j, const char *key, const char *excl,
                  kapi_schema_bound *b, const char *path)
{
    json_t *v = json_object_get(j, key);
    if (!v)
        return;
    if (!json_is_number(v)) {
        fail(c, child_path(c, path, key), "must be a number");
        return;
    }
    b->set = true;
    b->value = json_number_value(v);
    b->exclusive = json_is_true(json_object_get(j, excl));
}

/* ---- patterns: Go's RE2 syntax as glibc POSIX extended expressions ----
 *
 * Custom resources match patterns with Go's regexp; kapi compiles them with regcomp in a
 * UTF-8 locale (so that '.' and classes match characters, not bytes) after translating
 * RE2 syntax: \d \w \s and their negations (ASCII, as in RE2), escapes inside brackets
 * ([a-z\-\.]), [[:alpha:]] (ASCII), '.' without newline, (?:...), (?P<name>...), lazy
 * quantifiers (greedy: only whether a match exists matters), \A \z, \x{..}, octal, \Q..\E,
 * and leading flags (?i) (?s) (?m) (?U). Unicode classes (\pL) are not supported: the
 * schema does not compile. Only existence of a match is ever asked (REG_NOSUB). */

static locale_t regex_locale;
static pthread_once_t regex_locale_once = PTHREAD_ONCE_INIT;

static void regex_locale_init(void)
{
    regex_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

locale_t kapi_schema__regex_locale_enter(void)
{
    pthread_once(&regex_locale_once, regex_locale_init);
    return regex_locale ? uselocale(regex_locale) : (locale_t)0;
}

void kapi_schema__regex_locale_leave(locale_t old)
{
    if (old)
        uselocale(old);
}

typedef struct crange {
    uint32_t lo, hi;
} crange;

typedef struct rx {
    const char *p;
    kapi_buf out;
    const char *err;
    bool dotall;
    crange *r; /* the class being built */
    size_t n, cap;
} rx;

static void rx_fail(rx *x, const char *why)
{
    if (!x->err)
        x->err = why;
}

static void put_utf8(kapi_buf *b, uint32_t c)
{
    if (c < 0x80) {
        kapi_buf_putc(b, (char)c);
    } else if (c < 0x800) {
        kapi_buf_putc(b, (char)(0xC0 | c >> 6));
        kapi_buf_putc(b, (char)(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        kapi_buf_putc(b, (char)(0xE0 | c >> 12));
        kapi_buf_putc(b, (char)(0x80 | ((c >> 6) & 0x3F)));
        kapi_buf_putc(b, (char)(0x80 | (c & 0x3F)));
    } else {
        kapi_buf_putc(b, (char)(0xF0 | c >> 18));
        kapi_buf_putc(b, (char)(0x80 | ((c >> 12) & 0x3F)));
        kapi_buf_putc(b, (char)(0x80 | ((c >> 6) & 0x3F)));
        kapi_buf_putc(b, (char)(0x80 | (c & 0x3F)));
    }
}

static void add_range(rx *x, uint32_t lo, uint32_t hi)
{
    if (lo == 0)
        lo = 1; /* NUL cannot appear in a C pattern (nor, in practice, in a value) */
    if (lo > hi)
        return;
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 16;
        x->r = kapi_xrealloc(x->r, x->cap * sizeof(*x->r));
    }
    x->r[x->n++] = (crange){lo, hi};
}

/* The ASCII sets of RE2's \d \s \w and [[:name:]]; upper case (or ^) negates. */
static bool add_named(rx *x, const char *name, size_t len, bool negate)
{
    static const struct {
        const char *name;
        const char *ranges; /* pairs of lo, hi */
    } sets[] = {
        {"d", "09"},           {"s", "\t\n\f\f\r\r  "},
        {"w", "09AZ__az"},     {"alnum", "09AZaz"},
        {"alpha", "AZaz"},     {"ascii", "\x01\x7f"},
        {"blank", "\t\t  "},   {"cntrl", "\x01\x1f\x7f\x7f"},
        {"digit", "09"},       {"graph", "!~"},
        {"lower", "az"},       {"print", " ~"},
        {"punct", "!/:@[`{~"}, {"space", "\t\r  "},
        {"upper", "AZ"},       {"word", "09AZ__az"},
        {"xdigit", "09AFaf"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(sets); i++) {
        if (strlen(sets[i].name) != len || strncmp(sets[i].name, name, len) != 0)
            continue;
        const unsigned char *r = (const unsigned char *)sets[i].ranges;
        uint32_t next = 1;
        for (; *r; r += 2) {
            if (negate)
                add_range(x, next, r[0] - 1u);
            else
                add_range(x, r[0], r[1]);
            next = r[1] + 1u;
        }
        if (negate)
            add_range(x, next, 0x10FFFF);
        return true;
    }
    return false;
}

/* One code point of the pattern (after a backslash when esc). */
static uint32_t rx_char(rx *x)
{
    uint32_t c;
    x->p += kapi_schema__utf8_decode(x->p, strnlen(x->p, 4), &c);
    return c;
}

/* An escape that stands for one character: \n \t ... \x41 \x{263a} \101 \. ; 0 after an
 * error. */
static uint32_t rx_escape_char(rx *x, char e)
{
    static const char ctl[] = "a\ab\bf\fn\nr\rt\tv\v";
    const char *k = e ? strchr(ctl, e) : NULL;
    if (k && (k - ctl) % 2 == 0)
        return (unsigned char)k[1];
    if (e == 'x') {
        bool brace = *x->p == '{';
        const char *q = x->p + brace;
        uint32_t v = 0;
        size_t digits = 0;
        for (; isxdigit((unsigned char)*q) && (brace || digits < 2) && v <= 0x10FFFF; q++) {
            v = v * 16 + (uint32_t)(isdigit((unsigned char)*q) ? *q - '0' : (*q | 0x20) - 'a' + 10);
            digits++;
        }
        if (!digits || (brace ? *q != '}' : digits != 2) || v > 0x10FFFF) {
            rx_fail(x, "a bad \\x escape");
            return 0;
        }
        x->p = q + brace;
        return v;
    }
    if (e >= '0' && e <= '7' && (e == '0' || (*x->p >= '0' && *x->p <= '7'))) {
        uint32_t v = (uint32_t)(e - '0');
        for (int i = 0; i < 2 && *x->p >= '0' && *x->p <= '7'; i++)
            v = v * 8 + (uint32_t)(*x->p++ - '0');
        return v;
    }
    if (e && (unsigned char)e < 0x80 && !isalnum((unsigned char)e))
        return (unsigned char)e; /* escaped punctuation is itself */
    rx_fail(x, e == 'p' || e == 'P' ? "Unicode classes (\\p)" : "an escape sequence");
    return 0;
}

/* Appends the class x->r[0..n) as a bracket expression. */
static int crange_cmp(const void *a, const void *b)
{
    const crange *p = a, *q = b;
    return p->lo < q->lo ? -1 : p->lo > q->lo;
}

/* lo-hi as a POSIX range, or one or two characters. */
static void put_sub(kapi_buf *b, uint32_t lo, uint32_t hi)
{
    if (lo > hi)
        return;
    put_utf8(b, lo);
    if (hi > lo + 1)
        kapi_buf_putc(b, '-');
    if (hi > lo)
        put_utf8(b, hi);
}

/* Appends the class x->r[0..n) as a bracket expression. The characters a POSIX bracket
 * treats specially (] ^ - [) are taken out of the ranges and put where they are
 * literal: ] first, [ and ^ after the rest, - last. */
static void put_class(rx *x, bool negate)
{
    static const char specials[] = "-[]^"; /* ascending */
    bool has[4] = {false};
    kapi_buf mid;
    qsort(x->r, x->n, sizeof(*x->r), crange_cmp);
    kapi_buf_init(&mid);
    for (size_t i = 0; i < x->n; i++) {
        uint32_t lo = x->r[i].lo, hi = x->r[i].hi;
        if (i + 1 < x->n && x->r[i + 1].lo <= hi + 1) { /* overlaps the next: merge */
            x->r[i + 1].lo = lo;
            x->r[i + 1].hi = hi > x->r[i + 1].hi ? hi : x->r[i + 1].hi;
            continue;
        }
        for (size_t k = 0; k < 4; k++) {
            uint32_t sp = (unsigned char)specials[k];
            if (sp < lo || sp > hi)
                continue;
            has[k] = true;
            put_sub(&mid, lo, sp - 1);
            lo = sp + 1;
        }
        put_sub(&mid, lo, hi);
    }
    bool any = mid.len || has[0] || has[1] || has[2] || has[3];
    if (!any) {
        rx_fail(x, "an empty class");
    } else if (!negate && !mid.len && !has[0] && !has[1] && !has[2]) {
        kapi_buf_puts(&x->out, "\\^"); /* just ^ */
    } else {
        bool dash_first = !negate && !has[2] && !mid.len && !has[1]; /* [-^] */
        kapi_buf_puts(&x->out, negate ? "[^" : "[");
        kapi_buf_puts(&x->out, dash_first && has[0] ? "-" : "");
        kapi_buf_puts(&x->out, has[2] ? "]" : "");
        kapi_buf_put(&x->out, mid.ptr, mid.len);
        kapi_buf_puts(&x->out, has[1] ? "[" : "");
        kapi_buf_puts(&x->out, has[3] ? "^" : "");
        kapi_buf_puts(&x->out, has[0] && !dash_first ? "-" : "");
        kapi_buf_putc(&x->out, ']');
    }
    kapi_buf_dispose(&mid);
    x->n = 0;
}

/* One item of a bracket class: a char (*lo == *hi), or a named set (returns false). */
static bool rx_class_item(rx *x, uint32_t *c)
{
    if (x->p[0] == '[' && x->p[1] == ':') {
        const char *end = strstr(x->p + 2, ":]");
        bool neg = x->p[2] == '^';
        const char *name = x->p + 2 + neg;
        if (!end || !add_named(x, name, (size_t)(end - name), neg))
            rx_fail(x, "an unknown [:class:]");
        x->p = end ? end + 2 : x->p + 2;
        return false;
    }
    if (*x->p != '\\') {
        *c = rx_char(x);
        return true;
    }
    char e = x->p[1];
    x->p += e ? 2 : 1;
    if (e && strchr("dDsSwW", e)) {
        char lower = (char)tolower((unsigned char)e);
        add_named(x, &lower, 1, e != lower);
        return false;
    }
    *c = rx_escape_char(x, e);
    return true;
}

/* [...] as RE2 reads it: a leading ] is literal, a - that cannot make a range too. */
static void rx_class(rx *x)
{
    bool negate = *x->p == '^';
    x->p += negate;
    bool first = true;
    while (!x->err && (first || *x->p != ']')) {
        uint32_t lo, hi;
        if (!*x->p) {
            rx_fail(x, "a missing ]");
            break;
        }
        first = false;
        if (!rx_class_item(x, &lo))
            continue;
        hi = lo;
        if (x->p[0] == '-' && x->p[1] && x->p[1] != ']') {
            x->p++;
            if (!rx_class_item(x, &hi) || hi < lo)
                rx_fail(x, "a bad range");
        }
        add_range(x, lo, hi);
    }
    x->p++;
    put_class(x, negate);
}

/* A literal character outside brackets. */
static void put_literal(rx *x, uint32_t c)
{
    if (c == '{' || c == '}')
        kapi_buf_printf(&x->out, "[%c]", (char)c);
    else if (c && c < 0x80 && strchr(".[]()*+?|^$\\", (int)c))
        kapi_buf_printf(&x->out, "\\%c", (char)c);
    else if (c == 0)
        rx_fail(x, "a NUL character");
    else
        put_utf8(&x->out, c);
}

static void rx_backslash(rx *x)
{
    char e = x->p[1];
    x->p += e ? 2 : 1;
    if (e && strchr("dDsSwW", e)) {
        char lower = (char)tolower((unsigned char)e);
        add_named(x, &lower, 1, e != lower);
        put_class(x, false);
    } else if (e == 'b' || e == 'B') {
        kapi_buf_printf(&x->out, "\\%c", e);
    } else if (e == 'A' || e == 'z') {
        kapi_buf_putc(&x->out, e == 'A' ? '^' : '$');
    } else if (e == 'Q') {
        const char *end = strstr(x->p, "\\E");
        const char *stop = end ? end : x->p + strlen(x->p);
        while (x->p < stop)
            put_literal(x, rx_char(x));
        x->p = end ? end + 2 : stop;
    } else {
        put_literal(x, rx_escape_char(x, e));
    }
}

/* {n}, {n,}, {n,m} with n <= m <= 1000; else *x->p is a literal brace. */
static size_t repeat_len(const char *p)
{
    const char *q = p + 1;
    long n = -1, m = -1;
    if (!isdigit((unsigned char)*q))
        return 0;
    n = strtol(q, (char **)&q, 10);
    if (*q == ',') {
        q++;
        if (isdigit((unsigned char)*q))
            m = strtol(q, (char **)&q, 10);
        else
            m = n;
    } else {
        m = n;
    }
    if (*q != '}' || n > 1000 || m > 1000 || m < n)
        return 0;
    return (size_t)(q + 1 - p);
}

/* (...): (?: and (?P<name> are plain groups; flags are only understood at the start. */
static void rx_group(rx *x)
{
    if (x->p[1] != '?') {
        kapi_buf_putc(&x->out, '(');
        x->p++;
    } else if (x->p[2] == ':') {
        kapi_buf_putc(&x->out, '(');
        x->p += 3;
    } else if (x->p[2] == 'P' && x->p[3] == '<' && strchr(x->p, '>')) {
        kapi_buf_putc(&x->out, '(');
        x->p = strchr(x->p, '>') + 1;
    } else {
        rx_fail(x, "flags or a group syntax inside the pattern");
        x->p++;
    }
}

/* Translates RE2 pattern p; returns the POSIX expression (heap) and the regcomp flags,
 * or NULL with *why naming what is not supported. */
static char *posix_pattern(const char *p, int *cflags, const char **why)
{
    rx x = {.p = p};
    kapi_buf_init(&x.out);
    *cflags = REG_EXTENDED | REG_NOSUB;
    while (x.p[0] == '(' && x.p[1] == '?' && x.p[2] != ':' && x.p[2] != 'P') {
        const char *q = x.p + 2;
        for (; *q && strchr("imsU", *q); q++) {
            *cflags |= *q == 'i' ? REG_ICASE : *q == 'm' ? REG_NEWLINE : 0;
            x.dotall |= *q == 's';
        }
        if (*q != ')')
            break;
        x.p = q + 1;
    }
    while (*x.p && !x.err) {
        size_t rep;
        switch (*x.p) {
        case '\\':
            rx_backslash(&x);
            break;
        case '[':
            x.p++;
            rx_class(&x);
            break;
        case '.':
            kapi_buf_puts(&x.out, x.dotall ? "." : "[^\n]");
            x.p++;
            break;
        case '(':
            rx_group(&x);
            break;
        case '{':
        case '*':
        case '+':
        case '?':
            rep = *x.p == '{' ? repeat_len(x.p) : 1;
            if (!rep) {
                put_literal(&x, (uint32_t)*x.p++);
                break;
            }
            kapi_buf_put(&x.out, x.p, rep);
            x.p += rep;
            x.p += *x.p == '?'; /* lazy: the same matches */
            break;
        case '}':
            put_literal(&x, (uint32_t)*x.p++);
            break;
        default:
            kapi_buf_putc(&x.out, *x.p++);
        }
    }
    free(x.r);
    if (x.err) {
        kapi_buf_dispose(&x.out);
        *why = x.err;
        return NULL;
    }
    return kapi_buf_detach(&x.out, NULL);
}

static void compile_pattern(compiler *c, kapi_schema *n, const json_t *j, const char *path)
{
    json_t *v = json_object_get(j, "pattern");
    if (!v)
        return;
    if (!json_is_string(v)) {
        fail(c, child_path(c, path, "pattern"), "must be a string");
        return;
    }
    n->pattern = dup_str(c, v);
    int cflags;
    const char *why = NULL;
    char *p = posix_pattern(n->pattern, &cflags, &why);
    if (!p) {
        fail(c, child_path(c, path, "pattern"),
             kapi_arena_printf(c->arena, "uses %s, which kapi does not support", why));
        return;
    }
    regex_t *re = kapi_xmalloc(sizeof(*re));
    locale_t old = kapi_schema__regex_locale_enter();
    int rc = regcomp(re, p, cflags);
    kapi_schema__regex_locale_leave(old);
    if (rc != 0) {
        free(re);
        fail(c, child_path(c, path, "pattern"), "must be a valid regular expression");
    } else {
        n->pattern_re = re;
    }
    free(p);
}

static const kapi_schema *const *node_list(compiler *c, const json_t *arr, const char *path)
{
    if (!arr)
        return NULL;
    if (!json_is_array(arr) || json_array_size(arr) == 0) {
        fail(c, path, "must be a non-empty array of schemas");
        return NULL;
    }
    const kapi_schema **out = kapi_arena_alloc(c->arena, (json_array_size(arr) + 1) * sizeof(*out));
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) out[i] =
        node_of(c, v, kapi_arena_printf(c->arena, "%s[%zu]", path, i));
    return out;
}

static void compile_props(compiler *c, kapi_schema *n, const json_t *props, const char *path)
{
    if (!json_is_object(props)) {
        fail(c, path, "must be an object");
        return;
    }
    n->nprops = json_object_size(props);
    n->props = kapi_arena_alloc(c->arena, n->nprops * sizeof(*n->props) + 1);
    size_t i = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)props, key, v)
    {
        kapi_schema_prop *p = &n->props[i++];
        const char *ppath = child_path(c, path, key);
        p->name = kapi_arena_strdup(c->arena, key);
        p->schema = node_of(c, v, ppath);
        p->description = dup_str(c, json_object_get(v, "description"));
        p->default_value = json_object_get(v, "default");
        p->emit = json_object_get(v, "x-kapi-emit");
        p->protobuf = (int)json_integer_value(json_object_get(v, "x-kapi-protobuf"));
        p->omitempty = json_is_true(json_object_get(v, "x-kapi-omitempty"));
    }
}

/* What a standalone (CRD) schema may not use, in apiextensions' words: keywords that
 * are not structural, tuple items, a type that is not one string, type null. */
static void check_structural(compiler *c, const json_t *j, const char *path)
{
    static const char *const unsupported[] = {"id", "additionalItems", "patternProperties",
                                              "definitions", "dependencies"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(unsupported); i++)
        if (json_object_get(j, unsupported[i]))
            fail(c, child_path(c, path, unsupported[i]),
                 kapi_arena_printf(c->arena, "%s is not supported", unsupported[i]));
    if (json_is_array(json_object_get(j, "items")))
        fail(c, child_path(c, path, "items"), "items must be a schema object and not an array");
    json_t *type = json_object_get(j, "type");
    if (type && !json_is_string(type))
        fail(c, child_path(c, path, "type"), "must be a string");
    else if (type && strcmp(json_string_value(type), "null") == 0)
        fail(c, child_path(c, path, "type"),
             "type cannot be set to null, use nullable as an alternative");
}

/* Fills n from j (an object schema). */
static void fill(compiler *c, kapi_schema *n, const json_t *j, const char *path)
{
    if (!json_is_object(j)) {
        fail(c, path, "a schema must be an object");
        return;
    }
    if (!c->set)
        check_structural(c, j, path);
    n->src = j;
    compile_types(c, n, json_object_get(j, "type"), child_path(c, path, "type"));
    n->format = dup_str(c, json_object_get(j, "format"));
    n->description = dup_str(c, json_object_get(j, "description"));
    n->nullable = json_is_true(json_object_get(j, "nullable"));
    n->enum_values = json_object_get(j, "enum");
    n->default_value = json_object_get(j, "default");
    if (n->enum_values && !json_is_array(n->enum_values))
        fail(c, child_path(c, path, "enum"), "must be an array");

    json_t *props = json_object_get(j, "properties");
    if (props)
        compile_props(c, n, props, child_path(c, path, "properties"));
    json_t *add = json_object_get(j, "additionalProperties");
    if (json_is_false(add))
        n->additional_false = true;
    else if (json_is_object(add))
        n->additional = node_of(c, add, child_path(c, path, "additionalProperties"));
    n->required = str_list(c, json_object_get(j, "required"), child_path(c, path, "required"));
    n->required_on_create = str_list(c, json_object_get(j, "x-kapi-required-on-create"),
                                     child_path(c, path, "x-kapi-required-on-create"));
    n->min_props = int_kw(c, j, "minProperties", path);
    n->max_props = int_kw(c, j, "maxProperties", path);

    json_t *items = json_object_get(j, "items");
    if (json_is_object(items))
        n->items = node_of(c, items, child_path(c, path, "items"));
    else if (items)
        fail(c, child_path(c, path, "items"), "must be a schema");
    n->min_items = int_kw(c, j, "minItems", path);
    n->max_items = int_kw(c, j, "maxItems", path);
    n->unique_items = json_is_true(json_object_get(j, "uniqueItems"));

    n->min_length = int_kw(c, j, "minLength", path);
    n->max_length = int_kw(c, j, "maxLength", path);
    compile_pattern(c, n, j, path);

    bound(c, j, "minimum", "exclusiveMinimum", &n->minimum, path);
    bound(c, j, "maximum", "exclusiveMaximum", &n->maximum, path);
    json_t *mo = json_object_get(j, "multipleOf");
    if (mo && (!json_is_number(mo) || json_number_value(mo) <= 0))
        fail(c, child_path(c, path, "multipleOf"), "must be a positive number");
    else if (mo)
        n->multiple_of = json_number_value(mo);

    n->all_of = node_list(c, json_object_get(j, "allOf"), child_path(c, path, "allOf"));
    n->any_of = node_list(c, json_object_get(j, "anyOf"), child_path(c, path, "anyOf"));
    n->one_of = node_list(c, json_object_get(j, "oneOf"), child_path(c, path, "oneOf"));
    json_t *not_src = json_object_get(j, "not");
    if (not_src)
        n->not_schema = node_of(c, not_src, child_path(c, path, "not"));

    n->int_or_string = json_is_true(json_object_get(j, "x-kubernetes-int-or-string"));
    if (n->int_or_string && !n->types)
        n->types = KAPI_SCHEMA_INTEGER | KAPI_SCHEMA_STRING;
    n->embedded_resource = json_is_true(json_object_get(j, "x-kubernetes-embedded-resource"));
    n->preserve_unknown = json_is_true(json_object_get(j, "x-kubernetes-preserve-unknown-fields"));
    n->list_type = dup_str(c, json_object_get(j, "x-kubernetes-list-type"));
    n->list_map_keys = str_list(c, json_object_get(j, "x-kubernetes-list-map-keys"),
                                child_path(c, path, "x-kubernetes-list-map-keys"));
    n->map_type = dup_str(c, json_object_get(j, "x-kubernetes-map-type"));
    n->patch_strategy = dup_str(c, json_object_get(j, "x-kubernetes-patch-strategy"));
    n->patch_merge_key = dup_str(c, json_object_get(j, "x-kubernetes-patch-merge-key"));
    n->gvk = json_object_get(j, "x-kubernetes-group-version-kind");
    n->defaulter = dup_str(c, json_object_get(j, "x-kapi-defaulter"));
}

static int node_cmp(const void *a, const void *b)
{
    return strcmp((*(kapi_schema *const *)a)->def_name, (*(kapi_schema *const *)b)->def_name);
}

static kapi_schema *lookup(const kapi_schema_set *s, const char *name)
{
    kapi_schema key = {.def_name = name}, *kp = &key;
    kapi_schema **found = bsearch(&kp, s->nodes, s->nnodes, sizeof(*s->nodes), node_cmp);
    return found ? *found : NULL;
}

/* The node of a schema JSON: the target of a $ref, or a new inline node. */
static kapi_schema *node_of(compiler *c, const json_t *j, const char *path)
{
    const char *ref = json_string_value(json_object_get(j, "$ref"));
    if (ref) {
        static const char prefix[] = "#/definitions/";
        kapi_schema *target = NULL;
        if (c->set && strncmp(ref, prefix, sizeof(prefix) - 1) == 0)
            target = lookup(c->set, ref + sizeof(prefix) - 1);
        if (!target) {
            fail(c, child_path(c, path, "$ref"),
                 c->set ? "names no definition" : "$ref is not supported");
            return kapi_arena_alloc(c->arena, sizeof(kapi_schema));
        }
        return target;
    }
    kapi_schema *n = kapi_arena_alloc(c->arena, sizeof(*n));
    fill(c, n, j, path);
    return n;
}

kapi_schema_set *kapi_schema_set_new(void)
{
    kapi_schema_set *s = kapi_xcalloc(1, sizeof(*s));
    kapi_arena_init(&s->arena);
    s->defs = json_object();
    return s;
}

static void free_node_patterns(const kapi_schema *n);

void kapi_schema_set_free(kapi_schema_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nnodes; i++)
        free_node_patterns(s->nodes[i]);
    json_decref(s->defs);
    free(s->nodes);
    free(s->defaulters);
    kapi_arena_dispose(&s->arena);
    free(s);
}

kapi_error *kapi_schema_set_add(kapi_schema_set *s, json_t *definitions)
{
    if (!json_is_object(definitions))
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "schema definitions must be an object");
    const char *name;
    json_t *v;
    json_object_foreach(definitions, name, v)
    {
        if (json_object_get(s->defs, name))
            return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "schema %s is defined twice", name);
        json_object_set(s->defs, name, v);
    }
    return NULL;
}

void kapi_schema_set_defaulter(kapi_schema_set *s, const char *name, kapi_schema_defaulter_fn fn)
{
    s->defaulters = kapi_xrealloc(s->defaulters, (s->ndefaulters + 1) * sizeof(*s->defaulters));
    s->defaulters[s->ndefaulters++] = (defaulter_entry){name, fn};
}

static kapi_schema_defaulter_fn find_defaulter(const kapi_schema_set *s, const char *name)
{
    for (size_t i = 0; i < s->ndefaulters; i++)
        if (strcmp(s->defaulters[i].name, name) == 0)
            return s->defaulters[i].fn;
    return NULL;
}

/* The Go type name of a definition: its last dotted part. */
static const char *go_name(kapi_arena *a, const char *def)
{
    const char *dot = strrchr(def, '.');
    return kapi_arena_strdup(a, dot ? dot + 1 : def);
}

/* Go decodes the JSONSchemaPropsOr* unions into JSONSchemaProps (see or_schema). */
static void link_or_schemas(kapi_schema_set *s)
{
    static const char *const unions[] = {"JSONSchemaPropsOrArray", "JSONSchemaPropsOrBool",
                                         "JSONSchemaPropsOrStringArray"};
    for (size_t i = 0; i < s->nnodes; i++) {
        kapi_schema *n = s->nodes[i];
        for (size_t u = 0; u < KAPI_ARRAY_LEN(unions); u++) {
            if (strcmp(n->go_name, unions[u]) != 0)
                continue;
            size_t prefix = strlen(n->def_name) - strlen(unions[u]);
            char *props =
                kapi_arena_printf(&s->arena, "%.*sJSONSchemaProps", (int)prefix, n->def_name);
            n->or_schema = lookup(s, props);
        }
    }
}

kapi_error *kapi_schema_set_compile(kapi_schema_set *s)
{
    s->nnodes = json_object_size(s->defs);
    s->nodes = kapi_xcalloc(s->nnodes ? s->nnodes : 1, sizeof(*s->nodes));
    size_t i = 0;
    const char *name;
    json_t *v;
    json_object_foreach(s->defs, name, v)
    {
        kapi_schema *n = kapi_arena_alloc(&s->arena, sizeof(*n));
        n->def_name = kapi_arena_strdup(&s->arena, name);
        n->go_name = go_name(&s->arena, name);
        s->nodes[i++] = n;
    }
    qsort(s->nodes, s->nnodes, sizeof(*s->nodes), node_cmp);
    compiler c = {.arena = &s->arena, .set = s};
    link_or_schemas(s);
    for (i = 0; i < s->nnodes && !c.err; i++) {
        kapi_schema *n = s->nodes[i];
        fill(&c, n, json_object_get(s->defs, n->def_name), n->def_name);
        if (n->defaulter && !(n->defaulter_fn = find_defaulter(s, n->defaulter)))
            fail(&c, n->def_name, "x-kapi-defaulter names no registered defaulter");
    }
    return c.err;
}

const kapi_schema *kapi_schema_set_get(const kapi_schema_set *s, const char *name)
{
    return lookup(s, name);
}

const json_t *kapi_schema_set_definitions(const kapi_schema_set *s)
{
    return s->defs;
}

kapi_error *kapi_schema_compile(const json_t *src, kapi_schema_root **out)
{
    kapi_schema_root *r = kapi_xcalloc(1, sizeof(*r));
    kapi_arena_init(&r->arena);
    r->src = json_deep_copy(src);
    compiler c = {.arena = &r->arena};
    r->node = node_of(&c, r->src, "");
    if (c.err) {
        kapi_schema_root_free(r);
        *out = NULL;
        return c.err;
    }
    *out = r;
    return NULL;
}

const kapi_schema *kapi_schema_root_node(const kapi_schema_root *r)
{
    return r->node;
}

/* Patterns are the only heap memory of a node (regex_t internals). Definitions are
 * freed one by one; an inline node is reached from exactly one parent. */
static void free_children(const kapi_schema *n)
{
    for (size_t i = 0; i < n->nprops; i++)
        if (!n->props[i].schema->def_name)
            free_node_patterns(n->props[i].schema);
    const kapi_schema *kids[] = {n->additional, n->items, n->not_schema};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(kids); i++)
        if (kids[i] && !kids[i]->def_name)
            free_node_patterns(kids[i]);
    const kapi_schema *const *lists[] = {n->all_of, n->any_of, n->one_of};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(lists); i++)
        for (const kapi_schema *const *l = lists[i]; l && *l; l++)
            if (!(*l)->def_name)
                free_node_patterns(*l);
}

static void free_node_patterns(const kapi_schema *n)
{
    if (n->pattern_re) {
        regfree(n->pattern_re);
        free(n->pattern_re);
    }
    free_children(n);
}

void kapi_schema_root_free(kapi_schema_root *r)
{
    if (!r)
        return;
    if (r->node)
        free_node_patterns(r->node);
    json_decref(r->src);
    kapi_arena_dispose(&r->arena);
    free(r);
}
