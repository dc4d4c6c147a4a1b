/*
 * api/handler: the one entry point of every request, and the routes that are not
 * resources (health, version, discovery, OpenAPI). Reads top to bottom.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "codec/go.h"
#include "log/log.h"

/* kube-apiserver's max-in-flight filter answers with this message; kapi sends it in a
 * Status, as apierrors.NewTooManyRequests builds one. */
static const kapi_http_header busy_headers[] = {{"Content-Type", "application/json"},
                                                {"Retry-After", "1"}};
const kapi_http_answer kapi_api_busy_answer = {
    429, busy_headers, KAPI_ARRAY_LEN(busy_headers),
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"Too many requests, please try again later.\",\"reason\":\"TooManyRequests\","
    "\"details\":{\"retryAfterSeconds\":1},\"code\":429}\n"};

/* What kube-apiserver's timeout filter writes: a Status without its type, JSON-encoded
 * with a newline, its Content-Type left to Go's sniffing. */
static const kapi_http_header timeout_headers[] = {{"Content-Type", "text/plain; charset=utf-8"}};
const kapi_http_answer kapi_api_timeout_answer = {
    504, timeout_headers, KAPI_ARRAY_LEN(timeout_headers),
    "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Timeout: request did not complete "
    "within the allotted timeout\",\"reason\":\"Timeout\",\"details\":{},\"code\":504}\n"};

kapi_api *kapi_api_new(const kapi_api_config *cfg)
{
    kapi_api *api = kapi_xcalloc(1, sizeof(*api));
    api->store = cfg->store;
    api->registry = cfg->registry;
    api->auth = cfg->auth;
    api->request_timeout_ms = cfg->request_timeout_ms;
    api->anonymous = cfg->anonymous;
    api->audit = cfg->audit;
    api->server_address = kapi_xstrdup("");
    api->openapi = kapi_api__openapi_new(cfg->registry);
    kapi_api__hook_cache_init(&api->hook_cache);
    atomic_init(&api->shutting_down, false);
    kapi_api__watch_reaper_new(api);
    static const kapi_authz_mode rbac = KAPI_AUTHZ_RBAC;
    api->authorizer = cfg->nauthz_modes
                          ? kapi_api__authorizer_new(api, cfg->authz_modes, cfg->nauthz_modes)
                          : kapi_api__authorizer_new(api, &rbac, 1);
    kapi_api__metrics_init(api);
    return api;
}

void kapi_api_free(kapi_api *api)
{
    if (!api)
        return;
    kapi_api__metrics_dispose(api);
    kapi_api__authorizer_free(api->authorizer);
    kapi_api__watch_reaper_free(api);
    free((void *)api->server_address);
    kapi_api__openapi_free(api->openapi);
    kapi_api__hook_cache_dispose(&api->hook_cache);
    free(api);
}

void kapi_api_set_server_address(kapi_api *api, const char *address)
{
    free((void *)api->server_address);
    api->server_address = kapi_xstrdup(address);
}

void kapi_api_set_shutting_down(kapi_api *api)
{
    atomic_store(&api->shutting_down, true);
}

const kapi_registry *kapi_api_registry(const kapi_api *api)
{
    return api->registry;
}

/* Content negotiation for the discovery documents (resources: negotiate.c). */
static bool accepts(kapi_str range)
{
    kapi_str type, params = range;
    kapi_str_cut(&params, ';', &type);
    while (type.len && type.ptr[0] == ' ')
        type.ptr++, type.len--;
    while (type.len && type.ptr[type.len - 1] == ' ')
        type.len--;
    bool json = kapi_str_eqc(type, "application/json");
    if (!json && !kapi_str_eqc(type, "*/*") && !kapi_str_eqc(type, "application/*"))
        return false;
    /* Discovery documents have no conversion target (as=Table, as=APIGroupDiscoveryList). */
    return memmem(params.ptr, params.len, "as=", 3) == NULL;
}

static kapi_error *negotiate_discovery(kapi_req *r)
{
    const char *accept = kapi_http_header_get(r->http, "accept");
    if (!accept || !*accept)
        return NULL;
    kapi_str s = kapi_str_c(accept), range;
    while (s.len) {
        kapi_str_cut(&s, ',', &range);
        if (accepts(range))
            return NULL;
    }
    kapi_error *err = kapi_error_new(KAPI_STATUS_NOT_ACCEPTABLE,
                                     "406: Not Acceptable\n\nAvailable representations: "
                                     "application/json");
    err->has_details = true;
    return err;
}

static void serve_authenticated(kapi_req *r)
{
    kapi_reqinfo *in = &r->info;
    kapi_error *err;
    bool get = strcmp(r->http->method, "GET") == 0 || strcmp(r->http->method, "HEAD") == 0;
    if (strcmp(in->prefix, "openapi") == 0) {
        kapi_api__serve_openapi(r);
        return;
    }
    if (!in->is_resource && kapi_api__serve_openid(r))
        return;
    bool api_root = strcmp(r->path, "/api") == 0 || strcmp(r->path, "/api/") == 0;
    bool apis_root = strcmp(r->path, "/apis") == 0 || strcmp(r->path, "/apis/") == 0;
    bool group_doc = !in->is_resource && strcmp(in->prefix, "apis") == 0 && *in->group;
    if (!api_root && !apis_root && !group_doc && !in->is_resource) {
        kapi_api__respond_not_found_page(r);
        return;
    }
    /* An unknown group is the mux's plain 404; an unknown version a Status 404. */
    if ((group_doc || in->is_resource) && !kapi_api__group_served(r, in->group)) {
        kapi_api__respond_not_found_page(r);
        return;
    }
    if (in->is_resource && !kapi_api__group_version_served(r, in->group, in->version)) {
        kapi_api__respond_error(r, kapi_api__err_not_found_resource());
        return;
    }
    bool discovery = api_root || apis_root || group_doc || (in->is_resource && !*in->resource);
    int aggregated = (api_root || apis_root) && get
                         ? kapi_api__discovery_form(kapi_http_header_get(r->http, "accept"))
                         : 0;
    if (aggregated) {
        kapi_api__serve_aggregated(r, api_root, aggregated);
        return;
    }
    if (discovery && (err = negotiate_discovery(r)) != NULL) {
        kapi_api__respond_error(r, err);
        return;
    }
    if (discovery && !get) {
        kapi_api__respond_error(r, kapi_api__err_method_not_allowed());
        return;
    }
    if (api_root)
        kapi_api__serve_api_versions(r);
    else if (apis_root)
        kapi_api__serve_group_list(r);
    else if (group_doc)
        kapi_api__serve_group(r, in->group);
    else if (!*in->resource)
        kapi_api__serve_resource_list(r, in->group, in->version);
    else
        kapi_api__serve_resource(r);
}

/* kube-apiserver's long-running check: kapi serves no streaming subresource (exec, log,
 * ...), so a watch is its one long-running request. */
static bool long_running(const kapi_req *r)
{
    return strcmp(r->info.verb, "watch") == 0;
}

/* The timeout parameter (WithRequestDeadline's parseTimeout) into *ms, capped at the
 * request timeout as kube caps it (0, negative or longer: the request timeout). */
static kapi_error *request_timeout(const kapi_req *r, unsigned *ms)
{
    const char *v = kapi_api__query(r, "timeout");
    int64_t ns;
    char *why;
    *ms = r->api->request_timeout_ms;
    if (!v || !*v)
        return NULL;
    if ((why = kapi_go_parse_duration(kapi_str_c(v), &ns)) != NULL) {
        kapi_error *err = kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                                         "invalid timeout specified in the request URL - %s", why);
        free(why);
        return err;
    }
    if (ns > 0 && (uint64_t)ns < (uint64_t)*ms * 1000000)
        *ms = (unsigned)((ns + 999999) / 1000000);
    return NULL;
}

kapi_http_admission kapi_api_classify(const kapi_http_request *http, void *ctx)
{
    kapi_req r = {.api = ctx, .http = (kapi_http_request *)http};
    kapi_http_admission a = {KAPI_HTTP_READ, r.api->request_timeout_ms};
    kapi_error *err;
    kapi_arena_init(&r.arena);
    /* A bad path or timeout is answered 400 by the handler, within the request timeout. */
    if ((err = kapi_api__parse_request(&r)) == NULL) {
        const char *verb = r.info.verb;
        bool read = strcmp(verb, "get") == 0 || strcmp(verb, "list") == 0;
        a.cls = long_running(&r) ? KAPI_HTTP_LONG_RUNNING
                : read           ? KAPI_HTTP_READ
                                 : KAPI_HTTP_MUTATE;
        err = request_timeout(&r, &a.timeout_ms);
    }
    kapi_error_free(err);
    kapi_arena_dispose(&r.arena);
    return a;
}

/* kube's authenticators: a client certificate, then a bearer token; a request with
 * neither is system:anonymous when --anonymous-auth allows it; a credential that is not
 * valid (a bearer token, a client certificate that does not verify) is a 401, never
 * anonymous, unless another one authenticates. */
static kapi_error *authenticate_as(kapi_req *r)
{
    const char *authorization = kapi_http_header_get(r->http, "authorization");
    kapi_sa_lookup sa = {kapi_api__sa_get, r->api};
    if (kapi_auth_authenticate(r->api->auth, authorization, r->http->peer_certificate, &sa,
                               &r->arena, &r->user))
        return NULL;
    if (r->api->anonymous && !kapi_auth_bearer_present(authorization) &&
        !r->http->peer_certificate_rejected) {
        r->user = kapi_auth_anonymous;
        return NULL;
    }
    return kapi_error_new(KAPI_STATUS_UNAUTHORIZED, "Unauthorized");
}

/* Authentication, then the audit's RequestReceived Event of whom it found. */
void kapi_api_refused(const kapi_http_request *http, int status, void *ctx)
{
    if (status != 429 && status != 504)
        return;
    kapi_req r = {.api = ctx, .http = (kapi_http_request *)http, .start_ns = kapi_time_mono_ns()};
    kapi_arena_init(&r.arena);
    kapi_error *err = kapi_api__parse_request(&r);
    /* a built-in type labels it; a custom one, not looked up on the loop, goes unlabelled */
    if (!err && r.info.is_resource)
        r.type = kapi_registry_lookup(r.api->registry, kapi_str_c(r.info.group),
                                      kapi_str_c(r.info.version), kapi_str_c(r.info.resource));
    kapi_error_free(err);
    kapi_api__metrics_answer(&r, status);
    kapi_api__metrics_refused(&r);
    if (status == 429 && KAPI_LOG_V(2))
        kapi_api__log_request(&r, status);
    kapi_arena_dispose(&r.arena);
}

static kapi_error *authenticate(kapi_req *r)
{
    kapi_error *err = authenticate_as(r);
    if (!err)
        kapi_api__audit_received(r);
    return err;
}

void kapi_api_handle(kapi_http_request *http, void *ctx)
{
    kapi_arena arena;
    kapi_arena_init(&arena);
    kapi_req *r = kapi_arena_alloc(&arena, sizeof(*r));
    r->arena = arena;
    r->api = ctx;
    r->http = http;
    r->start_ns = kapi_time_mono_ns();
    kapi_api__audit_start(r);
    kapi_error *err = NULL;
    unsigned timeout_ms; /* applied by the http layer (kapi_api_classify) */
    if (http->body_too_large) {
        err = kapi_error_new(KAPI_STATUS_REQUEST_ENTITY_TOO_LARGE,
                             "Request entity too large: limit is %zu", KAPI_API_MAX_BODY);
        kapi_api__respond_error(r, err);
    } else if ((err = kapi_api__parse_request(r)) != NULL ||
               (!long_running(r) && (err = request_timeout(r, &timeout_ms)) != NULL)) {
        kapi_api__respond_error(r, err);
    } else if ((err = authenticate(r)) != NULL) {
        kapi_api__respond_error(r, err);
    } else if (!kapi_api__impersonate(r)) {
        /* answered */
    } else if ((err = kapi_api__authorize(r)) != NULL) {
        kapi_api__respond_error(r, err);
    } else if (kapi_api__health_endpoint(r->path)) {
        kapi_api__serve_health(r);
    } else if (strcmp(r->path, "/version") == 0 || strcmp(r->path, "/version/") == 0) {
        kapi_api__serve_version(r);
    } else if (strcmp(r->path, "/metrics") == 0) {
        kapi_api__serve_metrics(r);
    } else {
        serve_authenticated(r);
    }
    kapi_api__metrics_request(r);
    kapi_type_unref(r->type);
    kapi_arena arena_copy = r->arena;
    kapi_arena_dispose(&arena_copy);
}
