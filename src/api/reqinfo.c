/*
 * api/reqinfo: what a request asks for, read from its path, method and query the way
 * kube-apiserver's RequestInfoFactory reads them (reference 4.1).
 */
#include <string.h>
#include <strings.h>

#include "api/api_int.h"

/* Percent-decodes s into the arena ('+' is a space when plus_space); NULL if malformed. */
static char *unescape(kapi_arena *a, kapi_str s, bool plus_space)
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
    return out;
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
        p->key = unescape(&r->arena, key, true);
        p->value = has_value ? unescape(&r->arena, pair, true) : "";
        if (!p->key || !p->value)
            return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "invalid URL escape in query");
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

/* runtime.Convert_Slice_string_To_bool: any value but "0" and "false" is true. */
static bool truthy(const char *v)
{
    return v && strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0;
}

static const char *verb_of(const kapi_req *r)
{
    const char *m = r->http->method;
    bool named = *r->info.name != '\0';
    if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0)
        return r->info.watch_path || truthy(kapi_api__query(r, "watch")) ? "watch"
               : named                                                   ? "get"
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

/* Fills the resource parts of r->info from the parts after /api(s)/<group>/<version>. */
static void resource_parts(kapi_req *r, char **parts, size_t n)
{
    kapi_reqinfo *in = &r->info;
    /* The deprecated /watch/ form: /api/v1/watch/namespaces/ns/pods/name. */
    if (n > 0 && strcmp(parts[0], "watch") == 0) {
        in->watch_path = true;
        parts++;
        n--;
    }
    /* A namespace's own subresources (status, finalize) are not namespaced resources. */
    if (n > 0 && strcmp(parts[0], "namespaces") == 0 && n > 1) {
        in->ns = parts[1];
        if (n > 2 && strcmp(parts[2], "status") != 0 && strcmp(parts[2], "finalize") != 0) {
            parts += 2;
            n -= 2;
        }
    }
    in->nparts = n;
    if (n >= 3)
        in->subresource = parts[2];
    if (n >= 2)
        in->name = parts[1];
    if (n >= 1)
        in->resource = parts[0];
}

kapi_error *kapi_api__parse_request(kapi_req *r)
{
    kapi_error *err;
    kapi_reqinfo *in = &r->info;
    in->group = in->version = in->ns = in->resource = in->name = in->subresource = "";
    in->prefix = "";
    if ((err = parse_query(r)) != NULL)
        return err;
    r->path = unescape(&r->arena, r->http->path, false);
    if (!r->path)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "invalid URL escape in path");

    /* Split into non-empty parts. */
    size_t cap = 1;
    for (const char *c = r->path; *c; c++)
        cap += *c == '/';
    char **parts = kapi_arena_alloc(&r->arena, cap * sizeof(*parts));
    size_t n = 0;
    char *copy = kapi_arena_strdup(&r->arena, r->path), *save = NULL;
    for (char *tok = strtok_r(copy, "/", &save); tok; tok = strtok_r(NULL, "/", &save))
        parts[n++] = tok;

    if (n >= 2 && strcmp(parts[0], "api") == 0) {
        in->prefix = "api";
        in->version = parts[1];
        resource_parts(r, parts + 2, n - 2);
        in->is_resource = true;
    } else if (n >= 3 && strcmp(parts[0], "apis") == 0) {
        in->prefix = "apis";
        in->group = parts[1];
        in->version = parts[2];
        resource_parts(r, parts + 3, n - 3);
        in->is_resource = true;
    } else if (n >= 1) {
        in->prefix = parts[0];
        if (n == 2 && strcmp(parts[0], "apis") == 0)
            in->group = parts[1];
    }
    in->verb = verb_of(r);
    return NULL;
}
