/*
 * metrics: the registry, the per-thread cells and the two expositions (metrics.h).
 */
#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/go.h"
#include "metrics/metrics.h"

const double kapi_metrics_latency_buckets[23] = {0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8,
                                                 1.0,   1.25,  1.5,  2,   3,   4,   5,   6,
                                                 8,     10,    15,   20,  30,  45,  60};
const double kapi_metrics_size_buckets[7] = {1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
const double kapi_metrics_admission_buckets[6] = {0.005, 0.025, 0.1, 0.5, 1.0, 2.5};

/* The table has twice the slots of the series it may hold, so that probes stay short. */
#define TABLE_SLOTS (2 * KAPI_METRICS_MAX_SERIES)
#define PAGE_CELLS 1024
#define NPAGES (KAPI_METRICS_MAX_CELLS / PAGE_CELLS)

typedef struct kapi_metric_series {
    kapi_metric *m;
    uint64_t hash;
    uint32_t cell;                   /* the first of its cells in every block */
    _Atomic uint64_t set;            /* a set gauge's value (double bits) */
    struct kapi_metric_series *next; /* in its family */
    const char *values[KAPI_METRICS_MAX_LABELS];
} series;

/* A thread's cells, in pages made when first touched. A counter has one cell, a gauge
 * one (its signed delta), a histogram one per bucket, one for +Inf and one for its sum
 * (double bits). */
typedef struct block {
    _Atomic(_Atomic uint64_t *) pages[NPAGES];
    struct block *next;
} block;

typedef struct collector {
    kapi_metrics_collector fn;
    void *ctx;
    struct collector *next;
} collector;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(series *) table[TABLE_SLOTS];
static size_t nseries;
static uint32_t ncells;
static kapi_metric *families; /* registered, in name order */
static block *blocks;         /* of the live threads */
static block retired;         /* the sum of the blocks of ended threads */
static pthread_mutex_t collect_lock = PTHREAD_MUTEX_INITIALIZER; /* held while they run */
static collector *collectors;
static pthread_key_t block_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static _Thread_local block *mine;

static double from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof(d));
    return d;
}

static uint64_t to_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return u;
}

static size_t cells_of(const kapi_metric *m)
{
    return m->type == KAPI_METRIC_HISTOGRAM ? m->nbuckets + 2 : 1;
}

static _Atomic uint64_t *cell_in(block *b, uint32_t i)
{
    return atomic_load_explicit(&b->pages[i / PAGE_CELLS], memory_order_acquire);
}

/* Adds what a cell of from holds to the same cell of to (lock held). */
static void fold_cell(block *to, block *from, uint32_t i, bool dbl)
{
    _Atomic uint64_t *src = cell_in(from, i);
    if (!src)
        return;
    _Atomic uint64_t *dst = cell_in(to, i);
    if (!dst) {
        dst = kapi_xcalloc(PAGE_CELLS, sizeof(*dst));
        atomic_store_explicit(&to->pages[i / PAGE_CELLS], dst, memory_order_release);
    }
    uint64_t a = atomic_load_explicit(&dst[i % PAGE_CELLS], memory_order_relaxed);
    uint64_t b = atomic_load_explicit(&src[i % PAGE_CELLS], memory_order_relaxed);
    atomic_store_explicit(&dst[i % PAGE_CELLS], dbl ? to_bits(from_bits(a) + from_bits(b)) : a + b,
                          memory_order_relaxed);
}

/* A thread ends: its counts join the retired block, and its block goes. */
static void retire(void *p)
{
    block *b = p;
    pthread_mutex_lock(&lock);
    for (kapi_metric *m = families; m; m = m->next)
        for (series *s = m->series; s; s = s->next)
            for (size_t k = 0; k < cells_of(m); k++)
                fold_cell(&retired, b, s->cell + (uint32_t)k,
                          m->type == KAPI_METRIC_HISTOGRAM && k == m->nbuckets + 1);
    for (block **pp = &blocks; *pp; pp = &(*pp)->next)
        if (*pp == b) {
            *pp = b->next;
            break;
        }
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < NPAGES; i++)
        free(atomic_load(&b->pages[i]));
    free(b);
}

static void make_key(void)
{
    pthread_key_create(&block_key, retire);
}

static block *my_block(void)
{
    if (mine)
        return mine;
    pthread_once(&key_once, make_key);
    mine = kapi_xcalloc(1, sizeof(*mine));
    pthread_mutex_lock(&lock);
    mine->next = blocks;
    blocks = mine;
    pthread_mutex_unlock(&lock);
    pthread_setspecific(block_key, mine);
    return mine;
}

/* The calling thread's cell i, its page made if need be. */
static _Atomic uint64_t *my_cell(uint32_t i)
{
    block *b = my_block();
    _Atomic uint64_t *page = atomic_load_explicit(&b->pages[i / PAGE_CELLS], memory_order_relaxed);
    if (!page) {
        page = kapi_xcalloc(PAGE_CELLS, sizeof(*page));
        atomic_store_explicit(&b->pages[i / PAGE_CELLS], page, memory_order_release);
    }
    return &page[i % PAGE_CELLS];
}

/* A counter's name ends with _total (OpenMetrics names its family without it). */
static bool named_total(const char *name)
{
    size_t n = strlen(name);
    return n > 6 && strcmp(name + n - 6, "_total") == 0;
}

static void register_locked(kapi_metric *m)
{
    if (atomic_load_explicit(&m->registered, memory_order_relaxed))
        return;
    m->nlabels = 0;
    while (m->labels[m->nlabels])
        m->nlabels++;
    assert(m->nlabels <= KAPI_METRICS_MAX_LABELS);
    assert(m->type != KAPI_METRIC_COUNTER || named_total(m->name));
    kapi_metric **pp = &families;
    while (*pp && strcmp((*pp)->name, m->name) < 0)
        pp = &(*pp)->next;
    m->next = *pp;
    *pp = m;
    atomic_store_explicit(&m->registered, true, memory_order_release);
}

static uint64_t hash_of(const kapi_metric *m, const char *const *values, size_t n)
{
    uint64_t h = 1469598103934665603ull ^ (uintptr_t)m;
    for (size_t i = 0; i < n; i++) {
        for (const char *p = values[i]; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ull;
        h = (h ^ 0xff) * 1099511628211ull;
    }
    return h;
}

static bool same(const series *s, const kapi_metric *m, uint64_t h, const char *const *values)
{
    if (s->m != m || s->hash != h)
        return false;
    for (size_t i = 0; i < m->nlabels; i++)
        if (strcmp(s->values[i], values[i]) != 0)
            return false;
    return true;
}

/* Makes the series in slot i (lock held); NULL when the registry is full. */
static series *insert_locked(kapi_metric *m, uint64_t h, const char *const *values, size_t i)
{
    if (nseries == KAPI_METRICS_MAX_SERIES || ncells + cells_of(m) > KAPI_METRICS_MAX_CELLS)
        return NULL;
    series *s = kapi_xcalloc(1, sizeof(*s));
    s->m = m;
    s->hash = h;
    s->cell = ncells;
    ncells += (uint32_t)cells_of(m);
    for (size_t k = 0; k < m->nlabels; k++)
        s->values[k] = kapi_xstrdup(values[k]);
    s->next = m->series;
    m->series = s;
    nseries++;
    atomic_store_explicit(&table[i], s, memory_order_release);
    return s;
}

/* The series of m with these values, made on first use; NULL when the registry is full. */
static series *find(kapi_metric *m, const char *const *values)
{
    if (!atomic_load_explicit(&m->registered, memory_order_acquire)) {
        pthread_mutex_lock(&lock);
        register_locked(m);
        pthread_mutex_unlock(&lock);
    }
    uint64_t h = hash_of(m, values, m->nlabels);
    size_t i = h % TABLE_SLOTS;
    for (;; i = (i + 1) % TABLE_SLOTS) {
        series *s = atomic_load_explicit(&table[i], memory_order_acquire);
        if (!s)
            break;
        if (same(s, m, h, values))
            return s;
    }
    pthread_mutex_lock(&lock);
    series *s;
    for (; (s = atomic_load_explicit(&table[i], memory_order_acquire)) != NULL;
         i = (i + 1) % TABLE_SLOTS)
        if (same(s, m, h, values))
            break;
    if (!s)
        s = insert_locked(m, h, values, i);
    pthread_mutex_unlock(&lock);
    return s;
}

static void bump(uint32_t i, uint64_t n)
{
    _Atomic uint64_t *c = my_cell(i);
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

void kapi_metrics_add(kapi_metric *m, const char *const *values, uint64_t n)
{
    series *s = find(m, values);
    if (s)
        bump(s->cell, n);
}

kapi_metric_series *kapi_metrics_series(kapi_metric *m, const char *const *values)
{
    return find(m, values);
}

void kapi_metrics_series_add(kapi_metric_series *s, uint64_t n)
{
    if (s)
        bump(s->cell, n);
}

void kapi_metrics_gauge_add(kapi_metric *m, const char *const *values, int64_t delta)
{
    series *s = find(m, values);
    if (s)
        bump(s->cell, (uint64_t)delta);
}

void kapi_metrics_set(kapi_metric *m, const char *const *values, double v)
{
    series *s = find(m, values);
    if (s)
        atomic_store_explicit(&s->set, to_bits(v), memory_order_relaxed);
}

void kapi_metrics_observe(kapi_metric *m, const char *const *values, double v)
{
    series *s = find(m, values);
    if (!s)
        return;
    size_t b = 0;
    while (b < m->nbuckets && v > m->buckets[b])
        b++;
    bump(s->cell + (uint32_t)b, 1);
    _Atomic uint64_t *sum = my_cell(s->cell + (uint32_t)m->nbuckets + 1);
    atomic_store_explicit(sum,
                          to_bits(from_bits(atomic_load_explicit(sum, memory_order_relaxed)) + v),
                          memory_order_relaxed);
}

void kapi_metrics_collector_add(kapi_metrics_collector fn, void *ctx)
{
    pthread_mutex_lock(&collect_lock);
    collector **pp = &collectors;
    while (*pp && !((*pp)->fn == fn && (*pp)->ctx == ctx))
        pp = &(*pp)->next;
    if (!*pp) {
        *pp = kapi_xcalloc(1, sizeof(**pp));
        (*pp)->fn = fn;
        (*pp)->ctx = ctx;
    }
    pthread_mutex_unlock(&collect_lock);
}

void kapi_metrics_collector_remove(kapi_metrics_collector fn, void *ctx)
{
    pthread_mutex_lock(&collect_lock);
    for (collector **pp = &collectors; *pp; pp = &(*pp)->next)
        if ((*pp)->fn == fn && (*pp)->ctx == ctx) {
            collector *c = *pp;
            *pp = c->next;
            free(c);
            break;
        }
    pthread_mutex_unlock(&collect_lock);
}

/* ---- exposition ---- */

const char *kapi_metrics_content_type(kapi_metrics_format f)
{
    return f == KAPI_METRICS_OPENMETRICS ? "application/openmetrics-text; version=1.0.0; "
                                           "charset=utf-8"
                                         : "text/plain; version=0.0.4; charset=utf-8";
}

static kapi_str trim(kapi_str s)
{
    while (s.len && (s.ptr[0] == ' ' || s.ptr[0] == '\t'))
        s.ptr++, s.len--;
    while (s.len && (s.ptr[s.len - 1] == ' ' || s.ptr[s.len - 1] == '\t'))
        s.len--;
    return s;
}

/* A qvalue of zero ("0", "0.0", ...): the range is not acceptable (RFC 9110 12.4.2). */
static bool q_zero(kapi_str v)
{
    if (!v.len || v.ptr[0] != '0')
        return false;
    for (size_t i = 1; i < v.len; i++)
        if (v.ptr[i] != '0' && v.ptr[i] != '.')
            return false;
    return true;
}

/* One media range of Accept: OpenMetrics 1.0.0 (or unversioned), with a q above 0? */
static bool asks_openmetrics(kapi_str range)
{
    kapi_str type, param;
    bool ok = true;
    kapi_str_cut(&range, ';', &type);
    if (!kapi_str_eqc(trim(type), "application/openmetrics-text"))
        return false;
    while (range.len) {
        kapi_str_cut(&range, ';', &param);
        param = trim(param);
        if (param.len > 8 && memcmp(param.ptr, "version=", 8) == 0)
            ok = ok && kapi_str_eqc((kapi_str){param.ptr + 8, param.len - 8}, "1.0.0");
        else if (param.len > 2 && memcmp(param.ptr, "q=", 2) == 0)
            ok = ok && !q_zero((kapi_str){param.ptr + 2, param.len - 2});
    }
    return ok;
}

kapi_metrics_format kapi_metrics_negotiate(const char *accept)
{
    if (!accept)
        return KAPI_METRICS_TEXT;
    kapi_str s = kapi_str_c(accept), range;
    while (s.len) {
        kapi_str_cut(&s, ',', &range);
        if (asks_openmetrics(range))
            return KAPI_METRICS_OPENMETRICS;
    }
    return KAPI_METRICS_TEXT;
}

/* HELP text: text 0.0.4 escapes \ and newline; OpenMetrics also the double quote. */
static void put_help(kapi_buf *b, const char *s, kapi_metrics_format f)
{
    for (; *s; s++) {
        if (*s == '\\')
            kapi_buf_puts(b, "\\\\");
        else if (*s == '\n')
            kapi_buf_puts(b, "\\n");
        else if (*s == '"' && f == KAPI_METRICS_OPENMETRICS)
            kapi_buf_puts(b, "\\\"");
        else
            kapi_buf_putc(b, *s);
    }
}

/* A label value: \, " and newline escaped (both formats). */
static void put_label_value(kapi_buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            kapi_buf_putc(b, '\\'), kapi_buf_putc(b, *s);
        else if (*s == '\n')
            kapi_buf_puts(b, "\\n");
        else
            kapi_buf_putc(b, *s);
    }
}

static void put_double(kapi_buf *b, double v)
{
    char num[40];
    if (isinf(v)) {
        kapi_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (isnan(v)) {
        kapi_buf_puts(b, "NaN");
        return;
    }
    kapi_go_format_float(num, v, 64);
    kapi_buf_puts(b, num);
}

/* name{labels[,le="bound"]} */
static void put_sample_start(kapi_buf *b, const kapi_metric *m, const series *s, const char *suffix,
                             const char *le)
{
    kapi_buf_puts(b, m->name);
    kapi_buf_puts(b, suffix);
    if (!m->nlabels && !le)
        return;
    kapi_buf_putc(b, '{');
    for (size_t i = 0; i < m->nlabels; i++) {
        kapi_buf_printf(b, "%s%s=\"", i ? "," : "", m->labels[i]);
        put_label_value(b, s->values[i]);
        kapi_buf_putc(b, '"');
    }
    if (le)
        kapi_buf_printf(b, "%sle=\"%s\"", m->nlabels ? "," : "", le);
    kapi_buf_putc(b, '}');
}

/* A cell summed over every block (lock held). */
static uint64_t total(uint32_t i, bool dbl)
{
    uint64_t u = 0;
    double d = 0;
    for (block *b = blocks;; b = b->next) {
        block *x = b ? b : &retired;
        _Atomic uint64_t *page = cell_in(x, i);
        uint64_t v = page ? atomic_load_explicit(&page[i % PAGE_CELLS], memory_order_relaxed) : 0;
        u += v;
        d += from_bits(v);
        if (!b)
            break;
    }
    return dbl ? to_bits(d) : u;
}

static void put_histogram(kapi_buf *b, const kapi_metric *m, const series *s, kapi_metrics_format f)
{
    uint64_t cum = 0;
    char le[40];
    for (size_t k = 0; k <= m->nbuckets; k++) {
        cum += total(s->cell + (uint32_t)k, false);
        if (k == m->nbuckets)
            snprintf(le, sizeof(le), "+Inf");
        else if (f == KAPI_METRICS_OPENMETRICS && m->buckets[k] == floor(m->buckets[k]) &&
                 fabs(m->buckets[k]) < 1e15)
            snprintf(le, sizeof(le), "%.1f", m->buckets[k]); /* OpenMetrics' canonical 1.0 */
        else
            kapi_go_format_float(le, m->buckets[k], 64);
        put_sample_start(b, m, s, "_bucket", le);
        kapi_buf_printf(b, " %llu\n", (unsigned long long)cum);
    }
    put_sample_start(b, m, s, "_sum", NULL);
    kapi_buf_putc(b, ' ');
    put_double(b, from_bits(total(s->cell + (uint32_t)m->nbuckets + 1, true)));
    kapi_buf_putc(b, '\n');
    put_sample_start(b, m, s, "_count", NULL);
    kapi_buf_printf(b, " %llu\n", (unsigned long long)cum);
}

/* A counter or gauge: its cells' sum (a gauge's deltas are signed), or the value set. */
static void put_value(kapi_buf *b, const kapi_metric *m, const series *s)
{
    put_sample_start(b, m, s, "", NULL);
    kapi_buf_putc(b, ' ');
    uint64_t set = atomic_load_explicit(&s->set, memory_order_relaxed);
    uint64_t sum = total(s->cell, false);
    if (set)
        put_double(b, from_bits(set));
    else if (m->type == KAPI_METRIC_COUNTER)
        kapi_buf_printf(b, "%llu", (unsigned long long)sum);
    else
        kapi_buf_printf(b, "%lld", (long long)sum);
    kapi_buf_putc(b, '\n');
}

static int by_labels(const void *a, const void *b)
{
    const series *x = *(const series *const *)a, *y = *(const series *const *)b;
    for (size_t i = 0; i < x->m->nlabels; i++) {
        int c = strcmp(x->values[i], y->values[i]);
        if (c)
            return c;
    }
    return 0;
}

static const char *const type_names[] = {"counter", "gauge", "histogram"};

static void put_family(kapi_buf *b, const kapi_metric *m, kapi_metrics_format f)
{
    size_t n = 0;
    for (series *s = m->series; s; s = s->next)
        n++;
    series **v = kapi_xmalloc((n ? n : 1) * sizeof(*v));
    n = 0;
    for (series *s = m->series; s; s = s->next)
        v[n++] = s;
    qsort(v, n, sizeof(*v), by_labels);
    /* OpenMetrics names a counter's family without its _total. */
    size_t len = strlen(m->name);
    if (f == KAPI_METRICS_OPENMETRICS && m->type == KAPI_METRIC_COUNTER)
        len -= strlen("_total");
    kapi_buf_printf(b, "# HELP %.*s ", (int)len, m->name);
    put_help(b, m->help, f);
    kapi_buf_printf(b, "\n# TYPE %.*s %s\n", (int)len, m->name, type_names[m->type]);
    for (size_t i = 0; i < n; i++) {
        if (m->type == KAPI_METRIC_HISTOGRAM)
            put_histogram(b, m, v[i], f);
        else
            put_value(b, m, v[i]);
    }
    free(v);
}

void kapi_metrics_write(kapi_buf *out, kapi_metrics_format f)
{
    /* Collectors set values, which may register series: they run without the lock. */
    pthread_mutex_lock(&collect_lock);
    for (collector *c = collectors; c; c = c->next)
        c->fn(c->ctx);
    pthread_mutex_unlock(&collect_lock);
    pthread_mutex_lock(&lock);
    for (kapi_metric *m = families; m; m = m->next)
        put_family(out, m, f);
    pthread_mutex_unlock(&lock);
    if (f == KAPI_METRICS_OPENMETRICS)
        kapi_buf_puts(out, "# EOF\n");
}
