/* codec/gostr: the parts of Go's strconv, unicode and unicode/utf8 that decide
 * kube-apiserver's words and numbers: UTF-8 decoding and repair, IsPrint, quoting, base-0
 * integer parsing, float formatting (go.h, codec_int.h). */
#include "codec/codec_int.h"
#include "codec/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int32_t kapi_go_rune(const char *s, size_t n, size_t *width)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned char c = p[0], lo = 0x80, hi = 0xbf;
    size_t w;
    int32_t r;
    *width = 1;
    if (c < 0x80)
        return c;
    if (c >= 0xc2 && c <= 0xdf) {
        w = 2;
        r = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        w = 3;
        r = c & 0x0f;
        lo = c == 0xe0 ? 0xa0 : 0x80;
        hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
        w = 4;
        r = c & 0x07;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;
    } else {
        return -1;
    }
    if (n < w || p[1] < lo || p[1] > hi)
        return -1;
    for (size_t i = 1; i < w; i++) {
        if (i > 1 && (p[i] < 0x80 || p[i] > 0xbf))
            return -1;
        r = (r << 6) | (p[i] & 0x3f);
    }
    *width = w;
    return r;
}

void kapi_go_put_rune(kapi_buf *b, int32_t r)
{
    unsigned char u[4];
    size_t n;
    if (r < 0 || r > 0x10ffff || (r >= 0xd800 && r <= 0xdfff))
        r = 0xfffd;
    if (r < 0x80) {
        u[0] = (unsigned char)r;
        n = 1;
    } else if (r < 0x800) {
        u[0] = (unsigned char)(0xc0 | r >> 6);
        n = 2;
    } else if (r < 0x10000) {
        u[0] = (unsigned char)(0xe0 | r >> 12);
        n = 3;
    } else {
        u[0] = (unsigned char)(0xf0 | r >> 18);
        n = 4;
    }
    for (size_t i = 1; i < n; i++)
        u[i] = (unsigned char)(0x80 | (r >> (6 * (n - 1 - i)) & 0x3f));
    kapi_buf_put(b, u, n);
}

bool kapi_go_valid_utf8(const char *s, size_t n)
{
    for (size_t i = 0, w; i < n; i += w)
        if (kapi_go_rune(s + i, n - i, &w) < 0)
            return false;
    return true;
}

void kapi_codec__put_utf8(kapi_buf *b, const char *s, size_t n)
{
    size_t start = 0, i = 0, w;
    while (i < n) {
        if (kapi_go_rune(s + i, n - i, &w) >= 0) {
            i += w;
            continue;
        }
        kapi_buf_put(b, s + start, i - start);
        kapi_buf_puts(b, "\xef\xbf\xbd");
        start = ++i;
    }
    kapi_buf_put(b, s + start, n - start);
}

bool kapi_go_is_print(int32_t r)
{
    /* Past Latin-1: format characters (Cf), separators but the ASCII space (Z*),
     * surrogates, private use and noncharacters, and the tag block. */
    static const int32_t hidden[][2] = {
        {0x0600, 0x0605},   {0x061c, 0x061c},   {0x06dd, 0x06dd},    {0x070f, 0x070f},
        {0x1680, 0x1680},   {0x180e, 0x180e},   {0x2000, 0x200f},    {0x2028, 0x202f},
        {0x205f, 0x206f},   {0x3000, 0x3000},   {0xd800, 0xf8ff},    {0xfeff, 0xfeff},
        {0xfff9, 0xfffb},   {0xfffe, 0xffff},   {0x110bd, 0x110bd},  {0x1bca0, 0x1bca3},
        {0x1d173, 0x1d17a}, {0xe0000, 0xe00ff}, {0xf0000, 0x10ffff},
    };
    if (r < 0x80)
        return r >= 0x20 && r < 0x7f;
    if (r <= 0xa0 || r == 0xad)
        return false;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(hidden); i++)
        if (r >= hidden[i][0] && r <= hidden[i][1])
            return false;
    return true;
}

/* The letter of Go's short escape for c (\\a \\b \\f \\n \\r \\t \\v), or 0. */
static char short_escape(int32_t c)
{
    switch (c) {
    case '\a':
        return 'a';
    case '\b':
        return 'b';
    case '\f':
        return 'f';
    case '\n':
        return 'n';
    case '\r':
        return 'r';
    case '\t':
        return 't';
    case '\v':
        return 'v';
    }
    return 0;
}

void kapi_go_quote(kapi_buf *b, const char *s, size_t n)
{
    kapi_buf_putc(b, '"');
    for (size_t i = 0, w; i < n; i += w) {
        int32_t r = kapi_go_rune(s + i, n - i, &w);
        if (r < 0) {
            kapi_buf_printf(b, "\\x%02x", (unsigned char)s[i]);
        } else if (r == '"' || r == '\\') {
            kapi_buf_putc(b, '\\');
            kapi_buf_putc(b, (char)r);
        } else if (kapi_go_is_print(r)) {
            kapi_buf_put(b, s + i, w);
        } else if (short_escape(r)) {
            kapi_buf_putc(b, '\\');
            kapi_buf_putc(b, short_escape(r));
        } else if (r < 0x20 || r == 0x7f) {
            kapi_buf_printf(b, "\\x%02x", (unsigned)r);
        } else if (r < 0x10000) {
            kapi_buf_printf(b, "\\u%04x", (unsigned)r);
        } else {
            kapi_buf_printf(b, "\\U%08x", (unsigned)r);
        }
    }
    kapi_buf_putc(b, '"');
}

static int lower(int c)
{
    return c | 0x20;
}

/* strconv's underscoreOK: underscores only between digits (a base prefix counts). */
static bool underscore_ok(const char *s, size_t n)
{
    char saw = '^';
    size_t i = 0;
    bool hex = false;
    if (n >= 1 && (s[0] == '-' || s[0] == '+')) {
        s++;
        n--;
    }
    if (n >= 2 && s[0] == '0' && strchr("box", lower(s[1]))) {
        i = 2;
        saw = '0';
        hex = lower(s[1]) == 'x';
    }
    for (; i < n; i++) {
        int c = (unsigned char)s[i];
        if ((c >= '0' && c <= '9') || (hex && lower(c) >= 'a' && lower(c) <= 'f')) {
            saw = '0';
        } else if (c == '_') {
            if (saw != '0')
                return false;
            saw = '_';
        } else {
            if (saw == '_')
                return false;
            saw = '!';
        }
    }
    return saw != '_';
}

bool kapi_codec__parse_uint(const char *s, size_t n, uint64_t *out)
{
    const char *s0 = s;
    size_t n0 = n;
    unsigned base = 10;
    bool underscores = false;
    uint64_t v = 0;
    if (n == 0)
        return false;
    if (s[0] == '0') {
        base = 8;
        size_t skip = 1;
        if (n >= 3 && strchr("box", lower(s[1]))) {
            base = lower(s[1]) == 'b' ? 2 : lower(s[1]) == 'o' ? 8 : 16;
            skip = 2;
        }
        s += skip;
        n -= skip;
    }
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        unsigned d;
        if (c == '_') {
            underscores = true;
            continue;
        }
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (lower(c) >= 'a' && lower(c) <= 'z')
            d = (unsigned)(lower(c) - 'a' + 10);
        else
            return false;
        if (d >= base || v > (UINT64_MAX - d) / base)
            return false;
        v = v * base + d;
    }
    if (underscores && !underscore_ok(s0, n0))
        return false;
    *out = v;
    return true;
}

bool kapi_codec__parse_int(const char *s, size_t n, int64_t *out)
{
    bool neg = false;
    uint64_t u;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        s++;
        n--;
    }
    if (!kapi_codec__parse_uint(s, n, &u))
        return false;
    if (neg ? u > (uint64_t)1 << 63 : u >= (uint64_t)1 << 63)
        return false;
    *out = neg ? (int64_t)(0 - u) : (int64_t)u;
    return true;
}

bool kapi_codec__parse_float(const char *s, size_t n, double *out)
{
    char small[64];
    char *tmp = n < sizeof(small) ? small : kapi_xmalloc(n + 1);
    size_t i = 0, k = 0;
    bool digits = false, dot = false, underscores = false, ok = false;
    if (n > 0 && (s[0] == '+' || s[0] == '-'))
        tmp[k++] = s[i++];
    for (; i < n; i++) {
        char c = s[i];
        if (c == '_')
            underscores = true;
        else if ((c == '.' && !dot) || (c >= '0' && c <= '9'))
            tmp[k++] = c;
        else
            break;
        dot |= c == '.';
        digits |= c >= '0' && c <= '9';
    }
    if (digits && i < n && lower(s[i]) == 'e') {
        tmp[k++] = s[i++];
        if (i < n && (s[i] == '+' || s[i] == '-'))
            tmp[k++] = s[i++];
        if (i >= n || s[i] < '0' || s[i] > '9')
            digits = false;
        for (; i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '_'); i++) {
            if (s[i] == '_')
                underscores = true;
            else
                tmp[k++] = s[i];
        }
    }
    if (digits && i == n && (!underscores || underscore_ok(s, n))) {
        tmp[k] = '\0';
        *out = strtod(tmp, NULL);
        ok = !isinf(*out); /* Go reports a range error on overflow; underflow to 0 is fine */
    }
    if (tmp != small)
        free(tmp);
    return ok;
}

/* The shortest decimal digits that read back as x (at the given float width): digits
 * into d (no dot), the decimal point position into *dp; returns the digit count. */
static int shortest_digits(double x, int bits, char d[32], int *dp)
{
    char tmp[48];
    int p;
    for (p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof(tmp), "%.*e", p - 1, x);
        if (bits == 32 ? strtof(tmp, NULL) == (float)x : strtod(tmp, NULL) == x)
            break;
    }
    const char *m = tmp[0] == '-' ? tmp + 1 : tmp;
    int nd = 0;
    for (; *m && *m != 'e'; m++)
        if (*m != '.')
            d[nd++] = *m;
    d[nd] = '\0';
    *dp = atoi(m + 1) + 1;
    return nd;
}

void kapi_go_format_float(char out[40], double x, int bits)
{
    char d[32];
    int dp, nd, k = 0;
    if (bits == 32)
        x = (float)x;
    if (isnan(x) || isinf(x)) {
        strcpy(out, isnan(x) ? "NaN" : x > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (signbit(x))
        out[k++] = '-';
    if (x == 0) {
        strcpy(out + k, "0");
        return;
    }
    nd = shortest_digits(fabs(x), bits, d, &dp);
    int exp = dp - 1;
    if (exp < -4 || exp >= 6) {
        out[k++] = d[0];
        if (nd > 1) {
            out[k++] = '.';
            memcpy(out + k, d + 1, (size_t)nd - 1);
            k += nd - 1;
        }
        snprintf(out + k, 40 - (size_t)k, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        return;
    }
    if (dp <= 0) {
        out[k++] = '0';
        out[k++] = '.';
        for (int i = 0; i < -dp; i++)
            out[k++] = '0';
        memcpy(out + k, d, (size_t)nd + 1);
        return;
    }
    for (int i = 0; i < dp || i < nd; i++) {
        if (i == dp)
            out[k++] = '.';
        out[k++] = i < nd ? d[i] : '0';
    }
    out[k] = '\0';
}
