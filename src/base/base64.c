/* base64: Go's encoding/base64, for the standard and URL alphabets, padded or raw. */
#include "base/base.h"

#include <string.h>

static const char std_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static const char *alphabet_of(kapi_base64 enc)
{
    return enc & KAPI_BASE64_URL ? url_alphabet : std_alphabet;
}

char *kapi_base64_encode(const void *data, size_t n, kapi_base64 enc)
{
    const unsigned char *p = data;
    const char *tab = alphabet_of(enc);
    bool pad = !(enc & KAPI_BASE64_RAW);
    char *out = kapi_xmalloc(4 * ((n + 2) / 3) + 1), *o = out;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        *o++ = tab[v >> 18 & 63];
        *o++ = tab[v >> 12 & 63];
        if (i + 1 < n || pad)
            *o++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
        if (i + 2 < n || pad)
            *o++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

/* Appends the bytes of a quantum of k sextets (2 to 4). */
static void put_quantum(kapi_buf *out, const unsigned *q, size_t k)
{
    unsigned v = q[0] << 18 | q[1] << 12 | (k > 2 ? q[2] << 6 : 0) | (k > 3 ? q[3] : 0);
    char bytes[3] = {(char)(v >> 16), (char)(v >> 8), (char)v};
    kapi_buf_put(out, bytes, k - 1);
}

/* The index of the next character that is not a line break, from i. */
static size_t skip_breaks(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == '\r' || s[i] == '\n'))
        i++;
    return i;
}

long kapi_base64_decode(const char *s, size_t n, kapi_base64 enc, kapi_buf *out)
{
    const char *tab = alphabet_of(enc);
    bool raw = enc & KAPI_BASE64_RAW;
    unsigned q[4];
    size_t k = 0, i = 0, start = 0;
    while ((i = skip_breaks(s, n, i)) < n) {
        const char *c = s[i] ? strchr(tab, s[i]) : NULL;
        if (!c) {
            /* Padding ends a quantum of 2 or 3 sextets, and nothing but line breaks follows. */
            if (raw || s[i] != '=' || k < 2)
                return (long)i;
            size_t end = i + 1;
            if (k == 2) {
                end = skip_breaks(s, n, end);
                if (end >= n || s[end] != '=')
                    return (long)(end >= n ? n : end);
                end++;
            }
            end = skip_breaks(s, n, end);
            if (end < n)
                return (long)end;
            put_quantum(out, q, k);
            return -1;
        }
        if (k == 0)
            start = i;
        q[k++] = (unsigned)(c - tab);
        i++;
        if (k == 4) {
            put_quantum(out, q, 4);
            k = 0;
        }
    }
    if (k == 0)
        return -1;
    if (!raw || k == 1)
        return (long)(k == 1 ? start : n);
    put_quantum(out, q, k);
    return -1;
}
