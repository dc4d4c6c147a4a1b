/* codec/json_parse: the fast path of kapi_json_parse, a reader that builds the tree
 * jansson 2.14's json_loadb(JSON_DECODE_ANY | JSON_ALLOW_NUL) builds, or gives up.
 *
 * It has to be sound, not complete. When it returns a value, json_loadb returns an equal
 * one, with one exception: an integer outside json_int_t's range, which jansson refuses
 * ("too big integer"), is read as the real strtod makes of it, as Go reads such a number
 * into a float64 (and writes one from 1e19 up to 1e21 with no point or exponent, so kapi
 * must read back what it writes). Otherwise: the same types (an integer has neither
 * fraction nor exponent), the same integers, the same bits in each real (strtod on the same
 * text), the members in the same order, a repeated key keeping its first place and its
 * last value (the same json_object_setn_new_nocheck jansson calls). It also tells whether
 * any key repeated, so that the scan for duplicate fields (json_dups.c) runs only when
 * there is one to find. On anything it is not certain of — a syntax error, bytes that are
 * not UTF-8 as jansson checks it, a lone surrogate, a NUL in a key, a real that overflows,
 * nesting past JSON_PARSER_MAX_DEPTH, bytes after the value, a locale that writes reals
 * with a decimal comma — it frees what it built and returns NULL, and the caller asks
 * jansson, whose errors and messages stay what they were. tests/fuzz/fuzz_json.c holds
 * the two to that.
 *
 * Where the time goes instead of jansson's per-byte stream: strings are scanned eight bytes
 * at a time for a quote, a backslash, a control character or a byte >= 0x80, and UTF-8 is
 * checked only from such a byte on; a string without escapes is copied once, from the
 * input into its value; escaped strings are unescaped into one scratch buffer per parse;
 * integers are read digit by digit without strtoll. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec_int.h"

typedef struct parser {
    const unsigned char *p, *end;
    /* Unescaped strings, used as a stack: an escaped key stays here while its value is
     * read, and is dropped once the member is set. */
    kapi_buf scratch;
    bool repeats; /* an object repeated a key */
} parser;

/* A string read from the input: its bytes in the input when it had no escape, else in the
 * scratch buffer from off (an offset: the buffer may move while a key waits). */
typedef struct text {
    const char *in; /* NULL: in the scratch buffer */
    size_t off, len;
    bool nul; /* holds a NUL byte (written \u0000) */
} text;

static const char *text_ptr(const parser *ps, const text *t)
{
    return t->in ? t->in : ps->scratch.ptr + t->off;
}

/* Drops t, and what was written after it, from the scratch buffer. */
static void text_drop(parser *ps, const text *t)
{
    if (ps->scratch.len != t->off) {
        ps->scratch.len = t->off;
        ps->scratch.ptr[t->off] = '\0';
    }
}

static inline bool is_space(unsigned char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static inline bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* Compact JSON has no whitespace: one comparison rules most bytes out. */
static inline void skip_space(parser *ps)
{
    while (ps->p < ps->end && *ps->p <= ' ' && is_space(*ps->p))
        ps->p++;
}

/* True when the next byte is c, which is then consumed. */
static inline bool eat(parser *ps, unsigned char c)
{
    if (ps->p == ps->end || *ps->p != c)
        return false;
    ps->p++;
    return true;
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* The eight bytes at q as a word whose lowest byte is q[0], whatever the machine's order. */
static inline uint64_t load8(const unsigned char *q)
{
    uint64_t w;
    memcpy(&w, q, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* The high bit of each of the eight bytes of w that is a quote, a backslash, below 0x20 or
 * above 0x7f, and maybe of bytes after such a byte: a subtraction borrows only out of one.
 * So the lowest bit set marks the first such byte, and none is set when there is none. */
static inline uint64_t special_bytes(uint64_t w)
{
    uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
    return ((w - ONES * 0x20) | (q - ONES) | (b - ONES) | w) & HIGHS;
}

static inline bool is_plain(unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* The first byte at or after q that may not be copied as it is into a string value. */
static inline const unsigned char *skip_plain(const unsigned char *q, const unsigned char *end)
{
    while (end - q >= 8) {
        uint64_t hits = special_bytes(load8(q));
        if (hits)
            return q + __builtin_ctzll(hits) / 8;
        q += 8;
    }
    while (q < end && is_plain(*q))
        q++;
    return q;
}

/* The four hex digits of a \u escape (declared in codec_int.h). */
int32_t kapi_codec__hex4(const char *p)
{
    int32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int d = kapi_hex_value(p[i]);
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

static int32_t hex4(const unsigned char *q, const unsigned char *end)
{
    return end - q < 4 ? -1 : kapi_codec__hex4((const char *)q);
}

/* The byte a one-letter escape stands for, or 0 for a letter that is not one. */
int kapi_codec__json_escape(unsigned char c)
{
    switch (c) {
    case '"':
    case '\\':
    case '/':
        return c;
    case 'b':
        return '\b';
    case 'f':
        return '\f';
    case 'n':
        return '\n';
    case 'r':
        return '\r';
    case 't':
        return '\t';
    default:
        return -1;
    }
}

/* Unescapes the escape whose backslash is just before q into the scratch buffer; returns
 * where the input goes on, or NULL when jansson would refuse it (an unknown letter, short
 * hex, a surrogate that is not half of a pair). */
static const unsigned char *read_escape(parser *ps, const unsigned char *q, text *t)
{
    if (q == ps->end)
        return NULL;
    int c = kapi_codec__json_escape(*q);
    if (c >= 0) {
        kapi_buf_putc(&ps->scratch, (char)c);
        return q + 1;
    }
    int32_t r = *q == 'u' ? hex4(q + 1, ps->end) : -1;
    if (r < 0 || (r >= 0xdc00 && r <= 0xdfff))
        return NULL;
    q += 5;
    if (r >= 0xd800 && r <= 0xdbff) {
        int32_t low = ps->end - q >= 2 && q[0] == '\\' && q[1] == 'u' ? hex4(q + 2, ps->end) : -1;
        if (low < 0xdc00 || low > 0xdfff)
            return NULL;
        r = 0x10000 + ((r - 0xd800) << 10) + (low - 0xdc00);
        q += 6;
    }
    t->nul |= r == 0;
    kapi_go_put_rune(&ps->scratch, r);
    return q;
}

/* read_text from q on, the first byte of the string that is not plain ASCII: UTF-8 to
 * check, escapes to unescape into the scratch buffer, or the end. */
static bool read_text_rest(parser *ps, text *t, const unsigned char *q)
{
    const unsigned char *run = ps->p;
    for (;;) {
        if (q == ps->end)
            return false;
        if (*q == '"')
            break;
        if (*q >= 0x80) {
            /* jansson takes the UTF-8 that Go's decoder takes: shortest forms, no surrogates,
             * nothing above U+10FFFF. */
            size_t w;
            if (kapi_go_rune((const char *)q, (size_t)(ps->end - q), &w) < 0)
                return false;
            q = skip_plain(q + w, ps->end);
            continue;
        }
        if (*q != '\\')
            return false; /* a control character */
        kapi_buf_put(&ps->scratch, run, (size_t)(q - run));
        if (!(q = read_escape(ps, q + 1, t)))
            return false;
        t->in = NULL;
        run = q;
        q = skip_plain(q, ps->end);
    }
    if (t->in) {
        t->len = (size_t)(q - ps->p);
    } else {
        kapi_buf_put(&ps->scratch, run, (size_t)(q - run));
        t->len = ps->scratch.len - t->off;
    }
    ps->p = q + 1;
    return true;
}

/* Reads a string whose opening quote has been consumed, through its closing quote. Most
 * are plain ASCII up to the quote and are taken here. */
static inline bool read_text(parser *ps, text *t)
{
    const unsigned char *q = skip_plain(ps->p, ps->end);
    *t = (text){.in = (const char *)ps->p, .off = ps->scratch.len};
    if (q == ps->end || *q != '"')
        return read_text_rest(ps, t, q);
    t->len = (size_t)(q - ps->p);
    ps->p = q + 1;
    return true;
}

static json_t *read_string(parser *ps)
{
    text t;
    if (!read_text(ps, &t))
        return NULL;
    json_t *v = json_stringn_nocheck(text_ptr(ps, &t), t.len);
    text_drop(ps, &t);
    return v;
}

/* A real from s to the end of an integer part at q: jansson's grammar for the fraction
 * and the exponent, then strtod on the whole token as jansson does, refused when it
 * overflows (jansson's "real number overflow"). */
static json_t *read_real(parser *ps, const unsigned char *s, const unsigned char *q)
{
    const unsigned char *end = ps->end;
    if (q < end && *q == '.') {
        if (++q == end || !is_digit(*q))
            return NULL;
        while (q < end && is_digit(*q))
            q++;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < end && (*q == '+' || *q == '-'))
            q++;
        if (q == end || !is_digit(*q))
            return NULL;
        while (q < end && is_digit(*q))
            q++;
    }
    /* strtod needs a terminated copy; a token longer than the buffer (it is at most the
     * input's length) gets one on the heap. */
    char small[64], *stop;
    size_t len = (size_t)(q - s);
    char *buf = len < sizeof(small) ? small : kapi_xmalloc(len + 1);
    memcpy(buf, s, len);
    buf[len] = '\0';
    double d = strtod(buf, &stop);
    bool ok = stop == buf + len && !isinf(d); /* another locale's decimal point; overflow */
    if (buf != small)
        free(buf);
    if (!ok)
        return NULL;
    ps->p = q;
    return json_real(d);
}

/* A number: -?(0|[1-9][0-9]*) then an optional fraction and exponent. Without either it is
 * an integer, or a real when it is outside json_int_t's range. */
static json_t *read_number(parser *ps)
{
    const unsigned char *s = ps->p, *q = s, *end = ps->end;
    bool neg = q < end && *q == '-';
    q += neg;
    const unsigned char *digits = q;
    uint64_t u = 0;
    while (q < end && is_digit(*q))
        u = u * 10 + (uint64_t)(*q++ - '0');
    size_t n = (size_t)(q - digits);
    if (n == 0 || (n > 1 && *digits == '0'))
        return NULL;
    if (q < end && (*q == '.' || *q == 'e' || *q == 'E'))
        return read_real(ps, s, q);
    /* 19 digits fit in u; 2^63 - 1 is the largest integer, 2^63 the largest negated one. */
    if (n > 19 || u > (uint64_t)INT64_MAX + neg)
        return read_real(ps, s, q);
    ps->p = q;
    return json_integer(neg ? -(json_int_t)(u - 1) - 1 : (json_int_t)u);
}

static json_t *read_word(parser *ps, const char *word, size_t n, json_t *v)
{
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return NULL;
    ps->p += n;
    return v;
}

static json_t *read_value(parser *ps, size_t depth);

/* Reads one member, "key": value, into obj. */
static bool read_member(parser *ps, json_t *obj, size_t depth)
{
    text key;
    if (!eat(ps, '"') || !read_text(ps, &key) || key.nul)
        return false;
    skip_space(ps);
    if (!eat(ps, ':'))
        return false;
    json_t *v = read_value(ps, depth + 1);
    /* As jansson: a repeated key keeps its place and takes the new value. */
    bool ok = v && json_object_setn_new_nocheck(obj, text_ptr(ps, &key), key.len, v) == 0;
    text_drop(ps, &key);
    return ok;
}

/* An object whose '{' has been consumed; depth is its own. A repeated key leaves the
 * object with fewer members than were read. */
static json_t *read_object(parser *ps, size_t depth)
{
    json_t *obj = json_object();
    skip_space(ps);
    if (eat(ps, '}'))
        return obj;
    for (size_t n = 1;; n++) {
        if (!read_member(ps, obj, depth))
            break;
        skip_space(ps);
        if (eat(ps, '}')) {
            ps->repeats |= json_object_size(obj) != n;
            return obj;
        }
        if (!eat(ps, ','))
            break;
        skip_space(ps);
    }
    json_decref(obj);
    return NULL;
}

/* An array whose '[' has been consumed; depth is its own. */
static json_t *read_array(parser *ps, size_t depth)
{
    json_t *arr = json_array();
    skip_space(ps);
    if (eat(ps, ']'))
        return arr;
    for (;;) {
        json_t *v = read_value(ps, depth + 1);
        if (!v || json_array_append_new(arr, v) != 0)
            break;
        skip_space(ps);
        if (eat(ps, ']'))
            return arr;
        if (!eat(ps, ','))
            break;
    }
    json_decref(arr);
    return NULL;
}

/* A value after optional whitespace. depth counts as jansson's does: 1 for the top-level
 * value, one more for each container it is in. */
static json_t *read_value(parser *ps, size_t depth)
{
    skip_space(ps);
    if (ps->p == ps->end || depth > JSON_PARSER_MAX_DEPTH)
        return NULL;
    switch (*ps->p++) {
    case '{':
        return read_object(ps, depth);
    case '[':
        return read_array(ps, depth);
    case '"':
        return read_string(ps);
    case 't':
        return read_word(ps, "rue", 3, json_true());
    case 'f':
        return read_word(ps, "alse", 4, json_false());
    case 'n':
        return read_word(ps, "ull", 3, json_null());
    default:
        ps->p--;
        return read_number(ps);
    }
}

json_t *kapi_codec__json_parse(const char *p, size_t n, bool *repeats)
{
    parser ps = {.p = (const unsigned char *)p, .end = (const unsigned char *)p + n};
    kapi_buf_init(&ps.scratch);
    json_t *v = read_value(&ps, 1);
    skip_space(&ps);
    if (v && ps.p != ps.end) {
        json_decref(v);
        v = NULL;
    }
    kapi_buf_dispose(&ps.scratch);
    if (repeats)
        *repeats = v && ps.repeats;
    return v;
}
