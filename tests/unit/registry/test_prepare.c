/* Unit tests for what a write may change (registry/prepare.c): the status subresource
 * rules every type with /status follows, and the built-in strategies' own. */
#include <jansson.h>

#include "codec/json.h"
#include "registry/registry.h"
#include "test.h"

#define CJ_OLD                                                                                     \
    "{\"kind\":\"CronJob\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":\"c\","              \
    "\"labels\":{\"a\":\"1\"},\"generation\":2},\"spec\":{\"schedule\":\"1 * * * *\"},"            \
    "\"status\":{\"lastScheduleTime\":\"2024-01-02T03:04:05Z\"}}"

/* The written object after prep, compared as JSON with want. */
static void check_json(const json_t *got, const char *want)
{
    json_t *w = json_loads(want, 0, NULL);
    char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
    char *ws = json_dumps(w, JSON_SORT_KEYS | JSON_COMPACT);
    CHECK(w != NULL);
    CHECK_STR_EQ(g, ws);
    free(g);
    free(ws);
    json_decref(w);
}

static const kapi_type *type(kapi_registry *reg, const char *g, const char *v, const char *p)
{
    const kapi_type *t = kapi_registry_lookup(reg, kapi_str_c(g), kapi_str_c(v), kapi_str_c(p));
    CHECK(t != NULL);
    return t;
}

TEST(prepare_status_on_main_resource)
{
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    const kapi_type *cj = type(reg, "batch", "v1", "cronjobs");
    json_t *old = json_loads(CJ_OLD, 0, NULL);
    json_t *obj =
        json_loads("{\"metadata\":{\"name\":\"c\"},\"spec\":{},\"status\":{\"x\":1}}", 0, NULL);
    kapi_type_prepare_create(cj, obj);
    check_json(obj, "{\"metadata\":{\"name\":\"c\"},\"spec\":{},\"status\":{}}");
    json_object_set_new(obj, "status", json_pack("{s:i}", "x", 1));
    kapi_type_prepare_update(cj, obj, old);
    check_json(obj, "{\"metadata\":{\"name\":\"c\"},\"spec\":{},\"status\":"
                    "{\"lastScheduleTime\":\"2024-01-02T03:04:05Z\"}}");
    json_decref(obj);
    json_decref(old);
    kapi_registry_free(reg);
}

TEST(prepare_status_write_keeps_spec)
{
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    const kapi_type *cj = type(reg, "batch", "v1", "cronjobs");
    json_t *old = json_loads(CJ_OLD, 0, NULL);
    /* a CronJob's status write takes the body's metadata and status, and old's spec */
    json_t *obj = json_loads("{\"kind\":\"CronJob\",\"apiVersion\":\"batch/v1\",\"metadata\":"
                             "{\"name\":\"c\",\"labels\":{\"b\":\"2\"}},\"spec\":{\"schedule\":"
                             "\"bad\"},\"extra\":1}",
                             0, NULL);
    kapi_type_prepare_subresource(cj, "status", obj, old);
    check_json(obj, "{\"kind\":\"CronJob\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":"
                    "\"c\",\"labels\":{\"b\":\"2\"}},\"spec\":{\"schedule\":\"1 * * * *\"}}");
    json_decref(obj);
    json_decref(old);
    kapi_registry_free(reg);
}

TEST(prepare_crd_status_write_keeps_labels)
{
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    const kapi_type *crd = type(reg, "apiextensions.k8s.io", "v1", "customresourcedefinitions");
    json_t *old = json_loads("{\"metadata\":{\"name\":\"a.b\",\"labels\":{\"a\":\"1\"},"
                             "\"finalizers\":[\"x/y\"]},\"spec\":{\"group\":\"b\"},\"status\":{}}",
                             0, NULL);
    json_t *obj = json_loads("{\"metadata\":{\"name\":\"a.b\",\"annotations\":{\"n\":\"v\"}},"
                             "\"spec\":{\"group\":\"c\"},\"status\":{\"storedVersions\":[]}}",
                             0, NULL);
    kapi_type_prepare_subresource(crd, "status", obj, old);
    check_json(obj, "{\"metadata\":{\"name\":\"a.b\",\"labels\":{\"a\":\"1\"}},\"spec\":"
                    "{\"group\":\"b\"},\"status\":{\"storedVersions\":[]}}");
    json_decref(obj);
    json_decref(old);
    kapi_registry_free(reg);
}

TEST(prepare_namespace_finalize_keeps_status)
{
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    const kapi_type *ns = type(reg, "", "v1", "namespaces");
    json_t *old = json_loads("{\"metadata\":{\"name\":\"n\",\"labels\":{\"team\":\"b\"}},"
                             "\"spec\":{\"finalizers\":[\"kubernetes\"]},\"status\":{\"phase\":"
                             "\"Active\"}}",
                             0, NULL);
    json_t *obj = json_loads("{\"metadata\":{\"name\":\"n\"},\"spec\":{\"finalizers\":[]},"
                             "\"status\":{\"phase\":\"Terminating\"}}",
                             0, NULL);
    kapi_type_prepare_subresource(ns, "finalize", obj, old);
    check_json(obj, "{\"metadata\":{\"name\":\"n\",\"labels\":{\"kubernetes.io/metadata.name\":"
                    "\"n\"}},\"spec\":{\"finalizers\":[]},\"status\":{\"phase\":\"Active\"}}");
    json_decref(obj);
    json_decref(old);
    kapi_registry_free(reg);
}

/* A Job's create: the zero status, the tracking annotation, the generated selector and
 * template labels from its uid and name, and the template's labels as its own; an update
 * keeps the annotation. */
TEST(prepare_job)
{
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    const kapi_type *job = type(reg, "batch", "v1", "jobs");
    json_t *obj = json_loads("{\"metadata\":{\"name\":\"j\",\"uid\":\"u1\"},\"spec\":{"
                             "\"template\":{\"spec\":{}}},\"status\":{\"succeeded\":1}}",
                             0, NULL);
    kapi_type_prepare_create(job, obj);
    check_json(obj, "{\"metadata\":{\"name\":\"j\",\"uid\":\"u1\",\"annotations\":{"
                    "\"batch.kubernetes.io/job-tracking\":\"\"},\"labels\":{\"controller-uid\":"
                    "\"u1\",\"job-name\":\"j\"}},\"spec\":{\"selector\":{\"matchLabels\":{"
                    "\"controller-uid\":\"u1\"}},\"template\":{\"metadata\":{\"labels\":{"
                    "\"controller-uid\":\"u1\",\"job-name\":\"j\"}},\"spec\":{}}},\"status\":{}}");
    json_t *upd =
        json_loads("{\"metadata\":{\"name\":\"j\",\"labels\":{\"a\":\"b\"}},\"spec\":{}}", 0, NULL);
    kapi_type_prepare_update(job, upd, obj);
    check_json(upd, "{\"metadata\":{\"name\":\"j\",\"labels\":{\"a\":\"b\"},\"annotations\":{"
                    "\"batch.kubernetes.io/job-tracking\":\"\"}},\"spec\":{},\"status\":{}}");
    json_decref(upd);
    json_decref(obj);
    /* a manual selector is left as it is, and so are labels the Job has */
    obj = json_loads("{\"metadata\":{\"name\":\"j\",\"uid\":\"u1\",\"labels\":{\"x\":\"1\"}},"
                     "\"spec\":{\"manualSelector\":true,\"selector\":{\"matchLabels\":{\"a\":"
                     "\"b\"}},\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}}}}}",
                     0, NULL);
    kapi_type_prepare_create(job, obj);
    check_json(obj, "{\"metadata\":{\"name\":\"j\",\"uid\":\"u1\",\"labels\":{\"x\":\"1\"},"
                    "\"annotations\":{\"batch.kubernetes.io/job-tracking\":\"\"}},\"spec\":{"
                    "\"manualSelector\":true,\"selector\":{\"matchLabels\":{\"a\":\"b\"}},"
                    "\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}}}},\"status\":{}}");
    json_decref(obj);
    kapi_registry_free(reg);
}

/* A Node's create keeps its status but not configSource or status.config, and gets the
 * not-ready taint unless it has it; an update keeps the stored status and drops a new
 * configSource; a status write drops a new status.config. */
TEST(prepare_node)
{
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    const kapi_type *nodes = type(reg, "", "v1", "nodes");
    json_t *obj = json_loads(
        "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"configSource\":{},\"taints\":[{\"key\":"
        "\"a\",\"effect\":\"NoExecute\"}]},\"status\":{\"phase\":\"Running\",\"config\":{}}}",
        0, NULL);
    kapi_type_prepare_create(nodes, obj);
    check_json(obj, "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":[{\"key\":\"a\","
                    "\"effect\":\"NoExecute\"},{\"key\":\"node.kubernetes.io/not-ready\","
                    "\"effect\":\"NoSchedule\"}]},\"status\":{\"phase\":\"Running\"}}");
    json_t *again = json_deep_copy(obj);
    kapi_type_prepare_create(nodes, again);
    check_json(again, "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":[{\"key\":\"a\","
                      "\"effect\":\"NoExecute\"},{\"key\":\"node.kubernetes.io/not-ready\","
                      "\"effect\":\"NoSchedule\"}]},\"status\":{\"phase\":\"Running\"}}");
    json_t *upd = json_loads("{\"metadata\":{\"name\":\"n\"},\"spec\":{\"configSource\":{}},"
                             "\"status\":{\"phase\":\"Pending\"}}",
                             0, NULL);
    kapi_type_prepare_update(nodes, upd, obj);
    check_json(upd, "{\"metadata\":{\"name\":\"n\"},\"spec\":{},\"status\":{\"phase\":"
                    "\"Running\"}}");
    json_t *st = json_loads("{\"metadata\":{\"name\":\"n\"},\"status\":{\"config\":{}}}", 0, NULL);
    kapi_type_prepare_subresource(nodes, "status", st, obj);
    CHECK(json_object_get(json_object_get(st, "status"), "config") == NULL);
    json_decref(st);
    json_decref(upd);
    json_decref(again);
    json_decref(obj);
    kapi_registry_free(reg);
}

/* The events.k8s.io/v1 view of a stored Event, encoded straight from the stored members,
 * is byte for byte the converted object encoded. */
TEST(prepare_events_encode_from_storage)
{
    static const char *const stored[] = {
        "{\"apiVersion\":\"v1\",\"count\":2,\"eventTime\":null,\"firstTimestamp\":"
        "\"2024-01-02T03:04:05Z\",\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\"},"
        "\"kind\":\"Event\",\"lastTimestamp\":null,\"message\":\"m \\u003c\\\"\","
        "\"metadata\":{\"name\":\"e\",\"namespace\":\"d\"},\"reason\":\"R\","
        "\"reportingComponent\":\"c\",\"reportingInstance\":\"\",\"source\":"
        "{\"component\":\"c\"},\"type\":\"Normal\"}",
        "{\"metadata\":{},\"count\":0,\"action\":\"\",\"series\":{\"count\":3},"
        "\"related\":null,\"extra\":1}",
        "{\"reason\":\"x\",\"eventTime\":\"2024-01-02T03:04:05.000000Z\"}",
        "{}",
    };
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    const kapi_type *t = type(reg, "events.k8s.io", "v1", "events");
    for (size_t i = 0; i < KAPI_ARRAY_LEN(stored); i++) {
        kapi_buf want, got;
        kapi_buf_init(&want);
        kapi_buf_init(&got);
        json_t *v = json_loads(stored[i], 0, NULL);
        CHECK(v != NULL);
        CHECK(kapi_type_from_storage(t, &v, 1) == NULL);
        kapi_json_encode(&want, v);
        json_decref(v);
        CHECK(kapi_type_encode_from_storage(t, &got, json_loads(stored[i], 0, NULL)) == NULL);
        CHECK_STR_EQ(got.ptr, want.ptr);
        kapi_buf_dispose(&want);
        kapi_buf_dispose(&got);
    }
    kapi_registry_free(reg);
}
