/* select/fields: field selectors as k8s.io/apimachinery 1.26 (pkg/fields/selector.go)
 * parses them: the text is cut at unescaped commas (splitTerms), the terms are sorted,
 * each is cut at its first operator (splitTerm) and its value unescaped (UnescapeValue,
 * which reads the value rune by rune and so writes a byte that is not UTF-8 as U+FFFD
 * once the value has anything to unescape). Also the value of a stored object's field. */
#include "select/select.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/go.h"
#include "codec/json.h"

/* The operators, each before any of its prefixes: at each position the first that
 * starts there wins. */
static const struct {
    const char *text;
    kapi_field_op op;
} term_ops[] = {{"!=", KAPI_FIELD_NE}, {"==", KAPI_FIELD_EQ}, {"=", KAPI_FIELD_EQ}};

/* splitTerms: the parts of text between commas that no backslash escapes; none when
 * text is empty. The parts are slices of text. */
static kapi_str *split_terms(const char *text, size_t *n)
{
    size_t len = strlen(text), start = 0;
    kapi_str *parts = kapi_xcalloc(len + 1, sizeof(*parts));
    bool slash = false;
    *n = 0;
    for (size_t i = 0; i < len; i++) {
        if (slash || text[i] == '\\') {
            slash = !slash;
        } else if (text[i] == ',') {
            parts[(*n)++] = (kapi_str){text + start, i - start};
            start = i + 1;
        }
    }
    if (len > 0)
        parts[(*n)++] = (kapi_str){text + start, len - start};
    return parts;
}

/* Go's string order. */
static int cmp_part(const void *a, const void *b)
{
    const kapi_str *x = a, *y = b;
    int c = memcmp(x->ptr, y->ptr, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* splitTerm: where the first operator of term starts and which it is. */
static bool split_term(kapi_str term, size_t *at, size_t *op)
{
    for (*at = 0; *at < term.len; (*at)++) {
        for (*op = 0; *op < KAPI_ARRAY_LEN(term_ops); (*op)++) {
            size_t n = strlen(term_ops[*op].text);
            if (n <= term.len - *at && memcmp(term.ptr + *at, term_ops[*op].text, n) == 0)
                return true;
        }
    }
    return false;
}

static bool needs_unescape(kapi_str v)
{
    for (size_t i = 0; i < v.len; i++)
        if (v.ptr[i] == '\\' || v.ptr[i] == ',' || v.ptr[i] == '=')
            return true;
    return false;
}

/* UnescapeValue: "\\" "\," "\=" stand for the character; any other escape, a trailing
 * backslash, or a bare "," or "=" is an error. */
static kapi_error *unescape(kapi_buf *out, kapi_str v)
{
    bool slash = false;
    if (!needs_unescape(v)) {
        kapi_buf_put(out, v.ptr, v.len);
        return NULL;
    }
    for (size_t i = 0, w; i < v.len; i += w) {
        int32_t r = kapi_go_rune(v.ptr + i, v.len - i, &w);
        kapi_str rune = r < 0 ? KAPI_STR("\xef\xbf\xbd") : (kapi_str){v.ptr + i, w};
        bool special = r == '\\' || r == ',' || r == '=';
        if (slash && !special)
            return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                                  "invalid field selector: invalid escape sequence: \\%.*s",
                                  KAPI_STR_FMT(rune));
        if (!slash && special && r != '\\')
            return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                                  "invalid field selector: unescaped character in value: %d",
                                  (int)r);
        slash = !slash && r == '\\';
        if (!slash)
            kapi_buf_put(out, rune.ptr, rune.len);
    }
    if (slash)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "invalid field selector: invalid escape sequence: \\");
    return NULL;
}

/* Adds the term part of text to s. */
static kapi_error *add_term(kapi_fieldsel *s, const char *text, kapi_str part)
{
    size_t at, op;
    kapi_buf value;
    kapi_error *err;
    if (!split_term(part, &at, &op))
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "invalid selector: '%s'; can't understand '%.*s'", text,
                              KAPI_STR_FMT(part));
    size_t skip = at + strlen(term_ops[op].text);
    kapi_buf_init(&value);
    if ((err = unescape(&value, (kapi_str){part.ptr + skip, part.len - skip})) != NULL) {
        kapi_buf_dispose(&value);
        return err;
    }
    kapi_field_req *r = &s->reqs[s->n++];
    r->field = kapi_xstrndup(part.ptr, at);
    r->op = term_ops[op].op;
    r->value = kapi_buf_detach(&value, NULL);
    return NULL;
}

kapi_error *kapi_fieldsel_parse(kapi_fieldsel **out, const char *text)
{
    size_t nparts;
    kapi_error *err = NULL;
    text = text ? text : "";
    kapi_str *parts = split_terms(text, &nparts);
    qsort(parts, nparts, sizeof(*parts), cmp_part);
    kapi_fieldsel *s = kapi_xcalloc(1, sizeof(*s));
    s->reqs = kapi_xcalloc(nparts ? nparts : 1, sizeof(*s->reqs));
    for (size_t i = 0; i < nparts && !err; i++)
        if (parts[i].len > 0)
            err = add_term(s, text, parts[i]);
    free(parts);
    if (err) {
        kapi_fieldsel_free(s);
        s = NULL;
    }
    *out = s;
    return err;
}

bool kapi_fieldsel_matches(const kapi_fieldsel *s,
                           const char *(*value)(void *ctx, const char *field), void *ctx)
{
    for (size_t i = 0; i < s->n; i++) {
        const char *v = value(ctx, s->reqs[i].field);
        bool eq = strcmp(v ? v : "", s->reqs[i].value) == 0;
        if (eq != (s->reqs[i].op == KAPI_FIELD_EQ))
            return false;
    }
    return true;
}

void kapi_fieldsel_free(kapi_fieldsel *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->reqs[i].field);
        free(s->reqs[i].value);
    }
    free(s->reqs);
    free(s);
}

/* The member at the dotted path p[0..n) of v, or NULL. */
static const json_t *member_at(const json_t *v, const char *p, size_t n)
{
    while (v && n > 0) {
        const char *dot = memchr(p, '.', n);
        size_t k = dot ? (size_t)(dot - p) : n;
        v = json_object_getn(v, p, k);
        p += k + (dot != NULL);
        n -= k + (dot != NULL);
    }
    return v;
}

/* A scalar as Kubernetes' field sets write it. */
static const char *scalar_text(const json_t *v, char scratch[KAPI_FIELD_VALUE_SCRATCH])
{
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_boolean(v))
        return json_is_true(v) ? "true" : "false";
    if (!json_is_integer(v))
        return "";
    snprintf(scratch, KAPI_FIELD_VALUE_SCRATCH, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    return scratch;
}

const char *kapi_fieldsel_value(const json_t *obj, const char *path,
                                char scratch[KAPI_FIELD_VALUE_SCRATCH])
{
    const char *v = "";
    while (*v == '\0' && *path) {
        size_t n = strcspn(path, "|");
        if (*path == '=' && n < KAPI_FIELD_VALUE_SCRATCH) {
            memcpy(scratch, path + 1, n - 1);
            scratch[n - 1] = '\0';
            v = scratch;
        } else {
            v = scalar_text(member_at(obj, path, n), scratch);
        }
        path += n + (path[n] == '|');
    }
    return v;
}
