/* codec/json: Go-compatible JSON encoding; parsing by the fast path (json_parse.c), else by
 * jansson, with Go-worded errors. */
#include "codec/json.h"

#include "codec/codec_int.h"

#include <math.h>
#include <mimalloc.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Go's quoteChar: a byte of a syntax error as encoding/json names it ('x', '\x01',
 * '\u0081'): the byte read as a rune, in strconv.Quote's form, between single quotes. */
static void go_quote_char(kapi_buf *b, unsigned char c)
{
    if (c == '\'' || c == '"') {
        kapi_buf_printf(b, c == '"' ? "'\"'" : "'\\''");
        return;
    }
    char rune[2] = {(char)c};
    size_t n = 1;
    if (c >= 0x80) {
        rune[0] = (char)(0xc0 | c >> 6);
        rune[1] = (char)(0x80 | (c & 0x3f));
        n = 2;
    }
    kapi_buf q;
    kapi_buf_init(&q);
    kapi_go_quote(&q, rune, n);
    kapi_buf_printf(b, "'%.*s'", (int)(q.len - 2), q.ptr + 1);
    kapi_buf_dispose(&q);
}

/* Go's wording for a jansson syntax error: the common cases by their position. */
static char *go_syntax_error(const char *p, size_t n, const json_error_t *je)
{
    size_t pos = (size_t)je->position;
    while (pos < n && (p[pos] == ' ' || p[pos] == '\t' || p[pos] == '\n' || p[pos] == '\r'))
        pos++;
    if (pos >= n || json_error_code(je) == json_error_premature_end_of_input)
        return kapi_xstrdup("unexpected end of JSON input");
    /* jansson reports the position after the offending token; walk back to its start. */
    size_t at = je->position > 0 ? (size_t)je->position - 1 : 0;
    if (at >= n)
        at = n - 1;
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "invalid character ");
    go_quote_char(&b, (unsigned char)p[at]);
    kapi_buf_puts(&b, " looking for beginning of value");
    return kapi_buf_detach(&b, NULL);
}

/* p with every byte inside a string literal that starts no valid UTF-8 sequence replaced
 * by U+FFFD, as Go's decoder reads such strings (jansson refuses them); NULL when p has no
 * such byte. Bytes outside strings stay: they are syntax errors either way. */
static char *replace_invalid_utf8(const char *p, size_t n, size_t *len_out)
{
    kapi_buf b;
    kapi_buf_init(&b);
    bool in_string = false, replaced = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        size_t w = 1;
        if (in_string && c >= 0x80 && kapi_go_rune(p + i, n - i, &w) < 0) {
            kapi_buf_puts(&b, "\xef\xbf\xbd");
            replaced = true;
            continue;
        }
        if (in_string && c == '\\' && i + 1 < n)
            w = 2;
        else if (c == '"')
            in_string = !in_string;
        kapi_buf_put(&b, p + i, w);
        i += w - 1;
    }
    if (!replaced) {
        kapi_buf_dispose(&b);
        return NULL;
    }
    return kapi_buf_detach(&b, len_out);
}

#if defined(__SANITIZE_ADDRESS__)
#define KAPI_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KAPI_ASAN 1
#endif
#endif

void kapi_json_setup(void)
{
#ifndef KAPI_ASAN
    json_set_alloc_funcs(mi_malloc, mi_free);
#endif
}

json_t *kapi_json_strings(const char *const *v)
{
    json_t *a = json_array();
    for (; v && *v; v++)
        json_array_append_new(a, json_string(*v));
    return a;
}

json_t *kapi_json_parse(const char *p, size_t n, char **err_out)
{
    return kapi_json_parse_dups(p, n, err_out, NULL);
}

json_t *kapi_json_parse_dups(const char *p, size_t n, char **err_out, kapi_dups *dups)
{
    bool repeats;
    json_t *v = kapi_codec__json_parse(p, n, &repeats);
    if (v) {
        if (repeats && dups)
            kapi_json_duplicates(p, n, dups);
        return v;
    }
    json_error_t je;
    v = json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    size_t len;
    char *fixed = v ? NULL : replace_invalid_utf8(p, n, &len);
    if (fixed) {
        v = json_loadb(fixed, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        free(fixed);
    }
    if (!v && err_out)
        *err_out = go_syntax_error(p, n, &je);
    if (v && dups) /* jansson does not say whether a key repeats */
        kapi_json_duplicates(p, n, dups);
    return v;
}

/* True for a byte Go's encoder copies as it is: printable ASCII other than '"', '\\' and
 * the HTML characters '<', '>', '&'. */
static inline bool json_plain(unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&';
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* Nonzero when one of the 8 bytes in w is zero (the classic zero-byte test). */
static inline uint64_t word_has_zero(uint64_t w)
{
    return (w - ONES) & ~w & HIGHS;
}

/* True when all 8 bytes of w are plain (json_plain). A byte below 0x20 borrows in
 * w - 0x20.., so its high bit shows; '<' and '>' differ only in bit 1 (0x3c, 0x3e), '"' and
 * '&' only in bit 2 (0x22, 0x26), so one test covers each pair. */
static inline bool word_plain(uint64_t w)
{
    return !(((w - ONES * 0x20) | w) & HIGHS) && !word_has_zero(w ^ (ONES * '\\')) &&
           !word_has_zero((w | ONES * 2) ^ (ONES * '>')) &&
           !word_has_zero((w | ONES * 4) ^ (ONES * '&'));
}

#ifdef __SSE2__
/* True when the 16 bytes at s are all plain, the tests of word_plain on a vector: a
 * signed compare finds the bytes below 0x20 and those from 0x80 at once. */
static inline bool block_plain(const char *s)
{
    __m128i x = _mm_loadu_si128((const __m128i *)s);
    __m128i ctl = _mm_cmplt_epi8(x, _mm_set1_epi8(0x20));
    __m128i bslash = _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'));
    __m128i angle = _mm_cmpeq_epi8(_mm_or_si128(x, _mm_set1_epi8(2)), _mm_set1_epi8('>'));
    __m128i quote = _mm_cmpeq_epi8(_mm_or_si128(x, _mm_set1_epi8(4)), _mm_set1_epi8('&'));
    __m128i bad = _mm_or_si128(_mm_or_si128(ctl, bslash), _mm_or_si128(angle, quote));
    return _mm_movemask_epi8(bad) == 0;
}
#endif

static inline uint64_t load64(const char *s)
{
    uint64_t w;
    memcpy(&w, s, 8);
    return w;
}

static inline uint64_t load32(const char *s)
{
    uint32_t w;
    memcpy(&w, s, 4);
    return w;
}

/* True when the n bytes at s are all plain: 16 bytes (with SSE2) or a word at a time,
 * the last block overlapping the one before; a string shorter than a word is read as one
 * word of its bytes (some read twice: only whether one is not plain matters), filled up
 * with plain 'a's. */
static bool all_plain(const char *s, size_t n)
{
    size_t i = 0;
#ifdef __SSE2__
    if (n >= 16) {
        for (; i + 16 <= n; i += 16)
            if (!block_plain(s + i))
                return false;
        return i == n || block_plain(s + n - 16);
    }
#endif
    if (n >= 8) {
        for (; i + 8 <= n; i += 8)
            if (!word_plain(load64(s + i)))
                return false;
        return i == n || word_plain(load64(s + n - 8));
    }
    if (n >= 4)
        return word_plain(load32(s) | load32(s + n - 4) << 32);
    if (n == 0)
        return true;
    uint64_t w = (unsigned char)s[0] | (unsigned)(unsigned char)s[n / 2] << 8 |
                 (unsigned)(unsigned char)s[n - 1] << 16;
    return word_plain(w | (ONES * 'a') << 24);
}

/* The length of the run of plain bytes that starts s (at most n). */
static size_t plain_run(const char *s, size_t n)
{
    size_t i = 0;
    while (i + 8 <= n && word_plain(load64(s + i)))
        i += 8;
    while (i < n && json_plain((unsigned char)s[i]))
        i++;
    return i;
}

/* s with the bytes Go escapes escaped, as kapi_json_put_string writes it; the first byte
 * to escape is at i. */
static void put_escaped(kapi_buf *b, const char *s, size_t n, size_t i)
{
    static const char hex[] = "0123456789abcdef";
    size_t start = 0;
    for (; i < n; i += 1 + plain_run(s + i + 1, n - i - 1)) {
        unsigned char c = (unsigned char)s[i];
        char u[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
        const char *esc = u;
        size_t w = 1;
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c >= 0x80) {
            /* As Go's encoder: a byte that starts no valid UTF-8 sequence is U+FFFD, and
             * U+2028 and U+2029 are escaped (they end lines in JavaScript). */
            int32_t r = kapi_go_rune(s + i, n - i, &w);
            if (r >= 0 && r != 0x2028 && r != 0x2029) {
                i += w - 1;
                continue;
            }
            snprintf(u, sizeof(u), "\\u%04x", r < 0 ? 0xfffd : (unsigned)r);
        }
        kapi_buf_put(b, s + start, i - start);
        kapi_buf_puts(b, esc);
        i += w - 1;
        start = i + 1;
    }
    kapi_buf_put(b, s + start, n - start);
}

void kapi_json_put_string(kapi_buf *b, const char *s, size_t n)
{
    if (b->len + n + 3 > b->cap)
        kapi_buf_grow(b, n + 2);
    if (!all_plain(s, n)) { /* rare: most strings are copied as they are, in one go */
        kapi_buf_putc(b, '"');
        put_escaped(b, s, n, plain_run(s, n));
        kapi_buf_putc(b, '"');
        return;
    }
    char *p = b->ptr + b->len;
    p[0] = '"';
    memcpy(p + 1, s, n);
    p[n + 1] = '"';
    p[n + 2] = '\0';
    b->len += n + 2;
}

/* Go's float64 encoding: the shortest representation that round-trips, in %f form
 * for 1e-6 <= |x| < 1e21 and in exponent form (e-07, e+21) outside it. */
static void put_real(kapi_buf *b, double x)
{
    char tmp[64];
    if (!isfinite(x)) {
        kapi_buf_puts(b, "null");
        return;
    }
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*g", prec, x);
        if (strtod(tmp, NULL) == x)
            break;
    }
    double ax = fabs(x);
    if (ax != 0 && (ax < 1e-6 || ax >= 1e21)) {
        /* %g already gave exponent form; Go then shortens "e-07" to "e-7" (only a
         * negative exponent with one significant digit loses its zero). */
        size_t n = strlen(tmp);
        if (n >= 4 && tmp[n - 4] == 'e' && tmp[n - 3] == '-' && tmp[n - 2] == '0') {
            tmp[n - 2] = tmp[n - 1];
            tmp[n - 1] = '\0';
        }
        kapi_buf_puts(b, tmp);
        return;
    }
    /* Plain decimal form without exponent, shortest digits. */
    char *e = strchr(tmp, 'e');
    if (!e) {
        kapi_buf_puts(b, tmp);
        return;
    }
    int digits = prec;
    int exp10 = atoi(e + 1);
    int decimals = digits - 1 - exp10;
    snprintf(tmp, sizeof(tmp), "%.*f", decimals > 0 ? decimals : 0, x);
    kapi_buf_puts(b, tmp);
}

/* An integer in decimal, as Go writes it. */
static void put_int(kapi_buf *b, json_int_t x)
{
    char tmp[24];
    char *p = kapi_decimal(tmp + sizeof(tmp), x);
    kapi_buf_put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

json_t *kapi_json_decimal(json_int_t x)
{
    char tmp[24];
    char *p = kapi_decimal(tmp + sizeof(tmp), x);
    return json_stringn_nocheck(p, (size_t)(tmp + sizeof(tmp) - p));
}

static void encode(kapi_buf *b, const json_t *v, int depth, size_t *rv_off);

/* True when the key of len bytes is the literal lit. */
#define KEY_IS(key, len, lit) ((len) == sizeof(lit) - 1 && memcmp(key, lit, sizeof(lit) - 1) == 0)

/* The members in order, through jansson's iterator: four library calls a member, where
 * json_object_keylen_foreach makes seven. */
static void encode_object(kapi_buf *b, const json_t *v, int depth, size_t *rv_off)
{
    bool first = true;
    kapi_buf_putc(b, '{');
    for (void *it = json_object_iter((json_t *)v); it;
         it = json_object_iter_next((json_t *)v, it)) {
        const char *key = json_object_iter_key(it);
        size_t len = json_object_iter_key_len(it);
        if (!first)
            kapi_buf_putc(b, ',');
        first = false;
        kapi_json_put_string(b, key, len); /* by length: a key may hold a NUL */
        kapi_buf_putc(b, ':');
        if (rv_off && depth == 1 && KEY_IS(key, len, "resourceVersion")) {
            kapi_buf_put(b, "\"\"", 2);
            *rv_off = b->len - 1;
            continue;
        }
        bool meta = rv_off && depth == 0 && KEY_IS(key, len, "metadata");
        encode(b, json_object_iter_value(it), depth + 1, meta ? rv_off : NULL);
    }
    kapi_buf_putc(b, '}');
}

static void encode(kapi_buf *b, const json_t *v, int depth, size_t *rv_off)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        encode_object(b, v, depth, rv_off);
        break;
    case JSON_ARRAY:
        kapi_buf_putc(b, '[');
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                kapi_buf_putc(b, ',');
            encode(b, json_array_get(v, i), depth + 1, NULL);
        }
        kapi_buf_putc(b, ']');
        break;
    case JSON_STRING:
        kapi_json_put_string(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        put_int(b, json_integer_value(v));
        break;
    case JSON_REAL:
        put_real(b, json_real_value(v));
        break;
    case JSON_TRUE:
        kapi_buf_put(b, "true", 4);
        break;
    case JSON_FALSE:
        kapi_buf_put(b, "false", 5);
        break;
    case JSON_NULL:
        kapi_buf_put(b, "null", 4);
        break;
    }
}

void kapi_json_encode(kapi_buf *b, const json_t *v)
{
    encode(b, v, 0, NULL);
}

void kapi_json_encode_stamped(kapi_buf *b, const json_t *obj, size_t *rv_off)
{
    *rv_off = 0;
    encode(b, obj, 0, rv_off);
}

json_t *kapi_json_path(const json_t *v, const char *path)
{
    char seg[256];
    while (v && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        if (n >= sizeof(seg) || !json_is_object(v))
            return NULL;
        memcpy(seg, path, n);
        seg[n] = '\0';
        v = json_object_get(v, seg);
        path += n + (dot ? 1 : 0);
    }
    return (json_t *)v;
}

const char *kapi_json_path_str(const json_t *v, const char *path)
{
    return json_string_value(kapi_json_path(v, path));
}

json_t *kapi_json_object_ensure(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (json_is_object(v))
        return v;
    v = json_object();
    json_object_set_new_nocheck(obj, key, v);
    return v;
}

bool kapi_json_array_has_string(const json_t *arr, const char *s)
{
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x)
    {
        if (s && json_is_string(x) && strcmp(json_string_value(x), s) == 0)
            return true;
    }
    return false;
}

json_t *kapi_json_copy(const json_t *v)
{
    size_t i;
    json_t *x, *out;
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_OBJECT:
        /* The iterator itself, not json_object_keylen_foreach, which finds it again from
         * the key on every step. */
        out = json_object();
        for (void *it = json_object_iter((json_t *)v); it;
             it = json_object_iter_next((json_t *)v, it))
            json_object_setn_new_nocheck(out, json_object_iter_key(it),
                                         json_object_iter_key_len(it),
                                         kapi_json_copy(json_object_iter_value(it)));
        return out;
    case JSON_ARRAY:
        out = json_array();
        json_array_foreach(v, i, x) json_array_append_new(out, kapi_json_copy(x));
        return out;
    case JSON_STRING:
        return json_stringn_nocheck(json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        return json_integer(json_integer_value(v));
    case JSON_REAL:
        return json_real(json_real_value(v));
    default:
        return v ? json_incref((json_t *)v) : NULL; /* true, false, null: singletons */
    }
}

/* json_equal of two objects: both are walked in order while b's member is the one
 * json_object_get(b, key of a's) finds (the key read up to a NUL, as jansson reads it);
 * at the first that is not, json_equal decides. */
static bool objects_equal(const json_t *a, const json_t *b)
{
    if (json_object_size(a) != json_object_size(b))
        return false;
    void *ia = json_object_iter((json_t *)a), *ib = json_object_iter((json_t *)b);
    for (; ia;
         ia = json_object_iter_next((json_t *)a, ia), ib = json_object_iter_next((json_t *)b, ib)) {
        const char *key = json_object_iter_key(ia);
        size_t n = json_object_iter_key_len(ib);
        if (n != strlen(key) || memcmp(key, json_object_iter_key(ib), n) != 0)
            return json_equal(a, b);
        if (!kapi_json_equal(json_object_iter_value(ia), json_object_iter_value(ib)))
            return false;
    }
    return true;
}

bool kapi_json_equal(const json_t *a, const json_t *b)
{
    if (json_is_object(a) && json_is_object(b))
        return objects_equal(a, b);
    if (!json_is_array(a) || !json_is_array(b))
        return json_equal(a, b);
    if (json_array_size(a) != json_array_size(b))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++)
        if (!kapi_json_equal(json_array_get(a, i), json_array_get(b, i)))
            return false;
    return true;
}

void kapi_json_keep(json_t *obj, const json_t *from, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_object_get(from, keys[i]);
        if (v)
            json_object_set_nocheck(obj, keys[i], v);
        else
            json_object_del(obj, keys[i]);
    }
}
