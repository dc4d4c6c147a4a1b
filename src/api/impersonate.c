/*
 * api/impersonate: kube-apiserver's impersonation filter, after authentication and before
 * authorization. Impersonate-User (a service account's user name asks for the service
 * account), each Impersonate-Group, each value of each Impersonate-Extra-<key>, and
 * Impersonate-Uid are each a request the caller must be allowed the verb "impersonate"
 * on: users, groups, serviceaccounts (in their namespace), and in authentication.k8s.io
 * userextras/<key> and uids. The first that is not allowed is kube's 403 for it; asking
 * for groups, extras or a uid without a user is kube's plain-text 500. When all are
 * allowed the request goes on as the user asked for, in the groups asked for (a service
 * account's own when none are), plus system:authenticated (system:unauthenticated for
 * system:anonymous) unless one of those is asked for already.
 */
#include <string.h>
#include <strings.h>

#include "api/api_int.h"
#include "codec/go.h"

#define SA_PREFIX "system:serviceaccount:"

/* One thing asked for: kube's ObjectReference of it. */
typedef struct want {
    const char *kind; /* ServiceAccount, User, Group, UserExtra, UID */
    const char *ns, *name;
    const char *api_version; /* UserExtra, UID: authentication.k8s.io/v1 */
    const char *field;       /* UserExtra: the key */
} want;

typedef struct wants {
    want v[64];
    size_t n;
    bool user, groups, extras, uid;
} wants;

/* A DNS-1123 label (a namespace), or subdomain (a service account name). */
static bool dns_name(kapi_str s, bool subdomain)
{
    if (s.len == 0 || s.len > (subdomain ? 253u : 63u))
        return false;
    for (size_t i = 0; i < s.len; i++) {
        char c = s.ptr[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && !(c == '-' && i > 0 && i + 1 < s.len) &&
            !(subdomain && c == '.' && i > 0 && i + 1 < s.len))
            return false;
    }
    return true;
}

/* serviceaccount.SplitUsername: system:serviceaccount:<namespace>:<name>, both valid. */
static bool split_sa(kapi_req *r, const char *user, const char **ns, const char **name)
{
    kapi_str rest, head;
    if (strncmp(user, SA_PREFIX, strlen(SA_PREFIX)) != 0)
        return false;
    rest = kapi_str_c(user + strlen(SA_PREFIX));
    if (!kapi_str_cut(&rest, ':', &head) || memchr(rest.ptr, ':', rest.len) ||
        !dns_name(head, false) || !dns_name(rest, true))
        return false;
    *ns = kapi_arena_strndup(&r->arena, head.ptr, head.len);
    *name = kapi_arena_strndup(&r->arena, rest.ptr, rest.len);
    return true;
}

/* %-decodes an extra's key as url.PathUnescape does; a malformed one stays as it is. */
static const char *unescape_key(kapi_req *r, const char *key)
{
    size_t n = strlen(key), k = 0;
    char *out = kapi_arena_alloc(&r->arena, n + 1);
    for (size_t i = 0; i < n; i++) {
        if (key[i] != '%') {
            out[k++] = key[i];
            continue;
        }
        unsigned v = 0;
        for (size_t j = 1; j <= 2; j++) {
            char c = i + j < n ? key[i + j] : 0;
            int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            if (d < 0)
                return key;
            v = v * 16 + (unsigned)d;
        }
        out[k++] = (char)v;
        i += 2;
    }
    out[k] = '\0';
    return out;
}

static void add(wants *w, want x)
{
    if (w->n < KAPI_ARRAY_LEN(w->v))
        w->v[w->n++] = x;
}

static void collect(kapi_req *r, wants *w)
{
    const kapi_http_request *h = r->http;
    const char *user = kapi_http_header_get(h, "impersonate-user");
    const char *uid = kapi_http_header_get(h, "impersonate-uid");
    static const char extra[] = "impersonate-extra-";
    if (user && *user) {
        const char *ns, *name;
        w->user = true;
        if (split_sa(r, user, &ns, &name))
            add(w, (want){"ServiceAccount", ns, name, "", ""});
        else
            add(w, (want){"User", "", user, "", ""});
    }
    for (size_t i = 0; i < h->nheaders; i++) {
        if (strcasecmp(h->headers[i].name, "impersonate-group") == 0) {
            w->groups = true;
            add(w, (want){"Group", "", h->headers[i].value, "", ""});
        }
    }
    for (size_t i = 0; i < h->nheaders; i++) {
        const char *name = h->headers[i].name;
        if (strncasecmp(name, extra, sizeof(extra) - 1) != 0)
            continue;
        char *key = kapi_arena_strdup(&r->arena, name + sizeof(extra) - 1);
        for (char *p = key; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        w->extras = true;
        add(w, (want){"UserExtra", "", h->headers[i].value, "authentication.k8s.io/v1",
                      unescape_key(r, key)});
    }
    if (uid && *uid) {
        w->uid = true;
        add(w, (want){"UID", "", uid, "authentication.k8s.io/v1", ""});
    }
}

/* responsewriters.InternalError: plain text, the request URI quoted, the error's %v (a
 * slice of ObjectReference printed as Go prints structs), & < > as HTML entities. */
static void answer_without_user(kapi_req *r, const wants *w)
{
    kapi_buf b, uri, out;
    kapi_buf_init(&b);
    kapi_buf_init(&out);
    kapi_buf_init(&uri);
    kapi_buf_put(&uri, r->http->path.ptr, r->http->path.len);
    if (r->http->query.len) {
        kapi_buf_putc(&uri, '?');
        kapi_buf_put(&uri, r->http->query.ptr, r->http->query.len);
    }
    kapi_buf_puts(&b, "Internal Server Error: ");
    kapi_go_quote(&b, uri.ptr ? uri.ptr : "", uri.len);
    kapi_buf_puts(&b, ": requested [");
    for (size_t i = 0; i < w->n; i++)
        kapi_buf_printf(&b, "%s{%s %s %s  %s  %s}", i ? " " : "", w->v[i].kind, w->v[i].ns,
                        w->v[i].name, w->v[i].api_version, w->v[i].field);
    kapi_buf_puts(&b, "] without impersonating a user");
    for (size_t i = 0; i < b.len; i++) {
        char c = b.ptr[i];
        kapi_buf_puts(&out, c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : "");
        if (c != '&' && c != '<' && c != '>')
            kapi_buf_putc(&out, c);
    }
    kapi_buf_putc(&out, '\n');
    kapi_api__respond_text(r, 500, out.ptr);
    kapi_buf_dispose(&b);
    kapi_buf_dispose(&uri);
    kapi_buf_dispose(&out);
}

/* The attributes of the impersonate check for one thing asked for. */
static kapi_authz_attrs check_of(kapi_req *r, const want *x)
{
    kapi_authz_attrs a = {.user = &r->user,
                          .verb = "impersonate",
                          .resource = true,
                          .group = "",
                          .subresource = "",
                          .name = kapi_str_c(x->name),
                          .path = r->path};
    if (strcmp(x->kind, "ServiceAccount") == 0) {
        a.resource_name = "serviceaccounts";
        a.ns = kapi_str_c(x->ns);
    } else if (strcmp(x->kind, "User") == 0) {
        a.resource_name = "users";
    } else if (strcmp(x->kind, "Group") == 0) {
        a.resource_name = "groups";
    } else if (strcmp(x->kind, "UserExtra") == 0) {
        a.group = "authentication.k8s.io";
        a.resource_name = "userextras";
        a.subresource = x->field;
    } else {
        a.group = "authentication.k8s.io";
        a.resource_name = "uids";
    }
    return a;
}

static bool has(const char *const *groups, size_t n, const char *g)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(groups[i], g) == 0)
            return true;
    return false;
}

/* Whether a header may ask for an impersonation: one pass over the headers, where
 * collect makes four, for the requests (most) that ask for none. */
static bool any_impersonate_header(const kapi_http_request *h)
{
    static const char prefix[] = "impersonate-";
    for (size_t i = 0; i < h->nheaders; i++)
        if (strncasecmp(h->headers[i].name, prefix, sizeof(prefix) - 1) == 0)
            return true;
    return false;
}

bool kapi_api__impersonate(kapi_req *r)
{
    wants w = {0};
    const char *name = NULL, *uid = "";
    const char **groups;
    size_t n = 0;
    if (!any_impersonate_header(r->http))
        return true;
    collect(r, &w);
    if (w.n == 0)
        return true;
    if (!w.user) {
        answer_without_user(r, &w);
        return false;
    }
    groups = kapi_arena_alloc(&r->arena, (w.n + 4) * sizeof(*groups));
    for (size_t i = 0; i < w.n; i++) {
        const want *x = &w.v[i];
        kapi_authz_attrs a = check_of(r, x);
        kapi_buf reason;
        kapi_buf_init(&reason);
        if (!kapi_api__authorized(r->api, &a, &reason, false)) {
            kapi_api__respond_error(r, kapi_api__forbidden(&a, reason.ptr ? reason.ptr : ""));
            kapi_buf_dispose(&reason);
            return false;
        }
        kapi_buf_dispose(&reason);
        if (strcmp(x->kind, "ServiceAccount") == 0) {
            name = kapi_arena_printf(&r->arena, SA_PREFIX "%s:%s", x->ns, x->name);
            if (!w.groups) {
                groups[n++] = "system:serviceaccounts";
                groups[n++] = kapi_arena_printf(&r->arena, "system:serviceaccounts:%s", x->ns);
            }
        } else if (strcmp(x->kind, "User") == 0) {
            name = x->name;
        } else if (strcmp(x->kind, "Group") == 0) {
            groups[n++] = x->name;
        } else if (strcmp(x->kind, "UID") == 0) {
            uid = x->name;
        }
    }
    if (strcmp(name, "system:anonymous") != 0) {
        if (!has(groups, n, "system:authenticated") && !has(groups, n, "system:unauthenticated"))
            groups[n++] = "system:authenticated";
    } else if (!has(groups, n, "system:unauthenticated")) {
        groups[n++] = "system:unauthenticated";
    }
    groups[n] = NULL;
    kapi_user *authenticated = kapi_arena_alloc(&r->arena, sizeof(*authenticated));
    *authenticated = r->user;
    r->authenticated = authenticated;
    r->user = (kapi_user){name, uid, groups};
    return true;
}
