/*
 * base/fiber: fibers, and parks a fiber waits on without holding its thread.
 *
 * A fiber runs a function on a stack of its own. A thread runs it (kapi_fiber_run) until
 * the function returns or the fiber parks: kapi_park_wait on a fiber hands the thread back
 * to whoever ran it, and the kapi_park_post that ends the wait gives the fiber to its
 * resume callback, which queues it for a thread to run on again: not necessarily the one it
 * parked on. So a worker that would sleep until a commit is durable instead takes the next
 * request, and a handful of warm threads serve many requests in flight.
 *
 * The same park works on a plain thread (no fiber running): kapi_park_wait then sleeps on
 * a semaphore. The waiting side inits, waits and disposes a park; any other thread posts it
 * once. A park usually lives on the waiter's stack: after kapi_park_post the poster must
 * not touch it.
 *
 * What a fiber must not do, since it may come back on another thread: hold a lock, or a
 * pointer into thread-local storage, across a wait. Thread-local storage is read through
 * functions that are not inlined into one that parks (this file's own are noinline).
 */
#ifndef KAPI_BASE_FIBER_H
#define KAPI_BASE_FIBER_H

#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct kapi_fiber kapi_fiber;

/* Called with the fiber a post ended the wait of, and the ctx given at kapi_fiber_new: it
 * must see to it that some thread calls kapi_fiber_run(f). Runs on the poster's thread. */
typedef void (*kapi_fiber_resume_fn)(kapi_fiber *f, void *ctx);

/* A fiber that will run fn(arg) on its own stack (stacks are kept for reuse). */
kapi_fiber *kapi_fiber_new(void (*fn)(void *arg), void *arg, kapi_fiber_resume_fn resume,
                           void *resume_ctx);
/* Runs f on this thread until its function returns (true: f is freed) or it parks (false:
 * f now belongs to the park's poster, who resumes it). Not on a fiber. */
bool kapi_fiber_run(kapi_fiber *f);
/* The scheduler's link, free for the resume callback's queue while f is not running. */
kapi_fiber **kapi_fiber_link(kapi_fiber *f);
/* True on a fiber. */
bool kapi_fiber_current(void);

typedef struct kapi_park {
    kapi_fiber *fiber; /* the waiter's fiber, or NULL: a thread, on sem */
    atomic_int state;  /* the fiber's: waiting, parked (its thread given back), posted */
    sem_t sem;
    /* A timed wait on a fiber: its place in the timer's list, and whether the timer ended it */
    int64_t deadline;
    struct kapi_park *timer_prev, *timer_next;
    bool expired;
} kapi_park;

void kapi_park_init(kapi_park *k);
/* Returns once k is posted. */
void kapi_park_wait(kapi_park *k);
/* Returns once k is posted (true) or at deadline (monotonic ns; false), whichever comes
 * first. After false a poster may still be about to post k: the waiter must make sure none
 * will (take it off the poster's list under the poster's lock, say) before disposing it. */
bool kapi_park_wait_until(kapi_park *k, int64_t deadline);
/* Posts k: its wait ends. A second post of one wait (after a timeout) does nothing. */
void kapi_park_post(kapi_park *k);
void kapi_park_dispose(kapi_park *k);
/* Sleeps until deadline (monotonic ns); on a fiber, without holding its thread. */
void kapi_fiber_sleep_until(int64_t deadline);

#endif
