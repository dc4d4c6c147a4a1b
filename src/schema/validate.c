/*
 * schema/validate: value validation of custom resources.
 *
 * kube-apiserver 1.26 validates a custom resource with kube-openapi's schema validator
 * (pkg/validation/validate, the go-openapi fork) on the schema apiextensions converts
 * from the CRD, turns each of its errors into a field error
 * (kubeOpenAPIResultToFieldErrors), and then checks x-kubernetes-list-type set and map
 * uniqueness (pkg/apiserver/schema/listtype). This file does the same, in the same order
 * and with the same words:
 *
 *  - Per value, the validators run in kube-openapi's order: type, the combinators
 *    (anyOf, oneOf, allOf, not), string (maxLength, minLength, pattern: the first failure
 *    only), format, number (multipleOf, minimum, maximum), array (items, minItems,
 *    maxItems, uniqueItems), enum, object (min/maxProperties, which stop the object's
 *    checks, then additional properties, properties, required). A validator applies by
 *    the JSON type of the value, not the schema's type; null gets type and enum only.
 *  - anyOf and oneOf report the errors of the failing branch with the most "matches"
 *    (kube-openapi's MatchCount, computed here the same way), after their own message.
 *  - Errors whose kube-openapi text is the same are reported once (Result.AddErrors).
 *  - Names are kube-openapi's: "spec.ports[1].name", additional properties joined with a
 *    dot ("spec.labels.x"), ".key" for required and additional properties of the root.
 *    The cause's field is that name without its leading dot, "<nil>" for the root and for
 *    the combinators' messages.
 *  - Go values print as Go prints them (codec/go.h): integers are int64 and other numbers
 *    float64, which also decides conversions (an integer matches the enum value 1.0; a
 *    multipleOf, minimum or maximum is truncated to an integer for integer data).
 *
 * Object properties are checked in schema order (Go iterates a map: kube-apiserver's
 * order varies from call to call). Nothing is allocated for a valid value but the path
 * buffer (and what RE2 caches as it matches a pattern), except duplicate detection
 * for list-type set/map arrays of more than 64 items. Branches of anyOf, oneOf and not
 * are first probed without building errors; only a failing combinator's best branch is
 * validated again to report its errors.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/go.h"
#include "schema/field.h"
#include "schema/schema.h"
#include "schema/schema_int.h"

/* One error, already converted into the field error apiextensions makes of it. */
typedef struct verr {
    const char *reason; /* FieldValueInvalid, ... */
    char *field;
    char *message;
    char *key; /* kube-openapi's message, for its de-duplication; NULL for list types */
} verr;

typedef struct vctx {
    kapi_buf path; /* the name of the value being validated */
    verr *errs;
    size_t n, cap;
    /* Probing (inside anyOf, oneOf and not) only counts errors: whether a branch passes
     * and its match count do not depend on the errors' words, so nothing is built. */
    int probe;
    size_t probed;
} vctx;

static int validate(vctx *c, const kapi_schema *s, const json_t *v);

/* ---- the error list ---- */

static void free_errs(vctx *c, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        free(c->errs[i].field);
        free(c->errs[i].message);
        free(c->errs[i].key);
    }
}

/* Appends an error; takes the strings. */
static void append(vctx *c, const char *reason, char *field, char *message, char *key)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 8;
        c->errs = kapi_xrealloc(c->errs, c->cap * sizeof(*c->errs));
    }
    c->errs[c->n++] = (verr){reason, field, message, key};
}

/* Errors so far, reported or probed. */
static size_t nerr(const vctx *c)
{
    return c->n + c->probed;
}

/* Whether to build the error about to be reported; when probing, it is only counted. */
static bool report(vctx *c)
{
    if (!c->probe)
        return true;
    c->probed++;
    return false;
}

/* The field of a kube-openapi name: without its leading dot; "<nil>" for the root. */
static char *field_of(const char *name)
{
    if (!*name || strcmp(name, ".") == 0)
        return kapi_xstrdup("<nil>");
    return kapi_xstrdup(name + (*name == '.'));
}

static char *detach(kapi_buf *b)
{
    return kapi_buf_detach(b, NULL);
}

/* An error kube-openapi names name, with message key, that becomes "Invalid value:
 * <value>: <key>" (FieldValueInvalid, or FieldValueTypeInvalid for type errors); value
 * is the bad value already printed. Takes key. */
static void add_invalid(vctx *c, bool type, const char *name, const char *value, kapi_buf *key)
{
    kapi_buf msg;
    kapi_buf_init(&msg);
    kapi_buf_printf(&msg, "Invalid value: %s: %s", value, key->ptr);
    append(c, type ? "FieldValueTypeInvalid" : "FieldValueInvalid", field_of(name), detach(&msg),
           detach(key));
}

/* An error whose cause message is fixed text (Required, Too long, Too many). */
static void add_plain(vctx *c, const char *reason, const char *name, const char *message,
                      kapi_buf *key)
{
    append(c, reason, field_of(name), kapi_xstrdup(message), detach(key));
}

/* "<name> in body must be of type <type>: <value quoted>" (errors.InvalidType) */
static void add_type_error(vctx *c, const char *type, const char *value, size_t len)
{
    if (!report(c))
        return;
    kapi_buf key, val;
    kapi_buf_init(&key);
    kapi_buf_init(&val);
    kapi_go_quote(&val, value, len);
    kapi_buf_printf(&key, "%s in body must be of type %s: %s", c->path.ptr, type, val.ptr);
    add_invalid(c, true, c->path.ptr, val.ptr, &key);
    kapi_buf_dispose(&val);
}

/* A combinator's message: not a field error, so apiextensions reports it on the root
 * field path, which is nil. */
static void add_composite(vctx *c, const char *fmt, const char *extra)
{
    if (!report(c))
        return;
    kapi_buf key, msg;
    kapi_buf_init(&key);
    kapi_buf_init(&msg);
    kapi_go_quote(&key, c->path.ptr, c->path.len);
    kapi_buf_printf(&key, fmt, extra);
    kapi_buf_printf(&msg, "Invalid value: \"\": %s", key.ptr);
    append(c, "FieldValueInvalid", kapi_xstrdup("<nil>"), detach(&msg), detach(&key));
}

/* ---- the path ---- */

static void pop(kapi_buf *p, size_t len)
{
    p->len = len;
    if (p->cap)
        p->ptr[len] = '\0';
}

/* kube-openapi's child names: "<path>.<key>" (a property of the root is just "<key>"
 * unless always_dot: additional properties and required). */
static size_t push_key(kapi_buf *p, const char *key, bool always_dot)
{
    size_t old = p->len;
    if (p->len || always_dot)
        kapi_buf_putc(p, '.');
    kapi_buf_puts(p, key);
    return old;
}

static size_t push_index(kapi_buf *p, size_t i)
{
    size_t old = p->len;
    kapi_buf_printf(p, "[%zu]", i);
    return old;
}

/* ---- Go semantics of numbers ---- */

/* int64(f) as Go computes it on amd64: out of range (and NaN) is the minimum int64. */
static int64_t go_f2i(double f)
{
    if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0))
        return INT64_MIN;
    return (int64_t)f;
}

/* swag.IsFloat64AJSONInteger (go-openapi/swag 0.19): an integer within +-(2^53-1). */
static bool json_integer_float(double f)
{
    return isfinite(f) && fabs(f) <= 9007199254740991.0 && f == trunc(f);
}

/* ---- type ---- */

/* The types the converted schema lists: x-kubernetes-int-or-string is integer,string. */
static unsigned types_of(const kapi_schema *s)
{
    return s->int_or_string ? KAPI_SCHEMA_INTEGER | KAPI_SCHEMA_STRING : s->types;
}

/* strings.Join(schema.Type, ",") */
static void type_names(kapi_buf *b, const kapi_schema *s)
{
    const json_t *t = s->src ? json_object_get(s->src, "type") : NULL;
    if (s->int_or_string || !t) {
        kapi_buf_puts(b, s->int_or_string ? "integer,string" : "");
    } else if (json_is_string(t)) {
        kapi_buf_puts(b, json_string_value(t));
    } else {
        for (size_t i = 0; i < json_array_size(t); i++)
            kapi_buf_printf(b, "%s%s", i ? "," : "", json_string_value(json_array_get(t, i)));
    }
}

static void type_mismatch(vctx *c, const kapi_schema *s, const char *value)
{
    if (!report(c))
        return;
    kapi_buf names;
    kapi_buf_init(&names);
    type_names(&names, s);
    add_type_error(c, names.ptr, value, strlen(value));
    kapi_buf_dispose(&names);
}

/* typeValidator on null: 1 when it passes (its match), 0 after an error. */
static int check_null_type(vctx *c, const kapi_schema *s)
{
    unsigned t = types_of(s);
    if (!t || (t & KAPI_SCHEMA_NULL) || s->nullable)
        return 1;
    type_mismatch(c, s, "null");
    return 0;
}

/* typeValidator: the JSON type of v and the Go format of its value ("int64", "float64")
 * against the schema's type and (checked) format. */
static int check_type(vctx *c, const kapi_schema *s, const json_t *v, int fmt)
{
    static const struct {
        const char *name, *format;
        unsigned bit;
    } kinds[] = {
        [JSON_OBJECT] = {"object", "", KAPI_SCHEMA_OBJECT},
        [JSON_ARRAY] = {"array", "", KAPI_SCHEMA_ARRAY},
        [JSON_STRING] = {"string", "", KAPI_SCHEMA_STRING},
        [JSON_INTEGER] = {"integer", "int64", KAPI_SCHEMA_INTEGER},
        [JSON_REAL] = {"number", "float64", KAPI_SCHEMA_NUMBER},
        [JSON_TRUE] = {"boolean", "", KAPI_SCHEMA_BOOLEAN},
        [JSON_FALSE] = {"boolean", "", KAPI_SCHEMA_BOOLEAN},
    };
    unsigned t = types_of(s);
    int k = json_typeof(v);
    bool float_int =
        k == JSON_REAL && json_integer_float(json_real_value(v)) && (t & KAPI_SCHEMA_INTEGER);
    bool int_float = k == JSON_INTEGER && (t & KAPI_SCHEMA_NUMBER);
    bool ok = (t & kinds[k].bit) || float_int || int_float;
    bool str_or_slice = k == JSON_STRING || k == JSON_ARRAY;
    if (!str_or_slice && fmt >= 0 && !ok) {
        add_type_error(c, s->format, kinds[k].format, strlen(kinds[k].format));
        return 0;
    }
    if (!(t & (KAPI_SCHEMA_NUMBER | KAPI_SCHEMA_INTEGER)) && fmt >= 0 && str_or_slice)
        return 1;
    if (!ok) {
        type_mismatch(c, s, kinds[k].name);
        return 0;
    }
    return 1;
}

/* ---- enum ---- */

/* string(rune(i)) as Go converts an int64: its code point in UTF-8, U+FFFD when none. */
static size_t rune_string(json_int_t i, char out[4])
{
    bool valid = i >= 0 && i <= 0x10FFFF && !(i >= 0xD800 && i <= 0xDFFF);
    uint32_t c = valid ? (uint32_t)i : 0xFFFD;
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    size_t n = c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    for (size_t k = n - 1; k > 0; k--, c >>= 6)
        out[k] = (char)(0x80 | (c & 0x3F));
    out[0] = (char)((0xF00 >> n) | c);
    return n;
}

/* Whether data v equals enum value e after Go's reflect conversion of v to e's type:
 * numbers convert between int64 and float64 (truncating), an int64 converts to the
 * string of that code point; null never matches. */
static bool enum_match(const json_t *v, const json_t *e)
{
    switch (json_typeof(e)) {
    case JSON_INTEGER:
        if (json_is_integer(v))
            return json_integer_value(v) == json_integer_value(e);
        return json_is_real(v) && go_f2i(json_real_value(v)) == json_integer_value(e);
    case JSON_REAL:
        if (json_is_integer(v))
            return (double)json_integer_value(v) == json_real_value(e);
        return json_is_real(v) && json_real_value(v) == json_real_value(e);
    case JSON_STRING:
        if (json_is_integer(v)) {
            char u[4];
            size_t n = rune_string(json_integer_value(v), u);
            return json_string_length(e) == n && memcmp(json_string_value(e), u, n) == 0;
        }
        return json_is_string(v) && json_equal(v, e);
    case JSON_NULL:
        return false;
    default:
        return !json_is_null(v) && json_equal(v, e);
    }
}

/* basicCommonValidator: Unsupported value: <v>: supported values: "a", "1" (strings as
 * they are, other values as JSON). */
static void check_enum(vctx *c, const kapi_schema *s, const json_t *v)
{
    size_t i;
    json_t *e;
    if (!s->enum_values || json_array_size(s->enum_values) == 0)
        return;
    json_array_foreach(s->enum_values, i, e) if (v && enum_match(v, e)) return;
    if (!report(c))
        return;
    kapi_buf key, msg, one;
    kapi_buf_init(&key);
    kapi_buf_init(&msg);
    kapi_buf_init(&one);
    kapi_buf_printf(&key, "%s in body should be one of ", c->path.ptr);
    kapi_buf_puts(&msg, "Unsupported value: ");
    kapi_go_value(&msg, v);
    kapi_buf_puts(&msg, ": supported values: ");
    json_array_foreach(s->enum_values, i, e)
    {
        kapi_buf_clear(&one);
        if (json_is_string(e))
            kapi_buf_put(&one, json_string_value(e), json_string_length(e));
        else
            kapi_go_json(&one, e);
        kapi_buf_puts(&msg, i ? ", " : "");
        kapi_go_quote(&msg, one.ptr, one.len);
        kapi_buf_printf(&key, "%s%s", i ? " " : "[", one.ptr);
    }
    kapi_buf_putc(&key, ']');
    kapi_buf_dispose(&one);
    append(c, "FieldValueNotSupported", field_of(c->path.ptr), detach(&msg), detach(&key));
}

/* ---- strings ---- */

static size_t rune_count(const char *p, size_t n)
{
    size_t runes = 0;
    for (size_t i = 0; i < n;) {
        size_t w;
        kapi_go_rune(p + i, n - i, &w);
        i += w;
        runes++;
    }
    return runes;
}

/* stringValidator: maxLength, minLength, pattern; it stops at the first failure. */
static void check_string(vctx *c, const kapi_schema *s, const json_t *v)
{
    const char *str = json_string_value(v);
    size_t n = json_string_length(v), runes = rune_count(str, n);
    kapi_buf key, val;
    kapi_buf_init(&key);
    if (s->max_length >= 0 && runes > (size_t)s->max_length) {
        if (!report(c))
            return;
        char msg[64];
        snprintf(msg, sizeof(msg), "Too long: may not be longer than %lld",
                 (long long)s->max_length);
        kapi_buf_printf(&key, "%s in body should be at most %lld chars long", c->path.ptr,
                        (long long)s->max_length);
        add_plain(c, "FieldValueTooLong", c->path.ptr, msg, &key);
        return;
    }
    bool too_short = s->min_length >= 0 && runes < (size_t)s->min_length;
    if (!too_short && (!s->pattern_re || kapi_regex_match(s->pattern_re, str, n)))
        return;
    if (!report(c))
        return;
    if (too_short)
        kapi_buf_printf(&key, "%s in body should be at least %lld chars long", c->path.ptr,
                        (long long)s->min_length);
    else
        kapi_buf_printf(&key, "%s in body should match '%s'", c->path.ptr, s->pattern);
    kapi_buf_init(&val);
    kapi_go_quote(&val, str, n);
    add_invalid(c, false, c->path.ptr, val.ptr, &key);
    kapi_buf_dispose(&val);
}

/* formatValidator: "<name> in body must be of type <format>: <value>". */
static void check_format(vctx *c, const kapi_schema *s, const json_t *v, int fmt)
{
    if (!kapi_schema__format_check(fmt, json_string_value(v), json_string_length(v)))
        add_type_error(c, s->format, json_string_value(v), json_string_length(v));
}

/* ---- numbers ---- */

/* An error of the number validator: the bound printed as Go prints it (an int64 for
 * integer data, else a float64), the value as it came. */
static void number_error(vctx *c, const json_t *v, const char *what, double bound, bool as_int)
{
    if (!report(c))
        return;
    kapi_buf key, val;
    kapi_buf_init(&key);
    kapi_buf_init(&val);
    kapi_buf_printf(&key, "%s in body should %s ", c->path.ptr, what);
    char num[40];
    if (as_int)
        snprintf(num, sizeof(num), "%lld", (long long)go_f2i(bound));
    else
        kapi_go_format_float(num, bound, 64);
    kapi_buf_puts(&key, num);
    kapi_go_value(&val, v);
    add_invalid(c, false, c->path.ptr, val.ptr, &key);
    kapi_buf_dispose(&val);
}

/* multipleOf: integers divide by int64(factor); a factor below 1 would divide by zero
 * there (a panic in kube-apiserver), so it takes the float path. */
static void check_multiple(vctx *c, const json_t *v, double factor)
{
    if (json_is_integer(v) && go_f2i(factor) != 0) {
        int64_t d = json_integer_value(v), f = go_f2i(factor);
        if (d / f * f != d)
            number_error(c, v, "be a multiple of", factor, true);
        return;
    }
    double d = json_number_value(v);
    double mult = factor < 1 ? 1 / factor * d : d / factor;
    if (!json_integer_float(mult))
        number_error(c, v, "be a multiple of", factor, false);
}

static void check_bound(vctx *c, const json_t *v, const kapi_schema_bound *b, bool max)
{
    bool bad;
    if (json_is_integer(v)) {
        int64_t d = json_integer_value(v), lim = go_f2i(b->value);
        bad = max ? (b->exclusive ? d >= lim : d > lim) : (b->exclusive ? d <= lim : d < lim);
    } else {
        double d = json_real_value(v);
        bad = max ? (b->exclusive ? d >= b->value : d > b->value)
                  : (b->exclusive ? d <= b->value : d < b->value);
    }
    if (!bad)
        return;
    static const char *const what[2][2] = {
        {"be greater than or equal to", "be greater than"},
        {"be less than or equal to", "be less than"},
    };
    number_error(c, v, what[max][b->exclusive], b->value, json_is_integer(v));
}

/* numberValidator: multipleOf, minimum, maximum. */
static void check_number(vctx *c, const kapi_schema *s, const json_t *v)
{
    if (s->multiple_of > 0)
        check_multiple(c, v, s->multiple_of);
    if (s->minimum.set)
        check_bound(c, v, &s->minimum, false);
    if (s->maximum.set)
        check_bound(c, v, &s->maximum, true);
}

/* ---- arrays ---- */

/* An error with an int64 value: "Invalid value: <n>: <key>" */
static void add_count_error(vctx *c, size_t n, kapi_buf *key)
{
    char val[32];
    snprintf(val, sizeof(val), "%zu", n);
    add_invalid(c, false, c->path.ptr, val, key);
}

/* Too many: <n>: must have at most <max> items (maxItems and maxProperties alike) */
static void add_too_many(vctx *c, size_t n, int64_t max, kapi_buf *key)
{
    char msg[96];
    snprintf(msg, sizeof(msg), "Too many: %zu: must have at most %lld items", n, (long long)max);
    add_plain(c, "FieldValueTooMany", c->path.ptr, msg, key);
}

static bool has_duplicates(const json_t *arr)
{
    size_t n = json_array_size(arr);
    for (size_t i = 1; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (json_equal(json_array_get(arr, i), json_array_get(arr, j)))
                return true;
    return false;
}

/* schemaSliceValidator: items, minItems, maxItems, uniqueItems. */
static int check_array(vctx *c, const kapi_schema *s, const json_t *v)
{
    size_t n = json_array_size(v);
    int matches = 0;
    kapi_buf key;
    kapi_buf_init(&key);
    for (size_t i = 0; s->items && i < n; i++) {
        size_t old = push_index(&c->path, i);
        matches += validate(c, s->items, json_array_get(v, i));
        pop(&c->path, old);
    }
    if (s->min_items >= 0 && n < (size_t)s->min_items && report(c)) {
        kapi_buf_printf(&key, "%s in body should have at least %lld items", c->path.ptr,
                        (long long)s->min_items);
        add_count_error(c, n, &key);
    }
    if (s->max_items >= 0 && n > (size_t)s->max_items && report(c)) {
        kapi_buf_printf(&key, "%s in body should have at most %lld items", c->path.ptr,
                        (long long)s->max_items);
        add_too_many(c, n, s->max_items, &key);
    }
    if (s->unique_items && has_duplicates(v) && report(c)) {
        kapi_buf_printf(&key, "%s in body shouldn't contain duplicates", c->path.ptr);
        add_invalid(c, false, c->path.ptr, "\"\"", &key);
    }
    kapi_buf_dispose(&key);
    return matches + 1;
}

/* ---- objects ---- */

static void add_forbidden(vctx *c, const char *key)
{
    if (!report(c))
        return;
    kapi_buf k, val;
    kapi_buf_init(&k);
    kapi_buf_init(&val);
    kapi_buf_printf(&k, "%s.%s in body is a forbidden property", c->path.ptr, key);
    kapi_go_quote(&val, key, strlen(key));
    add_invalid(c, false, c->path.ptr, val.ptr, &k);
    kapi_buf_dispose(&val);
}

/* Properties the schema does not name: forbidden by additionalProperties: false, or
 * validated against its schema. */
static int check_additional(vctx *c, const kapi_schema *s, const json_t *v)
{
    int matches = 0;
    const char *key;
    json_t *val;
    if (!s->additional_false && !s->additional)
        return 0;
    json_object_foreach((json_t *)v, key, val)
    {
        if (kapi_schema__prop(s, key))
            continue;
        if (s->additional_false) {
            add_forbidden(c, key);
            continue;
        }
        size_t old = push_key(&c->path, key, true);
        matches += validate(c, s->additional, val);
        pop(&c->path, old);
    }
    return matches;
}

/* objectValidator: min/maxProperties (a failure ends the object's checks), additional
 * properties, properties, required. */
static int check_object(vctx *c, const kapi_schema *s, const json_t *v)
{
    size_t n = json_object_size(v);
    int matches;
    kapi_buf key;
    kapi_buf_init(&key);
    if (s->min_props >= 0 && n < (size_t)s->min_props) {
        if (report(c)) {
            kapi_buf_printf(&key, "%s in body should have at least %lld properties", c->path.ptr,
                            (long long)s->min_props);
            add_count_error(c, n, &key);
        }
        return 0;
    }
    if (s->max_props >= 0 && n > (size_t)s->max_props) {
        if (report(c)) {
            kapi_buf_printf(&key, "%s in body should have at most %lld properties", c->path.ptr,
                            (long long)s->max_props);
            add_too_many(c, n, s->max_props, &key);
        }
        return 0;
    }
    matches = check_additional(c, s, v);
    for (size_t i = 0; i < s->nprops; i++) {
        const json_t *val = json_object_get(v, s->props[i].name);
        if (!val)
            continue;
        size_t old = push_key(&c->path, s->props[i].name, false);
        matches += validate(c, s->props[i].schema, val);
        pop(&c->path, old);
    }
    for (const char *const *r = s->required; r && *r; r++) {
        if (json_object_get(v, *r) || !report(c))
            continue;
        size_t old = push_key(&c->path, *r, true);
        kapi_buf_printf(&key, "%s in body is required", c->path.ptr);
        add_plain(c, "FieldValueRequired", c->path.ptr, "Required value", &key);
        pop(&c->path, old);
    }
    return matches;
}

/* ---- anyOf, oneOf, allOf, not ---- */

/* Probes one branch: its match count, and whether it passed. */
static int probe(vctx *c, const kapi_schema *s, const json_t *v, bool *passed)
{
    size_t mark = nerr(c);
    c->probe++;
    int matches = validate(c, s, v);
    c->probe--;
    *passed = nerr(c) == mark;
    c->probed = mark - c->n;
    return matches;
}

/* anyOf: at the first branch that passes, nothing; else the message and the errors of
 * the branch with the most matches (the first of those). */
static int any_of(vctx *c, const kapi_schema *const *list, const json_t *v)
{
    const kapi_schema *best = NULL;
    int best_matches = -1;
    for (; *list; list++) {
        bool passed;
        int matches = probe(c, *list, v, &passed);
        if (passed)
            return matches;
        if (matches > best_matches) {
            best = *list;
            best_matches = matches;
        }
    }
    add_composite(c, " must validate at least one schema (anyOf)%s", "");
    if (!c->probe)
        validate(c, best, v);
    return best_matches;
}

/* oneOf: exactly one branch must pass; with none, the message and the best failure. */
static int one_of(vctx *c, const kapi_schema *const *list, const json_t *v)
{
    const kapi_schema *best = NULL;
    int valid = 0, best_matches = -1, first = 0;
    for (; *list; list++) {
        bool passed;
        int matches = probe(c, *list, v, &passed);
        if (passed && valid++ == 0)
            first = matches;
        else if (!passed && valid == 0 && matches > best_matches) {
            best = *list;
            best_matches = matches;
        }
    }
    if (valid == 1)
        return first;
    char extra[64];
    if (valid == 0)
        snprintf(extra, sizeof(extra), "Found none valid");
    else
        snprintf(extra, sizeof(extra), "Found %d valid alternatives", valid);
    add_composite(c, " must validate one and only one schema (oneOf). %s", extra);
    if (valid > 0)
        return 0;
    if (!c->probe)
        validate(c, best, v);
    return best_matches;
}

/* allOf: every branch's errors, then the message if any failed. */
static int all_of(vctx *c, const kapi_schema *const *list, const json_t *v)
{
    int matches = 0, valid = 0, total = 0;
    for (; *list; list++, total++) {
        size_t mark = nerr(c);
        matches += validate(c, *list, v);
        valid += nerr(c) == mark;
    }
    if (valid != total)
        add_composite(c, " must validate all the schemas (allOf)%s",
                      valid == 0 ? ". None validated" : "");
    return matches;
}

/* schemaPropsValidator */
static int check_combinators(vctx *c, const kapi_schema *s, const json_t *v)
{
    int matches = 1;
    if (s->any_of)
        matches += any_of(c, s->any_of, v);
    if (s->one_of)
        matches += one_of(c, s->one_of, v);
    if (s->all_of)
        matches += all_of(c, s->all_of, v);
    if (s->not_schema) {
        bool passed;
        probe(c, s->not_schema, v, &passed);
        if (passed)
            add_composite(c, " must not validate the schema (not)%s", "");
    }
    return matches;
}

/* SchemaValidator.Validate: every validator that applies to v's JSON type, in order;
 * returns the match count kube-openapi would (1 per validator that ran, plus the
 * matches its children and counting validators report, plus 1). */
static int validate(vctx *c, const kapi_schema *s, const json_t *v)
{
    int fmt = s->format ? kapi_schema__format_id(s->format) : -1;
    if (!v || json_is_null(v)) {
        int matches = check_null_type(c, s);
        check_enum(c, s, NULL);
        return matches;
    }
    int matches = 1;
    if (types_of(s) || fmt >= 0)
        matches += 1 + check_type(c, s, v, fmt);
    matches += 1 + check_combinators(c, s, v);
    if (json_is_string(v)) {
        check_string(c, s, v);
        matches++;
        if (fmt >= 0) {
            check_format(c, s, v, fmt);
            matches++;
        }
    }
    if (json_is_number(v)) {
        check_number(c, s, v);
        matches += 2;
    }
    if (json_is_array(v))
        matches += 1 + check_array(c, s, v);
    check_enum(c, s, v);
    matches++;
    if (json_is_object(v))
        matches += 1 + check_object(c, s, v);
    return matches;
}

/* ---- x-kubernetes-list-type: set and map ---- */

/* Go's == on two scalars held in interface{} values: same dynamic type and value. */
static bool scalar_eq(const json_t *a, const json_t *b)
{
    if (json_typeof(a) != json_typeof(b))
        return false;
    if (json_is_real(a))
        return json_real_value(a) == json_real_value(b);
    return json_equal(a, b);
}

/* Whether a float64 and an int64 marshal alike: up to 2^53 the float's shortest digits
 * are its integer digits; beyond, they are compared as encoding/json writes them. */
static bool mixed_text_eq(const json_t *real, const json_t *integer)
{
    double f = json_real_value(real);
    if (f != trunc(f) || (f == 0 && signbit(f)))
        return false;
    if (fabs(f) <= 9007199254740992.0)
        return (int64_t)f == json_integer_value(integer);
    kapi_buf x, y;
    kapi_buf_init(&x);
    kapi_buf_init(&y);
    kapi_go_json(&x, real);
    kapi_go_json(&y, integer);
    bool eq = strcmp(x.ptr, y.ptr) == 0;
    kapi_buf_dispose(&x);
    kapi_buf_dispose(&y);
    return eq;
}

/* Whether a and b marshal to the same JSON text (int 1 and float 1.0 do; 0 and -0.0 do
 * not). */
static bool text_eq(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        if (json_is_real(a) && json_is_real(b))
            return json_real_value(a) == json_real_value(b) &&
                   signbit(json_real_value(a)) == signbit(json_real_value(b));
        return mixed_text_eq(json_is_real(a) ? a : b, json_is_real(a) ? b : a);
    }
    if (json_typeof(a) != json_typeof(b))
        return false;
    size_t i;
    const char *key;
    json_t *v;
    switch (json_typeof(a)) {
    case JSON_OBJECT:
        if (json_object_size(a) != json_object_size(b))
            return false;
        json_object_foreach((json_t *)a, key, v)
        {
            const json_t *w = json_object_get(b, key);
            if (!w || !text_eq(v, w))
                return false;
        }
        return true;
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return false;
        json_array_foreach(a, i, v) if (!text_eq(v, json_array_get(b, i))) return false;
        return true;
    default:
        return json_equal(a, b);
    }
}

static bool compound(const json_t *v)
{
    return json_is_object(v) || json_is_array(v);
}

/* validateListSet's equality: compounds by their JSON text, scalars by Go's ==. A NULL
 * key is "unspecified" (a list-map item without its key), equal only to itself. */
static bool key_eq(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return !a && !b;
    if (compound(a) || compound(b))
        return compound(a) && compound(b) && text_eq(a, b);
    return scalar_eq(a, b);
}

/* A hash consistent with key_eq and text_eq: numbers hash by value. */
static uint64_t key_hash(const json_t *v)
{
    uint64_t h = 1469598103934665603ULL;
    size_t i;
    const char *key;
    json_t *m;
    if (!v)
        return 7;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        h = 11;
        json_object_foreach((json_t *)v, key, m)
        {
            uint64_t k = 1469598103934665603ULL;
            for (const char *p = key; *p; p++)
                k = (k ^ (unsigned char)*p) * 1099511628211ULL;
            h += k * 31 + key_hash(m);
        }
        return h;
    case JSON_ARRAY:
        json_array_foreach(v, i, m) h = (h ^ key_hash(m)) * 1099511628211ULL;
        return h;
    case JSON_STRING:
        for (i = 0; i < json_string_length(v); i++)
            h = (h ^ (unsigned char)json_string_value(v)[i]) * 1099511628211ULL;
        return h;
    case JSON_INTEGER:
    case JSON_REAL: {
        double f = json_number_value(v);
        int64_t bits;
        f = f == 0 ? 0 : f;
        memcpy(&bits, &f, sizeof(bits));
        return (uint64_t)bits * 0x9E3779B97F4A7C15ULL;
    }
    default:
        return (uint64_t)json_typeof(v) + 3;
    }
}

/* How a list-type array is keyed: the item itself (set), one key field, or several. */
typedef struct listkey {
    const json_t *arr;
    const char *const *keys; /* NULL for a set */
    bool one;                /* exactly one key field */
} listkey;

/* The key of item i of a one-key list map, or the item of a set (NULL: unspecified). */
static const json_t *key_of(const listkey *k, size_t i)
{
    const json_t *item = json_array_get(k->arr, i);
    if (!k->keys)
        return item;
    return json_is_object(item) ? json_object_get(item, k->keys[0]) : NULL;
}

static bool items_eq(const listkey *k, size_t i, size_t j)
{
    if (!k->keys || k->one)
        return key_eq(key_of(k, i), key_of(k, j));
    const json_t *a = json_array_get(k->arr, i), *b = json_array_get(k->arr, j);
    for (const char *const *f = k->keys; *f; f++) {
        const json_t *x = json_is_object(a) ? json_object_get(a, *f) : NULL;
        const json_t *y = json_is_object(b) ? json_object_get(b, *f) : NULL;
        if (!x != !y || (x && !text_eq(x, y)))
            return false;
    }
    return true;
}

static uint64_t item_hash(const listkey *k, size_t i)
{
    if (!k->keys || k->one)
        return key_hash(key_of(k, i));
    const json_t *a = json_array_get(k->arr, i);
    uint64_t h = 5;
    for (const char *const *f = k->keys; *f; f++) {
        const json_t *x = json_is_object(a) ? json_object_get(a, *f) : NULL;
        h = h * 31 + (x ? key_hash(x) : 1);
    }
    return h;
}

typedef struct hidx {
    uint64_t h;
    size_t i;
} hidx;

static int hidx_cmp(const void *a, const void *b)
{
    const hidx *x = a, *y = b;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static int size_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* Items whose key was seen exactly once before (validateListSet's nonUniqueIndices):
 * returns how many were written to out (n entries). Pairwise for short lists, through a
 * sorted hash index for long ones. */
static size_t non_unique(const listkey *k, size_t n, size_t *out)
{
    size_t m = 0;
    if (n <= 64) {
        for (size_t i = 1; i < n; i++) {
            int seen = 0;
            for (size_t j = 0; j < i && seen < 2; j++)
                seen += items_eq(k, i, j);
            if (seen == 1)
                out[m++] = i;
        }
        return m;
    }
    hidx *ix = kapi_xmalloc(n * sizeof(*ix));
    for (size_t i = 0; i < n; i++)
        ix[i] = (hidx){item_hash(k, i), i};
    qsort(ix, n, sizeof(*ix), hidx_cmp);
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && ix[b].h == ix[a].h; b++)
            ;
        for (size_t x = a + 1; x < b; x++) {
            int seen = 0;
            for (size_t y = a; y < x && seen < 2; y++)
                seen += items_eq(k, ix[x].i, ix[y].i);
            if (seen == 1)
                out[m++] = ix[x].i;
        }
    }
    free(ix);
    qsort(out, m, sizeof(*out), size_cmp);
    return m;
}

/* field.Path's child names: ".name" ("name" at the root), "[key]", "[i]". */
static size_t push_field(kapi_buf *p, const char *name)
{
    size_t old = p->len;
    if (p->len)
        kapi_buf_putc(p, '.');
    kapi_buf_puts(p, name);
    return old;
}

static void add_list_error(vctx *c, const char *reason, const char *type, kapi_buf *val,
                           const char *detail)
{
    kapi_buf msg;
    kapi_buf_init(&msg);
    kapi_buf_printf(&msg, "%s: %s%s%s", type, val->ptr, detail ? ": " : "", detail ? detail : "");
    append(c, reason, field_of(c->path.ptr), detach(&msg), NULL);
}

/* Duplicate value: the item (set) or a map of its key fields (list map). */
static void add_duplicate(vctx *c, const listkey *k, size_t i)
{
    kapi_buf val;
    kapi_buf_init(&val);
    const json_t *item = json_array_get(k->arr, i);
    if (!k->keys) {
        kapi_go_value(&val, item);
    } else {
        json_t *key = json_object();
        for (const char *const *f = k->keys; *f; f++) {
            json_t *x = json_is_object(item) ? json_object_get(item, *f) : NULL;
            if (x)
                json_object_set_nocheck(key, *f, x);
        }
        kapi_go_sharp_v(&val, key, KAPI_GO_JSON_MAP);
        json_decref(key);
    }
    size_t old = push_index(&c->path, i);
    add_list_error(c, "FieldValueDuplicate", "Duplicate value", &val, NULL);
    pop(&c->path, old);
    kapi_buf_dispose(&val);
}

static void list_unique(vctx *c, const kapi_schema *s, const json_t *arr)
{
    size_t n = json_array_size(arr), i;
    json_t *item;
    listkey k = {arr, NULL, false};
    if (strcmp(s->list_type, "map") == 0) {
        static const char *const none[] = {NULL};
        k.keys = s->list_map_keys ? s->list_map_keys : none;
        k.one = k.keys[0] && !k.keys[1];
        json_array_foreach(arr, i, item)
        {
            if (json_is_object(item) || json_is_null(item))
                continue;
            kapi_buf val;
            kapi_buf_init(&val);
            kapi_go_value(&val, item);
            size_t old = push_index(&c->path, i);
            add_list_error(c, "FieldValueInvalid", "Invalid value", &val,
                           "must be an object for an array of list-type map");
            pop(&c->path, old);
            kapi_buf_dispose(&val);
            return;
        }
    } else if (strcmp(s->list_type, "set") != 0) {
        return;
    }
    if (n < 2)
        return;
    size_t small[64], *dups = n <= 64 ? small : kapi_xmalloc(n * sizeof(*dups));
    size_t m = non_unique(&k, n, dups);
    for (size_t j = 0; j < m; j++)
        add_duplicate(c, &k, dups[j]);
    if (dups != small)
        free(dups);
}

static void lists(vctx *c, const kapi_schema *s, const json_t *v);

static void lists_object(vctx *c, const kapi_schema *s, const json_t *obj)
{
    const char *key;
    json_t *val;
    if (s->additional) {
        json_object_foreach((json_t *)obj, key, val)
        {
            size_t old = c->path.len;
            kapi_buf_printf(&c->path, "[%s]", key);
            lists(c, s->additional, val);
            pop(&c->path, old);
        }
    }
    if (!s->nprops)
        return;
    json_object_foreach((json_t *)obj, key, val)
    {
        const kapi_schema_prop *p = kapi_schema__prop(s, key);
        if (!p)
            continue;
        size_t old = push_field(&c->path, key);
        lists(c, p->schema, val);
        pop(&c->path, old);
    }
}

/* ValidateListSetsAndMaps: through properties, additional properties and items. */
static void lists(vctx *c, const kapi_schema *s, const json_t *v)
{
    if (json_is_object(v)) {
        lists_object(c, s, v);
        return;
    }
    if (!json_is_array(v))
        return;
    if (s->list_type)
        list_unique(c, s, v);
    for (size_t i = 0; s->items && i < json_array_size(v); i++) {
        size_t old = push_index(&c->path, i);
        lists(c, s->items, json_array_get(v, i));
        pop(&c->path, old);
    }
}

/* ---- entry ---- */

void kapi_schema_validate(const kapi_schema *s, const json_t *v, const char *path, kapi_error *err)
{
    vctx c = {0};
    kapi_buf_init(&c.path);
    kapi_buf_puts(&c.path, path ? path : "");
    validate(&c, s, v);
    pop(&c.path, 0);
    kapi_buf_puts(&c.path, path ? path : "");
    if (json_is_object(v))
        lists(&c, s, v);
    for (size_t i = 0; i < c.n; i++) {
        bool dup = false;
        for (size_t j = 0; c.errs[i].key && j < i && !dup; j++)
            dup = c.errs[j].key && strcmp(c.errs[i].key, c.errs[j].key) == 0;
        if (!dup)
            kapi_error_add_cause(err, c.errs[i].reason, c.errs[i].field, "%s", c.errs[i].message);
    }
    free_errs(&c, 0, c.n);
    free(c.errs);
    kapi_buf_dispose(&c.path);
}
