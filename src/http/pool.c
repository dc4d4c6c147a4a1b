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
 *
 * Fibers: each exchange's handler runs on a fiber (base/fiber.h). A handler that waits
 * on a park (a write waiting for its commit) gives its worker back, and the post that ends
 * the wait queues the fiber for a worker, ahead of new exchanges. So a write's worker does
 * not sleep until the commit: it takes the next request, and a commit's batch of writers
 * goes on on the few workers awake instead of waking one sleeping thread each. A fiber goes
 * back to the worker that began it (woken if idle): what the handler allocated before the
 * wait is that thread's heap's, and freeing it on another thread costs the allocator a
 * hand-back per block (merge patches cost 40 % more CPU so). Only when that worker has been
 * on one job for STEAL_NS (a webhook, a slow stream) does the fiber go to any worker, and a
 * worker with nothing to do takes such fibers from a busy one, so none waits behind a long
 * job. Workers exit once stopped with nothing queued and no handler unfinished, so a
 * parked handler always has a worker to come back to.
 *
 * Scheduling: workers run under SCHED_BATCH, which takes them out of the kernel's wake-up
 * preemption. The loop thread and the store's committer wake workers all the time (a
 * request to handle, a commit's parked writers); under the default policy the woken
 * worker takes the core from its waker at once, and the loop or the committer, the
 * serial parts every request goes through, wait behind it. Now a woken worker waits for a
 * free core or for its waker's turn to end. Where the system refuses the policy, workers
 * keep the default one.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "http/http_int.h"
#include "metrics/metrics.h"

/* The server whose worker this thread is; NULL on any other thread. */
static _Thread_local const kapi_http_server *current_server;

/* How long a worker may be on one job before the fibers waiting for it go to others. */
#define STEAL_NS 1000000LL
/* The workers started with the pool; the others start when work finds none idle, so an
 * idle kapi keeps neither their stacks nor their heaps (64 workers were 0.8 MB of RSS). */
#define FIRST_WORKERS 4

/* Under mu: the idle worker to wake for what is queued, taken off the stack and counted as
 * on its way; NULL when one is on its way already, or none is idle (every worker will
 * look at the queue when its request is done). */
static kapi_http_worker *take_idle(kapi_http_pool *p)
{
    kapi_http_worker *w = p->idle;
    if (p->waking > 0 || !w)
        return NULL;
    p->idle = w->next_idle;
    w->idle = false;
    p->waking++;
    return w;
}

/* Under mu: takes w, on the idle stack, off it. */
static void unlink_idle(kapi_http_pool *p, kapi_http_worker *w)
{
    kapi_http_worker **at = &p->idle;
    while (*at != w)
        at = &(*at)->next_idle;
    *at = w->next_idle;
    w->idle = false;
}

/* Under mu: takes w itself off the idle stack, as on its way. */
static void take_this_idle(kapi_http_pool *p, kapi_http_worker *w)
{
    unlink_idle(p, w);
    p->waking++;
}

/* Outside mu: lets w, taken off the idle stack, run (NULL: nobody to wake). */
static void wake(kapi_http_worker *w)
{
    if (w)
        sem_post(&w->sem);
}

/* Under mu: the next worker to start, counted as on its way; NULL when all are started
 * or the pool stops. start_worker starts it, outside mu. */
static kapi_http_worker *reserve_next(kapi_http_pool *p)
{
    if (p->stop || p->nthreads >= p->size)
        return NULL;
    kapi_http_worker *w = &p->workers[p->nthreads++];
    w->pool = p;
    w->mine_tail = &w->mine;
    w->state = KAPI_HTTP__RESERVED;
    sem_init(&w->sem, 0, 0);
    p->alive++;
    p->waking++;
    return w;
}

/* Under mu: a worker to start for work that found no worker idle nor on its way, or NULL. */
static kapi_http_worker *reserve(kapi_http_pool *p)
{
    return p->idle || p->waking ? NULL : reserve_next(p);
}

static void *worker_main(void *arg);

/* Outside mu: starts w, reserved (NULL: none); 0 or pthread_create's error, in which case
 * w never runs and is counted out. */
static int start_worker(kapi_http_pool *p, kapi_http_worker *w)
{
    if (!w)
        return 0;
    int rc = pthread_create(&w->thread, NULL, worker_main, w);
    if (rc == 0)
        pthread_setname_np(w->thread, "kapi-worker");
    pthread_mutex_lock(&p->mu);
    w->state = rc == 0 ? KAPI_HTTP__STARTED : KAPI_HTTP__FAILED;
    if (rc != 0) {
        p->alive--;
        p->waking--;
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/* Under mu: a worker that has been on its job STEAL_NS with fibers waiting for it, or
 * NULL; *any_waiting: some worker has fibers waiting (it may be busy for long yet). */
static kapi_http_worker *stranded(kapi_http_pool *p, int64_t now, bool *any_waiting)
{
    *any_waiting = false;
    for (int i = 0; i < p->nthreads; i++) {
        kapi_http_worker *o = &p->workers[i];
        if (!o->mine || !o->busy_since)
            continue;
        if (now - o->busy_since >= STEAL_NS)
            return o;
        *any_waiting = true;
    }
    return NULL;
}

/* Under mu: sleeps on the idle stack until another thread wakes w, or for STEAL_NS when
 * bounded (fibers wait for a busy worker: w looks again then). */
static void sleep_idle(kapi_http_pool *p, kapi_http_worker *w, bool bounded)
{
    w->next_idle = p->idle;
    p->idle = w;
    w->idle = true;
    p->watching += bounded;
    pthread_mutex_unlock(&p->mu);
    int rc;
    if (bounded) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long long ns = ts.tv_nsec + STEAL_NS;
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
        while ((rc = sem_timedwait(&w->sem, &ts)) != 0 && errno == EINTR)
            ;
    } else {
        while ((rc = sem_wait(&w->sem)) != 0 && errno == EINTR)
            ;
    }
    pthread_mutex_lock(&p->mu);
    p->watching -= bounded;
    if (rc == 0) {
        p->waking--;
    } else if (w->idle) { /* timed out, still on the stack */
        unlink_idle(p, w);
    } else { /* timed out as another thread took it: its post is on the way */
        pthread_mutex_unlock(&p->mu);
        while (sem_wait(&w->sem) != 0 && errno == EINTR)
            ;
        pthread_mutex_lock(&p->mu);
        p->waking--;
    }
}

/* Under mu: takes every idle worker off the stack, as on its way (the list to wake). */
static kapi_http_worker *take_all_idle(kapi_http_pool *p)
{
    kapi_http_worker *idle = p->idle;
    p->idle = NULL;
    for (kapi_http_worker *w = idle; w; w = w->next_idle) {
        w->idle = false;
        p->waking++;
    }
    return idle;
}

/* Outside mu: wakes every worker of a list take_all_idle made. */
static void wake_all(kapi_http_worker *idle)
{
    while (idle) {
        kapi_http_worker *next = idle->next_idle;
        wake(idle);
        idle = next;
    }
}

/* Under mu: the first fiber of a list (head, tail), taken off it. */
static kapi_fiber *pop_fiber(kapi_fiber **head, kapi_fiber ***tail)
{
    kapi_fiber *f = *head;
    if (f) {
        *head = *kapi_fiber_link(f);
        if (!*head)
            *tail = head;
    }
    return f;
}

/* Under mu: f at the end of a list (head, tail). */
static void push_fiber(kapi_fiber ***tail, kapi_fiber *f)
{
    *kapi_fiber_link(f) = NULL;
    **tail = f;
    *tail = kapi_fiber_link(f);
}

/* What a worker runs next: a resumed fiber, or a new exchange to start one for. */
typedef struct job {
    kapi_fiber *fiber;
    kapi_http_exchange *ex;
} job;

/* Blocks for the next job; false once stopped and drained. finished: the worker's last
 * fiber returned. Wakes another worker for what it leaves queued. */
static bool next_job(kapi_http_pool *p, kapi_http_worker *w, bool finished, job *j)
{
    kapi_http_worker *next = NULL, *all = NULL;
    pthread_mutex_lock(&p->mu);
    if (finished)
        p->fibers--;
    w->busy_since = 0;
    *j = (job){NULL, NULL};
    for (;;) {
        if ((j->fiber = pop_fiber(&w->mine, &w->mine_tail)) != NULL ||
            (j->fiber = pop_fiber(&p->resumed, &p->resumed_tail)) != NULL)
            break;
        if ((j->ex = p->head) != NULL) {
            p->head = j->ex->next;
            if (!p->head)
                p->tail = NULL;
            j->ex->next = NULL;
            p->queued--;
            p->fibers++;
            break;
        }
        bool any_waiting;
        kapi_http_worker *o = stranded(p, kapi_time_mono_ns(), &any_waiting);
        if (o) {
            j->fiber = pop_fiber(&o->mine, &o->mine_tail);
            break;
        }
        if (p->stop && p->fibers == 0) { /* stopped and drained: every sleeper exits too */
            all = take_all_idle(p);
            break;
        }
        sleep_idle(p, w, any_waiting && !p->watching); /* one watcher is enough */
    }
    if (j->fiber || j->ex)
        w->busy_since = kapi_time_mono_ns();
    kapi_http_worker *fresh = NULL;
    if ((p->head || p->resumed) && !(next = take_idle(p)))
        fresh = reserve(p);
    pthread_mutex_unlock(&p->mu);
    wake(next);
    wake_all(all);
    start_worker(p, fresh);
    return j->fiber || j->ex;
}

/* The bottom of a handler's fiber. */
static void run_exchange(void *arg)
{
    kapi_http_exchange *ex = arg;
    const kapi_http_server *srv = current_server;
    srv->cfg.handler(&ex->pub, srv->cfg.handler_ctx);
}

/* A parked handler's wait ended (on the poster's thread): back to the worker that began
 * it (ctx), woken if idle, unless that one has been busy STEAL_NS: then to any worker.
 * Left with a busy worker, it is looked after by an idle worker that sleeps STEAL_NS at a
 * time (one is woken for it if none does), so that it does not wait out a long job. */
static void resume(kapi_fiber *f, void *ctx)
{
    kapi_http_worker *home = ctx, *w = NULL, *fresh = NULL;
    kapi_http_pool *p = home->pool;
    pthread_mutex_lock(&p->mu);
    if (home->busy_since && kapi_time_mono_ns() - home->busy_since >= STEAL_NS) {
        push_fiber(&p->resumed_tail, f);
        if (!(w = take_idle(p)))
            fresh = reserve(p);
    } else {
        push_fiber(&home->mine_tail, f);
        if (home->idle) {
            take_this_idle(p, home);
            w = home;
        } else if (!p->watching && !(w = take_idle(p))) {
            /* someone must look again should home's job go on */
            fresh = reserve(p);
        }
    }
    pthread_mutex_unlock(&p->mu);
    wake(w);
    start_worker(p, fresh);
}

static void *worker_main(void *arg)
{
    kapi_http_worker *w = arg;
    kapi_http_pool *p = w->pool;
    bool finished = false;
    job j;
    current_server = p->srv;
#ifdef SCHED_BATCH
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &(struct sched_param){0});
#endif
    pthread_mutex_lock(&p->mu);
    p->waking--; /* started as on its way: it looks at the queue now */
    pthread_mutex_unlock(&p->mu);
    while (next_job(p, w, finished, &j))
        finished =
            kapi_fiber_run(j.fiber ? j.fiber : kapi_fiber_new(run_exchange, j.ex, resume, w));
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
    p->resumed_tail = &p->resumed;
    p->srv = srv;
    p->size = n > 0 ? n : 1;
    p->workers = kapi_xcalloc((size_t)p->size, sizeof(*p->workers));
    for (int i = 0; i < p->size && i < FIRST_WORKERS; i++) {
        pthread_mutex_lock(&p->mu);
        kapi_http_worker *w = reserve_next(p);
        pthread_mutex_unlock(&p->mu);
        int rc = start_worker(p, w);
        if (rc != 0)
            return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "start worker thread: %s",
                                  strerror(rc));
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
    kapi_http_worker *fresh = (w = take_idle(p)) ? NULL : reserve(p);
    pthread_mutex_unlock(&p->mu);
    wake(w);
    start_worker(p, fresh);
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
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    p->notify = notify;
    kapi_http_worker *idle = take_all_idle(p);
    pthread_mutex_unlock(&p->mu);
    wake_all(idle);
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
        kapi_http_worker *w = &p->workers[i];
        pthread_mutex_lock(&p->mu);
        while (w->state == KAPI_HTTP__RESERVED) { /* its starter is about to say */
            pthread_mutex_unlock(&p->mu);
            sched_yield();
            pthread_mutex_lock(&p->mu);
        }
        bool started = w->state == KAPI_HTTP__STARTED;
        pthread_mutex_unlock(&p->mu);
        if (started)
            pthread_join(w->thread, NULL);
        sem_destroy(&w->sem);
    }
    free(p->workers);
    p->workers = NULL;
    pthread_mutex_destroy(&p->mu);
}

bool kapi_http__on_worker(const kapi_http_server *srv)
{
    return current_server == srv;
}
