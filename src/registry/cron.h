/*
 * cron: cron schedules as robfig/cron v3 reads them (the library Kubernetes CronJob uses
 * for spec.schedule), as validation needs them.
 *
 * A spec is either five or six whitespace-separated fields (which ones the parser options
 * say), or a descriptor (@yearly, @annually, @monthly, @weekly, @daily, @midnight,
 * @hourly, @every <Go duration>), optionally after a "TZ=<zone> " or "CRON_TZ=<zone> "
 * prefix. Each field is a comma list of "*", "?", N or N-M, each with an optional "/step";
 * months and weekdays also take the names jan..dec and sun..sat, in any case.
 *
 * Errors are KAPI_STATUS_INVALID and their message is the library's own text.
 *
 * Time zones load as Go's time.LoadLocation loads them (base/tz.h). kapi_cron_next is the
 * library's Schedule.Next, the activation times the CronJob controller runs Jobs at.
 *
 * A kapi_cron is immutable after kapi_cron_parse; any thread may read it.
 */
#ifndef KAPI_CRON_H
#define KAPI_CRON_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "base/tz.h"

/* Parser options (robfig/cron's ParseOption, same order). A field left out of the options
 * takes its default: second, minute and hour 0; dom, month and dow "*". */
enum {
    KAPI_CRON_SECOND = 1 << 0,          /* seconds field */
    KAPI_CRON_SECOND_OPTIONAL = 1 << 1, /* seconds field, may be left out */
    KAPI_CRON_MINUTE = 1 << 2,
    KAPI_CRON_HOUR = 1 << 3,
    KAPI_CRON_DOM = 1 << 4,
    KAPI_CRON_MONTH = 1 << 5,
    KAPI_CRON_DOW = 1 << 6,
    KAPI_CRON_DOW_OPTIONAL = 1 << 7, /* day-of-week field, may be left out */
    KAPI_CRON_DESCRIPTOR = 1 << 8,   /* accept @descriptors */
};

/* cron.ParseStandard, what Kubernetes uses: five fields plus descriptors. */
#define KAPI_CRON_STANDARD                                                                         \
    (KAPI_CRON_MINUTE | KAPI_CRON_HOUR | KAPI_CRON_DOM | KAPI_CRON_MONTH | KAPI_CRON_DOW |         \
     KAPI_CRON_DESCRIPTOR)

/* Bit 63 of a field mask: the field was "*" or "?" (a "/step" above 1 clears it). */
#define KAPI_CRON_STAR_BIT (UINT64_C(1) << 63)

/* A parsed schedule. Callers may read the members; only kapi_cron_parse writes them. */
typedef struct kapi_cron {
    bool every;    /* true: a constant-delay schedule (@every); masks and location unused */
    int64_t delay; /* @every: the delay in whole seconds, at least 1 */
    uint64_t second, minute, hour, dom, month, dow; /* bit n = value n, plus the star bit */
    char *location;    /* "Local" (no prefix), "UTC" or an IANA zone name */
    const kapi_tz *tz; /* the zone of location; NULL for "Local" */
} kapi_cron;

/* Go's zero time.Time as Unix seconds: what kapi_cron_next returns when it finds no
 * activation (January 1st of year 1, UTC). */
#define KAPI_CRON_ZERO INT64_C(-62135596800)

/* Parses spec with the given options into *out (the caller frees it with kapi_cron_free).
 * Returns NULL on success, or a KAPI_STATUS_INVALID error worded like robfig/cron's. */
kapi_error *kapi_cron_parse(kapi_cron **out, const char *spec, unsigned options);

/* Schedule.Next: the first activation strictly after the Unix time t, found in the
 * schedule's zone, or in local when it has none ("Local": Go uses the zone of the time it
 * is given). Gaps and overlaps of daylight saving time are handled as the library handles
 * them (a skipped hour is skipped, a repeated one runs twice). KAPI_CRON_ZERO when nothing
 * matches within five years (February 30th). */
int64_t kapi_cron_next(const kapi_cron *c, const kapi_tz *local, int64_t t);

/* Frees a schedule; NULL is fine. */
void kapi_cron_free(kapi_cron *c);

/* True when spec starts with a "TZ=" or "CRON_TZ=" prefix (Kubernetes rejects new
 * schedules that carry one and points at spec.timeZone instead). */
bool kapi_cron_uses_tz_prefix(const char *spec);

/* ---- for tests only: the library's getRange and getField helpers ---- */

/* One range term ("5-7/2", "*", "*\/2") within [min, max] into *out as a mask. */
kapi_error *kapi_cron__range(uint64_t *out, const char *expr, unsigned min, unsigned max);
/* A comma list of range terms within [min, max] into *out as a mask. */
kapi_error *kapi_cron__field(uint64_t *out, const char *expr, unsigned min, unsigned max);

#endif
