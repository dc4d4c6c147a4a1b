/*
 * schema/govalue: Go's printing of unstructured JSON values.
 *
 * kube-apiserver decodes a custom resource into Go values (integers as int64, other
 * numbers as float64, objects as map[string]interface{}) and its validation messages
 * print them with fmt and encoding/json. The messages kapi writes must read the same, so
 * this file prints a json_t the way those Go functions print the Go value: %q
 * (strconv.Quote), %v of a float64, %#v of maps and slices, and json.Marshal.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/field.h"
#include "schema/schema_int.h"

/* ---- UTF-8 and Unicode ---- */

int kapi_schema__utf8_decode(const char *p, size_t n, uint32_t *out)
{
    const unsigned char *s = (const unsigned char *)p;
    static const struct {
        unsigned char mask, lead;
        uint32_t min;
    } forms[] = {{0xE0, 0xC0, 0x80}, {0xF0, 0xE0, 0x800}, {0xF8, 0xF0, 0x10000}};
    if (n == 0) {
        *out = 0xFFFD;
        return 0;
    }
    if (s[0] < 0x80) {
        *out = s[0];
        return 1;
    }
    for (size_t k = 0; k < KAPI_ARRAY_LEN(forms); k++) {
        size_t len = k + 2;
        if ((s[0] & forms[k].mask) != forms[k].lead)
            continue;
        if (n < len)
            break;
        uint32_t r = s[0] & (0x7F >> len);
        for (size_t i = 1; i < len; i++) {
            if ((s[i] & 0xC0) != 0x80)
                goto bad;
            r = (r << 6) | (s[i] & 0x3F);
        }
        if (r < forms[k].min || r > 0x10FFFF || (r >= 0xD800 && r <= 0xDFFF))
            break;
        *out = r;
        return (int)len;
    }
bad:
    *out = 0xFFFD;
    return 1;
}

/* Code points Go's unicode.IsPrint rejects beyond ASCII: controls, format characters,
 * separators other than ASCII space, surrogates and private use. (Unassigned code points
 * are not tracked: kapi prints them as they are.) */
bool kapi_schema__go_unprintable(uint32_t r)
{
    static const uint32_t ranges[][2] = {
        {0x80, 0xA0},       {0xAD, 0xAD},        {0x600, 0x605},     {0x61C, 0x61C},
        {0x6DD, 0x6DD},     {0x70F, 0x70F},      {0x1680, 0x1680},   {0x180E, 0x180E},
        {0x2000, 0x200F},   {0x2028, 0x202F},    {0x205F, 0x206F},   {0x3000, 0x3000},
        {0xD800, 0xF8FF},   {0xFEFF, 0xFEFF},    {0xFFF9, 0xFFFB},   {0xFFFE, 0xFFFF},
        {0x110BD, 0x110BD}, {0x1BCA0, 0x1BCA3},  {0x1D173, 0x1D17A}, {0xE0001, 0xE0001},
        {0xE0020, 0xE007F}, {0xF0000, 0x10FFFF},
    };
    if (r < 0x80)
        return r < 0x20 || r == 0x7F;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(ranges); i++)
        if (r >= ranges[i][0] && r <= ranges[i][1])
            return true;
    return false;
}

/* ---- strconv ---- */

/* The shortest decimal digits that read back as f (f finite, > 0): digits without a
 * point into digs, and the position of the decimal point relative to them. */
static size_t shortest(double f, char digs[24], int *dp)
{
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f)
            break;
    }
    size_t nd = 0;
    const char *p = tmp;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            digs[nd++] = *p;
    while (nd > 1 && digs[nd - 1] == '0')
        nd--;
    digs[nd] = '\0';
    *dp = atoi(p + 1) + 1;
    return nd;
}

/* strconv's %e with all the digits: d.ddde+XX (at least two exponent digits). */
static void put_e(kapi_buf *b, const char *digs, size_t nd, int dp)
{
    kapi_buf_putc(b, digs[0]);
    if (nd > 1) {
        kapi_buf_putc(b, '.');
        kapi_buf_put(b, digs + 1, nd - 1);
    }
    int exp = dp - 1;
    kapi_buf_printf(b, "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
}

/* strconv's %f with just the digits needed. */
static void put_f(kapi_buf *b, const char *digs, size_t nd, int dp)
{
    if (dp <= 0) {
        kapi_buf_puts(b, "0.");
        for (int i = dp; i < 0; i++)
            kapi_buf_putc(b, '0');
        kapi_buf_put(b, digs, nd);
        return;
    }
    for (int i = 0; i < dp; i++)
        kapi_buf_putc(b, (size_t)i < nd ? digs[i] : '0');
    if ((size_t)dp < nd) {
        kapi_buf_putc(b, '.');
        kapi_buf_put(b, digs + dp, nd - (size_t)dp);
    }
}

/* Formats f as strconv.FormatFloat(f, 'g', -1, 64) does: what %v prints. (JSON's form of
 * a float64 is kapi_json_encode's.) */
static void put_float(kapi_buf *b, double f)
{
    if (isnan(f) || isinf(f)) {
        kapi_buf_puts(b, isnan(f) ? "NaN" : f > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (signbit(f))
        kapi_buf_putc(b, '-');
    if (f == 0) {
        kapi_buf_putc(b, '0');
        return;
    }
    char digs[24];
    int dp;
    size_t nd = shortest(fabs(f), digs, &dp);
    /* %v (shortest 'g') switches to exponent form below 1e-4 and from 1e6 (the "precision
     * 6" rule). */
    int exp = dp - 1;
    if (exp < -4 || exp >= 6)
        put_e(b, digs, nd, dp);
    else
        put_f(b, digs, nd, dp);
}

void kapi_schema__go_float(kapi_buf *b, double f)
{
    put_float(b, f);
}

/* ---- fmt's %#v and encoding/json ---- */

static int key_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of an object, sorted bytewise (Go sorts map keys so in fmt and json). */
static const char **sorted_keys(const json_t *obj, size_t *n)
{
    *n = json_object_size(obj);
    const char **keys = kapi_xmalloc((*n ? *n : 1) * sizeof(*keys));
    size_t i = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) keys[i++] = key;
    qsort(keys, *n, sizeof(*keys), key_cmp);
    return keys;
}

void kapi_schema__go_sharp_v(kapi_buf *b, const json_t *v)
{
    size_t n;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char **keys = sorted_keys(v, &n);
        kapi_buf_puts(b, "map[string]interface {}{");
        for (size_t i = 0; i < n; i++) {
            if (i)
                kapi_buf_puts(b, ", ");
            kapi_json_quote_go(b, keys[i], strlen(keys[i]));
            kapi_buf_putc(b, ':');
            kapi_schema__go_sharp_v(b, json_object_get(v, keys[i]));
        }
        kapi_buf_putc(b, '}');
        free(keys);
        break;
    }
    case JSON_ARRAY:
        kapi_buf_puts(b, "[]interface {}{");
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                kapi_buf_puts(b, ", ");
            kapi_schema__go_sharp_v(b, json_array_get(v, i));
        }
        kapi_buf_putc(b, '}');
        break;
    case JSON_NULL:
        kapi_buf_puts(b, "interface {}(nil)");
        break;
    default:
        kapi_schema__go_value(b, v);
    }
}

void kapi_schema__go_value(kapi_buf *b, const json_t *v)
{
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_OBJECT:
    case JSON_ARRAY:
        kapi_schema__go_sharp_v(b, v);
        break;
    case JSON_STRING:
        kapi_json_quote_go(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        kapi_buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        put_float(b, json_real_value(v));
        break;
    case JSON_TRUE:
        kapi_buf_puts(b, "true");
        break;
    case JSON_FALSE:
        kapi_buf_puts(b, "false");
        break;
    case JSON_NULL:
        kapi_buf_puts(b, "\"null\"");
        break;
    }
}

void kapi_go_json(kapi_buf *b, const json_t *v)
{
    size_t n;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char **keys = sorted_keys(v, &n);
        kapi_buf_putc(b, '{');
        for (size_t i = 0; i < n; i++) {
            if (i)
                kapi_buf_putc(b, ',');
            kapi_json_put_string(b, keys[i], strlen(keys[i]));
            kapi_buf_putc(b, ':');
            kapi_go_json(b, json_object_get(v, keys[i]));
        }
        kapi_buf_putc(b, '}');
        free(keys);
        break;
    }
    case JSON_ARRAY:
        kapi_buf_putc(b, '[');
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                kapi_buf_putc(b, ',');
            kapi_go_json(b, json_array_get(v, i));
        }
        kapi_buf_putc(b, ']');
        break;
    default:
        kapi_json_encode(b, v); /* scalars: kapi writes them as encoding/json does */
    }
}
