/*
 * schema/gotime: metav1.Time and metav1.MicroTime as Go parses (codec/gotime.c) and
 * writes them: in UTC, to the second or the microsecond.
 */
#include <stdlib.h>
#include <string.h>

#include "base/tz.h"
#include "codec/go.h"
#include "schema/field.h"
#include "schema/schema_int.h"

/* Writes the decimal digits of v at p, at least width of them, after a '-' when v is
 * negative; returns the end. */
static char *put_int(char *p, int64_t v, int width)
{
    char digits[24];
    int n = 0;
    uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u || n < width);
    if (v < 0)
        *p++ = '-';
    while (n)
        *p++ = digits[--n];
    return p;
}

kapi_error *kapi_schema__parse_time(const char *s, bool micro, char *out)
{
    kapi_go_time t;
    kapi_civil c;
    char *why = kapi_go_parse_time(s, micro, &t);
    if (why) {
        kapi_error *err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%s", why);
        free(why);
        return err;
    }
    /* UTC; the year unpadded (year 1 is "1"), as glibc's strftime writes %Y. */
    kapi_tz_civil(&c, t.secs, 0);
    char *p = put_int(out, c.year, 1);
    const int fields[] = {c.month, c.day, c.hour, c.minute, c.second};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(fields); i++) {
        *p++ = "--T::"[i];
        p = put_int(p, fields[i], 2);
    }
    if (micro) {
        *p++ = '.';
        p = put_int(p, t.nsec / 1000, 6);
    }
    memcpy(p, "Z", 2);
    return NULL;
}

bool kapi_gotime_parse(const char *s, int64_t *secs, int32_t *nsec)
{
    kapi_go_time t;
    char *why = kapi_go_parse_time(s, false, &t);
    free(why);
    if (why)
        return false;
    *secs = t.secs;
    *nsec = t.nsec;
    return true;
}
