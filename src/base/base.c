/* base: memory that cannot fail, slices, growable buffers, the arena, time, randomness. */
#include "base/base.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static void oom(void)
{
    fputs("kapi: out of memory\n", stderr);
    abort();
}

void *kapi_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom();
    return p;
}

void *kapi_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom();
    return p;
}

void *kapi_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        oom();
    return p;
}

char *kapi_xstrdup(const char *s)
{
    return kapi_xstrndup(s, strlen(s));
}

char *kapi_xstrndup(const char *s, size_t n)
{
    char *p = kapi_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *kapi_xprintf(const char *fmt, ...)
{
    kapi_buf b;
    va_list ap;
    kapi_buf_init(&b);
    va_start(ap, fmt);
    kapi_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    return kapi_buf_detach(&b, NULL);
}

kapi_str kapi_str_c(const char *s)
{
    return (kapi_str){s ? s : "", s ? strlen(s) : 0};
}

bool kapi_str_eq(kapi_str a, kapi_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

bool kapi_str_eqc(kapi_str a, const char *b)
{
    return kapi_str_eq(a, kapi_str_c(b));
}

bool kapi_str_has_prefix(kapi_str s, const char *prefix)
{
    size_t n = strlen(prefix);
    return s.len >= n && memcmp(s.ptr, prefix, n) == 0;
}

bool kapi_cstr_in(const char *s, const char *const *set)
{
    for (size_t i = 0; set[i]; i++)
        if (strcmp(s, set[i]) == 0)
            return true;
    return false;
}

bool kapi_str_cut(kapi_str *s, char sep, kapi_str *head)
{
    const char *p = s->len ? memchr(s->ptr, sep, s->len) : NULL;
    if (!p) {
        *head = *s;
        *s = (kapi_str){s->ptr + s->len, 0};
        return false;
    }
    *head = (kapi_str){s->ptr, (size_t)(p - s->ptr)};
    *s = (kapi_str){p + 1, s->len - head->len - 1};
    return true;
}

static char buf_empty[1];

void kapi_buf_init(kapi_buf *b)
{
    b->ptr = buf_empty;
    b->len = 0;
    b->cap = 0;
}

void kapi_buf_dispose(kapi_buf *b)
{
    if (b->cap)
        free(b->ptr);
    kapi_buf_init(b);
}

void kapi_buf_clear(kapi_buf *b)
{
    b->len = 0;
    if (b->cap) /* the shared empty buffer is never written: threads share it */
        b->ptr[0] = '\0';
}

void kapi_buf_grow(kapi_buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    if (b->cap) {
        b->ptr = kapi_xrealloc(b->ptr, cap);
    } else {
        b->ptr = kapi_xmalloc(cap);
        b->ptr[0] = '\0';
    }
    b->cap = cap;
}

void kapi_buf_put(kapi_buf *b, const void *p, size_t n)
{
    if (n == 0)
        return;
    kapi_buf_grow(b, n);
    memcpy(b->ptr + b->len, p, n);
    b->len += n;
    b->ptr[b->len] = '\0';
}

void kapi_buf_puts(kapi_buf *b, const char *s)
{
    kapi_buf_put(b, s, strlen(s));
}

/* Formats into the room the buffer has (made at least the format's length and some), and
 * again after growing it only when that was too little: measuring first would format
 * every text twice. */
void kapi_buf_vprintf(kapi_buf *b, const char *fmt, va_list ap)
{
    va_list copy;
    size_t want = strlen(fmt) + 64;
    if (b->cap - b->len < want)
        kapi_buf_grow(b, want);
    va_copy(copy, ap);
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->ptr + b->len, room, fmt, copy);
    va_end(copy);
    if (n <= 0)
        return;
    if ((size_t)n >= room) {
        kapi_buf_grow(b, (size_t)n);
        vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
    }
    b->len += (size_t)n;
}

void kapi_buf_printf(kapi_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kapi_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *kapi_buf_detach(kapi_buf *b, size_t *len_out)
{
    char *p = b->cap ? b->ptr : kapi_xstrdup("");
    if (len_out)
        *len_out = b->len;
    kapi_buf_init(b);
    return p;
}

struct kapi_arena_block {
    kapi_arena_block *next;
    size_t used, cap;
    _Alignas(16) char data[];
};

void kapi_arena_init(kapi_arena *a)
{
    a->head = NULL;
}

/* Most arenas (a request's, and the short ones within it) never outgrow their first
 * block or two: each thread keeps a few blocks of the first sizes from disposed arenas
 * for its next ones, which spares a malloc and a free per block. The thread's exit frees
 * them. */
enum { ARENA_FIRST = 4096, ARENA_KEPT_SIZES = 3, ARENA_SPARES = 4 };

typedef struct arena_spares {
    kapi_arena_block *head[ARENA_KEPT_SIZES]; /* of size ARENA_FIRST << i */
    unsigned n[ARENA_KEPT_SIZES];
    bool registered; /* with spares_key, for the thread's exit */
} arena_spares;

static _Thread_local arena_spares spares;
static pthread_key_t spares_key;
static pthread_once_t spares_once = PTHREAD_ONCE_INIT;

static void spares_free(void *p)
{
    arena_spares *s = p;
    for (int i = 0; i < ARENA_KEPT_SIZES; i++) {
        while (s->head[i]) {
            kapi_arena_block *next = s->head[i]->next;
            free(s->head[i]);
            s->head[i] = next;
        }
        s->n[i] = 0;
    }
    s->registered = false;
}

static void spares_key_create(void)
{
    if (pthread_key_create(&spares_key, spares_free) != 0)
        abort();
}

/* The spares list a block of cap bytes goes to; -1: none. */
static int spare_size(size_t cap)
{
    for (int i = 0; i < ARENA_KEPT_SIZES; i++)
        if (cap == (size_t)ARENA_FIRST << i)
            return i;
    return -1;
}

static kapi_arena_block *block_new(size_t cap)
{
    int i = spare_size(cap);
    if (i < 0 || !spares.head[i])
        return kapi_xmalloc(sizeof(kapi_arena_block) + cap);
    kapi_arena_block *b = spares.head[i];
    spares.head[i] = b->next;
    spares.n[i]--;
    return b;
}

static void block_free(kapi_arena_block *b)
{
    int i = spare_size(b->cap);
    if (i < 0 || spares.n[i] == ARENA_SPARES) {
        free(b);
        return;
    }
    if (!spares.registered) {
        pthread_once(&spares_once, spares_key_create);
        pthread_setspecific(spares_key, &spares);
        spares.registered = true;
    }
    b->next = spares.head[i];
    spares.head[i] = b;
    spares.n[i]++;
}

void kapi_arena_dispose(kapi_arena *a)
{
    kapi_arena_block *b = a->head;
    while (b) {
        kapi_arena_block *next = b->next;
        block_free(b);
        b = next;
    }
    a->head = NULL;
}

/* What the arena takes for n bytes: blocks hand out multiples of 16. */
static size_t arena_size(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

void *kapi_arena_alloc(kapi_arena *a, size_t n)
{
    n = arena_size(n);
    kapi_arena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = b ? b->cap * 2 : ARENA_FIRST;
        if (cap > 1 << 20)
            cap = 1 << 20;
        if (cap < n)
            cap = n;
        kapi_arena_block *nb = block_new(cap);
        nb->used = 0;
        nb->cap = cap;
        /* A big one-off allocation goes behind the current block, which keeps its room. */
        if (b && cap == n && b->cap - b->used > 256) {
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *kapi_arena_strndup(kapi_arena *a, const char *s, size_t n)
{
    char *p = kapi_arena_alloc(a, n + 1);
    memcpy(p, s, n);
    return p;
}

char *kapi_arena_strdup(kapi_arena *a, const char *s)
{
    return kapi_arena_strndup(a, s, strlen(s));
}

/* Formats into the free end of the current block, which keeps it when it fits; else
 * allocates what the text needs and formats it again. */
char *kapi_arena_printf(kapi_arena *a, const char *fmt, ...)
{
    va_list ap, copy;
    va_start(ap, fmt);
    va_copy(copy, ap);
    kapi_arena_block *b = a->head;
    size_t room = b ? b->cap - b->used : 0;
    char *p = room ? b->data + b->used : NULL;
    int n = vsnprintf(p, room, fmt, copy);
    va_end(copy);
    size_t need = arena_size(n > 0 ? (size_t)n + 1 : 1);
    if (n >= 0 && need <= room) {
        b->used += need;
    } else {
        p = kapi_arena_alloc(a, n > 0 ? (size_t)n + 1 : 1);
        if (n > 0)
            vsnprintf(p, (size_t)n + 1, fmt, ap);
    }
    va_end(ap);
    return p;
}

int64_t kapi_time_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t kapi_time_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

char *kapi_time_rfc3339(char *out, int64_t unix_seconds)
{
    time_t t = (time_t)unix_seconds;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 21, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return out;
}

void kapi_random_bytes(void *p, size_t n)
{
    char *c = p;
    while (n > 0) {
        ssize_t got = getrandom(c, n, 0);
        if (got <= 0) {
            fputs("kapi: getrandom failed\n", stderr);
            abort();
        }
        c += got;
        n -= (size_t)got;
    }
}

void kapi_uuid_v4(char out[37])
{
    static const char hex[] = "0123456789abcdef";
    /* every request gets a UUID (its audit ID): one getrandom per 256 of them */
    static _Thread_local unsigned char pool[4096];
    static _Thread_local size_t used = sizeof(pool);
    unsigned char r[16];
    if (used == sizeof(pool)) {
        kapi_random_bytes(pool, sizeof(pool));
        used = 0;
    }
    memcpy(r, pool + used, sizeof(r));
    memset(pool + used, 0, sizeof(r));
    used += sizeof(r);
    r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
    r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
    char *o = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *o++ = '-';
        *o++ = hex[r[i] >> 4];
        *o++ = hex[r[i] & 15];
    }
    *o = '\0';
}

void kapi_random_suffix(char *out, size_t n)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char r[64];
    if (n > sizeof(r))
        n = sizeof(r);
    kapi_random_bytes(r, n);
    for (size_t i = 0; i < n; i++)
        out[i] = alphabet[r[i] % (sizeof(alphabet) - 1)];
    out[n] = '\0';
}

int kapi_hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

char *kapi_decimal(char *end, int64_t x)
{
    char *p = end;
    uint64_t u = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (x < 0)
        *--p = '-';
    return p;
}

bool kapi_write_all(int fd, const void *p, size_t n)
{
    const char *at = p;
    while (n > 0) {
        ssize_t w = write(fd, at, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return false;
        }
        at += w;
        n -= (size_t)w;
    }
    return true;
}
