/* api_env: the api unit tests' server (see api_env.h). */
#include "api_env.h"

#include <stdio.h>

#include "test.h"

void api_env_start(api_env *e)
{
    char db[512];
    snprintf(db, sizeof(db), "%s/kapi.db", test_tmpdir());
    kapi_store_options so = {.path = db,
                             .etcd.servers = e->etcd_servers,
                             .history_seconds = e->history_seconds ? e->history_seconds : 300,
                             .observer = e->observer,
                             .observer_ctx = e->observer_ctx};
    CHECK(kapi_store_open(&e->store, &so) == NULL);
    CHECK(kapi_registry_new(&e->reg) == NULL);
    /* Tokens signed with a key made for the tests: generating one would slow every test. */
    kapi_auth_config auth = {.dir = test_tmpdir(),
                             .sa = {.signing_key_file = "tests/data/auth/sa-rsa.key",
                                    .max_expiration = e->sa_max_expiration}};
    CHECK(kapi_auth_new(&e->auth, &auth) == NULL);
    kapi_api_config ac = {.store = e->store, .registry = e->reg, .auth = e->auth};
    e->api = kapi_api_new(&ac);
    kapi_http_config hc = fixture_config(kapi_api_handle);
    hc.handler_ctx = e->api;
    hc.max_body = KAPI_API_MAX_BODY;
    fixture_start(&e->http, &hc);
    snprintf(e->auth_header, sizeof(e->auth_header), "Authorization: Bearer %s\r\n",
             kapi_auth_admin_token(e->auth));
}

void api_env_stop(api_env *e)
{
    fixture_stop(&e->http);
    kapi_api_free(e->api);
    kapi_store_free(e->store);
    kapi_registry_free(e->reg);
    kapi_auth_free(e->auth);
}
