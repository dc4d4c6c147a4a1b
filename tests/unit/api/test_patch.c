/*
 * Unit tests for the patch verb (api/patch.c) over an api_env server: JSON, merge and
 * strategic merge patches, the 415 of any other content type, a missing object, a
 * resourceVersion in the patch (a conflict, or the write it guards), a patch whose
 * result is invalid, dry run and unknown fields.
 */
#include "api_call.h"
#include "test.h"

#define CRONJOBS "/apis/batch/v1/namespaces/default/cronjobs"
#define JSON_PATCH "Content-Type: application/json-patch+json\r\n"
#define MERGE "Content-Type: application/merge-patch+json\r\n"
#define STRATEGIC "Content-Type: application/strategic-merge-patch+json\r\n"
#define CONTAINERS "spec.jobTemplate.spec.template.spec.containers"

static void env_start(api_env *e)
{
    api_env_start(e);
    CHECK(kapi_namespace_ensure(e->api, "default") == NULL);
    char *body = api_cronjob("a", "\"labels\":{\"app\":\"web\"}");
    CHECK_INT_EQ(api_status(e, "POST", CRONJOBS, body), 201);
    free(body);
}

/* PATCHes the CronJob a with content type header ct. */
static int patch(api_env *e, const char *ct, const char *body, api_answer *a)
{
    return api_call(e, "PATCH", CRONJOBS "/a", ct, body, a);
}

/* The container names of a CronJob answer, comma-separated, into out. */
static const char *containers(const api_answer *a, char *out, size_t size)
{
    size_t i, n = 0;
    json_t *c;
    out[0] = '\0';
    json_array_foreach(kapi_json_path(a->json, CONTAINERS), i, c)
    {
        n += (size_t)snprintf(out + n, size - n, "%s%s", i ? "," : "",
                              kapi_json_path_str(c, "name"));
    }
    return out;
}

TEST(api_patch_three_types)
{
    api_env e = {0};
    api_answer a;
    char got[256];
    env_start(&e);
    CHECK_INT_EQ(patch(&e, JSON_PATCH,
                       "[{\"op\":\"add\",\"path\":\"/metadata/labels/tier\",\"value\":\"db\"},"
                       "{\"op\":\"replace\",\"path\":\"/spec/schedule\",\"value\":\"1 2 3 4 5\"},"
                       "{\"op\":\"test\",\"path\":\"/metadata/labels/app\",\"value\":\"web\"}]",
                       &a),
                 200);
    CHECK_STR_EQ(api_str(&a, "metadata.labels.tier"), "db");
    CHECK_STR_EQ(api_str(&a, "spec.schedule"), "1 2 3 4 5");
    CHECK_INT_EQ(api_int(&a, "metadata.generation"), 2); /* the spec changed */
    api_answer_dispose(&a);
    /* merge: null removes, a list is replaced whole */
    CHECK_INT_EQ(patch(&e, MERGE,
                       "{\"metadata\":{\"labels\":{\"tier\":null}},\"spec\":{\"jobTemplate\":{"
                       "\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"side\","
                       "\"image\":\"nginx\"}]}}}}}}",
                       &a),
                 200);
    CHECK(api_str(&a, "metadata.labels.tier") == NULL);
    CHECK_STR_EQ(api_str(&a, "metadata.labels.app"), "web");
    CHECK_STR_EQ(containers(&a, got, sizeof(got)), "side");
    /* the result is defaulted as an update body is */
    CHECK_STR_EQ(kapi_json_path_str(json_array_get(kapi_json_path(a.json, CONTAINERS), 0),
                                    "terminationMessagePath"),
                 "/dev/termination-log");
    api_answer_dispose(&a);
    /* strategic: containers merge by name; $patch: delete takes one out */
    CHECK_INT_EQ(patch(&e, STRATEGIC,
                       "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
                       "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}}}}}",
                       &a),
                 200);
    CHECK_STR_EQ(containers(&a, got, sizeof(got)), "main,side");
    api_answer_dispose(&a);
    CHECK_INT_EQ(patch(&e, STRATEGIC,
                       "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
                       "\"containers\":[{\"name\":\"side\",\"$patch\":\"delete\"}]}}}}}}",
                       &a),
                 200);
    CHECK_STR_EQ(containers(&a, got, sizeof(got)), "main");
    api_answer_dispose(&a);
    /* what the answers said is what is stored */
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "/a", "", NULL, &a), 200);
    CHECK_STR_EQ(containers(&a, got, sizeof(got)), "main");
    CHECK_STR_EQ(api_str(&a, "spec.schedule"), "1 2 3 4 5");
    api_answer_dispose(&a);
    /* a content type without ";" parameters or in another case is the same type */
    CHECK_INT_EQ(patch(&e, "Content-Type: Application/Merge-Patch+JSON; charset=utf-8\r\n",
                       "{\"metadata\":{\"labels\":{\"case\":\"x\"}}}", &a),
                 200);
    CHECK_STR_EQ(api_str(&a, "metadata.labels.case"), "x");
    api_answer_dispose(&a);
    api_env_stop(&e);
}

TEST(api_patch_errors)
{
    api_env e = {0};
    api_answer a;
    env_start(&e);
    static const char *const other_types[] = {
        "Content-Type: text/plain\r\n",
        "Content-Type: application/json\r\n",
        "Content-Type: application/merge-patch+jsonx\r\n",
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(other_types); i++) {
        CHECK_INT_EQ(patch(&e, other_types[i], "{}", &a), 415);
        CHECK_STR_EQ(api_str(&a, "reason"), "UnsupportedMediaType");
        CHECK_STR_EQ(api_str(&a, "message"), "415: Unsupported Media Type");
        CHECK(json_is_object(json_object_get(a.json, "details")));
        api_answer_dispose(&a);
    }
    CHECK_INT_EQ(api_call(&e, "PATCH", CRONJOBS "/nope", MERGE, "{}", &a), 404);
    CHECK_STR_EQ(api_str(&a, "reason"), "NotFound");
    CHECK_STR_EQ(api_str(&a, "message"), "cronjobs.batch \"nope\" not found");
    api_answer_dispose(&a);
    CHECK_INT_EQ(patch(&e, JSON_PATCH, "{\"op\":\"add\"}", &a), 400);
    CHECK_STR_EQ(api_str(&a, "message"), "error decoding patch: json: cannot unmarshal object into "
                                         "Go value of type []handlers.jsonPatchOp");
    api_answer_dispose(&a);
    CHECK_INT_EQ(
        patch(&e, JSON_PATCH, "[{\"op\":\"test\",\"path\":\"/spec/schedule\",\"value\":1}]", &a),
        422);
    CHECK_STR_EQ(api_str(&a, "message"),
                 "the server rejected our request due to an error in our request");
    api_answer_dispose(&a);
    CHECK_INT_EQ(patch(&e, MERGE, "[1]", &a), 400);
    CHECK_STR_EQ(api_str(&a, "reason"), "BadRequest");
    api_answer_dispose(&a);
    api_env_stop(&e);
}

TEST(api_patch_resource_version)
{
    api_env e = {0};
    api_answer a;
    env_start(&e);
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "/a", "", NULL, &a), 200);
    char *rv = kapi_xstrdup(api_str(&a, "metadata.resourceVersion"));
    api_answer_dispose(&a);
    CHECK_INT_EQ(patch(&e, MERGE, "{\"metadata\":{\"labels\":{\"n\":\"1\"}}}", &a), 200);
    api_answer_dispose(&a);
    /* the patch names the revision it was made against: now stale */
    char *stale =
        kapi_xprintf("{\"metadata\":{\"resourceVersion\":\"%s\",\"labels\":{\"n\":\"2\"}}}", rv);
    CHECK_INT_EQ(patch(&e, MERGE, stale, &a), 409);
    CHECK_STR_EQ(api_str(&a, "reason"), "Conflict");
    CHECK_STR_EQ(api_str(&a, "message"),
                 "Operation cannot be fulfilled on cronjobs.batch \"a\": the object has been "
                 "modified; please apply your changes to the latest version and try again");
    CHECK_STR_EQ(api_str(&a, "details.name"), "a");
    CHECK_STR_EQ(api_str(&a, "details.kind"), "cronjobs");
    api_answer_dispose(&a);
    char *json_stale = kapi_xprintf("[{\"op\":\"replace\",\"path\":\"/metadata/resourceVersion\","
                                    "\"value\":\"%s\"}]",
                                    rv);
    CHECK_INT_EQ(patch(&e, JSON_PATCH, json_stale, &a), 409);
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "/a", "", NULL, &a), 200);
    CHECK_STR_EQ(api_str(&a, "metadata.labels.n"), "1");
    /* the current revision: the write goes through */
    char *current = kapi_xprintf("{\"metadata\":{\"resourceVersion\":\"%s\",\"labels\":{\"n\":"
                                 "\"3\"}}}",
                                 api_str(&a, "metadata.resourceVersion"));
    api_answer_dispose(&a);
    CHECK_INT_EQ(patch(&e, MERGE, current, &a), 200);
    CHECK_STR_EQ(api_str(&a, "metadata.labels.n"), "3");
    api_answer_dispose(&a);
    free(current);
    free(json_stale);
    free(stale);
    free(rv);
    api_env_stop(&e);
}

TEST(api_patch_invalid_result)
{
    api_env e = {0};
    api_answer a;
    env_start(&e);
    CHECK_INT_EQ(patch(&e, MERGE, "{\"spec\":{\"schedule\":\"bad\"}}", &a), 422);
    CHECK_STR_EQ(api_str(&a, "reason"), "Invalid");
    CHECK_STR_EQ(api_str(&a, "message"),
                 "CronJob.batch \"a\" is invalid: spec.schedule: Invalid value: \"bad\": expected "
                 "exactly 5 fields, found 1: [bad]");
    CHECK_STR_EQ(api_str(&a, "details.name"), "a");
    CHECK_STR_EQ(api_str(&a, "details.group"), "batch");
    CHECK_STR_EQ(api_str(&a, "details.kind"), "CronJob");
    json_t *causes = kapi_json_path(a.json, "details.causes");
    CHECK_INT_EQ(json_array_size(causes), 1);
    CHECK_STR_EQ(kapi_json_path_str(json_array_get(causes, 0), "reason"), "FieldValueInvalid");
    CHECK_STR_EQ(kapi_json_path_str(json_array_get(causes, 0), "field"), "spec.schedule");
    CHECK_STR_EQ(kapi_json_path_str(json_array_get(causes, 0), "message"),
                 "Invalid value: \"bad\": expected exactly 5 fields, found 1: [bad]");
    api_answer_dispose(&a);
    /* two causes, from a JSON patch */
    CHECK_INT_EQ(patch(&e, JSON_PATCH,
                       "[{\"op\":\"replace\",\"path\":\"/spec/schedule\",\"value\":\"bad\"},"
                       "{\"op\":\"add\",\"path\":\"/spec/concurrencyPolicy\",\"value\":\"Never\"}]",
                       &a),
                 422);
    CHECK_INT_EQ(json_array_size(kapi_json_path(a.json, "details.causes")), 2);
    api_answer_dispose(&a);
    /* a type error in the result: the whole patched object in the cause */
    CHECK_INT_EQ(patch(&e, MERGE, "{\"spec\":{\"suspend\":\"yes\"}}", &a), 422);
    const char *msg = api_str(&a, "message");
    CHECK(strncmp(msg, " \"\" is invalid: patch: Invalid value: \"{", 39) == 0);
    CHECK(strstr(msg, "\": json: cannot unmarshal string into Go struct field "
                      "CronJobSpec.spec.suspend of type bool") != NULL);
    /* the object is shown as the patch made it, before decoding began */
    CHECK(strstr(msg, "\\\"suspend\\\":\\\"yes\\\"") != NULL);
    CHECK_STR_EQ(
        kapi_json_path_str(json_array_get(kapi_json_path(a.json, "details.causes"), 0), "field"),
        "patch");
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "/a", "", NULL, &a), 200);
    CHECK_STR_EQ(api_str(&a, "spec.schedule"), "0 3 29 2 *");
    CHECK_INT_EQ(api_int(&a, "metadata.generation"), 1);
    api_answer_dispose(&a);
    api_env_stop(&e);
}

TEST(api_patch_dry_run_and_unknown_fields)
{
    api_env e = {0};
    api_answer a;
    env_start(&e);
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "/a", "", NULL, &a), 200);
    char *rv = kapi_xstrdup(api_str(&a, "metadata.resourceVersion"));
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "PATCH", CRONJOBS "/a?dryRun=All", MERGE,
                          "{\"spec\":{\"schedule\":\"9 9 29 2 *\"}}", &a),
                 200);
    CHECK_STR_EQ(api_str(&a, "spec.schedule"), "9 9 29 2 *");
    CHECK_INT_EQ(api_int(&a, "metadata.generation"), 2);
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "/a", "", NULL, &a), 200);
    CHECK_STR_EQ(api_str(&a, "spec.schedule"), "0 3 29 2 *");
    CHECK_STR_EQ(api_str(&a, "metadata.resourceVersion"), rv);
    api_answer_dispose(&a);
    /* unknown fields: a warning by default, a 422 when Strict */
    CHECK_INT_EQ(patch(&e, MERGE, "{\"spec\":{\"bogus\":1}}", &a), 200);
    CHECK_STR_EQ(resp_header(&(http_resp){.head = a.head}, "warning"),
                 "299 - \"unknown field \\\"spec.bogus\\\"\"");
    CHECK(kapi_json_path(a.json, "spec.bogus") == NULL);
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "PATCH", CRONJOBS "/a?fieldValidation=Strict", STRATEGIC,
                          "{\"spec\":{\"bogus\":1}}", &a),
                 422);
    CHECK_STR_EQ(api_str(&a, "message"),
                 " \"\" is invalid: patch: Invalid value: \"map[spec:map[bogus:1]]\": strict "
                 "decoding error: unknown field \"spec.bogus\"");
    api_answer_dispose(&a);
    free(rv);
    api_env_stop(&e);
}

/* A custom resource has no patch strategy: a strategic merge patch is kube's 415. */
TEST(api_patch_custom_resource)
{
    const char *w1 = "/apis/example.com/v1/namespaces/default/widgets/w1";
    api_env e = {0};
    api_answer a;
    env_start(&e);
    api_create_widget_crd(&e);
    CHECK_INT_EQ(api_status(&e, "POST", "/apis/example.com/v1/namespaces/default/widgets",
                            "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\","
                            "\"metadata\":{\"name\":\"w1\"},\"spec\":{\"size\":\"S\"}}"),
                 201);
    CHECK_INT_EQ(api_call(&e, "PATCH", w1, STRATEGIC, "{\"spec\":{\"size\":\"M\"}}", &a), 415);
    CHECK_STR_EQ(api_str(&a, "reason"), "UnsupportedMediaType");
    CHECK_STR_EQ(api_str(&a, "message"),
                 "the body of the request was in an unknown format - accepted media types "
                 "include: application/json-patch+json, application/merge-patch+json, "
                 "application/apply-patch+yaml");
    CHECK(json_object_get(a.json, "details") == NULL);
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "PATCH", w1, MERGE, "{\"spec\":{\"size\":\"M\"}}", &a), 200);
    CHECK_STR_EQ(api_str(&a, "spec.size"), "M");
    CHECK_INT_EQ(api_int(&a, "metadata.generation"), 2);
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "PATCH", w1, JSON_PATCH,
                          "[{\"op\":\"add\",\"path\":\"/spec/size\",\"value\":\"L\"}]", &a),
                 200);
    CHECK_STR_EQ(api_str(&a, "spec.size"), "L");
    api_answer_dispose(&a);
    api_env_stop(&e);
}
