/*
 * report: the figures of a run, printed as one Markdown table (scenario, figure, value,
 * target) and written as one flat JSON object (key: number) in the order they were taken.
 * The targets are issue 6's (and issue 18's for CRDs, 19's for CEL), for kapi on two cores; a
 * figure without one shows none.
 */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct target {
    const char *key;
    bool at_least; /* true: value >= limit; false: value <= limit */
    double limit;
} target;

static const target targets[] = {
    {"create_per_s", true, 15000},
    {"get_per_s", true, 40000},
    {"get_h2_per_s", true, 40000},   /* over HTTP/2, get and watch keep their targets */
    {"get_rbac_per_s", true, 40000}, /* so does get as a user whom RBAC lets read */
    {"patch_per_s", true, 10000},
    {"list_10k_ms", false, 50},
    {"watch_p99_ms", false, 50},
    {"watch_lost", false, 0},
    {"watch_h2_p99_ms", false, 50},
    {"watch_h2_lost", false, 0},
    {"rss_idle_mb", false, 20},
    {"rss_per_json_byte", false, 2},
    {"start_empty_ms", false, 50},
    {"start_100k_ms", false, 1000},
    {"start_100k_killed_ms", false, 1000},
    {"crd_first_ms", false, 50}, /* issue 18: a CRD served within 50 ms, also the 201st */
    {"crd_last_ms", false, 50},
    {"crd_rss_kb", false, 200},
    {"cel_five_over_none_cpu", false, 2}, /* issue 19: five rules at most double a create */
    {"get_metrics_cpu_pct", false, 5},    /* issue 21: a get costs at most 5 % more CPU, scraped */
};

void kapi_bench_report_init(kapi_bench_report *r)
{
    *r = (kapi_bench_report){0};
}

void kapi_bench_report_dispose(kapi_bench_report *r)
{
    free(r->rows);
    *r = (kapi_bench_report){0};
}

void kapi_bench_report_add(kapi_bench_report *r, const char *scenario, const char *figure,
                           const char *key, double value, int decimals)
{
    if (r->len == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 32;
        r->rows = kapi_xrealloc(r->rows, r->cap * sizeof(*r->rows));
    }
    kapi_bench_row *row = &r->rows[r->len++];
    *row = (kapi_bench_row){.scenario = scenario,
                            .key = key,
                            .decimals = decimals,
                            .value = isfinite(value) ? value : 0}; /* JSON has no inf */
    snprintf(row->figure, sizeof(row->figure), "%s", figure);
}

bool kapi_bench_report_get(const kapi_bench_report *r, const char *key, double *out)
{
    for (size_t i = 0; i < r->len; i++) {
        if (strcmp(r->rows[i].key, key) == 0) {
            *out = r->rows[i].value;
            return true;
        }
    }
    return false;
}

static const target *target_of(const char *key)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(targets); i++) {
        if (strcmp(targets[i].key, key) == 0)
            return &targets[i];
    }
    return NULL;
}

void kapi_bench_report_markdown(const kapi_bench_report *r, kapi_buf *out)
{
    kapi_buf_puts(out, "| scenario | figure | value | target |\n|---|---|--:|---|\n");
    for (size_t i = 0; i < r->len; i++) {
        const kapi_bench_row *row = &r->rows[i];
        const target *t = target_of(row->key);
        kapi_buf_printf(out, "| %s | %s | %.*f | ", row->scenario, row->figure, row->decimals,
                        row->value);
        if (t) {
            bool met = t->at_least ? row->value >= t->limit : row->value <= t->limit;
            kapi_buf_printf(out, "%s %g %s", t->at_least ? "≥" : "≤", t->limit,
                            met ? "met" : "**missed**");
        }
        kapi_buf_puts(out, " |\n");
    }
}

void kapi_bench_report_json(const kapi_bench_report *r, kapi_buf *out)
{
    kapi_buf_puts(out, "{");
    for (size_t i = 0; i < r->len; i++)
        kapi_buf_printf(out, "%s\n  \"%s\": %.*f", i ? "," : "", r->rows[i].key,
                        r->rows[i].decimals, r->rows[i].value);
    kapi_buf_puts(out, "\n}\n");
}
