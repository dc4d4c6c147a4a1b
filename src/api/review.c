/*
 * api/review: the types kube-apiserver answers and never stores (kapi_type.persisted is
 * false). A create of one runs as any create does up to validation (managedFields
 * included), then its status is computed here and the object answered 201:
 *
 *   SelfSubjectAccessReview, SubjectAccessReview, LocalSubjectAccessReview
 *       the authorizer's decision (allowed, and its reason) on the attributes of the spec,
 *       for the caller, or for the spec's user, groups and uid;
 *   SelfSubjectRulesReview
 *       a new object with the rules RBAC grants the caller in spec.namespace (kube's REST
 *       answers a fresh object: its spec and metadata are not echoed);
 *   TokenReview
 *       whether spec.token authenticates, and as whom;
 *   SelfSubjectReview
 *       who the caller is.
 */
#include <string.h>

#include "api/api_int.h"

static const char *str_at(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

/* The user a SubjectAccessReview's spec names (strings borrowed from spec). */
static kapi_user spec_user(kapi_arena *a, const json_t *spec)
{
    const json_t *groups = json_object_get(spec, "groups");
    size_t n = json_array_size(groups);
    const char **g = kapi_arena_alloc(a, (n + 1) * sizeof(*g));
    for (size_t i = 0; i < n; i++)
        g[i] = json_string_value(json_array_get(groups, i));
    g[n] = NULL;
    return (kapi_user){str_at(spec, "user"), str_at(spec, "uid"), g};
}

/* authorizationutil.ResourceAttributesFrom / NonResourceAttributesFrom. */
static kapi_authz_attrs attrs_of(const json_t *spec, const kapi_user *u)
{
    const json_t *res = json_object_get(spec, "resourceAttributes");
    const json_t *non = json_object_get(spec, "nonResourceAttributes");
    if (json_is_object(res))
        return (kapi_authz_attrs){.user = u,
                                  .verb = str_at(res, "verb"),
                                  .resource = true,
                                  .group = str_at(res, "group"),
                                  .resource_name = str_at(res, "resource"),
                                  .subresource = str_at(res, "subresource"),
                                  .ns = kapi_str_c(str_at(res, "namespace")),
                                  .name = kapi_str_c(str_at(res, "name"))};
    return (kapi_authz_attrs){.user = u, .verb = str_at(non, "verb"), .path = str_at(non, "path")};
}

/* status: allowed (always), reason (when there is one); RBAC never denies outright. */
static void access_review(kapi_write *w, json_t *obj, const kapi_user *u)
{
    kapi_authz_attrs a = attrs_of(json_object_get(obj, "spec"), u);
    kapi_buf reason;
    json_t *status = json_object();
    kapi_buf_init(&reason);
    json_object_set_new(status, "allowed",
                        json_boolean(kapi_api__authorized(w->api, &a, &reason, true)));
    if (reason.len > 0)
        json_object_set_new(status, "reason", json_stringn(reason.ptr, reason.len));
    json_object_set_new(obj, "status", status);
    kapi_buf_dispose(&reason);
}

typedef struct rules {
    json_t *resource, *non_resource;
    kapi_buf errors;
    size_t nerrors;
} rules;

static bool collect_rule(void *ctx, const kapi_rbac_rule *rule, const char *err)
{
    rules *r = ctx;
    if (err) {
        if (r->nerrors++ > 0)
            kapi_buf_puts(&r->errors, ", ");
        kapi_buf_puts(&r->errors, err);
        return true;
    }
    if (rule->resources && *rule->resources) { /* a ResourceRule */
        kapi_rbac_rule res = {rule->verbs, rule->groups, rule->resources, rule->names, NULL};
        json_array_append_new(r->resource, kapi_rbac_rule_json(&res));
    }
    if (rule->urls && *rule->urls) { /* a NonResourceRule */
        kapi_rbac_rule non = {rule->verbs, NULL, NULL, NULL, rule->urls};
        json_array_append_new(r->non_resource, kapi_rbac_rule_json(&non));
    }
    return true;
}

/* The rules of the modes that resolve rules (RBAC, AlwaysAllow) for the caller. */
static json_t *rules_review(kapi_write *w, const json_t *obj)
{
    const char *ns = str_at(json_object_get(obj, "spec"), "namespace");
    rules r = {json_array(), json_array(), {0}, 0};
    json_t *answer = json_object(), *status = json_object(), *meta = json_object();
    kapi_buf_init(&r.errors);
    kapi_api__rules_for(w->api, w->user, kapi_str_c(ns), collect_rule, &r);
    json_object_set_new(answer, "kind", json_string(w->type->kind));
    json_object_set_new(answer, "apiVersion", json_string("authorization.k8s.io/v1"));
    json_object_set_new(meta, "creationTimestamp", json_null());
    json_object_set_new(answer, "metadata", meta);
    json_object_set_new(answer, "spec", json_object());
    json_object_set_new(status, "resourceRules", r.resource);
    json_object_set_new(status, "nonResourceRules", r.non_resource);
    json_object_set_new(status, "incomplete", json_false());
    if (r.nerrors > 0)
        json_object_set_new(status, "evaluationError",
                            r.nerrors == 1 ? json_string(r.errors.ptr)
                                           : json_sprintf("[%s]", r.errors.ptr));
    json_object_set_new(answer, "status", status);
    kapi_buf_dispose(&r.errors);
    return answer;
}

/* A user as authentication.k8s.io's UserInfo. */
static json_t *user_info(const kapi_user *u)
{
    json_t *j = json_object();
    if (u->name && *u->name)
        json_object_set_new(j, "username", json_string(u->name));
    if (u->uid && *u->uid)
        json_object_set_new(j, "uid", json_string(u->uid));
    if (u->groups && *u->groups)
        json_object_set_new(j, "groups", kapi_json_strings(u->groups));
    return j;
}

static void token_review(kapi_write *w, json_t *obj)
{
    const json_t *spec = json_object_get(obj, "spec");
    json_t *status = json_object();
    kapi_user u;
    char *header = kapi_xprintf("Bearer %s", str_at(spec, "token"));
    kapi_sa_lookup sa = {kapi_api__sa_get, w->api};
    bool ok = *str_at(spec, "token") &&
              kapi_auth_authenticate(w->api->auth, header, NULL, &sa, w->arena, &u);
    free(header);
    if (ok) {
        size_t n;
        const char *const *api = kapi_jwt_audiences(kapi_auth_jwt(w->api->auth), &n);
        json_t *auds = json_array();
        json_object_set_new(status, "authenticated", json_true());
        json_object_set_new(status, "user", user_info(&u));
        /* the audiences asked for, or the API's (kapi checks a token against the API's) */
        const json_t *asked = json_object_get(spec, "audiences");
        if (json_array_size(asked) > 0)
            json_array_extend(auds, (json_t *)asked);
        else
            for (size_t i = 0; i < n; i++)
                json_array_append_new(auds, json_string(api[i]));
        json_object_set_new(status, "audiences", auds);
    } else {
        json_object_set_new(status, "user", json_object());
    }
    json_object_set_new(obj, "status", status);
}

json_t *kapi_api__review(kapi_write *w, json_t *obj)
{
    const char *kind = w->type->kind;
    if (strcmp(kind, "SelfSubjectAccessReview") == 0) {
        access_review(w, obj, w->user);
    } else if (strcmp(kind, "SubjectAccessReview") == 0 ||
               strcmp(kind, "LocalSubjectAccessReview") == 0) {
        kapi_user u = spec_user(w->arena, json_object_get(obj, "spec"));
        access_review(w, obj, &u);
    } else if (strcmp(kind, "SelfSubjectRulesReview") == 0) {
        return rules_review(w, obj);
    } else if (strcmp(kind, "TokenReview") == 0) {
        token_review(w, obj);
    } else if (strcmp(kind, "SelfSubjectReview") == 0) {
        json_t *status = json_object();
        json_object_set_new(status, "userInfo", user_info(w->user));
        json_object_set_new(obj, "status", status);
    }
    return json_incref(obj);
}
