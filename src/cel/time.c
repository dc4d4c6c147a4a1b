/*
 * cel/time: google.protobuf.Duration and google.protobuf.Timestamp as cel-go v0.12 has
 * them.
 *
 * A duration is a Go time.Duration (int64 nanoseconds, about ±292 years): duration(string)
 * is Go's time.ParseDuration ("1h2m3.5s", units ns us µs ms s m h), string() Go's seconds
 * with the shortest decimals ("3600s", "1.5s"), int() the nanoseconds; + and - of two
 * durations and negation fail on overflow; getHours, getMinutes, getSeconds and
 * getMilliseconds give the whole duration in that unit, truncated.
 *
 * A timestamp is a Go time.Time between 0001-01-01T00:00:00Z and
 * 9999-12-31T23:59:59.999999999Z ("timestamp overflow" outside). timestamp(string) is
 * Go's time.Parse(time.RFC3339) and keeps the zone offset written (so string() of
 * timestamp('2009-02-13T23:31:30+01:00') gives it back, and its getters read the civil
 * time at +01:00), timestamp(int) is Unix seconds in UTC; string() is Go's RFC3339Nano in
 * the timestamp's zone, int() its Unix seconds. A timestamp plus or minus a duration keeps
 * the zone; two timestamps subtract into a duration. The getters (getFullYear, getMonth,
 * getDayOfYear, getDayOfMonth, getDate, getDayOfWeek, getHours, getMinutes, getSeconds,
 * getMilliseconds; months, days of the year and getDayOfMonth from 0) read the civil
 * time in the timestamp's zone, or in the zone their argument names: an IANA name
 * (base/tz, Go's LoadLocation) or, when it holds a ':', an offset "[+-]hh:mm" read as
 * cel-go reads it (two Go Atoi's around the colon).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tz.h"
#include "cel/cel_int.h"
#include "codec/go.h"

typedef kapi_cel_value value;

#define NS_PER_S 1000000000LL
#define MIN_UNIX INT64_C(-62135596800) /* 0001-01-01T00:00:00Z */
#define MAX_UNIX INT64_C(253402300799) /* 9999-12-31T23:59:59Z */

static const char timestamp_type[] = "google.protobuf.Timestamp";

static value duration(int64_t ns)
{
    return (value){.t = KAPI_CEL_T_DURATION, .u.i = ns};
}

static value integer(int64_t i)
{
    return (value){.t = KAPI_CEL_T_INT, .u.i = i};
}

static value err(const char *msg)
{
    return (value){.t = KAPI_CEL_T_ERROR, .u.error = msg};
}

/* A timestamp, or "timestamp overflow" when secs is outside cel-go's range. */
static value timestamp(int64_t secs, int32_t nsec, int32_t offset)
{
    if (secs < MIN_UNIX || secs > MAX_UNIX)
        return err("timestamp overflow");
    return (value){.t = KAPI_CEL_T_TIMESTAMP, .u.ts = {secs, nsec, offset}};
}

/* ---- durations ---- */

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
    return integer((int64_t)v);
}

/* A duration's one-argument functions; false when fn is none of them. */
static bool duration_fn(kapi_arena *a, cel_fn fn, int64_t ns, value *out)
{
    if (fn == FN_STRING)
        *out = duration_string(a, ns);
    else if (fn == FN_INT)
        *out = integer(ns);
    else if (fn == FN_NEG)
        *out = ns == INT64_MIN ? err("integer overflow") : duration(-ns);
    else if (fn == FN_GET_HOURS)
        *out = in_unit(ns, 3600 * NS_PER_S);
    else if (fn == FN_GET_MINUTES)
        *out = in_unit(ns, 60 * NS_PER_S);
    else if (fn == FN_GET_SECONDS)
        *out = in_unit(ns, NS_PER_S);
    else if (fn == FN_GET_MILLISECONDS)
        *out = integer(ns / 1000000);
    else
        return false;
    return true;
}

/* ---- conversions ---- */

static value to_duration(const value *v)
{
    int64_t ns;
    if (v->t == KAPI_CEL_T_DURATION)
        return *v;
    char *why = kapi_go_parse_duration(v->u.s, &ns);
    free(why);
    return why ? err("type conversion error from 'string' to 'google.protobuf.Duration'")
               : duration(ns);
}

static value to_timestamp(kapi_arena *a, const value *v)
{
    kapi_go_time t;
    char *why;
    switch (v->t) {
    case KAPI_CEL_T_TIMESTAMP:
        return *v;
    case KAPI_CEL_T_INT:
        return timestamp(v->u.i, 0, 0);
    case KAPI_CEL_T_STRING:
        if (strlen(v->u.s.ptr) != v->u.s.len) /* a NUL inside: text Go's parse refuses */
            break;
        why = kapi_go_parse_time(v->u.s.ptr, false, &t);
        free(why);
        if (!why)
            return timestamp(t.secs, t.nsec, t.offset);
        break;
    default:
        break;
    }
    return kapi_cel__error(a, "type conversion error from '%s' to '%s'", kapi_cel_type_name(v),
                           timestamp_type);
}

/* ---- timestamps ---- */

/* The getters, and what each reads of the civil time. */
typedef enum part {
    FULL_YEAR,
    MONTH,
    DAY_OF_YEAR,
    DAY_OF_MONTH,
    DATE,
    DAY_OF_WEEK,
    HOURS,
    MINUTES,
    SECONDS,
    MILLISECONDS,
} part;

static const cel_fn getters[] = {
    [FULL_YEAR] = FN_GET_FULL_YEAR,
    [MONTH] = FN_GET_MONTH,
    [DAY_OF_YEAR] = FN_GET_DAY_OF_YEAR,
    [DAY_OF_MONTH] = FN_GET_DAY_OF_MONTH,
    [DATE] = FN_GET_DATE,
    [DAY_OF_WEEK] = FN_GET_DAY_OF_WEEK,
    [HOURS] = FN_GET_HOURS,
    [MINUTES] = FN_GET_MINUTES,
    [SECONDS] = FN_GET_SECONDS,
    [MILLISECONDS] = FN_GET_MILLISECONDS,
};

static int64_t part_of(part p, const kapi_go_time *t, int64_t offset)
{
    kapi_civil c;
    kapi_tz_civil(&c, t->secs, offset);
    switch (p) {
    case FULL_YEAR:
        return c.year;
    case MONTH:
        return c.month - 1;
    case DAY_OF_YEAR:
        return c.yday;
    case DAY_OF_MONTH:
        return c.day - 1;
    case DATE:
        return c.day;
    case DAY_OF_WEEK:
        return c.wday;
    case HOURS:
        return c.hour;
    case MINUTES:
        return c.minute;
    case SECONDS:
        return c.second;
    case MILLISECONDS:
        return t->nsec / 1000000;
    }
    return 0;
}

/* Go's strconv.Atoi of s (n bytes) into *out: NULL, or its error into arena a. As Go's
 * ParseUint, the digits are read until one is not a digit (invalid syntax) or the value
 * passes 2^64 - 1 (out of range), then checked against the int64 range. */
static const char *atoi_go(kapi_arena *a, const char *s, size_t n, int64_t *out)
{
    bool neg = n && s[0] == '-';
    size_t i = n && (s[0] == '+' || s[0] == '-');
    uint64_t v = 0;
    const char *why = i == n ? "invalid syntax" : NULL;
    for (; !why && i < n; i++) {
        uint64_t d = (uint64_t)(unsigned char)s[i] - '0';
        if (d > 9)
            why = "invalid syntax";
        else if (v > (UINT64_MAX - d) / 10)
            why = "value out of range";
        else
            v = v * 10 + d;
    }
    if (!why && v > (uint64_t)INT64_MAX + neg)
        why = "value out of range";
    if (!why) {
        *out = neg ? (int64_t)(0 - v) : (int64_t)v;
        return NULL;
    }
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "strconv.Atoi: parsing ");
    kapi_go_quote(&b, s, n);
    kapi_buf_printf(&b, ": %s", why);
    why = kapi_arena_strndup(a, b.ptr, b.len);
    kapi_buf_dispose(&b);
    return why;
}

/* The offset east of UTC, at time secs, of the zone tz names as cel-go's timeZone reads
 * it: NULL, or why not (into arena a). An offset's arithmetic wraps as Go's does. */
static const char *zone_offset(kapi_arena *a, kapi_str tz, int64_t secs, int64_t *out)
{
    const char *colon = memchr(tz.ptr, ':', tz.len), *why;
    if (!colon) {
        const kapi_tz *zone;
        char *e = kapi_tz_load(&zone, tz.ptr, tz.len);
        if (e) {
            why = kapi_arena_strdup(a, e);
            free(e);
            return why;
        }
        *out = kapi_tz_offset(zone, secs, NULL);
        return NULL;
    }
    int64_t hr, min;
    size_t k = (size_t)(colon - tz.ptr);
    if ((why = atoi_go(a, tz.ptr, k, &hr)) || (why = atoi_go(a, colon + 1, tz.len - k - 1, &min)))
        return why;
    uint64_t minutes = (uint64_t)hr * 60 + (tz.ptr[0] == '-' ? 0 - (uint64_t)min : (uint64_t)min);
    int64_t d = (int64_t)(minutes * 60 * (uint64_t)NS_PER_S); /* time.Duration(offset) * Minute */
    *out = (int64_t)((double)(d / NS_PER_S) + (double)(d % NS_PER_S) / 1e9); /* .Seconds() */
    return NULL;
}

/* A getter of t, in t's zone or (tz not NULL) in the zone tz names. */
static value get(kapi_arena *a, part p, const kapi_go_time *t, const value *tz)
{
    int64_t offset = t->offset;
    if (tz) {
        if (tz->t != KAPI_CEL_T_STRING)
            return err("no such overload");
        const char *why = zone_offset(a, tz->u.s, t->secs, &offset);
        if (why)
            return err(why);
    }
    return integer(part_of(p, t, offset));
}

/* Go's Time.Add for cel-go: t plus ns nanoseconds, in t's zone, within the range. */
static value add(const kapi_go_time *t, int64_t ns)
{
    int64_t secs = t->secs + ns / NS_PER_S, nsec = t->nsec + ns % NS_PER_S;
    if (nsec < 0)
        secs--, nsec += NS_PER_S;
    else if (nsec >= NS_PER_S)
        secs++, nsec -= NS_PER_S;
    return timestamp(secs, (int32_t)nsec, t->offset);
}

/* t - u as a duration, "integer overflow" beyond a Go time.Duration. */
static value since(const kapi_go_time *t, const kapi_go_time *u)
{
    int64_t ns;
    if (__builtin_mul_overflow(t->secs - u->secs, NS_PER_S, &ns) ||
        __builtin_add_overflow(ns, (int64_t)(t->nsec - u->nsec), &ns))
        return err("integer overflow");
    return duration(ns);
}

/* A timestamp's functions of its own (args[0] is it); false when fn with these arguments
 * is none of them. */
static bool timestamp_fn(kapi_arena *a, cel_fn fn, const value *args, size_t n, value *out)
{
    const kapi_go_time *t = &args[0].u.ts;
    for (size_t p = 0; p < KAPI_ARRAY_LEN(getters); p++) {
        if (fn == getters[p] && n <= 2) {
            *out = get(a, (part)p, t, n == 2 ? &args[1] : NULL);
            return true;
        }
    }
    if (n == 1 && fn == FN_STRING) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_go_format_time(&b, t);
        *out = kapi_cel__string(a, KAPI_CEL_T_STRING, b.ptr, b.len);
        kapi_buf_dispose(&b);
    } else if (n == 1 && fn == FN_INT) {
        *out = integer(t->secs);
    } else if (n == 2 && fn == FN_ADD && args[1].t == KAPI_CEL_T_DURATION) {
        *out = add(t, args[1].u.i);
    } else if (n == 2 && fn == FN_SUB && args[1].t == KAPI_CEL_T_DURATION) {
        *out = args[1].u.i == INT64_MIN ? err("integer overflow") : add(t, -args[1].u.i);
    } else if (n == 2 && fn == FN_SUB && args[1].t == KAPI_CEL_T_TIMESTAMP) {
        *out = since(t, &args[1].u.ts);
    } else {
        return false;
    }
    return true;
}

bool kapi_cel__time(kapi_arena *a, cel_fn fn, const value *args, size_t n, value *out)
{
    if (n == 1 && fn == FN_DURATION &&
        (args[0].t == KAPI_CEL_T_DURATION || args[0].t == KAPI_CEL_T_STRING)) {
        *out = to_duration(&args[0]);
        return true;
    }
    if (n == 1 && fn == FN_TIMESTAMP) {
        *out = to_timestamp(a, &args[0]);
        return true;
    }
    if (n >= 1 && args[0].t == KAPI_CEL_T_TIMESTAMP)
        return timestamp_fn(a, fn, args, n, out);
    if (n == 1 && args[0].t == KAPI_CEL_T_DURATION)
        return duration_fn(a, fn, args[0].u.i, out);
    if (n != 2 || args[0].t != KAPI_CEL_T_DURATION)
        return false;
    int64_t d = args[0].u.i, r;
    bool plus = fn == FN_ADD;
    if (plus && args[1].t == KAPI_CEL_T_TIMESTAMP)
        *out = add(&args[1].u.ts, d);
    else if (args[1].t != KAPI_CEL_T_DURATION || (!plus && fn != FN_SUB))
        return false;
    else if (plus ? __builtin_add_overflow(d, args[1].u.i, &r)
                  : __builtin_sub_overflow(d, args[1].u.i, &r))
        *out = err("integer overflow");
    else
        *out = duration(r);
    return true;
}
