/*
 * cel/url: Kubernetes 1.26's url library (k8s.io/apiserver/pkg/cel/library/urls.go) and
 * its kubernetes.URL values. The library is Go's net/url, so this file is net/url's parser
 * as Go 1.19 (which Kubernetes 1.26 is built with) has it:
 *
 *   url(s)    an error unless url.ParseRequestURI accepts s (an absolute URI or an
 *             absolute path); then the URL url.Parse makes of s, which, unlike
 *             ParseRequestURI, takes a #fragment off (and may still refuse its escapes)
 *   isURL(s)  whether url.ParseRequestURI accepts s
 *   <URL>.getScheme() .getHost() .getHostname() .getPort() .getEscapedPath()
 *             the URL's Scheme, Host, Hostname(), Port() and EscapedPath()
 *   <URL>.getQuery()
 *             Query(): map(string, list(string)), a repeated key's values in order, '+'
 *             a space, the pairs url.ParseQuery refuses dropped (a bad escape, a ';')
 *
 * Two URLs are equal when their String() forms are, as the URL type's Equal has it. Every
 * error is Go's text, in Kubernetes' words: "URL parse error during conversion from string:
 * parse \"https://a:b:c/\": invalid port \":c\" after host".
 */
#include <stdlib.h>
#include <string.h>

#include "cel/cel_int.h"
#include "codec/go.h"

typedef kapi_cel_value value;
typedef kapi_cel_url url;

/* The parts of a URL, which escape and unescape treat each in their own way (Go's
 * encoding). */
typedef enum encoding {
    ENCODE_PATH,
    ENCODE_HOST,
    ENCODE_ZONE, /* an IPv6 literal's zone, after %25 */
    ENCODE_USER_PASSWORD,
    ENCODE_QUERY_COMPONENT,
    ENCODE_FRAGMENT,
} encoding;

static const kapi_str empty = {"", 0};

static bool in_set(unsigned char c, const char *set)
{
    return c && strchr(set, c);
}

static bool is_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static kapi_str slice(const char *from, const char *to)
{
    return (kapi_str){from, (size_t)(to - from)};
}

static kapi_str arena_str(kapi_arena *a, const kapi_buf *b)
{
    return (kapi_str){kapi_arena_strndup(a, b->ptr, b->len), b->len};
}

/* pre + strconv.Quote(s) + post, in arena a: the errors of net/url that quote a piece. */
static const char *quoted(kapi_arena *a, const char *pre, kapi_str s, const char *post)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, pre);
    kapi_go_quote(&b, s.ptr, s.len);
    kapi_buf_puts(&b, post);
    const char *msg = arena_str(a, &b).ptr;
    kapi_buf_dispose(&b);
    return msg;
}

/* Go's shouldEscape: whether c is written %XX in the part mode names (RFC 3986, with the
 * exceptions net/url makes: a host keeps its sub-delims, ':' and brackets; a path keeps
 * every reserved character but '?'). */
static bool should_escape(unsigned char c, encoding mode)
{
    if (is_alpha(c) || is_digit(c))
        return false;
    if ((mode == ENCODE_HOST || mode == ENCODE_ZONE) && in_set(c, "!$&'()*+,;=:[]<>\""))
        return false;
    if (in_set(c, "-_.~"))
        return false;
    if (in_set(c, "$&+,/:;=?@")) {
        if (mode == ENCODE_PATH)
            return c == '?';
        if (mode == ENCODE_USER_PASSWORD)
            return in_set(c, "@/?:");
        if (mode == ENCODE_FRAGMENT)
            return false;
    }
    return !(mode == ENCODE_FRAGMENT && in_set(c, "!()*"));
}

/* The first pass of Go's unescape: every '%' starts an escape (a host may escape only
 * non-ASCII bytes and %25, a zone only what a host could hold unescaped or a space), a
 * host holds no character it would escape; *n escapes, *plus when '+' is a space. NULL, or
 * the error. */
static const char *check_escapes(kapi_arena *a, kapi_str s, encoding mode, size_t *n, bool *plus)
{
    bool host = mode == ENCODE_HOST || mode == ENCODE_ZONE;
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        *plus |= c == '+' && mode == ENCODE_QUERY_COMPONENT;
        if (c != '%') {
            if (host && c < 0x80 && should_escape(c, mode))
                return quoted(a, "invalid character ", (kapi_str){s.ptr + i, 1}, " in host name");
            continue;
        }
        kapi_str esc = {s.ptr + i, s.len - i < 3 ? s.len - i : 3};
        if (esc.len < 3 || kapi_hex_value(esc.ptr[1]) < 0 || kapi_hex_value(esc.ptr[2]) < 0)
            return quoted(a, "invalid URL escape ", esc, "");
        unsigned char v =
            (unsigned char)(kapi_hex_value(esc.ptr[1]) << 4 | kapi_hex_value(esc.ptr[2]));
        bool pct = kapi_str_eqc(esc, "%25");
        if ((mode == ENCODE_HOST && v < 0x80 && !pct) ||
            (mode == ENCODE_ZONE && !pct && v != ' ' && should_escape(v, ENCODE_HOST)))
            return quoted(a, "invalid URL escape ", esc, "");
        (*n)++;
        i += 2;
    }
    return NULL;
}

/* Go's unescape: s with each %XX decoded (and '+' a space in a query component) into *out,
 * a slice of s when nothing changes; NULL, or the error. */
static const char *unescape(kapi_arena *a, kapi_str s, encoding mode, kapi_str *out)
{
    size_t n = 0;
    bool plus = false;
    const char *why = check_escapes(a, s, mode, &n, &plus);
    if (why || (n == 0 && !plus)) {
        *out = s;
        return why;
    }
    char *p = kapi_arena_alloc(a, s.len - 2 * n + 1);
    size_t k = 0;
    for (size_t i = 0; i < s.len; i++) {
        if (s.ptr[i] == '%') {
            p[k++] = (char)(kapi_hex_value(s.ptr[i + 1]) << 4 | kapi_hex_value(s.ptr[i + 2]));
            i += 2;
        } else {
            p[k++] = s.ptr[i] == '+' && mode == ENCODE_QUERY_COMPONENT ? ' ' : s.ptr[i];
        }
    }
    *out = (kapi_str){p, k};
    return NULL;
}

/* Go's escape, for the parts kapi writes (a query is only ever read): what should_escape
 * says as %XX in upper case; s itself when nothing needs it. */
static kapi_str escape(kapi_arena *a, kapi_str s, encoding mode)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (size_t i = 0; i < s.len; i++)
        n += should_escape((unsigned char)s.ptr[i], mode);
    if (n == 0)
        return s;
    char *p = kapi_arena_alloc(a, s.len + 2 * n + 1);
    size_t k = 0;
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (should_escape(c, mode)) {
            p[k++] = '%';
            p[k++] = hex[c >> 4];
            p[k++] = hex[c & 15];
        } else {
            p[k++] = (char)c;
        }
    }
    return (kapi_str){p, k};
}

/* Go's validEncoded: s needs no escaping beyond what it has (sub-delims, ':', '@',
 * brackets and '%' allowed). */
static bool valid_encoded(kapi_str s, encoding mode)
{
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (!in_set(c, "!$&'()*+,;=:@[]%") && should_escape(c, mode))
            return false;
    }
    return true;
}

/* EscapedPath and EscapedFragment: the raw form when it is a valid escaping of plain, else
 * plain escaped ("*" stays a path of its own, Go's issue 11202). */
static kapi_str escaped(kapi_arena *a, kapi_str raw, kapi_str plain, encoding mode)
{
    kapi_str p;
    if (raw.len && valid_encoded(raw, mode) && !unescape(a, raw, mode, &p) && kapi_str_eq(p, plain))
        return raw;
    if (mode == ENCODE_PATH && kapi_str_eqc(plain, "*"))
        return plain;
    return escape(a, plain, mode);
}

/* setPath and setFragment: the decoded form of the escaped p, and p kept as the raw form
 * only when it is not what escaping the decoded form gives. */
static const char *set_escaped(kapi_arena *a, kapi_str p, encoding mode, kapi_str *plain,
                               kapi_str *raw)
{
    const char *why = unescape(a, p, mode, plain);
    if (why)
        return why;
    *raw = kapi_str_eq(escape(a, *plain, mode), p) ? empty : p;
    return NULL;
}

/* Go's validOptionalPort: empty, or ':' and digits. */
static bool valid_optional_port(kapi_str s)
{
    if (s.len == 0)
        return true;
    if (s.ptr[0] != ':')
        return false;
    for (size_t i = 1; i < s.len; i++)
        if (!is_digit((unsigned char)s.ptr[i]))
            return false;
    return true;
}

/* Go's parseHost: host[:port], an IPv6 literal in brackets with an optional %25 zone. */
static const char *parse_host(kapi_arena *a, kapi_str host, kapi_str *out)
{
    const char *end = host.ptr + host.len, *c;
    if (host.len && host.ptr[0] == '[') {
        const char *rb = memrchr(host.ptr, ']', host.len);
        if (!rb)
            return "missing ']' in host";
        if (!valid_optional_port(slice(rb + 1, end)))
            return quoted(a, "invalid port ", slice(rb + 1, end), " after host");
        const char *zone = memmem(host.ptr, (size_t)(rb - host.ptr), "%25", 3);
        if (zone) {
            kapi_str h[3];
            const char *why = unescape(a, slice(host.ptr, zone), ENCODE_HOST, &h[0]);
            if (!why)
                why = unescape(a, slice(zone, rb), ENCODE_ZONE, &h[1]);
            if (!why)
                why = unescape(a, slice(rb, end), ENCODE_HOST, &h[2]);
            if (why)
                return why;
            kapi_buf b;
            kapi_buf_init(&b);
            for (size_t i = 0; i < 3; i++)
                kapi_buf_put(&b, h[i].ptr, h[i].len);
            *out = arena_str(a, &b);
            kapi_buf_dispose(&b);
            return NULL;
        }
    } else if ((c = memrchr(host.ptr, ':', host.len)) && !valid_optional_port(slice(c, end))) {
        return quoted(a, "invalid port ", slice(c, end), " after host");
    }
    return unescape(a, host, ENCODE_HOST, out);
}

/* Go's validUserinfo (RFC 3986 3.2.1's characters, '%' and '@'; nothing outside ASCII). */
static bool valid_userinfo(kapi_str s)
{
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (!is_alpha(c) && !is_digit(c) && !in_set(c, "-._:~!$&'()*+,;=%@"))
            return false;
    }
    return true;
}

/* Go's parseAuthority: [userinfo@]host[:port], the host after the last '@'. */
static const char *parse_authority(kapi_arena *a, kapi_str authority, url *u)
{
    const char *at = memrchr(authority.ptr, '@', authority.len);
    const char *why =
        parse_host(a, at ? slice(at + 1, authority.ptr + authority.len) : authority, &u->host);
    if (why || !at)
        return why;
    kapi_str info = slice(authority.ptr, at), name;
    if (!valid_userinfo(info))
        return "net/url: invalid userinfo";
    u->has_user = true;
    u->password_set = kapi_str_cut(&info, ':', &name);
    if ((why = unescape(a, name, ENCODE_USER_PASSWORD, &u->username)))
        return why;
    return u->password_set ? unescape(a, info, ENCODE_USER_PASSWORD, &u->password) : NULL;
}

/* Go's getScheme: the scheme ([a-zA-Z][a-zA-Z0-9+.-]*) before raw's first ':', or none
 * (and *rest all of raw) when raw does not start with one. */
static const char *split_scheme(kapi_str raw, kapi_str *scheme, kapi_str *rest)
{
    *rest = raw;
    for (size_t i = 0; i < raw.len; i++) {
        unsigned char c = (unsigned char)raw.ptr[i];
        if (is_alpha(c))
            continue;
        if ((is_digit(c) || c == '+' || c == '-' || c == '.') && i > 0)
            continue;
        if (c != ':')
            return NULL;
        if (i == 0)
            return "missing protocol scheme";
        *scheme = (kapi_str){raw.ptr, i};
        *rest = slice(raw.ptr + i + 1, raw.ptr + raw.len);
        return NULL;
    }
    return NULL;
}

/* The part of parse after the scheme and query: the rest is opaque, or an authority
 * and a path, or only a path. */
static const char *parse_rest(kapi_arena *a, kapi_str rest, bool via_request, url *u)
{
    bool slash = rest.len && rest.ptr[0] == '/';
    if (!slash) {
        if (u->scheme.len) { /* RFC 3986's rootless paths are opaque */
            u->opaque = rest;
            return NULL;
        }
        if (via_request)
            return "invalid URI for request";
        kapi_str after = rest, segment;
        kapi_str_cut(&after, '/', &segment);
        if (memchr(segment.ptr, ':', segment.len))
            return "first path segment in URL cannot contain colon";
    }
    if ((u->scheme.len || (!via_request && !kapi_str_has_prefix(rest, "///"))) &&
        kapi_str_has_prefix(rest, "//")) {
        kapi_str authority = slice(rest.ptr + 2, rest.ptr + rest.len);
        const char *s = memchr(authority.ptr, '/', authority.len);
        rest = s ? slice(s, authority.ptr + authority.len)
                 : slice(rest.ptr + rest.len, rest.ptr + rest.len);
        authority.len = s ? (size_t)(s - authority.ptr) : authority.len;
        const char *why = parse_authority(a, authority, u);
        if (why)
            return why;
    } else if (u->scheme.len && slash) {
        u->omit_host = true;
    }
    return set_escaped(a, rest, ENCODE_PATH, &u->path, &u->raw_path);
}

/* Go's parse: raw as ParseRequestURI (via_request) or Parse (without the fragment) read
 * it, into *u; NULL, or the error (without Go's "parse \"...\": "). */
static const char *parse(kapi_arena *a, kapi_str raw, bool via_request, url *u)
{
    *u = (url){.scheme = empty,
               .opaque = empty,
               .username = empty,
               .password = empty,
               .host = empty,
               .path = empty,
               .raw_path = empty,
               .raw_query = empty,
               .fragment = empty,
               .raw_fragment = empty,
               .text = empty};
    for (size_t i = 0; i < raw.len; i++)
        if ((unsigned char)raw.ptr[i] < ' ' || raw.ptr[i] == 0x7f)
            return "net/url: invalid control character in URL";
    if (raw.len == 0 && via_request)
        return "empty url";
    if (kapi_str_eqc(raw, "*")) {
        u->path = raw;
        return NULL;
    }
    kapi_str rest;
    const char *why = split_scheme(raw, &u->scheme, &rest);
    if (why)
        return why;
    char *lower = kapi_arena_strndup(a, u->scheme.ptr, u->scheme.len);
    for (char *p = lower; *p; p++)
        *p = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
    u->scheme.ptr = lower;
    const char *q = memchr(rest.ptr, '?', rest.len);
    if (q && q == rest.ptr + rest.len - 1) { /* one '?', at the end */
        u->force_query = true;
        rest.len--;
    } else if (q) {
        u->raw_query = slice(q + 1, rest.ptr + rest.len);
        rest.len = (size_t)(q - rest.ptr);
    }
    return parse_rest(a, rest, via_request, u);
}

/* Go's URL.String(): scheme:opaque?query#fragment or
 * scheme://userinfo@host/path?query#fragment, each part as Go leaves it out. */
static kapi_str url_string(kapi_arena *a, const url *u)
{
    kapi_buf b;
    kapi_buf_init(&b);
    if (u->scheme.len)
        kapi_buf_printf(&b, "%.*s:", KAPI_STR_FMT(u->scheme));
    if (u->opaque.len) {
        kapi_buf_put(&b, u->opaque.ptr, u->opaque.len);
    } else {
        bool authority = u->scheme.len || u->host.len || u->has_user;
        if (authority && !(u->omit_host && !u->host.len && !u->has_user)) {
            if (u->host.len || u->path.len || u->has_user)
                kapi_buf_puts(&b, "//");
            if (u->has_user) {
                kapi_str name = escape(a, u->username, ENCODE_USER_PASSWORD);
                kapi_buf_put(&b, name.ptr, name.len);
                if (u->password_set) {
                    kapi_str pass = escape(a, u->password, ENCODE_USER_PASSWORD);
                    kapi_buf_printf(&b, ":%.*s", KAPI_STR_FMT(pass));
                }
                kapi_buf_putc(&b, '@');
            }
            kapi_str host = escape(a, u->host, ENCODE_HOST);
            kapi_buf_put(&b, host.ptr, host.len);
        }
        kapi_str path = escaped(a, u->raw_path, u->path, ENCODE_PATH), after = path, segment;
        if (path.len && path.ptr[0] != '/' && u->host.len)
            kapi_buf_putc(&b, '/');
        kapi_str_cut(&after, '/', &segment);
        if (b.len == 0 && memchr(segment.ptr, ':', segment.len)) /* not to read as a scheme */
            kapi_buf_puts(&b, "./");
        kapi_buf_put(&b, path.ptr, path.len);
    }
    if (u->force_query || u->raw_query.len)
        kapi_buf_printf(&b, "?%.*s", KAPI_STR_FMT(u->raw_query));
    if (u->fragment.len) {
        kapi_str f = escaped(a, u->raw_fragment, u->fragment, ENCODE_FRAGMENT);
        kapi_buf_printf(&b, "#%.*s", KAPI_STR_FMT(f));
    }
    kapi_str s = arena_str(a, &b);
    kapi_buf_dispose(&b);
    return s;
}

/* Kubernetes' error for s that Go refuses: "URL parse error during conversion from
 * string: " and Go's url.Error ("parse \"s\": why"). */
static value url_error(kapi_arena *a, kapi_str s, const char *why)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "URL parse error during conversion from string: parse ");
    kapi_go_quote(&b, s.ptr, s.len);
    kapi_buf_printf(&b, ": %s", why);
    value e = {.t = KAPI_CEL_T_ERROR, .u.error = arena_str(a, &b).ptr};
    kapi_buf_dispose(&b);
    return e;
}

/* url(s): ParseRequestURI's verdict on s, then Parse's URL of it: s without its #fragment
 * parsed as any URL reference, and the fragment decoded. */
static value to_url(kapi_arena *a, kapi_str s)
{
    url *u = kapi_arena_alloc(a, sizeof(*u));
    kapi_str raw = {kapi_arena_strndup(a, s.ptr, s.len), s.len}, frag = raw, before;
    const char *why = parse(a, raw, true, u);
    if (why)
        return url_error(a, raw, why);
    kapi_str_cut(&frag, '#', &before);
    if ((why = parse(a, before, false, u)))
        return url_error(a, before, why);
    if (frag.len && (why = set_escaped(a, frag, ENCODE_FRAGMENT, &u->fragment, &u->raw_fragment)))
        return url_error(a, raw, why);
    u->text = url_string(a, u);
    return (value){.t = KAPI_CEL_T_URL, .u.url = u};
}

/* Go's splitHostPort: the port after the last ':' if it is digits, the host before it
 * without an IPv6 literal's brackets. */
static void split_host_port(kapi_str host_port, kapi_str *host, kapi_str *port)
{
    *host = host_port;
    *port = empty;
    const char *end = host_port.ptr + host_port.len;
    const char *c = memrchr(host_port.ptr, ':', host_port.len);
    if (c && valid_optional_port(slice(c, end))) {
        *host = slice(host_port.ptr, c);
        *port = slice(c + 1, end);
    }
    if (host->len >= 2 && host->ptr[0] == '[' && host->ptr[host->len - 1] == ']')
        *host = (kapi_str){host->ptr + 1, host->len - 2};
}

static value string_value(kapi_arena *a, kapi_str s)
{
    return kapi_cel__string(a, KAPI_CEL_T_STRING, s.ptr, s.len);
}

static value get_scheme(kapi_arena *a, const url *u)
{
    return string_value(a, u->scheme);
}

static value get_host(kapi_arena *a, const url *u)
{
    return string_value(a, u->host);
}

static value get_hostname(kapi_arena *a, const url *u)
{
    kapi_str host, port;
    split_host_port(u->host, &host, &port);
    return string_value(a, host);
}

static value get_port(kapi_arena *a, const url *u)
{
    kapi_str host, port;
    split_host_port(u->host, &host, &port);
    return string_value(a, port);
}

static value get_escaped_path(kapi_arena *a, const url *u)
{
    return string_value(a, escaped(a, u->raw_path, u->path, ENCODE_PATH));
}

/* One key=value pair of a query, decoded, and where it was. */
typedef struct pair {
    kapi_str key, val;
    size_t at;
} pair;

static int pair_cmp(const void *p, const void *q)
{
    const pair *x = p, *y = q;
    size_t n = x->key.len < y->key.len ? x->key.len : y->key.len;
    int c = n ? memcmp(x->key.ptr, y->key.ptr, n) : 0;
    if (c == 0)
        c = x->key.len < y->key.len ? -1 : x->key.len > y->key.len;
    if (c == 0)
        c = x->at < y->at ? -1 : 1;
    return c;
}

/* Query(), Go's ParseQuery with its errors dropped: pairs split at '&' and then at the
 * first '=', a pair holding ';' or a bad escape left out, an empty one skipped. The pairs
 * are sorted by key (then place) so that a key's values gather in one pass. */
static value get_query(kapi_arena *a, const url *u)
{
    kapi_str q = u->raw_query, item;
    size_t max = 1;
    for (size_t i = 0; i < q.len; i++)
        max += q.ptr[i] == '&';
    pair *pairs = kapi_arena_alloc(a, max * sizeof(*pairs));
    size_t n = 0;
    while (q.len) {
        kapi_str_cut(&q, '&', &item);
        if (memchr(item.ptr, ';', item.len) || item.len == 0)
            continue;
        kapi_str val = item, key;
        kapi_str_cut(&val, '=', &key);
        if (unescape(a, key, ENCODE_QUERY_COMPONENT, &pairs[n].key) ||
            unescape(a, val, ENCODE_QUERY_COMPONENT, &pairs[n].val))
            continue;
        pairs[n].at = n;
        n++;
    }
    qsort(pairs, n, sizeof(*pairs), pair_cmp);
    value *keys = kapi_arena_alloc(a, (n ? n : 1) * sizeof(*keys));
    value *lists = kapi_arena_alloc(a, (n ? n : 1) * sizeof(*lists));
    value *vals = kapi_arena_alloc(a, (n ? n : 1) * sizeof(*vals));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        vals[i] = string_value(a, pairs[i].val);
        if (i == 0 || !kapi_str_eq(pairs[i].key, pairs[i - 1].key)) {
            keys[k] = string_value(a, pairs[i].key);
            lists[k++] = (value){.t = KAPI_CEL_T_LIST, .u.list = {.v = &vals[i], .n = 0}};
        }
        lists[k - 1].u.list.n++;
    }
    return (value){.t = KAPI_CEL_T_MAP, .u.map = {keys, lists, k}};
}

/* The methods of a URL, by function. */
static value (*const getters[FN_COUNT])(kapi_arena *a, const url *u) = {
    [FN_GET_SCHEME] = get_scheme,     [FN_GET_HOST] = get_host,
    [FN_GET_HOSTNAME] = get_hostname, [FN_GET_PORT] = get_port,
    [FN_GET_QUERY] = get_query,       [FN_GET_ESCAPED_PATH] = get_escaped_path,
};

bool kapi_cel__url(kapi_arena *a, cel_fn fn, const value *args, size_t n, value *out)
{
    if (n != 1)
        return false;
    if (args[0].t == KAPI_CEL_T_STRING && fn == FN_URL) {
        *out = to_url(a, args[0].u.s);
        return true;
    }
    if (args[0].t == KAPI_CEL_T_STRING && fn == FN_IS_URL) {
        url u;
        *out = (value){.t = KAPI_CEL_T_BOOL, .u.b = parse(a, args[0].u.s, true, &u) == NULL};
        return true;
    }
    if (args[0].t != KAPI_CEL_T_URL || !getters[fn])
        return false;
    *out = getters[fn](a, args[0].u.url);
    return true;
}
