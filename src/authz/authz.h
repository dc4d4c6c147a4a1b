/*
 * authz: who may do what. kube-apiserver's authorizers, as it chains them with
 * --authorization-mode=RBAC: members of system:masters may do everything; everyone else
 * may do what the RBAC objects (Role, ClusterRole, RoleBinding, ClusterRoleBinding)
 * grant them, and nothing else.
 *
 * A kapi_rbac_policy is one immutable snapshot of the RBAC objects, indexed by subject:
 * a decision looks up the user's name and groups (a ServiceAccount subject is its user
 * name, system:serviceaccount:<ns>:<name>) among the cluster-wide bindings and the
 * bindings of the request's namespace, and tries only the rules of the roles those
 * bindings name; it never walks every binding. The api builds a new snapshot when an RBAC
 * object changes and hands requests the one that is current; any thread may read a
 * snapshot.
 *
 * The rules match as kube's RBAC evaluation matches them: verbs and API groups exactly or
 * "*"; resources exactly ("cronjobs", "cronjobs/status"), "*", or "*" then "/" and the
 * subresource;
 * resourceNames, when given, only the named objects (so never a create, a list or a
 * watch); nonResourceURLs exactly, "*", or a prefix ending in "*".
 */
#ifndef KAPI_AUTHZ_H
#define KAPI_AUTHZ_H

#include <jansson.h>

#include "auth/auth.h"
#include "base/base.h"

/* What a request asks to do, as kube's authorizer.Attributes. */
typedef struct kapi_authz_attrs {
    const kapi_user *user;
    const char *verb;          /* get list watch create update patch delete deletecollection, or
                                * a non-resource request's lower-cased method (get, post, ...);
                                * impersonate, bind, escalate for those checks */
    bool resource;             /* a resource request (else a path) */
    const char *group;         /* "" for the core group */
    const char *resource_name; /* plural, e.g. "cronjobs" */
    const char *subresource;   /* "" when none */
    kapi_str ns;               /* empty: cluster-scoped, or all namespaces */
    kapi_str name;             /* empty when the request names no object */
    const char *path;          /* a non-resource request's path */
} kapi_authz_attrs;

/* One rule of a role: NULL-terminated lists (a NULL list is empty). */
typedef struct kapi_rbac_rule {
    const char *const *verbs;
    const char *const *groups;
    const char *const *resources;
    const char *const *names;
    const char *const *urls;
} kapi_rbac_rule;

typedef struct kapi_rbac_policy kapi_rbac_policy;

/* An empty policy, to be filled with kapi_rbac_policy_add and sealed. */
kapi_rbac_policy *kapi_rbac_policy_new(void);
/* Adds one stored RBAC object (its kind says which; its strings are copied). Objects of
 * other kinds are ignored, and malformed members read as empty (the store holds only
 * validated objects). */
void kapi_rbac_policy_add(kapi_rbac_policy *p, const json_t *obj);
void kapi_rbac_policy_free(kapi_rbac_policy *p);

/* Whether a rule allows a request. */
bool kapi_rbac_rule_allows(const kapi_rbac_rule *r, const kapi_authz_attrs *a);

/* The rules of a role's "rules" array, strings copied into a (an array in a). */
void kapi_rbac_rules_parse(kapi_arena *a, const json_t *rules, kapi_rbac_rule **out, size_t *n);

/* A rule as kube's PolicyRule writes it: verbs, then apiGroups, resources, resourceNames
 * and nonResourceURLs when not empty (a new reference). */
json_t *kapi_rbac_rule_json(const kapi_rbac_rule *r);

/* Whether owner's rules cover rule, as kube's validation.Covers decides: every atomic
 * piece of rule (one API group, resource, verb and resource name, or one URL and verb) is
 * allowed by one owner rule. missing (may be NULL) gets each piece that is not, in kube's
 * order (groups, then resources, verbs, names; then URLs and verbs). */
bool kapi_rbac_covers(const kapi_rbac_rule *owner, size_t n, const kapi_rbac_rule *rule,
                      void (*missing)(void *ctx, const kapi_rbac_rule *piece), void *ctx);

/* The rules of a ClusterRole (cluster) or of a Role in ns, by name; false when the policy
 * has no such role. *rules points into the policy. */
bool kapi_rbac_role_rules(const kapi_rbac_policy *p, bool cluster, const char *ns, const char *name,
                          const kapi_rbac_rule **rules, size_t *n);

/* Whether the policy's RBAC rules allow a request (system:masters is the caller's:
 * kube asks its own authorizer first). reason gets kube's words for the decision:
 * "RBAC: allowed by ClusterRoleBinding ..." when allowed and why_allowed is set (an access
 * review wants it, a request does not); when not allowed, the roles that bindings
 * applying to the user name and that do not exist ("RBAC: ... not found"), or nothing. */
bool kapi_rbac_allows(const kapi_rbac_policy *p, const kapi_authz_attrs *a, kapi_buf *reason,
                      bool why_allowed);

/* Calls fn for each rule that applies to user in ns (cluster-wide bindings first, then
 * those of ns when not empty), until fn returns false; a binding whose role is missing
 * calls fn with rule NULL and the error's text. */
void kapi_rbac_visit(const kapi_rbac_policy *p, const kapi_user *user, kapi_str ns,
                     bool (*fn)(void *ctx, const kapi_rbac_rule *rule, const char *err), void *ctx);

/* kube's Forbidden message for a denied request ("cronjobs.batch is forbidden: User ...
 * cannot list resource ..."), reason appended after ": " when not empty; heap string. */
char *kapi_authz_forbidden_message(const kapi_authz_attrs *a, const char *reason);

#endif
