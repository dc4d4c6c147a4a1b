/* Unit tests for api/reqinfo: the request info read from method, path and query. */
#include "api/api_int.h"
#include "test.h"

static const struct {
    const char *method, *path, *query;
    const char *group, *version, *ns, *resource, *name, *sub, *verb;
} cases[] = {
    {"GET", "/api/v1/namespaces", "", "", "v1", "", "namespaces", "", "", "list"},
    {"GET", "/api/v1/namespaces/demo", "", "", "v1", "demo", "namespaces", "demo", "", "get"},
    {"PUT", "/api/v1/namespaces/demo/finalize", "", "", "v1", "demo", "namespaces", "demo",
     "finalize", "update"},
    {"GET", "/api/v1/namespaces/demo/status", "", "", "v1", "demo", "namespaces", "demo", "status",
     "get"},
    {"GET", "/api/v1/namespaces/demo/events", "", "", "v1", "demo", "events", "", "", "list"},
    {"POST", "/apis/batch/v1/namespaces/a/cronjobs", "", "batch", "v1", "a", "cronjobs", "", "",
     "create"},
    {"GET", "/apis/batch/v1/namespaces/a/cronjobs/x", "", "batch", "v1", "a", "cronjobs", "x", "",
     "get"},
    {"PATCH", "/apis/batch/v1/namespaces/a/cronjobs/x/status", "", "batch", "v1", "a", "cronjobs",
     "x", "status", "patch"},
    {"DELETE", "/apis/batch/v1/namespaces/a/cronjobs", "", "batch", "v1", "a", "cronjobs", "", "",
     "deletecollection"},
    {"DELETE", "/apis/batch/v1/namespaces/a/cronjobs/x", "", "batch", "v1", "a", "cronjobs", "x",
     "", "delete"},
    {"GET", "/apis/batch/v1/cronjobs", "watch=true", "batch", "v1", "", "cronjobs", "", "",
     "watch"},
    {"GET", "/apis/batch/v1/cronjobs", "watch=false", "batch", "v1", "", "cronjobs", "", "",
     "list"},
    {"GET", "/apis/networking.k8s.io/v1alpha1/clustercidrs/c%2Dd", "", "networking.k8s.io",
     "v1alpha1", "", "clustercidrs", "c-d", "", "get"},
    {"GET", "/apis/batch/v1", "", "batch", "v1", "", "", "", "", "list"},
};

static kapi_req *make_req(kapi_http_request *h, const char *method, const char *path,
                          const char *query)
{
    static kapi_req r;
    memset(&r, 0, sizeof(r));
    memset(h, 0, sizeof(*h));
    h->method = method;
    h->path = kapi_str_c(path);
    h->query = kapi_str_c(query);
    r.http = h;
    kapi_arena_init(&r.arena);
    return &r;
}

TEST(api_reqinfo_table)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        kapi_http_request h;
        kapi_req *r = make_req(&h, cases[i].method, cases[i].path, cases[i].query);
        kapi_error *err = kapi_api__parse_request(r);
        CHECK(err == NULL);
        CHECK(r->info.is_resource);
        CHECK_STR_EQ(r->info.group, cases[i].group);
        CHECK_STR_EQ(r->info.version, cases[i].version);
        CHECK(kapi_str_eqc(r->info.ns, cases[i].ns));
        CHECK_STR_EQ(r->info.resource, cases[i].resource);
        CHECK(kapi_str_eqc(r->info.name, cases[i].name));
        CHECK_STR_EQ(r->info.subresource, cases[i].sub);
        CHECK_STR_EQ(r->info.verb, cases[i].verb);
        kapi_arena_dispose(&r->arena);
    }
}

/* A %00 in the path is a NUL inside the part: the name is the whole part, not the bytes
 * before the NUL. */
TEST(api_reqinfo_nul_in_name)
{
    kapi_http_request h;
    kapi_req *r = make_req(&h, "DELETE", "/api/v1/namespaces/n%00s/events/victim%00zzz", "");
    CHECK(kapi_api__parse_request(r) == NULL);
    CHECK(kapi_str_eq(r->info.ns, (kapi_str){"n\0s", 3}));
    CHECK(kapi_str_eq(r->info.name, (kapi_str){"victim\0zzz", 10}));
    CHECK_STR_EQ(r->info.resource, "events");
    CHECK_STR_EQ(r->info.verb, "delete");
    kapi_arena_dispose(&r->arena);
    /* a NUL in a fixed part names nothing, never the group before it */
    r = make_req(&h, "GET", "/apis/batch%00x/v1/cronjobs%00/a", "");
    CHECK(kapi_api__parse_request(r) == NULL);
    CHECK_STR_EQ(r->info.group, "batch\x01x");
    CHECK_STR_EQ(r->info.resource, "cronjobs\x01");
    kapi_arena_dispose(&r->arena);
    r = make_req(&h, "GET", "/version%00", "");
    CHECK(kapi_api__parse_request(r) == NULL);
    CHECK_STR_EQ(r->path, "/version\x01");
    kapi_arena_dispose(&r->arena);
}

/* A NUL in a query value is refused (a C string would cut it); in a key it names no known
 * parameter. */
TEST(api_reqinfo_nul_in_query)
{
    kapi_http_request h;
    kapi_req *r = make_req(&h, "DELETE", "/api/v1/namespaces/n/events",
                           "fieldSelector=metadata.name%3Da%00b");
    kapi_error *err = kapi_api__parse_request(r);
    CHECK(err != NULL && err->status == KAPI_STATUS_BAD_REQUEST);
    if (err)
        CHECK_STR_EQ(err->message,
                     "invalid value of the query parameter fieldSelector: it holds a NUL byte");
    kapi_error_free(err);
    kapi_arena_dispose(&r->arena);
    r = make_req(&h, "GET", "/api/v1/namespaces/n/events", "watch%00x=1");
    CHECK(kapi_api__parse_request(r) == NULL);
    CHECK_STR_EQ(r->info.verb, "list");
    kapi_arena_dispose(&r->arena);
}

TEST(api_reqinfo_query_decoding)
{
    kapi_http_request h;
    kapi_req *r = make_req(&h, "GET", "/api/v1/namespaces",
                           "labelSelector=app%3Dweb%2Ctier+in+%28a%29&limit=5&&watch");
    CHECK(kapi_api__parse_request(r) == NULL);
    CHECK_STR_EQ(kapi_api__query(r, "labelSelector"), "app=web,tier in (a)");
    CHECK_STR_EQ(kapi_api__query(r, "limit"), "5");
    CHECK_STR_EQ(kapi_api__query(r, "watch"), "");
    CHECK(kapi_api__query(r, "continue") == NULL);
    kapi_arena_dispose(&r->arena);
}

TEST(api_reqinfo_non_resource_and_bad_escapes)
{
    kapi_http_request h;
    kapi_req *r = make_req(&h, "GET", "/apis/batch", "");
    CHECK(kapi_api__parse_request(r) == NULL);
    CHECK(!r->info.is_resource);
    CHECK_STR_EQ(r->info.group, "batch");
    kapi_arena_dispose(&r->arena);

    r = make_req(&h, "GET", "/api/v1/namespaces/%zz", "");
    kapi_error *err = kapi_api__parse_request(r);
    CHECK(err != NULL && err->status == KAPI_STATUS_BAD_REQUEST);
    kapi_error_free(err);
    kapi_arena_dispose(&r->arena);

    r = make_req(&h, "GET", "/api/v1/namespaces/x%4", "");
    err = kapi_api__parse_request(r);
    CHECK(err != NULL);
    kapi_error_free(err);
    kapi_arena_dispose(&r->arena);
}
