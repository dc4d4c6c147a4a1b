/*
 * csv: the record reader for kube-apiserver's token file (see auth_int.h).
 *
 * RFC 4180 as Go's encoding/csv reads it: fields separated by ',', records by "\n" or
 * "\r\n"; a field that starts with '"' is quoted, may hold ',', newlines and "" (one '"'),
 * and must be followed by ',' or the end of the record; a '"' inside an unquoted field is
 * an error. Unlike encoding/csv, lines starting with '#' and lines of only blanks are
 * skipped (kapi documents comments in token files).
 */
#include "auth/auth_int.h"

#include <string.h>

void kapi_auth__csv_init(kapi_auth__csv *r, const char *data, size_t len)
{
    r->p = data;
    r->end = data + len;
    r->line = 1;
    r->record_line = 0;
    r->nfields = 0;
    for (size_t i = 0; i < KAPI_AUTH__CSV_KEEP; i++)
        kapi_buf_init(&r->fields[i]);
    /* A UTF-8 byte order mark is not part of the first token. */
    if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
        r->p += 3;
}

void kapi_auth__csv_dispose(kapi_auth__csv *r)
{
    for (size_t i = 0; i < KAPI_AUTH__CSV_KEEP; i++)
        kapi_buf_dispose(&r->fields[i]);
}

/* The end of the current line (its '\n' or the end of the data). */
static const char *line_end(const kapi_auth__csv *r)
{
    const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
    return nl ? nl : r->end;
}

/* Skips comment and blank lines; false at the end of the data. */
static bool skip_ignored(kapi_auth__csv *r)
{
    while (r->p < r->end) {
        const char *eol = line_end(r), *q = r->p;
        while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
            q++;
        if (q < eol && *r->p != '#')
            return true;
        r->p = eol < r->end ? eol + 1 : eol;
        r->line++;
    }
    return false;
}

/* The field being read goes to the kept buffer, or nowhere past the kept columns. */
static void put(kapi_auth__csv *r, char c)
{
    if (r->nfields < KAPI_AUTH__CSV_KEEP)
        kapi_buf_putc(&r->fields[r->nfields], c);
}

/* True when p is at the end of a record: "\n", "\r\n", or the data's end (a last "\r"
 * before it is dropped, as Go does). */
static bool at_record_end(const kapi_auth__csv *r, const char *p)
{
    return p == r->end || *p == '\n' || (*p == '\r' && (p + 1 == r->end || p[1] == '\n'));
}

static int read_unquoted(kapi_auth__csv *r, const char **why)
{
    while (r->p < r->end && *r->p != ',' && !at_record_end(r, r->p)) {
        if (*r->p == '"') {
            *why = "bare \" in non-quoted field";
            return -1;
        }
        put(r, *r->p++);
    }
    return 0;
}

static int read_quoted(kapi_auth__csv *r, const char **why)
{
    r->p++; /* the opening quote */
    for (;;) {
        if (r->p == r->end) {
            *why = "extraneous or missing \" in quoted field";
            return -1;
        }
        char c = *r->p++;
        if (c == '"' && (r->p == r->end || *r->p != '"'))
            break;
        if (c == '"')
            r->p++; /* "" is one quote */
        if (c == '\n')
            r->line++;
        put(r, c);
    }
    if (r->p < r->end && *r->p != ',' && !at_record_end(r, r->p)) {
        *why = "extraneous or missing \" in quoted field";
        return -1;
    }
    return 0;
}

/* Moves past the separator after a field; true when it ended the record. */
static bool finish_field(kapi_auth__csv *r)
{
    r->nfields++;
    if (r->p < r->end && *r->p == ',') {
        r->p++;
        return false;
    }
    if (r->p < r->end && *r->p == '\r')
        r->p++;
    if (r->p < r->end)
        r->p++;
    r->line++;
    return true;
}

int kapi_auth__csv_next(kapi_auth__csv *r, const char **why)
{
    for (size_t i = 0; i < KAPI_AUTH__CSV_KEEP; i++)
        kapi_buf_clear(&r->fields[i]);
    r->nfields = 0;
    if (!skip_ignored(r))
        return 0;
    r->record_line = r->line;
    for (;;) {
        int rc = r->p < r->end && *r->p == '"' ? read_quoted(r, why) : read_unquoted(r, why);
        if (rc < 0)
            return -1;
        if (finish_field(r))
            return 1;
    }
}
