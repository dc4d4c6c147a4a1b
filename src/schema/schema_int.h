/*
 * schema internals shared by the files of src/schema.
 */
#ifndef KAPI_SCHEMA_INT_H
#define KAPI_SCHEMA_INT_H

#include "codec/json.h"
#include "schema/schema.h"

/* Parses s as metav1.Time (RFC 3339) or, with micro, metav1.MicroTime (RFC 3339 with
 * exactly six fractional digits), the way Go's time.Parse does. On success writes the
 * value as Go encodes it again (UTC, "Z", seconds or microseconds) into out (at least
 * 32 bytes) and returns NULL; otherwise a 400 worded as Go's parse error. */
kapi_error *kapi_schema__parse_time(const char *s, bool micro, char *out);

/* ---- Go's printing of unstructured values (govalue.c) ----
 * A custom resource is validated as Go values: integers int64, other numbers float64,
 * objects map[string]interface{}. These print a json_t as fmt and encoding/json print the
 * Go value, for messages that must read as kube-apiserver's. */

/* Decodes one UTF-8 sequence as Go does: returns its length, or 1 with U+FFFD for an
 * invalid byte (0 with U+FFFD when n is 0). */
int kapi_schema__utf8_decode(const char *p, size_t n, uint32_t *out);
/* Whether Go's strconv.Quote escapes r (controls, format characters, separators but the
 * ASCII space, surrogates, private use). */
bool kapi_schema__go_unprintable(uint32_t r);
/* %v of a float64 (shortest digits, exponent form below 1e-4 and from 1e6). */
void kapi_schema__go_float(kapi_buf *b, double f);
/* A field error's bad value as field.Error prints it: numbers and booleans with %v,
 * strings quoted, null as "null" (quoted), maps and slices with %#v. */
void kapi_schema__go_value(kapi_buf *b, const json_t *v);
/* %#v: map[string]interface {}{"a":1, "b":[]interface {}{"x"}}, keys sorted. */
void kapi_schema__go_sharp_v(kapi_buf *b, const json_t *v);

/* ---- string formats (strfmt.c) ---- */

/* The id of the checker for a schema's format, or -1 when custom resource validation
 * does not check it (apiextensions blanks the formats it does not support). */
int kapi_schema__format_id(const char *name);
/* Whether s (n bytes) is valid in format id (a kapi_schema__format_id result). */
bool kapi_schema__format_check(int id, const char *s, size_t n);

#endif
