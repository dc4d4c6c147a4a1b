/* Unit tests for src/base/fiber: running, parking, posting from other threads, resuming on
 * another thread, and parks on plain threads. */
#include <pthread.h>
#include <stdatomic.h>

#include "base/base.h"
#include "base/fiber.h"
#include "test.h"

/* A queue of resumed fibers that runner threads take from. */
typedef struct runq {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    kapi_fiber *head, **tail;
    atomic_int finished;
    int want; /* runners stop once this many fibers finished */
} runq;

static void runq_init(runq *q, int want)
{
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cond, NULL);
    q->head = NULL;
    q->tail = &q->head;
    atomic_init(&q->finished, 0);
    q->want = want;
}

static void resume(kapi_fiber *f, void *ctx)
{
    runq *q = ctx;
    pthread_mutex_lock(&q->mu);
    *kapi_fiber_link(f) = NULL;
    *q->tail = f;
    q->tail = kapi_fiber_link(f);
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->mu);
}

/* Runs resumed fibers until q->want of them finished. */
static void *runner(void *arg)
{
    runq *q = arg;
    pthread_mutex_lock(&q->mu);
    while (atomic_load(&q->finished) < q->want) {
        kapi_fiber *f = q->head;
        if (!f) {
            pthread_cond_wait(&q->cond, &q->mu);
            continue;
        }
        q->head = *kapi_fiber_link(f);
        if (!q->head)
            q->tail = &q->head;
        pthread_mutex_unlock(&q->mu);
        if (kapi_fiber_run(f))
            atomic_fetch_add(&q->finished, 1);
        pthread_mutex_lock(&q->mu);
        pthread_cond_broadcast(&q->cond);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* A park, and whether its waiter has made it ready for a post. */
typedef struct waiting {
    kapi_park park;
    atomic_bool ready;
} waiting;

/* Posts a waiting's park once it is ready. */
static void *post_when_ready(void *arg)
{
    waiting *w = arg;
    while (!atomic_load(&w->ready))
        ;
    kapi_park_post(&w->park);
    return NULL;
}

typedef struct task {
    waiting w;
    int before, after;
    bool on_fiber;
    pthread_t ran_on, came_back_on;
    bool post_itself; /* posts its own park before waiting */
} task;

/* pthread_self is a const function: the compiler may keep its first answer across the
 * park, which is what fiber.h warns of. */
__attribute__((noinline)) static pthread_t self(void)
{
    pthread_t me = pthread_self();
    __asm__ volatile("" : "+m"(me));
    return me;
}

static void task_fn(void *arg)
{
    task *t = arg;
    t->on_fiber = kapi_fiber_current();
    t->ran_on = self();
    t->before = 1;
    kapi_park_init(&t->w.park);
    if (t->post_itself)
        kapi_park_post(&t->w.park);
    atomic_store(&t->w.ready, true);
    kapi_park_wait(&t->w.park);
    kapi_park_dispose(&t->w.park);
    t->came_back_on = self();
    t->after = t->before + 1;
}

static void plain_fn(void *arg)
{
    (*(int *)arg)++;
}

TEST(fiber_runs_to_the_end)
{
    int n = 41;
    runq q;
    runq_init(&q, 1);
    CHECK(!kapi_fiber_current());
    CHECK(kapi_fiber_run(kapi_fiber_new(plain_fn, &n, resume, &q)));
    CHECK_INT_EQ(n, 42);
    CHECK(!kapi_fiber_current());
}

TEST(fiber_parks_and_comes_back_on_another_thread)
{
    runq q;
    runq_init(&q, 1);
    task t = {.before = 0};
    atomic_init(&t.w.ready, false);
    CHECK(!kapi_fiber_run(kapi_fiber_new(task_fn, &t, resume, &q)));
    CHECK(t.on_fiber);
    CHECK_INT_EQ(t.before, 1);
    CHECK_INT_EQ(t.after, 0); /* parked: the thread came back */
    CHECK(q.head == NULL);    /* nothing resumed before the post */
    pthread_t other;
    pthread_create(&other, NULL, runner, &q);
    kapi_park_post(&t.w.park);
    pthread_join(other, NULL);
    CHECK_INT_EQ(t.after, 2);
    CHECK(pthread_equal(t.ran_on, pthread_self()));
    CHECK(pthread_equal(t.came_back_on, other));
}

TEST(fiber_posted_before_it_waits_goes_on)
{
    runq q;
    runq_init(&q, 1);
    task t = {.post_itself = true};
    atomic_init(&t.w.ready, false);
    CHECK(kapi_fiber_run(kapi_fiber_new(task_fn, &t, resume, &q)));
    CHECK_INT_EQ(t.after, 2);
    CHECK(pthread_equal(t.came_back_on, pthread_self()));
}

/* A park on a thread that runs no fiber sleeps on its semaphore. */
TEST(fiber_park_on_a_plain_thread)
{
    task t = {.before = 0};
    atomic_init(&t.w.ready, false);
    pthread_t poster;
    pthread_create(&poster, NULL, post_when_ready, &t.w);
    task_fn(&t);
    pthread_join(poster, NULL);
    CHECK(!t.on_fiber);
    CHECK_INT_EQ(t.after, 2);
}

/* Many fibers, posted by one thread as soon as each is ready (often while its runner is
 * still switching away from it), resumed by two runners. */
#define STRESS 2000
static task tasks[STRESS];

static void *poster_all(void *arg)
{
    (void)arg;
    for (int i = 0; i < STRESS; i++) {
        while (!atomic_load(&tasks[i].w.ready))
            ;
        kapi_park_post(&tasks[i].w.park);
    }
    return NULL;
}

TEST(fiber_park_post_races)
{
    runq q;
    runq_init(&q, STRESS);
    for (int i = 0; i < STRESS; i++) {
        tasks[i] = (task){.before = 0};
        atomic_init(&tasks[i].w.ready, false);
    }
    pthread_t runners[2], poster;
    for (int i = 0; i < 2; i++)
        pthread_create(&runners[i], NULL, runner, &q);
    pthread_create(&poster, NULL, poster_all, NULL);
    for (int i = 0; i < STRESS; i++)
        if (kapi_fiber_run(kapi_fiber_new(task_fn, &tasks[i], resume, &q)))
            atomic_fetch_add(&q.finished, 1);
    pthread_join(poster, NULL);
    pthread_mutex_lock(&q.mu);
    pthread_cond_broadcast(&q.cond);
    pthread_mutex_unlock(&q.mu);
    for (int i = 0; i < 2; i++)
        pthread_join(runners[i], NULL);
    int done = 0;
    for (int i = 0; i < STRESS; i++)
        done += tasks[i].after == 2;
    CHECK_INT_EQ(done, STRESS);
    CHECK_INT_EQ(atomic_load(&q.finished), STRESS);
}

/* Timed waits: a fiber's ends at its deadline (the timer resumes it) or at the post. */
typedef struct timed {
    waiting w;
    int64_t deadline, ended;
    bool posted;
    bool sleep; /* kapi_fiber_sleep_until instead */
} timed;

static void timed_fn(void *arg)
{
    timed *t = arg;
    if (t->sleep) {
        kapi_fiber_sleep_until(t->deadline);
        t->ended = kapi_time_mono_ns();
        return;
    }
    kapi_park_init(&t->w.park);
    atomic_store(&t->w.ready, true);
    t->posted = kapi_park_wait_until(&t->w.park, t->deadline);
    t->ended = kapi_time_mono_ns();
    kapi_park_dispose(&t->w.park);
}

TEST(fiber_timed_waits)
{
    runq q;
    runq_init(&q, 1);
    pthread_t r;
    /* nobody posts: the deadline ends it, on the runner */
    timed t = {.deadline = kapi_time_mono_ns() + 20000000};
    atomic_init(&t.w.ready, false);
    CHECK(!kapi_fiber_run(kapi_fiber_new(timed_fn, &t, resume, &q)));
    pthread_create(&r, NULL, runner, &q);
    pthread_join(r, NULL);
    CHECK(!t.posted);
    CHECK(t.ended >= t.deadline);
    /* posted long before its deadline */
    runq_init(&q, 1);
    timed u = {.deadline = kapi_time_mono_ns() + 60 * 1000000000LL};
    atomic_init(&u.w.ready, false);
    pthread_t p;
    pthread_create(&p, NULL, post_when_ready, &u.w);
    if (kapi_fiber_run(kapi_fiber_new(timed_fn, &u, resume, &q))) {
        atomic_fetch_add(&q.finished, 1);
    } else {
        pthread_create(&r, NULL, runner, &q);
        pthread_join(r, NULL);
    }
    pthread_join(p, NULL);
    CHECK(u.posted);
    CHECK(u.ended < u.deadline);
    /* a sleep */
    runq_init(&q, 1);
    timed v = {.deadline = kapi_time_mono_ns() + 10000000, .sleep = true};
    atomic_init(&v.w.ready, false);
    CHECK(!kapi_fiber_run(kapi_fiber_new(timed_fn, &v, resume, &q)));
    pthread_create(&r, NULL, runner, &q);
    pthread_join(r, NULL);
    CHECK(v.ended >= v.deadline);
}

TEST(fiber_timed_wait_on_a_plain_thread)
{
    kapi_park k;
    kapi_park_init(&k);
    int64_t deadline = kapi_time_mono_ns() + 20000000;
    CHECK(!kapi_park_wait_until(&k, deadline));
    CHECK(kapi_time_mono_ns() >= deadline);
    kapi_park_post(&k);
    CHECK(kapi_park_wait_until(&k, kapi_time_mono_ns() + 20000000));
    kapi_park_dispose(&k);
    int64_t until = kapi_time_mono_ns() + 5000000;
    kapi_fiber_sleep_until(until);
    CHECK(kapi_time_mono_ns() >= until);
}
