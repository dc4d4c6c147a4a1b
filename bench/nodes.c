/*
 * allocator: issue 20's figure for the ClusterCIDR allocator. r->size.nodes Nodes (5,000
 * at full size) are created over the run's connections under one ClusterCIDR of 10.0.0.0/8
 * with 8 host bits per Node (65,536 blocks); the figure is Nodes/s from the first create
 * to the moment a list shows every one of them with spec.podCIDRs, polled every 20 ms.
 * The server must run the allocator (kapi: --allocate-node-cidrs, which kapi-bench gives
 * the kapi it starts; kube-controller-manager: --allocate-node-cidrs with the
 * MultiCIDRRangeAllocator); otherwise the scenario fails after a minute. The Nodes and the
 * ClusterCIDR are deleted after.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LABEL "kapi-bench-allocator"
#define CIDR_NAME "kapi-bench"
#define CIDR_PATH "/apis/networking.k8s.io/v1alpha1/clustercidrs"
#define NODES_PATH "/api/v1/nodes"
#define ALLOCATED_WAIT_MS 60000

static void send_node(kapi_bench_batch *b, kapi_bench_conn *c, size_t i)
{
    kapi_buf *body = b->ctx;
    kapi_buf_clear(body);
    kapi_buf_printf(body,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":"
                    "\"kapi-bench-node-%06zu\",\"labels\":{\"" LABEL "\":\"true\"}}}",
                    i);
    kapi_bench_conn_send(c, "POST", NODES_PATH, "application/json", body->ptr, body->len);
}

/* How many of the benchmark's Nodes a list shows with Pod CIDRs; -1 when it failed. */
static long allocated(kapi_bench_run *r, kapi_buf *answer)
{
    kapi_buf_clear(answer);
    if (kapi_bench_request(r->client, "GET", NODES_PATH "?labelSelector=" LABEL, NULL, NULL,
                           answer) != 200)
        return -1;
    long n = 0;
    for (const char *p = answer->ptr; (p = strstr(p, "\"podCIDRs\"")) != NULL; p++)
        n++;
    return n;
}

static void clean_up(kapi_bench_run *r)
{
    kapi_bench_request(r->client, "DELETE", NODES_PATH "?labelSelector=" LABEL, NULL, NULL, NULL);
    kapi_bench_request(r->client, "DELETE", CIDR_PATH "/" CIDR_NAME, NULL, NULL, NULL);
}

int kapi_bench_scenario_allocator(kapi_bench_run *r)
{
    static const char cidr[] =
        "{\"apiVersion\":\"networking.k8s.io/v1alpha1\",\"kind\":\"ClusterCIDR\",\"metadata\":{"
        "\"name\":\"" CIDR_NAME "\"},\"spec\":{\"perNodeHostBits\":8,\"ipv4\":\"10.0.0.0/8\","
        "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"" LABEL
        "\",\"operator\":\"Exists\"}]}]}}}";
    size_t n = r->size.nodes;
    kapi_buf answer, body;
    kapi_bench_batch b;
    kapi_buf_init(&answer);
    kapi_buf_init(&body);
    kapi_bench_batch_init(&b);
    int rc = -1;
    int status =
        kapi_bench_request(r->client, "POST", CIDR_PATH, "application/json", cidr, &answer);
    if (status != 201) {
        fprintf(stderr, "kapi-bench: create ClusterCIDR: %d %.300s\n", status, answer.ptr);
        goto done;
    }
    b.total = n;
    b.conns = r->size.conns;
    b.send = send_node;
    b.ctx = &body;
    double cpu0 = kapi_bench_run_cpu(r), t0 = (double)kapi_time_mono_ns() / 1e6;
    if (kapi_bench__run_batch(r, &b, "create Nodes") < 0)
        goto done;
    long got = 0;
    while ((got = allocated(r, &answer)) >= 0 && (size_t)got < n &&
           (double)kapi_time_mono_ns() / 1e6 - t0 < ALLOCATED_WAIT_MS) {
        struct timespec pause = {0, 20 * 1000000};
        nanosleep(&pause, NULL);
    }
    double took = (double)kapi_time_mono_ns() / 1e6 - t0;
    if (got < 0 || (size_t)got < n) {
        fprintf(stderr, "kapi-bench: %ld of %zu Nodes allocated within %d ms\n", got, n,
                ALLOCATED_WAIT_MS);
        goto done;
    }
    fprintf(stderr, "kapi-bench: %zu Nodes allocated in %.2f s\n", n, took / 1e3);
    kapi_bench_report_add(r->report, "allocator", "Nodes/s allocated (create to Pod CIDRs)",
                          "allocator_nodes_per_s", (double)n / (took / 1e3), 0);
    if (cpu0 >= 0)
        kapi_bench_report_add(r->report, "allocator",
                              "server CPU per Node, created and allocated (us)", "allocator_cpu_us",
                              1e6 * (kapi_bench_run_cpu(r) - cpu0) / (double)n, 0);
    rc = 0;
done:
    clean_up(r);
    kapi_bench_batch_dispose(&b);
    kapi_buf_dispose(&body);
    kapi_buf_dispose(&answer);
    return rc;
}
