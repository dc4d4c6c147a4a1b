/* Unit tests for the reading of conversion webhook answers (registry/conversion.c): what
 * a good answer gives, and each bad one in kube-apiserver 1.26's words (the messages were
 * recorded from it, with a webhook answering each way). */
#include <jansson.h>
#include <string.h>

#include "codec/json.h"
#include "registry/registry_int.h"
#include "test.h"

#define UID "4dc5ba39-c98c-4526-b604-c66370aa697f"
#define FOR "conversion webhook for example.com/v1, Kind=Widget "

static const char original[] =
    "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w1\","
    "\"namespace\":\"default\",\"uid\":\"u1\",\"resourceVersion\":\"7\",\"labels\":{\"a\":\"b\"},"
    "\"annotations\":{\"n\":\"1\"}},\"spec\":{\"size\":\"5\"}}";

/* An answer to a v1 review (uid UID) holding the converted objects objs (JSON text). */
static char *answer(const char *uid, const char *result, const char *objs)
{
    return kapi_xprintf("{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\","
                        "\"response\":{\"uid\":\"%s\",\"result\":%s,\"convertedObjects\":%s}}",
                        uid, result, objs);
}

/* A converted object: the original in v2, with what differs spliced in after "spec". */
static char *converted(const char *av, const char *kind, const char *meta)
{
    return kapi_xprintf("[{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":%s,"
                        "\"spec\":{\"length\":5}}]",
                        av, kind, meta);
}

static const char good_meta[] =
    "{\"name\":\"w1\",\"namespace\":\"default\",\"uid\":\"u1\",\"labels\":{\"a\":\"b\"}}";

/* Reads body (status, text) as the answer to a v1 review of the original object for
 * example.com/v2: the error's message, or "" with *out the object. */
static char *read_answer(const char *version, long status, bool text, const char *body,
                         json_t **out)
{
    json_t *objs[1] = {json_loads(original, 0, NULL)};
    size_t sent[1] = {0};
    bool done[1] = {false};
    kapi_conversion_call call = {
        .gv = "example.com/v2", .version = version, .uid = UID, .sent = sent, .nsent = 1};
    kapi_webhook_answer a = {.status = status, .text = text};
    kapi_buf_init(&a.body);
    kapi_buf_puts(&a.body, body);
    kapi_error *err = kapi_registry__conversion_answer(&call, &a, objs, done);
    kapi_buf_dispose(&a.body);
    char *msg = kapi_xstrdup(err ? err->message : "");
    if (err) {
        CHECK(err->status == KAPI_STATUS_UNKNOWN);
        CHECK(!done[0]);
        CHECK_STR_EQ(kapi_json_path_str(objs[0], "apiVersion"), "example.com/v1");
    }
    kapi_error_free(err);
    if (out)
        *out = objs[0];
    else
        json_decref(objs[0]);
    return msg;
}

static void expect(const char *body, long status, bool text, const char *want)
{
    char *msg = read_answer("v1", status, text, body, NULL);
    CHECK_STR_EQ(msg, want);
    free(msg);
}

TEST(conversion_good_answer)
{
    char *objs = converted("example.com/v2", "Widget",
                           "{\"name\":\"w1\",\"namespace\":\"default\",\"uid\":\"u1\","
                           "\"labels\":{\"a\":\"c\",\"x\":\"y\"},\"generation\":99}");
    char *body = answer(UID, "{\"status\":\"Success\"}", objs);
    json_t *out = NULL;
    char *msg = read_answer("v1", 200, false, body, &out);
    CHECK_STR_EQ(msg, "");
    CHECK_STR_EQ(kapi_json_path_str(out, "apiVersion"), "example.com/v2");
    CHECK_INT_EQ(json_integer_value(kapi_json_path(out, "spec.length")), 5);
    /* the original's metadata, the webhook's labels; annotations it left out are gone */
    CHECK_STR_EQ(kapi_json_path_str(out, "metadata.resourceVersion"), "7");
    CHECK(kapi_json_path(out, "metadata.generation") == NULL);
    CHECK_STR_EQ(kapi_json_path_str(out, "metadata.labels.a"), "c");
    CHECK_STR_EQ(kapi_json_path_str(out, "metadata.labels.x"), "y");
    CHECK(kapi_json_path(out, "metadata.annotations") == NULL);
    json_decref(out);
    free(msg);
    free(body);
    free(objs);
}

TEST(conversion_bad_answers)
{
    char *objs = converted("example.com/v2", "Widget", good_meta);
    char *body = answer("00000000-0000-0000-0000-000000000000", "{\"status\":\"Success\"}", objs);
    expect(body, 200, false,
           FOR "failed: expected response.uid=\"" UID
               "\", got \"00000000-0000-0000-0000-000000000000\"");
    free(body);
    body = answer(UID, "{\"status\":\"Success\"}", "[]");
    expect(body, 200, false, FOR "returned 0 objects, expected 1");
    free(body);
    expect("{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\","
           "\"response\":{\"uid\":\"" UID "\",\"result\":{\"status\":\"Success\"}}}",
           200, false, FOR "returned 0 objects, expected 1");
    body = answer(UID, "{\"status\":\"Failure\",\"message\":\"nope\"}", "[]");
    expect(body, 200, false, FOR "failed: nope");
    free(body);
    body = answer(UID, "{\"status\":\"Failure\"}", "null");
    expect(body, 200, false, FOR "failed: response.result.status was 'Failure', not 'Success'");
    free(body);
    free(objs);

    objs = converted("example.com/v2", "Widget",
                     "{\"name\":\"w1-changed\",\"namespace\":\"default\",\"uid\":\"u1\"}");
    body = answer(UID, "{\"status\":\"Success\"}", objs);
    expect(body, 200, false,
           FOR "returned invalid object: must have the same name: w1 != w1-changed");
    free(body);
    free(objs);
    objs = converted("example.com/v2", "Gadget", good_meta);
    body = answer(UID, "{\"status\":\"Success\"}", objs);
    expect(body, 200, false,
           FOR "returned invalid object at index 0: invalid kind (expected Widget, received "
               "Gadget)");
    free(body);
    free(objs);
    objs = converted("example.com/v1", "Widget", good_meta);
    body = answer(UID, "{\"status\":\"Success\"}", objs);
    expect(body, 200, false,
           FOR "returned invalid object at index 0: invalid groupVersion (expected "
               "example.com/v2, received example.com/v1)");
    free(body);
    free(objs);
    objs = converted("example.com/v2", "Widget",
                     "{\"name\":\"w1\",\"namespace\":\"default\",\"uid\":\"u1\","
                     "\"labels\":{\"bad key!\":\"x\"}}");
    body = answer(UID, "{\"status\":\"Success\"}", objs);
    expect(body, 200, false,
           FOR "returned invalid metadata: metadata.labels: Invalid value: \"bad key!\": name "
               "part must consist of alphanumeric characters, '-', '_' or '.', and must start "
               "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
               "'123-abc', regex used for validation is "
               "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')");
    free(body);
    free(objs);
}

TEST(conversion_bad_bodies)
{
    expect("hello", 200, true,
           FOR "failed: couldn't get version/kind; json parse error: json: cannot unmarshal "
               "string into Go value of type struct { APIVersion string "
               "\"json:\\\"apiVersion,omitempty\\\"\"; Kind string "
               "\"json:\\\"kind,omitempty\\\"\" }");
    expect("{\"apiVersion\":\"v1\"}", 200, false,
           FOR "failed: Object 'Kind' is missing in '{\"apiVersion\":\"v1\"}'");
    expect("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
           "\"message\":\"webhook exploded\",\"code\":500}",
           500, false, FOR "failed: webhook exploded");
    expect("plain failure text\n", 500, true,
           FOR "failed: an error on the server (\"plain failure text\") has prevented the "
               "request from succeeding");
    expect("<html>", 503, false,
           FOR "failed: the server is currently unable to handle the request");
    expect("{\"apiVersion\":\"apiextensions.k8s.io/v1beta1\",\"kind\":\"ConversionReview\"}", 200,
           false,
           FOR "failed: expected webhook response of apiextensions.k8s.io/v1, "
               "Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview");
    expect("{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\"}", 200, false,
           FOR "failed: no response provided");
}

/* A v1beta1 review's answer is not held to its uid, as kube does not check it. */
TEST(conversion_v1beta1_uid_unchecked)
{
    char *objs = converted("example.com/v2", "Widget", good_meta);
    char *body = kapi_xprintf("{\"apiVersion\":\"apiextensions.k8s.io/v1beta1\",\"kind\":"
                              "\"ConversionReview\",\"response\":{\"uid\":\"other\",\"result\":"
                              "{\"status\":\"Success\"},\"convertedObjects\":%s}}",
                              objs);
    json_t *out = NULL;
    char *msg = read_answer("v1beta1", 200, false, body, &out);
    CHECK_STR_EQ(msg, "");
    CHECK_STR_EQ(kapi_json_path_str(out, "apiVersion"), "example.com/v2");
    json_decref(out);
    free(msg);
    free(body);
    free(objs);
}
