/*
 * base/regex: Go's regexp on RE2 (see regex.h). RE2's parser is the one Go's
 * regexp/syntax was written from, so its error codes and the part of the pattern it names
 * are Go's; this file turns them into Go's words and settles the few places where the two
 * differ.
 */
#include "base/regex.h"

#include <re2/re2.h>

#include <cstring>

extern "C" {
#include "base/base.h"
}

struct kapi_regex {
    RE2 re;
    kapi_regex(re2::StringPiece p, const RE2::Options &o) : re(p, o) {}
};

namespace
{

/* The expression Go names in an error: the part RE2 names, or the whole pattern. */
enum expr_kind { EXPR_ARG, EXPR_WHOLE };

struct go_code {
    RE2::ErrorCode code;
    const char *what; /* Go's syntax.ErrorCode text */
    expr_kind expr;
};

const go_code go_codes[] = {
    {RE2::ErrorInternal, "regexp/syntax: internal error", EXPR_WHOLE},
    {RE2::ErrorBadEscape, "invalid escape sequence", EXPR_ARG},
    {RE2::ErrorBadCharClass, "invalid character class", EXPR_ARG},
    {RE2::ErrorBadCharRange, "invalid character class range", EXPR_ARG},
    {RE2::ErrorMissingBracket, "missing closing ]", EXPR_ARG},
    {RE2::ErrorMissingParen, "missing closing )", EXPR_WHOLE},
    {RE2::ErrorUnexpectedParen, "unexpected )", EXPR_WHOLE},
    {RE2::ErrorTrailingBackslash, "trailing backslash at end of expression", EXPR_ARG},
    {RE2::ErrorRepeatArgument, "missing argument to repetition operator", EXPR_ARG},
    {RE2::ErrorRepeatSize, "invalid repeat count", EXPR_ARG},
    {RE2::ErrorRepeatOp, "invalid nested repetition operator", EXPR_ARG},
    {RE2::ErrorBadPerlOp, "invalid or unsupported Perl syntax", EXPR_ARG},
    {RE2::ErrorBadNamedCapture, "invalid named capture", EXPR_ARG},
    {RE2::ErrorPatternTooLarge, "expression too large", EXPR_WHOLE},
};

char *go_error(const char *what, re2::StringPiece expr)
{
    return kapi_xprintf("error parsing regexp: %s: `%.*s`", what, (int)expr.size(), expr.data());
}

char *re2_error(const RE2 &re, re2::StringPiece whole)
{
    for (const go_code &c : go_codes)
        if (c.code == re.error_code())
            return go_error(c.what,
                            c.expr == EXPR_WHOLE ? whole : re2::StringPiece(re.error_arg()));
    return go_error("regexp/syntax: internal error", whole);
}

RE2::Options go_options()
{
    RE2::Options o;
    o.set_encoding(RE2::Options::EncodingUTF8);
    o.set_posix_syntax(false); /* Perl syntax: \d \s \w \b \pN, (?flags), lazy repeats */
    o.set_longest_match(false);
    o.set_literal(false);
    o.set_never_nl(false);
    o.set_dot_nl(false);
    o.set_case_sensitive(true);
    /* only whether a pattern matches is asked; Go lets capture names repeat */
    o.set_never_capture(true);
    o.set_max_mem(KAPI_REGEX_MAX_MEM);
    o.set_log_errors(false);
    return o;
}

/* The length of the valid UTF-8 sequence at p (Go's utf8.DecodeRune rules: no overlong
 * form, no surrogate, nothing above U+10FFFF), or 0. */
size_t utf8_len(const unsigned char *p, size_t n)
{
    if (p[0] < 0x80)
        return 1;
    size_t len = p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC2 ? 2 : 0;
    if (len == 0 || p[0] > 0xF4 || n < len)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    bool bad = (p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0) ||
               (p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90);
    return bad ? 0 : len;
}

/* Where the first invalid UTF-8 starts, or n. */
size_t bad_utf8(const char *p, size_t n)
{
    for (size_t i = 0, len; i < n; i += len)
        if ((len = utf8_len((const unsigned char *)p + i, n - i)) == 0)
            return i;
    return n;
}

/* Where the first \C (RE2's any byte, which Go does not have) starts, or n. Text between
 * \Q and \E is literal. */
size_t any_byte(const char *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (p[i] != '\\')
            continue;
        if (p[i + 1] == 'C')
            return i;
        if (p[i + 1] != 'Q') {
            i++;
            continue;
        }
        const char *end = (const char *)memmem(p + i + 2, n - i - 2, "\\E", 2);
        i = end ? (size_t)(end - p) + 1 : n;
    }
    return n;
}

/* The error Go gives for a pattern with \C at off: the first error before it, else the
 * escape. An unclosed group or class before it is no error yet when Go reaches it. */
char *any_byte_error(const char *p, size_t off, re2::StringPiece whole)
{
    RE2 prefix(re2::StringPiece(p, off), go_options());
    RE2::ErrorCode code = prefix.error_code();
    if (code != RE2::NoError && code != RE2::ErrorMissingParen && code != RE2::ErrorMissingBracket)
        return re2_error(prefix, whole);
    return go_error("invalid escape sequence", re2::StringPiece(p + off, 2));
}

/* The C entry points cannot let an exception through: running out of memory (new's
 * std::bad_alloc) ends the process, as kapi_xmalloc does. */
char *regex_new(const char *pattern, size_t n, kapi_regex **out) noexcept
{
    re2::StringPiece whole(pattern, n);
    *out = NULL;
    size_t at = bad_utf8(pattern, n);
    if (at < n)
        return go_error("invalid UTF-8", whole.substr(at));
    if ((at = any_byte(pattern, n)) < n)
        return any_byte_error(pattern, at, whole);
    kapi_regex *re = new kapi_regex(whole, go_options());
    if (!re->re.ok()) {
        char *err = re2_error(re->re, whole);
        delete re;
        return err;
    }
    *out = re;
    return NULL;
}

bool regex_match(const kapi_regex *re, const char *s, size_t n) noexcept
{
    return RE2::PartialMatch(re2::StringPiece(s, n), re->re);
}

bool regex_find(const kapi_regex *re, const char *s, size_t n, size_t from, size_t *start,
                size_t *len) noexcept
{
    re2::StringPiece text(s, n), m;
    if (!re->re.Match(text, from, n, RE2::UNANCHORED, &m, 1))
        return false;
    *start = (size_t)(m.data() - s);
    *len = m.size();
    return true;
}

void regex_free(kapi_regex *re) noexcept
{
    delete re;
}

} // namespace

char *kapi_regex_new(const char *pattern, size_t n, kapi_regex **out)
{
    return regex_new(pattern, n, out);
}

bool kapi_regex_match(const kapi_regex *re, const char *s, size_t n)
{
    return regex_match(re, s, n);
}

bool kapi_regex_find(const kapi_regex *re, const char *s, size_t n, size_t from, size_t *start,
                     size_t *len)
{
    return regex_find(re, s, n, from, start, len);
}

void kapi_regex_free(kapi_regex *re)
{
    regex_free(re);
}
