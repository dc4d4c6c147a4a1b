/*
 * cel/time: google.protobuf.Duration as cel-go v0.12 has it, a Go time.Duration (int64
 * nanoseconds, about ±292 years): duration(string) is Go's time.ParseDuration
 * ("1h2m3.5s", units ns us µs ms s m h), string() Go's seconds with the shortest decimals
 * ("3600s", "1.5s"), int() the nanoseconds; + and - of two durations and negation fail on
 * overflow; getHours, getMinutes, getSeconds and getMilliseconds give the whole duration
 * in that unit, truncated. (Timestamps are to come.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cel/cel_int.h"

typedef kapi_cel_value value;

#define NS_PER_S 1000000000LL

static value duration(int64_t ns)
{
    return (value){.t = KAPI_CEL_T_DURATION, .u.i = ns};
}

static value err(const char *msg)
{
    return (value){.t = KAPI_CEL_T_ERROR, .u.error = msg};
}

static const struct {
    const char *name;
    uint64_t ns;
} units[] = {
    {"ns", 1},           {"us", 1000},      {"\xc2\xb5s", 1000}, /* U+00B5 micro sign */
    {"\xce\xbcs", 1000},                                         /* U+03BC Greek mu */
    {"ms", 1000000},     {"s", 1000000000}, {"m", 60ULL * 1000000000}, {"h", 3600ULL * 1000000000},
};

/* Go's time.ParseDuration; false when s is not a duration or overflows. */
static bool parse_duration(kapi_str str, int64_t *out)
{
    const char *s = str.ptr, *end = str.ptr + str.len;
    bool neg = false;
    uint64_t d = 0;
    if (s < end && (*s == '-' || *s == '+'))
        neg = *s++ == '-';
    if (end - s == 1 && *s == '0') {
        *out = 0;
        return true;
    }
    if (s == end)
        return false;
    while (s < end) {
        if (!(*s == '.' || (*s >= '0' && *s <= '9')))
            return false;
        uint64_t v = 0, f = 0;
        double scale = 1;
        const char *start = s;
        for (; s < end && *s >= '0' && *s <= '9'; s++) {
            if (v > ((uint64_t)1 << 63) / 10)
                return false;
            v = v * 10 + (uint64_t)(*s - '0');
            if (v > (uint64_t)1 << 63)
                return false;
        }
        bool pre = s != start, post = false;
        if (s < end && *s == '.') {
            s++;
            bool overflow = false;
            for (start = s; s < end && *s >= '0' && *s <= '9'; s++) {
                if (overflow)
                    continue;
                if (f > ((uint64_t)1 << 63) / 10) { /* keep the digits, stop the precision */
                    overflow = true;
                    continue;
                }
                uint64_t y = f * 10 + (uint64_t)(*s - '0');
                if (y > (uint64_t)1 << 63) {
                    overflow = true;
                    continue;
                }
                f = y;
                scale *= 10;
            }
            post = s != start;
        }
        if (!pre && !post)
            return false;
        const char *u = s;
        while (s < end && *s != '.' && !(*s >= '0' && *s <= '9'))
            s++;
        if (s == u)
            return false; /* a missing unit */
        uint64_t unit = 0;
        for (size_t i = 0; i < KAPI_ARRAY_LEN(units); i++)
            if ((size_t)(s - u) == strlen(units[i].name) &&
                memcmp(u, units[i].name, (size_t)(s - u)) == 0)
                unit = units[i].ns;
        if (!unit || v > ((uint64_t)1 << 63) / unit)
            return false;
        v *= unit;
        if (f > 0) {
            v += (uint64_t)((double)f * ((double)unit / scale));
            if (v > (uint64_t)1 << 63)
                return false;
        }
        d += v;
        if (d > (uint64_t)1 << 63)
            return false;
    }
    if (neg) {
        *out = (int64_t)(0 - d);
        return true;
    }
    if (d > (uint64_t)INT64_MAX)
        return false;
    *out = (int64_t)d;
    return true;
}

/* strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s": the fewest decimals that read back
 * as the same double. */
static value duration_string(kapi_arena *a, int64_t ns)
{
    double secs = (double)(ns / NS_PER_S) + (double)(ns % NS_PER_S) / 1e9;
    char buf[64];
    for (int p = 0; p <= 20; p++) {
        snprintf(buf, sizeof(buf), "%.*f", p, secs);
        if (strtod(buf, NULL) == secs)
            break;
    }
    if (strcmp(buf, "-0") == 0)
        snprintf(buf, sizeof(buf), "0");
    size_t n = strlen(buf);
    buf[n++] = 's';
    buf[n] = 0;
    return (value){.t = KAPI_CEL_T_STRING, .u.s = {kapi_arena_strdup(a, buf), n}};
}

bool kapi_cel__time(kapi_arena *a, const char *fn, const value *args, size_t n, value *out)
{
    const value *d = &args[0];
    if (n == 1 && strcmp(fn, "duration") == 0) {
        int64_t ns;
        if (d->t == KAPI_CEL_T_DURATION)
            *out = *d;
        else if (d->t != KAPI_CEL_T_STRING)
            return false;
        else if (parse_duration(d->u.s, &ns))
            *out = duration(ns);
        else
            *out = err("type conversion error from 'string' to 'google.protobuf.Duration'");
        return true;
    }
    if (n < 1 || d->t != KAPI_CEL_T_DURATION)
        return false;
    int64_t ns = d->u.i, r;
    if (n == 1) {
        if (strcmp(fn, "string") == 0)
            *out = duration_string(a, ns);
        else if (strcmp(fn, "int") == 0)
            *out = (value){.t = KAPI_CEL_T_INT, .u.i = ns};
        else if (strcmp(fn, "-_") == 0)
            *out = ns == INT64_MIN ? err("integer overflow") : duration(-ns);
        else if (strcmp(fn, "getHours") == 0)
            *out = (value){.t = KAPI_CEL_T_INT, .u.i = ns / (3600 * NS_PER_S)};
        else if (strcmp(fn, "getMinutes") == 0)
            *out = (value){.t = KAPI_CEL_T_INT, .u.i = ns / (60 * NS_PER_S)};
        else if (strcmp(fn, "getSeconds") == 0)
            *out = (value){.t = KAPI_CEL_T_INT, .u.i = ns / NS_PER_S};
        else if (strcmp(fn, "getMilliseconds") == 0)
            *out = (value){.t = KAPI_CEL_T_INT, .u.i = ns / 1000000};
        else
            return false;
        return true;
    }
    if (n == 2 && args[1].t == KAPI_CEL_T_DURATION &&
        (strcmp(fn, "_+_") == 0 || strcmp(fn, "_-_") == 0)) {
        bool over = fn[1] == '+' ? __builtin_add_overflow(ns, args[1].u.i, &r)
                                 : __builtin_sub_overflow(ns, args[1].u.i, &r);
        *out = over ? err("integer overflow") : duration(r);
        return true;
    }
    return false;
}
