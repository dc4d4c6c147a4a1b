/* Unit tests for the strategy hooks of the types kapi itself looks after, driven without
 * the api through a kapi_hook_ctx of the test's own (registry/lifecycle.c, namespace.c,
 * crd.c): the namespace lifecycle of a create (and the access reviews it lets through),
 * the immortal namespaces, the delete phases of namespaces and CRDs, and when a deleted
 * namespace may go. */
#include <jansson.h>

#include "codec/json.h"
#include "registry/registry.h"
#include "test.h"

/* The store the hooks see: at most one namespace, by name. */
typedef struct fake_store {
    const char *ns_name;
    const char *ns_phase;
    int gets;
} fake_store;

static json_t *fake_get(const kapi_hook_ctx *c, const kapi_type *t, kapi_str ns, kapi_str name)
{
    fake_store *s = c->pipeline;
    s->gets++;
    CHECK(t->is_namespace);
    CHECK(ns.len == 0);
    if (!s->ns_name || !kapi_str_eqc(name, s->ns_name))
        return NULL;
    return json_pack("{s:s,s:s,s:{s:s},s:{s:s}}", "kind", "Namespace", "apiVersion", "v1",
                     "metadata", "name", s->ns_name, "status", "phase", s->ns_phase);
}

static bool fake_propagate(const kapi_hook_ctx *c, json_t *meta)
{
    (void)c;
    json_object_set_new(meta, "finalizers", json_pack("[s]", "orphan"));
    return true;
}

static kapi_hook_ctx hook_ctx(const kapi_registry *reg, kapi_arena *a, fake_store *s)
{
    return (kapi_hook_ctx){.registry = reg,
                           .arena = a,
                           .now = "2024-01-02T03:04:05Z",
                           .get = fake_get,
                           .propagate = fake_propagate,
                           .pipeline = s};
}

static const kapi_type *type(kapi_registry *reg, const char *g, const char *p)
{
    const kapi_type *t = kapi_registry_lookup(reg, kapi_str_c(g), KAPI_STR("v1"), kapi_str_c(p));
    CHECK(t != NULL);
    return t;
}

TEST(hooks_create_needs_an_open_namespace)
{
    kapi_registry *reg;
    kapi_arena a;
    fake_store s = {"open", "Active", 0};
    CHECK(kapi_registry_new(&reg) == NULL);
    kapi_arena_init(&a);
    kapi_hook_ctx c = hook_ctx(reg, &a, &s);
    const kapi_type *cj = type(reg, "batch", "cronjobs");
    json_t *obj = json_pack("{s:{s:s}}", "metadata", "name", "x");
    CHECK(kapi_type_admit(cj, &c, KAPI_ADMIT_CREATE, KAPI_STR("open"), obj) == NULL);
    kapi_error *err = kapi_type_admit(cj, &c, KAPI_ADMIT_CREATE, KAPI_STR("gone"), obj);
    CHECK(err && err->status == KAPI_STATUS_NOT_FOUND);
    CHECK_STR_EQ(err->message, "namespaces \"gone\" not found");
    kapi_error_free(err);
    s.ns_phase = "Terminating";
    err = kapi_type_admit(cj, &c, KAPI_ADMIT_CREATE, KAPI_STR("open"), obj);
    CHECK(err && err->status == KAPI_STATUS_FORBIDDEN);
    CHECK_STR_EQ(err->message, "cronjobs.batch \"x\" is forbidden: unable to create new content "
                               "in namespace open because it is being terminated");
    kapi_error_free(err);
    /* a cluster-scoped type needs no namespace, and a delete is not refused for one */
    int gets = s.gets;
    CHECK(kapi_type_admit(type(reg, "", "namespaces"), &c, KAPI_ADMIT_CREATE, KAPI_STR(""), obj) ==
          NULL);
    CHECK(kapi_type_admit(cj, &c, KAPI_ADMIT_DELETE, KAPI_STR("open"), obj) == NULL);
    CHECK_INT_EQ(s.gets, gets);
    json_decref(obj);
    kapi_arena_dispose(&a);
    kapi_registry_free(reg);
}

/* A LocalSubjectAccessReview is admitted in a namespace that is missing or terminating:
 * kube's NamespaceLifecycle lets access reviews through, so as not to tell which
 * namespaces exist. */
TEST(hooks_access_review_in_any_namespace)
{
    kapi_registry *reg;
    kapi_arena a;
    fake_store s = {"closing", "Terminating", 0};
    CHECK(kapi_registry_new(&reg) == NULL);
    kapi_arena_init(&a);
    kapi_hook_ctx c = hook_ctx(reg, &a, &s);
    const kapi_type *lsar = type(reg, "authorization.k8s.io", "localsubjectaccessreviews");
    json_t *obj = json_pack("{s:{}}", "metadata");
    CHECK(!lsar->namespace_lifecycle && lsar->namespaced);
    CHECK(kapi_type_admit(lsar, &c, KAPI_ADMIT_CREATE, KAPI_STR("gone"), obj) == NULL);
    CHECK(kapi_type_admit(lsar, &c, KAPI_ADMIT_CREATE, KAPI_STR("closing"), obj) == NULL);
    CHECK_INT_EQ(s.gets, 0);
    json_decref(obj);
    kapi_arena_dispose(&a);
    kapi_registry_free(reg);
}

TEST(hooks_immortal_namespaces)
{
    kapi_registry *reg;
    kapi_arena a;
    fake_store s = {0};
    CHECK(kapi_registry_new(&reg) == NULL);
    kapi_arena_init(&a);
    kapi_hook_ctx c = hook_ctx(reg, &a, &s);
    const kapi_type *nst = type(reg, "", "namespaces");
    static const char *const names[] = {"default", "kube-system", "kube-public"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(names); i++) {
        json_t *ns = json_pack("{s:{s:s}}", "metadata", "name", names[i]);
        kapi_error *err = kapi_type_admit(nst, &c, KAPI_ADMIT_DELETE, KAPI_STR(""), ns);
        CHECK(err && err->status == KAPI_STATUS_FORBIDDEN);
        kapi_error_free(err);
        json_decref(ns);
    }
    json_t *ns = json_pack("{s:{s:s}}", "metadata", "name", "mortal");
    CHECK(kapi_type_admit(nst, &c, KAPI_ADMIT_DELETE, KAPI_STR(""), ns) == NULL);
    json_decref(ns);
    kapi_arena_dispose(&a);
    kapi_registry_free(reg);
}

TEST(hooks_namespace_delete_phases)
{
    kapi_registry *reg;
    kapi_arena a;
    fake_store s = {0};
    CHECK(kapi_registry_new(&reg) == NULL);
    kapi_arena_init(&a);
    kapi_hook_ctx c = hook_ctx(reg, &a, &s);
    const kapi_type *nst = type(reg, "", "namespaces");
    json_t *ns = json_pack("{s:{s:s},s:{s:[s]},s:{s:s}}", "metadata", "name", "n", "spec",
                           "finalizers", "kubernetes", "status", "phase", "Active");
    CHECK(nst->strategy->before_delete(nst, &c, ns) == KAPI_DELETE_MARKED);
    CHECK_STR_EQ(kapi_json_path_str(ns, "status.phase"), "Terminating");
    CHECK_STR_EQ(kapi_json_path_str(ns, "metadata.deletionTimestamp"), "2024-01-02T03:04:05Z");
    CHECK_INT_EQ(json_array_size(kapi_json_path(ns, "metadata.finalizers")), 1); /* propagated */
    /* deleted again: it waits while spec.finalizers holds it, and an update keeps it */
    json_object_del(json_object_get(ns, "metadata"), "finalizers");
    CHECK(nst->strategy->before_delete(nst, &c, ns) == KAPI_DELETE_WAIT);
    CHECK(!kapi_type_deletion_done(nst, ns));
    json_array_clear(kapi_json_path(ns, "spec.finalizers"));
    CHECK(nst->strategy->before_delete(nst, &c, ns) == KAPI_DELETE_GENERIC);
    CHECK(kapi_type_deletion_done(nst, ns));
    json_decref(ns);
    kapi_arena_dispose(&a);
    kapi_registry_free(reg);
}

TEST(hooks_crd_delete_marks_for_cleanup)
{
    kapi_registry *reg;
    kapi_arena a;
    fake_store s = {0};
    CHECK(kapi_registry_new(&reg) == NULL);
    kapi_arena_init(&a);
    kapi_hook_ctx c = hook_ctx(reg, &a, &s);
    const kapi_type *crdt = type(reg, "apiextensions.k8s.io", "customresourcedefinitions");
    json_t *crd = json_pack("{s:{s:s}}", "metadata", "name", "widgets.example.com");
    CHECK(crdt->strategy->before_delete(crdt, &c, crd) == KAPI_DELETE_MARKED);
    const json_t *fins = kapi_json_path(crd, "metadata.finalizers");
    CHECK_INT_EQ(json_array_size(fins), 1);
    CHECK_STR_EQ(json_string_value(json_array_get(fins, 0)), KAPI_CRD_CLEANUP);
    CHECK(kapi_crd_condition(crd, "Terminating"));
    CHECK(!kapi_type_deletion_done(crdt, crd));
    /* marked already: the generic delete goes on, which waits for the finalizer */
    CHECK(crdt->strategy->before_delete(crdt, &c, crd) == KAPI_DELETE_GENERIC);
    CHECK_INT_EQ(json_array_size(kapi_json_path(crd, "metadata.finalizers")), 1);
    json_decref(crd);
    kapi_arena_dispose(&a);
    kapi_registry_free(reg);
}
