/*
 * controllers/leader: leader election on a Lease (controllers.h, "leader election"),
 * client-go 1.26's leaderelection in C: tryAcquireOrRenew, the acquire loop (retry
 * period with jitter), the renew loop (retry period, renew deadline) and release, on one
 * thread, through the api's client verbs as system:kube-controller-manager.
 *
 * The elector remembers the lease's spec as last seen (or written) and when, on its
 * monotonic clock, it was seen to change: the lease is expired once that is a lease
 * duration ago. It also keeps the Lease as last read or written, whose resourceVersion
 * makes a release conditional on nobody having written since.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/json.h"
#include "controllers/controllers.h"
#include "log/log.h"

#define MS 1000000LL
#define JITTER 1.2 /* client-go's JitterFactor */
#define LEASES_GROUP "coordination.k8s.io"

struct kapi_leader {
    kapi_api *api;
    const kapi_type *leases;
    char *ns, *name, *identity;
    int lease_ms, renew_ms, retry_ms;
    bool release;
    kapi_leader_callbacks cb;
    json_t *lease;       /* the Lease as last read or written, or NULL */
    json_t *observed;    /* its spec as last seen to change, or NULL */
    int64_t observed_at; /* when (monotonic ns) */
    int64_t renewed_at;  /* the last successful write while leading (monotonic ns) */
    atomic_bool leading;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* on CLOCK_MONOTONIC */
    bool stopping;
};

kapi_error *kapi_leader_config_check(const kapi_leader_config *c)
{
    int lease = c->lease_ms ? c->lease_ms : KAPI_LEADER_LEASE_MS;
    int renew = c->renew_ms ? c->renew_ms : KAPI_LEADER_RENEW_MS;
    int retry = c->retry_ms ? c->retry_ms : KAPI_LEADER_RETRY_MS;
    const struct {
        bool broken;
        const char *why;
    } rules[] = {
        {lease <= renew, "leaseDuration must be greater than renewDeadline"},
        {renew <= JITTER * retry, "renewDeadline must be greater than retryPeriod*JitterFactor"},
        {lease < 1, "leaseDuration must be greater than zero"},
        {renew < 1, "renewDeadline must be greater than zero"},
        {retry < 1, "retryPeriod must be greater than zero"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(rules); i++)
        if (rules[i].broken)
            return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%s", rules[i].why);
    return NULL;
}

/* Now as a MicroTime: "2006-01-02T15:04:05.000000Z" (UTC), into out. */
static const char *micro_now(char out[32])
{
    int64_t ns = kapi_time_now_ns();
    kapi_time_rfc3339(out, ns / 1000000000);
    snprintf(out + 19, 13, ".%06dZ", (int)(ns % 1000000000 / 1000));
    return out;
}

static const char *spec_str(const json_t *spec, const char *key)
{
    const char *s = json_string_value(json_object_get(spec, key));
    return s ? s : "";
}

static long long spec_transitions(const json_t *spec)
{
    return (long long)json_integer_value(json_object_get(spec, "leaseTransitions"));
}

/* A LeaseSpec as client-go's LeaderElectionRecordToLeaseSpec writes it: every field set. */
static json_t *record(const char *holder, int duration_s, const char *acquire, const char *renew,
                      long long transitions)
{
    return json_pack("{s:s,s:i,s:s,s:s,s:I}", "holderIdentity", holder, "leaseDurationSeconds",
                     duration_s, "acquireTime", acquire, "renewTime", renew, "leaseTransitions",
                     (json_int_t)transitions);
}

/* IsLeader: the record last seen names l. */
static bool is_leader(const kapi_leader *l)
{
    return strcmp(spec_str(l->observed, "holderIdentity"), l->identity) == 0;
}

/* Remembers spec (borrowed), and when it was seen, when it differs from the last one. */
static void observe(kapi_leader *l, const json_t *spec)
{
    if (l->observed && json_equal(l->observed, (json_t *)spec))
        return;
    json_decref(l->observed);
    l->observed = spec ? kapi_json_copy(spec) : json_object();
    l->observed_at = kapi_time_mono_ns();
}

/* Keeps lease (taken) as the last one read or written. */
static void keep(kapi_leader *l, json_t *lease)
{
    json_decref(l->lease);
    l->lease = lease;
}

/* Writes spec (taken) into the Lease: a create when l holds none, else an update at the
 * resourceVersion of l->lease. True when it was written (a lost race is just false). */
static bool put(kapi_leader *l, bool create, json_t *spec)
{
    json_t *out = NULL;
    kapi_error *err;
    if (create) {
        json_t *obj =
            json_pack("{s:s,s:s,s:{s:s,s:s},s:o}", "apiVersion", LEASES_GROUP "/v1", "kind",
                      "Lease", "metadata", "name", l->name, "namespace", l->ns, "spec", spec);
        err = kapi_api_create(l->api, &kapi_controllers_user, l->leases, kapi_str_c(l->ns), obj,
                              &out);
    } else {
        json_t *obj = json_deep_copy(l->lease);
        json_object_set_new_nocheck(obj, "spec", spec);
        err = kapi_api_update(l->api, &kapi_controllers_user, l->leases, "", obj, &out);
    }
    if (err) {
        kapi_error_free(err);
        json_decref(out);
        return false;
    }
    observe(l, json_object_get(out, "spec"));
    keep(l, out);
    return true;
}

static int duration_s(const kapi_leader *l)
{
    return l->lease_ms / 1000 > 0 ? l->lease_ms / 1000 : 1;
}

/* wait.Jitter(retry period, 1.2): the period plus up to 1.2 of it, at random, so that
 * candidates that failed together do not try again together. */
static int64_t jittered(const kapi_leader *l)
{
    uint32_t r;
    kapi_random_bytes(&r, sizeof(r));
    return (int64_t)(l->retry_ms * MS * (1 + JITTER * (r / 4294967296.0)));
}

/* tryAcquireOrRenew: reads the Lease, creates it when there is none, takes it when it is
 * free or expired, renews it when l holds it. */
static bool try_acquire_or_renew(kapi_leader *l)
{
    char now[32];
    json_t *lease = NULL;
    micro_now(now);
    kapi_error *err =
        kapi_api_get(l->api, l->leases, kapi_str_c(l->ns), kapi_str_c(l->name), &lease);
    if (err) {
        bool missing = err->status == KAPI_STATUS_NOT_FOUND;
        kapi_error_free(err);
        return missing && put(l, true, record(l->identity, duration_s(l), now, now, 0));
    }
    keep(l, lease);
    const json_t *spec = json_object_get(lease, "spec");
    observe(l, spec);
    bool held = *spec_str(spec, "holderIdentity") != '\0' &&
                kapi_time_mono_ns() < l->observed_at + l->lease_ms * MS;
    if (held && !is_leader(l))
        return false;
    bool mine = is_leader(l);
    return put(l, false,
               record(l->identity, duration_s(l), mine ? spec_str(spec, "acquireTime") : now, now,
                      spec_transitions(spec) + (mine ? 0 : 1)));
}

/* release: writes the lease free, at the resourceVersion of l's last write, so that a
 * lease someone took meanwhile is left alone. */
static void release(kapi_leader *l)
{
    char now[32];
    if (!l->lease || !is_leader(l))
        return;
    micro_now(now);
    put(l, false, record("", 1, now, now, spec_transitions(l->observed)));
}

static void start_leading(kapi_leader *l)
{
    l->renewed_at = kapi_time_mono_ns();
    atomic_store(&l->leading, true);
    l->cb.started(l->cb.ctx);
}

static void stop_leading(kapi_leader *l)
{
    atomic_store(&l->leading, false);
    l->cb.stopped(l->cb.ctx);
}

/* One turn of the loop: a campaign's try, or a leader's renewal, which ends leading when
 * another holds the lease or the renew deadline passed without a renewal. Returns how
 * long to wait before the next. */
static int64_t turn(kapi_leader *l)
{
    bool ok = try_acquire_or_renew(l);
    if (!atomic_load(&l->leading)) {
        if (ok)
            start_leading(l);
        return ok ? l->retry_ms * MS : jittered(l);
    }
    if (ok)
        l->renewed_at = kapi_time_mono_ns();
    else if (!is_leader(l) || kapi_time_mono_ns() >= l->renewed_at + l->renew_ms * MS)
        stop_leading(l);
    return l->retry_ms * MS;
}

/* Waits, with l->mu held, for ns or until l is stopping. */
static void wait_ns(kapi_leader *l, int64_t ns)
{
    int64_t until = kapi_time_mono_ns() + ns;
    struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
    while (!l->stopping && pthread_cond_timedwait(&l->cond, &l->mu, &ts) == 0)
        ;
}

static void *elector_main(void *arg)
{
    kapi_leader *l = arg;
    pthread_mutex_lock(&l->mu);
    while (!l->stopping) {
        pthread_mutex_unlock(&l->mu);
        int64_t ns = turn(l);
        pthread_mutex_lock(&l->mu);
        wait_ns(l, ns);
    }
    pthread_mutex_unlock(&l->mu);
    if (atomic_load(&l->leading)) {
        stop_leading(l);
        if (l->release)
            release(l);
    }
    return NULL;
}

char *kapi_leader_default_identity(const char *uuid)
{
    char host[256] = "", random[37];
    if (gethostname(host, sizeof(host) - 1) != 0)
        host[0] = '\0';
    if (!uuid)
        kapi_uuid_v4(random);
    return kapi_xprintf("%s_%s", host, uuid ? uuid : random);
}

kapi_leader *kapi_leader_start(kapi_api *api, const kapi_leader_config *c)
{
    kapi_leader *l = kapi_xcalloc(1, sizeof(*l));
    pthread_condattr_t attr;
    l->api = api;
    l->leases = kapi_registry_lookup(kapi_api_registry(api), KAPI_STR(LEASES_GROUP), KAPI_STR("v1"),
                                     KAPI_STR("leases"));
    l->ns = kapi_xstrdup(c->ns ? c->ns : "kube-system");
    l->name = kapi_xstrdup(c->name ? c->name : "kube-controller-manager");
    l->identity = c->identity ? kapi_xstrdup(c->identity) : kapi_leader_default_identity(NULL);
    l->lease_ms = c->lease_ms ? c->lease_ms : KAPI_LEADER_LEASE_MS;
    l->renew_ms = c->renew_ms ? c->renew_ms : KAPI_LEADER_RENEW_MS;
    l->retry_ms = c->retry_ms ? c->retry_ms : KAPI_LEADER_RETRY_MS;
    l->release = c->release;
    l->cb = c->cb;
    atomic_init(&l->leading, false);
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cond, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&l->thread, NULL, elector_main, l) != 0) {
        KAPI_LOG_ERROR("cannot start the leader elector");
        abort();
    }
    pthread_setname_np(l->thread, "kapi-elector");
    return l;
}

bool kapi_leader_leading(const kapi_leader *l)
{
    return atomic_load(&l->leading);
}

const char *kapi_leader_identity(const kapi_leader *l)
{
    return l->identity;
}

void kapi_leader_stop(kapi_leader *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stopping = true;
    pthread_cond_signal(&l->cond);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->mu);
    json_decref(l->lease);
    json_decref(l->observed);
    free(l->ns);
    free(l->name);
    free(l->identity);
    free(l);
}
