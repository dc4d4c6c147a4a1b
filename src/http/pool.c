/*
 * pool: the worker threads that run the request handler (DESIGN.md invariant 7), and
 * admission to them: a READ or MUTATE request takes one of its class's max_inflight slots
 * when it is queued and gives it back when its answer is done (conn.c), so requests that
 * wait in the queue count; the queue itself holds at most max_queued exchanges.
 *
 * Waking: an idle worker sleeps on its own semaphore, on a stack of idle workers, so the
 * one woken is the one idle the shortest time (its stack and caches are warm). One woken
 * worker is enough for any number of queued exchanges: it takes the first and, if more
 * are left, wakes the next one itself, and a worker that finishes a request takes the
 * next one without sleeping. So the loop thread wakes a worker only when none is already
 * on its way to the queue, and most wake-ups (and the context switches they cause) are
 * paid by workers, not by the loop thread.
 */
#include <errno.h>
#include <string.h>

#include "http/http_int.h"
#include "metrics/metrics.h"

/* The server whose worker this thread is; NULL on any other thread. */
static _Thread_local const kapi_http_server *current_server;

/* Under mu: the idle worker to wake for what is queued, taken off the stack and counted as
 * on its way; NULL when one is on its way already, or none is idle (every worker will
 * look at the queue when its request is done). */
static kapi_http_worker *take_idle(kapi_http_pool *p)
{
    kapi_http_worker *w = p->idle;
    if (p->waking > 0 || !w)
        return NULL;
    p->idle = w->next_idle;
    p->waking++;
    return w;
}

/* Outside mu: lets w, taken off the idle stack, run (NULL: nobody to wake). */
static void wake(kapi_http_worker *w)
{
    if (w)
        sem_post(&w->sem);
}

/* Under mu: sleeps on the idle stack until another thread wakes w. */
static void sleep_idle(kapi_http_pool *p, kapi_http_worker *w)
{
    w->next_idle = p->idle;
    p->idle = w;
    pthread_mutex_unlock(&p->mu);
    while (sem_wait(&w->sem) != 0 && errno == EINTR)
        ;
    pthread_mutex_lock(&p->mu);
    p->waking--;
}

/* Blocks for the next exchange; NULL once stopped and drained. Wakes another worker for
 * what it leaves in the queue. */
static kapi_http_exchange *next_job(kapi_http_pool *p, kapi_http_worker *w)
{
    kapi_http_exchange *ex;
    kapi_http_worker *next = NULL;
    pthread_mutex_lock(&p->mu);
    while (!p->head && !p->stop)
        sleep_idle(p, w);
    ex = p->head;
    if (ex) {
        p->head = ex->next;
        if (!p->head)
            p->tail = NULL;
        ex->next = NULL;
        p->queued--;
    }
    if (p->head)
        next = take_idle(p);
    pthread_mutex_unlock(&p->mu);
    wake(next);
    return ex;
}

static void *worker_main(void *arg)
{
    kapi_http_worker *w = arg;
    kapi_http_pool *p = w->pool;
    kapi_http_exchange *ex;
    current_server = p->srv;
    while ((ex = next_job(p, w)) != NULL)
        p->srv->cfg.handler(&ex->pub, p->srv->cfg.handler_ctx);
    bool notify;
    pthread_mutex_lock(&p->mu);
    p->alive--;
    notify = p->notify;
    pthread_mutex_unlock(&p->mu);
    /* Wakes the loop to see that this worker is gone; the async handle outlives us
     * because the loop joins every worker before closing it. */
    if (notify)
        uv_async_send(&p->srv->async);
    return NULL;
}

kapi_error *kapi_http__pool_init(kapi_http_pool *p, kapi_http_server *srv, int n)
{
    memset(p, 0, sizeof(*p));
    pthread_mutex_init(&p->mu, NULL);
    p->srv = srv;
    n = n > 0 ? n : 1;
    p->workers = kapi_xcalloc(n, sizeof(*p->workers));
    for (int i = 0; i < n; i++) {
        kapi_http_worker *w = &p->workers[i];
        int rc;
        w->pool = p;
        sem_init(&w->sem, 0, 0);
        pthread_mutex_lock(&p->mu);
        p->alive++;
        pthread_mutex_unlock(&p->mu);
        if ((rc = pthread_create(&w->thread, NULL, worker_main, w)) != 0) {
            p->alive--;
            sem_destroy(&w->sem);
            return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "start worker thread: %s",
                                  strerror(rc));
        }
        pthread_setname_np(w->thread, "kapi-worker");
        p->nthreads++;
    }
    return NULL;
}

/* Queues ex unless the queue is full, and wakes a worker for it if none is on its way. */
static bool submit(kapi_http_pool *p, kapi_http_exchange *ex)
{
    kapi_http_worker *w;
    pthread_mutex_lock(&p->mu);
    if (p->queued >= p->srv->cfg.max_queued) {
        pthread_mutex_unlock(&p->mu);
        return false;
    }
    p->queued++;
    ex->next = NULL;
    if (p->tail)
        p->tail->next = ex;
    else
        p->head = ex;
    p->tail = ex;
    w = take_idle(p);
    pthread_mutex_unlock(&p->mu);
    wake(w);
    return true;
}

/* kube-apiserver's in-flight gauge, by its request kinds: the slots held (READ, MUTATE). */
static kapi_metric inflight = KAPI_METRIC_GAUGE_DEF(
    "apiserver_current_inflight_requests",
    "Maximal number of currently used inflight request limit of this apiserver per request "
    "kind in last second.",
    "request_kind", NULL);
static const char *const request_kinds[2][1] = {{"readOnly"}, {"mutating"}};

/* Moves the in-flight gauge of cls by delta. Its series is found on first use (a series
 * appears in the exposition once a request of its kind has come) and kept: a gauge's
 * series moves by a delta added as a counter's is (two's complement, as
 * kapi_metrics_gauge_add adds it). */
static void inflight_add(kapi_http_pool *p, kapi_http_class cls, int64_t delta)
{
    if (!p->inflight_series[cls])
        p->inflight_series[cls] = kapi_metrics_series(&inflight, request_kinds[cls]);
    kapi_metrics_series_add(p->inflight_series[cls], (uint64_t)delta);
}

bool kapi_http__pool_admit(kapi_http_pool *p, kapi_http_exchange *ex)
{
    bool counted = ex->cls != KAPI_HTTP_LONG_RUNNING;
    unsigned limit = counted ? p->srv->cfg.max_inflight[ex->cls] : 0;
    if (limit > 0 && p->inflight[ex->cls] >= limit)
        return false;
    /* counted in the gauge before a worker may see it (a scrape counts itself) */
    if (counted)
        inflight_add(p, ex->cls, 1);
    if (!submit(p, ex)) {
        if (counted)
            inflight_add(p, ex->cls, -1);
        return false;
    }
    if (counted)
        p->inflight[ex->cls]++;
    ex->counted = counted; /* the loop's field: the handler reads only ex->pub */
    return true;
}

void kapi_http__pool_release(kapi_http_pool *p, kapi_http_exchange *ex)
{
    if (!ex || !ex->counted)
        return;
    p->inflight[ex->cls]--;
    inflight_add(p, ex->cls, -1);
    ex->counted = false;
}

void kapi_http__pool_stop(kapi_http_pool *p, bool notify)
{
    kapi_http_worker *idle;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    p->notify = notify;
    idle = p->idle;
    p->idle = NULL;
    for (kapi_http_worker *w = idle; w; w = w->next_idle)
        p->waking++;
    pthread_mutex_unlock(&p->mu);
    while (idle) {
        kapi_http_worker *next = idle->next_idle;
        wake(idle);
        idle = next;
    }
}

bool kapi_http__pool_exited(kapi_http_pool *p)
{
    bool exited;
    pthread_mutex_lock(&p->mu);
    exited = p->stop && p->alive == 0;
    pthread_mutex_unlock(&p->mu);
    return exited;
}

void kapi_http__pool_dispose(kapi_http_pool *p)
{
    if (!p->workers)
        return;
    kapi_http__pool_stop(p, false);
    for (int i = 0; i < p->nthreads; i++) {
        pthread_join(p->workers[i].thread, NULL);
        sem_destroy(&p->workers[i].sem);
    }
    free(p->workers);
    p->workers = NULL;
    pthread_mutex_destroy(&p->mu);
}

bool kapi_http__on_worker(const kapi_http_server *srv)
{
    return current_server == srv;
}
