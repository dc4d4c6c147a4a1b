/*
 * api/authorize: kube-apiserver's authorization filter. A request's attributes as its
 * authorizers see them, the decision of system:masters and then of the configured modes
 * in order (--authorization-mode; the first that allows wins), and kube's 403 Forbidden
 * otherwise, with the reasons the modes gave.
 *
 * RBAC decides with a snapshot of the RBAC objects (authz.h). A store watch on each of
 * the four types counts the changes; a request that finds the current snapshot older
 * than the count builds a new one from the store (one builder at a time; the others use
 * the one they find current meanwhile only if it is not stale, else they wait for the
 * build). A snapshot is freed by its last user.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "codec/go.h"

typedef struct snapshot {
    kapi_rbac_policy *policy;
    uint64_t changes; /* the count it was built at */
    atomic_int refs;
} snapshot;

struct kapi_authorizer {
    kapi_api *api;
    kapi_authz_mode modes[KAPI_AUTHZ_MAX_MODES];
    size_t nmodes;
    pthread_mutex_t mu;       /* guards cur (a snapshot's count is atomic) */
    pthread_mutex_t build_mu; /* one build at a time */
    snapshot *cur;
    atomic_uint_fast64_t changes;
    const kapi_type *types[4];
    kapi_store_watch *watches[4];
};

static const char *const rbac_resources[] = {"roles", "rolebindings", "clusterroles",
                                             "clusterrolebindings"};

static bool on_change(void *ctx, const kapi_store_event *ev)
{
    kapi_authorizer *z = ctx;
    if (ev->type != KAPI_STORE_EVENT_PROGRESS)
        atomic_fetch_add(&z->changes, 1);
    return true;
}

kapi_authorizer *kapi_api__authorizer_new(kapi_api *api, const kapi_authz_mode *modes, size_t n)
{
    kapi_authorizer *z = kapi_xcalloc(1, sizeof(*z));
    z->api = api;
    for (size_t i = 0; i < n && i < KAPI_AUTHZ_MAX_MODES; i++)
        z->modes[z->nmodes++] = modes[i];
    pthread_mutex_init(&z->mu, NULL);
    pthread_mutex_init(&z->build_mu, NULL);
    atomic_init(&z->changes, 1);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(rbac_resources); i++) {
        z->types[i] = kapi_registry_lookup(api->registry, KAPI_STR("rbac.authorization.k8s.io"),
                                           KAPI_STR("v1"), kapi_str_c(rbac_resources[i]));
        if (z->types[i])
            kapi_api_watch_start(api, z->types[i], KAPI_STR(""), kapi_store_revision(api->store),
                                 on_change, z, &z->watches[i]);
    }
    return z;
}

static void release(kapi_authorizer *z, snapshot *s)
{
    (void)z;
    if (s && atomic_fetch_sub(&s->refs, 1) == 1) {
        kapi_rbac_policy_free(s->policy);
        free(s);
    }
}

void kapi_api__authorizer_free(kapi_authorizer *z)
{
    if (!z)
        return;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(z->watches); i++)
        if (z->watches[i])
            kapi_api_watch_stop(z->api, z->watches[i]);
    release(z, z->cur);
    pthread_mutex_destroy(&z->mu);
    pthread_mutex_destroy(&z->build_mu);
    free(z);
}

/* The current snapshot if it is up to date (a new reference), else NULL. */
static snapshot *current(kapi_authorizer *z, uint64_t changes)
{
    snapshot *s;
    pthread_mutex_lock(&z->mu);
    s = z->cur && z->cur->changes == changes ? z->cur : NULL;
    if (s)
        atomic_fetch_add(&s->refs, 1);
    pthread_mutex_unlock(&z->mu);
    return s;
}

/* A snapshot of what the store holds now; NULL if the store cannot be read. */
static snapshot *build(kapi_authorizer *z, uint64_t changes)
{
    snapshot *s = kapi_xcalloc(1, sizeof(*s));
    s->policy = kapi_rbac_policy_new();
    s->changes = changes;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(z->types); i++) {
        json_t *items = NULL, *obj;
        size_t k;
        kapi_error *err;
        if (!z->types[i])
            continue;
        if ((err = kapi_api_list(z->api, z->types[i], KAPI_STR(""), &items, NULL)) != NULL) {
            kapi_error_free(err);
            kapi_rbac_policy_free(s->policy);
            free(s);
            return NULL;
        }
        json_array_foreach(items, k, obj)
        {
            kapi_rbac_policy_add(s->policy, obj);
        }
        json_decref(items);
    }
    return s;
}

/* The snapshot to decide with (a reference the caller releases). */
static snapshot *acquire(kapi_authorizer *z)
{
    uint64_t changes = atomic_load(&z->changes);
    snapshot *s = current(z, changes), *old;
    if (s)
        return s;
    pthread_mutex_lock(&z->build_mu);
    changes = atomic_load(&z->changes); /* read before the lists: a later change rebuilds */
    if ((s = current(z, changes)) == NULL && (s = build(z, changes)) != NULL) {
        pthread_mutex_lock(&z->mu);
        old = z->cur;
        z->cur = s;
        atomic_init(&s->refs, 2); /* current, and the caller's */
        pthread_mutex_unlock(&z->mu);
        release(z, old);
    } else if (!s) { /* the store failed: decide with what there is */
        pthread_mutex_lock(&z->mu);
        if ((s = z->cur) != NULL)
            atomic_fetch_add(&s->refs, 1);
        pthread_mutex_unlock(&z->mu);
    }
    pthread_mutex_unlock(&z->build_mu);
    return s;
}

/* ---- the request's attributes ---- */

/* Lower-cases an HTTP method into the arena: a non-resource request's verb. */
static const char *method_verb(kapi_req *r)
{
    char *v = kapi_arena_strdup(&r->arena, r->http->method);
    for (char *p = v; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    return v;
}

void kapi_api__authz_attrs(kapi_req *r, const kapi_user *user, kapi_authz_attrs *a)
{
    const kapi_reqinfo *in = &r->info;
    *a = (kapi_authz_attrs){.user = user, .path = r->path};
    if (!in->is_resource || !*in->resource) {
        a->verb = method_verb(r);
        return;
    }
    a->resource = true;
    a->verb = in->verb;
    a->group = in->group;
    a->resource_name = in->resource;
    a->subresource = in->subresource ? in->subresource : "";
    a->ns = in->ns;
    a->name = in->name;
    /* RequestInfo's namespace of a namespace is its own name (/api/v1/namespaces/x) */
    if (!*in->group && strcmp(in->resource, "namespaces") == 0 && a->ns.len == 0)
        a->ns = in->name;
}

/* ---- the decision ---- */

static bool privileged(const kapi_user *u)
{
    for (const char *const *g = u->groups; g && *g; g++)
        if (strcmp(*g, "system:masters") == 0)
            return true;
    return false;
}

bool kapi_api__authorized(kapi_api *api, const kapi_authz_attrs *a, kapi_buf *reason,
                          bool why_allowed)
{
    kapi_authorizer *z = api->authorizer;
    bool allowed = privileged(a->user);
    for (size_t i = 0; !allowed && i < z->nmodes; i++) {
        kapi_buf why;
        kapi_buf_init(&why);
        if (z->modes[i] == KAPI_AUTHZ_ALWAYS_ALLOW) {
            allowed = true;
        } else if (z->modes[i] == KAPI_AUTHZ_ALWAYS_DENY) {
            kapi_buf_puts(&why, "Everything is forbidden.");
        } else {
            snapshot *s = acquire(z);
            if (s)
                allowed = kapi_rbac_allows(s->policy, a, &why, why_allowed);
            release(z, s);
        }
        if (allowed) /* the union answers with the reason of the one that allowed */
            kapi_buf_clear(reason);
        if (why.len > 0) { /* else the reasons of all, one per line */
            if (reason->len > 0)
                kapi_buf_putc(reason, '\n');
            kapi_buf_put(reason, why.ptr, why.len);
        }
        kapi_buf_dispose(&why);
    }
    return allowed;
}

void kapi_api__rules_for(kapi_api *api, const kapi_user *user, kapi_str ns,
                         bool (*fn)(void *ctx, const kapi_rbac_rule *rule, const char *err),
                         void *ctx)
{
    static const char *const all[] = {"*", NULL};
    static const kapi_rbac_rule everything = {all, all, all, NULL, NULL};
    static const kapi_rbac_rule every_url = {all, NULL, NULL, NULL, all};
    kapi_authorizer *z = api->authorizer;
    for (size_t i = 0; i < z->nmodes; i++) {
        if (z->modes[i] == KAPI_AUTHZ_ALWAYS_ALLOW) {
            if (!fn(ctx, &everything, NULL) || !fn(ctx, &every_url, NULL))
                return;
        } else if (z->modes[i] == KAPI_AUTHZ_RBAC) {
            snapshot *s = acquire(z);
            if (s)
                kapi_rbac_visit(s->policy, user, ns, fn, ctx);
            release(z, s);
        }
    }
}

kapi_error *kapi_api__forbidden(const kapi_authz_attrs *a, const char *reason)
{
    char *msg = kapi_authz_forbidden_message(a, reason);
    kapi_error *err = kapi_error_new(KAPI_STATUS_FORBIDDEN, "%s", msg);
    char *name = a->resource ? kapi_xstrndup(a->name.ptr, a->name.len) : NULL;
    free(msg);
    kapi_error_details(err, name, a->resource ? a->group : NULL,
                       a->resource ? a->resource_name : NULL);
    free(name);
    return err;
}

kapi_error *kapi_api__authorize(kapi_req *r)
{
    kapi_authz_attrs a;
    kapi_buf reason;
    kapi_error *err = NULL;
    kapi_api__authz_attrs(r, &r->user, &a);
    kapi_buf_init(&reason);
    bool allowed = kapi_api__authorized(r->api, &a, &reason, r->api->audit != NULL);
    r->decision = allowed ? "allow" : "forbid";
    r->reason = kapi_arena_strdup(&r->arena, reason.ptr);
    if (!allowed)
        err = kapi_api__forbidden(&a, reason.ptr);
    kapi_buf_dispose(&reason);
    return err;
}

/* ---- escalation (kube's policy-based RBAC storage) ---- */

typedef struct owner_rules {
    kapi_rbac_rule *v;
    size_t n, cap;
    kapi_buf errors;
    size_t nerrors;
} owner_rules;

static bool gather(void *ctx, const kapi_rbac_rule *rule, const char *err)
{
    owner_rules *o = ctx;
    if (err) {
        if (o->nerrors++ > 0)
            kapi_buf_puts(&o->errors, ", ");
        kapi_buf_puts(&o->errors, err);
        return true;
    }
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 32;
        o->v = kapi_xrealloc(o->v, o->cap * sizeof(*o->v));
    }
    o->v[o->n++] = *rule;
    return true;
}

/* A missing piece, compacted as kube's CompactRules does: pieces of one group and one
 * resource (and at most one name) share a rule and add their verbs. */
typedef struct missing {
    kapi_buf *lines; /* one CompactString per line, unsorted */
    size_t n;
} missing;

static void quote_list(kapi_buf *b, const char *const *v)
{
    kapi_buf_putc(b, '[');
    for (size_t i = 0; v && v[i]; i++) {
        if (i)
            kapi_buf_putc(b, ' ');
        kapi_go_quote(b, v[i], strlen(v[i]));
    }
    kapi_buf_putc(b, ']');
}

/* rbacv1helpers.CompactString of a rule with the verbs given. */
static void compact_string(kapi_buf *b, const kapi_rbac_rule *r, const char *const *verbs)
{
    bool first = true;
    kapi_buf_putc(b, '{');
#define PART(label, list)                                                                          \
    if ((list) && *(list)) {                                                                       \
        kapi_buf_puts(b, first ? label ":" : ", " label ":");                                      \
        quote_list(b, list);                                                                       \
        first = false;                                                                             \
    }
    PART("APIGroups", r->groups)
    PART("Resources", r->resources)
    PART("NonResourceURLs", r->urls)
    PART("ResourceNames", r->names)
    PART("Verbs", verbs)
#undef PART
    kapi_buf_putc(b, '}');
}

typedef struct pieces {
    kapi_arena *a;
    kapi_rbac_rule *v; /* compacted: one per group, resource and name */
    const char ***verbs;
    size_t *nverbs;
    size_t n, cap;
    kapi_buf other; /* URL pieces, each a line */
    size_t nother;
} pieces;

static const char *const *one(kapi_arena *a, const char *const *list)
{
    const char **v;
    if (!list || !*list)
        return NULL;
    v = kapi_arena_alloc(a, 2 * sizeof(*v));
    v[0] = kapi_arena_strdup(a, list[0]);
    v[1] = NULL;
    return v;
}

static bool same(const char *const *x, const char *const *y)
{
    if (!x || !*x || !y || !*y)
        return (!x || !*x) && (!y || !*y);
    return strcmp(x[0], y[0]) == 0;
}

static void note_missing(void *ctx, const kapi_rbac_rule *piece)
{
    pieces *p = ctx;
    size_t i;
    if (piece->urls) {
        kapi_buf_printf(&p->other, "%s", p->nother++ ? "\n" : "");
        compact_string(&p->other, piece, piece->verbs);
        return;
    }
    for (i = 0; i < p->n; i++)
        if (same(p->v[i].groups, piece->groups) && same(p->v[i].resources, piece->resources) &&
            same(p->v[i].names, piece->names))
            break;
    if (i == p->n) {
        if (p->n == p->cap) {
            p->cap = p->cap ? 2 * p->cap : 8;
            p->v = kapi_xrealloc(p->v, p->cap * sizeof(*p->v));
            p->verbs = kapi_xrealloc(p->verbs, p->cap * sizeof(*p->verbs));
            p->nverbs = kapi_xrealloc(p->nverbs, p->cap * sizeof(*p->nverbs));
        }
        p->v[i] = (kapi_rbac_rule){NULL, one(p->a, piece->groups), one(p->a, piece->resources),
                                   one(p->a, piece->names), NULL};
        p->verbs[i] = kapi_arena_alloc(p->a, 65 * sizeof(char *));
        p->nverbs[i] = 0;
        p->n++;
    }
    if (p->nverbs[i] < 64) {
        p->verbs[i][p->nverbs[i]++] = kapi_arena_strdup(p->a, piece->verbs[0]);
        p->verbs[i][p->nverbs[i]] = NULL;
    }
}

static int cmp_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ConfirmNoEscalation: the rules user holds in ns must cover rules; else kube's message. */
static kapi_error *confirm_no_escalation(kapi_req *r, kapi_arena *a, snapshot *s, kapi_str ns,
                                         const kapi_rbac_rule *rules, size_t n,
                                         const char *resource, kapi_str name)
{
    owner_rules o = {0};
    pieces p = {.a = a};
    kapi_error *err = NULL;
    bool covered = true;
    kapi_buf_init(&o.errors);
    kapi_buf_init(&p.other);
    if (s)
        kapi_rbac_visit(s->policy, &r->user, ns, gather, &o);
    for (size_t i = 0; i < n; i++)
        covered = kapi_rbac_covers(o.v, o.n, &rules[i], note_missing, &p) && covered;
    if (!covered) {
        char **lines = kapi_xcalloc(p.n + p.nother + 1, sizeof(*lines));
        size_t nl = 0;
        kapi_buf msg;
        kapi_buf_init(&msg);
        for (size_t i = 0; i < p.n; i++) {
            kapi_buf line;
            kapi_buf_init(&line);
            compact_string(&line, &p.v[i], (const char *const *)p.verbs[i]);
            lines[nl++] = kapi_buf_detach(&line, NULL);
        }
        kapi_str rest = {p.other.ptr, p.other.len}, line;
        while (rest.len > 0) {
            kapi_str_cut(&rest, '\n', &line);
            lines[nl++] = kapi_xstrndup(line.ptr, line.len);
        }
        qsort(lines, nl, sizeof(*lines), cmp_lines);
        kapi_buf_puts(&msg, "user ");
        const char *user = r->user.name ? r->user.name : "";
        kapi_go_quote(&msg, user, strlen(user));
        kapi_buf_puts(&msg, " (groups=");
        quote_list(&msg, r->user.groups);
        kapi_buf_puts(&msg, ") is attempting to grant RBAC permissions not currently held:\n");
        for (size_t i = 0; i < nl; i++)
            if (i == 0 || strcmp(lines[i], lines[i - 1]) != 0) /* a set */
                kapi_buf_printf(&msg, "%s%s", i ? "\n" : "", lines[i]);
        for (size_t i = 0; i < nl; i++)
            free(lines[i]);
        free(lines);
        if (o.nerrors > 0)
            kapi_buf_printf(
                &msg, o.nerrors == 1 ? "; resolution errors: [%s]" : "; resolution errors: [[%s]]",
                o.errors.ptr);
        kapi_buf full;
        kapi_buf_init(&full);
        kapi_buf_printf(&full, "%s.rbac.authorization.k8s.io ", resource);
        if (name.len) {
            kapi_go_quote(&full, name.ptr, name.len);
            kapi_buf_putc(&full, ' ');
        }
        kapi_buf_printf(&full, "is forbidden: %s", msg.ptr);
        err = kapi_error_new(KAPI_STATUS_FORBIDDEN, "%s", full.ptr);
        kapi_error_details(err, name.len ? kapi_arena_strndup(a, name.ptr, name.len) : NULL,
                           "rbac.authorization.k8s.io", resource);
        kapi_buf_dispose(&full);
        kapi_buf_dispose(&msg);
    }
    free(o.v);
    kapi_buf_dispose(&o.errors);
    free(p.v);
    free(p.verbs);
    free(p.nverbs);
    kapi_buf_dispose(&p.other);
    return err;
}

static bool allowed_to(kapi_req *r, const char *verb, const char *group, const char *resource,
                       kapi_str ns, kapi_str name)
{
    kapi_authz_attrs a = {.user = &r->user,
                          .verb = verb,
                          .resource = true,
                          .group = group,
                          .resource_name = resource,
                          .subresource = "",
                          .ns = ns,
                          .name = name,
                          .path = r->path};
    kapi_buf reason;
    bool ok;
    kapi_buf_init(&reason);
    ok = kapi_api__authorized(r->api, &a, &reason, false);
    kapi_buf_dispose(&reason);
    return ok;
}

kapi_error *kapi_api__escalation_check(kapi_write *w, const json_t *obj, const json_t *old)
{
    kapi_req *r = w->req;
    const kapi_type *t = w->type;
    const char *res = t->plural;
    bool role = strcmp(res, "roles") == 0 || strcmp(res, "clusterroles") == 0;
    kapi_str ns = t->namespaced ? w->ns : KAPI_STR("");
    kapi_str name = kapi_api__name_of(json_object_get(obj, "metadata"));
    const kapi_rbac_rule *rules;
    kapi_rbac_rule *parsed;
    size_t n;
    snapshot *s;
    kapi_error *err = NULL;
    if (!r || privileged(&r->user) || strcmp(t->group, "rbac.authorization.k8s.io") != 0)
        return NULL; /* kapi's own writes, system:masters, other types */
    if (role) {
        if (old && json_equal(json_object_get(obj, "rules"), json_object_get(old, "rules")))
            return NULL; /* the permissions it grants do not change */
        if (allowed_to(r, "escalate", t->group, res, ns, name))
            return NULL;
        kapi_rbac_rules_parse(w->arena, json_object_get(obj, "rules"), &parsed, &n);
        s = acquire(r->api->authorizer);
        err = s ? confirm_no_escalation(r, w->arena, s, ns, parsed, n, res, name) : NULL;
        release(r->api->authorizer, s);
        return err;
    }
    const json_t *ref = json_object_get(obj, "roleRef");
    const char *kind = json_string_value(json_object_get(ref, "kind"));
    const char *ref_name = json_string_value(json_object_get(ref, "name"));
    const char *ref_group = json_string_value(json_object_get(ref, "apiGroup"));
    bool cluster = kind && strcmp(kind, "ClusterRole") == 0;
    if (!kind || !ref_name || (old && json_equal((json_t *)ref, json_object_get(old, "roleRef"))))
        return NULL; /* validation's to refuse; an unchanged roleRef grants nothing new */
    if ((cluster || strcmp(kind, "Role") == 0) &&
        allowed_to(r, "bind", ref_group ? ref_group : "", cluster ? "clusterroles" : "roles", ns,
                   kapi_str_c(ref_name)))
        return NULL;
    s = acquire(r->api->authorizer);
    if (!s)
        return NULL;
    char *ns_c = kapi_arena_strndup(w->arena, ns.ptr ? ns.ptr : "", ns.len);
    if (!kapi_rbac_role_rules(s->policy, cluster, ns_c, ref_name, &rules, &n)) {
        err = kapi_error_new(KAPI_STATUS_NOT_FOUND, "%s.rbac.authorization.k8s.io \"%s\" not found",
                             cluster ? "clusterrole" : "role", ref_name);
        kapi_error_details(err, ref_name, "rbac.authorization.k8s.io",
                           cluster ? "clusterrole" : "role");
    } else {
        err = confirm_no_escalation(r, w->arena, s, ns, rules, n, res, name);
    }
    release(r->api->authorizer, s);
    return err;
}
