/*
 * memory: scenarios 6 and 7, memory and start, on a kapi of their own (fresh data dir) so
 * that nothing the other scenarios left behind is counted:
 *
 *   start on a new data dir (exec to /readyz ok)  -> start_empty_ms
 *   SIGTERM, start again, still empty              -> start_empty_again_ms
 *   one second idle, VmRSS                         -> rss_idle_mb
 *   memory_events Events created, VmRSS            -> rss_100k_mb, rss_per_json_byte
 *   kill -9 at once, start again                   -> start_100k_killed_ms (and a count)
 *   SIGTERM, start again                           -> start_100k_ms (and a count)
 *
 * rss_per_json_byte is the growth of RSS over the stored JSON: (RSS after - RSS idle)
 * divided by the bytes of the objects as the server answered the creates, which are the
 * bytes it stores. The counts after each restart check that every acknowledged create
 * survived (DESIGN.md invariant 4).
 */
#include "bench.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MEM_NS "kapi-bench-memory"

/* The number of Events in MEM_NS, from a list of one and its remainingItemCount. */
static long count_events(kapi_bench_client *cl)
{
    kapi_buf body;
    long n = -1;
    kapi_buf_init(&body);
    int status =
        kapi_bench_request(cl, "GET", "/apis/events.k8s.io/v1/namespaces/" MEM_NS "/events?limit=1",
                           NULL, NULL, &body);
    if (status != 200)
        fprintf(stderr, "kapi-bench: count Events: %d %.300s\n", status, body.ptr);
    if (status == 200) {
        json_t *doc = json_loadb(body.ptr, body.len, 0, NULL);
        json_t *meta = json_object_get(doc, "metadata");
        n = (long)json_array_size(json_object_get(doc, "items")) +
            (long)json_integer_value(json_object_get(meta, "remainingItemCount"));
        json_decref(doc);
    }
    kapi_buf_dispose(&body);
    return n;
}

static void sleep_s(int s)
{
    struct timespec ts = {.tv_sec = s};
    nanosleep(&ts, NULL);
}

/* Starts the server again and checks the Events are all there. */
static int restart(kapi_bench_run *r, kapi_bench_client *cl, size_t want, double *ms)
{
    kapi_buf err;
    kapi_buf_init(&err);
    int rc = kapi_bench_server_start(r->server, ms, &err);
    if (rc < 0)
        fprintf(stderr, "kapi-bench: restart: %s\n", err.ptr);
    long n = rc == 0 ? count_events(cl) : -1;
    if (rc == 0 && n != (long)want) {
        fprintf(stderr, "kapi-bench: after the restart %ld Events, want %zu\n", n, want);
        rc = -1;
    }
    kapi_buf_dispose(&err);
    return rc;
}

/* The figures, gathered first and reported together, memory before start. */
typedef struct figures {
    double start_new, start_again, start_killed, start_full;
    double rss_idle, rss_full, rss_restart, json_bytes, fill_per_s;
    size_t events;
} figures;

static int fill(kapi_bench_run *r, figures *f)
{
    kapi_bench_batch b;
    int rc = kapi_bench__create_events(r, MEM_NS, "m-", r->size.memory_events, &b);
    f->json_bytes = (double)b.body_bytes;
    f->events = b.ok;
    f->fill_per_s = (double)b.ok / b.seconds;
    kapi_bench_batch_dispose(&b);
    sleep_s(1);
    f->rss_full = (double)kapi_bench_server_rss(r->server);
    return rc;
}

static int run(kapi_bench_run *r, kapi_bench_client *cl, figures *f)
{
    size_t n = r->size.memory_events;
    kapi_bench_server_stop(r->server, SIGTERM);
    if (restart(r, cl, 0, &f->start_again) < 0)
        return -1;
    int status = kapi_bench_request(cl, "POST", "/api/v1/namespaces", "application/json",
                                    "{\"metadata\":{\"name\":\"" MEM_NS "\"}}", NULL);
    if (status != 201) {
        fprintf(stderr, "kapi-bench: create namespace " MEM_NS ": %d\n", status);
        return -1;
    }
    sleep_s(1);
    f->rss_idle = (double)kapi_bench_server_rss(r->server);
    if (fill(r, f) < 0)
        return -1;
    kapi_bench_server_stop(r->server, SIGKILL);
    if (restart(r, cl, n, &f->start_killed) < 0)
        return -1;
    kapi_bench_server_stop(r->server, SIGTERM);
    if (restart(r, cl, n, &f->start_full) < 0)
        return -1;
    sleep_s(1);
    f->rss_restart = (double)kapi_bench_server_rss(r->server);
    return 0;
}

static void report(kapi_bench_run *r, const figures *f)
{
    kapi_bench_report *rep = r->report;
    char fig[96];
    size_t n = r->size.memory_events;
    kapi_bench_report_add(rep, "memory", "RSS idle (MB)", "rss_idle_mb", f->rss_idle / 1e6, 1);
    snprintf(fig, sizeof(fig), "RSS after %zu Events (MB; %.1f MB of JSON)", f->events,
             f->json_bytes / 1e6);
    kapi_bench_report_add(rep, "memory", fig, "rss_100k_mb", f->rss_full / 1e6, 1);
    kapi_bench_report_add(rep, "memory", "RSS growth per byte of stored JSON", "rss_per_json_byte",
                          (f->rss_full - f->rss_idle) / f->json_bytes, 2);
    kapi_bench_report_add(rep, "memory", "RSS after a restart with them (MB)", "rss_restart_mb",
                          f->rss_restart / 1e6, 1);
    snprintf(fig, sizeof(fig), "Events created/s while filling (%zu)", n);
    kapi_bench_report_add(rep, "memory", fig, "fill_create_per_s", f->fill_per_s, 0);
    kapi_bench_report_add(rep, "start", "exec to /readyz ok, new data dir (ms)", "start_empty_ms",
                          f->start_new, 1);
    kapi_bench_report_add(rep, "start", "exec to /readyz ok, empty again (ms)",
                          "start_empty_again_ms", f->start_again, 1);
    snprintf(fig, sizeof(fig), "exec to /readyz ok, %zu Events (ms)", n);
    kapi_bench_report_add(rep, "start", fig, "start_100k_ms", f->start_full, 1);
    snprintf(fig, sizeof(fig), "the same after kill -9 (ms)");
    kapi_bench_report_add(rep, "start", fig, "start_100k_killed_ms", f->start_killed, 1);
}

int kapi_bench_scenario_memory_start(kapi_bench_run *r)
{
    kapi_bench_server s;
    kapi_bench_target t;
    kapi_bench_client *cl = NULL;
    kapi_bench_run sub = *r;
    kapi_buf err;
    figures f = {0};
    int rc = -1;
    kapi_buf_init(&err);
    kapi_bench_target_init(&t);
    if (kapi_bench_server_init(&s, r->kapi_bin, &err) < 0 ||
        kapi_bench_server_start(&s, &f.start_new, &err) < 0)
        goto done;
    char *kubeconfig = kapi_xprintf("%s/kubeconfig", s.data_dir);
    rc = kapi_bench_kubeconfig_load(&t, kubeconfig, NULL, &err);
    free(kubeconfig);
    if (rc < 0 || (rc = kapi_bench_client_new(&cl, &t, &err)) < 0)
        goto done;
    sub.client = cl;
    sub.server = &s;
    if ((rc = run(&sub, cl, &f)) == 0)
        report(&sub, &f);
done:
    if (err.len)
        fprintf(stderr, "kapi-bench: memory and start: %s\n", err.ptr);
    kapi_bench_client_free(cl);
    kapi_bench_server_dispose(&s);
    kapi_bench_target_dispose(&t);
    kapi_buf_dispose(&err);
    return rc;
}
