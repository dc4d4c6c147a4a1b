/*
 * map: a small hash map (Redis's dict is the model): a map type's table of callbacks
 * says how its keys are hashed and compared and how its keys and values are freed, so
 * one implementation serves every kind of key. Chained buckets, a power of two of them,
 * the whole table rehashed at once when the count passes the bucket count.
 *
 * Keys and values are the caller's pointers; the map owns them once put (it frees them
 * with the type's key_free and val_free, either of which may be NULL). The hash is
 * seeded per map from the system's random source; it is fast, not a defence against
 * chosen collisions (the keys kapi puts are type names that the server or an
 * authorised client chose, and a lookup walks one chain of them). A map is not thread-safe: its
 * owner serialises writes against everything.
 */
#ifndef KAPI_MAP_H
#define KAPI_MAP_H

#include "base/base.h"

typedef struct kapi_map_type {
    /* The hash of key under the map's seed; kapi_map_hash_bytes is the usual body. */
    uint64_t (*hash)(const void *key, uint64_t seed);
    /* True when the stored key a and the key looked up b are the same key. */
    bool (*equal)(const void *a, const void *b);
    void (*key_free)(void *key);
    void (*val_free)(void *val);
} kapi_map_type;

typedef struct kapi_map kapi_map;

/* Where kapi_map_next is: zero it to start. */
typedef struct kapi_map_iter {
    size_t bucket;
    void *entry;
} kapi_map_iter;

kapi_map *kapi_map_new(const kapi_map_type *type);
/* Frees every key and value, then the map. NULL is allowed. */
void kapi_map_free(kapi_map *m);

size_t kapi_map_count(const kapi_map *m);
/* The value of key, or NULL when absent (a NULL value reads the same: use
 * kapi_map_has where that matters). */
void *kapi_map_get(const kapi_map *m, const void *key);
bool kapi_map_has(const kapi_map *m, const void *key);
/* Puts key -> val. Returns true if key was new; else the map keeps its stored key, frees
 * the key passed and the old value, and keeps val. */
bool kapi_map_put(kapi_map *m, void *key, void *val);
/* Removes key, freeing the stored key and value; false when absent. */
bool kapi_map_remove(kapi_map *m, const void *key);

/* The next entry into *key and *val (either may be NULL); false after the last. The map
 * must not change during an iteration; the order is the buckets'. */
bool kapi_map_next(const kapi_map *m, kapi_map_iter *it, void **key, void **val);

/* A 64-bit hash of n bytes under seed (MurmurHash3's mixing, eight bytes at a time); chain
 * calls by passing the previous hash as the seed. */
uint64_t kapi_map_hash_bytes(const void *p, size_t n, uint64_t seed);

#endif
