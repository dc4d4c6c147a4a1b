/*
 * api: the request pipeline. One entry point, kapi_api_handle, runs on a worker thread
 * for every HTTP request and reads top to bottom:
 *
 *   request info → authenticate → route (health, version, discovery, OpenAPI, resources)
 *   → negotiate → decode → admit (server-set metadata, strategy hooks) → store → encode
 *
 * Every failure is a kapi_error made where it is found and rendered once, at the end, as
 * a metav1.Status (DESIGN.md invariant 5). Everything a request allocates lives in its
 * arena (invariant 6).
 */
#ifndef KAPI_API_H
#define KAPI_API_H

#include "auth/auth.h"
#include "http/http.h"
#include "registry/registry.h"
#include "store/store.h"

typedef struct kapi_api kapi_api;

/* The largest request body the api reads (kube-apiserver's MaxRequestBodyBytes, 3 MiB):
 * main gives it to the http layer as max_body, which flags a longer body instead of
 * reading it, and kapi_api_handle answers that 413 naming this limit. */
#define KAPI_API_MAX_BODY ((size_t)3 << 20)

typedef struct kapi_api_config {
    kapi_store *store;
    const kapi_registry *registry;
    const kapi_auth *auth;
    unsigned request_timeout_ms; /* --request-timeout: the longest a request may take */
} kapi_api_config;

kapi_api *kapi_api_new(const kapi_api_config *cfg);
void kapi_api_free(kapi_api *api);

/* The http handler (kapi_http_handler); ctx is the kapi_api. */
void kapi_api_handle(kapi_http_request *req, void *ctx);

/* The http classifier (kapi_http_classify); ctx is the kapi_api. As kube-apiserver's
 * filters: a watch is long-running; get, list (and any GET or HEAD) are READ, every other
 * verb MUTATE, with the request timeout, or the timeout parameter when it is shorter. */
kapi_http_admission kapi_api_classify(const kapi_http_request *req, void *ctx);

/* The answers the http layer writes itself: past the in-flight limits a 429
 * TooManyRequests Status with Retry-After: 1, with kube-apiserver's message; past a
 * deadline kube-apiserver's timeout filter's 504 (its exact bytes). */
extern const kapi_http_answer kapi_api_busy_answer;
extern const kapi_http_answer kapi_api_timeout_answer;

/* Creates the namespace if it does not exist yet (start-up: default, kube-system, ...). */
kapi_error *kapi_api_ensure_namespace(kapi_api *api, const char *name);

/* Sets the address /api reports (host:port), once the port is bound; before serving. */
void kapi_api_set_server_address(kapi_api *api, const char *address);

/* Stops serving new requests with success: /readyz answers 503 from now on. */
void kapi_api_set_shutting_down(kapi_api *api);

#endif
