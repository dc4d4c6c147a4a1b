/*
 * schema/gotime: metav1.Time and metav1.MicroTime as Go parses (codec/gotime.c) and
 * writes them: in UTC, to the second or the microsecond.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "codec/go.h"
#include "schema/field.h"
#include "schema/schema_int.h"

kapi_error *kapi_schema__parse_time(const char *s, bool micro, char *out)
{
    kapi_go_time t;
    struct tm tm;
    char *why = kapi_go_parse_time(s, micro, &t);
    if (why) {
        kapi_error *err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%s", why);
        free(why);
        return err;
    }
    time_t secs = (time_t)t.secs;
    gmtime_r(&secs, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    if (micro)
        snprintf(out + n, 32 - n, ".%06dZ", (int)(t.nsec / 1000));
    else
        snprintf(out + n, 32 - n, "Z");
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
