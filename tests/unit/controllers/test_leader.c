/*
 * Unit tests for the leader election (controllers/leader.c): electors over one api test
 * server (api_env), with durations of a second or so. Exactly one leads; a leader that
 * stops renewing (killed: stopped without releasing) is replaced once its lease duration
 * has passed, not before; a release hands over at once; a leader that finds another
 * holder stops leading and campaigns again; leaseTransitions counts the changes of
 * holder.
 */
#include <stdatomic.h>
#include <time.h>

#include "api/api_env.h"
#include "codec/json.h"
#include "test.h"

#define LEASE_MS 1000
#define RENEW_MS 600
#define RETRY_MS 100

/* A candidate: its elector and how often it started and stopped leading. */
typedef struct candidate {
    kapi_leader *l;
    atomic_int started, stopped;
} candidate;

static void on_started(void *ctx)
{
    atomic_fetch_add(&((candidate *)ctx)->started, 1);
}

static void on_stopped(void *ctx)
{
    atomic_fetch_add(&((candidate *)ctx)->stopped, 1);
}

static void campaign(api_env *e, candidate *c, const char *id, int lease_ms, bool release)
{
    kapi_leader_config cfg = {.identity = id,
                              .lease_ms = lease_ms,
                              .renew_ms = lease_ms * 6 / 10,
                              .retry_ms = RETRY_MS,
                              .release = release,
                              .cb = {on_started, on_stopped, c}};
    CHECK(kapi_leader_config_check(&cfg) == NULL);
    atomic_init(&c->started, 0);
    atomic_init(&c->stopped, 0);
    c->l = kapi_leader_start(e->api, &cfg);
}

static int64_t now_ms(void)
{
    return kapi_time_mono_ns() / 1000000;
}

/* Waits up to ms for *counter to reach want; true when it did. */
static bool wait_count(atomic_int *counter, int want, int ms)
{
    struct timespec ms5 = {0, 5 * 1000000};
    for (int64_t end = now_ms() + ms; now_ms() < end; nanosleep(&ms5, NULL))
        if (atomic_load(counter) >= want)
            return true;
    return atomic_load(counter) >= want;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static const kapi_type *leases(api_env *e)
{
    return kapi_registry_lookup(e->reg, KAPI_STR("coordination.k8s.io"), KAPI_STR("v1"),
                                KAPI_STR("leases"));
}

/* The lock Lease as stored (never NULL: fails the test). */
static json_t *lock(api_env *e)
{
    json_t *obj = NULL;
    kapi_error *err = kapi_api_get(e->api, leases(e), KAPI_STR("kube-system"),
                                   KAPI_STR("kube-controller-manager"), &obj);
    if (err)
        test_fail(__FILE__, __LINE__, "get the lease: %s", err->message);
    return obj;
}

static const char *holder(const json_t *lease)
{
    return kapi_json_path_str(lease, "spec.holderIdentity");
}

static long long transitions(const json_t *lease)
{
    return (long long)json_integer_value(kapi_json_path(lease, "spec.leaseTransitions"));
}

/* A fresh api with the lease's namespace. */
static void start(api_env *e)
{
    api_env_start(e);
    json_t *ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                           "name", "kube-system");
    kapi_error *err = kapi_api_create(e->api, &kapi_api_loopback_user,
                                      kapi_registry_namespaces(e->reg), KAPI_STR(""), ns, NULL);
    CHECK(err == NULL);
}

TEST(controllers_leader_exactly_one_leads)
{
    api_env e = {0};
    candidate a, b;
    start(&e);
    campaign(&e, &a, "host-a_1", LEASE_MS, true);
    campaign(&e, &b, "host-b_2", LEASE_MS, true);
    for (int i = 0; i < 400 && atomic_load(&a.started) + atomic_load(&b.started) == 0; i++)
        sleep_ms(5);
    candidate *leader = atomic_load(&a.started) ? &a : &b;
    CHECK_INT_EQ(atomic_load(&leader->started), 1);
    json_t *first = lock(&e);
    CHECK_STR_EQ(holder(first), kapi_leader_identity(leader->l));
    CHECK(kapi_leader_leading(leader->l));
    CHECK_INT_EQ(json_integer_value(kapi_json_path(first, "spec.leaseDurationSeconds")), 1);
    CHECK_INT_EQ(transitions(first), 0);
    sleep_ms(RENEW_MS);
    /* renewed, never handed over */
    json_t *later = lock(&e);
    CHECK_INT_EQ(atomic_load(&a.started) + atomic_load(&b.started), 1);
    CHECK_INT_EQ(atomic_load(&a.stopped) + atomic_load(&b.stopped), 0);
    CHECK_STR_EQ(holder(later), holder(first));
    CHECK_INT_EQ(transitions(later), 0);
    CHECK_STR_EQ(kapi_json_path_str(later, "spec.acquireTime"),
                 kapi_json_path_str(first, "spec.acquireTime"));
    CHECK(strcmp(kapi_json_path_str(later, "spec.renewTime"),
                 kapi_json_path_str(first, "spec.renewTime")) > 0);
    /* a MicroTime: six fractional digits, UTC */
    CHECK_INT_EQ(strlen(kapi_json_path_str(later, "spec.renewTime")), 27);
    json_decref(first);
    json_decref(later);
    kapi_leader_stop(a.l);
    kapi_leader_stop(b.l);
    CHECK_INT_EQ(atomic_load(&leader->stopped), 1);
    api_env_stop(&e);
}

/* A leader killed (stopped without releasing) is replaced after the lease duration. */
TEST(controllers_leader_takes_over_from_a_dead_leader)
{
    api_env e = {0};
    candidate a, b;
    start(&e);
    campaign(&e, &a, "host-a_1", LEASE_MS, false);
    CHECK(wait_count(&a.started, 1, 2000));
    campaign(&e, &b, "host-b_2", LEASE_MS, true);
    sleep_ms(3 * RETRY_MS);
    CHECK_INT_EQ(atomic_load(&b.started), 0);
    int64_t killed = now_ms();
    kapi_leader_stop(a.l);
    CHECK_INT_EQ(atomic_load(&a.stopped), 1);
    json_t *lease = lock(&e);
    CHECK_STR_EQ(holder(lease), "host-a_1"); /* not released */
    json_decref(lease);
    CHECK(wait_count(&b.started, 1, LEASE_MS + 3000));
    int64_t waited = now_ms() - killed;
    /* A's last renewal was at most a retry period before the kill */
    if (waited < LEASE_MS - 2 * RETRY_MS)
        test_fail(__FILE__, __LINE__, "took over after %lld ms, before the lease expired",
                  (long long)waited);
    lease = lock(&e);
    CHECK_STR_EQ(holder(lease), "host-b_2");
    CHECK_INT_EQ(transitions(lease), 1);
    json_decref(lease);
    kapi_leader_stop(b.l);
    api_env_stop(&e);
}

/* A clean stop releases the lease: the next candidate takes it within its retry period,
 * long before a lease duration; each change of holder counts. */
TEST(controllers_leader_release_hands_over_at_once)
{
    enum { LONG_LEASE_MS = 3000 };
    api_env e = {0};
    candidate a, b, c;
    start(&e);
    campaign(&e, &a, "host-a_1", LONG_LEASE_MS, true);
    CHECK(wait_count(&a.started, 1, 2000));
    campaign(&e, &b, "host-b_2", LONG_LEASE_MS, true);
    sleep_ms(2 * RETRY_MS);
    int64_t stopped = now_ms();
    kapi_leader_stop(a.l);
    json_t *lease = lock(&e);
    CHECK(strcmp(holder(lease), "host-b_2") == 0 ||
          (strcmp(holder(lease), "") == 0 &&
           json_integer_value(kapi_json_path(lease, "spec.leaseDurationSeconds")) == 1));
    json_decref(lease);
    CHECK(wait_count(&b.started, 1, LONG_LEASE_MS / 2));
    if (now_ms() - stopped >= LONG_LEASE_MS / 2)
        test_fail(__FILE__, __LINE__, "took %lld ms", (long long)(now_ms() - stopped));
    lease = lock(&e);
    CHECK_STR_EQ(holder(lease), "host-b_2");
    CHECK_INT_EQ(transitions(lease), 1);
    json_decref(lease);
    kapi_leader_stop(b.l);
    campaign(&e, &c, "host-c_3", LONG_LEASE_MS, true);
    CHECK(wait_count(&c.started, 1, 1000));
    lease = lock(&e);
    CHECK_STR_EQ(holder(lease), "host-c_3");
    CHECK_INT_EQ(transitions(lease), 2);
    json_decref(lease);
    kapi_leader_stop(c.l);
    api_env_stop(&e);
}

/* A leader that finds the lease taken (it hung while another instance took over) stops
 * leading at its next renewal, and takes the lease again only once the other's has
 * expired. */
TEST(controllers_leader_steps_down_for_another_holder)
{
    api_env e = {0};
    candidate a;
    start(&e);
    campaign(&e, &a, "host-a_1", LEASE_MS, true);
    CHECK(wait_count(&a.started, 1, 2000));
    json_t *lease = lock(&e);
    json_t *spec = json_object_get(lease, "spec");
    json_object_set_new(spec, "holderIdentity", json_string("host-z_9"));
    json_object_set_new(spec, "leaseTransitions", json_integer(1));
    int64_t taken = now_ms();
    CHECK(kapi_api_update(e.api, &kapi_api_loopback_user, leases(&e), "", lease, NULL) == NULL);
    CHECK(wait_count(&a.stopped, 1, RENEW_MS));
    CHECK(!kapi_leader_leading(a.l));
    CHECK(wait_count(&a.started, 2, LEASE_MS + 3000));
    if (now_ms() - taken < LEASE_MS - 2 * RETRY_MS)
        test_fail(__FILE__, __LINE__, "took the lease back after %lld ms",
                  (long long)(now_ms() - taken));
    lease = lock(&e);
    CHECK_STR_EQ(holder(lease), "host-a_1");
    CHECK_INT_EQ(transitions(lease), 2);
    json_decref(lease);
    kapi_leader_stop(a.l);
    api_env_stop(&e);
}

/* The durations, as client-go's NewLeaderElector checks them; 0 is the default. */
TEST(controllers_leader_config_check)
{
    static const struct {
        int lease, renew, retry;
        const char *why;
    } cases[] = {
        {0, 0, 0, NULL},
        {15000, 10000, 2000, NULL},
        {10000, 10000, 2000, "leaseDuration must be greater than renewDeadline"},
        {0, 2400, 2000, "renewDeadline must be greater than retryPeriod*JitterFactor"},
        {1000, 600, 500, "renewDeadline must be greater than retryPeriod*JitterFactor"},
        {2000, 1000, -1, "retryPeriod must be greater than zero"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        kapi_leader_config c = {
            .lease_ms = cases[i].lease, .renew_ms = cases[i].renew, .retry_ms = cases[i].retry};
        kapi_error *err = kapi_leader_config_check(&c);
        CHECK_STR_EQ(err ? err->message : "(none)", cases[i].why ? cases[i].why : "(none)");
        kapi_error_free(err);
    }
    char *id = kapi_leader_default_identity("0d5c2f0e-8a3b-4c8e-9d65-1f2e3a4b5c6d");
    CHECK(strlen(id) > 37 &&
          strcmp(id + strlen(id) - 37, "_0d5c2f0e-8a3b-4c8e-9d65-1f2e3a4b5c6d") == 0);
    free(id);
}
