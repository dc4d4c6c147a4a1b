/*
 * schema/quantity: resource.Quantity as apimachinery reads and writes it: parse ("100m",
 * "1.5Gi", "2e3"; rounded up to nano precision), compare, round, and the canonical text
 * Quantity.String() gives.
 */
#include <stdlib.h>
#include <string.h>

#include "schema/quantity.h"

#define MANT_LIMIT ((__int128)1 << 120)

static const struct {
    const char *suffix;
    int exp10;
} decimal_si[] = {{"n", -9}, {"u", -6}, {"m", -3}, {"", 0},   {"k", 3},
                  {"M", 6},  {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
static const char *const binary_si[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

/* Reads [+-]digits[.digits] from *s into mant/exp10; false when there are no digits. */
static bool parse_number(const char **s, __int128 *mant, int *exp10)
{
    const char *p = *s;
    bool neg = *p == '-', any = false, frac = false;
    if (*p == '+' || *p == '-')
        p++;
    *mant = 0, *exp10 = 0;
    for (; (*p >= '0' && *p <= '9') || (*p == '.' && !frac); p++) {
        if (*p == '.') {
            frac = true;
            continue;
        }
        any = true;
        if (*mant < MANT_LIMIT / 10) {
            *mant = *mant * 10 + (*p - '0');
            *exp10 -= frac;
        } else {
            *exp10 += !frac; /* digits past the precision kept: scale only */
        }
    }
    if (neg)
        *mant = -*mant;
    *s = p;
    return any;
}

/* Rounds a value below nano precision up (away from zero when positive). */
/* Parsing keeps nano precision, rounding up (toward +infinity) what is finer. */
static void round_up_nano(kapi_quantity *q)
{
    bool inexact = false;
    while (q->exp10 < -9) {
        inexact = inexact || q->mant % 10 != 0;
        q->mant /= 10;
        q->exp10++;
    }
    if (inexact && q->mant >= 0)
        q->mant++;
}

void kapi_quantity_round_up(kapi_quantity *q, int exp10)
{
    bool inexact = false;
    while (q->exp10 < exp10) {
        inexact = inexact || q->mant % 10 != 0;
        q->mant /= 10;
        q->exp10++;
    }
    if (inexact)
        q->mant += q->mant < 0 ? -1 : 1;
}

static bool parse_suffix(kapi_quantity *q, const char *p)
{
    for (size_t i = 1; i < KAPI_ARRAY_LEN(binary_si); i++) {
        if (strcmp(p, binary_si[i]) != 0)
            continue;
        for (size_t k = 0; k < i && q->mant < MANT_LIMIT / 1024 && q->mant > -MANT_LIMIT / 1024;
             k++)
            q->mant *= 1024;
        q->format = KAPI_Q_BINARY_SI;
        return true;
    }
    for (size_t i = 0; i < KAPI_ARRAY_LEN(decimal_si); i++) {
        if (strcmp(p, decimal_si[i].suffix) == 0) {
            q->exp10 += decimal_si[i].exp10;
            q->format = KAPI_Q_DECIMAL_SI;
            return true;
        }
    }
    if (*p != 'e' && *p != 'E')
        return false;
    char *end;
    long e = strtol(p + 1, &end, 10);
    if (end == p + 1 || *end || e > 1000 || e < -1000)
        return false;
    q->exp10 += (int)e;
    q->format = KAPI_Q_DECIMAL_EXPONENT;
    return true;
}

bool kapi_quantity_parse(kapi_quantity *out, const char *s)
{
    *out = (kapi_quantity){0, 0, KAPI_Q_DECIMAL_SI};
    if (!parse_number(&s, &out->mant, &out->exp10) || !parse_suffix(out, s))
        return false;
    /* a binary amount below one is written in decimal */
    if (out->format == KAPI_Q_BINARY_SI && out->mant > 0) {
        kapi_quantity one = {1, 0, KAPI_Q_DECIMAL_SI};
        if (kapi_quantity_cmp(out, &one) < 0)
            out->format = KAPI_Q_DECIMAL_SI;
    }
    if (out->mant != 0)
        round_up_nano(out);
    return true;
}

int kapi_quantity_cmp(const kapi_quantity *a, const kapi_quantity *b)
{
    __int128 x = a->mant, y = b->mant;
    int ex = a->exp10, ey = b->exp10;
    while (ex > ey && x < MANT_LIMIT && x > -MANT_LIMIT)
        x *= 10, ex--;
    while (ey > ex && y < MANT_LIMIT && y > -MANT_LIMIT)
        y *= 10, ey--;
    if (ex != ey) /* one side is too large to align: its magnitude decides */
        return ex > ey ? (x > 0 ? 1 : -1) : (y > 0 ? -1 : 1);
    return x < y ? -1 : x > y;
}

static void put_int128(kapi_buf *b, __int128 v)
{
    char tmp[48];
    size_t n = 0;
    bool neg = v < 0;
    unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
    do {
        tmp[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    if (neg)
        kapi_buf_putc(b, '-');
    while (n)
        kapi_buf_putc(b, tmp[--n]);
}

/* AsCanonicalBytes: every factor of 10 out, then the exponent down to a multiple of 3. */
static void format_decimal(kapi_buf *b, __int128 m, int e, kapi_qformat format)
{
    while (m % 10 == 0)
        m /= 10, e++;
    while (((e % 3) + 3) % 3 != 0)
        m *= 10, e--;
    put_int128(b, m);
    if (format == KAPI_Q_DECIMAL_EXPONENT) {
        if (e != 0)
            kapi_buf_printf(b, "e%d", e);
        return;
    }
    for (size_t i = 0; i < KAPI_ARRAY_LEN(decimal_si); i++)
        if (decimal_si[i].exp10 == e) {
            kapi_buf_puts(b, decimal_si[i].suffix);
            return;
        }
    kapi_buf_printf(b, "e%d", e);
}

/* The value of q as an integer; false when it has a fraction. */
static bool as_integer(const kapi_quantity *q, __int128 *out)
{
    __int128 v = q->mant;
    for (int i = q->exp10; i < 0; i++) {
        if (v % 10 != 0)
            return false;
        v /= 10;
    }
    for (int i = 0; i < q->exp10; i++)
        v *= 10;
    *out = v;
    return true;
}

bool kapi_quantity_is_integer(const kapi_quantity *q)
{
    __int128 v;
    return as_integer(q, &v);
}

void kapi_quantity_format(kapi_buf *b, const kapi_quantity *q)
{
    __int128 v;
    if (q->mant == 0) {
        kapi_buf_putc(b, '0');
        return;
    }
    if (q->format == KAPI_Q_BINARY_SI) {
        kapi_quantity lo = {-1024, 0, KAPI_Q_DECIMAL_SI}, hi = {1024, 0, KAPI_Q_DECIMAL_SI};
        bool small = kapi_quantity_cmp(q, &lo) > 0 && kapi_quantity_cmp(q, &hi) < 0;
        if (!small && as_integer(q, &v)) {
            size_t k = 0;
            while (k + 1 < KAPI_ARRAY_LEN(binary_si) && v % 1024 == 0)
                v /= 1024, k++;
            put_int128(b, v);
            kapi_buf_puts(b, binary_si[k]);
            return;
        }
    }
    format_decimal(b, q->mant, q->exp10,
                   q->format == KAPI_Q_DECIMAL_EXPONENT ? KAPI_Q_DECIMAL_EXPONENT
                                                        : KAPI_Q_DECIMAL_SI);
}
