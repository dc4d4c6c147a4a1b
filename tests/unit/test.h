/*
 * test: the unit-test runner. Each test is a function registered with TEST(); the runner
 * forks a child per test (a crash or a hang fails that test only, with a 60 s timeout; under
 * ASan, a leak fails it too, since the child ends with exit() and LeakSanitizer checks then),
 * prints "PASS name" or "FAIL name: file:line: what" and ends with "N passed, N failed".
 *
 *     TEST(store_create_get) { ... CHECK(x == 1); CHECK_STR_EQ(a, "b"); ... }
 *
 * `build/unit-tests [filter]` runs the tests whose name contains filter.
 */
#ifndef KAPI_TEST_H
#define KAPI_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*test_fn)(void);
void test_register(const char *name, test_fn fn);
/* Reports a failed check and ends the test (the child exits). */
void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
/* A scratch directory for the running test, removed afterwards. */
const char *test_tmpdir(void);
/* A file's bytes as a heap string (NUL after them), *len their number (len may be NULL);
 * NULL when it cannot be read. */
char *test_slurp(const char *path, size_t *len);

#define TEST(name)                                                                                 \
    static void test_##name(void);                                                                 \
    __attribute__((constructor)) static void test_reg_##name(void)                                 \
    {                                                                                              \
        test_register(#name, test_##name);                                                         \
    }                                                                                              \
    static void test_##name(void)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                                     \
    } while (0)

#define CHECK_INT_EQ(a, b)                                                                         \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_)                                                                              \
            test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_);               \
    } while (0)

#define CHECK_STR_EQ(a, b)                                                                         \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                                     \
            test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,                    \
                      a_ ? a_ : "(null)", b_ ? b_ : "(null)");                                     \
    } while (0)

#endif
