/*
 * cronjob: issue 20's figure for the cronjob controller. r->size.cronjobs_due CronJobs
 * (1,000 at full size) scheduled every minute are created, and the time is taken from
 * the next minute, when all of them are due, to the moment every one of their Jobs
 * exists, with the server's CPU over it. A kapi the harness starts reads the controllers'
 * clock from a file the harness writes (--controllers-clock-file): the scenario moves it
 * to a second before a minute instead of waiting; another server is waited for until the
 * next minute of the wall clock. They live in a namespace of their own (the run's name
 * with "-cron"), deleted after.
 */
#include "bench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#define LABEL "kapi-bench-cron"
#define DONE_WAIT_S 180

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

typedef struct cron_sender {
    kapi_buf path, body;
} cron_sender;

static void send_cronjob(kapi_bench_batch *b, kapi_bench_conn *c, size_t i)
{
    cron_sender *s = b->ctx;
    kapi_buf_clear(&s->body);
    kapi_buf_printf(&s->body,
                    "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":"
                    "\"due-%05zu\",\"labels\":{\"app.kubernetes.io/name\":\"" LABEL "\"}},"
                    "\"spec\":{\"schedule\":\"* * * * *\",\"startingDeadlineSeconds\":600,"
                    "\"jobTemplate\":{\"metadata\":{\"labels\":{\"app.kubernetes.io/name\":"
                    "\"" LABEL "\"}},\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":"
                    "\"main\",\"image\":\"busybox:1.36\"}],\"restartPolicy\":\"Never\"}}}}}}",
                    i);
    kapi_bench_conn_send(c, "POST", s->path.ptr, "application/json", s->body.ptr, s->body.len);
}

/* The Jobs in ns: a list of one and its remainingItemCount (which a list with a label
 * selector would not have). */
static long count_jobs(kapi_bench_run *r, const char *ns)
{
    char *path = kapi_xprintf("/apis/batch/v1/namespaces/%s/jobs?limit=1", ns);
    kapi_buf body;
    kapi_buf_init(&body);
    long n = -1;
    if (kapi_bench_request(r->client, "GET", path, NULL, NULL, &body) == 200) {
        json_t *doc = json_loadb(body.ptr, body.len, 0, NULL);
        n = (long)json_array_size(json_object_get(doc, "items")) +
            (long)json_integer_value(
                json_object_get(json_object_get(doc, "metadata"), "remainingItemCount"));
        json_decref(doc);
    }
    kapi_buf_dispose(&body);
    free(path);
    return n;
}

/* The wall-clock second at which the next minute begins for the controllers, the first
 * after the CronJobs were made (none may pass between): for a kapi of the harness, a
 * second from now (its clock moved there); else the wall clock's next minute. */
static double next_minute(kapi_bench_run *r)
{
    double now = (double)kapi_time_now_ns() / 1e9;
    if (!r->server) /* the first minute after the creates, however near */
        return (double)(((long long)now / 60 + 1) * 60);
    /* the first minute after now (so none passes between the creates and it), at least
     * a second away */
    long long target = ((long long)now / 60 + 1) * 60;
    if ((double)target - 1.0 < now)
        target += 60;
    double offset = (double)target - 1.0 - now; /* the controllers read target - 1 now */
    kapi_bench_server_set_clock(r->server, offset);
    return now + 1.0;
}

static void remove_all(kapi_bench_run *r, const char *ns)
{
    char *path = kapi_xprintf("/api/v1/namespaces/%s", ns);
    kapi_bench_request(r->client, "DELETE", path, NULL, NULL, NULL);
    free(path);
    if (r->server)
        kapi_bench_server_set_clock(r->server, 0);
}

int kapi_bench_scenario_cronjob(kapi_bench_run *r)
{
    size_t n = r->size.cronjobs_due;
    char *ns = kapi_xprintf("%s-cron", r->ns);
    char *ns_body = kapi_xprintf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
    int made_ns = kapi_bench_request(r->client, "POST", "/api/v1/namespaces", "application/json",
                                     ns_body, NULL);
    free(ns_body);
    if (made_ns != 201) {
        fprintf(stderr, "kapi-bench: cronjob: create namespace %s: %d\n", ns, made_ns);
        free(ns);
        return -1;
    }
    cron_sender s;
    kapi_buf_init(&s.path);
    kapi_buf_init(&s.body);
    kapi_buf_printf(&s.path, "/apis/batch/v1/namespaces/%s/cronjobs", ns);
    kapi_bench_batch b;
    kapi_bench_batch_init(&b);
    b.total = n;
    b.conns = r->size.conns;
    b.send = send_cronjob;
    b.ctx = &s;
    int rc = kapi_bench__run_batch(r, &b, "create CronJobs due every minute");
    kapi_bench_batch_dispose(&b);
    kapi_buf_dispose(&s.path);
    kapi_buf_dispose(&s.body);
    if (rc < 0) {
        remove_all(r, ns);
        free(ns);
        return -1;
    }
    double due = next_minute(r), wait = due - (double)kapi_time_now_ns() / 1e9;
    if (wait > 0)
        sleep_s(wait);
    double cpu0 = kapi_bench_run_cpu(r), done = -1;
    long made = 0;
    while ((double)kapi_time_now_ns() / 1e9 - due < DONE_WAIT_S) {
        if ((made = count_jobs(r, ns)) >= (long)n) {
            done = (double)kapi_time_now_ns() / 1e9;
            break;
        }
        sleep_s(0.05);
    }
    double cpu = kapi_bench_run_cpu(r) - cpu0;
    if (done < 0) {
        fprintf(stderr, "kapi-bench: cronjob: %ld of %zu Jobs within %d s\n", made, n, DONE_WAIT_S);
        rc = -1;
    } else {
        char fig[96];
        snprintf(fig, sizeof(fig), "%zu CronJobs due in one minute: all their Jobs (ms)", n);
        kapi_bench_report_add(r->report, "cronjob", fig, "cronjob_all_jobs_ms", 1e3 * (done - due),
                              0);
        if (cpu0 >= 0)
            kapi_bench_report_add(r->report, "cronjob", "server CPU per Job created (us)",
                                  "cronjob_cpu_us", 1e6 * cpu / (double)n, 0);
        fprintf(stderr, "kapi-bench: cronjob: %zu Jobs %.0f ms after the minute\n", n,
                1e3 * (done - due));
    }
    remove_all(r, ns);
    free(ns);
    return rc;
}
