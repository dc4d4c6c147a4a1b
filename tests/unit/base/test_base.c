/* Unit tests for src/base: slices, buffers, the arena, names, the status table. */
#include "base/status.h"
#include "test.h"

TEST(base_str_cut)
{
    kapi_str s = kapi_str_c("a/b/c"), head;
    CHECK(kapi_str_cut(&s, '/', &head));
    CHECK(kapi_str_eqc(head, "a"));
    CHECK(kapi_str_eqc(s, "b/c"));
    CHECK(kapi_str_cut(&s, '/', &head));
    CHECK(!kapi_str_cut(&s, '/', &head));
    CHECK(kapi_str_eqc(head, "c"));
    CHECK_INT_EQ(s.len, 0);
}

TEST(base_decimal)
{
    static const struct {
        int64_t x;
        const char *want;
    } cases[] = {{0, "0"},
                 {7, "7"},
                 {-1, "-1"},
                 {429, "429"},
                 {INT64_MAX, "9223372036854775807"},
                 {INT64_MIN, "-9223372036854775808"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[24];
        buf[23] = '\0';
        CHECK_STR_EQ(kapi_decimal(buf + 23, cases[i].x), cases[i].want);
    }
}

TEST(base_buf_invariants)
{
    kapi_buf b;
    kapi_buf_init(&b);
    CHECK(b.ptr != NULL && b.ptr[0] == '\0');
    for (int i = 0; i < 1000; i++)
        kapi_buf_printf(&b, "%d,", i);
    CHECK(b.ptr[b.len] == '\0');
    CHECK(strncmp(b.ptr, "0,1,2,", 6) == 0);
    size_t n;
    char *p = kapi_buf_detach(&b, &n);
    CHECK_INT_EQ(strlen(p), n);
    CHECK(b.len == 0 && b.ptr[0] == '\0');
    free(p);
    kapi_buf_dispose(&b);
}

TEST(base_arena)
{
    kapi_arena a;
    kapi_arena_init(&a);
    for (int i = 0; i < 10000; i++) {
        char *s = kapi_arena_printf(&a, "item-%d", i);
        CHECK(strncmp(s, "item-", 5) == 0);
    }
    char *big = kapi_arena_alloc(&a, 5 << 20);
    CHECK(big[0] == 0 && big[(5 << 20) - 1] == 0);
    CHECK(((uintptr_t)kapi_arena_alloc(&a, 3) & 15) == 0);
    kapi_arena_dispose(&a);
}

TEST(base_uuid_and_suffix)
{
    char u[37], v[37], s[6];
    kapi_uuid_v4(u);
    kapi_uuid_v4(v);
    CHECK_INT_EQ(strlen(u), 36);
    CHECK(u[14] == '4' && u[8] == '-' && u[23] == '-');
    CHECK(strcmp(u, v) != 0);
    kapi_random_suffix(s, 5);
    CHECK_INT_EQ(strlen(s), 5);
    CHECK(strspn(s, "bcdfghjklmnpqrstvwxz2456789") == 5);
}

TEST(base_time_rfc3339)
{
    char t[32];
    CHECK_STR_EQ(kapi_time_rfc3339(t, 1704164645), "2024-01-02T03:04:05Z");
}

TEST(base_status_table)
{
    CHECK_INT_EQ(kapi_status_code(KAPI_STATUS_INVALID), 422);
    CHECK_STR_EQ(kapi_status_reason(KAPI_STATUS_ALREADY_EXISTS), "AlreadyExists");
    kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "CronJob.batch \"%s\" is invalid", "x");
    kapi_error_add_cause(err, "FieldValueRequired", "spec.schedule", "Required value");
    CHECK(err->has_details);
    CHECK_INT_EQ(err->ncauses, 1);
    CHECK_STR_EQ(err->causes[0].field, "spec.schedule");
    kapi_error_free(err);
}
