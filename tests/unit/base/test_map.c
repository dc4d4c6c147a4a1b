/* Unit tests for src/base/map: put, get, replace, remove, growth, iteration, frees. */
#include <stdlib.h>
#include <string.h>

#include "base/map.h"
#include "test.h"

static int freed_vals;

static uint64_t str_hash(const void *key, uint64_t seed)
{
    return kapi_map_hash_bytes(key, strlen(key), seed);
}

static bool str_equal(const void *a, const void *b)
{
    return strcmp(a, b) == 0;
}

static void val_free(void *v)
{
    freed_vals++;
    free(v);
}

static const kapi_map_type str_map = {str_hash, str_equal, free, val_free};

/* Every key collides: chains must still tell keys apart. */
static uint64_t same_hash(const void *key, uint64_t seed)
{
    (void)key;
    (void)seed;
    return 42;
}

static const kapi_map_type colliding_map = {same_hash, str_equal, free, NULL};

TEST(map_put_get_replace_remove)
{
    kapi_map *m = kapi_map_new(&str_map);
    freed_vals = 0;
    CHECK(kapi_map_get(m, "a") == NULL);
    CHECK(kapi_map_put(m, kapi_xstrdup("a"), kapi_xstrdup("1")));
    CHECK(kapi_map_put(m, kapi_xstrdup("b"), kapi_xstrdup("2")));
    CHECK_STR_EQ(kapi_map_get(m, "a"), "1");
    CHECK_STR_EQ(kapi_map_get(m, "b"), "2");
    CHECK(!kapi_map_put(m, kapi_xstrdup("a"), kapi_xstrdup("3")));
    CHECK_INT_EQ(freed_vals, 1);
    CHECK_STR_EQ(kapi_map_get(m, "a"), "3");
    CHECK_INT_EQ(kapi_map_count(m), 2);
    CHECK(kapi_map_remove(m, "a"));
    CHECK(!kapi_map_remove(m, "a"));
    CHECK(!kapi_map_has(m, "a"));
    CHECK(kapi_map_has(m, "b"));
    CHECK_INT_EQ(kapi_map_count(m), 1);
    CHECK_INT_EQ(freed_vals, 2);
    kapi_map_free(m);
    CHECK_INT_EQ(freed_vals, 3);
}

TEST(map_grows_and_iterates_every_entry)
{
    kapi_map *m = kapi_map_new(&str_map);
    enum { N = 5000 };
    for (int i = 0; i < N; i++)
        CHECK(kapi_map_put(m, kapi_xprintf("key-%d", i), kapi_xprintf("%d", i)));
    CHECK_INT_EQ(kapi_map_count(m), N);
    for (int i = 0; i < N; i += 7) {
        char key[32];
        snprintf(key, sizeof(key), "key-%d", i);
        CHECK_INT_EQ(atoi(kapi_map_get(m, key)), i);
    }
    char *seen = kapi_xcalloc(N, 1);
    kapi_map_iter it = {0};
    void *key, *val;
    size_t n = 0;
    while (kapi_map_next(m, &it, &key, &val)) {
        int i = atoi(val);
        CHECK(i >= 0 && i < N && !seen[i]);
        seen[i] = 1;
        CHECK_INT_EQ(atoi((char *)key + 4), i);
        n++;
    }
    CHECK_INT_EQ(n, N);
    CHECK(!kapi_map_next(m, &it, NULL, NULL));
    free(seen);
    kapi_map_free(m);
}

TEST(map_colliding_keys)
{
    kapi_map *m = kapi_map_new(&colliding_map);
    static int vals[3];
    CHECK(kapi_map_put(m, kapi_xstrdup("x"), &vals[0]));
    CHECK(kapi_map_put(m, kapi_xstrdup("y"), &vals[1]));
    CHECK(kapi_map_put(m, kapi_xstrdup("z"), &vals[2]));
    CHECK(kapi_map_get(m, "y") == &vals[1]);
    CHECK(kapi_map_remove(m, "y"));
    CHECK(kapi_map_get(m, "x") == &vals[0] && kapi_map_get(m, "z") == &vals[2]);
    CHECK(kapi_map_get(m, "y") == NULL);
    kapi_map_iter it = {0};
    size_t n = 0;
    while (kapi_map_next(m, &it, NULL, NULL))
        n++;
    CHECK_INT_EQ(n, 2);
    kapi_map_free(m);
}

TEST(map_empty_iteration_and_hash)
{
    kapi_map *m = kapi_map_new(&str_map);
    kapi_map_iter it = {0};
    CHECK(!kapi_map_next(m, &it, NULL, NULL));
    kapi_map_free(m);
    kapi_map_free(NULL);
    CHECK(kapi_map_hash_bytes("ab", 2, 1) != kapi_map_hash_bytes("ba", 2, 1));
    CHECK(kapi_map_hash_bytes("ab", 2, 1) == kapi_map_hash_bytes("ab", 2, 1));
    CHECK(kapi_map_hash_bytes("a\0b", 3, 1) != kapi_map_hash_bytes("a\0c", 3, 1));
}
