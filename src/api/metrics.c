/*
 * api/metrics: what the api layer counts, under kube-apiserver's names and labels
 * (endpoints/metrics, storage metrics), and GET /metrics, which serves them.
 *
 * Every label value comes from a bounded set: the reported verb from a table (anything
 * else is "other", as kube reports it), the group, version and resource of a served type
 * (a request that names none has them empty), a subresource only when the type has it,
 * a non-resource path only when it is one kapi serves (else ""), so that no client string
 * becomes a series.
 */
#include <string.h>

#include "api/api_int.h"
#include "metrics/metrics.h"

static kapi_metric requests = KAPI_METRIC_COUNTER_DEF(
    "apiserver_request_total",
    "Counter of apiserver requests broken out for each verb, dry run value, group, version, "
    "resource, scope, component, and HTTP response code.",
    "verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code",
    NULL);
static kapi_metric terminations = KAPI_METRIC_COUNTER_DEF(
    "apiserver_request_terminations_total",
    "Requests the server ended itself to protect itself (refused busy, or past a deadline).",
    "verb", "group", "version", "resource", "subresource", "scope", "component", "code", NULL);
static kapi_metric latency = KAPI_METRIC_HISTOGRAM_DEF(
    "apiserver_request_duration_seconds",
    "Response latency distribution in seconds for each verb, dry run value, group, version, "
    "resource, subresource, scope and component.",
    kapi_metrics_latency_buckets, "verb", "dry_run", "group", "version", "resource", "subresource",
    "scope", "component", NULL);
static kapi_metric sizes = KAPI_METRIC_HISTOGRAM_DEF(
    "apiserver_response_sizes",
    "Response size distribution in bytes for each group, version, verb, resource, subresource, "
    "scope and component.",
    kapi_metrics_size_buckets, "verb", "group", "version", "resource", "subresource", "scope",
    "component", NULL);
static kapi_metric longrunning = KAPI_METRIC_GAUGE_DEF(
    "apiserver_longrunning_requests",
    "Gauge of all active long-running apiserver requests broken out by verb, group, version, "
    "resource, scope and component. Not all requests are tracked this way.",
    "verb", "group", "version", "resource", "subresource", "scope", "component", NULL);
static kapi_metric watchers =
    KAPI_METRIC_GAUGE_DEF("apiserver_registered_watchers",
                          "Number of currently registered watchers for a given resources", "group",
                          "version", "kind", NULL);
static kapi_metric watch_events = KAPI_METRIC_COUNTER_DEF("apiserver_watch_events_total",
                                                          "Number of events sent in watch clients",
                                                          "group", "version", "kind", NULL);
static kapi_metric objects = KAPI_METRIC_GAUGE_DEF(
    "apiserver_storage_objects",
    "Number of stored objects at the time of last check split by kind.", "resource", NULL);

/* The HTTP methods kube reports by name (any other is "other"). */
static const struct {
    const char *method, *verb;
} verbs[] = {{"GET", "GET"},     {"HEAD", "GET"},      {"POST", "POST"},      {"PUT", "PUT"},
             {"PATCH", "PATCH"}, {"DELETE", "DELETE"}, {"CONNECT", "CONNECT"}};

/* The non-resource paths kapi serves, reported as their subresource (kube's healthz
 * handlers report their path there). */
static const char *const paths[] = {"/healthz", "/livez", "/readyz", "/version",     "/metrics",
                                    "/openapi", "/api",   "/apis",   "/.well-known", "/openid"};

/* The verb kube reports (CanonicalVerb, cleanVerb). It reads the request's method and
 * Content-Type, so it is taken as the request is answered, while they are still valid. */
static const char *reported_verb(const kapi_req *r, const char *scope)
{
    const char *v = "other";
    for (size_t i = 0; i < KAPI_ARRAY_LEN(verbs); i++)
        if (strcmp(r->http->method, verbs[i].method) == 0)
            v = verbs[i].verb;
    if (strcmp(v, "GET") == 0 && *scope && strcmp(scope, "resource") != 0)
        v = "LIST";
    if (r->info.is_resource && r->info.verb && strcmp(r->info.verb, "watch") == 0)
        v = "WATCH";
    const char *ct = kapi_http_header_get(r->http, "content-type");
    if (strcmp(v, "PATCH") == 0 && ct && strcmp(ct, "application/apply-patch+yaml") == 0)
        v = "APPLY";
    return v;
}

/* kube's CleanScope. */
static const char *scope_of(const kapi_req *r)
{
    if (!r->info.is_resource)
        return "";
    if (r->info.name.len || (r->info.verb && strcmp(r->info.verb, "create") == 0))
        return "resource";
    return r->info.ns.len ? "namespace" : "cluster";
}

static const char *dry_run_of(const kapi_req *r)
{
    const char *d = kapi_api__query(r, "dryRun");
    return !d ? "" : strcmp(d, "All") == 0 ? "All" : "invalid";
}

/* The first path segment of a served non-resource path, or "". */
static const char *path_of(const kapi_req *r)
{
    const char *p = r->path ? r->path : "";
    size_t n = strcspn(p + (*p == '/'), "/") + (*p == '/');
    for (size_t i = 0; i < KAPI_ARRAY_LEN(paths); i++)
        if (strlen(paths[i]) == n && strncmp(p, paths[i], n) == 0)
            return paths[i];
    return "";
}

/* Labels of a request: verb, group, version, resource, subresource, scope. */
typedef struct labels {
    const char *verb, *group, *version, *resource, *subresource, *scope;
} labels;

static labels labels_of(const kapi_req *r)
{
    labels l = {.group = "", .version = "", .resource = "", .subresource = ""};
    const kapi_type *t = r->type;
    l.scope = scope_of(r);
    l.verb = r->reported_verb;
    if (t && r->info.is_resource) {
        l.group = t->group;
        l.version = t->version;
        l.resource = t->plural;
        if (r->info.subresource && kapi_type_subresource(t, kapi_str_c(r->info.subresource)))
            l.subresource = r->info.subresource;
    } else if (!r->info.is_resource) {
        l.subresource = path_of(r);
    }
    return l;
}

void kapi_api__metrics_answer(kapi_req *r, int status)
{
    r->status = status;
    r->reported_verb = reported_verb(r, scope_of(r));
}

/* The code label: an answer's HTTP status in decimal, without snprintf's cost on every
 * request. */
static const char *code_label(char buf[24], int status)
{
    buf[23] = '\0';
    return kapi_decimal(buf + 23, status);
}

void kapi_api__metrics_request(const kapi_req *r)
{
    if (!r->status)
        return;
    labels l = labels_of(r);
    const char *dry = dry_run_of(r);
    char buf[24];
    const char *code = code_label(buf, r->status);
    kapi_metrics_inc(&requests, (const char *[]){l.verb, dry, l.group, l.version, l.resource,
                                                 l.subresource, l.scope, "apiserver", code});
    double seconds = (double)(kapi_time_mono_ns() - r->start_ns) / 1e9;
    kapi_metrics_observe(&latency,
                         (const char *[]){l.verb, dry, l.group, l.version, l.resource,
                                          l.subresource, l.scope, "apiserver"},
                         seconds);
    /* kube observes the sizes of reads only; kapi those it sent whole (not a streamed list) */
    if (!r->streamed && (strcmp(l.verb, "GET") == 0 || strcmp(l.verb, "LIST") == 0))
        kapi_metrics_observe(&sizes,
                             (const char *[]){l.verb, l.group, l.version, l.resource, l.subresource,
                                              l.scope, "apiserver"},
                             (double)r->resp_bytes);
}

void kapi_api__metrics_refused(const kapi_req *r)
{
    labels l = labels_of(r);
    char buf[24];
    const char *code = code_label(buf, r->status);
    if (r->status == 429) /* kube's RecordDroppedRequest; a 504's handler counts its own */
        kapi_metrics_inc(&requests,
                         (const char *[]){l.verb, dry_run_of(r), l.group, l.version, l.resource,
                                          l.subresource, l.scope, "apiserver", code});
    kapi_metrics_inc(&terminations, (const char *[]){l.verb, l.group, l.version, l.resource,
                                                     l.subresource, l.scope, "apiserver", code});
}

kapi_metric_series *kapi_api__metrics_watch(const kapi_type *t, const char *scope, int delta)
{
    kapi_metrics_gauge_add(&watchers, (const char *[]){t->group, t->version, t->kind}, delta);
    kapi_metrics_gauge_add(
        &longrunning,
        (const char *[]){"WATCH", t->group, t->version, t->plural, "", scope, "apiserver"}, delta);
    return kapi_metrics_series(&watch_events, (const char *[]){t->group, t->version, t->kind});
}

/* Whether an earlier type of the registry is stored under t's prefix (another version). */
static bool seen_prefix(const kapi_registry *reg, size_t i)
{
    const kapi_type *t = kapi_registry_at(reg, i);
    for (size_t k = 0; k < i; k++) {
        const kapi_type *u = kapi_registry_at(reg, k);
        if (u->persisted && strcmp(u->storage_prefix, t->storage_prefix) == 0)
            return true;
    }
    return false;
}

/* apiserver_storage_objects: the keys under each built-in resource's prefix (one figure
 * per stored resource, "<resource>.<group>", whatever the versions that serve it), read
 * at scrape time. */
static void collect_objects(void *ctx)
{
    kapi_api *api = ctx;
    const kapi_registry *reg = api->registry;
    kapi_arena a;
    kapi_arena_init(&a);
    for (size_t i = 0; i < kapi_registry_count(reg); i++) {
        const kapi_type *t = kapi_registry_at(reg, i);
        if (!t->persisted || seen_prefix(reg, i))
            continue;
        kapi_store_list_opts q = {.prefix = kapi_type_key(&a, t, KAPI_STR(""), KAPI_STR("")),
                                  .limit = 1};
        kapi_store_list_result l = {0};
        if (kapi_store_list(api->store, &q, &l) == KAPI_STORE_OK) {
            const char *name =
                *t->storage_group
                    ? kapi_arena_printf(&a, "%s.%s", t->storage_resource, t->storage_group)
                    : t->storage_resource;
            kapi_metrics_set(&objects, (const char *[]){name}, (double)(l.n + l.remaining));
        }
        kapi_store_list_dispose(&l);
    }
    kapi_arena_dispose(&a);
}

void kapi_api__metrics_init(kapi_api *api)
{
    kapi_metrics_process_init();
    kapi_metrics_collector_add(collect_objects, api);
}

void kapi_api__metrics_dispose(kapi_api *api)
{
    kapi_metrics_collector_remove(collect_objects, api);
}

void kapi_api__serve_metrics(kapi_req *r)
{
    kapi_metrics_format f = kapi_metrics_negotiate(kapi_http_header_get(r->http, "accept"));
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_metrics_write(&b, f);
    size_t len;
    char *p = kapi_buf_detach(&b, &len);
    kapi_http_chunk c = kapi_http_chunk_take(p, len);
    kapi_api__send(r, 200, kapi_metrics_content_type(f), &c, 1);
}
