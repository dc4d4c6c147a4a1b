/* Unit tests for kapi_api_classify: which in-flight class a request counts against and its
 * deadline, as kube-apiserver's max-in-flight and request-deadline filters decide. */
#include "api/api_int.h"
#include "test.h"

static const struct {
    const char *method, *path, *query;
    kapi_http_class cls;
    unsigned timeout_ms;
} cases[] = {
    {"GET", "/api/v1/namespaces", "", KAPI_HTTP_READ, 60000},
    {"GET", "/api/v1/namespaces/demo", "", KAPI_HTTP_READ, 60000},
    {"HEAD", "/apis/batch/v1/cronjobs", "", KAPI_HTTP_READ, 60000},
    {"GET", "/healthz", "", KAPI_HTTP_READ, 60000},
    {"POST", "/apis/batch/v1/namespaces/a/cronjobs", "", KAPI_HTTP_MUTATE, 60000},
    {"PUT", "/api/v1/namespaces/demo/finalize", "", KAPI_HTTP_MUTATE, 60000},
    {"PATCH", "/apis/batch/v1/namespaces/a/cronjobs/x", "", KAPI_HTTP_MUTATE, 60000},
    {"DELETE", "/apis/batch/v1/namespaces/a/cronjobs", "", KAPI_HTTP_MUTATE, 60000},
    {"OPTIONS", "/api/v1/namespaces", "", KAPI_HTTP_MUTATE, 60000},
    /* Watches, in every form, are long-running; their timeout parameter is not read. */
    {"GET", "/api/v1/namespaces", "watch=1&timeout=1s", KAPI_HTTP_LONG_RUNNING, 0},
    {"GET", "/api/v1/watch/namespaces", "timeout=bad", KAPI_HTTP_LONG_RUNNING, 0},
    {"GET", "/api/v1/namespaces/demo", "watch=true", KAPI_HTTP_LONG_RUNNING, 0},
    /* timeout: a Go duration, used when shorter than the request timeout (rounded up to a
     * millisecond); 0, negative, longer, empty or bad: the request timeout. */
    {"GET", "/api/v1/namespaces", "timeout=1s", KAPI_HTTP_READ, 1000},
    {"GET", "/api/v1/namespaces", "timeout=1.5s&timeout=9s", KAPI_HTTP_READ, 1500},
    {"POST", "/api/v1/namespaces", "timeout=250us", KAPI_HTTP_MUTATE, 1},
    {"GET", "/api/v1/namespaces", "timeout=2m", KAPI_HTTP_READ, 60000},
    {"GET", "/api/v1/namespaces", "timeout=0s", KAPI_HTTP_READ, 60000},
    {"GET", "/api/v1/namespaces", "timeout=-5s", KAPI_HTTP_READ, 60000},
    {"GET", "/api/v1/namespaces", "timeout=", KAPI_HTTP_READ, 60000},
    {"GET", "/api/v1/namespaces", "timeout=10", KAPI_HTTP_READ, 60000},
};

TEST(api_classify_table)
{
    kapi_api api = {.request_timeout_ms = 60000}; /* all that classifying reads */
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        kapi_http_request h = {.method = cases[i].method,
                               .path = kapi_str_c(cases[i].path),
                               .query = kapi_str_c(cases[i].query)};
        kapi_http_admission a = kapi_api_classify(&h, &api);
        if (a.cls != cases[i].cls ||
            (a.cls != KAPI_HTTP_LONG_RUNNING && a.timeout_ms != cases[i].timeout_ms))
            test_fail(__FILE__, __LINE__, "%s %s?%s: class %d timeout %u", cases[i].method,
                      cases[i].path, cases[i].query, (int)a.cls, a.timeout_ms);
    }
}
