/* stats: latency samples and their percentiles, from every sample (no averaging). */
#include "bench.h"

#include <math.h>
#include <stdlib.h>

void kapi_bench_samples_init(kapi_bench_samples *s)
{
    *s = (kapi_bench_samples){0};
}

void kapi_bench_samples_dispose(kapi_bench_samples *s)
{
    free(s->ns);
    *s = (kapi_bench_samples){0};
}

void kapi_bench_samples_add(kapi_bench_samples *s, uint64_t ns)
{
    if (s->len == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->ns = kapi_xrealloc(s->ns, s->cap * sizeof(*s->ns));
    }
    s->ns[s->len++] = ns;
    s->sorted = false;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

double kapi_bench_samples_percentile_ms(kapi_bench_samples *s, double p)
{
    if (s->len == 0)
        return 0;
    if (!s->sorted) {
        qsort(s->ns, s->len, sizeof(*s->ns), cmp_u64);
        s->sorted = true;
    }
    /* p * len first: exact for whole p, so 99% of 100 samples is rank 99, not 100. */
    double rank = ceil(p * (double)s->len / 100.0);
    size_t i = rank < 1 ? 0 : (size_t)rank - 1;
    if (i >= s->len)
        i = s->len - 1;
    return (double)s->ns[i] / 1e6;
}

double kapi_bench__ms(uint64_t ns)
{
    return (double)ns / 1e6;
}
