/*
 * watch: scenario 5, watch fan-out. `watchers` connections each watch the Events of one
 * namespace of their own from the resourceVersion of an empty list; then `watch_writes`
 * Events w-NNNNNN are created there at `watch_rate` per second over a few writer
 * connections (when the server cannot keep the rate, as fast as it answers). The writes
 * are events.k8s.io/v1 like scenario 1's; the watches read them through core v1, as
 * `kubectl get events -w` does, which is also the view kapi stores, so the figure is the
 * fan-out's and not a conversion's. Every watcher must see the ADDED event of every write (checked
 * with one bit per watcher and write); the delivery latency of each is the time from the write
 * being sent to the watcher reading the event.
 *
 * Events are recognised without parsing the JSON: a watch line that starts with
 * {"type":"ADDED" and holds "name":"w-NNNNNN" (metadata.name comes before the rest of the
 * object in the API's encoding, and the regarding object is named otherwise), so that the
 * harness spends its share of the cores on reading, not parsing.
 *
 * watch-pb is the same with Accept protobuf, as client-go's typed informers ask: frames of a
 * 4-byte length and a WatchEvent, an ADDED one starting with its type (field 1, "ADDED")
 * and holding the name as ObjectMeta's field 1 ("\x0a\x08p-NNNNNN": its writes are named
 * p-NNNNNN, so that the scenarios can run against one server).
 *
 * watch-h2 is the JSON watch with the watchers as HTTP/2 streams spread over `conns`
 * connections, as client-go's informers share one connection; its writes (h-NNNNNN) stay
 * on HTTP/1.1 like the others', so that what differs from watch is the fan-out's transport
 * alone.
 */
#include "bench.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define WRITERS 8
#define WRITE_SLACK_MS 60000 /* how much longer than planned the writes may take */
#define SETTLE_MS 10000      /* how long after the last write the watchers may still catch up */

typedef struct watch_run watch_run;

/* What tells the watch scenarios apart. */
typedef struct watch_kind {
    const char *name; /* the scenario */
    const char *key;  /* the prefix of its report keys */
    char prefix;      /* its writes are named <prefix>-NNNNNN */
    bool protobuf;    /* the watchers ask for protobuf frames */
    bool h2;          /* the watchers are HTTP/2 streams over size.conns connections */
} watch_kind;

static const watch_kind kinds[] = {
    {"watch", "watch", 'w', false, false},
    {"watch-pb", "watch_pb", 'p', true, false},
    {"watch-h2", "watch_h2", 'h', false, true},
};

typedef struct watcher {
    watch_run *w;
    kapi_bench_conn *conn;
    int status;
    bool failed;
    kapi_buf line; /* a line cut by a chunk boundary */
    uint8_t *seen; /* one bit per write */
} watcher;

typedef struct writer {
    watch_run *w;
    kapi_bench_conn *conn;
    bool busy;
    size_t index; /* the write it sent last */
} writer;

struct watch_run {
    kapi_bench_run *r;
    const watch_kind *kind;
    char name_key[16]; /* what precedes the write number in an event: "name":"w- or \x0a\x08p- */
    size_t nwatchers, writes;
    watcher *watchers;
    writer writers[WRITERS];
    size_t started, failed, failed_early, sent, answered, write_errors, stream_errors;
    bool all_started, all_answered, all_delivered;
    uint64_t t0, last_answer, *sent_at;
    double server_cpu;   /* CPU seconds of a server the harness runs, while writing */
    uint32_t *receivers; /* per write: the watchers that saw it */
    bool *acked;         /* per write: the server answered 201 */
    size_t delivered;
    kapi_bench_samples latency;
    kapi_buf path, body;
    uv_timer_t tick;
};

/* ---- watchers ---- */

static void check_started(watch_run *w)
{
    w->all_started = w->started + w->failed_early >= w->nwatchers;
}

static void watch_headers(kapi_bench_conn *c, int status)
{
    watcher *v = kapi_bench_conn_data(c);
    v->status = status;
    v->w->started++;
    check_started(v->w);
}

static void watch_failed(kapi_bench_conn *c, const char *why)
{
    watcher *v = kapi_bench_conn_data(c);
    watch_run *w = v->w;
    if (v->failed)
        return;
    v->failed = true;
    if (w->failed++ == 0)
        fprintf(stderr, "kapi-bench: watch: a watcher failed: %s\n", why);
    if (!v->status)
        w->failed_early++;
    check_started(w);
}

static void watch_done(kapi_bench_conn *c, int status, kapi_str body, uint64_t latency)
{
    (void)latency;
    watch_failed(c, status == 200 ? "the watch ended" : "the watch was refused");
    if (status != 200)
        fprintf(stderr, "kapi-bench: watch: %d %.*s\n", status, (int)body.len, body.ptr);
}

/* The write number in a watch line (a frame's WatchEvent in protobuf), or -1 when it is
 * not an ADDED w-NNNNNN. */
static long event_index(const char *p, size_t n, watch_run *w)
{
    static const char json_added[] = "{\"type\":\"ADDED\"", json_error[] = "{\"type\":\"ERROR\"";
    static const char pb_added[] = "\x0a\x05"
                                   "ADDED",
                      pb_error[] = "\x0a\x05"
                                   "ERROR";
    bool pb = w->kind->protobuf;
    const char *added = pb ? pb_added : json_added;
    const char *error = pb ? pb_error : json_error;
    const char *key = w->name_key;
    size_t na = pb ? sizeof(pb_added) - 1 : sizeof(json_added) - 1;
    size_t nk = strlen(w->name_key);
    if (n >= na && memcmp(p, error, na) == 0)
        w->stream_errors++;
    if (n < na || memcmp(p, added, na) != 0)
        return -1;
    const char *at = memmem(p, n, key, nk);
    if (!at)
        return -1;
    long i = 0;
    for (at += nk; at < p + n && *at >= '0' && *at <= '9'; at++)
        i = i * 10 + (*at - '0');
    return i < (long)w->writes ? i : -1;
}

static void watch_line(watcher *v, const char *p, size_t n, uint64_t now)
{
    watch_run *w = v->w;
    long i = event_index(p, n, w);
    if (i < 0 || (v->seen[i / 8] & (1u << (i % 8))) || !w->sent_at[i])
        return;
    v->seen[i / 8] |= (uint8_t)(1u << (i % 8));
    w->receivers[i]++;
    kapi_bench_samples_add(&w->latency, now - w->sent_at[i]);
    if (++w->delivered == w->nwatchers * w->writes)
        w->all_delivered = true;
}

/* Protobuf: whole frames from what came, the rest kept for the next chunk. */
static void watch_frames(watcher *v, const char *p, size_t n, uint64_t now)
{
    kapi_buf_put(&v->line, p, n);
    const unsigned char *b = (const unsigned char *)v->line.ptr;
    size_t at = 0;
    while (v->line.len - at >= 4) {
        size_t len =
            (size_t)b[at] << 24 | (size_t)b[at + 1] << 16 | (size_t)b[at + 2] << 8 | b[at + 3];
        if (v->line.len - at - 4 < len)
            break;
        watch_line(v, v->line.ptr + at + 4, len, now);
        at += 4 + len;
    }
    memmove(v->line.ptr, v->line.ptr + at, v->line.len - at);
    v->line.len -= at;
}

static void watch_chunk(kapi_bench_conn *c, const char *p, size_t n, uint64_t now)
{
    watcher *v = kapi_bench_conn_data(c);
    const char *nl;
    if (v->w->kind->protobuf) {
        watch_frames(v, p, n, now);
        return;
    }
    while (n > 0 && (nl = memchr(p, '\n', n)) != NULL) {
        size_t len = (size_t)(nl - p);
        if (v->line.len) {
            kapi_buf_put(&v->line, p, len);
            watch_line(v, v->line.ptr, v->line.len, now);
            kapi_buf_clear(&v->line);
        } else {
            watch_line(v, p, len, now);
        }
        p += len + 1;
        n -= len + 1;
    }
    kapi_buf_put(&v->line, p, n);
}

static const kapi_bench_conn_cb watch_cb = {
    .headers = watch_headers, .chunk = watch_chunk, .done = watch_done, .failed = watch_failed};

/* ---- writers ---- */

static void write_done(kapi_bench_conn *c, int status, kapi_str body, uint64_t latency)
{
    writer *wr = kapi_bench_conn_data(c);
    watch_run *w = wr->w;
    (void)latency;
    wr->busy = false;
    w->acked[wr->index] = status == 201;
    w->last_answer = uv_hrtime();
    w->all_answered = ++w->answered == w->writes;
    if (status != 201 && w->write_errors++ == 0)
        fprintf(stderr, "kapi-bench: watch write: %d %.*s\n", status, (int)body.len, body.ptr);
}

static void write_failed(kapi_bench_conn *c, const char *why)
{
    writer *wr = kapi_bench_conn_data(c);
    if (wr->busy)
        wr->w->all_answered = ++wr->w->answered == wr->w->writes;
    wr->w->write_errors++;
    fprintf(stderr, "kapi-bench: watch writer: %s\n", why);
}

static const kapi_bench_conn_cb write_cb = {.done = write_done, .failed = write_failed};

static void send_write(watch_run *w, writer *wr)
{
    char name[32], path[160];
    size_t i = w->sent++;
    snprintf(name, sizeof(name), "%c-%06zu", w->kind->prefix, i);
    snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/%s/events", w->r->watch_ns);
    kapi_buf_clear(&w->body);
    kapi_bench__event_body(&w->body, w->r->watch_ns, name, i);
    wr->busy = true;
    wr->index = i;
    w->sent_at[i] = uv_hrtime(); /* the same moment kapi_bench_conn_send starts its clock */
    kapi_bench_conn_send(wr->conn, "POST", path, "application/json", w->body.ptr, w->body.len);
}

/* Sends the writes that are due by now, on writers that are free. */
static void on_tick(uv_timer_t *t)
{
    watch_run *w = t->data;
    uint64_t due = (uv_hrtime() - w->t0) * w->r->size.watch_rate / 1000000000u + 1;
    if (due > w->writes)
        due = w->writes;
    for (size_t k = 0; k < WRITERS && w->sent < due; k++) {
        if (!w->writers[k].busy && kapi_bench_conn_is_ready(w->writers[k].conn))
            send_write(w, &w->writers[k]);
    }
    if (w->sent == w->writes)
        uv_timer_stop(t);
}

/* ---- the run ---- */

/* The resourceVersion of the empty list of the watch namespace's Events. */
static char *list_revision(kapi_bench_run *r)
{
    kapi_buf path, body;
    char *rv = NULL;
    kapi_buf_init(&path);
    kapi_buf_init(&body);
    kapi_buf_printf(&path, "/apis/events.k8s.io/v1/namespaces/%s/events?limit=1", r->watch_ns);
    if (kapi_bench_request(r->client, "GET", path.ptr, NULL, NULL, &body) == 200) {
        json_t *doc = json_loadb(body.ptr, body.len, 0, NULL);
        const char *s =
            json_string_value(json_object_get(json_object_get(doc, "metadata"), "resourceVersion"));
        rv = s ? kapi_xstrdup(s) : NULL;
        json_decref(doc);
    }
    if (!rv)
        fprintf(stderr, "kapi-bench: watch: no resourceVersion from %s: %.300s\n", path.ptr,
                body.ptr);
    kapi_buf_dispose(&path);
    kapi_buf_dispose(&body);
    return rv;
}

static void watcher_path(kapi_buf *path, kapi_bench_run *r, const char *rv)
{
    kapi_buf_printf(path,
                    "/api/v1/namespaces/%s/events?watch=1&resourceVersion=%s"
                    "&timeoutSeconds=1800",
                    r->watch_ns, rv);
}

/* Opens the watchers' connections (HTTP/2: streams over size.conns connections) and
 * starts every watch; waits for their headers, a minute at most. */
static int start_watchers(watch_run *w, const char *rv)
{
    kapi_bench_client *cl = w->r->client;
    kapi_bench_conn **conns = kapi_xcalloc(w->nwatchers, sizeof(*conns));
    kapi_buf path;
    kapi_buf_init(&path);
    watcher_path(&path, w->r, rv);
    int rc = w->kind->h2 ? kapi_bench_conns_open_h2(cl, conns, w->nwatchers, w->r->size.conns,
                                                    &watch_cb, NULL)
                         : kapi_bench_conns_open(cl, conns, w->nwatchers, &watch_cb, NULL);
    for (size_t i = 0; rc == 0 && i < w->nwatchers; i++) {
        watcher *v = &w->watchers[i];
        v->conn = conns[i];
        kapi_bench_conn_set_data(v->conn, v);
        if (w->kind->protobuf)
            kapi_bench_conn_accept(v->conn, "application/vnd.kubernetes.protobuf");
        kapi_bench_conn_send(v->conn, "GET", path.ptr, NULL, NULL, 0);
    }
    if (rc == 0)
        kapi_bench_client_run_until(cl, &w->all_started, 60000);
    size_t started = 0;
    for (size_t i = 0; rc == 0 && i < w->nwatchers; i++)
        started += w->watchers[i].status == 200;
    if (rc == 0 && started < w->nwatchers) {
        fprintf(stderr, "kapi-bench: %s: %zu of %zu watches did not start\n", w->kind->name,
                w->nwatchers - started, w->nwatchers);
        rc = -1;
    }
    kapi_buf_dispose(&path);
    free(conns);
    return rc;
}

static int start_writers(watch_run *w)
{
    kapi_bench_conn *conns[WRITERS];
    if (kapi_bench_conns_open(w->r->client, conns, WRITERS, &write_cb, NULL) < 0)
        return -1;
    for (size_t k = 0; k < WRITERS; k++) {
        w->writers[k] = (writer){.w = w, .conn = conns[k]};
        kapi_bench_conn_set_data(conns[k], &w->writers[k]);
    }
    return 0;
}

/* Writes at the rate until every write is answered (given up WRITE_SLACK_MS after they
 * should have been), then waits until every watcher has every event, or SETTLE_MS. */
static void write_and_wait(watch_run *w)
{
    uint64_t span_ms = w->writes * 1000 / w->r->size.watch_rate;
    double cpu0 = kapi_bench_run_cpu(w->r);
    uv_timer_init(kapi_bench_client_loop(w->r->client), &w->tick);
    w->tick.data = w;
    w->t0 = uv_hrtime();
    uv_timer_start(&w->tick, on_tick, 0, 1);
    kapi_bench_client_run_until(w->r->client, &w->all_answered, span_ms + WRITE_SLACK_MS);
    uv_timer_stop(&w->tick);
    uv_close((uv_handle_t *)&w->tick, NULL);
    kapi_bench_client_run_until(w->r->client, &w->all_delivered, SETTLE_MS);
    fprintf(stderr,
            "kapi-bench: watch: %zu writes sent, %zu answered in %.2f s; %zu of %zu "
            "deliveries\n",
            w->sent, w->answered, (double)(w->last_answer - w->t0) / 1e9, w->delivered,
            w->nwatchers * w->writes);
    if (cpu0 >= 0) {
        w->server_cpu = kapi_bench_run_cpu(w->r) - cpu0;
        fprintf(stderr, "kapi-bench: watch: kapi %.0f%% CPU\n",
                100 * w->server_cpu / ((double)(uv_hrtime() - w->t0) / 1e9));
    }
}

/* Events of acknowledged writes that some watcher did not get. */
static size_t lost(const watch_run *w)
{
    size_t n = 0;
    for (size_t i = 0; i < w->writes; i++)
        n += w->acked[i] ? w->nwatchers - w->receivers[i] : 0;
    return n;
}

/* The first acknowledged write that watcher v did not see, or -1. */
static long first_missed(const watch_run *w, const watcher *v)
{
    for (size_t i = 0; i < w->writes; i++) {
        if (w->acked[i] && !(v->seen[i / 8] & (1u << (i % 8))))
            return (long)i;
    }
    return -1;
}

/* A lost event fails the scenario: says how many were lost, by how many watchers, and
 * the first watcher's first miss, to look for in the server's log. */
static void say_lost(const watch_run *w, size_t n)
{
    size_t missing = 0, first = 0;
    long write = -1;
    for (size_t i = 0; i < w->nwatchers; i++) {
        long m = first_missed(w, &w->watchers[i]);
        if (m >= 0 && missing++ == 0) {
            first = i;
            write = m;
        }
    }
    fprintf(stderr,
            "kapi-bench: %s: FAILED: %zu of %zu events not delivered; %zu of %zu watchers "
            "missed some, %zu failed; watcher %zu missed %c-%06ld first\n",
            w->kind->name, n, w->nwatchers * w->writes, missing, w->nwatchers, w->failed, first,
            w->kind->prefix, write);
}

/* The scenario's key for figure (watch_p50_ms, watch_pb_p50_ms, ...), in an arena that
 * lives as long as the report (the report keeps the pointer). */
static const char *key(watch_run *w, const char *figure)
{
    static char keys[KAPI_ARRAY_LEN(kinds)][8][32];
    static const char *const figures[] = {"p50_ms", "p99_ms", "lost", "write_per_s", "cpu_us"};
    size_t k = 0;
    while (k < KAPI_ARRAY_LEN(figures) && strcmp(figures[k], figure) != 0)
        k++;
    char *out = keys[w->kind - kinds][k];
    snprintf(out, sizeof(keys[0][0]), "%s_%s", w->kind->key, figure);
    return out;
}

static void report(watch_run *w)
{
    char fig[96], over[48] = "";
    kapi_bench_report *rep = w->r->report;
    const char *name = w->kind->name;
    size_t conns = w->r->size.conns < w->nwatchers ? w->r->size.conns : w->nwatchers;
    if (w->kind->h2)
        snprintf(over, sizeof(over), " on %zu h2 connection%s", conns, conns == 1 ? "" : "s");
    snprintf(fig, sizeof(fig), "p50 delivery (ms), %zu watchers%s, %zu writes at %zu/s",
             w->nwatchers, over, w->writes, w->r->size.watch_rate);
    kapi_bench_report_add(rep, name, fig, key(w, "p50_ms"),
                          kapi_bench_samples_percentile_ms(&w->latency, 50), 2);
    kapi_bench_report_add(rep, name, "p99 delivery (ms)", key(w, "p99_ms"),
                          kapi_bench_samples_percentile_ms(&w->latency, 99), 2);
    kapi_bench_report_add(rep, name, "events lost (watchers x acknowledged writes)", key(w, "lost"),
                          (double)lost(w), 0);
    kapi_bench_report_add(rep, name, "writes/s achieved", key(w, "write_per_s"),
                          (double)w->answered / ((double)(w->last_answer - w->t0) / 1e9), 0);
    if ((w->r->server || w->r->ncpu_pids) && w->delivered)
        kapi_bench_report_add(rep, name, "kapi CPU per delivered event (us)", key(w, "cpu_us"),
                              1e6 * w->server_cpu / (double)w->delivered, 1);
}

static void watch_dispose(watch_run *w)
{
    for (size_t i = 0; i < w->nwatchers; i++) {
        if (w->watchers[i].conn)
            kapi_bench_conn_close(w->watchers[i].conn);
        kapi_buf_dispose(&w->watchers[i].line);
        free(w->watchers[i].seen);
    }
    for (size_t k = 0; k < WRITERS; k++) {
        if (w->writers[k].conn)
            kapi_bench_conn_close(w->writers[k].conn);
    }
    kapi_bench_client_sleep(w->r->client, 0);
    free(w->watchers);
    free(w->sent_at);
    free(w->receivers);
    free(w->acked);
    kapi_bench_samples_dispose(&w->latency);
    kapi_buf_dispose(&w->path);
    kapi_buf_dispose(&w->body);
}

static int run_watch(kapi_bench_run *r, const watch_kind *kind)
{
    watch_run w = {
        .r = r, .kind = kind, .nwatchers = r->size.watchers, .writes = r->size.watch_writes};
    char *rv = NULL;
    int rc = -1;
    snprintf(w.name_key, sizeof(w.name_key), kind->protobuf ? "\x0a\x08%c-" : "\"name\":\"%c-",
             kind->prefix);
    w.watchers = kapi_xcalloc(w.nwatchers, sizeof(*w.watchers));
    w.sent_at = kapi_xcalloc(w.writes, sizeof(*w.sent_at));
    w.receivers = kapi_xcalloc(w.writes, sizeof(*w.receivers));
    w.acked = kapi_xcalloc(w.writes, sizeof(*w.acked));
    kapi_bench_samples_init(&w.latency);
    kapi_buf_init(&w.path);
    kapi_buf_init(&w.body);
    for (size_t i = 0; i < w.nwatchers; i++) {
        w.watchers[i].w = &w;
        kapi_buf_init(&w.watchers[i].line);
        w.watchers[i].seen = kapi_xcalloc((w.writes + 7) / 8, 1);
    }
    if (!(rv = list_revision(r)) || start_watchers(&w, rv) < 0 || start_writers(&w) < 0)
        goto done;
    write_and_wait(&w);
    report(&w);
    size_t n = lost(&w);
    if (n > 0)
        say_lost(&w, n);
    rc = n == 0 && w.answered == w.writes && w.write_errors == 0 ? 0 : -1;
    if (w.stream_errors)
        fprintf(stderr, "kapi-bench: watch: %zu ERROR events\n", w.stream_errors);
done:
    watch_dispose(&w);
    free(rv);
    return rc;
}

int kapi_bench_scenario_watch(kapi_bench_run *r)
{
    return run_watch(r, &kinds[0]);
}

int kapi_bench_scenario_watch_protobuf(kapi_bench_run *r)
{
    return run_watch(r, &kinds[1]);
}

int kapi_bench_scenario_watch_h2(kapi_bench_run *r)
{
    return run_watch(r, &kinds[2]);
}
