/*
 * Unit tests for api/serviceaccounts.c over the api test server: the TokenRequest
 * subresource (its answer, kube's errors, the lifetime's cap), a token it issues
 * authenticating until its ServiceAccount goes, and the OpenID discovery documents.
 */
#include "api_call.h"
#include "test.h"

#define TOKEN_PATH "/api/v1/namespaces/default/serviceaccounts/robot/token"

static void env_start(api_env *e)
{
    api_env_start(e);
    kapi_api_set_server_address(e->api, "127.0.0.1:6443");
    CHECK(kapi_namespace_ensure(e->api, "default") == NULL);
    CHECK(api_status(e, "POST", "/api/v1/namespaces/default/serviceaccounts",
                     "{\"metadata\":{\"name\":\"robot\"}}") == 201);
}

/* The status of GET path with the bearer token tok instead of the admin's. */
static int status_as(api_env *e, const char *tok, const char *path)
{
    http_client c;
    http_resp resp;
    char *req = kapi_xprintf("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                             "Connection: close\r\n\r\n",
                             path, tok);
    client_connect(&c, e->http.port);
    client_send(&c, req, strlen(req));
    CHECK(client_read_response(&c, &resp));
    int status = resp.status;
    resp_dispose(&resp);
    client_close(&c);
    free(req);
    return status;
}

/* A token issued for robot, authenticating as it, until it is deleted (and not again
 * once another robot takes its name). */
TEST(api_token_request_issues_a_working_token)
{
    api_env e = {0};
    env_start(&e);
    api_answer a;
    CHECK_INT_EQ(
        api_call(&e, "POST", TOKEN_PATH, "",
                 "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\","
                 "\"spec\":{\"audiences\":[\"https://kubernetes.default.svc.cluster.local\","
                 "\"vault\"],\"expirationSeconds\":700}}",
                 &a),
        201);
    CHECK_STR_EQ(api_str(&a, "kind"), "TokenRequest");
    CHECK_STR_EQ(api_str(&a, "apiVersion"), "authentication.k8s.io/v1");
    CHECK_STR_EQ(api_str(&a, "metadata.name"), "robot");
    CHECK_STR_EQ(api_str(&a, "metadata.namespace"), "default");
    CHECK(api_str(&a, "metadata.creationTimestamp") && !api_str(&a, "metadata.uid"));
    json_t *mf = json_array_get(kapi_json_path(a.json, "metadata.managedFields"), 0);
    CHECK_STR_EQ(kapi_json_path_str(mf, "subresource"), "token");
    CHECK_STR_EQ(kapi_json_path_str(mf, "apiVersion"), "authentication.k8s.io/v1");
    CHECK_INT_EQ(api_int(&a, "spec.expirationSeconds"), 700);
    CHECK(json_is_null(kapi_json_path(a.json, "spec.boundObjectRef")));
    CHECK(api_str(&a, "status.expirationTimestamp") != NULL);
    const char *tok = api_str(&a, "status.token");
    CHECK(tok && strncmp(tok, "eyJ", 3) == 0);
    char *token = kapi_xstrdup(tok);
    api_answer_dispose(&a);
    /* authenticated: forbidden (the account holds no role), where a bad token is 401 */
    CHECK_INT_EQ(status_as(&e, token, "/api/v1/namespaces"), 403);
    CHECK_INT_EQ(status_as(&e, "not-a-token", "/api/v1/namespaces"), 401);
    CHECK(api_status(&e, "DELETE", "/api/v1/namespaces/default/serviceaccounts/robot", NULL) ==
          200);
    CHECK_INT_EQ(status_as(&e, token, "/api/v1/namespaces"), 401);
    CHECK(api_status(&e, "POST", "/api/v1/namespaces/default/serviceaccounts",
                     "{\"metadata\":{\"name\":\"robot\"}}") == 201);
    CHECK_INT_EQ(status_as(&e, token, "/api/v1/namespaces"), 401);
    free(token);
    api_env_stop(&e);
}

/* The defaults (an hour, the API's audience) and kube's answers to bad requests. */
TEST(api_token_request_defaults_and_errors)
{
    api_env e = {0};
    env_start(&e);
    api_answer a;
    CHECK_INT_EQ(api_call(&e, "POST", TOKEN_PATH, "", "{}", &a), 201);
    CHECK_INT_EQ(api_int(&a, "spec.expirationSeconds"), 3600);
    CHECK_STR_EQ(
        kapi_json_path_str(json_array_get(kapi_json_path(a.json, "spec.audiences"), 0), ""),
        "https://kubernetes.default.svc.cluster.local");
    api_answer_dispose(&a);
    static const struct {
        const char *path, *body;
        int status;
        const char *message;
    } cases[] = {
        {TOKEN_PATH, "{\"spec\":{\"expirationSeconds\":10}}", 422,
         "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid "
         "value: 10: may not specify a duration less than 10 minutes"},
        {TOKEN_PATH, "{\"spec\":{\"expirationSeconds\":9999999999}}", 422,
         "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid "
         "value: 9999999999: may not specify a duration larger than 2^32 seconds"},
        {TOKEN_PATH, "{\"metadata\":{\"name\":\"other\"}}", 422,
         "TokenRequest.authentication.k8s.io \"robot\" is invalid: metadata.name: Invalid value: "
         "\"other\": must match the service account name if specified"},
        {TOKEN_PATH, "{\"metadata\":{\"namespace\":\"other\"}}", 400,
         "the namespace of the provided object does not match the namespace sent on the request"},
        {"/api/v1/namespaces/default/serviceaccounts/nobody/token", "{}", 404,
         "serviceaccounts \"nobody\" not found"},
        {"/api/v1/namespaces/nowhere/serviceaccounts/robot/token", "{}", 404,
         "namespaces \"nowhere\" not found"},
        {TOKEN_PATH,
         "{\"spec\":{\"boundObjectRef\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"name\":\"p1\"}}}",
         404, "pods \"p1\" not found"},
        {TOKEN_PATH,
         "{\"spec\":{\"boundObjectRef\":{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"name\":\"s\"}}"
         "}",
         404, "secrets \"s\" not found"},
        {TOKEN_PATH,
         "{\"spec\":{\"boundObjectRef\":{\"kind\":\"Deployment\",\"apiVersion\":\"apps/"
         "v1\",\"name\":\"d\"}}}",
         400, "cannot bind token to object of type apps/v1, Kind=Deployment"},
        {TOKEN_PATH, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\"}", 400,
         "Pod in version \"v1\" cannot be handled as a TokenRequest: converting (v1.Pod) to "
         "(authentication.TokenRequest): unknown conversion"},
        {TOKEN_PATH, "{\"spec\":{\"expirationSeconds\":\"x\"}}", 400,
         "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: json: cannot "
         "unmarshal string into Go struct field TokenRequestSpec.spec.expirationSeconds of type "
         "int64"},
        {TOKEN_PATH "?fieldValidation=Strict", "{\"spec\":{\"foo\":1}}", 400,
         "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: strict decoding "
         "error: unknown field \"spec.foo\""},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        int status = api_call(&e, "POST", cases[i].path, "", cases[i].body, &a);
        const char *msg = api_str(&a, "message");
        if (status != cases[i].status || !msg || strcmp(msg, cases[i].message) != 0)
            test_fail(__FILE__, __LINE__, "case %zu: %d %s", i, status, msg ? msg : "(none)");
        api_answer_dispose(&a);
    }
    CHECK_INT_EQ(api_status(&e, "GET", TOKEN_PATH, NULL), 405);
    CHECK_INT_EQ(api_status(&e, "PUT", TOKEN_PATH, "{}"), 405);
    CHECK_INT_EQ(api_call(&e, "POST", TOKEN_PATH,
                          "Accept: application/json;as=Table;v=v1;g=meta.k8s.io\r\n", "{}", &a),
                 406);
    api_answer_dispose(&a);
    api_env_stop(&e);
}

/* --service-account-max-token-expiration shortens a longer request, with kube's warning. */
TEST(api_token_request_max_expiration)
{
    api_env e = {.sa_max_expiration = 7200};
    env_start(&e);
    api_answer a;
    CHECK_INT_EQ(
        api_call(&e, "POST", TOKEN_PATH, "", "{\"spec\":{\"expirationSeconds\":90000}}", &a), 201);
    CHECK_INT_EQ(api_int(&a, "spec.expirationSeconds"), 7200);
    CHECK(strstr(a.head.ptr, "Warning: 299 - \"requested expiration of 90000 seconds shortened "
                             "to 7200 seconds\"") != NULL);
    api_answer_dispose(&a);
    api_env_stop(&e);
}

TEST(api_openid_discovery_documents)
{
    api_env e = {0};
    env_start(&e);
    api_answer a;
    CHECK_INT_EQ(api_call(&e, "GET", "/.well-known/openid-configuration", "", NULL, &a), 200);
    CHECK_STR_EQ(api_str(&a, "jwks_uri"), "https://127.0.0.1:6443/openid/v1/jwks");
    CHECK_STR_EQ(api_str(&a, "issuer"), "https://kubernetes.default.svc.cluster.local");
    CHECK(strstr(a.head.ptr, "Cache-Control: public, max-age=3600\r\n") != NULL);
    CHECK(strstr(a.head.ptr, "Content-Type: application/json\r\n") != NULL);
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "GET", "/openid/v1/jwks/", "Accept: */*\r\n", NULL, &a), 200);
    CHECK(strstr(a.head.ptr, "Content-Type: application/jwk-set+json\r\n") != NULL);
    CHECK_STR_EQ(kapi_json_path_str(json_array_get(kapi_json_path(a.json, "keys"), 0), "alg"),
                 "RS256");
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "GET", "/openid/v1/jwks", "Accept: application/json\r\n", NULL, &a),
                 406);
    CHECK_STR_EQ(api_str(&a, "message"),
                 "406: Not Acceptable\n\nAvailable representations: application/jwk-set+json");
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_status(&e, "POST", "/openid/v1/jwks", "{}"), 405);
    CHECK_INT_EQ(api_call(&e, "GET", "/openid/v1/jwks/x", "", NULL, &a), 404);
    CHECK_STR_EQ(api_str(&a, "kind"), "Status");
    api_answer_dispose(&a);
    CHECK_INT_EQ(status_as(&e, "nobody", "/openid/v1/jwks"), 401);
    api_env_stop(&e);
}
