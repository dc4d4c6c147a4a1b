/*
 * holder: a store observer that holds its store's follower while asked to, so that a
 * test can make one instance's cache fall behind etcd (the observer runs on the follower,
 * after the change it is told of is applied).
 */
#ifndef KAPI_TEST_HOLDER_H
#define KAPI_TEST_HOLDER_H

#include <pthread.h>
#include <stdbool.h>

#include "store/store.h"

typedef struct holder {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool hold, held; /* held: the follower is waiting in the observer */
} holder;

#define HOLDER_INIT                                                                                \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false                          \
    }

/* The observer (kapi_store_options.observer, ctx the holder). */
static inline void holder_observe(void *ctx, const kapi_store_event *ev)
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

/* Starts holding at the next change (hold) or lets the follower go (!hold). */
static inline void holder_set(holder *h, bool hold)
{
    pthread_mutex_lock(&h->mu);
    h->hold = hold;
    h->held = false;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

/* Waits until the follower is held. */
static inline void holder_wait_held(holder *h)
{
    pthread_mutex_lock(&h->mu);
    while (!h->held)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

#endif
