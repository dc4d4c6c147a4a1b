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
#include "codec/go.h"

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
    size_t n = strlen(buf);
    buf[n++] = 's';
    buf[n] = 0;
    return kapi_cel__string(a, KAPI_CEL_T_STRING, buf, n);
}

/* Int(d.Hours()) and the like: Go's whole units plus the rest as a fraction, in float64,
 * truncated (so 99999999.999999999s has 100000000 seconds). */
static value in_unit(int64_t ns, int64_t unit)
{
    double v = (double)(ns / unit) + (double)(ns % unit) / (double)unit;
    return (value){.t = KAPI_CEL_T_INT, .u.i = (int64_t)v};
}

bool kapi_cel__time(kapi_arena *a, const char *fn, const value *args, size_t n, value *out)
{
    const value *d = &args[0];
    if (n == 1 && strcmp(fn, "duration") == 0) {
        int64_t ns;
        char *why = NULL;
        if (d->t == KAPI_CEL_T_DURATION)
            *out = *d;
        else if (d->t != KAPI_CEL_T_STRING)
            return false;
        else if ((why = kapi_go_parse_duration(d->u.s, &ns)) == NULL)
            *out = duration(ns);
        else
            *out = err("type conversion error from 'string' to 'google.protobuf.Duration'");
        free(why);
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
            *out = in_unit(ns, 3600 * NS_PER_S);
        else if (strcmp(fn, "getMinutes") == 0)
            *out = in_unit(ns, 60 * NS_PER_S);
        else if (strcmp(fn, "getSeconds") == 0)
            *out = in_unit(ns, NS_PER_S);
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
