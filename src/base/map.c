/* base/map: the hash map of map.h. */
#include "base/map.h"

#include <stdlib.h>
#include <string.h>

typedef struct map_entry {
    struct map_entry *next;
    uint64_t hash;
    void *key, *val;
} map_entry;

struct kapi_map {
    const kapi_map_type *type;
    uint64_t seed;
    map_entry **buckets;
    size_t nbuckets; /* a power of two */
    size_t count;
};

#define MAP_MIN_BUCKETS 8

kapi_map *kapi_map_new(const kapi_map_type *type)
{
    kapi_map *m = kapi_xcalloc(1, sizeof(*m));
    m->type = type;
    kapi_random_bytes(&m->seed, sizeof(m->seed));
    m->nbuckets = MAP_MIN_BUCKETS;
    m->buckets = kapi_xcalloc(m->nbuckets, sizeof(*m->buckets));
    return m;
}

static void entry_free(const kapi_map *m, map_entry *e)
{
    if (m->type->key_free)
        m->type->key_free(e->key);
    if (m->type->val_free)
        m->type->val_free(e->val);
    free(e);
}

void kapi_map_free(kapi_map *m)
{
    if (!m)
        return;
    for (size_t b = 0; b < m->nbuckets; b++) {
        map_entry *e = m->buckets[b];
        while (e) {
            map_entry *next = e->next;
            entry_free(m, e);
            e = next;
        }
    }
    free(m->buckets);
    free(m);
}

size_t kapi_map_count(const kapi_map *m)
{
    return m->count;
}

/* The link that points at key's entry (or at the NULL ending its bucket's chain). */
static map_entry **find_link(const kapi_map *m, const void *key, uint64_t h)
{
    map_entry **link = &m->buckets[h & (m->nbuckets - 1)];
    while (*link && !((*link)->hash == h && m->type->equal((*link)->key, key)))
        link = &(*link)->next;
    return link;
}

void *kapi_map_get(const kapi_map *m, const void *key)
{
    map_entry *e = *find_link(m, key, m->type->hash(key, m->seed));
    return e ? e->val : NULL;
}

bool kapi_map_has(const kapi_map *m, const void *key)
{
    return *find_link(m, key, m->type->hash(key, m->seed)) != NULL;
}

/* Doubles the buckets and moves every entry to its new one. */
static void grow(kapi_map *m)
{
    size_t n = m->nbuckets * 2;
    map_entry **buckets = kapi_xcalloc(n, sizeof(*buckets));
    for (size_t b = 0; b < m->nbuckets; b++) {
        map_entry *e = m->buckets[b];
        while (e) {
            map_entry *next = e->next;
            e->next = buckets[e->hash & (n - 1)];
            buckets[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    free(m->buckets);
    m->buckets = buckets;
    m->nbuckets = n;
}

bool kapi_map_put(kapi_map *m, void *key, void *val)
{
    uint64_t h = m->type->hash(key, m->seed);
    map_entry **link = find_link(m, key, h);
    if (*link) {
        if (m->type->key_free)
            m->type->key_free(key);
        if (m->type->val_free && (*link)->val != val)
            m->type->val_free((*link)->val);
        (*link)->val = val;
        return false;
    }
    map_entry *e = kapi_xmalloc(sizeof(*e));
    *e = (map_entry){NULL, h, key, val};
    *link = e;
    if (++m->count > m->nbuckets)
        grow(m);
    return true;
}

bool kapi_map_remove(kapi_map *m, const void *key)
{
    map_entry **link = find_link(m, key, m->type->hash(key, m->seed));
    map_entry *e = *link;
    if (!e)
        return false;
    *link = e->next;
    entry_free(m, e);
    m->count--;
    return true;
}

bool kapi_map_next(const kapi_map *m, kapi_map_iter *it, void **key, void **val)
{
    map_entry *e = it->entry;
    if (e && !(e = e->next))
        it->bucket++;
    while (!e && it->bucket < m->nbuckets)
        if (!(e = m->buckets[it->bucket]))
            it->bucket++;
    it->entry = e;
    if (!e)
        return false;
    if (key)
        *key = e->key;
    if (val)
        *val = e->val;
    return true;
}

static inline uint64_t rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

/* The last 0..7 bytes as one word, by overlapping reads (as wyhash does): no loop and no
 * call to memcpy for the short strings kapi hashes. */
static inline uint64_t tail(const unsigned char *c, size_t n)
{
    uint32_t lo, hi;
    if (n >= 4) {
        memcpy(&lo, c, 4);
        memcpy(&hi, c + n - 4, 4);
        return (uint64_t)hi << 32 | lo;
    }
    return n ? (uint64_t)c[0] << 16 | (uint64_t)c[n >> 1] << 8 | c[n - 1] : 0;
}

/* Eight bytes at a time (as MurmurHash3's 64-bit body), then its final avalanche. */
uint64_t kapi_map_hash_bytes(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *c = p;
    uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ULL), w;
    for (; n >= 8; c += 8, n -= 8) {
        memcpy(&w, c, 8);
        h ^= rotl(w * 0x87c37b91114253d5ULL, 31) * 0x4cf5ad432745937fULL;
        h = rotl(h, 27) * 5 + 0x52dce729;
    }
    w = tail(c, n);
    h ^= rotl(w * 0x87c37b91114253d5ULL, 31) * 0x4cf5ad432745937fULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}
