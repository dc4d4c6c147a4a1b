/*
 * api/reqinfo: what a request asks for, read from its path, method and query the way
 * kube-apiserver's RequestInfoFactory reads them (reference 4.1).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api_int.h"
#include "codec/go.h"

/* Percent-decodes s into the arena ('+' is a space when plus_space), NUL-terminated, its
 * length (a %00 decodes to a NUL byte inside it) into *len when len is not NULL; NULL if
 * malformed. */
static char *unescape_n(kapi_arena *a, kapi_str s, bool plus_space, size_t *len)
{
    char *out = kapi_arena_alloc(a, s.len + 1), *o = out;
    for (size_t i = 0; i < s.len; i++) {
        char c = s.ptr[i];
        if (c == '%') {
            if (i + 2 >= s.len)
                return NULL;
            int hi = kapi_hex_value(s.ptr[i + 1]), lo = kapi_hex_value(s.ptr[i + 2]);
            if (hi < 0 || lo < 0)
                return NULL;
            *o++ = (char)(hi * 16 + lo);
            i += 2;
        } else {
            *o++ = plus_space && c == '+' ? ' ' : c;
        }
    }
    *o = '\0';
    if (len)
        *len = (size_t)(o - out);
    return out;
}

/* The C-string view of a path part, of the path or of a query key, that the fixed
 * identifiers are compared with: a NUL, which no group, version, resource, subresource or route
 * holds, is shown as 0x01, which none holds either, so that a part with a NUL names nothing rather
 * than what comes before its NUL. */
static char *c_view(kapi_arena *a, kapi_str s)
{
    if (!memchr(s.ptr, '\0', s.len))
        return (char *)s.ptr;
    char *v = kapi_arena_strndup(a, s.ptr, s.len);
    for (size_t i = 0; i < s.len; i++)
        if (v[i] == '\0')
            v[i] = '\x01';
    return v;
}

/* A query parameter's value: the selectors and every option read values as C strings,
 * which a NUL would cut (fieldSelector=metadata.name=a%00b selecting, and deleting, a),
 * so a value holding one is refused; in kube-apiserver such a value is invalid for every
 * parameter but a field selector, whose value no kapi name can be asked by. */
static kapi_error *query_value(kapi_arena *a, kapi_str s, const char *key, const char **out)
{
    size_t len;
    char *v = unescape_n(a, s, true, &len);
    *out = v;
    if (!v)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "invalid URL escape in query");
    if (memchr(v, '\0', len))
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "invalid value of the query parameter %s: it holds a NUL byte", key);
    return NULL;
}

static kapi_error *parse_query(kapi_req *r)
{
    kapi_str q = r->http->query, pair;
    size_t n = 1;
    for (size_t i = 0; i < q.len; i++)
        n += q.ptr[i] == '&';
    r->query = kapi_arena_alloc(&r->arena, n * sizeof(*r->query));
    while (q.len) {
        kapi_str_cut(&q, '&', &pair);
        if (pair.len == 0)
            continue;
        kapi_str key;
        bool has_value = kapi_str_cut(&pair, '=', &key);
        kapi_query_param *p = &r->query[r->nquery];
        size_t klen;
        char *k = unescape_n(&r->arena, key, true, &klen);
        if (!k)
            return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "invalid URL escape in query");
        p->key = c_view(&r->arena, (kapi_str){k, klen}); /* a NUL: no known parameter */
        p->value = "";
        kapi_error *err = has_value ? query_value(&r->arena, pair, p->key, &p->value) : NULL;
        if (err)
            return err;
        r->nquery++;
    }
    return NULL;
}

const char *kapi_api__query(const kapi_req *r, const char *key)
{
    for (size_t i = 0; i < r->nquery; i++)
        if (strcmp(r->query[i].key, key) == 0)
            return r->query[i].value;
    return NULL;
}

bool kapi_api__query_bool(const kapi_req *r, const char *key)
{
    const char *v = kapi_api__query(r, key);
    return v && strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0;
}

kapi_error *kapi_api__query_int(const kapi_req *r, const char *key, int64_t *out)
{
    const char *v = kapi_api__query(r, key);
    if (!v)
        return NULL;
    const char *digits = v + (*v == '+' || *v == '-');
    const char *why = "invalid syntax";
    if (*digits && strspn(digits, "0123456789") == strlen(digits)) {
        errno = 0;
        long long n = strtoll(v, NULL, 10);
        if (errno != ERANGE) {
            *out = n;
            return NULL;
        }
        why = "value out of range";
    }
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_go_quote(&b, v, strlen(v));
    kapi_error *err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "strconv.ParseInt: parsing %.*s: %s",
                                     (int)b.len, b.ptr, why);
    kapi_buf_dispose(&b);
    return err;
}

static const char *verb_of(const kapi_req *r)
{
    const char *m = r->http->method;
    bool named = r->info.name.len > 0;
    if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0)
        return r->info.watch_path || kapi_api__query_bool(r, "watch") ? "watch"
               : named                                                ? "get"
                                                                      : "list";
    if (strcmp(m, "POST") == 0)
        return "create";
    if (strcmp(m, "PUT") == 0)
        return "update";
    if (strcmp(m, "PATCH") == 0)
        return "patch";
    if (strcmp(m, "DELETE") == 0)
        return named ? "delete" : "deletecollection";
    return m;
}

/* Fills the resource parts of r->info from the parts after /api(s)/<group>/<version>.
 * The namespace and the name keep their lengths: a part may hold a NUL (from %00), and
 * is then that whole part, never the bytes before the NUL. */
static void resource_parts(kapi_req *r, kapi_str *parts, size_t n)
{
    kapi_reqinfo *in = &r->info;
    /* The deprecated /watch/ form: /api/v1/watch/namespaces/ns/pods/name. */
    if (n > 0 && kapi_str_eqc(parts[0], "watch")) {
        in->watch_path = true;
        parts++;
        n--;
    }
    /* A namespace's own subresources (status, finalize) are not namespaced resources. */
    if (n > 0 && kapi_str_eqc(parts[0], "namespaces") && n > 1) {
        in->ns = parts[1];
        if (n > 2 && !kapi_str_eqc(parts[2], "status") && !kapi_str_eqc(parts[2], "finalize")) {
            parts += 2;
            n -= 2;
        }
    }
    in->nparts = n;
    if (n >= 3)
        in->subresource = c_view(&r->arena, parts[2]);
    if (n >= 2)
        in->name = parts[1];
    if (n >= 1)
        in->resource = c_view(&r->arena, parts[0]);
}

/* Splits the decoded path (len bytes) into its non-empty parts, each NUL-terminated in
 * the arena with its length; returns how many. */
static size_t split_path(kapi_arena *a, const char *path, size_t len, kapi_str **out)
{
    size_t cap = 1, n = 0;
    for (size_t i = 0; i < len; i++)
        cap += path[i] == '/';
    kapi_str *parts = kapi_arena_alloc(a, cap * sizeof(*parts));
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && path[j] != '/')
            j++;
        if (j > i)
            parts[n++] = (kapi_str){kapi_arena_strndup(a, path + i, j - i), j - i};
        i = j + 1;
    }
    *out = parts;
    return n;
}

kapi_error *kapi_api__parse_request(kapi_req *r)
{
    kapi_error *err;
    kapi_reqinfo *in = &r->info;
    size_t len;
    in->group = in->version = in->resource = in->subresource = "";
    in->ns = in->name = KAPI_STR("");
    in->prefix = "";
    if ((err = parse_query(r)) != NULL)
        return err;
    char *path = unescape_n(&r->arena, r->http->path, false, &len);
    if (!path)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "invalid URL escape in path");
    r->path = c_view(&r->arena, (kapi_str){path, len});

    kapi_str *parts;
    kapi_arena *a = &r->arena;
    size_t n = split_path(a, path, len, &parts);
    if (n >= 2 && kapi_str_eqc(parts[0], "api")) {
        in->prefix = "api";
        in->version = c_view(a, parts[1]);
        resource_parts(r, parts + 2, n - 2);
        in->is_resource = true;
    } else if (n >= 3 && kapi_str_eqc(parts[0], "apis")) {
        in->prefix = "apis";
        in->group = c_view(a, parts[1]);
        in->version = c_view(a, parts[2]);
        resource_parts(r, parts + 3, n - 3);
        in->is_resource = true;
    } else if (n >= 1) {
        in->prefix = c_view(a, parts[0]);
        if (n == 2 && kapi_str_eqc(parts[0], "apis"))
            in->group = c_view(a, parts[1]);
    }
    in->verb = verb_of(r);
    return NULL;
}
