/*
 * crd: issue 18's figures. How long a CRD takes from its create to being served (a list
 * of its resources answers 200): the first, and the one after r->size.crds (200 at full
 * size) are installed; the median over those; and, on a kapi the harness runs, the RSS
 * each CRD adds. envtest's kube-apiserver takes about 2 s per CRD, and adds about 13 MB
 * each. The CRDs, each a kind of its own in one group with a small structural schema and
 * a status subresource, are deleted after.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GROUP "crd.kapi-bench.example.com"
#define SERVED_WAIT_MS 30000

static void crd_body(kapi_buf *b, size_t i)
{
    kapi_buf_printf(
        b,
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"things%zu." GROUP "\"},\"spec\":{\"group\":\"" GROUP "\","
        "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"things%zu\",\"singular\":\"thing%zu\","
        "\"kind\":\"Thing%zu\"},\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
        "\"subresources\":{\"status\":{}},\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
        "\"properties\":{\"spec\":{\"type\":\"object\",\"properties\":{\"size\":{\"type\":"
        "\"string\",\"enum\":[\"S\",\"M\",\"L\"]},\"replicas\":{\"type\":\"integer\",\"default\":1,"
        "\"minimum\":0},\"tags\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"set\",\"items\":"
        "{\"type\":\"string\"}}}},\"status\":{\"type\":\"object\",\"properties\":{\"phase\":"
        "{\"type\":\"string\"}}}}}}}]}}",
        i, i, i, i);
}

double kapi_bench__install_crd(kapi_bench_run *r, const char *body, const char *list_path)
{
    kapi_buf answer;
    kapi_buf_init(&answer);
    double t0 = (double)kapi_time_mono_ns() / 1e6, took = -1;
    int status = kapi_bench_request(r->client, "POST",
                                    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                    "application/json", body, &answer);
    if (status != 201) {
        fprintf(stderr, "kapi-bench: create CRD: %d %.300s\n", status, answer.ptr);
        goto done;
    }
    while ((double)kapi_time_mono_ns() / 1e6 - t0 < SERVED_WAIT_MS) {
        if (kapi_bench_request(r->client, "GET", list_path, NULL, NULL, NULL) == 200) {
            took = (double)kapi_time_mono_ns() / 1e6 - t0;
            break;
        }
        struct timespec pause = {0, 500000};
        nanosleep(&pause, NULL);
    }
    if (took < 0)
        fprintf(stderr, "kapi-bench: %s not served within %d ms\n", list_path, SERVED_WAIT_MS);
done:
    kapi_buf_dispose(&answer);
    return took;
}

/* Creates CRD i and waits until it is served: the ms it took, or -1. */
static double install(kapi_bench_run *r, size_t i)
{
    kapi_buf body;
    kapi_buf_init(&body);
    crd_body(&body, i);
    char *path = kapi_xprintf("/apis/" GROUP "/v1/namespaces/%s/things%zu?limit=1", r->ns, i);
    double took = kapi_bench__install_crd(r, body.ptr, path);
    free(path);
    kapi_buf_dispose(&body);
    return took;
}

static int double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void remove_all(kapi_bench_run *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *path = kapi_xprintf(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things%zu." GROUP, i);
        kapi_bench_request(r->client, "DELETE", path, NULL, NULL, NULL);
        free(path);
    }
}

int kapi_bench_scenario_crd(kapi_bench_run *r)
{
    size_t n = r->size.crds;
    double *ms = kapi_xcalloc(n + 1, sizeof(*ms));
    long long rss0 = r->server ? kapi_bench_server_rss(r->server) : -1, rss1 = -1;
    size_t made = 0;
    int rc = -1;
    for (; made <= n; made++) {
        if (made == n && r->server) { /* with the OpenAPI documents made, as kubectl asks */
            kapi_bench_request(r->client, "GET", "/openapi/v3", NULL, NULL, NULL);
            kapi_bench_request(r->client, "GET", "/openapi/v2", NULL, NULL, NULL);
            rss1 = kapi_bench_server_rss(r->server);
        }
        if ((ms[made] = install(r, made)) < 0)
            goto done;
    }
    char fig[96];
    kapi_bench_report_add(r->report, "crd", "CRD create to served, the first (ms)", "crd_first_ms",
                          ms[0], 1);
    snprintf(fig, sizeof(fig), "CRD create to served, with %zu installed (ms)", n);
    kapi_bench_report_add(r->report, "crd", fig, "crd_last_ms", ms[n], 1);
    qsort(ms, n, sizeof(*ms), double_cmp);
    snprintf(fig, sizeof(fig), "CRD create to served, median of %zu (ms)", n);
    kapi_bench_report_add(r->report, "crd", fig, "crd_median_ms", ms[n / 2], 1);
    if (rss0 > 0 && rss1 > 0)
        kapi_bench_report_add(r->report, "crd", "RSS added per CRD (KB)", "crd_rss_kb",
                              (double)(rss1 - rss0) / 1e3 / (double)n, 0);
    rc = 0;
done:
    remove_all(r, made + (made <= n));
    free(ms);
    return rc;
}
