/*
 * rbac: a snapshot of the RBAC objects indexed by subject, and the decisions made with
 * it (authz.h). Everything a snapshot holds lives in its arena; its maps hold pointers
 * into it. Keys: a role "<namespace>/<name>", a cluster role its name; a subject
 * "u:<user>" or "g:<group>", prefixed by "<namespace>/" for the bindings of a namespace.
 */
#include <jansson.h>
#include <string.h>

#include "authz/authz.h"
#include "base/map.h"
#include "codec/go.h"
#include "codec/json.h"

/* The rules of one role. */
typedef struct role {
    kapi_rbac_rule *rules;
    size_t n;
} role;

/* One subject of a binding, as kube describes it. */
typedef struct subject {
    const char *kind, *name, *ns;
} subject;

/* A binding: what it grants to whom. */
typedef struct binding {
    const char *name;
    const char *ns;    /* "" for a ClusterRoleBinding */
    bool cluster_role; /* its role is a ClusterRole, else a Role of its namespace */
    const char *role;
    const char *role_key; /* the key of its role in roles or cluster_roles */
    subject *subjects;
    size_t nsubjects;
} binding;

/* A binding under one of its subjects' keys (a binding that names a subject twice, or a
 * user and one of their groups, is visited once). */
typedef struct grant {
    size_t binding;
} grant;

typedef struct grants {
    grant *v;
    size_t n, cap;
} grants;

struct kapi_rbac_policy {
    kapi_arena arena;
    kapi_map *roles;         /* "<ns>/<name>" -> role */
    kapi_map *cluster_roles; /* name -> role */
    kapi_map *subjects;      /* ["<ns>/"]"u:"|"g:"<name> -> grants */
    binding *bindings;       /* heap array */
    size_t nbindings, bindings_cap;
};

static uint64_t str_hash(const void *k, uint64_t seed)
{
    return kapi_map_hash_bytes(k, strlen(k), seed);
}

static bool str_equal(const void *a, const void *b)
{
    return strcmp(a, b) == 0;
}

static void grants_free(void *p)
{
    grants *g = p;
    free(g->v);
    free(g);
}

/* Keys are arena strings; grants are heap objects. */
static const kapi_map_type arena_keys = {str_hash, str_equal, NULL, NULL};
static const kapi_map_type grant_keys = {str_hash, str_equal, free, grants_free};

kapi_rbac_policy *kapi_rbac_policy_new(void)
{
    kapi_rbac_policy *p = kapi_xcalloc(1, sizeof(*p));
    kapi_arena_init(&p->arena);
    p->roles = kapi_map_new(&arena_keys);
    p->cluster_roles = kapi_map_new(&arena_keys);
    p->subjects = kapi_map_new(&grant_keys);
    return p;
}

void kapi_rbac_policy_free(kapi_rbac_policy *p)
{
    if (!p)
        return;
    kapi_map_free(p->roles);
    kapi_map_free(p->cluster_roles);
    kapi_map_free(p->subjects);
    free(p->bindings);
    kapi_arena_dispose(&p->arena);
    free(p);
}

static const char *str_of(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* A JSON array of strings as a NULL-terminated list in the arena (NULL when absent). */
static const char *const *strings(kapi_arena *a, const json_t *arr)
{
    size_t n = json_array_size(arr), k = 0;
    const char **v;
    if (n == 0)
        return NULL;
    v = kapi_arena_alloc(a, (n + 1) * sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (s)
            v[k++] = kapi_arena_strdup(a, s);
    }
    v[k] = NULL;
    return v;
}

void kapi_rbac_rules_parse(kapi_arena *a, const json_t *rules, kapi_rbac_rule **out, size_t *n)
{
    *n = json_array_size(rules);
    *out = kapi_arena_alloc(a, (*n ? *n : 1) * sizeof(**out));
    for (size_t i = 0; i < *n; i++) {
        const json_t *j = json_array_get(rules, i);
        (*out)[i] = (kapi_rbac_rule){
            .verbs = strings(a, json_object_get(j, "verbs")),
            .groups = strings(a, json_object_get(j, "apiGroups")),
            .resources = strings(a, json_object_get(j, "resources")),
            .names = strings(a, json_object_get(j, "resourceNames")),
            .urls = strings(a, json_object_get(j, "nonResourceURLs")),
        };
    }
}

static role *make_role(kapi_rbac_policy *p, const json_t *obj)
{
    role *r = kapi_arena_alloc(&p->arena, sizeof(*r));
    kapi_rbac_rules_parse(&p->arena, json_object_get(obj, "rules"), &r->rules, &r->n);
    return r;
}

static void add_grant(kapi_rbac_policy *p, char *key, grant g)
{
    grants *gs = kapi_map_get(p->subjects, key);
    if (!gs) {
        gs = kapi_xcalloc(1, sizeof(*gs));
        kapi_map_put(p->subjects, key, gs);
    } else {
        free(key);
    }
    if (gs->n > 0 && gs->v[gs->n - 1].binding == g.binding)
        return; /* the same subject twice in one binding */
    if (gs->n == gs->cap) {
        gs->cap = gs->cap ? 2 * gs->cap : 4;
        gs->v = kapi_xrealloc(gs->v, gs->cap * sizeof(*gs->v));
    }
    gs->v[gs->n++] = g;
}

/* A binding's grant under each of its subjects. A ServiceAccount subject is its user
 * name; in a RoleBinding its namespace defaults to the binding's. */
static void add_binding(kapi_rbac_policy *p, const json_t *obj, const char *ns)
{
    const json_t *ref = json_object_get(obj, "roleRef"),
                 *subjects = json_object_get(obj, "subjects");
    size_t n = json_array_size(subjects);
    const char *scope = *ns ? ns : NULL;
    binding *b;
    if (p->nbindings == p->bindings_cap) {
        p->bindings_cap = p->bindings_cap ? 2 * p->bindings_cap : 64;
        p->bindings = kapi_xrealloc(p->bindings, p->bindings_cap * sizeof(*p->bindings));
    }
    b = &p->bindings[p->nbindings];
    *b = (binding){
        .name = kapi_arena_strdup(&p->arena, str_of(json_object_get(obj, "metadata"), "name")),
        .ns = kapi_arena_strdup(&p->arena, ns),
        .cluster_role = strcmp(str_of(ref, "kind"), "ClusterRole") == 0,
        .role = kapi_arena_strdup(&p->arena, str_of(ref, "name")),
        .role_key = strcmp(str_of(ref, "kind"), "ClusterRole") == 0
                        ? kapi_arena_strdup(&p->arena, str_of(ref, "name"))
                        : kapi_arena_printf(&p->arena, "%s/%s", ns, str_of(ref, "name")),
        .subjects = kapi_arena_alloc(&p->arena, (n ? n : 1) * sizeof(subject)),
        .nsubjects = n};
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(subjects, i);
        const char *kind = str_of(s, "kind"), *name = str_of(s, "name");
        const char *sa_ns = *str_of(s, "namespace") ? str_of(s, "namespace") : ns;
        char *key;
        b->subjects[i] =
            (subject){kapi_arena_strdup(&p->arena, kind), kapi_arena_strdup(&p->arena, name),
                      kapi_arena_strdup(&p->arena, str_of(s, "namespace"))};
        if (strcmp(kind, "User") == 0)
            key = kapi_xprintf("%s%su:%s", scope ? scope : "", scope ? "/" : "", name);
        else if (strcmp(kind, "Group") == 0)
            key = kapi_xprintf("%s%sg:%s", scope ? scope : "", scope ? "/" : "", name);
        else if (strcmp(kind, "ServiceAccount") == 0 && *sa_ns)
            key = kapi_xprintf("%s%su:system:serviceaccount:%s:%s", scope ? scope : "",
                               scope ? "/" : "", sa_ns, name);
        else
            continue;
        add_grant(p, key, (grant){p->nbindings});
    }
    p->nbindings++;
}

void kapi_rbac_policy_add(kapi_rbac_policy *p, const json_t *obj)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const char *kind = str_of(obj, "kind"), *name = str_of(meta, "name"),
               *ns = str_of(meta, "namespace");
    if (strcmp(kind, "ClusterRole") == 0)
        kapi_map_put(p->cluster_roles, kapi_arena_strdup(&p->arena, name), make_role(p, obj));
    else if (strcmp(kind, "Role") == 0)
        kapi_map_put(p->roles, kapi_arena_printf(&p->arena, "%s/%s", ns, name), make_role(p, obj));
    else if (strcmp(kind, "ClusterRoleBinding") == 0)
        add_binding(p, obj, "");
    else if (strcmp(kind, "RoleBinding") == 0 && *ns)
        add_binding(p, obj, ns);
}

/* ---- matching ---- */

static bool has(const char *const *list, const char *s)
{
    for (; list && *list; list++)
        if (strcmp(*list, s) == 0)
            return true;
    return false;
}

static bool has_or_all(const char *const *list, const char *s, const char *all)
{
    return has(list, all) || has(list, s);
}

static bool resource_matches(const char *const *list, const char *resource, const char *sub)
{
    size_t sublen = strlen(sub);
    for (; list && *list; list++) {
        const char *r = *list;
        size_t rlen = strlen(r), reslen = strlen(resource);
        if (strcmp(r, "*") == 0)
            return true;
        if (sublen == 0 ? strcmp(r, resource) == 0
                        : (rlen == reslen + 1 + sublen && strncmp(r, resource, reslen) == 0 &&
                           r[reslen] == '/' && strcmp(r + reslen + 1, sub) == 0))
            return true;
        if (sublen > 0 && rlen == sublen + 2 && strncmp(r, "*/", 2) == 0 && strcmp(r + 2, sub) == 0)
            return true;
    }
    return false;
}

static bool name_matches(const char *const *list, kapi_str name)
{
    if (!list || !*list)
        return true;
    for (; *list; list++)
        if (kapi_str_eqc(name, *list))
            return true;
    return false;
}

static bool url_matches(const char *const *list, const char *path)
{
    for (; list && *list; list++) {
        const char *u = *list;
        size_t n = strlen(u);
        if (strcmp(u, "*") == 0 || strcmp(u, path) == 0)
            return true;
        if (n > 0 && u[n - 1] == '*') {
            while (n > 0 && u[n - 1] == '*') /* Go's TrimRight of every trailing '*' */
                n--;
            if (strncmp(path, u, n) == 0)
                return true;
        }
    }
    return false;
}

bool kapi_rbac_rule_allows(const kapi_rbac_rule *r, const kapi_authz_attrs *a)
{
    if (!has_or_all(r->verbs, a->verb, "*"))
        return false;
    if (!a->resource)
        return url_matches(r->urls, a->path);
    return has_or_all(r->groups, a->group, "*") &&
           resource_matches(r->resources, a->resource_name, a->subresource) &&
           name_matches(r->names, a->name);
}

json_t *kapi_rbac_rule_json(const kapi_rbac_rule *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "verbs", kapi_json_strings(r->verbs));
    if (r->groups && *r->groups)
        json_object_set_new(j, "apiGroups", kapi_json_strings(r->groups));
    if (r->resources && *r->resources)
        json_object_set_new(j, "resources", kapi_json_strings(r->resources));
    if (r->names && *r->names)
        json_object_set_new(j, "resourceNames", kapi_json_strings(r->names));
    if (r->urls && *r->urls)
        json_object_set_new(j, "nonResourceURLs", kapi_json_strings(r->urls));
    return j;
}

/* ---- covering (kube's validation.Covers) ---- */

/* Whether owner rule covers one atomic piece (at most one verb, group, resource, name,
 * URL): ruleCovers. */
static bool covers_piece(const kapi_rbac_rule *o, const kapi_rbac_rule *piece)
{
    const char *res = piece->resources ? piece->resources[0] : NULL;
    const char *url = piece->urls ? piece->urls[0] : NULL;
    const char *name = piece->names ? piece->names[0] : NULL;
    if (!has(o->verbs, "*") && !has(o->verbs, piece->verbs[0]))
        return false;
    if (piece->groups && !has(o->groups, "*") && !has(o->groups, piece->groups[0]))
        return false;
    if (res && !has(o->resources, "*") && !has(o->resources, res)) {
        const char *slash = strchr(res, '/');
        char *any;
        bool ok;
        if (!slash)
            return false;
        any = kapi_xprintf("*%s", slash); /* "*" + "/" + the subresource */
        ok = has(o->resources, any);
        free(any);
        if (!ok)
            return false;
    }
    if (url) {
        bool ok = false;
        for (const char *const *u = o->urls; u && *u && !ok; u++) {
            size_t n = strlen(*u);
            ok = strcmp(*u, url) == 0;
            if (!ok && n > 0 && (*u)[n - 1] == '*') {
                while (n > 0 && (*u)[n - 1] == '*')
                    n--;
                ok = strncmp(url, *u, n) == 0;
            }
        }
        if (!ok)
            return false;
    }
    if (!name)
        return !o->names || !*o->names;
    return !o->names || !*o->names || has(o->names, name);
}

bool kapi_rbac_covers(const kapi_rbac_rule *owner, size_t n, const kapi_rbac_rule *rule,
                      void (*missing)(void *ctx, const kapi_rbac_rule *piece), void *ctx)
{
    bool all = true;
    const char *g1[2] = {0}, *r1[2] = {0}, *v1[2] = {0}, *n1[2] = {0}, *u1[2] = {0};
    kapi_rbac_rule piece = {v1, g1, r1, NULL, NULL};
    size_t nnames = 0;
    while (rule->names && rule->names[nnames])
        nnames++;
    for (const char *const *g = rule->groups; g && *g; g++) {
        for (const char *const *r = rule->resources; r && *r; r++) {
            for (const char *const *v = rule->verbs; v && *v; v++) {
                for (size_t k = 0; k < (nnames ? nnames : 1); k++) {
                    bool covered = false;
                    g1[0] = *g, r1[0] = *r, v1[0] = *v, n1[0] = nnames ? rule->names[k] : NULL;
                    piece.names = nnames ? n1 : NULL;
                    for (size_t i = 0; i < n && !covered; i++)
                        covered = covers_piece(&owner[i], &piece);
                    if (!covered && missing)
                        missing(ctx, &piece);
                    all = all && covered;
                }
            }
        }
    }
    piece = (kapi_rbac_rule){v1, NULL, NULL, NULL, u1};
    for (const char *const *u = rule->urls; u && *u; u++) {
        for (const char *const *v = rule->verbs; v && *v; v++) {
            bool covered = false;
            u1[0] = *u, v1[0] = *v;
            for (size_t i = 0; i < n && !covered; i++)
                covered = covers_piece(&owner[i], &piece);
            if (!covered && missing)
                missing(ctx, &piece);
            all = all && covered;
        }
    }
    return all;
}

/* ---- visiting ---- */

/* The visitor inside: rule (or err) comes from binding b. */
typedef bool (*visit_fn)(void *ctx, const kapi_rbac_rule *rule, const char *err, size_t b);

typedef struct visit {
    const kapi_rbac_policy *p;
    visit_fn fn;
    void *ctx;
    bool *seen; /* per binding */
    bool stop;
} visit;

static void visit_binding(visit *v, size_t i)
{
    const binding *b = &v->p->bindings[i];
    const role *r;
    if (v->seen[i])
        return;
    v->seen[i] = true;
    r = kapi_map_get(b->cluster_role ? v->p->cluster_roles : v->p->roles, b->role_key);
    if (!r) {
        char *err = kapi_xprintf("%s.rbac.authorization.k8s.io \"%s\" not found",
                                 b->cluster_role ? "clusterrole" : "role", b->role);
        v->stop = !v->fn(v->ctx, NULL, err, i);
        free(err);
        return;
    }
    for (size_t k = 0; k < r->n && !v->stop; k++)
        v->stop = !v->fn(v->ctx, &r->rules[k], NULL, i);
}

/* The bindings under one subject key. */
static void visit_key(visit *v, const char *scope, size_t scope_len, const char *kind,
                      const char *name)
{
    char small[256], *key = small, *p;
    size_t name_len = strlen(name), len = (scope ? scope_len + 1 : 0) + 2 + name_len;
    const grants *gs;
    if (len + 1 > sizeof(small)) /* a key of a usual length is made on the stack */
        key = kapi_xmalloc(len + 1);
    p = key;
    if (scope) {
        memcpy(p, scope, scope_len);
        p += scope_len;
        *p++ = '/';
    }
    memcpy(p, kind, 2);
    memcpy(p + 2, name, name_len + 1);
    gs = kapi_map_get(v->p->subjects, key);
    for (size_t i = 0; gs && i < gs->n && !v->stop; i++)
        visit_binding(v, gs->v[i].binding);
    if (key != small)
        free(key);
}

static void visit_scope(visit *v, const kapi_user *user, const char *scope, size_t scope_len)
{
    visit_key(v, scope, scope_len, "u:", user->name ? user->name : "");
    for (const char *const *g = user->groups; g && *g && !v->stop; g++)
        visit_key(v, scope, scope_len, "g:", *g);
}

static void visit_all(const kapi_rbac_policy *p, const kapi_user *user, kapi_str ns, visit_fn fn,
                      void *ctx)
{
    bool small[512];
    visit v = {p, fn, ctx, small, false};
    if (p->nbindings > KAPI_ARRAY_LEN(small)) /* the usual policy's marks fit the stack */
        v.seen = kapi_xcalloc(p->nbindings, sizeof(bool));
    else
        memset(small, 0, p->nbindings * sizeof(bool));
    visit_scope(&v, user, NULL, 0);
    /* A namespace holding '/' or a NUL names no binding (no namespace can hold one). */
    if (!v.stop && ns.len > 0 && !memchr(ns.ptr, '/', ns.len) && !memchr(ns.ptr, 0, ns.len))
        visit_scope(&v, user, ns.ptr, ns.len);
    if (v.seen != small)
        free(v.seen);
}

typedef struct public_visit {
    bool (*fn)(void *ctx, const kapi_rbac_rule *rule, const char *err);
    void *ctx;
} public_visit;

static bool visit_public(void *ctx, const kapi_rbac_rule *rule, const char *err, size_t b)
{
    public_visit *pv = ctx;
    (void)b;
    return pv->fn(pv->ctx, rule, err);
}

void kapi_rbac_visit(const kapi_rbac_policy *p, const kapi_user *user, kapi_str ns,
                     bool (*fn)(void *ctx, const kapi_rbac_rule *rule, const char *err), void *ctx)
{
    public_visit pv = {fn, ctx};
    visit_all(p, user, ns, visit_public, &pv);
}

bool kapi_rbac_role_rules(const kapi_rbac_policy *p, bool cluster, const char *ns, const char *name,
                          const kapi_rbac_rule **rules, size_t *n)
{
    const role *r;
    if (cluster) {
        r = kapi_map_get(p->cluster_roles, name);
    } else {
        char *key = kapi_xprintf("%s/%s", ns, name);
        r = kapi_map_get(p->roles, key);
        free(key);
    }
    if (!r)
        return false;
    *rules = r->rules;
    *n = r->n;
    return true;
}

/* ---- deciding ---- */

static bool in_groups(const kapi_user *u, const char *g)
{
    for (const char *const *x = u->groups; x && *x; x++)
        if (strcmp(*x, g) == 0)
            return true;
    return false;
}

/* appliesToUser: whether subject s of a binding in ns names u. */
static bool applies(const subject *s, const char *ns, const kapi_user *user)
{
    kapi_user named = *user, *u = &named;
    named.name = user->name ? user->name : "";
    if (strcmp(s->kind, "User") == 0)
        return strcmp(s->name, u->name) == 0;
    if (strcmp(s->kind, "Group") == 0)
        return in_groups(u, s->name);
    if (strcmp(s->kind, "ServiceAccount") == 0) {
        const char *sa_ns = *s->ns ? s->ns : ns;
        size_t pl = strlen("system:serviceaccount:"), nl = strlen(sa_ns);
        return *sa_ns && strncmp(u->name, "system:serviceaccount:", pl) == 0 &&
               strncmp(u->name + pl, sa_ns, nl) == 0 && u->name[pl + nl] == ':' &&
               strcmp(u->name + pl + nl + 1, s->name) == 0;
    }
    return false;
}

/* kube's describer of what allowed: the binding, its role, and its first subject that
 * names the user. */
static void describe(kapi_buf *out, const binding *b, const kapi_user *u)
{
    const subject *s = NULL;
    kapi_buf name;
    for (size_t i = 0; i < b->nsubjects && !s; i++)
        if (applies(&b->subjects[i], b->ns, u))
            s = &b->subjects[i];
    kapi_buf_init(&name);
    kapi_buf_puts(&name, b->name);
    if (*b->ns)
        kapi_buf_printf(&name, "/%s", b->ns);
    kapi_buf_printf(out, "RBAC: allowed by %s ", *b->ns ? "RoleBinding" : "ClusterRoleBinding");
    kapi_go_quote(out, name.ptr, name.len);
    kapi_buf_printf(out, " of %s ", b->cluster_role ? "ClusterRole" : "Role");
    kapi_go_quote(out, b->role, strlen(b->role));
    if (s) {
        kapi_buf_clear(&name);
        kapi_buf_puts(&name, s->name);
        if (strcmp(s->kind, "ServiceAccount") == 0)
            kapi_buf_printf(&name, "/%s", *s->ns ? s->ns : b->ns);
        kapi_buf_printf(out, " to %s ", s->kind);
        kapi_go_quote(out, name.ptr, name.len);
    }
    kapi_buf_dispose(&name);
}

typedef struct decide {
    const kapi_rbac_policy *p;
    const kapi_authz_attrs *a;
    bool allowed;
    size_t by;
    kapi_buf errors;
    size_t nerrors;
} decide;

static bool decide_rule(void *ctx, const kapi_rbac_rule *rule, const char *err, size_t b)
{
    decide *d = ctx;
    if (err) {
        if (d->nerrors++ > 0)
            kapi_buf_puts(&d->errors, ", ");
        kapi_buf_puts(&d->errors, err);
        return true;
    }
    d->allowed = kapi_rbac_rule_allows(rule, d->a);
    d->by = b;
    return !d->allowed;
}

bool kapi_rbac_allows(const kapi_rbac_policy *p, const kapi_authz_attrs *a, kapi_buf *reason,
                      bool why_allowed)
{
    decide d = {.p = p, .a = a};
    kapi_buf_init(&d.errors);
    visit_all(p, a->user, a->ns, decide_rule, &d);
    if (d.allowed && why_allowed)
        describe(reason, &p->bindings[d.by], a->user);
    else if (d.nerrors > 0) /* Go's aggregate: one error alone, else a list */
        kapi_buf_printf(reason, d.nerrors == 1 ? "RBAC: %s" : "RBAC: [%s]", d.errors.ptr);
    kapi_buf_dispose(&d.errors);
    return d.allowed;
}

/* ---- the Forbidden message ---- */

/* Go's %q of a string of n bytes. */
static void quote(kapi_buf *b, const char *s, size_t n)
{
    kapi_go_quote(b, s, n);
}

/* responsewriters' sanitizer: & < > as HTML entities. */
static void sanitize(kapi_buf *out, const kapi_buf *in)
{
    for (size_t i = 0; i < in->len; i++) {
        char c = in->ptr[i];
        if (c == '&')
            kapi_buf_puts(out, "&amp;");
        else if (c == '<')
            kapi_buf_puts(out, "&lt;");
        else if (c == '>')
            kapi_buf_puts(out, "&gt;");
        else
            kapi_buf_putc(out, c);
    }
}

char *kapi_authz_forbidden_message(const kapi_authz_attrs *a, const char *reason)
{
    kapi_buf msg, out;
    const char *user = a->user && a->user->name ? a->user->name : "";
    kapi_buf_init(&msg);
    kapi_buf_init(&out);
    kapi_buf_puts(&msg, "User ");
    quote(&msg, user, strlen(user));
    kapi_buf_printf(&msg, " cannot %s ", a->verb);
    if (!a->resource) {
        kapi_buf_puts(&msg, "path ");
        quote(&msg, a->path, strlen(a->path));
    } else {
        kapi_buf res;
        kapi_buf_init(&res);
        kapi_buf_puts(&res, a->resource_name);
        if (*a->subresource)
            kapi_buf_printf(&res, "/%s", a->subresource);
        kapi_buf_puts(&msg, "resource ");
        quote(&msg, res.ptr ? res.ptr : "", res.len);
        kapi_buf_puts(&msg, " in API group ");
        quote(&msg, a->group, strlen(a->group));
        if (a->ns.len > 0) {
            kapi_buf_puts(&msg, " in the namespace ");
            quote(&msg, a->ns.ptr, a->ns.len);
        } else {
            kapi_buf_puts(&msg, " at the cluster scope");
        }
        kapi_buf_dispose(&res);
    }
    /* apierrors.NewForbidden: the qualified resource and the name come first */
    if (!a->resource || !*a->resource_name) {
        kapi_buf_puts(&out, "forbidden: ");
    } else {
        kapi_buf_puts(&out, a->resource_name);
        if (*a->group)
            kapi_buf_printf(&out, ".%s", a->group);
        if (a->name.len > 0) {
            kapi_buf_putc(&out, ' ');
            quote(&out, a->name.ptr, a->name.len);
        }
        kapi_buf_puts(&out, " is forbidden: ");
    }
    sanitize(&out, &msg);
    if (reason && *reason)
        kapi_buf_printf(&out, ": %s", reason);
    kapi_buf_dispose(&msg);
    return kapi_buf_detach(&out, NULL);
}
