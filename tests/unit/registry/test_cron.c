/* Unit tests for src/registry/cron: robfig/cron v3's own parser tables (parser_test.go,
 * extracted to ../shared/testdata/cron/cases.json; see its README), read at run time, plus
 * a few exact messages and durations, and its activation and next tables for
 * kapi_cron_next (spec_test.go), with their daylight saving time cases. */
#include "registry/cron.h"
#include "test.h"

#include <jansson.h>

/* ---- helpers ---- */

/* cases.json from $KAPI_TESTDATA/cron, else ../shared/testdata/cron; a missing or broken
 * file fails the test. */
static json_t *load_cases(void)
{
    const char *dir = getenv("KAPI_TESTDATA");
    char *path = dir ? kapi_xprintf("%s/cron/cases.json", dir)
                     : kapi_xstrdup("../shared/testdata/cron/cases.json");
    json_error_t jerr;
    json_t *cases = json_load_file(path, 0, &jerr);
    if (!cases)
        test_fail(__FILE__, __LINE__, "cannot load %s: %s", path, jerr.text);
    free(path);
    return cases;
}

/* The rows of one table; fails the test when the table is missing or empty. */
static json_t *table(json_t *cases, const char *name)
{
    json_t *rows = json_object_get(cases, name);
    if (!json_is_array(rows) || json_array_size(rows) == 0)
        test_fail(__FILE__, __LINE__, "cases.json has no \"%s\" rows", name);
    return rows;
}

static const char *row_str(const json_t *row, const char *key)
{
    const char *s = json_string_value(json_object_get(row, key));
    return s ? s : "";
}

/* The option flags of a parser id, from the "parsers" table. */
static unsigned parser_options(json_t *cases, const char *id)
{
    static const struct {
        const char *name;
        unsigned flag;
    } flags[] = {
        {"Second", KAPI_CRON_SECOND},
        {"SecondOptional", KAPI_CRON_SECOND_OPTIONAL},
        {"Minute", KAPI_CRON_MINUTE},
        {"Hour", KAPI_CRON_HOUR},
        {"Dom", KAPI_CRON_DOM},
        {"Month", KAPI_CRON_MONTH},
        {"Dow", KAPI_CRON_DOW},
        {"DowOptional", KAPI_CRON_DOW_OPTIONAL},
        {"Descriptor", KAPI_CRON_DESCRIPTOR},
    };
    json_t *names = json_object_get(json_object_get(cases, "parsers"), id), *name;
    size_t i;
    unsigned options = 0;
    if (!names)
        test_fail(__FILE__, __LINE__, "unknown parser \"%s\"", id);
    json_array_foreach(names, i, name)
    {
        for (size_t k = 0; k < KAPI_ARRAY_LEN(flags); k++)
            if (strcmp(json_string_value(name), flags[k].name) == 0)
                options |= flags[k].flag;
    }
    return options;
}

/* The mask a {"values": [..] or "all", "star": bool} object describes. */
static uint64_t expected_mask(const json_t *field, unsigned min, unsigned max)
{
    json_t *values = json_object_get(field, "values"), *v;
    size_t i;
    uint64_t mask = json_is_true(json_object_get(field, "star")) ? KAPI_CRON_STAR_BIT : 0;
    if (json_is_string(values)) {
        for (unsigned n = min; n <= max; n++)
            mask |= UINT64_C(1) << n;
        return mask;
    }
    json_array_foreach(values, i, v) mask |= UINT64_C(1) << json_integer_value(v);
    return mask;
}

/* A row's decimal "mask" string. */
static uint64_t row_mask(const json_t *row)
{
    return strtoull(row_str(row, "mask"), NULL, 10);
}

/* The error must exist, be Invalid and contain the row's error_contains (if any). */
static bool error_matches(kapi_error *err, const json_t *row)
{
    const char *want = row_str(row, "error_contains");
    bool ok = err && err->status == KAPI_STATUS_INVALID && strstr(err->message, want);
    kapi_error_free(err);
    return ok;
}

/* ---- tables ---- */

static bool parse_row(json_t *cases, const json_t *row)
{
    kapi_cron *c = NULL;
    kapi_error *err =
        kapi_cron_parse(&c, row_str(row, "spec"), parser_options(cases, row_str(row, "parser")));
    json_t *exp = json_object_get(row, "expected");
    bool ok;
    if (!json_is_true(json_object_get(row, "valid")))
        return !c && error_matches(err, row);
    if (err) {
        printf("  parse \"%s\": %s\n", row_str(row, "spec"), err->message);
        kapi_error_free(err);
        return false;
    }
    if (!exp) {
        ok = true;
    } else if (strcmp(row_str(exp, "type"), "ConstantDelaySchedule") == 0) {
        ok = c->every && c->delay == json_integer_value(json_object_get(exp, "delay_seconds"));
    } else {
        ok = !c->every && c->second == expected_mask(json_object_get(exp, "second"), 0, 59) &&
             c->minute == expected_mask(json_object_get(exp, "minute"), 0, 59) &&
             c->hour == expected_mask(json_object_get(exp, "hour"), 0, 23) &&
             c->dom == expected_mask(json_object_get(exp, "dom"), 1, 31) &&
             c->month == expected_mask(json_object_get(exp, "month"), 1, 12) &&
             c->dow == expected_mask(json_object_get(exp, "dow"), 0, 6) &&
             strcmp(c->location, row_str(exp, "location")) == 0;
    }
    kapi_cron_free(c);
    return ok;
}

/* RANGE rows through getRange, FIELD rows through getField. */
static bool mask_row(const json_t *row, bool field)
{
    uint64_t mask = 0;
    const char *expr = row_str(row, "expr");
    unsigned min = (unsigned)json_integer_value(json_object_get(row, "min"));
    unsigned max = (unsigned)json_integer_value(json_object_get(row, "max"));
    kapi_error *err =
        field ? kapi_cron__field(&mask, expr, min, max) : kapi_cron__range(&mask, expr, min, max);
    if (json_object_get(row, "error_contains"))
        return error_matches(err, row);
    if (err) {
        printf("  range \"%s\": %s\n", expr, err->message);
        kapi_error_free(err);
        return false;
    }
    return mask == row_mask(row);
}

/* Upstream's getTime: "" is the zero time; an optional "TZ=<zone> " prefix gives the zone
 * (else UTC, the local zone these tables are run in), into *zone; then either
 * "2006-01-02T15:04:05-0700", whose fixed zone is its offset (*shift seconds east, with
 * *zone UTC), or "Mon Jan 2 15:04[:05] 2006" in the zone. */
static int64_t parse_time(const char *s, const kapi_tz **zone, int64_t *shift)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    char name[64] = "", mon[4] = "";
    long long y;
    int m, d, hh, mm, ss = 0, off;
    *zone = kapi_tz_utc();
    *shift = 0;
    if (!*s)
        return KAPI_CRON_ZERO;
    if (sscanf(s, "TZ=%63s ", name) == 1) {
        char *why = kapi_tz_load(zone, name, strlen(name));
        if (why)
            test_fail(__FILE__, __LINE__, "zone %s: %s", name, why);
        s = strchr(s, ' ') + 1;
    }
    if (sscanf(s, "%lld-%d-%dT%d:%d:%d%d", &y, &m, &d, &hh, &mm, &ss, &off) == 7) {
        if (!name[0])
            *shift = off / 100 * 3600 + off % 100 * 60;
        return kapi_tz_unix(kapi_tz_utc(), y, m, d, hh, mm, ss) -
               (off / 100 * 3600 + off % 100 * 60);
    }
    if (sscanf(s, "%*s %3s %d %d:%d:%d %lld", mon, &d, &hh, &mm, &ss, &y) != 6 &&
        sscanf(s, "%*s %3s %d %d:%d %lld", mon, &d, &hh, &mm, &y) != 5)
        test_fail(__FILE__, __LINE__, "cannot read the time \"%s\"", s);
    m = (int)((strstr(months, mon) - months) / 3) + 1;
    return kapi_tz_unix(*zone, y, m, d, hh, mm, ss);
}

/* Next(t) with t in its zone: a fixed one (shift seconds east) is UTC moved by shift, for
 * a schedule without a zone of its own. */
static int64_t next_in(const kapi_cron *c, const kapi_tz *zone, int64_t shift, int64_t t)
{
    if (c->tz)
        return kapi_cron_next(c, zone, t);
    int64_t next = kapi_cron_next(c, zone, t + shift);
    return next == KAPI_CRON_ZERO ? next : next - shift;
}

/* A next row: Next(time) is expected, the same instant (parser "second" for the next
 * table, "standard" for next_with_tz). */
static bool next_row(json_t *cases, const json_t *row, const char *parser)
{
    const kapi_tz *zone, *ignored;
    int64_t shift, unused;
    kapi_cron *c = NULL;
    int64_t t = parse_time(row_str(row, "time"), &zone, &shift);
    int64_t want = parse_time(row_str(row, "expected"), &ignored, &unused);
    kapi_error *err = kapi_cron_parse(&c, row_str(row, "spec"), parser_options(cases, parser));
    bool ok = !err && next_in(c, zone, shift, t) == want;
    kapi_error_free(err);
    kapi_cron_free(c);
    return ok;
}

/* An activation row: Next(time - 1s) == time exactly when expected is true. */
static bool activation_row(json_t *cases, const json_t *row)
{
    const kapi_tz *zone;
    int64_t shift;
    kapi_cron *c = NULL;
    int64_t t = parse_time(row_str(row, "time"), &zone, &shift);
    kapi_error *err = kapi_cron_parse(&c, row_str(row, "spec"), parser_options(cases, "standard"));
    bool ok = !err && (next_in(c, zone, shift, t - 1) == t) ==
                          json_is_true(json_object_get(row, "expected"));
    kapi_error_free(err);
    kapi_cron_free(c);
    return ok;
}

enum { T_PARSE, T_RANGE, T_FIELD, T_NEXT, T_NEXT_TZ, T_ACTIVATION };

static bool run_row(json_t *cases, int kind, const json_t *row)
{
    switch (kind) {
    case T_PARSE:
        return parse_row(cases, row);
    case T_NEXT:
        return next_row(cases, row, "second");
    case T_NEXT_TZ:
        return next_row(cases, row, "standard");
    case T_ACTIVATION:
        return activation_row(cases, row);
    default:
        return mask_row(row, kind == T_FIELD);
    }
}

/* Runs one table, prints "cron <table>: passed/total" and checks that all rows pass. */
static void run_table(const char *name, int kind)
{
    json_t *cases = load_cases(), *rows = table(cases, name), *row;
    size_t i;
    int passed = 0, total = 0;
    json_array_foreach(rows, i, row)
    {
        bool ok = run_row(cases, kind, row);
        if (!ok) {
            char *text = json_dumps(row, JSON_COMPACT);
            printf("  FAIL %s row %zu: %s\n", name, i, text);
            free(text);
        }
        passed += ok;
        total++;
    }
    printf("cron %s: %d/%d\n", name, passed, total);
    json_decref(cases);
    CHECK_INT_EQ(passed, total);
}

TEST(cron_parse_table)
{
    run_table("parse", T_PARSE);
}

TEST(cron_next_table)
{
    run_table("next", T_NEXT);
}

TEST(cron_next_with_tz_table)
{
    run_table("next_with_tz", T_NEXT_TZ);
}

TEST(cron_activation_table)
{
    run_table("activation", T_ACTIVATION);
}

TEST(cron_range_table)
{
    run_table("range", T_RANGE);
}

TEST(cron_field_table)
{
    run_table("field", T_FIELD);
}

/* ---- exact messages, durations, prefixes ---- */

static char *parse_message(const char *spec, unsigned options)
{
    kapi_cron *c = NULL;
    kapi_error *err = kapi_cron_parse(&c, spec, options);
    kapi_cron_free(c);
    if (!err)
        return kapi_xstrdup("");
    char *msg = kapi_xstrdup(err->message);
    CHECK(err->status == KAPI_STATUS_INVALID);
    kapi_error_free(err);
    return msg;
}

static void check_message(const char *spec, unsigned options, const char *want)
{
    char *msg = parse_message(spec, options);
    if (strcmp(msg, want) != 0)
        test_fail(__FILE__, __LINE__, "\"%s\": \"%s\" != \"%s\"", spec, msg, want);
    free(msg);
}

TEST(cron_messages)
{
    unsigned std = KAPI_CRON_STANDARD;
    check_message("* * * * * *", std, "expected exactly 5 fields, found 6: [* * * * * *]");
    check_message("5 j * * *", std,
                  "failed to parse int from j: strconv.Atoi: parsing \"j\": invalid syntax");
    check_message("@every Xm", std,
                  "failed to parse duration @every Xm: time: invalid duration \"Xm\"");
    check_message("@every 5", std,
                  "failed to parse duration @every 5: time: missing unit in duration \"5\"");
    check_message("@every 5x", std,
                  "failed to parse duration @every 5x: time: unknown unit \"x\" in duration "
                  "\"5x\"");
    check_message("@foo", std, "unrecognized descriptor: @foo");
    check_message("0 0 * * 8", std, "end of range (8) above maximum (6): 8");
    check_message("TZ=Mars/Olympus * * * * *", std,
                  "provided bad location Mars/Olympus: unknown time zone Mars/Olympus");
    check_message("TZ=../etc/passwd * * * * *", std,
                  "provided bad location ../etc/passwd: time: invalid location name");
    check_message("@daily", KAPI_CRON_MINUTE | KAPI_CRON_HOUR,
                  "parser does not accept descriptors: @daily");
    check_message("*/0 * * * *", std, "step of range should be a positive number: */0");
    check_message("0 0 JAN-mar * SUN", std,
                  "failed to parse int from JAN: strconv.Atoi: "
                  "parsing \"JAN\": invalid syntax");
    check_message("0 0 * JAN-mar SUN-sat", std, "");
}

static int64_t every_delay(const char *spec)
{
    kapi_cron *c = NULL;
    kapi_error *err = kapi_cron_parse(&c, spec, KAPI_CRON_STANDARD);
    if (err)
        test_fail(__FILE__, __LINE__, "%s: %s", spec, err->message);
    CHECK(c->every);
    int64_t d = c->delay;
    kapi_cron_free(c);
    return d;
}

TEST(cron_every_durations)
{
    CHECK_INT_EQ(every_delay("@every 1h30m"), 5400);
    CHECK_INT_EQ(every_delay("@every 5m"), 300);
    CHECK_INT_EQ(every_delay("@every 500ms"), 1);
    CHECK_INT_EQ(every_delay("@every 1.5h"), 5400);
    CHECK_INT_EQ(every_delay("@every 2.9s"), 2);
    CHECK_INT_EQ(every_delay("@every 1h0.5m"), 3630);
    CHECK_INT_EQ(every_delay("TZ=UTC @every 10s"), 10);
}

TEST(cron_tz_prefix_and_masks)
{
    kapi_cron *c = NULL;
    CHECK(kapi_cron_uses_tz_prefix("TZ=UTC * * * * *"));
    CHECK(kapi_cron_uses_tz_prefix("CRON_TZ=Europe/Berlin 0 0 * * *"));
    CHECK(!kapi_cron_uses_tz_prefix("0 0 * * *"));
    CHECK(kapi_cron_parse(&c, "0 0 * JAN-mar SUN-sat", KAPI_CRON_STANDARD) == NULL);
    CHECK_INT_EQ(c->month, 0xe);
    CHECK_INT_EQ(c->dow, 0x7f);
    CHECK_STR_EQ(c->location, "Local");
    kapi_cron_free(c);
    CHECK(kapi_cron_parse(&c, "CRON_TZ=Europe/Berlin 0 0 * * *", KAPI_CRON_STANDARD) == NULL);
    CHECK_STR_EQ(c->location, "Europe/Berlin");
    kapi_cron_free(c);
}

/* A CronJob's schedule in its zone (spec.timeZone becomes a TZ= prefix): 02:30 daily in
 * Berlin skips the day the clocks jump from 02:00 to 03:00, and runs twice on the day they
 * go back (02:30 CEST, then 02:30 CET), as the library does. */
TEST(cron_next_across_dst)
{
    kapi_cron *c = NULL;
    const kapi_tz *utc = kapi_tz_utc();
    CHECK(kapi_cron_parse(&c, "TZ=Europe/Berlin 30 2 * * *", KAPI_CRON_STANDARD) == NULL);
    /* 2024-03-30 02:30 CET is 01:30 UTC; the next is 2024-04-01 02:30 CEST, 00:30 UTC */
    CHECK_INT_EQ(kapi_cron_next(c, utc, kapi_tz_unix(utc, 2024, 3, 30, 1, 30, 0)),
                 kapi_tz_unix(utc, 2024, 4, 1, 0, 30, 0));
    /* 2024-10-27: 02:30 CEST (00:30 UTC), 02:30 CET (01:30 UTC), then the 28th */
    CHECK_INT_EQ(kapi_cron_next(c, utc, kapi_tz_unix(utc, 2024, 10, 26, 12, 0, 0)),
                 kapi_tz_unix(utc, 2024, 10, 27, 0, 30, 0));
    CHECK_INT_EQ(kapi_cron_next(c, utc, kapi_tz_unix(utc, 2024, 10, 27, 0, 30, 0)),
                 kapi_tz_unix(utc, 2024, 10, 27, 1, 30, 0));
    CHECK_INT_EQ(kapi_cron_next(c, utc, kapi_tz_unix(utc, 2024, 10, 27, 1, 30, 0)),
                 kapi_tz_unix(utc, 2024, 10, 28, 1, 30, 0));
    kapi_cron_free(c);
}
