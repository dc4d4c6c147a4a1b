/*
 * cel/library: the libraries Kubernetes 1.26 adds to CEL (k8s.io/apiserver/pkg/cel/library):
 *
 *   lists   <list>.isSorted(), .sum(), .min(), .max(), .indexOf(x), .lastIndexOf(x)
 *   regex   <string>.find(re), .findAll(re), .findAll(re, n)
 *
 * (its url library is url.c). The answers and errors are the library's: min and
 * max of an empty list fail, findAll's n limits the matches (n < 0: all), a pattern Go
 * refuses is "Illegal regex: ..." in Go's words.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/regex.h"
#include "cel/cel_int.h"

typedef kapi_cel_value value;

static value no_overload(void)
{
    return (value){.t = KAPI_CEL_T_ERROR, .u.error = "no such overload"};
}

static bool comparable(const value *v)
{
    return kapi_cel__is_number(v) || v->t == KAPI_CEL_T_BOOL || v->t == KAPI_CEL_T_STRING ||
           v->t == KAPI_CEL_T_BYTES || v->t == KAPI_CEL_T_DURATION || v->t == KAPI_CEL_T_TIMESTAMP;
}

static value is_sorted(const value *l)
{
    for (size_t i = 0; i < l->u.list.n; i++) {
        if (!comparable(&l->u.list.v[i]))
            return no_overload();
        if (i && kapi_cel__cmp(&l->u.list.v[i - 1], &l->u.list.v[i]) == 1)
            return (value){.t = KAPI_CEL_T_BOOL, .u.b = false};
    }
    return (value){.t = KAPI_CEL_T_BOOL, .u.b = true};
}

/* min (want -1: a smaller one replaces) or max (want 1). */
static value extreme(kapi_arena *a, const value *l, int want)
{
    const value *best = NULL;
    for (size_t i = 0; i < l->u.list.n; i++) {
        const value *v = &l->u.list.v[i];
        if (!comparable(v))
            return no_overload();
        if (!best || kapi_cel__cmp(best, v) == -want)
            best = v;
    }
    if (!best)
        return kapi_cel__error(a, "%s called on empty list", want < 0 ? "min" : "max");
    return *best;
}

static value sum(const value *l)
{
    value acc = {.t = KAPI_CEL_T_INT, .u.i = 0};
    for (size_t i = 0; i < l->u.list.n; i++) {
        const value *v = &l->u.list.v[i];
        if (i == 0) {
            if (!kapi_cel__is_number(v) && v->t != KAPI_CEL_T_DURATION)
                return no_overload();
            acc = *v;
            continue;
        }
        if (v->t != acc.t)
            return no_overload();
        if (v->t == KAPI_CEL_T_DOUBLE) {
            acc.u.d += v->u.d;
        } else if (v->t == KAPI_CEL_T_INT || v->t == KAPI_CEL_T_DURATION) {
            if (__builtin_add_overflow(acc.u.i, v->u.i, &acc.u.i))
                return (value){.t = KAPI_CEL_T_ERROR, .u.error = "integer overflow"};
        } else if (__builtin_add_overflow(acc.u.u, v->u.u, &acc.u.u)) {
            return (value){.t = KAPI_CEL_T_ERROR, .u.error = "unsigned integer overflow"};
        }
    }
    return acc;
}

static value index_in(const value *l, const value *x, bool last)
{
    size_t n = l->u.list.n;
    for (size_t k = 0; k < n; k++) {
        size_t i = last ? n - 1 - k : k;
        if (kapi_cel_equal(&l->u.list.v[i], x))
            return (value){.t = KAPI_CEL_T_INT, .u.i = (int64_t)i};
    }
    return (value){.t = KAPI_CEL_T_INT, .u.i = -1};
}

/* find (max 1, one string) and findAll (max n, a list), as Go's FindString and
 * FindAllString: successive matches that do not overlap, an empty match right after the
 * previous one skipped. */
static value find(kapi_arena *a, kapi_str s, kapi_str pattern, int64_t max, bool all)
{
    kapi_regex *re = NULL;
    char *why = kapi_regex_new(pattern.ptr, pattern.len, &re);
    if (why) {
        value e = kapi_cel__error(a, "Illegal regex: %s", why);
        free(why);
        return e;
    }
    value *found =
        kapi_arena_alloc(a, (all ? s.len + 2 : 1) * sizeof(*found)); /* the most matches */
    size_t n = 0, pos = 0, start, len;
    bool has_prev = false;
    size_t prev_end = 0;
    while ((max < 0 || (int64_t)n < max) && pos <= s.len &&
           kapi_regex_find(re, s.ptr, s.len, pos, &start, &len)) {
        bool skip = len == 0 && has_prev && start == prev_end;
        if (!skip) {
            found[n++] = kapi_cel__string(a, KAPI_CEL_T_STRING, s.ptr + start, len);
            has_prev = true;
            prev_end = start + len;
        }
        if (len > 0) {
            pos = start + len;
        } else { /* past one code point */
            pos = start + 1;
            while (pos < s.len && ((unsigned char)s.ptr[pos] & 0xC0) == 0x80)
                pos++;
        }
    }
    kapi_regex_free(re);
    if (!all)
        return n ? found[0] : (value){.t = KAPI_CEL_T_STRING, .u.s = {"", 0}};
    return (value){.t = KAPI_CEL_T_LIST, .u.list = {.v = found, .n = n}};
}

bool kapi_cel__library(kapi_arena *a, cel_fn fn, const value *args, size_t n, value *out)
{
    const value *r = &args[0];
    if (n >= 1 && r->t == KAPI_CEL_T_LIST) {
        if (n == 1 && fn == FN_IS_SORTED)
            *out = is_sorted(r);
        else if (n == 1 && fn == FN_SUM)
            *out = sum(r);
        else if (n == 1 && (fn == FN_MIN || fn == FN_MAX))
            *out = extreme(a, r, fn == FN_MIN ? -1 : 1);
        else if (n == 2 && (fn == FN_INDEX_OF || fn == FN_LAST_INDEX_OF))
            *out = index_in(r, &args[1], fn == FN_LAST_INDEX_OF);
        else
            return false;
        return true;
    }
    if (n >= 2 && r->t == KAPI_CEL_T_STRING && args[1].t == KAPI_CEL_T_STRING) {
        if (n == 2 && fn == FN_FIND)
            *out = find(a, r->u.s, args[1].u.s, 1, false);
        else if (n == 2 && fn == FN_FIND_ALL)
            *out = find(a, r->u.s, args[1].u.s, -1, true);
        else if (n == 3 && fn == FN_FIND_ALL && args[2].t == KAPI_CEL_T_INT)
            *out = find(a, r->u.s, args[1].u.s, args[2].u.i, true);
        else
            return false;
        return true;
    }
    return false;
}
