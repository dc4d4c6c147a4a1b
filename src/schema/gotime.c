/*
 * schema/gotime: metav1.Time and metav1.MicroTime as Go parses and writes them.
 *
 * Go's time.Parse walks its layout element by element; when the value does not fit an
 * element it answers `parsing time "<value>" as "<layout>": cannot parse "<rest>" as
 * "<element>"`, and a field out of range is `parsing time "<value>": month out of range`.
 * kube-apiserver passes these messages on unchanged, so kapi words them the same way.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "codec/go.h"
#include "schema/field.h"
#include "schema/schema_int.h"

static void quote_go(kapi_buf *b, const char *s)
{
    kapi_go_quote(b, s, strlen(s));
}

static const char rfc3339[] = "2006-01-02T15:04:05Z07:00";
static const char rfc3339_micro[] = "2006-01-02T15:04:05.000000Z07:00";

static kapi_error *bad(const char *value, const char *layout, const char *rest, const char *elem)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "parsing time ");
    quote_go(&b, value);
    kapi_buf_puts(&b, " as ");
    quote_go(&b, layout);
    kapi_buf_puts(&b, ": cannot parse ");
    quote_go(&b, rest);
    kapi_buf_puts(&b, " as ");
    quote_go(&b, elem);
    kapi_error *err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%s", b.ptr);
    kapi_buf_dispose(&b);
    return err;
}

static kapi_error *out_of_range(const char *value, const char *what)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "parsing time ");
    quote_go(&b, value);
    kapi_buf_printf(&b, ": %s", what);
    kapi_error *err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%s", b.ptr);
    kapi_buf_dispose(&b);
    return err;
}

static bool digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Two digits (Go's getnum with fixed), or with !fixed one or two. */
static bool getnum(const char **p, bool fixed, int *out)
{
    const char *s = *p;
    if (!digit(s[0]))
        return false;
    if (!digit(s[1])) {
        if (fixed)
            return false;
        *out = s[0] - '0';
        *p = s + 1;
        return true;
    }
    *out = (s[0] - '0') * 10 + (s[1] - '0');
    *p = s + 2;
    return true;
}

static bool leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in(int month, int year)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return month == 2 && leap(year) ? 29 : days[month - 1];
}

/* The parse itself: *secs and *frac (microseconds, or the fraction's first six digits
 * when not micro) of s. */
static kapi_error *parse(const char *s, bool micro, time_t *secs, int *frac_out)
{
    const char *layout = micro ? rfc3339_micro : rfc3339;
    const char *p = s, *start;
    int year = 0, month, day, hour, min, sec, frac = 0, tz = 0;
    const char *range = NULL;

    start = p;
    for (int i = 0; i < 4; i++)
        if (!digit(p[i]))
            return bad(s, layout, start, "2006");
    year = (p[0] - '0') * 1000 + (p[1] - '0') * 100 + (p[2] - '0') * 10 + (p[3] - '0');
    p += 4;
#define LITERAL(c)                                                                                 \
    do {                                                                                           \
        if (*p != (c))                                                                             \
            return bad(s, layout, p, (char[]){(c), 0});                                            \
        p++;                                                                                       \
    } while (0)
    LITERAL('-');
    start = p;
    if (!getnum(&p, true, &month))
        return bad(s, layout, start, "01");
    if (month < 1 || month > 12)
        range = "month";
    LITERAL('-');
    start = p;
    if (!getnum(&p, true, &day))
        return bad(s, layout, start, "02");
    if (!range && (day < 0 || day > 31))
        range = "day";
    LITERAL('T');
    start = p;
    if (!getnum(&p, false, &hour))
        return bad(s, layout, start, "15");
    if (!range && hour >= 24)
        range = "hour";
    LITERAL(':');
    start = p;
    if (!getnum(&p, true, &min))
        return bad(s, layout, start, "04");
    if (!range && min >= 60)
        range = "minute";
    LITERAL(':');
    start = p;
    if (!getnum(&p, true, &sec))
        return bad(s, layout, start, "05");
    if (!range && sec >= 60)
        range = "second";
#undef LITERAL
    if (micro) {
        start = p;
        if (strlen(p) < 7 || (p[0] != '.' && p[0] != ','))
            return bad(s, layout, start, ".000000");
        for (int i = 1; i <= 6; i++) {
            if (!digit(p[i]))
                return bad(s, layout, start, ".000000");
            frac = frac * 10 + (p[i] - '0');
        }
        p += 7;
    } else if ((p[0] == '.' || p[0] == ',') && digit(p[1])) {
        p++;
        for (int i = 0; digit(*p); i++, p++)
            if (i < 6)
                frac += (*p - '0') * (int[]){100000, 10000, 1000, 100, 10, 1}[i];
    }
    start = p;
    if (*p == 'Z') {
        p++;
    } else {
        int th, tm;
        const char *h = p + 1, *m = p + 4;
        if (strlen(p) < 6 || p[3] != ':' || (p[0] != '+' && p[0] != '-') ||
            !getnum(&h, true, &th) || !getnum(&m, true, &tm))
            return bad(s, layout, start, "Z07:00");
        if (!range && th > 24)
            range = "time zone offset hour";
        if (!range && tm > 60)
            range = "time zone offset minute";
        tz = (th * 60 + tm) * 60 * (p[0] == '-' ? -1 : 1);
        p += 6;
    }
    if (range) {
        char what[64];
        snprintf(what, sizeof(what), "%s out of range", range);
        return out_of_range(s, what);
    }
    if (*p) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_buf_puts(&b, "parsing time ");
        quote_go(&b, s);
        kapi_buf_puts(&b, ": extra text: ");
        quote_go(&b, p);
        kapi_error *err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%s", b.ptr);
        kapi_buf_dispose(&b);
        return err;
    }
    if (day < 1 || day > days_in(month, year))
        return out_of_range(s, "day out of range");
    struct tm t = {.tm_year = year - 1900,
                   .tm_mon = month - 1,
                   .tm_mday = day,
                   .tm_hour = hour,
                   .tm_min = min,
                   .tm_sec = sec};
    *secs = timegm(&t) - tz;
    *frac_out = frac;
    return NULL;
}

kapi_error *kapi_schema__parse_time(const char *s, bool micro, char *out)
{
    time_t secs;
    int frac;
    struct tm t;
    kapi_error *err = parse(s, micro, &secs, &frac);
    if (err)
        return err;
    gmtime_r(&secs, &t);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &t);
    if (micro)
        snprintf(out + n, 32 - n, ".%06dZ", frac);
    else
        snprintf(out + n, 32 - n, "Z");
    return NULL;
}

bool kapi_gotime_parse(const char *s, int64_t *secs, int32_t *nsec)
{
    time_t t;
    int frac;
    kapi_error *err = parse(s, false, &t, &frac);
    if (err) {
        kapi_error_free(err);
        return false;
    }
    *secs = (int64_t)t;
    *nsec = frac * 1000;
    return true;
}
