/*
 * base: the small pieces every module uses.
 *
 * - kapi_str: a non-owning {ptr,len} slice; it never owns what it points at.
 * - kapi_buf: a growable byte buffer; ptr is never NULL and always NUL-terminated.
 * - kapi_arena: a bump allocator for everything one request allocates; one
 *   kapi_arena_dispose frees it all. What outlives the request is copied out.
 * - time, random names and UUIDs.
 *
 * Allocation failure aborts the process (kapi_xmalloc and friends): sizes are bounded
 * by the limits the callers enforce (request body, nesting depth), not by malloc.
 */
#ifndef KAPI_BASE_H
#define KAPI_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KAPI_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define KAPI_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* Memory that cannot fail: abort on exhaustion. */
void *kapi_xmalloc(size_t n);
void *kapi_xcalloc(size_t n, size_t size);
void *kapi_xrealloc(void *p, size_t n);
char *kapi_xstrdup(const char *s);
char *kapi_xstrndup(const char *s, size_t n);
/* A heap string made with printf formatting; the caller frees it. */
char *kapi_xprintf(const char *fmt, ...) KAPI_PRINTF(1, 2);

/* Writes all n bytes of p to fd, again after a short write or EINTR; false when a write
 * fails (errno says why; EIO for one that wrote nothing). */
bool kapi_write_all(int fd, const void *p, size_t n);

/* A non-owning slice of bytes. */
typedef struct kapi_str {
    const char *ptr;
    size_t len;
} kapi_str;

#define KAPI_STR(lit) ((kapi_str){(lit), sizeof(lit) - 1})
#define KAPI_STR_NULL ((kapi_str){NULL, 0})
/* printf("%.*s", KAPI_STR_FMT(s)) */
#define KAPI_STR_FMT(s) (int)(s).len, (s).ptr

/* The slice of a NUL-terminated string (NULL gives the empty slice). */
kapi_str kapi_str_c(const char *s);
bool kapi_str_eq(kapi_str a, kapi_str b);
bool kapi_str_eqc(kapi_str a, const char *b);
bool kapi_str_has_prefix(kapi_str s, const char *prefix);
/* True when s is one of the NULL-terminated set. */
bool kapi_cstr_in(const char *s, const char *const *set);
/* Splits s at the first sep: *head gets what is before it, s what is after; false if absent
 * (then *head is all of s and s becomes empty). */
bool kapi_str_cut(kapi_str *s, char sep, kapi_str *head);

/* The value of a hexadecimal digit, or -1. */
int kapi_hex_value(char c);

/* x in decimal, as Go writes it, ending just before end (which needs 20 bytes before it);
 * returns where it starts. Nothing is terminated. */
char *kapi_decimal(char *end, int64_t x);

/* A growable buffer; strbuf invariants: ptr is never NULL and ptr[len] == '\0'. */
typedef struct kapi_buf {
    char *ptr;
    size_t len;
    size_t cap;
} kapi_buf;

void kapi_buf_init(kapi_buf *b);
void kapi_buf_dispose(kapi_buf *b);
void kapi_buf_clear(kapi_buf *b);
void kapi_buf_grow(kapi_buf *b, size_t extra);
void kapi_buf_put(kapi_buf *b, const void *p, size_t n);
void kapi_buf_puts(kapi_buf *b, const char *s);
/* Appends one byte: inline, as encoders call it for every bracket and comma. */
static inline void kapi_buf_putc(kapi_buf *b, char c)
{
    if (b->len + 2 > b->cap)
        kapi_buf_grow(b, 1);
    b->ptr[b->len++] = c;
    b->ptr[b->len] = '\0';
}
void kapi_buf_printf(kapi_buf *b, const char *fmt, ...) KAPI_PRINTF(2, 3);
void kapi_buf_vprintf(kapi_buf *b, const char *fmt, va_list ap);
/* Takes the bytes out: the caller frees the result; b is left empty and usable. */
char *kapi_buf_detach(kapi_buf *b, size_t *len_out);

/* A bump allocator. Blocks grow geometrically; big allocations get their own block. */
typedef struct kapi_arena_block kapi_arena_block;
typedef struct kapi_arena {
    kapi_arena_block *head;
} kapi_arena;

void kapi_arena_init(kapi_arena *a);
void kapi_arena_dispose(kapi_arena *a);
/* Zeroed memory, 16-byte aligned, freed with the arena. */
void *kapi_arena_alloc(kapi_arena *a, size_t n);
char *kapi_arena_strndup(kapi_arena *a, const char *s, size_t n);
char *kapi_arena_strdup(kapi_arena *a, const char *s);
char *kapi_arena_printf(kapi_arena *a, const char *fmt, ...) KAPI_PRINTF(2, 3);

/* Wall-clock time in nanoseconds since the epoch, and a monotonic clock in nanoseconds. */
int64_t kapi_time_now_ns(void);
int64_t kapi_time_mono_ns(void);
/* "2006-01-02T15:04:05Z" into out (at least 21 bytes); returns out. */
char *kapi_time_rfc3339(char *out, int64_t unix_seconds);

/* Cryptographically random bytes (getrandom); aborts if the kernel cannot give them. */
void kapi_random_bytes(void *p, size_t n);
/* A random RFC 4122 version 4 UUID, 36 characters plus NUL; its bytes come from a
 * per-thread pool of getrandom's, refilled 4 KiB at a time. */
void kapi_uuid_v4(char out[37]);
/* n random characters from Kubernetes' name-suffix alphabet (no vowels, no ambiguous
 * digits), NUL-terminated: out has room for n + 1. */
void kapi_random_suffix(char *out, size_t n);

/* Go's encoding/base64 encodings: standard or URL alphabet, padded or raw (no padding). */
typedef enum kapi_base64 {
    KAPI_BASE64_STD = 0,
    KAPI_BASE64_URL = 1,
    KAPI_BASE64_RAW = 2,
} kapi_base64;

/* The encoding of n bytes, as a heap string. */
char *kapi_base64_encode(const void *p, size_t n, kapi_base64 enc);
/* Appends the bytes s encodes to out. Line breaks are skipped, as Go does. Returns -1, or
 * the input offset Go's CorruptInputError names ("illegal base64 data at input byte N"). */
long kapi_base64_decode(const char *s, size_t n, kapi_base64 enc, kapi_buf *out);

#endif
