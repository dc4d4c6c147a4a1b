/*
 * cron: robfig/cron v3's spec parser (Parser.Parse with its options, descriptors, @every
 * with Go durations, TZ=/CRON_TZ= prefixes loaded as Go loads them, by base/tz).
 */
#include "registry/cron.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/tz.h"
#include "codec/go.h"

#define ALL_BITS (~UINT64_C(0))
/* Bits lo..hi (hi < 63), a constant expression. */
#define SPAN(lo, hi) ((ALL_BITS >> (63 - (hi))) & (ALL_BITS << (lo)))
#define STAR KAPI_CRON_STAR_BIT
#define NFIELDS 6

/* A field's bounds and, for months and weekdays, its names (names[i] is value base + i). */
typedef struct bounds {
    unsigned min, max;
    const char *const *names;
    unsigned base;
} bounds;

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul",
                                          "aug", "sep", "oct", "nov", "dec", NULL};
static const char *const dow_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL};

/* In the library's field order: second, minute, hour, dom, month, dow. */
static const bounds field_bounds[NFIELDS] = {
    {0, 59, NULL, 0}, {0, 59, NULL, 0},        {0, 23, NULL, 0},
    {1, 31, NULL, 0}, {1, 12, month_names, 1}, {0, 6, dow_names, 0},
};
static const unsigned field_options[NFIELDS] = {KAPI_CRON_SECOND, KAPI_CRON_MINUTE, KAPI_CRON_HOUR,
                                                KAPI_CRON_DOM,    KAPI_CRON_MONTH,  KAPI_CRON_DOW};
static const char *const field_defaults[NFIELDS] = {"0", "0", "0", "*", "*", "*"};

/* The predefined schedules: masks for second, minute, hour, dom, month, dow. */
static const struct {
    const char *name;
    uint64_t masks[NFIELDS];
} descriptors[] = {
    {"@yearly", {1, 1, 1, 1 << 1, 1 << 1, SPAN(0, 6) | STAR}},
    {"@annually", {1, 1, 1, 1 << 1, 1 << 1, SPAN(0, 6) | STAR}},
    {"@monthly", {1, 1, 1, 1 << 1, SPAN(1, 12) | STAR, SPAN(0, 6) | STAR}},
    {"@weekly", {1, 1, 1, SPAN(1, 31) | STAR, SPAN(1, 12) | STAR, 1}},
    {"@daily", {1, 1, 1, SPAN(1, 31) | STAR, SPAN(1, 12) | STAR, SPAN(0, 6) | STAR}},
    {"@midnight", {1, 1, 1, SPAN(1, 31) | STAR, SPAN(1, 12) | STAR, SPAN(0, 6) | STAR}},
    {"@hourly",
     {1, 1, SPAN(0, 23) | STAR, SPAN(1, 31) | STAR, SPAN(1, 12) | STAR, SPAN(0, 6) | STAR}},
};

static kapi_error *invalid(const char *fmt, ...) KAPI_PRINTF(1, 2);

/* A KAPI_STATUS_INVALID error with a formatted message. */
static kapi_error *invalid(const char *fmt, ...)
{
    va_list ap;
    kapi_buf b;
    kapi_buf_init(&b);
    va_start(ap, fmt);
    kapi_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "%s", b.ptr);
    kapi_buf_dispose(&b);
    return err;
}

/* ---- strings ---- */

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r';
}

/* Counts the pieces strings.Split(s, sep) would give. */
static size_t count_pieces(kapi_str s, char sep)
{
    size_t n = 1;
    for (size_t i = 0; i < s.len; i++)
        n += s.ptr[i] == sep;
    return n;
}

static bool str_is(kapi_str s, const char *lit)
{
    return kapi_str_eqc(s, lit);
}

/* ---- numbers and ranges (getRange, getField) ---- */

/* strconv.Atoi: an optional sign and decimal digits that fit in int64. */
static bool go_atoi(kapi_str s, int64_t *out, bool *range_error)
{
    size_t i = 0;
    bool neg = false;
    uint64_t v = 0, limit;
    *range_error = false;
    if (s.len > 0 && (s.ptr[0] == '+' || s.ptr[0] == '-'))
        neg = s.ptr[i++] == '-';
    if (i == s.len)
        return false;
    limit = neg ? UINT64_C(1) << 63 : (UINT64_C(1) << 63) - 1;
    for (; i < s.len; i++) {
        if (!isdigit((unsigned char)s.ptr[i]))
            return false;
        uint64_t digit = (uint64_t)(s.ptr[i] - '0');
        *range_error = v > (limit - digit) / 10;
        if (*range_error)
            return false;
        v = v * 10 + digit;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* The library's mustParseInt: a non-negative decimal integer. */
static kapi_error *parse_uint(kapi_str s, uint64_t *out)
{
    int64_t num;
    bool range_error;
    if (!go_atoi(s, &num, &range_error)) {
        char *q = kapi_go_time_quote(s);
        kapi_error *err =
            invalid("failed to parse int from %.*s: strconv.Atoi: parsing %s: %s", KAPI_STR_FMT(s),
                    q, range_error ? "value out of range" : "invalid syntax");
        free(q);
        return err;
    }
    if (num < 0)
        return invalid("negative number (%lld) not allowed: %.*s", (long long)num, KAPI_STR_FMT(s));
    *out = (uint64_t)num;
    return NULL;
}

/* A month or weekday name (any case), else a number. */
static kapi_error *parse_int_or_name(kapi_str s, const bounds *b, uint64_t *out)
{
    for (size_t i = 0; b->names && b->names[i]; i++) {
        if (s.len == strlen(b->names[i]) && strncasecmp(s.ptr, b->names[i], s.len) == 0) {
            *out = b->base + i;
            return NULL;
        }
    }
    return parse_uint(s, out);
}

/* Bits start..end every step (the library's getBits); start <= end. A whole span, the
 * common case, is one mask. */
static uint64_t get_bits(uint64_t start, uint64_t end, uint64_t step)
{
    uint64_t bits = 0;
    if (step == 1 && end < 63)
        return SPAN(start, end);
    for (uint64_t i = start; i <= end && i < 64; i += step)
        bits |= UINT64_C(1) << i;
    return bits;
}

/* The "N", "N-M" or "*" part of a range term into start and end; sets *star for "*"/"?". */
static kapi_error *range_ends(kapi_str expr, kapi_str low_high, const bounds *b, uint64_t *start,
                              uint64_t *end, bool *star)
{
    kapi_str low;
    kapi_error *err;
    size_t n = count_pieces(low_high, '-');
    kapi_str_cut(&low_high, '-', &low);
    *star = low.len == 1 && (low.ptr[0] == '*' || low.ptr[0] == '?');
    if (*star) {
        *start = b->min;
        *end = b->max;
        return NULL;
    }
    if ((err = parse_int_or_name(low, b, start)) != NULL)
        return err;
    if (n == 1) {
        *end = *start;
        return NULL;
    }
    if (n == 2)
        return parse_int_or_name(low_high, b, end);
    return invalid("too many hyphens: %.*s", KAPI_STR_FMT(expr));
}

/* One range term ("5", "5-7", "5-7/2", "*", "*\/2") into a mask (the library's getRange). */
static kapi_error *get_range(kapi_str expr, const bounds *b, uint64_t *out)
{
    kapi_str rest = expr, low_high;
    uint64_t start, end, step = 1;
    bool star;
    kapi_error *err;
    size_t nslash = count_pieces(expr, '/');
    kapi_str_cut(&rest, '/', &low_high);
    if ((err = range_ends(expr, low_high, b, &start, &end, &star)) != NULL)
        return err;
    if (nslash > 2)
        return invalid("too many slashes: %.*s", KAPI_STR_FMT(expr));
    if (nslash == 2) {
        if ((err = parse_uint(rest, &step)) != NULL)
            return err;
        if (count_pieces(low_high, '-') == 1)
            end = b->max; /* "N/step" means "N-max/step" */
        star = star && step <= 1;
    }
    if (start < b->min)
        return invalid("beginning of range (%llu) below minimum (%u): %.*s",
                       (unsigned long long)start, b->min, KAPI_STR_FMT(expr));
    if (end > b->max)
        return invalid("end of range (%llu) above maximum (%u): %.*s", (unsigned long long)end,
                       b->max, KAPI_STR_FMT(expr));
    if (start > end)
        return invalid("beginning of range (%llu) beyond end of range (%llu): %.*s",
                       (unsigned long long)start, (unsigned long long)end, KAPI_STR_FMT(expr));
    if (step == 0)
        return invalid("step of range should be a positive number: %.*s", KAPI_STR_FMT(expr));
    *out = get_bits(start, end, step) | (star ? STAR : 0);
    return NULL;
}

/* A comma list of ranges (empty items are skipped, as strings.FieldsFunc does). */
static kapi_error *get_field(kapi_str field, const bounds *b, uint64_t *out)
{
    kapi_str item;
    kapi_error *err;
    *out = 0;
    while (field.len > 0) {
        uint64_t bits;
        kapi_str_cut(&field, ',', &item);
        if (item.len == 0)
            continue;
        if ((err = get_range(item, b, &bits)) != NULL)
            return err;
        *out |= bits;
    }
    return NULL;
}

kapi_error *kapi_cron__range(uint64_t *out, const char *expr, unsigned min, unsigned max)
{
    bounds b = {min, max, NULL, 0};
    return get_range(kapi_str_c(expr), &b, out);
}

kapi_error *kapi_cron__field(uint64_t *out, const char *expr, unsigned min, unsigned max)
{
    bounds b = {min, max, NULL, 0};
    return get_field(kapi_str_c(expr), &b, out);
}

/* ---- zones ---- */

/* ---- Parser.Parse ---- */

bool kapi_cron_uses_tz_prefix(const char *spec)
{
    return strncmp(spec, "TZ=", 3) == 0 || strncmp(spec, "CRON_TZ=", 8) == 0;
}

/* Takes a "TZ=zone " / "CRON_TZ=zone " prefix off *spec into c->location ("Local" when
 * there is none), checking that the zone loads. */
static kapi_error *take_location(kapi_cron *c, kapi_str *spec)
{
    if (!kapi_cron_uses_tz_prefix(spec->ptr)) {
        c->location = kapi_xstrdup("Local");
        return NULL;
    }
    const char *eq = memchr(spec->ptr, '=', spec->len);
    const char *sp = memchr(spec->ptr, ' ', spec->len);
    if (!sp)
        return invalid("provided bad location %s: no schedule after the time zone", eq + 1);
    char *name = kapi_xstrndup(eq + 1, (size_t)(sp - eq - 1));
    const kapi_tz *tz;
    char *why = kapi_tz_load(&tz, name, strlen(name));
    if (why) {
        kapi_error *err = invalid("provided bad location %s: %s", name, why);
        free(why);
        free(name);
        return err;
    }
    c->tz = tz;
    c->location = name[0] ? name : kapi_xstrdup("UTC");
    if (!name[0])
        free(name);
    spec->len -= (size_t)(sp - spec->ptr);
    spec->ptr = sp;
    while (spec->len > 0 && is_space(spec->ptr[0]))
        spec->ptr++, spec->len--;
    while (spec->len > 0 && is_space(spec->ptr[spec->len - 1]))
        spec->len--;
    return NULL;
}

/* A predefined schedule or "@every <duration>". */
static kapi_error *parse_descriptor(kapi_cron *c, kapi_str spec)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(descriptors); i++) {
        if (!str_is(spec, descriptors[i].name))
            continue;
        const uint64_t *m = descriptors[i].masks;
        c->second = m[0], c->minute = m[1], c->hour = m[2];
        c->dom = m[3], c->month = m[4], c->dow = m[5];
        return NULL;
    }
    if (!kapi_str_has_prefix(spec, "@every "))
        return invalid("unrecognized descriptor: %.*s", KAPI_STR_FMT(spec));
    int64_t ns = 0;
    char *why = kapi_go_parse_duration((kapi_str){spec.ptr + 7, spec.len - 7}, &ns);
    if (why) {
        kapi_error *err = invalid("failed to parse duration %.*s: %s", KAPI_STR_FMT(spec), why);
        free(why);
        return err;
    }
    c->every = true;
    c->delay = ns < 1000000000 ? 1 : ns / 1000000000; /* Every(): at least 1s, whole seconds */
    return NULL;
}

/* Splits spec on whitespace (strings.Fields); returns the count, at most cap stored. */
static size_t split_fields(kapi_str spec, kapi_str *out, size_t cap)
{
    size_t n = 0, i = 0;
    while (i < spec.len) {
        while (i < spec.len && is_space(spec.ptr[i]))
            i++;
        size_t start = i;
        while (i < spec.len && !is_space(spec.ptr[i]))
            i++;
        if (i > start && n < cap)
            out[n] = (kapi_str){spec.ptr + start, i - start};
        n += i > start;
    }
    return n;
}

/* The field-count error, listing the fields as Go prints a []string. */
static kapi_error *count_error(kapi_str spec, size_t min, size_t max, size_t count)
{
    kapi_str f[64];
    size_t n = split_fields(spec, f, KAPI_ARRAY_LEN(f));
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < n && i < KAPI_ARRAY_LEN(f); i++)
        kapi_buf_printf(&b, "%s%.*s", i ? " " : "", KAPI_STR_FMT(f[i]));
    kapi_error *err =
        min == max ? invalid("expected exactly %zu fields, found %zu: [%s]", min, count, b.ptr)
                   : invalid("expected %zu to %zu fields, found %zu: [%s]", min, max, count, b.ptr);
    kapi_buf_dispose(&b);
    return err;
}

/* The library's normalizeFields: checks the count and fills in the six fields. */
static kapi_error *normalize_fields(kapi_str spec, unsigned options, kapi_str out[NFIELDS])
{
    kapi_str given[NFIELDS];
    size_t optionals = 0, max = 0, n = 0;
    if (options & KAPI_CRON_SECOND_OPTIONAL)
        options |= KAPI_CRON_SECOND, optionals++;
    if (options & KAPI_CRON_DOW_OPTIONAL)
        options |= KAPI_CRON_DOW, optionals++;
    if (optionals > 1)
        return invalid("multiple optionals may not be configured");
    for (size_t i = 0; i < NFIELDS; i++)
        max += (options & field_options[i]) != 0;
    size_t count = split_fields(spec, given, NFIELDS), min = max - optionals;
    if (count < min || count > max)
        return count_error(spec, min, max, count);
    bool skip_second = count < max && (options & KAPI_CRON_SECOND_OPTIONAL);
    for (size_t i = 0; i < NFIELDS; i++) {
        bool present = (options & field_options[i]) && !(i == 0 && skip_second) && n < count;
        out[i] = present ? given[n++] : kapi_str_c(field_defaults[i]);
    }
    return NULL;
}

/* Five or six fields into the masks. */
static kapi_error *parse_fields(kapi_cron *c, kapi_str spec, unsigned options)
{
    kapi_str fields[NFIELDS];
    uint64_t *masks[NFIELDS] = {&c->second, &c->minute, &c->hour, &c->dom, &c->month, &c->dow};
    kapi_error *err = normalize_fields(spec, options, fields);
    for (size_t i = 0; i < NFIELDS && !err; i++)
        err = get_field(fields[i], &field_bounds[i], masks[i]);
    return err;
}

kapi_error *kapi_cron_parse(kapi_cron **out, const char *spec, unsigned options)
{
    kapi_error *err = NULL;
    kapi_str rest = kapi_str_c(spec);
    kapi_cron *c = NULL;
    *out = NULL;
    if (rest.len == 0)
        return invalid("empty spec string");
    c = kapi_xcalloc(1, sizeof(*c));
    if ((err = take_location(c, &rest)) != NULL)
        goto done;
    if (rest.len > 0 && rest.ptr[0] == '@') {
        err = (options & KAPI_CRON_DESCRIPTOR)
                  ? parse_descriptor(c, rest)
                  : invalid("parser does not accept descriptors: %.*s", KAPI_STR_FMT(rest));
    } else {
        err = parse_fields(c, rest, options);
    }
done:
    if (err)
        kapi_cron_free(c);
    else
        *out = c;
    return err;
}

/* ---- Schedule.Next ---- */

/* The search's position: a time, its civil time in the zone, and whether a field has
 * moved yet (the first move resets the smaller fields). */
typedef struct cursor {
    const kapi_tz *loc;
    int64_t t;
    kapi_civil c;
    bool added;
} cursor;

static void move_to(cursor *k, int64_t t)
{
    k->t = t;
    kapi_tz_civil(&k->c, t, kapi_tz_offset(k->loc, t, NULL));
}

/* Time.AddDate: the civil time months and days later, in the cursor's zone. */
static void add_date(cursor *k, int months, int days)
{
    const kapi_civil *c = &k->c;
    move_to(k, kapi_tz_unix(k->loc, c->year, c->month + months, c->day + days, c->hour, c->minute,
                            c->second));
}

/* The start of the cursor's hour, minute or second (unit seconds): time.Date on the
 * civil clock for an hour, Time.Truncate on the absolute time otherwise, as the library. */
static int64_t truncated(const cursor *k, int64_t unit)
{
    if (unit == 3600)
        return kapi_tz_unix(k->loc, k->c.year, k->c.month, k->c.day, k->c.hour, 0, 0);
    return k->t - (((k->t % unit) + unit) % unit);
}

static bool has_bit(uint64_t mask, int n)
{
    return (mask >> n) & 1;
}

/* The library's dayMatches: with either day field starred both must match, else either. */
static bool day_matches(const kapi_cron *s, const kapi_civil *c)
{
    bool dom = has_bit(s->dom, c->day), dow = has_bit(s->dow, c->wday);
    if ((s->dom | s->dow) & KAPI_CRON_STAR_BIT)
        return dom && dow;
    return dom || dow;
}

/* The first matching month; false when the year wrapped (start over). */
static bool next_month(const kapi_cron *s, cursor *k)
{
    while (!has_bit(s->month, k->c.month)) {
        if (!k->added) {
            move_to(k, kapi_tz_unix(k->loc, k->c.year, k->c.month, 1, 0, 0, 0));
            k->added = true;
        }
        add_date(k, 1, 0);
        if (k->c.month == 1)
            return false;
    }
    return true;
}

/* The first matching day, at midnight, or the hour nearest it where midnight is skipped
 * (Sao Paulo); false when the month wrapped. */
static bool next_day(const kapi_cron *s, cursor *k)
{
    while (!day_matches(s, &k->c)) {
        if (!k->added) {
            move_to(k, kapi_tz_unix(k->loc, k->c.year, k->c.month, k->c.day, 0, 0, 0));
            k->added = true;
        }
        add_date(k, 0, 1);
        if (k->c.hour != 0)
            move_to(k, k->t + (k->c.hour > 12 ? 24 - k->c.hour : -k->c.hour) * INT64_C(3600));
        if (k->c.day == 1)
            return false;
    }
    return true;
}

/* The first matching hour, minute or second (*field, of unit seconds): steps of unit on
 * the absolute time (Time.Add); false when the field wrapped to 0. */
static bool next_unit(uint64_t mask, cursor *k, const int *field, int64_t unit)
{
    while (!has_bit(mask, *field)) {
        if (!k->added) {
            move_to(k, truncated(k, unit));
            k->added = true;
        }
        move_to(k, k->t + unit);
        if (*field == 0)
            return false;
    }
    return true;
}

int64_t kapi_cron_next(const kapi_cron *s, const kapi_tz *local, int64_t t)
{
    if (s->every)
        return t + s->delay;
    cursor k = {.loc = s->tz ? s->tz : local};
    move_to(&k, t + 1);
    int64_t year_limit = k.c.year + 5;
    while (k.c.year <= year_limit) {
        if (next_month(s, &k) && next_day(s, &k) && next_unit(s->hour, &k, &k.c.hour, 3600) &&
            next_unit(s->minute, &k, &k.c.minute, 60) && next_unit(s->second, &k, &k.c.second, 1))
            return k.t;
    }
    return KAPI_CRON_ZERO;
}

void kapi_cron_free(kapi_cron *c)
{
    if (!c)
        return;
    free(c->location);
    free(c);
}
