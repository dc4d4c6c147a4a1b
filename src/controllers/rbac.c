/*
 * controllers/rbac: the RBAC policy kube-apiserver bootstraps, reconciled at every start
 * as its rbac/bootstrap-roles hook does: the ClusterRoles (cluster-admin, admin, edit,
 * view and their aggregation roles, system:discovery, system:basic-user,
 * system:public-info-viewer, the roles of kube's own components and controllers), their
 * ClusterRoleBindings, and the Roles and RoleBindings of kube-system and kube-public. The
 * policy is data (rbac-bootstrap.json, embedded at build time).
 *
 * A missing object is created. One whose annotation
 * rbac.authorization.kubernetes.io/autoupdate is "false" is left alone. Any other gets
 * what it lacks and nothing is taken away: labels and annotations it does not have, the
 * permissions of the policy it does not grant (as atomic rules, kube's Covers; not for a
 * role whose aggregation rule fills its rules), the selectors of the aggregation rule it
 * misses; a binding gets the subjects it misses, and one that names another role is
 * deleted and made again.
 */
#include <pthread.h>
#include <string.h>

#include "api/api.h"
#include "authz/authz.h"
#include "codec/json.h"
#include "controllers/controllers.h"
#include "select/select.h"

extern const struct {
    const char *name;
    const unsigned char *data;
    size_t len;
} kapi_rbac_bootstrap_files[];

#define AUTOUPDATE "rbac.authorization.kubernetes.io/autoupdate"

static const json_t *meta_of(const json_t *obj)
{
    return json_object_get(obj, "metadata");
}

static kapi_str str_member(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? (kapi_str){json_string_value(v), json_string_length(v)}
                             : KAPI_STR("");
}

/* Adds to have's map member key (labels, annotations) the entries of want's it lacks. */
static bool merge_map(json_t *have_meta, const json_t *want_meta, const char *key)
{
    const json_t *want = json_object_get(want_meta, key);
    json_t *have = json_object_get(have_meta, key);
    const char *k;
    json_t *v;
    bool changed = false;
    if (!json_is_object(want) || json_object_size(want) == 0)
        return false;
    if (!json_is_object(have)) {
        have = json_object();
        json_object_set_new(have_meta, key, have);
    }
    json_object_foreach((json_t *)want, k, v)
    {
        if (!json_object_get(have, k)) {
            json_object_set(have, k, v);
            changed = true;
        }
    }
    return changed;
}

/* Appends to have's array member key the items of want's it does not hold. */
static bool merge_items(json_t *have_obj, const json_t *want_obj, const char *key)
{
    const json_t *want = json_object_get(want_obj, key);
    json_t *have = json_object_get(have_obj, key);
    size_t i, k;
    json_t *w, *h;
    bool changed = false;
    if (!json_is_array(want))
        return false;
    if (!json_is_array(have)) {
        have = json_array();
        json_object_set_new(have_obj, key, have);
    }
    json_array_foreach(want, i, w)
    {
        bool found = false;
        json_array_foreach(have, k, h)
        {
            found = found || json_equal(h, w);
        }
        if (!found) {
            json_array_append(have, w);
            changed = true;
        }
    }
    return changed;
}

/* A piece of a rule the existing role lacks, appended to its rules. */
static void append_piece(void *ctx, const kapi_rbac_rule *piece)
{
    json_array_append_new(ctx, kapi_rbac_rule_json(piece));
}

/* Adds to have's rules the pieces of want's that they do not cover. */
static bool merge_rules(json_t *have, const json_t *want)
{
    kapi_arena a;
    kapi_rbac_rule *owner, *wanted;
    size_t n, nw;
    json_t *rules = json_object_get(have, "rules");
    size_t before;
    if (!json_is_array(rules)) {
        rules = json_array();
        json_object_set_new(have, "rules", rules);
    }
    before = json_array_size(rules);
    kapi_arena_init(&a);
    kapi_rbac_rules_parse(&a, rules, &owner, &n);
    kapi_rbac_rules_parse(&a, json_object_get(want, "rules"), &wanted, &nw);
    for (size_t i = 0; i < nw; i++)
        kapi_rbac_covers(owner, n, &wanted[i], append_piece, rules);
    kapi_arena_dispose(&a);
    return json_array_size(rules) != before;
}

static bool protected(const json_t *have)
{
    return kapi_str_eqc(str_member(json_object_get(meta_of(have), "annotations"), AUTOUPDATE),
                        "false");
}

/* The object of want's kind and name as stored: NULL (and no error) when there is none. */
static kapi_error *existing(kapi_api *api, const kapi_type *t, const json_t *want, json_t **out)
{
    kapi_error *err = kapi_api_get(api, t, str_member(meta_of(want), "namespace"),
                                   str_member(meta_of(want), "name"), out);
    if (err && err->status == KAPI_STATUS_NOT_FOUND) {
        kapi_error_free(err);
        *out = NULL;
        return NULL;
    }
    return err;
}

static kapi_error *create(kapi_api *api, const kapi_type *t, const json_t *want)
{
    return kapi_api_create(api, &kapi_api_loopback_user, t, str_member(meta_of(want), "namespace"),
                           json_deep_copy(want), NULL);
}

static kapi_error *reconcile_role(kapi_api *api, const kapi_type *t, const json_t *want)
{
    json_t *have;
    kapi_error *err = existing(api, t, want, &have);
    bool changed = false;
    if (err || !have)
        return err ? err : create(api, t, want);
    if (!protected(have)) {
        json_t *meta = json_object_get(have, "metadata");
        const json_t *want_agg = json_object_get(want, "aggregationRule");
        json_t *have_agg = json_object_get(have, "aggregationRule");
        changed = merge_map(meta, meta_of(want), "labels");
        changed = merge_map(meta, meta_of(want), "annotations") || changed;
        if (want_agg && !have_agg) {
            json_object_set(have, "aggregationRule", (json_t *)want_agg);
            changed = true;
        } else if (want_agg) {
            changed = merge_items(have_agg, want_agg, "clusterRoleSelectors") || changed;
        }
        if (!want_agg || !have_agg) /* an aggregated role's rules are its controller's */
            changed = merge_rules(have, want) || changed;
    }
    if (changed)
        err = kapi_api_update(api, &kapi_api_loopback_user, t, "", json_incref(have), NULL);
    json_decref(have);
    return err;
}

static kapi_error *reconcile_binding(kapi_api *api, const kapi_type *t, const json_t *want)
{
    json_t *have;
    kapi_error *err = existing(api, t, want, &have);
    bool changed = false;
    if (err || !have)
        return err ? err : create(api, t, want);
    if (!protected(have) &&
        !json_equal(json_object_get(have, "roleRef"), json_object_get(want, "roleRef"))) {
        kapi_delete_opts d = {.grace = -1};
        err =
            kapi_api_delete(api, &kapi_api_loopback_user, t, str_member(meta_of(want), "namespace"),
                            str_member(meta_of(want), "name"), &d, NULL, NULL);
        json_decref(have);
        return err ? err : create(api, t, want);
    }
    if (!protected(have)) {
        json_t *meta = json_object_get(have, "metadata");
        changed = merge_map(meta, meta_of(want), "labels");
        changed = merge_map(meta, meta_of(want), "annotations") || changed;
        changed = merge_items(have, want, "subjects") || changed;
    }
    if (changed)
        err = kapi_api_update(api, &kapi_api_loopback_user, t, "", json_incref(have), NULL);
    json_decref(have);
    return err;
}

/* One object of the policy to reconcile. */
typedef struct item {
    const kapi_type *type;
    const json_t *want;
    bool binding;
} item;

/* The reconcilers share the list: each takes the next item until it is done or one
 * failed (the first error is kept). Their writes land in the store's group commits
 * together, so a first start pays a few fsyncs, not one per object. */
typedef struct work {
    kapi_api *api;
    item *items;
    size_t n, next;
    kapi_error *err;
    pthread_mutex_t mu;
} work;

#define RECONCILERS 8

static void *reconciler(void *arg)
{
    work *w = arg;
    for (;;) {
        item *it = NULL;
        pthread_mutex_lock(&w->mu);
        if (!w->err && w->next < w->n)
            it = &w->items[w->next++];
        pthread_mutex_unlock(&w->mu);
        if (!it)
            return NULL;
        kapi_error *err = it->binding ? reconcile_binding(w->api, it->type, it->want)
                                      : reconcile_role(w->api, it->type, it->want);
        pthread_mutex_lock(&w->mu);
        if (err && !w->err)
            w->err = err;
        else
            kapi_error_free(err);
        pthread_mutex_unlock(&w->mu);
    }
}

kapi_error *kapi_rbac_bootstrap(kapi_api *api)
{
    static const struct {
        const char *member, *resource;
        bool binding;
    } kinds[] = {{"clusterRoles", "clusterroles", false},
                 {"clusterRoleBindings", "clusterrolebindings", true},
                 {"roles", "roles", false},
                 {"roleBindings", "rolebindings", true}};
    const kapi_registry *reg = kapi_api_registry(api);
    char *perr = NULL;
    json_t *policy = kapi_json_parse((const char *)kapi_rbac_bootstrap_files[0].data,
                                     kapi_rbac_bootstrap_files[0].len, &perr);
    work w = {.api = api};
    pthread_t threads[RECONCILERS];
    size_t cap = 0, started = 0;
    if (!json_is_object(policy)) {
        w.err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "the RBAC bootstrap policy: %s",
                               perr ? perr : "not an object");
        free(perr);
        json_decref(policy);
        return w.err;
    }
    for (size_t k = 0; k < KAPI_ARRAY_LEN(kinds); k++) {
        const kapi_type *t = kapi_registry_lookup(reg, KAPI_STR("rbac.authorization.k8s.io"),
                                                  KAPI_STR("v1"), kapi_str_c(kinds[k].resource));
        const json_t *list = json_object_get(policy, kinds[k].member);
        size_t i;
        json_t *want;
        if (!t) {
            w.err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "no type for %s", kinds[k].resource);
            break;
        }
        json_array_foreach(list, i, want)
        {
            if (w.n == cap) {
                cap = cap ? 2 * cap : 128;
                w.items = kapi_xrealloc(w.items, cap * sizeof(*w.items));
            }
            w.items[w.n++] = (item){t, want, kinds[k].binding};
        }
    }
    pthread_mutex_init(&w.mu, NULL);
    for (; !w.err && started < RECONCILERS; started++)
        if (pthread_create(&threads[started], NULL, reconciler, &w) != 0)
            break;
    if (started == 0 && !w.err) /* no thread to be had: one at a time, here */
        reconciler(&w);
    for (size_t i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    pthread_mutex_destroy(&w.mu);
    free(w.items);
    json_decref(policy);
    return w.err;
}

/* ---- the ClusterRole aggregation controller ---- */

#define AGGREGATION_RETRY_MS 1000
#define AGGREGATION_RESYNC_MS 300000

static const kapi_type *cluster_roles(kapi_api *api)
{
    return kapi_registry_lookup(kapi_api_registry(api), KAPI_STR("rbac.authorization.k8s.io"),
                                KAPI_STR("v1"), KAPI_STR("clusterroles"));
}

static bool rule_known(const json_t *rules, const json_t *rule)
{
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r)
    {
        if (json_equal(r, (json_t *)rule))
            return true;
    }
    return false;
}

/* The rules of an aggregated role: those of every other ClusterRole a selector of its
 * aggregation rule picks, by name, each rule once (kube's controller). items are sorted
 * by name already (the store lists in key order). */
static json_t *aggregate(const json_t *role, const json_t *items)
{
    const json_t *selectors = kapi_json_path(role, "aggregationRule.clusterRoleSelectors");
    kapi_str name = kapi_controllers__str(role, "metadata.name");
    json_t *rules = json_array(), *other, *sel, *rule;
    size_t i, k, r;
    json_array_foreach(items, i, other)
    {
        bool picked = false;
        if (kapi_str_eq(kapi_controllers__str(other, "metadata.name"), name))
            continue;
        json_array_foreach(selectors, k, sel)
        {
            picked =
                picked || kapi_labelsel_json_matches(sel, kapi_json_path(other, "metadata.labels"));
        }
        if (!picked)
            continue;
        json_array_foreach(json_object_get(other, "rules"), r, rule)
        {
            if (!rule_known(rules, rule))
                json_array_append(rules, rule);
        }
    }
    return rules;
}

static bool aggregate_pass(kapi_controller *c)
{
    kapi_api *api = kapi_controllers__api(c);
    const kapi_type *t = cluster_roles(api);
    json_t *items = NULL, *role;
    size_t i;
    bool waiting = false;
    kapi_error_free(kapi_api_list(api, t, KAPI_STR(""), &items, NULL));
    json_array_foreach(items, i, role)
    {
        json_t *rules;
        if (kapi_controllers__stopping(c))
            break;
        if (!json_is_object(json_object_get(role, "aggregationRule")))
            continue;
        rules = aggregate(role, items);
        if (json_equal(rules, json_object_get(role, "rules")) ||
            (json_array_size(rules) == 0 && !json_array_size(json_object_get(role, "rules")))) {
            json_decref(rules);
            continue;
        }
        json_t *updated = json_deep_copy(role);
        json_object_set_new(updated, "rules", rules);
        kapi_error *err = kapi_api_update(api, &kapi_controllers_user, t, "", updated, NULL);
        waiting = waiting || err != NULL; /* a conflict: the next pass reads it again */
        kapi_error_free(err);
    }
    json_decref(items);
    return waiting;
}

kapi_controller *kapi_rbac_aggregation_controller_start(kapi_api *api)
{
    const kapi_type *watched[] = {cluster_roles(api), NULL};
    return kapi_controllers__start(api, "clusterrole-aggregation", watched, AGGREGATION_RETRY_MS,
                                   AGGREGATION_RESYNC_MS, aggregate_pass);
}
