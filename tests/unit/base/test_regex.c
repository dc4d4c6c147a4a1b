/* base/regex: Go's regexp on RE2 — what compiles, Go's error words, and matching. */
#include <time.h>

#include "base/base.h"
#include "base/regex.h"
#include "test.h"

/* Patterns Go's regexp.Compile refuses, each with Go's error text (regexp/syntax). */
TEST(base_regex_go_errors)
{
    static const struct {
        const char *pattern, *error;
    } cases[] = {
        {"[", "missing closing ]: `[`"},
        {"x[", "missing closing ]: `[`"},
        {"a[^]", "missing closing ]: `[^]`"},
        {"[a-:]", "invalid character class range: `a-:`"},
        {"[z-a]", "invalid character class range: `z-a`"},
        {"[\\", "trailing backslash at end of expression: ``"},
        {"a\\", "trailing backslash at end of expression: ``"},
        {"(((a{0,20}){0,20}){0,20}){0,20}", "invalid repeat count: `{0,20}`"},
        {"(a{0,40}){0,40}?", "invalid repeat count: `{0,40}?`"},
        {"a{1001}", "invalid repeat count: `{1001}`"},
        {"a{2,1}", "invalid repeat count: `{2,1}`"},
        {"*", "missing argument to repetition operator: `*`"},
        {"a|+b", "missing argument to repetition operator: `+`"},
        {"a**", "invalid nested repetition operator: `**`"},
        {"a{2}{3}", "invalid nested repetition operator: `{2}{3}`"},
        {"(a", "missing closing ): `(a`"},
        {"x(?:a", "missing closing ): `x(?:a`"},
        {"a)", "unexpected ): `a)`"},
        {"(a))b", "unexpected ): `(a))b`"},
        {"\\C", "invalid escape sequence: `\\C`"},
        {"(a\\C", "invalid escape sequence: `\\C`"},
        {"[a\\C]", "invalid escape sequence: `\\C`"},
        {"a**\\C", "invalid nested repetition operator: `**`"},
        {"\\8", "invalid escape sequence: `\\8`"},
        {"\\Z", "invalid escape sequence: `\\Z`"},
        {"\\x{110000}", "invalid escape sequence: `\\x{110000`"},
        {"\\x{zz}", "invalid escape sequence: `\\x{z`"},
        {"(?z)", "invalid or unsupported Perl syntax: `(?z`"},
        {"(?<n>a)", "invalid or unsupported Perl syntax: `(?<`"},
        {"(?P=n)", "invalid or unsupported Perl syntax: `(?P`"},
        {"(?P<a-b>x)", "invalid named capture: `(?P<a-b>`"},
        {"(?P<>x)", "invalid named capture: `(?P<>`"},
        {"[[:foo:]]", "invalid character class range: `[:foo:]`"},
        {"\\p{Foo}", "invalid character class range: `\\p{Foo}`"},
        {"a\xff(", "invalid UTF-8: `\xff(`"},
        {"\xed\xa0\x80", "invalid UTF-8: `\xed\xa0\x80`"}, /* a surrogate */
        /* kapi's bound: RE2's program for this is past KAPI_REGEX_MAX_MEM (Go's limit,
         * on its own smaller program, is higher) */
        {"\\pL{1000}", "expression too large: `\\pL{1000}`"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        kapi_regex *re = (kapi_regex *)1;
        char *err = kapi_regex_new(cases[i].pattern, strlen(cases[i].pattern), &re);
        char *want = kapi_xprintf("error parsing regexp: %s", cases[i].error);
        if (!err)
            test_fail(__FILE__, __LINE__, "%s: compiled", cases[i].pattern);
        CHECK(re == NULL);
        CHECK_STR_EQ(err, want);
        free(want);
        free(err);
    }
}

/* What Go accepts compiles, RE2's own extensions aside. */
TEST(base_regex_go_accepts)
{
    static const char *const ok[] = {
        "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        "((a{0,10}){0,10}){0,10}", /* a product of exactly 1000 */
        "a{1000}",
        "a{,5}",
        "(?P<n>a)(?P<n>b)", /* Go lets a name repeat */
        "(?i)(?s)(?m)(?U)a",
        "(?is-mU:x)",
        "(?)",
        "\\Q\\C[\\E", /* literal text */
        "[[:word:]]\\pN\\p{Greek}\\PL\\p{^L}",
        "\\A\\z\\b\\B^$",
        "\\x41\\x{42}\\103\\0",
        "^*$+\\b*",
        "\\pL{100}",
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(ok); i++) {
        kapi_regex *re = NULL;
        char *err = kapi_regex_new(ok[i], strlen(ok[i]), &re);
        if (err)
            test_fail(__FILE__, __LINE__, "%s: %s", ok[i], err);
        CHECK(re != NULL);
        kapi_regex_free(re);
    }
}

static bool matches(const char *pattern, const char *s, size_t n)
{
    kapi_regex *re = NULL;
    char *err = kapi_regex_new(pattern, strlen(pattern), &re);
    if (err)
        test_fail(__FILE__, __LINE__, "%s: %s", pattern, err);
    bool m = kapi_regex_match(re, s, n);
    kapi_regex_free(re);
    return m;
}

#define MATCHES(p, s) matches(p, s, strlen(s))

/* Go's MatchString: an unanchored, leftmost-first search over UTF-8 text. */
TEST(base_regex_match_semantics)
{
    CHECK(MATCHES("b+", "abbc")); /* anywhere, not anchored */
    CHECK(!MATCHES("^b+", "abbc"));
    CHECK(MATCHES("^a.c$", "a\xc3\xa9"
                           "c")); /* . is a character, not a byte */
    CHECK(!MATCHES("^a..c$", "a\xc3\xa9"
                             "c"));
    CHECK(!MATCHES("^.$", "\n"));      /* . is not a newline ... */
    CHECK(MATCHES("(?s)^.$", "\n"));   /* ... unless (?s) */
    CHECK(!MATCHES("^a$", "a\nb"));    /* ^ $ at the text's ends ... */
    CHECK(MATCHES("(?m)^b$", "a\nb")); /* ... unless (?m) */
    CHECK(!MATCHES("a$", "a\n"));      /* $ is \z, not Perl's "before a final \n" */
    CHECK(MATCHES("^\\d+$", "0123456789"));
    CHECK(!MATCHES("^\\d$", "\xd9\xa3")); /* \d is ASCII, as Go's */
    CHECK(!MATCHES("^\\w$", "\xc3\xa9")); /* so is \w */
    CHECK(MATCHES("^\\pL+$", "h\xc3\xa9llo\xce\xbb"));
    CHECK(MATCHES("^\\p{Greek}$", "\xce\xbb"));
    CHECK(!MATCHES("^\\p{Greek}$", "l"));
    CHECK(MATCHES("^[^a]$", "\xe2\x82\xac"));     /* a negated class is a whole character */
    CHECK(MATCHES("(?i)^\xce\xbb$", "\xce\x9b")); /* Unicode case folding */
    CHECK(MATCHES("(?i)^k$", "\xe2\x84\xaa"));    /* Kelvin sign folds to k, as in Go */
    CHECK(MATCHES("^\\Qa.b\\E$", "a.b"));
    CHECK(!MATCHES("^\\Qa.b\\E$", "axb"));
    CHECK(MATCHES("\\bword\\b", "a word here"));
    CHECK(!MATCHES("\\bword\\b", "swordfish"));
    CHECK(matches("^a\\x00b$", "a\0b", 3)); /* length-delimited: NUL is a character */
    CHECK(!matches("^a$", "a\0b", 3));
    CHECK(matches("", "", 0));
}

/* The bomb that glibc's regcomp took seconds and gigabytes over is refused at once, and
 * what Go accepts matches in time linear in the input. */
TEST(base_regex_bounded)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kapi_regex *re = NULL;
    const char *bomb = "(((a{0,20}){0,20}){0,20}){0,20}";
    char *err = kapi_regex_new(bomb, strlen(bomb), &re);
    CHECK(err != NULL && re == NULL);
    free(err);
    const char *big = "((a{0,10}){0,10}){0,10}b";
    CHECK((err = kapi_regex_new(big, strlen(big), &re)) == NULL);
    size_t n = 1 << 20;
    char *text = kapi_xmalloc(n);
    memset(text, 'a', n);
    CHECK(!kapi_regex_match(re, text, n));
    kapi_regex_free(re);
    free(text);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (s > 2.0)
        test_fail(__FILE__, __LINE__, "took %.2f s", s);
}

/* Deep nesting is parsed without recursion: no stack overflow. (Go refuses a parse tree
 * deeper than 1000 levels; RE2 has no such limit, and kapi accepts what it compiles.) */
TEST(base_regex_deep_nesting)
{
    size_t depth = 100000, n = 2 * depth + 1;
    char *p = kapi_xmalloc(n);
    memset(p, '(', depth);
    p[depth] = 'a';
    memset(p + depth + 1, ')', depth);
    kapi_regex *re = NULL;
    char *err = kapi_regex_new(p, n, &re);
    if (err)
        test_fail(__FILE__, __LINE__, "%s", err);
    CHECK(kapi_regex_match(re, "xa", 2));
    kapi_regex_free(re);
    free(p);
}

/* FindStringIndex from a position: the leftmost match at or after it; ^ still means the
 * start of the text. */
TEST(base_regex_find_from)
{
    kapi_regex *re = NULL;
    CHECK(kapi_regex_new("[0-9]+|^x", 9, &re) == NULL);
    size_t start = 0, len = 0;
    CHECK(kapi_regex_find(re, "x12 345", 7, 0, &start, &len) && start == 0 && len == 1);
    CHECK(kapi_regex_find(re, "x12 345", 7, 1, &start, &len) && start == 1 && len == 2);
    CHECK(kapi_regex_find(re, "x12 345", 7, 3, &start, &len) && start == 4 && len == 3);
    CHECK(!kapi_regex_find(re, "x12 345", 7, 7, &start, &len));
    kapi_regex_free(re);
}
