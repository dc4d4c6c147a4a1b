/*
 * bench: kapi-bench, the benchmark harness of issue 6. It measures any Kubernetes API
 * server through its public API only, the same way every time.
 *
 * - stats.c: latency samples and percentiles (nearest rank over every sample).
 * - target.c: where the server is and how to talk to it, from a kubeconfig or from flags.
 * - client.c: HTTPS connections on one libuv loop, TLS over memory BIOs (as src/http does
 *   on the server side): HTTP/1.1 keep-alive with http-parser for the answers, or HTTP/2
 *   (ALPN h2) with nghttp2's client session; a closed-loop batch runner that keeps N
 *   conns busy with one request each.
 * - server.c: a kapi the harness starts itself (exec to /readyz, RSS, kill), which also
 *   knows a user who is not an admin (KAPI_BENCH_READER).
 * - scenarios.c, watch.c: the scenarios; report.c: the Markdown table and the JSON.
 *
 * Why one event loop and not threads: the watch scenario holds 1,000 streams open at once,
 * and the harness shares two cores with the server it measures. One thread that only
 * moves bytes costs the server the least CPU, and libuv, OpenSSL and http-parser are
 * what kapi itself is built on. Every latency is taken with the monotonic clock
 * (uv_hrtime) when the request is handed to TLS (over HTTP/2: to nghttp2) and when its
 * answer is complete.
 *
 * Ownership: every kapi_bench_* object is made and freed by the caller (_init/_dispose,
 * _new/_free); slices (kapi_str) handed to callbacks are valid during the call only.
 */
#ifndef KAPI_BENCH_H
#define KAPI_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/base.h"

/* ---- stats.c ---- */

/* Latencies in nanoseconds, one per request. */
typedef struct kapi_bench_samples {
    uint64_t *ns;
    size_t len, cap;
    bool sorted;
} kapi_bench_samples;

void kapi_bench_samples_init(kapi_bench_samples *s);
void kapi_bench_samples_dispose(kapi_bench_samples *s);
void kapi_bench_samples_add(kapi_bench_samples *s, uint64_t ns);
/* The p-th percentile (0 < p <= 100) in milliseconds: the smallest sample with at least
 * p% of all samples at or below it (nearest rank). 0 when there are none. Sorts s. */
double kapi_bench_samples_percentile_ms(kapi_bench_samples *s, double p);

/* ---- target.c ---- */

/* A server and the credentials to use on it. Strings are heap copies. */
typedef struct kapi_bench_target {
    char *server;               /* "https://host:port[/prefix]" as given */
    char *host;                 /* host name or address, without IPv6 brackets */
    char *port;                 /* "443" when the URL names none */
    char *prefix;               /* path prefix without a trailing slash, often "" */
    char *token;                /* bearer token, or NULL */
    kapi_buf ca_pem;            /* CA certificates to trust; empty: the system's */
    kapi_buf cert_pem, key_pem; /* client certificate and key; empty: none */
    bool insecure;              /* insecure-skip-tls-verify */
} kapi_bench_target;

void kapi_bench_target_init(kapi_bench_target *t);
void kapi_bench_target_dispose(kapi_bench_target *t);
/* Splits the server URL (https only) into host, port and prefix. -1 with a message in err. */
int kapi_bench_target_set_server(kapi_bench_target *t, const char *url, kapi_buf *err);
/* Reads a kubeconfig document: the cluster and user of context (NULL: current-context).
 * Relative file names in it are taken from base_dir. -1 with a message in err. */
int kapi_bench_kubeconfig_parse(kapi_bench_target *t, const char *text, size_t len,
                                const char *base_dir, const char *context, kapi_buf *err);
/* The same from a file. */
int kapi_bench_kubeconfig_load(kapi_bench_target *t, const char *path, const char *context,
                               kapi_buf *err);
/* Appends a whole file to out; -1 with a message in err. */
int kapi_bench_read_file(const char *path, kapi_buf *out, kapi_buf *err);

/* ---- client.c ---- */

/* A conn carries one request at a time. Over HTTP/1.1 it is a TLS connection of its own;
 * over HTTP/2 it is a slot of a TLS connection that it shares with other slots, and each
 * of its requests is a new stream there. Either way its callbacks, latencies and failures
 * are the same, so that scenarios run over both unchanged. */
typedef struct kapi_bench_client kapi_bench_client;
typedef struct kapi_bench_conn kapi_bench_conn;

/* What a connection tells its user. Each may be NULL. */
typedef struct kapi_bench_conn_cb {
    /* TLS is up: the connection takes requests. */
    void (*ready)(kapi_bench_conn *c);
    /* The status line and headers of an answer arrived (for streams: the watch began). */
    void (*headers)(kapi_bench_conn *c, int status);
    /* A piece of a body, as it arrives; now is when its bytes were read. When set, the
     * body is not kept. */
    void (*chunk)(kapi_bench_conn *c, const char *p, size_t n, uint64_t now);
    /* The answer is complete: status, body (empty unless kept) and the latency from the
     * request being sent. */
    void (*done)(kapi_bench_conn *c, int status, kapi_str body, uint64_t latency_ns);
    /* The connection failed or was closed by the server (for an HTTP/2 slot also: its
     * stream was reset); it is dead but stays the user's to close. */
    void (*failed)(kapi_bench_conn *c, const char *why);
} kapi_bench_conn_cb;

/* A client: one loop, one TLS context, one target. -1 with a message in err. */
int kapi_bench_client_new(kapi_bench_client **out, const kapi_bench_target *t, kapi_buf *err);
void kapi_bench_client_free(kapi_bench_client *cl);
/* Runs the loop until *flag is true or timeout_ms passed; false on timeout. */
bool kapi_bench_client_run_until(kapi_bench_client *cl, const bool *flag, uint64_t timeout_ms);
/* Runs the loop for ms milliseconds. */
void kapi_bench_client_sleep(kapi_bench_client *cl, uint64_t ms);
/* The loop, for timers of the scenarios' own. */
struct uv_loop_s *kapi_bench_client_loop(kapi_bench_client *cl);

/* Starts an HTTP/1.1 connection; cb->ready or cb->failed follows. data is the user's. The
 * connection is freed only by kapi_bench_conn_close (or kapi_bench_client_free). */
kapi_bench_conn *kapi_bench_conn_new(kapi_bench_client *cl, const kapi_bench_conn_cb *cb,
                                     void *data);
/* Closes the connection (live or failed), once; it is freed when the loop lets go of it
 * (an HTTP/2 slot at once, cancelling its stream). */
void kapi_bench_conn_close(kapi_bench_conn *c);
void *kapi_bench_conn_data(const kapi_bench_conn *c);
void kapi_bench_conn_set_data(kapi_bench_conn *c, void *data);
bool kapi_bench_conn_is_ready(const kapi_bench_conn *c);
/* Keep the bodies of answers (for done); off by default (only their length is counted),
 * but the body of an answer that is not 2xx is always kept. */
void kapi_bench_conn_keep_body(kapi_bench_conn *c, bool keep);
/* The Accept header of c's requests from now on (a string that outlives c; NULL:
 * application/json). */
void kapi_bench_conn_accept(kapi_bench_conn *c, const char *accept);
/* Sends one request (path below the target's prefix, body may be NULL); the connection
 * must be ready and have no answer outstanding. The latency clock starts here. */
void kapi_bench_conn_send(kapi_bench_conn *c, const char *method, const char *path,
                          const char *content_type, const char *body, size_t body_len);
/* Sends one request on a ready, idle connection and waits for its answer: returns the
 * status (-1 when none came), appends the body to answer (may be NULL) and sets *latency
 * (may be NULL). The connection's own callbacks are not called meanwhile. */
int kapi_bench_conn_roundtrip(kapi_bench_conn *c, const char *method, const char *path,
                              const char *content_type, const char *body, kapi_buf *answer,
                              uint64_t *latency);
/* Opens n HTTP/1.1 connections and waits until all are ready; -1 when any fails. */
int kapi_bench_conns_open(kapi_bench_client *cl, kapi_bench_conn **out, size_t n,
                          const kapi_bench_conn_cb *cb, void *data);
/* The same over HTTP/2: n slots spread round-robin over `links` TLS connections (at least
 * one, at most n) whose ALPN offers only h2. A server that selects anything else fails
 * every slot, saying so. */
int kapi_bench_conns_open_h2(kapi_bench_client *cl, kapi_bench_conn **out, size_t n, size_t links,
                             const kapi_bench_conn_cb *cb, void *data);

/* One request on a connection of its own, waited for (setup and checks, not measured).
 * Returns the HTTP status, or -1 when no answer came; body gets the answer's body. */
int kapi_bench_request(kapi_bench_client *cl, const char *method, const char *path,
                       const char *content_type, const char *body, kapi_buf *answer);

/* A closed-loop run: `conns` conns each send a request, wait for its answer, send the
 * next, until `total` were answered. Only the time between the first send and the last
 * answer is measured; connections are opened before and closed after. With h2_streams
 * set, the conns are HTTP/2 slots, that many to a TLS connection: the same number of
 * requests in flight, over conns / h2_streams connections (rounded up). */
typedef struct kapi_bench_batch kapi_bench_batch;
struct kapi_bench_batch {
    size_t total, conns;
    size_t h2_streams; /* 0: HTTP/1.1, a connection per conn */
    bool keep_body;
    /* Sends request i on c (kapi_bench_conn_send). */
    void (*send)(kapi_bench_batch *b, kapi_bench_conn *c, size_t i);
    /* Optional: sees every answer. */
    void (*answer)(kapi_bench_batch *b, size_t i, int status, kapi_str body);
    void *ctx;
    /* Results. */
    size_t ok, errors;
    double seconds;
    uint64_t body_bytes;
    kapi_bench_samples latency;
    int first_error_status;
    kapi_buf first_error; /* the body of the first non-2xx answer, or why a connection failed */
    double server_cpu;    /* CPU seconds the server used meanwhile, when the harness runs it */
    size_t tls_conns;     /* the TLS connections it opened */
    /* Internal. */
    size_t next_, finished_, open_;
    bool done_;
};

void kapi_bench_batch_init(kapi_bench_batch *b);
void kapi_bench_batch_dispose(kapi_bench_batch *b);
/* Runs it; -1 when the connections could not be opened or it timed out. */
int kapi_bench_batch_run(kapi_bench_client *cl, kapi_bench_batch *b);

/* ---- server.c ---- */

/* The user of the get-rbac scenario: in no group, so that only RBAC lets it read. */
#define KAPI_BENCH_READER "kapi-bench-reader"

/* A kapi the harness runs itself on a data dir of its own. */
#define KAPI_BENCH_MAX_FLAGS 16
#define KAPI_BENCH_MAX_PIDS 4

typedef struct kapi_bench_server {
    const char *bin;
    const char *const *flags; /* more flags for kapi (set after init, before start) */
    size_t nflags;
    char *dir;          /* temporary; holds data/, kapi.log and tokens.csv */
    char *data_dir;     /* dir/data */
    char *reader_token; /* KAPI_BENCH_READER's bearer token, listed in tokens.csv */
    int port;
    pid_t pid;
} kapi_bench_server;

/* Makes the temporary dir, writes tokens.csv (kapi's --token-auth-file) and picks a free
 * port; does not start kapi. */
int kapi_bench_server_init(kapi_bench_server *s, const char *bin, kapi_buf *err);
/* Stops kapi if running and removes the dir. */
void kapi_bench_server_dispose(kapi_bench_server *s);
/* Moves the clock the kapi's controllers read to offset_s seconds from the system's
 * (the file it reads with --controllers-clock-file, then SIGHUP). */
void kapi_bench_server_set_clock(kapi_bench_server *s, double offset_s);
/* Starts kapi and waits for /readyz to answer ok; *ms gets the time from exec to then. */
int kapi_bench_server_start(kapi_bench_server *s, double *ms, kapi_buf *err);
/* Sends sig (SIGTERM: clean stop, SIGKILL: crash) and waits for the process to end. */
void kapi_bench_server_stop(kapi_bench_server *s, int sig);
/* Resident set size of the running kapi, in bytes (VmRSS); -1 when unknown. */
long long kapi_bench_server_rss(const kapi_bench_server *s);
/* CPU seconds (user + system) kapi has used so far; -1 when unknown. */
double kapi_bench_server_cpu(const kapi_bench_server *s);

/* ---- report.c ---- */

typedef struct kapi_bench_row {
    const char *scenario, *key; /* string literals */
    char figure[96];
    double value;
    int decimals;
} kapi_bench_row;

typedef struct kapi_bench_report {
    kapi_bench_row *rows;
    size_t len, cap;
} kapi_bench_report;

void kapi_bench_report_init(kapi_bench_report *r);
void kapi_bench_report_dispose(kapi_bench_report *r);
/* Adds a figure: scenario and key (its JSON name) are literals, figure is copied;
 * decimals is how it is printed. */
void kapi_bench_report_add(kapi_bench_report *r, const char *scenario, const char *figure,
                           const char *key, double value, int decimals);
/* The value of key; false when absent. */
bool kapi_bench_report_get(const kapi_bench_report *r, const char *key, double *out);
/* The Markdown table (scenario, figure, value, target) into out. */
void kapi_bench_report_markdown(const kapi_bench_report *r, kapi_buf *out);
/* One flat JSON object, key: number, in the order added. */
void kapi_bench_report_json(const kapi_bench_report *r, kapi_buf *out);

/* ---- scenarios.c, watch.c ---- */

/* The sizes of a run; the full sizes times --scale, at least a handful each. conns is the
 * requests in flight of a batch (and the HTTP/2 connections of watch-h2); h2_streams is
 * how many of a batch's requests share one HTTP/2 connection (get-h2), --h2-streams. */
typedef struct kapi_bench_sizes {
    size_t creates, gets, get_objects, patches, applies, list_objects, list_runs, list_page;
    size_t watchers, watch_writes, watch_rate, memory_events, conns, h2_streams;
    size_t crds;         /* CRDs installed by the crd scenario before the last one is timed */
    size_t cronjobs_due; /* CronJobs due in the same minute (the cronjob scenario) */
    size_t nodes;        /* Nodes the allocator scenario creates */
} kapi_bench_sizes;

void kapi_bench_sizes_scale(kapi_bench_sizes *out, double scale);

/* What the scenarios share. */
typedef struct kapi_bench_run {
    kapi_bench_client *client;
    kapi_bench_report *report;
    const kapi_bench_target *target;     /* the server, and the admin's credentials */
    kapi_bench_server *server;           /* the kapi the harness started, or NULL */
    pid_t cpu_pids[KAPI_BENCH_MAX_PIDS]; /* more processes whose CPU is the server's */
    size_t ncpu_pids;
    const char *kapi_bin; /* for the start and memory scenario, or NULL */
    kapi_bench_sizes size;
    char ns[64], watch_ns[64];
    size_t cronjobs; /* CronJobs cj-NNNNN created so far in ns */
    size_t events;   /* Events created so far in ns */
} kapi_bench_run;

/* The CPU seconds so far of the server under test: the kapi the harness started and the
 * --cpu-pid processes; -1 when there is neither. */
double kapi_bench_run_cpu(const kapi_bench_run *r);

/* A scenario: 0 when it ran (figures added to the report), -1 when it could not. */
typedef int (*kapi_bench_scenario_fn)(kapi_bench_run *r);

int kapi_bench_scenario_create(kapi_bench_run *r);
/* Issue 18: CRD create to served, first and with r->size.crds installed, and the RSS
 * each adds (with r->server); the CRDs are deleted after. */
int kapi_bench_scenario_crd(kapi_bench_run *r);
int kapi_bench_scenario_cel(kapi_bench_run *r);
int kapi_bench_scenario_cronjob(kapi_bench_run *r);
/* Issue 20: Nodes/s given Pod CIDRs by the server's ClusterCIDR allocator (nodes.c). */
int kapi_bench_scenario_allocator(kapi_bench_run *r);
int kapi_bench_scenario_get(kapi_bench_run *r);
/* The get scenario as KAPI_BENCH_READER, whom only a RoleBinding lets read the CronJobs,
 * among a few dozen bindings of other users and groups (needs r->server). */
int kapi_bench_scenario_get_rbac(kapi_bench_run *r);
int kapi_bench_scenario_get_protobuf(kapi_bench_run *r);
/* The get scenario over HTTP/2: the same requests in flight, size.h2_streams to a
 * connection. */
int kapi_bench_scenario_get_h2(kapi_bench_run *r);
/* The get scenario while a connection GETs /metrics every second (issue 21), with the CPU
 * per request against the get scenario's. */
int kapi_bench_scenario_get_metrics(kapi_bench_run *r);
int kapi_bench_scenario_update(kapi_bench_run *r);
/* Server-side applies of whole CronJob configurations over the get scenario's CronJobs. */
int kapi_bench_scenario_apply(kapi_bench_run *r);
int kapi_bench_scenario_list(kapi_bench_run *r);
int kapi_bench_scenario_watch(kapi_bench_run *r);
/* The watch scenario with its watchers asking for protobuf frames. */
int kapi_bench_scenario_watch_protobuf(kapi_bench_run *r);
/* The watch scenario with its watchers as HTTP/2 streams over size.conns connections. */
int kapi_bench_scenario_watch_h2(kapi_bench_run *r);
/* Memory and start, on a kapi of their own (needs r->kapi_bin). */
int kapi_bench_scenario_memory_start(kapi_bench_run *r);

/* Shared by the scenarios. */
/* An events.k8s.io/v1 Event of about 600 bytes named name in ns. */
void kapi_bench__event_body(kapi_buf *out, const char *ns, const char *name, size_t i);
/* Creates n Events named <prefix>NNNNNNN in ns over the run's connections: the batch
 * holds the figures (the caller disposes it); its body_bytes is the sum of the objects'
 * JSON as the server answered them, which is what it stores. */
int kapi_bench__create_events(kapi_bench_run *r, const char *ns, const char *prefix, size_t n,
                              kapi_bench_batch *b);
/* Runs a batch, printing how long it took and the CPU the server and the harness used;
 * -1 when it did not finish or a request failed. */
int kapi_bench__run_batch(kapi_bench_run *r, kapi_bench_batch *b, const char *what);
/* Adds a batch's rate ("<what>/s"), p50 and p99 latency and, when the server's CPU is
 * known, its CPU per request, under the report keys keys[0..3]. */
void kapi_bench__add_rates(kapi_bench_run *r, kapi_bench_batch *b, const char *scenario,
                           const char *what, const char *keys[4]);
/* Creates a CRD (body, JSON) and polls list_path until it answers 200: the ms from the
 * create to that answer, or -1 (said on stderr). */
double kapi_bench__install_crd(kapi_bench_run *r, const char *body, const char *list_path);
/* Prints what went wrong in a batch to stderr; -1 when anything did. */
int kapi_bench__batch_check(const char *what, kapi_bench_batch *b);
/* Milliseconds of a nanosecond count. */
double kapi_bench__ms(uint64_t ns);

#endif
