/*
 * api/audit_policy: --audit-policy-file, an audit.k8s.io/v1 Policy (YAML or JSON) read at
 * start, and the level its first matching rule gives a request, as kube-apiserver's
 * policy checker matches users, userGroups, verbs, namespaces, resources (group; a
 * resource, "res/sub", "*", a subresource of every resource, every subresource of one;
 * resourceNames) and nonResourceURLs (exact, or a prefix ending in "*"). No rule
 * matching is level None. kapi writes the RequestReceived and ResponseComplete stages, at
 * Metadata at most: a Request or RequestResponse rule logs its requests at Metadata.
 */
#include <string.h>

#include "api/api_int.h"
#include "codec/yaml.h"

struct kapi_audit_policy {
    json_t *doc; /* validated: every member read below has its type */
};

static const char *const levels[] = {"None", "Metadata", "Request", "RequestResponse", NULL};
static const char *const stages[] = {"RequestReceived", "ResponseStarted", "ResponseComplete",
                                     "Panic", NULL};

static kapi_error *invalid(const char *field, const char *why)
{
    return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%s: %s", field, why);
}

/* A member that is absent, null, or a list of strings (each one of allowed, if given). */
static kapi_error *check_strings(const json_t *obj, const char *key, const char *field,
                                 const char *const *allowed)
{
    const json_t *l = json_object_get(obj, key), *v;
    size_t i;
    if (!l || json_is_null(l))
        return NULL;
    if (!json_is_array(l))
        return invalid(field, "must be a list of strings");
    json_array_foreach(l, i, v)
    {
        if (!json_is_string(v))
            return invalid(field, "must be a list of strings");
        if (allowed && !kapi_cstr_in(json_string_value(v), allowed))
            return invalid(field, "Unsupported value");
    }
    return NULL;
}

static kapi_error *check_resources(const json_t *rule)
{
    const json_t *l = json_object_get(rule, "resources"), *gr, *group;
    size_t i;
    kapi_error *err = NULL;
    if (!l || json_is_null(l))
        return NULL;
    if (!json_is_array(l))
        return invalid("rules.resources", "must be a list");
    json_array_foreach(l, i, gr)
    {
        if (!json_is_object(gr))
            return invalid("rules.resources", "must be a list of GroupResources");
        group = json_object_get(gr, "group");
        if (group && !json_is_string(group) && !json_is_null(group))
            return invalid("rules.resources.group", "must be a string");
        if ((err = check_strings(gr, "resources", "rules.resources.resources", NULL)) ||
            (err = check_strings(gr, "resourceNames", "rules.resources.resourceNames", NULL)))
            return err;
    }
    return NULL;
}

static kapi_error *check_rule(const json_t *rule)
{
    static const char *const lists[] = {"users", "userGroups", "verbs", "namespaces",
                                        "nonResourceURLs"};
    kapi_error *err;
    if (!json_is_object(rule))
        return invalid("rules", "must be a list of PolicyRules");
    const char *level = json_string_value(json_object_get(rule, "level"));
    if (!level || !kapi_cstr_in(level, levels))
        return invalid("rules.level",
                       "Unsupported value: supported values: \"None\", \"Metadata\", "
                       "\"Request\", \"RequestResponse\"");
    for (size_t i = 0; i < KAPI_ARRAY_LEN(lists); i++)
        if ((err = check_strings(rule, lists[i], lists[i], NULL)) != NULL)
            return err;
    if ((err = check_strings(rule, "omitStages", "rules.omitStages", stages)) ||
        (err = check_resources(rule)))
        return err;
    bool resources = json_array_size(json_object_get(rule, "resources")) ||
                     json_array_size(json_object_get(rule, "namespaces"));
    if (resources && json_array_size(json_object_get(rule, "nonResourceURLs")))
        return invalid("rules.nonResourceURLs",
                       "rules cannot apply to both regular resources and non-resource URLs");
    return NULL;
}

static kapi_error *check_policy(const json_t *doc)
{
    const json_t *rules = json_object_get(doc, "rules"), *rule;
    size_t i;
    kapi_error *err;
    if (!json_is_object(doc))
        return invalid("policy", "not an object");
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const char *version = json_string_value(json_object_get(doc, "apiVersion"));
    if (!kind || strcmp(kind, "Policy") != 0 || !version || strcmp(version, "audit.k8s.io/v1") != 0)
        return invalid("policy", "not an audit.k8s.io/v1 Policy");
    if (rules && !json_is_array(rules) && !json_is_null(rules))
        return invalid("rules", "must be a list of PolicyRules");
    if ((err = check_strings(doc, "omitStages", "omitStages", stages)) != NULL)
        return err;
    json_array_foreach(rules, i, rule)
    {
        if ((err = check_rule(rule)) != NULL)
            return err;
    }
    return NULL;
}

kapi_error *kapi_api__audit_policy_parse(const char *data, size_t len, kapi_audit_policy **out)
{
    json_t *doc = NULL;
    kapi_error *err = kapi_yaml_parse(data, len, &doc, NULL);
    *out = NULL;
    if (!err && (err = check_policy(doc)) == NULL) {
        *out = kapi_xcalloc(1, sizeof(**out));
        (*out)->doc = doc;
        return NULL;
    }
    json_decref(doc);
    return err;
}

void kapi_api__audit_policy_free(kapi_audit_policy *p)
{
    if (!p)
        return;
    json_decref(p->doc);
    free(p);
}

/* True when the list of strings holds s (s by length: a namespace may hold a NUL). */
static bool holds(const json_t *list, kapi_str s)
{
    const json_t *v;
    size_t i;
    json_array_foreach(list, i, v)
    {
        if (kapi_str_eq(kapi_str_c(json_string_value(v)), s))
            return true;
    }
    return false;
}

/* An absent or empty list matches anything, else it must hold s. */
static bool listed(const json_t *rule, const char *key, kapi_str s)
{
    const json_t *l = json_object_get(rule, key);
    return !json_array_size(l) || holds(l, s);
}

static bool in_groups(const json_t *rule, const kapi_user *u)
{
    const json_t *l = json_object_get(rule, "userGroups");
    if (!json_array_size(l))
        return true;
    for (const char *const *g = u->groups; g && *g; g++)
        if (holds(l, kapi_str_c(*g)))
            return true;
    return false;
}

/* One of gr's resources names the request's resource (policy/checker.go's rules). */
static bool resource_named(const json_t *gr, const kapi_reqinfo *in)
{
    const json_t *names = json_object_get(gr, "resourceNames"), *v;
    const char *sub = in->subresource;
    size_t rlen = strlen(in->resource), i;
    if (json_array_size(names) && !holds(names, in->name))
        return false;
    json_array_foreach(json_object_get(gr, "resources"), i, v)
    {
        const char *res = json_string_value(v);
        size_t n = strlen(res);
        bool same =
            strncmp(res, in->resource, rlen) == 0 &&
            (res[rlen] == '\0' ? !*sub
                               : res[rlen] == '/' && *sub && strcmp(res + rlen + 1, sub) == 0);
        if (same || strcmp(res, "*") == 0 ||
            (*sub && strncmp(res, "*/", 2) == 0 && strcmp(res + 2, sub) == 0) ||
            (n == rlen + 2 && strncmp(res, in->resource, rlen) == 0 &&
             strcmp(res + rlen, "/*") == 0))
            return true;
    }
    return false;
}

static bool resource_matches(const json_t *rule, const kapi_reqinfo *in)
{
    const json_t *l = json_object_get(rule, "resources"), *gr;
    size_t i;
    if (!in->is_resource || !*in->resource || !listed(rule, "namespaces", in->ns))
        return false;
    if (!json_array_size(l))
        return true;
    json_array_foreach(l, i, gr)
    {
        const char *group = json_string_value(json_object_get(gr, "group"));
        if (strcmp(group ? group : "", in->group) != 0)
            continue;
        if (!json_array_size(json_object_get(gr, "resources")) || resource_named(gr, in))
            return true;
    }
    return false;
}

static bool url_matches(const json_t *rule, const kapi_reqinfo *in, const char *path)
{
    const json_t *v;
    size_t i;
    if (in->is_resource && *in->resource)
        return false;
    json_array_foreach(json_object_get(rule, "nonResourceURLs"), i, v)
    {
        const char *spec = json_string_value(v);
        size_t n = strlen(spec);
        if (strcmp(spec, path) == 0 || (n && spec[n - 1] == '*' && strncmp(spec, path, n - 1) == 0))
            return true;
    }
    return false;
}

static bool rule_matches(const json_t *rule, const kapi_user *u, const char *verb,
                         const kapi_reqinfo *in, const char *path)
{
    if (!listed(rule, "users", kapi_str_c(u->name ? u->name : "")) || !in_groups(rule, u) ||
        !listed(rule, "verbs", kapi_str_c(verb)))
        return false;
    if (json_array_size(json_object_get(rule, "resources")) ||
        json_array_size(json_object_get(rule, "namespaces")))
        return resource_matches(rule, in);
    if (json_array_size(json_object_get(rule, "nonResourceURLs")))
        return url_matches(rule, in, path);
    return true;
}

const char *kapi_api__audit_policy_level(const kapi_audit_policy *p, const kapi_user *u,
                                         const char *verb, const kapi_reqinfo *in, const char *path,
                                         const char *stage)
{
    const json_t *rule;
    size_t i;
    json_array_foreach(json_object_get(p->doc, "rules"), i, rule)
    {
        if (!rule_matches(rule, u, verb, in, path))
            continue;
        const char *level = json_string_value(json_object_get(rule, "level"));
        bool omitted = holds(json_object_get(p->doc, "omitStages"), kapi_str_c(stage)) ||
                       holds(json_object_get(rule, "omitStages"), kapi_str_c(stage));
        return omitted || strcmp(level, "None") == 0 ? NULL : level;
    }
    return NULL;
}
