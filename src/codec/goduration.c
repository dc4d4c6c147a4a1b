/*
 * codec/goduration: Go's time.ParseDuration, for the flags, the timeout parameter,
 * CronJobs' @every and CEL's durations alike, and the quoting its errors use.
 */
#include <ctype.h>
#include <string.h>

#include "codec/go.h"

/* Go's units for time.ParseDuration, in nanoseconds. */
static const struct {
    const char *name;
    uint64_t ns;
} duration_units[] = {
    {"ns", 1},
    {"us", 1000},
    {"\xc2\xb5s", 1000}, /* U+00B5 micro sign */
    {"\xce\xbcs", 1000}, /* U+03BC Greek mu */
    {"ms", 1000000},
    {"s", 1000000000},
    {"m", UINT64_C(60000000000)},
    {"h", UINT64_C(3600000000000)},
};

char *kapi_go_time_quote(kapi_str s)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_putc(&b, '"');
    for (size_t i = 0; i < s.len; i++) {
        unsigned char ch = (unsigned char)s.ptr[i];
        if (ch == '"' || ch == '\\')
            kapi_buf_putc(&b, '\\');
        if (ch >= 0x20 && ch < 0x7f)
            kapi_buf_putc(&b, (char)ch);
        else
            kapi_buf_printf(&b, "\\x%02x", ch);
    }
    kapi_buf_putc(&b, '"');
    return kapi_buf_detach(&b, NULL);
}

/* Leading decimal digits into *v; false on overflow past 1<<63. */
static bool leading_int(kapi_str *s, uint64_t *v)
{
    *v = 0;
    for (; s->len > 0 && isdigit((unsigned char)*s->ptr); s->ptr++, s->len--) {
        if (*v > (UINT64_C(1) << 63) / 10)
            return false;
        *v = *v * 10 + (uint64_t)(*s->ptr - '0');
        if (*v > UINT64_C(1) << 63)
            return false;
    }
    return true;
}

/* Fraction digits into *f with *scale = 10^digits (digits past overflow are dropped). */
static void leading_fraction(kapi_str *s, uint64_t *f, double *scale)
{
    bool overflow = false;
    *f = 0;
    *scale = 1;
    for (; s->len > 0 && isdigit((unsigned char)*s->ptr); s->ptr++, s->len--) {
        if (overflow)
            continue;
        if (*f > ((UINT64_C(1) << 63) - 1) / 10) {
            overflow = true;
            continue;
        }
        uint64_t y = *f * 10 + (uint64_t)(*s->ptr - '0');
        if (y > UINT64_C(1) << 63) {
            overflow = true;
            continue;
        }
        *f = y;
        *scale *= 10;
    }
}

/* The unit at the front of s (up to the next digit or dot) into *ns; consumes it. */
static bool take_unit(kapi_str *s, kapi_str *name, uint64_t *ns)
{
    size_t i = 0;
    while (i < s->len && s->ptr[i] != '.' && !isdigit((unsigned char)s->ptr[i]))
        i++;
    *name = (kapi_str){s->ptr, i};
    s->ptr += i;
    s->len -= i;
    for (size_t k = 0; k < KAPI_ARRAY_LEN(duration_units); k++) {
        if (kapi_str_eqc(*name, duration_units[k].name)) {
            *ns = duration_units[k].ns;
            return true;
        }
    }
    return false;
}

/* One "<number><unit>" term of a duration into *d, nanoseconds; the Go error text if bad. */
static const char *duration_term(kapi_str *s, uint64_t *d, kapi_str *unit_name)
{
    uint64_t v, f = 0, unit;
    double scale = 1;
    size_t before = s->len;
    if (s->ptr[0] != '.' && !isdigit((unsigned char)s->ptr[0]))
        return "invalid duration";
    if (!leading_int(s, &v))
        return "invalid duration";
    bool pre = before != s->len, post = false;
    if (s->len > 0 && s->ptr[0] == '.') {
        s->ptr++, s->len--;
        before = s->len;
        leading_fraction(s, &f, &scale);
        post = before != s->len;
    }
    if (!pre && !post)
        return "invalid duration";
    if (s->len == 0 || s->ptr[0] == '.' || isdigit((unsigned char)s->ptr[0]))
        return "missing unit in duration";
    if (!take_unit(s, unit_name, &unit))
        return "unknown unit";
    if (v > (UINT64_C(1) << 63) / unit)
        return "invalid duration";
    v *= unit;
    if (f > 0)
        v += (uint64_t)((double)f * ((double)unit / scale));
    if (v > UINT64_C(1) << 63)
        return "invalid duration";
    *d = v;
    return NULL;
}

char *kapi_go_parse_duration(kapi_str s, int64_t *out)
{
    kapi_str orig = s, unit_name = KAPI_STR_NULL;
    uint64_t total = 0, term;
    const char *why = NULL;
    bool neg = false;
    if (s.len > 0 && (s.ptr[0] == '-' || s.ptr[0] == '+')) {
        neg = s.ptr[0] == '-';
        s.ptr++, s.len--;
    }
    if (kapi_str_eqc(s, "0")) {
        *out = 0;
        return NULL;
    }
    if (s.len == 0)
        why = "invalid duration";
    while (!why && s.len > 0) {
        why = duration_term(&s, &term, &unit_name);
        total += why ? 0 : term;
        if (total > UINT64_C(1) << 63)
            why = "invalid duration";
    }
    if (!why && !neg && total > (UINT64_C(1) << 63) - 1)
        why = "invalid duration";
    if (!why) {
        *out = neg ? (int64_t)(0 - total) : (int64_t)total;
        return NULL;
    }
    char *q = kapi_go_time_quote(orig), *msg;
    if (strcmp(why, "unknown unit") == 0) {
        char *u = kapi_go_time_quote(unit_name);
        msg = kapi_xprintf("time: unknown unit %s in duration %s", u, q);
        free(u);
    } else {
        msg = kapi_xprintf("time: %s %s", why, q);
    }
    free(q);
    return msg;
}

/* Appends v / 10^prec with its fraction, trailing zeros (and a bare point) dropped. */
static void put_fraction(kapi_buf *b, uint64_t v, int prec)
{
    uint64_t scale = 1;
    for (int i = 0; i < prec; i++)
        scale *= 10;
    kapi_buf_printf(b, "%llu", (unsigned long long)(v / scale));
    uint64_t frac = v % scale;
    if (!frac)
        return;
    while (frac % 10 == 0)
        frac /= 10, prec--;
    kapi_buf_printf(b, ".%0*llu", prec, (unsigned long long)frac);
}

void kapi_go_format_duration(kapi_buf *b, int64_t ns)
{
    uint64_t u = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
    if (ns < 0)
        kapi_buf_putc(b, '-');
    if (u < 1000000000) {
        if (u == 0)
            kapi_buf_puts(b, "0s");
        else if (u < 1000)
            kapi_buf_printf(b, "%lluns", (unsigned long long)u);
        else
            put_fraction(b, u, u < 1000000 ? 3 : 6);
        if (u >= 1000)
            kapi_buf_puts(b, u < 1000000 ? "\xc2\xb5s" : "ms");
        return;
    }
    uint64_t secs = u / 1000000000, hours = secs / 3600, mins = secs / 60 % 60;
    if (hours)
        kapi_buf_printf(b, "%lluh", (unsigned long long)hours);
    if (hours || mins)
        kapi_buf_printf(b, "%llum", (unsigned long long)mins);
    put_fraction(b, u % 60000000000ULL, 9);
    kapi_buf_putc(b, 's');
}
