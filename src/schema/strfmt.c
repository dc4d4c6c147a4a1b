/*
 * schema/strfmt: the string formats custom resource validation checks.
 *
 * apiextensions-apiserver 1.26 keeps a format only if it is one of the formats of its
 * supportedFormats list (names compared without dashes, so "date-time" is "datetime") and
 * blanks every other format; kube-openapi's strfmt registry then checks string values
 * against the checker registered under that name. Each checker here answers what the Go
 * function behind it answers (Go 1.19 net, net/mail, net/url and time; asaskevich/
 * govalidator; k8s.io/utils/net's "sloppy" IP parsing that allows leading zeros).
 *
 * Where Go consults Unicode tables (hostname's \p{L} and \p{S}) kapi uses a coarse
 * classification of the non-ASCII code points; see uni_class.
 */
#include <stdlib.h>
#include <string.h>

#include "schema/schema_int.h"

typedef struct str {
    const char *p;
    size_t n;
} str;

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Go regexp's \s: [\t\n\f\r ] */
static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

static bool all_of(str s, size_t from, size_t to, int (*pred)(int))
{
    for (size_t i = from; i < to; i++)
        if (!pred((unsigned char)s.p[i]))
            return false;
    return true;
}

static int is_xdigit_c(int c)
{
    return kapi_hex_value((char)c) >= 0;
}

static int is_digit_c(int c)
{
    return is_digit((char)c);
}

/* ---- IP addresses (Go's net.ParseIP, sloppy and strict) ---- */

/* Go's dtoi: decimal digits; false when none or the value reaches 0xFFFFFF. */
static bool dtoi(str s, size_t *i, long *n)
{
    size_t start = *i;
    *n = 0;
    for (; *i < s.n && is_digit(s.p[*i]); (*i)++) {
        *n = *n * 10 + (s.p[*i] - '0');
        if (*n >= 0xFFFFFF)
            return false;
    }
    return *i > start;
}

/* An IPv4 dotted quad from s.p[*i] to the end; strict rejects leading zeros (Go 1.17+),
 * sloppy accepts them (k8s.io/utils/net). */
static bool ipv4_at(str s, size_t i, bool strict)
{
    for (int k = 0; k < 4; k++) {
        if (k > 0 && (i >= s.n || s.p[i++] != '.'))
            return false;
        size_t start = i;
        long n;
        if (!dtoi(s, &i, &n) || n > 0xFF)
            return false;
        if (strict && i - start > 1 && s.p[start] == '0')
            return false;
    }
    return i == s.n;
}

/* Go's xtoi for one IPv6 group. */
static bool xtoi(str s, size_t *i, long *n)
{
    size_t start = *i;
    *n = 0;
    for (; *i < s.n && kapi_hex_value(s.p[*i]) >= 0; (*i)++) {
        *n = *n * 16 + kapi_hex_value(s.p[*i]);
        if (*n >= 0xFFFFFF)
            return false;
    }
    return *i > start;
}

/* Go's parseIPv6 (no zone): groups, one "::", an IPv4 tail in the last 32 bits. */
static bool ipv6(str s, bool strict)
{
    size_t i = 0;
    int groups = 0; /* 16-bit groups parsed */
    bool ellipsis = false;
    if (s.n >= 2 && s.p[0] == ':' && s.p[1] == ':') {
        ellipsis = true;
        i = 2;
        if (i == s.n)
            return true;
    }
    while (groups < 8) {
        size_t start = i;
        long n;
        if (!xtoi(s, &i, &n) || n > 0xFFFF)
            return false;
        if (i < s.n && s.p[i] == '.') {
            if ((!ellipsis && groups != 6) || groups + 2 > 8)
                return false;
            if (!ipv4_at(s, start, strict))
                return false;
            groups += 2;
            i = s.n;
            break;
        }
        groups++;
        if (i == s.n)
            break;
        if (s.p[i] != ':' || i + 1 == s.n)
            return false;
        i++;
        if (s.p[i] == ':') {
            if (ellipsis)
                return false;
            ellipsis = true;
            if (++i == s.n)
                break;
        }
    }
    if (i != s.n)
        return false;
    return groups < 8 ? ellipsis : !ellipsis;
}

/* Go's ParseIP: the first '.' or ':' decides the family. */
static bool parse_ip(str s, bool strict)
{
    for (size_t i = 0; i < s.n; i++) {
        if (s.p[i] == '.')
            return ipv4_at(s, 0, strict);
        if (s.p[i] == ':')
            return ipv6(s, strict);
    }
    return false;
}

static bool has_char(str s, char c)
{
    return memchr(s.p, c, s.n) != NULL;
}

/* strfmt's isIPv4: netutils.ParseIPSloppy(s) != nil && strings.Contains(s, ".") */
static bool f_ipv4(str s)
{
    return parse_ip(s, false) && has_char(s, '.');
}

/* govalidator.IsIPv6: net.ParseIP(s) != nil && strings.Contains(s, ":") */
static bool f_ipv6(str s)
{
    return parse_ip(s, true) && has_char(s, ':');
}

/* netutils.ParseCIDRSloppy: address (v4 first, then v6), '/', decimal prefix length. */
static bool f_cidr(str s)
{
    const char *slash = memchr(s.p, '/', s.n);
    if (!slash)
        return false;
    str addr = {s.p, (size_t)(slash - s.p)}, mask = {slash + 1, s.n - addr.n - 1};
    int bits = 32;
    if (!ipv4_at(addr, 0, false)) {
        bits = 128;
        if (!ipv6(addr, false))
            return false;
    }
    size_t i = 0;
    long n;
    return dtoi(mask, &i, &n) && i == mask.n && n <= bits;
}

/* net.ParseMAC: 6, 8 or 20 bytes as xx:xx.., xx-xx.. or xxxx.xxxx.. */
static bool f_mac(str s)
{
    if (s.n < 14)
        return false;
    size_t group = 2;
    char sep = s.p[2];
    if (sep != ':' && sep != '-') {
        if (s.p[4] != '.')
            return false;
        group = 4;
        sep = '.';
    }
    if ((s.n + 1) % (group + 1) != 0)
        return false;
    size_t bytes = (s.n + 1) / (group + 1) * (group / 2);
    if (bytes != 6 && bytes != 8 && bytes != 20)
        return false;
    for (size_t i = 0; i < s.n; i++) {
        bool at_sep = (i + 1) % (group + 1) == 0;
        if (at_sep ? s.p[i] != sep : kapi_hex_value(s.p[i]) < 0)
            return false;
    }
    return true;
}

/* ---- URIs: Go 1.19 url.ParseRequestURI ---- */

enum { ENC_PATH, ENC_HOST, ENC_ZONE, ENC_USER };

/* url.shouldEscape(c, encodeHost): what a host may not contain unescaped. */
static bool host_must_escape(unsigned char c)
{
    if (c == 0 || is_alpha((char)c) || is_digit((char)c))
        return false;
    return !strchr("!$&'()*+,;=:[]<>\"-_.~", c);
}

/* url.unescape's checks: well-formed %XX, and in hosts no ASCII escapes but %25 and no
 * character that would need escaping. */
static bool unescape_ok(str s, int mode)
{
    for (size_t i = 0; i < s.n;) {
        unsigned char c = (unsigned char)s.p[i];
        if (c == '%') {
            if (i + 2 >= s.n || kapi_hex_value(s.p[i + 1]) < 0 || kapi_hex_value(s.p[i + 2]) < 0)
                return false;
            int v = kapi_hex_value(s.p[i + 1]) << 4 | kapi_hex_value(s.p[i + 2]);
            bool pct25 = v == 0x25;
            if (mode == ENC_HOST && kapi_hex_value(s.p[i + 1]) < 8 && !pct25)
                return false;
            if (mode == ENC_ZONE && !pct25 && v != ' ' && host_must_escape((unsigned char)v))
                return false;
            i += 3;
            continue;
        }
        if ((mode == ENC_HOST || mode == ENC_ZONE) && c < 0x80 && host_must_escape(c))
            return false;
        i++;
    }
    return true;
}

static bool valid_port(str p)
{
    if (p.n == 0)
        return true;
    return p.p[0] == ':' && all_of(p, 1, p.n, is_digit_c);
}

static const char *last_index(str s, char c)
{
    for (size_t i = s.n; i > 0; i--)
        if (s.p[i - 1] == c)
            return s.p + i - 1;
    return NULL;
}

static bool parse_host(str h)
{
    if (h.n && h.p[0] == '[') {
        const char *rb = last_index(h, ']');
        if (!rb)
            return false;
        size_t i = (size_t)(rb - h.p);
        if (!valid_port((str){rb + 1, h.n - i - 1}))
            return false;
        const char *zone = NULL;
        for (size_t k = 0; k + 3 <= i; k++)
            if (memcmp(h.p + k, "%25", 3) == 0) {
                zone = h.p + k;
                break;
            }
        if (zone) {
            size_t z = (size_t)(zone - h.p);
            return unescape_ok((str){h.p, z}, ENC_HOST) &&
                   unescape_ok((str){zone, i - z}, ENC_ZONE) &&
                   unescape_ok((str){rb, h.n - i}, ENC_HOST);
        }
    } else {
        const char *colon = last_index(h, ':');
        if (colon && !valid_port((str){colon, h.n - (size_t)(colon - h.p)}))
            return false;
    }
    return unescape_ok(h, ENC_HOST);
}

static bool parse_authority(str a)
{
    const char *at = last_index(a, '@');
    if (!at)
        return parse_host(a);
    if (!parse_host((str){at + 1, a.n - (size_t)(at - a.p) - 1}))
        return false;
    str user = {a.p, (size_t)(at - a.p)};
    for (size_t i = 0; i < user.n; i++) {
        char c = user.p[i];
        if (!is_alpha(c) && !is_digit(c) && !strchr("-._:~!$&'()*+,;=%@", c))
            return false;
    }
    return unescape_ok(user, ENC_USER);
}

static bool f_uri(str s)
{
    for (size_t i = 0; i < s.n; i++)
        if ((unsigned char)s.p[i] < 0x20 || s.p[i] == 0x7f)
            return false;
    if (s.n == 0)
        return false;
    if (s.n == 1 && s.p[0] == '*')
        return true;
    /* getScheme */
    size_t scheme = 0;
    for (size_t i = 0; i < s.n; i++) {
        char c = s.p[i];
        if (is_alpha(c))
            continue;
        if ((is_digit(c) || c == '+' || c == '-' || c == '.') && i > 0)
            continue;
        if (c == ':') {
            if (i == 0)
                return false;
            scheme = i;
        }
        break;
    }
    str rest = {s.p + (scheme ? scheme + 1 : 0), s.n - (scheme ? scheme + 1 : 0)};
    const char *q = memchr(rest.p, '?', rest.n);
    if (q)
        rest.n = (size_t)(q - rest.p);
    if (rest.n == 0 || rest.p[0] != '/')
        return scheme > 0; /* an opaque URI needs a scheme */
    if (scheme && rest.n >= 2 && rest.p[1] == '/') {
        str auth = {rest.p + 2, rest.n - 2};
        const char *slash = memchr(auth.p, '/', auth.n);
        if (slash) {
            rest = (str){slash, auth.n - (size_t)(slash - auth.p)};
            auth.n = (size_t)(slash - auth.p);
        } else {
            rest.n = 0;
        }
        if (!parse_authority(auth))
            return false;
    }
    return unescape_ok(rest, ENC_PATH);
}

/* ---- email: Go 1.19 net/mail.ParseAddress (RFC 2047 words are taken as plain words) ---- */

typedef struct mail {
    const char *p, *end;
} mail;

static bool m_empty(mail *m)
{
    return m->p >= m->end;
}

static void m_skip_space(mail *m)
{
    while (!m_empty(m) && (*m->p == ' ' || *m->p == '\t'))
        m->p++;
}

static bool m_consume(mail *m, char c)
{
    if (m_empty(m) || *m->p != c)
        return false;
    m->p++;
    return true;
}

static bool is_vchar(uint32_t r)
{
    return (r >= '!' && r <= '~') || r >= 0x80;
}

static bool is_atext(uint32_t r, bool dot, bool permissive)
{
    if (r == '.')
        return dot;
    if (r && r < 0x80 && strchr("()[];@\\,", (int)r))
        return permissive; /* RFC 5322 specials */
    if (r && r < 0x80 && strchr("<>\":", (int)r))
        return false;
    return is_vchar(r);
}

/* utf8.DecodeRuneInString as Go's net/mail and strfmt use it: the width, and U+FFFD
 * with width 1 for an invalid byte (width 0 at the end of the input). */
static int decode_rune(const char *p, size_t n, uint32_t *out)
{
    size_t w = 0;
    int32_t r = n ? kapi_go_rune(p, n, &w) : -1;
    *out = r < 0 ? 0xFFFD : (uint32_t)r;
    return (int)w;
}

/* consumeAtom: a (dot-)atom; without permissive no leading, trailing or double dots. */
static bool m_atom(mail *m, bool dot, bool permissive, str *out)
{
    const char *start = m->p;
    while (!m_empty(m)) {
        uint32_t r;
        int w = decode_rune(m->p, (size_t)(m->end - m->p), &r);
        if (w == 1 && r == 0xFFFD)
            return false;
        if (!is_atext(r, dot, permissive))
            break;
        m->p += w;
    }
    *out = (str){start, (size_t)(m->p - start)};
    if (out->n == 0)
        return false;
    if (!permissive &&
        (out->p[0] == '.' || out->p[out->n - 1] == '.' || memmem(out->p, out->n, "..", 2)))
        return false;
    return true;
}

/* consumeQuotedString; *empty says whether it held no characters. */
static bool m_quoted(mail *m, bool *empty)
{
    const char *p = m->p + 1;
    bool escaped = false;
    *empty = true;
    for (;;) {
        uint32_t r;
        int w = decode_rune(p, (size_t)(m->end - p), &r);
        if (w == 0 || (w == 1 && r == 0xFFFD))
            return false;
        if (escaped) {
            if (!is_vchar(r) && r != ' ' && r != '\t')
                return false;
            escaped = false;
            *empty = false;
        } else if ((is_vchar(r) && r != '\\' && r != '"') || r == ' ' || r == '\t') {
            *empty = false;
        } else if (r == '"') {
            break;
        } else if (r == '\\') {
            escaped = true;
        } else {
            return false;
        }
        p += w;
    }
    m->p = p + 1;
    return true;
}

/* consumeAddrSpec: local-part "@" domain; m is left as it was on failure. */
static bool m_addr_spec(mail *m)
{
    mail save = *m;
    str atom;
    bool empty;
    m_skip_space(m);
    bool ok = !m_empty(m);
    if (ok && *m->p == '"')
        ok = m_quoted(m, &empty) && !empty;
    else if (ok)
        ok = m_atom(m, true, false, &atom);
    ok = ok && m_consume(m, '@');
    if (ok) {
        m_skip_space(m);
        ok = !m_empty(m) && m_atom(m, true, false, &atom);
    }
    if (!ok)
        *m = save;
    return ok;
}

/* consumeComment after '(': nested parentheses, backslash escapes. */
static bool m_comment(mail *m)
{
    int depth = 1;
    while (!m_empty(m) && depth > 0) {
        if (*m->p == '\\' && m->end - m->p > 1)
            m->p++;
        else if (*m->p == '(')
            depth++;
        else if (*m->p == ')')
            depth--;
        m->p++;
    }
    return depth == 0;
}

static bool m_skip_cfws(mail *m)
{
    m_skip_space(m);
    while (m_consume(m, '(')) {
        if (!m_comment(m))
            return false;
        m_skip_space(m);
    }
    return true;
}

/* consumePhrase: one or more words (quoted strings or permissive dot-atoms). */
static bool m_phrase(mail *m)
{
    int words = 0;
    for (;;) {
        m_skip_space(m);
        if (m_empty(m))
            break;
        str atom;
        bool empty;
        const char *start = m->p;
        bool ok = *m->p == '"' ? m_quoted(m, &empty) : m_atom(m, true, true, &atom);
        if (!ok) {
            m->p = start;
            break;
        }
        words++;
    }
    return words > 0;
}

/* parseAddress: an addr-spec (with an optional comment), a name-addr, or (handle_group)
 * a group; *count gets the number of addresses. */
static bool m_address(mail *m, bool handle_group, int *count)
{
    m_skip_space(m);
    if (m_empty(m))
        return false;
    if (m_addr_spec(m)) {
        m_skip_space(m);
        *count = 1;
        return !m_consume(m, '(') || m_comment(m);
    }
    if (*m->p != '<' && !m_phrase(m))
        return false;
    m_skip_space(m);
    if (handle_group && m_consume(m, ':')) {
        *count = 0;
        m_skip_space(m);
        if (m_consume(m, ';')) {
            m_skip_cfws(m);
            return true;
        }
        for (;;) {
            int n;
            m_skip_space(m);
            if (!m_address(m, false, &n) || !m_skip_cfws(m))
                return false;
            *count += n;
            if (m_consume(m, ';')) {
                m_skip_cfws(m);
                return true;
            }
            if (!m_consume(m, ','))
                return false;
        }
    }
    *count = 1;
    return m_consume(m, '<') && m_addr_spec(m) && m_consume(m, '>');
}

static bool f_email(str s)
{
    mail m = {s.p, s.p + s.n};
    int count = 0;
    if (!m_address(&m, true, &count) || !m_skip_cfws(&m) || !m_empty(&m))
        return false;
    return count == 1;
}

/* ---- hostnames: strfmt.IsHostname's regular expression and length limits ---- */

enum { U_OTHER, U_LETTER, U_SYMBOL };

/* A coarse \p{L} / \p{S} classification of non-ASCII code points: the ranges below are
 * marks, punctuation, separators, digits, controls and private use (U_OTHER) or symbols
 * (U_SYMBOL); everything else counts as a letter. */
static int uni_class(uint32_t r)
{
    static const struct {
        uint32_t lo, hi;
        int cls;
    } ranges[] = {
        {0x80, 0xA1, U_OTHER},      {0xA2, 0xA6, U_SYMBOL},       {0xA7, 0xA7, U_OTHER},
        {0xA8, 0xA9, U_SYMBOL},     {0xAB, 0xAB, U_OTHER},        {0xAC, 0xAC, U_SYMBOL},
        {0xAD, 0xAD, U_OTHER},      {0xAE, 0xB1, U_SYMBOL},       {0xB2, 0xB3, U_OTHER},
        {0xB4, 0xB4, U_SYMBOL},     {0xB6, 0xB7, U_OTHER},        {0xB8, 0xB8, U_SYMBOL},
        {0xB9, 0xB9, U_OTHER},      {0xBB, 0xBF, U_OTHER},        {0xD7, 0xD7, U_SYMBOL},
        {0xF7, 0xF7, U_SYMBOL},     {0x2C2, 0x2C5, U_SYMBOL},     {0x2D2, 0x2DF, U_SYMBOL},
        {0x300, 0x36F, U_OTHER},    {0x483, 0x489, U_OTHER},      {0x591, 0x5C7, U_OTHER},
        {0x600, 0x61F, U_OTHER},    {0x64B, 0x66D, U_OTHER},      {0x6D4, 0x6ED, U_OTHER},
        {0x6F0, 0x6F9, U_OTHER},    {0x966, 0x96F, U_OTHER},      {0x2000, 0x2043, U_OTHER},
        {0x2044, 0x2044, U_SYMBOL}, {0x2045, 0x2051, U_OTHER},    {0x2052, 0x2052, U_SYMBOL},
        {0x2053, 0x209F, U_OTHER},  {0x20A0, 0x20CF, U_SYMBOL},   {0x20D0, 0x20FF, U_OTHER},
        {0x2100, 0x214F, U_SYMBOL}, {0x2150, 0x218F, U_OTHER},    {0x2190, 0x245F, U_SYMBOL},
        {0x2460, 0x249B, U_OTHER},  {0x249C, 0x24E9, U_SYMBOL},   {0x24EA, 0x24FF, U_OTHER},
        {0x2500, 0x2775, U_SYMBOL}, {0x2776, 0x2793, U_OTHER},    {0x2794, 0x2BFF, U_SYMBOL},
        {0x2E00, 0x2E7F, U_OTHER},  {0x3000, 0x3003, U_OTHER},    {0x3004, 0x3004, U_SYMBOL},
        {0x3007, 0x3011, U_OTHER},  {0x3012, 0x3013, U_SYMBOL},   {0x3014, 0x301F, U_OTHER},
        {0x3020, 0x3020, U_SYMBOL}, {0x3021, 0x3030, U_OTHER},    {0x3036, 0x3037, U_SYMBOL},
        {0x3038, 0x303A, U_OTHER},  {0x303D, 0x303D, U_OTHER},    {0x303E, 0x303F, U_SYMBOL},
        {0xD800, 0xF8FF, U_OTHER},  {0xFE00, 0xFE6F, U_OTHER},    {0xFEFF, 0xFEFF, U_OTHER},
        {0xFF01, 0xFF20, U_OTHER},  {0xFF3B, 0xFF40, U_OTHER},    {0xFF5B, 0xFF65, U_OTHER},
        {0xFFF0, 0xFFFF, U_OTHER},  {0x1F000, 0x1FAFF, U_SYMBOL}, {0xE0000, 0x10FFFF, U_OTHER},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(ranges); i++)
        if (r >= ranges[i].lo && r <= ranges[i].hi)
            return ranges[i].cls;
    return U_LETTER;
}

/* [a-zA-Z0-9\p{S}\p{L}] */
static bool host_char(uint32_t r)
{
    if (r < 0x80)
        return is_alpha((char)r) || is_digit((char)r);
    return uni_class(r) != U_OTHER;
}

/* [a-zA-Z\p{L}] */
static bool host_letter(uint32_t r)
{
    return r < 0x80 ? is_alpha((char)r) : uni_class(r) == U_LETTER;
}

/* The code points of s[from, to) (at most max of them) into out; -1 on invalid UTF-8. */
static int runes(str s, size_t from, size_t to, uint32_t *out, int max)
{
    int n = 0;
    for (size_t i = from; i < to; n++) {
        if (n == max)
            return max + 1;
        int w = decode_rune(s.p + i, to - i, &out[n]);
        if (w == 1 && out[n] == 0xFFFD)
            return -1;
        i += (size_t)w;
    }
    return n;
}

/* One label of the dotted form: C([C-]{0,61}C)? */
static bool host_label(const uint32_t *r, int n)
{
    if (n < 1 || n > 63 || !host_char(r[0]) || !host_char(r[n - 1]))
        return false;
    for (int i = 1; i < n - 1; i++)
        if (!host_char(r[i]) && r[i] != '-')
            return false;
    return true;
}

/* ^(C(-?C{0,62})?|(C([C-]{0,61}C)?\.)+L{2,63})$ with C = [a-zA-Z0-9\p{S}\p{L}] */
static bool host_pattern(str s)
{
    uint32_t r[80];
    const char *dot = last_index(s, '.');
    if (!dot) { /* C, then an optional dash, then up to 62 more C */
        int n = runes(s, 0, s.n, r, 64);
        if (n < 1 || !host_char(r[0]))
            return false;
        int i = n > 1 && r[1] == '-' ? 2 : 1;
        if (n - i > 62)
            return false;
        for (; i < n; i++)
            if (!host_char(r[i]))
                return false;
        return true;
    }
    size_t tld = (size_t)(dot - s.p) + 1;
    int n = runes(s, tld, s.n, r, 63);
    if (n < 2 || n > 63)
        return false;
    for (int i = 0; i < n; i++)
        if (!host_letter(r[i]))
            return false;
    for (size_t start = 0; start < tld;) {
        const char *end = memchr(s.p + start, '.', tld - start);
        int m = runes(s, start, (size_t)(end - s.p), r, 63);
        if (m < 0 || !host_label(r, m))
            return false;
        start = (size_t)(end - s.p) + 1;
    }
    return true;
}

static bool f_hostname(str s)
{
    if (!host_pattern(s) || s.n > 255)
        return false;
    for (size_t start = 0; start <= s.n;) {
        const char *end = memchr(s.p + start, '.', s.n - start);
        size_t len = (end ? (size_t)(end - s.p) : s.n) - start;
        if (len > 63)
            return false;
        if (!end)
            break;
        start = (size_t)(end - s.p) + 1;
    }
    return true;
}

/* ---- dates, times and durations ---- */

static int days_in(int month, int year)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : days[month - 1];
}

static int num2(const char *p)
{
    return (p[0] - '0') * 10 + (p[1] - '0');
}

/* time.Parse("2006-01-02", s) */
static bool f_date(str s)
{
    if (s.n != 10 || s.p[4] != '-' || s.p[7] != '-')
        return false;
    if (!all_of(s, 0, 4, is_digit_c) || !all_of(s, 5, 7, is_digit_c) ||
        !all_of(s, 8, 10, is_digit_c))
        return false;
    int year = atoi(s.p), month = num2(s.p + 5), day = num2(s.p + 8);
    return month >= 1 && month <= 12 && day >= 1 && day <= days_in(month, year);
}

/* The zone of a date-time: z or [+-]dd:dd (hours and minutes unchecked). */
static bool dt_zone(str z)
{
    if (z.n == 1)
        return z.p[0] == 'z' || z.p[0] == 'Z';
    return z.n == 6 && (z.p[0] == '+' || z.p[0] == '-') && z.p[3] == ':' &&
           all_of(z, 1, 3, is_digit_c) && all_of(z, 4, 6, is_digit_c);
}

/* (.[0-9]+)? before the zone; '.' is any character but a newline. */
static bool dt_fraction(str f)
{
    if (f.n == 0)
        return true;
    uint32_t r;
    int w = decode_rune(f.p, f.n, &r);
    return r != '\n' && (size_t)w < f.n && all_of(f, (size_t)w, f.n, is_digit_c);
}

/* strfmt.IsDateTime: lowercased and split at 't', the first part must be a date and the
 * second match ^(\d\d):(\d\d):(\d\d)(.\d+)?(z|[+-]\d\d:\d\d)$ with hours <= 23 and
 * minutes and seconds <= 59; whatever follows a second 't' is ignored. */
static bool f_datetime(str s)
{
    if (s.n < 4)
        return false;
    size_t t = 0;
    while (t < s.n && s.p[t] != 't' && s.p[t] != 'T')
        t++;
    if (t == s.n || !f_date((str){s.p, t}))
        return false;
    size_t end = t + 1;
    while (end < s.n && s.p[end] != 't' && s.p[end] != 'T')
        end++;
    str r = {s.p + t + 1, end - t - 1};
    if (r.n < 9 || r.p[2] != ':' || r.p[5] != ':' || !all_of(r, 0, 2, is_digit_c) ||
        !all_of(r, 3, 5, is_digit_c) || !all_of(r, 6, 8, is_digit_c))
        return false;
    if (num2(r.p) > 23 || num2(r.p + 3) > 59 || num2(r.p + 6) > 59)
        return false;
    str rest = {r.p + 8, r.n - 8};
    for (size_t zn = 1; zn <= 6; zn += 5)
        if (rest.n >= zn && dt_zone((str){rest.p + rest.n - zn, zn}) &&
            dt_fraction((str){rest.p, rest.n - zn}))
            return true;
    return false;
}

#define DUR_MAX ((uint64_t)1 << 63)

/* time.ParseDuration: [-+]?([0-9]*(\.[0-9]*)?[a-z]+)+ or "0", units ns us µs μs ms s m h,
 * at most 2^63-1 nanoseconds (2^63 when negative). */
static bool go_duration(str s)
{
    static const struct {
        const char *name;
        uint64_t ns;
    } units[] = {{"ns", 1},       {"us", 1000},      {"\xc2\xb5s", 1000}, {"\xce\xbcs", 1000},
                 {"ms", 1000000}, {"s", 1000000000}, {"m", 60000000000},  {"h", 3600000000000}};
    size_t i = 0;
    bool neg = s.n && s.p[0] == '-';
    if (s.n && (s.p[0] == '-' || s.p[0] == '+'))
        i++;
    if (s.n - i == 1 && s.p[i] == '0')
        return true;
    if (i == s.n)
        return false;
    uint64_t d = 0;
    while (i < s.n) {
        uint64_t v = 0, f = 0;
        double scale = 1;
        if (s.p[i] != '.' && !is_digit(s.p[i]))
            return false;
        size_t start = i;
        for (; i < s.n && is_digit(s.p[i]); i++) {
            if (v > DUR_MAX / 10)
                return false;
            v = v * 10 + (uint64_t)(s.p[i] - '0');
            if (v > DUR_MAX)
                return false;
        }
        bool pre = i > start, post = false;
        if (i < s.n && s.p[i] == '.') {
            size_t fs = ++i;
            bool overflow = false;
            for (; i < s.n && is_digit(s.p[i]); i++) {
                if (overflow || f > (DUR_MAX - 1) / 10) {
                    overflow = true;
                    continue;
                }
                f = f * 10 + (uint64_t)(s.p[i] - '0');
                scale *= 10;
            }
            post = i > fs;
        }
        if (!pre && !post)
            return false;
        size_t u = i;
        while (i < s.n && s.p[i] != '.' && !is_digit(s.p[i]))
            i++;
        uint64_t unit = 0;
        for (size_t k = 0; k < KAPI_ARRAY_LEN(units); k++)
            if (strlen(units[k].name) == i - u && memcmp(units[k].name, s.p + u, i - u) == 0)
                unit = units[k].ns;
        if (!unit || v > DUR_MAX / unit)
            return false;
        v *= unit;
        if (f > 0 && (v += (uint64_t)((double)f * ((double)unit / scale))) > DUR_MAX)
            return false;
        if ((d += v) > DUR_MAX)
            return false;
    }
    return neg || d <= DUR_MAX - 1;
}

/* strfmt.ParseDuration's fallback: units by name, ns/nano, us/µs/micro, ms/milli, s/sec,
 * m/min, h/hr/hour, d/day, w/wk/week; the last spelling of each may be followed by more
 * letters ("hours"), the others must match whole (case-insensitively). */
static bool loose_unit(const char *u, size_t n)
{
    static const char *const groups[][4] = {
        {"ns", "nano"}, {"us", "\xc2\xb5s", "micro"}, {"ms", "milli"}, {"s", "sec"},
        {"m", "min"},   {"h", "hr", "hour"},          {"d", "day"},    {"w", "wk", "week"},
    };
    char low[64];
    if (n >= sizeof(low))
        n = sizeof(low) - 1;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)((u[i] >= 'A' && u[i] <= 'Z') ? u[i] + 32 : u[i]);
    low[n] = '\0';
    for (size_t g = 0; g < KAPI_ARRAY_LEN(groups); g++) {
        size_t last = 0;
        while (last + 1 < 4 && groups[g][last + 1])
            last++;
        for (size_t v = 0; v <= last; v++) {
            size_t vl = strlen(groups[g][v]);
            if (strcmp(low, groups[g][v]) == 0 || (v == last && memcmp(low, groups[g][v], vl) == 0))
                return true;
        }
    }
    return false;
}

/* Whether a run of decimal digits fits strconv.Atoi (int64). */
static bool atoi_fits(const char *p, size_t n)
{
    while (n > 1 && *p == '0')
        p++, n--;
    return n < 19 || (n == 19 && memcmp(p, "9223372036854775807", 19) <= 0);
}

/* strfmt.IsDuration: time.ParseDuration, else some (\d+)\s*([A-Za-zµ]+) anywhere with a
 * known unit; a number too big for Atoi fails it. */
static bool f_duration(str s)
{
    if (go_duration(s))
        return true;
    bool ok = false;
    for (size_t i = 0; i < s.n;) {
        if (!is_digit(s.p[i])) {
            i++;
            continue;
        }
        size_t d = i;
        while (i < s.n && is_digit(s.p[i]))
            i++;
        size_t digits = i - d;
        while (i < s.n && is_space(s.p[i]))
            i++;
        size_t u = i;
        while (i < s.n) {
            if (is_alpha(s.p[i]))
                i++;
            else if (s.p[i] == '\xc2' && i + 1 < s.n && s.p[i + 1] == '\xb5')
                i += 2;
            else
                break;
        }
        if (i == u)
            continue; /* no unit: no match can start inside these digits */
        if (!atoi_fits(s.p + d, digits))
            return false;
        if (loose_unit(s.p + u, i - u))
            ok = true;
    }
    return ok;
}

/* ---- the rest of the registry ---- */

/* (?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?V[0-9a-f]{3}-?W[0-9a-f]{3}-?[0-9a-f]{12}$ where V is a
 * version digit (or any hex digit) and W a variant ([89ab], or any hex digit). */
static bool uuid(str s, char version, bool variant)
{
    static const size_t groups[] = {8, 4, 4, 4, 12};
    size_t i = 0;
    for (size_t g = 0; g < 5; g++) {
        if (g > 0 && i < s.n && s.p[i] == '-')
            i++;
        if (s.n - i < groups[g] || !all_of(s, i, i + groups[g], is_xdigit_c))
            return false;
        if (g == 2 && version && s.p[i] != version)
            return false;
        if (g == 3 && variant && !strchr("89abAB", s.p[i]))
            return false;
        i += groups[g];
    }
    return i == s.n;
}

static bool f_uuid(str s)
{
    return uuid(s, 0, false);
}

static bool f_uuid3(str s)
{
    return uuid(s, '3', false);
}

static bool f_uuid4(str s)
{
    return uuid(s, '4', true);
}

static bool f_uuid5(str s)
{
    return uuid(s, '5', true);
}

/* govalidator.IsISBN after removing [\s-]+: ten digits (or nine and X) with the mod-11
 * checksum, or thirteen digits with the 1-3 weighted checksum. */
static bool isbn(str s, int version)
{
    char d[16];
    size_t n = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (is_space(s.p[i]) || s.p[i] == '-')
            continue;
        if (n == sizeof(d))
            return false;
        d[n++] = s.p[i];
    }
    str c = {d, n};
    if (version == 10) {
        if (n != 10 || !all_of(c, 0, 9, is_digit_c) || !(is_digit(d[9]) || d[9] == 'X'))
            return false;
        int sum = 0;
        for (int i = 0; i < 9; i++)
            sum += (i + 1) * (d[i] - '0');
        sum += 10 * (d[9] == 'X' ? 10 : d[9] - '0');
        return sum % 11 == 0;
    }
    if (n != 13 || !all_of(c, 0, 13, is_digit_c))
        return false;
    int sum = 0;
    for (int i = 0; i < 12; i++)
        sum += (i % 2 ? 3 : 1) * (d[i] - '0');
    return d[12] - '0' - (10 - sum % 10) % 10 == 0;
}

static bool f_isbn10(str s)
{
    return isbn(s, 10);
}

static bool f_isbn13(str s)
{
    return isbn(s, 13);
}

static bool f_isbn(str s)
{
    return isbn(s, 10) || isbn(s, 13);
}

/* rxCreditCard: 4\d{12}(\d{3})? | 5[1-5]\d{14} | 6(011|5\d\d)\d{12} | 3[47]\d{13} |
 * 3(0[0-5]|[68]\d)\d{11} | (2131|1800|35\d{3})\d{11} */
static bool card_number(const char *d, size_t n)
{
    if (d[0] == '4')
        return n == 13 || n == 16;
    if (n == 16)
        return (d[0] == '5' && d[1] >= '1' && d[1] <= '5') || memcmp(d, "6011", 4) == 0 ||
               (d[0] == '6' && d[1] == '5') || (d[0] == '3' && d[1] == '5');
    if (n == 15)
        return (d[0] == '3' && (d[1] == '4' || d[1] == '7')) || memcmp(d, "2131", 4) == 0 ||
               memcmp(d, "1800", 4) == 0;
    if (n == 14)
        return d[0] == '3' && ((d[1] == '0' && d[2] <= '5') || d[1] == '6' || d[1] == '8');
    return false;
}

/* govalidator.IsCreditCard: the digits (everything else dropped) must look like a known
 * card number and pass the Luhn check. */
static bool f_creditcard(str s)
{
    char d[24];
    size_t n = 0;
    for (size_t i = 0; i < s.n; i++)
        if (is_digit(s.p[i])) {
            if (n == sizeof(d))
                return false;
            d[n++] = s.p[i];
        }
    if (n < 13 || !card_number(d, n))
        return false;
    int sum = 0;
    for (size_t k = 0; k < n; k++) {
        int v = d[n - 1 - k] - '0';
        if (k % 2 == 1)
            v = v * 2 >= 10 ? v * 2 % 10 + 1 : v * 2;
        sum += v;
    }
    return sum % 10 == 0;
}

/* govalidator.IsSSN: eleven characters matching ^\d{3}[- ]?\d{2}[- ]?\d{4}$ */
static bool f_ssn(str s)
{
    return s.n == 11 && all_of(s, 0, 3, is_digit_c) && (s.p[3] == '-' || s.p[3] == ' ') &&
           all_of(s, 4, 6, is_digit_c) && (s.p[6] == '-' || s.p[6] == ' ') &&
           all_of(s, 7, 11, is_digit_c);
}

/* ^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$ */
static bool f_hexcolor(str s)
{
    size_t i = s.n && s.p[0] == '#';
    return (s.n - i == 3 || s.n - i == 6) && all_of(s, i, s.n, is_xdigit_c);
}

/* One 0-255 component of rgb(): 0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5] */
static bool rgb_num(str s, size_t *i)
{
    size_t start = *i;
    while (*i < s.n && is_digit(s.p[*i]))
        (*i)++;
    size_t n = *i - start;
    if (n == 0 || n > 3 || (n > 1 && s.p[start] == '0'))
        return false;
    return atoi(s.p + start) <= 255 || n < 3;
}

static void skip_space(str s, size_t *i)
{
    while (*i < s.n && is_space(s.p[*i]))
        (*i)++;
}

/* ^rgb\(\s*N\s*,\s*N\s*,\s*N\s*\)$ */
static bool f_rgbcolor(str s)
{
    if (s.n < 4 || memcmp(s.p, "rgb(", 4) != 0)
        return false;
    size_t i = 4;
    for (int k = 0; k < 3; k++) {
        skip_space(s, &i);
        if (!rgb_num(s, &i))
            return false;
        skip_space(s, &i);
        if (i >= s.n || s.p[i++] != (k < 2 ? ',' : ')'))
            return false;
    }
    return i == s.n;
}

/* govalidator.IsBase64: standard alphabet, padded, at least one quantum. */
static bool f_byte(str s)
{
    if (s.n == 0 || s.n % 4 != 0)
        return false;
    for (size_t i = 0; i < s.n; i++) {
        char c = s.p[i];
        bool b64 = is_alpha(c) || is_digit(c) || c == '+' || c == '/';
        bool pad = c == '=' && i >= s.n - 2 && (i == s.n - 1 || s.p[s.n - 1] == '=');
        if (!b64 && !pad)
            return false;
    }
    return true;
}

/* bson ObjectIDFromHex: 24 hex digits. */
static bool f_bsonobjectid(str s)
{
    return s.n == 24 && all_of(s, 0, 24, is_xdigit_c);
}

static bool f_password(str s)
{
    (void)s;
    return true;
}

typedef bool (*format_fn)(str s);

/* apiextensions' supportedFormats, each with kube-openapi's checker; sorted by name. */
static const struct {
    const char *name;
    format_fn fn;
} formats[] = {
    {"bsonobjectid", f_bsonobjectid},
    {"byte", f_byte},
    {"cidr", f_cidr},
    {"creditcard", f_creditcard},
    {"date", f_date},
    {"datetime", f_datetime},
    {"duration", f_duration},
    {"email", f_email},
    {"hexcolor", f_hexcolor},
    {"hostname", f_hostname},
    {"ipv4", f_ipv4},
    {"ipv6", f_ipv6},
    {"isbn", f_isbn},
    {"isbn10", f_isbn10},
    {"isbn13", f_isbn13},
    {"mac", f_mac},
    {"password", f_password},
    {"rgbcolor", f_rgbcolor},
    {"ssn", f_ssn},
    {"uri", f_uri},
    {"uuid", f_uuid},
    {"uuid3", f_uuid3},
    {"uuid4", f_uuid4},
    {"uuid5", f_uuid5},
};

int kapi_schema__format_id(const char *name)
{
    char norm[32];
    size_t n = 0;
    if (!name)
        return -1;
    for (; *name; name++) {
        if (*name == '-')
            continue;
        if (n + 1 == sizeof(norm))
            return -1;
        norm[n++] = *name;
    }
    norm[n] = '\0';
    size_t lo = 0, hi = KAPI_ARRAY_LEN(formats);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(norm, formats[mid].name);
        if (c == 0)
            return (int)mid;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return -1;
}

bool kapi_schema__format_check(int id, const char *s, size_t n)
{
    if (id < 0 || (size_t)id >= KAPI_ARRAY_LEN(formats))
        return true;
    return formats[id].fn((str){s, n});
}
