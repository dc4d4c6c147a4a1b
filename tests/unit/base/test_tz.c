/* Unit tests for src/base/tz.c: zones of the system database against what Go's time
 * package answers for the same zones and times (the expected values are Go 1.19's). */
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/tz.h"
#include "test.h"

static const kapi_tz *zone(const char *name)
{
    const kapi_tz *tz;
    char *why = kapi_tz_load(&tz, name, strlen(name));
    if (why)
        test_fail(__FILE__, __LINE__, "%s: %s", name, why);
    return tz;
}

/* The offset and abbreviation in effect at t, as "abbr offset". */
static char *at(const kapi_tz *tz, int64_t t)
{
    const char *abbr;
    int off = kapi_tz_offset(tz, t, &abbr);
    return kapi_xprintf("%s %d", abbr, off);
}

#define CHECK_AT(tz, t, want)                                                                      \
    do {                                                                                           \
        char *got_ = at(tz, t);                                                                    \
        CHECK_STR_EQ(got_, want);                                                                  \
        free(got_);                                                                                \
    } while (0)

/* Load errors in Go's words: the name checks, a missing file, a directory, a file that
 * is not TZif, a path through a file. */
TEST(tz_load_names)
{
    static const struct {
        const char *name, *why;
    } cases[] = {
        {"../x", "time: invalid location name"},
        {"/etc/localtime", "time: invalid location name"},
        {"\\x", "time: invalid location name"},
        {"Mars/Base", "unknown time zone Mars/Base"},
        {"America", "is a directory"},
        {"zone.tab", "malformed time zone information"},
        {"America/New_York/x", "not a directory"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        const kapi_tz *tz = (const kapi_tz *)1;
        char *why = kapi_tz_load(&tz, cases[i].name, strlen(cases[i].name));
        CHECK_STR_EQ(why, cases[i].why);
        CHECK(tz == NULL);
        free(why);
    }
    char *why = kapi_tz_load(&(const kapi_tz *){NULL}, "UTC\0x", 5);
    CHECK_STR_EQ(why, "invalid argument");
    free(why);
    CHECK(zone("") == kapi_tz_utc());
    CHECK(zone("UTC") == kapi_tz_utc());
    CHECK_STR_EQ(kapi_tz_name(zone("Local")), "Local");
    CHECK_AT(zone("Local"), 1234567890, "UTC 0");
    /* loaded once: the same zone again */
    CHECK(zone("Europe/London") == zone("Europe/London"));
    CHECK_STR_EQ(kapi_tz_name(zone("Europe/London")), "Europe/London");
}

/* New York's 2022 transitions, either side, and time.Date in the gap and the overlap:
 * 02:30 when it springs forward is 01:30 EST, 01:30 when it falls back is EDT. */
TEST(tz_new_york)
{
    const kapi_tz *ny = zone("America/New_York");
    CHECK_AT(ny, 1647154799, "EST -18000");
    CHECK_AT(ny, 1647154800, "EDT -14400");
    CHECK_AT(ny, 1667714399, "EDT -14400");
    CHECK_AT(ny, 1667714400, "EST -18000");
    CHECK_INT_EQ(kapi_tz_unix(ny, 2022, 3, 13, 2, 30, 0), 1647153000);
    CHECK_INT_EQ(kapi_tz_unix(ny, 2022, 11, 6, 1, 30, 0), 1667712600);
}

/* London: the overlap resolves to the later time (GMT), the gap forward. */
TEST(tz_london)
{
    const kapi_tz *lon = zone("Europe/London");
    CHECK_INT_EQ(kapi_tz_unix(lon, 2022, 10, 30, 1, 30, 0), 1667093400);
    CHECK_AT(lon, 1667093400, "GMT 0");
    CHECK_INT_EQ(kapi_tz_unix(lon, 2022, 3, 27, 1, 30, 0), 1648344600);
    CHECK_AT(lon, 1648344600, "BST 3600");
    CHECK_INT_EQ(kapi_tz_unix(lon, 2022, 7, 1, 12, 0, 0), 1656673200);
}

/* Lord Howe Island moves by half an hour: +10:30 in winter, +11 in summer. */
TEST(tz_lord_howe)
{
    const kapi_tz *lh = zone("Australia/Lord_Howe");
    CHECK_INT_EQ(kapi_tz_unix(lh, 2023, 1, 1, 0, 0, 0), 1672491600);
    CHECK_AT(lh, 1672491600, "+11 39600");
    CHECK_INT_EQ(kapi_tz_unix(lh, 2023, 7, 1, 0, 0, 0), 1688131800);
    CHECK_AT(lh, 1688131800, "+1030 37800");
    CHECK_INT_EQ(kapi_tz_unix(lh, 2023, 4, 2, 1, 45, 0), 1680362100);  /* the overlap */
    CHECK_INT_EQ(kapi_tz_unix(lh, 2023, 10, 1, 2, 15, 0), 1696088700); /* the gap: 02:45 */
}

/* The database's transitions end in 2037; after that the TZ string at the end of the
 * file ("EST5EDT,M3.2.0,M11.1.0") decides, and Date resolves its gap and overlap as it
 * does for recorded transitions. */
TEST(tz_after_last_transition)
{
    const kapi_tz *ny = zone("America/New_York");
    CHECK_INT_EQ(kapi_tz_unix(ny, 2100, 7, 1, 12, 0, 0), 4118140800);
    CHECK_AT(ny, 4118140800, "EDT -14400");
    CHECK_INT_EQ(kapi_tz_unix(ny, 2100, 3, 14, 2, 30, 0), 4108689000);
    CHECK_AT(ny, 4108689000, "EST -18000");
    CHECK_INT_EQ(kapi_tz_unix(ny, 2100, 11, 7, 1, 30, 0), 4129248600);
    CHECK_AT(ny, 4129248600, "EDT -14400");
}

/* Civil times: fields out of range carry as Go's Date carries them; a split gives the
 * day of the year and of the week, at any offset. */
TEST(tz_civil)
{
    const kapi_tz *utc = kapi_tz_utc();
    CHECK_INT_EQ(kapi_tz_unix(utc, 2023, 13, 32, 25, 61, 61), 1706839321);
    CHECK_INT_EQ(kapi_tz_unix(utc, 2024, 3, 0, -1, 0, -1), 1709161199);
    kapi_civil c;
    kapi_tz_civil(&c, 1234567890, 0);
    CHECK_INT_EQ(c.year, 2009);
    CHECK_INT_EQ(c.month, 2);
    CHECK_INT_EQ(c.day, 13);
    CHECK_INT_EQ(c.hour * 10000 + c.minute * 100 + c.second, 233130);
    CHECK_INT_EQ(c.yday, 43);
    CHECK_INT_EQ(c.wday, 5);
    kapi_tz_civil(&c, 1234567890, 11 * 3600);
    CHECK_INT_EQ(c.day * 100 + c.hour, 1410);
    CHECK_INT_EQ(c.wday, 6);
    kapi_tz_civil(&c, -62135596800, -3600); /* an hour before year 1: year 0 */
    CHECK_INT_EQ(c.year, 0);
    CHECK_INT_EQ(c.month * 100 + c.day, 1231);
}

/* $ZONEINFO, as Go reads it: a zone there comes first, one missing there comes from the
 * system's database, and a file there that does not parse is the error. */
TEST(tz_zoneinfo_directory)
{
    char *dir = kapi_xprintf("%s/zoneinfo", test_tmpdir());
    char *cmd = kapi_xprintf("mkdir -p %s/Test %s/Bad && cp /usr/share/zoneinfo/Europe/Paris "
                             "%s/Test/Zone && echo nonsense > %s/Bad/Zone",
                             dir, dir, dir, dir);
    CHECK_INT_EQ(system(cmd), 0);
    setenv("ZONEINFO", dir, 1);
    CHECK_AT(zone("Test/Zone"), 1234567890, "CET 3600");
    CHECK_AT(zone("Europe/London"), 1234567890, "GMT 0");
    const kapi_tz *tz;
    char *why = kapi_tz_load(&tz, "Bad/Zone", 8);
    CHECK_STR_EQ(why, "malformed time zone information");
    free(why);
    free(cmd);
    free(dir);
}
