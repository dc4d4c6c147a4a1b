/*
 * base/regex: regular expressions as Go's regexp package has them, on RE2.
 *
 * Kubernetes checks a schema's `pattern` (and CEL's `matches`) with Go's regexp: RE2
 * syntax, matched in time linear in the input. kapi uses RE2 itself (Debian's libre2)
 * behind this interface; regex.cc is the one C++ file of kapi (DESIGN.md).
 *
 * - Syntax: what Go's regexp.Compile accepts. RE2 is run with Go's settings: UTF-8,
 *   Perl classes and flags, leftmost-first (not longest) matching, `.` not matching a
 *   newline unless (?s), `^` and `$` at the text's ends unless (?m). Where RE2 alone
 *   would differ, kapi decides as Go does: `\C` (any byte) is refused, invalid UTF-8 is
 *   refused before anything else, a capture group name may repeat. Two differences
 *   remain: Go refuses a parse tree deeper than 1000 levels ("expression nests too
 *   deeply"), which RE2 parses without recursion and kapi accepts; Unicode classes
 *   (\pL, \p{Greek}) use RE2's tables, whose Unicode version may be newer than Go's.
 * - Limits: a repeat count above 1000, and nested repeats whose product exceeds 1000
 *   (`(((a{0,20}){0,20}){0,20}){0,20}`), are refused as Go refuses them. A pattern whose
 *   compiled program needs more than KAPI_REGEX_MAX_MEM is refused as "expression too
 *   large" (Go's words for its own limit, which Go measures differently: Go accepts
 *   \pL{1000}, kapi does not): every compiled pattern's memory, and the per-byte cost of
 *   matching it, is bounded.
 * - Errors: Go's regexp/syntax texts, "error parsing regexp: <what>: `<expr>`", with the
 *   part of the pattern Go names.
 *
 * Any number of threads may match one kapi_regex at once (RE2 locks its caches).
 */
#ifndef KAPI_REGEX_H
#define KAPI_REGEX_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* RE2's memory budget for one compiled pattern: its program and the DFA states matching
 * caches. Half of it sends some patterns Go accepts, such as ((a{0,10}){0,10}){0,10}b,
 * from RE2's DFA to its NFA, 300 times slower on a long value. */
#define KAPI_REGEX_MAX_MEM (16 << 20)

typedef struct kapi_regex kapi_regex;

/* Compiles pattern (n bytes; NUL is an ordinary character) as Go's regexp.Compile. On
 * success *out is the expression (kapi_regex_free it) and NULL is returned; otherwise *out
 * is NULL and the result is Go's error text (heap: the caller frees it). */
char *kapi_regex_new(const char *pattern, size_t n, kapi_regex **out);
/* Go's MatchString: whether re matches anywhere in s (n bytes; an unanchored search). */
bool kapi_regex_match(const kapi_regex *re, const char *s, size_t n);
/* The leftmost match of re in s (n bytes) at or after byte from, as Go's FindStringIndex
 * finds it: true with its *start and *len, or false. */
bool kapi_regex_find(const kapi_regex *re, const char *s, size_t n, size_t from, size_t *start,
                     size_t *len);
void kapi_regex_free(kapi_regex *re);

#ifdef __cplusplus
}
#endif

#endif
