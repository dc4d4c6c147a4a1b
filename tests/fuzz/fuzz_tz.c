/*
 * fuzz_tz: the TZif reader (base/tz), which reads files of the system's tz database or of
 * the directory $ZONEINFO names, and the POSIX TZ rule at their end. A zone that reads
 * must answer offsets and civil times at any instant, the far past and future included,
 * and a civil time must come back from its Unix time.
 */
#include "base/tz.h"
#include "fuzz.h"

static const int64_t instants[] = {INT64_MIN / 2, -(1LL << 40), -2208988800LL, -1,           0, 1,
                                   1700000000,    4102444800LL, 1LL << 40,     INT64_MAX / 2};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT)
        return 0;
    kapi_tz *tz = kapi_tz__parse("Fuzz/Zone", data, size);
    if (!tz)
        return 0;
    for (size_t i = 0; i < sizeof(instants) / sizeof(*instants); i++) {
        const char *abbr = NULL;
        int off = kapi_tz_offset(tz, instants[i], &abbr);
        if (!abbr) {
            fprintf(stderr, "an offset without an abbreviation\n");
            abort();
        }
        kapi_civil c;
        kapi_tz_civil(&c, instants[i], off);
        if (instants[i] > -(1LL << 41) && instants[i] < 1LL << 41 &&
            kapi_tz_unix(kapi_tz_utc(), c.year, c.month, c.day, c.hour, c.minute, c.second) !=
                instants[i] + off) {
            fprintf(stderr, "the civil time of %lld does not come back\n", (long long)instants[i]);
            abort();
        }
        kapi_tz_unix(tz, c.year, c.month, c.day, c.hour, c.minute, c.second);
    }
    kapi_tz__free(tz);
    return 0;
}
