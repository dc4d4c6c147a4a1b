/* codec/yaml_resolve: YAML 1.1 scalar resolution and map key order as gopkg.in/yaml.v2
 * (v2.4.0, the version under sigs.k8s.io/yaml in Kubernetes 1.26) does them. */
#include "codec/codec_int.h"
#include "codec/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The plain scalars that resolve by table (resolve.go's resolveMap). */
static const struct {
    const char *text;
    kapi_yaml__kind kind;
    int v; /* bool value, or the sign of an infinity (0 for NaN) */
} words[] = {
    {"y", KAPI_YAML_BOOL, 1},       {"Y", KAPI_YAML_BOOL, 1},       {"yes", KAPI_YAML_BOOL, 1},
    {"Yes", KAPI_YAML_BOOL, 1},     {"YES", KAPI_YAML_BOOL, 1},     {"true", KAPI_YAML_BOOL, 1},
    {"True", KAPI_YAML_BOOL, 1},    {"TRUE", KAPI_YAML_BOOL, 1},    {"on", KAPI_YAML_BOOL, 1},
    {"On", KAPI_YAML_BOOL, 1},      {"ON", KAPI_YAML_BOOL, 1},      {"n", KAPI_YAML_BOOL, 0},
    {"N", KAPI_YAML_BOOL, 0},       {"no", KAPI_YAML_BOOL, 0},      {"No", KAPI_YAML_BOOL, 0},
    {"NO", KAPI_YAML_BOOL, 0},      {"false", KAPI_YAML_BOOL, 0},   {"False", KAPI_YAML_BOOL, 0},
    {"FALSE", KAPI_YAML_BOOL, 0},   {"off", KAPI_YAML_BOOL, 0},     {"Off", KAPI_YAML_BOOL, 0},
    {"OFF", KAPI_YAML_BOOL, 0},     {"", KAPI_YAML_NULL, 0},        {"~", KAPI_YAML_NULL, 0},
    {"null", KAPI_YAML_NULL, 0},    {"Null", KAPI_YAML_NULL, 0},    {"NULL", KAPI_YAML_NULL, 0},
    {".nan", KAPI_YAML_FLOAT, 0},   {".NaN", KAPI_YAML_FLOAT, 0},   {".NAN", KAPI_YAML_FLOAT, 0},
    {".inf", KAPI_YAML_FLOAT, 1},   {".Inf", KAPI_YAML_FLOAT, 1},   {".INF", KAPI_YAML_FLOAT, 1},
    {"+.inf", KAPI_YAML_FLOAT, 1},  {"+.Inf", KAPI_YAML_FLOAT, 1},  {"+.INF", KAPI_YAML_FLOAT, 1},
    {"-.inf", KAPI_YAML_FLOAT, -1}, {"-.Inf", KAPI_YAML_FLOAT, -1}, {"-.INF", KAPI_YAML_FLOAT, -1},
};

/* resolve.go's first-character hint: 'D' digit, 'S' sign, 'M' table word, '.' float,
 * 0 for anything else (which is a string without further look). */
static char hint(const char *s, size_t n)
{
    if (n == 0)
        return 'N';
    char c = s[0];
    if (c >= '0' && c <= '9')
        return 'D';
    if (c == '+' || c == '-')
        return 'S';
    if (c == '.')
        return '.';
    return c && strchr("yYnNtTfFoO~", c) ? 'M' : 0;
}

static bool digit(int32_t c)
{
    return c >= '0' && c <= '9';
}

/* resolve.go's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static bool yaml_style_float(const char *s, size_t n)
{
    size_t i = 0, d;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    if (i < n && s[i] == '.') {
        for (d = ++i; i < n && digit(s[i]); i++)
            ;
        if (i == d)
            return false;
    } else {
        for (d = i; i < n && digit(s[i]); i++)
            ;
        if (i == d)
            return false;
        if (i < n && s[i] == '.')
            for (i++; i < n && digit(s[i]); i++)
                ;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        for (d = i; i < n && digit(s[i]); i++)
            ;
        if (i == d)
            return false;
    }
    return i == n;
}

/* Go's time getnum: one or two digits. */
static bool getnum(const char *s, size_t n, size_t *i, int *out)
{
    if (*i >= n || !digit(s[*i]))
        return false;
    *out = s[(*i)++] - '0';
    if (*i < n && digit(s[*i]))
        *out = *out * 10 + s[(*i)++] - '0';
    return true;
}

static int days_in(int month, int year)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    return month == 2 && leap ? 29 : days[month - 1];
}

/* The clock part of go-yaml's timestamp layouts, "15:4:5.999999999", then the zone:
 * "Z07:00" when zoned, nothing otherwise; true when all of s[*i..n) is consumed. */
static bool clock_part(const char *s, size_t n, size_t i, bool zoned)
{
    int h, m, sec;
    if (!getnum(s, n, &i, &h) || h > 23 || i >= n || s[i++] != ':' || !getnum(s, n, &i, &m) ||
        m > 59 || i >= n || s[i++] != ':' || !getnum(s, n, &i, &sec) || sec > 59)
        return false;
    if (i + 1 < n && (s[i] == '.' || s[i] == ',') && digit(s[i + 1]))
        for (i++; i < n && digit(s[i]); i++)
            ;
    if (!zoned)
        return i == n;
    if (i < n && s[i] == 'Z')
        return i + 1 == n;
    return n - i == 6 && (s[i] == '+' || s[i] == '-') && digit(s[i + 1]) && digit(s[i + 2]) &&
           s[i + 3] == ':' && digit(s[i + 4]) && digit(s[i + 5]);
}

/* resolve.go's parseTimestamp: time.Parse with "2006-1-2T15:4:5.999999999Z07:00" (and a
 * lower-case t), "2006-1-2 15:4:5.999999999" and "2006-1-2". */
static bool timestamp(const char *s, size_t n)
{
    size_t i = 0;
    int month, day;
    while (i < n && digit(s[i]))
        i++;
    if (i != 4 || i == n || s[i] != '-')
        return false;
    int year = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
    i++;
    if (!getnum(s, n, &i, &month) || month < 1 || month > 12 || i >= n || s[i++] != '-' ||
        !getnum(s, n, &i, &day) || day < 1 || day > days_in(month, year))
        return false;
    if (i == n)
        return true;
    if (s[i] == 'T' || s[i] == 't')
        return clock_part(s, n, i + 1, true);
    if (s[i] != ' ')
        return false;
    while (i < n && s[i] == ' ')
        i++;
    return clock_part(s, n, i, false);
}

/* The D/S branch of resolve: timestamp, int, uint, float, in that order. */
static kapi_yaml__kind number(const char *s, size_t n, bool allow_timestamp, kapi_yaml__value *out)
{
    char small[64] = "";
    char *plain = n < sizeof(small) ? small : kapi_xmalloc(n);
    size_t k = 0;
    kapi_yaml__kind kind = KAPI_YAML_STR;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '_')
            plain[k++] = s[i];
    if (allow_timestamp && timestamp(s, n))
        kind = KAPI_YAML_TIMESTAMP;
    else if (kapi_codec__parse_int(plain, k, &out->i))
        kind = KAPI_YAML_INT;
    else if (kapi_codec__parse_uint(plain, k, &out->u))
        kind = KAPI_YAML_UINT;
    else if (yaml_style_float(plain, k) && kapi_codec__parse_float(plain, k, &out->f))
        kind = KAPI_YAML_FLOAT;
    if (plain != small)
        free(plain);
    return out->kind = kind;
}

kapi_yaml__kind kapi_yaml__resolve(const char *s, size_t n, bool allow_timestamp,
                                   kapi_yaml__value *out)
{
    char h = hint(s, n);
    memset(out, 0, sizeof(*out));
    out->kind = KAPI_YAML_STR;
    if (!h)
        return KAPI_YAML_STR;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(words); i++) {
        if (strlen(words[i].text) != n || memcmp(words[i].text, s, n) != 0)
            continue;
        out->kind = words[i].kind;
        out->b = words[i].v;
        if (out->kind == KAPI_YAML_FLOAT)
            out->f = words[i].v ? words[i].v * INFINITY : NAN;
        return out->kind;
    }
    if (h == '.' && kapi_codec__parse_float(s, n, &out->f))
        return out->kind = KAPI_YAML_FLOAT;
    if (h == 'D' || h == 'S')
        return number(s, n, allow_timestamp, out);
    return KAPI_YAML_STR;
}

bool kapi_yaml__base60(const char *s, size_t n)
{
    /* ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$ */
    size_t i = 0;
    int groups = 0;
    if (n == 0 || !memchr(s, ':', n))
        return false;
    if (s[i] == '+' || s[i] == '-')
        i++;
    if (i >= n || !digit(s[i]))
        return false;
    while (i < n && (digit(s[i]) || s[i] == '_'))
        i++;
    while (i < n && s[i] == ':') {
        size_t d = ++i;
        while (i < n && digit(s[i]) && i - d < 2)
            i++;
        if (i == d || (i - d == 2 && s[d] > '5'))
            return false;
        groups++;
    }
    if (groups == 0)
        return false;
    if (i < n && s[i] == '.')
        for (i++; i < n && (digit(s[i]) || s[i] == '_'); i++)
            ;
    return i == n;
}

/* unicode.IsLetter and unicode.IsDigit, exact for ASCII; above it, letters are everything
 * outside the punctuation, symbol, space and private blocks, and digits are ASCII only. */
static bool is_letter(int32_t r)
{
    static const int32_t other[][2] = {
        {0x80, 0xa9},     {0xab, 0xb4},     {0xb6, 0xb9},       {0xbb, 0xbf},     {0xd7, 0xd7},
        {0xf7, 0xf7},     {0x2000, 0x2bff}, {0x3000, 0x303f},   {0xd800, 0xf8ff}, {0xfe30, 0xfe4f},
        {0xff00, 0xff20}, {0xfff0, 0xffff}, {0x1f000, 0x1faff},
    };
    if (r < 0x80)
        return (r | 0x20) >= 'a' && (r | 0x20) <= 'z';
    for (size_t i = 0; i < KAPI_ARRAY_LEN(other); i++)
        if (r >= other[i][0] && r <= other[i][1])
            return false;
    return r >= 0xaa;
}

/* The runes of s (invalid bytes read as U+FFFD, as a Go []rune conversion does). */
static size_t runes(const char *s, size_t n, int32_t *out)
{
    size_t k = 0;
    for (size_t i = 0, w; i < n; i += w) {
        int32_t r = kapi_go_rune(s + i, n - i, &w);
        out[k++] = r < 0 ? 0xfffd : r;
    }
    return k;
}

static int key_cmp_runes(const int32_t *a, size_t na, const int32_t *b, size_t nb)
{
    for (size_t i = 0; i < na && i < nb; i++) {
        if (a[i] == b[i])
            continue;
        bool al = is_letter(a[i]), bl = is_letter(b[i]);
        if (al && bl)
            return a[i] < b[i] ? -1 : 1;
        if (al || bl)
            return bl ? -1 : 1;
        /* Digit runs compare by value; Go's int64 arithmetic wraps, so does this. */
        uint64_t an = 0, bn = 0;
        size_t ai, bi;
        if (a[i] == '0' || b[i] == '0') {
            for (size_t j = i; j-- > 0 && digit(a[j]);) {
                if (a[j] != '0') {
                    an = bn = 1;
                    break;
                }
            }
        }
        for (ai = i; ai < na && digit(a[ai]); ai++)
            an = an * 10 + (uint64_t)(a[ai] - '0');
        for (bi = i; bi < nb && digit(b[bi]); bi++)
            bn = bn * 10 + (uint64_t)(b[bi] - '0');
        if (an != bn)
            return (int64_t)an < (int64_t)bn ? -1 : 1;
        if (ai != bi)
            return ai < bi ? -1 : 1;
        return a[i] < b[i] ? -1 : 1;
    }
    return na < nb ? -1 : na > nb ? 1 : 0;
}

int kapi_yaml__key_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int32_t abuf[64], bbuf[64];
    int32_t *ar = an <= 64 ? abuf : kapi_xmalloc(an * sizeof(int32_t));
    int32_t *br = bn <= 64 ? bbuf : kapi_xmalloc(bn * sizeof(int32_t));
    int c = key_cmp_runes(ar, runes(a, an, ar), br, runes(b, bn, br));
    if (ar != abuf)
        free(ar);
    if (br != bbuf)
        free(br);
    return c;
}
