/*
 * stream: streamed responses kept open by a producer on any thread (watch).
 *
 * The producer queues chunks under the stream's mutex and wakes the loop with one FLUSH
 * message at a time; the conn pulls them as its socket drains and the exchange's protocol
 * frames each part (the chunks of one writev) as it likes (HTTP/1.1: one chunk of a
 * chunked body); this file knows no framing. What is queued and not yet pulled counts against
 * max_queued; past it the stream is closed and the client dropped (a slow watcher must not hold
 * memory or slow anyone else). A producer that makes a long answer (a list) waits instead
 * (kapi_http_stream_wait), so that it is made only as fast as the client takes it.
 *
 * Lifetime: refcounted (producer, attached exchange, each message and write naming it), so
 * the producer may keep its handle after the connection and even the server are gone.
 * A closed stream never touches its server again: writes fail at once on the caller's
 * thread. on_close runs at most once, on the loop thread, and never after
 * kapi_http_stream_end has returned (end waits for a callback claimed or running). A stream
 * the loop closes under a producer that has not ended always runs it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "http/http_int.h"

struct kapi_http_stream {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled when on_close has finished running, when queued bytes
                        * are pulled and when the stream closes */
    int refs;
    kapi_http_server *srv;  /* may be posted to while !closed */
    kapi_http_exchange *ex; /* loop thread: the attached exchange, NULL before or after */
    bool closed;            /* no more writes: ended, client gone, limit hit, shutdown */
    bool ended;             /* the producer called kapi_http_stream_end */
    bool flush_posted;      /* a FLUSH message is queued */
    bool fired;             /* on_close has been claimed */
    bool cb_running;
    bool close_conn; /* ended for a client that stopped reading: close after the end */
    pthread_t cb_thread;
    size_t queued, max_queued;
    int waiters;            /* producers in kapi_http_stream_wait */
    size_t wait_low;        /* what a waiting producer waits for queued to fall to */
    kapi_http_out *pending; /* pending[phead .. npending) are queued */
    size_t phead, npending, pending_cap;
    void (*cb)(void *ctx);
    void *cb_ctx;
};

static void ref_locked(kapi_http_stream *s)
{
    s->refs++;
}

void kapi_http__stream_unref(kapi_http_stream *s)
{
    bool last;
    pthread_mutex_lock(&s->mu);
    last = --s->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (!last)
        return;
    for (size_t i = s->phead; i < s->npending; i++)
        if (s->pending[i].chunk.release)
            s->pending[i].chunk.release(s->pending[i].chunk.owner);
    free(s->pending);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Marks s closed and wakes a producer waiting on it. Lock held. */
static void close_locked(kapi_http_stream *s)
{
    s->closed = true;
    pthread_cond_broadcast(&s->cv);
}

size_t kapi_http__stream_pull(kapi_http_stream *s, kapi_http_out *out, size_t max, size_t max_bytes)
{
    size_t n = 0, bytes = 0;
    pthread_mutex_lock(&s->mu);
    while (n < max && bytes < max_bytes && s->phead < s->npending) {
        out[n] = s->pending[s->phead++];
        bytes += out[n++].chunk.len;
    }
    s->queued -= bytes;
    if (s->phead == s->npending)
        s->phead = s->npending = 0;
    if (s->waiters > 0 && s->queued <= s->wait_low)
        pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Posts a message about s to the loop; the message holds a reference. Lock held, and
 * the stream not closed before this change, so the server is alive. */
static void post_locked(kapi_http_stream *s, kapi_http_msg_kind kind)
{
    kapi_http_msg *m = kapi_xcalloc(1, sizeof(*m));
    kapi_buf_init(&m->head);
    m->kind = kind;
    m->stream = s;
    ref_locked(s);
    kapi_http__post(s->srv, m);
}

/* Claims on_close for this thread if the producer still wants it (lock held): from here
 * on kapi_http_stream_end waits for it, so a stream closed under a live producer tells it
 * even when the producer ends meanwhile. A reference is held until it has run: the
 * callback may end the stream. */
static bool claim_on_close_locked(kapi_http_stream *s)
{
    if (s->fired || s->ended || !s->cb)
        return false;
    s->fired = true;
    s->cb_running = true;
    s->cb_thread = pthread_self();
    ref_locked(s);
    return true;
}

/* Runs the on_close this thread claimed, without the lock. */
static void run_claimed(kapi_http_stream *s)
{
    s->cb(s->cb_ctx);
    pthread_mutex_lock(&s->mu);
    s->cb_running = false;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    kapi_http__stream_unref(s);
}

/* Closes s under its producer (loop thread) and claims on_close in the same step; the
 * caller runs it (claimed) once it has handed the queued bytes over. */
static bool close_and_claim(kapi_http_stream *s)
{
    pthread_mutex_lock(&s->mu);
    close_locked(s);
    bool claimed = claim_on_close_locked(s);
    pthread_mutex_unlock(&s->mu);
    return claimed;
}

/* Takes the pending pieces out: *first .. *n of the returned (owned) array. */
static kapi_http_out *take_pending_locked(kapi_http_stream *s, size_t *first, size_t *n)
{
    kapi_http_out *pieces = s->pending;
    *first = s->phead;
    *n = s->npending;
    s->pending = NULL;
    s->phead = s->npending = s->pending_cap = 0;
    s->queued = 0;
    return pieces;
}

/* Loop thread: what the producer still had queued goes to ex's answer, then (terminate)
 * its end; or it is all released (ex NULL). With drop, only the rest of a part begun
 * goes: a stream ended for a client that stopped reading ends after its last whole part
 * (a watcher resumes from the last event it read). */
static void hand_over(kapi_http_exchange *ex, kapi_http_stream *s, bool terminate, bool drop)
{
    size_t first, n, keep;
    pthread_mutex_lock(&s->mu);
    kapi_http_out *pieces = take_pending_locked(s, &first, &n);
    pthread_mutex_unlock(&s->mu);
    keep = first; /* the pieces before keep go to ex */
    while (ex && keep < n && (!drop || !pieces[keep].part))
        keep++;
    if (ex)
        ex->proto->write_body(ex, pieces + first, keep - first);
    for (size_t i = keep; i < n; i++)
        if (pieces[i].chunk.release)
            pieces[i].chunk.release(pieces[i].chunk.owner);
    free(pieces);
    if (ex && terminate)
        ex->proto->end(ex);
    if (ex)
        kapi_http__conn_flush(ex->conn);
}

/* Loop thread: unlinks s from ex and drops the exchange's reference. */
static void unlink_exchange(kapi_http_exchange *ex, kapi_http_stream *s)
{
    ex->stream = NULL;
    ex->phase = KAPI_HTTP__DONE;
    s->ex = NULL;
    kapi_http__stream_unref(s);
}

void kapi_http__stream_detach(kapi_http_exchange *ex, bool graceful)
{
    kapi_http_stream *s = ex->stream;
    /* Taken off ex first: the end written below may close the protocol's stream at once
     * (HTTP/2), whose close callback detaches what is still attached; it must find nothing,
     * or the exchange's reference would be dropped twice. */
    ex->stream = NULL;
    bool claimed = close_and_claim(s);
    hand_over(graceful ? ex : NULL, s, true, false);
    if (claimed)
        run_claimed(s);
    unlink_exchange(ex, s);
}

kapi_http_stream *kapi_http_stream_start(kapi_http_request *pub, int status,
                                         const kapi_http_header *headers, size_t nheaders,
                                         size_t max_queued)
{
    kapi_http_exchange *ex = (kapi_http_exchange *)pub;
    kapi_http_stream *s = kapi_xcalloc(1, sizeof(*s));
    kapi_http_msg *m =
        kapi_http__msg_new(KAPI_HTTP__MSG_STREAM_START, ex, status, headers, nheaders);
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* kapi_http_stream_wait's deadline */
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    s->refs = 2; /* the producer's and the message's */
    s->srv = ex->conn->srv;
    s->max_queued = max_queued;
    m->stream = s;
    kapi_http__post(s->srv, m);
    return s;
}

/* Makes room for n more pending pieces, reusing what was pulled. Lock held. */
static void reserve_locked(kapi_http_stream *s, size_t n)
{
    if (s->npending + n > s->pending_cap && s->phead > 0) {
        memmove(s->pending, s->pending + s->phead, (s->npending - s->phead) * sizeof(*s->pending));
        s->npending -= s->phead;
        s->phead = 0;
    }
    if (s->npending + n <= s->pending_cap)
        return;
    s->pending_cap = s->pending_cap ? 2 * s->pending_cap : 8;
    while (s->pending_cap < s->npending + n)
        s->pending_cap *= 2;
    s->pending = kapi_xrealloc(s->pending, s->pending_cap * sizeof(*s->pending));
}

static void release_all(const kapi_http_chunk *c, size_t n, bool empty_only)
{
    for (size_t i = 0; i < n; i++)
        if (c[i].release && (!empty_only || c[i].len == 0))
            c[i].release(c[i].owner);
}

bool kapi_http_stream_writev(kapi_http_stream *s, const kapi_http_chunk *c, size_t n)
{
    size_t total = 0;
    kapi_http_out *last = NULL;
    for (size_t i = 0; i < n; i++)
        total += c[i].len;
    pthread_mutex_lock(&s->mu);
    if (s->closed || s->queued + total > s->max_queued) {
        if (!s->closed)
            post_locked(s, KAPI_HTTP__MSG_STREAM_ABORT); /* over the limit: drop the client */
        close_locked(s);
        pthread_mutex_unlock(&s->mu);
        release_all(c, n, false);
        return false;
    }
    reserve_locked(s, n);
    for (size_t i = 0; i < n; i++) {
        if (c[i].len == 0) /* an empty part would end an HTTP/1.1 answer */
            continue;
        last = &s->pending[s->npending++];
        *last = (kapi_http_out){.chunk = c[i]};
        if (total) {
            last->part = total; /* the first piece carries the part's size */
            total = 0;
        }
        s->queued += c[i].len;
    }
    if (last)
        last->part_end = true;
    if (s->npending > s->phead && !s->flush_posted) {
        s->flush_posted = true;
        post_locked(s, KAPI_HTTP__MSG_STREAM_FLUSH);
    }
    pthread_mutex_unlock(&s->mu);
    release_all(c, n, true);
    return true;
}

bool kapi_http_stream_write(kapi_http_stream *s, kapi_http_chunk chunk)
{
    return kapi_http_stream_writev(s, &chunk, 1);
}

/* The absolute CLOCK_MONOTONIC time timeout_ms from now (the stream's condvar uses it). */
static struct timespec deadline_after(int64_t timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = ts.tv_nsec + (timeout_ms % 1000) * 1000000;
    ts.tv_sec += (time_t)(timeout_ms / 1000 + ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    return ts;
}

bool kapi_http_stream_wait(kapi_http_stream *s, size_t low, int64_t timeout_ms)
{
    struct timespec until = deadline_after(timeout_ms);
    bool ok;
    pthread_mutex_lock(&s->mu);
    s->waiters++;
    s->wait_low = low;
    while (!s->closed && s->queued > low)
        if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT)
            break;
    s->waiters--;
    ok = !s->closed && s->queued <= low;
    if (!ok && !s->closed) { /* the client has stopped reading: drop it */
        post_locked(s, KAPI_HTTP__MSG_STREAM_ABORT);
        close_locked(s);
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

size_t kapi_http_stream_queued(kapi_http_stream *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->queued;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void kapi_http_stream_on_close(kapi_http_stream *s, void (*cb)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&s->mu);
    s->cb = cb;
    s->cb_ctx = ctx;
    if (!cb || !s->closed || s->fired || s->ended) {
        pthread_mutex_unlock(&s->mu);
        return;
    }
    /* Closed before the callback was set: it still runs once. From a worker (the usual
     * case) the server is alive and the loop runs it; otherwise it runs here. */
    if (kapi_http__on_worker(s->srv)) {
        post_locked(s, KAPI_HTTP__MSG_STREAM_NOTIFY);
        pthread_mutex_unlock(&s->mu);
        return;
    }
    bool claimed = claim_on_close_locked(s);
    pthread_mutex_unlock(&s->mu);
    if (claimed)
        run_claimed(s);
}

void kapi_http_stream_end_close(kapi_http_stream *s)
{
    pthread_mutex_lock(&s->mu);
    s->close_conn = true;
    pthread_mutex_unlock(&s->mu);
    kapi_http_stream_end(s);
}

void kapi_http_stream_end(kapi_http_stream *s)
{
    pthread_mutex_lock(&s->mu);
    while (s->cb_running && !pthread_equal(s->cb_thread, pthread_self()))
        pthread_cond_wait(&s->cv, &s->mu);
    s->ended = true;
    if (!s->closed) {
        post_locked(s, KAPI_HTTP__MSG_STREAM_END);
        close_locked(s);
    }
    pthread_mutex_unlock(&s->mu);
    kapi_http__stream_unref(s); /* the producer's */
}

/* START: write the head and attach, or end at once if the conn or server is going. */
static void on_start(kapi_http_msg *m)
{
    kapi_http_stream *s = m->stream;
    kapi_http_exchange *ex = m->ex;
    kapi_conn *c = ex->conn;
    /* A client that half-closed while the handler ran is taken as gone: nothing would
     * tell us later that a quiet watch has lost its reader. */
    if (c->dead || c->closing || c->peer_eof || ex->answered) {
        if (close_and_claim(s))
            run_claimed(s);
        kapi_http__conn_request_done(ex, true);
        return;
    }
    ex->close_after = ex->close_after || c->srv->shutting_down;
    ex->proto->write_head(ex, m->status, &m->head, KAPI_HTTP__STREAMED);
    kapi_http__conn_flush(c);
    pthread_mutex_lock(&s->mu);
    ref_locked(s); /* the exchange's */
    pthread_mutex_unlock(&s->mu);
    s->ex = ex;
    ex->stream = s;
    ex->phase = KAPI_HTTP__STREAMING;
    if (c->srv->shutting_down) {
        kapi_http__stream_detach(ex, true);
        kapi_http__conn_request_done(ex, true);
    }
}

/* FLUSH: the conn pulls what is queued as its socket drains (a detached stream's chunks
 * are dropped). */
static void on_flush(kapi_http_msg *m)
{
    kapi_http_stream *s = m->stream;
    pthread_mutex_lock(&s->mu);
    s->flush_posted = false;
    pthread_mutex_unlock(&s->mu);
    if (s->ex)
        s->ex->proto->wake(s->ex);
    else
        hand_over(NULL, s, false, false);
}

static void on_end(kapi_http_msg *m)
{
    kapi_http_stream *s = m->stream;
    kapi_http_exchange *ex = s->ex;
    bool close_after;
    hand_over(ex, s, true, s->close_conn);
    if (!ex)
        return;
    close_after = ex->close_after || s->close_conn;
    unlink_exchange(ex, s);
    kapi_http__conn_request_done(ex, close_after);
}

/* ABORT: over its byte limit or not read in time: the answer is abandoned. */
static void on_abort(kapi_http_msg *m)
{
    if (m->stream->ex)
        m->stream->ex->proto->reset(m->stream->ex);
}
static void on_notify(kapi_http_msg *m)
{
    kapi_http_stream *s = m->stream;
    pthread_mutex_lock(&s->mu);
    bool claimed = claim_on_close_locked(s);
    pthread_mutex_unlock(&s->mu);
    if (claimed)
        run_claimed(s);
}

static void (*const handlers[])(kapi_http_msg *m) = {
    [KAPI_HTTP__MSG_STREAM_START] = on_start,   [KAPI_HTTP__MSG_STREAM_FLUSH] = on_flush,
    [KAPI_HTTP__MSG_STREAM_END] = on_end,       [KAPI_HTTP__MSG_STREAM_ABORT] = on_abort,
    [KAPI_HTTP__MSG_STREAM_NOTIFY] = on_notify,
};

void kapi_http__on_stream_msg(kapi_http_msg *m)
{
    handlers[m->kind](m);
    kapi_http__msg_free(m);
}
