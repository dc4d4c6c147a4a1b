/* Unit tests for the registry's index (registry/registry.c): lookups by group, version
 * and plural, whole and by length, and the groups and versions it serves. */
#include "registry/registry.h"
#include "test.h"

static kapi_registry *load(void)
{
    kapi_registry *r = NULL;
    kapi_error_free(kapi_registry_new(&r));
    return r;
}

TEST(registry_lookup_every_type)
{
    kapi_registry *r = load();
    CHECK(r != NULL && kapi_registry_count(r) > 0);
    for (size_t i = 0; i < kapi_registry_count(r); i++) {
        const kapi_type *t = kapi_registry_at(r, i);
        CHECK(kapi_registry_lookup(r, kapi_str_c(t->group), kapi_str_c(t->version),
                                   kapi_str_c(t->plural)) == t);
        CHECK(kapi_registry_has_group(r, kapi_str_c(t->group)));
        CHECK(kapi_registry_has_group_version(r, kapi_str_c(t->group), kapi_str_c(t->version)));
    }
    kapi_registry_free(r);
}

TEST(registry_lookup_misses)
{
    kapi_registry *r = load();
    const kapi_type *cj =
        kapi_registry_lookup(r, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("cronjobs"));
    CHECK(cj != NULL && strcmp(cj->kind, "CronJob") == 0);
    CHECK(kapi_registry_lookup(r, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("")) == NULL);
    CHECK(kapi_registry_lookup(r, KAPI_STR("batch"), KAPI_STR(""), KAPI_STR("")) == NULL);
    CHECK(kapi_registry_lookup(r, KAPI_STR("batch"), KAPI_STR("v2"), KAPI_STR("cronjobs")) == NULL);
    CHECK(kapi_registry_lookup(r, KAPI_STR(""), KAPI_STR("v1"), KAPI_STR("cronjobs")) == NULL);
    /* By length: a NUL inside or a prefix is another name. */
    CHECK(kapi_registry_lookup(r, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("cronjobs\0x")) ==
          NULL);
    CHECK(kapi_registry_lookup(r, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("cronjob")) == NULL);
    CHECK(kapi_registry_lookup(r, KAPI_STR(""), KAPI_STR("v1"), KAPI_STR("namespaces")) != NULL);
    CHECK(kapi_registry_has_group(r, KAPI_STR("")));
    CHECK(kapi_registry_has_group(r, KAPI_STR("batch")));
    CHECK(!kapi_registry_has_group(r, KAPI_STR("batc")));
    CHECK(kapi_registry_has_group_version(r, KAPI_STR("batch"), KAPI_STR("v1")));
    CHECK(!kapi_registry_has_group_version(r, KAPI_STR("batch"), KAPI_STR("")));
    CHECK(!kapi_registry_has_group_version(r, KAPI_STR("batch"), KAPI_STR("v9")));
    kapi_registry_free(r);
}

/* Keys are built and split in one place, by length: a NUL in a name is part of it. */
TEST(registry_key_round_trip)
{
    kapi_registry *r = load();
    kapi_arena a;
    kapi_arena_init(&a);
    const kapi_type *cj =
        kapi_registry_lookup(r, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("cronjobs"));
    const kapi_type *ns = kapi_registry_namespaces(r), *crds = kapi_registry_crds(r);
    CHECK(ns != NULL && strcmp(ns->kind, "Namespace") == 0);
    CHECK(crds != NULL && strcmp(crds->kind, "CustomResourceDefinition") == 0);
    kapi_str key = kapi_type_key(&a, cj, KAPI_STR("default"), KAPI_STR("a\0b"));
    CHECK(key.len == strlen("/cronjobs/default/a") + 2 && key.ptr[key.len] == '\0');
    kapi_str n, name;
    CHECK(kapi_type_key_parse(cj, key, &n, &name));
    CHECK(kapi_str_eqc(n, "default"));
    CHECK(kapi_str_eq(name, KAPI_STR("a\0b")));
    kapi_str prefix = kapi_type_key(&a, cj, KAPI_STR("default"), KAPI_STR(""));
    CHECK(kapi_str_eqc(prefix, "/cronjobs/default/"));
    CHECK(kapi_str_eqc(kapi_type_key(&a, cj, KAPI_STR(""), KAPI_STR("")), "/cronjobs/"));
    key = kapi_type_key(&a, ns, KAPI_STR(""), KAPI_STR("kube-system"));
    CHECK(kapi_str_eqc(key, "/namespaces/kube-system"));
    CHECK(kapi_type_key_parse(ns, key, &n, &name));
    CHECK(n.len == 0 && kapi_str_eqc(name, "kube-system"));
    /* A namespace is never put in the key of a cluster-scoped type. */
    CHECK(kapi_str_eqc(kapi_type_key(&a, crds, KAPI_STR("x"), KAPI_STR("a.b")),
                       "/apiextensions.k8s.io/customresourcedefinitions/a.b"));
    /* Keys of another type, or not keys at all. */
    CHECK(!kapi_type_key_parse(cj, key, &n, &name) && n.len == 0 && name.len == 0);
    CHECK(!kapi_type_key_parse(cj, KAPI_STR("/cronjob/default/x"), NULL, &name));
    CHECK(!kapi_type_key_parse(cj, KAPI_STR("/cronjobs/default"), NULL, NULL));
    CHECK(!kapi_type_key_parse(cj, KAPI_STR("cronjobs/default/x"), NULL, NULL));
    CHECK(!kapi_type_key_parse(cj, KAPI_STR(""), NULL, NULL));
    kapi_arena_dispose(&a);
    kapi_registry_free(r);
}

/* The facts the pipeline reads are typed when the type is built. */
TEST(registry_typed_facts)
{
    kapi_registry *r = load();
    const kapi_type *cj =
        kapi_registry_lookup(r, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("cronjobs"));
    const kapi_type *ev = kapi_registry_lookup(r, KAPI_STR(""), KAPI_STR("v1"), KAPI_STR("events"));
    const kapi_type *ns = kapi_registry_namespaces(r);
    CHECK(cj->max_name_length == 52 && !cj->create_on_update);
    CHECK(cj->name_rule == KAPI_NAME_RULE_SUBDOMAIN);
    CHECK(ev->create_on_update && ev->max_name_length == 0);
    CHECK(ns->name_rule == KAPI_NAME_RULE_LABEL && !ns->create_on_update);
    CHECK(cj->openapi_name == NULL || strstr(cj->openapi_name, "CronJob") != NULL);
    /* kube-apiserver keeps built-in objects in protobuf, CRDs in JSON */
    CHECK(cj->protobuf_storage && ns->protobuf_storage && !kapi_registry_crds(r)->protobuf_storage);
    const kapi_type *rb = kapi_registry_lookup(r, KAPI_STR("rbac.authorization.k8s.io"),
                                               KAPI_STR("v1"), KAPI_STR("rolebindings"));
    CHECK(rb->name_rule == KAPI_NAME_RULE_RBAC && rb->create_on_update && rb->namespaced);
    CHECK(rb->all_namespaces && rb->short_names[0] == NULL && !rb->generation);
    /* a Lease is updated only at a resourceVersion (AllowUnconditionalUpdate false) */
    const kapi_type *lease = kapi_registry_lookup(r, KAPI_STR("coordination.k8s.io"),
                                                  KAPI_STR("v1"), KAPI_STR("leases"));
    CHECK(lease->conditional_update && lease->create_on_update && lease->namespaced);
    CHECK(lease->short_names[0] == NULL && lease->protobuf_storage && !cj->conditional_update);
    /* discovery order: groups by priority */
    for (size_t i = 1; i < kapi_registry_count(r); i++)
        CHECK(kapi_registry_at(r, i - 1)->group_priority <= kapi_registry_at(r, i)->group_priority);
    kapi_registry_free(r);
}

/* A subresource of its own kind: serviceaccounts/token takes and answers a TokenRequest,
 * a kind with a schema and a protobuf message that is neither served nor stored. */
TEST(registry_subresource_kind)
{
    kapi_registry *r = load();
    const kapi_type *sa = kapi_registry_serviceaccounts(r);
    const kapi_type *tr =
        kapi_registry_subresource_kind(r, "authentication.k8s.io/v1", "TokenRequest");
    CHECK(sa && tr && sa->namespaced);
    CHECK_STR_EQ(sa->short_names[0], "sa");
    const kapi_subresource *token = kapi_type_subresource(sa, KAPI_STR("token"));
    CHECK(token && token->kind == tr && kapi_verbs_has(token->verbs, "create"));
    CHECK(tr->schema && tr->protobuf && tr->smd && tr->zero);
    CHECK(kapi_registry_pb_message(r, "authentication.k8s.io/v1", "TokenRequest") == tr->protobuf);
    CHECK(!kapi_registry_lookup(r, KAPI_STR("authentication.k8s.io"), KAPI_STR("v1"),
                                KAPI_STR("tokenrequests")));
    for (size_t i = 0; i < kapi_registry_count(r); i++)
        CHECK(kapi_registry_at(r, i) != tr);
    CHECK(!kapi_registry_subresource_kind(r, "v1", "ServiceAccount"));
    kapi_registry_free(r);
}

/* The reviews: served for create only and never stored ("persisted": false), so they have
 * no storage of their own and no storageVersionHash, as kube-apiserver's discovery shows
 * them; their groups come between events.k8s.io and batch, as in kube's /apis. */
TEST(registry_review_types)
{
    static const struct {
        const char *group, *plural, *kind;
        bool namespaced;
    } reviews[] = {
        {"authentication.k8s.io", "tokenreviews", "TokenReview", false},
        {"authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview", false},
        {"authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview", false},
        {"authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview", false},
        {"authorization.k8s.io", "localsubjectaccessreviews", "LocalSubjectAccessReview", true},
        {"authorization.k8s.io", "selfsubjectrulesreviews", "SelfSubjectRulesReview", false},
    };
    kapi_registry *r = load();
    for (size_t i = 0; i < KAPI_ARRAY_LEN(reviews); i++) {
        const kapi_type *t = kapi_registry_lookup(r, kapi_str_c(reviews[i].group), KAPI_STR("v1"),
                                                  kapi_str_c(reviews[i].plural));
        CHECK(t != NULL && !t->persisted && t->builtin);
        CHECK_STR_EQ(t->kind, reviews[i].kind);
        CHECK(t->namespaced == reviews[i].namespaced);
        CHECK(t->namespace_lifecycle == !t->namespaced);
        CHECK(t->verbs[0] && strcmp(t->verbs[0], "create") == 0 && !t->verbs[1]);
        CHECK(t->nsubresources == 0 && !t->short_names[0] && !t->categories[0]);
        CHECK(t->storage_version_hash == NULL);
        CHECK_STR_EQ(t->storage_group, t->group);
        CHECK_STR_EQ(t->storage_resource, t->plural);
    }
    size_t events = 0, authn = 0, authz = 0, batch = 0;
    for (size_t i = 0; i < kapi_registry_count(r); i++) {
        const kapi_type *t = kapi_registry_at(r, i);
        size_t *at = !strcmp(t->group, "events.k8s.io")           ? &events
                     : !strcmp(t->group, "authentication.k8s.io") ? &authn
                     : !strcmp(t->group, "authorization.k8s.io")  ? &authz
                     : !strcmp(t->group, "batch")                 ? &batch
                                                                  : NULL;
        if (at)
            *at = i;
        CHECK(t->persisted == (t->storage_version_hash != NULL));
        CHECK(t->namespace_lifecycle || !t->persisted);
    }
    CHECK(events < authn && authn < authz && authz < batch);
    kapi_registry_free(r);
}
