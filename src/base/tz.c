/*
 * tz: the IANA zones of the system database, read and looked up as Go's time package
 * does (zoneinfo_read.go's LoadLocationFromTZData, zoneinfo.go's lookup and tzset,
 * time.go's Date and absDate), the calendar arithmetic on Go's unsigned "absolute"
 * seconds so that it wraps where Go's does.
 */
#include "base/tz.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/map.h"

#define ZONEINFO_DIR "/usr/share/zoneinfo/"
#define MAX_FILE_SIZE (10 << 20) /* Go's maxFileSize */

#define SECS_PER_DAY 86400
#define DAYS_PER_400_YEARS (365 * 400 + 97)
#define DAYS_PER_100_YEARS (365 * 100 + 24)
#define DAYS_PER_4_YEARS (365 * 4 + 1)
/* Go's absolute zero year, and the offsets between its absolute, internal (since year
 * 1) and Unix seconds. */
#define ABSOLUTE_ZERO_YEAR INT64_C(-292277022399)
#define ABSOLUTE_TO_INTERNAL (-INT64_C(730692556) * DAYS_PER_400_YEARS * SECS_PER_DAY)
#define UNIX_TO_INTERNAL (INT64_C(719162) * SECS_PER_DAY)
#define UNIX_TO_ABSOLUTE ((uint64_t)UNIX_TO_INTERNAL - (uint64_t)ABSOLUTE_TO_INTERNAL)
#define ALPHA INT64_MIN /* before every transition */
#define OMEGA INT64_MAX /* after every transition */

/* A local time type of a zone (Go's zone). */
typedef struct tz_type {
    int offset; /* seconds east of UTC */
    bool dst;
    const char *abbr;
} tz_type;

/* A day rule of a POSIX TZ string: Jn, n or Mm.w.d, and the time of day it takes effect. */
typedef enum { RULE_JULIAN, RULE_DOY, RULE_MONTH_WEEK_DAY } rule_kind;
typedef struct tz_rule {
    rule_kind kind;
    int day, week, mon;
    int time;
} tz_rule;

/* The POSIX TZ string that follows a zone's last transition, parsed. */
typedef struct tz_posix {
    bool valid, has_dst;
    tz_type std, dst;
    tz_rule start, end;
} tz_posix;

struct kapi_tz {
    char *name;
    tz_type *types;
    size_t ntypes;
    int64_t *when;  /* transition times, ascending */
    uint8_t *index; /* the type each transition brings in */
    size_t ntx;
    char *chars; /* the abbreviations, the TZ string's names after them */
    tz_posix posix;
};

/* What lookup finds at a time: the type in effect and the span it is in effect for. */
typedef struct span {
    const char *abbr;
    int offset;
    int64_t start, end;
    bool dst;
} span;

static const int days_before[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365};

static const kapi_tz utc_zone = {.name = "UTC"};
static const kapi_tz local_zone = {.name = "Local"};

/* ---- the calendar (time.go) ---- */

static bool is_leap(int64_t year)
{
    return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
}

static int days_in(int month, int64_t year)
{
    if (month == 2 && is_leap(year))
        return 29;
    return days_before[month] - days_before[month - 1];
}

/* Go's daysSinceEpoch: days from the absolute zero year to January 1st of year. */
static uint64_t days_since_epoch(int64_t year)
{
    uint64_t y = (uint64_t)year - (uint64_t)ABSOLUTE_ZERO_YEAR, n, d;
    n = y / 400, y -= 400 * n, d = DAYS_PER_400_YEARS * n;
    n = y / 100, y -= 100 * n, d += DAYS_PER_100_YEARS * n;
    n = y / 4, y -= 4 * n, d += DAYS_PER_4_YEARS * n;
    return d + 365 * y;
}

/* Go's absDate: the year and day of year of absolute seconds, and with full the month
 * and day. */
static void abs_date(uint64_t abs, kapi_civil *c, bool full)
{
    uint64_t d = abs / SECS_PER_DAY, n, y;
    n = d / DAYS_PER_400_YEARS, y = 400 * n, d -= DAYS_PER_400_YEARS * n;
    n = d / DAYS_PER_100_YEARS, n -= n >> 2, y += 100 * n, d -= DAYS_PER_100_YEARS * n;
    n = d / DAYS_PER_4_YEARS, y += 4 * n, d -= DAYS_PER_4_YEARS * n;
    n = d / 365, n -= n >> 2, y += n, d -= 365 * n;
    c->year = (int64_t)(y + (uint64_t)ABSOLUTE_ZERO_YEAR);
    c->yday = (int)d;
    if (!full)
        return;
    int day = c->yday;
    if (is_leap(c->year) && day >= 31 + 29 - 1) {
        if (day == 31 + 29 - 1) {
            c->month = 2, c->day = 29;
            return;
        }
        day--; /* after February 29th: as if it were not there */
    }
    int month = day / 31; /* too low by at most one */
    int begin = days_before[month];
    if (day >= days_before[month + 1])
        begin = days_before[++month];
    c->month = month + 1;
    c->day = day - begin + 1;
}

void kapi_tz_civil(kapi_civil *out, int64_t t, int64_t offset)
{
    uint64_t abs = (uint64_t)t + (uint64_t)offset + UNIX_TO_ABSOLUTE;
    abs_date(abs, out, true);
    uint64_t s = abs % SECS_PER_DAY;
    out->hour = (int)(s / 3600);
    out->minute = (int)(s % 3600 / 60);
    out->second = (int)(s % 60);
    /* the absolute zero year began on a Monday */
    out->wday = (int)((abs + SECS_PER_DAY) % (7 * SECS_PER_DAY) / SECS_PER_DAY);
}

/* ---- the POSIX TZ string (zoneinfo.go's tzset) ---- */

/* A number in min..max at *s; false when there is none or it is out of range. */
static bool tzset_num(const char **s, int min, int max, int *out)
{
    const char *p = *s;
    int n = 0;
    if (!isdigit((unsigned char)*p))
        return false;
    for (; isdigit((unsigned char)*p); p++)
        if ((n = n * 10 + (*p - '0')) > max)
            return false;
    if (n < min)
        return false;
    *s = p, *out = n;
    return true;
}

/* [+-]hh[:mm[:ss]], hours up to 24 * 7 as tzcode allows, in seconds. */
static bool tzset_offset(const char **s, int *out)
{
    bool neg = **s == '-';
    if (**s == '+' || **s == '-')
        (*s)++;
    int h, m = 0, sec = 0;
    if (!tzset_num(s, 0, 24 * 7, &h))
        return false;
    if (**s == ':' && (++*s, !tzset_num(s, 0, 59, &m)))
        return false;
    if (**s == ':' && (++*s, !tzset_num(s, 0, 59, &sec)))
        return false;
    *out = (h * 3600 + m * 60 + sec) * (neg ? -1 : 1);
    return true;
}

/* A zone name at *s, <quoted> or of three characters or more up to a digit, ',', '-' or
 * '+': its start into *name and the byte after it into *end (the closing '>' of a quoted
 * one), for the caller to cut it off once the string is parsed. */
static bool tzset_name(char **s, const char **name, char **end)
{
    char *p = *s;
    if (*p == '<') {
        if (!(*end = strchr(p, '>')))
            return false;
        *name = p + 1;
        *s = *end + 1;
        return true;
    }
    *end = p + strcspn(p, "0123456789,-+");
    if (*end - p < 3)
        return false;
    *name = p;
    *s = *end;
    return true;
}

static bool tzset_rule(const char **s, tz_rule *r)
{
    bool ok;
    if (**s == 'J') {
        ++*s;
        r->kind = RULE_JULIAN;
        ok = tzset_num(s, 1, 365, &r->day);
    } else if (**s == 'M') {
        ++*s;
        r->kind = RULE_MONTH_WEEK_DAY;
        ok = tzset_num(s, 1, 12, &r->mon) && *(*s)++ == '.' && tzset_num(s, 1, 5, &r->week) &&
             *(*s)++ == '.' && tzset_num(s, 0, 6, &r->day);
    } else {
        r->kind = RULE_DOY;
        ok = tzset_num(s, 0, 365, &r->day);
    }
    if (!ok)
        return false;
    r->time = 2 * 3600; /* 2am when it does not say */
    return **s != '/' || (++*s, tzset_offset(s, &r->time));
}

/* Parses the TZ string s (the zone's own copy, cut into its names) into *p; p->valid
 * stays false when it does not parse, and the zone then keeps its last type. */
static void tzset_parse(char *s, tz_posix *p)
{
    char *std_end, *dst_end;
    int off;
    if (!tzset_name(&s, &p->std.abbr, &std_end))
        return;
    if (!tzset_offset((const char **)&s, &off))
        return;
    p->std.offset = -off; /* TZ's offsets are west of UTC */
    if (*s == 0 || *s == ',') {
        *std_end = 0;
        p->valid = true;
        return;
    }
    if (!tzset_name(&s, &p->dst.abbr, &dst_end))
        return;
    p->dst.offset = p->std.offset + 3600;
    if (*s != 0 && *s != ',') {
        if (!tzset_offset((const char **)&s, &off))
            return;
        p->dst.offset = -off;
    }
    const char *rules = *s ? s : ",M3.2.0,M11.1.0"; /* tzcode's default */
    if (*rules != ',' && *rules != ';')
        return;
    rules++;
    if (!tzset_rule(&rules, &p->start) || *rules++ != ',' || !tzset_rule(&rules, &p->end) || *rules)
        return;
    *std_end = 0;
    *dst_end = 0;
    p->std.dst = false;
    p->dst.dst = true;
    p->valid = p->has_dst = true;
}

/* Go's tzruleTime: the seconds since the start of year at which r takes effect, in a
 * zone off seconds east of UTC. */
static int64_t rule_time(int64_t year, const tz_rule *r, int off)
{
    int64_t s = 0;
    if (r->kind == RULE_JULIAN) {
        s = (int64_t)(r->day - 1) * SECS_PER_DAY;
        if (is_leap(year) && r->day >= 60)
            s += SECS_PER_DAY;
    } else if (r->kind == RULE_DOY) {
        s = (int64_t)r->day * SECS_PER_DAY;
    } else {
        /* Zeller's congruence: the weekday of the month's first day */
        int64_t m1 = (r->mon + 9) % 12 + 1, yy0 = year - (r->mon <= 2);
        int64_t yy1 = yy0 / 100, yy2 = yy0 % 100;
        int64_t dow = ((26 * m1 - 2) / 10 + 1 + yy2 + yy2 / 4 + yy1 / 4 - 2 * yy1) % 7;
        if (dow < 0)
            dow += 7;
        int64_t d = r->day - dow;
        if (d < 0)
            d += 7;
        for (int i = 1; i < r->week && d + 7 < days_in(r->mon, year); i++)
            d += 7;
        d += days_before[r->mon - 1] + (is_leap(year) && r->mon > 2);
        s = d * SECS_PER_DAY;
    }
    return s + r->time - off;
}

/* Go's tzset: the type in effect at sec, after the last transition (at last). The span is
 * exact near the rule's transitions and the year's bounds otherwise, as in Go. */
static span posix_span(const tz_posix *p, int64_t last, int64_t sec)
{
    if (!p->has_dst)
        return (span){p->std.abbr, p->std.offset, last, OMEGA, false};
    kapi_civil c;
    abs_date((uint64_t)sec + UNIX_TO_ABSOLUTE, &c, false);
    int64_t ysec = (int64_t)c.yday * SECS_PER_DAY + sec % SECS_PER_DAY;
    int64_t year_start = (int64_t)(days_since_epoch(c.year) * SECS_PER_DAY - UNIX_TO_ABSOLUTE);
    int64_t start = rule_time(c.year, &p->start, p->std.offset);
    int64_t end = rule_time(c.year, &p->end, p->dst.offset);
    const tz_type *std = &p->std, *dst = &p->dst;
    if (end < start) { /* the southern hemisphere: the labels swap, as in Go */
        int64_t t = start;
        start = end, end = t;
        std = &p->dst, dst = &p->std;
    }
    if (ysec < start)
        return (span){std->abbr, std->offset, year_start, start + year_start, std->dst};
    if (ysec >= end)
        return (span){std->abbr, std->offset, end + year_start, year_start + 365 * SECS_PER_DAY,
                      std->dst};
    return (span){dst->abbr, dst->offset, start + year_start, end + year_start, dst->dst};
}

/* ---- lookup (zoneinfo.go) ---- */

/* Go's lookupFirstZone: the type before the first transition. */
static size_t first_type(const kapi_tz *tz)
{
    bool used = false;
    for (size_t i = 0; i < tz->ntx; i++)
        used |= tz->index[i] == 0;
    if (!used)
        return 0;
    if (tz->ntx > 0 && tz->types[tz->index[0]].dst)
        for (size_t i = tz->index[0]; i-- > 0;)
            if (!tz->types[i].dst)
                return i;
    for (size_t i = 0; i < tz->ntypes; i++)
        if (!tz->types[i].dst)
            return i;
    return 0;
}

static span lookup(const kapi_tz *tz, int64_t sec)
{
    if (tz->ntypes == 0)
        return (span){"UTC", 0, ALPHA, OMEGA, false};
    if (tz->ntx == 0 || sec < tz->when[0]) {
        const tz_type *t = &tz->types[first_type(tz)];
        return (span){t->abbr, t->offset, ALPHA, tz->ntx ? tz->when[0] : OMEGA, t->dst};
    }
    size_t lo = 0, hi = tz->ntx;
    int64_t end = OMEGA;
    while (hi - lo > 1) {
        size_t m = lo + (hi - lo) / 2;
        if (sec < tz->when[m])
            end = tz->when[m], hi = m;
        else
            lo = m;
    }
    if (lo == tz->ntx - 1 && tz->posix.valid)
        return posix_span(&tz->posix, tz->when[lo], sec);
    const tz_type *t = &tz->types[tz->index[lo]];
    return (span){t->abbr, t->offset, tz->when[lo], end, t->dst};
}

int kapi_tz_offset(const kapi_tz *tz, int64_t t, const char **abbr)
{
    span s = lookup(tz, t);
    if (abbr)
        *abbr = s.abbr;
    return s.offset;
}

/* Go's norm: hi and lo with lo brought into 0..base-1. */
static void norm(int64_t *hi, int64_t *lo, int64_t base)
{
    if (*lo < 0) {
        int64_t n = (-*lo - 1) / base + 1;
        *hi -= n, *lo += n * base;
    }
    if (*lo >= base) {
        int64_t n = *lo / base;
        *hi += n, *lo -= n * base;
    }
}

int64_t kapi_tz_unix(const kapi_tz *tz, int64_t year, int month, int day, int hour, int minute,
                     int second)
{
    int64_t m = month - 1, d = day, h = hour, mi = minute, s = second;
    norm(&year, &m, 12);
    norm(&mi, &s, 60);
    norm(&h, &mi, 60);
    norm(&d, &h, 24);
    uint64_t days = days_since_epoch(year) + (uint64_t)days_before[m] + (is_leap(year) && m >= 2) +
                    (uint64_t)(d - 1);
    uint64_t abs = days * SECS_PER_DAY + (uint64_t)(h * 3600 + mi * 60 + s);
    int64_t unix = (int64_t)(abs - UNIX_TO_ABSOLUTE);
    span z = lookup(tz, unix);
    if (z.offset != 0) {
        int64_t utc = unix - z.offset;
        if (utc < z.start || utc >= z.end)
            z = lookup(tz, utc);
        unix -= z.offset;
    }
    return unix;
}

/* ---- reading a TZif file (zoneinfo_read.go) ---- */

typedef struct reader {
    const unsigned char *p;
    size_t n;
    bool bad;
} reader;

static const unsigned char *take(reader *r, size_t n)
{
    if (r->bad || r->n < n) {
        r->bad = true;
        return NULL;
    }
    const unsigned char *p = r->p;
    r->p += n, r->n -= n;
    return p;
}

static uint32_t big4(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void kapi_tz__free(kapi_tz *tz)
{
    free(tz->name);
    free(tz->types);
    free(tz->when);
    free(tz->index);
    free(tz->chars);
    free(tz);
}

/* The six counts of a TZif header; false when the data ends first. */
enum { N_UTC_LOCAL, N_STD_WALL, N_LEAP, N_TIME, N_TYPE, N_CHAR };
static bool counts(reader *r, size_t n[6])
{
    const unsigned char *p = take(r, 24);
    for (int i = 0; p && i < 6; i++)
        n[i] = big4(p + 4 * i);
    return p != NULL;
}

kapi_tz *kapi_tz__parse(const char *name, const unsigned char *data, size_t len)
{
    reader r = {data, len, false};
    const unsigned char *magic = take(&r, 4), *head = take(&r, 16);
    size_t n[6];
    if (!head || memcmp(magic, "TZif", 4) != 0 || (head[0] && !strchr("23", head[0])) ||
        !counts(&r, n))
        return NULL;
    size_t size = 4;
    if (head[0]) { /* version 2 or 3: skip the 32-bit data for the 64-bit data after it */
        take(&r, n[N_TIME] * 5 + n[N_TYPE] * 6 + n[N_CHAR] + n[N_LEAP] * 8 + n[N_STD_WALL] +
                     n[N_UTC_LOCAL] + 20);
        if (!counts(&r, n))
            return NULL;
        size = 8;
    }
    const unsigned char *times = take(&r, n[N_TIME] * size), *idx = take(&r, n[N_TIME]);
    const unsigned char *types = take(&r, n[N_TYPE] * 6), *chars = take(&r, n[N_CHAR]);
    take(&r, n[N_LEAP] * (size + 4) + n[N_STD_WALL] + n[N_UTC_LOCAL]);
    if (r.bad || n[N_TYPE] == 0)
        return NULL;
    /* the TZ string: the rest, between newlines */
    size_t ext = r.n > 2 && r.p[0] == '\n' && r.p[r.n - 1] == '\n' ? r.n - 2 : 0;
    kapi_tz *tz = kapi_xcalloc(1, sizeof(*tz));
    tz->name = kapi_xstrdup(name);
    tz->chars = kapi_xmalloc(n[N_CHAR] + 1 + ext + 1);
    memcpy(tz->chars, chars, n[N_CHAR]);
    tz->chars[n[N_CHAR]] = 0;
    memcpy(tz->chars + n[N_CHAR] + 1, r.p + 1, ext);
    tz->chars[n[N_CHAR] + 1 + ext] = 0;
    tz->ntypes = n[N_TYPE];
    tz->types = kapi_xcalloc(tz->ntypes, sizeof(*tz->types));
    for (size_t i = 0; i < tz->ntypes; i++) {
        const unsigned char *t = types + 6 * i;
        if (t[5] >= n[N_CHAR]) {
            kapi_tz__free(tz);
            return NULL;
        }
        tz->types[i] = (tz_type){(int32_t)big4(t), t[4] != 0, tz->chars + t[5]};
    }
    tz->ntx = n[N_TIME] ? n[N_TIME] : 1; /* none: one at the beginning of time, as Go has */
    tz->when = kapi_xcalloc(tz->ntx, sizeof(*tz->when));
    tz->index = kapi_xcalloc(tz->ntx, 1);
    tz->when[0] = ALPHA;
    for (size_t i = 0; i < n[N_TIME]; i++) {
        const unsigned char *t = times + size * i;
        tz->when[i] =
            size == 4 ? (int32_t)big4(t) : (int64_t)((uint64_t)big4(t) << 32 | big4(t + 4));
        if ((tz->index[i] = idx[i]) >= tz->ntypes) {
            kapi_tz__free(tz);
            return NULL;
        }
    }
    if (ext)
        tzset_parse(tz->chars + n[N_CHAR] + 1, &tz->posix);
    return tz;
}

/* The bytes of the file at path into *b: 0, or an errno value (EFBIG past Go's limit). */
static int read_file(const char *path, kapi_buf *b)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno;
    char chunk[4096];
    size_t got;
    while (b->len <= MAX_FILE_SIZE && (got = fread(chunk, 1, sizeof(chunk), f)) > 0)
        kapi_buf_put(b, chunk, got);
    int err = ferror(f) ? errno : b->len > MAX_FILE_SIZE ? EFBIG : 0;
    fclose(f);
    return err;
}

/* Loads name from the directory dir (with its '/') into *out: NULL, or why not; *missing
 * tells a file that is not there from one that does not read or parse. */
static char *load_from(kapi_tz **out, const char *dir, const char *name, bool *missing)
{
    char *path = kapi_xprintf("%s%s", dir, name), *why = NULL;
    kapi_buf b;
    kapi_buf_init(&b);
    int err = read_file(path, &b);
    *missing = err == ENOENT;
    if (err == ENOENT) {
        why = kapi_xprintf("unknown time zone %s", name);
    } else if (err == EFBIG) {
        why = kapi_xprintf("time: file %s is too large", path);
    } else if (err) { /* Go's text of an errno is the C library's, lower-cased */
        char text[128];
        why = kapi_xstrdup(strerror_r(err, text, sizeof(text)));
        why[0] = (char)tolower((unsigned char)why[0]);
    } else if (!(*out = kapi_tz__parse(name, (const unsigned char *)b.ptr, b.len))) {
        why = kapi_xstrdup("malformed time zone information");
    }
    kapi_buf_dispose(&b);
    free(path);
    return why;
}

/* Loads name into *out as LoadLocation does: from the directory $ZONEINFO names first,
 * when it is set, then from the system's database; NULL, or the first error that is not
 * a missing file (else the system's). */
static char *load(kapi_tz **out, const char *name)
{
    const char *env = getenv("ZONEINFO");
    char *first = NULL;
    bool missing;
    if (env && *env) {
        char *dir = kapi_xprintf("%s/", env);
        first = load_from(out, dir, name, &missing);
        free(dir);
        if (!first)
            return NULL;
        if (missing) {
            free(first);
            first = NULL;
        }
    }
    char *why = load_from(out, ZONEINFO_DIR, name, &missing);
    if (!why || !first) {
        free(first);
        return why;
    }
    free(why);
    return first;
}

/* ---- the cache ---- */

static uint64_t name_hash(const void *key, uint64_t seed)
{
    return kapi_map_hash_bytes(key, strlen(key), seed);
}

static bool name_equal(const void *a, const void *b)
{
    return strcmp(a, b) == 0;
}

static const kapi_map_type zone_map = {name_hash, name_equal, NULL, NULL};
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static kapi_map *cache; /* name -> kapi_tz *, the name its own */

char *kapi_tz_load(const kapi_tz **out, const char *name, size_t len)
{
    *out = NULL;
    if (len == 0 || (len == 3 && memcmp(name, "UTC", 3) == 0)) {
        *out = &utc_zone;
        return NULL;
    }
    if (len == 5 && memcmp(name, "Local", 5) == 0) {
        *out = &local_zone;
        return NULL;
    }
    if (memmem(name, len, "..", 2) || name[0] == '/' || name[0] == '\\')
        return kapi_xstrdup("time: invalid location name");
    if (memchr(name, 0, len))
        return kapi_xstrdup("invalid argument"); /* Go's open of a path with a NUL */
    char *key = kapi_xstrndup(name, len), *why = NULL;
    pthread_mutex_lock(&cache_mu);
    if (!cache)
        cache = kapi_map_new(&zone_map);
    kapi_tz *tz = kapi_map_get(cache, key);
    if (!tz && !(why = load(&tz, key)))
        kapi_map_put(cache, tz->name, tz);
    pthread_mutex_unlock(&cache_mu);
    free(key);
    *out = tz;
    return why;
}

const kapi_tz *kapi_tz_utc(void)
{
    return &utc_zone;
}

const char *kapi_tz_name(const kapi_tz *tz)
{
    return tz->name;
}
