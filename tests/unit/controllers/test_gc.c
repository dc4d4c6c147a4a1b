/*
 * Unit tests for the garbage collector, a client of the api test server (api_env): a
 * dependent whose owner does not exist goes; an owner deleted in the background takes its
 * dependents after it, orphaning leaves them without its reference, in the foreground it
 * waits for a dependent whose reference blocks it; a delete without a policy takes the
 * type's default (batch/v1 Jobs orphan, Events take no finalizer); an owner of a kind not
 * served is left alone until its kind is served; Events are not collected (kube's
 * DefaultIgnoredResources).
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "api/api_env.h"
#include "codec/json.h"
#include "controllers/controllers.h"
#include "test.h"

typedef struct gc_env {
    api_env e;
    const kapi_type *cj, *sa, *ev;
    kapi_controller *gc;
} gc_env;

static json_t *get(gc_env *g, const kapi_type *t, const char *name)
{
    json_t *obj = NULL;
    kapi_error_free(kapi_api_get(g->e.api, t, KAPI_STR("gc"), kapi_str_c(name), &obj));
    return obj;
}

/* The first of obj's finalizers, "" when none. */
static const char *first_finalizer(const json_t *obj)
{
    const char *f =
        json_string_value(json_array_get(kapi_json_path(obj, "metadata.finalizers"), 0));
    return f ? f : "";
}

/* Waits up to 5 s for the object of t named name to be gone. */
static bool wait_gone(gc_env *g, const kapi_type *t, const char *name)
{
    struct timespec ms10 = {0, 10 * 1000000};
    for (int i = 0; i < 500; i++) {
        json_t *obj = get(g, t, name);
        json_decref(obj);
        if (!obj)
            return true;
        nanosleep(&ms10, NULL);
    }
    return false;
}

/* Creates the object json (printf-style) in the namespace gc; its uid, in buf. */
static const char *create(gc_env *g, const kapi_type *t, char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    char json[1024];
    va_start(ap, fmt);
    vsnprintf(json, sizeof(json), fmt, ap);
    va_end(ap);
    json_t *obj = kapi_json_parse(json, strlen(json), NULL), *out = NULL;
    CHECK(obj != NULL);
    kapi_error *err =
        kapi_api_create(g->e.api, &kapi_api_loopback_user, t, KAPI_STR("gc"), obj, &out);
    if (err)
        test_fail(__FILE__, __LINE__, "create: %s", err->message);
    kapi_error_free(err);
    snprintf(buf, n, "%s", kapi_json_path_str(out, "metadata.uid") ?: "");
    json_decref(out);
    return buf;
}

/* Deletes the object of t named name with the propagation policy (NULL: none); its
 * state after, or NULL when it went. */
static json_t *delete_with(gc_env *g, const kapi_type *t, const char *name, const char *policy)
{
    kapi_delete_opts d = {.propagation = policy, .grace = -1};
    json_t *out = NULL;
    bool removed = false;
    kapi_error *err = kapi_api_delete(g->e.api, &kapi_api_loopback_user, t, KAPI_STR("gc"),
                                      kapi_str_c(name), &d, &out, &removed);
    CHECK(err == NULL);
    kapi_error_free(err);
    if (removed) {
        json_decref(out);
        out = NULL;
    }
    return out;
}

static void gc_start(gc_env *g, bool controller)
{
    api_env_start(&g->e);
    g->cj = kapi_registry_lookup(g->e.reg, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("cronjobs"));
    g->sa =
        kapi_registry_lookup(g->e.reg, KAPI_STR(""), KAPI_STR("v1"), KAPI_STR("serviceaccounts"));
    g->ev = kapi_registry_lookup(g->e.reg, KAPI_STR(""), KAPI_STR("v1"), KAPI_STR("events"));
    const kapi_type *nst = kapi_registry_namespaces(g->e.reg);
    json_t *ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                           "name", "gc");
    CHECK(kapi_api_create(g->e.api, &kapi_api_loopback_user, nst, KAPI_STR(""), ns, NULL) == NULL);
    g->gc = controller ? kapi_gc_controller_start(g->e.api) : NULL;
}

static void gc_stop(gc_env *g)
{
    kapi_controller_stop(g->gc);
    api_env_stop(&g->e);
}

#define CRONJOB(name)                                                                              \
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":\"" name "\"},"      \
    "\"spec\":{\"schedule\":\"* * * * *\",\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"     \
    "\"restartPolicy\":\"OnFailure\",\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}" \
    "}}}}"
/* A ServiceAccount owned by the CronJob owner (uid), with more metadata. */
#define OWNED                                                                                      \
    "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":\"%s\","            \
    "\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"name\":\"%s\","      \
    "\"uid\":\"%s\"%s}]%s}}"

TEST(controllers_gc_dangling_owner)
{
    gc_env g = {0};
    char uid[64];
    gc_start(&g, true);
    create(&g, g.sa, uid, sizeof(uid), OWNED, "lost", "nobody",
           "00000000-0000-0000-0000-000000000001", "", "");
    CHECK(wait_gone(&g, g.sa, "lost"));
    create(&g, g.cj, uid, sizeof(uid), CRONJOB("real"));
    create(&g, g.sa, uid, sizeof(uid), OWNED, "impostor", "real",
           "00000000-0000-0000-0000-000000000002", "", "");
    CHECK(wait_gone(&g, g.sa, "impostor"));
    gc_stop(&g);
}

/* kube's collector ignores Events: one whose owner is gone stays (its ttl removes it). */
TEST(controllers_gc_ignores_events)
{
    gc_env g = {0};
    char uid[64];
    gc_start(&g, true);
    create(&g, g.ev, uid, sizeof(uid),
           "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"e\","
           "\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\","
           "\"name\":\"nobody\",\"uid\":\"00000000-0000-0000-0000-000000000003\"}]},"
           "\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\",\"namespace\":\"gc\"},"
           "\"reason\":\"R\",\"message\":\"m\"}");
    create(&g, g.sa, uid, sizeof(uid), OWNED, "lost", "nobody",
           "00000000-0000-0000-0000-000000000003", "", "");
    CHECK(wait_gone(&g, g.sa, "lost")); /* the collector saw both */
    struct timespec ms500 = {0, 500 * 1000000};
    nanosleep(&ms500, NULL);
    json_t *still = get(&g, g.ev, "e");
    CHECK(still != NULL);
    json_decref(still);
    gc_stop(&g);
}

#define WIDGETS_CRD                                                                                \
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","           \
    "\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\","         \
    "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\","          \
    "\"kind\":\"Widget\",\"listKind\":\"WidgetList\"},\"versions\":[{\"name\":\"v1\","             \
    "\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":"                  \
    "\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}]}}"
/* A ServiceAccount owned by a Widget that does not exist. */
#define OWNED_BY_WIDGET(name)                                                                      \
    "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":\"" name "\","      \
    "\"ownerReferences\":[{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"name\":"        \
    "\"w\",\"uid\":\"00000000-0000-0000-0000-000000000003\"}]}}"

/* The owner is a Widget, a kind nobody serves: its dependent stays. Once a CRD serves
 * Widgets, the owner is found missing and the dependent goes. */
TEST(controllers_gc_owner_of_a_kind_served_later)
{
    gc_env g = {0};
    char uid[64];
    gc_start(&g, true);
    create(&g, g.sa, uid, sizeof(uid), OWNED_BY_WIDGET("waiting"));
    struct timespec ms300 = {0, 300 * 1000000};
    nanosleep(&ms300, NULL);
    json_t *sa = get(&g, g.sa, "waiting");
    CHECK(sa != NULL);
    json_decref(sa);
    const kapi_type *crdt = kapi_registry_crds(g.e.reg);
    json_t *crd = json_loads(WIDGETS_CRD, 0, NULL);
    CHECK(kapi_api_create(g.e.api, &kapi_api_loopback_user, crdt, KAPI_STR(""), crd, NULL) == NULL);
    CHECK(wait_gone(&g, g.sa, "waiting"));
    gc_stop(&g);
}

TEST(controllers_gc_background_and_orphan)
{
    gc_env g = {0};
    char uid[64], sa[64];
    gc_start(&g, true);
    create(&g, g.cj, uid, sizeof(uid), CRONJOB("bg"));
    create(&g, g.sa, sa, sizeof(sa), OWNED, "bg-dep", "bg", uid, "", "");
    CHECK(delete_with(&g, g.cj, "bg", "Background") == NULL);
    CHECK(wait_gone(&g, g.sa, "bg-dep"));

    create(&g, g.cj, uid, sizeof(uid), CRONJOB("or"));
    create(&g, g.sa, sa, sizeof(sa), OWNED, "or-dep", "or", uid, "", "");
    json_t *owner = delete_with(&g, g.cj, "or", "Orphan");
    CHECK_STR_EQ(first_finalizer(owner), "orphan");
    json_decref(owner);
    CHECK(wait_gone(&g, g.cj, "or"));
    json_t *dep = get(&g, g.sa, "or-dep");
    CHECK(dep && !kapi_json_path(dep, "metadata.ownerReferences"));
    json_decref(dep);
    gc_stop(&g);
}

TEST(controllers_gc_foreground_waits_for_blocking_dependent)
{
    gc_env g = {0};
    char uid[64], sa[64];
    gc_start(&g, true);
    create(&g, g.cj, uid, sizeof(uid), CRONJOB("fg"));
    create(&g, g.sa, sa, sizeof(sa), OWNED, "fg-free", "fg", uid, "", "");
    create(&g, g.sa, sa, sizeof(sa), OWNED, "fg-held", "fg", uid, ",\"blockOwnerDeletion\":true",
           ",\"finalizers\":[\"example.com/hold\"]");
    json_decref(delete_with(&g, g.cj, "fg", "Foreground"));
    CHECK(wait_gone(&g, g.sa, "fg-free"));
    json_t *held = NULL;
    for (int i = 0; i < 500 && !kapi_json_path(held, "metadata.deletionTimestamp"); i++) {
        struct timespec ms10 = {0, 10 * 1000000};
        json_decref(held);
        nanosleep(&ms10, NULL);
        held = get(&g, g.sa, "fg-held");
    }
    CHECK(held && kapi_json_path(held, "metadata.deletionTimestamp"));
    json_t *owner = get(&g, g.cj, "fg");
    CHECK_STR_EQ(first_finalizer(owner), "foregroundDeletion");
    json_decref(owner);
    json_object_del(json_object_get(held, "metadata"), "finalizers");
    CHECK(kapi_api_update(g.e.api, &kapi_api_loopback_user, g.sa, "", held, NULL) == NULL);
    CHECK(wait_gone(&g, g.cj, "fg"));
    gc_stop(&g);
}

TEST(controllers_gc_default_policies)
{
    gc_env g = {0};
    char uid[64];
    gc_start(&g, false);
    const kapi_type *job =
        kapi_registry_lookup(g.e.reg, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("jobs"));
    create(&g, job, uid, sizeof(uid),
           "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\"},\"spec\":{"
           "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\","
           "\"image\":\"busybox\"}]}}}}");
    json_t *out = delete_with(&g, job, "j", NULL);
    CHECK_STR_EQ(first_finalizer(out), "orphan");
    json_decref(out);
    /* a delete without a policy keeps the finalizer the object has */
    create(&g, g.cj, uid, sizeof(uid), CRONJOB("c"));
    json_decref(delete_with(&g, g.cj, "c", "Foreground"));
    out = delete_with(&g, g.cj, "c", NULL);
    CHECK_STR_EQ(first_finalizer(out), "foregroundDeletion");
    json_decref(out);
    create(&g, g.ev, uid, sizeof(uid),
           "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"e\"},"
           "\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\",\"namespace\":\"gc\"},"
           "\"reason\":\"R\",\"message\":\"m\"}");
    CHECK(delete_with(&g, g.ev, "e", "Foreground") == NULL); /* Events take no finalizer */
    gc_stop(&g);
}

/* The CRD's storage type at its current revision (a reference). */
static const kapi_type *widgets_type(gc_env *g)
{
    const kapi_type *t = NULL;
    json_t *crd = NULL;
    CHECK(kapi_api_get(g->e.api, kapi_registry_crds(g->e.reg), KAPI_STR(""),
                       KAPI_STR("widgets.example.com"), &crd) == NULL);
    const char *rv = kapi_json_path_str(crd, "metadata.resourceVersion");
    CHECK(kapi_registry_custom_storage_type(g->e.reg, crd, strtoll(rv, NULL, 10), &t) == NULL);
    json_decref(crd);
    return t;
}

/* Each write of a CRD builds its type anew: the collector watches on with the new one and
 * lets go of the one it started with (holding it kept two of every type alive). */
TEST(controllers_gc_lets_go_of_a_crds_old_type)
{
    gc_env g = {0};
    char uid[64];
    gc_start(&g, false);
    const kapi_type *crdt = kapi_registry_crds(g.e.reg);
    json_t *crd = json_loads(WIDGETS_CRD, 0, NULL);
    CHECK(kapi_api_create(g.e.api, &kapi_api_loopback_user, crdt, KAPI_STR(""), crd, NULL) == NULL);
    /* the collector starts on the CRD as it is, and watches Widgets once it has gone
     * through the dependent of a Widget that is not there */
    const kapi_type *old = widgets_type(&g);
    g.gc = kapi_gc_controller_start(g.e.api);
    create(&g, g.sa, uid, sizeof(uid), OWNED_BY_WIDGET("waiting"));
    CHECK(wait_gone(&g, g.sa, "waiting"));
    CHECK(__atomic_load_n(&old->custom->refs, __ATOMIC_ACQUIRE) >=
          3); /* the cache's, the collector's and this test's */
    crd = NULL;
    CHECK(kapi_api_get(g.e.api, crdt, KAPI_STR(""), KAPI_STR("widgets.example.com"), &crd) == NULL);
    json_object_set_new(kapi_json_object_ensure(crd, "metadata"), "labels",
                        json_pack("{s:s}", "written", "again"));
    CHECK(kapi_api_update(g.e.api, &kapi_api_loopback_user, crdt, "", crd, NULL) == NULL);
    const kapi_type *now = widgets_type(&g);
    CHECK(now != old);
    struct timespec ms10 = {0, 10 * 1000000};
    for (int i = 0; i < 500 && __atomic_load_n(&old->custom->refs, __ATOMIC_ACQUIRE) > 1; i++)
        nanosleep(&ms10, NULL);
    CHECK_INT_EQ(__atomic_load_n(&old->custom->refs, __ATOMIC_ACQUIRE), 1);
    kapi_type_unref(old);
    kapi_type_unref(now);
    gc_stop(&g);
}
