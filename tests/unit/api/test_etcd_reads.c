/*
 * Consistent reads on etcd through the api: two servers share one etcd; while the second's
 * cache is held behind, a get or list with no resourceVersion on it still holds what the
 * first acknowledged (read from etcd after the bounded wait, as kube-apiserver falls back).
 */
#include "../etcd/etcd_fixture.h"
#include "../store/holder.h"
#include "api_call.h"
#include "test.h"

#define CRONJOBS "/apis/batch/v1/namespaces/default/cronjobs"

static long long create(api_env *e, const char *name)
{
    api_answer a;
    char *body = api_cronjob(name, "");
    CHECK_INT_EQ(api_call(e, "POST", CRONJOBS, "", body, &a), 201);
    long long rev = atoll(api_str(&a, "metadata.resourceVersion"));
    api_answer_dispose(&a);
    free(body);
    return rev;
}

TEST(api_etcd_lagging_cache_reads_etcd)
{
    etcd_fixture f = {.n = 1};
    etcd_fixture_start(&f);
    holder h = HOLDER_INIT;
    api_env a = {.etcd_servers = f.servers};
    api_env b = {.etcd_servers = f.servers, .observer = holder_observe, .observer_ctx = &h};
    api_env_start(&a);
    api_env_start(&b);
    CHECK(kapi_namespace_ensure(a.api, "default") == NULL);
    holder_set(&h, true);
    create(&a, "first");
    holder_wait_held(&h); /* b's follower stops after the first */
    long long second = create(&a, "second");
    api_answer r;
    CHECK_INT_EQ(api_call(&b, "GET", CRONJOBS "/second", "", NULL, &r), 200);
    CHECK_INT_EQ(atoll(api_str(&r, "metadata.resourceVersion")), second);
    api_answer_dispose(&r);
    CHECK_INT_EQ(api_call(&b, "GET", CRONJOBS "/third", "", NULL, &r), 404);
    CHECK_STR_EQ(api_str(&r, "reason"), "NotFound");
    api_answer_dispose(&r);
    CHECK_INT_EQ(api_call(&b, "GET", CRONJOBS "?limit=1", "", NULL, &r), 200);
    CHECK_STR_EQ(
        kapi_json_path_str(json_array_get(json_object_get(r.json, "items"), 0), "metadata.name"),
        "first");
    CHECK(atoll(api_str(&r, "metadata.resourceVersion")) >= second);
    CHECK_INT_EQ(api_int(&r, "metadata.remainingItemCount"), 1);
    char *next = kapi_xprintf(CRONJOBS "?limit=1&continue=%s", api_str(&r, "metadata.continue"));
    api_answer_dispose(&r);
    /* The next page reads at the same revision, from etcd while the cache lags. */
    CHECK_INT_EQ(api_call(&b, "GET", next, "", NULL, &r), 200);
    CHECK_STR_EQ(
        kapi_json_path_str(json_array_get(json_object_get(r.json, "items"), 0), "metadata.name"),
        "second");
    api_answer_dispose(&r);
    free(next);
    holder_set(&h, false);
    CHECK_INT_EQ(api_call(&b, "GET", CRONJOBS, "", NULL, &r), 200);
    CHECK_INT_EQ(json_array_size(json_object_get(r.json, "items")), 2);
    api_answer_dispose(&r);
    api_env_stop(&b);
    api_env_stop(&a);
    etcd_fixture_stop(&f);
}
