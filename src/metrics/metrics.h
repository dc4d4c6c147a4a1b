/*
 * metrics: counters, gauges and histograms with labels, and their exposition in the
 * Prometheus text format 0.0.4 and OpenMetrics 1.0.0 (what /metrics serves).
 *
 * A metric is a family: a static kapi_metric its module declares with KAPI_METRIC_*, whose
 * name, help, label names and histogram buckets never change. It joins the process's one
 * registry the first time it is used, and is exposed from then on. A series is one set of
 * label values of a family; callers pass values from a bounded set (verbs, codes, the
 * served resources, "" for anything else), never a client's raw strings: the registry holds
 * at most KAPI_METRICS_MAX_SERIES series and KAPI_METRICS_MAX_CELLS cells, past which an
 * observation of a new series is dropped.
 *
 * Cost on the hot path: no lock. Every thread that counts owns a block of cells (counts,
 * gauge deltas, histogram buckets and sums), registered once, the first time it counts;
 * it alone writes them, with relaxed atomic loads and stores. A series is found in a
 * lock-free open-addressing table (a lock is taken only the first time a series appears).
 * A scrape folds the blocks: a series' value is the sum of its cells in every block, and
 * a block whose thread has ended is folded into a retired block first, so nothing counted
 * is lost. A histogram's count is the sum of its buckets, so a scrape always sees
 * cumulative buckets that end at the count, however the threads race with it.
 *
 * Gauges come in two kinds: one moved by kapi_metrics_gauge_add (in-flight requests,
 * registered watchers: the sum of every thread's deltas), one set by kapi_metrics_set
 * (a value read at scrape time by a collector, e.g. the process's memory). A family is used
 * only one way.
 *
 * Every function may be called from any thread.
 */
#ifndef KAPI_METRICS_H
#define KAPI_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"

#define KAPI_METRICS_MAX_SERIES 8192
#define KAPI_METRICS_MAX_CELLS (1u << 18)
#define KAPI_METRICS_MAX_LABELS 10 /* label names of a family */

typedef enum kapi_metric_type {
    KAPI_METRIC_COUNTER,   /* its name ends with _total */
    KAPI_METRIC_GAUGE,     /* moved by deltas, or set */
    KAPI_METRIC_HISTOGRAM, /* buckets: increasing upper bounds; +Inf is implied */
} kapi_metric_type;

typedef struct kapi_metric {
    const char *name;
    const char *help;
    kapi_metric_type type;
    const char *const *labels; /* label names, NULL-terminated */
    const double *buckets;     /* histogram only */
    size_t nbuckets;
    /* The registry's (zero in the declaration). */
    atomic_bool registered;
    size_t nlabels;
    struct kapi_metric *next;
    void *series; /* the family's series, newest first */
} kapi_metric;

/* Declarations: KAPI_METRIC_COUNTER_DEF(name, help, "label", ..., NULL) and so on; the
 * label names end with a NULL (a family without labels passes only the NULL). */
#define KAPI_METRIC_LABELS(...) ((const char *const[]){__VA_ARGS__})
#define KAPI_METRIC_COUNTER_DEF(name_, help_, ...)                                                 \
    {                                                                                              \
        .name = (name_), .help = (help_), .type = KAPI_METRIC_COUNTER,                             \
        .labels = KAPI_METRIC_LABELS(__VA_ARGS__)                                                  \
    }
#define KAPI_METRIC_GAUGE_DEF(name_, help_, ...)                                                   \
    {                                                                                              \
        .name = (name_), .help = (help_), .type = KAPI_METRIC_GAUGE,                               \
        .labels = KAPI_METRIC_LABELS(__VA_ARGS__)                                                  \
    }
#define KAPI_METRIC_HISTOGRAM_DEF(name_, help_, buckets_, ...)                                     \
    {                                                                                              \
        .name = (name_), .help = (help_), .type = KAPI_METRIC_HISTOGRAM,                           \
        .labels = KAPI_METRIC_LABELS(__VA_ARGS__), .buckets = (buckets_),                          \
        .nbuckets = KAPI_ARRAY_LEN(buckets_)                                                       \
    }

/* kube-apiserver's buckets: request and etcd latency (seconds), response sizes (bytes,
 * 1000 × 10^i), admission step latency (seconds). */
extern const double kapi_metrics_latency_buckets[23];
extern const double kapi_metrics_size_buckets[7];
extern const double kapi_metrics_admission_buckets[6];

/* Adds n to a counter's series; values holds one value per label name. */
void kapi_metrics_add(kapi_metric *m, const char *const *values, uint64_t n);
static inline void kapi_metrics_inc(kapi_metric *m, const char *const *values)
{
    kapi_metrics_add(m, values, 1);
}
/* A counter's series found once, for a caller that counts it often (a watch its events):
 * adding through it skips the lookup. NULL when the registry is full; adding through NULL
 * does nothing. Series live as long as the process. */
typedef struct kapi_metric_series kapi_metric_series;
kapi_metric_series *kapi_metrics_series(kapi_metric *m, const char *const *values);
void kapi_metrics_series_add(kapi_metric_series *s, uint64_t n);
/* Moves a gauge's series by delta. */
void kapi_metrics_gauge_add(kapi_metric *m, const char *const *values, int64_t delta);
/* Sets a series to v: a gauge read at scrape time, or a counter kept elsewhere (the
 * process's CPU seconds). A family is either set or counted, never both. */
void kapi_metrics_set(kapi_metric *m, const char *const *values, double v);
/* Records v in a histogram's series. */
void kapi_metrics_observe(kapi_metric *m, const char *const *values, double v);

/* A collector sets gauges just before each scrape (reading the process, the store, ...).
 * The pair (fn, ctx) is registered at most once; remove it before ctx goes away. */
typedef void (*kapi_metrics_collector)(void *ctx);
void kapi_metrics_collector_add(kapi_metrics_collector fn, void *ctx);
void kapi_metrics_collector_remove(kapi_metrics_collector fn, void *ctx);

/* The two expositions, and their Content-Type values. */
typedef enum kapi_metrics_format {
    KAPI_METRICS_TEXT,        /* Prometheus text format 0.0.4 */
    KAPI_METRICS_OPENMETRICS, /* OpenMetrics 1.0.0 */
} kapi_metrics_format;
const char *kapi_metrics_content_type(kapi_metrics_format f);
/* The format an Accept header asks for (NULL: text): OpenMetrics when it lists
 * application/openmetrics-text with no version or version 1.0.0 (and a q above 0), as
 * client_golang negotiates it. */
kapi_metrics_format kapi_metrics_negotiate(const char *accept);

/* Runs the collectors, folds every thread's cells and appends the exposition of every
 * family used so far to out, families in name order and series in label order. */
void kapi_metrics_write(kapi_buf *out, kapi_metrics_format f);

/* The process metrics (process_*, and kapi_threads, the threads of the process: Go's
 * go_threads for kapi), read from /proc at scrape time. Registered once; idempotent. */
void kapi_metrics_process_init(void);

#endif
