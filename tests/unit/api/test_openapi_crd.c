/*
 * The OpenAPI documents of custom resources (api/openapi.c): an Established CRD's served
 * version is in /openapi/v3's index and has its group-version document, with the
 * definition kube's builder makes (com.example.v1.Widget, apiVersion/kind/metadata
 * added, the group-version-kind) and its List; /openapi/v2 has both; a change of the CRD
 * changes the document and its hash, and a deleted CRD leaves the documents.
 */
#include "api_call.h"
#include "test.h"

#define INDEX "/openapi/v3"
#define GV "apis/example.com/v1"

/* The hash in the index's URL of the group-version doc, or NULL when it is not listed. */
static char *gv_hash(api_env *e)
{
    api_answer a;
    CHECK_INT_EQ(api_call(e, "GET", INDEX, "", NULL, &a), 200);
    const char *url = kapi_json_path_str(json_object_get(json_object_get(a.json, "paths"), GV),
                                         "serverRelativeURL");
    char *hash = url && strstr(url, "?hash=") ? kapi_xstrdup(strstr(url, "?hash=") + 6) : NULL;
    api_answer_dispose(&a);
    return hash;
}

TEST(api_openapi_custom_resources)
{
    api_env e = {0};
    api_env_start(&e);
    char *none = gv_hash(&e);
    CHECK(none == NULL);
    api_create_widget_crd(&e);
    char *first = gv_hash(&e);
    CHECK(first != NULL);
    api_answer a;
    CHECK_INT_EQ(api_call(&e, "GET", "/openapi/v3/" GV, "", NULL, &a), 200);
    const json_t *schemas = kapi_json_path(a.json, "components.schemas");
    const json_t *w = json_object_get(schemas, "com.example.v1.Widget");
    CHECK(w != NULL);
    CHECK_STR_EQ(kapi_json_path_str(w, "properties.spec.properties.size.type"), "string");
    CHECK_STR_EQ(kapi_json_path_str(w, "properties.apiVersion.type"), "string");
    const json_t *meta = kapi_json_path(w, "properties.metadata.allOf");
    CHECK_STR_EQ(kapi_json_path_str(json_array_get(meta, 0), "$ref"),
                 "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    const json_t *gvk = json_array_get(json_object_get(w, "x-kubernetes-group-version-kind"), 0);
    CHECK_STR_EQ(kapi_json_path_str(gvk, "kind"), "Widget");
    CHECK(json_object_get(schemas, "com.example.v1.WidgetList") != NULL);
    CHECK(json_object_get(schemas, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta") != NULL);
    const json_t *paths = json_object_get(a.json, "paths");
    CHECK(json_object_get(paths, "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"));
    CHECK(json_object_get(paths, "/apis/example.com/v1/widgets"));
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "GET", "/openapi/v2", "", NULL, &a), 200);
    CHECK(json_object_get(json_object_get(a.json, "definitions"), "com.example.v1.Widget") != NULL);
    CHECK(json_object_get(json_object_get(a.json, "definitions"), "io.k8s.api.batch.v1.CronJob") !=
          NULL);
    api_answer_dispose(&a);
    /* A new field: a new document, a new hash. */
    CHECK_INT_EQ(
        api_call(&e, "PATCH",
                 "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
                 "Content-Type: application/json-patch+json\r\n",
                 "[{\"op\":\"add\",\"path\":\"/spec/versions/0/schema/openAPIV3Schema/properties/"
                 "spec/properties/color\",\"value\":{\"type\":\"string\"}},"
                 "{\"op\":\"add\",\"path\":\"/spec/versions/0/schema/openAPIV3Schema/properties/"
                 "spec/properties/tmpl\",\"value\":{\"type\":\"object\","
                 "\"x-kubernetes-embedded-resource\":true,"
                 "\"x-kubernetes-preserve-unknown-fields\":true}},"
                 "{\"op\":\"add\",\"path\":\"/spec/versions/0/schema/openAPIV3Schema/properties/"
                 "spec/properties/maybe\",\"value\":{\"type\":\"string\",\"nullable\":true}},"
                 "{\"op\":\"add\",\"path\":\"/spec/versions/0/schema/openAPIV3Schema/properties/"
                 "spec/required\",\"value\":[\"maybe\"]}]",
                 &a),
        200);
    api_answer_dispose(&a);
    char *second = gv_hash(&e);
    CHECK(second != NULL && strcmp(first, second) != 0);
    CHECK_INT_EQ(api_call(&e, "GET", "/openapi/v3/" GV, "", NULL, &a), 200);
    CHECK_STR_EQ(kapi_json_path_str(json_object_get(kapi_json_path(a.json, "components.schemas"),
                                                    "com.example.v1.Widget"),
                                    "properties.spec.properties.color.type"),
                 "string");
    /* An embedded resource gets apiVersion, kind (required) and metadata, as kube's
     * builder gives them; in Swagger 2.0 not while it preserves unknown fields. */
    const json_t *tmpl = kapi_json_path(
        json_object_get(kapi_json_path(a.json, "components.schemas"), "com.example.v1.Widget"),
        "properties.spec.properties.tmpl");
    CHECK(kapi_json_path(tmpl, "properties.metadata") != NULL);
    /* A required nullable field stays required in OpenAPI 3 (Swagger 2.0 drops it). */
    const json_t *spec3 = kapi_json_path(
        json_object_get(kapi_json_path(a.json, "components.schemas"), "com.example.v1.Widget"),
        "properties.spec");
    CHECK_STR_EQ(json_string_value(json_array_get(json_object_get(spec3, "required"), 0)), "maybe");
    char *req = json_dumps(json_object_get(tmpl, "required"), JSON_COMPACT);
    CHECK_STR_EQ(req, "[\"kind\",\"apiVersion\"]");
    free(req);
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "GET", "/openapi/v2", "", NULL, &a), 200);
    tmpl = kapi_json_path(
        json_object_get(json_object_get(a.json, "definitions"), "com.example.v1.Widget"),
        "properties.spec.properties.tmpl");
    CHECK(tmpl != NULL && json_object_get(tmpl, "required") == NULL);
    CHECK(kapi_json_path(
              json_object_get(json_object_get(a.json, "definitions"), "com.example.v1.Widget"),
              "properties.spec.required") == NULL);
    api_answer_dispose(&a);
    /* Gone with its CRD (deleted at once: api_env runs no controller, so the cleanup
     * finalizer is taken off by hand). */
    CHECK_INT_EQ(api_status(&e, "DELETE",
                            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                            "widgets.example.com",
                            NULL),
                 200);
    CHECK_INT_EQ(
        api_call(&e, "PATCH",
                 "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
                 "Content-Type: application/merge-patch+json\r\n",
                 "{\"metadata\":{\"finalizers\":null}}", &a),
        200);
    api_answer_dispose(&a);
    char *gone = gv_hash(&e);
    CHECK(gone == NULL);
    CHECK_INT_EQ(api_status(&e, "GET", "/openapi/v3/" GV, NULL), 404);
    free(first);
    free(second);
    api_env_stop(&e);
}
