/* controllers/runner: the thread of a controller, making one pass every interval. */
#include "controllers/controllers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct kapi_controller {
    kapi_api *api;
    int interval_ms;
    void (*pass)(kapi_api *api);
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stopping;
};

static void *controller_main(void *arg)
{
    kapi_controller *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        pthread_mutex_unlock(&c->mu);
        c->pass(c->api);
        pthread_mutex_lock(&c->mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long long ns = ts.tv_nsec + c->interval_ms * 1000000LL;
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
        if (!c->stopping)
            pthread_cond_timedwait(&c->cond, &c->mu, &ts);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

kapi_controller *kapi_controllers__start(kapi_api *api, const char *name, int interval_ms,
                                         void (*pass)(kapi_api *api))
{
    kapi_controller *c = kapi_xcalloc(1, sizeof(*c));
    c->api = api;
    c->interval_ms = interval_ms;
    c->pass = pass;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cond, NULL);
    if (pthread_create(&c->thread, NULL, controller_main, c) != 0) {
        fprintf(stderr, "kapi: cannot start the %s controller\n", name);
        abort();
    }
    return c;
}

void kapi_controller_stop(kapi_controller *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
