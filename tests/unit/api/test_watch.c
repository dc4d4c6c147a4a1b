/*
 * Unit tests for the watch verb over a real http server, store and registry: the events a
 * selector turns into DELETED (restamped copies made by the store, freed with their
 * event: under ASan a leak fails the test) and a negative timeoutSeconds.
 */
#include <time.h>

#include "api_env.h"
#include "test.h"

/* Sends one request on c (opened by the caller). */
static void send_request(api_env *e, http_client *c, const char *method, const char *path,
                         const char *body)
{
    kapi_buf req;
    kapi_buf_init(&req);
    kapi_buf_printf(&req,
                    "%s %s HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\n"
                    "Content-Length: %zu\r\n\r\n%s",
                    method, path, e->auth_header, body ? strlen(body) : 0, body ? body : "");
    client_send(c, req.ptr, req.len);
    kapi_buf_dispose(&req);
}

/* One request on its own connection; returns the status. */
static int request(api_env *e, const char *method, const char *path, const char *body)
{
    http_client c;
    http_resp resp;
    client_connect(&c, e->http.port);
    send_request(e, &c, method, path, body);
    CHECK(client_read_response(&c, &resp));
    int status = resp.status;
    resp_dispose(&resp);
    client_close(&c);
    return status;
}

static const char ns_matching[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"w1\","
    "\"labels\":{\"a\":\"b\"}}}";

TEST(api_watch_object_leaving_selector_is_deleted)
{
    api_env e = {0};
    http_client w;
    api_env_start(&e);
    CHECK_INT_EQ(request(&e, "POST", "/api/v1/namespaces", ns_matching), 201);
    client_connect(&w, e.http.port);
    send_request(&e, &w, "GET", "/api/v1/namespaces?watch=1&labelSelector=a%3Db", NULL);
    CHECK(client_read_until(&w, "\"ADDED\""));
    for (int i = 0; i < 3; i++) { /* each update leaves the selector (the first) or not */
        char body[256];
        snprintf(body, sizeof(body),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"w1\","
                 "\"labels\":{\"a\":\"c\"},\"annotations\":{\"n\":\"%d\"}}}",
                 i); /* each changes it: an update that changes nothing writes nothing */
        CHECK_INT_EQ(request(&e, "PUT", "/api/v1/namespaces/w1", body), 200);
    }
    CHECK(client_read_until(&w, "\"DELETED\""));
    char want[64];
    snprintf(want, sizeof(want), "\"resourceVersion\":\"%lld\"",
             (long long)kapi_store_revision(e.store) - 2);
    CHECK(strstr(strstr(w.carry.ptr, "\"DELETED\""), want) != NULL);
    client_close(&w);
    api_env_stop(&e);
}

TEST(api_watch_negative_timeout_ends_at_once)
{
    api_env e = {0};
    http_client c;
    http_resp resp;
    api_env_start(&e);
    client_connect(&c, e.http.port);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    send_request(&e, &c, "GET", "/api/v1/namespaces?watch=1&timeoutSeconds=-5", NULL);
    CHECK(client_read_response(&c, &resp));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK_INT_EQ(resp.status, 200);
    CHECK_INT_EQ(resp.body.len, 0);
    CHECK(t1.tv_sec - t0.tv_sec < 2);
    resp_dispose(&resp);
    client_close(&c);
    api_env_stop(&e);
}

/* The event lines in what c has received (after the response head). */
static const char *events_of(http_client *c)
{
    const char *p = strstr(c->carry.ptr, "\r\n\r\n");
    return p ? p + 4 : "";
}

TEST(api_watch_converted_view_shared_by_watchers)
{
    static const char ev[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"e1\","
        "\"namespace\":\"default\"},\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\"},"
        "\"reason\":\"R\",\"message\":\"hello\",\"type\":\"Normal\"}";
    api_env e = {0};
    http_client w[2];
    api_env_start(&e);
    CHECK_INT_EQ(request(&e, "POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":\"default\"}}"),
                 201);
    for (int i = 0; i < 2; i++) {
        client_connect(&w[i], e.http.port);
        send_request(&e, &w[i], "GET", "/apis/events.k8s.io/v1/namespaces/default/events?watch=1",
                     NULL);
    }
    usleep(200 * 1000);
    CHECK_INT_EQ(request(&e, "POST", "/api/v1/namespaces/default/events", ev), 201);
    for (int i = 0; i < 2; i++) {
        CHECK(client_read_until(&w[i], "\"note\":\"hello\""));
        CHECK(client_read_until(&w[i], "}\n"));
    }
    const char *a = strstr(events_of(&w[0]), "{\"type\""),
               *b = strstr(events_of(&w[1]), "{\"type\"");
    CHECK(a && b);
    CHECK(strstr(a, "\"apiVersion\":\"events.k8s.io/v1\"") != NULL);
    CHECK(strncmp(a, b, (size_t)(strchr(a, '\n') - a)) == 0);
    for (int i = 0; i < 2; i++)
        client_close(&w[i]);
    api_env_stop(&e);
}
