/*
 * tz: time zones as Go's time package has them (time.LoadLocation, Time.In, time.Date),
 * read from the system's IANA database (/usr/share/zoneinfo, TZif files of any version,
 * their 64-bit data when there is some) without TZ, tzset or localtime. After its last
 * transition a zone follows the POSIX TZ rule at the end of its file ("EST5EDT,M3.2.0,
 * M11.1.0"), as Go does; leap seconds are ignored, as Go ignores them.
 *
 * Names are checked as Go's LoadLocation checks them: "" and "UTC" are UTC; a name with
 * "..", or starting with '/' or '\', is invalid; any other is a file of the database:
 * of the directory the ZONEINFO environment variable names, when it is set and has it,
 * else of the system's (Go's order; Go also reads a zip there, kapi a directory only).
 * "Local" is UTC too: kapi, like the Kubernetes components in their containers, takes
 * its local zone to be UTC (it never reads TZ or /etc/localtime).
 *
 * A zone loads once per process: kapi_tz_load keeps what it loaded (a failure is not
 * kept, so a zone installed later loads then). A loaded zone is immutable and lives until
 * exit; any thread may load and use zones.
 *
 * Times are Unix seconds (int64). Civil times are split and joined with Go's calendar
 * arithmetic (proleptic Gregorian, year 0 before year 1, years of any size).
 */
#ifndef KAPI_BASE_TZ_H
#define KAPI_BASE_TZ_H

#include <stddef.h>
#include <stdint.h>

typedef struct kapi_tz kapi_tz;

/* A civil (wall-clock) time, as Go's Time.Date, Clock, YearDay and Weekday give it. */
typedef struct kapi_civil {
    int64_t year;
    int month;  /* 1..12 */
    int day;    /* 1..31 */
    int hour;   /* 0..23 */
    int minute; /* 0..59 */
    int second; /* 0..59 */
    int yday;   /* 0..365: days since January 1st */
    int wday;   /* 0..6: Sunday is 0 */
} kapi_civil;

/* Loads the zone called name (len bytes) into *out: NULL, or why not in Go's words as a
 * heap string ("unknown time zone Mars/Base", "time: invalid location name",
 * "malformed time zone information", "is a directory"). The zone is shared (see above). */
char *kapi_tz_load(const kapi_tz **out, const char *name, size_t len);
/* The UTC zone, named "UTC". */
const kapi_tz *kapi_tz_utc(void);
/* The name the zone was loaded by. */
const char *kapi_tz_name(const kapi_tz *tz);

/* The offset from UTC in seconds (east positive) in effect in tz at the Unix time t, and
 * its abbreviation into *abbr ("EST", "+0530"; abbr may be NULL). */
int kapi_tz_offset(const kapi_tz *tz, int64_t t, const char **abbr);

/* Go's time.Date in tz: the Unix time of a civil time. Fields out of their ranges carry
 * into the next larger ones (month 13 is January of the next year, second -1 the last
 * second of the minute before). A civil time that a zone skips (a gap) or shows twice (an
 * overlap) is resolved as Go resolves it: the zone in effect at the civil time read as
 * UTC is taken, unless the time it gives falls outside that zone's span, when the zone in
 * effect at that time is. So 02:30 on the day New York springs forward is 01:30 EST and
 * 01:30 on the day it falls back is EDT; Europe's zones pick the later time instead. */
int64_t kapi_tz_unix(const kapi_tz *tz, int64_t year, int month, int day, int hour, int minute,
                     int second);

/* The civil time at Unix time t in a zone offset seconds east of UTC, as Go's Time.In
 * gives it for a fixed zone of that offset (any offset: Go's arithmetic wraps, and so
 * does this). With kapi_tz_offset, the civil time in a zone. */
void kapi_tz_civil(kapi_civil *out, int64_t t, int64_t offset);

/* For the tests and the fuzz target: the zone of a TZif file's bytes (data, len bytes),
 * called name, or NULL when they are malformed. It is not kept: kapi_tz__free frees it. */
kapi_tz *kapi_tz__parse(const char *name, const unsigned char *data, size_t len);
void kapi_tz__free(kapi_tz *tz);

#endif
