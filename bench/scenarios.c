/*
 * scenarios: create, get, update and list (issue 6, scenarios 1 to 4), server-side apply
 * (issue 14), the get scenario in protobuf, over HTTP/2 and as a user whom RBAC lets
 * read (issue 16), and what every scenario shares: the sizes, the objects' bodies,
 * creating them in bulk.
 *
 * Objects live in the run's namespace: Events e-NNNNNNN (scenario 1), CronJobs cj-NNNNN
 * (made once, as many as the largest scenario that needs them, and reused). CronJobs are
 * created suspended, so that a real cluster's controller starts no Jobs for them. get-rbac
 * adds a Role and RoleBindings there, and ClusterRoleBindings named after it.
 */
#include "bench.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <uv.h>

#define EVENT_BYTES 600

/* The full sizes of issue 6; --scale multiplies the counts, never below the minimum. At
 * least twice as many CronJobs as connections: patches in flight then touch different
 * objects, as at full size, instead of racing for a few. */
typedef struct size_rule {
    size_t offset, full, min;
} size_rule;

#define RULE(field, full, min)                                                                     \
    {                                                                                              \
        offsetof(kapi_bench_sizes, field), full, min                                               \
    }
static const size_rule size_rules[] = {
    RULE(creates, 20000, 50), RULE(gets, 100000, 100),      RULE(get_objects, 1000, 64),
    RULE(patches, 10000, 50), RULE(applies, 10000, 50),     RULE(list_objects, 10000, 20),
    RULE(watchers, 1000, 5),  RULE(watch_writes, 1000, 10), RULE(memory_events, 100000, 200),
    RULE(crds, 200, 5),       RULE(cronjobs_due, 1000, 10), RULE(nodes, 5000, 20),
};
#undef RULE

void kapi_bench_sizes_scale(kapi_bench_sizes *out, double scale)
{
    *out = (kapi_bench_sizes){.list_runs = 5, .watch_rate = 500, .conns = 32, .h2_streams = 8};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(size_rules); i++) {
        const size_rule *r = &size_rules[i];
        size_t n = (size_t)llround((double)r->full * scale);
        *(size_t *)((char *)out + r->offset) = n < r->min ? r->min : n;
    }
    /* Pages of 500 as the issue says; a small list still gets four pages. */
    out->list_page = out->list_objects >= 1000 ? 500 : out->list_objects / 4;
}

/* ---- bodies ---- */

void kapi_bench__event_body(kapi_buf *out, const char *ns, const char *name, size_t i)
{
    size_t start = out->len;
    kapi_buf_printf(out,
                    "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\","
                    "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
                    "\"labels\":{\"app.kubernetes.io/name\":\"kapi-bench\"}},"
                    "\"eventTime\":\"2024-05-01T12:00:00.000000Z\","
                    "\"reportingController\":\"kapi.dev/bench\","
                    "\"reportingInstance\":\"kapi-bench-1\",\"action\":\"Measure\","
                    "\"reason\":\"Benchmark\",\"type\":\"Normal\","
                    "\"regarding\":{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\","
                    "\"namespace\":\"%s\",\"name\":\"cj-%05zu\"},\"note\":\"event %zu: ",
                    name, ns, ns, i % 1000, i);
    size_t at = out->len - start;
    if (at < EVENT_BYTES - 2) {
        kapi_buf_grow(out, EVENT_BYTES - 2 - at);
        for (; at < EVENT_BYTES - 2; at++)
            out->ptr[out->len++] = (char)('a' + at % 26);
    }
    kapi_buf_puts(out, "\"}");
}

static void cronjob_body(kapi_buf *out, size_t i)
{
    kapi_buf_printf(out,
                    "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\","
                    "\"metadata\":{\"name\":\"cj-%05zu\","
                    "\"labels\":{\"app.kubernetes.io/name\":\"kapi-bench\"}},"
                    "\"spec\":{\"schedule\":\"*/5 * * * *\",\"suspend\":true,"
                    "\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
                    "\"containers\":[{\"name\":\"main\",\"image\":\"busybox:1.36\","
                    "\"command\":[\"sh\",\"-c\",\"date\"]}],"
                    "\"restartPolicy\":\"OnFailure\"}}}}}}",
                    i);
}

/* ---- batches ---- */

/* What the senders of the scenarios need. */
typedef struct sender {
    kapi_bench_run *r;
    const char *ns, *prefix;
    size_t offset, modulo;
    kapi_buf path, body;
} sender;

static void sender_init(sender *s, kapi_bench_run *r, const char *ns)
{
    *s = (sender){.r = r, .ns = ns};
    kapi_buf_init(&s->path);
    kapi_buf_init(&s->body);
}

static void sender_dispose(sender *s)
{
    kapi_buf_dispose(&s->path);
    kapi_buf_dispose(&s->body);
}

int kapi_bench__batch_check(const char *what, kapi_bench_batch *b)
{
    if (b->errors == 0 && b->ok == b->total)
        return 0;
    fprintf(stderr, "kapi-bench: %s: %zu of %zu failed; the first: %d %.*s\n", what,
            b->total - b->ok, b->total, b->first_error_status,
            (int)(b->first_error.len < 400 ? b->first_error.len : 400), b->first_error.ptr);
    return -1;
}

/* CPU seconds this process has used. */
static double self_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Runs a batch and says how long it took and what CPU the server and the harness used:
 * on shared cores, that tells which of them bounds the figure. */
int kapi_bench__run_batch(kapi_bench_run *r, kapi_bench_batch *b, const char *what)
{
    double cpu0 = kapi_bench_run_cpu(r), self0 = self_cpu();
    int rc = kapi_bench_batch_run(r->client, b);
    fprintf(stderr, "kapi-bench: %s: %zu in %.2f s, harness %.0f%% CPU", what, b->ok, b->seconds,
            100 * (self_cpu() - self0) / b->seconds);
    if (cpu0 >= 0) { /* over very short batches, clock ticks make these rough */
        b->server_cpu = kapi_bench_run_cpu(r) - cpu0;
        fprintf(stderr, ", kapi %.0f%% CPU (%.0f us per request)", 100 * b->server_cpu / b->seconds,
                1e6 * b->server_cpu / (double)b->total);
    }
    fputc('\n', stderr);
    if (rc < 0)
        fprintf(stderr, "kapi-bench: %s: did not finish\n", what);
    return kapi_bench__batch_check(what, b) < 0 ? -1 : rc;
}

static void send_event(kapi_bench_batch *b, kapi_bench_conn *c, size_t i)
{
    sender *s = b->ctx;
    char name[32];
    snprintf(name, sizeof(name), "%s%07zu", s->prefix, s->offset + i);
    kapi_buf_clear(&s->body);
    kapi_bench__event_body(&s->body, s->ns, name, s->offset + i);
    kapi_bench_conn_send(c, "POST", s->path.ptr, "application/json", s->body.ptr, s->body.len);
}

int kapi_bench__create_events(kapi_bench_run *r, const char *ns, const char *prefix, size_t n,
                              kapi_bench_batch *b)
{
    sender s;
    sender_init(&s, r, ns);
    s.prefix = prefix;
    kapi_buf_printf(&s.path, "/apis/events.k8s.io/v1/namespaces/%s/events", ns);
    kapi_bench_batch_init(b);
    b->total = n;
    b->conns = r->size.conns;
    b->send = send_event;
    b->ctx = &s;
    int rc = kapi_bench__run_batch(r, b, "create Events");
    sender_dispose(&s);
    return rc;
}

static void send_cronjob(kapi_bench_batch *b, kapi_bench_conn *c, size_t i)
{
    sender *s = b->ctx;
    kapi_buf_clear(&s->body);
    cronjob_body(&s->body, s->offset + i);
    kapi_bench_conn_send(c, "POST", s->path.ptr, "application/json", s->body.ptr, s->body.len);
}

/* Makes sure CronJobs cj-00000 .. cj-<n-1> exist. */
static int ensure_cronjobs(kapi_bench_run *r, size_t n)
{
    if (r->cronjobs >= n)
        return 0;
    sender s;
    kapi_bench_batch b;
    sender_init(&s, r, r->ns);
    s.offset = r->cronjobs;
    kapi_buf_printf(&s.path, "/apis/batch/v1/namespaces/%s/cronjobs", r->ns);
    kapi_bench_batch_init(&b);
    b.total = n - r->cronjobs;
    b.conns = r->size.conns;
    b.send = send_cronjob;
    b.ctx = &s;
    int rc = kapi_bench__run_batch(r, &b, "create CronJobs");
    if (rc == 0)
        r->cronjobs = n;
    kapi_bench_batch_dispose(&b);
    sender_dispose(&s);
    return rc;
}

/* Adds the throughput and latency figures of a batch and, when the harness runs the server,
 * the server's CPU per request: on cores shared with the harness and anything else, that
 * is the figure that does not move, and 2 cores / it is the most the server could do. */
void kapi_bench__add_rates(kapi_bench_run *r, kapi_bench_batch *b, const char *scenario,
                           const char *what, const char *keys[4])
{
    char fig[96];
    if (b->h2_streams)
        snprintf(fig, sizeof(fig), "%s/s (%zu as %zu streams on %zu h2 connection%s)", what,
                 b->total, b->conns, b->tls_conns, b->tls_conns == 1 ? "" : "s");
    else
        snprintf(fig, sizeof(fig), "%s/s (%zu over %zu connections)", what, b->total, b->conns);
    kapi_bench_report_add(r->report, scenario, fig, keys[0], (double)b->ok / b->seconds, 0);
    kapi_bench_report_add(r->report, scenario, "p50 latency (ms)", keys[1],
                          kapi_bench_samples_percentile_ms(&b->latency, 50), 2);
    kapi_bench_report_add(r->report, scenario, "p99 latency (ms)", keys[2],
                          kapi_bench_samples_percentile_ms(&b->latency, 99), 2);
    if (r->server || r->ncpu_pids)
        kapi_bench_report_add(r->report, scenario,
                              r->ncpu_pids ? "server CPU per request (us)"
                                           : "kapi CPU per request (us)",
                              keys[3], 1e6 * b->server_cpu / (double)b->total, 0);
}

/* ---- 1. create ---- */

int kapi_bench_scenario_create(kapi_bench_run *r)
{
    static const char *keys[4] = {"create_per_s", "create_p50_ms", "create_p99_ms",
                                  "create_cpu_us"};
    kapi_bench_batch b;
    int rc = kapi_bench__create_events(r, r->ns, "e-", r->size.creates, &b);
    r->events += b.ok;
    kapi_bench__add_rates(r, &b, "create", "Events created", keys);
    kapi_bench_batch_dispose(&b);
    return rc;
}

/* ---- 2. get ---- */

static void send_get(kapi_bench_batch *b, kapi_bench_conn *c, size_t i)
{
    sender *s = b->ctx;
    kapi_buf_clear(&s->path);
    kapi_buf_printf(&s->path, "/apis/batch/v1/namespaces/%s/cronjobs/cj-%05zu", s->ns,
                    i % s->modulo);
    kapi_bench_conn_send(c, "GET", s->path.ptr, NULL, NULL, 0);
}

/* Sends total requests spread over the scenario's CronJobs (send picks the request) and
 * adds the scenario's rates, named what over the CronJobs; h2_streams as in the batch. */
static int run_over_cronjobs(kapi_bench_run *r, size_t total, size_t h2_streams,
                             void (*send)(kapi_bench_batch *, kapi_bench_conn *, size_t),
                             const char *label, const char *scenario, const char *what,
                             const char *keys[4])
{
    if (ensure_cronjobs(r, r->size.get_objects) < 0)
        return -1;
    sender s;
    kapi_bench_batch b;
    sender_init(&s, r, r->ns);
    s.modulo = r->size.get_objects;
    kapi_bench_batch_init(&b);
    b.total = total;
    b.conns = r->size.conns;
    b.h2_streams = h2_streams;
    b.send = send;
    b.ctx = &s;
    int rc = kapi_bench__run_batch(r, &b, label);
    char figure[64];
    snprintf(figure, sizeof(figure), "%s of %zu CronJobs", what, s.modulo);
    kapi_bench__add_rates(r, &b, scenario, figure, keys);
    kapi_bench_batch_dispose(&b);
    sender_dispose(&s);
    return rc;
}

int kapi_bench_scenario_get(kapi_bench_run *r)
{
    static const char *keys[4] = {"get_per_s", "get_p50_ms", "get_p99_ms", "get_cpu_us"};
    return run_over_cronjobs(r, r->size.gets, 0, send_get, "get CronJobs", "get", "gets", keys);
}

/* ---- get with /metrics scraped (issue 21) ---- */

/* One connection that GETs /metrics every second, as Prometheus scrapes, skipping a tick
 * while a scrape is still being answered. */
typedef struct scraper {
    kapi_bench_conn *conn;
    uv_timer_t timer;
    bool idle, dead;
    size_t scrapes, failures;
} scraper;

static void scrape_done(kapi_bench_conn *c, int status, kapi_str body, uint64_t latency_ns)
{
    (void)body;
    (void)latency_ns;
    scraper *s = kapi_bench_conn_data(c);
    s->idle = true;
    if (status == 200)
        s->scrapes++;
    else
        s->failures++;
}

static void scrape_failed(kapi_bench_conn *c, const char *why)
{
    scraper *s = kapi_bench_conn_data(c);
    fprintf(stderr, "kapi-bench: the /metrics scraper's connection failed: %s\n", why);
    s->failures++;
    s->dead = s->idle = true;
}

static void scrape_tick(uv_timer_t *t)
{
    scraper *s = t->data;
    if (!s->idle || s->dead)
        return;
    s->idle = false;
    kapi_bench_conn_send(s->conn, "GET", "/metrics", NULL, NULL, 0);
}

/* The get scenario while /metrics is scraped every second; its CPU per request against the
 * get scenario's of the same run, when that ran (the target: within +5 %). */
int kapi_bench_scenario_get_metrics(kapi_bench_run *r)
{
    static const char *keys[4] = {"get_metrics_per_s", "get_metrics_p50_ms", "get_metrics_p99_ms",
                                  "get_metrics_cpu_us"};
    static const kapi_bench_conn_cb cb = {.done = scrape_done, .failed = scrape_failed};
    scraper s = {.idle = true};
    if (kapi_bench_conns_open(r->client, &s.conn, 1, &cb, &s) < 0)
        return -1;
    uv_timer_init(kapi_bench_client_loop(r->client), &s.timer);
    s.timer.data = &s;
    uv_timer_start(&s.timer, scrape_tick, 0, 1000);
    int rc = run_over_cronjobs(r, r->size.gets, 0, send_get, "get CronJobs, /metrics scraped",
                               "get-metrics", "gets", keys);
    uv_timer_stop(&s.timer);
    uv_close((uv_handle_t *)&s.timer, NULL);
    kapi_bench_client_run_until(r->client, &s.idle, 10000);
    kapi_bench_conn_close(s.conn);
    kapi_bench_client_sleep(r->client, 0); /* let the closes complete */
    kapi_bench_report_add(r->report, "get-metrics", "/metrics scrapes meanwhile",
                          "get_metrics_scrapes", (double)s.scrapes, 0);
    double with, without;
    if (kapi_bench_report_get(r->report, "get_metrics_cpu_us", &with) &&
        kapi_bench_report_get(r->report, "get_cpu_us", &without) && without > 0)
        kapi_bench_report_add(r->report, "get-metrics", "CPU per get vs the get scenario (%)",
                              "get_metrics_cpu_pct", 100 * (with - without) / without, 1);
    if (s.failures) {
        fprintf(stderr, "kapi-bench: %zu /metrics scrapes failed\n", s.failures);
        rc = -1;
    }
    return rc;
}

/* The get scenario's requests over HTTP/2, as client-go sends them: the same number in
 * flight, as streams multiplexed on a few connections (size.h2_streams to one). */
int kapi_bench_scenario_get_h2(kapi_bench_run *r)
{
    static const char *keys[4] = {"get_h2_per_s", "get_h2_p50_ms", "get_h2_p99_ms",
                                  "get_h2_cpu_us"};
    return run_over_cronjobs(r, r->size.gets, r->size.h2_streams, send_get, "get CronJobs over h2",
                             "get-h2", "gets", keys);
}

/* ---- get as a user whom RBAC lets read ---- */

#define RBAC_API "/apis/rbac.authorization.k8s.io/v1"
#define READER_ROLE "kapi-bench-cronjob-reader"
#define OTHER_BINDINGS 24 /* RoleBindings, and as many ClusterRoleBindings, of others */
#define GRANT_WAIT_MS 10000

/* A binding of one subject to one role. */
typedef struct rbac_binding {
    bool cluster; /* a ClusterRoleBinding, else a RoleBinding in the run's namespace */
    const char *subject_kind, *subject, *role_kind, *role;
} rbac_binding;

/* POSTs one object as the admin; -1 unless it was created. */
static int create_object(kapi_bench_run *r, const char *path, const char *body)
{
    kapi_buf answer;
    kapi_buf_init(&answer);
    int status = kapi_bench_request(r->client, "POST", path, "application/json", body, &answer);
    if (status != 201)
        fprintf(stderr, "kapi-bench: POST %s: %d %.300s\n", path, status, answer.ptr);
    kapi_buf_dispose(&answer);
    return status == 201 ? 0 : -1;
}

/* Creates b, named name, as the admin. */
static int create_binding(kapi_bench_run *r, const char *name, const rbac_binding *b)
{
    kapi_buf path, body;
    kapi_buf_init(&path);
    kapi_buf_init(&body);
    if (b->cluster)
        kapi_buf_puts(&path, RBAC_API "/clusterrolebindings");
    else
        kapi_buf_printf(&path, RBAC_API "/namespaces/%s/rolebindings", r->ns);
    kapi_buf_printf(&body,
                    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"%s\","
                    "\"metadata\":{\"name\":\"%s\"},"
                    "\"subjects\":[{\"kind\":\"%s\",\"apiGroup\":\"rbac.authorization.k8s.io\","
                    "\"name\":\"%s\"}],"
                    "\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"%s\","
                    "\"name\":\"%s\"}}",
                    b->cluster ? "ClusterRoleBinding" : "RoleBinding", name, b->subject_kind,
                    b->subject, b->role_kind, b->role);
    int rc = create_object(r, path.ptr, body.ptr);
    kapi_buf_dispose(&path);
    kapi_buf_dispose(&body);
    return rc;
}

/* Bindings of other users and groups, as a cluster in use holds them: the i-th binds
 * user-NN or group-NN, in turn, to one of these roles. */
static const struct {
    const char *kind, *name;
} other_roles[] = {{"Role", READER_ROLE}, {"ClusterRole", "view"}, {"ClusterRole", "edit"}};

static int create_other_bindings(kapi_bench_run *r, bool cluster)
{
    char name[96], subject[32];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < OTHER_BINDINGS; i++) {
        /* A ClusterRoleBinding cannot name a Role: the cluster ones skip it. */
        size_t k =
            cluster ? 1 + i % (KAPI_ARRAY_LEN(other_roles) - 1) : i % KAPI_ARRAY_LEN(other_roles);
        snprintf(subject, sizeof(subject), "%s-%02zu", i % 2 ? "group" : "user", i);
        snprintf(name, sizeof(name), "%s-other-%02zu", r->ns, i);
        rbac_binding b = {cluster, i % 2 ? "Group" : "User", subject, other_roles[k].kind,
                          other_roles[k].name};
        rc = create_binding(r, name, &b);
    }
    return rc;
}

/* Lets KAPI_BENCH_READER get, list and watch the run's CronJobs, through a Role and a
 * RoleBinding made after the bindings of others. */
static int grant_reader(kapi_bench_run *r)
{
    static const rbac_binding reader = {false, "User", KAPI_BENCH_READER, "Role", READER_ROLE};
    char *path = kapi_xprintf(RBAC_API "/namespaces/%s/roles", r->ns);
    int rc = create_object(r, path,
                           "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\","
                           "\"metadata\":{\"name\":\"" READER_ROLE "\"},"
                           "\"rules\":[{\"apiGroups\":[\"batch\"],\"resources\":[\"cronjobs\"],"
                           "\"verbs\":[\"get\",\"list\",\"watch\"]}]}");
    free(path);
    if (rc < 0 || create_other_bindings(r, false) < 0 || create_other_bindings(r, true) < 0)
        return -1;
    return create_binding(r, KAPI_BENCH_READER, &reader);
}

/* One GET of cj-00000 in ns on cl: the status. */
static int get_first_cronjob(kapi_bench_client *cl, const char *ns)
{
    char *path = kapi_xprintf("/apis/batch/v1/namespaces/%s/cronjobs/cj-00000", ns);
    int status = kapi_bench_request(cl, "GET", path, NULL, NULL, NULL);
    free(path);
    return status;
}

/* Fails unless the reader may get a CronJob of the run's namespace and not one of another.
 * A new binding takes effect a moment after it is written (kube-apiserver's RBAC reads an
 * informer's cache), so a 403 is retried for a while first. */
static int check_reader(kapi_bench_run *r, kapi_bench_client *reader)
{
    int status = get_first_cronjob(reader, r->ns);
    for (int waited = 0; status == 403 && waited < GRANT_WAIT_MS; waited += 100) {
        kapi_bench_client_sleep(reader, 100);
        status = get_first_cronjob(reader, r->ns);
    }
    if (status != 200) {
        fprintf(stderr, "kapi-bench: GET a CronJob in %s as %s: %d, want 200\n", r->ns,
                KAPI_BENCH_READER, status);
        return -1;
    }
    status = get_first_cronjob(reader, r->watch_ns);
    if (status != 403) {
        fprintf(stderr, "kapi-bench: GET a CronJob in %s as %s: %d, want 403\n", r->watch_ns,
                KAPI_BENCH_READER, status);
        return -1;
    }
    return 0;
}

int kapi_bench_scenario_get_rbac(kapi_bench_run *r)
{
    static const char *keys[4] = {"get_rbac_per_s", "get_rbac_p50_ms", "get_rbac_p99_ms",
                                  "get_rbac_cpu_us"};
    kapi_bench_client *admin = r->client, *reader = NULL;
    kapi_bench_target as = *r->target; /* the admin's, strings borrowed, but for the token */
    kapi_buf err;
    int rc = -1;
    kapi_buf_init(&err);
    as.token = r->server->reader_token;
    if (ensure_cronjobs(r, r->size.get_objects) < 0 || grant_reader(r) < 0)
        goto done;
    if (kapi_bench_client_new(&reader, &as, &err) < 0) {
        fprintf(stderr, "kapi-bench: %s\n", err.ptr);
        goto done;
    }
    if (check_reader(r, reader) < 0)
        goto done;
    r->client = reader; /* the batch's connections are the reader's */
    rc = run_over_cronjobs(r, r->size.gets, 0, send_get, "get CronJobs as " KAPI_BENCH_READER,
                           "get-rbac", "gets", keys);
    r->client = admin;
done:
    kapi_bench_client_free(reader);
    kapi_buf_dispose(&err);
    return rc;
}

/* The get scenario's requests with Accept protobuf, as client-go's typed clients send
 * them: the same objects, answered in Kubernetes' protobuf envelope. */
static void send_get_protobuf(kapi_bench_batch *b, kapi_bench_conn *c, size_t i)
{
    kapi_bench_conn_accept(c, "application/vnd.kubernetes.protobuf");
    send_get(b, c, i);
}

int kapi_bench_scenario_get_protobuf(kapi_bench_run *r)
{
    static const char *keys[4] = {"get_pb_per_s", "get_pb_p50_ms", "get_pb_p99_ms",
                                  "get_pb_cpu_us"};
    return run_over_cronjobs(r, r->size.gets, 0, send_get_protobuf, "get CronJobs in protobuf",
                             "get-pb", "protobuf gets", keys);
}

/* ---- 3. update ---- */

static void send_patch(kapi_bench_batch *b, kapi_bench_conn *c, size_t i)
{
    sender *s = b->ctx;
    kapi_buf_clear(&s->path);
    kapi_buf_clear(&s->body);
    kapi_buf_printf(&s->path, "/apis/batch/v1/namespaces/%s/cronjobs/cj-%05zu", s->ns,
                    i % s->modulo);
    kapi_buf_printf(&s->body, "{\"metadata\":{\"annotations\":{\"kapi.dev/bench\":\"%zu\"}}}", i);
    kapi_bench_conn_send(c, "PATCH", s->path.ptr, "application/merge-patch+json", s->body.ptr,
                         s->body.len);
}

int kapi_bench_scenario_update(kapi_bench_run *r)
{
    static const char *keys[4] = {"patch_per_s", "patch_p50_ms", "patch_p99_ms", "patch_cpu_us"};
    return run_over_cronjobs(r, r->size.patches, 0, send_patch, "merge-patch CronJobs", "update",
                             "merge patches", keys);
}

/* ---- server-side apply ---- */

/* A CronJob's whole configuration, as `kubectl apply --server-side` sends it (JSON is
 * YAML), its annotation changed each time so that every apply writes. */
static void send_apply(kapi_bench_batch *b, kapi_bench_conn *c, size_t i)
{
    sender *s = b->ctx;
    size_t n = i % s->modulo;
    kapi_buf_clear(&s->path);
    kapi_buf_clear(&s->body);
    kapi_buf_printf(&s->path,
                    "/apis/batch/v1/namespaces/%s/cronjobs/cj-%05zu?fieldManager=kapi-bench-apply",
                    s->ns, n);
    kapi_buf_printf(&s->body,
                    "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\","
                    "\"metadata\":{\"name\":\"cj-%05zu\","
                    "\"labels\":{\"app.kubernetes.io/name\":\"kapi-bench\"},"
                    "\"annotations\":{\"kapi.dev/applied\":\"%zu\"}},"
                    "\"spec\":{\"schedule\":\"*/5 * * * *\",\"suspend\":true,"
                    "\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
                    "\"containers\":[{\"name\":\"main\",\"image\":\"busybox:1.36\","
                    "\"command\":[\"sh\",\"-c\",\"date\"]}],"
                    "\"restartPolicy\":\"OnFailure\"}}}}}}",
                    n, i);
    kapi_bench_conn_send(c, "PATCH", s->path.ptr, "application/apply-patch+yaml", s->body.ptr,
                         s->body.len);
}

int kapi_bench_scenario_apply(kapi_bench_run *r)
{
    static const char *keys[4] = {"apply_per_s", "apply_p50_ms", "apply_p99_ms", "apply_cpu_us"};
    return run_over_cronjobs(r, r->size.applies, 0, send_apply, "apply CronJobs", "apply",
                             "server-side applies", keys);
}

/* ---- 4. list ---- */

/* The number of items of a list answer and its continue token (heap, NULL when none);
 * -1 when it is not a list. */
static long list_items(kapi_str body, char **cont)
{
    json_t *doc = json_loadb(body.ptr, body.len, 0, NULL);
    json_t *items = json_object_get(doc, "items");
    const char *c =
        json_string_value(json_object_get(json_object_get(doc, "metadata"), "continue"));
    long n = json_is_array(items) ? (long)json_array_size(items) : -1;
    if (cont)
        *cont = c && *c ? kapi_xstrdup(c) : NULL;
    json_decref(doc);
    return n;
}

/* One list in pages on c: its time (the pages' latencies added) and bytes; -1 on error. */
static int list_paged(kapi_bench_run *r, kapi_bench_conn *c, uint64_t *ns, uint64_t *bytes)
{
    char *cont = NULL;
    size_t items = 0;
    int rc = 0;
    kapi_buf path, body;
    kapi_buf_init(&path);
    kapi_buf_init(&body);
    *ns = *bytes = 0;
    do {
        uint64_t lat = 0;
        kapi_buf_clear(&path);
        kapi_buf_clear(&body);
        kapi_buf_printf(&path, "/apis/batch/v1/namespaces/%s/cronjobs?limit=%zu%s%s", r->ns,
                        r->size.list_page, cont ? "&continue=" : "", cont ? cont : "");
        free(cont);
        cont = NULL;
        int status = kapi_bench_conn_roundtrip(c, "GET", path.ptr, NULL, NULL, &body, &lat);
        long n = status == 200 ? list_items((kapi_str){body.ptr, body.len}, &cont) : -1;
        if (n < 0) {
            fprintf(stderr, "kapi-bench: list page: %d %.300s\n", status, body.ptr);
            rc = -1;
            break;
        }
        items += (size_t)n;
        *ns += lat;
        *bytes += body.len;
    } while (cont);
    if (rc == 0 && items != r->cronjobs) {
        fprintf(stderr, "kapi-bench: paged list: %zu items, want %zu\n", items, r->cronjobs);
        rc = -1;
    }
    free(cont);
    kapi_buf_dispose(&path);
    kapi_buf_dispose(&body);
    return rc;
}

/* Whole lists: the first (untimed) is checked and warms up, then list_runs timed ones. */
static int list_whole(kapi_bench_run *r, kapi_bench_conn *c, kapi_bench_samples *lat,
                      uint64_t *bytes)
{
    kapi_buf path, body;
    kapi_buf_init(&path);
    kapi_buf_init(&body);
    kapi_buf_printf(&path, "/apis/batch/v1/namespaces/%s/cronjobs", r->ns);
    int status = kapi_bench_conn_roundtrip(c, "GET", path.ptr, NULL, NULL, &body, NULL);
    long n = status == 200 ? list_items((kapi_str){body.ptr, body.len}, NULL) : -1;
    int rc = n == (long)r->cronjobs ? 0 : -1;
    if (rc < 0)
        fprintf(stderr, "kapi-bench: list: %d, %ld items, want %zu\n", status, n, r->cronjobs);
    *bytes = body.len;
    for (size_t i = 0; rc == 0 && i < r->size.list_runs; i++) {
        uint64_t ns = 0;
        if (kapi_bench_conn_roundtrip(c, "GET", path.ptr, NULL, NULL, NULL, &ns) != 200)
            rc = -1;
        kapi_bench_samples_add(lat, ns);
    }
    kapi_buf_dispose(&path);
    kapi_buf_dispose(&body);
    return rc;
}

int kapi_bench_scenario_list(kapi_bench_run *r)
{
    static const kapi_bench_conn_cb cb = {0};
    kapi_bench_conn *c = NULL;
    kapi_bench_samples whole, paged;
    uint64_t bytes = 0, page_bytes = 0;
    char fig[96];
    if (ensure_cronjobs(r, r->size.list_objects) < 0 ||
        kapi_bench_conns_open(r->client, &c, 1, &cb, NULL) < 0)
        return -1;
    kapi_bench_samples_init(&whole);
    kapi_bench_samples_init(&paged);
    int rc = list_whole(r, c, &whole, &bytes);
    for (size_t i = 0; rc == 0 && i < r->size.list_runs; i++) {
        uint64_t ns;
        rc = list_paged(r, c, &ns, &page_bytes);
        kapi_bench_samples_add(&paged, ns);
    }
    kapi_bench_conn_close(c);
    double ms = kapi_bench_samples_percentile_ms(&whole, 50);
    double pms = kapi_bench_samples_percentile_ms(&paged, 50);
    fprintf(stderr, "kapi-bench: list %zu CronJobs: %.1f ms whole, %.1f ms in pages\n", r->cronjobs,
            ms, pms);
    snprintf(fig, sizeof(fig), "ms per full list of %zu CronJobs (%.1f MB)", r->cronjobs,
             (double)bytes / 1e6);
    kapi_bench_report_add(r->report, "list", fig, "list_10k_ms", ms, 1);
    kapi_bench_report_add(r->report, "list", "MB/s, full list", "list_mb_per_s",
                          (double)bytes / 1e6 / (ms / 1e3), 0);
    snprintf(fig, sizeof(fig), "ms per full list in pages of %zu", r->size.list_page);
    kapi_bench_report_add(r->report, "list", fig, "list_paged_ms", pms, 1);
    kapi_bench_report_add(r->report, "list", "MB/s, in pages", "list_paged_mb_per_s",
                          (double)page_bytes / 1e6 / (pms / 1e3), 0);
    kapi_bench_samples_dispose(&whole);
    kapi_bench_samples_dispose(&paged);
    return rc;
}
