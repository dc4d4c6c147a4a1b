/*
 * Unit tests for the controllers, as clients of the api test server (api_env): the
 * namespace controller empties a namespace being deleted and removes it once its last
 * object has gone; the CRD controller establishes a new CRD and, once it is deleted,
 * removes its custom resources and then the CRD; the serviceaccounts controller keeps a
 * "default" ServiceAccount in every Active namespace; the ClusterRole aggregation
 * controller fills an aggregated role from the roles its selectors pick.
 */
#include <stdio.h>
#include <time.h>

#include "api/api_env.h"
#include "codec/json.h"
#include "test.h"

static const kapi_type *type_of(api_env *e, const char *group, const char *plural)
{
    return kapi_registry_lookup(e->reg, kapi_str_c(group), KAPI_STR("v1"), kapi_str_c(plural));
}

/* The object of t at ns/name, or NULL when there is none. */
static json_t *get(api_env *e, const kapi_type *t, const char *ns, const char *name)
{
    json_t *obj = NULL;
    kapi_error *err = kapi_api_get(e->api, t, kapi_str_c(ns), kapi_str_c(name), &obj);
    kapi_error_free(err);
    return obj;
}

/* Waits up to 5 s for the object of t at ns/name to be there (want) or gone (!want). */
static bool wait_for(api_env *e, const kapi_type *t, const char *ns, const char *name, bool want)
{
    struct timespec ms10 = {0, 10 * 1000000};
    for (int i = 0; i < 500; i++) {
        json_t *obj = get(e, t, ns, name);
        json_decref(obj);
        if ((obj != NULL) == want)
            return true;
        nanosleep(&ms10, NULL);
    }
    return false;
}

static void create(api_env *e, const kapi_type *t, const char *ns, const char *json)
{
    json_t *obj = kapi_json_parse(json, strlen(json), NULL);
    CHECK(obj != NULL);
    kapi_error *err =
        kapi_api_create(e->api, &kapi_api_loopback_user, t, kapi_str_c(ns), obj, NULL);
    if (err)
        test_fail(__FILE__, __LINE__, "create: %s", err->message);
    kapi_error_free(err);
}

static bool delete (api_env *e, const kapi_type *t, const char *ns, const char *name)
{
    static const kapi_delete_opts plain = {.grace = -1};
    kapi_error *err = kapi_api_delete(e->api, &kapi_api_loopback_user, t, kapi_str_c(ns),
                                      kapi_str_c(name), &plain, NULL, NULL);
    bool ok = err == NULL;
    kapi_error_free(err);
    return ok;
}

/* A CronJob named name, with more members of its metadata. */
#define CRONJOB(name, meta)                                                                        \
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":\"" name "\"" meta   \
    "},\"spec\":{\"schedule\":\"* * * * *\",\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"   \
    "\"restartPolicy\":\"OnFailure\",\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}" \
    "}}}}"

TEST(controllers_namespace_deletion_empties_and_removes)
{
    api_env e = {0};
    api_env_start(&e);
    const kapi_type *nst = type_of(&e, "", "namespaces"), *cj = type_of(&e, "batch", "cronjobs");
    create(&e, nst, "",
           "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"doomed\"}}");
    create(&e, cj, "doomed", CRONJOB("a", ""));
    create(&e, cj, "doomed", CRONJOB("held", ",\"finalizers\":[\"example.com/hold\"]"));
    kapi_controller *c = kapi_namespace_controller_start(e.api);
    CHECK(delete (&e, nst, "", "doomed"));
    CHECK(wait_for(&e, cj, "doomed", "a", false));
    /* the held object waits for its finalizer, and keeps the namespace, Terminating */
    json_t *held = NULL;
    for (int i = 0; i < 500 && !kapi_json_path(held, "metadata.deletionTimestamp"); i++) {
        struct timespec ms10 = {0, 10 * 1000000};
        json_decref(held);
        nanosleep(&ms10, NULL);
        held = get(&e, cj, "doomed", "held");
    }
    CHECK(held && kapi_json_path(held, "metadata.deletionTimestamp"));
    json_t *ns = get(&e, nst, "", "doomed");
    CHECK(ns != NULL);
    CHECK_STR_EQ(kapi_json_path_str(ns, "status.phase"), "Terminating");
    json_decref(ns);
    json_object_del(json_object_get(held, "metadata"), "finalizers");
    CHECK(kapi_api_update(e.api, &kapi_api_loopback_user, cj, "", held, NULL) == NULL);
    CHECK(wait_for(&e, nst, "", "doomed", false));
    kapi_controller_stop(c);
    api_env_stop(&e);
}

/* A namespace of more objects than one page of names (500) is emptied past a page whose
 * first object a finalizer holds. */
TEST(controllers_namespace_deletion_pages_past_held_objects)
{
    api_env e = {0};
    api_env_start(&e);
    const kapi_type *nst = type_of(&e, "", "namespaces"), *ev = type_of(&e, "", "events");
    create(&e, nst, "",
           "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"big\"}}");
    create(&e, ev, "big",
           "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"a-held\","
           "\"finalizers\":[\"example.com/hold\"]},\"involvedObject\":{\"namespace\":\"big\"}}");
    for (int i = 0; i < 1001; i++) {
        char body[256];
        snprintf(body, sizeof(body),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"e-%04d\"},"
                 "\"involvedObject\":{\"namespace\":\"big\"}}",
                 i);
        create(&e, ev, "big", body);
    }
    kapi_controller *c = kapi_namespace_controller_start(e.api);
    CHECK(delete (&e, nst, "", "big"));
    CHECK(wait_for(&e, ev, "big", "e-1000", false));
    CHECK(wait_for(&e, ev, "big", "e-0000", false));
    json_t *held = get(&e, ev, "big", "a-held");
    CHECK(held && kapi_json_path(held, "metadata.deletionTimestamp"));
    json_decref(held);
    kapi_controller_stop(c);
    api_env_stop(&e);
}

/* A status write to a namespace being deleted does not remove it while spec.finalizers
 * still holds it (kube's namespace ShouldDeleteDuringUpdate): only the finalize write
 * does. */
TEST(controllers_namespace_status_write_keeps_terminating_namespace)
{
    api_env e = {0};
    api_env_start(&e);
    const kapi_type *nst = type_of(&e, "", "namespaces");
    create(&e, nst, "",
           "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"t1\"}}");
    CHECK(delete (&e, nst, "", "t1"));
    json_t *ns = get(&e, nst, "", "t1");
    CHECK(ns != NULL);
    CHECK(kapi_api_update(e.api, &kapi_api_loopback_user, nst, "status", ns, NULL) == NULL);
    ns = get(&e, nst, "", "t1");
    CHECK(ns != NULL);
    json_object_set_new(json_object_get(ns, "spec"), "finalizers", json_array());
    CHECK(kapi_api_update(e.api, &kapi_api_loopback_user, nst, "finalize", ns, NULL) == NULL);
    CHECK(get(&e, nst, "", "t1") == NULL);
    api_env_stop(&e);
}

static const char crd_json[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\","
    "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\","
    "\"kind\":\"Widget\",\"listKind\":\"WidgetList\"},\"versions\":[{\"name\":\"v1\","
    "\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
    "\"x-kubernetes-preserve-unknown-fields\":true}}}]}}";

TEST(controllers_crd_established_then_cleaned_up)
{
    api_env e = {0};
    api_env_start(&e);
    const kapi_type *crdt = type_of(&e, "apiextensions.k8s.io", "customresourcedefinitions");
    CHECK(kapi_namespace_ensure(e.api, "default") == NULL);
    create(&e, crdt, "", crd_json);
    kapi_controller *c = kapi_crd_controller_start(e.api);
    json_t *crd = NULL;
    for (int i = 0; i < 500 && !(crd && kapi_crd_condition(crd, "Established")); i++) {
        struct timespec ms10 = {0, 10 * 1000000};
        json_decref(crd);
        nanosleep(&ms10, NULL);
        crd = get(&e, crdt, "", "widgets.example.com");
    }
    CHECK(crd && kapi_crd_condition(crd, "NamesAccepted") &&
          kapi_crd_condition(crd, "Established"));
    CHECK_STR_EQ(kapi_json_path_str(crd, "status.acceptedNames.kind"), "Widget");
    const kapi_type *wt = NULL;
    CHECK(kapi_controllers__storage_type(e.api, crd, &wt) == NULL);
    create(&e, wt, "default",
           "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\"}}");
    CHECK(wait_for(&e, wt, "default", "w", true));
    CHECK(delete (&e, crdt, "", "widgets.example.com"));
    CHECK(wait_for(&e, wt, "default", "w", false));
    CHECK(wait_for(&e, crdt, "", "widgets.example.com", false));
    kapi_type_unref(wt);
    json_decref(crd);
    kapi_controller_stop(c);
    api_env_stop(&e);
}

/* The CRD at name once cond(crd) holds (waited for up to 5 s), or the last one read. */
static json_t *crd_when(api_env *e, const kapi_type *crdt, const char *name,
                        bool (*cond)(const json_t *crd))
{
    json_t *crd = NULL;
    for (int i = 0; i < 500 && !(crd && cond(crd)); i++) {
        struct timespec ms10 = {0, 10 * 1000000};
        json_decref(crd);
        nanosleep(&ms10, NULL);
        crd = get(e, crdt, "", name);
    }
    return crd;
}

static bool is_established(const json_t *crd)
{
    return kapi_crd_condition(crd, "Established");
}

static bool names_refused(const json_t *crd)
{
    return strcmp(kapi_crd_condition_status(crd, "NamesAccepted"), "False") == 0;
}

/* A CRD whose names another CRD of its group holds is not accepted, not Established and
 * not served, with kube's reason for the last conflict; it is once the other goes. */
TEST(controllers_crd_name_conflicts)
{
    static const char gadgets[] =
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"gadgets.example.com\"},\"spec\":{\"group\":\"example.com\","
        "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"gadgets\",\"kind\":\"Widget\","
        "\"shortNames\":[\"widget\",\"g\"]},\"versions\":[{\"name\":\"v1\",\"served\":true,"
        "\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}}}]}}";
    api_env e = {0};
    api_env_start(&e);
    const kapi_type *crdt = type_of(&e, "apiextensions.k8s.io", "customresourcedefinitions");
    kapi_controller *c = kapi_crd_controller_start(e.api);
    create(&e, crdt, "", crd_json);
    json_decref(crd_when(&e, crdt, "widgets.example.com", is_established));
    create(&e, crdt, "", gadgets);
    json_t *crd = crd_when(&e, crdt, "gadgets.example.com", names_refused);
    CHECK(crd && names_refused(crd));
    const json_t *cond = json_array_get(kapi_json_path(crd, "status.conditions"), 0);
    CHECK_STR_EQ(kapi_json_path_str(cond, "type"), "NamesAccepted");
    CHECK_STR_EQ(kapi_json_path_str(cond, "reason"), "ListKindConflict");
    CHECK_STR_EQ(kapi_json_path_str(cond, "message"), "\"WidgetList\" is already in use");
    char *accepted =
        json_dumps(kapi_json_path(crd, "status.acceptedNames"), JSON_SORT_KEYS | JSON_COMPACT);
    CHECK_STR_EQ(accepted,
                 "{\"kind\":\"\",\"plural\":\"gadgets\"}"); /* singular "widget" is taken */
    free(accepted);
    CHECK_STR_EQ(kapi_crd_condition_status(crd, "Established"), "False");
    const json_t *est = json_array_get(kapi_json_path(crd, "status.conditions"), 1);
    CHECK_STR_EQ(kapi_json_path_str(est, "reason"), "NotAccepted");
    const kapi_type *gt =
        kapi_registry_lookup(e.reg, KAPI_STR("example.com"), KAPI_STR("v1"), KAPI_STR("gadgets"));
    CHECK(gt == NULL);
    json_decref(crd);
    /* The holder goes: the names are free, and taken. */
    CHECK(delete (&e, crdt, "", "widgets.example.com"));
    CHECK(wait_for(&e, crdt, "", "widgets.example.com", false));
    crd = crd_when(&e, crdt, "gadgets.example.com", is_established);
    CHECK(crd && kapi_crd_condition(crd, "NamesAccepted") && is_established(crd));
    CHECK_STR_EQ(kapi_json_path_str(crd, "status.acceptedNames.kind"), "Widget");
    CHECK_INT_EQ(json_array_size(kapi_json_path(crd, "status.acceptedNames.shortNames")), 2);
    json_decref(crd);
    kapi_controller_stop(c);
    api_env_stop(&e);
}

/* Stores the CRD json as it is, as a data dir from before the structural rules holds it
 * (the api would refuse it now). */
static void store_raw(api_env *e, const kapi_type *crdt, const char *name, const char *json)
{
    kapi_arena a;
    kapi_arena_init(&a);
    const char *gap = strstr(json, "\"resourceVersion\":\"\"");
    CHECK(gap != NULL);
    kapi_store_write w = {
        .op = KAPI_STORE_CREATE,
        .key = kapi_type_key(&a, crdt, KAPI_STR(""), kapi_str_c(name)),
        .value = kapi_str_c(json),
        .rv_off = (size_t)(gap - json) + strlen("\"resourceVersion\":\""),
    };
    CHECK_INT_EQ(kapi_store_commit(e->store, &w), KAPI_STORE_OK);
    kapi_obj_unref(w.result);
    kapi_arena_dispose(&a);
}

/* The condition and Established come in separate writes: both are waited for. */
static bool non_structural(const json_t *crd)
{
    return kapi_crd_condition(crd, "NonStructuralSchema") && is_established(crd);
}

static bool structural(const json_t *crd)
{
    return !*kapi_crd_condition_status(crd, "NonStructuralSchema") && is_established(crd);
}

/* A CRD stored with a non-structural schema gets kube's NonStructuralSchema condition,
 * and loses it once an update mends the schema (which the update may, as the stored
 * schema already broke the rule). */
TEST(controllers_crd_non_structural_condition)
{
    static const char old[] =
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"olds.example.com\",\"uid\":"
        "\"3f1b8f0e-0000-4000-8000-000000000001\",\"creationTimestamp\":\"2024-01-02T03:04:05Z\","
        "\"resourceVersion\":\"\"},\"spec\":{\"group\":\"example.com\",\"scope\":"
        "\"Namespaced\",\"names\":{\"plural\":\"olds\",\"singular\":\"old\",\"kind\":\"Old\","
        "\"listKind\":\"OldList\"},\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":"
        "true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"b\":{},"
        "\"a\":{\"description\":\"no type\"}}}}}]},\"status\":{\"acceptedNames\":{\"plural\":"
        "\"\",\"kind\":\"\"},\"storedVersions\":[\"v1\"]}}";
    api_env e = {0};
    api_env_start(&e);
    const kapi_type *crdt = type_of(&e, "apiextensions.k8s.io", "customresourcedefinitions");
    store_raw(&e, crdt, "olds.example.com", old);
    kapi_controller *c = kapi_crd_controller_start(e.api);
    json_t *crd = crd_when(&e, crdt, "olds.example.com", non_structural);
    CHECK(crd && non_structural(crd));
    size_t i;
    json_t *cond, *found = NULL;
    json_array_foreach(kapi_json_path(crd, "status.conditions"), i, cond)
    {
        if (strcmp(kapi_json_path_str(cond, "type"), "NonStructuralSchema") == 0)
            found = cond;
    }
    CHECK_STR_EQ(kapi_json_path_str(found, "reason"), "Violations");
    CHECK_STR_EQ(kapi_json_path_str(found, "message"),
                 "[spec.versions[0].schema.openAPIV3Schema.properties[a].type: Required value: "
                 "must not be empty for specified object fields, "
                 "spec.versions[0].schema.openAPIV3Schema.properties[b].type: Required value: "
                 "must not be empty for specified object fields]");
    /* Mended: the condition goes. */
    json_t *schema = kapi_json_path(crd, "spec.versions");
    schema = kapi_json_path(json_array_get(schema, 0), "schema.openAPIV3Schema.properties");
    json_object_set_new(json_object_get(schema, "a"), "type", json_string("string"));
    json_object_set_new(json_object_get(schema, "b"), "type", json_string("integer"));
    kapi_error *err = kapi_api_update(e.api, &kapi_api_loopback_user, crdt, "", crd, NULL);
    if (err)
        test_fail(__FILE__, __LINE__, "update: %s", err->message);
    crd = crd_when(&e, crdt, "olds.example.com", structural);
    CHECK(crd && structural(crd));
    json_decref(crd);
    kapi_controller_stop(c);
    api_env_stop(&e);
}

/* The serviceaccounts controller: every Active namespace gets its "default" account, made
 * by kube-controller-manager, and gets it back when it is deleted; a namespace being
 * deleted gets none. */
TEST(controllers_serviceaccount_default_in_every_namespace)
{
    api_env e = {0};
    api_env_start(&e);
    const kapi_type *nst = type_of(&e, "", "namespaces"), *sat = type_of(&e, "", "serviceaccounts");
    create(&e, nst, "",
           "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"before\"}}");
    kapi_controller *c = kapi_serviceaccount_controller_start(e.api);
    CHECK(wait_for(&e, sat, "before", "default", true));
    create(&e, nst, "",
           "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"after\"}}");
    CHECK(wait_for(&e, sat, "after", "default", true));
    /* only a name: no field is anyone's, as kube's own has no managedFields */
    json_t *sa = get(&e, sat, "after", "default");
    CHECK(!kapi_json_path(sa, "metadata.managedFields") && !kapi_json_path(sa, "secrets"));
    json_decref(sa);
    CHECK(delete (&e, sat, "after", "default"));
    CHECK(wait_for(&e, sat, "after", "default", true));
    /* held Terminating by a finalizer, its account deleted: none is made again */
    create(&e, nst, "",
           "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"going\","
           "\"finalizers\":[\"example.com/hold\"]}}");
    CHECK(wait_for(&e, sat, "going", "default", true));
    CHECK(delete (&e, nst, "", "going"));
    CHECK(delete (&e, sat, "going", "default"));
    struct timespec ms300 = {0, 300 * 1000000};
    nanosleep(&ms300, NULL);
    json_t *none = get(&e, sat, "going", "default");
    CHECK(none == NULL);
    kapi_controller_stop(c);
    api_env_stop(&e);
}

/* Waits up to 5 s for the ClusterRole name's rules to be want (compact JSON). */
static bool wait_rules(api_env *e, const kapi_type *cr, const char *name, const char *want)
{
    struct timespec ms10 = {0, 10 * 1000000};
    for (int i = 0; i < 500; i++) {
        json_t *role = get(e, cr, "", name);
        char *rules = json_dumps(json_object_get(role, "rules"), JSON_COMPACT);
        bool same = rules && strcmp(rules, want) == 0;
        free(rules);
        json_decref(role);
        if (same)
            return true;
        nanosleep(&ms10, NULL);
    }
    return false;
}

/* The ClusterRole aggregation controller: a role with an aggregationRule gets, in name
 * order and each once, the rules of the other ClusterRoles its selectors pick
 * (matchLabels and matchExpressions), and follows them when they change. */
TEST(controllers_clusterrole_aggregation)
{
    api_env e = {0};
    api_env_start(&e);
    const kapi_type *cr = type_of(&e, "rbac.authorization.k8s.io", "clusterroles");
    create(&e, cr, "",
           "{\"metadata\":{\"name\":\"b-view\",\"labels\":{\"agg\":\"yes\"}},\"rules\":[{"
           "\"verbs\":[\"get\"],\"apiGroups\":[\"batch\"],\"resources\":[\"cronjobs\"]}]}");
    create(&e, cr, "",
           "{\"metadata\":{\"name\":\"a-view\",\"labels\":{\"tier\":\"gold\"}},\"rules\":[{"
           "\"verbs\":[\"list\"],\"apiGroups\":[\"\"],\"resources\":[\"namespaces\"]},{"
           "\"verbs\":[\"get\"],\"apiGroups\":[\"batch\"],\"resources\":[\"cronjobs\"]}]}");
    create(&e, cr, "",
           "{\"metadata\":{\"name\":\"c-other\",\"labels\":{\"tier\":\"tin\"}},\"rules\":[{"
           "\"verbs\":[\"delete\"],\"apiGroups\":[\"\"],\"resources\":[\"namespaces\"]}]}");
    create(&e, cr, "",
           "{\"metadata\":{\"name\":\"agg\",\"labels\":{\"agg\":\"yes\"}},\"aggregationRule\":{"
           "\"clusterRoleSelectors\":[{\"matchLabels\":{\"agg\":\"yes\"}},{\"matchExpressions\":"
           "[{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"gold\",\"silver\"]}]}]}}");
    kapi_controller *c = kapi_rbac_aggregation_controller_start(e.api);
    const char *want =
        "[{\"verbs\":[\"list\"],\"apiGroups\":[\"\"],\"resources\":[\"namespaces\"]},"
        "{\"verbs\":[\"get\"],\"apiGroups\":[\"batch\"],\"resources\":[\"cronjobs\"]}]";
    /* a-view's two rules, then b-view's (the same as one of them): nothing of c-other's */
    CHECK(wait_rules(&e, cr, "agg", want));
    CHECK(delete (&e, cr, "", "a-view"));
    want = "[{\"verbs\":[\"get\"],\"apiGroups\":[\"batch\"],\"resources\":[\"cronjobs\"]}]";
    CHECK(wait_rules(&e, cr, "agg", want)); /* it follows the roles it picks */
    kapi_controller_stop(c);
    api_env_stop(&e);
}

static bool idle_pass(kapi_controller *c)
{
    (void)c;
    return false;
}

/* The changes a controller's own watches queue come out in order, PROGRESS left out;
 * past KAPI_CONTROLLER_MAX_QUEUED the older ones are dropped and the take says so. */
TEST(controllers_change_queue_bounded)
{
    api_env e = {0};
    api_env_start(&e);
    const kapi_type *none[] = {NULL}, *cm = type_of(&e, "", "configmaps"),
                    *cj = type_of(&e, "batch", "cronjobs");
    kapi_controller *c =
        kapi_controllers__start_with(e.api, "queue-test", none, 1000, 60000, idle_pass, NULL, NULL);
    kapi_controllers__queue(c, cm, &(kapi_store_event){.type = KAPI_STORE_EVENT_PUT});
    kapi_controllers__queue(c, cj, &(kapi_store_event){.type = KAPI_STORE_EVENT_PROGRESS});
    kapi_controllers__queue(c, cj, &(kapi_store_event){.type = KAPI_STORE_EVENT_DELETE});
    size_t n;
    bool lost;
    kapi_controller_change *ch = kapi_controllers__take(c, &n, &lost);
    CHECK(n == 2 && !lost);
    CHECK(ch[0].type == cm && ch[0].what == KAPI_STORE_EVENT_PUT);
    CHECK(ch[1].type == cj && ch[1].what == KAPI_STORE_EVENT_DELETE);
    kapi_controllers__changes_free(ch, n);
    for (size_t i = 0; i < KAPI_CONTROLLER_MAX_QUEUED + 3; i++)
        kapi_controllers__queue(c, i < KAPI_CONTROLLER_MAX_QUEUED ? cm : cj,
                                &(kapi_store_event){.type = KAPI_STORE_EVENT_RESET});
    ch = kapi_controllers__take(c, &n, &lost);
    CHECK(n == 3 && lost);
    CHECK(ch[0].type == cj && ch[2].type == cj);
    kapi_controllers__changes_free(ch, n);
    ch = kapi_controllers__take(c, &n, &lost);
    CHECK(ch == NULL && n == 0 && !lost);
    kapi_controllers__queue(c, cm, &(kapi_store_event){.type = KAPI_STORE_EVENT_PUT});
    kapi_controller_stop(c);
    api_env_stop(&e);
}
