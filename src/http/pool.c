/*
 * pool: the worker threads that run the request handler (DESIGN.md invariant 7), and
 * admission to them: a READ or MUTATE request takes one of its class's max_inflight slots
 * when it is queued and gives it back when its answer is done (conn.c), so requests that
 * wait in the queue count; the queue itself holds at most max_queued exchanges.
 */
#include <string.h>

#include "http/http_int.h"

/* The server whose worker this thread is; NULL on any other thread. */
static _Thread_local const kapi_http_server *current_server;

/* Blocks for the next exchange; NULL once stopped and drained. */
static kapi_http_exchange *next_job(kapi_http_pool *p)
{
    kapi_http_exchange *ex;
    pthread_mutex_lock(&p->mu);
    while (!p->head && !p->stop)
        pthread_cond_wait(&p->cv, &p->mu);
    ex = p->head;
    if (ex) {
        p->head = ex->next;
        if (!p->head)
            p->tail = NULL;
        ex->next = NULL;
        p->queued--;
    }
    pthread_mutex_unlock(&p->mu);
    return ex;
}

static void *worker_main(void *arg)
{
    kapi_http_pool *p = arg;
    kapi_http_exchange *ex;
    current_server = p->srv;
    while ((ex = next_job(p)) != NULL)
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
    pthread_cond_init(&p->cv, NULL);
    p->srv = srv;
    p->threads = kapi_xcalloc(n > 0 ? n : 1, sizeof(pthread_t));
    for (int i = 0; i < (n > 0 ? n : 1); i++) {
        int rc;
        pthread_mutex_lock(&p->mu);
        p->alive++;
        pthread_mutex_unlock(&p->mu);
        if ((rc = pthread_create(&p->threads[i], NULL, worker_main, p)) != 0) {
            p->alive--;
            return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "start worker thread: %s",
                                  strerror(rc));
        }
        p->nthreads++;
    }
    return NULL;
}

/* Queues ex unless the queue is full. */
static bool submit(kapi_http_pool *p, kapi_http_exchange *ex)
{
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
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return true;
}

bool kapi_http__pool_admit(kapi_http_pool *p, kapi_http_exchange *ex)
{
    bool counted = ex->cls != KAPI_HTTP_LONG_RUNNING;
    unsigned limit = counted ? p->srv->cfg.max_inflight[ex->cls] : 0;
    if (limit > 0 && p->inflight[ex->cls] >= limit)
        return false;
    if (!submit(p, ex))
        return false;
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
    ex->counted = false;
}

void kapi_http__pool_stop(kapi_http_pool *p, bool notify)
{
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    p->notify = notify;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
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
    if (!p->threads)
        return;
    kapi_http__pool_stop(p, false);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    p->threads = NULL;
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
}

bool kapi_http__on_worker(const kapi_http_server *srv)
{
    return current_server == srv;
}
