/*
 * codec/gotime: Go's time.Parse for the RFC 3339 layouts (metav1.Time, metav1.MicroTime,
 * CEL's timestamps) and Time.Format's RFC3339Nano.
 *
 * Go's time.Parse walks its layout element by element; when the value does not fit an
 * element it answers `parsing time "<value>" as "<layout>": cannot parse "<rest>" as
 * "<element>"`, and a field out of range is `parsing time "<value>": month out of range`.
 * kube-apiserver passes these messages on unchanged, so kapi words them the same way.
 */
#include <stdio.h>
#include <string.h>

#include "base/tz.h"
#include "codec/go.h"

static const char rfc3339[] = "2006-01-02T15:04:05Z07:00";
static const char rfc3339_micro[] = "2006-01-02T15:04:05.000000Z07:00";

static char *bad(const char *value, const char *layout, const char *rest, const char *elem)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "parsing time ");
    kapi_go_quote(&b, value, strlen(value));
    kapi_buf_puts(&b, " as ");
    kapi_go_quote(&b, layout, strlen(layout));
    kapi_buf_puts(&b, ": cannot parse ");
    kapi_go_quote(&b, rest, strlen(rest));
    kapi_buf_puts(&b, " as ");
    kapi_go_quote(&b, elem, strlen(elem));
    return kapi_buf_detach(&b, NULL);
}

/* `parsing time "<value>": <what>`, what with its %s filled by arg. */
static char *failed(const char *value, const char *what, const char *arg)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "parsing time ");
    kapi_go_quote(&b, value, strlen(value));
    kapi_buf_puts(&b, ": ");
    kapi_buf_printf(&b, what, arg);
    return kapi_buf_detach(&b, NULL);
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

/* The fraction at *p ('.' or ',' then digits), as Go's parseNanoseconds reads it: the
 * first nine digits kept, the rest dropped. */
static int32_t fraction(const char **p)
{
    int32_t ns = 0, scale = 100000000;
    for ((*p)++; digit(**p); (*p)++, scale /= 10)
        ns += (**p - '0') * scale;
    return ns;
}

char *kapi_go_parse_time(const char *s, bool micro, kapi_go_time *out)
{
    const char *layout = micro ? rfc3339_micro : rfc3339;
    const char *p = s, *start;
    int year = 0, month, day, hour, min, sec, tz = 0;
    int32_t nsec = 0;
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
            nsec = nsec * 10 + (p[i] - '0');
        }
        nsec *= 1000;
        p += 7;
    } else if ((p[0] == '.' || p[0] == ',') && digit(p[1])) {
        nsec = fraction(&p);
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
    if (range)
        return failed(s, "%s out of range", range);
    if (*p) {
        kapi_buf q;
        kapi_buf_init(&q);
        kapi_go_quote(&q, p, strlen(p));
        char *why = failed(s, "extra text: %s", q.ptr);
        kapi_buf_dispose(&q);
        return why;
    }
    if (day < 1 || day > days_in(month, year))
        return failed(s, "%s out of range", "day");
    out->secs = kapi_tz_unix(kapi_tz_utc(), year, month, day, hour, min, sec) - tz;
    out->nsec = nsec;
    out->offset = tz;
    return NULL;
}

void kapi_go_format_time(kapi_buf *b, const kapi_go_time *t)
{
    kapi_civil c;
    kapi_tz_civil(&c, t->secs, t->offset);
    kapi_buf_printf(b, "%s%04lld-%02d-%02dT%02d:%02d:%02d", c.year < 0 ? "-" : "",
                    (long long)(c.year < 0 ? -c.year : c.year), c.month, c.day, c.hour, c.minute,
                    c.second);
    if (t->nsec) { /* .999999999: the trailing zeros dropped */
        char frac[16];
        int n = snprintf(frac, sizeof(frac), ".%09d", (int)t->nsec);
        while (frac[n - 1] == '0')
            n--;
        kapi_buf_put(b, frac, (size_t)n);
    }
    int zone = t->offset / 60;
    if (t->offset == 0)
        kapi_buf_putc(b, 'Z');
    else
        kapi_buf_printf(b, "%c%02d:%02d", zone < 0 ? '-' : '+', (zone < 0 ? -zone : zone) / 60,
                        (zone < 0 ? -zone : zone) % 60);
}
