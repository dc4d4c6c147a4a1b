/*
 * api_env: the API pipeline over a real http server (plain HTTP on loopback), a real
 * store in the test's directory, the built-in registry and the generated admin token, as
 * the api unit tests share it.
 */
#ifndef KAPI_TEST_API_ENV_H
#define KAPI_TEST_API_ENV_H

#include "api/api_int.h"
#include "controllers/controllers.h"
#include "http/harness.h"

typedef struct api_env {
    http_fixture http;
    kapi_store *store;
    kapi_registry *reg;
    kapi_auth *auth;
    kapi_api *api;
    char auth_header[128];        /* "Authorization: Bearer <admin token>\r\n" */
    int64_t history_seconds;      /* the store's history window, set before the start (0: 300) */
    int64_t sa_max_expiration;    /* --service-account-max-token-expiration, set before the start */
    const char *etcd_servers;     /* the store on etcd (prefix /registry) instead of SQLite */
    kapi_store_observer observer; /* the store's observer, set before the start */
    void *observer_ctx;
} api_env;

/* Opens the store, registry and auth, and serves the api (fails the test on error). */
void api_env_start(api_env *e);
/* Stops the server and frees everything. */
void api_env_stop(api_env *e);

#endif
