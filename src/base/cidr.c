/*
 * cidr: CIDR blocks and per-Node block sets (cidr.h). An address is handled as an
 * unsigned integer of its family's width, held in two 64-bit halves.
 */
#include "base/cidr.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An address as a 128-bit integer. */
typedef struct {
    uint64_t hi, lo;
} u128;

static u128 load(const kapi_cidr *c)
{
    u128 v = {0, 0};
    int n = c->bits / 8;
    for (int i = 0; i < n; i++) {
        v.hi = (v.hi << 8) | (v.lo >> 56);
        v.lo = (v.lo << 8) | c->addr[i];
    }
    return v;
}

static void store(u128 v, kapi_cidr *c)
{
    for (int i = c->bits / 8 - 1; i >= 0; i--) {
        c->addr[i] = (uint8_t)v.lo;
        v.lo = (v.lo >> 8) | (v.hi << 56);
        v.hi >>= 8;
    }
}

static u128 shl(u128 v, int n)
{
    if (n >= 128)
        return (u128){0, 0};
    if (n >= 64)
        return (u128){v.lo << (n - 64), 0};
    if (n == 0)
        return v;
    return (u128){(v.hi << n) | (v.lo >> (64 - n)), v.lo << n};
}

static u128 shr(u128 v, int n)
{
    if (n >= 128)
        return (u128){0, 0};
    if (n >= 64)
        return (u128){0, v.hi >> (n - 64)};
    if (n == 0)
        return v;
    return (u128){v.hi >> n, (v.lo >> n) | (v.hi << (64 - n))};
}

/* The address of c with only its first n bits kept. */
static u128 masked(const kapi_cidr *c, int n)
{
    int host = c->bits - n;
    return shl(shr(load(c), host), host);
}

/* Go's dtoi: decimal digits only; false when there are none or the value is huge. */
static bool dtoi(const char *s, size_t n, long *out)
{
    long v = 0;
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v > 0xffffff)
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* Four dotted decimal fields of at most 255, leading zeros allowed (ParseIPSloppy). */
static bool parse_ipv4(const char *s, size_t n, uint8_t out[4])
{
    int fields = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        long v;
        if (fields == 4 || !dtoi(s + start, i - start, &v) || v > 255)
            return false;
        out[fields++] = (uint8_t)v;
        start = i + 1;
    }
    return fields == 4;
}

bool kapi_cidr_parse(const char *s, kapi_cidr *out)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    const char *slash = strchr(s, '/');
    char addr[64];
    long ones;
    memset(out, 0, sizeof(*out));
    if (!slash || (size_t)(slash - s) >= sizeof(addr))
        return false;
    size_t alen = (size_t)(slash - s);
    memcpy(addr, s, alen);
    addr[alen] = '\0';
    if (parse_ipv4(addr, alen, out->addr))
        out->bits = 32;
    else if (inet_pton(AF_INET6, addr, out->addr) == 1)
        out->bits = 128;
    else
        return false;
    if (!dtoi(slash + 1, strlen(slash + 1), &ones) || ones > out->bits)
        return false;
    out->prefix = (int)ones;
    store(masked(out, out->prefix), out);
    /* Go asks To4 of the masked address */
    out->v4 = out->bits == 32 || memcmp(out->addr, mapped, sizeof(mapped)) == 0;
    return true;
}

void kapi_cidr_format(const kapi_cidr *c, char out[KAPI_CIDR_TEXT])
{
    char ip[INET6_ADDRSTRLEN];
    /* an IPv4-mapped block prints as IPv4, its mask's last 32 bits (Go's
     * networkNumberAndMask) */
    bool mapped = c->v4 && c->bits == 128;
    inet_ntop(c->v4 ? AF_INET : AF_INET6, mapped ? c->addr + 12 : c->addr, ip, sizeof(ip));
    snprintf(out, KAPI_CIDR_TEXT, "%s/%d", ip, mapped ? c->prefix - 96 : c->prefix);
}

bool kapi_cidr_overlaps(const kapi_cidr *a, const kapi_cidr *b)
{
    if (a->bits != b->bits)
        return false;
    int n = a->prefix < b->prefix ? a->prefix : b->prefix;
    u128 x = masked(a, n), y = masked(b, n);
    return x.hi == y.hi && x.lo == y.lo;
}

bool kapi_cidr_set_init(kapi_cidr_set *s, const kapi_cidr *range, int host_bits)
{
    memset(s, 0, sizeof(*s));
    int node_prefix = range->bits - host_bits;
    int diff = node_prefix - range->prefix;
    if (host_bits < 0 || diff < 0 || (range->bits == 128 && diff > KAPI_CIDR_MAX_DIFF) || diff > 62)
        return false;
    s->range = *range;
    s->node_prefix = node_prefix;
    s->max = (uint64_t)1 << diff;
    s->taken = kapi_xcalloc((size_t)((s->max + 7) / 8), 1);
    return true;
}

void kapi_cidr_set_dispose(kapi_cidr_set *s)
{
    free(s->taken);
    s->taken = NULL;
}

void kapi_cidr_set_block(const kapi_cidr_set *s, uint64_t i, kapi_cidr *out)
{
    u128 base = load(&s->range), off = shl((u128){0, i}, s->range.bits - s->node_prefix);
    *out = s->range;
    out->prefix = s->node_prefix;
    store((u128){base.hi | off.hi, base.lo | off.lo}, out);
}

static bool is_taken(const kapi_cidr_set *s, uint64_t i)
{
    return s->taken[i / 8] & (1u << (i % 8));
}

bool kapi_cidr_set_next(kapi_cidr_set *s, uint64_t *out)
{
    if (s->used == s->max)
        return false;
    uint64_t i = s->next;
    while (is_taken(s, i))
        i = (i + 1) % s->max;
    s->next = (i + 1) % s->max;
    *out = i;
    return true;
}

/* The index of the block holding the address of c masked to the block size. */
static uint64_t index_of(const kapi_cidr_set *s, u128 addr)
{
    u128 base = load(&s->range);
    u128 off = shr((u128){addr.hi ^ base.hi, addr.lo ^ base.lo}, s->range.bits - s->node_prefix);
    return off.lo;
}

/* The blocks c covers, [*begin, *end]; false when c is outside the range. */
static bool span(const kapi_cidr_set *s, const kapi_cidr *c, uint64_t *begin, uint64_t *end)
{
    if (c->bits != s->range.bits || !kapi_cidr_overlaps(c, &s->range))
        return false;
    *begin = 0, *end = s->max - 1;
    if (s->range.prefix < c->prefix) {
        int host = c->bits - c->prefix;
        u128 first = load(c), ones = shr((u128){~0ULL, ~0ULL}, 128 - host);
        *begin = index_of(s, first);
        *end = index_of(s, (u128){first.hi | ones.hi, first.lo | ones.lo});
    }
    return true;
}

/* Sets (on) or clears every block c covers; false when c is outside the range. */
static bool mark(kapi_cidr_set *s, const kapi_cidr *c, bool on)
{
    uint64_t begin, end;
    if (!span(s, c, &begin, &end))
        return false;
    for (uint64_t i = begin; i <= end; i++) {
        if (is_taken(s, i) == on)
            continue;
        s->taken[i / 8] ^= (uint8_t)(1u << (i % 8));
        s->used += on ? 1 : (uint64_t)-1;
    }
    return true;
}

bool kapi_cidr_set_occupy(kapi_cidr_set *s, const kapi_cidr *c)
{
    return mark(s, c, true);
}

bool kapi_cidr_set_release(kapi_cidr_set *s, const kapi_cidr *c)
{
    return mark(s, c, false);
}

bool kapi_cidr_set_any_taken(const kapi_cidr_set *s, const kapi_cidr *c)
{
    uint64_t begin, end;
    if (!span(s, c, &begin, &end))
        return false;
    for (uint64_t i = begin; i <= end; i++)
        if (is_taken(s, i))
            return true;
    return false;
}
