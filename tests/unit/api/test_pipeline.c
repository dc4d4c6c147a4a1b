/*
 * Unit tests for the API pipeline over a real http server (plain HTTP on loopback), a
 * real store in the test's directory and the built-in registry: discovery documents,
 * the verbs, and the Status bodies of errors.
 */
#include <time.h>

#include "api_env.h"
#include "test.h"

static void env_start(api_env *e)
{
    api_env_start(e);
    kapi_api_set_server_address(e->api, "127.0.0.1:6443");
    CHECK(kapi_namespace_ensure(e->api, "default") == NULL);
}

/* One request with extra header lines (each ending in \r\n) on a new connection; returns
 * the status and the parsed body in *out (NULL if the body is not JSON). */
static int request_with(api_env *e, const char *method, const char *path, const char *headers,
                        const char *body, json_t **out, kapi_buf *raw)
{
    http_client c;
    http_resp resp;
    kapi_buf req;
    kapi_buf_init(&req);
    kapi_buf_printf(&req,
                    "%s %s HTTP/1.1\r\nHost: x\r\n%s%sContent-Type: application/json\r\n"
                    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                    method, path, e->auth_header, headers, body ? strlen(body) : 0,
                    body ? body : "");
    client_connect(&c, e->http.port);
    client_send(&c, req.ptr, req.len);
    CHECK(client_read_response(&c, &resp));
    if (out)
        *out = json_loads(resp.body.ptr, 0, NULL);
    if (raw)
        kapi_buf_put(raw, resp.body.ptr, resp.body.len);
    int status = resp.status;
    resp_dispose(&resp);
    client_close(&c);
    kapi_buf_dispose(&req);
    return status;
}

static int request(api_env *e, const char *method, const char *path, const char *body, json_t **out,
                   kapi_buf *raw)
{
    return request_with(e, method, path, "", body, out, raw);
}

/* The entry of an APIResourceList's resources named name. */
static json_t *resource_named(json_t *list, const char *name)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(list, "resources"), i, r)
    {
        if (strcmp(json_string_value(json_object_get(r, "name")), name) == 0)
            return r;
    }
    return NULL;
}

TEST(api_discovery_documents)
{
    api_env e = {0};
    json_t *doc;
    env_start(&e);
    CHECK_INT_EQ(request(&e, "GET", "/api", NULL, &doc, NULL), 200);
    CHECK_STR_EQ(kapi_json_path_str(doc, "kind"), "APIVersions");
    CHECK_STR_EQ(json_string_value(json_array_get(json_object_get(doc, "versions"), 0)), "v1");
    json_decref(doc);

    CHECK_INT_EQ(request(&e, "GET", "/apis/batch/v1", NULL, &doc, NULL), 200);
    json_t *cj = resource_named(doc, "cronjobs");
    CHECK(cj != NULL);
    CHECK_STR_EQ(kapi_json_path_str(cj, "kind"), "CronJob");
    CHECK_STR_EQ(kapi_json_path_str(cj, "storageVersionHash"), "sd5LIXh4Fjs=");
    CHECK(json_is_true(json_object_get(cj, "namespaced")));
    CHECK_STR_EQ(json_string_value(json_array_get(json_object_get(cj, "shortNames"), 0)), "cj");
    CHECK_INT_EQ(json_array_size(json_object_get(cj, "verbs")), 8);
    CHECK(resource_named(doc, "cronjobs/status") != NULL);
    json_decref(doc);

    CHECK_INT_EQ(request(&e, "GET", "/api/v1", NULL, &doc, NULL), 200);
    CHECK(json_object_get(doc, "apiVersion") == NULL); /* as kube-apiserver writes it */
    json_t *ns = resource_named(doc, "namespaces");
    CHECK(ns && json_array_size(json_object_get(ns, "verbs")) == 7);
    CHECK(resource_named(doc, "namespaces/finalize") != NULL);
    json_decref(doc);

    CHECK_INT_EQ(request(&e, "GET", "/apis/networking.k8s.io", NULL, &doc, NULL), 200);
    CHECK_STR_EQ(kapi_json_path_str(doc, "preferredVersion.version"), "v1alpha1");
    json_decref(doc);

    CHECK_INT_EQ(request(&e, "GET", "/apis/nope.example.com", NULL, NULL, NULL), 404);
    CHECK_INT_EQ(request(&e, "GET", "/apis/batch/v9", NULL, &doc, NULL), 404);
    CHECK_STR_EQ(kapi_json_path_str(doc, "reason"), "NotFound");
    json_decref(doc);
    CHECK_INT_EQ(request(&e, "POST", "/apis/batch/v1", "{}", &doc, NULL), 405);
    CHECK_STR_EQ(kapi_json_path_str(doc, "reason"), "MethodNotAllowed");
    json_decref(doc);
    api_env_stop(&e);
}

TEST(api_discovery_lists_stored_crd_groups)
{
    api_env e = {0};
    json_t *doc;
    env_start(&e);
    const char *crd =
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\","
        "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\"},"
        "\"versions\":[{\"name\":\"v1alpha1\",\"served\":true,\"storage\":false,"
        "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}}},{\"name\":\"v1\",\"served\":true,"
        "\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}}},{\"name\":\"v2\","
        "\"served\":false,\"storage\":false,\"schema\":{\"openAPIV3Schema\":{\"type\":"
        "\"object\"}}}]}}";
    CHECK_INT_EQ(request(&e, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd,
                         NULL, NULL),
                 201);
    /* Listed once Established, as the CRD controller makes it. */
    CHECK_INT_EQ(request(&e, "GET", "/apis/example.com", NULL, NULL, NULL), 404);
    kapi_controller *c = kapi_crd_controller_start(e.api);
    int code = 0;
    for (int i = 0; i < 500 && code != 200; i++) {
        struct timespec ms10 = {0, 10 * 1000000};
        nanosleep(&ms10, NULL);
        code = request(&e, "GET", "/apis/example.com", NULL, NULL, NULL);
    }
    kapi_controller_stop(c);
    CHECK_INT_EQ(request(&e, "GET", "/apis/example.com", NULL, &doc, NULL), 200);
    CHECK_STR_EQ(kapi_json_path_str(doc, "preferredVersion.version"), "v1");
    CHECK_INT_EQ(json_array_size(json_object_get(doc, "versions")), 2);
    json_decref(doc);
    CHECK_INT_EQ(request(&e, "GET", "/apis/example.com/v1", NULL, &doc, NULL), 200);
    json_t *w = resource_named(doc, "widgets");
    CHECK(w != NULL);
    CHECK_STR_EQ(kapi_json_path_str(w, "singularName"), "widget");
    json_decref(doc);
    api_env_stop(&e);
}

/* A valid CronJob job template. */
#define JOB_TEMPLATE                                                                               \
    "{\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":\"OnFailure\",\"containers\":[{"         \
    "\"name\":\"main\",\"image\":\"busybox\"}]}}}}"

TEST(api_crud_round_trip)
{
    api_env e = {0};
    json_t *doc;
    kapi_buf created, got;
    kapi_buf_init(&created);
    kapi_buf_init(&got);
    env_start(&e);
    const char *cj = "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":"
                     "\"c\",\"labels\":{\"b\":\"2\",\"a\":\"1\"}},\"spec\":{\"schedule\":\"* * * "
                     "* *\",\"jobTemplate\":" JOB_TEMPLATE "},\"status\":{\"active\":[]}}";
    const char *path = "/apis/batch/v1/namespaces/default/cronjobs";
    CHECK_INT_EQ(request(&e, "POST", path, cj, NULL, &created), 201);
    CHECK_INT_EQ(
        request(&e, "GET", "/apis/batch/v1/namespaces/default/cronjobs/c", NULL, NULL, &got), 200);
    CHECK_STR_EQ(created.ptr, got.ptr); /* served from the stored bytes */
    /* Kubernetes' member order: kind, apiVersion, metadata (name, namespace, uid,
     * resourceVersion, generation, creationTimestamp, labels sorted), spec, status. */
    CHECK(strstr(got.ptr, "{\"kind\":\"CronJob\",\"apiVersion\":\"batch/v1\",\"metadata\":{"
                          "\"name\":\"c\",\"namespace\":\"default\",\"uid\":") == got.ptr);
    CHECK(strstr(got.ptr, "\"generation\":1,\"creationTimestamp\":") != NULL);
    CHECK(strstr(got.ptr, "\"labels\":{\"a\":\"1\",\"b\":\"2\"}") != NULL);
    CHECK(strstr(got.ptr, "\"status\":{}") != NULL); /* a create cannot set status */
    doc = json_loads(got.ptr, 0, NULL);
    const char *rv = kapi_json_path_str(doc, "metadata.resourceVersion");
    char *put = kapi_xprintf("{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{"
                             "\"name\":\"c\",\"resourceVersion\":\"%s\"},\"spec\":{\"schedule\":"
                             "\"5 * * * *\",\"jobTemplate\":" JOB_TEMPLATE "}}",
                             rv);
    json_t *upd;
    CHECK_INT_EQ(
        request(&e, "PUT", "/apis/batch/v1/namespaces/default/cronjobs/c", put, &upd, NULL), 200);
    CHECK_INT_EQ(json_integer_value(kapi_json_path(upd, "metadata.generation")), 2);
    CHECK(strcmp(kapi_json_path_str(upd, "metadata.resourceVersion"), rv) != 0);
    CHECK_STR_EQ(kapi_json_path_str(upd, "metadata.uid"), kapi_json_path_str(doc, "metadata.uid"));
    json_decref(upd);
    /* The same body again carries a stale resourceVersion: 409. */
    CHECK_INT_EQ(
        request(&e, "PUT", "/apis/batch/v1/namespaces/default/cronjobs/c", put, &upd, NULL), 409);
    CHECK_STR_EQ(kapi_json_path_str(upd, "reason"), "Conflict");
    json_decref(upd);
    free(put);
    CHECK_INT_EQ(
        request(&e, "DELETE", "/apis/batch/v1/namespaces/default/cronjobs/c", NULL, &upd, NULL),
        200);
    CHECK_STR_EQ(kapi_json_path_str(upd, "status"), "Success");
    CHECK_STR_EQ(kapi_json_path_str(upd, "details.kind"), "cronjobs");
    json_decref(upd);
    CHECK_INT_EQ(
        request(&e, "GET", "/apis/batch/v1/namespaces/default/cronjobs/c", NULL, NULL, NULL), 404);
    json_decref(doc);
    kapi_buf_dispose(&created);
    kapi_buf_dispose(&got);
    api_env_stop(&e);
}

/* kube-apiserver stores built-in objects in protobuf, where an empty list of a field Go
 * writes without omitempty reads back as null: the answers of a create and of a dry run
 * say null (here a CronJob's podFailurePolicy.rules), while managedFields still shows who
 * set the field. */
TEST(api_answers_after_protobuf_storage)
{
    api_env e = {0};
    json_t *doc;
    env_start(&e);
    const char *cj = "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":"
                     "\"c\"},\"spec\":{\"schedule\":\"0 3 29 2 *\",\"jobTemplate\":{\"spec\":{"
                     "\"podFailurePolicy\":{\"rules\":[]},\"template\":{\"spec\":{"
                     "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\",\"image\":"
                     "\"busybox\"}]}}}}}}";
    const char *path = "/apis/batch/v1/namespaces/default/cronjobs";
    const char *rules = "spec.jobTemplate.spec.podFailurePolicy.rules";
    char *dry = kapi_xprintf("%s?dryRun=All", path);
    CHECK_INT_EQ(request(&e, "POST", dry, cj, &doc, NULL), 201);
    CHECK(json_is_null(kapi_json_path(doc, rules)));
    json_decref(doc);
    CHECK_INT_EQ(request(&e, "POST", path, cj, &doc, NULL), 201);
    CHECK(json_is_null(kapi_json_path(doc, rules)));
    json_t *owned = kapi_json_path(json_array_get(kapi_json_path(doc, "metadata.managedFields"), 0),
                                   "fieldsV1.f:spec.f:jobTemplate.f:spec.f:podFailurePolicy");
    CHECK(json_object_get(owned, "f:rules") != NULL);
    json_decref(doc);
    free(dry);
    api_env_stop(&e);
}

TEST(api_events_two_views)
{
    api_env e = {0};
    json_t *doc;
    env_start(&e);
    const char *ev = "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{"
                     "\"name\":\"e1\"},\"eventTime\":\"2024-01-02T03:04:05.000001Z\",\"note\":"
                     "\"hello\",\"regarding\":{\"kind\":\"CronJob\",\"name\":\"c\"},"
                     "\"reportingController\":\"ctl\",\"reportingInstance\":\"i\",\"action\":"
                     "\"A\",\"reason\":\"R\",\"type\":\"Normal\"}";
    CHECK_INT_EQ(
        request(&e, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", ev, &doc, NULL),
        201);
    CHECK_STR_EQ(kapi_json_path_str(doc, "note"), "hello");
    json_decref(doc);
    CHECK_INT_EQ(request(&e, "GET", "/api/v1/namespaces/default/events/e1", NULL, &doc, NULL), 200);
    CHECK_STR_EQ(kapi_json_path_str(doc, "apiVersion"), "v1");
    CHECK_STR_EQ(kapi_json_path_str(doc, "message"), "hello");
    CHECK_STR_EQ(kapi_json_path_str(doc, "involvedObject.kind"), "CronJob");
    CHECK_STR_EQ(kapi_json_path_str(doc, "reportingComponent"), "ctl");
    CHECK(json_is_null(json_object_get(doc, "firstTimestamp")));
    json_decref(doc);
    CHECK_INT_EQ(
        request(&e, "GET", "/apis/events.k8s.io/v1/namespaces/default/events", NULL, &doc, NULL),
        200);
    CHECK_STR_EQ(kapi_json_path_str(doc, "kind"), "EventList");
    json_t *item = json_array_get(json_object_get(doc, "items"), 0);
    CHECK_STR_EQ(kapi_json_path_str(item, "note"), "hello");
    CHECK(json_object_get(item, "kind") == NULL); /* list items carry no kind */
    json_decref(doc);
    api_env_stop(&e);
}

TEST(api_errors_are_status)
{
    api_env e = {0};
    json_t *doc;
    env_start(&e);
    const char *path = "/apis/batch/v1/namespaces/missing/cronjobs";
    CHECK_INT_EQ(request(&e, "POST", path, "{\"metadata\":{\"name\":\"x\"}}", &doc, NULL), 404);
    CHECK_STR_EQ(kapi_json_path_str(doc, "message"), "namespaces \"missing\" not found");
    CHECK_STR_EQ(kapi_json_path_str(doc, "details.kind"), "namespaces");
    json_decref(doc);
    CHECK_INT_EQ(request(&e, "POST", "/api/v1/namespaces", "{\"metadata\":{}}", &doc, NULL), 422);
    CHECK_STR_EQ(kapi_json_path_str(doc, "message"),
                 "Namespace \"\" is invalid: metadata.name: Required value: name or generateName "
                 "is required");
    json_decref(doc);
    CHECK_INT_EQ(request(&e, "POST", "/api/v1/namespaces", "[1]", &doc, NULL), 400);
    CHECK_STR_EQ(kapi_json_path_str(doc, "reason"), "BadRequest");
    json_decref(doc);
    CHECK_INT_EQ(request(&e, "PATCH", "/api/v1/namespaces/default/status", "{}", &doc, NULL), 415);
    CHECK_STR_EQ(kapi_json_path_str(doc, "reason"), "UnsupportedMediaType");
    json_decref(doc);
    CHECK_INT_EQ(request(&e, "GET", "/api/v1/namespaces/default", NULL, NULL, NULL), 200);
    CHECK_INT_EQ(request(&e, "DELETE", "/api/v1/namespaces/default", NULL, &doc, NULL), 403);
    json_decref(doc);
    CHECK_INT_EQ(request(&e, "POST", "/api/v1/namespaces?dryRun=All",
                         "{\"metadata\":{\"name\":\"dry\"}}", &doc, NULL),
                 201);
    CHECK(kapi_json_path(doc, "metadata.resourceVersion") == NULL);
    json_decref(doc);
    CHECK_INT_EQ(request(&e, "GET", "/api/v1/namespaces/dry", NULL, NULL, NULL), 404);
    api_env_stop(&e);
}

/* Unsupported write options are one 422 about the options kind, each a cause. */
TEST(api_write_options_invalid)
{
    api_env e = {0};
    json_t *doc;
    env_start(&e);
    CHECK_INT_EQ(request(&e, "POST", "/api/v1/namespaces?dryRun=Some&fieldValidation=Loud",
                         "{\"metadata\":{\"name\":\"o\"}}", &doc, NULL),
                 422);
    CHECK_STR_EQ(kapi_json_path_str(doc, "message"),
                 "CreateOptions.meta.k8s.io \"\" is invalid: [dryRun: Unsupported value: "
                 "[]string{\"Some\"}: supported values: \"All\", fieldValidation: Unsupported "
                 "value: \"Loud\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"]");
    CHECK_STR_EQ(kapi_json_path_str(doc, "reason"), "Invalid");
    CHECK_STR_EQ(kapi_json_path_str(doc, "details.group"), "meta.k8s.io");
    CHECK_STR_EQ(kapi_json_path_str(doc, "details.kind"), "CreateOptions");
    CHECK(kapi_json_path(doc, "details.name") == NULL);
    json_t *causes = kapi_json_path(doc, "details.causes");
    CHECK_INT_EQ(json_array_size(causes), 2);
    CHECK_STR_EQ(kapi_json_path_str(json_array_get(causes, 1), "field"), "fieldValidation");
    CHECK_STR_EQ(kapi_json_path_str(json_array_get(causes, 1), "reason"), "FieldValueNotSupported");
    json_decref(doc);
    api_env_stop(&e);
}

/* kubectl reads the v3 index, then a group-version's document, and validates on the
 * server when the PATCH operation lists fieldValidation. */
TEST(api_openapi_documents)
{
    api_env e = {0};
    json_t *idx, *doc;
    env_start(&e);
    CHECK_INT_EQ(request(&e, "GET", "/openapi/v3", NULL, &idx, NULL), 200);
    const char *url = kapi_json_path_str(
        json_object_get(json_object_get(idx, "paths"), "apis/batch/v1"), "serverRelativeURL");
    CHECK(url && strncmp(url, "/openapi/v3/apis/batch/v1?hash=", 31) == 0);
    CHECK(json_object_get(json_object_get(idx, "paths"), "api/v1") != NULL);
    char path[64];
    snprintf(path, sizeof(path), "%.*s", (int)(strchr(url, '?') - url), url);
    CHECK_INT_EQ(request(&e, "GET", path, NULL, &doc, NULL), 200);
    json_t *item = json_object_get(json_object_get(doc, "paths"),
                                   "/apis/batch/v1/namespaces/{namespace}/cronjobs/{name}");
    json_t *patch = json_object_get(item, "patch");
    CHECK(patch != NULL);
    /* An operation's x-kubernetes-group-version-kind is one object (a schema's is a list). */
    CHECK_STR_EQ(
        kapi_json_path_str(json_object_get(patch, "x-kubernetes-group-version-kind"), "kind"),
        "CronJob");
    bool field_validation = false;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(patch, "parameters"), i, p)
    {
        field_validation =
            field_validation || strcmp(kapi_json_path_str(p, "name"), "fieldValidation") == 0;
    }
    CHECK(field_validation);
    json_t *schemas = kapi_json_path(doc, "components.schemas");
    CHECK(json_object_get(schemas, "io.k8s.api.batch.v1.CronJob") != NULL);
    json_decref(doc);
    json_decref(idx);
    CHECK_INT_EQ(request(&e, "GET", "/openapi/v2", NULL, &doc, NULL), 200);
    CHECK_STR_EQ(kapi_json_path_str(doc, "swagger"), "2.0");
    json_decref(doc);
    api_env_stop(&e);
}

#define TABLE "Accept: application/json;as=Table;g=meta.k8s.io;v=v1\r\n"

TEST(api_answers_negotiated)
{
    api_env e = {0};
    json_t *doc;
    kapi_buf raw;
    kapi_buf_init(&raw);
    env_start(&e);
    const char *path = "/apis/batch/v1/namespaces/default/cronjobs";
    for (int i = 0; i < 2; i++) {
        char *cj = kapi_xprintf("{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":"
                                "{\"name\":\"c%d\"},\"spec\":{\"schedule\":\"* * * * *\","
                                "\"jobTemplate\":" JOB_TEMPLATE "}}",
                                i);
        CHECK_INT_EQ(request(&e, "POST", path, cj, NULL, NULL), 201);
        free(cj);
    }
    /* a Table page: the list's continue and remaining count carry over; the whole object */
    CHECK_INT_EQ(request_with(&e, "GET",
                              "/apis/batch/v1/namespaces/default/cronjobs?limit=1&"
                              "includeObject=Object",
                              TABLE, NULL, &doc, NULL),
                 200);
    CHECK_STR_EQ(kapi_json_path_str(doc, "kind"), "Table");
    CHECK(kapi_json_path_str(doc, "metadata.continue") != NULL);
    CHECK_INT_EQ(json_integer_value(kapi_json_path(doc, "metadata.remainingItemCount")), 1);
    json_t *row = json_array_get(json_object_get(doc, "rows"), 0);
    CHECK_STR_EQ(json_string_value(json_array_get(json_object_get(row, "cells"), 0)), "c0");
    CHECK_STR_EQ(kapi_json_path_str(row, "object.kind"), "CronJob");
    CHECK_STR_EQ(kapi_json_path_str(row, "object.spec.schedule"), "* * * * *");
    json_decref(doc);
    CHECK_INT_EQ(request_with(&e, "GET",
                              "/apis/batch/v1/namespaces/default/cronjobs/c1?"
                              "includeObject=None",
                              TABLE, NULL, &doc, NULL),
                 200);
    CHECK(json_is_null(kapi_json_path(json_array_get(json_object_get(doc, "rows"), 0), "object")));
    json_decref(doc);
    /* metadata only, and kube's 406 for a list of one object or one of a list */
    CHECK_INT_EQ(request_with(&e, "GET", path,
                              "Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;"
                              "v=v1\r\n",
                              NULL, &doc, NULL),
                 406);
    CHECK_STR_EQ(kapi_json_path_str(doc, "message"),
                 "you requested PartialObjectMetadata, but the requested object is a list "
                 "(*batch.CronJobList)");
    json_decref(doc);
    CHECK_INT_EQ(request_with(&e, "GET", path,
                              "Accept: application/json;as=PartialObjectMetadataList;"
                              "g=meta.k8s.io;v=v1beta1\r\n",
                              NULL, &doc, NULL),
                 200);
    CHECK_STR_EQ(kapi_json_path_str(doc, "apiVersion"), "meta.k8s.io/v1beta1");
    CHECK_STR_EQ(
        kapi_json_path_str(json_array_get(json_object_get(doc, "items"), 1), "metadata.name"),
        "c1");
    json_decref(doc);
    /* YAML, for objects and for errors */
    CHECK_INT_EQ(request_with(&e, "GET", "/apis/batch/v1/namespaces/default/cronjobs/c0",
                              "Accept: application/yaml\r\n", NULL, NULL, &raw),
                 200);
    CHECK(strncmp(raw.ptr, "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n", 45) == 0);
    kapi_buf_clear(&raw);
    CHECK_INT_EQ(request_with(&e, "GET", "/apis/batch/v1/namespaces/default/cronjobs/nope",
                              "Accept: application/yaml\r\n", NULL, NULL, &raw),
                 404);
    CHECK(strstr(raw.ptr, "\nreason: NotFound\n") != NULL);
    /* kube's default table: no rows is null */
    CHECK_INT_EQ(request_with(&e, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                              TABLE, NULL, &doc, NULL),
                 200);
    CHECK(json_is_null(json_object_get(doc, "rows")));
    CHECK_STR_EQ(
        kapi_json_path_str(json_array_get(json_object_get(doc, "columnDefinitions"), 1), "name"),
        "Created At");
    json_decref(doc);
    kapi_buf_dispose(&raw);
    api_env_stop(&e);
}
