/*
 * Consistent reads on etcd through the api: two servers share one etcd; while the second's
 * cache is held behind, a get or list with no resourceVersion on it still holds what the
 * first acknowledged (read from etcd after the bounded wait, as kube-apiserver falls back).
 */
#include <pthread.h>

#include "../etcd/etcd_fixture.h"
#include "api_call.h"
#include "test.h"

#define CRONJOBS "/apis/batch/v1/namespaces/default/cronjobs"

/* An observer that holds its store's follower while asked to. */
typedef struct holder {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool hold, held;
} holder;

static void hold_follower(void *ctx, const kapi_store_event *ev)
{
    holder *h = ctx;
    (void)ev;
    pthread_mutex_lock(&h->mu);
    while (h->hold) {
        h->held = true;
        pthread_cond_broadcast(&h->cv);
        pthread_cond_wait(&h->cv, &h->mu);
    }
    pthread_mutex_unlock(&h->mu);
}

static void set_hold(holder *h, bool hold)
{
    pthread_mutex_lock(&h->mu);
    h->hold = hold;
    h->held = false;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

static void wait_held(holder *h)
{
    pthread_mutex_lock(&h->mu);
    while (!h->held)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

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
    holder h = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    api_env a = {.etcd_servers = f.servers};
    api_env b = {.etcd_servers = f.servers, .observer = hold_follower, .observer_ctx = &h};
    api_env_start(&a);
    api_env_start(&b);
    CHECK(kapi_namespace_ensure(a.api, "default") == NULL);
    set_hold(&h, true);
    create(&a, "first");
    wait_held(&h); /* b's follower stops after the first */
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
    set_hold(&h, false);
    CHECK_INT_EQ(api_call(&b, "GET", CRONJOBS, "", NULL, &r), 200);
    CHECK_INT_EQ(json_array_size(json_object_get(r.json, "items")), 2);
    api_answer_dispose(&r);
    api_env_stop(&b);
    api_env_stop(&a);
    etcd_fixture_stop(&f);
}
