/*
 * base/fiber: see fiber.h. On x86-64 a switch saves the callee-saved registers and the
 * floating-point control words on the stack it leaves and loads the other's (no system
 * call, unlike swapcontext's signal mask); elsewhere (or built with KAPI_FIBER_UCONTEXT
 * defined) ucontext does it. Stacks are mmap'd at
 * the threads' default stack size with a guard page below, and kept for reuse.
 */
#include "base/fiber.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define ASAN_FIBERS 1
#endif

#if defined(__x86_64__) && !defined(KAPI_FIBER_UCONTEXT)
#define SWITCH_ASM 1
#else
#include <ucontext.h>
#endif

enum { WAITING, PARKED, POSTED };

#define KEPT_FIBERS 64 /* fibers (and their stacks) kept for reuse */

struct kapi_fiber {
    void (*fn)(void *arg);
    void *arg;
    kapi_fiber_resume_fn resume;
    void *resume_ctx;
    kapi_fiber *link;   /* the resume callback's queue; the kept list */
    kapi_park *parking; /* set by the fiber as it parks, read by its thread */
    bool done;
    char *stack; /* lowest usable byte (above the guard page) */
    size_t stack_size;
#if SWITCH_ASM
    void *sp; /* the saved stack pointer while not running */
#else
    ucontext_t uc;
#endif
#if ASAN_FIBERS
    void *fake_stack;
    const void *thread_bottom; /* the stack of the thread running it, for switching back */
    size_t thread_size;
#endif
};

/* ---- the switch ---- */

#if SWITCH_ASM
/* kapi_fiber__switch(save, to): saves this stack's pointer in *save and continues on the
 * stack whose saved pointer is to. A new stack starts in kapi_fiber__entry with the fiber
 * in r12. */
void kapi_fiber__switch(void **save, void *to);
void kapi_fiber__entry(void);
__asm__(".text\n"
        ".globl kapi_fiber__switch\n"
        ".type kapi_fiber__switch,@function\n"
        "kapi_fiber__switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  subq $8, %rsp\n"
        "  stmxcsr (%rsp)\n"
        "  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n"
        "  fldcw 4(%rsp)\n"
        "  addq $8, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size kapi_fiber__switch,.-kapi_fiber__switch\n"
        ".globl kapi_fiber__entry\n"
        ".type kapi_fiber__entry,@function\n"
        "kapi_fiber__entry:\n"
        "  movq %r12, %rdi\n"
        "  call kapi_fiber__main\n"
        "  ud2\n"
        ".size kapi_fiber__entry,.-kapi_fiber__entry\n");
#endif

/* The thread's own stack while a fiber runs on it, and the fiber running. Read through
 * these, never inlined and opaque to the compiler (not const functions whose answers it
 * may keep), so that code that parks reads them again on the thread it wakes on. */
#define OPAQUE(p) __asm__ volatile("" : "+r"(p))
#if SWITCH_ASM
static _Thread_local void *thread_sp;
__attribute__((noinline)) static void **thread_slot(void)
{
    void **p = &thread_sp;
    OPAQUE(p);
    return p;
}
#else
static _Thread_local ucontext_t thread_uc;
__attribute__((noinline)) static ucontext_t *thread_slot(void)
{
    ucontext_t *p = &thread_uc;
    OPAQUE(p);
    return p;
}
#endif
static _Thread_local kapi_fiber *running;
__attribute__((noinline)) static kapi_fiber *running_fiber(void)
{
    kapi_fiber *f = running;
    OPAQUE(f);
    return f;
}
__attribute__((noinline)) static void set_running(kapi_fiber *f)
{
    OPAQUE(f);
    running = f;
}

bool kapi_fiber_current(void)
{
    return running_fiber() != NULL;
}

/* From the thread into f. */
static void switch_in(kapi_fiber *f)
{
#if ASAN_FIBERS
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, f->stack, f->stack_size);
#endif
#if SWITCH_ASM
    kapi_fiber__switch(thread_slot(), f->sp);
#else
    swapcontext(thread_slot(), &f->uc);
#endif
#if ASAN_FIBERS
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

#if ASAN_FIBERS
/* On f, as it starts or comes back: where the thread's stack is, to switch back to it. */
static void arrived(kapi_fiber *f)
{
    __sanitizer_finish_switch_fiber(f->fake_stack, &f->thread_bottom, &f->thread_size);
}
#endif

/* From f back to the thread running it (for good when f is done). */
static void switch_out(kapi_fiber *f)
{
#if ASAN_FIBERS
    __sanitizer_start_switch_fiber(f->done ? NULL : &f->fake_stack, f->thread_bottom,
                                   f->thread_size);
#endif
#if SWITCH_ASM
    kapi_fiber__switch(&f->sp, *thread_slot());
#else
    swapcontext(&f->uc, thread_slot());
#endif
#if ASAN_FIBERS
    arrived(f);
#endif
}

/* The bottom frame of every fiber. */
void kapi_fiber__main(kapi_fiber *f);
void kapi_fiber__main(kapi_fiber *f)
{
#if ASAN_FIBERS
    f->fake_stack = NULL;
    arrived(f);
#endif
    f->fn(f->arg);
    f->done = true;
    switch_out(f);
    abort(); /* a done fiber is never switched to */
}

#if !SWITCH_ASM
static void uc_main(void)
{
    kapi_fiber__main(running_fiber());
}
#endif

/* ---- fibers and their stacks ---- */

static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static kapi_fiber *kept;
static size_t nkept;

static size_t stack_size(void)
{
    static size_t size;
    if (!size) {
        pthread_attr_t attr;
        size_t s = 8u << 20;
        if (pthread_getattr_default_np(&attr) == 0) {
            pthread_attr_getstacksize(&attr, &s);
            pthread_attr_destroy(&attr);
        }
        size = s < (1u << 20) ? (1u << 20) : s;
    }
    return size;
}

static kapi_fiber *fiber_alloc(void)
{
    pthread_mutex_lock(&kept_mu);
    kapi_fiber *f = kept;
    if (f) {
        kept = f->link;
        nkept--;
    }
    pthread_mutex_unlock(&kept_mu);
    if (f)
        return f;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), size = stack_size();
    char *m = mmap(NULL, size + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (m == MAP_FAILED) {
        fputs("kapi: out of memory for a fiber's stack\n", stderr);
        abort();
    }
    mprotect(m, page, PROT_NONE);
    f = kapi_xcalloc(1, sizeof(*f));
    f->stack = m + page;
    f->stack_size = size;
    return f;
}

static void fiber_release(kapi_fiber *f)
{
    pthread_mutex_lock(&kept_mu);
    if (nkept < KEPT_FIBERS) {
        f->link = kept;
        kept = f;
        nkept++;
        f = NULL;
    }
    pthread_mutex_unlock(&kept_mu);
    if (f) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        munmap(f->stack - page, f->stack_size + page);
        free(f);
    }
}

kapi_fiber *kapi_fiber_new(void (*fn)(void *arg), void *arg, kapi_fiber_resume_fn resume,
                           void *resume_ctx)
{
    kapi_fiber *f = fiber_alloc();
    f->fn = fn;
    f->arg = arg;
    f->resume = resume;
    f->resume_ctx = resume_ctx;
    f->link = NULL;
    f->parking = NULL;
    f->done = false;
#if ASAN_FIBERS
    __asan_unpoison_memory_region(f->stack, f->stack_size);
#endif
#if SWITCH_ASM
    uintptr_t top = ((uintptr_t)(f->stack + f->stack_size)) & ~(uintptr_t)15;
    void **sp = (void **)(top - 80);
    unsigned mxcsr;
    unsigned short fpucw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(fpucw));
    memcpy((char *)sp, &mxcsr, 4);
    memcpy((char *)sp + 4, &fpucw, 2);
    sp[1] = NULL;                      /* r15 */
    sp[2] = NULL;                      /* r14 */
    sp[3] = NULL;                      /* r13 */
    sp[4] = f;                         /* r12: the entry's argument */
    sp[5] = NULL;                      /* rbx */
    sp[6] = NULL;                      /* rbp */
    sp[7] = (void *)kapi_fiber__entry; /* where the first switch returns to */
    f->sp = sp;
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = f->stack_size;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, uc_main, 0);
#endif
    return f;
}

bool kapi_fiber_run(kapi_fiber *f)
{
    for (;;) {
        set_running(f);
        switch_in(f);
        set_running(NULL);
        if (f->done) {
            fiber_release(f);
            return true;
        }
        kapi_park *k = f->parking;
        f->parking = NULL;
        int expect = WAITING;
        /* from here the poster owns f, unless it posted already: then f goes on here */
        if (atomic_compare_exchange_strong(&k->state, &expect, PARKED))
            return false;
    }
}

kapi_fiber **kapi_fiber_link(kapi_fiber *f)
{
    return &f->link;
}

/* ---- parks ---- */

void kapi_park_init(kapi_park *k)
{
    k->fiber = running_fiber();
    atomic_init(&k->state, WAITING);
    if (!k->fiber)
        sem_init(&k->sem, 0, 0);
}

void kapi_park_wait(kapi_park *k)
{
    if (!k->fiber) {
        while (sem_wait(&k->sem) != 0 && errno == EINTR)
            ;
        return;
    }
    if (atomic_load(&k->state) == POSTED)
        return;
    k->fiber->parking = k;
    switch_out(k->fiber);
}

void kapi_park_post(kapi_park *k)
{
    kapi_fiber *f = k->fiber;
    if (!f) {
        sem_post(&k->sem);
        return;
    }
    if (atomic_exchange(&k->state, POSTED) == PARKED)
        f->resume(f, f->resume_ctx);
}

/* ---- timed waits on fibers: one thread posts the parks whose deadline passed ---- */

static pthread_mutex_t timer_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t timer_cond;
static kapi_park *timer_head, *timer_tail; /* by deadline, earliest first */
static pthread_once_t timer_once = PTHREAD_ONCE_INIT;

static void *timer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&timer_mu);
    for (;;) {
        int64_t now = kapi_time_mono_ns();
        while (timer_head && timer_head->deadline <= now) {
            kapi_park *k = timer_head;
            timer_head = k->timer_next;
            if (timer_head)
                timer_head->timer_prev = NULL;
            else
                timer_tail = NULL;
            k->timer_next = k->timer_prev = NULL;
            k->expired = true;
            /* under timer_mu: the waiter's cancel waits for this post to be done */
            kapi_park_post(k);
        }
        if (!timer_head) {
            pthread_cond_wait(&timer_cond, &timer_mu);
            continue;
        }
        struct timespec ts = {(time_t)(timer_head->deadline / 1000000000LL),
                              (long)(timer_head->deadline % 1000000000LL)};
        pthread_cond_timedwait(&timer_cond, &timer_mu, &ts);
    }
    return NULL;
}

static void timer_start(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&timer_cond, &attr);
    pthread_condattr_destroy(&attr);
    pthread_t t;
    if (pthread_create(&t, NULL, timer_main, NULL) != 0) {
        fputs("kapi: cannot start the fibers' timer thread\n", stderr);
        abort();
    }
    pthread_setname_np(t, "kapi-fiber-time");
    pthread_detach(t);
}

/* Lists k (on a fiber, waiting) for the timer. */
static void timer_add(kapi_park *k, int64_t deadline)
{
    pthread_once(&timer_once, timer_start);
    k->deadline = deadline;
    k->expired = false;
    pthread_mutex_lock(&timer_mu);
    kapi_park *after = timer_tail; /* deadlines mostly come in order: from the end */
    while (after && after->deadline > deadline)
        after = after->timer_prev;
    k->timer_prev = after;
    k->timer_next = after ? after->timer_next : timer_head;
    if (k->timer_next)
        k->timer_next->timer_prev = k;
    else
        timer_tail = k;
    if (after)
        after->timer_next = k;
    else
        timer_head = k;
    if (timer_head == k)
        pthread_cond_signal(&timer_cond);
    pthread_mutex_unlock(&timer_mu);
}

/* Takes k off the timer's list unless the timer took it (and posted it) already. */
static void timer_cancel(kapi_park *k)
{
    pthread_mutex_lock(&timer_mu);
    if (!k->expired) {
        if (k->timer_prev)
            k->timer_prev->timer_next = k->timer_next;
        else
            timer_head = k->timer_next;
        if (k->timer_next)
            k->timer_next->timer_prev = k->timer_prev;
        else
            timer_tail = k->timer_prev;
    }
    pthread_mutex_unlock(&timer_mu);
}

bool kapi_park_wait_until(kapi_park *k, int64_t deadline)
{
    if (!k->fiber) {
        int64_t wall = kapi_time_now_ns() + (deadline - kapi_time_mono_ns());
        struct timespec ts = {(time_t)(wall / 1000000000LL), (long)(wall % 1000000000LL)};
        int rc;
        while ((rc = sem_timedwait(&k->sem, &ts)) != 0 && errno == EINTR)
            ;
        return rc == 0;
    }
    if (atomic_load(&k->state) == POSTED)
        return true;
    timer_add(k, deadline);
    kapi_park_wait(k);
    timer_cancel(k);
    return !k->expired;
}

void kapi_fiber_sleep_until(int64_t deadline)
{
    kapi_park k;
    kapi_park_init(&k);
    if (!k.fiber) {
        int64_t ns = deadline - kapi_time_mono_ns();
        if (ns > 0) {
            struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
        }
    } else {
        kapi_park_wait_until(&k, deadline);
    }
    kapi_park_dispose(&k);
}

void kapi_park_dispose(kapi_park *k)
{
    if (!k->fiber)
        sem_destroy(&k->sem);
}
