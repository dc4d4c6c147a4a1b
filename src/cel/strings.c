/*
 * cel/strings: the strings library Kubernetes 1.26 gives CEL (cel-go v0.12's
 * ext.Strings): charAt, indexOf, lastIndexOf, lowerAscii, upperAscii, replace, split,
 * substring, trim and join, with its index rules (indexes count code points; an index
 * past the string is "index out of range: N") and Go's strings semantics (split and
 * replace with an empty separator work rune by rune; trim removes Unicode white space).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cel/cel_int.h"

typedef kapi_cel_value value;

/* The byte offsets of the code points of s: offs[i] is where code point i starts,
 * offs[n] = s.len. */
static size_t *rune_offsets(kapi_arena *a, kapi_str s, size_t *n)
{
    size_t *offs = kapi_arena_alloc(a, (s.len + 1) * sizeof(*offs)), k = 0;
    for (size_t i = 0; i < s.len; i++)
        if (((unsigned char)s.ptr[i] & 0xC0) != 0x80)
            offs[k++] = i;
    offs[k] = s.len;
    *n = k;
    return offs;
}

static value out_of_range(kapi_arena *a, int64_t i)
{
    return kapi_cel__error(a, "index out of range: %" PRId64, i);
}

/* The code point index of sub in s from code point from, searching forward or back; -1. */
static int64_t find(const size_t *offs, size_t n, kapi_str s, kapi_str sub, int64_t from, bool back)
{
    size_t subn = 0;
    for (size_t i = 0; i < sub.len; i++)
        subn += ((unsigned char)sub.ptr[i] & 0xC0) != 0x80;
    if (subn > n)
        return -1;
    int64_t last = (int64_t)(n - subn);
    for (int64_t i = back && from > last ? last : from; i >= 0 && i <= last; i += back ? -1 : 1)
        if (s.len - offs[i] >= sub.len && memcmp(s.ptr + offs[i], sub.ptr, sub.len) == 0)
            return i;
    return -1;
}

static value index_of(kapi_arena *a, const value *args, size_t nargs, bool back)
{
    kapi_str s = args[0].u.s, sub = args[1].u.s;
    size_t n;
    size_t *offs = rune_offsets(a, s, &n);
    int64_t from;
    if (nargs == 3) {
        from = args[2].u.i;
        if (sub.len == 0)
            return (value){.t = KAPI_CEL_T_INT, .u.i = from};
        if (from < 0 || (uint64_t)from >= n)
            return out_of_range(a, from);
    } else {
        if (sub.len == 0)
            return (value){.t = KAPI_CEL_T_INT, .u.i = back ? (int64_t)n : 0};
        if (n == 0)
            return out_of_range(a, back ? -1 : 0);
        from = back ? (int64_t)n - 1 : 0;
    }
    return (value){.t = KAPI_CEL_T_INT, .u.i = find(offs, n, s, sub, from, back)};
}

static value ascii_case(kapi_arena *a, kapi_str s, bool upper)
{
    value v = kapi_cel__string(a, KAPI_CEL_T_STRING, s.ptr, s.len);
    char *p = (char *)v.u.s.ptr;
    for (size_t i = 0; i < s.len; i++) {
        if (upper && p[i] >= 'a' && p[i] <= 'z')
            p[i] = (char)(p[i] - 32);
        else if (!upper && p[i] >= 'A' && p[i] <= 'Z')
            p[i] = (char)(p[i] + 32);
    }
    return v;
}

/* strings.Replace(s, old, new, n), n < 0 for all. */
static value replace(kapi_arena *a, kapi_str s, kapi_str old, kapi_str rep, int64_t n)
{
    kapi_buf b;
    kapi_buf_init(&b);
    size_t i = 0;
    int64_t done = 0;
    while (i <= s.len && (n < 0 || done < n)) {
        const char *at;
        if (old.len == 0) { /* before each code point, and at the end */
            at = s.ptr + i;
        } else {
            at = memmem(s.ptr + i, s.len - i, old.ptr, old.len);
            if (!at)
                break;
        }
        kapi_buf_put(&b, s.ptr + i, (size_t)(at - (s.ptr + i)));
        kapi_buf_put(&b, rep.ptr, rep.len);
        done++;
        if (old.len) {
            i = (size_t)(at - s.ptr) + old.len;
        } else {
            if (i == s.len) {
                i++;
                break;
            }
            size_t k = i + 1;
            while (k < s.len && ((unsigned char)s.ptr[k] & 0xC0) == 0x80)
                k++;
            kapi_buf_put(&b, s.ptr + i, k - i);
            i = k;
        }
    }
    if (i < s.len)
        kapi_buf_put(&b, s.ptr + i, s.len - i);
    value v = kapi_cel__string(a, KAPI_CEL_T_STRING, b.ptr, b.len);
    kapi_buf_dispose(&b);
    return v;
}

/* strings.SplitN(s, sep, n): n > 0 at most n parts, 0 none, < 0 all. */
static value split(kapi_arena *a, kapi_str s, kapi_str sep, int64_t n)
{
    size_t cap = s.len + 2, k = 0;
    value *parts = kapi_arena_alloc(a, cap * sizeof(*parts));
    if (n != 0) {
        size_t i = 0;
        while (n < 0 || (int64_t)k < n - 1) {
            size_t next;
            if (sep.len == 0) { /* one part per code point */
                if (i >= s.len)
                    break;
                next = i + 1;
                while (next < s.len && ((unsigned char)s.ptr[next] & 0xC0) == 0x80)
                    next++;
                parts[k++] = kapi_cel__string(a, KAPI_CEL_T_STRING, s.ptr + i, next - i);
                i = next;
                continue;
            }
            const char *at = memmem(s.ptr + i, s.len - i, sep.ptr, sep.len);
            if (!at)
                break;
            parts[k++] =
                kapi_cel__string(a, KAPI_CEL_T_STRING, s.ptr + i, (size_t)(at - (s.ptr + i)));
            i = (size_t)(at - s.ptr) + sep.len;
        }
        if (sep.len || i < s.len)
            parts[k++] = kapi_cel__string(a, KAPI_CEL_T_STRING, s.ptr + i, s.len - i);
    }
    return (value){.t = KAPI_CEL_T_LIST, .u.list = {.v = parts, .n = k}};
}

/* The length of the Unicode white space (unicode.IsSpace) at p, or 0. */
static size_t space_at(const unsigned char *p, size_t n)
{
    if (n >= 1 && (strchr("\t\n\v\f\r ", p[0]) && p[0]))
        return 1;
    if (n >= 2 && p[0] == 0xC2 && (p[1] == 0x85 || p[1] == 0xA0))
        return 2;
    if (n >= 3 && p[0] == 0xE1 && p[1] == 0x9A && p[2] == 0x80) /* U+1680 */
        return 3;
    if (n >= 3 && p[0] == 0xE2 && p[1] == 0x80 &&
        (p[2] <= 0x8A || p[2] == 0xA8 || p[2] == 0xA9 || p[2] == 0xAF)) /* U+2000-200A ... */
        return 3;
    if (n >= 3 && p[0] == 0xE2 && p[1] == 0x81 && p[2] == 0x9F) /* U+205F */
        return 3;
    if (n >= 3 && p[0] == 0xE3 && p[1] == 0x80 && p[2] == 0x80) /* U+3000 */
        return 3;
    return 0;
}

static value trim(kapi_arena *a, kapi_str s)
{
    const unsigned char *p = (const unsigned char *)s.ptr;
    size_t i = 0, j = s.len, k;
    while (i < j && (k = space_at(p + i, j - i)) != 0)
        i += k;
    for (;;) { /* from the end: the longest space sequence that ends at j */
        size_t found = 0;
        for (size_t w = 1; w <= 3 && w <= j - i && !found; w++)
            if (space_at(p + j - w, w) == w)
                found = w;
        if (!found)
            break;
        j -= found;
    }
    return kapi_cel__string(a, KAPI_CEL_T_STRING, s.ptr + i, j - i);
}

static value join(kapi_arena *a, const value *list, kapi_str sep)
{
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < list->u.list.n; i++) {
        const value *e = &list->u.list.v[i];
        if (e->t != KAPI_CEL_T_STRING) {
            kapi_buf_dispose(&b);
            return (value){.t = KAPI_CEL_T_ERROR, .u.error = "no such overload"};
        }
        if (i)
            kapi_buf_put(&b, sep.ptr, sep.len);
        kapi_buf_put(&b, e->u.s.ptr, e->u.s.len);
    }
    value v = kapi_cel__string(a, KAPI_CEL_T_STRING, b.ptr, b.len);
    kapi_buf_dispose(&b);
    return v;
}

static value substring(kapi_arena *a, const value *args, size_t nargs)
{
    size_t n;
    size_t *offs = rune_offsets(a, args[0].u.s, &n);
    int64_t start = args[1].u.i, end = nargs == 3 ? args[2].u.i : (int64_t)n;
    if (nargs == 3 && start > end) {
        return kapi_cel__error(a, "invalid substring range. start: %" PRId64 ", end: %" PRId64,
                               start, end);
    }
    if (start < 0 || (uint64_t)start > n)
        return out_of_range(a, start);
    if (end < 0 || (uint64_t)end > n)
        return out_of_range(a, end);
    return kapi_cel__string(a, KAPI_CEL_T_STRING, args[0].u.s.ptr + offs[start],
                            offs[end] - offs[start]);
}

/* Whether args (receiver first) have the kinds of sig: s string, i int, l list. */
static bool shape(const value *args, size_t n, const char *sig)
{
    if (strlen(sig) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        kapi_cel_type want = sig[i] == 's'   ? KAPI_CEL_T_STRING
                             : sig[i] == 'i' ? KAPI_CEL_T_INT
                                             : KAPI_CEL_T_LIST;
        if (args[i].t != want)
            return false;
    }
    return true;
}

bool kapi_cel__strings(kapi_arena *a, cel_fn fn, const value *args, size_t n, value *out)
{
    if (fn == FN_CHAR_AT && shape(args, n, "si")) {
        size_t len;
        size_t *offs = rune_offsets(a, args[0].u.s, &len);
        int64_t i = args[1].u.i;
        if (i < 0 || (uint64_t)i > len)
            *out = out_of_range(a, i);
        else
            *out = kapi_cel__string(a, KAPI_CEL_T_STRING, args[0].u.s.ptr + offs[i],
                                    offs[i == (int64_t)len ? i : i + 1] - offs[i]);
    } else if ((fn == FN_INDEX_OF || fn == FN_LAST_INDEX_OF) &&
               (shape(args, n, "ss") || shape(args, n, "ssi"))) {
        *out = index_of(a, args, n, fn == FN_LAST_INDEX_OF);
    } else if (fn == FN_LOWER_ASCII && shape(args, n, "s")) {
        *out = ascii_case(a, args[0].u.s, false);
    } else if (fn == FN_UPPER_ASCII && shape(args, n, "s")) {
        *out = ascii_case(a, args[0].u.s, true);
    } else if (fn == FN_REPLACE && (shape(args, n, "sss") || shape(args, n, "sssi"))) {
        *out = replace(a, args[0].u.s, args[1].u.s, args[2].u.s, n == 4 ? args[3].u.i : -1);
    } else if (fn == FN_SPLIT && (shape(args, n, "ss") || shape(args, n, "ssi"))) {
        *out = split(a, args[0].u.s, args[1].u.s, n == 3 ? args[2].u.i : -1);
    } else if (fn == FN_SUBSTRING && (shape(args, n, "si") || shape(args, n, "sii"))) {
        *out = substring(a, args, n);
    } else if (fn == FN_TRIM && shape(args, n, "s")) {
        *out = trim(a, args[0].u.s);
    } else if (fn == FN_JOIN && (shape(args, n, "l") || shape(args, n, "ls"))) {
        *out = join(a, &args[0], n == 2 ? args[1].u.s : (kapi_str){"", 0});
    } else {
        return false;
    }
    return true;
}
