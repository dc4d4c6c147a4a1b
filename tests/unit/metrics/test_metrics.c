/* Unit tests for src/metrics: counts folded across threads (live and ended), histogram
 * buckets, the text and OpenMetrics expositions, label and help escaping, negotiation. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"
#include "test.h"

static char *scrape(kapi_metrics_format f)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_metrics_write(&b, f);
    return kapi_buf_detach(&b, NULL);
}

/* The line of the exposition that starts with prefix followed by a space: its value. */
static char *sample(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, prefix, n) == 0 && p[n] == ' ') {
            const char *end = strchr(p + n + 1, '\n');
            return kapi_xstrndup(p + n + 1, (size_t)(end - p - n - 1));
        }
    return kapi_xstrdup("(absent)");
}

#define CHECK_SAMPLE(text, prefix, want)                                                           \
    do {                                                                                           \
        char *got_ = sample(text, prefix);                                                         \
        CHECK_STR_EQ(got_, want);                                                                  \
        free(got_);                                                                                \
    } while (0)

static kapi_metric threaded =
    KAPI_METRIC_COUNTER_DEF("test_threaded_total", "Counted by many threads.", "kind", NULL);
static kapi_metric level = KAPI_METRIC_GAUGE_DEF("test_level", "Moved by deltas.", NULL);

enum { NTHREADS = 4, PER_THREAD = 10000 };
static pthread_barrier_t started, scraped;

/* Counts, then (while the main thread scrapes) stays alive; then ends. */
static void *count(void *arg)
{
    (void)arg;
    for (int i = 0; i < PER_THREAD; i++)
        kapi_metrics_inc(&threaded, (const char *[]){i % 2 ? "odd" : "even"});
    kapi_metrics_gauge_add(&level, (const char *[]){NULL}, 1);
    pthread_barrier_wait(&started);
    pthread_barrier_wait(&scraped);
    return NULL;
}

/* Every thread's counts are in the sum, while the threads live and after they end; a
 * gauge moved up in one thread and down in another sums to the difference. */
TEST(metrics_fold_threads)
{
    pthread_t t[NTHREADS];
    pthread_barrier_init(&started, NULL, NTHREADS + 1);
    pthread_barrier_init(&scraped, NULL, NTHREADS + 1);
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, count, NULL);
    pthread_barrier_wait(&started);
    char *live = scrape(KAPI_METRICS_TEXT);
    pthread_barrier_wait(&scraped);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    kapi_metrics_gauge_add(&level, (const char *[]){NULL}, -1);
    char *after = scrape(KAPI_METRICS_TEXT);
    CHECK_SAMPLE(live, "test_threaded_total{kind=\"even\"}", "20000");
    CHECK_SAMPLE(live, "test_threaded_total{kind=\"odd\"}", "20000");
    CHECK_SAMPLE(live, "test_level", "4");
    CHECK_SAMPLE(after, "test_threaded_total{kind=\"even\"}", "20000");
    CHECK_SAMPLE(after, "test_threaded_total{kind=\"odd\"}", "20000");
    CHECK_SAMPLE(after, "test_level", "3");
    free(live);
    free(after);
    pthread_barrier_destroy(&started);
    pthread_barrier_destroy(&scraped);
}

static const double bounds[] = {0.1, 1, 10};
static kapi_metric hist =
    KAPI_METRIC_HISTOGRAM_DEF("test_seconds", "A histogram.", bounds, "op", NULL);

/* A value on a bound falls in that bound's bucket (le); buckets are cumulative and the
 * last, +Inf, equals the count; the sum is the values' sum. */
TEST(metrics_histogram_buckets)
{
    const double values[] = {0.05, 0.1, 0.5, 1, 7, 100};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(values); i++)
        kapi_metrics_observe(&hist, (const char *[]){"get"}, values[i]);
    char *text = scrape(KAPI_METRICS_TEXT);
    CHECK_SAMPLE(text, "test_seconds_bucket{op=\"get\",le=\"0.1\"}", "2");
    CHECK_SAMPLE(text, "test_seconds_bucket{op=\"get\",le=\"1\"}", "4");
    CHECK_SAMPLE(text, "test_seconds_bucket{op=\"get\",le=\"10\"}", "5");
    CHECK_SAMPLE(text, "test_seconds_bucket{op=\"get\",le=\"+Inf\"}", "6");
    CHECK_SAMPLE(text, "test_seconds_count{op=\"get\"}", "6");
    char *sum = sample(text, "test_seconds_sum{op=\"get\"}");
    CHECK(atof(sum) > 108.649 && atof(sum) < 108.651);
    free(sum);
    CHECK(strstr(text, "# TYPE test_seconds histogram\n") != NULL);
    free(text);
    char *om = scrape(KAPI_METRICS_OPENMETRICS);
    CHECK_SAMPLE(om, "test_seconds_bucket{op=\"get\",le=\"1.0\"}", "4");
    CHECK_SAMPLE(om, "test_seconds_bucket{op=\"get\",le=\"+Inf\"}", "6");
    free(om);
}

static kapi_metric escaped = KAPI_METRIC_COUNTER_DEF(
    "test_escaped_total", "Help with a \\ backslash,\na newline and a \"quote\".", "path", NULL);

/* Label values escape \, " and newline; help escapes \ and newline, and in OpenMetrics the
 * quote too. */
TEST(metrics_escaping)
{
    kapi_metrics_inc(&escaped, (const char *[]){"a\\b\"c\nd"});
    char *text = scrape(KAPI_METRICS_TEXT);
    CHECK(strstr(text, "# HELP test_escaped_total Help with a \\\\ backslash,\\na newline and "
                       "a \"quote\".\n") != NULL);
    CHECK_SAMPLE(text, "test_escaped_total{path=\"a\\\\b\\\"c\\nd\"}", "1");
    free(text);
    char *om = scrape(KAPI_METRICS_OPENMETRICS);
    CHECK(strstr(om, "# HELP test_escaped Help with a \\\\ backslash,\\na newline and "
                     "a \\\"quote\\\".\n") != NULL);
    free(om);
}

static kapi_metric om_counter =
    KAPI_METRIC_COUNTER_DEF("test_om_requests_total", "Requests.", "code", NULL);
static kapi_metric om_set = KAPI_METRIC_GAUGE_DEF("test_om_ratio", "A ratio.", NULL);

/* Text: the family is named as its samples; OpenMetrics: a counter's family drops _total,
 * and the exposition ends with # EOF. Families come in name order, series in label order. */
TEST(metrics_encodings)
{
    kapi_metrics_add(&om_counter, (const char *[]){"500"}, 2);
    kapi_metrics_inc(&om_counter, (const char *[]){"200"});
    kapi_metrics_set(&om_set, (const char *[]){NULL}, 0.25);
    char *text = scrape(KAPI_METRICS_TEXT);
    const char *want = "# HELP test_om_ratio A ratio.\n"
                       "# TYPE test_om_ratio gauge\n"
                       "test_om_ratio 0.25\n"
                       "# HELP test_om_requests_total Requests.\n"
                       "# TYPE test_om_requests_total counter\n"
                       "test_om_requests_total{code=\"200\"} 1\n"
                       "test_om_requests_total{code=\"500\"} 2\n";
    CHECK(strstr(text, want) != NULL);
    CHECK(strstr(text, "# EOF") == NULL);
    free(text);
    char *om = scrape(KAPI_METRICS_OPENMETRICS);
    const char *om_want = "# HELP test_om_requests Requests.\n"
                          "# TYPE test_om_requests counter\n"
                          "test_om_requests_total{code=\"200\"} 1\n"
                          "test_om_requests_total{code=\"500\"} 2\n";
    CHECK(strstr(om, om_want) != NULL);
    size_t n = strlen(om);
    CHECK(n > 6 && strcmp(om + n - 6, "# EOF\n") == 0);
    free(om);
}

/* OpenMetrics when Accept lists it unversioned or at 1.0.0, and not with q=0; text
 * otherwise. */
TEST(metrics_negotiate)
{
    CHECK_INT_EQ(kapi_metrics_negotiate(NULL), KAPI_METRICS_TEXT);
    CHECK_INT_EQ(kapi_metrics_negotiate("*/*"), KAPI_METRICS_TEXT);
    CHECK_INT_EQ(kapi_metrics_negotiate("text/plain;version=0.0.4"), KAPI_METRICS_TEXT);
    CHECK_INT_EQ(kapi_metrics_negotiate("application/openmetrics-text"), KAPI_METRICS_OPENMETRICS);
    CHECK_INT_EQ(kapi_metrics_negotiate("application/openmetrics-text; version=1.0.0; "
                                        "charset=utf-8,text/plain;version=0.0.4;q=0.5"),
                 KAPI_METRICS_OPENMETRICS);
    CHECK_INT_EQ(kapi_metrics_negotiate("application/openmetrics-text; version=0.0.1,*/*;q=0.1"),
                 KAPI_METRICS_TEXT);
    CHECK_INT_EQ(kapi_metrics_negotiate("application/openmetrics-text;version=1.0.0;q=0,*/*"),
                 KAPI_METRICS_TEXT);
    CHECK_INT_EQ(kapi_metrics_negotiate("application/openmetrics-text;q=0.000;version=1.0.0"),
                 KAPI_METRICS_TEXT);
    CHECK_INT_EQ(kapi_metrics_negotiate("application/openmetrics-text;q=0.01"),
                 KAPI_METRICS_OPENMETRICS);
    CHECK_STR_EQ(kapi_metrics_content_type(KAPI_METRICS_OPENMETRICS),
                 "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

/* The process collector reports the process's own figures. */
TEST(metrics_process)
{
    kapi_metrics_process_init();
    char *text = scrape(KAPI_METRICS_TEXT);
    char *fds = sample(text, "process_open_fds");
    char *threads = sample(text, "kapi_threads");
    char *rss = sample(text, "process_resident_memory_bytes");
    CHECK(atof(fds) >= 3);
    CHECK_INT_EQ(atoi(threads), 1);
    CHECK(atof(rss) > 0);
    CHECK(strstr(text, "# TYPE process_cpu_seconds_total counter\n") != NULL);
    free(fds);
    free(threads);
    free(rss);
    free(text);
}

static kapi_metric handled =
    KAPI_METRIC_COUNTER_DEF("test_handled_total", "Counted through a handle.", "kind", NULL);

/* A series found once counts with the counts made by label values. */
TEST(metrics_series_handle)
{
    kapi_metric_series *s = kapi_metrics_series(&handled, (const char *[]){"Pod"});
    CHECK(s != NULL);
    CHECK(kapi_metrics_series(&handled, (const char *[]){"Pod"}) == s);
    kapi_metrics_series_add(s, 5);
    kapi_metrics_inc(&handled, (const char *[]){"Pod"});
    char *text = scrape(KAPI_METRICS_TEXT);
    CHECK_SAMPLE(text, "test_handled_total{kind=\"Pod\"}", "6");
    free(text);
}
